"""Algorithms driven by hand on toy problems with known answers (fedjax-style toy grad_fn)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch

import topofl as tf
from topofl.algorithms import ALGORITHMS, get_algorithm
from topofl.algorithms.hparams import flat_parameters
from topofl.engine import Round, run_rounds, toy_services

D = torch.float64


def _lr(n: int, value: float) -> torch.Tensor:
    return torch.full((n,), value, dtype=D)


def _drive(algo, graph, grad_fn, n, p, rounds, lr0, decay=0.995):  # type: ignore[no-untyped-def]
    # constant step size for the first half (reach the O(lr) neighbourhood of the optimum),
    # then a geometric decay that shrinks the O(lr / gap) disagreement while tracking it
    trace = run_rounds(algo, torch.zeros(n, p, dtype=D), graph, lambda z, ph, rnd: grad_fn(z),
                       rounds=rounds, lr=lambda rnd, ph: lr0 * decay ** max(0, rnd.t - rounds // 2))
    return trace.evaluated(), trace.state, trace.env


def test_dsgd_one_step_by_hand() -> None:
    # x1 = W (x0 - lr * g): ring of 3 with Metropolis weights 1/3 everywhere
    algo, env = tf.algorithms.dsgd(lr=0.5), toy_services(3, 2)
    x0 = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=D)
    state = algo.init(x0.clone(), env)
    g = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]], dtype=D)
    rnd = Round(0, tf.topologies.ring(3))
    algo.update(state, g.clone(), algo.phases[0], _lr(3, 0.5), rnd, env)
    algo.communicate(state, rnd, env)
    half = x0 - 0.5 * g
    expected = half.mean(dim=0, keepdim=True).expand(3, 2)
    np.testing.assert_allclose(state.x.numpy(), expected.numpy(), atol=1e-15)


@pytest.mark.slow  # issue 23: heavy for the default suite (CI runs -m slow)
def test_dsgd_reaches_optimum_of_heterogeneous_quadratics() -> None:
    # f_i(x) = |x - c_i|^2 / 2, heterogeneous optima c_i; optimum of the sum: mean(c).
    # W doubly stochastic keeps the mean, so mean(x) -> mean(c) at rate prod(1 - lr_t); the
    # disagreement is O(lr_t / gap) and vanishes as the step size decays.
    n = 8
    rng = np.random.default_rng(0)
    c = torch.tensor(rng.normal(size=(n, 3)) * 3, dtype=D)
    opt = c.mean(0)
    for graph in (tf.topologies.ring(n), tf.topologies.torus(2, 4), tf.topologies.complete(n)):
        z, _, _ = _drive(tf.algorithms.dsgd(lr=0.2), graph, lambda x: x - c, n, 3, 4000, 0.2)
        np.testing.assert_allclose(z.numpy(), opt.expand(n, 3).numpy(), atol=1e-3)
    # with momentum (heavy ball) too
    z, _, _ = _drive(tf.algorithms.dsgd(lr=0.05, momentum=0.5), tf.topologies.ring(n),
                     lambda x: x - c, n, 3, 4000, 0.05)
    np.testing.assert_allclose(z.numpy(), opt.expand(n, 3).numpy(), atol=1e-3)


def _const(algo, topo, c, rounds, lr):  # type: ignore[no-untyped-def]
    trace = run_rounds(algo, torch.zeros_like(c), topo, lambda z, ph, rnd: z - c, rounds=rounds,
                       lr=lr)
    return trace.evaluated(), trace.state


def test_pushsum_reaches_exact_average_that_row_stochastic_misses() -> None:
    n = 6
    G = nx.DiGraph([(i, (i + 1) % n) for i in range(n)] + [(0, 3), (1, 4)])
    col = tf.Topology.from_networkx(G, weights="push_sum")
    row = tf.Topology.from_networkx(G, weights="uniform")
    x0 = torch.tensor([[0.0], [2.0], [4.0], [6.0], [8.0], [10.0]], dtype=D)
    # (a) averaging alone: the de-biased push-sum ratio reaches the exact average (5) ...
    algo, env = tf.algorithms.sgp(), toy_services(n)
    state = algo.init(x0.clone(), env)
    for t in range(300):
        algo.communicate(state, Round(t, col), env)
    np.testing.assert_allclose(algo.evaluate(state, Round(t, col), env).numpy().ravel(), 5.0,
                               atol=1e-10)
    assert float(state.weight.sum()) == pytest.approx(n, abs=1e-12)
    # ... while row-stochastic averaging reaches consensus on a weighted, biased value
    xr = x0.clone()
    for _ in range(300):
        env.mixer.mix_(row, xr)
    assert np.ptp(xr.numpy()) < 1e-10 and abs(float(xr[0]) - 5.0) > 0.02
    # (b) optimisation: f_i = (x - c_i)^2 / 2 with a constant step size. SGP's iterates average
    # exactly to the optimum 5 and their spread is O(lr) (4x smaller for a 4x smaller lr);
    # D-SGD with the row-stochastic W is biased: its consensus is a Perron-weighted average.
    c = x0
    zs = [_const(tf.algorithms.sgp(), col, c, int(40 / lr), lr)[0] for lr in (0.04, 0.01)]
    errs = [float((z - 5.0).abs().max()) for z in zs]
    for z in zs:
        assert abs(float(z.mean()) - 5.0) < 1e-10
    assert 3.5 < errs[0] / errs[1] < 4.5
    zr = _const(tf.algorithms.dsgd(), row, c, 4000, 0.01)[0]
    assert abs(float(zr.mean()) - 5.0) > 0.01


def test_pushsum_on_time_varying_directed_graph() -> None:
    n = 5
    c = torch.tensor([[0.0], [1.0], [2.0], [3.0], [10.0]], dtype=D)

    def at(t: int) -> tf.Topology:
        shift = 1 + t % (n - 1)
        G = nx.DiGraph([(i, (i + shift) % n) for i in range(n)])
        return tf.Topology.from_networkx(G, weights="push_sum")

    tv = tf.TimeVarying(n, at, name="shifts", period=n - 1)
    z, _ = _const(tf.algorithms.sgp(), tv, c, 4000, 0.005)
    assert abs(float(z.mean() - c.mean())) < 1e-3  # exact on average (up to the last step)
    np.testing.assert_allclose(z.numpy().ravel(), float(c.mean()), atol=5e-2)
    # pure averaging over the time-varying directed sequence is exact
    trace = run_rounds(tf.algorithms.sgp(), c, tv, lambda z, ph, rnd: torch.zeros_like(z),
                       rounds=200)  # zero gradients: pure averaging
    np.testing.assert_allclose(trace.evaluated().numpy().ravel(), float(c.mean()), atol=1e-10)


@pytest.mark.slow  # issue 23: heavy for the default suite (CI runs -m slow)
def test_osgp_preserves_mass_in_flight_and_converges() -> None:
    n = 4
    G = nx.DiGraph([(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)])
    topo = tf.Topology.from_networkx(G, weights="push_sum")
    algo, env = tf.algorithms.osgp(lr=0.1), toy_services(n, 2)
    x0 = torch.tensor([[1.0, 0.0], [2.0, 1.0], [3.0, 0.0], [4.0, -1.0]], dtype=D)
    state = algo.init(x0.clone(), env)
    for t in range(400):  # pure averaging: mass in x plus mass in flight is constant
        algo.communicate(state, Round(t, topo), env)
        total = state.x.sum(0) + state.own.inflight_x.sum(0)
        np.testing.assert_allclose(total.numpy(), x0.sum(0).numpy(), atol=1e-12)
        w_total = float(state.weight.sum() + state.own.inflight_w.sum())
        assert w_total == pytest.approx(n, abs=1e-12)
    z = algo.evaluate(state, Round(t, topo), env)
    np.testing.assert_allclose(z.numpy(), x0.mean(0, keepdim=True).expand(n, 2).numpy(),
                               atol=1e-6)
    c = torch.tensor([[0.0], [4.0], [8.0], [12.0]], dtype=D)
    zs = [_const(tf.algorithms.osgp(), topo, c, int(40 / lr), lr)[0] for lr in (0.008, 0.002)]
    errs = [float((z - 6.0).abs().max()) for z in zs]
    assert errs[1] < 0.03 and 3.0 < errs[0] / errs[1] < 5.0


def test_clique_averaging_gives_each_member_the_clique_gradient() -> None:
    G = nx.complete_graph(6)
    topo = tf.Topology.from_networkx(G, groups=[[0, 2, 4], [1, 3, 5]])
    algo, env = tf.algorithms.dsgd(lr=1.0, clique_averaging=True), toy_services(6, 2)
    x0 = torch.zeros(6, 2, dtype=D)
    state = algo.init(x0.clone(), env)
    rnd = Round(0, topo)
    algo.round_start(state, rnd, env)
    g = torch.arange(12, dtype=D).reshape(6, 2)
    algo.update(state, g.clone(), algo.phases[0], _lr(6, 1.0), rnd, env)
    mean_a = g[[0, 2, 4]].mean(0)
    mean_b = g[[1, 3, 5]].mean(0)
    for i in (0, 2, 4):
        np.testing.assert_allclose(state.x[i].numpy(), (-mean_a).numpy())
    for i in (1, 3, 5):
        np.testing.assert_allclose(state.x[i].numpy(), (-mean_b).numpy())
    # messages: a model on each of the 30 arcs, a gradient (per local step) on the 12 arcs
    # within the two triangles, what Clique Averaging reads (the paper counts 30)
    sent = algo.communicate(state, rnd, env)
    assert sent.messages == topo.messages_per_round + 12 == 42
    (grads,) = [f for f in sent.flows if f.kind == "gradient"]
    assert grads.per_step and grads.messages == 12


def test_clique_averaging_needs_groups() -> None:
    algo, env = tf.algorithms.dsgd(clique_averaging=True), toy_services(4)
    state = algo.init(torch.zeros(4, 1, dtype=D), env)
    with pytest.raises(ValueError, match="groups"):
        algo.round_start(state, Round(0, tf.topologies.ring(4)), env)


def test_momentum_with_clique_averaging_eq_4_5() -> None:
    topo = tf.Topology.from_networkx(nx.complete_graph(2), groups=[[0, 1]])
    algo = tf.algorithms.dsgd(lr=0.1, momentum=0.5, clique_averaging=True)
    env = toy_services(2)
    state = algo.init(torch.zeros(2, 1, dtype=D), env)
    rnd = Round(0, topo)
    algo.round_start(state, rnd, env)
    v, theta = 0.0, 0.0
    for g_pair in ([1.0, 3.0], [0.0, 2.0], [-4.0, 2.0]):
        algo.update(state, torch.tensor([[g_pair[0]], [g_pair[1]]], dtype=D), algo.phases[0],
                    _lr(2, 0.1), rnd, env)
        v = 0.5 * v + sum(g_pair) / 2  # eq. (4) with the clique-averaged gradient
        theta = theta - 0.1 * v  # eq. (5)
        np.testing.assert_allclose(state.x.numpy().ravel(), [theta, theta], atol=1e-15)


def test_dfedavgm_resets_momentum_each_round() -> None:
    algo, env = tf.algorithms.dfedavgm(lr=0.1, momentum=0.9, local_steps=2), toy_services(2)
    state = algo.init(torch.zeros(2, 1, dtype=D), env)
    g = torch.ones(2, 1, dtype=D)
    for _ in range(2):
        algo.update(state, g.clone(), algo.phases[0], _lr(2, 0.1), Round(0), env)
    # steps: m=1 -> x=-0.1; m=1.9 -> x=-0.29
    np.testing.assert_allclose(state.x.numpy().ravel(), [-0.29, -0.29], atol=1e-15)
    algo.round_start(state, Round(1), env)
    assert float(state.momentum.abs().sum()) == 0.0


def test_fedavg_and_local() -> None:
    env = toy_services(3)
    algo = tf.algorithms.fedavg()
    state = algo.init(torch.tensor([[1.0], [2.0], [6.0]], dtype=D), env)
    assert algo.communicate(state, Round(0), env).messages == 6
    assert state.x.flatten().tolist() == [3.0, 3.0, 3.0]
    lo = tf.algorithms.local()
    s2 = lo.init(torch.tensor([[1.0], [2.0], [6.0]], dtype=D), env)
    assert lo.communicate(s2, Round(0), env).messages == 0
    assert s2.x.flatten().tolist() == [1.0, 2.0, 6.0]


def test_weight_decay_and_nesterov_by_hand() -> None:
    x = torch.tensor([[2.0]], dtype=D)
    m = torch.zeros_like(x)
    tf.engine.pieces.sgd_step(x, torch.tensor([[1.0]], dtype=D), _lr(1, 0.1), momentum_buf=m,
                           momentum=0.9, weight_decay=0.5, nesterov=True)
    # g = 1 + 0.5*2 = 2; m = 2; step = g + 0.9 m = 3.8; x = 2 - 0.38
    assert float(x) == pytest.approx(1.62, abs=1e-15) and float(m) == 2.0


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_every_algorithm_bad_hparams(name: str) -> None:
    with pytest.raises(ValueError, match="lr"):
        get_algorithm(name, lr=-1.0)

    if "momentum" in flat_parameters(ALGORITHMS[name]):  # not dsgt, extra
        with pytest.raises(ValueError, match="momentum"):
            get_algorithm(name, momentum=1.5)
    with pytest.raises(TypeError):
        get_algorithm(name, nonsense=3)

    if {"local_steps", "local_epochs"} <= set(flat_parameters(ALGORITHMS[name])):
        with pytest.raises(ValueError, match="either"):
            get_algorithm(name, local_steps=2, local_epochs=1.0)


def test_unknown_algorithm() -> None:
    with pytest.raises(ValueError, match="known"):
        get_algorithm("gossip-magic")


def test_frozen_clients_keep_parameters_and_momentum() -> None:
    x = torch.tensor([[1.0], [1.0]], dtype=D)
    m = torch.tensor([[0.5], [0.5]], dtype=D)
    tf.engine.pieces.sgd_step(x, torch.tensor([[1.0], [1.0]], dtype=D),
                           torch.tensor([0.1, 0.0], dtype=D), momentum_buf=m, momentum=0.9)
    assert x.flatten().tolist() == [1.0 - 0.1 * 1.45, 1.0]
    assert m.flatten().tolist() == [1.45, 0.5]
