"""SCAFFOLD (Karimireddy et al. 2020, Algorithm 1, option II) against a slow reference.

The reference is Algorithm 1 written out: a Python loop over the round's participants, each
taking its corrected local steps one after the other in numpy float64, then the server's two
updates. The engine's batched pieces must give its numbers (models, client and server
control variates) to 1e-12, on quadratics with a fixed per-(round, step, client) gradient
noise (a stand-in for the mini-batches) and, through ``topofl.run``, on digits with real
mini-batches. Then the facts that hold whatever the implementation: the first round is
FedAvg's, one local step with every client is FedAvg in every round, ``c`` stays the
weighted mean of the ``c_i``, and several local steps reach the optimum of the sum where
FedAvg drifts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.algorithms.scaffold import ScaffoldState
from topofl.engine import run_rounds, toy_services
from topofl.engine.pieces import participants

D = torch.float64
TOL = 1e-12


class Problem:
    """Client ``i`` minimises ``a_i |x - c_i|^2 / 2``; its gradient at local step ``k`` of
    round ``t`` carries the fixed noise ``noise[t, k, i]`` (a mini-batch stand-in)."""

    def __init__(self, n: int, p: int, rounds: int, steps: int, seed: int,
                 noise: float = 0.1) -> None:
        rng = np.random.default_rng(seed)
        self.a = rng.uniform(0.5, 1.5, size=(n, 1))
        self.c = rng.normal(size=(n, p))
        self.noise = noise * rng.normal(size=(rounds, steps, n, p))
        self.x0 = rng.normal(size=p)

    def grad(self, i: int, y: np.ndarray, t: int, k: int) -> np.ndarray:
        return np.asarray(self.a[i] * (y - self.c[i]) + self.noise[t, k, i])

    def batched(self) -> Callable[[torch.Tensor, Any, Any], torch.Tensor]:
        """``grad(z, phase, rnd)`` for :func:`run_rounds`: every client's, step by step."""
        calls: dict[int, int] = defaultdict(int)
        a, c = torch.tensor(self.a, dtype=D), torch.tensor(self.c, dtype=D)
        noise = torch.tensor(self.noise, dtype=D)

        def grad(z: torch.Tensor, phase: Any, rnd: Any) -> torch.Tensor:
            k = calls[rnd.t]
            calls[rnd.t] += 1
            return a * (z - c) + noise[rnd.t, k]

        return grad


def scaffold_reference(prob: Problem, n: int, rounds: int, steps: int, lr: float,
                       decay: float, server_lr: float, participation: float, seed: int,
                       sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Algorithm 1 (option II), one client after the other; ``sizes`` weigh the means
    (``p_i = sizes_i / sum(sizes)``; all ones: the paper's uniform means)."""
    x = prob.x0.copy()
    c = np.zeros_like(x)
    ci = np.zeros((n, x.size))
    for t in range(rounds):
        S = participants(n, t, participation, seed) or list(range(n))
        eta = lr * decay**t
        dy_sum, dc_sum = np.zeros_like(x), np.zeros_like(x)
        for i in S:
            y = x.copy()
            for k in range(steps):
                y = y - eta * (prob.grad(i, y, t, k) - ci[i] + c)
            new = ci[i] - c + (x - y) / (steps * eta)
            dy_sum += sizes[i] * (y - x)
            dc_sum += sizes[i] * (new - ci[i])
            ci[i] = new
        x = x + server_lr * dy_sum / sizes[S].sum()
        c = c + dc_sum / sizes.sum()
    return x, c, ci


def _engine(prob: Problem, n: int, rounds: int, steps: int, lr: float, decay: float,
            server_lr: float, participation: float, seed: int, sizes: np.ndarray | None
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The engine's ``(x [n, P], c_i [n, P], c [n, P])`` after ``rounds`` rounds."""
    algo = tf.algorithms.scaffold(lr=lr, local_steps=steps, decay=decay, server_lr=server_lr,
                                  participation=participation, sample_seed=seed,
                                  weighting="uniform" if sizes is None else "data_size")
    p = prob.x0.size
    env = toy_services(n, p, train_sizes=None if sizes is None else torch.tensor(sizes))
    x0 = torch.tensor(prob.x0, dtype=D).expand(n, p).clone()
    trace = run_rounds(algo, x0, None, prob.batched(), rounds=rounds, env=env)
    own = trace.state.own_as(ScaffoldState)
    return trace.state.x.numpy(), own.control.numpy(), own.server_control.numpy()


def difference(n: int, p: int, rounds: int, steps: int, lr: float, decay: float,
               server_lr: float, participation: float, seed: int, weighted: bool) -> float:
    """The largest difference between the engine and the reference (every client's model,
    control variate and copy of the server's)."""
    prob = Problem(n, p, rounds, steps, seed)
    sizes = (np.random.default_rng(seed + 1).integers(1, 50, size=n).astype(float)
             if weighted else None)
    x, ci, c = _engine(prob, n, rounds, steps, lr, decay, server_lr, participation, seed,
                       sizes)
    rx, rc, rci = scaffold_reference(prob, n, rounds, steps, lr, decay, server_lr,
                                     participation, seed, np.ones(n) if sizes is None else sizes)
    return max(float(np.abs(x - rx).max()), float(np.abs(c - rc).max()),
               float(np.abs(ci - rci).max()))


# ----------------------------------------------------------------------------- the reference


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 8), p=st.integers(1, 4), rounds=st.integers(1, 6),
       steps=st.integers(1, 4), lr=st.floats(0.05, 0.4), decay=st.sampled_from([1.0, 0.9]),
       server_lr=st.sampled_from([1.0, 0.5, 1.5]),
       participation=st.sampled_from([1.0, 0.5, 0.25]), seed=st.integers(0, 10**6),
       weighted=st.booleans())
def test_the_engine_equals_algorithm_1_written_out(n: int, p: int, rounds: int, steps: int,
                                                   lr: float, decay: float, server_lr: float,
                                                   participation: float, seed: int,
                                                   weighted: bool) -> None:
    assert difference(n, p, rounds, steps, lr, decay, server_lr, participation, seed,
                      weighted) <= TOL


@pytest.fixture(scope="module")
def data() -> Any:
    return tf.data.federate("digits", "pathological", 4, classes_per_client=3, seed=0)


def _flat(data: Any) -> tuple[Any, Any, torch.Tensor]:
    model = tf.models.build_model("mlp", data.input_shape, data.num_classes, seed=0,
                                  hidden=(6,)).double()
    layout = tf.engine.ParamLayout.from_model(model)
    x = layout.flatten({k: v.detach() for k, v in model.named_parameters()})[0]
    return model, layout, x


def _batch_grad(model: Any, layout: Any, w: torch.Tensor, xb: torch.Tensor,
                yb: torch.Tensor) -> torch.Tensor:
    """The gradient of the mean cross-entropy of the flat parameters ``w`` on one batch."""
    row = w.clone().requires_grad_(True)
    params = {k: v[0] for k, v in layout.views(row.unsqueeze(0)).items()}
    out = torch.func.functional_call(model, params, (xb.to(D),))
    (g,) = torch.autograd.grad(torch.nn.functional.cross_entropy(out, yb), row)
    return g


def test_a_run_on_digits_equals_a_per_client_loop(data: Any) -> None:
    lr, wd, steps, rounds, batch = 0.25, 1e-3, 2, 3, 5
    res = tf.run(tf.algorithms.scaffold(lr=lr, weight_decay=wd, local_steps=steps,
                                        participation=0.5, sample_seed=2, server_lr=0.8,
                                        weighting="data_size"),
                 topology=None, data=data, model=tf.models.build_model(
                     "mlp", data.input_shape, data.num_classes, seed=0, hidden=(6,)),
                 rounds=rounds, batch_size=batch, dtype="float64", eval_every=1,
                 spectral=False)
    model, layout, x = _flat(data)
    sizes = np.array(data.sizes("train"), dtype=float)
    c, ci = torch.zeros_like(x), torch.zeros(4, x.numel(), dtype=D)
    for t in range(rounds):
        S = participants(4, t, 0.5, 2) or list(range(4))
        dy, dc = torch.zeros_like(x), torch.zeros_like(x)
        for i in S:
            y = x.clone()
            for k in range(steps):
                xb, yb = data.sample(t, k, batch)
                g = _batch_grad(model, layout, y, xb[i], yb[i]) - ci[i] + c
                y = y - lr * (g + wd * y)
            new = ci[i] - c + (x - y) / (steps * lr)
            dy += sizes[i] * (y - x)
            dc += sizes[i] * (new - ci[i])
            ci[i] = new
        x = x + 0.8 * dy / sizes[S].sum()
        c = c + dc / sizes.sum()
    own = res.state.own_as(ScaffoldState)
    assert float((res.state.x - x).abs().max()) <= TOL
    assert float((own.control - ci).abs().max()) <= TOL
    assert float((own.server_control - c).abs().max()) <= TOL
    # two vectors each way, in one message: FedAvg's messages, twice its bytes
    r = res.records
    assert r.final("messages") == rounds * 2 * 2
    assert r.final("bytes.control") == r.final("bytes.model") == rounds * 2 * 2 * x.numel() * 8


# ----------------------------------------------------------------------------- facts


def _quadratic(n: int, p: int, seed: int) -> tuple[Any, torch.Tensor]:
    """Heterogeneous ``a_i |x - c_i|^2 / 2``: the exact gradient and the optimum of the sum."""
    prob = Problem(n, p, 1, 1, seed, noise=0.0)
    a, c = torch.tensor(prob.a, dtype=D), torch.tensor(prob.c, dtype=D)
    return (lambda z, phase, rnd: a * (z - c)), (a * c).sum(0) / a.sum()


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 8), steps=st.integers(1, 5), participation=st.sampled_from([1.0, 0.5]),
       seed=st.integers(0, 10**6))
def test_the_first_round_is_fedavgs(n: int, steps: int, participation: float,
                                    seed: int) -> None:
    # every control variate is 0 in round 0: the corrected steps are FedAvg's
    grad, _ = _quadratic(n, 3, seed)
    x0 = torch.randn(n, 3, dtype=D, generator=torch.Generator().manual_seed(seed))
    x0[:] = x0[0]
    kw = dict(lr=0.3, local_steps=steps, participation=participation, sample_seed=seed)
    a = run_rounds(tf.algorithms.scaffold(**kw), x0, None, grad, rounds=1)
    b = run_rounds(tf.algorithms.fedavg(**kw), x0, None, grad, rounds=1)
    assert float((a.state.x - b.state.x).abs().max()) <= 1e-14
    assert a.messages == b.messages


def test_one_local_step_with_every_client_is_fedavg_in_every_round() -> None:
    # c_i = g_i(x_{t-1}) and c = their mean: the corrections cancel in the server's mean
    grad, _ = _quadratic(6, 3, 0)
    x0 = torch.zeros(6, 3, dtype=D)
    a = run_rounds(tf.algorithms.scaffold(lr=0.3), x0, None, grad, rounds=30)
    b = run_rounds(tf.algorithms.fedavg(lr=0.3), x0, None, grad, rounds=30)
    assert float((a.state.x - b.state.x).abs().max()) <= TOL
    own = a.state.own_as(ScaffoldState)
    assert float(own.control.abs().max()) > 0.1  # they did not stay 0


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 8), rounds=st.integers(1, 6), participation=st.floats(0.1, 1.0),
       seed=st.integers(0, 10**6), weighted=st.booleans())
def test_the_server_control_stays_the_weighted_mean_of_the_clients(
        n: int, rounds: int, participation: float, seed: int, weighted: bool) -> None:
    prob = Problem(n, 2, rounds, 2, seed)
    sizes = np.random.default_rng(seed).integers(1, 50, size=n).astype(float)
    _, ci, c = _engine(prob, n, rounds, 2, 0.2, 1.0, 1.0, participation, seed,
                       sizes if weighted else None)
    p = sizes / sizes.sum() if weighted else np.full(n, 1 / n)
    np.testing.assert_allclose(c, np.broadcast_to(p @ ci, c.shape), rtol=0, atol=TOL)


@pytest.mark.parametrize("participation", [1.0, 0.5])
def test_several_local_steps_reach_the_optimum_where_fedavg_drifts(
        participation: float) -> None:
    n, p = 6, 3
    grad, opt = _quadratic(n, p, 1)
    x0 = torch.zeros(n, p, dtype=D)
    kw = dict(lr=0.1, local_steps=5, participation=participation, sample_seed=0)
    s = run_rounds(tf.algorithms.scaffold(**kw), x0, None, grad, rounds=600).state.x
    f = run_rounds(tf.algorithms.fedavg(**kw), x0, None, grad, rounds=600).state.x
    assert float((s - opt).abs().max()) <= 1e-10
    assert float((f - opt).abs().max()) > 1e-2  # FedAvg's constant-step bias


def test_the_sum_of_rates_is_each_clients_own_step_count(data: Any) -> None:
    # with local epochs each client takes ceil(epochs * m_i / batch) steps: K lr is its own
    res = tf.run(tf.algorithms.scaffold(lr=0.1, local_epochs=(0.1, 0.2, 0.3, 0.05)),
                 topology=None, data=data, model="logistic", rounds=1, batch_size=8,
                 dtype="float64", spectral=False)
    m = np.array(data.sizes("train"))
    steps = np.ceil(np.array([0.1, 0.2, 0.3, 0.05]) * m / 8)
    lr_sum = res.state.own_as(ScaffoldState).lr_sum.numpy()
    np.testing.assert_allclose(lr_sum, 0.1 * steps, rtol=1e-14)


# ----------------------------------------------------------------------------- settings


@pytest.mark.parametrize(("kw", "error", "match"), [
    (dict(server_lr=0.0), ValueError, r"^server_lr must be in \(0, inf\], got 0$"),
    (dict(server_lr=-1.0), ValueError, "server_lr"),
    (dict(server_lr="1"), TypeError, "server_lr must be a real number"),
    (dict(lr=-0.1), ValueError, "lr"),
    (dict(participation=0.0), ValueError, "participation"),
    (dict(weighting="size"), ValueError, "weighting"),
    (dict(mu=0.1), TypeError, "mu"),
])
def test_bad_settings_are_refused_in_one_line(kw: dict[str, Any], error: type,
                                              match: str) -> None:
    with pytest.raises(error, match=match) as info:
        tf.algorithms.scaffold(**kw)
    assert "\n" not in str(info.value)


def test_hyperparameters_are_recorded() -> None:
    algo = tf.algorithms.scaffold(lr=0.05, server_lr=0.5, local_steps=3)
    assert algo.hparams["server_lr"] == 0.5 and algo.hparams["local_steps"] == 3
    assert algo.uses_topology is False and algo.absent == "server"
