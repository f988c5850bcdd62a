"""Classic graphs: closed forms, identities, sizes and errors."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.topologies import circulant, complete, grid, ring, star, torus


@pytest.mark.parametrize("n", [3, 4, 5, 8, 17, 64])
def test_metropolis_ring_eigenvalues_closed_form(n: int) -> None:
    ev = np.sort(np.linalg.eigvalsh(ring(n).to_dense()))
    expected = np.sort([1 / 3 + (2 / 3) * math.cos(2 * math.pi * k / n) for k in range(n)])
    np.testing.assert_allclose(ev, expected, atol=1e-12)


@pytest.mark.parametrize("n", [3, 8, 31, 100])
def test_metropolis_ring_gap_closed_form(n: int) -> None:
    lam = [1 / 3 + (2 / 3) * math.cos(2 * math.pi * k / n) for k in range(1, n)]
    expected = 1 - max(abs(x) for x in lam)
    assert tf.spectral.spectral_gap(ring(n)) == pytest.approx(expected, abs=1e-12)
    if n >= 3:
        assert tf.spectral.spectral_gap(ring(n), kind="lambda2") == pytest.approx(
            1 - (1 + 2 * math.cos(2 * math.pi / n)) / 3, abs=1e-12
        )


@pytest.mark.parametrize("n", [1, 2, 3, 7, 50])
def test_complete_metropolis_is_exact_average(n: int) -> None:
    W = complete(n).to_dense()
    assert np.array_equal(W, np.full((n, n), 1.0 / n))


def test_small_rings() -> None:
    assert ring(1).num_edges == 0 and ring(1).to_dense().tolist() == [[1.0]]
    assert ring(2).num_edges == 1
    np.testing.assert_allclose(ring(2).to_dense(), [[0.5, 0.5], [0.5, 0.5]])


@settings(max_examples=30, deadline=None)
@given(n=st.integers(3, 40))
def test_circulant_one_is_ring(n: int) -> None:
    a, b = circulant(n, [1]), ring(n)
    assert nx.is_isomorphic(a.graph, b.graph)
    np.testing.assert_array_equal(a.to_dense(), b.to_dense())


def test_circulant_offsets_equivalent_and_not_mutated() -> None:
    offs = [3, 1]
    t = circulant(10, offs)
    assert offs == [3, 1]
    assert t.params["offsets"] == [1, 3]
    np.testing.assert_array_equal(circulant(10, [1, 7]).to_dense(), t.to_dense())
    assert tf.topologies.build("circulant:n=10,offsets=1;3").W.nnz == t.W.nnz


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 9), cols=st.integers(1, 9))
def test_torus_and_grid_edge_counts(rows: int, cols: int) -> None:
    def wrap(k: int) -> int:  # distinct neighbours along a cycle of length k
        return 0 if k == 1 else 1 if k == 2 else 2

    t = torus(rows, cols)
    assert t.n == rows * cols
    expected_deg = wrap(rows) + wrap(cols)
    assert set(t.in_degree.tolist()) == {expected_deg}
    g = grid(rows, cols)
    assert g.num_edges == rows * (cols - 1) + cols * (rows - 1)
    assert nx.is_strongly_connected(t.graph) and nx.is_strongly_connected(g.graph)


def test_torus_is_product_of_cycles() -> None:
    t = torus(4, 5)
    ref = nx.cartesian_product(nx.cycle_graph(4), nx.cycle_graph(5))
    assert nx.is_isomorphic(t.graph.to_undirected(), ref)
    # node numbering is row-major: node r*cols + c
    assert t.graph.has_edge(0, 1) and t.graph.has_edge(0, 5) and t.graph.has_edge(0, 4)
    assert t.graph.has_edge(0, 15)


def test_star() -> None:
    t = star(6)
    assert t.in_degree.tolist() == [5, 1, 1, 1, 1, 1]
    assert t.W[0, 0] == pytest.approx(1 / 6)
    assert star(1).n == 1


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: ring(0), ValueError, "n must be >= 1, got 0"),
        (lambda: ring(2.5), TypeError, "n must be an int"),
        (lambda: ring(True), TypeError, "n must be an int"),
        (lambda: torus(0, 3), ValueError, "rows"),
        (lambda: grid(3, -1), ValueError, "cols"),
        (lambda: complete(-2), ValueError, "n must be >= 1"),
        (lambda: circulant(1, [1]), ValueError, "n must be >= 2"),
        (lambda: circulant(5, []), ValueError, "at least one offset"),
        (lambda: circulant(5, [5]), ValueError, r"offset must be in \[1, 4\], got 5"),
        (lambda: circulant(5, 3), TypeError, "iterable"),
        (lambda: ring(4, weights="foo"), ValueError, "weights must be one of"),
    ],
)
def test_bad_input(call, exc, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(exc, match=match):
        call()


@pytest.mark.parametrize("scheme", sorted(tf.mixing.SCHEMES))
def test_weights_option(scheme: str) -> None:
    t = star(5, weights=scheme)
    assert t.weights == scheme
    kind = tf.mixing.SCHEME_KIND[scheme]
    assert t.stochasticity == kind or (kind != "doubly" and t.stochasticity in (kind, "doubly"))


# ---------------------------------------------------------------------------- networkx builders
def _edge_by_edge_grid(rows: int, cols: int, periodic: bool) -> nx.Graph:
    """The construction torus/grid used before they called nx.grid_2d_graph (the reference)."""
    G = nx.Graph()
    G.add_nodes_from(range(rows * cols))
    for r in range(rows):
        for c in range(cols):
            v = r * cols + c
            if periodic or r + 1 < rows:
                u = ((r + 1) % rows) * cols + c
                if u != v:
                    G.add_edge(v, u)
            if periodic or c + 1 < cols:
                u = r * cols + (c + 1) % cols
                if u != v:
                    G.add_edge(v, u)
    return G


def _edge_by_edge_circulant(n: int, offsets: list[int]) -> nx.Graph:
    """The construction circulant used before it called nx.circulant_graph (the reference)."""
    G = nx.Graph()
    G.add_nodes_from(range(n))
    for o in sorted(set(offsets)):
        G.add_edges_from((i, (i + o) % n) for i in range(n))
    return G


def assert_bit_identical(t: tf.Topology, ref: tf.Topology) -> None:
    for a, b in ((t.W.data, ref.W.data), (t.W.indices, ref.W.indices), (t.W.indptr, ref.W.indptr)):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert sorted(t.graph.edges()) == sorted(ref.graph.edges())
    assert list(t.graph.nodes()) == list(ref.graph.nodes())


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 9), cols=st.integers(1, 9), weights=st.sampled_from(
    ["metropolis", "metropolis_hastings", "max_degree", "uniform", "push_sum"]))
def test_torus_and_grid_identical_to_edge_by_edge(rows: int, cols: int, weights: str) -> None:
    for periodic, make in ((True, torus), (False, grid)):
        ref = tf.Topology.from_networkx(_edge_by_edge_grid(rows, cols, periodic), weights)
        assert_bit_identical(make(rows, cols, weights=weights), ref)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 40), data=st.data(), weights=st.sampled_from(["metropolis", "uniform"]))
def test_circulant_identical_to_edge_by_edge(n: int, data: st.DataObject, weights: str) -> None:
    offsets = data.draw(st.lists(st.integers(1, n - 1), min_size=1, max_size=4))
    ref = tf.Topology.from_networkx(_edge_by_edge_circulant(n, offsets), weights)
    assert_bit_identical(circulant(n, offsets, weights=weights), ref)


# ---------------------------------------------------------------------------- W without networkx
# Issue 43: with a named scheme the classic constructors build W from numpy edge arrays. The
# slow reference is the construction they used before: the networkx graph and from_networkx.
_SCHEMES = sorted(tf.mixing.SCHEMES)


def assert_same_topology(t: tf.Topology, ref: tf.Topology) -> None:
    """Bit-identical W (values, sparsity, index dtypes), the same arcs, name, params, weights."""
    assert t.__dict__["_graph"] is None  # the constructor built no graph
    assert_bit_identical(t, ref)  # builds t.graph from W
    assert t.W.shape == ref.W.shape and t.W.data.tobytes() == ref.W.data.tobytes()
    assert (t.name, dict(t.params), t.weights, t.groups) == (
        ref.name, dict(ref.params), ref.weights, ref.groups)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 200), weights=st.sampled_from(_SCHEMES))
def test_ring_identical_to_networkx(n: int, weights: str) -> None:
    ref = tf.Topology.from_networkx(nx.cycle_graph(n), weights, name="ring", params={"n": n})
    assert_same_topology(ring(n, weights=weights), ref)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 60), weights=st.sampled_from(_SCHEMES))
def test_star_and_complete_identical_to_networkx(n: int, weights: str) -> None:
    ref = tf.Topology.from_networkx(nx.star_graph(n - 1), weights, name="star", params={"n": n})
    assert_same_topology(star(n, weights=weights), ref)
    ref = tf.Topology.from_networkx(nx.complete_graph(n), weights, name="complete",
                                    params={"n": n})
    assert_same_topology(complete(n, weights=weights), ref)


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 12), cols=st.integers(1, 12), weights=st.sampled_from(_SCHEMES))
def test_torus_and_grid_identical_to_networkx(rows: int, cols: int, weights: str) -> None:
    from topofl.topologies.classic import _grid_graph

    for periodic, make in ((True, torus), (False, grid)):
        ref = tf.Topology.from_networkx(_grid_graph(rows, cols, periodic), weights,
                                        name=make.__name__, params={"rows": rows, "cols": cols})
        assert_same_topology(make(rows, cols, weights=weights), ref)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 80), data=st.data(), weights=st.sampled_from(_SCHEMES))
def test_circulant_identical_to_networkx(n: int, data: st.DataObject, weights: str) -> None:
    offsets = data.draw(st.lists(st.integers(1, n - 1), min_size=1, max_size=5))
    offs = sorted(set(offsets))
    ref = tf.Topology.from_networkx(nx.circulant_graph(n, offs), weights, name="circulant",
                                    params={"n": n, "offsets": offs})
    assert_same_topology(circulant(n, offsets, weights=weights), ref)


@pytest.mark.parametrize("n", [10**4 + 1, 65_536])
def test_large_ring_identical_to_networkx(n: int) -> None:
    ref = tf.Topology.from_networkx(nx.cycle_graph(n), "metropolis", name="ring",
                                    params={"n": n})
    assert_same_topology(ring(n), ref)


@pytest.mark.parametrize("make", [
    lambda w: ring(7, weights=w), lambda w: torus(3, 4, weights=w), lambda w: grid(2, 5, weights=w),
    lambda w: star(5, weights=w), lambda w: complete(4, weights=w),
    lambda w: circulant(9, [2, 3], weights=w)])
def test_weight_functions_still_get_the_networkx_graph(make) -> None:  # type: ignore[no-untyped-def]
    seen: list[nx.Graph] = []

    def scheme(G: nx.Graph) -> object:
        seen.append(G)
        return tf.mixing.metropolis(G)

    t = make(scheme)
    assert len(seen) == 1 and isinstance(seen[0], nx.Graph) and t.weights == "scheme"
    assert t.__dict__["_graph"] is None  # the constructor's networkx graph is not kept
    assert_bit_identical(t, make("metropolis"))


def test_a_rebound_scheme_name_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    # A name whose SCHEMES entry was replaced is not topofl's rule any more: networkx path.
    monkeypatch.setitem(tf.mixing.SCHEMES, "metropolis", tf.mixing.max_degree)
    assert_bit_identical(star(5), star(5, weights="max_degree"))
    with pytest.raises(ValueError, match=r"weights must be one of"):
        ring(5, weights="nope")


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 30), p=st.floats(0, 1), s=st.integers(0, 1000),
       weights=st.sampled_from(_SCHEMES))
def test_scheme_from_arcs_in_any_order_is_the_scheme(n: int, p: float, s: int,
                                                     weights: str) -> None:
    # What the constructors rely on: the schemes' W depends on the set of arcs, not their order.
    directed = weights in ("uniform", "push_sum") and s % 2 == 1
    G = nx.gnp_random_graph(n, p, seed=s, directed=directed)
    _, src, dst = tf.mixing.arcs(G)
    perm = np.random.default_rng(s).permutation(src.size)
    W = tf.mixing.from_arcs(weights, n, src[perm], dst[perm])
    ref = tf.mixing.SCHEMES[weights](G)
    for a, b in ((W.data, ref.data), (W.indices, ref.indices), (W.indptr, ref.indptr)):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
