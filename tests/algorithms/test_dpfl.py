"""DPFL: GGC and BGGC by hand, Theorem 1 (GGC = BGGC), batched = per-client, the budget, the
engine round against a per-client reference, records of the realized graph, resume."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import topofl as tf
from tests.engine._crash import Crash, CrashingData
from topofl._rng import generator_at
from topofl.algorithms import aggregation_matrix, bggc, bggc_batched, ggc, ggc_batched
from topofl.algorithms.dpfl import PRE_STREAM
from topofl.engine import DataServices, Round, RunConfig, toy_services

D = torch.float64
fs = frozenset

# --------------------------------------------------------------------------- loss oracles


def _table(n: int, k: int, rng: np.random.Generator, discrete: bool) -> dict[frozenset[int], float]:
    """A loss for every subset of range(n) that holds k (discrete values give ties, zero gains)."""
    others = [i for i in range(n) if i != k]
    out = {}
    for r in range(len(others) + 1):
        for c in itertools.combinations(others, r):
            v = float(rng.integers(0, 3)) / 2 if discrete else float(rng.normal())
            out[fs((k, *c))] = v
    return out


def _support(w: torch.Tensor) -> frozenset[int]:
    return fs(torch.nonzero(w).flatten().tolist())


def _onehot(n: int) -> torch.Tensor:
    # one-hot "models": the weighted average of a set is supported exactly on that set, also
    # through BGGC's running sums (adding p_j e_j, then removing it, leaves an exact 0)
    return torch.eye(n, dtype=D)


def _table_losses(tables: list[dict[frozenset[int], float]]) -> Any:
    def losses(z: torch.Tensor) -> torch.Tensor:
        return torch.tensor([tables[k][_support(z[k])] for k in range(z.shape[0])], dtype=D)

    return losses


# --------------------------------------------------------------------------- GGC by hand

SYNERGY = {fs({0}): 1.0, fs({0, 1}): 1.1, fs({0, 2}): 1.1, fs({0, 1, 2}): 0.8}
HARMFUL = {fs({0}): 1.0, fs({0, 1}): 0.5, fs({0, 2}): 2.0, fs({0, 1, 2}): 1.5}


@pytest.mark.parametrize("seed", range(12))
def test_ggc_keeps_a_synergistic_pair(seed: int) -> None:
    # Appendix A: 1 alone and 2 alone hurt client 0, {1, 2} together help. Order (1, 2): a = 0
    # and b = max(R({0,2}) - R({0,1,2}), 0) = 0, so p = 1 and 1 is added; then a = 0.3 > 0 = b.
    assert ggc(0, [1, 2], SYNERGY.__getitem__, seed=seed) == {1, 2}
    p = torch.tensor([1.0, 2.0, 3.0], dtype=D)
    assert bggc(0, [1, 2], _onehot(3), p, lambda w: SYNERGY[_support(w)], seed=seed) == {1, 2}


@pytest.mark.parametrize("seed", range(12))
def test_ggc_drops_a_harmful_client(seed: int) -> None:
    # order (1, 2): a = 0.5, b = 0 -> add 1; then a = 0, b = 1 -> remove 2.
    # order (2, 1): a = 0, b = 1 -> remove 2; then a = 0.5, b = 0 -> add 1.
    assert ggc(0, [1, 2], HARMFUL.__getitem__, seed=seed) == {1}


def test_zero_gains_fill_the_budget_in_the_shuffled_order() -> None:
    S = [1, 3, 4, 6, 7]
    for seed in range(5):
        perm = np.random.default_rng(seed).permutation(len(S))
        for budget in (1, 2, 4, 5, 9, None, math.inf):
            got = ggc(0, S, lambda X: 1.0, budget=budget, seed=seed)
            m = len(S) if budget is None or budget == math.inf else min(int(budget), len(S))
            assert got == {S[i] for i in perm[:m]}


def test_coin_flip_has_probability_a_over_a_plus_b() -> None:
    # With B_c = 1 only the first addition counts. Order (1, 2) (prob. 1/2): a = 0.3, b = 0.1,
    # p = 0.75 for 1; if 1 is refused, 2 is added (a = 0.2, b = 0). Order (2, 1): a = b = 0.2,
    # p = 1/2 for 2; if refused, 1 is added. P(C = {1}) = 0.5 * 0.75 + 0.5 * 0.5 = 0.625.
    L = {fs({0}): 1.0, fs({0, 1}): 0.7, fs({0, 2}): 0.8, fs({0, 1, 2}): 0.9}
    runs = 3000
    got = [ggc(0, [1, 2], L.__getitem__, budget=1, seed=s) for s in range(runs)]
    assert all(len(c) == 1 for c in got)
    freq = sum(c == {1} for c in got) / runs
    assert abs(freq - 0.625) < 4 * math.sqrt(0.625 * 0.375 / runs)


def test_empty_candidates_and_oracle_calls() -> None:
    calls: list[frozenset[int]] = []

    def loss(X: frozenset[int]) -> float:
        calls.append(X)
        return float(len(X))

    assert ggc(2, [], loss, seed=0) == frozenset()
    assert calls == []
    ggc(0, [1, 2, 3], loss, seed=0)
    assert len(calls) == 4 * 3  # R(X), R(X+j), R(Y), R(Y-j) per decision (Algorithm 2)
    assert all(0 in X for X in calls)


# --------------------------------------------------------------------------- Theorem 1


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 7), data_seed=st.integers(0, 2**32 - 1), seed=st.integers(0, 2**32 - 1),
       budget=st.one_of(st.none(), st.integers(1, 7)), discrete=st.booleans())
def test_theorem1_ggc_equals_bggc_on_loss_tables(n: int, data_seed: int, seed: int,
                                                 budget: int | None, discrete: bool) -> None:
    rng = np.random.default_rng(data_seed)
    k = int(rng.integers(n))
    S = [j for j in range(n) if j != k and rng.random() < 0.8]
    table = _table(n, k, rng, discrete)
    p = torch.tensor(rng.integers(1, 50, size=n), dtype=D)
    a = ggc(k, S, table.__getitem__, budget=budget, seed=seed)
    b = bggc(k, S, _onehot(n), p, lambda w: table[_support(w)], budget=budget, seed=seed)
    assert a == b
    assert a <= set(S) and k not in a
    assert budget is None or len(a) <= budget


@pytest.mark.parametrize("seed", range(20))
def test_theorem1_ggc_equals_bggc_on_dense_models(seed: int) -> None:
    # real parameter vectors and a smooth non-convex validation loss: GGC averages afresh,
    # BGGC keeps running sums; both see the same rewards (up to the last bits) and decide alike
    rng = np.random.default_rng(seed)
    n, P = 7, 5
    x = torch.tensor(rng.normal(size=(n, P)), dtype=D)
    p = torch.tensor(rng.integers(5, 100, size=n), dtype=D)
    c = torch.tensor(rng.normal(size=P), dtype=D)

    def loss(w: torch.Tensor) -> float:
        return float(((w - c) ** 2).sum() + torch.sin(3 * w).sum())

    def set_loss(X: frozenset[int]) -> float:
        idx = sorted(X)
        return loss((p[idx, None] * x[idx]).sum(0) / p[idx].sum())

    k = seed % n
    S = [j for j in range(n) if j != k]
    for budget in (1, 2, 3, None):
        a = ggc(k, S, set_loss, budget=budget, seed=seed)
        assert a == bggc(k, S, x, p, loss, budget=budget, seed=seed)
        assert budget is None or len(a) <= budget


# --------------------------------------------------------------------------- batched = pure


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 6), data_seed=st.integers(0, 2**32 - 1),
       budget=st.one_of(st.none(), st.integers(1, 6)), discrete=st.booleans())
def test_batched_equals_per_client_and_respects_the_budget(n: int, data_seed: int,
                                                           budget: int | None,
                                                           discrete: bool) -> None:
    rng = np.random.default_rng(data_seed)
    cand = torch.tensor(rng.random((n, n)) < 0.7) & ~torch.eye(n, dtype=torch.bool)
    tables = [_table(n, k, rng, discrete) for k in range(n)]
    p = torch.tensor(rng.integers(1, 30, size=n), dtype=D)
    seeds = [int(s) for s in rng.integers(0, 2**31, size=n)]
    C = ggc_batched(_onehot(n), cand, p, _table_losses(tables), budget=budget, seeds=seeds)
    omega = bggc_batched(_onehot(n), cand, p, _table_losses(tables), budget=budget, seeds=seeds)
    for k in range(n):
        S = torch.nonzero(cand[k]).flatten().tolist()
        ref = ggc(k, S, tables[k].__getitem__, budget=budget, seed=seeds[k])
        assert set(torch.nonzero(C[k]).flatten().tolist()) == ref
        assert set(torch.nonzero(omega[k]).flatten().tolist()) == ref  # Theorem 1 as well
    for M in (C, omega):
        assert M.dtype == torch.bool and M.shape == (n, n)
        assert not bool(M.diagonal().any())
        assert bool((M <= cand).all())
        assert budget is None or int(M.sum(1).max()) <= budget


@pytest.mark.parametrize("seed", range(6))
def test_batched_equals_per_client_on_dense_models(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    n, P = 6, 4
    x = torch.tensor(rng.normal(size=(n, P)), dtype=D)
    p = torch.tensor(rng.integers(5, 60, size=n), dtype=D)
    c = torch.tensor(rng.normal(size=(n, P)), dtype=D)
    cand = torch.tensor(rng.random((n, n)) < 0.8) & ~torch.eye(n, dtype=torch.bool)
    seeds = [seed * 10 + k for k in range(n)]

    def losses(z: torch.Tensor) -> torch.Tensor:  # row k scored by client k
        return ((z - c) ** 2).sum(1) + torch.sin(3 * z).sum(1)

    def loss_k(k: int) -> Any:
        return lambda w: float(((w - c[k]) ** 2).sum() + torch.sin(3 * w).sum())

    def fresh(k: int) -> Any:
        def f(X: frozenset[int]) -> float:
            idx = sorted(X)
            return float(loss_k(k)((p[idx, None] * x[idx]).sum(0) / p[idx].sum()))
        return f

    for budget in (1, 3, None):
        C = ggc_batched(x, cand, p, losses, budget=budget, seeds=seeds)
        omega = bggc_batched(x, cand, p, losses, budget=budget, seeds=seeds)
        for k in range(n):
            S = torch.nonzero(cand[k]).flatten().tolist()
            assert set(torch.nonzero(C[k]).flatten().tolist()) == ggc(
                k, S, fresh(k), budget=budget, seed=seeds[k])
            assert set(torch.nonzero(omega[k]).flatten().tolist()) == bggc(
                k, S, x, p, loss_k(k), budget=budget, seed=seeds[k])


def test_aggregation_matrix_is_eq4() -> None:
    C = torch.tensor([[0, 1, 1], [0, 0, 0], [1, 0, 0]], dtype=torch.bool)
    p = torch.tensor([2.0, 1.0, 5.0], dtype=D)
    W = aggregation_matrix(C, p)
    ref = torch.tensor([[2 / 8, 1 / 8, 5 / 8], [0, 1, 0], [2 / 7, 0, 5 / 7]], dtype=D)
    torch.testing.assert_close(W, ref, rtol=0, atol=1e-15)


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
    with pytest.raises(ValueError, match="B_c"):
        ggc(0, [1], lambda X: 0.0, budget=0, seed=0)
    with pytest.raises(ValueError, match="contain client 1"):
        ggc(1, [0, 1], lambda X: 0.0, seed=0)
    eye = torch.eye(3, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"candidates\[k, k\] must be False"):
        ggc_batched(torch.zeros(3, 2), eye, torch.ones(3), lambda z: z.sum(1), seeds=[0, 1, 2])
    with pytest.raises(ValueError, match="one seed per client"):
        ggc_batched(torch.zeros(3, 2), ~eye, torch.ones(3), lambda z: z.sum(1), seeds=[0])
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
    state.extra["ready"].fill_(True)  # skip pre-processing: LocalOpt restarts every round
    algo.round_start(state, Round(1), ctx)
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
    ctx = DataServices(layout, tf.engine.Mixer(torch.device("cpu"), D),
                       tf.engine.BatchedExecutor(model, layout), data, batch_size=32)
    x0 = tf.engine.init_parameters(model, layout, N, seed=0, same=True,
                                   device=torch.device("cpu"), dtype=D)
    return model, layout, ctx, x0


def _client_loss(data: Any, model: Any, layout: Any, k: int) -> Any:
    """Client k's validation loss of one parameter vector, on the slow per-client path."""
    xs, ys = data.client(k, "val")

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
    torch.testing.assert_close(state.extra["p"], p)

    # ---- pre-processing (Algorithm 1, lines 1-5), written per client
    w_init = x0.clone()
    ctx.local_train(w_init, "all", lr, t=0, epochs=1, stream=PRE_STREAM)
    omega_ref = [sorted(bggc(k, [j for j in range(N) if j != k], w_init, p,
                             _client_loss(data, model, layout, k), budget=budget,
                             seed=generator_at(seed, 0, k))) for k in range(N)]
    x_ref = torch.stack([_avg(w_init, p, [k, *omega_ref[k]]) for k in range(N)])
    algo.round_start(state, Round(0), ctx)
    omega = state.extra["omega"]
    assert [torch.nonzero(omega[k]).flatten().tolist() for k in range(N)] == omega_ref
    assert all(len(o) <= budget for o in omega_ref)
    torch.testing.assert_close(state.x, x_ref, rtol=0, atol=1e-12)
    pending = int(state.extra["pending_messages"].sum())
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
    collab = state.extra["collab"]
    assert [torch.nonzero(collab[k]).flatten().tolist() for k in range(N)] == C_ref
    torch.testing.assert_close(state.x, new_ref, rtol=0, atol=1e-12)
    assert msgs == sum(len(o) for o in omega_ref) + pending
    assert int(state.extra["pending_messages"].sum()) == 0
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
        assert torch.nonzero(state.extra["omega"][k]).flatten().tolist() == expected
    torch.testing.assert_close(state.x, x0)


def _strip(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["metric"] != "wall_time"]


def test_runs_through_the_engine_and_records_the_directed_graph(data: Any) -> None:
    res = tf.run("dpfl", data=data, model=_model(data), rounds=3, budget=2, tau_init=1,
                 local_epochs=1, refresh_every=2, batch_size=64, seed=0, lr=0.05,
                 record_clients=False, eval_global=False)
    rec = res.records
    omega, collab = res.state.extra["omega"], res.state.extra["collab"]
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





def test_resume_equals_uninterrupted(data: Any, tmp_path: Path) -> None:
    # the checkpoint after round 1 holds Omega, C and the "pre-processing done" flag: the
    # resumed run skips pre-processing and reuses round 0's C in round 2 (no refresh)
    model = _model(data)
    algo = tf.algorithms.dpfl(lr=0.05, budget=2, tau_init=1, local_epochs=1, refresh_every=3)
    kw: dict[str, Any] = dict(rounds=3, batch_size=64, seed=1, eval_every=2, spectral=False)
    full = tf.engine.run(RunConfig(**kw), None, algo, data, model)
    cfg = RunConfig(**kw, checkpoint_every=2, checkpoint_path=str(tmp_path / "ck.pt"),
                    records_path=str(tmp_path / "r.jsonl"))
    with pytest.raises(Crash):
        tf.engine.run(cfg, None, algo, CrashingData(data, at=2), model)
    resumed = tf.engine.run(cfg, None, algo, data, model, resume=tmp_path / "ck.pt")
    assert _strip(tf.records.load(tmp_path / "r.jsonl").rows) == _strip(full.records.rows)
    assert _strip(resumed.records.rows) == _strip(full.records.rows)
    for k, v in full.state.tensors().items():
        assert torch.equal(resumed.state.tensors()[k], v), k


def test_needs_a_validation_split() -> None:
    data = tf.data.federate("digits", "dpfl_pathological", 4, classes_per_client=3, seed=0)
    with pytest.raises(ValueError, match="no 'val' samples"):
        tf.run("dpfl", data=data, model=_model(data), rounds=1, tau_init=0, local_steps=1)


def test_random_graph_variant_keeps_the_budget_and_skips_ggc() -> None:
    data = tf.data.federate("digits", "pathological", 6, classes_per_client=2, seed=0, val=0.2)
    model = tf.models.build_model("mlp", data.input_shape, data.num_classes, seed=0,
                                  hidden=(8,))
    res = tf.run("dpfl", data=data, model=model, rounds=3, seed=0, budget=2, tau_init=0,
                 local_steps=1, graph="random", batch_size=16, spectral=False)
    omega, collab = res.state.extra["omega"], res.state.extra["collab"]
    assert omega.sum(1).tolist() == [2] * 6 and collab.sum(1).tolist() == [2] * 6
    assert not bool(collab.diagonal().any())
    edges = [r["value"] for r in res.records.rows if r["metric"] == "realized_edges"]
    assert len(edges) == 3 and edges[0] != edges[1]  # redrawn at every refresh
    again = tf.run("dpfl", data=data, model=model, rounds=3, seed=0, budget=2, tau_init=0,
                   local_steps=1, graph="random", batch_size=16, spectral=False)
    assert torch.equal(again.state.extra["collab"], collab)
