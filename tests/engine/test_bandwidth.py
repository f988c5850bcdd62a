"""The sacs-epfl bandwidth schedule (:mod:`topofl.engine.bandwidth`) and gossip learning's
``bandwidth`` timing (issue 84, item 3).

The schedule is checked event for event against the full restatement of the sacs-epfl
simulator's code (``SacsGossip`` in ``tests/algorithms/test_async_timing.py``: its event
queue, its ``BWScheduler``, its training time), over random small graphs, bandwidths, model
sizes, shifts and training times; the windowed run against the slow reference
(:func:`~topofl.algorithms.gossip_learning.simulate_gossip`, the schedule's operations one at
a time) to the bit and against the restatement's models to 1e-12; a resumed run against an
uninterrupted one, to the bit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import topofl as tf
from tests.algorithms._event_runs import run_on_ring
from tests.algorithms.test_async_timing import SacsGossip, _gossip, _problem
from tests.engine._crash import crash_then_resume
from topofl.algorithms.gossip_learning import simulate_gossip
from topofl.engine.bandwidth import (
    DROP,
    MERGE,
    SEND,
    TRAIN,
    Link,
    SacsClock,
    op_layers,
    sacs_schedule,
)

NAMES = {SEND: "send", MERGE: "merge", TRAIN: "train", DROP: "drop"}


def _settings(draw: Any, n: int) -> dict[str, Any]:
    """A random sacs setup of ``n`` clients (whole microseconds, whole bytes per second)."""
    period = draw(st.sampled_from([4_000_000, 10_000_000]))
    per = draw(st.booleans())
    rates = [300_000, 700_000, 1_000_000, 2_500_000]
    bw = (draw(st.lists(st.sampled_from(rates), min_size=n, max_size=n)) if per
          else draw(st.sampled_from(rates)))
    return dict(period=period, bandwidth=bw,
                size=draw(st.sampled_from([400_000, 1_000_000, 2_345_678])),
                shifts=draw(st.lists(st.integers(0, period), min_size=n, max_size=n)),
                train=draw(st.sampled_from([None, 0, 1_000_000, 3_000_000, 7_000_000])),
                graph=draw(st.sampled_from(["ring", "complete", "star"])),
                merge=draw(st.sampled_from(["mean", "age"])))


@st.composite
def setups(draw: Any) -> tuple[int, dict[str, Any]]:
    n = draw(st.integers(2, 6))
    return n, _settings(draw, n)


def _reference(n: int, s: dict[str, Any], periods: int, seed: int = 0) -> tuple[Any, Any]:
    c, x0 = _problem(seed, n)
    topo = getattr(tf.topologies, s["graph"])(n)
    ref = SacsGossip(x0, c, topo, s["shifts"], s["period"], 0.1, s["merge"],
                     train_time=s["train"] or 0, model_bytes=s["size"],
                     bandwidth=s["bandwidth"])
    return ref, ref.run(periods * s["period"])


def _timing(s: dict[str, Any], **more: Any) -> dict[str, Any]:
    out = dict(offsets=[v / 1e6 for v in s["shifts"]], bandwidth=s["bandwidth"],
               model_bytes=s["size"], **more)
    if s["train"] is not None:  # else: no first training, a merge trained at once
        out["train_time"] = s["train"] / 1e6
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(setup=setups())
def test_the_schedule_is_the_simulators_event_for_event(setup: tuple[int, dict[str, Any]]
                                                        ) -> None:
    """Every operation on a model (a send's copy, a merge, a training's end, a kept model
    replaced) at the restatement's time, in its order, for the same client; without a
    training time, its run with a training time of 0 less the first trainings."""
    n, s = setup
    ref, _ = _reference(n, s, 12)
    sched = sacs_schedule(getattr(tf.topologies, s["graph"])(n), s["period"] / 1e6,
                          12 * s["period"] / 1e6, **_timing(s))
    ours = [(t, NAMES[k], c) for t, k, c in zip(sched.time.tolist(), sched.kind.tolist(),
                                                sched.client.tolist())]
    if s["train"] is None:  # the restatement's first trainings, at 0, left out
        assert ref.log[:n] == [(0, "train", i) for i in range(n)]
    assert ours == (ref.log[n:] if s["train"] is None else ref.log)
    assert (np.diff(sched.time) >= 0).all()
    # a message is merged or dropped once, after its send, from the slot it was sent to
    sent: dict[int, tuple[int, int]] = {}
    for k, c, peer, slot in zip(sched.kind.tolist(), sched.client.tolist(),
                                sched.peer.tolist(), sched.slot.tolist()):
        if k == SEND:
            assert slot not in sent
            sent[slot] = (c, peer)
        elif k in (MERGE, DROP):
            assert sent.pop(slot) == (peer, c)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(setup=setups(), wide=st.sampled_from([0.5, 1.0, 2.5]))
def test_windows_equal_the_reference_and_the_simulator(setup: tuple[int, dict[str, Any]],
                                                       wide: float) -> None:
    """The windowed run (windows of half, one or 2.5 periods) equals the schedule's
    operations one at a time to the bit, and the restatement's models to 1e-12 (without a
    training time: from the models after its first training, mean merges)."""
    n, s = setup
    periods = 10
    _, want = _reference(n, s, periods)
    c, x0 = _problem(0, n)
    if s["train"] is None:
        x0 = x0 - 0.1 * (x0 - c)
    topo = getattr(tf.topologies, s["graph"])(n)
    d, window = s["period"] / 1e6, wide * s["period"] / 1e6
    how = _timing(s, slots=2 * periods)
    run = _gossip(c, x0, topo, int(round(periods / wide)), durations=d, window=window,
                  layers=12 * n, merge=s["merge"], timing=how)
    assert sum(r.records["async_held"] for r in run.sent) == 0
    ref = simulate_gossip(x0, topo, lambda z, i: z - c[i], [d] * n, lr=0.1,
                          end_time=periods * d, merge=s["merge"], timing=how)
    assert torch.equal(run.state.x, ref.x)
    assert run.state.own.steps.tolist() == ref.steps == want["sends"]
    assert run.state.own.age.tolist() == ref.age
    if s["merge"] == "age" and s["train"] is not None:  # its mean merges leave the ages
        assert ref.age == want["age"]  # unmerged: they weigh nothing there
    assert int(run.state.own.delivered.sum()) == len(ref.log) == want["receives"]
    if s["train"] is not None or s["merge"] == "mean":  # its ages start at 1
        assert float((run.state.x - want["x"]).abs().max()) <= 1e-12


def test_fewer_layers_hold_operations_in_order_and_still_train() -> None:
    c, x0 = _problem(4)
    topo = tf.topologies.complete(8)
    how = dict(bandwidth=1e6, model_bytes=5e5, train_time=0.5, slots=16)
    run = _gossip(c, x0, topo, 20, durations=1.0, window=2.0, layers=2, timing=how)
    held = [r.records["async_held"] for r in run.sent]
    assert sum(held) > 0 and all(r.records["async_layers"] <= 2 for r in run.sent)
    assert int(run.state.own.updates.sum()) > 8 and torch.isfinite(run.state.x).all()


def test_the_schedule_is_pure_and_extends_to_itself() -> None:
    """Run to 50 s then to 120 s, or to 120 s at once: the same operations (a resumed
    run recomputes its schedule from time 0)."""
    topo, link = tf.topologies.star(6), Link(7e5, 2.345678e6, 3.0)
    d, o = np.full(6, 10.0), np.linspace(0.0, 9.0, 6)
    a, b = SacsClock.of(topo, d, o, 3, link), SacsClock.of(topo, d, o, 3, link)
    a.until(50_000_000)
    a.until(120_000_000)
    b.until(120_000_000)
    assert all(np.array_equal(u, v) for u, v in zip(a.schedule(), b.schedule()))
    assert a.waited > 0  # the star's centre queues
    kinds = a.schedule().kind
    layer = op_layers(kinds, a.schedule().client, a.schedule().slot)
    assert layer.min() >= 0 and len(layer) == len(kinds)


# ------------------------------------------------------------------------ through the engine


@pytest.fixture(scope="module")
def data() -> Any:
    return tf.data.federate("digits", "pathological", 8, classes_per_client=3, seed=0, val=0.2)


def _run(data: Any, rounds: int, **kw: Any) -> Any:
    algo = tf.algorithms.gossip_learning(
        0.1, durations=[1.0, 1.3, 2.0, 0.8, 3.5, 1.0, 0.9, 2.2], window=0.8, local_steps=2,
        layers=4, merge="age", timing=dict(offsets=0.3, bandwidth=[1e6, 3e5] * 4,
                                           model_bytes=4e5, train_time=0.6, slots=6))
    return run_on_ring(algo, data, rounds, **kw)


def test_engine_resumes_the_schedule_exactly(data: Any, tmp_path: Path) -> None:
    full, _ = crash_then_resume(_run, data, tmp_path)
    assert full.records.final("async_delivered") >= 0
    assert int(full.state.own.done) > 0 and int(full.state.own.delivered.sum()) > 0


# ------------------------------------------------------------------ the header and refusals


def test_the_header_records_the_schedule_only_when_set() -> None:
    hp = tf.algorithms.gossip_learning(timing=dict(bandwidth=1e6, model_bytes=2e6)).hparams
    assert hp["timing"] == dict(order="continuous", delay=None, offsets=None, bandwidth=1e6,
                                model_bytes=2e6)
    hp = tf.algorithms.gossip_learning(timing=dict(
        bandwidth=[1, 2], model_bytes=5, train_time=3, slots=4, offsets=1)).hparams
    assert hp["timing"] == dict(order="continuous", delay=None, offsets=1.0,
                                bandwidth=[1.0, 2.0], model_bytes=5.0, train_time=3.0,
                                slots=4)
    assert "bandwidth" not in tf.algorithms.gossip_learning(timing=dict(delay=1)).hparams[
        "timing"]


@pytest.mark.parametrize(("timing", "match"), [
    (dict(bandwidth=0, model_bytes=1), "bandwidth must be a positive finite number, got 0"),
    (dict(bandwidth=-1e6, model_bytes=1), "bandwidth must be a positive finite number"),
    (dict(bandwidth=float("inf"), model_bytes=1), "bandwidth must be a positive finite"),
    (dict(bandwidth=[1e6, 0], model_bytes=1), "bandwidth of client 1 must be a positive"),
    (dict(bandwidth=[], model_bytes=1), "bandwidth must hold one rate per client"),
    (dict(bandwidth="fast", model_bytes=1), "bandwidth must be a positive finite number"),
    (dict(bandwidth=True, model_bytes=1), "bandwidth must be a positive finite number"),
    (dict(bandwidth=1e6), "needs both bandwidth and model_bytes, got bandwidth"),
    (dict(train_time=3.0), "needs both bandwidth and model_bytes, got train_time"),
    (dict(order="tick", bandwidth=1e6, model_bytes=1), "it needs order='continuous', got "
                                                       "order='tick'"),
    (dict(delay=1.0, bandwidth=1e6, model_bytes=1), "give it or a delay, not both"),
    (dict(bandwidth=1e6, model_bytes=0), "model_bytes must be a positive finite number"),
    (dict(bandwidth=1e6, model_bytes=1, train_time=-1), "train_time must be a non-negative"),
    (dict(bandwidth=1e6, model_bytes=1, train_time=[1, 2]), "train_time must be one time"),
    (dict(bandwidth=1e6, model_bytes=1, slots=1), "slots must be >= 2"),
    (dict(bandwidth=1e6, model_bytes=1, slots=2.5), "slots"),
    # times beyond the int64 microsecond clock (a raw OverflowError before)
    (dict(bandwidth=1e-300, model_bytes=1e6), r"a transfer's time on a free link .* at most "
                                              r"4.612e\+12 s .* got inf s"),
    (dict(bandwidth=[1e6, 1e-200], model_bytes=1e6), "a transfer's time on a free link"),
    (dict(bandwidth=1e6, model_bytes=1, train_time=1e300), "train_time must be at most"),
    (dict(bandwidth=1e6, model_bytes=1, lag=2), "timing's keys are order, delay, offsets, "
                                                "node_order, bandwidth"),
])
def test_bad_settings_are_refused_in_one_line(timing: dict[str, Any], match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match) as info:
        tf.algorithms.gossip_learning(timing=timing)
    assert "\n" not in str(info.value)


def test_what_only_a_run_can_tell_is_refused_in_one_line() -> None:
    c, x0 = _problem(0)
    with pytest.raises(ValueError, match="bandwidth must hold one time per client: 8 "
                                         "clients, got 2") as e:
        _gossip(c, x0, tf.topologies.ring(8), 2, timing=dict(bandwidth=[1e6, 1e6],
                                                             model_bytes=1))
    assert "\n" not in str(e.value)
    # a star's centre receives faster than its link drains: the queue outgrows the slots
    with pytest.raises(ValueError, match="holds more than 16 messages at once .* give a "
                                         "larger slots") as e:
        _gossip(c, x0, tf.topologies.star(8), 30, durations=1.0,
                timing=dict(bandwidth=1e6, model_bytes=5e5, slots=2))
    assert "\n" not in str(e.value)
    clock = SacsClock.of(tf.topologies.complete(4), np.ones(4), None, 0, Link(1e6, 1e6))
    clock.check_graph(tf.topologies.complete(4), 1)  # the same graph, another object
    with pytest.raises(ValueError, match="the run's graph changed at round 3"):
        clock.check_graph(tf.topologies.ring(4), 3)
