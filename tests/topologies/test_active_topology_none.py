"""``active_topology(keep="none")``: the arcs touching an inactive client removed, nothing
redistributed (the absent rule ``"lose"``)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.topologies.derived import active_topology


@settings(max_examples=40, deadline=None)
@given(n=st.integers(3, 12), data=st.data())
def test_rows_lose_exactly_the_weight_given_to_absent_neighbours(n: int, data) -> None:  # type: ignore[no-untyped-def]
    on = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    base = tf.topologies.random_regular(n, 2, seed=n) if n % 2 == 0 else tf.topologies.ring(n)
    W = base.to_dense()
    M = active_topology(base, on, keep="none").to_dense()
    # slow obvious reference: copy W, zero every arc touching an inactive client, e_i for them
    ref = W.copy()
    for i in range(n):
        for j in range(n):
            if i != j and not (on[i] and on[j]):
                ref[i, j] = 0.0
        if not on[i]:
            ref[i] = 0.0
            ref[i, i] = 1.0
    np.testing.assert_array_equal(M, ref)
    lost = np.array([W[i, ~on].sum() if on[i] else 0.0 for i in range(n)])
    np.testing.assert_allclose(M.sum(axis=1), 1.0 - lost, atol=1e-15)


def test_unknown_keep_is_refused_naming_the_choices() -> None:
    import pytest

    with pytest.raises(ValueError, match="'doubly', 'row', 'column' or 'none', got 'x'"):
        active_topology(tf.topologies.ring(4), [0, 1], keep="x")
