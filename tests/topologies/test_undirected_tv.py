"""The time-varying undirected k-neighbour graph (DFedPGP's DFedAvgM baseline).

Checks: every round is a simple k-regular undirected graph with weights exactly 1/(k+1)
(symmetric, doubly stochastic, the Metropolis weights of a regular graph); round t is a pure
function of (seed, t); rounds differ; the spec string trains through ``topofl.run``.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.topologies import REGISTRY, random_undirected


@pytest.mark.parametrize("n, k", [(2, 1), (6, 1), (5, 2), (10, 9), (30, 4), (20, 10)])
def test_every_round_is_k_regular_symmetric_doubly_stochastic(n: int, k: int) -> None:
    tv = random_undirected(n, k, seed=3)
    for t in range(6):
        g = tv.at(t)
        W = g.to_dense()
        assert g.is_undirected and g.is_symmetric and g.is_doubly_stochastic
        np.testing.assert_array_equal(W, W.T)
        np.testing.assert_allclose(W.sum(axis=0), 1.0, atol=1e-15)
        np.testing.assert_allclose(W.sum(axis=1), 1.0, atol=1e-15)
        assert g.in_degree.tolist() == [k] * n and g.out_degree.tolist() == [k] * n
        np.testing.assert_allclose(W[W > 0], 1.0 / (k + 1))  # self and k neighbours
        np.testing.assert_allclose(np.diag(W), 1.0 / (k + 1))
        # exactly the Metropolis weights of the round's graph (1/(1+max(d_i,d_j)) = 1/(k+1))
        np.testing.assert_allclose(tf.mixing.metropolis(g.graph).toarray(), W, atol=1e-15)
        assert g.weights == "metropolis" and g.params["round"] == t


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 40), k=st.integers(1, 39), seed=st.integers(0, 2**20),
       t=st.integers(0, 500))
def test_regular_property(n: int, k: int, seed: int, t: int) -> None:
    if k > n - 1 or (n * k) % 2:
        with pytest.raises(ValueError, match="k must be in|n \\* k must be even"):
            random_undirected(n, k, seed=seed)
        return
    g = random_undirected(n, k, seed=seed).at(t)
    und = nx.Graph(g.graph)
    assert nx.is_k_regular(und, k) and nx.number_of_selfloops(und) == 0
    assert g.is_symmetric and g.is_doubly_stochastic


def test_seeded_per_round_pure_and_varying() -> None:
    a, b = random_undirected(30, 4, seed=5), random_undirected(30, 4, seed=5)
    order = [7, 0, 3, 7, 1]
    for t in order:  # asked in another order: same graphs
        assert (a.at(t).W != b.at(t).W).nnz == 0
    edges = {tuple(sorted(a.at(t).graph.edges())) for t in range(5)}
    assert len(edges) == 5  # the graph changes from round to round
    c = random_undirected(30, 4, seed=6)
    assert (a.at(0).W != c.at(0).W).nnz > 0


def test_union_of_rounds_connects_even_for_k1() -> None:
    tv = random_undirected(16, 1, seed=0)
    assert not nx.is_connected(nx.Graph(tv.at(0).graph))  # a perfect matching
    union = nx.Graph()
    for t in range(20):
        union.add_edges_from(tv.at(t).graph.edges())
    assert nx.is_connected(union)


def test_gossip_preserves_the_average() -> None:
    tv = random_undirected(12, 3, seed=1)
    x = np.random.default_rng(0).normal(size=(12, 2))
    mean = x.mean(axis=0)
    for t in range(60):
        x = tv.at(t).W @ x
    np.testing.assert_allclose(x, np.broadcast_to(mean, x.shape), atol=1e-8)


@pytest.mark.parametrize(
    "call, exc, msg",
    [
        (lambda: random_undirected(1, 1, seed=0), ValueError, "n must be >= 2"),
        (lambda: random_undirected(5, 5, seed=0), ValueError, r"k must be in \[1, 4\]"),
        (lambda: random_undirected(5, 1, seed=0), ValueError, "n \\* k must be even"),
        (lambda: random_undirected(6, 2.0, seed=0), TypeError, "k must be an int"),
        (lambda: random_undirected(6, 2), TypeError, "seed"),
    ],
)
def test_bad_input(call: object, exc: type, msg: str) -> None:
    with pytest.raises(exc, match=msg):
        call()  # type: ignore[operator]


def test_registry_and_spec() -> None:
    fam = REGISTRY["random_undirected"]
    assert fam.random and fam.time_varying and fam.undirected and fam.stochastic == "doubly"
    assert fam.example(1, np.random.default_rng(0)) is None
    for n in range(2, 12):
        kw = fam.example(n, np.random.default_rng(n))
        assert kw is not None and (n * kw["k"]) % 2 == 0
    g = tf.topologies.build("random_undirected:n=20,k=4", seed=1)
    assert isinstance(g, tf.TimeVarying) and g.params["k"] == 4
    assert (g.at(2).W != random_undirected(20, 4, seed=1).at(2).W).nnz == 0
    # k is a spec parameter of the directed graphs too
    g5 = tf.topologies.build("random_directed:n=20,k=5", seed=1)
    assert g5.at(0).in_degree.tolist() == [5] * 20


def test_spec_trains_through_run() -> None:
    res = tf.run("dfedavgm", topology="random_undirected:k=2", n_clients=8, rounds=2,
                 partition="iid", batch_size=8, seed=0, eval_every=1)
    assert res.records.config["topology"] == "random_undirected:k=2"
    acc = res.records.series("test_acc_mean")[1]
    assert acc.size == 2 and np.all((acc >= 0) & (acc <= 1))
    # the engine saw the seeded graph: the state reached is the one of the explicit TimeVarying
    ref = tf.run("dfedavgm", topology=random_undirected(8, 2, seed=0), n_clients=8, rounds=2,
                 partition="iid", batch_size=8, seed=0, eval_every=1)
    np.testing.assert_array_equal(acc, ref.records.series("test_acc_mean")[1])
