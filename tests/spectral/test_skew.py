"""topofl.spectral.skew: neighbourhood skew against an explicit loop.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topofl.spectral import (
    neighborhood_skew,
)
from topofl.topologies import (
    complete,
    random_directed,
    ring,
)


# ============================================================================ skew
def skew_reference(W: np.ndarray, P: np.ndarray) -> float:
    n = W.shape[0]
    glob = P.mean(axis=0)
    total = 0.0
    for i in range(n):
        mixed = sum(W[i, j] * P[j] for j in range(n))
        total += float(np.abs(mixed - glob).sum())
    return total / n


@settings(max_examples=20, deadline=None)
@given(n=st.integers(2, 20), c=st.integers(1, 6), seed=st.integers(0, 10**6))
def test_neighborhood_skew_matches_reference(n: int, c: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(c) * 0.3, size=n)
    P_copy = P.copy()
    t = random_directed(n, min(2, n - 1), seed=seed).at(0)
    assert neighborhood_skew(t, P) == pytest.approx(skew_reference(t.to_dense(), P), abs=1e-12)
    np.testing.assert_array_equal(P, P_copy)
    assert neighborhood_skew(complete(n), P) == pytest.approx(0.0, abs=1e-12)


def test_neighborhood_skew_errors() -> None:
    with pytest.raises(ValueError, match=r"shape \(n, c\) = \(4, c\)"):
        neighborhood_skew(ring(4), np.ones((3, 2)) / 2)
    with pytest.raises(ValueError, match="row 0 sums to 2"):
        neighborhood_skew(ring(4), np.ones((4, 2)))
    with pytest.raises(ValueError, match="non-negative"):
        neighborhood_skew(ring(2), [[1.5, -0.5], [0.5, 0.5]])
