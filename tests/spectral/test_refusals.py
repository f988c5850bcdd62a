"""topofl.spectral refuses matrices whose spectral quantities mean nothing (issue 13).

A gap of the zero matrix or of ``2 W``, a neighbourhood skew through a matrix whose rows do not
sum to 1: each is a ValueError naming the row/column sum, or ``None`` in ``summary``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.spectral import neighborhood_skew, spectral_gap, summary


def _random_nonneg(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.random((n, n)) * (rng.random((n, n)) < 0.6)


def test_zero_matrix_has_no_gap() -> None:
    with pytest.raises(ValueError, match="row 0 sums to 0 and column 0 sums to 0"):
        spectral_gap(np.zeros((3, 3)))


@pytest.mark.parametrize("kind", ["modulus", "lambda2", "norm"])
def test_scaled_ring_has_no_gap(kind: str) -> None:
    W = 2 * tf.topologies.ring(6).to_dense()
    with pytest.raises(ValueError, match=r"spectral_gap needs a stochastic .* sums to 2"):
        spectral_gap(W, kind)


def test_row_and_column_stochastic_are_accepted() -> None:
    row = np.array([[0.5, 0.5], [0.2, 0.8]])
    # Eigenvalues 1 and 0.3: the gap is 0.7 for both orientations.
    assert spectral_gap(row) == pytest.approx(0.7)
    assert spectral_gap(row.T) == pytest.approx(0.7)
    # float32 sums are off by ~1e-7 and still accepted.
    W32 = tf.topologies.ring(8).to_dense().astype(np.float32)
    assert spectral_gap(W32) == pytest.approx(spectral_gap(tf.topologies.ring(8)), abs=1e-6)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 12), seed=st.integers(0, 2**31 - 1), scale=st.floats(0.0, 3.0))
def test_random_non_stochastic_refused(n: int, seed: int, scale: float) -> None:
    A = _random_nonneg(n, seed) * scale
    rows, cols = A.sum(axis=1), A.sum(axis=0)
    stochastic = np.all(np.abs(rows - 1) <= 1e-6) or np.all(np.abs(cols - 1) <= 1e-6)
    if stochastic:
        assert isinstance(spectral_gap(A), float)
        return
    with pytest.raises(ValueError) as info:
        spectral_gap(A)
    m = re.search(r"row (\d+) sums to (\S+) and column (\d+) sums to (\S+) ", str(info.value))
    assert m is not None, str(info.value)
    i, j = int(m.group(1)), int(m.group(3))
    # The named row/column is the one furthest from 1, with its sum as printed.
    assert abs(rows[i] - 1) == pytest.approx(np.max(np.abs(rows - 1)))
    assert abs(cols[j] - 1) == pytest.approx(np.max(np.abs(cols - 1)))
    assert float(m.group(2)) == pytest.approx(rows[i], rel=1e-5, abs=1e-12)
    assert float(m.group(4)) == pytest.approx(cols[j], rel=1e-5, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 10), c=st.integers(1, 5), seed=st.integers(0, 2**31 - 1))
def test_skew_of_row_stochastic_is_at_most_two(n: int, c: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    A = _random_nonneg(n, seed) + np.eye(n)
    W = A / A.sum(axis=1, keepdims=True)
    P = rng.dirichlet(np.full(c, 0.1), size=n)
    P = P / P.sum(axis=1, keepdims=True)
    v = neighborhood_skew(W, P)
    assert 0.0 <= v <= 2.0 + 1e-12
    # The slow reference: the definition, one node at a time.
    ref = np.mean([np.abs(W[i] @ P - P.mean(axis=0)).sum() for i in range(n)])
    assert v == pytest.approx(ref, abs=1e-12)


def test_skew_refuses_non_row_stochastic() -> None:
    # 2 W made neighborhood_skew return 3.0, above its maximum 2.
    p = np.eye(2)[[0, 1, 0, 1, 0, 1]]
    with pytest.raises(ValueError, match="topology must be row-stochastic: row 0 sums to 2"):
        neighborhood_skew(2 * tf.topologies.ring(6).to_dense(), p)
    # A column-stochastic (push-sum) matrix that is not row-stochastic is refused too.
    t = tf.topologies.random_directed_push(6, 2, seed=0).at(0)
    assert t.is_column_stochastic and not t.is_row_stochastic
    with pytest.raises(ValueError, match="row-stochastic"):
        neighborhood_skew(t, np.full((6, 2), 0.5))


def test_summary_of_a_non_stochastic_graph_has_no_gap() -> None:
    s = summary(tf.Topology.from_matrix(np.zeros((4, 4))))
    assert s["stochastic"] == "none"
    for key in ("spectral_gap", "spectral_gap_lambda2", "spectral_gap_norm",
                "rounds_to_1e-6_bound", "consensus_rate", "neighborhood_skew"):
        assert s[key] is None, key
    assert s["strongly_connected"] is False
    s = summary(
        tf.Topology.from_matrix(2 * tf.topologies.ring(6).to_dense()),
        label_distributions=np.eye(2)[[0, 1, 0, 1, 0, 1]],
    )
    assert s["spectral_gap"] is None and s["neighborhood_skew"] is None
    # The identity (edgeless graph with the self-weights of every scheme) is stochastic:
    # it has gap 0, not 1.
    s = summary(tf.Topology.from_networkx(__import__("networkx").empty_graph(4)))
    assert s["stochastic"] == "doubly" and s["spectral_gap"] == 0.0
