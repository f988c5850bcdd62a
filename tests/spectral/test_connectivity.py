"""topofl.spectral.connectivity: diameter and strong connectivity against networkx,
B-connectivity against brute force over every window.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from tests.spectral._graphs import two_halves
from topofl import spectral as S
from topofl.exceptions import NotConnectedError
from topofl.spectral import (
    b_connectivity,
    diameter,
    is_b_connected,
    is_strongly_connected,
)
from topofl.topologies import (
    base_graph,
    exponential,
    one_peer_exponential,
    random_directed,
    random_matching,
    ring,
    torus,
)


# ============================================================================ connectivity
def random_digraph(n: int, p: float, seed: int) -> tf.Topology:
    G = nx.gnp_random_graph(n, p, seed=seed, directed=True)
    return tf.Topology.from_networkx(G, "uniform")


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 40), p=st.floats(0.02, 0.5), seed=st.integers(0, 10**6))
def test_diameter_and_connectivity_match_networkx(n: int, p: float, seed: int) -> None:
    t = random_digraph(n, p, seed)
    strongly = nx.is_strongly_connected(t.graph)
    assert is_strongly_connected(t) == strongly
    if strongly:
        assert diameter(t) == nx.diameter(t.graph)
    else:
        with pytest.raises(NotConnectedError, match="not strongly connected"):
            diameter(t)


def test_diameter_paths_agree() -> None:
    for t in (ring(41), torus(6, 7), exponential(50), random_directed(60, 2, seed=0).at(0)):
        P = S._pattern(t.W, diagonal=False)
        Pd = S._pattern(t.W, diagonal=True)
        if not is_strongly_connected(t):
            continue
        assert S._diameter_bitset(Pd) == S._diameter_bfs(P) == nx.diameter(t.graph)
    assert diameter(ring(2500)) == 1250  # long diameter: one BFS per node


def test_is_strongly_connected_of_sequences() -> None:
    a, b = two_halves()
    tv = tf.TimeVarying.cycle([a, b])
    assert not is_strongly_connected(a) and not is_strongly_connected(b)
    assert is_strongly_connected(tv)  # union over the period
    assert not is_strongly_connected(tv, horizon=1)
    with pytest.raises(ValueError, match="horizon is required"):
        is_strongly_connected(random_matching(6, seed=0))
    with pytest.raises(TypeError, match="horizon"):
        is_strongly_connected(ring(4), horizon=3)


# ============================================================================ B-connectivity
def b_connectivity_reference(tv: tf.TimeVarying, horizon: int) -> int | None:
    graphs = [tv.at(t).graph for t in range(horizon)]
    for B in range(1, horizon + 1):
        ok = True
        for start in range(horizon - B + 1):
            U = nx.DiGraph()
            U.add_nodes_from(range(tv.n))
            for g in graphs[start : start + B]:
                U.add_edges_from(g.edges())
            if not nx.is_strongly_connected(U):
                ok = False
                break
        if ok:
            return B
    return None


def test_b_connectivity_alternating_example_is_two() -> None:
    a, b = two_halves()
    tv = tf.TimeVarying.cycle([a, b])
    assert b_connectivity(tv, 10) == 2
    assert b_connectivity(tv, 1) is None
    assert is_b_connected(tv, 2, 10) and not is_b_connected(tv, 1, 10)
    assert b_connectivity(tf.TimeVarying.cycle([a, a, b]), 12) == 3


def test_b_connectivity_static() -> None:
    assert b_connectivity(ring(6), 5) == 1
    assert b_connectivity(tf.Topology.from_matrix(np.eye(3)), 5) is None


@settings(max_examples=15, deadline=None)
@given(n=st.integers(2, 12), seed=st.integers(0, 10**6), horizon=st.integers(1, 15))
def test_b_connectivity_matches_brute_force(n: int, seed: int, horizon: int) -> None:
    tv = random_directed(n, 1, seed=seed, mode="push")
    assert b_connectivity(tv, horizon) == b_connectivity_reference(tv, horizon)


def test_b_connectivity_of_periodic_sequences() -> None:
    assert b_connectivity(one_peer_exponential(64), 30) == 6
    tv = base_graph(13, 2)
    assert b_connectivity(tv, 3 * tv.period) == b_connectivity_reference(tv, 3 * tv.period)


def test_b_connectivity_bad_input() -> None:
    with pytest.raises(ValueError, match="horizon must be >= 1"):
        b_connectivity(ring(4), 0)
    with pytest.raises(ValueError, match=r"B must be in \[1, 5\]"):
        is_b_connected(ring(4), 6, 5)
