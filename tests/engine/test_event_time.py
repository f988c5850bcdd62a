"""Event time (:mod:`topofl.engine.event_time`): the clients' clocks, the windows, deferral,
the partner draws and the layers, on small cases computed by hand, and the windows against the
event-by-event order they batch."""

from __future__ import annotations

import importlib

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.engine.clients import LocalClients
from topofl.engine.event_time import (
    CLOCKED,
    EventTime,
    Windows,
    events,
    heavy_tailed_durations,
    idle_reason,
    one_process,
    pair_layers,
    partners,
    per_client,
    push_layers,
    window_records,
    window_sent,
)

N = 12


# ------------------------------------------------------------------------------ the clocks


def test_per_client_spreads_one_time_and_checks_the_count() -> None:
    assert per_client(0.5, 3).tolist() == [0.5, 0.5, 0.5]
    assert per_client((1.0, 2.0), 2).tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="^durations must hold one time per client: 3 clients, "
                                         "got 2 times$"):
        per_client((1.0, 2.0), 3)


def test_finish_times_and_window_bounds_by_hand() -> None:
    win = Windows.of([1.0, 2.5, 0.4], 1.0, 3)
    # k events done: the next at (k + 1) d
    assert win.finish(np.array([0, 3, 2])).tolist() == [1.0, 10.0, 1.2000000000000002]
    assert win.finish(torch.tensor([0, 3, 2])).tolist() == win.finish(np.array([0, 3, 2])).tolist()
    assert (win.end(0), win.end(4)) == (1.0, 5.0)
    # window 1 is (1, 2]: clients 0 (at 2.0) and 2 (at 1.2) are due, client 1 (at 10) is not
    assert win.active(np.array([1, 3, 2]), 1).tolist() == [True, False, True]


def test_due_events_run_in_the_order_of_time_then_client() -> None:
    # durations 2, 1, 2, 0.5 and windows of 2: window 0 holds client 3 at 0.5, client 1 at 1.0,
    # then clients 0 and 2 both at 2.0 (the tie goes to the smaller id)
    win = Windows.of([2.0, 1.0, 2.0, 0.5], 2.0, 4)
    due = win.due(np.zeros(4, dtype=np.int64), 0, tf.topologies.ring(4), 0)
    assert due.clients.tolist() == [3, 1, 0, 2]
    assert due.late.tolist() == [False] * 4
    assert (due.start, due.end) == (0.0, 2.0)
    # every partner is a ring neighbour drawn at the client's event number
    assert due.partners.tolist() == partners(tf.topologies.ring(4), 0, [3, 1, 0, 2],
                                             [0, 0, 0, 0]).tolist()
    assert all(int(j) in ((i + 1) % 4, (i - 1) % 4)
               for i, j in zip(due.clients, due.partners))


def test_a_fast_client_is_deferred_and_its_surplus_waits() -> None:
    # client 0 finishes every 0.5, client 1 every 2.0, windows of 1
    win = Windows.of([0.5, 2.0], 1.0, 2)
    topo = tf.topologies.complete(2)
    first = win.due(np.array([0, 0]), 0, topo, 0)
    assert first.clients.tolist() == [0] and first.late.tolist() == [False]
    assert win.surplus(np.array([0, 0]), 0) == 1  # its event at 1.0 waits for window 1
    # window 1: client 0's event at 1.0 (the window's start: deferred), then client 1 at 2.0
    second = win.due(np.array([1, 0]), 1, topo, 0)
    assert second.clients.tolist() == [0, 1]
    assert second.late.tolist() == [True, False]
    assert second.partners.tolist() == [1, 0]
    assert win.surplus(np.array([1, 0]), 1) == 2  # client 0's events at 1.5 and 2.0 wait


def test_surplus_is_counted_in_the_arithmetic_of_the_finish_times() -> None:
    # 3 * 0.1 = 0.30000000000000004 > 0.3: in window 0 of width 0.3 only 0.1 and 0.2 are due
    win = Windows.of(0.1, 0.3, 1)
    assert win.finish(np.array([2])).tolist() == [0.30000000000000004]
    assert win.surplus(np.array([0]), 0) == 1
    assert win.surplus(np.array([2]), 0) == 0  # nothing due at all: no surplus
    assert Windows.of(0.25, 1.0, 1).surplus(np.array([0]), 0) == 3  # 0.25, 0.5, 0.75, 1.0


@settings(max_examples=60, deadline=None)
@given(d=st.lists(st.floats(0.05, 3.0), min_size=1, max_size=6), width=st.floats(0.05, 3.0),
       t=st.integers(0, 20), done=st.integers(0, 40))
def test_surplus_counts_the_due_events_beyond_the_first(d: list[float], width: float, t: int,
                                                         done: int) -> None:
    win = Windows.of(tuple(d), width, len(d))
    steps = np.full(len(d), done, dtype=np.int64)
    count = 0
    for i in range(len(d)):
        k = done
        while win.finish(np.array([k] * len(d)))[i] <= win.end(t):  # the due events, one by one
            k += 1
        count += max(k - done - 1, 0)
    assert win.surplus(steps, t) == count


def test_windows_no_wider_than_the_fastest_client_are_the_event_order() -> None:
    # with width <= min(d) every client has at most one event per window, none deferred: the
    # windows' due events, window after window, are the heap's events in their order
    topo = tf.topologies.random_regular(N, 3, seed=1)
    d = np.asarray(heavy_tailed_durations(N, seed=5, alpha=1.2))
    win = Windows.of(tuple(d.tolist()), float(d.min()), N)
    rounds = 40
    ref = list(events(topo, d, rounds * win.width, pair_seed=3))
    steps = np.zeros(N, dtype=np.int64)
    got = []
    for t in range(rounds):
        due = win.due(steps, t, topo, 3)
        assert not due.late.any() and win.surplus(steps, t) == 0
        times = win.finish(steps)[due.clients]
        got += [(float(s), int(i), int(steps[i]), int(j))
                for s, i, j in zip(times, due.clients, due.partners)]
        steps[due.clients] += 1
    assert len(ref) > 3 * N
    assert got == [tuple(e) for e in ref]


def test_events_by_hand() -> None:
    # durations 1 and 1.5 up to time 3: 1.0 (0), 1.5 (1), 2.0 (0), then the tie at 3.0
    ev = list(events(tf.topologies.complete(2), np.array([1.0, 1.5]), 3.0))
    assert [(e.time, e.client, e.number, e.partner) for e in ev] == [
        (1.0, 0, 0, 1), (1.5, 1, 0, 0), (2.0, 0, 1, 1), (3.0, 0, 2, 1), (3.0, 1, 1, 0)]
    assert list(events(tf.topologies.complete(2), np.array([1.0, 1.5]), 0.5)) == []


# --------------------------------------------------------------------------- partner draws


def test_partners_are_neighbours_and_indexed() -> None:
    topo = tf.topologies.random_regular(N, 3, seed=1)
    i = np.repeat(np.arange(N), 50)
    k = np.tile(np.arange(50), N)
    j = partners(topo, 0, i, k)
    W = topo.W.toarray()
    assert all(W[a, b] > 0 and a != b for a, b in zip(i, j))
    # every neighbour is drawn, and a draw depends on (seed, client, event) only
    assert {(a, b) for a, b in zip(i, j)} == {(a, b) for a in range(N) for b in range(N)
                                              if a != b and W[a, b] > 0}
    assert (partners(topo, 0, i[::-1], k[::-1]) == j[::-1]).all()
    assert not (partners(topo, 1, i, k) == j).all()


def test_a_client_without_neighbours_is_its_own_partner() -> None:
    topo = tf.Topology.from_networkx(nx.Graph([(0, 1)]))
    lonely = tf.Topology.from_networkx(nx.disjoint_union(nx.Graph([(0, 1)]), nx.empty_graph(1)))
    assert partners(topo, 0, [0, 1], [0, 0]).tolist() == [1, 0]
    assert partners(lonely, 0, [2, 2, 0], [0, 5, 0]).tolist() == [2, 2, 1]


# ----------------------------------------------------------------------------------- layers


def test_pair_layers_by_hand() -> None:
    # (0,1) and (2,3) are disjoint: layer 0; (1,2) waits for both, (0,3) too: layer 1; (1,3)
    # after (1,2) and (0,3): layer 2
    assert pair_layers([0, 2, 1, 0, 1], [1, 3, 2, 3, 3]).tolist() == [0, 0, 1, 1, 2]
    assert pair_layers([0, 0], [0, 1]).tolist() == [0, 1]  # an event with itself counts
    assert pair_layers([], []).tolist() == []


def test_push_layers_by_hand() -> None:
    # 0->1 (layer 0); 1->2: 1 sends after its receive (layer 1); 2->1: 2 sends after its
    # receive in layer 1 (layer 2); 3->0: 0 only sent, in layer 0, so its receive may be in
    # layer 0 (a layer's merges read the models at its start)
    assert push_layers([0, 1, 2, 3], [1, 2, 1, 0]).tolist() == [0, 1, 2, 0]
    assert push_layers([0, 2], [1, 1]).tolist() == [0, 1]  # one receive per layer
    assert push_layers([0, 2], [1, 3]).tolist() == [0, 0]  # disjoint pairs
    assert push_layers([1, 0], [0, 1]).tolist() == [0, 1]  # 1 sent, then is written: 0 was too


@pytest.mark.parametrize("layers", [pair_layers, push_layers])
def test_a_layer_never_writes_a_node_twice(layers: object) -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 6, 80)
    b = (a + rng.integers(1, 6, 80)) % 6  # events between two distinct clients
    got = layers(a, b)  # type: ignore[operator]
    for L in np.unique(got):
        written = b[got == L] if layers is push_layers else np.concatenate(
            [a[got == L], b[got == L]])
        assert len(set(written.tolist())) == len(written)


# ------------------------------------------------------------------------ what a window did


def test_window_records_by_hand() -> None:
    rec = window_records(3.0, np.array([0, 1, 1]), np.array([False, True, True]),
                         np.array([0, 3, 1]), torch.tensor([2, 0, 4]), held=5)
    assert list(rec) == ["event_time", "async_events", "async_layers", "async_deferred",
                         "async_held", "async_steps_min", "async_steps_mean",
                         "async_steps_max", "staleness_mean", "staleness_max"]
    assert rec == {"event_time": 3.0, "async_events": 3, "async_layers": 2,
                   "async_deferred": 2, "async_held": 5, "async_steps_min": 0,
                   "async_steps_mean": 2.0, "async_steps_max": 4,
                   "staleness_mean": 4 / 3, "staleness_max": 3}
    empty = window_records(1.0, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool),
                           np.zeros(0, dtype=np.int64), np.array([0, 0]))
    assert empty == {"event_time": 1.0, "async_events": 0, "async_layers": 0,
                     "async_deferred": 0, "async_steps_min": 0, "async_steps_mean": 0.0,
                     "async_steps_max": 0}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_window_sent_counts_one_model_per_real_event(dtype: torch.dtype) -> None:
    x = torch.zeros(4, 3, dtype=dtype)
    s, r = np.array([0, 2, 3]), np.array([1, 2, 1])  # 2 with itself sends nothing
    push = window_sent(4, x, s, r, r, {"k": 1})
    assert push.messages == 2 and push.records == {"k": 1}
    assert push.active.tolist() == [False, True, True, False]
    [flow] = push.flows
    assert sorted(zip(flow.arcs.senders.tolist(), flow.arcs.receivers.tolist())) == [
        (0, 1), (3, 1)]
    assert flow.messages * flow.size * flow.bits == 2 * 3 * torch.finfo(dtype).bits
    pairs = window_sent(4, x, s, r, s, {}, both_ways=True)
    assert pairs.messages == 4 and pairs.active.tolist() == [True, False, True, True]


# ------------------------------------------------------------------ an algorithm's settings


def test_event_time_fields_refuse_what_event_time_cannot_do() -> None:
    clocks = EventTime((2.0, 3.0), 1.0, 7)
    f = clocks.fields("mine runs alone")
    assert (f["requires"], f["absent"], f["lost"], f["stacks"], f["clocked"]) == (
        None, "refuse", None, "mine runs alone", CLOCKED)
    assert f["idle"](2) is None and f["idle"](1) == idle_reason((2.0, 3.0), 1.0, 1)
    assert clocks.windows(2).durations.tolist() == [2.0, 3.0]
    with pytest.raises(ValueError, match="2 clients"):
        EventTime((2.0,), 1.0, 0).windows(2)


def test_one_process_refuses_a_share_of_the_clients_in_one_line() -> None:
    env = tf.engine.toy_services(3)
    assert one_process(env, "mine", "pairwise events") == 3
    env.clients = LocalClients(2)  # as a rank of a distributed run would hold
    with pytest.raises(ValueError, match="^mine does not run distributed: its push events need "
                                         "every client in one process") as info:
        one_process(env, "mine", "push events")
    assert "\n" not in str(info.value)


def test_the_algorithms_documented_names_are_the_engines() -> None:
    # the names the manual and older code import from the algorithms' modules
    from topofl.engine import event_time

    ad = importlib.import_module("topofl.algorithms.adpsgd")
    gl = importlib.import_module("topofl.algorithms.gossip_learning")
    for name in ("partners", "heavy_tailed_durations", "check_durations", "check_window",
                 "idle_reason"):
        assert getattr(ad, name) is getattr(event_time, name)
    assert gl.push_layers is event_time.push_layers
