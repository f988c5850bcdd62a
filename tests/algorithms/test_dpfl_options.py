"""DPFL's options for the paper's experiments, on hand-computed toy cases.

- ``budget`` as a fraction of N (0.2N, 0.1N, 0.05N);
- ``no_greedy``: clients that never run BGGC/GGC nor average, yet stay candidates (Fig. 4a);
- the pre-processing graph Omega and the weights of every realized graph in the records;
- ``select="best_val"``: each client's best-validation model is the one scored (Appendix F).

The toy services score client ``k``'s model ``z`` by ``(z - target_k)^2``: every reward of
GGC is then a number one can work out by hand (see each test).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch

import topofl as tf
from topofl._utils.rng import generator_at
from topofl.algorithms.dpfl import resolve_budget
from topofl.algorithms.ggc import aggregation_matrix
from topofl.engine import Round, toy_services
from topofl.engine.protocol import ToyServices

D = torch.float64


@dataclass
class Quad(ToyServices):
    """Toy services whose validation loss of row ``k`` is ``|z_k - target_k|^2``."""

    targets: torch.Tensor = torch.zeros(0)

    def losses(self, x: torch.Tensor, split: str = "val",
               fallback: str | None = None) -> torch.Tensor:
        return ((x - self.targets) ** 2).sum(dim=1)


def _quad(targets: list[float]) -> Quad:
    base = toy_services(len(targets), 1)
    return Quad(layout=base.layout, mixer=base.mixer, n=base.n,
                targets=torch.tensor(targets, dtype=D).unsqueeze(1))


def _values(rec: Any, metric: str) -> list[Any]:
    """The raw values of ``metric``, one per round logged, in round order."""
    return [r["value"] for r in rec.rows if r["metric"] == metric]


def _rows(mask: torch.Tensor) -> list[list[int]]:
    return [torch.nonzero(r).flatten().tolist() for r in mask]


# ----------------------------------------------------------------------------------- budget
def test_budget_fraction_resolves_to_the_papers_counts() -> None:
    assert [resolve_budget(f, 100) for f in (0.2, 0.1, 0.05)] == [20, 10, 5]
    assert resolve_budget(0.05, 30) == 2  # 1.5 rounds up
    assert resolve_budget(0.01, 10) == 1  # never below one collaborator
    assert resolve_budget(1.0, 7) == 7 and resolve_budget(4, 7) == 4
    assert resolve_budget(None, 7) is None
    with pytest.raises(ValueError, match=r"fraction .* \(0, 1\]"):
        resolve_budget(1.5, 10)
    with pytest.raises(TypeError, match="budget"):
        resolve_budget("0.2", 10)


def test_budget_fraction_caps_omega_like_the_int() -> None:
    # tau_init = 0 and identical models: every gain is 0, so each client adds the first B_c
    # candidates of its shuffled order (Algorithm 3 with a = b = 0 adds with probability 1)
    n, seed = 10, 4
    env = _quad([0.0] * n)
    x0 = torch.zeros(n, 1, dtype=D)
    algo = tf.algorithms.dpfl(budget=0.3, tau_init=0, weighting="uniform", graph_seed=seed)
    assert algo.hparams["budget"] == 0.3
    state = algo.init(x0.clone(), env)
    algo.round_start(state, Round(0), env)
    for k in range(n):
        others = [j for j in range(n) if j != k]
        perm = generator_at(seed, 0, k).permutation(n - 1)
        assert _rows(state.own.omega)[k] == sorted(others[i] for i in perm[:3])
    sent = algo.communicate(state, Round(0), env)
    assert sent.records is not None and sent.records["dpfl_budget"] == 3
    as_int = tf.algorithms.dpfl(budget=3, tau_init=0, weighting="uniform", graph_seed=seed)
    s2 = as_int.init(x0.clone(), env)
    as_int.round_start(s2, Round(0), env)
    assert torch.equal(s2.own.omega, state.own.omega)


# ----------------------------------------------------------------------------------- no_greedy
def test_no_greedy_clients_send_but_never_choose_nor_average() -> None:
    # models 0, 1, 2 with targets 0.4, 0.6, 2.0 (uniform weights, no budget, tau_init = 0).
    # Client 0: alone (0 - .4)^2 = .16, with 1: avg .5 -> .01, with 2 or both: avg 1 -> .36.
    # Whatever the order, adding 1 gains .15 (removing it gains 0) and adding 2 gains 0
    # (removing it gains .35): Omega_0 = {1}. Clients 1 and 2 are passive: Omega empty.
    env = _quad([0.4, 0.6, 2.0])
    x0 = torch.tensor([[0.0], [1.0], [2.0]], dtype=D)
    algo = tf.algorithms.dpfl(budget=None, tau_init=0, weighting="uniform", no_greedy=[2, 1])
    assert algo.hparams["no_greedy"] == [1, 2]
    state = algo.init(x0.clone(), env)
    algo.round_start(state, Round(0), env)
    assert _rows(state.own.omega) == [[1], [], []]
    # line 4: client 0 averages with client 1; the passive ones keep their models
    torch.testing.assert_close(state.x, torch.tensor([[0.5], [1.0], [2.0]], dtype=D))
    # GGC at round 0 over Omega_0 = {1} from x_0 = .5: alone .01, with 1 avg .75 -> .1225:
    # a = 0, b = .1125: C_0 = {} and nobody averages
    msgs, realized, records = algo.communicate(state, Round(0), env)[:3]
    assert _rows(state.own.collab) == [[], [], []]
    torch.testing.assert_close(state.x, torch.tensor([[0.5], [1.0], [2.0]], dtype=D))
    # messages: BGGC of client 0 receives its 2 candidates for w^Y, then scans one batch of 2;
    # GGC receives |Omega_0| = 1; the passive clients receive nothing
    assert msgs == 2 + 2 + 1
    assert realized.num_edges == 0
    assert records["dpfl_omega_edges"] == [[1, 0]]
    assert records["dpfl_omega_weights"] == [0.5]
    assert records["dpfl_no_greedy"] == [1, 2] and records["dpfl_budget"] is None
    # the pre-processing graph is recorded once
    again = algo.communicate(state, Round(1), env).records
    assert again is None


def test_no_greedy_bad_input() -> None:
    with pytest.raises(ValueError, match="no_greedy"):
        tf.algorithms.dpfl(no_greedy="malicious")
    with pytest.raises(TypeError, match="no_greedy"):
        tf.algorithms.dpfl(no_greedy=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"client ids in \[0, 2\]"):
        tf.algorithms.dpfl(no_greedy=[5], weighting="uniform").init(
            torch.zeros(3, 1, dtype=D), _quad([0.0] * 3))
    with pytest.raises(ValueError, match=r"env\.flipped"):
        tf.algorithms.dpfl(no_greedy="flipped", weighting="uniform").init(
            torch.zeros(3, 1, dtype=D), _quad([0.0] * 3))


def test_flipped_clients_are_the_passive_ones_in_a_run() -> None:
    data = tf.data.federate("digits", "pathological", 6, classes_per_client=2, seed=0,
                            val=0.2, flip_labels=0.5)
    flipped = np.flatnonzero(data.flipped).tolist()
    assert len(flipped) == 3
    model = tf.models.build_model("mlp", data.input_shape, data.num_classes, seed=0,
                                  hidden=(8,))
    res = tf.run("dpfl", data=data, model=model, rounds=2, seed=0, budget=2, tau_init=0.5,
                 local_steps=1, no_greedy="flipped", batch_size=16, spectral=False)
    omega, collab = res.state.own.omega, res.state.own.collab
    assert not bool(omega[flipped].any()) and not bool(collab[flipped].any())
    rec = res.records
    assert rec.config["no_greedy"] == "flipped"
    assert _values(rec, "dpfl_no_greedy")[0] == flipped
    for es in _values(rec, "realized_edges"):
        assert all(k not in flipped for _, k in es)  # a flipped client never receives


# ----------------------------------------------------------------------------------- records
def test_omega_and_realized_weights_in_the_records() -> None:
    data = tf.data.federate("digits", "dpfl_pathological", 5, classes_per_client=3, alpha=0.5,
                            seed=0, val=0.2)
    model = tf.models.build_model("mlp", data.input_shape, data.num_classes, seed=0,
                                  hidden=(8,))
    res = tf.run("dpfl", data=data, model=model, rounds=2, seed=0, budget=0.5, tau_init=1,
                 local_epochs=1, batch_size=64, spectral=False)
    rec = res.records
    omega, collab, p = res.state.own.omega, res.state.own.collab, res.state.own.p
    edges = _values(rec, "dpfl_omega_edges")
    assert [r["round"] for r in rec.rows if r["metric"] == "dpfl_omega_edges"] == [0]
    assert edges[0] == sorted([j, k] for k in range(5) for j in _rows(omega)[k])
    M = aggregation_matrix(omega, p)
    w = _values(rec, "dpfl_omega_weights")[0]
    np.testing.assert_allclose(w, [float(M[k, j]) for j, k in edges[0]], rtol=1e-12)
    assert _values(rec, "dpfl_budget") == [3] and rec.config["budget"] == 0.5
    # the last realized graph: edges j -> k of C_k, weights p_j / sum over C_k + {k}
    last_e, last_w = _values(rec, "realized_edges")[-1], _values(rec, "realized_weights")[-1]
    A = aggregation_matrix(collab, p)
    assert last_e == sorted([j, k] for k in range(5) for j in _rows(collab)[k])
    np.testing.assert_allclose(last_w, [float(A[k, j]) for j, k in last_e], rtol=1e-12)


# ----------------------------------------------------------------------------------- best_val
def test_best_validation_model_is_scored() -> None:
    # no collaboration (both clients passive): communicate leaves the models alone, and we
    # set them by hand between rounds. Targets .4 and .6:
    #   round 0: x = (1, 1)    losses (.36, .16)
    #   round 1: x = (.5, 3)   losses (.01, 5.76)   client 0 improves
    #   round 2: x = (2, .7)   losses (2.56, .01)   client 1 improves
    #   round 3: x = (.5, .5)  losses (.01, .01)    ties keep the earlier model
    env = _quad([0.4, 0.6])
    algo = tf.algorithms.dpfl(tau_init=0, weighting="uniform", no_greedy=[0, 1],
                              select="best_val")
    state = algo.init(torch.zeros(2, 1, dtype=D), env)
    plan = [(1.0, 1.0), (0.5, 3.0), (2.0, 0.7), (0.5, 0.5)]
    best_rounds = []
    for t, xs in enumerate(plan):
        algo.round_start(state, Round(t), env)
        state.x.copy_(torch.tensor(xs, dtype=D).unsqueeze(1))
        records = algo.communicate(state, Round(t), env).records
        best_rounds.append(records["dpfl_best_round"])
        torch.testing.assert_close(state.x, torch.tensor(xs, dtype=D).unsqueeze(1))
    assert best_rounds == [[0, 0], [1, 0], [1, 2], [1, 2]]
    torch.testing.assert_close(algo.evaluate(state, Round(3), env),
                               torch.tensor([[0.5], [0.7]], dtype=D))
    torch.testing.assert_close(state.own.best_val, torch.tensor([0.01, 0.01], dtype=D))
    # the default scores the current models
    last = tf.algorithms.dpfl(tau_init=0, weighting="uniform", no_greedy=[0, 1])
    s2 = last.init(torch.ones(2, 1, dtype=D), env)
    assert last.evaluate(s2, Round(0), env) is s2.x and s2.own.best_x is None
    with pytest.raises(ValueError, match="select"):
        tf.algorithms.dpfl(select="best_test")


@dataclass
class Fixed(ToyServices):
    """Toy services whose validation losses are set by hand (:attr:`now`)."""

    now: torch.Tensor = torch.zeros(0)

    def losses(self, x: torch.Tensor, split: str = "val",
               fallback: str | None = None) -> torch.Tensor:
        return self.now


def test_a_non_finite_validation_loss_is_never_the_best_model() -> None:
    """Before: a -inf validation loss (``vl < best_val``) was kept as the best model."""
    base = toy_services(2, 1)
    env = Fixed(layout=base.layout, mixer=base.mixer, n=base.n)
    algo = tf.algorithms.dpfl(tau_init=0, weighting="uniform", no_greedy=[0, 1],
                              select="best_val")
    state = algo.init(torch.zeros(2, 1, dtype=D), env)
    inf, nan = float("inf"), float("nan")
    plan = [(0.5, 0.5), (-inf, nan), (0.2, inf), (0.3, 0.1)]
    best_rounds = []
    for t, losses in enumerate(plan):
        env.now = torch.tensor(losses, dtype=D)
        algo.round_start(state, Round(t), env)
        state.x.fill_(float(t))
        best_rounds.append(algo.communicate(state, Round(t), env).records["dpfl_best_round"])
    assert best_rounds == [[0, 0], [0, 0], [2, 0], [2, 3]]
    assert state.own.best_val.tolist() == [0.2, 0.1]
    assert algo.evaluate(state, Round(3), env).flatten().tolist() == [2.0, 3.0]


def test_best_val_through_a_run_scores_the_kept_models() -> None:
    data = tf.data.federate("digits", "dpfl_pathological", 4, classes_per_client=3, alpha=0.5,
                            seed=1, val=0.2)
    model = tf.models.build_model("mlp", data.input_shape, data.num_classes, seed=0,
                                  hidden=(8,))
    kw: dict[str, Any] = dict(data=data, model=model, rounds=3, seed=0, budget=2, tau_init=0.5,
                              local_steps=2, batch_size=32, spectral=False, lr=0.5,
                              eval_every=1)
    best = tf.run("dpfl", select="best_val", **kw)
    last = tf.run("dpfl", **kw)
    # the same training (selection does not feed back), another model scored
    torch.testing.assert_close(best.state.x, last.state.x)
    rounds = _values(best.records, "dpfl_best_round")
    for t, r in enumerate(rounds):
        assert all(0 <= b <= t for b in r)
    env = best.services
    torch.testing.assert_close(env.losses(best.state.own.best_x, "val").double(),
                               best.state.own.best_val)
    assert bool((best.state.own.best_val
                 <= env.losses(best.state.x, "val").double() + 1e-12).all())
    acc_best = best.records.series("test_acc_mean")[1]
    acc_last = last.records.series("test_acc_mean")[1]
    assert acc_best[0] == acc_last[0]  # after round 0 the best model is the current one
