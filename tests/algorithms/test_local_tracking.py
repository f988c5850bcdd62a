"""K-GT and LED (local steps with a tracking or dual correction) against decent-bench 0.3.0's
own code, slow per-client references, closed forms and their reductions to known methods.

``data/decentbench_local_tracking.json`` holds decent-bench's regression problem (4 agents,
its ``LinearRegressionCost``: ``f_i(x) = |A_i x - b_i|^2 / (2 m_i)``), the Metropolis ``W``
its ``P2PNetwork`` computes on three graphs, and the iterates of its ``KGT`` and ``LED``
(several local steps and step sizes, no impairment), written by
``analysis/decentbench_local_tracking.py`` under Python 3.13 (decent-bench needs it). Here
topofl's ``kgt`` and ``led`` run through ``tf.engine.run_rounds`` on the same data, ``W`` and
starting points in float64, and every iterate of every agent must agree to 1e-10.

The toy problem of the other tests: client ``i`` minimises ``f_i(x) = a_i |x - b_i|^2 / 2``
(full gradients); the optimum of ``sum_i f_i`` is ``x* = sum_i a_i b_i / sum_i a_i``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
import topofl.algorithms.kgt  # noqa: F401  (registers "kgt" until topofl.algorithms does)
import topofl.algorithms.led  # noqa: F401  (registers "led")
from topofl.algorithms.kgt import kgt
from topofl.algorithms.led import led
from topofl.engine import Round, run_rounds, toy_services
from topofl.engine.availability import Availability

D = torch.float64
TOL = 1e-10
REFERENCE = json.loads((Path(__file__).parent / "data" /
                        "decentbench_local_tracking.json").read_text())
N, P = 8, 3


# ----------------------------------------------------------------------------- helpers


def _algorithm(run: dict[str, Any]) -> Any:
    """topofl's counterpart of a decent-bench case: KGT's ``step_size`` is eta_c and its
    ``aux_step_size`` eta_s; LED's are alpha and beta, combining with W itself."""
    k, step, aux = run["local_steps"], run["step_size"], run["aux_step_size"]
    if run["algorithm"] == "KGT":
        return kgt(lr=step, local_steps=k, outer_lr=aux)
    return led(lr=step, beta=aux, local_steps=k, gamma=1.0)


def _least_squares(name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Per agent ``A_i^T A_i / m_i`` ``[n, d, d]`` and ``A_i^T b_i / m_i`` ``[n, d]``."""
    p = REFERENCE["problems"][name]
    A = torch.tensor(p["A"], dtype=D)  # [n, m, d]
    b = torch.tensor(p["b"], dtype=D)  # [n, m]
    m = A.shape[1]
    return A.transpose(1, 2) @ A / m, torch.einsum("nmd,nm->nd", A, b) / m


def _ls_grad(H: torch.Tensor, c: torch.Tensor) -> Any:
    return lambda z, phase, rnd: torch.einsum("nde,ne->nd", H, z) - c


def _topology(graph: str) -> tf.Topology:
    return tf.Topology.from_matrix(np.array(REFERENCE["graphs"][graph]), name=graph)


def _case_id(run: dict[str, Any]) -> str:
    return (f"{run['algorithm']}-{run['problem']}-{run['graph']}-K{run['local_steps']}"
            + ("" if not np.any(run["x0"]) else "-spread"))


def _follow(algo: Any, topo: Any, grad: Any, x0: torch.Tensor, rounds: int) -> np.ndarray:
    """``[rounds, n, d]``: the engine's models after each round."""
    env = toy_services(*x0.shape)
    state = algo.init(x0.clone(), env)
    out = []
    for t in range(rounds):
        run_rounds(algo, state.x, topo, grad, rounds=1, env=env, state=state, start=t)
        out.append(state.x.numpy().copy())
    return np.array(out)


def _problem(n: int = N, p: int = P, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 1.5, size=(n, 1)), rng.normal(size=(n, p)) * 2.0


def _optimum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(0) / a.sum()


def _grad(a: np.ndarray, b: np.ndarray) -> Any:
    at, bt = torch.tensor(a, dtype=D), torch.tensor(b, dtype=D)
    return lambda z, phase, rnd: at * (z - bt)


def _zeros(a: np.ndarray, b: np.ndarray) -> torch.Tensor:
    return torch.zeros(a.shape[0], b.shape[1], dtype=D)


# ----------------------------------------------------------------------------- decent-bench


def test_the_reference_file_says_what_made_it() -> None:
    assert REFERENCE["decent_bench"] == "0.3.0" and REFERENCE["n_agents"] == 4
    assert {r["algorithm"] for r in REFERENCE["runs"]} == {"KGT", "LED"}
    assert {r["local_steps"] for r in REFERENCE["runs"]} >= {1, 3, 5}
    for W in REFERENCE["graphs"].values():  # symmetric doubly stochastic, as decent-bench says
        M = np.array(W)
        np.testing.assert_allclose(M, M.T, atol=1e-15)
        np.testing.assert_allclose(M.sum(1), 1.0, atol=1e-14)
    # decent-bench's Metropolis weights are topofl's "metropolis" scheme
    for graph, topo in (("ring", tf.topologies.ring(4)), ("complete", tf.topologies.complete(4))):
        np.testing.assert_allclose(np.array(REFERENCE["graphs"][graph]), topo.to_dense(),
                                   atol=1e-14)


@pytest.mark.parametrize("run", REFERENCE["runs"], ids=_case_id)
def test_topofl_follows_decentbench_iterate_by_iterate(run: dict[str, Any]) -> None:
    ref = np.array(run["iterates"])  # [R, n, d]
    x0 = torch.tensor(run["x0"], dtype=D)
    topo, grad = _topology(run["graph"]), _ls_grad(*_least_squares(run["problem"]))
    got = _follow(_algorithm(run), topo, grad, x0, len(ref))
    gap = np.abs(got - ref).max(axis=(1, 2))
    assert gap.max() <= TOL, (run["algorithm"], gap.tolist())
    # the iterates move (a comparison of two runs standing still would prove nothing) ...
    assert np.abs(ref[-1] - np.array(run["x0"])).max() > 1.0
    # ... and the comparison tells the correction apart: without it (local SGD between
    # gossip steps, or LED combining with (I + W)/2) the iterates differ
    k, step = run["local_steps"], run["step_size"]
    other = (tf.algorithms.dsgd(lr=step, local_steps=k) if run["algorithm"] == "KGT"
             else led(lr=step, beta=run["aux_step_size"], local_steps=k, gamma=0.5))
    assert np.abs(_follow(other, topo, grad, x0, len(ref)) - ref).max() > 1e-3


# ----------------------------------------------------------------------------- references
# Slow and obvious: one client at a time, sums written out, numpy float64, the papers' forms.


def _ref_kgt(W: np.ndarray, a: np.ndarray, b: np.ndarray, rates: list[float], K: int,
             eta_s: float, wd: float) -> list[np.ndarray]:
    """Liu et al.'s Algorithm 1, c^(0) = 0, round t's local step eta_c = rates[t]."""
    n = a.shape[0]
    g = lambda i, v: a[i] * (v - b[i]) + wd * v  # noqa: E731
    x = np.zeros_like(b)
    c = np.zeros_like(b)
    out = []
    for eta_c in rates:
        z, sent = [], []
        for i in range(n):
            v = x[i].copy()
            for _ in range(K):
                v = v - eta_c * (g(i, v) + c[i])
            z.append((x[i] - v) / (K * eta_c))
            sent.append(x[i] - K * eta_s * eta_c * z[i])
        c = np.array([c[i] - z[i] + sum(W[i, j] * z[j] for j in range(n)) for i in range(n)])
        x = np.array([sum(W[i, j] * sent[j] for j in range(n)) for i in range(n)])
        out.append(x.copy())
    return out


def _ref_led(W: np.ndarray, a: np.ndarray, b: np.ndarray, rates: list[float], tau: int,
             beta: float, gamma: float, wd: float) -> list[np.ndarray]:
    """Alghunaim's LED, y^0 = 0, combining with I - gamma (I - W)."""
    n = a.shape[0]
    Wb = np.eye(n) - gamma * (np.eye(n) - W)
    g = lambda i, v: a[i] * (v - b[i]) + wd * v  # noqa: E731
    x = np.zeros_like(b)
    y = np.zeros_like(b)
    out = []
    for alpha in rates:
        phi = []
        for i in range(n):
            v = x[i].copy()
            for _ in range(tau):
                v = v - alpha * g(i, v) - beta * y[i]
            phi.append(v)
        x = np.array([sum(Wb[i, j] * phi[j] for j in range(n)) for i in range(n)])
        y = np.array([y[i] + phi[i] - x[i] for i in range(n)])
        out.append(x.copy())
    return out


@pytest.mark.parametrize("hp", [{}, {"local_steps": 1}, {"local_steps": 3, "outer_lr": 0.6,
                                                         "weight_decay": 0.05,
                                                         "decay": 0.97}])
def test_kgt_matches_the_per_client_reference_step_by_step(hp: dict[str, Any]) -> None:
    a, b = _problem(seed=2)
    topo = tf.topologies.random_regular(N, 3, seed=0)
    lr, rounds = 0.1, 30
    rates = [lr * hp.get("decay", 1.0) ** t for t in range(rounds)]
    ref = _ref_kgt(topo.to_dense(), a, b, rates, hp.get("local_steps", 5),
                   hp.get("outer_lr", 1.0), hp.get("weight_decay", 0.0))
    got = _follow(kgt(lr=lr, **hp), topo, _grad(a, b), _zeros(a, b), rounds)
    np.testing.assert_allclose(got, np.array(ref), rtol=0, atol=1e-12)


@pytest.mark.parametrize("hp", [{}, {"local_steps": 1, "beta": 1.0},
                                {"local_steps": 3, "beta": 0.2, "gamma": 0.5,
                                 "weight_decay": 0.05, "decay": 0.97}])
def test_led_matches_the_per_client_reference_step_by_step(hp: dict[str, Any]) -> None:
    a, b = _problem(seed=3)
    topo = tf.topologies.random_regular(N, 3, seed=1)  # Metropolis weights, symmetric
    lr, rounds = 0.1, 30
    rates = [lr * hp.get("decay", 1.0) ** t for t in range(rounds)]
    ref = _ref_led(topo.to_dense(), a, b, rates, hp.get("local_steps", 5), hp.get("beta", 0.1),
                   hp.get("gamma", 1.0), hp.get("weight_decay", 0.0))
    got = _follow(led(lr=lr, **hp), topo, _grad(a, b), _zeros(a, b), rounds)
    np.testing.assert_allclose(got, np.array(ref), rtol=0, atol=1e-12)


# ----------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize("problem,graph", [("regression", "ring"), ("regression3", "path")])
@pytest.mark.parametrize("K", [1, 4])
def test_fixed_point_is_the_exact_least_squares_minimiser(problem: str, graph: str,
                                                          K: int) -> None:
    # closed form: sum_i A_i^T A_i x / m_i = sum_i A_i^T (b_i + 5 i) / m_i (decent-bench's own
    # data are noise-free, every agent's minimiser the same: the shift 5 i makes them differ)
    H, c = _least_squares(problem)
    A = torch.tensor(REFERENCE["problems"][problem]["A"], dtype=D)
    c = c + 5.0 * torch.arange(4, dtype=D).unsqueeze(1) * A.mean(1)
    x_star = torch.linalg.solve(H.sum(0), c.sum(0)).numpy()
    grad, topo, x0 = _ls_grad(H, c), _topology(graph), torch.zeros(4, H.shape[1], dtype=D)
    for algo in (kgt(lr=0.05, local_steps=K), led(lr=0.05, local_steps=K, beta=0.5 / K)):
        trace = run_rounds(algo, x0, topo, grad, rounds=3000)
        x = trace.evaluated().numpy()
        assert np.abs(x - x[0]).max() < 1e-10, algo.name  # consensus
        np.testing.assert_allclose(x, np.broadcast_to(x_star, x.shape), rtol=1e-11,
                                   atol=1e-9, err_msg=algo.name)
        # the corrections at the fixed point, in closed form: K-GT's c_i is the gap between
        # the mean gradient (0 at x*) and client i's own; LED's beta y_i = -alpha grad_i
        g_star = (torch.einsum("nde,e->nd", H, torch.tensor(x_star)) - c).numpy()
        own = trace.state.own.c if algo.name == "kgt" else trace.state.own.y * (0.5 / K / 0.05)
        np.testing.assert_allclose(own.numpy(), -g_star, rtol=1e-8, atol=1e-8)
    # local SGD between gossip steps, D-SGD's local_steps, stays off x* with the same steps
    d = run_rounds(tf.algorithms.dsgd(lr=0.05, local_steps=K), x0, topo, grad,
                   rounds=3000).evaluated().numpy()
    assert np.abs(d - x_star).max() > 1e-3


@settings(deadline=None, max_examples=25)
@given(n=st.integers(2, 9), seed=st.integers(0, 10_000), K=st.integers(1, 4),
       eta_s=st.floats(0.2, 1.0), gamma=st.floats(0.1, 1.0))
def test_the_corrections_sum_to_zero_and_the_mean_follows_the_sent_models(
        n: int, seed: int, K: int, eta_s: float, gamma: float) -> None:
    # column-stochastic W: sum_i c_i = 0 (K-GT) and sum_i y_i = 0 (LED) after every round, on
    # a graph that changes every round; the average model after a round is the average of
    # what was sent (x - eta_s (x - x^+K) for K-GT, phi for LED)
    a, b = _problem(n, 2, seed)
    graphs = tf.topologies.random_matching(n, seed=seed)
    x0 = torch.tensor(np.random.default_rng(seed).normal(size=(n, 2)), dtype=D)
    grad = _grad(a, b)
    for algo in (kgt(lr=0.1, local_steps=K, outer_lr=eta_s),
                 led(lr=0.1, local_steps=K, beta=0.3 / K, gamma=gamma)):
        env = toy_services(n, 2)
        state = algo.init(x0.clone(), env)
        for t in range(6):
            topo = graphs.at(t)
            start = state.x.clone()
            rnd = Round(t, topo)
            algo.round_start(state, rnd, env)
            for _ in range(K):
                algo.update(state, grad(state.x, algo.phases[0], rnd), algo.phases[0],
                            torch.full((n,), 0.1, dtype=D), rnd, env)
            local = state.x.clone()
            algo.communicate(state, rnd, env)
            sent = start - eta_s * (start - local) if algo.name == "kgt" else local
            torch.testing.assert_close(state.x.mean(0), sent.mean(0), rtol=0, atol=1e-12)
            dual = state.own.c if algo.name == "kgt" else state.own.y
            assert float(dual.sum(0).abs().max()) < 1e-12, (algo.name, t)


# ----------------------------------------------------------------------------- reductions


@settings(deadline=None, max_examples=20)
@given(n=st.integers(2, 8), k=st.integers(0, 2), lr=st.floats(0.02, 0.3),
       eta_s=st.floats(0.1, 1.0), seed=st.integers(0, 1000))
def test_kgt_with_one_local_step_is_gradient_tracking(n: int, k: int, lr: float, eta_s: float,
                                                      seed: int) -> None:
    # K = 1: y = grad + c follows Pu & Nedic's DSGT with the step eta_s eta_c
    a, b = _problem(n, 2, seed)
    topo = [tf.topologies.ring(n), tf.topologies.complete(n), tf.topologies.star(n)][k]
    got = _follow(kgt(lr=lr, local_steps=1, outer_lr=eta_s), topo, _grad(a, b), _zeros(a, b),
                  15)
    want = _follow(tf.algorithms.dsgt(lr=lr * eta_s, variant="dsgt"), topo, _grad(a, b),
                   _zeros(a, b), 15)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@settings(deadline=None, max_examples=20)
@given(n=st.integers(2, 8), k=st.integers(0, 2), lr=st.floats(0.02, 0.3),
       gamma=st.floats(0.1, 1.0), seed=st.integers(0, 1000))
def test_led_with_one_local_step_and_beta_one_is_exact_diffusion(n: int, k: int, lr: float,
                                                                 gamma: float,
                                                                 seed: int) -> None:
    a, b = _problem(n, 2, seed)
    topo = [tf.topologies.ring(n), tf.topologies.complete(n), tf.topologies.star(n)][k]
    got = _follow(led(lr=lr, local_steps=1, beta=1.0, gamma=gamma), topo, _grad(a, b),
                  _zeros(a, b), 15)
    want = _follow(tf.algorithms.exact_diffusion(lr=lr, gamma=gamma), topo, _grad(a, b),
                   _zeros(a, b), 15)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_kgt_on_the_complete_graph_keeps_every_client_at_the_average() -> None:
    # W = J: after round 0 every client holds the same model and c_i = mean_j z_j - z_i;
    # identical clients (same a, b) then run K-step gradient descent on f
    a0, b0 = _problem(1, 2, seed=9)
    a, b = np.repeat(a0, N, 0), np.repeat(b0, N, 0)
    got = _follow(kgt(lr=0.1, local_steps=3), tf.topologies.complete(N), _grad(a, b),
                  _zeros(a, b), 10)
    x = np.zeros(2)
    for t in range(10):
        for _ in range(3):
            x = x - 0.1 * a0[0] * (x - b0[0])
        np.testing.assert_allclose(got[t], np.broadcast_to(x, (N, 2)), rtol=0, atol=1e-12)


# ----------------------------------------------------------------------------- the engine


@pytest.mark.parametrize("make", [lambda: kgt(lr=0.1, local_steps=3),
                                  lambda: led(lr=0.1, local_steps=3, beta=0.2)],
                         ids=["kgt", "led"])
def test_absent_clients_stand_still_and_the_optimum_is_still_exact(make: Any) -> None:
    a, b = _problem(seed=6)
    ring = tf.topologies.ring(N)
    avail = Availability.from_config({"model": "bernoulli", "offline": 0.3, "seed": 0})
    algo = make()
    env = toy_services(N, P)
    state = algo.init(torch.zeros(N, P, dtype=D), env)
    for t in range(40):
        before = state.x.clone(), (state.own.c if algo.name == "kgt" else state.own.y).clone()
        run_rounds(algo, state.x, ring, _grad(a, b), rounds=1, env=env, state=state, start=t,
                   availability=avail)
        off = torch.as_tensor(~avail.online(t, N))
        after = state.x, state.own.c if algo.name == "kgt" else state.own.y
        for u, v in zip(before, after):
            assert torch.equal(u[off], v[off]), t
    run_rounds(algo, state.x, ring, _grad(a, b), rounds=1500, env=env, state=state, start=40,
               availability=avail)
    assert np.abs(state.x.numpy() - _optimum(a, b)).max() < 1e-10


def test_messages_kgt_sends_model_and_tracker_led_the_model() -> None:
    a, b = _problem()
    ring = tf.topologies.ring(N)  # 2 N arcs
    out = {}
    for algo in (kgt(local_steps=3), led(local_steps=3), tf.algorithms.dsgt()):
        sent = run_rounds(algo, _zeros(a, b), ring, _grad(a, b), rounds=2).sent
        out[algo.name] = ([s.messages for s in sent],
                          [sum(f.bytes for f in s.flows or ()) for s in sent],
                          sorted({f.kind for s in sent for f in s.flows or ()}))
    assert out["kgt"] == out["dsgt"] == ([4 * N] * 2, [4 * N * P * 8] * 2, ["model", "tracker"])
    assert out["led"] == ([2 * N] * 2, [2 * N * P * 8] * 2, ["model"])


def test_both_train_an_mlp_on_digits() -> None:
    for name in ("kgt", "led"):
        res = tf.run(name, topology="ring", n_clients=8, rounds=20, seed=0, model="mlp",
                     lr=0.1, local_steps=3, eval_every=5, spectral=False,
                     record_clients=False)
        _, acc = res.records.series("test_acc_mean")
        _, loss = res.records.series("train_loss")
        assert acc[-1] > acc[0] + 0.05 and loss[-1] < loss[0] - 0.3, (name, acc.tolist())


# ----------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("name", ["kgt", "led"])
@pytest.mark.parametrize("kw,exc,match", [
    ({"lr": 0.0}, ValueError, r"lr must be in \(0, inf\], got 0"),
    ({"local_steps": 0}, ValueError, "local_steps must be"),
    ({"local_steps": 1.5}, TypeError, "local_steps must be an int, got float 1.5"),
    ({"weight_decay": -0.1}, ValueError, "weight_decay must be"),
    ({"decay": 0.0}, ValueError, "decay must be"),
    ({"outer_lr": 0.0}, ValueError, r"outer_lr must be in \(0, inf\], got 0"),
    ({"beta": 0.0}, ValueError, r"beta must be in \(0, inf\], got 0"),
    ({"gamma": 1.5}, ValueError, r"gamma must be in \(0, 1\], got 1.5"),
])
def test_bad_settings_are_refused_in_one_line(name: str, kw: dict[str, Any], exc: type,
                                              match: str) -> None:
    own = {"kgt": {"outer_lr"}, "led": {"beta", "gamma"}}
    if set(kw) & {"outer_lr", "beta", "gamma"} and not set(kw) <= own[name]:
        with pytest.raises(TypeError, match="unexpected keyword"):
            tf.algorithms.get_algorithm(name, **kw)
        return
    with pytest.raises(exc, match=match) as info:
        tf.algorithms.get_algorithm(name, **kw)
    assert "\n" not in str(info.value)


def test_led_refuses_a_directed_doubly_stochastic_w_in_one_line() -> None:
    W = (np.eye(6) + np.roll(np.eye(6), 1, axis=1)) / 2  # doubly stochastic, not symmetric
    topo = tf.Topology.from_matrix(W, name="directed_cycle")
    a, b = _problem(6, 2, seed=7)
    with pytest.raises(ValueError, match="led needs a symmetric doubly stochastic W") as info:
        run_rounds(led(), _zeros(a, b), topo, _grad(a, b), rounds=1)
    assert "\n" not in str(info.value)
    # K-GT, as gradient tracking, runs on it and still reaches the optimum
    x = run_rounds(kgt(lr=0.05, local_steps=2), _zeros(a, b), topo, _grad(a, b), rounds=2000)
    assert np.abs(x.evaluated().numpy() - _optimum(a, b)).max() < 1e-10
