"""Random graphs: reproducibility, the declared distributions' invariants, connectivity, errors."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.exceptions import NotConnectedError
from topofl.topologies import erdos_renyi, random_regular, watts_strogatz


@settings(max_examples=30, deadline=None)
@given(n=st.integers(4, 60), d=st.integers(2, 8), s=st.integers(0, 10_000))
def test_random_regular_is_regular_connected_reproducible(n: int, d: int, s: int) -> None:
    if d >= n or (n * d) % 2:
        with pytest.raises(ValueError):
            random_regular(n, d, seed=s)
        return
    t = random_regular(n, d, seed=s)
    assert set(t.in_degree.tolist()) == {d}
    assert t.num_edges == n * d // 2
    assert nx.is_strongly_connected(t.graph)
    assert (t.W != random_regular(n, d, seed=s).W).nnz == 0


def test_random_regular_d2_is_a_hamiltonian_cycle() -> None:
    for s in range(20):
        t = random_regular(200, 2, seed=s)
        G = t.graph.to_undirected()
        assert nx.is_connected(G) and all(d == 2 for _, d in G.degree())


def test_random_regular_d2_uniform_over_cycles() -> None:
    # n = 5 has 4!/2 = 12 distinct Hamiltonian cycles; each should appear about equally often.
    counts: dict[frozenset[tuple[int, int]], int] = {}
    for s in range(1200):
        G = random_regular(5, 2, seed=s).graph.to_undirected()
        e = frozenset(tuple(sorted(x)) for x in G.edges())
        counts[e] = counts.get(e, 0) + 1
    assert len(counts) == 12
    assert min(counts.values()) > 60 and max(counts.values()) < 140


def test_random_regular_connectivity_errors() -> None:
    with pytest.raises(NotConnectedError, match="never connected"):
        random_regular(10, 1, seed=0)
    with pytest.raises(ValueError, match="even"):
        random_regular(5, 3, seed=0)
    with pytest.raises(ValueError, match=r"d must be in \[0, 4\]"):
        random_regular(5, 5, seed=0)
    t = random_regular(10, 1, seed=0, connected=False)
    assert set(t.in_degree.tolist()) == {1}
    assert random_regular(2, 1, seed=0).num_edges == 1


def test_erdos_renyi_connected_and_seeded() -> None:
    t = erdos_renyi(50, 0.15, seed=3)
    assert nx.is_strongly_connected(t.graph)
    assert (t.W != erdos_renyi(50, 0.15, seed=3).W).nnz == 0
    assert erdos_renyi(5, 1.0, seed=0).num_edges == 10
    with pytest.raises(NotConnectedError, match="p should exceed"):
        erdos_renyi(200, 0.001, seed=0, max_tries=3)
    with pytest.raises(NotConnectedError, match="never connected"):
        erdos_renyi(3, 0.0, seed=0)
    assert erdos_renyi(3, 0.0, seed=0, connected=False).num_edges == 0
    with pytest.raises(ValueError, match=r"p must be in \[0, 1\]"):
        erdos_renyi(5, 1.5, seed=0)
    with pytest.raises(ValueError, match="nan"):
        erdos_renyi(5, float("nan"), seed=0)


def test_erdos_renyi_edge_density() -> None:
    n, p = 300, 0.05
    m = np.mean([erdos_renyi(n, p, seed=s, connected=False).num_edges for s in range(5)])
    expected = p * n * (n - 1) / 2
    assert abs(m - expected) < 4 * np.sqrt(expected / 5)


def test_generator_seed_is_consumed_not_global() -> None:
    state = np.random.get_state()[1].copy()
    g = np.random.default_rng(5)
    a = random_regular(20, 3, seed=g)
    b = random_regular(20, 3, seed=g)  # the same Generator moved on: another draw
    assert (a.W != b.W).nnz > 0
    assert a.params["seed"] is None
    np.testing.assert_array_equal(np.random.get_state()[1], state)


def test_watts_strogatz() -> None:
    t0 = watts_strogatz(20, 4, 0.0, seed=0)
    np.testing.assert_array_equal(t0.to_dense(), tf.topologies.circulant(20, [1, 2]).to_dense())
    t = watts_strogatz(100, 6, 0.3, seed=2)
    assert t.num_edges == 300 and nx.is_strongly_connected(t.graph)
    with pytest.raises(ValueError, match="k must be even"):
        watts_strogatz(10, 3, 0.1, seed=0)
    with pytest.raises(ValueError, match=r"k must be in \[2, 9\]"):
        watts_strogatz(10, 10, 0.1, seed=0)
    with pytest.raises(ValueError, match="n must be >= 3"):
        watts_strogatz(2, 2, 0.1, seed=0)


# ---------------------------------------------------------------------------- the same draws
# Issue 43: the random constructors keep networkx's draws and only W (no digraph). The slow
# reference is their construction before it: the same draws, then Topology.from_networkx.
def _networkx_reference(family: str, n: int, *args: object, seed: int,
                        connected: bool = True, weights: str = "metropolis") -> tf.Topology:
    from topofl.topologies.random import _draw_connected

    rng = np.random.default_rng(seed)
    params: dict[str, object] = {"n": n}
    if family == "random_regular":
        (d,) = args
        params |= {"d": d, "seed": seed}
        if connected and d == 2:
            order = rng.permutation(n).tolist()
            G = nx.Graph()
            G.add_nodes_from(range(n))
            G.add_edges_from(zip(order, order[1:] + order[:1]))
        else:
            G = _draw_connected(lambda: nx.random_regular_graph(d, n, seed=rng),
                                connected=connected, max_tries=100, what="", hint="")
    elif family == "erdos_renyi":
        (p,) = args
        params |= {"p": p, "seed": seed}
        G = _draw_connected(lambda: nx.gnp_random_graph(n, p, seed=rng), connected=connected,
                            max_tries=100, what="", hint="")
    else:
        k, p = args
        params |= {"k": k, "p": p, "seed": seed}
        G = _draw_connected(lambda: nx.watts_strogatz_graph(n, k, p, seed=rng),
                            connected=connected, max_tries=100, what="", hint="")
    return tf.Topology.from_networkx(G, weights, name=family, params=params)


def _assert_same(t: tf.Topology, ref: tf.Topology) -> None:
    assert t.__dict__["_graph"] is None  # no digraph kept by the constructor
    for a, b in ((t.W.data, ref.W.data), (t.W.indices, ref.W.indices),
                 (t.W.indptr, ref.W.indptr)):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert set(t.graph.edges()) == set(ref.graph.edges())
    assert list(t.graph.nodes()) == list(ref.graph.nodes())
    assert (t.name, dict(t.params), t.weights) == (ref.name, dict(ref.params), ref.weights)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(3, 60), d=st.integers(2, 7), s=st.integers(0, 10_000),
       weights=st.sampled_from(sorted(tf.mixing.SCHEMES)))
def test_random_regular_identical_to_networkx(n: int, d: int, s: int, weights: str) -> None:
    if d >= n or (n * d) % 2:
        return
    _assert_same(random_regular(n, d, seed=s, weights=weights),
                 _networkx_reference("random_regular", n, d, seed=s, weights=weights))


@pytest.mark.parametrize("seed", [0, 1, 7, 2024])
@pytest.mark.parametrize(("n", "d", "connected"), [
    (1000, 10, True), (500, 2, True), (501, 2, True), (40, 2, False), (12, 1, False),
    (9, 0, False), (200, 3, True)])
def test_random_regular_seeds_identical_to_networkx(seed: int, n: int, d: int,
                                                    connected: bool) -> None:
    _assert_same(random_regular(n, d, seed=seed, connected=connected),
                 _networkx_reference("random_regular", n, d, seed=seed, connected=connected))


@pytest.mark.parametrize("seed", [0, 3, 11])
def test_erdos_renyi_and_watts_strogatz_identical_to_networkx(seed: int) -> None:
    _assert_same(erdos_renyi(60, 0.15, seed=seed),
                 _networkx_reference("erdos_renyi", 60, 0.15, seed=seed))
    _assert_same(erdos_renyi(30, 0.05, seed=seed, connected=False, weights="push_sum"),
                 _networkx_reference("erdos_renyi", 30, 0.05, seed=seed, connected=False,
                                     weights="push_sum"))
    _assert_same(watts_strogatz(50, 4, 0.2, seed=seed),
                 _networkx_reference("watts_strogatz", 50, 4, 0.2, seed=seed))
