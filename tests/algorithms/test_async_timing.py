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
from tests.engine._crash import Crash, CrashingData
from topofl.algorithms.adpsgd import simulate_events
from topofl.algorithms.gossip_learning import simulate_gossip
from topofl.engine import run_rounds
from topofl.engine.event_time import Windows, events, partners
from topofl.engine.transit import (
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
    how = {k: kw.pop(k) for k in ("timing", "delay", "offsets") if k in kw}
    if how:
        kw["timing"] = dict(order=how.pop("timing", "continuous"), **how)
    return kw


def _gossip(c: torch.Tensor, x0: torch.Tensor, topo: Any, windows: int, **kw: Any) -> Any:
    algo = tf.algorithms.gossip_learning(kw.pop("lr", 0.1), **_timing(kw))
    return run_rounds(algo, x0, topo, lambda z, phase, rnd: z - c, rounds=windows)


# -------------------------------------------------------------- gossipy, as read from its code


def gossipy_ticks(x0: torch.Tensor, c: torch.Tensor, topo: Any, fires: Any, delay: int,
                  ticks: int, lr: float) -> torch.Tensor:
    """gossipy's ``GossipSimulator.start`` loop (PUSH, MERGE_UPDATE, mean merge), restated:
    at tick ``t`` every node that times out (``fires(i, t)``), in id order, copies its model
    into a message for its peer due at ``t + delay``; then the messages due at ``t`` are
    handled in the order they were queued: the receiver averages, then takes one SGD step."""
    x = x0.clone()
    queue: dict[int, list[tuple[int, torch.Tensor]]] = {}
    count = [0] * len(x)
    for t in range(ticks):
        for i in range(len(x)):
            if fires(i, t):
                j = int(partners(topo, 0, [i], [count[i]])[0])
                count[i] += 1
                queue.setdefault(t + delay, []).append((j, x[i].clone()))
        for j, xi in queue.pop(t, []):
            z = (x[j] + xi) / 2
            x[j] = z - lr * (z - c[j])
    return x


@pytest.mark.parametrize(("sync", "delay"), [(False, 0), (False, 2), (True, 0), (True, 3)])
def test_gossipy_ticks_replay_to_the_bit(sync: bool, delay: int) -> None:
    c, x0 = _problem(1)
    topo = tf.topologies.random_regular(N, 3, seed=2)
    rng = np.random.default_rng(3)
    R = 5
    if sync:  # a node times out delta_i ticks into every round of R ticks
        delta = rng.integers(0, R, size=N).tolist()
        durations, offsets, shift = [float(R)] * N, [float(d) for d in delta], R

        def fires(i: int, t: int) -> bool:
            return t % R == delta[i]
    else:  # every delta_i ticks from tick 0
        delta = rng.integers(2, 6, size=N).tolist()
        shift = max(delta)
        durations, offsets = [float(d) for d in delta], [float(shift - d) for d in delta]

        def fires(i: int, t: int) -> bool:
            return t % delta[i] == 0
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


def test_ticks_differ_from_continuous_time_where_sends_coincide() -> None:
    c, x0 = _problem(2)
    topo = tf.topologies.complete(N)
    kw = dict(durations=1.0, window=1.0, layers=2 * N, delay=0.0)
    tick = _gossip(c, x0, topo, 10, timing="tick", **kw)
    cont = _gossip(c, x0, topo, 10, timing="continuous", **kw)
    plain = _gossip(c, x0, topo, 10, durations=1.0, window=1.0, layers=2 * N)
    assert torch.equal(cont.state.x, plain.state.x)  # delay 0: the default order
    assert not torch.equal(tick.state.x, cont.state.x)


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
    full = _run(data, 8)
    assert full.records.final("async_delivered") >= 0
    ck = dict(checkpoint_every=4, checkpoint_path=str(tmp_path / "ck.pt"),
              records_path=str(tmp_path / "r.jsonl"))
    with pytest.raises(Crash):
        _run(data, 8, run_data=CrashingData(data, at=6), **ck)
    resumed = _run(data, 8, resume=tmp_path / "ck.pt", **ck)
    for k, v in full.state.tensors().items():
        assert torch.equal(v, resumed.state.tensors()[k]), k
