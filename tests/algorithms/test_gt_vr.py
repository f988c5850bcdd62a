"""GT-SAGA and GT-SARAH against decent-bench 0.3.0's own code, slow per-client references,
closed forms and their reductions to gradient tracking.

``data/decentbench_vr.json`` holds decent-bench's regression problems (4 agents, 10 samples
each, its ``LinearRegressionCost`` ``f_i(x) = |A_i x - b_i|^2 / (2 m_i)`` with batches of 2 to
4), the Metropolis ``W`` its ``P2PNetwork`` computes on three graphs, the iterates of its
``GT_SAGA`` and ``GT_SARAH`` and every batch index each agent drew, written by
``analysis/decentbench_vr.py`` under Python 3.13. Here topofl's ``gt_saga`` (``refresh=
"redrawn"``) and ``gt_sarah`` (``inner_steps = num_local_steps + 1``) replay those indices
through ``tf.engine.run_rounds`` in float64, and every iterate of every agent must agree to
1e-10.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.algorithms.gt_saga import gt_saga
from topofl.algorithms.gt_sarah import gt_sarah
from topofl.algorithms.gt_vr import FiniteSum, draw_indices, least_squares
from topofl.engine import run_rounds

D = torch.float64
TOL = 1e-10
REFERENCE = json.loads((Path(__file__).parent / "data" / "decentbench_vr.json").read_text())
RUNS = REFERENCE["runs"]


# ----------------------------------------------------------------------------- helpers


def _topology(graph: str) -> tf.Topology:
    return tf.Topology.from_matrix(np.array(REFERENCE["graphs"][graph]), name=graph)


def _case_id(run: dict[str, Any]) -> str:
    return (f"{run['algorithm']}-{run['problem']}-{run['graph']}-B{run['batch_size']}"
            f"-K{run['num_local_steps']}" + ("-spread" if np.any(run["x0"]) else ""))


def _replay(run: dict[str, Any]) -> tuple[Any, int, int]:
    """``(draws, rounds per decent-bench step, steps)``: decent-bench's indices as the
    ``draws`` of a FiniteSum (GT-SAGA: its two calls a round; GT-SARAH: its inner step
    ``s - 1`` at round ``k q + s``)."""
    drawn = run["drawn"]
    if run["algorithm"] == "GT_SAGA":
        return (lambda t, call: torch.tensor([a[call] for a in drawn[t]])), 1, len(drawn)
    q = run["num_local_steps"] + 1

    def draws(t: int, call: int) -> torch.Tensor:
        assert call == 0 and t % q
        return torch.tensor([a[t % q - 1] for a in drawn[t // q]])

    return draws, q, len(drawn)


def _data(problem: str) -> tuple[torch.Tensor, torch.Tensor]:
    p = REFERENCE["problems"][problem]
    return torch.tensor(p["A"], dtype=D), torch.tensor(p["b"], dtype=D)


def _algorithm(name: str, run: dict[str, Any], samples: FiniteSum, q: int) -> Any:
    if name == "GT_SAGA":
        return gt_saga(lr=run["step_size"], sample_batch=run["batch_size"], refresh="redrawn",
                       samples=samples)
    return gt_sarah(lr=run["step_size"], inner_steps=q, sample_batch=run["batch_size"],
                    samples=samples)


def _iterates(run: dict[str, Any], name: str | None = None, q: int | None = None) -> np.ndarray:
    """``[R, n, d]``: topofl's iterates at decent-bench's steps (``name``/``q``: another
    method or outer loop on the same replayed draws)."""
    draws, per, steps = _replay(run)
    A, b = _data(run["problem"])
    samples = least_squares(A, b, draws=draws)
    algo = _algorithm(name or run["algorithm"], run, samples, q or per)
    x = torch.tensor(run["x0"], dtype=D)
    topo = _topology(run["graph"])
    state, out = None, []
    for k in range(steps):
        trace = run_rounds(algo, x, topo, lambda z, ph, rnd: z, rounds=per, state=state,
                           start=k * per)
        state = trace.state
        out.append(state.x.numpy().copy())
    return np.stack(out)


# ------------------------------------------------------------------ decent-bench's own code


@pytest.mark.parametrize("run", RUNS, ids=_case_id)
def test_equals_decentbench_iterate_by_iterate(run: dict[str, Any]) -> None:
    want = np.array(run["iterates"])
    got = _iterates(run)
    assert got.shape == want.shape
    gap = float(np.abs(got - want).max())
    assert gap <= TOL, gap  # absolute: the iterates reach 92 in size


def test_the_reference_tells_the_methods_apart() -> None:
    """On the same draws, the other method, GT-SAGA's paper refresh, and plain gradient
    tracking (full gradients) are all far from decent-bench's iterates."""
    saga = next(r for r in RUNS if r["algorithm"] == "GT_SAGA" and r["graph"] == "ring")
    want = np.array(saga["iterates"])
    draws, _, steps = _replay(saga)
    A, b = _data(saga["problem"])
    x0, topo = torch.tensor(saga["x0"], dtype=D), _topology(saga["graph"])
    paper = gt_saga(lr=saga["step_size"], sample_batch=saga["batch_size"],
                    samples=least_squares(A, b, draws=draws))
    got = run_rounds(paper, x0, topo, lambda z, ph, rnd: z, rounds=steps).state.x.numpy()
    assert np.abs(got - want[-1]).max() > 1e-3  # refresh="sampled" is not decent-bench's
    full = _full_grad(A, b)
    gt = run_rounds(tf.algorithms.dsgt(lr=saga["step_size"], variant="dsgt"), x0, topo,
                    full, rounds=steps).state.x.numpy()
    assert np.abs(gt - want[-1]).max() > 1e-3
    sarah = next(r for r in RUNS if r["algorithm"] == "GT_SARAH" and r["num_local_steps"] > 1)
    want = np.array(sarah["iterates"])
    q = sarah["num_local_steps"] + 1
    assert np.abs(_iterates(sarah, q=q)[-1] - want[-1]).max() <= TOL
    with pytest.raises(AssertionError):  # the wrong outer loop reads draws it has not
        _iterates(sarah, q=q - 1)


def _full_grad(A: torch.Tensor, b: torch.Tensor) -> Any:
    m = A.shape[1]

    def grad(z: torch.Tensor, phase: Any, rnd: Any) -> torch.Tensor:
        return (torch.einsum("nmd,nm->nd", A, torch.einsum("nmd,nd->nm", A, z) - b)) / m

    return grad


# ------------------------------------------------------------- slow references, reductions


def _problem(n: int, m: int, d: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    """Noise-free least squares whose clients disagree: ``b_i = A_i x_true + c_i`` with a
    shift ``c_i`` per client; the minimiser of the sum in closed form."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, m, d))
    b = A @ rng.normal(size=d) + rng.normal(size=(n, 1)) * 2.0
    opt = np.linalg.lstsq(A.reshape(-1, d), b.reshape(-1), rcond=None)[0]
    return torch.tensor(A, dtype=D), torch.tensor(b, dtype=D), opt


def _slow_gt_saga(A: np.ndarray, b: np.ndarray, W: np.ndarray, lr: float, batch: int,
                  rounds: int, seed: int) -> np.ndarray:
    """The paper's GT-SAGA, one client at a time, with the table of points ``z_ij``."""
    n, m, d = A.shape
    x = np.zeros((n, d))
    z = np.zeros((n, m, d))  # z_ij^0 = x_i^0
    y, g_old = np.zeros((n, d)), np.zeros((n, d))

    def grad(i: int, j: int, p: np.ndarray) -> np.ndarray:
        return (A[i, j] @ p - b[i, j]) * A[i, j]

    for t in range(rounds):
        idx = draw_indices(np.full(n, m), batch, seed=seed, t=t, call=0, replace=False)
        g = np.zeros((n, d))
        for i in range(n):
            table = np.mean([grad(i, j, z[i, j]) for j in range(m)], axis=0)
            g[i] = np.mean([grad(i, j, x[i]) - grad(i, j, z[i, j]) for j in idx[i]], axis=0)
            g[i] += table
            for j in idx[i]:
                z[i, j] = x[i]
        y = W @ (y + g - g_old)
        x = W @ (x - lr * y)
        g_old = g
    return x


def test_gt_saga_equals_the_slow_reference_of_the_paper() -> None:
    A, b, _ = _problem(5, 7, 3, seed=3)
    topo = tf.topologies.ring(5)
    algo = gt_saga(lr=0.03, sample_batch=2, samples=least_squares(A, b), draw_seed=4)
    got = run_rounds(algo, torch.zeros(5, 3, dtype=D), topo, lambda z, ph, rnd: z,
                     rounds=40).state.x.numpy()
    want = _slow_gt_saga(A.numpy(), b.numpy(), topo.W.toarray(), 0.03, 2, 40, seed=4)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def _atc_gt(grad: Any, W: torch.Tensor, x0: torch.Tensor, lr: float, rounds: int
            ) -> torch.Tensor:
    """Gradient tracking, adapt then combine on both: y+ = W (y + g - g_old),
    x+ = W (x - lr y+), from y = g_old = 0."""
    x, y, old = x0.clone(), torch.zeros_like(x0), torch.zeros_like(x0)
    for _ in range(rounds):
        g = grad(x, None, None)
        y = W @ (y + g - old)
        x = W @ (x - lr * y)
        old = g
    return x


def test_full_batch_gt_saga_is_adapt_then_combine_gradient_tracking() -> None:
    A, b, _ = _problem(4, 5, 2, seed=1)
    topo = tf.topologies.ring(4)
    W = torch.tensor(topo.W.toarray(), dtype=D)
    full = _full_grad(A, b)
    want = _atc_gt(full, W, torch.zeros(4, 2, dtype=D), 0.05, 60)
    # every sample in every batch: the estimate is the full gradient
    whole = gt_saga(lr=0.05, sample_batch=5, samples=least_squares(A, b))
    # each step's gradient as the client's only sample
    grad = gt_saga(lr=0.05, samples="gradient")
    for algo, g in ((whole, lambda z, ph, rnd: z), (grad, full)):
        got = run_rounds(algo, torch.zeros(4, 2, dtype=D), topo, g, rounds=60).state.x
        torch.testing.assert_close(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("q", [1, 3])
def test_full_gradient_gt_sarah_is_diging(q: int) -> None:
    """With q = 1 (a full gradient every round) or each step's gradient as the only sample,
    GT-SARAH's iterates are DIGing's (tf.algorithms.dsgt, variant="diging")."""
    A, b, _ = _problem(5, 4, 3, seed=2)
    topo = tf.topologies.ring(5)
    full = _full_grad(A, b)
    want = run_rounds(tf.algorithms.dsgt(lr=0.04), torch.zeros(5, 3, dtype=D), topo, full,
                      rounds=50).state.x
    algos = [(gt_sarah(lr=0.04, inner_steps=q, samples="gradient"), full)]
    if q == 1:
        algos.append((gt_sarah(lr=0.04, inner_steps=1, samples=least_squares(A, b)),
                      lambda z, ph, rnd: z))
    for algo, g in algos:
        got = run_rounds(algo, torch.zeros(5, 3, dtype=D), topo, g, rounds=50).state.x
        torch.testing.assert_close(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["gt_saga", "gt_saga_redrawn", "gt_sarah"])
def test_reaches_the_least_squares_minimiser_where_clients_disagree(name: str) -> None:
    A, b, opt = _problem(6, 8, 3, seed=5)
    samples = least_squares(A, b)
    algo = {"gt_saga": lambda: gt_saga(lr=0.02, samples=samples),
            "gt_saga_redrawn": lambda: gt_saga(lr=0.02, sample_batch=3, refresh="redrawn",
                                               samples=samples),
            "gt_sarah": lambda: gt_sarah(lr=0.02, inner_steps=6, sample_batch=2,
                                         samples=samples)}[name]()
    x = run_rounds(algo, torch.zeros(6, 3, dtype=D), tf.topologies.ring(6),
                   lambda z, ph, rnd: z, rounds=4000).state.x.numpy()
    np.testing.assert_allclose(x, np.broadcast_to(opt, x.shape), rtol=0, atol=1e-10)
    # D-SGD with the same step and full gradients stays off: the clients disagree
    dsgd = run_rounds(tf.algorithms.dsgd(lr=0.02), torch.zeros(6, 3, dtype=D),
                      tf.topologies.ring(6), _full_grad(A, b), rounds=4000).state.x.numpy()
    assert np.abs(dsgd - opt).max() > 1e-4


def test_the_trackers_average_the_estimates() -> None:
    """Column-stochastic W: sum_i y_i = sum_i g_i (GT-SAGA) and sum_i v_i (GT-SARAH)."""
    A, b, _ = _problem(5, 6, 2, seed=8)
    for algo in (gt_saga(lr=0.05, sample_batch=2, samples=least_squares(A, b)),
                 gt_sarah(lr=0.05, inner_steps=3, samples=least_squares(A, b))):
        s = run_rounds(algo, torch.zeros(5, 2, dtype=D), tf.topologies.ring(5),
                       lambda z, ph, rnd: z, rounds=7).state
        est = s.own.g if hasattr(s.own, "g") else s.own.v
        torch.testing.assert_close(s.own.y.sum(0), est.sum(0), rtol=0, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(1, 12), min_size=1, max_size=6), batch=st.integers(1, 12),
       t=st.integers(0, 10**6), replace=st.booleans())
def test_draws_are_in_range_distinct_and_indexed(sizes: list[int], batch: int, t: int,
                                                 replace: bool) -> None:
    m = np.array(sizes)
    if not replace:
        batch = min(batch, int(m.min()))
    idx = draw_indices(m, batch, seed=3, t=t, call=1, replace=replace)
    assert idx.shape == (m.size, batch)
    assert ((idx >= 0) & (idx < m[:, None])).all()
    if not replace:
        assert all(len(set(r)) == batch for r in idx.tolist())
    assert (idx == draw_indices(m, batch, seed=3, t=t, call=1, replace=replace)).all()


# ------------------------------------------------------------------------- the engine


def _engine(name: str, rounds: int, **kw: Any) -> Any:
    data = tf.data.federate("digits", "iid", 4, seed=0, val=0.2)
    return tf.run(name, tf.topologies.ring(4), data, "logistic", rounds, seed=0, batch_size=8,
                  dtype="float64", spectral=False, progress=False, **kw)


def test_the_engine_runs_gt_saga_on_the_clients_samples() -> None:
    res = _engine("gt_saga", 3)
    own = res.state.own
    sizes = torch.tensor(np.array(res.services.data.sizes("train")))
    assert own.table.shape[:2] == (4, int(sizes.max()))
    # the table's mean, kept step by step, is the mean of its entries
    real = torch.arange(own.table.shape[1]).unsqueeze(0) < sizes.unsqueeze(1)
    mean = (own.table * real.unsqueeze(2)).sum(1) / sizes.unsqueeze(1)
    torch.testing.assert_close(own.mean, mean, rtol=0, atol=1e-12)
    _, loss = res.records.series("train_loss")
    assert np.isfinite(loss).all()


def test_a_run_gives_the_method_its_own_batch_and_the_engine_its_own() -> None:
    p = tf.api.prepare("gt_saga", "ring", n_clients=4, rounds=1, batch_size=8, sample_batch=3)
    assert p.algorithm.hparams["sample_batch"] == 3 and p.run.batch_size == 8


def test_the_engine_runs_gt_sarah_reproducibly() -> None:
    a = _engine("gt_sarah", 4, inner_steps=3)
    b = _engine("gt_sarah", 4, inner_steps=3)
    torch.testing.assert_close(a.state.x, b.state.x, rtol=0, atol=0)
    assert bool(torch.isfinite(a.state.x).all())


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(("make", "match"), [
    (lambda: gt_saga(lr=0), "lr"),
    (lambda: gt_saga(lr=-1), "lr"),
    (lambda: gt_sarah(lr=0), "lr"),
    (lambda: gt_saga(sample_batch=0), "sample_batch"),
    (lambda: gt_sarah(sample_batch=0), "sample_batch"),
    (lambda: gt_sarah(inner_steps=0), "inner_steps"),
    (lambda: gt_saga(refresh="never"), "refresh"),
    (lambda: gt_saga(samples="all"), "samples"),
    (lambda: gt_sarah(samples=3), "samples"),
    (lambda: FiniteSum(lambda z, i: z, sizes=(2, 0)), "at least one component"),
])
def test_bad_settings_are_refused_in_one_line(make: Any, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match) as info:
        make()
    assert "\n" not in str(info.value)


def test_what_a_run_cannot_do_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    A, b, _ = _problem(4, 3, 2, seed=0)
    x0, ring = torch.zeros(4, 2, dtype=D), tf.topologies.ring(4)
    cases = [
        (gt_saga(sample_batch=4, samples=least_squares(A, b)), "sample_batch must be in"),
        (gt_saga(), "per-sample gradients of its clients' data"),
        (gt_sarah(), "per-sample gradients of its clients' data"),
        (gt_saga(samples=least_squares(A[:3], b[:3])), "3 clients, the run 4"),
    ]
    for algo, match in cases:
        with pytest.raises(ValueError, match=match) as info:
            run_rounds(algo, x0, ring, lambda z, ph, rnd: z, rounds=1)
        assert "\n" not in str(info.value)
    monkeypatch.setattr(sys.modules["topofl.algorithms.gt_saga"], "MAX_TABLE_BYTES", 100)
    with pytest.raises(ValueError, match=r"table of 4 clients x 3 samples x 2 parameters"):
        run_rounds(gt_saga(samples=least_squares(A, b)), x0, ring, lambda z, ph, rnd: z,
                   rounds=1)
    push = tf.topologies.star(4, weights="push_sum")  # column-, not doubly stochastic
    with pytest.raises(ValueError, match="gt_saga needs a doubly-stochastic W") as info:
        _engine_on("gt_saga", push)
    assert "\n" not in str(info.value)


def _engine_on(name: str, topology: Any) -> Any:
    data = tf.data.federate("digits", "iid", 4, seed=0, val=0.2)
    return tf.run(name, topology, data, "logistic", 1, seed=0, batch_size=8, spectral=False,
                  progress=False)



def test_the_engine_path_is_refused_across_ranks() -> None:
    # a rank holding 2 of the run's 4 clients (the distributed equivalence test runs the real
    # ranks): the per-sample path would read clients' data held on other ranks
    from types import SimpleNamespace

    import torch

    from topofl.algorithms import gt_vr

    env = SimpleNamespace(n=4, clients=SimpleNamespace(ids=[0, 1]))
    with pytest.raises(ValueError, match="gt_saga does not run distributed"):
        gt_vr.resolve(None, 0, env, torch.zeros(2, 3), "gt_saga")
    # a caller's finite sum or "gradient" does not read the engine's data: allowed
    assert gt_vr.resolve("gradient", 0, env, torch.zeros(2, 3), "gt_saga") is None
