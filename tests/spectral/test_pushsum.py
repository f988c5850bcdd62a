"""topofl.spectral.pushsum: the push-sum bounds from their formulas, the measured constants
from explicit products.
"""

from __future__ import annotations

import json
import math

import networkx as nx
import numpy as np
import pytest

import topofl as tf
from tests.spectral._graphs import two_halves
from topofl.exceptions import NotConnectedError
from topofl.spectral import (
    mixing_product,
    pushsum_constants,
    spectral_gap,
)
from topofl.topologies import (
    one_peer_exponential,
    random_directed,
    ring,
)


# ============================================================================ push-sum constants
def test_pushsum_constants_formulas() -> None:
    tv = random_directed(12, 2, seed=4, mode="push")
    c = pushsum_constants(tv, horizon=20)
    a, D, B = c.a, c.diameter, c.B
    assert a == pytest.approx(1 / 3)
    assert c.q == pytest.approx((1 - a ** (D * B)) ** (1 / (D * B + 1)), rel=1e-14)
    assert c.one_minus_q == pytest.approx(1 - c.q, rel=1e-6)
    assert c.C == pytest.approx(2 * (1 + a ** (-D * B)) / (1 - a ** (D * B)), rel=1e-12)
    assert c.log10_C == pytest.approx(math.log10(c.C))
    # Delta: the largest diameter of the union of B consecutive rounds (networkx reference)
    ref = 0
    for s in range(20 - B + 1):
        U = nx.DiGraph()
        for t in range(s, s + B):
            U.add_edges_from(tv.at(t).graph.edges())
        ref = max(ref, nx.diameter(U))
    assert D == ref
    # delta: the smallest row sum of W(t)...W(0) (explicit products)
    sums = [mixing_product(tv, 0, t + 1).sum(axis=1).min() for t in range(20)]
    assert c.delta == pytest.approx(min(sums), rel=1e-12)
    assert 0 < c.delta < 1
    json.dumps(c.as_dict(), allow_nan=False)


def test_pushsum_measured_envelope_holds_and_is_far_below_the_bound() -> None:
    tv = random_directed(30, 3, seed=0, mode="push")
    c = pushsum_constants(tv, horizon=40)
    D = np.asarray(c.spread)
    for m in np.flatnonzero(D > 1e-12) + 1:
        assert D[m - 1] <= 2 * c.measured_bound(int(m - 1)) * (1 + 1e-9)
        assert D[m - 1] <= 2 * c.bound(int(m - 1))
    assert 0 < c.q_measured < 1 and c.q_measured < c.q
    assert c.C_measured < c.C
    # the spread is the largest column difference of the products (explicit reference, s = 0)
    for m in (1, 3, 7):
        P = mixing_product(tv, 0, m)
        assert float(np.max(P.max(axis=1) - P.min(axis=1))) <= D[m - 1] + 1e-15


def test_pushsum_measured_rate_of_a_static_graph_is_its_second_eigenvalue() -> None:
    c = pushsum_constants(ring(16), horizon=300)
    assert c.q_measured == pytest.approx(1 - spectral_gap(ring(16)), abs=1e-6)
    assert c.B == 1 and c.diameter == 8 and c.delta == pytest.approx(1.0)


def test_pushsum_row_stochastic_and_doubly() -> None:
    c = pushsum_constants(random_directed(10, 3, seed=1), horizon=10)
    assert c.kind == "row" and c.delta == pytest.approx(1.0)
    c = pushsum_constants(one_peer_exponential(8), horizon=6)
    assert c.kind == "column" and c.B == 3
    assert c.spread[2] < 1e-15  # exact after 3 rounds


def test_pushsum_errors() -> None:
    a, b = two_halves()
    with pytest.raises(NotConnectedError, match="not B-bounded strongly connected"):
        pushsum_constants(tf.TimeVarying.cycle([a, a]), horizon=6)
    with pytest.raises(NotConnectedError, match="smallest window that works is B=2"):
        pushsum_constants(tf.TimeVarying.cycle([a, b]), horizon=6, B=1)
    with pytest.raises(ValueError, match="positive self-weight"):
        pushsum_constants(ring(6).reweight("metropolis_hastings"), horizon=4)
    with pytest.raises(ValueError, match="row-stochastic"):
        pushsum_constants(tf.Topology.from_matrix([[0.5, 0.2], [0.2, 0.5]]), horizon=3)
    with pytest.raises(ValueError, match="n >= 2"):
        pushsum_constants(tf.Topology.from_matrix([[1.0]]), horizon=3)
    with pytest.raises(ValueError, match="horizon must be >= 1"):
        pushsum_constants(ring(4), horizon=0)
    with pytest.raises(TypeError):
        pushsum_constants(ring(4), 5)  # type: ignore[misc]


def test_pushsum_bound_does_not_overflow() -> None:
    c = pushsum_constants(ring(1400), horizon=3)  # a^(Delta B) = 3^-700 underflows
    assert c.C == math.inf and math.isfinite(c.log10_C) and c.log10_C > 300
    assert c.q == 1.0 and c.one_minus_q == 0.0
    assert c.as_dict()["C"] is None
