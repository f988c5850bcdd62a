"""Gossip learning in event time: the windowed, batched run against the event-by-event reference.

Clients minimise ``(x - c_i)^2 / 2`` (gradient ``x - c_i``) in float64, so every iterate is
known. Whenever no window holds a send (``async_held`` 0 in every record) the windowed run
equals :func:`~topofl.algorithms.gossip_learning.simulate_gossip` (a heap of send times, one
event at a time) to the last bit: guaranteed with ``window <= min(durations)`` and
``layers = n``, and checked here also up to the first window that holds a send with fewer
layers. A window that holds sends differs from the reference but still merges models.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import topofl as tf
from tests.algorithms._event_runs import run_on_ring
from tests.engine._crash import crash_then_resume
from topofl.algorithms.gossip_learning import simulate_gossip
from topofl.engine import run_rounds
from topofl.engine.clients import LocalClients
from topofl.engine.event_time import heavy_tailed_durations

N, P = 12, 3


def _problem(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    c = torch.randn(N, P, generator=g, dtype=torch.float64)
    x0 = torch.randn(N, P, generator=g, dtype=torch.float64)
    return c, x0


def _windowed(c: torch.Tensor, x0: torch.Tensor, topo: Any, durations: Any, window: float,
              windows: int, **kw: Any) -> Any:
    algo = tf.algorithms.gossip_learning(kw.pop("lr", 0.1), durations=list(durations),
                                         window=window, pair_seed=3, **kw)
    return run_rounds(algo, x0, topo, lambda z, phase, rnd: z - c, rounds=windows)


def _reference(c: torch.Tensor, x0: torch.Tensor, topo: Any, durations: Any, end: float,
               **kw: Any) -> Any:
    return simulate_gossip(x0, topo, lambda z, i: z - c[i], durations, end_time=end,
                           pair_seed=3, lr=kw.pop("lr", 0.1), **kw)


def _topology(graph: str) -> Any:
    return {"ring": tf.topologies.ring(N), "complete": tf.topologies.complete(N),
            "random_regular": tf.topologies.random_regular(N, 3, seed=1)}[graph]


@pytest.mark.parametrize("merge", ["mean", "age"])
@pytest.mark.parametrize("local_steps", [1, 2])
@pytest.mark.parametrize("graph", ["ring", "random_regular", "complete"])
def test_small_window_and_n_layers_equal_the_event_by_event_order(graph: str, local_steps: int,
                                                                   merge: str) -> None:
    c, x0 = _problem()
    topo = _topology(graph)
    d = heavy_tailed_durations(N, seed=5, alpha=1.2)
    window, windows = min(d), 60
    run = _windowed(c, x0, topo, d, window, windows, local_steps=local_steps, layers=N,
                    merge=merge)
    ref = _reference(c, x0, topo, d, windows * window, local_steps=local_steps, merge=merge)
    assert len(ref.log) > 3 * N  # the reference did run events
    assert torch.equal(run.state.x, ref.x)  # float64, the same operations: to the last bit
    own = run.state.own
    assert own.steps.tolist() == ref.steps
    assert own.age.tolist() == ref.age
    assert own.updates.tolist() == [sum(e[2] == j for e in ref.log) for j in range(N)]
    # the records of every window are those of its events in the reference
    for t, sent in enumerate(run.sent):
        rec = sent.records
        assert rec["event_time"] == (t + 1) * window
        assert rec["async_held"] == rec["async_deferred"] == 0
        ev = [e for e in ref.log if t * window < e[0] <= (t + 1) * window]
        assert rec["async_events"] == len(ev)
        assert sent.messages == sum(e[1] != e[2] for e in ev)
        if ev:
            stale = [e[3] for e in ev]
            assert rec["staleness_mean"] == pytest.approx(np.mean(stale), abs=1e-12)
            assert rec["staleness_max"] == max(stale)
    assert max(s.records["async_layers"] for s in run.sent) > 1  # chains did occur


@pytest.mark.parametrize("layers", [1, 2, 3])
def test_exact_up_to_the_first_window_that_holds_a_send(layers: int) -> None:
    c, x0 = _problem(3)
    topo = _topology("random_regular")
    d = heavy_tailed_durations(N, seed=7, alpha=1.2)
    window = min(d) / 4
    full = _windowed(c, x0, topo, d, window, 320, layers=layers)
    held = [s.records["async_held"] for s in full.sent]
    first = next((t for t, h in enumerate(held) if h), len(held))
    assert sum(s.records["async_events"] for s in full.sent[:first]) >= N
    if layers < 3:
        assert first < len(held)  # chained sends in one window were held
    run = _windowed(c, x0, topo, d, window, first, layers=layers)
    ref = _reference(c, x0, topo, d, first * window)
    assert torch.equal(run.state.x, ref.x)


def test_sends_at_equal_times_keep_their_order() -> None:
    # equal durations: every client sends at the same time, every window is all ties
    c, x0 = _problem(1)
    topo = tf.topologies.ring(N)
    run = _windowed(c, x0, topo, [1.0] * N, 1.0, 20, layers=N)
    ref = _reference(c, x0, topo, [1.0] * N, 20.0)
    assert max(s.records["async_layers"] for s in run.sent) > 2
    assert torch.equal(run.state.x, ref.x)


def test_held_sends_differ_and_still_merge_models() -> None:
    c, x0 = _problem(2)
    topo = tf.topologies.ring(N)
    run = _windowed(c, x0, topo, [1.0] * N, 1.0, 20)  # one layer: chains are held
    ref = _reference(c, x0, topo, [1.0] * N, 20.0)
    assert sum(s.records["async_held"] for s in run.sent) > 0
    assert sum(s.records["async_deferred"] for s in run.sent) > 0  # and run late
    assert not torch.allclose(run.state.x, ref.x, atol=1e-6)
    assert sum(run.state.own.steps.tolist()) < sum(ref.steps)
    # without gradient steps every receive is a merge: the models agree, inside the hull
    zero = run_rounds(tf.algorithms.gossip_learning(1e-300, durations=1.0, pair_seed=3), x0,
                      topo, lambda z, phase, rnd: torch.zeros_like(z), rounds=400)
    assert float((zero.state.x - zero.state.x[0]).abs().max()) < 1e-6
    assert bool((zero.state.x <= x0.max(0).values + 1e-12).all())
    assert bool((zero.state.x >= x0.min(0).values - 1e-12).all())


def test_a_fast_client_sends_once_a_window_and_the_rest_is_held() -> None:
    # client 0 sends every 0.25: four sends due in window 0, one runs, three are held; in
    # window 1 its send of time 0.5 runs (late) and the six others due by 2.0 are held
    algo = tf.algorithms.gossip_learning(0.1, durations=[0.25, 10.0], layers=2)
    run = run_rounds(algo, torch.zeros(2, 1, dtype=torch.float64), tf.topologies.complete(2),
                     lambda z, phase, rnd: z, rounds=2)
    rec = [s.records for s in run.sent]
    assert [r["async_events"] for r in rec] == [1, 1]
    assert [r["async_held"] for r in rec] == [3, 6]
    assert [r["async_deferred"] for r in rec] == [0, 1]


def test_a_merge_by_age_in_closed_form() -> None:
    # two clients; client 0 sends every unit of time, client 1 every 100: until time 100
    # client 0's model has age 0, so client 1 keeps its own model under merge="age" and
    # averages with client 0's under merge="mean"
    c = torch.tensor([[0.0], [1.0]], dtype=torch.float64)
    x0 = torch.tensor([[4.0], [-2.0]], dtype=torch.float64)
    lr, k = 0.25, 3
    grad = lambda z, phase, rnd: z - c  # noqa: E731
    for merge in ("age", "mean"):
        algo = tf.algorithms.gossip_learning(lr, durations=[1.0, 100.0], merge=merge)
        run = run_rounds(algo, x0, tf.topologies.complete(2), grad, rounds=k)
        x1 = -2.0
        for _ in range(k):
            x1 = (x1 if merge == "age" else (x1 + 4.0) / 2) * (1 - lr) + lr * 1.0
        assert run.state.x.flatten().tolist() == pytest.approx([4.0, x1], abs=1e-15)
        assert run.state.own.age.tolist() == [0, k]
        assert run.state.own.updates.tolist() == [0, k]


@pytest.mark.parametrize(("kw", "match"), [
    (dict(window=0.0), "window must be a positive finite time, got 0.0"),
    (dict(durations=[1.0, -2.0]), "durations must be positive finite times, got -2.0 for "
                                  "client 1"),
    (dict(layers=0), "layers"),
    (dict(merge="median"), "merge must be one of \\('mean', 'age'\\), got 'median'"),
])
def test_bad_inputs_are_refused_in_one_line(kw: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match) as info:
        tf.algorithms.gossip_learning(**kw)
    assert "\n" not in str(info.value)


def test_durations_must_match_the_clients() -> None:
    algo = tf.algorithms.gossip_learning(durations=[1.0, 2.0])
    with pytest.raises(ValueError, match="3 clients, got 2 times"):
        algo.init(torch.zeros(3, 1, dtype=torch.float64), tf.engine.toy_services(3))


def test_a_process_holding_some_clients_is_refused_in_one_line() -> None:
    env = tf.engine.toy_services(3)
    env.clients = LocalClients(2)  # as a rank of a distributed run would hold
    with pytest.raises(ValueError, match="gossip_learning does not run distributed") as info:
        tf.algorithms.gossip_learning().init(torch.zeros(3, 1, dtype=torch.float64), env)
    assert "\n" not in str(info.value)


# ------------------------------------------------------------------ through the engine


@pytest.fixture(scope="module")
def data() -> Any:
    return tf.data.federate("digits", "pathological", 8, classes_per_client=3, seed=0, val=0.2)


def _run(data: Any, rounds: int, **kw: Any) -> Any:
    algo = tf.algorithms.gossip_learning(0.1, durations=[1.0, 1.3, 2.0, 0.8, 3.5, 1.0, 0.9,
                                                         2.2],
                                         window=0.8, local_steps=2, layers=2, merge="age")
    return run_on_ring(algo, data, rounds, **kw)


def test_engine_records_event_time_and_resumes_exactly(data: Any, tmp_path: Path) -> None:
    full, _ = crash_then_resume(_run, data, tmp_path)
    t, times = full.records.series("event_time")
    assert times.tolist() == pytest.approx([0.8 * (k + 1) for k in range(8)])
    assert full.records.final("async_steps_max") >= full.records.final("async_steps_min")
    rows = [r for r in full.records.rows if r["metric"] != "wall_time"]
    again = [r for r in tf.records.load(tmp_path / "r.jsonl").rows
             if r["metric"] != "wall_time"]
    assert rows == again


@pytest.mark.parametrize(("kw", "match"), [
    (dict(availability={"model": "bernoulli", "offline": 0.2, "seed": 0}),
     "gossip_learning chooses the clients of a round itself"),
    (dict(network={"latency": 0.1}),
     "gossip_learning cannot run with a \\[network\\] clock: .*event_time"),
    (dict(byzantine={"attack": "sign_flip", "nodes": [3]}),
     "gossip_learning does not send its models through gossip"),
    (dict(network={"drop": 0.3, "seed": 3}), "gossip_learning has no rule for a lost message"),
])
def test_engine_refuses_what_it_cannot_do_in_one_line(data: Any, kw: dict[str, Any],
                                                      match: str) -> None:
    with pytest.raises(ValueError, match=match) as info:
        _run(data, 2, **kw)
    assert "\n" not in str(info.value)
