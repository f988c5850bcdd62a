"""Teleportation's schedule: k active nodes a round mix among themselves, the others wait.

Facts checked: every round has exactly ``k`` active nodes (``params["active"]``), every other row
and column of ``W`` is ``e_i``; the active nodes form one cycle with Metropolis weights 1/3 (a pair
averages with 1/2, one node keeps its model) or average exactly (``graph="complete"``); ``W`` is
symmetric and doubly stochastic; a round is a pure function of ``(seed, t)``; each node is active
with frequency ``k/n``; the closed-form second moments of ``expected_mixing`` agree with a
Monte-Carlo average of ``W W^T`` over 1500 rounds, and its exact effective number of neighbours
with the Monte-Carlo random walk of ``random_walk_variance`` (both within 5 standard errors).

``graph="random_regular"``: the slot graph is connected and ``d``-regular with the stated ``d``
(about log2 k) for every k up to 70 and many seeds, the same for the same seed, independent of
the rounds' draws; each round's active block is the slot graph relabelled by the round's draw
with weights ``1/(d + 1)``; the default graphs give the matrices they gave before it existed.
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.algorithms.teleport import teleport_map
from topofl.spectral import expected_mixing, random_walk_variance
from topofl.topologies import (
    teleportation,
    teleportation_active,
    teleportation_slot_degree,
    teleportation_slot_graph,
)


def check_round(g: tf.Topology, n: int, k: int, graph: str) -> None:
    W = g.W.toarray()
    active = list(g.params["active"])
    assert len(active) == len(set(active)) == k
    idle = sorted(set(range(n)) - set(active))
    eye = np.eye(n)
    for i in idle:  # waiting nodes keep their model and send nothing
        np.testing.assert_array_equal(W[i], eye[i])
        np.testing.assert_array_equal(W[:, i], eye[:, i])
    changed = [i for i in range(n) if not np.array_equal(W[i], eye[i])]
    assert sorted(changed) == (sorted(active) if k >= 2 else [])
    np.testing.assert_array_equal(W, W.T)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    block = W[np.ix_(active, active)]
    if graph == "random_regular" and k > 3:
        d = teleportation_slot_degree(k)
        H = np.eye(k)
        u, v = teleportation_slot_graph(k, seed=g.params["seed"])
        H[u, v] = H[v, u] = 1.0
        np.testing.assert_array_equal(block, H / (d + 1))  # slot s is node active[s]
    elif graph == "complete" or k <= 3:
        np.testing.assert_allclose(block, np.full((k, k), 1.0 / k), rtol=0, atol=1e-16)
    else:
        # one cycle through the active nodes in the order drawn, weights 1/3
        sub = nx.Graph(g.graph.to_undirected().subgraph(active))
        assert nx.is_connected(sub) and all(d == 2 for _, d in sub.degree())
        for s in range(k):
            a, b = active[s], active[(s + 1) % k]
            assert W[a, b] == W[a, a] == 1 / 3
        assert np.count_nonzero(block) == 3 * k


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 40), data=st.data())
def test_rounds(n: int, data: st.DataObject) -> None:
    k = data.draw(st.integers(1, n))
    graph = data.draw(st.sampled_from(["ring", "complete", "random_regular"]))
    seed = data.draw(st.integers(0, 2**16))
    tv = teleportation(n, k, seed=seed, graph=graph)
    assert tv.period is None
    for t in (0, 1, 7, 1000):
        check_round(tv.at(t), n, k, graph)


def test_small_case_by_hand() -> None:
    tv = teleportation(5, 4, seed=0)
    g = tv.at(0)
    a0, a1, a2, a3 = g.params["active"]
    W = np.eye(5)
    idle = (set(range(5)) - {a0, a1, a2, a3}).pop()
    W[[a0, a1, a2, a3], :] = 0.0
    for x, y in ((a0, a1), (a1, a2), (a2, a3), (a3, a0)):
        W[x, y] = W[y, x] = 1 / 3
    for x in (a0, a1, a2, a3):
        W[x, x] = 1 / 3
    np.testing.assert_array_equal(g.W.toarray(), W)
    assert g.W[idle, idle] == 1.0 and g.num_edges == 4 and g.messages_per_round == 8


def test_pure_in_seed_and_round() -> None:
    a = teleportation(30, 7, seed=3)
    b = teleportation(30, 7, seed=3)
    late = [b.at(t) for t in (9, 4, 0)]  # another order, another object
    for t, g in zip((9, 4, 0), late):
        assert (a.at(t).W != g.W).nnz == 0
        assert a.at(t).params["active"] == g.params["active"]
    other = teleportation(30, 7, seed=4)
    assert any(a.at(t).params["active"] != other.at(t).params["active"] for t in range(5))
    assert a.at(0).params["active"] != a.at(1).params["active"]
    with pytest.raises(TypeError, match="seed"):
        teleportation(30, 7)  # type: ignore[call-arg]


def test_every_node_is_active_with_frequency_k_over_n() -> None:
    n, k, rounds = 20, 5, 2000
    tv = teleportation(n, k, seed=11)
    counts = np.zeros(n)
    for t in range(rounds):
        counts[list(tv.at(t).params["active"])] += 1
    p = k / n
    sd = np.sqrt(rounds * p * (1 - p))
    assert np.all(np.abs(counts - rounds * p) < 5 * sd)


@pytest.mark.parametrize(("n", "k", "graph"), [(12, 5, "ring"), (10, 2, "ring"),
                                               (9, 3, "complete"), (8, 8, "ring")])
def test_expected_mixing_against_monte_carlo(n: int, k: int, graph: str) -> None:
    tv = teleportation(n, k, seed=5, graph=graph)
    m = expected_mixing(tv)
    w = 1 / k if graph == "complete" else 1 / min(k, 3)
    assert m.row_self == pytest.approx(k / n * w + 1 - k / n, abs=1e-15)
    assert m.row_cross == m.col_cross == pytest.approx((1 - m.row_self) / (n - 1), abs=1e-15)
    _agrees_with_monte_carlo(tv, n, m)


def test_effective_neighbors_closed_form_against_the_random_walk() -> None:
    n, k, gamma = 16, 6, 0.9
    tv = teleportation(n, k, seed=2)
    exact = random_walk_variance(tv, gamma)
    assert exact.method == "closed_form"
    # The same rounds under another name have no closed form: Monte-Carlo random walk.
    anon = tf.TimeVarying(n, tv.at, name="anonymous")
    mc = random_walk_variance(anon, gamma, rounds=1500, per_node=False)
    assert mc.method == "monte_carlo" and mc.stderr is not None
    assert abs(mc.mean_variance - exact.mean_variance) <= 5 * mc.stderr
    s = tf.spectral.summary(tv, metrics=["effective_neighbors", "effective_neighbors_method"])
    assert s["effective_neighbors_method"] == "closed_form"
    assert s["effective_neighbors"] == pytest.approx(expected_mixing(tv).effective_neighbors(0.95))


def test_spec_and_summary() -> None:
    tv = tf.topologies.build("teleportation:n=12,k=6,graph=complete", seed=1)
    assert isinstance(tv, tf.TimeVarying) and tv.params["graph"] == "complete"
    s = tf.spectral.summary(tv)
    assert s["stochastic"] == "doubly" and s["finite_time_consensus"] is None
    assert s["period"] is None and s["strongly_connected"]


@pytest.mark.parametrize("bad", [{"n": 1, "k": 1}, {"n": 5, "k": 0}, {"n": 5, "k": 6},
                                 {"n": 5, "k": 2, "graph": "star"}, {"n": 5, "k": 2.0}])
def test_bad_input(bad: dict) -> None:
    with pytest.raises((TypeError, ValueError)):
        teleportation(**bad, seed=0)


# ----------------------------------------------------------------- the random regular slot graph
def _degree_reference(k: int) -> int:
    """The rule written out: complete up to 3 slots, else about log2 k, even sum of degrees."""
    if k <= 3:
        return k - 1
    d = max(2, int(np.floor(np.log2(k) + 1e-12)))
    return d + 1 if k * d % 2 else d


def test_slot_degree() -> None:
    for k in range(1, 600):
        d = teleportation_slot_degree(k)
        assert d == _degree_reference(k)
        assert k * d % 2 == 0 and d <= k - 1
        if k >= 4:
            assert abs(d - np.log2(k)) <= 1.0 + 1e-12
    for p in range(2, 11):  # powers of two: the simulator's log2 k
        assert teleportation_slot_degree(2**p) == p
    with pytest.raises(ValueError, match="k"):
        teleportation_slot_degree(0)


@pytest.mark.parametrize("k", [*range(1, 71), 96, 128, 255, 256, 300])
def test_slot_graph_connected_and_regular_for_many_seeds(k: int) -> None:
    d = teleportation_slot_degree(k)
    seeds = range(40) if k <= 70 else range(5)
    for seed in seeds:
        u, v = teleportation_slot_graph(k, seed=seed)
        assert u.size == k * d // 2 and np.all(u < v)  # simple, each edge once
        assert len(set(zip(u.tolist(), v.tolist()))) == u.size
        assert np.bincount(np.concatenate([u, v]), minlength=k).tolist() == [d] * k
        G = nx.Graph()
        G.add_nodes_from(range(k))
        G.add_edges_from(zip(u.tolist(), v.tolist()))
        assert nx.is_connected(G)


def test_slot_graph_is_seeded() -> None:
    a = teleportation_slot_graph(16, seed=3)
    np.testing.assert_array_equal(a, teleportation_slot_graph(16, seed=3))
    np.testing.assert_array_equal(a, teleportation_slot_graph(16, seed=np.random.SeedSequence(3)))
    others = [teleportation_slot_graph(16, seed=s) for s in range(4, 12)]
    assert any(o.shape != a.shape or not np.array_equal(o, a) for o in others)
    # the schedule uses the graph of its seed, in every round
    tv = teleportation(40, 16, seed=3, graph="random_regular")
    for t in (0, 5):
        g = tv.at(t)
        act = np.array(g.params["active"])
        W = g.W.toarray()
        u, v = a
        assert np.all(W[act[u], act[v]] == 1 / 5) and np.count_nonzero(W[np.ix_(act, act)]) \
            == 16 + 2 * u.size
    with pytest.raises(TypeError, match="seed"):
        teleportation_slot_graph(8)  # type: ignore[call-arg]


def test_slot_graph_does_not_move_the_rounds_draws() -> None:
    # the active nodes of a round are the same whichever graph the slots use
    for graph in ("ring", "complete"):
        a = teleportation(30, 9, seed=7, graph=graph)
        b = teleportation(30, 9, seed=7, graph="random_regular")
        for t in range(5):
            assert a.at(t).params["active"] == b.at(t).params["active"]
            assert tuple(teleportation_active(30, 9, t, seed=7).tolist()) == \
                b.at(t).params["active"]


def test_default_graphs_unchanged() -> None:
    # The digest of the ring's and the complete graph's matrices (and of the teleport map) on
    # these cases, taken before "random_regular" was added: the default path is bit-identical.
    import hashlib

    h = hashlib.sha256()
    for graph in ("ring", "complete"):
        for n, k in ((12, 5), (9, 3), (20, 8), (6, 2), (7, 1), (30, 30)):
            tv = teleportation(n, k, seed=3, graph=graph)
            for t in range(4):
                W = tv.at(t).W
                for arr in (W.indptr, W.indices, W.data):
                    h.update(arr.tobytes())
            M = teleport_map(n, teleportation_active(n, k, 0, seed=3),
                             teleportation_active(n, k, 1, seed=3), graph)
            for arr in (M.indptr, M.indices, M.data):
                h.update(arr.tobytes())
    assert h.hexdigest()[:16] == "e44f5ea71904385c"


@pytest.mark.parametrize(("n", "k"), [(12, 8), (20, 9), (10, 4)])
def test_random_regular_expected_mixing_against_monte_carlo(n: int, k: int) -> None:
    tv = teleportation(n, k, seed=5, graph="random_regular")
    m = expected_mixing(tv)
    w = 1 / (teleportation_slot_degree(k) + 1)
    assert m.row_self == pytest.approx(k / n * w + 1 - k / n, abs=1e-15)
    _agrees_with_monte_carlo(tv, n, m)


def test_random_regular_spec_and_bad_graph() -> None:
    tv = tf.topologies.build("teleportation:n=20,k=8,graph=random_regular", seed=2)
    assert tv.params["graph"] == "random_regular"
    g = tv.at(0)
    assert g.num_edges == 8 * 3 // 2 and g.is_doubly_stochastic and g.is_undirected
    with pytest.raises(ValueError, match=r"graph must be one of .*random_regular.*got 'regular'"):
        teleportation(20, 8, seed=0, graph="regular")


def _agrees_with_monte_carlo(tv: Any, n: int, m: Any, rounds: int = 1500) -> None:
    """``m``'s row_self and row_cross (``E[W W^T]``'s diagonal and off-diagonal means) within
    5 standard errors of their averages over ``rounds`` rounds of ``tv``."""
    diag = np.empty(rounds)
    off = np.empty(rounds)
    for t in range(rounds):
        W = tv.at(t).W.toarray()
        G = W @ W.T
        diag[t] = np.trace(G) / n
        off[t] = (G.sum() - np.trace(G)) / (n * (n - 1))
    for est, exact in ((diag, m.row_self), (off, m.row_cross)):
        se = est.std() / np.sqrt(rounds)
        assert abs(est.mean() - exact) <= 5 * se + 1e-12
