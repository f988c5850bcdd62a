"""The least-squares problem of the reference round driver (topofl.engine.least_squares):
its gradients are autograd's of its costs, its minimiser zeroes the summed gradient and is the
stacked least squares where the clients' sample counts are equal, and the methods that reach
the exact optimum reach it on it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.engine.least_squares import LeastSquares

D = torch.float64


def _problem(n: int, d: int, sizes: list[int], seed: int) -> LeastSquares:
    g = torch.Generator().manual_seed(seed)
    A = [torch.randn(m, d, generator=g, dtype=D) for m in sizes[:n]]
    b = [torch.randn(m, generator=g, dtype=D) for m in sizes[:n]]
    return LeastSquares.of(A, b)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 5), d=st.integers(1, 4),
       sizes=st.lists(st.integers(1, 7), min_size=5, max_size=5), seed=st.integers(0, 999))
def test_gradients_are_autograds_of_the_costs(n: int, d: int, sizes: list[int],
                                              seed: int) -> None:
    ls = _problem(n, d, sizes, seed)
    z = torch.randn(n, d, generator=torch.Generator().manual_seed(seed + 1), dtype=D)
    z.requires_grad_(True)
    (auto,) = torch.autograd.grad(ls.losses(z).sum(), z)
    torch.testing.assert_close(ls.grad(z.detach()), auto, rtol=1e-12, atol=1e-12)
    # the costs, one client at a time from the formula
    for i in range(n):
        r = ls.A[i] @ z[i].detach() - ls.b[i]
        assert float(ls.losses(z.detach())[i]) == pytest.approx(
            float(r @ r) / (2 * sizes[i]), rel=1e-12)
    rows = torch.arange(n - 1, -1, -1)  # any order of clients, one row each
    torch.testing.assert_close(ls.losses(z.detach()[rows], rows), ls.losses(z.detach())[rows])


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 5), d=st.integers(1, 4),
       sizes=st.lists(st.integers(1, 7), min_size=5, max_size=5), seed=st.integers(0, 999),
       weighted=st.booleans())
def test_the_minimiser_zeroes_the_summed_gradient(n: int, d: int, sizes: list[int],
                                                  seed: int, weighted: bool) -> None:
    ls = _problem(n, d, sizes, seed)
    w = torch.rand(n, generator=torch.Generator().manual_seed(seed), dtype=D) if weighted \
        else torch.ones(n, dtype=D)
    x = ls.minimiser(w if weighted else None)
    g = (w.unsqueeze(1) * ls.grad(x.expand(n, d))).sum(0)
    H = sum(w[i] * a.T @ a / a.shape[0] for i, a in enumerate(ls.A))
    # the normal equations' residual, which is 0 also where H is singular (least norm)
    assert float(g.abs().max()) <= 1e-9 * max(1.0, float(torch.linalg.matrix_norm(H)))


def test_equal_sample_counts_give_the_stacked_least_squares() -> None:
    ls = _problem(4, 3, [6, 6, 6, 6, 6], 3)
    stacked = np.linalg.lstsq(torch.cat(ls.A).numpy(), torch.cat(ls.b).numpy(), rcond=None)[0]
    np.testing.assert_allclose(ls.minimiser().numpy(), stacked, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("algorithm", ["dsgt", "extra", "exact_diffusion"])
def test_exact_methods_reach_its_optimum_where_dsgd_does_not(algorithm: str) -> None:
    ls = _problem(5, 2, [3, 5, 8, 4, 6], 7)
    ring = tf.topologies.ring(5)
    x0 = torch.zeros(5, 2, dtype=D)
    exact = tf.engine.run_rounds(tf.algorithms.get_algorithm(algorithm, lr=0.05), x0, ring,
                                 ls.grad, rounds=3000).evaluated()
    assert float((exact - ls.minimiser()).abs().max()) < 1e-8
    dsgd = tf.engine.run_rounds(tf.algorithms.dsgd(lr=0.05), x0, ring, ls.grad,
                                rounds=3000).evaluated()
    assert float((dsgd - ls.minimiser()).abs().max()) > 1e-4  # its heterogeneity bias


def test_services_give_the_sample_counts_and_the_costs() -> None:
    ls = _problem(3, 2, [2, 4, 6, 1, 1], 0)
    env = ls.services()
    assert env.n == 3 and env.train_sizes.tolist() == [2, 4, 6]
    x = torch.randn(3, 2, dtype=D)
    assert torch.equal(env.losses(x, "train"), ls.losses(x))
    assert torch.equal(env.losses(x[1:], "train", rows=torch.tensor([1, 2])), ls.losses(x)[1:])
    # one local step a round is gradient descent on the server's weighted sum: weighed by
    # the sample counts (the services' train_sizes) it reaches that weighted optimum
    for weighting, w in (("data_size", ls.sizes.to(D)), ("uniform", None)):
        fedavg = tf.algorithms.fedavg(lr=0.1, weighting=weighting)
        run = tf.engine.run_rounds(fedavg, torch.zeros(3, 2, dtype=D), None, ls.grad,
                                   rounds=2000, env=env)
        assert float((run.evaluated() - ls.minimiser(w)).abs().max()) < 1e-8, weighting
    assert float((ls.minimiser(ls.sizes.to(D)) - ls.minimiser()).abs().max()) > 1e-3


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: LeastSquares.of([], []), ValueError, "at least one client"),
    (lambda: LeastSquares.of([torch.ones(2, 1)], []), ValueError, "the same clients"),
    (lambda: LeastSquares.of([torch.ones(0, 1)], [torch.ones(0)]), ValueError, "m_i >= 1"),
    (lambda: LeastSquares.of([torch.ones(2, 1), torch.ones(2, 2)], [torch.ones(2)] * 2),
     ValueError, r"A\[1\] must be \[m_i, d\]"),
    (lambda: LeastSquares.of([torch.ones(2, 1)], [torch.ones(3)]), ValueError,
     r"b\[0\] must be \[m_i\] = \[2\]"),
    (lambda: LeastSquares.of([torch.ones(2, 1, dtype=torch.int64)],
                             [torch.ones(2, dtype=torch.int64)]), TypeError, "floating-point"),
    (lambda: LeastSquares.of([torch.ones(2, 1)], [torch.ones(2, dtype=D)]), TypeError,
     "share one floating-point dtype"),
    (lambda: LeastSquares.of("A", "b"), TypeError, "sequence of per-client tensors"),
    (lambda: LeastSquares.of([np.ones((2, 1))], [np.ones(2)]), TypeError,
     r"A\[0\] must be a tensor"),
    (lambda: _problem(2, 2, [2] * 5, 0).grad(torch.zeros(3, 2, dtype=D)), ValueError,
     r"must be \[2, 2\]"),
    (lambda: _problem(2, 2, [2] * 5, 0).minimiser([1.0, -1.0]), ValueError,
     "finite non-negative"),
    (lambda: _problem(2, 2, [2] * 5, 0).services().losses(torch.zeros(2, 2, dtype=D), "val"),
     ValueError, "one split, 'train'"),
])
def test_bad_input_is_refused_in_one_line(call: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match) as info:
        call()
    assert "\n" not in str(info.value)
