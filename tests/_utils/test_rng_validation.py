"""Seed handling and the validation helpers."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl._utils.rng import as_generator, as_seed_sequence, generator_at, torch_generator_at
from topofl._utils.validation import (
    arc_pattern,
    check_choice,
    check_int,
    check_matrix,
    check_real,
    check_stochastic,
    stochasticity,
)


def test_seed_types() -> None:
    assert as_generator(np.int64(3)).integers(1000) == as_generator(3).integers(1000)
    g = np.random.default_rng(0)
    assert as_generator(g) is g
    for bad in (None, 1.5, "3", True):
        with pytest.raises(TypeError, match="seed must be"):
            as_generator(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-negative"):
        as_generator(-1)


def test_generator_at_indexed_not_consumed() -> None:
    a = [generator_at(5, t).random() for t in range(5)]
    b = [generator_at(5, t).random() for t in reversed(range(5))][::-1]
    assert a == b
    assert len(set(a)) == 5
    assert generator_at(5, 1, 2).random() != generator_at(5, 2, 1).random()
    assert generator_at(5, 1).random() != generator_at(6, 1).random()
    with pytest.raises(ValueError, match="stream index"):
        generator_at(5, -1)


def test_generator_seed_root_is_fixed_once() -> None:
    g = np.random.default_rng(1)
    ss = as_seed_sequence(g)
    x = generator_at(ss, 3).random()
    g.random(100)  # using g afterwards does not change the derived streams
    assert generator_at(ss, 3).random() == x


def test_torch_generator_at() -> None:
    import torch

    g1, g2 = torch_generator_at(1, 2, 3), torch_generator_at(1, 2, 4)
    assert not torch.equal(torch.rand(4, generator=g1), torch.rand(4, generator=g2))


def test_check_int_and_real() -> None:
    assert check_int(np.int32(4), "n") == 4
    with pytest.raises(ValueError, match=r"n must be in \[1, 3\], got 4"):
        check_int(4, "n", low=1, high=3)
    with pytest.raises(ValueError, match="n must be <= 3"):
        check_int(4, "n", high=3)
    with pytest.raises(TypeError, match="n must be an int, got float"):
        check_int(4.0, "n")
    assert check_real(1, "p") == 1.0
    with pytest.raises(ValueError, match=r"alpha must be in \(0, inf\]"):
        check_real(0, "alpha", low=0, low_open=True)
    with pytest.raises(ValueError, match="finite"):
        check_real(float("inf"), "alpha", low=0)
    with pytest.raises(TypeError, match="real number"):
        check_real("1", "p")
    with pytest.raises(TypeError, match="must be a str"):
        check_choice(3, "inter", ["a"])


def test_check_matrix_canonical() -> None:
    coo = sp.coo_array(([0.5, 0.5, 0.0, 1.0], ([0, 0, 1, 1], [0, 1, 0, 1])), shape=(2, 2))
    M = check_matrix(coo)
    assert isinstance(M, sp.csr_array) and M.dtype == np.float64 and M.nnz == 3
    assert M.has_sorted_indices
    with pytest.raises(ValueError, match=r"row 1 sums to 1.5"):
        check_stochastic(check_matrix([[1.0, 0.0], [0.5, 1.0]]), "doubly")
    with pytest.raises(ValueError, match="kind must be one of"):
        check_stochastic(M, "left")  # type: ignore[arg-type]


def _stochasticity_reference(W: np.ndarray, atol: float) -> str:
    rows = all(abs(sum(W[i, j] for j in range(W.shape[1])) - 1.0) <= atol for i in range(len(W)))
    cols = all(abs(sum(W[i, j] for i in range(len(W))) - 1.0) <= atol for j in range(W.shape[1]))
    return "doubly" if rows and cols else "row" if rows else "column" if cols else "none"


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 12), seed=st.integers(0, 10**6), kind=st.sampled_from(
    ["row", "column", "doubly", "none"]))
def test_stochasticity_and_pattern_match_slow_references(n: int, seed: int, kind: str) -> None:
    rng = np.random.default_rng(seed)
    W = rng.random((n, n)) * (rng.random((n, n)) < 0.5)
    np.fill_diagonal(W, 1.0)
    if kind in ("row", "doubly"):
        W = W / W.sum(axis=1, keepdims=True)
    if kind == "column":
        W = W / W.sum(axis=0, keepdims=True)
    if kind == "doubly":  # Sinkhorn until both sums hold
        for _ in range(2000):
            W = W / W.sum(axis=0, keepdims=True)
            W = W / W.sum(axis=1, keepdims=True)
    M = check_matrix(W)
    assert stochasticity(M) == _stochasticity_reference(W, 1e-10)
    t = tf.Topology.from_matrix(M)
    assert t.stochasticity == stochasticity(M)
    assert t.is_row_stochastic == (t.stochasticity in ("row", "doubly"))
    assert t.is_column_stochastic == (t.stochasticity in ("column", "doubly"))
    expected = [[1.0 if i != j and W[i, j] > 0 else 0.0 for j in range(n)] for i in range(n)]
    np.testing.assert_array_equal(arc_pattern(M).toarray(), expected)
    with_diag = np.array(expected) + np.eye(n)
    np.testing.assert_array_equal(arc_pattern(M, diagonal=True).toarray(), with_diag)
    assert arc_pattern(M).has_canonical_format
    np.testing.assert_array_equal(M.toarray(), W)  # not modified
