"""Exact diffusion and NIDS against slow per-client references, closed forms and their
reductions to known methods.

The toy problem: client ``i`` minimises ``f_i(x) = a_i |x - b_i|^2 / 2`` (full gradients);
the optimum of ``sum_i f_i`` is ``x* = sum_i a_i b_i / sum_i a_i``. The comparison with
decent-bench's own code is ``test_decentbench.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.engine import Round, run_rounds, toy_services
from topofl.engine.availability import Availability

D = torch.float64
N, P = 8, 3
NAMES = ("exact_diffusion", "nids")


def _problem(n: int = N, p: int = P, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 1.5, size=(n, 1)), rng.normal(size=(n, p)) * 2.0


def _optimum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(0) / a.sum()


def _grad(a: np.ndarray, b: np.ndarray) -> Any:
    at, bt = torch.tensor(a, dtype=D), torch.tensor(b, dtype=D)
    return lambda z, phase, rnd: at * (z - bt)


def _engine(algo: Any, topo: Any, a: np.ndarray, b: np.ndarray, rounds: int,
            x0: np.ndarray | None = None, **kw: Any) -> Any:
    start = torch.zeros(a.shape[0], b.shape[1], dtype=D) if x0 is None else torch.tensor(x0)
    return run_rounds(algo, start, topo, _grad(a, b), rounds=rounds, **kw)


def _follow(algo: Any, topo: Any, a: np.ndarray, b: np.ndarray, rounds: int) -> np.ndarray:
    """``[rounds, n, p]``: the engine's models after each round, from x = 0."""
    n, p = b.shape
    env = toy_services(n, p)
    state = algo.init(torch.zeros(n, p, dtype=D), env)
    out = []
    for t in range(rounds):
        run_rounds(algo, state.x, topo, _grad(a, b), rounds=1, env=env, state=state, start=t)
        out.append(state.x.numpy().copy())
    return np.array(out)


# ----------------------------------------------------------------------------- references
# Slow and obvious: one client at a time, sums written out, numpy float64, the papers' forms.


def _tilde(W: np.ndarray, gamma: float) -> np.ndarray:
    return np.eye(len(W)) - gamma * (np.eye(len(W)) - W)


def _ref_exact_diffusion(W: np.ndarray, a: np.ndarray, b: np.ndarray, steps: list[float],
                         gamma: float, wd: float) -> list[np.ndarray]:
    """Yuan et al.'s adapt / correct / combine, psi_{-1} = w_{-1} = x_0."""
    n = a.shape[0]
    Wt = _tilde(W, gamma)
    x = np.zeros_like(b)
    psi = x.copy()
    out = []
    for step in steps:
        new_psi = np.array([x[i] - step * (a[i] * (x[i] - b[i]) + wd * x[i]) for i in range(n)])
        phi = np.array([new_psi[i] + x[i] - psi[i] for i in range(n)])
        x = np.array([sum(Wt[i, j] * phi[j] for j in range(n)) for i in range(n)])
        psi = new_psi
        out.append(x.copy())
    return out


def _ref_nids(W: np.ndarray, a: np.ndarray, b: np.ndarray, steps: list[float], gamma: float,
              wd: float) -> list[np.ndarray]:
    """Li, Shi & Yan's recursion with r = 0: x_1 = x_0 - a_0 g(x_0), then
    x_{t+1} = W~ (2 x_t - x_{t-1} - a_t g(x_t) + a_{t-1} g(x_{t-1}))."""
    n = a.shape[0]
    Wt = _tilde(W, gamma)
    g = lambda x: np.array([a[i] * (x[i] - b[i]) + wd * x[i] for i in range(n)])  # noqa: E731
    prev = np.zeros_like(b)
    cur = prev - steps[0] * g(prev)
    out = [cur.copy()]
    for t in range(1, len(steps)):
        y = 2 * cur - prev - steps[t] * g(cur) + steps[t - 1] * g(prev)
        prev, cur = cur, np.array([sum(Wt[i, j] * y[j] for j in range(n)) for i in range(n)])
        out.append(cur.copy())
    return out


REFS = {"exact_diffusion": _ref_exact_diffusion, "nids": _ref_nids}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("hp", [{}, {"gamma": 1.0}, {"gamma": 0.3, "weight_decay": 0.05,
                                                     "decay": 0.98}])
def test_matches_the_per_client_reference_step_by_step(name: str, hp: dict[str, Any]) -> None:
    a, b = _problem(seed=2)
    topo = tf.topologies.random_regular(N, 3, seed=0)  # Metropolis weights, symmetric
    lr, rounds = 0.3, 40
    steps = [lr * hp.get("decay", 1.0) ** t for t in range(rounds)]
    ref = REFS[name](topo.to_dense(), a, b, steps, hp.get("gamma", 0.5),
                     hp.get("weight_decay", 0.0))
    got = _follow(tf.algorithms.get_algorithm(name, lr=lr, **hp), topo, a, b, rounds)
    np.testing.assert_allclose(got, np.array(ref), rtol=0, atol=1e-12)


# ----------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("gamma", [0.5, 1.0])
def test_exact_optimum_with_a_constant_step_where_dsgd_keeps_its_bias(name: str,
                                                                       gamma: float) -> None:
    a, b = _problem()
    ring = tf.topologies.ring(N)
    x = _engine(tf.algorithms.get_algorithm(name, lr=0.3, gamma=gamma), ring, a, b, 1500)
    assert np.abs(x.evaluated().numpy() - _optimum(a, b)).max() < 1e-10
    d = _engine(tf.algorithms.dsgd(lr=0.3), ring, a, b, 1500).evaluated().numpy()
    assert np.abs(d - _optimum(a, b)).max() > 1e-2


@settings(deadline=None, max_examples=30)
@given(n=st.integers(2, 9), seed=st.integers(0, 10_000), k=st.integers(0, 2),
       gamma=st.floats(0.05, 1.0))
def test_the_corrections_sum_to_zero_at_every_round(n: int, seed: int, k: int,
                                                    gamma: float) -> None:
    # sum_i (x_i - psi_i) = 0 after every round (W~ is column stochastic, psi_0 = x_0): the
    # average moves by the average gradient, the fixed point is the optimum of the sum
    a, b = _problem(n, 2, seed)
    topo = [tf.topologies.ring(n), tf.topologies.complete(n), tf.topologies.star(n)][k]
    grad = _grad(a, b)
    x0 = torch.tensor(np.random.default_rng(seed).normal(size=(n, 2)), dtype=D)
    for name in NAMES:
        algo = tf.algorithms.get_algorithm(name, lr=0.1, gamma=gamma)
        env = toy_services(n, 2)
        state = algo.init(x0.clone(), env)
        for t in range(5):
            rnd = Round(t, topo)
            algo.update(state, grad(state.x, algo.phases[0], rnd), algo.phases[0],
                        torch.full((n,), 0.1, dtype=D), rnd, env)
            algo.communicate(state, rnd, env)
            gap = (state.x - state.own.psi).sum(0)
            assert float(gap.abs().max()) < 1e-12, (name, t)


# ----------------------------------------------------------------------------- reductions


@pytest.mark.parametrize("name", NAMES)
def test_without_neighbours_each_client_runs_gradient_descent_alone(name: str) -> None:
    # W = I (no arcs): W~ = I, and x_{t+1} - x_t = -a g(x_t) by induction (the correction
    # telescopes): local gradient descent on f_i
    a, b = _problem(seed=3)
    lonely = tf.Topology.from_matrix(np.eye(N), name="no_arcs")
    got = _engine(tf.algorithms.get_algorithm(name, lr=0.2), lonely, a, b, 30).evaluated()
    x = np.zeros_like(b)
    for _ in range(30):
        x = x - 0.2 * a * (x - b)
    np.testing.assert_allclose(got.numpy(), x, rtol=0, atol=1e-12)


def test_d2_on_the_complete_graph_is_centralized_gradient_descent() -> None:
    # W = J (complete graph, Metropolis weights 1/n) and gamma = 1 (D^2's W itself): from a
    # common x_0 every x_t is the average, and x_{t+1} = x_t - a mean_i g_i(x_t)
    a, b = _problem(seed=4)
    got = _follow(tf.algorithms.exact_diffusion(lr=0.2, gamma=1.0), tf.topologies.complete(N),
                  a, b, 25)
    x = np.zeros(P)
    for t in range(25):
        x = x - 0.2 * (a * (x - b)).mean(0)
        np.testing.assert_allclose(got[t], np.broadcast_to(x, (N, P)), rtol=0, atol=1e-12)


@settings(deadline=None, max_examples=20)
@given(n=st.integers(2, 8), k=st.integers(0, 2), gamma=st.floats(0.05, 1.0),
       seed=st.integers(0, 1000))
def test_identical_clients_run_gradient_descent_on_any_graph(n: int, k: int, gamma: float,
                                                             seed: int) -> None:
    # every f_i the same and a common start: W~ 1 = 1 keeps the models equal, and both
    # methods are gradient descent on f
    a0, b0 = _problem(1, 2, seed)
    a, b = np.repeat(a0, n, 0), np.repeat(b0, n, 0)
    topo = [tf.topologies.ring(n), tf.topologies.complete(n), tf.topologies.star(n)][k]
    x = np.zeros(2)
    for _ in range(10):
        x = x - 0.3 * a0[0] * (x - b0[0])
    for name in NAMES:
        got = _engine(tf.algorithms.get_algorithm(name, lr=0.3, gamma=gamma), topo, a, b, 10)
        np.testing.assert_allclose(got.evaluated().numpy(), np.broadcast_to(x, (n, 2)),
                                   rtol=0, atol=1e-12)


def test_nids_is_exact_diffusion_restarted_from_its_own_first_step() -> None:
    # the same recursion: NIDS after round 0 (x_1 = psi_1 = x_0 - a g(x_0)) continued is
    # exact diffusion's rounds 1.. from the state (x = psi = x_1)
    a, b = _problem(seed=5)
    topo = tf.topologies.random_regular(N, 3, seed=1)
    nids = _follow(tf.algorithms.nids(lr=0.2), topo, a, b, 20)
    ed = tf.algorithms.exact_diffusion(lr=0.2)
    env = toy_services(N, P)
    x1 = torch.tensor(nids[0])
    state = ed.init(x1.clone(), env)  # psi = x_1
    # exact diffusion from psi = x = x_1 runs x_2 = W~ (x_1 + psi_2 - x_1) = W~ psi_2, as NIDS
    run_rounds(ed, state.x, topo, _grad(a, b), rounds=19, env=env, state=state, start=1)
    np.testing.assert_allclose(state.x.numpy(), nids[-1], rtol=0, atol=1e-12)


# ----------------------------------------------------------------------------- the engine


@pytest.mark.parametrize("name", NAMES)
def test_absent_clients_stand_still_and_the_optimum_is_still_exact(name: str) -> None:
    a, b = _problem(seed=6)
    ring = tf.topologies.ring(N)
    avail = Availability.from_config({"model": "bernoulli", "offline": 0.3, "seed": 0})
    algo = tf.algorithms.get_algorithm(name, lr=0.2)
    env = toy_services(N, P)
    state = algo.init(torch.zeros(N, P, dtype=D), env)
    for t in range(40):
        before = {k: v.clone() for k, v in state.tensors().items()}
        run_rounds(algo, state.x, ring, _grad(a, b), rounds=1, env=env, state=state, start=t,
                   availability=avail)
        off = ~avail.online(t, N)
        for k, v in state.tensors().items():
            assert torch.equal(v[off], before[k][off]), (t, k)
    run_rounds(algo, state.x, ring, _grad(a, b), rounds=1500, env=env, state=state, start=40,
               availability=avail)
    assert np.abs(state.x.numpy() - _optimum(a, b)).max() < 1e-10


def test_messages_are_dsgds_and_nids_sends_none_in_its_first_round() -> None:
    a, b = _problem()
    ring = tf.topologies.ring(N)
    sent = {name: _engine(tf.algorithms.get_algorithm(name, lr=0.1), ring, a, b, 2).sent
            for name in ("dsgd", *NAMES)}
    nbytes = {k: [sum(f.bytes for f in r.flows or ()) for r in s] for k, s in sent.items()}
    assert [r.messages for r in sent["exact_diffusion"]] == [2 * N, 2 * N]
    assert nbytes["exact_diffusion"] == nbytes["dsgd"] == [2 * N * P * 8] * 2
    assert [r.messages for r in sent["nids"]] == [0, 2 * N]
    assert nbytes["nids"] == [0, 2 * N * P * 8]


def test_trains_an_mlp_on_digits() -> None:
    for name in NAMES:
        res = tf.run(name, topology="ring", n_clients=8, rounds=30, seed=0, model="mlp",
                     lr=0.05, eval_every=15, spectral=False, record_clients=False)
        _, acc = res.records.series("test_acc_mean")
        assert acc[-1] > acc[0] + 0.05, (name, acc.tolist())


# ----------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("kw,match", [
    ({"lr": 0.0}, r"lr must be in \(0, inf\], got 0"),
    ({"lr": -1.0}, r"lr must be in \(0, inf\], got -1"),
    ({"gamma": 0.0}, r"gamma must be in \(0, 1\], got 0"),
    ({"gamma": 1.5}, r"gamma must be in \(0, 1\], got 1.5"),
    ({"gamma": float("nan")}, "gamma must be a number, got nan"),
    ({"weight_decay": -0.1}, "weight_decay must be"),
    ({"decay": 0.0}, "decay must be"),
])
def test_bad_settings_are_refused_in_one_line(name: str, kw: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match) as exc:
        tf.algorithms.get_algorithm(name, **kw)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("name", NAMES)
def test_a_directed_doubly_stochastic_w_is_refused_in_one_line(name: str) -> None:
    W = (np.eye(6) + np.roll(np.eye(6), 1, axis=1)) / 2  # doubly stochastic, not symmetric
    topo = tf.Topology.from_matrix(W, name="directed_cycle")
    a, b = _problem(6, 2, seed=7)
    with pytest.raises(ValueError, match=f"{name} needs a symmetric doubly stochastic W") as exc:
        _engine(tf.algorithms.get_algorithm(name, lr=0.1), topo, a, b, 1)
    assert "\n" not in str(exc.value)
    with pytest.raises(TypeError, match="gamma must be a real number, got str"):
        tf.algorithms.get_algorithm(name, gamma="half")
