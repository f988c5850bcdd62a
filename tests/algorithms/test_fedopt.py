"""FedOpt (Reddi et al. 2021, Algorithm 2: FedAdam, FedYogi, FedAdagrad; and SGD) against a
slow reference.

The reference is Algorithm 2 written out in numpy float64: a loop over the round's
participants, each taking its local SGD steps, then the server's optimizer on the mean
update. The engine must give its numbers to 1e-12 on quadratics with a fixed
per-(round, step, client) gradient noise and, through ``topofl.run``, on digits with real
mini-batches. Then: SGD at server rate 1 is FedAvg (to the bit: the same pieces; the
general server step to rounding), a first round in closed form, Yogi's second moment stays
positive.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from tests.algorithms.test_scaffold import Problem, _batch_grad, _flat
from topofl.algorithms._server import fedavg_algorithm, server_params
from topofl.algorithms.fedopt import OPTIMIZERS, FedOptState, _ServerOptimizer
from topofl.algorithms.hparams import LocalSGD, Sampling
from topofl.engine import run_rounds, toy_services
from topofl.engine.pieces import participants

D = torch.float64
TOL = 1e-12


def server_step(opt: str, x: np.ndarray, m: np.ndarray, v: np.ndarray, d: np.ndarray,
                eta: float, b1: float, b2: float, tau: float
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Algorithm 2's server step (``"sgd"``: ``x + eta d``)."""
    if opt == "sgd":
        return x + eta * d, m, v
    m = b1 * m + (1 - b1) * d
    if opt == "adam":
        v = b2 * v + (1 - b2) * d**2
    elif opt == "adagrad":
        v = v + d**2
    else:
        v = v - (1 - b2) * d**2 * np.sign(v - d**2)
    return x + eta * m / (np.sqrt(v) + tau), m, v


def fedopt_reference(prob: Problem, n: int, rounds: int, steps: int, lr: float, decay: float,
                     opt: str, hp: tuple[float, float, float, float], participation: float,
                     seed: int, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(x, m, v)`` after ``rounds`` rounds; ``hp = (eta, beta1, beta2, tau)``, ``sizes``
    weigh the mean of the updates (all ones: the paper's)."""
    eta, b1, b2, tau = hp
    x = prob.x0.copy()
    m, v = np.zeros_like(x), np.full_like(x, tau**2)
    for t in range(rounds):
        S = participants(n, t, participation, seed) or list(range(n))
        d = np.zeros_like(x)
        for i in S:
            y = x.copy()
            for k in range(steps):
                y = y - lr * decay**t * prob.grad(i, y, t, k)
            d += sizes[i] * (y - x)
        x, m, v = server_step(opt, x, m, v, d / sizes[S].sum(), eta, b1, b2, tau)
    return x, m, v


def difference(n: int, p: int, rounds: int, steps: int, lr: float, decay: float, opt: str,
               hp: tuple[float, float, float, float], participation: float, seed: int,
               weighted: bool) -> float:
    """The largest difference between the engine and the reference (every client's model
    and copies of the moments)."""
    prob = Problem(n, p, rounds, steps, seed)
    sizes = np.random.default_rng(seed + 1).integers(1, 50, size=n).astype(float)
    eta, b1, b2, tau = hp
    algo = tf.algorithms.fedopt(lr=lr, local_steps=steps, decay=decay, optimizer=opt,
                                server_lr=eta, beta1=b1, beta2=b2, tau=tau,
                                participation=participation, sample_seed=seed,
                                weighting="data_size" if weighted else "uniform")
    env = toy_services(n, p, train_sizes=torch.tensor(sizes) if weighted else None)
    x0 = torch.tensor(prob.x0, dtype=D).expand(n, p).clone()
    state = run_rounds(algo, x0, None, prob.batched(), rounds=rounds, env=env).state
    x, m, v = fedopt_reference(prob, n, rounds, steps, lr, decay, opt, hp, participation,
                               seed, sizes if weighted else np.ones(n))
    out = float(np.abs(state.x.numpy() - x).max())
    if opt != "sgd":
        own = state.own_as(FedOptState)
        assert own.m is not None and own.v is not None
        out = max(out, float(np.abs(own.m.numpy() - m).max()),
                  float(np.abs(own.v.numpy() - v).max()))
        if opt == "yogi":  # v - (1 - b2) d^2 sign(v - d^2) > min(v, b2 v) > 0 from tau^2 > 0
            assert bool((own.v > 0).all())
    return out


# ----------------------------------------------------------------------------- the reference


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 8), p=st.integers(1, 4), rounds=st.integers(1, 6),
       steps=st.integers(1, 3), lr=st.floats(0.05, 0.4), decay=st.sampled_from([1.0, 0.9]),
       opt=st.sampled_from(OPTIMIZERS), eta=st.sampled_from([1.0, 0.3, 0.01]),
       b1=st.sampled_from([0.0, 0.5, 0.9]), b2=st.sampled_from([0.0, 0.9, 0.99]),
       tau=st.sampled_from([1e-6, 1e-3, 0.5]), participation=st.sampled_from([1.0, 0.5]),
       seed=st.integers(0, 10**6), weighted=st.booleans())
def test_the_engine_equals_algorithm_2_written_out(
        n: int, p: int, rounds: int, steps: int, lr: float, decay: float, opt: str,
        eta: float, b1: float, b2: float, tau: float, participation: float, seed: int,
        weighted: bool) -> None:
    assert difference(n, p, rounds, steps, lr, decay, opt, (eta, b1, b2, tau), participation,
                      seed, weighted) <= TOL


@pytest.fixture(scope="module")
def data() -> Any:
    return tf.data.federate("digits", "pathological", 4, classes_per_client=3, seed=0)


def _digits(data: Any, algo: Any, rounds: int) -> Any:
    return tf.run(algo, topology=None, data=data, model=tf.models.build_model(
        "mlp", data.input_shape, data.num_classes, seed=0, hidden=(6,)), rounds=rounds,
        batch_size=5, dtype="float64", eval_every=1, spectral=False, record_clients=True)


@pytest.mark.parametrize("opt", ["adam", "yogi", "adagrad"])
def test_a_run_on_digits_equals_a_per_client_loop(data: Any, opt: str) -> None:
    lr, steps, rounds, hp = 0.25, 2, 3, (0.05, 0.9, 0.99, 1e-3)
    res = _digits(data, tf.algorithms.fedopt(lr=lr, local_steps=steps, optimizer=opt,
                                             server_lr=hp[0], participation=0.5,
                                             sample_seed=2, weighting="data_size"), rounds)
    model, layout, x = _flat(data)
    sizes = np.array(data.sizes("train"), dtype=float)
    xs, m, v = x.numpy(), np.zeros(x.numel()), np.full(x.numel(), hp[3] ** 2)
    for t in range(rounds):
        S = participants(4, t, 0.5, 2) or list(range(4))
        d = np.zeros_like(xs)
        for i in S:
            y = torch.tensor(xs)
            for k in range(steps):
                xb, yb = data.sample(t, k, 5)
                y = y - lr * _batch_grad(model, layout, y, xb[i], yb[i])
            d += sizes[i] * (y.numpy() - xs)
        xs, m, v = server_step(opt, xs, m, v, d / sizes[S].sum(), *hp)
    assert float(np.abs(res.state.x.numpy() - xs).max()) <= TOL
    assert res.records.final("messages") == rounds * 2 * 2  # FedAvg's: the model each way


# ----------------------------------------------------------------------------- facts


def _same(a: Any, b: Any) -> None:
    assert torch.equal(a.state.x, b.state.x)
    ra = [(r["metric"], r["round"], r["client"], r["value"]) for r in a.records.rows
          if r["metric"] != "wall_time"]
    rb = [(r["metric"], r["round"], r["client"], r["value"]) for r in b.records.rows
          if r["metric"] != "wall_time"]
    assert ra == rb


@pytest.mark.parametrize("kw", [{}, dict(participation=0.5, momentum=0.5, local_steps=2),
                                dict(weighting="data_size", local_steps=3)])
def test_sgd_at_server_rate_1_is_fedavg_to_the_bit(data: Any, kw: dict[str, Any]) -> None:
    _same(_digits(data, tf.algorithms.fedopt(lr=0.2, optimizer="sgd", **kw), 2),
          _digits(data, tf.algorithms.fedavg(lr=0.2, **kw), 2))


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 8), steps=st.integers(1, 4), participation=st.sampled_from([1.0, 0.5]),
       seed=st.integers(0, 10**6))
def test_the_general_server_step_with_sgd_at_rate_1_is_fedavg(n: int, steps: int,
                                                              participation: float,
                                                              seed: int) -> None:
    # the same without the shortcut to FedAvg's pieces: x_t + mean(y_i - x_t), to rounding
    hp = server_params(LocalSGD(lr=0.3, local_steps=steps),
                       Sampling(participation=participation, sample_seed=seed), "uniform")
    server = _ServerOptimizer(hp, "sgd", 1.0, 0.9, 0.99, 1e-3)
    general = fedavg_algorithm("fedopt", hp, communicate=server, init=(server,),
                               round_start=server.round_start)
    prob = Problem(n, 3, 5, steps, seed)
    x0 = torch.tensor(prob.x0, dtype=D).expand(n, 3).clone()
    a = run_rounds(general, x0, None, prob.batched(), rounds=5).state.x
    b = run_rounds(tf.algorithms.fedavg(lr=0.3, local_steps=steps, participation=participation,
                                        sample_seed=seed), x0, None, prob.batched(),
                   rounds=5).state.x
    assert float((a - b).abs().max()) <= 1e-13


@pytest.mark.parametrize(("opt", "b1", "b2"), [("adam", 0.9, 0.99), ("adam", 0.0, 0.0),
                                               ("yogi", 0.9, 0.99), ("adagrad", 0.5, 0.99)])
def test_one_round_in_closed_form(opt: str, b1: float, b2: float) -> None:
    # Delta = FedAvg's first round less x0; from m = 0 and v = tau^2:
    # adam  x1 = x0 + eta (1 - b1) Delta / (sqrt(b2 tau^2 + (1 - b2) Delta^2) + tau)
    # yogi  v1 = tau^2 + (1 - b2) Delta^2 where Delta^2 > tau^2 (here: every coordinate)
    # adagrad v1 = tau^2 + Delta^2; with b1 = b2 = 0 Adam is eta Delta / (|Delta| + tau)
    eta, tau = 0.05, 1e-3
    c = torch.tensor([[1.0, -2.0], [3.0, 0.5], [-1.0, 4.0]], dtype=D)
    grad = lambda z, ph, rnd: z - c  # noqa: E731
    x0 = torch.zeros(3, 2, dtype=D)
    avg = run_rounds(tf.algorithms.fedavg(lr=0.5, local_steps=2), x0, None, grad, rounds=1)
    delta = avg.state.x[0]
    algo = tf.algorithms.fedopt(lr=0.5, local_steps=2, optimizer=opt, server_lr=eta,
                                beta1=b1, beta2=b2, tau=tau)
    got = run_rounds(algo, x0, None, grad, rounds=1).state.x
    d2 = delta**2
    v = {"adam": b2 * tau**2 + (1 - b2) * d2, "yogi": tau**2 + (1 - b2) * d2,
         "adagrad": tau**2 + d2}[opt]
    want = eta * (1 - b1) * delta / (v.sqrt() + tau)
    assert bool((d2 > tau**2).all())
    torch.testing.assert_close(got, want.expand(3, 2), rtol=1e-14, atol=1e-15)
    if opt == "adam" and b1 == b2 == 0:  # sign descent, shrunk by tau
        torch.testing.assert_close(got[0], eta * delta / (delta.abs() + tau), rtol=1e-14,
                                   atol=0)


def test_fedadam_reaches_fedavgs_fixed_point_on_a_common_minimiser() -> None:
    c = torch.tensor([0.5, -1.0, 2.0], dtype=D)
    a = torch.tensor([[1.0], [0.5], [1.5], [1.2]], dtype=D)
    grad = lambda z, ph, rnd: a * (z - c)  # noqa: E731
    # Adagrad's second moment only grows: its steps shrink like 1/sqrt(t), a larger rate
    for opt, eta in (("adam", 0.02), ("yogi", 0.02), ("adagrad", 0.3)):
        algo = tf.algorithms.fedopt(lr=0.1, local_steps=3, optimizer=opt, server_lr=eta)
        x = run_rounds(algo, torch.zeros(4, 3, dtype=D), None, grad, rounds=1500).state.x
        assert float((x - c).abs().max()) < 1e-3, opt


# ----------------------------------------------------------------------------- settings


@pytest.mark.parametrize(("kw", "error", "match"), [
    (dict(optimizer="lamb"), ValueError, "optimizer must be one of"),
    (dict(optimizer=3), TypeError, "optimizer must be a str"),
    (dict(server_lr=0.0), ValueError, "server_lr"),
    (dict(server_lr=-0.1), ValueError, "server_lr"),
    (dict(beta1=1.0), ValueError, r"^beta1 must be in \[0, 1\), got 1"),
    (dict(beta1=-0.1), ValueError, "beta1"),
    (dict(beta2=1.0), ValueError, "beta2"),
    (dict(tau=0.0), ValueError, "tau"),
    (dict(tau=-1e-3), ValueError, "tau"),
    (dict(tau="small"), TypeError, "tau must be a real number"),
    (dict(lr=-0.1), ValueError, "lr"),
    (dict(participation=1.5), ValueError, "participation"),
])
def test_bad_settings_are_refused_in_one_line(kw: dict[str, Any], error: type,
                                              match: str) -> None:
    with pytest.raises(error, match=match) as info:
        tf.algorithms.fedopt(**kw)
    assert "\n" not in str(info.value)


def test_the_server_rate_defaults_by_optimizer_and_is_recorded() -> None:
    assert tf.algorithms.fedopt(optimizer="sgd").hparams["server_lr"] == 1.0
    algo = tf.algorithms.fedopt()
    assert algo.hparams["server_lr"] == 0.1 and algo.hparams["optimizer"] == "adam"
    assert (algo.hparams["beta1"], algo.hparams["beta2"], algo.hparams["tau"]) == (
        0.9, 0.99, 1e-3)
    state = algo.init(torch.zeros(2, 3, dtype=D), toy_services(2, 3))
    own = state.own_as(FedOptState)
    assert own.m is not None and own.v is not None
    assert float(own.v.min()) == float(own.v.max()) == 1e-6  # v_{-1} = tau^2
