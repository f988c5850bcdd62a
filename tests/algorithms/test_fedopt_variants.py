"""FedOpt's ``variant`` (issue 84, item 3): the server's moments as each peer ships them.

Reddi et al.'s Algorithm 2 (the default) starts the second moment at $\\tau^2$; FL-bench
(``KarhouTam/FL-bench``, ``src/server/fedopt.py``, ``AdaptiveOptimizer.step``) and Flower
(flwr 1.42.0, ``flwr/server/strategy/fedadam.py``, ``fedyogi.py``, ``fedadagrad.py``) start
it at 0, and Flower's FedAdam bias-corrects its rate with the exponent ``server_round + 1``
(rounds numbered from 1). Each peer's update is written here again in numpy float64, as its
code reads (FL-bench: the weighted sum of the negated ``W_global - W_local`` differences;
Flower: the weighted average of the clients' weights less the current weights), one round
after the other; the engine must give its numbers to 1e-12. Then: the default is today's
formula and today's hyper-parameters (the run hash), a first round in closed form per
variant, the refusals, the config's record and replay, and, when ``flwr`` is installed,
Flower's own ``aggregate_fit`` on the same clients' models.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from tests.algorithms.test_scaffold import Problem
from topofl.algorithms.fedopt import VARIANTS, FedOptState
from topofl.engine import run_rounds, toy_services
from topofl.engine.pieces import participants

D = torch.float64
TOL = 1e-12
ADAPTIVE = ("adam", "yogi", "adagrad")


def _local(prob: Problem, x: np.ndarray, S: list[int], t: int, steps: int,
           lr: float) -> dict[int, np.ndarray]:
    """The participants' models after their local SGD steps from ``x``."""
    out = {}
    for i in S:
        y = x.copy()
        for k in range(steps):
            y = y - lr * prob.grad(i, y, t, k)
        out[i] = y
    return out


def reddi_round(x: np.ndarray, m: np.ndarray, v: np.ndarray, ys: dict[int, np.ndarray],
                sizes: np.ndarray, opt: str, eta: float, b1: float, b2: float, tau: float
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Algorithm 2's server step on the (weighted) mean update (today's formula)."""
    d = sum(sizes[i] * (y - x) for i, y in ys.items()) / sum(sizes[i] for i in ys)
    m = b1 * m + (1 - b1) * d
    if opt == "adam":
        v = b2 * v + (1 - b2) * d**2
    elif opt == "adagrad":
        v = v + d**2
    else:
        v = v - (1 - b2) * d**2 * np.sign(v - d**2)
    return x + eta * m / (np.sqrt(v) + tau), m, v


def fl_bench_round(x: np.ndarray, m: np.ndarray, v: np.ndarray, ys: dict[int, np.ndarray],
                   sizes: np.ndarray, opt: str, eta: float, b1: float, b2: float, tau: float
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """FL-bench's ``AdaptiveOptimizer.step``: clients send ``x - y_i``, weights
    ``n_i / sum n``, the delta is ``sum w_i * -(x - y_i)``."""
    total = sum(sizes[i] for i in ys)
    delta = np.zeros_like(x)
    for i, y in ys.items():
        delta = delta + (-(x - y)) * (sizes[i] / total)
    m = b1 * m + (1 - b1) * delta
    if opt == "adagrad":
        v = v + delta**2
    elif opt == "yogi":
        v = v - (1 - b2) * delta**2 * np.sign(v - delta**2)
    else:
        v = b2 * v + (1 - b2) * delta**2
    return x + eta * (m / (np.sqrt(v) + tau)), m, v


def flower_round(server_round: int, x: np.ndarray, m: np.ndarray, v: np.ndarray,
                 ys: dict[int, np.ndarray], sizes: np.ndarray, opt: str, eta: float,
                 b1: float, b2: float, tau: float
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flower's ``aggregate_fit`` (FedAdam, FedYogi, FedAdagrad): FedAvg's weighted average
    of the weights, less the current weights; FedAdam's rate bias-corrected with the
    exponent ``server_round + 1``."""
    total = sum(sizes[i] for i in ys)
    avg = sum(y * sizes[i] for i, y in ys.items()) / total
    delta = avg - x
    m = b1 * m + (1 - b1) * delta
    if opt == "adam":
        v = b2 * v + (1 - b2) * delta * delta
        rate = eta * np.sqrt(1 - b2 ** (server_round + 1.0)) / (1 - b1 ** (server_round + 1.0))
    elif opt == "yogi":
        v = v - (1.0 - b2) * delta * delta * np.sign(v - delta * delta)
        rate = eta
    else:
        v = v + delta * delta
        rate = eta
    return x + rate * m / (np.sqrt(v) + tau), m, v


def peer_reference(variant: str, prob: Problem, n: int, rounds: int, steps: int, lr: float,
                   opt: str, hp: tuple[float, float, float, float], participation: float,
                   seed: int, sizes: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(x, m, v)`` after ``rounds`` rounds of ``variant``'s peer."""
    eta, b1, b2, tau = hp
    x = prob.x0.copy()
    m = np.zeros_like(x)
    v = np.full_like(x, tau**2) if variant == "reddi" else np.zeros_like(x)
    for t in range(rounds):
        S = participants(n, t, participation, seed) or list(range(n))
        ys = _local(prob, x, S, t, steps, lr)
        if variant == "reddi":
            x, m, v = reddi_round(x, m, v, ys, sizes, opt, *hp)
        elif variant == "fl_bench":
            x, m, v = fl_bench_round(x, m, v, ys, sizes, opt, *hp)
        else:
            x, m, v = flower_round(t + 1, x, m, v, ys, sizes, opt, *hp)
    return x, m, v


def _engine(variant: str | None, prob: Problem, n: int, p: int, rounds: int, steps: int,
            lr: float, opt: str, hp: tuple[float, float, float, float], participation: float,
            seed: int, sizes: np.ndarray | None) -> Any:
    eta, b1, b2, tau = hp
    kw = {} if variant is None else dict(variant=variant)
    algo = tf.algorithms.fedopt(lr=lr, local_steps=steps, optimizer=opt, server_lr=eta,
                                beta1=b1, beta2=b2, tau=tau, participation=participation,
                                sample_seed=seed,
                                weighting="uniform" if sizes is None else "data_size", **kw)
    env = toy_services(n, p, train_sizes=None if sizes is None else torch.tensor(sizes))
    x0 = torch.tensor(prob.x0, dtype=D).expand(n, p).clone()
    return run_rounds(algo, x0, None, prob.batched(), rounds=rounds, env=env).state


def _gap(state: Any, x: np.ndarray, m: np.ndarray, v: np.ndarray) -> float:
    own = state.own_as(FedOptState)
    assert own.m is not None and own.v is not None
    return max(float(np.abs(state.x.numpy() - x).max()),
               float(np.abs(own.m.numpy() - m).max()), float(np.abs(own.v.numpy() - v).max()))


# ----------------------------------------------------------------------------- the peers


@settings(max_examples=60, deadline=None)
@given(variant=st.sampled_from(VARIANTS), opt=st.sampled_from(ADAPTIVE),
       n=st.integers(1, 6), p=st.integers(1, 4), rounds=st.integers(1, 6),
       steps=st.integers(1, 3), lr=st.floats(0.05, 0.4), eta=st.sampled_from([1.0, 0.1, 0.01]),
       b1=st.sampled_from([0.0, 0.5, 0.9]), b2=st.sampled_from([0.0, 0.9, 0.99, 0.999]),
       tau=st.sampled_from([1e-9, 1e-3, 0.5]), participation=st.sampled_from([1.0, 0.5]),
       seed=st.integers(0, 10**6), weighted=st.booleans())
def test_each_variant_equals_its_peers_update_written_out(
        variant: str, opt: str, n: int, p: int, rounds: int, steps: int, lr: float,
        eta: float, b1: float, b2: float, tau: float, participation: float, seed: int,
        weighted: bool) -> None:
    if variant == "flower" and opt == "adagrad":
        b1 = 0.0  # Flower's FedAdagrad has no first moment
    prob = Problem(n, p, rounds, steps, seed)
    sizes = np.random.default_rng(seed + 1).integers(1, 50, size=n).astype(float)
    hp = (eta, b1, b2, tau)
    state = _engine(variant, prob, n, p, rounds, steps, lr, opt, hp, participation, seed,
                    sizes if weighted else None)
    ref = peer_reference(variant, prob, n, rounds, steps, lr, opt, hp, participation, seed,
                         sizes if weighted else np.ones(n))
    assert _gap(state, *ref) <= TOL


@pytest.mark.parametrize("opt", ADAPTIVE)
def test_the_variants_differ_where_their_peers_do(opt: str) -> None:
    # v_{-1} = tau^2 against 0 moves every optimizer; Flower's bias correction only Adam
    prob = Problem(4, 3, 4, 2, 0)
    hp = (0.1, 0.0 if opt == "adagrad" else 0.9, 0.99, 1e-2)
    xs = {v: _engine(v, prob, 4, 3, 4, 2, 0.2, opt, hp, 1.0, 0, None).x for v in VARIANTS}
    assert float((xs["reddi"] - xs["fl_bench"]).abs().max()) > 1e-4
    same = torch.equal(xs["fl_bench"], xs["flower"])
    assert same == (opt != "adam")


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(("opt", "b1", "b2"), [("adam", 0.9, 0.99), ("adam", 0.5, 0.999),
                                               ("yogi", 0.9, 0.99), ("adagrad", 0.0, 0.99)])
def test_one_round_in_closed_form(variant: str, opt: str, b1: float, b2: float) -> None:
    # Delta = FedAvg's first round less x0; m1 = (1 - b1) Delta and, from v0 (tau^2 or 0):
    # adam v1 = b2 v0 + (1 - b2) Delta^2; yogi v1 = v0 + (1 - b2) Delta^2 (Delta^2 > v0);
    # adagrad v1 = v0 + Delta^2; Flower's Adam multiplies the rate by sqrt(1 - b2^2)/(1 - b1^2)
    eta, tau = 0.05, 1e-3
    c = torch.tensor([[1.0, -2.0], [3.0, 0.5], [-1.0, 4.0]], dtype=D)
    grad = lambda z, ph, rnd: z - c  # noqa: E731
    x0 = torch.zeros(3, 2, dtype=D)
    avg = run_rounds(tf.algorithms.fedavg(lr=0.5, local_steps=2), x0, None, grad, rounds=1)
    delta = avg.state.x[0]
    algo = tf.algorithms.fedopt(lr=0.5, local_steps=2, optimizer=opt, server_lr=eta,
                                beta1=b1, beta2=b2, tau=tau, variant=variant)
    got = run_rounds(algo, x0, None, grad, rounds=1).state.x
    v0, d2 = (tau**2 if variant == "reddi" else 0.0), delta**2
    assert bool((d2 > tau**2).all())
    v = {"adam": b2 * v0 + (1 - b2) * d2, "yogi": v0 + (1 - b2) * d2, "adagrad": v0 + d2}[opt]
    rate = eta
    if variant == "flower" and opt == "adam":
        rate = eta * math.sqrt(1 - b2**2) / (1 - b1**2)
    want = rate * (1 - b1) * delta / (v.sqrt() + tau)
    torch.testing.assert_close(got, want.expand(3, 2), rtol=1e-14, atol=1e-15)


# ----------------------------------------------------------------------------- the default


@pytest.mark.parametrize("opt", ADAPTIVE)
def test_the_default_is_todays_formula_and_reddi(opt: str) -> None:
    n, p, rounds, steps, seed = 5, 3, 5, 2, 7
    prob = Problem(n, p, rounds, steps, seed)
    sizes = np.random.default_rng(seed).integers(1, 50, size=n).astype(float)
    hp = (0.1, 0.9, 0.99, 1e-3)
    default = _engine(None, prob, n, p, rounds, steps, 0.2, opt, hp, 0.6, seed, sizes)
    reddi = _engine("reddi", prob, n, p, rounds, steps, 0.2, opt, hp, 0.6, seed, sizes)
    assert torch.equal(default.x, reddi.x)
    # today's formula: v_{-1} = tau^2, no bias correction (reddi_round, one round at a time)
    x, m, v = prob.x0.copy(), np.zeros(p), np.full(p, hp[3] ** 2)
    for t in range(rounds):
        S = participants(n, t, 0.6, seed) or list(range(n))
        x, m, v = reddi_round(x, m, v, _local(prob, x, S, t, steps, 0.2), sizes, opt, *hp)
    assert _gap(default, x, m, v) <= TOL


def test_the_default_keeps_its_hyper_parameters_and_run_hash() -> None:
    # the variant is recorded only when set: a default run describes itself as before it
    before = ["lr", "momentum", "weight_decay", "local_steps", "local_epochs", "decay",
              "participation", "sample_seed", "weighting", "optimizer", "server_lr", "beta1",
              "beta2", "tau"]
    assert list(tf.algorithms.fedopt().hparams) == before
    assert tf.algorithms.fedopt(variant="reddi").hparams == tf.algorithms.fedopt().hparams
    assert tf.algorithms.fedopt(variant="fl_bench").hparams["variant"] == "fl_bench"
    assert tf.algorithms.fedopt(optimizer="sgd", variant="flower").hparams["variant"] == (
        "flower")


# ----------------------------------------------------------------------------- settings


@pytest.mark.parametrize(("kw", "error", "match"), [
    (dict(variant="adam"), ValueError, "^variant must be one of"),
    (dict(variant="Flower"), ValueError, "variant must be one of"),
    (dict(variant=1), TypeError, "variant must be a str"),
    (dict(variant="flower", optimizer="adagrad"), ValueError,
     r"^variant='flower' with optimizer='adagrad' needs beta1=0 .* got beta1=0\.9$"),
])
def test_bad_variants_are_refused_in_one_line(kw: dict[str, Any], error: type,
                                              match: str) -> None:
    with pytest.raises(error, match=match) as info:
        tf.algorithms.fedopt(**kw)
    assert "\n" not in str(info.value)


def test_flower_adagrad_runs_with_beta1_0_and_fl_bench_keeps_momentum() -> None:
    assert tf.algorithms.fedopt(variant="flower", optimizer="adagrad", beta1=0.0).hparams[
        "beta1"] == 0.0
    assert tf.algorithms.fedopt(variant="fl_bench", optimizer="adagrad").hparams["beta1"] == 0.9


def test_a_config_records_the_variant_and_replays_it(tmp_path: Path) -> None:
    base = dict(algorithm="fedopt", topology=None, data="digits", n_clients=4, rounds=2,
                batch_size=8, spectral=False, local_steps=2, weighting="data_size")
    assert tf.config.validate(base)["variant"] == "reddi"
    r = tf.config.resolve({**base, "variant": "flower"})
    assert r.config["variant"] == "flower"
    assert r.prepared.algorithm.hparams["variant"] == "flower"
    assert "variant" not in tf.config.resolve(base).prepared.algorithm.hparams
    path = tmp_path / "flower.jsonl"
    res = tf.config.execute({**base, "variant": "flower", "records_path": str(path)})
    assert tf.records.load(path).config["variant"] == "flower"
    again = tf.config.replay(path)
    assert tf.config.compare_rows(res.records.rows, again.records.rows) is None
    other = tf.config.execute({**base, "variant": "fl_bench"})  # Adam: the rate differs
    assert tf.config.compare_rows(res.records.rows, other.records.rows) is not None


# ----------------------------------------------------------------------------- Flower itself


@pytest.mark.parametrize("opt", ADAPTIVE)
def test_the_flower_variant_equals_flowers_own_aggregate_fit(opt: str) -> None:
    strategy = pytest.importorskip("flwr.server.strategy")
    common = pytest.importorskip("flwr.common")
    n, p, rounds, steps, seed, lr = 6, 4, 6, 2, 3, 0.2
    eta, b1, b2, tau = 0.05, (0.0 if opt == "adagrad" else 0.9), 0.99, 1e-3
    prob = Problem(n, p, rounds, steps, seed)
    sizes = np.random.default_rng(seed).integers(1, 50, size=n)
    state = _engine("flower", prob, n, p, rounds, steps, lr, opt, (eta, b1, b2, tau), 0.5,
                    seed, sizes.astype(float))
    init = common.ndarrays_to_parameters([prob.x0.copy()])
    if opt == "adagrad":  # beta_1 = 0 inside
        server = strategy.FedAdagrad(initial_parameters=init, eta=eta, eta_l=lr, tau=tau)
    else:
        cls = strategy.FedAdam if opt == "adam" else strategy.FedYogi
        server = cls(initial_parameters=init, eta=eta, eta_l=lr, beta_1=b1, beta_2=b2,
                     tau=tau)
    ok = common.Status(code=common.Code.OK, message="")
    x = prob.x0.copy()
    for t in range(rounds):  # Flower's rounds count from 1
        S = participants(n, t, 0.5, seed) or list(range(n))
        results = [(None, common.FitRes(status=ok, parameters=common.ndarrays_to_parameters(
            [y]), num_examples=int(sizes[i]), metrics={}))
            for i, y in _local(prob, x, S, t, steps, lr).items()]
        params, _ = server.aggregate_fit(t + 1, results, [])
        x = common.parameters_to_ndarrays(params)[0]
    assert float(np.abs(state.x.numpy() - x).max()) <= TOL
