"""The engine's objectives: the squared error against its closed forms and decent-bench's
least-squares cost, every executor path against the others, and the cross-entropy's numbers
unchanged by the objective that now carries them."""

from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import topofl as tf
from topofl.engine.evaluation import class_sums, shared_sums
from topofl.engine.executors import BatchedExecutor, ClientError, LoopExecutor, make_executor
from topofl.engine.layout import ParamLayout
from topofl.engine.objectives import (
    CROSS_ENTROPY,
    SQUARED_ERROR,
    CrossEntropy,
    SquaredError,
    check_objective,
    objective_of,
)
from topofl.engine.scoring import score_chunks
from topofl.engine.services import batch_losses

F64 = torch.float64


def _problem(n: int, b: int, d: int, k: int | None, seed: int, dtype=F64):
    """``n`` clients of ``b`` samples of ``d`` features and targets ``[n, b]`` (``k`` None)
    or ``[n, b, k]``, drawn from ``seed``."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, b, d, generator=g, dtype=dtype)
    shape = (n, b) if k is None else (n, b, k)
    return x, torch.randn(*shape, generator=g, dtype=dtype)


def _linear(d: int, k: int, bias: bool, dtype=F64):
    model = nn.Linear(d, k, bias=bias).to(dtype)
    return model, ParamLayout.from_model(model)


def _grads(executor, flat, x, y):
    g = torch.zeros_like(flat)
    return executor.grad(flat, x, y, "all", g), g


# ------------------------------------------------------------------ the objective's numbers
@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), k=st.integers(1, 4),
       one=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_squared_error_is_half_the_squared_distance(shape, k, one, seed):
    """Any leading shape; ``[...]`` targets for one output, ``[..., K]`` otherwise."""
    k = 1 if one else k
    g = torch.Generator().manual_seed(seed)
    out = torch.randn(*shape, k, generator=g, dtype=F64)
    y = torch.randn(*shape, generator=g, dtype=F64) if one else \
        torch.randn(*shape, k, generator=g, dtype=F64)
    want = 0.5 * ((out - (y.unsqueeze(-1) if one else y)) ** 2).sum(-1)
    got = SQUARED_ERROR.per_sample(out, y)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-14, atol=0)
    torch.testing.assert_close(SQUARED_ERROR.mean(out.reshape(-1, k), y.reshape(-1) if one
                                                  else y.reshape(-1, k)), want.mean())
    assert SQUARED_ERROR.correct(out, y).isnan().all()


@settings(max_examples=30, deadline=None)
@given(m=st.integers(1, 4), b=st.integers(1, 6), k=st.integers(1, 4), one=st.booleans(),
       scale=st.floats(0.01, 3.0), seed=st.integers(0, 2**31 - 1))
def test_the_linear_closed_forms_are_autograds(m, b, k, one, scale, seed):
    """``Objective.linear``: the clients' mean losses and ``scale`` times the gradient of
    their sum with respect to the outputs, for both objectives (autograd of
    ``per_sample`` as the reference)."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(m, k, b, generator=g, dtype=F64, requires_grad=True)
    cases = [(CROSS_ENTROPY, torch.randint(0, k, (m, b), generator=g))]
    y = torch.randn(m, b, generator=g, dtype=F64) if one and k == 1 else \
        torch.randn(m, b, k, generator=g, dtype=F64)
    cases.append((SQUARED_ERROR, y))
    for objective, t in cases:
        loss = objective.per_sample(z.transpose(1, 2), t).mean(1)
        (want,) = torch.autograd.grad(loss.sum(), z)
        got_loss, p = objective.linear(z.detach().clone(), t, scale)
        torch.testing.assert_close(got_loss, loss.detach(), rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(p / scale, want, rtol=1e-10, atol=1e-12)
        rates = torch.linspace(0.5, 2.0, m, dtype=F64)  # one rate a client
        _, pr = objective.linear(z.detach().clone(), t, rates)
        torch.testing.assert_close(pr / rates.view(m, 1, 1), want, rtol=1e-10, atol=1e-12)
        assert objective.linear(z.detach().clone(), t, None)[1] is None


def test_the_cross_entropy_is_torchs():
    """The objective that now carries the cross-entropy gives ``F.cross_entropy``'s bits."""
    g = torch.Generator().manual_seed(3)
    out, y = torch.randn(4, 9, 10, generator=g), torch.randint(0, 10, (4, 9), generator=g)
    want = F.cross_entropy(out.reshape(-1, 10), y.reshape(-1), reduction="none").view(4, 9)
    assert torch.equal(CROSS_ENTROPY.per_sample(out, y), want)
    assert torch.equal(CROSS_ENTROPY.mean(out[0], y[0]), F.cross_entropy(out[0], y[0]))
    assert torch.equal(CROSS_ENTROPY.correct(out, y), (out.argmax(-1) == y).double())


# ------------------------------------------------------------------ executors
@pytest.mark.parametrize("bias", [False, True])
def test_least_squares_gradients_are_decent_bench_cost(bias):
    """A linear model of one output with the squared error: every executor path's losses and
    gradients are :class:`~topofl.engine.LeastSquares`' (decent-bench's
    ``LinearRegressionCost`` ``|A x - b|^2 / (2 m)``), float64 to 1e-12."""
    n, b, d = 5, 7, 3
    x, y = _problem(n, b, d, None, seed=1)
    model, layout = _linear(d, 1, bias)
    flat = torch.randn(n, layout.num_params, generator=torch.Generator().manual_seed(2),
                       dtype=F64)
    A = x if not bias else torch.cat([x, torch.ones(n, b, 1, dtype=F64)], dim=2)
    ls = tf.engine.LeastSquares.of(list(A), list(y))
    # the layout's order: weight [1, d] then bias [1]: the stacked features' order
    want_grad, want_loss = ls.grad(flat), ls.losses(flat, torch.arange(n))
    paths = {
        "closed form": BatchedExecutor(model, layout, objective="squared_error"),
        "batched autograd": BatchedExecutor(model, layout, closed_form=False,
                                            objective=SQUARED_ERROR),
        "per-client loop": LoopExecutor(model, layout, objective="squared_error"),
    }
    assert paths["closed form"].linear is not None
    for name, ex in paths.items():
        loss, g = _grads(ex, flat, x, y)
        torch.testing.assert_close(g, want_grad, rtol=1e-12, atol=1e-12, msg=name)
        torch.testing.assert_close(loss, want_loss, rtol=1e-12, atol=1e-12, msg=name)
        torch.testing.assert_close(ex.losses(flat, x, y), want_loss, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("model_name", ["mlp", "linear3"])
def test_the_executors_agree_on_several_outputs(model_name):
    """``[n, b, K]`` targets: the batched executor (closed form for a linear model, the
    plain-stack path for an MLP, ``vmap`` for neither) and the per-client loop agree to
    1e-12 in float64, and ``sgd_`` is ``grad`` then the update."""
    n, b, d, k = 6, 5, 4, 3
    x, y = _problem(n, b, d, k, seed=4)
    if model_name == "mlp":
        model = nn.Sequential(nn.Linear(d, 8), nn.ReLU(), nn.Linear(8, k)).to(F64)
    else:
        model = nn.Linear(d, k).to(F64)
    layout = ParamLayout.from_model(model)
    flat = 0.5 * torch.randn(n, layout.num_params, generator=torch.Generator().manual_seed(5),
                             dtype=F64)
    ref_loss, ref = _grads(LoopExecutor(model, layout, objective="squared_error"), flat, x, y)
    for closed in (True, False):
        ex = BatchedExecutor(model, layout, closed_form=closed, objective="squared_error")
        loss, g = _grads(ex, flat, x, y)
        torch.testing.assert_close(g, ref, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(loss, ref_loss, rtol=1e-12, atol=1e-12)
        lr = torch.linspace(0.01, 0.2, n, dtype=F64)
        moved = flat.clone()
        torch.testing.assert_close(ex.sgd_(moved, x, y, "all", lr), ref_loss, rtol=1e-12,
                                   atol=1e-12)
        torch.testing.assert_close(moved, flat - lr.unsqueeze(1) * ref, rtol=1e-12,
                                   atol=1e-12)


def test_gradient_descent_reaches_the_least_squares_minimiser():
    """Plain full-batch SGD through ``sgd_`` with the squared error reaches each client's own
    normal-equations solution (no communication)."""
    n, b, d = 3, 20, 4
    x, y = _problem(n, b, d, None, seed=7)
    model, layout = _linear(d, 1, bias=False)
    ex = BatchedExecutor(model, layout, objective="squared_error")
    flat = torch.zeros(n, d, dtype=F64)
    for _ in range(3000):
        ex.sgd_(flat, x, y, "all", torch.full((n,), 0.3, dtype=F64))
    want = torch.stack([torch.linalg.lstsq(x[i], y[i]).solution for i in range(n)])
    torch.testing.assert_close(flat, want, rtol=1e-9, atol=1e-9)


def test_the_wrong_kind_of_targets_is_refused():
    n, b, d = 2, 3, 4
    x, y = _problem(n, b, d, None, seed=0)
    model, layout = _linear(d, 2, bias=True)
    flat = torch.zeros(n, layout.num_params, dtype=F64)
    labels = torch.zeros(n, b, dtype=torch.long)
    for ex in (BatchedExecutor(model, layout, objective="squared_error"),
               LoopExecutor(model, layout, objective="squared_error")):
        with pytest.raises(TypeError, match="floating-point targets, got torch.int64"):
            _grads(ex, flat, x, labels)
        with pytest.raises((ValueError, ClientError), match=r"do not fit outputs of shape"):
            ex.losses(flat, x, torch.zeros(n, b, 3, dtype=F64))  # 3 targets, 2 outputs
    for ex in (BatchedExecutor(model, layout), LoopExecutor(model, layout)):
        with pytest.raises(TypeError, match="integer class labels, got torch.float64"):
            ex.losses(flat, x, y)
    with pytest.raises(ValueError, match=r"objective must be one of \['cross_entropy', "
                                         r"'squared_error'\], got 'l2'"):
        BatchedExecutor(model, layout, objective="l2")
    with pytest.raises(TypeError, match="objective must be an Objective"):
        make_executor("batched", model, layout, torch.device("cpu"), None, 3)


def test_the_objective_is_found_and_compared():
    model, layout = _linear(3, 1, bias=False)
    assert objective_of(make_executor("auto", model, layout, torch.device("cpu"), None,
                                      "squared_error")) == SquaredError()
    assert objective_of(LoopExecutor(model, layout)) == CrossEntropy()
    assert objective_of(NS()) is CROSS_ENTROPY  # an executor of one's own, without one
    assert check_objective(SQUARED_ERROR) is SQUARED_ERROR
    assert CROSS_ENTROPY != SQUARED_ERROR and len({CrossEntropy(), CROSS_ENTROPY}) == 1


# ------------------------------------------------------------------ losses outside the step
def test_scoring_and_peer_losses_use_the_executors_objective():
    """Services' peer losses (:func:`batch_losses`), the padded evaluation sums
    (:func:`score_chunks`) and the shared-sample sums (:func:`shared_sums`) with the squared
    error: each the direct computation, float64; no right predictions (NaN)."""
    n, b, d, k = 4, 6, 3, 2
    x, y = _problem(n, b, d, k, seed=11)
    model, layout = _linear(d, k, bias=True)
    ex = BatchedExecutor(model, layout, objective="squared_error")
    flat = torch.randn(n, layout.num_params, generator=torch.Generator().manual_seed(12),
                       dtype=F64)
    W, c = flat[:, :d * k].view(n, k, d), flat[:, d * k:]

    def direct(i, xs, ys):  # client i's model on samples xs [s, d], targets ys [s, k]
        return 0.5 * ((xs @ W[i].T + c[i] - ys) ** 2).sum(-1)

    idx = torch.tensor([[1, 0], [2, 2], [3, 1], [0, 3]])
    got = batch_losses(ex, flat, x, y, idx)
    want = torch.tensor([[direct(i, x[j], y[j]).mean().item() for j in row]
                         for i, row in enumerate(idx.tolist())], dtype=F64)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)

    mask = torch.ones(n, b, dtype=torch.bool)
    mask[0, 4:] = False  # client 0 holds 4 samples
    correct, loss, count = score_chunks(ex, flat, [(x, y, mask)], n, shared=False)
    want = torch.stack([direct(i, x[i], y[i])[mask[i]].sum() for i in range(n)])
    torch.testing.assert_close(loss, want, rtol=1e-12, atol=1e-12)
    assert count.tolist() == [4.0, 6.0, 6.0, 6.0] and correct.isnan().all()

    sums = shared_sums(ex, flat, x[0], y[0])
    want = torch.stack([direct(i, x[0], y[0]).sum() for i in range(n)])
    torch.testing.assert_close(sums[:, 1], want, rtol=1e-12, atol=1e-12)
    assert sums[:, 2].tolist() == [float(b)] * n and sums[:, 0].isnan().all()


def test_the_cross_entropy_sums_are_unchanged():
    """The classification sums read through the objective: ``shared_sums``' fused pass and
    ``score_chunks``' agree as before (same bits on the same CPU are what the certified
    snapshot values check; here: to float32 rounding), and the per-class sums refuse a
    regression objective."""
    data = tf.data.federate("digits", "iid", 4, seed=0, val=0.2)
    model = tf.models.build_model("logistic", data.input_shape, 10, seed=0)
    layout = ParamLayout.from_model(model)
    ex = BatchedExecutor(model, layout)
    flat = torch.randn(4, layout.num_params, generator=torch.Generator().manual_seed(0))
    xg, yg = data.global_test
    fused = shared_sums(ex, flat, xg, yg)
    plain = torch.stack(score_chunks(ex, flat, [(xg, yg, None)], 4, shared=True), dim=1)
    assert torch.equal(fused[:, [0, 2]], plain[:, [0, 2]])
    np.testing.assert_allclose(fused[:, 1].numpy(), plain[:, 1].numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="per-class sums .* need class labels"):
        class_sums(BatchedExecutor(model, layout, objective="squared_error"), flat, data,
                   "test")
