"""The linear-time sorts of the partitions: the same permutations as NumPy's stable sorts."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from topofl.data.partition._apportion import grouped_lexsort, stable_order


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
