"""Clique Averaging with intra-clique edges removed (Sec. IV-F), its message count (III-D)."""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.engine import Round, toy_services
from topofl.topologies import clique_averaging_matrix, connect_cliques, dcliques, messages_per_node

D = torch.float64


def one_class_per_node(n: int, classes: int = 10) -> np.ndarray:
    return np.eye(classes)[np.arange(n) % classes]


def reference_matrix(t: tf.Topology) -> np.ndarray:
    """Fig. 7 node by node: node i averages itself and the clique members that send to it."""
    W = t.W.toarray()
    A = np.zeros((t.n, t.n))
    for clique in t.groups or ():
        for i in clique:
            reach = [j for j in clique if j == i or W[i, j] != 0]
            for j in reach:
                A[i, j] = 1.0 / len(reach)
    return A


def four_minus_one() -> tf.Topology:
    # a clique of four without the edge 0-1, linked by 3-4 to the clique {4, 5}
    G = nx.complete_graph(4)
    G.remove_edge(0, 1)
    G.add_edges_from([(3, 4), (4, 5)])
    return tf.Topology.from_networkx(G, groups=[[0, 1, 2, 3], [4, 5]])


def test_matrix_hand_computed() -> None:
    A = clique_averaging_matrix(four_minus_one()).toarray()
    third, quarter, half = 1 / 3, 1 / 4, 1 / 2
    expected = np.array([
        [third, 0, third, third, 0, 0],
        [0, third, third, third, 0, 0],
        [quarter] * 4 + [0, 0],
        [quarter] * 4 + [0, 0],
        [0, 0, 0, 0, half, half],
        [0, 0, 0, 0, half, half],
    ])
    np.testing.assert_allclose(A, expected, rtol=0, atol=1e-15)


def test_matrix_on_complete_cliques_is_the_clique_mean() -> None:
    t = dcliques(one_class_per_node(30), 10, inter="ring", seed=0)
    A = clique_averaging_matrix(t).toarray()
    g = t.group_index
    np.testing.assert_allclose(A, (g[:, None] == g[None, :]) / 10.0, atol=1e-15)
    # the inter-clique edges carry no gradient
    assert all(A[i, j] == 0 for i, j in t.graph.edges if g[i] != g[j])


@settings(max_examples=25, deadline=None)
@given(n=st.integers(4, 40), m=st.integers(3, 8), remove=st.integers(0, 3),
       inter=st.sampled_from(tf.topologies.INTER_CLIQUE), s=st.integers(0, 2**16))
def test_matrix_matches_the_reference(n: int, m: int, remove: int, inter: str, s: int) -> None:
    m = min(m, n)
    smallest = n // -(-n // m)
    remove = min(remove, (smallest - 1) * (smallest - 2) // 2)
    t = dcliques(one_class_per_node(n, 4), m, inter=inter, steps=3, remove_intra_edges=remove,
                 seed=s)
    A = clique_averaging_matrix(t)
    np.testing.assert_allclose(A.toarray(), reference_matrix(t), rtol=0, atol=1e-15)
    np.testing.assert_allclose(A.sum(axis=1), 1.0, atol=1e-14)
    # a node keeps exactly its remaining clique edges (plus itself): removal shows per row
    assert A.nnz == t.n + 2 * (sum(len(c) * (len(c) - 1) // 2 for c in t.groups or ()) -
                               remove * len(t.groups or ()))


def test_matrix_bad_input() -> None:
    with pytest.raises(ValueError, match="has none"):
        clique_averaging_matrix(tf.topologies.ring(5))
    with pytest.raises(TypeError, match="Topology"):
        clique_averaging_matrix(np.eye(3))  # type: ignore[arg-type]


def _one_update(topo: tf.Topology, g: torch.Tensor, momentum: float = 0.0) -> torch.Tensor:
    algo = tf.algorithms.dsgd(lr=1.0, momentum=momentum, clique_averaging=True)
    env = toy_services(topo.n, g.shape[1])
    state = algo.init(torch.zeros_like(g), env)
    rnd = Round(0, topo)
    algo.round_start(state, rnd, env)
    algo.update(state, g.clone(), algo.phases[0], torch.ones(topo.n, dtype=g.dtype), rnd, env)
    return state.x


def test_engine_averages_over_the_remaining_clique_neighbours_by_hand() -> None:
    g = torch.tensor([[0.0], [3.0], [6.0], [9.0], [1.0], [5.0]], dtype=D)
    x = _one_update(four_minus_one(), g)
    # node 0: (0 + 6 + 9) / 3; node 1: (3 + 6 + 9) / 3; nodes 2, 3: 18 / 4; nodes 4, 5: 6 / 2
    assert (-x).flatten().tolist() == [5.0, 6.0, 4.5, 4.5, 3.0, 3.0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_engine_matches_the_matrix_with_and_without_removal(dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(0)
    for remove in (0, 1, 5):
        t = dcliques(one_class_per_node(40), 10, inter="small_world", remove_intra_edges=remove,
                     seed=remove)
        g = torch.randn(40, 7, generator=gen, dtype=dtype)
        x = _one_update(t, g)
        want = -(clique_averaging_matrix(t).toarray() @ g.double().numpy())
        np.testing.assert_allclose(x.double().numpy(), want, rtol=1e-5, atol=1e-6)


def test_engine_momentum_acts_on_the_averaged_gradient_after_removal() -> None:
    topo = four_minus_one()
    algo = tf.algorithms.dsgd(lr=0.1, momentum=0.5, clique_averaging=True)
    env = toy_services(6, 1)
    state = algo.init(torch.zeros(6, 1, dtype=D), env)
    rnd = Round(0, topo)
    A = clique_averaging_matrix(topo).toarray()
    v, theta = np.zeros(6), np.zeros(6)
    for k in range(3):
        g = np.arange(6.0) * (k + 1) - 2.0
        algo.update(state, torch.tensor(g[:, None]), algo.phases[0],
                    torch.full((6,), 0.1, dtype=D), rnd, env)
        v = 0.5 * v + A @ g  # eq. (4)
        theta = theta - 0.1 * v  # eq. (5)
        np.testing.assert_allclose(state.x.numpy().ravel(), theta, atol=1e-14)


# ---------------------------------------------------------------------------- message count


@pytest.fixture(scope="module")
def data() -> Any:
    return tf.data.federate("digits", "shards", 12, shards_per_client=2, seed=0)


@pytest.mark.parametrize(("remove", "ca", "per_round"), [
    # 3 cliques of 4 (6 edges each) + 3 inter-clique edges = 21 edges, 42 arcs: 42 models, and
    # with Clique Averaging a gradient on each of the 36 arcs within cliques; one edge removed
    # per clique: 18 edges, 36 arcs, 30 of them within cliques
    (0, False, 42), (0, True, 78), (1, False, 36), (1, True, 66),
])
def test_engine_records_the_gradients_clique_averaging_reads(
    data: Any, remove: int, ca: bool, per_round: int
) -> None:
    t = dcliques(data.label_distributions, 4, inter="fully_connected", remove_intra_edges=remove,
                 seed=0)
    assert t.num_edges == 21 - 3 * remove  # the hand count above
    assert messages_per_node(t, clique_averaging=ca, gradients="clique") * t.n == \
        pytest.approx(per_round)
    res = tf.run("dsgd", topology=t, data=data, rounds=3, lr=0.1, batch_size=8,
                 clique_averaging=ca, eval_every=3, seed=0)
    _, msgs = res.records.series("messages")
    assert msgs.tolist() == [3 * per_round]
    # two local steps: the gradients go twice (one exchange per step), the models once
    res = tf.run("dsgd", topology=t, data=data, rounds=1, lr=0.1, batch_size=8,
                 clique_averaging=ca, local_steps=2, seed=0)
    models = 42 - 6 * remove
    assert res.records.final("messages") == models + 2 * (per_round - models)


def test_message_counts_at_1000_nodes() -> None:
    # Sec. IV-E counts 37.8 messages per node and round with Clique Averaging (18.9 edges per
    # node, a gradient on each); the gradients Fig. 7 reads go to clique neighbours only: 27.9
    t = dcliques(one_class_per_node(1000), 10, inter="fully_connected", steps=0, seed=0)
    algo, env = tf.algorithms.dsgd(clique_averaging=True), toy_services(1000, 1)
    state = algo.init(torch.zeros(1000, 1, dtype=D), env)
    sent = algo.communicate(state, Round(0, t), env)  # one local step
    assert sent.messages / 1000 == pytest.approx(27.9) == messages_per_node(
        t, gradients="clique")
    assert messages_per_node(t) == pytest.approx(37.8)


def test_connect_cliques_removal_is_seeded() -> None:
    a = connect_cliques([range(0, 10), range(10, 20)], remove_intra_edges=5, seed=3)
    b = connect_cliques([range(0, 10), range(10, 20)], remove_intra_edges=5, seed=3)
    assert set(a.graph.edges) == set(b.graph.edges)
    # 45 - 5 edges in each clique of ten (2.2% per edge: 1/45, 11% for 5), plus one between
    assert a.num_edges == 2 * 40 + 1
