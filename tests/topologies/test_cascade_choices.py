"""The null-cascade graph's two choices the paper leaves open (issue 59, item 4): among the
fewest factors, the fewest messages; on a tie of its largest weights, the first."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

import topofl as tf

C = importlib.import_module("topofl.topologies.exponential.cascade")


def _factorizations(m: int, b: int, least: int = 2) -> list[tuple[int, ...]]:
    """Every multiset of factors in [least, b] with product m (slow, written out)."""
    if m == 1:
        return [()]
    out = []
    for f in range(least, min(b, m) + 1):
        if m % f == 0:
            out += [(f, *rest) for rest in _factorizations(m // f, b, f)]
    return out


@pytest.mark.parametrize("k", range(2, 8))
def test_the_packing_is_the_fewest_factors_then_the_fewest_messages(k: int) -> None:
    changed = 0
    for n in range(2, 200):
        small = math.prod(p for p in C._prime_factors(n) if p <= k + 1)
        got = C._fewest_messages(small, k + 1)
        every = _factorizations(small, k + 1)
        best = min((len(f), sum(f)) for f in every)
        assert got is not None and math.prod(got) == small
        assert (len(got), sum(got)) == best, (n, k, got)
        changed += len({tuple(sorted(f)) for f in every if len(f) == best[0]}) > 1
    assert changed >= 1 if k >= 5 else True


def test_twelve_at_k5_sends_one_message_fewer_and_still_averages_exactly() -> None:
    tv = tf.topologies.null_cascade(12, 5)
    assert [f.factor for f in C.null_cascade_schedule(12, 5)] == [4, 3]
    sent = sum(int((tv.at(t).W.toarray() > 0).sum(axis=1).max()) - 1 for t in range(tv.period))
    assert sent == 5
    assert tf.spectral.finite_time_consensus(tv, tv.period) == tv.period
    assert tf.spectral.period_consensus_error(tv) <= 1e-12


@pytest.mark.parametrize(("n", "k"), [(79, 6), (127, 6), (149, 7), (223, 6), (241, 7)])
def test_the_first_of_two_largest_weights_sits_on_the_node(n: int, k: int) -> None:
    """Cases where rounding made the mirrored largest weights differ by an ulp."""
    for f in C.null_cascade_schedule(n, k):
        w = np.array(f.weights)
        first = int(np.flatnonzero(np.isclose(w, w.max(), rtol=1e-12, atol=0))[0])
        assert f.offsets[first] == 0, (n, k, f.weights, f.offsets)
    tv = tf.topologies.null_cascade(n, k)
    assert tf.spectral.period_consensus_error(tv) <= 1e-9
