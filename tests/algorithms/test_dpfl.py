"""DPFL: the hyper-parameters, the engine round against a per-client reference, records of the
realized graph, resume (GGC and BGGC themselves: ``test_ggc.py``)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import topofl as tf
from tests.engine._crash import Crash, CrashingData
from topofl._utils.rng import generator_at
from topofl.algorithms import bggc, ggc
from topofl.algorithms.dpfl import PRE_STREAM
from topofl.engine import Round, RunConfig, toy_services
from topofl.engine.checkpoint import load_checkpoint, save_checkpoint
from topofl.engine.services import DataServices
from topofl.exceptions import CheckpointError

D = torch.float64


# --------------------------------------------------------------------------- bad input


def test_bad_input() -> None:
    for kw, err in [
        (dict(budget=0), ValueError), (dict(budget=-2), ValueError),
        (dict(budget=1.5), ValueError), (dict(budget=0.0), ValueError),
        (dict(budget="10"), TypeError), (dict(tau_init=-1), ValueError),
        (dict(local_epochs=0), ValueError),
        (dict(local_steps=2, local_epochs=1.0), ValueError), (dict(refresh_every=0), ValueError),
        (dict(weighting="equal"), ValueError), (dict(lr=0), ValueError),
        (dict(momentum=1.0), ValueError),
    ]:
        with pytest.raises(err):
            tf.algorithms.get_algorithm("dpfl", **kw)
    assert tf.algorithms.dpfl(tau_init=0).hparams["tau_init"] == 0
    assert tf.algorithms.dpfl(budget=math.inf).hparams["budget"] is None
    with pytest.raises(ValueError, match="train_sizes"):
        tf.algorithms.dpfl().init(torch.zeros(3, 2), toy_services(3, 2))


def test_update_is_sgd_with_momentum_and_weight_decay() -> None:
    algo = tf.algorithms.dpfl(lr=0.1, momentum=0.9, weight_decay=0.01, weighting="uniform")
    ctx = toy_services(2, 3)
    x0 = torch.tensor([[1.0, -2.0, 0.5], [0.0, 3.0, 1.0]], dtype=D)
    state = algo.init(x0.clone(), ctx)
    assert algo.phases[0].epochs == 5 and algo.phases[0].part == "all"
    g1 = torch.tensor([[0.5, 0.0, -1.0], [1.0, 2.0, 0.0]], dtype=D)
    g2 = torch.tensor([[1.0, 1.0, 1.0], [0.0, -1.0, 2.0]], dtype=D)
    lr = torch.full((2,), 0.1, dtype=D)
    algo.update(state, g1.clone(), algo.phases[0], lr, Round(0), ctx)
    algo.update(state, g2.clone(), algo.phases[0], lr, Round(0), ctx)
    m1 = g1 + 0.01 * x0
    x1 = x0 - 0.1 * m1
    m2 = 0.9 * m1 + g2 + 0.01 * x1
    torch.testing.assert_close(state.x, x1 - 0.1 * m2, rtol=0, atol=1e-15)
    algo.round_start(state, Round(1), ctx)  # no pre-processing: LocalOpt restarts every round
    assert state.momentum is not None and not bool(state.momentum.any())


# --------------------------------------------------------------------------- the engine round

N = 5


@pytest.fixture(scope="module")
def data() -> Any:
    return tf.data.federate("digits", "dpfl_pathological", N, classes_per_client=3, alpha=0.5,
                            seed=0, val=0.2)


def _model(data: Any) -> Any:
    return tf.models.build_model("mlp", data.input_shape, data.num_classes, seed=0, hidden=(8,))


def _services(data: Any) -> tuple[Any, Any, Any, torch.Tensor]:
    model = _model(data).double()
    layout = tf.engine.ParamLayout.from_model(model)
    ctx = DataServices(layout, tf.engine.gossip.Mixer(torch.device("cpu"), D),
                       tf.engine.executors.BatchedExecutor(model, layout), data, batch_size=32)
    x0 = tf.engine.layout.init_parameters(model, layout, N, seed=0, same=True,
                                   device=torch.device("cpu"), dtype=D)
    return model, layout, ctx, x0


def _client_loss(data: Any, model: Any, layout: Any, k: int, split: str = "val") -> Any:
    """Client k's validation (or ``split``) loss of one parameter vector, on the slow
    per-client path."""
    xs, ys = data.client(k, split)

    def loss(w: torch.Tensor) -> float:
        params = {name: v[0] for name, v in layout.views(w.unsqueeze(0)).items()}
        out = torch.func.functional_call(model, params, (xs.double(),))
        return float(torch.nn.functional.cross_entropy(out, ys))

    return loss


def _avg(x: torch.Tensor, p: torch.Tensor, members: list[int]) -> torch.Tensor:
    return (p[members, None] * x[members]).sum(0) / p[members].sum()


def test_one_round_equals_per_client_reference(data: Any) -> None:
    model, layout, ctx, x0 = _services(data)
    budget, lr, seed = 2, 0.05, 3
    algo = tf.algorithms.dpfl(lr=lr, budget=budget, tau_init=1, local_epochs=1,
                              graph_seed=seed)
    state = algo.init(x0.clone(), ctx)
    p = torch.tensor(np.array(data.sizes("train")), dtype=D)
    torch.testing.assert_close(state.own.p, p)

    # ---- pre-processing (Algorithm 1, lines 1-5), written per client
    w_init = x0.clone()
    ctx.local_train(w_init, "all", lr, t=0, epochs=1, stream=PRE_STREAM)
    omega_ref = [sorted(bggc(k, [j for j in range(N) if j != k], w_init, p,
                             _client_loss(data, model, layout, k), budget=budget,
                             seed=generator_at(seed, 0, k))) for k in range(N)]
    x_ref = torch.stack([_avg(w_init, p, [k, *omega_ref[k]]) for k in range(N)])
    algo.round_start(state, Round(0), ctx)
    omega = state.own.omega
    assert [torch.nonzero(omega[k]).flatten().tolist() for k in range(N)] == omega_ref
    assert all(len(o) <= budget for o in omega_ref)
    torch.testing.assert_close(state.x, x_ref, rtol=0, atol=1e-12)
    pending = int(state.own.pending_messages.sum())
    assert N * (N - 1) < pending <= 2 * N * (N - 1)

    # ---- one local step (the engine's phase), then communicate (lines 9-11)
    g = torch.randn(N, layout.num_params, dtype=D, generator=torch.Generator().manual_seed(1))
    algo.update(state, g.clone(), algo.phases[0], torch.full((N,), lr, dtype=D), Round(0), ctx)
    x_ref = x_ref - lr * (g + 1e-3 * x_ref)
    torch.testing.assert_close(state.x, x_ref, rtol=0, atol=1e-12)

    def set_loss(k: int) -> Any:
        f = _client_loss(data, model, layout, k)
        return lambda X: f(_avg(x_ref, p, sorted(X)))

    C_ref = [sorted(ggc(k, omega_ref[k], set_loss(k), budget=budget,
                        seed=generator_at(seed, 1, 0, k))) for k in range(N)]
    new_ref = torch.stack([_avg(x_ref, p, [k, *C_ref[k]]) for k in range(N)])
    msgs, realized, _ = algo.communicate(state, Round(0), ctx)[:3]
    collab = state.own.collab
    assert [torch.nonzero(collab[k]).flatten().tolist() for k in range(N)] == C_ref
    torch.testing.assert_close(state.x, new_ref, rtol=0, atol=1e-12)
    assert msgs == sum(len(o) for o in omega_ref) + pending
    assert int(state.own.pending_messages.sum()) == 0
    edges = {(j, k) for j, k in realized.graph.edges()}
    assert edges == {(j, k) for k in range(N) for j in C_ref[k]}
    assert realized.is_row_stochastic


def test_tau_init_zero_fills_the_budget_from_identical_models(data: Any) -> None:
    # no local epochs: every candidate average is the common initial model, all gains are 0,
    # so every client adds the first B_c clients of its shuffled order
    _, _, ctx, x0 = _services(data)
    algo = tf.algorithms.dpfl(budget=3, tau_init=0, graph_seed=5)
    state = algo.init(x0.clone(), ctx)
    algo.round_start(state, Round(0), ctx)
    for k in range(N):
        others = [j for j in range(N) if j != k]
        perm = generator_at(5, 0, k).permutation(N - 1)
        expected = sorted(others[i] for i in perm[:3])
        assert torch.nonzero(state.own.omega[k]).flatten().tolist() == expected
    torch.testing.assert_close(state.x, x0)


def _strip(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["metric"] != "wall_time"]


def test_runs_through_the_engine_and_records_the_directed_graph(data: Any) -> None:
    res = tf.run("dpfl", data=data, model=_model(data), rounds=3, budget=2, tau_init=1,
                 local_epochs=1, refresh_every=2, batch_size=64, seed=0, lr=0.05,
                 record_clients=False, eval_global=False)
    rec = res.records
    omega, collab = res.state.own.omega, res.state.own.collab
    assert bool((omega.sum(1) <= 2).all()) and bool((collab <= omega).all())
    edges = [r["value"] for r in rec.rows if r["metric"] == "realized_edges"]
    assert len(edges) == 3
    for es in edges:
        for j, k in es:  # sender j, receiver k: j in C_k subset of Omega_k
            assert bool(omega[k, j])
        per_client = np.bincount([k for _, k in es], minlength=N)
        assert per_client.max(initial=0) <= 2
    assert edges[0] == edges[1]  # GGC refreshed at rounds 0 and 2 only
    _, msgs = rec.series("messages")  # cumulative
    steps = np.diff(np.concatenate([[0], msgs]))
    assert steps[1] == len(edges[1])  # between refreshes: the |C_k| collaborators
    assert steps[2] == int(omega.sum())  # a GGC round: every candidate of Omega_k
    assert steps[0] > N * (N - 1)  # round 0 also carries BGGC's downloads
    _, dens = rec.series("realized_density")
    np.testing.assert_allclose(dens, [len(e) / (N * (N - 1)) for e in edges])
    assert "realized_reciprocity" in rec.metrics and "realized.spectral_gap" in rec.metrics
    assert rec.config["algorithm"] == "dpfl" and rec.config["budget"] == 2





@pytest.mark.parametrize("layout", ["typed", "flags"])
def test_resume_equals_uninterrupted(data: Any, tmp_path: Path, layout: str) -> None:
    # the checkpoint after round 1 holds Omega and C: the resumed run starts at round 2, past
    # the pre-processing round, and reuses round 0's C in round 2 (no refresh). "flags": the
    # checkpoint as the string-keyed state wrote it, with the pre-processing flags
    # extra.ready/extra.fresh, which the typed state retired (DPFLState.RETIRED)
    model = _model(data)
    algo = tf.algorithms.dpfl(lr=0.05, budget=2, tau_init=1, local_epochs=1, refresh_every=3)
    kw: dict[str, Any] = dict(rounds=3, batch_size=64, seed=1, eval_every=2, spectral=False)
    full = tf.engine.run(RunConfig(**kw), None, algo, data, model)
    cfg = RunConfig(**kw, checkpoint_every=2, checkpoint_path=str(tmp_path / "ck.pt"),
                    records_path=str(tmp_path / "r.jsonl"))
    with pytest.raises(Crash):
        tf.engine.run(cfg, None, algo, CrashingData(data, at=2), model)
    if layout == "flags":
        ck = load_checkpoint(tmp_path / "ck.pt")
        assert {"extra.omega", "extra.collab", "extra.p"} <= set(ck["state"])
        ck["state"]["extra.ready"] = torch.tensor(True)
        ck["state"]["extra.fresh"] = torch.tensor(False)
        save_checkpoint(tmp_path / "ck.pt", ck)
    resumed = tf.engine.run(cfg, None, algo, data, model, resume=tmp_path / "ck.pt")
    assert _strip(tf.records.load(tmp_path / "r.jsonl").rows) == _strip(full.records.rows)
    assert _strip(resumed.records.rows) == _strip(full.records.rows)
    for k, v in full.state.tensors().items():
        assert torch.equal(resumed.state.tensors()[k], v), k


@pytest.mark.parametrize("change, named", [
    ({"extra.bogus": torch.zeros(N)}, r"holds unknown tensor\(s\) \['extra.bogus'\]"),
    ({"extra.omega": None}, r"lacks the tensor\(s\) \['extra.omega'\]"),
])
def test_resume_refuses_a_checkpoint_of_another_state(data: Any, tmp_path: Path,
                                                      change: dict[str, Any],
                                                      named: str) -> None:
    model = _model(data)
    algo = tf.algorithms.dpfl(lr=0.05, budget=2, tau_init=0, local_steps=1)
    path = tmp_path / "ck.pt"
    cfg = RunConfig(rounds=2, batch_size=64, seed=1, spectral=False, checkpoint_every=1,
                    checkpoint_path=str(path))
    tf.engine.run(cfg, None, algo, data, model)
    ck = load_checkpoint(path)
    for k, v in change.items():
        if v is None:
            del ck["state"][k]
        else:
            ck["state"][k] = v
    save_checkpoint(path, ck)
    with pytest.raises(CheckpointError, match=f"checkpoint {re.escape(str(path))} .*{named}"):
        tf.engine.run(cfg, None, algo, data, model, resume=path)


def test_pre_processing_is_keyed_on_the_round() -> None:
    # round_start of round 0 pre-processes (Omega built, models averaged over it); any other
    # round does not, whatever the state holds
    env = toy_services(3, 1, train_sizes=torch.ones(3, dtype=D))
    target = torch.tensor([0.0, 0.1, 5.0], dtype=D)
    env.losses = lambda z, split="val", fallback=None: (z[:, 0] - target) ** 2
    algo = tf.algorithms.dpfl(tau_init=0, budget=1, weighting="uniform", momentum=0.0)
    x0 = torch.tensor([[0.0], [0.2], [4.0]], dtype=D)
    later = algo.init(x0.clone(), env)
    algo.round_start(later, Round(1), env)
    assert not bool(later.own.omega.any()) and torch.equal(later.x, x0)
    first = algo.init(x0.clone(), env)
    algo.round_start(first, Round(0), env)
    assert bool(first.own.omega.any()) and not torch.equal(first.x, x0)
    assert int(first.own.pending_messages.sum()) > 0
    records = algo.communicate(first, Round(0), env).records
    assert records is not None and "dpfl_omega_edges" in records
    assert int(first.own.pending_messages.sum()) == 0
    again = algo.communicate(first, Round(1), env).records
    assert again is None or "dpfl_omega_edges" not in again
    assert "ready" not in first.tensors() and sorted(type(first.own).RETIRED) == ["fresh", "ready"]


def test_needs_a_validation_split() -> None:
    data = tf.data.federate("digits", "dpfl_pathological", 4, classes_per_client=3, seed=0)
    with pytest.raises(ValueError, match="no 'val' samples"):
        tf.run("dpfl", data=data, model=_model(data), rounds=1, tau_init=0, local_steps=1)


def test_a_client_without_validation_samples_chooses_on_its_training_samples() -> None:
    """Before: a client of one sample per class (no validation share) stopped the run
    (``client 3 has no 'val' samples``); now BGGC scores its candidates on its training
    samples: the per-client reference with that client's training loss."""
    y = tf.data.load("digits").y_train
    tiny = [int(np.flatnonzero(y == c)[0]) for c in (0, 1)]
    rest = np.setdiff1d(np.arange(y.size), tiny)[:180]
    part = tf.data.Partition.from_indices([rest[:60], rest[60:120], rest[120:], tiny], y)
    data = tf.data.FederatedData.from_partition(tf.data.load("digits"), part, seed=0, val=0.2)
    assert data.sizes("val").tolist() == [12, 12, 12, 0]
    model, layout, ctx, _ = _services(data)
    n, budget, lr = 4, 2, 0.05
    x0 = tf.engine.layout.init_parameters(model, layout, n, seed=0, same=True,
                                          device=torch.device("cpu"), dtype=D)
    with pytest.raises(ValueError, match="client 3 has no 'val' samples"):
        ctx.losses(x0, "val")
    algo = tf.algorithms.dpfl(lr=lr, budget=budget, tau_init=1, graph_seed=3,
                              select="best_val")
    state = algo.init(x0.clone(), ctx)
    p = torch.tensor(np.array(data.sizes("train")), dtype=D)
    w_init = x0.clone()
    ctx.local_train(w_init, "all", lr, t=0, epochs=1, stream=PRE_STREAM)
    omega_ref = [sorted(bggc(k, [j for j in range(n) if j != k], w_init, p,
                             _client_loss(data, model, layout, k, "train" if k == 3 else "val"),
                             budget=budget, seed=generator_at(3, 0, k))) for k in range(n)]
    algo.round_start(state, Round(0), ctx)
    assert [torch.nonzero(state.own.omega[k]).flatten().tolist() for k in range(n)] == omega_ref
    algo.communicate(state, Round(0), ctx)  # GGC and best_val read the same scores
    assert state.own.best_round is not None and state.own.best_round.tolist() == [0] * n


def test_random_graph_variant_keeps_the_budget_and_skips_ggc() -> None:
    data = tf.data.federate("digits", "pathological", 6, classes_per_client=2, seed=0, val=0.2)
    model = tf.models.build_model("mlp", data.input_shape, data.num_classes, seed=0,
                                  hidden=(8,))
    res = tf.run("dpfl", data=data, model=model, rounds=3, seed=0, budget=2, tau_init=0,
                 local_steps=1, graph="random", batch_size=16, spectral=False)
    omega, collab = res.state.own.omega, res.state.own.collab
    assert omega.sum(1).tolist() == [2] * 6 and collab.sum(1).tolist() == [2] * 6
    assert not bool(collab.diagonal().any())
    edges = [r["value"] for r in res.records.rows if r["metric"] == "realized_edges"]
    assert len(edges) == 3 and edges[0] != edges[1]  # redrawn at every refresh
    again = tf.run("dpfl", data=data, model=model, rounds=3, seed=0, budget=2, tau_init=0,
                   local_steps=1, graph="random", batch_size=16, spectral=False)
    assert torch.equal(again.state.own.collab, collab)
