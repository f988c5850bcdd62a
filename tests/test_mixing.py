"""Mixing schemes against slow, obviously correct references and hand-computed cases."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl import mixing


def _ref_undirected(G: nx.Graph, rule: str) -> np.ndarray:
    n = G.number_of_nodes()
    deg = {v: sum(1 for u in G.neighbors(v) if u != v) for v in G}
    dmax = max(deg.values()) if deg else 0
    W = np.zeros((n, n))
    for i in range(n):
        for j in G.neighbors(i):
            if j == i:
                continue
            if rule == "metropolis":
                W[i, j] = 1.0 / (1 + max(deg[i], deg[j]))
            elif rule == "metropolis_hastings":
                W[i, j] = 1.0 / max(deg[i], deg[j])
            else:
                W[i, j] = 1.0 / (1 + dmax)
        W[i, i] = 1.0 - W[i].sum()
    return W


def _ref_uniform(G: nx.DiGraph) -> np.ndarray:
    n = G.number_of_nodes()
    W = np.zeros((n, n))
    for i in range(n):
        ins = [j for j in G.predecessors(i) if j != i]
        for j in ins + [i]:
            W[i, j] = 1.0 / (len(ins) + 1)
    return W


def _ref_push_sum(G: nx.DiGraph) -> np.ndarray:
    n = G.number_of_nodes()
    W = np.zeros((n, n))
    for j in range(n):
        outs = [i for i in G.successors(j) if i != j]
        for i in outs + [j]:
            W[i, j] = 1.0 / (len(outs) + 1)
    return W


graphs = st.builds(
    lambda n, p, s: nx.gnp_random_graph(n, p, seed=s),
    st.integers(1, 25),
    st.floats(0, 1),
    st.integers(0, 10_000),
)
digraphs = st.builds(
    lambda n, p, s: nx.gnp_random_graph(n, p, seed=s, directed=True),
    st.integers(1, 25),
    st.floats(0, 1),
    st.integers(0, 10_000),
)


@pytest.mark.parametrize("rule", ["metropolis", "metropolis_hastings", "max_degree"])
@settings(max_examples=40, deadline=None)
@given(G=graphs)
def test_symmetric_schemes_match_reference(rule: str, G: nx.Graph) -> None:
    W = mixing.SCHEMES[rule](G).toarray()
    np.testing.assert_allclose(W, _ref_undirected(G, rule), atol=1e-14)
    np.testing.assert_allclose(W, W.T, atol=0)
    np.testing.assert_allclose(W.sum(axis=0), 1.0, atol=1e-12)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, atol=1e-12)
    assert W.min() >= 0


@settings(max_examples=40, deadline=None)
@given(G=digraphs)
def test_uniform_matches_reference_and_is_row_stochastic(G: nx.DiGraph) -> None:
    W = mixing.uniform(G).toarray()
    np.testing.assert_allclose(W, _ref_uniform(G), atol=1e-15)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(G=digraphs)
def test_push_sum_matches_reference_and_is_column_stochastic(G: nx.DiGraph) -> None:
    W = mixing.push_sum(G).toarray()
    np.testing.assert_allclose(W, _ref_push_sum(G), atol=1e-15)
    np.testing.assert_allclose(W.sum(axis=0), 1.0, atol=1e-12)


def test_metropolis_positive_diagonal_mh_can_be_zero() -> None:
    ring = nx.cycle_graph(6)
    assert np.all(mixing.metropolis(ring).diagonal() > 0)
    # Metropolis-Hastings on a ring keeps nothing: no stored zeros on the diagonal either.
    W = mixing.metropolis_hastings(ring)
    assert np.all(W.diagonal() == 0)
    assert W.nnz == 12


def test_hand_computed_star() -> None:
    # star with hub 0 and 3 leaves: degrees 3,1,1,1 -> metropolis W_0j = 1/(1+3) = 1/4
    W = mixing.metropolis(nx.star_graph(3)).toarray()
    expected = np.array(
        [
            [1 / 4, 1 / 4, 1 / 4, 1 / 4],
            [1 / 4, 3 / 4, 0, 0],
            [1 / 4, 0, 3 / 4, 0],
            [1 / 4, 0, 0, 3 / 4],
        ]
    )
    np.testing.assert_allclose(W, expected, atol=1e-15)


def test_self_loops_are_ignored() -> None:
    G = nx.cycle_graph(4)
    H = G.copy()
    H.add_edge(0, 0)
    for rule in mixing.SCHEMES:
        scheme = mixing.SCHEMES[rule]
        np.testing.assert_array_equal(scheme(G).toarray(), scheme(H).toarray())


def test_orientation_of_directed_weights() -> None:
    # arc 0 -> 1: node 1 receives from node 0, so W[1, 0] > 0 and W[0, 1] == 0.
    G = nx.DiGraph([(0, 1)])
    for rule in ("uniform", "push_sum"):
        W = mixing.SCHEMES[rule](G).toarray()
        assert W[1, 0] > 0 and W[0, 1] == 0


@pytest.mark.parametrize("rule", ["metropolis", "metropolis_hastings", "max_degree"])
def test_symmetric_scheme_refuses_directed_graph(rule: str) -> None:
    with pytest.raises(ValueError, match="undirected"):
        mixing.SCHEMES[rule](nx.DiGraph([(0, 1), (1, 2)]))
    # a symmetric digraph is fine
    W = mixing.SCHEMES[rule](nx.DiGraph([(0, 1), (1, 0)]))
    assert W.shape == (2, 2)


def test_unknown_scheme_and_bad_graphs() -> None:
    with pytest.raises(ValueError, match="weights must be one of"):
        mixing.get_scheme("bogus")
    with pytest.raises(ValueError, match="nodes 0..n-1"):
        mixing.metropolis(nx.Graph([(1, 2)]))
    with pytest.raises(TypeError, match="multigraph"):
        mixing.metropolis(nx.MultiGraph([(0, 1), (0, 1)]))
    with pytest.raises(TypeError, match="networkx"):
        mixing.metropolis(np.eye(3))  # type: ignore[arg-type]


def test_inputs_not_mutated() -> None:
    G = nx.cycle_graph(5)
    before = (list(G.nodes(data=True)), list(G.edges(data=True)))
    for rule in mixing.SCHEMES:
        mixing.SCHEMES[rule](G)
    assert (list(G.nodes(data=True)), list(G.edges(data=True))) == before


def test_isolated_nodes_keep_their_value() -> None:
    G = nx.empty_graph(3)
    for rule in mixing.SCHEMES:
        np.testing.assert_array_equal(mixing.SCHEMES[rule](G).toarray(), np.eye(3))


def test_metropolis_ring_all_weights_one_third() -> None:
    W = tf.topologies.ring(7).W
    np.testing.assert_allclose(W.data, 1 / 3, atol=1e-15)


# ---------------------------------------------------------------------------- vectorised helpers
def _old_arcs(G: nx.Graph) -> tuple[int, np.ndarray, np.ndarray]:
    """``mixing.arcs`` as it was, one Python tuple per edge (the reference)."""
    n = G.number_of_nodes()
    pairs = [(u, v) for u, v in G.edges() if u != v]
    if not G.is_directed():
        pairs += [(v, u) for u, v in pairs]
    if not pairs:
        return n, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    e = np.asarray(pairs, dtype=np.int64)
    return n, e[:, 0], e[:, 1]


def _old_exact_complement(n: int, rows: np.ndarray, denoms: np.ndarray) -> np.ndarray:
    """``mixing._exact_complement`` as it was, with a 2-D ``np.unique`` (the reference)."""
    from fractions import Fraction

    out = np.ones(n)
    if rows.size == 0:
        return out
    pairs, counts = np.unique(np.stack([rows, denoms]), axis=1, return_counts=True)
    r, k = pairs
    first = np.ones(r.size, dtype=bool)
    first[1:] = r[1:] != r[:-1]
    n_denoms = np.bincount(r, minlength=n)
    single = first & (n_denoms[r] == 1)
    out[r[single]] = (k[single] - counts[single]) / k[single]
    for row in np.flatnonzero(n_denoms > 1):
        sel = r == row
        out[row] = float(1 - sum(Fraction(int(c), int(d)) for c, d in zip(counts[sel], k[sel])))
    return out


def _with_self_loops(G: nx.Graph, seed: int) -> nx.Graph:
    H = G.copy()
    H.add_edges_from((v, v) for v in list(H)[seed % 3 :: 3])
    return H


@settings(max_examples=60, deadline=None)
@given(G=st.one_of(graphs, digraphs), seed=st.integers(0, 10))
def test_arcs_and_complement_identical_to_the_old_loops(G: nx.Graph, seed: int) -> None:
    G = _with_self_loops(G, seed)
    n, src, dst = mixing.arcs(G)
    n0, src0, dst0 = _old_arcs(G)
    assert n == n0
    for a, b in ((src, src0), (dst, dst0)):
        assert a.dtype == b.dtype == np.int64 and np.array_equal(a, b)  # same order too
    if not G.is_directed():
        deg = np.bincount(src, minlength=n)
        for k in (1 + np.maximum(deg[src], deg[dst]), np.maximum(deg[src], deg[dst])):
            k = np.where(k == 0, 1, k)
            new = mixing._exact_complement(n, dst, k)
            assert np.array_equal(new, _old_exact_complement(n, dst, k))


@pytest.mark.parametrize("n", [1, 2, 3, 10, 57, 200])
def test_complete_graph_identical_to_the_old_construction(n: int) -> None:
    # The old path, step by step: arcs one tuple at a time, 2-D unique, digraph from the arcs.
    G = nx.complete_graph(n)
    _, src, dst = _old_arcs(G)
    deg = np.bincount(src, minlength=n)
    k = 1 + np.maximum(deg[src], deg[dst])
    W_old = mixing.assemble(n, dst, src, 1.0 / k, _old_exact_complement(n, dst, k))
    t = tf.topologies.complete(n)
    for a, b in ((t.W.data, W_old.data), (t.W.indices, W_old.indices),
                 (t.W.indptr, W_old.indptr)):
        assert np.array_equal(a, b)
    assert np.array_equal(t.W.toarray(), np.full((n, n), 1.0 / n))
    D = nx.DiGraph()
    D.add_nodes_from(range(n))
    D.add_edges_from(zip(src.tolist(), dst.tolist()))
    # the same arcs; the graph is now built from W on demand, in W's (sorted) order, and no
    # result code depends on the order (realized edges are recorded sorted)
    assert sorted(t.graph.edges()) == sorted(D.edges())
    assert [sorted(t.graph.pred[v]) for v in t.graph] == [sorted(D.pred[v]) for v in D]


def test_scheme_names_are_explained_where_users_meet_them() -> None:
    import networkx as nx

    import topofl as tf

    for bad in ("Metropolis-Hastings", "metropolis-hastings", "mh"):
        with pytest.raises(ValueError, match=r"'metropolis' is 1/\(max\(d_i, d_j\) \+ 1\), the "
                                             r"rule the D-Cliques paper calls Metropolis-Hastings"):
            tf.topologies.ring(6, weights=bad)
    # The two rules on a ring (every degree 2): 1/3 vs 1/2 off the diagonal, 1/3 vs 0 on it.
    G = nx.cycle_graph(6)
    m, mh = tf.mixing.metropolis(G).toarray(), tf.mixing.metropolis_hastings(G).toarray()
    assert m[0, 1] == 1 / 3 and m[0, 0] == 1 / 3
    assert mh[0, 1] == 1 / 2 and mh[0, 0] == 0
    for doc in (tf.mixing.metropolis.__doc__, tf.mixing.metropolis_hastings.__doc__,
                tf.mixing.__doc__, tf.Topology.from_networkx.__doc__):
        assert doc is not None and "D-Cliques" in doc
