"""Topology and TimeVarying: construction, conventions, conversions, immutability, errors."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl import TimeVarying, Topology


# ----------------------------------------------------------------------------- conventions
def test_orientation_convention_from_digraph() -> None:
    # 0 -> 1 -> 2: node 1 receives from 0, node 2 from 1.
    t = Topology.from_networkx(nx.DiGraph([(0, 1), (1, 2)]), weights="uniform")
    W = t.to_dense()
    assert W[1, 0] > 0 and W[0, 1] == 0
    assert W[2, 1] > 0 and W[1, 2] == 0
    assert set(t.graph.edges()) == {(0, 1), (1, 2)}
    x = np.array([1.0, 0.0, 0.0])
    # one step of x <- W x moves information along the arcs
    assert (W @ x)[1] > 0 and (W @ x)[2] == 0
    d = t.to_pyg()
    pairs = set(zip(d.edge_index[0].tolist(), d.edge_index[1].tolist()))
    assert (0, 1) in pairs and (1, 0) not in pairs  # edge_index[0] = sender


def test_undirected_becomes_symmetric_digraph() -> None:
    t = Topology.from_networkx(nx.path_graph(3))
    assert set(t.graph.edges()) == {(0, 1), (1, 0), (1, 2), (2, 1)}
    assert t.is_undirected and t.is_symmetric and t.num_edges == 2
    assert t.messages_per_round == 4 and t.edges_per_node == pytest.approx(4 / 3)


def test_directed_counts() -> None:
    t = Topology.from_networkx(nx.DiGraph([(0, 1), (1, 0), (1, 2)]), weights="push_sum")
    assert t.is_directed
    assert t.num_edges == 3 and t.messages_per_round == 3
    np.testing.assert_array_equal(t.in_degree, [1, 1, 1])
    np.testing.assert_array_equal(t.out_degree, [1, 2, 0])
    assert t.is_column_stochastic and not t.is_row_stochastic
    assert t.stochasticity == "column"


# ----------------------------------------------------------------------------- conversions
@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 30), p=st.floats(0, 1), s=st.integers(0, 1000), directed=st.booleans())
def test_pyg_and_torch_round_trip(n: int, p: float, s: int, directed: bool) -> None:
    G = nx.gnp_random_graph(n, p, seed=s, directed=directed)
    t = Topology.from_networkx(G, weights="push_sum" if directed else "metropolis")
    d = t.to_pyg()
    assert d.num_nodes == n
    assert d.edge_index.shape == (2, t.W.nnz)
    back = sp.coo_array(
        (d.edge_weight.numpy(), (d.edge_index[1].numpy(), d.edge_index[0].numpy())), shape=(n, n)
    ).toarray()
    np.testing.assert_array_equal(back, t.to_dense())
    np.testing.assert_array_equal(t.to_torch().to_dense().numpy(), t.to_dense())
    # the matrix convention survives a trip through from_matrix
    t2 = Topology.from_matrix(t.W)
    assert set(t2.graph.edges()) == set(t.graph.edges())


def test_to_torch_dtype_device_and_matmul() -> None:
    t = tf.topologies.ring(5)
    T = t.to_torch(device="cpu", dtype=torch.float32)
    assert T.dtype == torch.float32 and T.layout == torch.sparse_csr
    X = torch.arange(10, dtype=torch.float32).reshape(5, 2)
    np.testing.assert_allclose((T @ X).numpy(), t.to_dense() @ X.numpy(), rtol=1e-6)


def test_to_networkx_weights_and_copy() -> None:
    t = tf.topologies.star(4)
    G = t.to_networkx()
    for j, i, w in G.edges(data="weight"):
        assert w == t.W[i, j]
    for i, w in G.nodes(data="self_weight"):
        assert w == t.W[i, i]
    G.add_edge(1, 2)  # a mutable copy
    assert not t.graph.has_edge(1, 2)


def _old_to_pyg(t: Topology) -> tuple[torch.Tensor, torch.Tensor]:
    """to_pyg's edge list as it was assembled by hand before it used PyG's converter."""
    coo = t.W.tocoo()
    edge_index = torch.as_tensor(np.stack([coo.col, coo.row]).astype(np.int64))
    return edge_index, torch.as_tensor(coo.data.copy())


def _old_to_networkx(t: Topology) -> nx.DiGraph:
    """to_networkx as it was built edge by edge before it used networkx's converter."""
    G = nx.DiGraph()
    diag = t.W.diagonal()
    G.add_nodes_from((i, {"self_weight": float(diag[i])}) for i in range(t.n))
    coo = t.W.tocoo()
    off = coo.row != coo.col
    G.add_weighted_edges_from(
        zip(coo.col[off].tolist(), coo.row[off].tolist(), coo.data[off].tolist())
    )
    return G


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 30), p=st.floats(0, 1), s=st.integers(0, 1000), directed=st.booleans())
def test_converters_identical_to_hand_built(n: int, p: float, s: int, directed: bool) -> None:
    G = nx.gnp_random_graph(n, p, seed=s, directed=directed)
    t = Topology.from_networkx(G, weights="push_sum" if directed else "metropolis")
    d = t.to_pyg()
    ei, ew = _old_to_pyg(t)
    assert d.edge_index.dtype == ei.dtype and torch.equal(d.edge_index, ei)
    assert d.edge_weight.dtype == ew.dtype and torch.equal(d.edge_weight, ew)
    new, old = t.to_networkx(), _old_to_networkx(t)
    assert list(new.nodes(data=True)) == list(old.nodes(data=True))
    assert list(new.edges(data=True)) == list(old.edges(data=True))
    for (_, _, a), (_, _, b) in zip(new.edges(data="weight"), old.edges(data="weight")):
        assert type(a) is type(b) is float


def test_json_serialisable_params() -> None:
    t = tf.topologies.random_regular(10, 3, seed=4)
    assert json.loads(json.dumps(dict(t.params))) == {"n": 10, "d": 3, "seed": 4}


# ----------------------------------------------------------------------------- immutability
def test_topology_is_frozen() -> None:
    t = tf.topologies.ring(4)
    with pytest.raises(AttributeError):
        t.name = "x"  # type: ignore[misc]
    with pytest.raises(ValueError):
        t.W.data[0] = 2.0
    with pytest.raises(nx.NetworkXError):
        t.graph.add_edge(0, 2)
    with pytest.raises(TypeError):
        t.params["n"] = 5  # type: ignore[index]


def test_from_matrix_copies_and_does_not_mutate() -> None:
    A = np.array([[0.5, 0.5], [0.5, 0.5]])
    t = Topology.from_matrix(A)
    A[0, 0] = 9.0
    assert t.W[0, 0] == 0.5


def test_from_networkx_does_not_mutate() -> None:
    G = nx.cycle_graph(5)
    G.add_edge(0, 0)
    edges = sorted(G.edges())
    Topology.from_networkx(G)
    assert sorted(G.edges()) == edges


def test_reweight_returns_new_topology() -> None:
    t = tf.topologies.star(4)
    u = t.reweight("max_degree")
    assert u is not t and u.weights == "max_degree" and t.weights == "metropolis"
    assert set(u.graph.edges()) == set(t.graph.edges())


# ----------------------------------------------------------------------------- the lazy graph
# Issue 43: training, spectra and records read W; Topology.graph is built from W when asked for.
def _built(t: Topology) -> bool:
    return t.__dict__["_graph"] is not None


def _reference_graph(W: sp.csr_array) -> nx.DiGraph:
    """The arcs j -> i for W[i, j] > 0, i != j, by the definition (a slow, obvious loop)."""
    D = W.toarray()
    n = D.shape[0]
    G = nx.DiGraph()
    G.add_nodes_from(range(n))
    G.add_edges_from((j, i) for i in range(n) for j in range(n) if i != j and D[i, j] > 0)
    return G


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 25), p=st.floats(0, 1), s=st.integers(0, 1000), directed=st.booleans())
def test_lazy_graph_equals_the_networkx_graph(n: int, p: float, s: int, directed: bool) -> None:
    G = nx.gnp_random_graph(n, p, seed=s, directed=directed)
    eager = Topology.from_networkx(G, weights="push_sum" if directed else "metropolis")
    lazy = Topology.from_matrix(eager.W)
    assert _built(eager) and not _built(lazy)
    for t in (eager, lazy):
        g = t.graph
        assert isinstance(g, nx.DiGraph) and nx.is_frozen(g)
        assert list(g.nodes()) == list(range(n))
        assert set(g.edges()) == set(_reference_graph(eager.W).edges())
        assert nx.number_of_selfloops(g) == 0
        assert g.graph == {} and all(not d for _, d in g.nodes(data=True))
        assert all(not d for _, _, d in g.edges(data=True))
    assert _built(lazy) and lazy.graph is lazy.graph  # built once, then kept


def test_constructors_and_properties_do_not_build_the_graph() -> None:
    made = [tf.topologies.ring(16), tf.topologies.torus(4, 4), tf.topologies.exponential(16),
            tf.topologies.undirected_exponential(16), tf.topologies.random_regular(16, 4, seed=0),
            tf.topologies.erdos_renyi(16, 0.5, seed=0), tf.topologies.star(6),
            tf.topologies.ring(6, weights=tf.mixing.metropolis),  # networkx's graph, dropped
            tf.topologies.one_peer_exponential(16).at(3), tf.topologies.base_graph(6).at(1),
            tf.topologies.random_directed(16, 2, seed=0).at(5),
            Topology.from_adjacency(nx.to_numpy_array(nx.cycle_graph(5)))]
    for t in made:
        repr(t), t.in_degree, t.out_degree, t.num_edges, t.is_undirected, t.is_symmetric
        t.to_torch(), t.to_pyg(), t.to_networkx(), t.to_dense(), t.stochasticity
        tf.spectral.spectral_gap(t), tf.spectral.algebraic_connectivity(t)
        if tf.spectral.is_strongly_connected(t):
            tf.spectral.diameter(t)
        assert not _built(t), t.name
        assert set(t.graph.edges()) == set(_reference_graph(t.W).edges())


def test_training_does_not_build_the_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    ring = tf.topologies.ring(8)

    def refuse(W: sp.csr_array) -> nx.DiGraph:
        raise AssertionError("a run built a networkx graph")

    monkeypatch.setattr(tf.graph.topology, "_graph_from_W", refuse)
    res = tf.run("dsgd", topology=ring, n_clients=8, rounds=2, batch_size=8, seed=0,
                 eval_every=1)
    assert res.records.series("test_acc_mean")[1].size == 2
    tf.run("dsgd", topology="ring", n_clients=8, rounds=2, batch_size=8, seed=0)
    assert not _built(ring)
    monkeypatch.undo()
    assert ring.graph.number_of_edges() == 16  # and it can still be asked for


def test_from_networkx_keeps_its_graph() -> None:
    G = nx.DiGraph([(2, 0), (0, 1), (1, 2), (0, 2)])
    t = Topology.from_networkx(G, weights="uniform")
    assert _built(t)
    assert list(t.graph.edges()) == [(0, 1), (0, 2), (1, 2), (2, 0)]  # G's arcs, G's order
    g = t.graph
    assert t.reweight("push_sum").graph is not g and t.graph is g


def test_graph_can_be_given_or_left_to_w() -> None:
    W = tf.topologies.ring(5).W
    t = Topology(None, W, name="r")
    assert not _built(t) and t.n == 5 and t.num_edges == 5
    g = nx.freeze(_reference_graph(W))
    assert Topology(g, W).graph is g
    with pytest.raises(ValueError, match=r"W must be a square \(n, n\) matrix, got shape "
                                         r"\(2, 3\)"):
        Topology(None, sp.csr_array(np.ones((2, 3))))
    with pytest.raises(TypeError, match=r"graph must be a networkx.DiGraph, got Graph"):
        Topology(nx.cycle_graph(5), W)  # type: ignore[arg-type]


def test_lazy_graph_is_immutable_and_survives_replace() -> None:
    import dataclasses

    t = tf.topologies.exponential(8)
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.graph = nx.DiGraph()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del t.graph
    assert not _built(t)
    u = t.replace(name="x")  # what the constructors use: the graph stays unbuilt
    assert not _built(u) and u.name == "x" and u.W is t.W and u.weights == "uniform"
    v = dataclasses.replace(t, name="y")  # builds it (reads every field) and shares it
    assert _built(t) and v.graph is t.graph and v.name == "y"
    assert [f.name for f in dataclasses.fields(Topology)] == [
        "graph", "W", "name", "params", "groups", "weights"]
    with pytest.raises(nx.NetworkXError):
        t.graph.add_edge(0, 5)
    assert not hasattr(Topology, "graph")  # no class-level default: the field is required
    with pytest.raises(TypeError):
        Topology(W=t.W)  # type: ignore[call-arg]


def test_lazy_graph_built_once_across_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    t = tf.topologies.ring(2000)
    with ThreadPoolExecutor(4) as pool:
        graphs = list(pool.map(lambda _: t.graph, range(8)))
    assert all(g is graphs[0] for g in graphs)


# ----------------------------------------------------------------------------- groups
def test_groups_validated_and_indexed() -> None:
    t = Topology.from_networkx(nx.complete_graph(4), groups=[[2, 0], [1, 3]])
    assert t.groups == ((0, 2), (1, 3))
    np.testing.assert_array_equal(t.group_index, [0, 1, 0, 1])
    with pytest.raises(ValueError, match="disjoint"):
        Topology.from_networkx(nx.complete_graph(3), groups=[[0, 1], [1, 2]])
    with pytest.raises(ValueError, match="cover"):
        Topology.from_networkx(nx.complete_graph(3), groups=[[0, 1]])
    with pytest.raises(ValueError, match=r"\[0, 2\]"):
        Topology.from_networkx(nx.complete_graph(3), groups=[[0, 1, 5], [2]])
    with pytest.raises(ValueError, match="empty"):
        Topology.from_networkx(nx.complete_graph(3), groups=[[0, 1, 2], []])
    with pytest.raises(ValueError, match="no groups"):
        _ = tf.topologies.ring(3).group_index


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("W", "exc", "match"),
    [
        (np.ones((2, 3)), ValueError, "square"),
        (np.ones(3), ValueError, "square"),
        (np.zeros((0, 0)), ValueError, "at least one row"),
        (np.array([[0.5, -0.5], [0.5, 0.5]]), ValueError, r"non-negative.*\(0, 1\)"),
        (np.array([[np.nan, 0.5], [0.5, 0.5]]), ValueError, "finite"),
        (np.array([[np.inf, 0.5], [0.5, 0.5]]), ValueError, "finite"),
        ("abc", TypeError, "numeric"),
        ([[1, "a"], [0, 1]], TypeError, "numeric"),
        (tf.topologies.ring(4), TypeError, "got a Topology: it already is one"),
        (nx.cycle_graph(4), TypeError, "build it with Topology.from_networkx"),
    ],
)
def test_from_matrix_bad_input(W: object, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        Topology.from_matrix(W)


def test_from_networkx_bad_input() -> None:
    with pytest.raises(TypeError, match="networkx"):
        Topology.from_networkx([[0, 1]])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="nodes 0..n-1"):
        Topology.from_networkx(nx.Graph([(1, 2)]))
    with pytest.raises(ValueError, match="at least one node"):
        Topology.from_networkx(nx.Graph())
    with pytest.raises(ValueError, match="weights must be one of"):
        Topology.from_networkx(nx.path_graph(3), weights="nope")

    def bad_scheme(G: nx.Graph) -> np.ndarray:
        return np.eye(3)

    with pytest.raises(ValueError, match="sparsity"):
        Topology.from_networkx(nx.path_graph(3), weights=bad_scheme)


def test_from_matrix_accepts_torch_and_sparse() -> None:
    A = np.array([[0.75, 0.25], [0.25, 0.75]])
    for x in (torch.tensor(A), torch.tensor(A).to_sparse(), sp.csr_matrix(A), A.tolist()):
        np.testing.assert_array_equal(Topology.from_matrix(x).to_dense(), A)


# ----------------------------------------------------------------------------- TimeVarying
def test_static_and_cycle() -> None:
    r, c = tf.topologies.ring(4), tf.topologies.complete(4)
    s = TimeVarying.static(r)
    assert s.period == 1 and s.is_static and s.at(0) is r and s.at(99) is r
    cyc = TimeVarying.cycle([r, c])
    assert [cyc.at(t) is (r if t % 2 == 0 else c) for t in range(6)] == [True] * 6
    assert cyc[5] is c
    assert [x.name for x in cyc.window(0, 3)] == ["ring", "complete", "ring"]


def test_at_is_pure_in_t_regardless_of_order() -> None:
    def at(t: int) -> Topology:
        rng = np.random.default_rng([7, t])
        perm = rng.permutation(6).tolist()
        return Topology.from_networkx(nx.relabel_nodes(nx.cycle_graph(6), dict(enumerate(perm))))

    a = TimeVarying(6, at, cache_size=0)
    b = TimeVarying(6, at, cache_size=2)
    forward = [a.at(t).to_dense() for t in range(8)]
    backward = [b.at(t).to_dense() for t in reversed(range(8))][::-1]
    for x, y in zip(forward, backward):
        np.testing.assert_array_equal(x, y)


def test_time_varying_errors() -> None:
    r3, r4 = tf.topologies.ring(3), tf.topologies.ring(4)
    with pytest.raises(ValueError, match="same n"):
        TimeVarying.cycle([r3, r4])
    with pytest.raises(ValueError, match="empty"):
        TimeVarying.cycle([])
    with pytest.raises(TypeError, match="Topology"):
        TimeVarying.cycle([np.eye(3)])  # type: ignore[list-item]
    tv = TimeVarying(4, lambda t: r3)
    with pytest.raises(ValueError, match="n=3, expected 4"):
        tv.at(0)
    with pytest.raises(ValueError, match="t must be >= 0"):
        TimeVarying.static(r3).at(-1)
    with pytest.raises(TypeError, match="t must be an int"):
        TimeVarying.static(r3).at(1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Topology"):
        TimeVarying(3, lambda t: "x").at(0)  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError):
        tf.as_time_varying(np.eye(3))  # type: ignore[arg-type]


def test_topology_accepted_where_time_varying_is() -> None:
    r = tf.topologies.ring(5)
    tv = tf.as_time_varying(r)
    assert tv.at(3) is r and tv.n == 5
    assert tf.as_time_varying(tv) is tv


def test_reprs() -> None:
    assert repr(tf.topologies.ring(4)) == (
        "Topology(name='ring', n=4, edges=4, undirected, doubly stochastic, params={'n': 4})"
    )
    t = Topology.from_networkx(nx.complete_graph(4), groups=[[0, 1], [2, 3]], name="k4")
    assert "groups=2" in repr(t)
    assert "TimeVarying(name='ring'" in repr(TimeVarying.static(tf.topologies.ring(4)))
