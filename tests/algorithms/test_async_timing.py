"""Asynchronous timing as the peers define it (issue 59, item 6).

Start offsets and delivery delays (the sacs-epfl simulator's), gossipy's same-instant ticks
(:mod:`topofl.engine.transit`) and AD-PSGD's active/passive split (Lian et al. 2018). Clients
minimise ``(x - c_i)^2 / 2`` in float64. The windowed runs are checked against the slow
references (hypothesis over graphs, durations, delays and offsets); the peers' own loops are
replayed here as read from their code (gossipy's ``GossipSimulator.start``, the sacs-epfl
``GossipClient`` on its event queue) and must give the same models on the same inputs;
``analysis/async_timing.py`` also runs gossipy itself.
"""

from __future__ import annotations

import bisect
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import topofl as tf
from tests.algorithms._event_runs import run_on_ring
from tests.engine._crash import crash_then_resume
from topofl.algorithms.adpsgd import simulate_events
from topofl.algorithms.gossip_learning import simulate_gossip
from topofl.engine import run_rounds
from topofl.engine.event_time import Windows, events, partners
from topofl.engine.transit import (
    NodeOrder,
    bipartite_split,
    check_times,
    check_timing,
    messages,
    slots,
    transit,
)

N, P = 8, 2


def _problem(seed: int = 0, n: int = N) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, P, generator=g, dtype=torch.float64),
            torch.randn(n, P, generator=g, dtype=torch.float64))


def _timing(kw: dict[str, Any]) -> dict[str, Any]:
    """``timing``, ``delay`` and ``offsets`` keywords as gossip_learning's ``timing``."""
    if isinstance(kw.get("timing"), dict):
        return kw
    how = {k: kw.pop(k) for k in ("timing", "delay", "offsets", "node_order") if k in kw}
    if how:
        kw["timing"] = dict(order=how.pop("timing", "continuous"), **how)
    return kw


def _gossip(c: torch.Tensor, x0: torch.Tensor, topo: Any, windows: int, **kw: Any) -> Any:
    algo = tf.algorithms.gossip_learning(kw.pop("lr", 0.1), **_timing(kw))
    return run_rounds(algo, x0, topo, lambda z, phase, rnd: z - c, rounds=windows)


# -------------------------------------------------------------- gossipy, as read from its code


def gossipy_ticks(x0: torch.Tensor, c: torch.Tensor, topo: Any, fires: Any, delay: int,
                  ticks: int, lr: float, *, rng: np.random.RandomState | None = None,
                  round_len: int = 1, orders: list[list[int]] | None = None) -> torch.Tensor:
    """gossipy's ``GossipSimulator.start`` loop (PUSH, MERGE_UPDATE, mean merge), restated:
    at tick ``t`` every node that times out (``fires(i, t)``), in the order of the node ids,
    copies its model into a message for its peer due at ``t + delay``; then the messages due
    at ``t`` are handled in the order they were queued: the receiver averages, then takes
    one SGD step.

    With ``rng`` (standing for NumPy's global generator, which gossipy draws from) the node
    ids are shuffled in place at every tick ``t % round_len == 0`` and stay in that order
    for the round (gossipy/simul.py at github.com/makgyver/gossipy ea85ab1, lines 390-393:
    ``if t % self.delta == 0: shuffle(node_ids)``, then ``for i in node_ids``); the same
    generator draws one uniform per message sent (line 403, ``random() >=
    self.drop_prob``) and one per node every tick (line 409, ``random(self.n_nodes)``), which
    a drop probability of 0 and an online probability of 1 ignore but which move the
    stream. The order each tick used is appended to ``orders``."""
    x = x0.clone()
    queue: dict[int, list[tuple[int, torch.Tensor]]] = {}
    count = [0] * len(x)
    node_ids = np.arange(len(x))
    for t in range(ticks):
        if rng is not None and t % round_len == 0:
            rng.shuffle(node_ids)
        if orders is not None:
            orders.append(node_ids.tolist())
        for i in node_ids.tolist():
            if fires(i, t):
                j = int(partners(topo, 0, [i], [count[i]])[0])
                count[i] += 1
                queue.setdefault(t + delay, []).append((j, x[i].clone()))
                if rng is not None:
                    rng.random_sample()
        if rng is not None:
            rng.random_sample(len(x))
        for j, xi in queue.pop(t, []):
            z = (x[j] + xi) / 2
            x[j] = z - lr * (z - c[j])
    return x


def _gossipy_setup(sync: bool) -> tuple[list[float], list[float], int, Any]:
    """gossipy's nodes as topofl's clocks: durations, offsets, the shift of tick 0 and
    ``fires(i, t)`` (a node times out ``delta_i`` ticks into every round of R = 5 ticks, or
    every ``delta_i`` ticks from tick 0)."""
    rng = np.random.default_rng(3)
    R = 5
    if sync:
        delta = rng.integers(0, R, size=N).tolist()

        def fires(i: int, t: int) -> bool:
            return t % R == delta[i]
        return [float(R)] * N, [float(d) for d in delta], R, fires
    delta = rng.integers(2, 6, size=N).tolist()
    shift = max(delta)

    def fires_async(i: int, t: int) -> bool:
        return t % delta[i] == 0
    return [float(d) for d in delta], [float(shift - d) for d in delta], shift, fires_async


@pytest.mark.parametrize(("sync", "delay"), [(False, 0), (False, 2), (True, 0), (True, 3)])
def test_gossipy_ticks_replay_to_the_bit(sync: bool, delay: int) -> None:
    c, x0 = _problem(1)
    topo = tf.topologies.random_regular(N, 3, seed=2)
    durations, offsets, shift, fires = _gossipy_setup(sync)
    ticks = 60
    peer = gossipy_ticks(x0, c, topo, fires, delay, ticks, 0.1)
    run = _gossip(c, x0, topo, shift + ticks - 1, durations=durations, window=1.0,
                  layers=2 * N, timing="tick", delay=float(delay), offsets=offsets, pair_seed=0)
    assert all(s.records["async_held"] == 0 for s in run.sent)
    assert torch.equal(run.state.x, peer)
    ref = simulate_gossip(x0, topo, lambda z, i: z - c[i], durations, lr=0.1,
                          end_time=float(shift + ticks - 1),
                          timing=dict(order="tick", delay=float(delay), offsets=offsets))
    assert torch.equal(ref.x, peer)


def _shifted(orders: list[list[int]], shift: int) -> list[list[int]]:
    """gossipy's order of tick ``t`` as topofl's tick ``t + shift`` (the ticks before it,
    without sends, in id order)."""
    return [list(range(len(orders[0])))] * shift + orders


@pytest.mark.parametrize(("sync", "delay", "seed"), [(False, 0, 0), (False, 2, 1),
                                                     (True, 0, 2), (True, 3, 3)])
def test_gossipy_shuffled_node_order_replays_to_the_bit(sync: bool, delay: int,
                                                        seed: int) -> None:
    """gossipy as shipped shuffles its nodes every round: given the orders its generator
    drew (``node_order``), topofl's windows and its reference equal it to the bit; in id
    order they do not."""
    c, x0 = _problem(1)
    topo = tf.topologies.random_regular(N, 3, seed=2)
    durations, offsets, shift, fires = _gossipy_setup(sync)
    ticks, orders = 60, []
    peer = gossipy_ticks(x0, c, topo, fires, delay, ticks, 0.1,
                         rng=np.random.RandomState(seed), round_len=5, orders=orders)
    timing = dict(order="tick", delay=float(delay), offsets=offsets,
                  node_order=_shifted(orders, shift))
    run = _gossip(c, x0, topo, shift + ticks - 1, durations=durations, window=1.0,
                  layers=2 * N, pair_seed=0, **{"timing": timing})
    assert all(s.records["async_held"] == 0 for s in run.sent)
    assert torch.equal(run.state.x, peer)
    ref = simulate_gossip(x0, topo, lambda z, i: z - c[i], durations, lr=0.1,
                          end_time=float(shift + ticks - 1), timing=timing)
    assert torch.equal(ref.x, peer)
    by_id = gossipy_ticks(x0, c, topo, fires, delay, ticks, 0.1)
    assert not torch.equal(by_id, peer)


def test_ticks_differ_from_continuous_time_where_sends_coincide() -> None:
    c, x0 = _problem(2)
    topo = tf.topologies.complete(N)
    kw = dict(durations=1.0, window=1.0, layers=2 * N, delay=0.0)
    tick = _gossip(c, x0, topo, 10, timing="tick", **kw)
    cont = _gossip(c, x0, topo, 10, timing="continuous", **kw)
    plain = _gossip(c, x0, topo, 10, durations=1.0, window=1.0, layers=2 * N)
    assert torch.equal(cont.state.x, plain.state.x)  # delay 0: the default order
    assert not torch.equal(tick.state.x, cont.state.x)


def test_node_order_defaults_and_what_a_seeded_order_changes() -> None:
    """The node order left out, the identity given for every tick and the ids are one run,
    to the bit; a seeded permutation per tick moves the models by 0.09 (measured: 0.0904 on
    this setup, gossipy's asynchronous nodes without delay)."""
    c, x0 = _problem(1)
    topo = tf.topologies.random_regular(N, 3, seed=2)
    durations, offsets, shift, _ = _gossipy_setup(False)
    kw = dict(durations=durations, window=1.0, layers=2 * N, pair_seed=0)
    base = dict(order="tick", delay=0.0, offsets=offsets)
    rounds = shift + 59
    ids = _gossip(c, x0, topo, rounds, timing=base, **kw)
    same = _gossip(c, x0, topo, rounds, timing=dict(base, node_order=[list(range(N))] * 70),
                   **kw)
    assert torch.equal(ids.state.x, same.state.x)
    seeded = _gossip(c, x0, topo, rounds, timing=dict(base, node_order=0), **kw)
    again = _gossip(c, x0, topo, rounds, timing=dict(base, node_order=0), **kw)
    assert torch.equal(seeded.state.x, again.state.x)
    diff = float((seeded.state.x - ids.state.x).abs().max())
    assert 0.08 < diff < 0.10
    ref = simulate_gossip(x0, topo, lambda z, i: z - c[i], durations, lr=0.1,
                          end_time=float(rounds), timing=dict(base, node_order=0))
    assert torch.equal(ref.x, seeded.state.x)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 6), d=st.lists(st.sampled_from([1.0, 2.0, 3.0]), min_size=6,
                                      max_size=6),
       lag=st.lists(st.sampled_from([0.0, 1.0, 2.0]), min_size=6, max_size=6),
       off=st.lists(st.sampled_from([0.0, 1.0, 2.0]), min_size=6, max_size=6),
       seed=st.integers(0, 50), merge=st.sampled_from(["mean", "age"]))
def test_seeded_node_order_windows_equal_the_reference(n: int, d: list[float],
                                                       lag: list[float], off: list[float],
                                                       seed: int, merge: str) -> None:
    """Integer times, so that many messages share an instant: the windowed run with a
    seeded node order equals :func:`messages`' order event for event; each tick's order is
    a permutation of the nodes, pure in ``(seed, tick)``."""
    c, x0 = _problem(seed, n)
    topo = tf.topologies.complete(n)
    timing = dict(order="tick", delay=lag[:n], offsets=off[:n], node_order=seed)
    run = _gossip(c, x0, topo, 15, durations=d[:n], window=1.0, layers=2 * n, merge=merge,
                  timing=timing)
    assert all(s.records["async_held"] == 0 for s in run.sent)
    ref = simulate_gossip(x0, topo, lambda z, i: z - c[i], d[:n], lr=0.1, end_time=15.0,
                          merge=merge, timing=timing)
    assert torch.equal(run.state.x, ref.x)
    order = NodeOrder(seed=seed)
    for tick in (0, 7):
        assert sorted(order.permutation(tick, n).tolist()) == list(range(n))
        assert np.array_equal(order.permutation(tick, n), NodeOrder(seed=seed).permutation(
            tick, n))
    ranks = order.ranks(np.arange(n), np.full(n, 7.5), n)
    assert np.array_equal(order.permutation(7, n)[ranks], np.arange(n))


def test_explicit_orders_must_cover_the_run_and_its_clients() -> None:
    c, x0 = _problem()
    topo = tf.topologies.complete(N)
    with pytest.raises(ValueError, match="must order the run's 8 clients, got permutations "
                                         "of 3") as e:
        _gossip(c, x0, topo, 3, timing=dict(order="tick", node_order=[[0, 1, 2]]))
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="lists the node orders of ticks 0-1, a message sent "
                                         "at 2 needs tick 2's") as e:
        _gossip(c, x0, topo, 3, timing=dict(order="tick", node_order=[list(range(N))] * 2))
    assert "\n" not in str(e.value)


# --------------------------------------------------- the sacs-epfl simulator, as read from it


def sacs_gossip(x0: torch.Tensor, c: torch.Tensor, topo: Any, shifts: list[int], period: int,
                transfer: int, end: int, lr: float, merge: str, init: bool = False
                ) -> dict[str, Any]:
    """The sacs-epfl simulator's gossip (``GossipClient``) on its event queue, restated with
    no training time and no bandwidth contention: events in the order of (time, creation);
    client ``i`` disseminates at ``shifts[i] + k * period`` (k >= 1) to a peer, the model
    arriving ``transfer`` later; an arrival is aggregated (age-weighted or mean) and
    trained (one SGD step, age + 1). ``init``: its initial training at time 0 (age 1)."""
    x, n = x0.clone(), len(x0)
    age = [0] * n
    if init:
        x, age = x - lr * (x - c), [1] * n
    queue: list[tuple[int, int, str, tuple[Any, ...]]] = []
    counter, sends = itertools.count(), [0] * n

    def schedule(t: int, kind: str, data: tuple[Any, ...]) -> None:
        bisect.insort(queue, (t, next(counter), kind, data))

    for i in range(n):
        schedule(shifts[i] + period, "disseminate", (i,))
    receives = 0
    while queue and queue[0][0] <= end:
        t, _, kind, data = queue.pop(0)
        if kind == "disseminate":
            i = data[0]
            j = int(partners(topo, 0, [i], [sends[i]])[0])
            sends[i] += 1
            schedule(t + transfer, "incoming", (i, j, x[i].clone(), age[i]))
            schedule(t + period, "disseminate", (i,))
            continue
        _, j, xi, ai = data
        if merge == "age":
            a = ai / (ai + age[j]) if ai + age[j] > 0 else 0.0
            z, age[j] = (1 - a) * x[j] + a * xi, max(ai, age[j])
        else:
            z = (x[j] + xi) / 2
        x[j], age[j] = z - lr * (z - c[j]), age[j] + 1
        receives += 1
    return dict(x=x, receives=receives, sends=sends)


@pytest.mark.parametrize("merge", ["mean", "age"])
def test_sacs_offsets_and_transfer_times_replay(merge: str) -> None:
    c, x0 = _problem(3)
    topo = tf.topologies.complete(N)
    rng = np.random.default_rng(4)
    period, transfer = 10_000_000, 2_345_678
    shifts = rng.integers(0, period + 1, size=N).tolist()
    ref = sacs_gossip(x0, c, topo, shifts, period, transfer, 30 * period, 0.1, merge)
    run = _gossip(c, x0, topo, 30, durations=10.0, window=10.0, layers=2 * N, merge=merge,
                  offsets=[s / 1e6 for s in shifts], delay=transfer / 1e6)
    assert ref["receives"] == int(run.state.own.updates.sum()) > 5 * N
    assert run.state.own.steps.tolist() == ref["sends"]
    assert float((run.state.x - ref["x"]).abs().max()) < 1e-12


class _Transfer(dict):  # type: ignore[type-arg]
    """A request or transfer of :class:`SacsGossip`: equal only to itself, as sacs's
    ``Transfer`` (``simulation/bandwidth_scheduler.py``, no ``__eq__``)."""

    __eq__ = object.__eq__  # type: ignore[assignment]
    __hash__ = object.__hash__  # type: ignore[assignment]


class SacsGossip:
    """The sacs-epfl simulator's gossip with its training time and its bandwidth scheduler,
    restated from its code (github.com/sacs-epfl/decentralized-learning-simulator,
    bdbc50d; paths under ``dasklearn/``), one event at a time on its queue. The peers are
    topofl's ``partners`` and the start shifts are given (the same inputs); the models are
    tensors (its DAG of tasks named them) and an aggregation is the replay's arithmetic of
    :func:`sacs_gossip`.

    * Events run in the order of (time, creation number) (``simulation/simulation.py``
      l. 431-433, ``bisect.insort(self.events, (event.time, event.index, event))``; l. 376).
    * Every client first trains from time 0 (``simulation/asynchronous_client.py``
      l. 25-27), then disseminates at ``shift + k * period`` (``simulation/gossip/client.py``
      l. 24-26, 66-67), sending its current model if it has one (l. 62-63).
    * A received model is kept as ``last_model``, replacing any kept before (l. 41), and
      aggregated only when the client is not training (l. 43-44, 46-55): it is merged with
      the client's model, which becomes the merged one at once (what a send then reads),
      and a training starts from it; its result replaces the model ``train_time`` later
      (``simulation/client.py`` l. 52-65, ``asynchronous_client.py`` l. 34-40), after
      which the last model received meanwhile, if any, is aggregated (``gossip/client.py``
      l. 28-35).
    * A transfer (``simulation/bandwidth_scheduler.py``) gets ``min(sender's outgoing
      bandwidth left, receiver's incoming bandwidth left)`` (l. 83-111); it then takes
      ``int(model_bytes / allocated * 1e6)`` microseconds (l. 120-125). A sender with no
      outgoing bandwidth left keeps its requests in order (l. 87-89); a request whose
      receiver has none left waits in the receiver's list (l. 103-108), and when one of the
      receiver's transfers ends the senders of its ongoing then waiting transfers are told
      in that order (l. 175-183), an ongoing one taking the bandwidth freed (its end moved,
      the bytes sent so far counted in whole bytes: l. 213-232, 305-309), a waiting one
      starting (l. 233-239). A sender whose transfer ends tries its requests again (l. 149).
    """

    def __init__(self, x0: torch.Tensor, c: torch.Tensor, topo: Any, shifts: list[int],
                 period: int, lr: float, merge: str, *, train_time: int, model_bytes: int,
                 bandwidth: int | list[int]) -> None:
        n = len(x0)
        self.c, self.topo, self.period, self.lr, self.merge = c, topo, period, lr, merge
        self.train_time, self.size = train_time, model_bytes
        self.bw = [bandwidth] * n if isinstance(bandwidth, int) else list(bandwidth)
        self.x = x0.clone()  # own_model (the initial model before the first training)
        self.age = [0] * n
        self.available = [False] * n
        self.last: list[tuple[torch.Tensor, int] | None] = [None] * n
        self.sends, self.receives = [0] * n, 0
        self.replaced = self.waited = 0  # received models replaced unmerged; late transfers
        self.log: list[tuple[int, str, int]] = []  # (time, operation, client) on the models
        self.out_req: list[list[dict[str, Any]]] = [[] for _ in range(n)]
        self.in_req: list[list[dict[str, Any]]] = [[] for _ in range(n)]
        self.out_now: list[list[dict[str, Any]]] = [[] for _ in range(n)]
        self.in_now: list[list[dict[str, Any]]] = [[] for _ in range(n)]
        self.events: list[tuple[int, int, str, Any]] = []
        self.counter = itertools.count()
        self.now = 0
        for i in range(n):  # INIT_CLIENT, in id order (simulation.py l. 143-146)
            self.schedule(0, "init", i)
        self.shifts = shifts

    def schedule(self, t: int, kind: str, data: Any) -> None:
        bisect.insort(self.events, (t, next(self.counter), kind, data))

    def run(self, end: int) -> dict[str, Any]:
        while self.events and self.events[0][0] <= end:
            t, _, kind, data = self.events.pop(0)
            self.now = t
            getattr(self, "on_" + kind)(data)
        return dict(x=self.x, receives=self.receives, sends=self.sends, age=self.age,
                    replaced=self.replaced, waited=self.waited)

    # -- the client (gossip/client.py, asynchronous_client.py, client.py)
    def on_init(self, i: int) -> None:
        self.schedule(self.now, "start_train", (i, self.x[i].clone()))
        self.schedule(self.now + self.shifts[i] + self.period, "disseminate", i)

    def on_start_train(self, data: tuple[int, torch.Tensor]) -> None:
        i, z = data
        self.schedule(self.now + self.train_time, "finish_train",
                      (i, z - self.lr * (z - self.c[i])))

    def on_finish_train(self, data: tuple[int, torch.Tensor]) -> None:
        i, trained = data
        self.log.append((self.now, "train", i))
        self.x[i], self.age[i] = trained, self.age[i] + 1
        self.available[i] = True
        if self.last[i] is not None:
            self.clear(i)

    def clear(self, j: int) -> None:
        self.available[j] = False
        kept = self.last[j]
        assert kept is not None
        xi, ai = kept
        self.last[j] = None
        self.log.append((self.now, "merge", j))
        if self.merge == "age":
            a = ai / (ai + self.age[j]) if ai + self.age[j] > 0 else 0.0
            self.x[j], self.age[j] = (1 - a) * self.x[j] + a * xi, max(ai, self.age[j])
        else:
            self.x[j] = (self.x[j] + xi) / 2
        self.receives += 1
        self.schedule(self.now, "start_train", (j, self.x[j].clone()))

    def on_disseminate(self, i: int) -> None:
        j = int(partners(self.topo, 0, [i], [self.sends[i]])[0])
        self.sends[i] += 1
        self.log.append((self.now, "send", i))
        self.schedule(self.now, "start_transfer", (i, j, self.x[i].clone(), self.age[i]))
        self.schedule(self.now + self.period, "disseminate", i)

    def incoming(self, j: int, xi: torch.Tensor, ai: int) -> None:
        if self.last[j] is not None:
            self.log.append((self.now, "drop", j))
        self.replaced += self.last[j] is not None
        self.last[j] = (xi, ai)
        if self.available[j]:
            self.clear(j)

    # -- the bandwidth scheduler (bandwidth_scheduler.py)
    def on_start_transfer(self, data: tuple[int, int, torch.Tensor, int]) -> None:
        i, j, xi, ai = data
        self.out_req[i].append(_Transfer(i=i, j=j, x=xi, age=ai, bw=0, done=0, since=0,
                                         asked=self.now))
        self.try_send(i)

    def left_out(self, i: int) -> int:
        return self.bw[i] - sum(tr["bw"] for tr in self.out_now[i])

    def left_in(self, j: int) -> int:
        return self.bw[j] - sum(tr["bw"] for tr in self.in_now[j])

    def try_send(self, i: int) -> None:
        if self.left_out(i) == 0:
            return
        started = []
        for tr in self.out_req[i]:
            give = min(self.left_out(i), self.left_in(tr["j"]))
            if give > 0:
                self.start(tr, give)
                started.append(tr)
                if self.left_out(i) == 0:
                    break
            elif tr not in self.in_req[tr["j"]]:
                self.in_req[tr["j"]].append(tr)
        for tr in started:
            self.out_req[i].remove(tr)

    def start(self, tr: dict[str, Any], give: int) -> None:
        tr["bw"], tr["since"] = give, self.now
        self.waited += self.now > tr["asked"]
        self.schedule(self.now + int(self.size / give * 1_000_000), "finish_transfer", tr)
        self.out_now[tr["i"]].append(tr)
        self.in_now[tr["j"]].append(tr)
        if tr in self.in_req[tr["j"]]:
            self.in_req[tr["j"]].remove(tr)

    def on_finish_transfer(self, tr: dict[str, Any]) -> None:
        i, j = tr["i"], tr["j"]
        self.out_now[i].remove(tr)
        self.in_now[j].remove(tr)
        self.incoming(j, tr["x"], tr["age"])
        for other in self.in_now[j] + self.in_req[j]:
            self.freed(other)
            if self.left_in(j) == 0:
                break
        self.try_send(i)

    def freed(self, tr: dict[str, Any]) -> None:
        give = min(self.left_out(tr["i"]), self.left_in(tr["j"]))
        if tr in self.out_now[tr["i"]]:
            if give > 0:
                k = next(e for e, ev in enumerate(self.events)
                         if ev[2] == "finish_transfer" and ev[3] is tr)
                self.events.pop(k)
                tr["done"] += int((self.now - tr["since"]) / 1_000_000 * tr["bw"])
                tr["since"] = self.now
                tr["bw"] += give
                rest = (self.size - tr["done"]) / tr["bw"]
                self.schedule(self.now + int(rest * 1_000_000), "finish_transfer", tr)
        elif tr in self.out_req[tr["i"]]:
            if give > 0:
                self.start(tr, give)
                self.out_req[tr["i"]].remove(tr)
        else:
            raise RuntimeError("a transfer neither ongoing nor waiting")


def test_sacs_full_replay_reduces_to_the_simple_one_without_contention() -> None:
    """Two clients (each one's only peer the other, a transfer shorter than the period: no
    two transfers ever share a link) and no training time: the full restatement equals
    :func:`sacs_gossip` with its initial training, to the bit, and topofl's ``delay``
    option run from the trained models (mean merge: the ages do not weigh)."""
    c, x0 = _problem(5, 2)
    topo = tf.topologies.complete(2)
    period, size, bw = 10_000_000, 2_345_678, 1_000_000
    transfer = int(size / bw * 1_000_000)
    shifts = [1_234_567, 7_654_321]
    for merge in ("mean", "age"):
        full = SacsGossip(x0, c, topo, shifts, period, 0.1, merge, train_time=0,
                          model_bytes=size, bandwidth=bw).run(30 * period)
        simple = sacs_gossip(x0, c, topo, shifts, period, transfer, 30 * period, 0.1, merge,
                             init=True)
        assert torch.equal(full["x"], simple["x"]) and full["receives"] == simple["receives"]
    trained = x0 - 0.1 * (x0 - c)
    run = _gossip(c, trained, topo, 30, durations=10.0, window=10.0, layers=4,
                  offsets=[s / 1e6 for s in shifts], delay=transfer / 1e6)
    mean = SacsGossip(x0, c, topo, shifts, period, 0.1, "mean", train_time=0,
                      model_bytes=size, bandwidth=bw).run(30 * period)
    assert float((run.state.x - mean["x"]).abs().max()) < 1e-12


def sacs_gaps(seed: int, n: int = N, train_time: int = 3_000_000,
              size: int = 2_345_678, bw: int = 1_000_000, periods: int = 40,
              graph: str = "complete", merge: str = "mean") -> dict[str, Any]:
    """The sacs-epfl gossip as its code runs (:class:`SacsGossip`, mean merges by default),
    with its bandwidth queueing alone and with its training time too (3 s: its defaults'
    5 local steps of 0.6 s), against topofl: its ``bandwidth`` timing (``replay ...``: the
    schedule of :mod:`topofl.engine.bandwidth`; queueing alone with mean merges from the
    models after the first training, else its ``train_time`` from the initial ones, 0 for
    queueing alone: the ages of age-weighted merges start at 1) and its nearest timing
    without it (``offsets`` the shifts, ``delay`` the transfer time of a free link, every
    receive merged and trained at once, from the models after the first training)."""
    c, x0 = _problem(seed, n)
    topo = getattr(tf.topologies, graph)(n)
    period = 10_000_000
    shifts = np.random.default_rng(seed).integers(0, period + 1, size=n).tolist()
    trained = x0 - 0.1 * (x0 - c)
    kw: dict[str, Any] = dict(durations=10.0, window=10.0, layers=4 * n, merge=merge)
    offsets = [s / 1e6 for s in shifts]
    near = _gossip(c, trained, topo, periods, offsets=offsets,
                   delay=int(size / bw * 1e6) / 1e6, **kw)
    link = dict(offsets=offsets, bandwidth=bw, model_bytes=size, slots=8)
    out: dict[str, Any] = {}
    for name, tt in (("queueing", 0), ("queueing+training", train_time)):
        ref = SacsGossip(x0, c, topo, shifts, period, 0.1, merge, train_time=tt,
                         model_bytes=size, bandwidth=bw).run(periods * period)
        out[name] = float((near.state.x - ref["x"]).abs().max())
        bare = name == "queueing" and merge == "mean"  # without train_time: no first one
        how = link if bare else dict(link, train_time=tt / 1e6)
        run = _gossip(c, trained if bare else x0, topo, periods, timing=how, **kw)
        out["replay " + name] = float((run.state.x - ref["x"]).abs().max())
        out["replay " + name + " equal"] = bool(torch.equal(run.state.x, ref["x"]))
        out["replay " + name + " held"] = sum(s.records["async_held"] for s in run.sent)
        out["replay " + name + " merges"] = int(run.state.own.delivered.sum())
        out[name + " receives"] = ref["receives"]
        out[name + " replaced"], out[name + " waited"] = ref["replaced"], ref["waited"]
    out["topofl receives"] = int(near.state.own.updates.sum())
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sacs_queueing_and_training_time_replay(seed: int) -> None:
    """topofl's ``bandwidth`` timing replays the sacs-epfl gossip as its code runs, with its
    bandwidth queueing alone and with its training time (the receives kept while a client
    trains), to 1e-12 (measured: 0, the same bits); its nearest timing without the schedule
    is 2.6e-3 to 0.2 away (``analysis/async_timing.md``)."""
    gaps = sacs_gaps(seed)
    for name in ("queueing", "queueing+training"):
        assert gaps["replay " + name] <= 1e-12 and gaps["replay " + name + " held"] == 0
        assert gaps["replay " + name + " merges"] == gaps[name + " receives"]
        assert gaps[name] > 1e-3  # the schedule matters
    assert gaps["queueing waited"] > 0  # transfers did queue


@pytest.mark.parametrize(("merge", "train_time", "size"), [
    ("mean", 3_000_000, 2_345_678), ("age", 3_000_000, 2_345_678), ("age", 8_000_000, 500_000),
    ("mean", 9_000_000, 4_000_000)])
def test_sacs_replay_on_a_ring_and_with_replaced_models(merge: str, train_time: int,
                                                        size: int) -> None:
    """On a ring, age-weighted merges too (the replay's ages are its: 1 after the first
    training), and with trainings long enough that kept models are replaced unmerged."""
    gaps = sacs_gaps(3, train_time=train_time, size=size, graph="ring", merge=merge)
    assert gaps["replay queueing+training"] <= 1e-12
    assert gaps["replay queueing+training held"] == 0
    assert gaps["replay queueing+training merges"] == gaps["queueing+training receives"]
    if train_time >= 8_000_000:
        assert gaps["queueing+training replaced"] > 0


def test_bandwidth_without_contention_is_the_delay_replay() -> None:
    """Links fast enough that no transfer waits (the reference's ``waited`` is 0): the
    ``bandwidth`` timing is the ``delay`` timing with ``delay = int(model_bytes /
    bandwidth * 1e6) / 1e6``, to the bit (on 2 clients, and on 8 with a 1 GB/s link)."""
    for n, bw, size in ((2, 1_000_000, 2_345_678), (N, 1_000_000_000, 2_345_678)):
        c, x0 = _problem(6, n)
        topo = tf.topologies.complete(n)
        shifts = np.random.default_rng(6).integers(0, 10_000_000, size=n).tolist()
        ref = SacsGossip(x0, c, topo, shifts, 10_000_000, 0.1, "mean", train_time=0,
                         model_bytes=size, bandwidth=bw).run(30 * 10_000_000)
        assert ref["waited"] == 0
        kw = dict(durations=10.0, window=10.0, layers=4 * n, merge="age")
        offsets = [s / 1e6 for s in shifts]
        link = _gossip(c, x0, topo, 30, timing=dict(offsets=offsets, bandwidth=bw,
                                                    model_bytes=size), **kw)
        lag = _gossip(c, x0, topo, 30, offsets=offsets, delay=int(size / bw * 1e6) / 1e6,
                      **kw)
        assert torch.equal(link.state.x, lag.state.x)
        assert link.state.own.age.tolist() == lag.state.own.age.tolist()
        assert int(link.state.own.delivered.sum()) == int(lag.state.own.delivered.sum()) > n


# ---------------------------------------------------- the fast path against the references


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 7), graph=st.sampled_from(["ring", "complete", "star"]),
       d=st.lists(st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0]), min_size=7, max_size=7),
       lag=st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5, 4.0]), min_size=7, max_size=7),
       off=st.lists(st.sampled_from([0.0, 0.25, 1.0, 2.0]), min_size=7, max_size=7),
       timing=st.sampled_from(["continuous", "tick"]), merge=st.sampled_from(["mean", "age"]),
       seed=st.integers(0, 3))
def test_windowed_messages_equal_the_reference(n: int, graph: str, d: list[float],
                                               lag: list[float], off: list[float], timing: str,
                                               merge: str, seed: int) -> None:
    c, x0 = _problem(seed, n)
    topo = getattr(tf.topologies, graph)(n)
    durations, window = d[:n], min(d[:n])
    rounds = int(12 / window)
    run = _gossip(c, x0, topo, rounds, durations=durations, window=window, layers=2 * n,
                  merge=merge, timing=timing, delay=lag[:n], offsets=off[:n], pair_seed=seed)
    assert all(s.records["async_held"] == 0 for s in run.sent)
    ref = simulate_gossip(x0, topo, lambda z, i: z - c[i], durations, lr=0.1,
                          end_time=rounds * window, pair_seed=seed, merge=merge,
                          timing=dict(order=timing, delay=lag[:n], offsets=off[:n]))
    assert torch.equal(run.state.x, ref.x)
    assert run.state.own.steps.tolist() == ref.steps
    assert run.state.own.age.tolist() == ref.age
    assert int(run.state.own.updates.sum()) == len(ref.log)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(half=st.integers(1, 3), d=st.lists(st.sampled_from([1.0, 1.5, 2.0, 3.0]), min_size=8,
                                         max_size=8),
       off=st.lists(st.sampled_from([0.0, 0.5, 1.25]), min_size=8, max_size=8),
       split=st.sampled_from([None, "bipartite"]), seed=st.integers(0, 3))
def test_adpsgd_offsets_and_split_equal_the_reference(half: int, d: list[float],
                                                      off: list[float], split: str | None,
                                                      seed: int) -> None:
    n = 2 * half + 2
    c, x0 = _problem(seed, n)
    topo = tf.topologies.ring(n)
    algo = tf.algorithms.adpsgd(0.05, durations=d[:n], window=1.0, offsets=off[:n],
                                split=split, pair_seed=seed)
    run = run_rounds(algo, x0, topo, lambda z, phase, rnd: z - c, rounds=15)
    ref = simulate_events(x0, topo, lambda z, i: z - c[i], d[:n], lr=0.05, end_time=15.0,
                          pair_seed=seed, offsets=off[:n], split=split)
    assert torch.equal(run.state.x, ref.x)
    if split:  # only the active (even) clients average, always with a passive neighbour
        assert all((i % 2 == 0 and j % 2 == 1) or i == j for _, i, j, _ in ref.log)
        assert any(i == j for _, i, j, _ in ref.log) and any(i != j for _, i, j, _ in ref.log)


def test_the_split_is_a_two_colouring_and_an_odd_cycle_is_refused() -> None:
    assert bipartite_split(tf.topologies.ring(4)).tolist() == [True, False, True, False]
    grid = tf.topologies.torus(4, 4) if hasattr(tf.topologies, "torus") else None
    if grid is not None:
        side = bipartite_split(grid)
        w = grid.W.tocoo()
        assert all(side[i] != side[j] for i, j in zip(w.row, w.col) if i != j)
    with pytest.raises(ValueError, match="split='bipartite' needs a bipartite graph") as e:
        simulate_events(torch.zeros(3, 1), tf.topologies.ring(3), lambda z, i: z, [1.0] * 3,
                        lr=0.1, end_time=1.0, split="bipartite")
    assert "\n" not in str(e.value)


def test_offsets_shift_the_event_times() -> None:
    topo = tf.topologies.complete(3)
    ev = list(events(topo, np.array([1.0, 2.0, 1.0]), 3.0, offsets=np.array([0.5, 0.0, 2.0])))
    assert [(e.time, e.client) for e in ev] == [(1.5, 0), (2.0, 1), (2.5, 0), (3.0, 2)]
    win = Windows.of([1.0, 2.0, 1.0], 1.0, 3, [0.5, 0.0, 2.0])
    assert win.finish(np.array([0, 0, 0])).tolist() == [1.5, 2.0, 3.0]
    assert win.surplus(np.array([0, 0, 0]), 3) == 2 + 1 + 1  # by 4.0: 1.5, 2.5, 3.5; 2, 4; 3, 4


def test_the_plan_is_a_pure_function_of_the_counts() -> None:
    win, topo = Windows.of([1.0, 2.0, 1.5], 1.0, 3, [0.0, 0.5, 0.25]), tf.topologies.ring(3)
    lag = np.array([1.0, 0.0, 2.5])
    a = transit(win, np.array([2, 1, 1]), np.array([1, 1, 0]), 2, topo, 5, delay=lag,
                timing="tick", slots=slots(win.durations, lag), layers=6)
    b = transit(win, np.array([2, 1, 1]), np.array([1, 1, 0]), 2, topo, 5, delay=lag,
                timing="tick", slots=slots(win.durations, lag), layers=6)
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    ms = list(messages(topo, win.durations, 3.0, 5, offsets=win.offsets, delay=lag))
    assert [m.kind for m in ms].count("send") >= [m.kind for m in ms].count("receive")


def test_fewer_layers_hold_events_and_still_merge() -> None:
    c, x0 = _problem(4)
    topo = tf.topologies.complete(N)
    run = _gossip(c, x0, topo, 20, durations=1.0, window=1.0, layers=1, timing="tick",
                  delay=0.5)
    assert sum(s.records["async_held"] for s in run.sent) > 0
    assert int(run.state.own.updates.sum()) > N
    assert torch.isfinite(run.state.x).all()


# ------------------------------------------------------------------ defaults and refusals


def test_defaults_leave_the_header_as_before() -> None:
    assert set(tf.algorithms.gossip_learning().hparams) == {
        "lr", "durations", "window", "local_steps", "layers", "merge", "pair_seed", "decay"}
    assert set(tf.algorithms.adpsgd().hparams) == {
        "lr", "durations", "window", "local_steps", "pair_seed", "decay"}
    hp = tf.algorithms.gossip_learning(timing=dict(order="tick", delay=[1, 2], offsets=0.5))
    assert hp.hparams["timing"] == dict(order="tick", delay=[1.0, 2.0], offsets=0.5)
    hp = tf.algorithms.gossip_learning(timing=dict(order="tick", node_order=np.array([[1, 0]])))
    assert hp.hparams["timing"]["node_order"] == [[1, 0]]
    assert tf.algorithms.gossip_learning(timing=dict(order="tick", node_order=4)).hparams[
        "timing"]["node_order"] == 4
    assert tf.algorithms.gossip_learning(timing="continuous").hparams == \
        tf.algorithms.gossip_learning().hparams
    assert tf.algorithms.adpsgd(split="bipartite", offsets=[0, 1]).hparams["offsets"] == [0, 1]


@pytest.mark.parametrize(("factory", "kw", "match"), [
    ("gossip_learning", dict(timing="ticks"), "timing must be one of"),
    ("gossip_learning", dict(timing=1), "timing must be a str"),
    ("gossip_learning", dict(timing=dict(delay=-1.0)), "delay must be a non-negative finite"),
    ("gossip_learning", dict(timing=dict(delay=[1.0, float("nan")])),
     "delay must be non-negative finite"),
    ("gossip_learning", dict(timing=dict(offsets="0")),
     "offsets must be a non-negative time or a sequence"),
    ("gossip_learning", dict(timing=dict(offsets=[True])), "offsets must hold real numbers"),
    ("gossip_learning", dict(timing=dict(order="tick", lag=1)), "timing's keys are order"),
    ("gossip_learning", dict(timing=dict(node_order=3)), "node_order .* needs order='tick'"),
    ("gossip_learning", dict(timing=dict(order="tick", node_order=-1)),
     "node_order seed must be >= 0"),
    ("gossip_learning", dict(timing=dict(order="tick", node_order=True)),
     "node_order must be None, a seed"),
    ("gossip_learning", dict(timing=dict(order="tick", node_order="01")),
     "node_order must be None, a seed"),
    ("gossip_learning", dict(timing=dict(order="tick", node_order=[[0, 2]])),
     "node_order must hold permutations of 0..n-1, got \\[0, 2\\] for tick 0"),
    ("gossip_learning", dict(timing=dict(order="tick", node_order=[[0, 1], [0]])),
     "node_order must hold permutations"),
    ("gossip_learning", dict(timing=dict(order="tick", node_order=[[0.0, 1.0]])),
     "node_order must hold permutations"),
    ("adpsgd", dict(offsets=float("inf")), "offsets must be a non-negative finite time"),
    ("adpsgd", dict(split="random"), "split must be None or 'bipartite'"),
    ("adpsgd", dict(split=True), "split must be None or 'bipartite'"),
])
def test_bad_settings_are_refused_in_one_line(factory: str, kw: dict[str, Any],
                                              match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match) as info:
        getattr(tf.algorithms, factory)(**kw)
    assert "\n" not in str(info.value)


def test_per_client_times_must_match_the_clients() -> None:
    c, x0 = _problem()
    with pytest.raises(ValueError, match="delay must hold one time per client: 8 clients"):
        _gossip(c, x0, tf.topologies.ring(N), 2, delay=[1.0, 2.0])
    with pytest.raises(ValueError, match="offsets must hold one time per client: 8 clients"):
        run_rounds(tf.algorithms.adpsgd(offsets=[1.0]), x0, tf.topologies.ring(N),
                   lambda z, phase, rnd: z - c, rounds=2)
    assert check_timing("continuous") == "continuous" and check_times(0, "delay") == 0.0


def test_late_offsets_are_refused_up_front_as_an_idle_run() -> None:
    why = tf.algorithms.gossip_learning(timing=dict(offsets=100.0)).idle(3)
    assert why is not None and "min(offsets + durations)" in why and "\n" not in why


# ------------------------------------------------------------------------ through the engine


@pytest.fixture(scope="module")
def data() -> Any:
    return tf.data.federate("digits", "pathological", 8, classes_per_client=3, seed=0, val=0.2)


def _run(data: Any, rounds: int, **kw: Any) -> Any:
    algo = tf.algorithms.gossip_learning(0.1, durations=[1.0, 1.3, 2.0, 0.8, 3.5, 1.0, 0.9,
                                                         2.2],
                                         window=0.8, local_steps=2, layers=3, merge="age",
                                         timing=dict(order="tick", delay=[0.5, 2.0] * 4,
                                                     offsets=0.3))
    return run_on_ring(algo, data, rounds, **kw)


def test_engine_resumes_messages_in_flight_exactly(data: Any, tmp_path: Path) -> None:
    full, _ = crash_then_resume(_run, data, tmp_path)
    assert full.records.final("async_delivered") >= 0
