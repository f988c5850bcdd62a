"""Exponential and Base-(k+1) graphs: slow references, closed forms, finite-time consensus.

Facts checked: the static exponential graph's spectral gap 2/(1+ceil(log2 n)) for even n (Ying et
al. 2021, Lemma 1); exact averaging of the one-peer exponential graph after log2 n rounds when n is
a power of two and never otherwise (its products have dyadic entries); exact averaging of the
Base-(k+1) graph with at most k peers per round, in at most 2 log_{k+1}(n) + 2 rounds (Takezawa et
al. 2023), for every n in 2..64 and k in 1..4.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.spectral import finite_time_consensus, mixing_product, spectral_gap
from topofl.topologies import (
    REGISTRY,
    base_graph,
    base_graph_schedule,
    exponential,
    one_peer_exponential,
    undirected_exponential,
)


def ceil_log2(n: int) -> int:
    return math.ceil(math.log2(n)) if n > 1 else 0


def is_power(n: int, b: int) -> bool:
    while n % b == 0:
        n //= b
    return n == 1


# ---------------------------------------------------------------------------- slow references
def exponential_reference(n: int) -> np.ndarray:
    """Node i sends to i + 2^k mod n: W[(i + 2^k) % n, i] = 1/(tau+1), loops only."""
    tau = ceil_log2(n)
    W = np.zeros((n, n))
    for i in range(n):
        W[i, i] = 1.0 / (tau + 1)
        for k in range(tau):
            W[(i + 2**k) % n, i] += 1.0 / (tau + 1)
    return W


def one_peer_reference(n: int, t: int) -> np.ndarray:
    tau = ceil_log2(n)
    W = np.zeros((n, n))
    for i in range(n):
        W[i, i] += 0.5
        W[(i + 2 ** (t % tau)) % n, i] += 0.5
    return W


def product_reference(mats: list[np.ndarray]) -> np.ndarray:
    P = np.eye(mats[0].shape[0])
    for M in mats:
        P = M @ P
    return P


# ---------------------------------------------------------------------------- exponential
@pytest.mark.parametrize("n", [2, 3, 5, 8, 12, 17, 32, 33])
def test_exponential_matches_reference(n: int) -> None:
    t = exponential(n)
    np.testing.assert_allclose(t.to_dense(), exponential_reference(n), atol=1e-15)
    assert t.is_doubly_stochastic
    tau = ceil_log2(n)
    assert t.in_degree.tolist() == [tau] * n and t.out_degree.tolist() == [tau] * n
    assert t.messages_per_round == n * tau
    assert t.is_directed == (n > 3)  # n = 3: +2 = -1, so every arc has its reverse
    # the recorded scheme reproduces W from the graph
    np.testing.assert_allclose(t.reweight(t.weights).to_dense(), t.to_dense(), atol=1e-15)


@pytest.mark.parametrize("n", range(2, 65, 2))
def test_exponential_gap_closed_form_even_n(n: int) -> None:
    expected = 2.0 / (1 + ceil_log2(n))
    t = exponential(n)
    assert spectral_gap(t) == pytest.approx(expected, abs=1e-12)
    # W is circulant hence normal: ||W - J||_2 = max_{k>=2} |lambda_k|
    assert spectral_gap(t, "norm") == pytest.approx(expected, abs=1e-12)


def test_exponential_odd_n_gap_is_at_least_the_even_formula() -> None:
    # For odd n the eigenvalue (tau-1)/(tau+1) at l = n/2 does not exist.
    for n in range(3, 64, 2):
        assert spectral_gap(exponential(n)) >= 2.0 / (1 + ceil_log2(n)) - 1e-12


@pytest.mark.parametrize("bad", [0, 1, -3])
def test_exponential_rejects_small_n(bad: int) -> None:
    with pytest.raises(ValueError, match="n must be >= 2"):
        exponential(bad)


@pytest.mark.parametrize("bad", [2.0, "8", True, None])
def test_exponential_rejects_non_int(bad: object) -> None:
    with pytest.raises(TypeError, match="n must be an int"):
        exponential(bad)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- one-peer
@pytest.mark.parametrize("n", [2, 3, 6, 8, 13, 16])
def test_one_peer_matches_reference(n: int) -> None:
    tv = one_peer_exponential(n)
    assert tv.period == ceil_log2(n)
    for t in range(2 * tv.period + 1):
        g = tv.at(t)
        np.testing.assert_allclose(g.to_dense(), one_peer_reference(n, t), atol=1e-15)
        assert g.is_doubly_stochastic
        assert g.in_degree.max() == 1 and g.out_degree.max() == 1


@pytest.mark.parametrize("n", range(2, 65))
def test_one_peer_exact_averaging_iff_power_of_two(n: int) -> None:
    tv = one_peer_exponential(n)
    tau = ceil_log2(n)
    got = finite_time_consensus(tv, 3 * tau)
    if is_power(n, 2):
        assert got == tau
        mats = [one_peer_reference(n, t) for t in range(tau)]
        np.testing.assert_allclose(product_reference(mats), 1.0 / n, atol=1e-15)
    else:
        assert got is None


@pytest.mark.parametrize("n", [4, 16, 64])
def test_one_peer_any_tau_consecutive_rounds_average(n: int) -> None:
    # the factors (I + P^(2^k))/2 commute, so every window of tau rounds is exact
    tv = one_peer_exponential(n)
    for start in range(tv.period):
        assert finite_time_consensus(tv, tv.period, start=start) == tv.period


# ---------------------------------------------------------------------------- Base-(k+1)
def check_base_graph(n: int, k: int) -> None:
    tv = base_graph(n, k)
    m = tv.period
    assert m is not None and m >= 1
    mats = []
    for t in range(m):
        g = tv.at(t)
        assert g.is_symmetric and g.is_doubly_stochastic
        assert int(g.in_degree.max()) <= k  # at most k peers per node and round
        assert g.W.diagonal().min() > 0
        mats.append(g.to_dense())
    # exact consensus after exactly one period (slow reference product and the library's)
    np.testing.assert_allclose(product_reference(mats), 1.0 / n, atol=1e-13)
    np.testing.assert_allclose(mixing_product(tv, 0, m), 1.0 / n, atol=1e-13)
    assert finite_time_consensus(tv, 2 * m) == m
    # the length Takezawa et al. state: at most 2 log_{k+1}(n) + 2
    assert m <= 2 * math.log(n, k + 1) + 2 + 1e-9
    if is_power(n, k + 1):  # a (k+1)-ary hypercube: log_{k+1} n rounds
        assert m == round(math.log(n, k + 1))


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_base_graph_finite_time_consensus_all_n(k: int) -> None:
    for n in range(max(2, k + 1), 65):
        check_base_graph(n, k)


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_base_graph_small_n_with_large_k(n: int) -> None:
    for k in range(1, n):
        check_base_graph(n, k)
    assert base_graph(n, n - 1).period == 1  # one round of the complete graph


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 300), k=st.integers(1, 8))
def test_base_graph_property(n: int, k: int) -> None:
    k = min(k, n - 1)
    tv = base_graph(n, k)
    assert finite_time_consensus(tv, tv.period) == tv.period
    assert tv.period <= 2 * math.log(n, k + 1) + 2 + 1e-9


def test_base_graph_hyper_hypercube_lengths() -> None:
    # n whose prime factors are <= k + 1: the fewest factors <= k + 1
    assert base_graph(12, 3).period == 2  # 4 x 3
    assert base_graph(8, 1).period == 3  # 2 x 2 x 2
    assert base_graph(27, 2).period == 3
    assert base_graph(16, 4).period == 2  # 4 x 4
    assert base_graph(10, 4).period == 2  # 5 x 2


def test_base_graph_beats_one_peer_for_non_powers_of_two() -> None:
    # k = 1 (one peer per round) reaches exact consensus for every n, unlike one-peer exp.
    for n in (3, 5, 6, 7, 12, 24, 48):
        assert finite_time_consensus(one_peer_exponential(n), 60) is None
        assert finite_time_consensus(base_graph(n, 1), 60) == base_graph(n, 1).period


def test_base_graph_schedule_matches_matrices() -> None:
    n, k = 11, 2
    sched = base_graph_schedule(n, k)
    tv = base_graph(n, k)
    assert len(sched) == tv.period
    for t, edges in enumerate(sched):
        W = tv.at(t).to_dense()
        for i, j, w in edges:
            assert W[i, j] == pytest.approx(w) and W[j, i] == pytest.approx(w)
        assert len(edges) == tv.at(t).num_edges


def test_base_graph_union_of_a_period_is_connected() -> None:
    tv = base_graph(13, 1)
    assert not tf.spectral.is_strongly_connected(tv.at(0))
    assert tf.spectral.is_strongly_connected(tv, horizon=tv.period)


@pytest.mark.parametrize(
    "args, exc, msg",
    [
        ((1, 1), ValueError, "n must be >= 2"),
        ((5, 5), ValueError, r"k must be in \[1, 4\]"),
        ((5, 0), ValueError, r"k must be in \[1, 4\]"),
        ((5, 1.5), TypeError, "k must be an int"),
    ],
)
def test_base_graph_bad_input(args: tuple[object, object], exc: type, msg: str) -> None:
    with pytest.raises(exc, match=msg):
        base_graph(*args)  # type: ignore[arg-type]
    with pytest.raises(exc, match=msg):
        base_graph_schedule(*args)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- registry
@pytest.mark.parametrize("name", ["exponential", "one_peer_exponential", "base_graph"])
def test_registered_with_correct_flags(name: str) -> None:
    fam = REGISTRY[name]
    assert fam.stochastic == "doubly" and not fam.random and fam.connected
    assert fam.time_varying == (name != "exponential")
    assert fam.undirected == (name == "base_graph")
    assert fam.example(1, np.random.default_rng(0)) is None
    for n in range(2, 12):
        kwargs = fam.example(n, np.random.default_rng(n))
        assert kwargs is not None
        g = fam.func(**kwargs)
        assert g.n == n


def test_build_from_spec() -> None:
    tv = tf.topologies.build("base_graph:n=10,k=2")
    assert isinstance(tv, tf.TimeVarying) and tv.params == {"n": 10, "k": 2}
    assert tf.topologies.build("exponential:n=8").name == "exponential"


# ----------------------------------------------------------------- undirected exponential
def undirected_exponential_reference(n: int) -> np.ndarray:
    """Loops only: i ~ (i + 2^k) % n for k < ceil(log2 n), both ways; eq. (2) of D-Cliques,
    W_ij = 1 / (1 + max(d_i, d_j)) off the diagonal, the rest on it."""
    A = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for k in range(ceil_log2(n)):
            j = (i + 2**k) % n
            if j != i:
                A[i, j] = A[j, i] = True
    deg = A.sum(axis=1)
    W = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if A[i, j]:
                W[i, j] = 1.0 / (1 + max(deg[i], deg[j]))
        W[i, i] = 1.0 - W[i].sum()
    return W


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 64))
def test_undirected_exponential_matches_reference(n: int) -> None:
    t = undirected_exponential(n)
    np.testing.assert_allclose(t.to_dense(), undirected_exponential_reference(n), atol=1e-15)
    W = t.to_dense()
    assert np.array_equal(W, W.T) and t.is_doubly_stochastic
    # the directed exponential graph's arcs, made undirected
    D = exponential(n).to_dense() > 0
    assert np.array_equal(W > 0, D | D.T)
    # regular: 2 tau offsets +-2^k, of which two coincide iff 2^a + 2^b = n (a unique pair,
    # by binary expansion): one fewer neighbour if a = b, two fewer if a != b
    tau = ceil_log2(n)
    ones = bin(n).count("1")
    expected = 2 * tau - {1: 1, 2: 2}.get(ones, 0)
    assert set(t.in_degree.tolist()) == {expected}
    assert np.allclose(W[W > 0], 1.0 / (expected + 1))


def test_undirected_exponential_fig12_edges_per_node() -> None:
    # D-Cliques Fig. 12: "exponential graph with 14 undirected edges per node" at n = 100
    t = undirected_exponential(100)
    assert t.edges_per_node == 14.0 and t.num_edges == 700
    assert sorted(int(j) for j in t.graph.successors(0)) == sorted(
        {2**k for k in range(7)} | {100 - 2**k for k in range(7)}
    )
    assert t.name == "undirected_exponential" and t.params == {"n": 100}


@pytest.mark.parametrize("n", [5, 12, 64, 100, 127])
def test_undirected_exponential_eigenvalues_closed_form(n: int) -> None:
    # symmetric circulant: lambda_l = (1 + sum_{s in S} cos(2 pi l s / n)) / (|S| + 1)
    S = {(sgn * 2**k) % n for k in range(ceil_log2(n)) for sgn in (1, -1)}
    closed = [(1 + sum(math.cos(2 * math.pi * ell * s / n) for s in S)) / (len(S) + 1)
              for ell in range(n)]
    eig = np.linalg.eigvalsh(undirected_exponential(n).to_dense())
    np.testing.assert_allclose(np.sort(eig), np.sort(closed), atol=1e-12)


@pytest.mark.parametrize("tau", range(2, 9))
def test_undirected_exponential_gap_power_of_two(tau: int) -> None:
    # n = 2^tau: lambda_{n/2} = (tau - 2) / tau has the largest modulus, gap 2 / tau
    assert spectral_gap(undirected_exponential(2**tau)) == pytest.approx(2 / tau, abs=1e-12)


def test_undirected_exponential_in_registry_and_bad_n() -> None:
    fam = REGISTRY["undirected_exponential"]
    assert fam.undirected and not fam.random
    t = tf.topologies.build("undirected_exponential:n=100", seed=0)
    assert (t.W != undirected_exponential(100).W).nnz == 0
    with pytest.raises(ValueError, match="n"):
        undirected_exponential(1)
    with pytest.raises(TypeError):
        undirected_exponential(10.0)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- W without networkx
# Issue 43: undirected_exponential builds W from numpy edge arrays (before: nx.circulant_graph and
# from_networkx, kept here as the slow reference); exponential keeps only W.
@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 300))
def test_undirected_exponential_identical_to_networkx(n: int) -> None:
    from topofl.topologies.exponential.undirected import _exponential_offsets

    G = nx.circulant_graph(n, [d for d in _exponential_offsets(n) if d <= n // 2])
    ref = tf.Topology.from_networkx(G, "metropolis", name="undirected_exponential",
                                    params={"n": n})
    t = tf.topologies.undirected_exponential(n)
    assert t.__dict__["_graph"] is None
    for a, b in ((t.W.data, ref.W.data), (t.W.indices, ref.W.indices),
                 (t.W.indptr, ref.W.indptr)):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert set(t.graph.edges()) == set(ref.graph.edges())
    assert (t.name, dict(t.params), t.weights) == (ref.name, dict(ref.params), ref.weights)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 300))
def test_exponential_graph_built_from_w_is_the_networkx_graph(n: int) -> None:
    t = tf.topologies.exponential(n)
    assert t.__dict__["_graph"] is None and t.weights == "uniform"
    tau = (n - 1).bit_length()
    G = nx.DiGraph()
    G.add_nodes_from(range(n))
    G.add_edges_from((i, (i + 2**k) % n) for i in range(n) for k in range(tau)
                     if (i + 2**k) % n != i)
    assert nx.is_frozen(t.graph) and list(t.graph.nodes()) == list(range(n))
    assert set(t.graph.edges()) == set(G.edges())
