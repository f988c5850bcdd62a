"""Dropped messages (``[network] drop = p``): the renormalise rule of D-SGD-style gossip, the
lost mass of push-sum, the ledger's sent = delivered + dropped, the clock timing the delivered
messages only, seeded drops, refusals and bad values; ``drop = 0`` is the run without the key.
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.engine.clock import Network
from topofl.engine.drops import Drops, check_drop, lossy, message_uniform
from topofl.engine.pieces import PushSum, PushSumState, gossip
from topofl.engine.protocol import Round, State

# ----------------------------------------------------------------------------- helpers


def _data() -> Any:
    return tf.data.federate("digits", "iid", 6, seed=0)


def _run(algorithm: str = "dsgd", network: dict[str, Any] | None = None,
         topology: str = "ring", rounds: int = 4, **kw: Any) -> Any:
    data = _data()
    return tf.run(algorithm, topology, data, "logistic", rounds, seed=0, batch_size=8,
                  spectral=False, network=network, **kw)


def _rows(res: Any) -> list[tuple[Any, ...]]:
    """The records' rows without the wall-clock time (the one row that differs run to run)."""
    return [(r["round"], r["client"], r["metric"], r["value"]) for r in res.records.to_rows()
            if r["metric"] != "wall_time"]


def _pairs(arcs: Any) -> list[tuple[int, int]]:
    return list(zip(arcs.senders.tolist(), arcs.receivers.tolist(), strict=True))


# The round-0 pattern of a 3-ring at p = 0.3, network seed 17: 1 -> 0 and 0 -> 2 are lost.
RING3 = Drops(0.3, seed=17, t=0)


# ----------------------------------------------------------------------------- drop = 0, = 1


def test_drop_zero_is_bit_identical_to_no_drop_key() -> None:
    base = _run(network={"latency": 0.01, "speed": 1e9})
    zero = _run(network={"latency": 0.01, "speed": 1e9, "drop": 0})
    assert _rows(base) == _rows(zero)
    assert base.records.engine == zero.records.engine  # header and run hash alike
    assert torch.equal(base.state.x, zero.state.x)
    assert "drop" not in Network.from_config({"drop": 0.0}).to_config()
    for algo in ("sgp", "osgp"):  # push-sum's path too
        a = _run(algo, {"latency": 0.01}, topology="ring", rounds=3)
        b = _run(algo, {"latency": 0.01, "drop": 0.0}, topology="ring", rounds=3)
        assert _rows(a) == _rows(b)


def test_drop_one_means_no_mixing_for_dsgd() -> None:
    data = _data()
    lone = tf.run("local", None, data, "logistic", 4, seed=0, batch_size=8, spectral=False)
    cut = tf.run("dsgd", "ring", data, "logistic", 4, seed=0, batch_size=8, spectral=False,
                 network={"drop": 1.0})
    assert torch.equal(lone.state.x, cut.state.x)  # every model evolved alone
    rec = cut.records
    assert rec.final("messages_delivered") == 0
    assert rec.final("messages_dropped") == rec.final("messages") == 4 * 12
    # the renormalised matrix of every round is the identity
    lo = lossy(tf.topologies.ring(6), Drops(1.0, seed=0, t=5), "renormalise")
    assert np.array_equal(lo.topology.to_dense(), np.eye(6))


def test_a_node_that_lost_everything_and_gives_itself_no_weight_keeps_its_model() -> None:
    swap = tf.Topology.from_matrix([[0.0, 1.0], [1.0, 0.0]], name="swap")
    lo = lossy(swap, Drops(1.0, seed=0, t=0), "renormalise")
    assert lo.topology.to_dense().tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert lossy(swap, Drops(1.0, seed=0, t=0), "mass").topology.to_dense().tolist() == [
        [0.0, 0.0], [0.0, 0.0]]  # push-sum: both masses lost


# ----------------------------------------------------------------------------- hand-computed


def test_the_3_ring_pattern_is_the_documented_one() -> None:
    lo = lossy(tf.topologies.ring(3), RING3, "renormalise")
    assert _pairs(lo.dropped) == [(1, 0), (0, 2)]
    assert _pairs(lo.delivered) == [(2, 0), (0, 1), (2, 1), (1, 2)]


def test_renormalise_by_hand_on_3_nodes() -> None:
    env = tf.engine.toy_services(3)
    s = State(x=torch.tensor([[0.0], [3.0], [6.0]], dtype=torch.float64))
    sent = gossip()(s, Round(0, tf.topologies.ring(3), drop=RING3), env)
    # node 0 lost 1's model: (0 + 6) / 2; node 1 got everything: (0 + 3 + 6) / 3;
    # node 2 lost 0's model: (3 + 6) / 2
    assert s.x.flatten().tolist() == [3.0, 3.0, 4.5]
    assert sent.messages == 4 and sent.dropped is not None
    assert [f.messages for f in sent.dropped] == [2]


def test_push_sum_loses_the_mass_by_hand_on_3_nodes() -> None:
    env = tf.engine.toy_services(3)
    push = PushSum()
    s = State(x=torch.tensor([[0.0], [3.0], [6.0]], dtype=torch.float64))
    push.init_(s, env)
    sent = push(s, Round(0, tf.topologies.ring(3), drop=RING3), env)
    third = 1 / 3
    # x_0 = (0 + 6) / 3 (1's third lost), x_1 = (0 + 3 + 6) / 3, x_2 = (3 + 6) / 3 (0's lost)
    assert s.x.flatten().tolist() == pytest.approx([2.0, 3.0, 3.0], abs=1e-15)
    assert s.weight is not None
    assert s.weight.tolist() == pytest.approx([2 * third, 1.0, 2 * third], abs=1e-15)
    z = s.own_as(PushSumState).z.flatten().tolist()
    assert z == pytest.approx([3.0, 3.0, 4.5], abs=1e-14)
    assert sent.dropped is not None
    assert [(f.kind, f.messages, len(f.arcs)) for f in sent.dropped] == [
        ("model", 2, 2), ("weight", 0, 2)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lossy_gossip_equals_a_per_client_loop(seed: int) -> None:
    topo = tf.topologies.erdos_renyi(15, 0.3, seed=seed)
    W = topo.to_dense()
    env = tf.engine.toy_services(15, 3)
    x0 = torch.as_tensor(np.random.default_rng(seed).normal(size=(15, 3)))
    s = State(x=x0.clone())
    drop = Drops(0.35, seed=seed, t=4)
    gossip()(s, Round(4, topo, drop=drop), env)
    arcs = tf.engine.ledger.graph_arcs(topo)
    lost = set(_pairs(arcs.keep(drop.lost(arcs))))
    for i in range(15):  # the obvious way: average what arrived, own model included
        got = [j for j in range(15) if W[i, j] > 0 and (j == i or (j, i) not in lost)]
        w = np.array([W[i, j] for j in got])
        want = (w[:, None] * x0.numpy()[got]).sum(0) / w.sum()
        np.testing.assert_allclose(s.x[i].numpy(), want, rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------- push-sum mass


def _directed(n: int = 7) -> tf.Topology:
    G = nx.DiGraph([(i, (i + 1) % n) for i in range(n)] + [(i, (i + 3) % n) for i in range(n)])
    return tf.Topology.from_networkx(G, weights="push_sum")


@pytest.mark.parametrize("overlap", [False, True])
def test_push_sum_mass_accounting_and_debiased_consensus(overlap: bool) -> None:
    topo = _directed()
    n = topo.n
    W = topo.to_dense()
    env = tf.engine.toy_services(n, 2)
    push = PushSum(overlap=overlap)
    gen = np.random.default_rng(0)
    s = State(x=torch.as_tensor(gen.normal(size=(n, 2))))
    push.init_(s, env)
    assert s.weight is not None
    own = s.own_as(PushSumState)

    def total(which: str) -> np.ndarray:
        x = (s.x if which == "x" else s.weight.unsqueeze(1)).sum(0)
        extra = own.inflight_x if which == "x" else own.inflight_w
        if extra is not None:
            x = x + (extra if which == "x" else extra.unsqueeze(1)).sum(0)
        return x.numpy().copy()

    lost_any = False
    for t in range(200):
        drop = Drops(0.25, seed=3, t=t)
        gone = lossy(topo, drop, "mass").dropped
        carried_x = (W[gone.receivers, gone.senders][:, None] * s.x.numpy()[gone.senders]
                     ).sum(0)
        carried_w = (W[gone.receivers, gone.senders] * s.weight.numpy()[gone.senders]).sum()
        bx, bw = total("x"), total("w")
        push(s, Round(t, topo, drop=drop), env)
        # what was not dropped is what is left: in the nodes and (overlap) in flight
        np.testing.assert_allclose(total("x"), bx - carried_x, rtol=0, atol=1e-12)
        np.testing.assert_allclose(total("w"), bw - carried_w, rtol=0, atol=1e-12)
        lost_any |= len(gone) > 0
    assert lost_any
    assert float(s.weight.sum()) < 1e-3 * n  # mass was lost (geometrically)
    # the de-biased models agree, on the average of the surviving mass
    if overlap:  # deliver what is in flight: one more round without sends
        s.x.add_(own.inflight_x)
        s.weight.add_(own.inflight_w)
    z = (s.x / s.weight.unsqueeze(1)).numpy()
    surviving = s.x.sum(0).numpy() / float(s.weight.sum())
    np.testing.assert_allclose(z, np.broadcast_to(surviving, z.shape), rtol=1e-6, atol=1e-9)


def test_sgp_runs_with_drops_and_loses_weight() -> None:
    res = _run("sgp", {"drop": 0.3}, topology="random_directed_push:k=2", rounds=3)
    assert res.state.weight is not None
    assert float(res.state.weight.sum()) < 6.0
    rec = res.records
    assert rec.final("messages_dropped") > 0


# ----------------------------------------------------------------------------- ledger, clock


@pytest.mark.parametrize("algorithm", ["dsgd", "dfedavgm", "sgp", "osgp"])
def test_the_ledger_adds_up(algorithm: str) -> None:
    rounds = 5
    res = _run(algorithm, {"drop": 0.3}, rounds=rounds)
    rec = res.records
    for what in ("messages", "bytes"):
        sent, delivered, dropped = (rec.final(f"{what}{k}")
                                    for k in ("", "_delivered", "_dropped"))
        assert sent == delivered + dropped and dropped > 0 and delivered > 0
    assert rec.final("messages") == 12 * rounds  # a 6-ring: 12 messages a round, all sent
    _, per_round = rec.series("round_messages")
    _, per_round_dropped = rec.series("round_messages_dropped")
    assert per_round.sum() == rec.final("messages")
    assert per_round_dropped.sum() == rec.final("messages_dropped")
    last = rounds - 1
    sent_b = rec.per_client("bytes_sent", last).sum()
    received_b = rec.per_client("bytes_received", last).sum()
    assert sent_b == rec.final("bytes")
    assert received_b == rec.final("bytes_delivered")


def test_the_clock_times_only_the_delivered_messages() -> None:
    net = {"latency": 1.0}
    _, t_all = _run(network=net, rounds=3).records.series("sim_time")
    _, t_none = _run(network={**net, "drop": 1.0}, rounds=3).records.series("sim_time")
    np.testing.assert_array_equal(t_all, [1.0, 2.0, 3.0])  # one hop a round
    np.testing.assert_array_equal(t_none, [0.0, 0.0, 0.0])  # nothing arrives: no waiting


# ----------------------------------------------------------------------------- seeds


def test_same_seed_same_drops_another_seed_others() -> None:
    a = _run(network={"drop": 0.4, "seed": 5})
    b = _run(network={"drop": 0.4, "seed": 5})
    c = _run(network={"drop": 0.4, "seed": 6})
    assert _rows(a) == _rows(b)
    assert _rows(a) != _rows(c)
    # the drop stream is its own: the latency's distribution does not move it
    d = _run(network={"drop": 0.4, "seed": 5,
                      "latency": {"dist": "uniform", "low": 0.1, "high": 0.2}})
    _, da = a.records.series("round_messages_dropped")
    _, dd = d.records.series("round_messages_dropped")
    assert np.array_equal(da, dd)
    assert torch.equal(a.state.x, d.state.x)


def test_message_draws_are_indexed_not_consumed() -> None:
    arcs = tf.engine.ledger.graph_arcs(tf.topologies.ring(8))
    drop = Drops(0.5, seed=2, t=7)
    sub = arcs.keep(arcs.senders % 2 == 0)  # fewer arcs (a sample): the same fate for each
    full = dict(zip(_pairs(arcs), drop.lost(arcs).tolist(), strict=True))
    assert [full[p] for p in _pairs(sub)] == drop.lost(sub).tolist()
    u = message_uniform(2, 7, arcs.senders, arcs.receivers)
    assert np.array_equal(drop.lost(arcs), u < 0.5)


# ----------------------------------------------------------------------------- properties


@settings(max_examples=60, deadline=None)
@given(p=st.floats(0.0, 1.0), seed=st.integers(0, 2**32), t=st.integers(0, 10**6),
       graph=st.sampled_from(["ring:n=7", "torus:rows=3,cols=4", "erdos_renyi:n=12,p=0.4",
                              "complete:n=5", "star:n=6", "exponential:n=8"]))
def test_renormalised_matrices_stay_row_stochastic(p: float, seed: int, t: int,
                                                   graph: str) -> None:
    topo = tf.topologies.build(graph, seed=1)
    assert isinstance(topo, tf.Topology)
    W = topo.to_dense()
    lo = lossy(topo, Drops(p, seed, t), "renormalise") if p > 0 else None
    M = W if lo is None else lo.topology.to_dense()
    assert (M >= 0).all()
    np.testing.assert_allclose(M.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    if lo is not None:
        assert (M[lo.dropped.receivers, lo.dropped.senders] == 0).all()
        untouched = np.setdiff1d(np.arange(topo.n), lo.dropped.receivers)
        assert np.array_equal(M[untouched], W[untouched])  # rows that lost nothing, as were
        # the mass rule: every column keeps exactly what its lost messages did not carry
        C = lossy(topo, Drops(p, seed, t), "mass").topology.to_dense()
        lost = np.zeros(topo.n)
        np.add.at(lost, lo.dropped.senders, W[lo.dropped.receivers, lo.dropped.senders])
        np.testing.assert_allclose(C.sum(axis=0), W.sum(axis=0) - lost, rtol=0, atol=1e-12)


# ----------------------------------------------------------------------------- Epidemic Learning

# The round-0 pattern of a 4-star (centre 0) at p = 0.4, network seed 0: 1 -> 0, 2 -> 0 and
# 0 -> 1 are lost.
STAR4 = Drops(0.4, seed=0, t=0)


def test_el_averages_uniformly_what_arrived_by_hand() -> None:
    env = tf.engine.toy_services(4)
    s = State(x=torch.tensor([[0.0], [4.0], [8.0], [12.0]], dtype=torch.float64))
    star = tf.topologies.star(4)  # Metropolis: a leaf gives 3/4 to itself, 1/4 to the centre
    sent = tf.algorithms.el().communicate(s, Round(0, star, drop=STAR4), env)
    # the centre got only 3's model: (0 + 12) / 2; leaf 1 got nothing: 4; leaves 2 and 3 got
    # the centre's: (8 + 0) / 2 and (12 + 0) / 2 (uniform, not W's 3/4 and 1/4)
    assert s.x.flatten().tolist() == [6.0, 4.0, 4.0, 6.0]
    assert sent.flows is not None and sent.dropped is not None
    assert [_pairs(f.arcs) for f in sent.flows] == [[(3, 0), (0, 2), (0, 3)]]
    assert [_pairs(f.arcs) for f in sent.dropped] == [[(1, 0), (2, 0), (0, 1)]]
    assert sent.messages == 3


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_el_lossy_average_equals_a_per_client_loop(seed: int) -> None:
    topo = tf.topologies.erdos_renyi(15, 0.3, seed=seed)  # Metropolis weights, not uniform
    env = tf.engine.toy_services(15, 3)
    x0 = torch.as_tensor(np.random.default_rng(seed).normal(size=(15, 3)))
    s = State(x=x0.clone())
    drop = Drops(0.35, seed=seed, t=4)
    tf.algorithms.el().communicate(s, Round(4, topo, drop=drop), env)
    arcs = tf.engine.ledger.graph_arcs(topo)
    lost = set(_pairs(arcs.keep(drop.lost(arcs))))
    assert lost
    A = topo.to_dense() > 0
    for i in range(15):  # the obvious way: the plain mean of itself and what arrived
        got = [i] + [j for j in range(15) if j != i and A[i, j] and (j, i) not in lost]
        want = x0[got].mean(dim=0)
        assert torch.allclose(s.x[i], want, rtol=0, atol=1e-14), i


def test_el_drop_zero_is_the_run_without_drops_and_drop_one_no_mixing() -> None:
    net = {"latency": 0.01, "speed": 1e9}
    base = _run("el", net, topology="star", rounds=3)
    zero = _run("el", {**net, "drop": 0.0}, topology="star", rounds=3)
    assert _rows(base) == _rows(zero)
    assert torch.equal(base.state.x, zero.state.x)
    some = _run("el", {**net, "drop": 0.3}, topology="star", rounds=3)
    assert 0 < some.records.final("messages_dropped") < some.records.final("messages")
    assert not torch.equal(some.state.x, base.state.x)
    data = _data()
    lone = tf.run("local", None, data, "logistic", 3, seed=0, batch_size=8, spectral=False)
    cut = _run("el", {"drop": 1.0}, topology="star", rounds=3)
    assert torch.equal(lone.state.x, cut.state.x)  # every model evolved alone
    assert cut.records.final("messages_delivered") == 0
    assert cut.records.final("messages_dropped") == cut.records.final("messages") == 3 * 10


# ----------------------------------------------------------------------------- refusals, values


@pytest.mark.parametrize("value", [-0.1, 1.5, "0.1", "x", True, float("nan"), None])
def test_bad_drop_values_are_refused_by_the_config(value: Any) -> None:
    with pytest.raises((ValueError, TypeError), match="network.drop"):
        tf.engine.RunConfig(rounds=1, network={"drop": value})


def test_a_config_file_takes_drop_and_refuses_bad_values(tmp_path: Any) -> None:
    cfg = tmp_path / "lossy.toml"
    cfg.write_text('algorithm = "dsgd"\ntopology = "ring"\ndata = "digits"\nn_clients = 4\n'
                   'model = "logistic"\nrounds = 2\nbatch_size = 8\n\n'
                   '[network]\ndrop = 0.25\nseed = 3\n', encoding="utf-8")
    res = tf.config.execute(tf.config.read_config(cfg))
    assert res.records.engine["run"]["network"]["drop"] == 0.25
    assert res.records.final("messages_dropped") > 0
    bad = cfg.read_text(encoding="utf-8").replace("drop = 0.25", 'drop = "a lot"')
    cfg.write_text(bad, encoding="utf-8")
    with pytest.raises(ValueError, match="network.drop must be a number"):
        tf.config.execute(tf.config.read_config(cfg))


@pytest.mark.parametrize("algorithm, kw", [("fedavg", {}), ("local", {}), ("choco", {}),
                                           ("dsgt", {}), ("dsgd", {"clique_averaging": True})])
def test_algorithms_without_a_rule_refuse_drops(algorithm: str, kw: dict[str, Any]) -> None:
    topology = None if algorithm in ("fedavg", "local") else "ring"
    with pytest.raises(ValueError, match="no rule for a lost message.*dsgd.*sgp"):
        tf.api.prepare(algorithm, topology, "digits", "logistic", 2, n_clients=4,
                       network={"drop": 0.2}, **kw)
    tf.api.prepare(algorithm, topology, "digits", "logistic", 2, n_clients=4,
                   network={"drop": 0.0}, **kw)  # no drops: accepted


def test_the_engine_refuses_too() -> None:
    data = _data()
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    config = tf.engine.RunConfig(rounds=1, network={"drop": 0.5}, spectral=False)
    with pytest.raises(ValueError, match="fedavg has no rule for a lost message"):
        tf.engine.run(config, None, tf.algorithms.fedavg(), data, model)
    check_drop(tf.algorithms.fedavg(), None)
    check_drop(tf.algorithms.fedavg(), {"drop": 0})


def test_a_rule_of_ones_own_is_checked() -> None:
    with pytest.raises(ValueError, match="Algorithm.lost must be one of"):
        tf.engine.check_algorithm(tf.algorithms.dsgd()._replace(lost="keep"))


# ----------------------------------------------------------------------------- resume


def test_a_resumed_lossy_run_equals_the_uninterrupted_one(tmp_path: Any) -> None:
    net = {"drop": 0.3, "seed": 1}
    full = _run(network=net, rounds=4)
    ck = tmp_path / "ck.pt"
    _run(network=net, rounds=2, checkpoint_every=2, checkpoint_path=str(ck))
    resumed = _run(network=net, rounds=4, resume=str(ck))
    assert torch.equal(full.state.x, resumed.state.x)
    assert full.records.final("messages_dropped") == resumed.records.final("messages_dropped")
    assert full.records.final("bytes_delivered") == resumed.records.final("bytes_delivered")
