"""Availability: who is online (Bernoulli, Markov, trace windows), stragglers, the graph of
the present clients (weights stay stochastic), and every registry algorithm's rule for an
absent client."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.algorithms import ALGORITHMS
from topofl.engine.availability import ABSENT_RULES, Availability, round_view
from topofl.engine.pieces import active_topology, participants, round_active


# ---------------------------------------------------------------------------- who is online
def test_bernoulli_is_indexed_by_seed_and_round() -> None:
    a = Availability.from_config({"model": "bernoulli", "offline": 0.1, "seed": 3})
    rounds = [a.online(t, 2000) for t in range(5)]
    assert all(abs(1 - r.mean() - 0.1) < 0.02 for r in rounds)
    fresh = Availability.from_config({"model": "bernoulli", "offline": 0.1, "seed": 3})
    assert np.array_equal(fresh.online(4, 2000), rounds[4])  # no history needed
    other = Availability.from_config({"model": "bernoulli", "offline": 0.1, "seed": 4})
    assert not np.array_equal(other.online(4, 2000), rounds[4])
    assert not np.array_equal(rounds[0], rounds[1])
    assert Availability.from_config({"offline": 0.0}).everyone


def test_markov_chain_rates_and_resume() -> None:
    a = Availability.from_config({"model": "markov", "p_off": 0.1, "p_on": 0.4, "seed": 1})
    n = 20000
    states = [a.online(t, n) for t in range(6)]
    assert all(abs((1 - s.mean()) - 0.2) < 0.015 for s in states)  # stationary 0.1 / 0.5
    went_off = (states[2] & ~states[3]).sum() / states[2].sum()
    came_on = (~states[2] & states[3]).sum() / (~states[2]).sum()
    assert abs(went_off - 0.1) < 0.015 and abs(came_on - 0.4) < 0.03
    # a resumed run asks for round 5 first: the same clients
    fresh = Availability.from_config({"model": "markov", "p_off": 0.1, "p_on": 0.4, "seed": 1})
    assert np.array_equal(fresh.online(5, n), states[5])
    assert np.array_equal(a.online(2, n), states[2])  # and going back recomputes


def test_trace_windows(tmp_path: Path) -> None:
    path = tmp_path / "windows.csv"
    path.write_text("client,start,end\n0,0,2\n0,5,6  # back at round 5\n2,3,4\n")
    a = Availability.from_config({"model": "trace", "path": str(path)})
    on = np.array([a.online(t, 4) for t in range(7)])
    assert on[:, 0].tolist() == [True, True, False, False, False, True, False]
    assert on[:, 2].tolist() == [False, False, False, True, False, False, False]
    assert on[:, 1].all() and on[:, 3].all()  # not listed: always online
    bad = tmp_path / "bad.csv"
    bad.write_text("0,5,2\n")
    with pytest.raises(ValueError, match="start <= end"):
        Availability.from_config({"model": "trace", "path": str(bad)})
    huge = tmp_path / "huge.csv"
    huge.write_text(f"0,0,{10**30}\n")
    with pytest.raises(ValueError, match=r"huge\.csv:1: client and rounds must be at most"):
        Availability.from_config({"model": "trace", "path": str(huge)})


def test_trace_windows_are_checked_against_the_run(tmp_path: Path) -> None:
    path = tmp_path / "w.csv"
    path.write_text("0,0,2\n1,1,3\n")
    a = Availability.from_config({"model": "trace", "path": str(path)})
    a.check_run(3, 10)  # client 2 has no window: always online
    with pytest.raises(ValueError, match=r"names client 1, the run has 1 client"):
        a.check_run(1, 10)
    with pytest.warns(UserWarning, match="no client is online in 7 of the 10 rounds"):
        a.check_run(2, 10)  # rounds 0-2 covered by [0, 2) and [1, 3)
    with pytest.warns(UserWarning, match="1 window"):
        a.check_run(2, 1)
    never = tmp_path / "never.csv"
    never.write_text("0,50,60\n1,70,80\n")
    b = Availability.from_config({"model": "trace", "path": str(never)})
    with pytest.raises(ValueError, match="no client is online in any of the 20 rounds"), \
            pytest.warns(UserWarning, match="2 window"):
        b.check_run(2, 20)
    kw: dict[str, Any] = dict(data="digits", n_clients=2, partition="iid", batch_size=8,
                              spectral=False)
    with pytest.raises(ValueError, match="no client is online"), pytest.warns(UserWarning):
        tf.run("dsgd", "ring", model="logistic", rounds=20,
               availability={"model": "trace", "path": str(never)}, **kw)


def test_an_edited_windows_trace_is_refused_on_replay(tmp_path: Path) -> None:
    path = tmp_path / "w.csv"
    path.write_text("0,0,2\n")
    cfg = Availability.from_config({"model": "trace", "path": str(path)}).to_config()
    assert len(cfg["sha256"]) == 16
    assert Availability.from_config(cfg).windows is not None
    path.write_text("0,0,3\n")
    with pytest.raises(ValueError, match=r"w\.csv' changed since the run"):
        Availability.from_config(cfg)
    with pytest.raises(ValueError, match="unknown key"):
        Availability.from_config({"model": "bernoulli", "offline": 0.1, "sha256": "x"})


def test_stragglers() -> None:
    a = Availability.from_config({"straggle": 0.25, "slowdown": 4.0, "seed": 2})
    s = a.slowdowns(3, 4000)
    assert set(np.unique(s).tolist()) == {1.0, 4.0} and abs((s == 4).mean() - 0.25) < 0.03
    assert np.array_equal(s, a.slowdowns(3, 4000)) and a.online(3, 4000).all()
    d = Availability.from_config({"straggle": 1.0, "slowdown": {"dist": "uniform", "low": 2,
                                                                "high": 3}})
    x = d.slowdowns(0, 1000)
    assert 2 <= x.min() and x.max() <= 3
    assert Availability().slowdowns(0, 3).tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize(("table", "match"), [
    ({"model": "sometimes"}, "model must be one of"),
    ({"model": "bernoulli"}, "needs"),
    ({"model": "bernoulli", "offline": 1.0}, r"in \[0, 1\)"),
    ({"model": "markov", "p_off": 0.1, "p_on": 0.0}, "p_on must be > 0"),
    ({"offline": 0.1, "p_on": 0.3}, "unknown key"),
    ({"straggle": 1.5}, "straggle"),
    ({"offline": 0.1, "seed": -1}, "seed"),
])
def test_bad_tables_are_refused(table: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Availability.from_config(table)


def test_tables_round_trip() -> None:
    for table in ({"offline": 0.2}, {"model": "markov", "p_off": 0.1, "p_on": 0.5},
                  {"straggle": 0.1, "slowdown": {"dist": "exponential", "mean": 2.0}}):
        a = Availability.from_config(table)
        assert Availability.from_config(a.to_config()).to_config() == a.to_config()


# ---------------------------------------------------------------------------- the present graph
def _slow_active(W: np.ndarray, on: np.ndarray, keep: str) -> np.ndarray:
    """What active_topology computes, one entry at a time."""
    n = W.shape[0]
    out = np.zeros_like(W)
    for i in range(n):
        for j in range(n):
            if i != j and on[i] and on[j]:
                out[i, j] = W[i, j]
    for i in range(n):
        out[i, i] = W[i, i]
    if keep == "doubly":
        for i in range(n):
            out[i, i] = 1.0 - sum(out[i, j] for j in range(n) if j != i)
    else:
        for k in range(n):
            idx = [(i, k) for i in range(n)] if keep == "column" else [(k, j) for j in range(n)]
            tot = sum(out[a, b] for a, b in idx)
            for a, b in idx:
                out[a, b] = out[a, b] / tot if tot > 0 else float(a == b)
    return out


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 12), p=st.floats(0.1, 1.0), off=st.floats(0.0, 0.9),
       seed=st.integers(0, 10**6), kind=st.sampled_from(["metropolis", "push_sum", "uniform"]))
def test_the_present_graph_keeps_the_stochasticity_the_algorithm_needs(
        n: int, p: float, off: float, seed: int, kind: str) -> None:
    rng = np.random.default_rng(seed)
    if kind == "metropolis":
        G: Any = nx.gnp_random_graph(n, p, seed=seed)
    else:
        G = nx.gnp_random_graph(n, p, seed=seed, directed=True)
    topo = tf.Topology.from_networkx(G, weights=kind)
    keep = {"metropolis": "doubly", "push_sum": "column", "uniform": "row"}[kind]
    on = rng.random(n) >= off
    act = active_topology(topo, on, keep=keep)
    W = act.W.toarray()
    np.testing.assert_allclose(W, _slow_active(topo.W.toarray(), on, keep), atol=1e-12)
    assert (W >= 0).all()
    if keep in ("doubly", "row"):
        np.testing.assert_allclose(W.sum(axis=1), 1.0, atol=1e-12)
    if keep in ("doubly", "column"):
        np.testing.assert_allclose(W.sum(axis=0), 1.0, atol=1e-12)
    if keep == "doubly":
        np.testing.assert_allclose(W, W.T, atol=1e-12)  # Metropolis stays symmetric
    for i in np.flatnonzero(~on):  # an absent client neither sends nor receives
        e = np.eye(n)[i]
        np.testing.assert_array_equal(W[i], e)
        np.testing.assert_array_equal(W[:, i], e)
    assert act.stochasticity in ({"doubly"} if keep == "doubly" else {keep, "doubly"})


def test_round_view_gives_each_rule_its_graph() -> None:
    ring = tf.topologies.ring(5)
    on = np.array([True, False, True, True, True])
    rnd = round_view(tf.algorithms.dsgd(), 3, ring, on)
    assert rnd.t == 3 and rnd.topology.messages_per_round == 6 and rnd.online is on or \
        np.array_equal(rnd.online, on)
    push = tf.topologies.ring(5, weights="push_sum")
    assert round_view(tf.algorithms.sgp(), 0, push, on).topology.is_column_stochastic
    # the stale rule keeps the whole graph (the algorithm picks its peers); no one offline:
    # the round as it is
    assert round_view(tf.algorithms.pfeddst(candidates="neighbors"), 0, ring, on).topology \
        is ring
    assert round_view(tf.algorithms.dsgd(), 0, ring, np.ones(5, dtype=bool)) == \
        tf.engine.Round(0, ring)


def test_participation_and_availability_are_one_notion() -> None:
    on = np.array([True, False, True, False, True, True])
    rnd = tf.engine.Round(2, None, on)
    sampled = set(participants(6, 2, 0.5, 7))
    want = [i in sampled and bool(on[i]) for i in range(6)]
    assert round_active(rnd, 6, 0.5, 7).tolist() == want
    assert round_active(tf.engine.Round(2), 6, 0.5, 7).tolist() == [i in sampled
                                                                    for i in range(6)]


# ---------------------------------------------------------------------------- the rules
N = 4
OFF = 1  # the client offline in round 1 (online in round 0)


@functools.lru_cache(maxsize=1)
def _data() -> Any:
    return tf.data.federate("digits", "iid", N, seed=0, val=0.2)


_KW: dict[str, dict[str, Any]] = {
    "fedrep": dict(head_steps=1, body_steps=1),
    "pfeddst": dict(local_steps=1, head_steps=1, peers=2),
    "dfedpgp": dict(local_steps_u=1, local_steps_v=1),
    "dfedavgm_p": dict(local_steps_u=1, local_steps_v=1),
    "ditto": dict(local_steps=1, personal_steps=1),
    "dpfl": dict(local_steps=1, budget=2, tau_init=0.0),
    "perfedavg": dict(local_steps=1, adapt_steps=1),
    "dsgt": {}, "extra": {},  # one gradient a round, always
    "exact_diffusion": {}, "nids": {},
    "kgt": dict(local_steps=2), "led": dict(local_steps=2),
    "proxskip": dict(comm_probability=1.0), "dlm": {},
    "teleport": dict(k=2),
    "gt_saga": {}, "gt_sarah": {},  # one estimate a round; they refuse absent clients
}
_TOPO = {"sgp": "push", "osgp": "push", "dfedpgp": "push"}


def _topology(name: str) -> Any:
    algo = ALGORITHMS[name]()
    if not algo.uses_topology:
        return None
    if _TOPO.get(name) == "push":
        return tf.topologies.ring(N, weights="push_sum")
    return tf.topologies.ring(N)


def _run(name: str, rounds: int, windows: Path) -> Any:
    kw = _KW.get(name, {"local_steps": 1})
    return tf.run(name, _topology(name), _data(), "mlp", rounds, seed=0, batch_size=8,
                  dtype="float64", spectral=False, progress=False, eval_every=1,
                  model_params={"hidden": [8]}, init="independent",
                  availability={"model": "trace", "path": str(windows)}, **kw)


def test_every_registry_algorithm_states_a_known_rule() -> None:
    for name, factory in ALGORITHMS.items():
        assert factory().absent in ABSENT_RULES, name


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_an_absent_client_behaves_as_its_algorithms_rule(name: str, tmp_path: Path) -> None:
    windows = tmp_path / "w.csv"
    windows.write_text(f"{OFF},0,1\n")  # online in round 0 only
    if ALGORITHMS[name]().absent == "refuse":  # refused before round 0, with the reason
        with pytest.raises(ValueError, match="cannot run with an availability"):
            _run(name, 1, windows)
        return
    one, two = _run(name, 1, windows), _run(name, 2, windows)
    rule = two.algorithm.absent
    assert two.records.series("online_clients")[1].tolist() == [N, N - 1]
    # nothing reaches the absent client in round 1
    recv = two.records.per_client("bytes_received", 1) - two.records.per_client(
        "bytes_received", 0)
    assert recv[OFF] == 0
    a, b = one.state, two.state
    if rule == "stale":  # every per-client tensor stands still
        for k, v in a.tensors().items():
            if v.dim() and v.shape[0] == N:
                torch.testing.assert_close(b.tensors()[k][OFF], v[OFF], rtol=0, atol=0,
                                           msg=f"{name}: {k}")
    elif rule == "renormalise":  # no arc in or out, no step: its model stands still
        sent = two.records.per_client("bytes_sent", 1) - two.records.per_client("bytes_sent", 0)
        assert sent[OFF] == 0
        if name == "osgp":  # ... except what was already in flight towards it arrives
            torch.testing.assert_close(b.x[OFF], a.x[OFF] + a.own.inflight_x[OFF],
                                       rtol=1e-12, atol=1e-12)
            assert float(b.own.inflight_x[OFF].abs().max()) == 0.0
        else:
            torch.testing.assert_close(b.x[OFF], a.x[OFF], rtol=0, atol=0)
        if name == "dis_pfl":
            torch.testing.assert_close(b.own.mask[OFF], a.own.mask[OFF])
    else:  # server: it takes no step and gets the server's average of the others
        assert rule == "server"
        sent = two.records.per_client("bytes_sent", 1) - two.records.per_client("bytes_sent", 0)
        assert sent[OFF] == 0
        shared = two.layout.cols(two.algorithm.shared)
        other = [c for c in range(two.layout.num_params) if not shared.start <= c < shared.stop]
        if name not in ("pfedgraph",):  # one global model for everyone
            torch.testing.assert_close(b.x[OFF, shared], b.x[0, shared])
        else:  # pFedGraph's personalized aggregates skip it: its model stands still
            torch.testing.assert_close(b.x[OFF], a.x[OFF], rtol=0, atol=0)
        if other:  # its personal part did not train
            torch.testing.assert_close(b.x[OFF, other], a.x[OFF, other], rtol=0, atol=0)


def test_dsgd_with_an_absent_neighbour_averages_over_the_present_graph() -> None:
    # one gossip step by hand: client 3 offline on a ring of 4 (Metropolis weights 1/3)
    env = tf.engine.toy_services(4, 1)
    algo = tf.algorithms.dsgd()
    state = algo.init(torch.tensor([[0.0], [3.0], [6.0], [9.0]], dtype=torch.float64), env)
    on = np.array([True, True, True, False])
    rnd = round_view(algo, 0, tf.topologies.ring(4), on)
    sent = algo.communicate(state, rnd, env)
    # 0 keeps the 1/3 it gave 3: (2 * 0 + 3) / 3; 2: (3 + 2 * 6) / 3; 3 keeps its model
    assert state.x.flatten().tolist() == pytest.approx([1.0, 3.0, 5.0, 9.0])
    assert sent.messages == 4


def test_fedavg_averages_the_present_participants() -> None:
    env = tf.engine.toy_services(4, 1)
    algo = tf.algorithms.fedavg()
    state = algo.init(torch.tensor([[0.0], [4.0], [8.0], [100.0]], dtype=torch.float64), env)
    rnd = tf.engine.Round(0, None, np.array([True, True, True, False]))
    sent = algo.communicate(state, rnd, env)
    assert state.x.flatten().tolist() == [4.0] * 4  # the offline client's 100 left out
    assert sent.messages == 6 and sent.active.tolist() == [True, True, True, False]
    nobody = tf.engine.Round(1, None, np.zeros(4, dtype=bool))
    before = state.x.clone()
    assert algo.communicate(state, nobody, env).messages == 0
    assert torch.equal(state.x, before)


def test_the_reference_driver_applies_the_same_rules() -> None:
    avail = Availability.from_config({"offline": 0.4, "seed": 5})
    c = torch.arange(6.0, dtype=torch.float64).unsqueeze(1)
    trace = tf.engine.run_rounds(tf.algorithms.dsgd(lr=0.1), torch.zeros_like(c),
                                 tf.topologies.ring(6), lambda z, phase, rnd: z - c,
                                 rounds=3, availability=avail)
    for t, sent in enumerate(trace.sent):
        on = avail.online(t, 6)
        assert sent.messages == active_topology(tf.topologies.ring(6), on).messages_per_round
    # a client offline in every round never moves
    a = Availability.from_config({"offline": 0.5, "seed": 0})
    always_off = ~np.any([a.online(t, 6) for t in range(4)], axis=0)
    trace = tf.engine.run_rounds(tf.algorithms.dsgd(lr=0.1), torch.zeros_like(c),
                                 tf.topologies.ring(6), lambda z, phase, rnd: z - c,
                                 rounds=4, availability=a)
    assert torch.all(trace.state.x[torch.as_tensor(always_off)] == 0)


def test_weights_stay_stochastic_in_a_run() -> None:
    # sgp over a directed graph with a third of the clients offline: the push-sum weights
    # still sum to n (mass is conserved), every round
    topo = tf.topologies.random_directed(9, 3, seed=2, mode="push")
    data = tf.data.federate("digits", "iid", 9, seed=0)
    res = tf.run("sgp", topo, data, "logistic", 4, seed=0, batch_size=8, spectral=False,
                 dtype="float64", availability={"offline": 0.33, "seed": 1})
    assert float(res.state.push_weights().sum()) == pytest.approx(9.0, abs=1e-12)
    assert min(res.records.series("online_clients")[1]) < 9


def test_metropolis_active_graph_of_a_big_ring_is_cheap_and_lazy() -> None:
    t = tf.topologies.ring(2000)
    on = np.ones(2000, dtype=bool)
    on[::3] = False
    act = active_topology(t, on)
    assert act.is_doubly_stochastic and "_graph_cache" not in act.__dict__
    assert act.graph.number_of_edges() == act.messages_per_round  # built when asked
    assert isinstance(act.W, sp.csr_array)
