"""The bytes ledger: flows, per-node totals, and every registry algorithm's messages counted by
hand on small graphs."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import networkx as nx
import numpy as np
import pytest
import torch

import topofl as tf
from topofl.algorithms import ALGORITHMS
from topofl.algorithms.dis_pfl import erk_densities, layer_sizes
from topofl.engine.ledger import (
    Arcs,
    Flow,
    Ledger,
    arcs_of_mask,
    at_steps,
    clique_arcs,
    graph_arcs,
    server_arcs,
)

N = 4


# ---------------------------------------------------------------------------- the pieces
def test_graph_arcs_are_the_off_diagonal_sparsity_of_w() -> None:
    t = tf.topologies.random_regular(10, 4, seed=1)
    a = graph_arcs(t)
    W = t.W.toarray()
    want = sorted((j, i) for i in range(10) for j in range(10) if i != j and W[i, j] != 0)
    assert sorted(zip(a.senders.tolist(), a.receivers.tolist())) == want
    assert a.sent_counts()[:10].tolist() == t.out_degree.tolist()
    assert a.received_counts()[:10].tolist() == t.in_degree.tolist()
    assert a.sent_counts()[10] == 0 and graph_arcs(t) is a  # cached per topology


def test_arcs_from_pairs_checks_and_sorts() -> None:
    a = Arcs.from_pairs(3, [3, 0, 1], [0, 3, 0])
    assert list(zip(a.senders.tolist(), a.receivers.tolist())) == [(1, 0), (3, 0), (0, 3)]
    with pytest.raises(ValueError, match="same length"):
        Arcs.from_pairs(3, [0], [1, 2])
    with pytest.raises(ValueError, match=r"\[0, 3\]"):
        Arcs.from_pairs(3, [4], [0])
    with pytest.raises(ValueError, match="self"):
        Arcs.from_pairs(3, [1], [1])


def test_flow_bytes_by_hand() -> None:
    ring = graph_arcs(tf.topologies.ring(5))  # 10 arcs
    f = Flow("model", ring, size=100, bits=32)
    assert (f.messages, f.bytes) == (10, 4000)
    assert f.node_bytes()[0][:5].tolist() == [800] * 5
    mask = Flow("mask", ring, size=13, bits=1, attached=True)  # 13 bits -> 2 bytes
    assert (mask.messages, mask.carried, mask.bytes) == (0, 10, 20)
    assert mask.sent_counts().sum() == 0
    per_arc = Flow("values", ring, size=np.arange(10), bits=64)
    assert per_arc.bytes == 8 * 45
    sent, recv = per_arc.node_bytes()
    assert sent.sum() == recv.sum() == 8 * 45
    with pytest.raises(ValueError, match="per-arc sizes"):
        Flow("values", ring, size=np.arange(3), bits=8)
    with pytest.raises(ValueError, match="bits"):
        Flow("model", ring, size=1, bits=0)


def test_per_step_flows_repeat_and_into_drops_receivers() -> None:
    arcs = server_arcs(3, None, "up")
    f = Flow("gradient", arcs, 2, 32, per_step=True)
    (g,) = at_steps([f], 3)
    assert not g.per_step and g.messages == 9 and g.bytes == 9 * 8
    ring = graph_arcs(tf.topologies.ring(4))
    kept = Flow("model", ring, 1, 32).into(np.array([True, False, True, True, True]))
    assert 1 not in kept.arcs.receivers.tolist() and kept.messages == 6


def test_clique_arcs_and_mask_arcs() -> None:
    G = nx.disjoint_union(nx.complete_graph(3), nx.complete_graph(3))
    G.add_edge(2, 3)
    t = tf.Topology.from_networkx(G, groups=[[0, 1, 2], [3, 4, 5]])
    c = clique_arcs(t)
    assert len(c) == 12 and not any({s, r} == {2, 3} for s, r in
                                    zip(c.senders.tolist(), c.receivers.tolist()))
    with pytest.raises(ValueError, match="groups"):
        clique_arcs(tf.topologies.ring(4))
    m = arcs_of_mask(torch.tensor([[True, True], [False, False]]))  # the diagonal ignored
    assert m.senders.tolist() == [1] and m.receivers.tolist() == [0]


def test_ledger_totals_state_and_checks() -> None:
    led = Ledger(4)
    star = tf.Topology.from_networkx(nx.star_graph(3))  # 0 is the hub
    flows = [Flow("model", graph_arcs(star), 10, 32),
             Flow("weight", graph_arcs(star), 1, 32, attached=True)]
    assert led.add(flows) == (6, 6 * 44)
    assert led.bytes_sent.tolist() == [3 * 44, 44, 44, 44, 0]
    assert led.messages_sent.tolist() == [3, 1, 1, 1, 0]
    assert led.by_kind == {"model": [6, 240], "weight": [6, 24]}
    rows = led.rows()
    assert rows["messages"] == 6 and rows["bytes.weight"] == 24
    assert "server_bytes_sent" not in rows
    copy = Ledger(4)
    copy.load(led.state())
    assert copy.state() == led.state()
    with pytest.raises(ValueError, match="entries"):
        Ledger(3).load(led.state())
    with pytest.raises(ValueError, match="ledger of 3"):
        Ledger(3).add(flows)


# ---------------------------------------------------------------------------- every algorithm
@functools.lru_cache(maxsize=1)
def _data() -> Any:
    return tf.data.federate("digits", "iid", N, seed=0, val=0.2)


def _model() -> Any:
    data = _data()
    return tf.models.build_model("mlp", data.input_shape, data.num_classes, seed=0, hidden=(8,))


P, BODY = 64 * 8 + 8 + 8 * 10 + 10, 64 * 8 + 8  # the MLP's parameters and its body's
HEAD = P - BODY
RING = 2 * N  # arcs of the ring of 4
F = 4  # bytes of a float32


def _cycle() -> Any:  # the directed cycle 0 -> 1 -> 2 -> 3 -> 0, column stochastic
    return tf.Topology.from_networkx(nx.cycle_graph(N, create_using=nx.DiGraph),
                                     weights="push_sum")


def _cliques() -> Any:  # two cliques of 2 joined by one edge: 6 arcs, 4 within cliques
    G = nx.Graph([(0, 1), (2, 3), (1, 2)])
    return tf.Topology.from_networkx(G, groups=[[0, 1], [2, 3]])


def _server(size: int, m: int = N) -> tuple[int, int]:
    return 2 * m, 2 * m * size * F


def _dpfl_greedy(res: Any) -> list[tuple[int, int]]:
    # no budget: BGGC receives every other model twice (w^Y, then one batch of them all);
    # each GGC round every client receives its candidates Omega_k
    omega = int(res.state.own.omega.sum())
    pre = 2 * N * (N - 1)
    return [(pre + omega, (pre + omega) * P * F), (omega, omega * P * F)]


def _pfeddst(k: int) -> list[tuple[int, int]]:
    # round 0: each model to the 3 others and a loss back; every round the 3 others' heads,
    # k bodies, k probes (the whole model), k losses
    first = N * (N - 1) * (P + 1) * F
    per = (N * (N - 1) * HEAD + N * k * (BODY + P + 1)) * F
    msgs = N * (N - 1) + N * 3 * k
    return [(2 * N * (N - 1) + msgs, first + per), (msgs, per)]


def _dis_pfl(density: float) -> tuple[int, int]:
    shapes = [tuple(p.shape) for p in _model().parameters()]
    kept = sum(layer_sizes(shapes, erk_densities(shapes, density)))
    return RING, RING * (kept * F + math.ceil(P / 8))


def _teleport(k: int) -> list[tuple[int, int]]:
    # each round: the k active nodes gossip (k <= 3: every pair, both ways), then every slot
    # whose node changes sends its model to the next round's node of that slot
    out = []
    for t in range(2):
        now, nxt = (tf.topologies.teleportation_active(N, k, u, seed=0) for u in (t, t + 1))
        msgs = k * (k - 1) + int((now != nxt).sum())
        out.append((msgs, msgs * P * F))
    return out


# name -> (keywords, topology, [(messages, bytes) of round 0, of round 1])
Case = tuple[dict[str, Any], Callable[[], Any] | None, Callable[[Any], list[tuple[int, int]]]]
CASES: dict[str, Case] = {
    "dsgd": ({}, lambda: tf.topologies.ring(N), lambda r: [(RING, RING * P * F)] * 2),
    "dfedavgm": ({}, lambda: tf.topologies.ring(N), lambda r: [(RING, RING * P * F)] * 2),
    "dfedavgm_p": ({}, lambda: tf.topologies.ring(N), lambda r: [(RING, RING * BODY * F)] * 2),
    # one message per arc: the model with its push-sum weight
    "sgp": ({}, _cycle, lambda r: [(N, N * (P + 1) * F)] * 2),
    "osgp": ({}, _cycle, lambda r: [(N, N * (P + 1) * F)] * 2),
    "dfedpgp": ({}, _cycle, lambda r: [(N, N * (BODY + 1) * F)] * 2),
    "dis_pfl": (dict(density=0.5), lambda: tf.topologies.ring(N),
                lambda r: [_dis_pfl(0.5)] * 2),
    "local": ({}, None, lambda r: [(0, 0)] * 2),
    "fedavg": ({}, None, lambda r: [_server(P)] * 2),
    "fedprox": ({}, None, lambda r: [_server(P)] * 2),
    "fedavg_ft": ({}, None, lambda r: [_server(P)] * 2),
    "fedprox_ft": ({}, None, lambda r: [_server(P)] * 2),
    "fedper": (dict(participation=0.5), None, lambda r: [_server(BODY, 2)] * 2),
    "fedrep": ({}, None, lambda r: [_server(BODY)] * 2),
    "fedbabu": ({}, None, lambda r: [_server(BODY)] * 2),
    "ditto": ({}, None, lambda r: [_server(P)] * 2),
    "apfl": ({}, None, lambda r: [_server(P)] * 2),
    "perfedavg": ({}, None, lambda r: [_server(P)] * 2),
    "knn_per": ({}, None, lambda r: [_server(P)] * 2),
    # issue 59: SCAFFOLD's messages carry the model and a control variate each way (twice
    # FedAvg's bytes, FedAvg's messages); FedOpt's are FedAvg's
    "scaffold": ({}, None, lambda r: [(_server(P)[0], 2 * _server(P)[1])] * 2),
    "fedopt": ({}, None, lambda r: [_server(P)] * 2),
    # issue 84: FedNova's upload carries its normaliser |a_i|_1 (one number, attached);
    # FedDyn's messages are FedAvg's (g_k stays on the client, h on the server)
    "fednova": ({}, None, lambda r: [(_server(P)[0], _server(P)[1] + N * F)] * 2),
    "feddyn": ({}, None, lambda r: [_server(P)] * 2),
    # the personalized model down with the pull direction attached, the model up
    "pfedgraph": ({}, None, lambda r: [(2 * N, 3 * N * P * F)] * 2),
    "dpfl": (dict(budget=None, tau_init=0.0), None, _dpfl_greedy),
    "pfeddst": (dict(peers=2), None, lambda r: _pfeddst(2)),
    # issue 35: the model and the tracker on every arc; EXTRA and EL the model only
    "dsgt": ({}, lambda: tf.topologies.ring(N), lambda r: [(2 * RING, 2 * RING * P * F)] * 2),
    "extra": ({}, lambda: tf.topologies.ring(N), lambda r: [(RING, RING * P * F)] * 2),
    # exact diffusion: the corrected point on every arc; NIDS sends nothing in round 0
    "exact_diffusion": ({}, lambda: tf.topologies.ring(N),
                        lambda r: [(RING, RING * P * F)] * 2),
    "nids": ({}, lambda: tf.topologies.ring(N), lambda r: [(0, 0), (RING, RING * P * F)]),
    # K-GT: the model and z on every arc, once per K local steps; LED: the model
    "kgt": ({}, lambda: tf.topologies.ring(N),
            lambda r: [(2 * RING, 2 * RING * P * F)] * 2),
    "led": ({}, lambda: tf.topologies.ring(N), lambda r: [(RING, RING * P * F)] * 2),
    # ProxSkip: the model on every arc in its coin's rounds only (coin_seed=1: round 0
    # skips, round 1 sends); DLM: the model on every arc, every round
    "proxskip": (dict(comm_probability=0.5, coin_seed=1), lambda: tf.topologies.ring(N),
                 lambda r: [(0, 0), (RING, RING * P * F)]),
    "dlm": ({}, lambda: tf.topologies.ring(N), lambda r: [(RING, RING * P * F)] * 2),
    # GT-SAGA and GT-SARAH: the model and the tracker on every arc, as gradient tracking's
    "gt_saga": ({}, lambda: tf.topologies.ring(N),
                lambda r: [(2 * RING, 2 * RING * P * F)] * 2),
    "gt_sarah": ({}, lambda: tf.topologies.ring(N),
                 lambda r: [(2 * RING, 2 * RING * P * F)] * 2),
    "el": ({}, _cycle, lambda r: [(N, N * P * F)] * 2),
    # CHOCO, top-k 10 %: k = 61 of the 610 parameters, as float32 values with int32 indices
    # attached, on every arc
    "choco": ({}, lambda: tf.topologies.ring(N), lambda r: [(RING, RING * 61 * (F + 4))] * 2),
    # Teleportation, 2 models on 4 nodes: gossip between the pair, then the teleports
    "teleport": (dict(k=2), None, lambda r: _teleport(2)),
    # AD-PSGD, every client once a window (durations = window = 1): each event's pair
    # exchanges its two models, both ways
    "adpsgd": ({}, lambda: tf.topologies.ring(N), lambda r: [(2 * N, 2 * N * P * F)] * 2),
    # gossip learning, every client sends once a window (durations = window = 1) and the N
    # layers run every send: one model a sender, to one neighbour, no reply
    "gossip_learning": (dict(layers=N), lambda: tf.topologies.ring(N),
                        lambda r: [(N, N * P * F)] * 2),
    # Morph, in-degree 2 of its own graph: each node receives its 2 in-neighbours' models
    # (the in-degree never changes when it rewires)
    "morph": (dict(degree=2), None, lambda r: [(2 * N, 2 * N * P * F)] * 2),
}
EXTRA: dict[str, tuple[str, Case]] = {
    # Clique Averaging, 2 local steps: a gradient per step on the 4 arcs within cliques
    "dsgd_cliques": ("dsgd", (dict(clique_averaging=True, local_steps=2), _cliques,
                              lambda r: [(6 + 2 * 4, (6 + 8) * P * F)] * 2)),
    "dpfl_random": ("dpfl", (dict(graph="random", budget=2, tau_init=0.0), None,
                             lambda r: [(2 * N * 2, 2 * N * 2 * P * F), (N * 2, N * 2 * P * F)])),
    "pfeddst_random": ("pfeddst", (dict(peers=2, selection="random"), None,
                                   lambda r: [(N * 2, N * 2 * BODY * F)] * 2)),
    "fedavg_sampled": ("fedavg", (dict(participation=0.5), None, lambda r: [_server(P, 2)] * 2)),
    "scaffold_sampled": ("scaffold", (dict(participation=0.5), None,
                                      lambda r: [(4, 2 * _server(P, 2)[1])] * 2)),
    "fedopt_sampled": ("fedopt", (dict(participation=0.5, optimizer="yogi"), None,
                                  lambda r: [_server(P, 2)] * 2)),
    "fednova_sampled": ("fednova", (dict(participation=0.5), None,
                                    lambda r: [(4, _server(P, 2)[1] + 2 * F)] * 2)),
    "feddyn_sampled": ("feddyn", (dict(participation=0.5), None,
                                  lambda r: [_server(P, 2)] * 2)),
    "sgp_sampled": ("sgp", (dict(participation=0.5),
                            lambda: tf.topologies.ring(N, weights="push_sum"),
                            None)),  # checked against the active graph below
}


def test_every_registry_algorithm_has_a_hand_count() -> None:
    assert set(CASES) == set(ALGORITHMS)


_STEPS: dict[str, dict[str, int]] = {  # little local work: the counts do not depend on it
    "fedrep": dict(head_steps=1, body_steps=1),
    "pfeddst": dict(local_steps=1, head_steps=1),
    "dfedpgp": dict(local_steps_u=1, local_steps_v=1),
    "dfedavgm_p": dict(local_steps_u=1, local_steps_v=1),
    "ditto": dict(local_steps=1, personal_steps=1),
    "fedavg_ft": dict(local_steps=1, finetune_steps=1),
    "fedprox_ft": dict(local_steps=1, finetune_steps=1),
    "fedbabu": dict(local_steps=1, finetune_steps=1),
    "perfedavg": dict(local_steps=1, adapt_steps=1),
    "dsgt": {}, "extra": {},  # one gradient a round, always
    "exact_diffusion": {}, "nids": {},
    "kgt": dict(local_steps=2), "led": dict(local_steps=2),
    "proxskip": {}, "dlm": {},
    "choco": dict(local_steps=1),
    "gt_saga": {}, "gt_sarah": {},
}


def _run(name: str, kw: dict[str, Any], topo: Any) -> Any:
    kw = {**_STEPS.get(name, {"local_steps": 1}), **kw}
    return tf.run(name, topo, _data(), _model(), 2, seed=0, batch_size=8, spectral=False,
                  progress=False, **kw)


@pytest.mark.parametrize("case", sorted(CASES) + sorted(EXTRA))
def test_ledger_counts_equal_hand_counts(case: str) -> None:
    name, (kw, topo_fn, expected) = (case, CASES[case]) if case in CASES else EXTRA[case]
    topo = None if topo_fn is None else topo_fn()
    res = _run(name, kw, topo)
    r = res.records
    _, msgs = r.series("round_messages")
    _, nbytes = r.series("round_bytes")
    if expected is None:  # sampled push-sum: the arcs of the active graph of each round
        from topofl.engine.pieces import participants
        want = []
        for t in range(2):
            on = set(participants(N, t, 0.5, 0) or range(N))
            arcs = sum(1 for j, i in topo.graph.edges() if i in on and j in on)
            want.append((arcs, arcs * (P + 1) * F))
    else:
        want = expected(res)
    assert list(zip(msgs.astype(int).tolist(), nbytes.astype(int).tolist())) == want
    # the totals are the running sums, and the per-client bytes add up to them
    assert r.final("messages") == sum(m for m, _ in want)
    assert r.final("bytes") == sum(b for _, b in want)
    sent = r.per_client("bytes_sent", 1)
    server = r.final("server_bytes_sent") if "server_bytes_sent" in r.metrics else 0.0
    assert sent.sum() + server == r.final("bytes")


def test_per_node_bytes_follow_the_degrees() -> None:
    star = tf.Topology.from_networkx(nx.star_graph(N - 1))  # hub 0 sends 3, leaves 1 each
    res = _run("dsgd", {}, star)
    np.testing.assert_array_equal(res.records.per_client("bytes_sent", 1),
                                  np.array([3, 1, 1, 1]) * 2 * P * F)
    np.testing.assert_array_equal(res.records.per_client("bytes_received", 1),
                                  np.array([3, 1, 1, 1]) * 2 * P * F)


def test_server_bytes_are_recorded() -> None:
    res = _run("fedper", {}, None)
    assert res.records.final("server_bytes_sent") == 2 * N * BODY * F
    assert res.records.final("server_bytes_received") == 2 * N * BODY * F


def test_ledger_off_keeps_the_message_total_only() -> None:
    on = _run("dsgd", {}, tf.topologies.ring(N))
    off = _run("dsgd", {"ledger": False}, tf.topologies.ring(N))
    assert off.records.final("messages") == on.records.final("messages") == 2 * RING
    assert "round_bytes" not in off.records.metrics and "bytes.model" not in off.records.metrics
    np.testing.assert_array_equal(on.records.series("test_acc_mean")[1],
                                  off.records.series("test_acc_mean")[1])
    with pytest.raises(ValueError, match="needs ledger=True"):
        _run("dsgd", {"ledger": False, "network": {"latency": 1.0}}, tf.topologies.ring(N))


def test_sent_messages_equal_their_flows_for_every_piece() -> None:
    env = tf.engine.toy_services(N, 3)
    x = torch.zeros(N, 3, dtype=torch.float64)
    for algo in (tf.algorithms.dsgd(), tf.algorithms.sgp(), tf.algorithms.osgp(),
                 tf.algorithms.fedavg(), tf.algorithms.local()):
        topo = (tf.topologies.ring(N, weights="push_sum") if algo.requires == "column"
                else tf.topologies.ring(N))
        state = algo.init(x.clone(), env)
        sent = algo.communicate(state, tf.engine.Round(0, topo if algo.uses_topology else None),
                                env)
        assert sent.flows is not None
        assert sent.messages == sum(f.messages for f in sent.flows)
        assert all(f.bits == 64 for f in sent.flows)
