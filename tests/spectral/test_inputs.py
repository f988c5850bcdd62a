"""topofl.spectral, whole package: bad input, inputs not mutated, Python scalar types.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import topofl as tf
from topofl.spectral import (
    algebraic_connectivity,
    b_connectivity,
    consensus_rate,
    diameter,
    eigenvalues,
    is_strongly_connected,
    spectral_gap,
    summary,
)
from topofl.topologies import (
    random_matching,
    ring,
)


# ============================================================================ input handling
def test_bad_input_errors() -> None:
    with pytest.raises(ValueError, match="square"):
        spectral_gap(np.ones((2, 3)))
    with pytest.raises(ValueError, match="kind must be one of"):
        spectral_gap(ring(4), "bogus")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="method must be one of"):
        spectral_gap(ring(4), method="magic")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got a TimeVarying"):
        spectral_gap(random_matching(4, seed=0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n >= 2"):
        algebraic_connectivity(tf.Topology.from_matrix([[1.0]]))
    with pytest.raises(ValueError, match="rounds must be >= 1"):
        consensus_rate(ring(4), 0)
    with pytest.raises(ValueError, match="horizon must be >= 1"):
        summary(ring(4), horizon=0)


def test_inputs_not_mutated() -> None:
    W = ring(6).to_dense()
    W_copy = W.copy()
    Wsp = sp.csr_array(W)
    for f in (spectral_gap, eigenvalues, diameter, algebraic_connectivity, is_strongly_connected):
        f(W)  # type: ignore[operator]
        f(Wsp)  # type: ignore[operator]
    np.testing.assert_array_equal(W, W_copy)
    np.testing.assert_array_equal(Wsp.toarray(), W_copy)


def test_scalars_are_python_types() -> None:
    t = ring(7)
    assert type(spectral_gap(t)) is float
    assert type(algebraic_connectivity(t)) is float
    assert type(diameter(t)) is int
    assert type(is_strongly_connected(t)) is bool
    assert type(consensus_rate(t, 10)) is float
    assert type(b_connectivity(t, 3)) is int
