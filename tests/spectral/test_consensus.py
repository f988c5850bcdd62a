"""topofl.spectral.consensus: measured rates against the spectrum, disagreement curves,
finite-time consensus.
"""

from __future__ import annotations

import numpy as np
import pytest

import topofl as tf
from topofl.spectral import (
    consensus_rate,
    disagreement,
    finite_time_consensus,
    spectral_gap,
)
from topofl.topologies import (
    complete,
    one_peer_exponential,
    random_directed,
    random_regular,
    ring,
    torus,
)


# ============================================================================ consensus
def test_consensus_rate_static_matches_spectrum() -> None:
    for t in (ring(16), torus(4, 5), random_regular(30, 3, seed=0)):
        assert consensus_rate(t, 300) == pytest.approx(1 - spectral_gap(t), abs=2e-3)
    assert consensus_rate(complete(8), 10) == 0.0


def test_disagreement_curve() -> None:
    d = disagreement(ring(10), 30)
    assert d.shape == (31,) and d[0] == 1.0
    assert np.all(np.diff(d) <= 1e-15)  # symmetric doubly stochastic: never increases
    # push-sum de-biasing: the ratio reaches the exact average
    d = disagreement(random_directed(20, 2, seed=0, mode="push"), 200)
    assert d[-1] < 1e-10
    # row-stochastic pull: consensus (on a weighted average) is reached too
    assert disagreement(random_directed(20, 2, seed=0), 200)[-1] < 1e-10
    assert np.array_equal(disagreement(ring(10), 5, seed=3), disagreement(ring(10), 5, seed=3))


def test_disagreement_rejects_non_stochastic() -> None:
    with pytest.raises(ValueError, match="neither row- nor column-stochastic"):
        disagreement(tf.Topology.from_matrix([[0.5, 0.2], [0.2, 0.5]]), 3)


def test_finite_time_consensus() -> None:
    assert finite_time_consensus(complete(5), 3) == 1
    assert finite_time_consensus(ring(6), 500) is None  # geometric, never exact
    assert finite_time_consensus(random_regular(12, 10, seed=0), 100) is None
    tv = tf.TimeVarying.cycle([ring(4), ring(4), complete(4)])
    assert finite_time_consensus(tv, 10) == 3
    assert finite_time_consensus(tv, 10, start=2) == 1
    assert finite_time_consensus(random_directed(6, 3, seed=0, mode="push"), 50) is None
    assert finite_time_consensus(random_directed(6, 5, seed=0, mode="push"), 5) == 1  # W = J
    assert finite_time_consensus(tf.Topology.from_matrix([[1.0]]), 3) == 0
    big = one_peer_exponential(128)  # n > 64: tracked on 64 columns, verified in full
    assert finite_time_consensus(big, 10) == 7
    with pytest.raises(ValueError, match="max_rounds must be >= 1"):
        finite_time_consensus(ring(4), 0)
