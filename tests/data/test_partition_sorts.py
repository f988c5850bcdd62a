"""The linear-time sorts of the partitions: the same permutations as NumPy's stable sorts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl.data.partition._apportion as ap
from topofl.data.partition._apportion import grouped_lexsort, sort_within_groups, stable_order


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 2**40), st.integers(0, 300), st.integers(0, 2**32 - 1))
def test_stable_order_is_numpys_stable_argsort(bound: int, size: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    # few distinct values (many ties) or spread over the whole range
    values = rng.integers(0, min(bound, int(rng.integers(1, 6))) if seed % 2 else bound, size)
    got = stable_order(values, bound)
    assert np.array_equal(got, np.argsort(values, kind="stable"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=0, max_size=40), st.integers(1, 6),
       st.integers(0, 2**32 - 1), st.booleans())
def test_grouped_lexsort_is_the_global_lexsort(sizes: list[int], classes: int, seed: int,
                                              ties: bool) -> None:
    rng = np.random.default_rng(seed)
    sz = np.array(sizes, dtype=np.int64)
    total = int(sz.sum())
    label = rng.integers(0, classes, total)
    # with ties: a few distinct noise values, so that stability decides
    noise = rng.integers(0, 3, total) / 4.0 if ties else rng.random(total)
    owner = np.repeat(np.arange(sz.size), sz)
    got = grouped_lexsort((noise, label), sz, (2.0, classes))
    assert np.array_equal(got, np.lexsort((noise, label, owner)) if total else [])


def test_grouped_lexsort_falls_back_when_one_client_holds_most() -> None:
    sizes = np.array([1000, 1, 1, 1])  # padding would be 4 x 1000 for 1003 elements
    rng = np.random.default_rng(0)
    noise, label = rng.random(1003), rng.integers(0, 10, 1003)
    owner = np.repeat(np.arange(4), sizes)
    assert np.array_equal(grouped_lexsort((noise, label), sizes, (2.0, 10)),
                          np.lexsort((noise, label, owner)))


def _sorted_top_k(keys: np.ndarray, k: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """The reference: rank every row by a stable lexsort, keep the first ``k[g]``."""
    order = np.lexsort((draws, -keys), axis=-1)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(keys.shape[1]), keys.shape),
                      axis=-1)
    return rank < k[:, None]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 5), st.integers(1, 60), st.integers(0, 2**32 - 1), st.booleans(),
       st.sampled_from([1, 10**9]))
def test_top_k_selection_is_the_sorted_top_k(rows: int, width: int, seed: int, ties: bool,
                                             select_from: int) -> None:
    # both paths (selection from width 1, or the sort always) against the reference sort, with
    # few distinct keys (ties the draws decide), infinities and negative zeros
    rng = np.random.default_rng(seed)
    keys = (rng.integers(-1, 3, (rows, width)) / 2.0 if ties
            else rng.random((rows, width)))
    keys[rng.random((rows, width)) < 0.1] = -np.inf
    keys[keys == 0] = -0.0 if seed % 2 else 0.0
    k = rng.integers(-1, width + 2, rows)
    old = ap.TOP_K_SELECT_WIDTH
    ap.TOP_K_SELECT_WIDTH = select_from
    try:
        got = ap._top_k_per_row(keys, k, np.random.default_rng(seed + 1))
    finally:
        ap.TOP_K_SELECT_WIDTH = old
    draws = np.random.default_rng(seed + 1).random((rows, width))
    assert got.shape == (rows, width)
    assert np.array_equal(got, _sorted_top_k(keys, k, draws))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.integers(0, 42), st.integers(0, 2**32 - 1))
def test_top_k_row_breaks_equal_draws_by_index(width: int, k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    key = rng.integers(0, 3, width).astype(float)
    draw = rng.integers(0, 3, width) / 4.0  # equal draws: the index decides, as a stable sort
    got = ap._top_k_row(key, k, draw)
    want = _sorted_top_k(key[None], np.array([k]), draw[None])[0]
    assert np.array_equal(got, want)
    assert got.sum() == min(max(k, 0), width)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=0, max_size=40), st.integers(0, 2**32 - 1))
def test_sort_within_groups_is_a_sort_of_each_group(sizes: list[int], seed: int) -> None:
    # padded rows (even sizes) or the global lexsort (one large group among small ones)
    rng = np.random.default_rng(seed)
    sz = np.array(sizes + ([60] if seed % 3 == 0 else []), dtype=np.int64)
    total = int(sz.sum())
    values = rng.permutation(10 * total + 1)[:total]  # distinct sample indices
    got = sort_within_groups(values, sz)
    starts = np.concatenate(([0], np.cumsum(sz)))
    want = np.concatenate([np.sort(values[a:b]) for a, b in zip(starts[:-1], starts[1:])]
                          + [np.zeros(0, np.int64)])
    assert np.array_equal(got, want)


def test_sort_within_groups_refuses_sizes_that_do_not_add_up() -> None:
    with pytest.raises(ValueError, match="sizes sum to 3, but there are 2 values"):
        sort_within_groups(np.array([1, 0]), np.array([1, 2]))
