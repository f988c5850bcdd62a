"""FedNova (Wang et al. 2020) and FedDyn (Acar et al. 2021): reductions, closed-form fixed
points, the normaliser's closed forms, refusals, stacking, and training through ``tf.run``.

Their iterates equal decent-bench 0.3.0's on its regression problem in
``test_decentbench.py``; here the properties the papers state.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.engine import run_rounds

D = torch.float64


def _quadratic(n: int, p: int, seed: int) -> tuple[Any, torch.Tensor, torch.Tensor]:
    """``f_i(x) = a_i |x - c_i|^2 / 2`` with ``a_i`` in [0.5, 1.5]: the gradient, ``a``
    ``[n, 1]`` and ``c`` ``[n, p]``."""
    rng = np.random.default_rng(seed)
    a = torch.tensor(rng.uniform(0.5, 1.5, size=(n, 1)), dtype=D)
    c = torch.tensor(rng.normal(size=(n, p)), dtype=D)
    return (lambda z, phase, rnd: a * (z - c)), a, c


def _least_squares(n: int, d: int, seed: int) -> tuple[Any, torch.Tensor, np.ndarray]:
    """Client ``i`` holds ``m_i`` samples ``(A_i, b_i)`` (unequal ``m_i``, distinct
    minimisers) and minimises ``|A_i x - b_i|^2 / (2 m_i)``: the gradient, the sizes and the
    exact minimiser of the sum, from the normal equations."""
    rng = np.random.default_rng(seed)
    sizes = [int(m) for m in rng.integers(3, 12, size=n)]
    As = [rng.normal(size=(m, d)) for m in sizes]
    bs = [A @ rng.normal(size=d) + rng.normal(size=len(A)) for A in As]
    H = torch.tensor(np.stack([A.T @ A / len(A) for A in As]), dtype=D)
    g = torch.tensor(np.stack([A.T @ b / len(A) for A, b in zip(As, bs)]), dtype=D)
    x_star = np.linalg.solve(H.sum(0).numpy(), g.sum(0).numpy())
    return (lambda z, phase, rnd: torch.einsum("nde,ne->nd", H, z) - g), torch.tensor(sizes), \
        x_star


def _drive(algo: tf.engine.Algorithm, x0: torch.Tensor, grad: Any, steps: list[int],
           rounds: int, lr: Any, env: Any = None) -> Any:
    """Rounds in the engine's order with ``steps[i]`` local steps for client ``i`` (rate 0
    once it is done, as :func:`topofl.engine.loop` gives it); ``lr(t)`` the round's rate."""
    n = x0.shape[0]
    env = env or tf.engine.toy_services(n, x0.shape[1])
    state, phase = algo.init(x0.clone(), env), algo.phases[0]
    todo = torch.tensor(steps)
    for t in range(rounds):
        rnd = tf.engine.Round(t)
        algo.round_start(state, rnd, env)
        for k in range(int(todo.max())):
            z = algo.local.point(state, phase, env)
            algo.local.update(state, grad(z, phase, rnd).clone(), phase,
                              lr(t) * (todo > k).to(x0.dtype), rnd, env)
        algo.communicate(state, rnd, env)
    return state


# ------------------------------------------------------------------------------------ FedNova


@pytest.mark.parametrize("kw", [dict(), dict(participation=0.5, sample_seed=3),
                                dict(weight_decay=0.1, local_steps=3), dict(mu=0.3),
                                dict(weighting="data_size", participation=0.75)])
def test_fednova_with_equal_local_work_is_fedavg(kw: dict[str, Any]) -> None:
    # equal |a_i|_1: tau_eff / |a_i|_1 = 1, the normalised average is the plain one
    grad, a, _ = _quadratic(8, 3, seed=0)
    kw = {"local_steps": 4, **kw}
    mu = kw.pop("mu", 0.0)
    env = tf.engine.toy_services(8, 3, train_sizes=torch.arange(5, 13))
    x0 = torch.zeros(8, 3, dtype=D)
    nova = run_rounds(tf.algorithms.fednova(lr=0.1, mu=mu, **kw), x0, None, grad, rounds=30,
                      env=env).state.x
    ref = (tf.algorithms.fedprox(lr=0.1, mu=mu, **kw) if mu
           else tf.algorithms.fedavg(lr=0.1, **kw))
    avg = run_rounds(ref, x0, None, grad, rounds=30, env=env).state.x
    torch.testing.assert_close(nova, avg, rtol=1e-12, atol=1e-12)
    assert float((nova - x0).abs().max()) > 0.1


@given(tau=st.lists(st.integers(1, 6), min_size=2, max_size=6),
       rho=st.sampled_from([0.0, 0.5, 0.9]), mu=st.sampled_from([0.0, 0.3, 2.0]))
@settings(max_examples=25, deadline=None)
def test_the_normaliser_has_the_papers_closed_forms(tau: list[int], rho: float,
                                                    mu: float) -> None:
    # Wang et al., Appendix A: |a_i|_1 = sum_k (1 - rho^k) / (1 - rho) with momentum,
    # sum_{k < tau} (1 - eta mu)^k with the proximal term, tau for plain SGD; with both, the
    # recursion a <- (1 - eta mu) a + s, s <- rho s + 1 (decent-bench's)
    eta, n = 0.1, len(tau)
    algo = tf.algorithms.fednova(lr=eta, momentum=rho, mu=mu)
    state = _drive(algo, torch.zeros(n, 2, dtype=D), lambda z, ph, r: z - 1.0, tau, 1,
                   lambda t: eta)
    for i, t in enumerate(tau):
        if mu == 0.0:
            want = sum((1 - rho**k) / (1 - rho) for k in range(1, t + 1)) if rho else t
        elif rho == 0.0:
            want = sum((1 - eta * mu)**k for k in range(t))
        else:
            want, s = 0.0, 0.0
            for _ in range(t):
                s = rho * s + 1
                want = (1 - eta * mu) * want + s
        assert state.own.a[i].item() == pytest.approx(want, rel=1e-14)


def test_fednova_reaches_its_closed_form_fixed_point_and_fedavg_its_own() -> None:
    # GD on a_i |x - c_i|^2 / 2 for tau_i steps: x^t - x_i = (1 - r_i^tau_i)(x^t - c_i),
    # r_i = 1 - eta a_i. FedNova's fixed point weighs c_i by q_i = (1 - r_i^tau_i) / tau_i,
    # FedAvg's by 1 - r_i^tau_i (the objective inconsistency)
    n, eta = 5, 0.1
    grad, a, c = _quadratic(n, 2, seed=4)
    tau = [1, 2, 3, 5, 8]
    r = 1 - eta * a.squeeze(1)
    power = r ** torch.tensor(tau, dtype=D)
    for algo, q in ((tf.algorithms.fednova(lr=eta), (1 - power) / torch.tensor(tau, dtype=D)),
                    (tf.algorithms.fedavg(lr=eta), 1 - power)):
        x = _drive(algo, torch.zeros(n, 2, dtype=D), grad, tau, 400, lambda t: eta).x
        want = (q.unsqueeze(1) * c).sum(0) / q.sum()
        torch.testing.assert_close(x, want.expand(n, 2), rtol=1e-10, atol=1e-10)


def test_fednova_removes_the_inconsistency_as_the_rate_falls() -> None:
    # with a decaying rate q_i -> eta a_i for FedNova (the minimiser of sum_i f_i), while
    # FedAvg's stays weighted by tau_i a_i
    n = 5
    grad, a, c = _quadratic(n, 2, seed=5)
    tau = [1, 2, 3, 5, 8]
    opt = (a * c).sum(0) / a.sum()
    biased = (torch.tensor(tau, dtype=D).unsqueeze(1) * a * c).sum(0) / (
        torch.tensor(tau, dtype=D).unsqueeze(1) * a).sum()
    rate = lambda t: 0.1 * 0.99**t  # noqa: E731
    nova = _drive(tf.algorithms.fednova(lr=0.1), torch.zeros(n, 2, dtype=D), grad, tau, 800,
                  rate).x[0]
    avg = _drive(tf.algorithms.fedavg(lr=0.1), torch.zeros(n, 2, dtype=D), grad, tau, 800,
                 rate).x[0]
    assert float((nova - opt).abs().max()) < 2e-3
    assert float((avg - biased).abs().max()) < 2e-3
    assert float((opt - biased).abs().max()) > 0.1


def test_fednova_server_momentum_is_a_heavy_ball_on_the_normalised_step() -> None:
    # m <- gamma m + Delta, x <- x - m: with one client and one step, Delta = eta grad, so the
    # server runs heavy ball on f: x_{t+1} = x_t - eta f'(x_t) + gamma (x_t - x_{t-1})
    eta, gamma = 0.1, 0.6
    algo = tf.algorithms.fednova(lr=eta, server_momentum=gamma)
    x = run_rounds(algo, torch.ones(1, 1, dtype=D), None, lambda z, ph, r: 2 * z - 1,
                   rounds=7).state.x.item()
    prev, cur = 1.0, 1.0
    for _ in range(7):
        prev, cur = cur, cur - eta * (2 * cur - 1) + gamma * (cur - prev)
    assert x == pytest.approx(cur, rel=1e-14)


# ------------------------------------------------------------------------------------- FedDyn


@pytest.mark.parametrize("kw", [dict(local_steps=1), dict(local_steps=5),
                                dict(local_steps=3, participation=0.5, sample_seed=1),
                                dict(local_steps=2, momentum=0.5)])
def test_feddyn_fixed_point_is_the_exact_least_squares_minimiser(kw: dict[str, Any]) -> None:
    # a fixed point has theta_k = theta, grad L_k(theta) = g_k and h = mean g_k = 0: the
    # minimiser of sum_i f_i, for any local work and a constant rate
    grad, _, x_star = _least_squares(6, 3, seed=2)
    algo = tf.algorithms.feddyn(lr=0.05, alpha=0.5, **kw)
    x = run_rounds(algo, torch.zeros(6, 3, dtype=D), None, grad, rounds=1500).state.x.numpy()
    np.testing.assert_allclose(x, np.broadcast_to(x_star, x.shape), rtol=1e-10, atol=1e-10)
    avg = run_rounds(tf.algorithms.fedavg(lr=0.05, **kw), torch.zeros(6, 3, dtype=D), None,
                     grad, rounds=1500).state.x.numpy()
    if kw["local_steps"] > 1:  # FedAvg's local drift keeps it off
        assert np.abs(avg - x_star).max() > 1e-3


def test_feddyn_with_data_size_weights_minimises_the_weighted_sum() -> None:
    grad, sizes, _ = _least_squares(5, 2, seed=3)
    env = tf.engine.toy_services(5, 2, train_sizes=sizes)
    x = run_rounds(tf.algorithms.feddyn(lr=0.05, alpha=0.3, local_steps=3,
                                        weighting="data_size"),
                   torch.zeros(5, 2, dtype=D), None, grad, rounds=1500, env=env).state
    p = sizes.to(D) / sizes.sum()
    # sum_i p_i grad f_i(x) = 0 and h = sum_i p_i g_i = 0 at the fixed point
    g = (p.unsqueeze(1) * grad(x.x, None, None)).sum(0)
    assert float(g.abs().max()) < 1e-10
    assert float(x.own.h.abs().max()) < 1e-10
    torch.testing.assert_close(x.own.h[0], (p.unsqueeze(1) * x.own.grad).sum(0), rtol=0,
                               atol=1e-12)


def test_feddyn_keeps_h_the_mean_of_the_clients_states() -> None:
    # h = (1/m) sum_k g_k after every round, partial participation included
    grad, _, _ = _least_squares(6, 2, seed=4)
    algo = tf.algorithms.feddyn(lr=0.1, alpha=0.2, local_steps=2, participation=0.5)
    st_ = run_rounds(algo, torch.zeros(6, 2, dtype=D), None, grad, rounds=7).state
    torch.testing.assert_close(st_.own.h, st_.own.grad.mean(0).expand(6, 2), rtol=0,
                               atol=1e-14)
    assert float(st_.own.h.abs().max()) > 1e-3


@pytest.mark.parametrize("alpha", [1e-3, 0.1, 10.0])
def test_feddyn_first_round_with_one_step_is_fedavg_at_server_rate_two(alpha: float) -> None:
    # round 1: g = h = 0 and one step from theta^0 sees no regulariser; h = -alpha D_1, so
    # theta^1 = theta^0 + D_1 - h / alpha = theta^0 + 2 D_1 for every alpha
    grad, _, _ = _least_squares(4, 3, seed=5)
    x0 = torch.full((4, 3), 0.5, dtype=D)
    dyn = run_rounds(tf.algorithms.feddyn(lr=0.1, alpha=alpha), x0, None, grad, rounds=1)
    opt = run_rounds(tf.algorithms.fedopt(lr=0.1, optimizer="sgd", server_lr=2.0), x0, None,
                     grad, rounds=1)
    torch.testing.assert_close(dyn.state.x, opt.state.x, rtol=1e-14, atol=1e-14)
    two = run_rounds(tf.algorithms.feddyn(lr=0.1, alpha=alpha), x0, None, grad, rounds=2)
    two_opt = run_rounds(tf.algorithms.fedopt(lr=0.1, optimizer="sgd", server_lr=2.0), x0,
                         None, grad, rounds=2)
    assert float((two.state.x - two_opt.state.x).abs().max()) > 1e-4  # only round 1


def test_feddyn_as_alpha_vanishes_is_not_fedavg_but_its_accumulated_form() -> None:
    # alpha -> 0: the local steps are plain SGD, but h / alpha = -sum_s D_s stays, so
    # theta^t = theta^{t-1} + D_t + sum_{s <= t} D_s (one local step: D_t = -eta grad F)
    grad, _, _ = _least_squares(4, 2, seed=6)
    eta, x0 = 0.05, torch.zeros(4, 2, dtype=D)
    got = run_rounds(tf.algorithms.feddyn(lr=eta, alpha=1e-9), x0, None, grad,
                     rounds=6).state.x[0]
    theta, total = x0[0].clone(), torch.zeros(2, dtype=D)
    for _ in range(6):
        d = -eta * grad(theta.expand(4, 2), None, None).mean(0)
        total += d
        theta = theta + d + total
    torch.testing.assert_close(got, theta, rtol=1e-7, atol=1e-9)
    avg = run_rounds(tf.algorithms.fedavg(lr=eta), x0, None, grad, rounds=6).state.x[0]
    assert float((got - avg).abs().max()) > 1e-2


# ------------------------------------------------------------------------ settings and stacking


@pytest.mark.parametrize(("make", "error", "match"), [
    (lambda: tf.algorithms.feddyn(alpha=0), ValueError, "alpha"),
    (lambda: tf.algorithms.feddyn(alpha=-0.1), ValueError, "alpha"),
    (lambda: tf.algorithms.feddyn(alpha=float("nan")), ValueError, "alpha"),
    (lambda: tf.algorithms.feddyn(alpha="big"), TypeError, "alpha"),
    (lambda: tf.algorithms.feddyn(lr=0), ValueError, "lr"),
    (lambda: tf.algorithms.feddyn(weighting="size"), ValueError, "weighting"),
    (lambda: tf.algorithms.fednova(mu=-1), ValueError, "mu"),
    (lambda: tf.algorithms.fednova(lr=0.5, mu=3.0), ValueError, r"lr \* mu <= 1"),
    (lambda: tf.algorithms.fednova(server_momentum=1.0), ValueError, "server_momentum"),
    (lambda: tf.algorithms.fednova(server_momentum=-0.1), ValueError, "server_momentum"),
    (lambda: tf.algorithms.fednova(momentum=1.0), ValueError, "momentum"),
    (lambda: tf.algorithms.fednova(participation=0), ValueError, "participation"),
])
def test_bad_settings_are_refused_in_one_line(make: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match) as info:
        make()
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("name", ["fednova", "feddyn"])
def test_stacking_is_declared_with_its_reason(name: str) -> None:
    algo = tf.algorithms.get_algorithm(name)
    assert isinstance(algo.stacks, str) and algo.stacks.startswith(f"{name} does not stack")
    assert not algo.uses_topology and algo.requires is None and algo.absent == "server"
    data = tf.data.federate("digits", "iid", 4, seed=0)
    model = tf.models.build_model("logistic", data.input_shape, 10, seed=0)
    m = tf.engine.stack.Member(tf.engine.RunConfig(rounds=1), None, algo, data, model)
    assert algo.stacks in str(tf.engine.stack.stack_problem([m, m]))


def test_hparams_are_recorded() -> None:
    assert tf.algorithms.fednova(mu=0.1, server_momentum=0.5).hparams["mu"] == 0.1
    assert tf.algorithms.fednova().hparams["server_momentum"] == 0.0
    assert tf.algorithms.feddyn(alpha=0.1).hparams["alpha"] == 0.1
    assert tf.algorithms.feddyn().hparams["alpha"] == 0.01


# ---------------------------------------------------------------------------- through tf.run


@pytest.fixture(scope="module")
def digits() -> Any:
    return tf.data.federate("digits", "dirichlet", 6, seed=0, alpha=0.5, val=0.2)


@pytest.mark.parametrize("name,kw", [
    ("fednova", dict(local_epochs=(0.25, 0.5, 0.5, 1.0, 1.0, 1.0), momentum=0.5)),
    ("fednova", dict(local_steps=10, participation=0.5, weighting="data_size", mu=0.01)),
    ("feddyn", dict(local_steps=3, alpha=0.01)),
    ("feddyn", dict(local_steps=10, alpha=0.1, participation=0.5, weighting="data_size")),
])
def test_a_small_mlp_trains_on_digits(name: str, kw: dict[str, Any], digits: Any) -> None:
    res = tf.run(name, None, digits, "mlp", 12, seed=0, lr=0.1, batch_size=16,
                 model_params={"hidden": [16]}, eval_every=6, spectral=False, progress=False,
                 record_clients=False, **kw)
    _, loss = res.records.series("train_loss")
    # measured (float32, this machine): loss ratio 0.44, 0.65, 0.49, 0.28; accuracy 0.61, 0.69,
    # 0.88, 0.91 (chance: 0.1)
    assert loss[-1] < 0.75 * loss[0], loss.tolist()
    assert res.records.final("test_acc_mean") > 0.5
    x = res.state.x
    assert float((x - x[0]).abs().max()) == 0.0  # every client holds the server's model
    if "local_epochs" in kw:  # each client's |a_i|_1 counts its own steps (momentum 0.5)
        sizes = res.services.train_sizes
        steps = torch.ceil(torch.tensor(kw["local_epochs"], dtype=D) * sizes / 16).clamp_min(1)
        want = [sum((1 - 0.5**k) / 0.5 for k in range(1, int(s) + 1)) for s in steps]
        np.testing.assert_allclose(res.state.own.a.numpy(), want, rtol=1e-6)
        assert len(set(steps.tolist())) > 1
