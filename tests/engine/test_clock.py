"""The virtual clock: toy rounds with known critical paths, a slow per-node reference against
the vectorised clock, the network's values (constants, distributions, traces), and runs that
record simulated time."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.engine.clock import Clock, Network, Values
from topofl.engine.ledger import Arcs, Flow, graph_arcs, server_arcs


def _ring_flow(n: int, size: int = 1, **kw: Any) -> Flow:
    return Flow("model", graph_arcs(tf.topologies.ring(n)), size, 8, **kw)


# ---------------------------------------------------------------------------- toy critical paths
def test_a_path_waits_for_its_slow_end_one_hop_per_round() -> None:
    # path 0 - 1 - 2 - 3, node 0 takes 10 s to compute, the others 1 s, no network cost: the
    # slowness travels one hop per round
    path = tf.Topology.from_networkx(nx.path_graph(4))
    clock = Clock(Network(speed=1.0), 4)
    flow = Flow("model", graph_arcs(path), 1, 8)
    work = np.array([10.0, 1.0, 1.0, 1.0])
    clock.advance(0, work, [flow])
    assert clock.T[:4].tolist() == [10.0, 10.0, 1.0, 1.0]
    clock.advance(1, work, [flow])
    assert clock.T[:4].tolist() == [20.0, 20.0, 11.0, 2.0]
    assert clock.advance(2, work, [flow]) == 30.0
    assert clock.T[:4].tolist() == [30.0, 30.0, 21.0, 12.0]


def test_latency_and_a_shared_uplink_on_a_star() -> None:
    # the hub sends 1000 bytes to each of 4 leaves over a 1000 B/s uplink: its messages share
    # it, so each arrives after 0.1 s latency + 4 s; the leaves' own messages (1 s each on
    # the leaves' uplinks) reach the hub at 1.1 s
    star = tf.Topology.from_networkx(nx.star_graph(4))
    clock = Clock(Network(latency=0.1, uplink=1000.0), 5)
    flow = Flow("model", graph_arcs(star), size=1000, bits=8)
    t = clock.advance(0, np.zeros(5), [flow])
    assert t == pytest.approx(4.1)
    np.testing.assert_allclose(clock.T[:5], [1.1, 4.1, 4.1, 4.1, 4.1])
    # a 500 B/s downlink at the hub: the four messages into it share it, 8 s
    clock = Clock(Network(latency=0.1, uplink=1000.0, downlink=500.0), 5)
    clock.advance(0, np.zeros(5), [flow])
    np.testing.assert_allclose(clock.T[:5], [8.1, 4.1, 4.1, 4.1, 4.1])


def test_a_server_round_downloads_computes_then_uploads() -> None:
    # 3 clients computing 1, 2, 3 s; the server sends 100 B to each before (stage -1) and
    # receives 100 B from each after (stage 0), 10 ms latency, server links of 100 B/s shared
    n = 3
    clock = Clock(Network(latency=0.01, speed=1.0, server_uplink=100.0,
                          server_downlink=100.0), n)
    down = Flow("model", server_arcs(n, None, "down"), 100, 8, stage=-1)
    up = Flow("model", server_arcs(n, None, "up"), 100, 8, stage=0)
    t = clock.advance(0, np.array([1.0, 2.0, 3.0]), [up, down])
    # download: 3 x 100 B over 100 B/s = 3 s (+0.01); compute; upload into the shared 100 B/s
    # downlink of the server: 3 s after each client is ready
    ready = 3.01 + np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(clock.T[:n], ready)
    assert t == pytest.approx(ready.max() + 0.01 + 3.0) == clock.T[n]


def test_a_lagged_message_is_waited_for_a_round_later() -> None:
    # OSGP's overlap: 5 s of latency, 1 s of computing. A round's messages leave when its
    # computation ends and are waited for at the end of the next round: round 0 ends at 1 s
    # (its messages arrive at 6 s), round 1 computes until 2 s, sends (arriving at 7 s) and
    # waits for round 0's until 6 s; round 2 computes until 7 s and has round 1's by then...
    clock = Clock(Network(latency=5.0, speed=1.0), 4)
    f = _ring_flow(4, lag=1)
    assert [clock.advance(t, np.ones(4), [f]) for t in range(6)] == [1, 6, 7, 12, 13, 18]
    # ... two rounds per latency + computation, where waiting every round takes 6 s a round
    without = Clock(Network(latency=5.0, speed=1.0), 4)
    assert [without.advance(t, np.ones(4), [_ring_flow(4)]) for t in range(2)] == [6, 12]


def test_repeated_exchanges_and_stragglers_add_up() -> None:
    clock = Clock(Network(latency=0.5, speed=2.0), 3)
    f = Flow("gradient", graph_arcs(tf.topologies.ring(3)), 1, 8, repeat=4)
    # compute 2 FLOP / 2 FLOP/s = 1 s, a 3x straggler at node 1: 3 s; then 4 exchanges of
    # 0.5 s: nodes 0 and 2 wait for the straggler (3 + 2 s), the straggler for nobody (its
    # neighbours' gradients came at 1 + 2 s)
    assert clock.advance(0, np.array([2.0, 6.0, 2.0]), [f]) == pytest.approx(3.0 + 2.0)
    np.testing.assert_allclose(clock.T[:3], [5.0, 3.0, 5.0])


def test_idle_nodes_keep_their_clock_and_the_round_time_is_the_max() -> None:
    clock = Clock(Network(latency=1.0, speed=1.0), 4)
    clock.advance(0, np.ones(4), [_ring_flow(4)])
    assert clock.T[:4].tolist() == [2.0] * 4
    # node 3 offline: no work, no arcs (the active graph 0 - 1 - 2)
    path = tf.Topology.from_matrix(tf.engine.pieces.active_topology(
        tf.topologies.ring(4), [0, 1, 2]).W)
    clock.advance(1, np.array([1.0, 1.0, 1.0, 0.0]), [Flow("model", graph_arcs(path), 1, 8)])
    assert clock.T[:4].tolist() == [4.0, 4.0, 4.0, 2.0]
    assert clock.time == 4.0


def _reference(T: np.ndarray, pending: np.ndarray, compute: np.ndarray, flows: list[Flow],
               net: Network) -> tuple[np.ndarray, np.ndarray]:
    """The clock's rule, one node and one message at a time."""
    n1 = T.size
    R = T.copy()
    lagged = np.zeros(n1)
    up = np.array([net.uplink.per_node(n1 - 1, seed=net.seed, t=0)[i] for i in range(n1 - 1)]
                  + [net.server_uplink])
    down = np.array([net.downlink.per_node(n1 - 1, seed=net.seed, t=0)[i]
                     for i in range(n1 - 1)] + [net.server_downlink])
    stages = sorted({f.stage for f in flows})
    order = [s for s in stages if s < 0] + [None] + [s for s in stages if s >= 0]
    for s in order:
        if s is None:
            for i in range(n1 - 1):
                R[i] += compute[i]
            continue
        fl = [f for f in flows if f.stage == s]
        out_b, in_b = [0.0] * n1, [0.0] * n1
        msgs: list[list[Any]] = []
        for f in fl:
            first = len(msgs)
            for e in range(len(f.arcs)):
                j, i = int(f.arcs.senders[e]), int(f.arcs.receivers[e])
                b = float(f.message_bytes()[e])
                out_b[j] += b
                in_b[i] += b
                if f.attached:  # in the message of the flow before, on the same arc
                    msgs[first - len(f.arcs) + e][4] += b
                else:
                    msgs.append([f, e, j, i, b])
        new = R.copy()
        for f, e, j, i, b in msgs:
            lat = (net.latency.constant if net.latency.constant is not None
                   else float(np.atleast_1d(net.latency.per_arc(f.arcs, seed=net.seed))[e]))
            bw = net.bandwidth.constant
            link = 0.0 if b == 0 else b / bw
            share = max(out_b[j] / up[j] if out_b[j] else 0.0,
                        in_b[i] / down[i] if in_b[i] else 0.0)
            arrive = R[j] + f.repeat * (lat + max(link, share))
            if f.lag:
                lagged[i] = max(lagged[i], arrive)
            else:
                new[i] = max(new[i], arrive)
        R = new
    R = np.maximum(R, pending)
    return R, lagged


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 9), p=st.floats(0.2, 1.0), seed=st.integers(0, 10**6),
       rounds=st.integers(1, 3))
def test_the_clock_equals_the_per_node_reference(n: int, p: float, seed: int,
                                                  rounds: int) -> None:
    rng = np.random.default_rng(seed)
    net = Network(latency={"dist": "uniform", "low": 0.0, "high": 0.2}, bandwidth=5e3,
                  uplink={"dist": "lognormal", "median": 2e3, "sigma": 0.5},
                  downlink=3e3, speed=1.0, server_uplink=4e3, server_downlink=1e3, seed=seed)
    clock = Clock(net, n)
    T, pend = np.zeros(n + 1), np.zeros(n + 1)
    for t in range(rounds):
        A = rng.random((n, n)) < p
        np.fill_diagonal(A, False)
        arcs = Arcs.from_pairs(n, *np.nonzero(A.T))  # A[i, j]: j -> i
        flows = [Flow("model", arcs, 100 + int(rng.integers(0, 900)), 8, stage=0),
                 Flow("weight", arcs, 1, 64, stage=0, attached=True),
                 Flow("model", server_arcs(n, rng.random(n) < 0.5, "down"), 50, 8, stage=-1),
                 Flow("probe", arcs, 10, 32, stage=2, repeat=2),
                 Flow("model", arcs, 7, 8, stage=1, lag=1)]
        work = rng.random(n) * 3
        got = clock.advance(t, work, flows)
        T, pend = _reference(T, pend, work, flows, net)
        np.testing.assert_allclose(clock.T, T, rtol=1e-12, atol=1e-12)
        assert got == pytest.approx(T.max(), rel=1e-12)


# ---------------------------------------------------------------------------- the network's values
def test_values_constants_distributions_and_pairs() -> None:
    assert Values.parse(3, "speed").per_node(2, seed=0, t=5).tolist() == [3.0, 3.0]
    u = Values.parse({"dist": "uniform", "low": 2, "high": 4}, "latency")
    a = u.per_node(1000, seed=1, t=0)
    assert 2 <= a.min() and a.max() <= 4 and abs(a.mean() - 3) < 0.1
    assert np.array_equal(a, u.per_node(1000, seed=1, t=7))  # one draw per node for the run
    assert not np.array_equal(a, u.per_node(1000, seed=2, t=0))
    e = Values.parse({"dist": "exponential", "mean": 2.0}, "latency").per_node(20000, seed=0,
                                                                              t=0)
    assert abs(e.mean() - 2.0) < 0.05
    ln = Values.parse({"dist": "lognormal", "median": 5.0, "sigma": 1.0}, "uplink")
    assert abs(np.median(ln.per_node(20000, seed=0, t=0)) - 5.0) < 0.15
    arcs = Arcs.from_pairs(3, [0, 1, 2, 0], [1, 0, 0, 2])
    lat = u.per_arc(arcs, seed=4)
    pairs = list(zip(arcs.senders.tolist(), arcs.receivers.tolist()))
    assert lat[pairs.index((0, 1))] == lat[pairs.index((1, 0))]  # a link is symmetric
    assert u.per_arc(arcs, seed=4) is lat  # cached per arcs


@pytest.mark.parametrize(("value", "match"), [
    (-1, ">= 0"), ("fast", "must be a number"), ({"dist": "normal"}, "dist must be one of"),
    ({"dist": "uniform", "low": 1}, "missing"), ({"dist": "uniform", "low": 3, "high": 1},
                                                 "low must be <= high"),
    ({"trace": "/nonexistent.csv"}, "does not exist"), (True, "must be a number"),
])
def test_bad_values_are_refused(value: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Values.parse(value, "latency", zero_ok=True)


def test_network_tables_round_trip_and_refuse_unknown_keys() -> None:
    net = Network.from_config({"latency": 0.05, "speed": {"dist": "uniform", "low": 1,
                                                           "high": 2}, "seed": 3})
    again = Network.from_config(net.to_config())
    assert again.to_config() == net.to_config()
    assert net.to_config()["bandwidth"] == math.inf
    with pytest.raises(ValueError, match="unknown key"):
        Network.from_config({"latency": 1, "delay": 2})
    with pytest.raises(ValueError, match="one server"):
        Network.from_config({"server_uplink": {"dist": "exponential", "mean": 1}})


def test_traces_per_node_per_round_and_per_link(tmp_path: Path) -> None:
    node = tmp_path / "speed.csv"
    node.write_text("# FLOP/s of 3 clients, two rounds\n1,2,3\n4,5,6\n")
    v = Values.parse({"trace": str(node)}, "speed")
    assert v.per_node(3, seed=0, t=0).tolist() == [1, 2, 3]
    assert v.per_node(3, seed=0, t=3).tolist() == [4, 5, 6]  # rows cycle
    # n + 1 values: 2 clients and the server last (documented); one value too few is refused,
    # never read as "the last client is infinitely fast"
    assert v.per_node(2, seed=0, t=0).tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match=r"one per client \(4\), or 5 with the server last"):
        v.per_node(4, seed=0, t=0)
    with pytest.raises(ValueError, match="per client"):
        v.per_node(7, seed=0, t=0)
    link = tmp_path / "lat.txt"
    link.write_text("0 1 2\n1 0 3\n2 3 0\n")
    lat = Values.parse({"trace": str(link)}, "latency", zero_ok=True)
    arcs = Arcs.from_pairs(2, [0, 2, 1], [1, 1, 2])
    assert lat.per_arc(arcs, seed=0).tolist() == [1.0, 3.0, 3.0]
    bad = tmp_path / "bad.csv"
    bad.write_text("1,2\n3\n")
    with pytest.raises(ValueError, match="different lengths"):
        Values.parse({"trace": str(bad)}, "speed")


# ---------------------------------------------------------------------------- runs
def test_a_run_records_simulated_time_from_flops_and_latency() -> None:
    data = tf.data.federate("digits", "iid", 4, seed=0)
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    fps = tf.models.flops_per_sample(model, backward=True)
    res = tf.run("dsgd", "ring", data, model, 3, seed=0, batch_size=8, local_steps=2,
                 spectral=False, network={"latency": 0.25, "speed": 1e6}, eval_every=1)
    _, t = res.records.series("sim_time")
    per_round = 2 * 8 * fps / 1e6 + 0.25  # every client alike: compute, then one hop
    np.testing.assert_allclose(t, per_round * np.arange(1, 4), rtol=1e-12)
    assert res.records.time_to(0.0) == pytest.approx(per_round)


def test_an_algorithm_without_flows_cannot_be_timed() -> None:
    algo = tf.algorithms.dsgd()
    algo = algo._replace(communicate=lambda s, r, e: tf.engine.Sent(
        tf.engine.pieces.gossip()(s, r, e).messages))
    data = tf.data.federate("digits", "iid", 4, seed=0)
    res = tf.run(algo, "ring", data, "logistic", 1, batch_size=8, spectral=False)
    assert res.records.final("messages") == 8  # counted without senders
    with pytest.raises(ValueError, match="cannot time"):
        tf.run(algo, "ring", data, "logistic", 1, batch_size=8, spectral=False,
               network={"latency": 1.0})


def test_a_per_node_trace_with_the_server_last_sets_the_server_link(tmp_path: Path) -> None:
    up = tmp_path / "up.csv"
    up.write_text("1e6,2e6,3e6,5e6\n")  # 3 clients, then the server
    clock = Clock(Network.from_config({"uplink": {"trace": str(up)}, "server_uplink": 7.0}), 3)
    _, ups, _ = clock.node_values(0)
    assert ups.tolist() == [1e6, 2e6, 3e6, 5e6]  # the trace's server value, not 7
    clock = Clock(Network.from_config({"uplink": {"trace": str(up)}, "server_uplink": 7.0}), 4)
    _, ups, _ = clock.node_values(0)
    assert ups.tolist() == [1e6, 2e6, 3e6, 5e6, 7.0]  # 4 clients: the server's own setting


def test_a_trace_records_its_content_and_an_edited_one_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "speed.csv"
    f.write_text("1,2,3\n")
    cfg = Network.from_config({"speed": {"trace": str(f)}}).to_config()["speed"]
    assert cfg["trace"] == str(f) and len(cfg["sha256"]) == 16
    assert Values.parse(cfg, "speed").per_node(3, seed=0, t=0).tolist() == [1, 2, 3]
    f.write_text("1,2,4\n")
    with pytest.raises(ValueError, match=r"speed\.csv' changed since the run"):
        Values.parse(cfg, "speed")
    with pytest.raises(ValueError, match="no other key"):
        Values.parse({"trace": str(f), "sha": "x"}, "speed")


def test_an_edited_trace_is_caught_by_resume_and_replay(tmp_path: Path) -> None:
    f = tmp_path / "speed.csv"
    f.write_text("1e6,2e6,3e6,4e6\n")
    kw: dict[str, Any] = dict(data="digits", n_clients=4, partition="iid", batch_size=8,
                              spectral=False, network={"speed": {"trace": str(f)}})
    ck = tmp_path / "run.ckpt"
    tf.run("dsgd", "ring", model="logistic", rounds=2, seed=0, checkpoint_path=str(ck),
           checkpoint_every=1, records_path=str(tmp_path / "a.jsonl"), **kw)
    header = tf.config.read_header(tmp_path / "a.jsonl")
    assert header["config"]["network"]["speed"]["sha256"] == \
        Values.parse({"trace": str(f)}, "speed").to_config()["sha256"]
    f.write_text("1e6,2e6,3e6,5e6\n")
    with pytest.raises(ValueError, match=r"network\.speed.*speed\.csv"):
        tf.run("dsgd", "ring", model="logistic", rounds=3, seed=0, resume=str(ck),
               records_path=str(tmp_path / "b.jsonl"), **kw)
    with pytest.raises(ValueError, match=r"speed\.csv' changed since the run"):
        tf.config.replay(tmp_path / "a.jsonl", records_path=str(tmp_path / "c.jsonl"))
