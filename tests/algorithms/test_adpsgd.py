"""AD-PSGD in event time: the windowed, batched run against the event-by-event reference.

Clients minimise ``(x - c_i)^2 / 2`` (gradient ``x - c_i``) in float64, so every iterate is
known: with a window no larger than the fastest client's duration the windowed run equals
:func:`~topofl.algorithms.adpsgd.simulate_events` (the heap of finish times, one event at a
time), and its per-window staleness records are those of the reference's events; a larger
window defers events (and differs) but stays a pairwise-averaging process.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import topofl as tf
from tests.algorithms._event_runs import run_on_ring
from tests.engine._crash import crash_then_resume
from topofl.algorithms.adpsgd import simulate_events
from topofl.engine import RunConfig, run_rounds
from topofl.engine.event_time import heavy_tailed_durations, idle_reason

N, P = 12, 3


def _problem(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    c = torch.randn(N, P, generator=g, dtype=torch.float64)
    x0 = torch.randn(N, P, generator=g, dtype=torch.float64)
    return c, x0


def _windowed(c: torch.Tensor, x0: torch.Tensor, topo: Any, durations: Any, window: float,
              windows: int, lr: float = 0.1, local_steps: int = 1) -> Any:
    algo = tf.algorithms.adpsgd(lr, durations=list(durations), window=window,
                                local_steps=local_steps, pair_seed=3)
    return run_rounds(algo, x0, topo, lambda z, phase, rnd: z - c, rounds=windows)


def _reference(c: torch.Tensor, x0: torch.Tensor, topo: Any, durations: Any, end: float,
               lr: float = 0.1, local_steps: int = 1) -> Any:
    return simulate_events(x0, topo, lambda z, i: z - c[i], durations, lr=lr, end_time=end,
                           pair_seed=3, local_steps=local_steps)


@pytest.mark.parametrize("local_steps", [1, 2])
@pytest.mark.parametrize("graph", ["ring", "random_regular", "complete"])
def test_small_window_equals_the_event_by_event_order(graph: str, local_steps: int) -> None:
    c, x0 = _problem()
    topo = {"ring": tf.topologies.ring(N), "complete": tf.topologies.complete(N),
            "random_regular": tf.topologies.random_regular(N, 3, seed=1)}[graph]
    d = heavy_tailed_durations(N, seed=5, alpha=1.2)
    window, windows = min(d), 60
    run = _windowed(c, x0, topo, d, window, windows, local_steps=local_steps)
    ref = _reference(c, x0, topo, d, windows * window, local_steps=local_steps)
    assert len(ref.log) > 3 * N  # the reference did run events
    np.testing.assert_allclose(run.state.x.numpy(), ref.x.numpy(), rtol=0, atol=1e-12)
    own = run.state.own
    assert own.steps.tolist() == ref.steps
    # the records of every window are those of its events in the reference
    for t, sent in enumerate(run.sent):
        rec = sent.records
        assert rec["event_time"] == (t + 1) * window
        assert rec["async_deferred"] == 0
        ev = [e for e in ref.log if t * window < e[0] <= (t + 1) * window]
        assert rec["async_events"] == len(ev)
        if ev:
            stale = [e[3] for e in ev]
            assert rec["staleness_mean"] == pytest.approx(np.mean(stale), abs=1e-12)
            assert rec["staleness_max"] == max(stale)


def test_events_sharing_a_node_in_one_window_keep_their_order() -> None:
    # equal durations: every client finishes at the same time, every window is all conflicts
    c, x0 = _problem(1)
    topo = tf.topologies.ring(N)
    run = _windowed(c, x0, topo, [1.0] * N, 1.0, 20)
    ref = _reference(c, x0, topo, [1.0] * N, 20.0)
    assert max(s.records["async_layers"] for s in run.sent) > 1
    np.testing.assert_allclose(run.state.x.numpy(), ref.x.numpy(), rtol=0, atol=1e-12)


def test_a_large_window_defers_events_and_still_averages_pairs() -> None:
    c, x0 = _problem(2)
    topo = tf.topologies.random_regular(N, 3, seed=1)
    d = heavy_tailed_durations(N, seed=5, alpha=1.2)
    window = 4 * min(d)
    windows = 15
    run = _windowed(c, x0, topo, d, window, windows)
    ref = _reference(c, x0, topo, d, windows * window)
    assert sum(s.records["async_deferred"] for s in run.sent) > 0
    assert not torch.allclose(run.state.x, ref.x, atol=1e-6)
    assert sum(run.state.own.steps.tolist()) < sum(ref.steps)  # the fast clients are capped
    # without gradient steps every event is a pairwise average: the mean stays, models agree
    still = tf.algorithms.adpsgd(1e-300, durations=list(d), window=window, pair_seed=3)
    zero = run_rounds(still, x0, topo, lambda z, phase, rnd: torch.zeros_like(z), rounds=200)
    np.testing.assert_allclose(zero.state.x.mean(0).numpy(), x0.mean(0).numpy(), atol=1e-12)
    assert float((zero.state.x - x0.mean(0)).abs().max()) < 1e-6


@pytest.mark.parametrize(("kw", "match"), [
    (dict(window=0.0), "window must be a positive finite time, got 0.0"),
    (dict(window=float("inf")), "window must be a positive finite time"),
    (dict(durations=[1.0, -2.0]), "durations must be positive finite times, got -2.0 for "
                                  "client 1"),
    (dict(durations=0.0), "durations must be a positive finite time \\(or one per client\\), "
                          "got 0.0"),
    (dict(durations=[]), "one time per client"),
])
def test_bad_inputs_are_refused_in_one_line(kw: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match) as info:
        tf.algorithms.adpsgd(**kw)
    assert "\n" not in str(info.value)


def test_durations_must_match_the_clients() -> None:
    algo = tf.algorithms.adpsgd(durations=[1.0, 2.0])
    with pytest.raises(ValueError, match="3 clients, got 2 times"):
        algo.init(torch.zeros(3, 1, dtype=torch.float64), tf.engine.toy_services(3))


# ------------------------------------------------------------------ through the engine


@pytest.fixture(scope="module")
def data() -> Any:
    return tf.data.federate("digits", "pathological", 8, classes_per_client=3, seed=0, val=0.2)


def _run(data: Any, rounds: int, **kw: Any) -> Any:
    algo = tf.algorithms.adpsgd(0.1, durations=[1.0, 1.3, 2.0, 0.8, 3.5, 1.0, 0.9, 2.2],
                                window=0.8, local_steps=2)
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


def test_engine_refuses_clients_offline(data: Any) -> None:
    with pytest.raises(ValueError, match="adpsgd chooses the clients of a round itself"):
        _run(data, 2, availability={"model": "bernoulli", "offline": 0.2, "seed": 0})


@pytest.mark.parametrize(("scale", "exc"), [([1.0, 2.0], TypeError), ("1", TypeError),
                                            (True, TypeError), (0.0, ValueError),
                                            (float("inf"), ValueError)])
def test_heavy_tailed_durations_refuses_a_scale_that_is_not_one_positive_time(
        scale: object, exc: type[Exception]) -> None:
    with pytest.raises(exc, match="scale must be one positive time|positive finite time"):
        heavy_tailed_durations(4, seed=0, scale=scale)  # type: ignore[arg-type]


def test_engine_refuses_a_network_clock(data: Any) -> None:
    # the clock prices synchronous rounds; adpsgd's time is its own event time
    with pytest.raises(ValueError,
                       match="adpsgd cannot run with a \\[network\\] clock: .*event_time"):
        _run(data, 2, network={"latency": 0.1})


# ------------------------------------------------- a run whose settings hold no event at all
EVENT_TIME = ["adpsgd", "gossip_learning"]
TINY = {"topology": "ring", "data": "digits", "n_clients": 8, "seed": 0, "batch_size": 8}


@pytest.mark.parametrize("name", EVENT_TIME)
@pytest.mark.parametrize(("kw", "bounds"), [
    (dict(durations=1e300), r"min\(durations\) = 1e\+300, after the end of the last window, "
                            r"rounds \* window = 3 \* 1.0 = 3.0; .* Set durations <= 3.0, "
                            r"window >= 3.3333333333333335e\+299 or rounds >= 1e\+300"),
    (dict(window=1e-9), r"min\(durations\) = 1.0, .* rounds \* window = 3 \* 1e-09 = "
                        r".* window >= 0.3333333333333333 or rounds >= 1000000000"),
    (dict(durations=[5.0, 9.0] * 4, window=1.5), r"min\(durations\) = 5.0, .* = 4.5; .* "
                                                 r"or rounds >= 4"),
])
def test_a_run_whose_first_event_is_after_its_end_is_refused_up_front(
        name: str, kw: dict[str, Any], bounds: str) -> None:
    # before: 3 rounds of async_events 0, exit 0, no word
    with pytest.raises(ValueError, match=rf"^{name}: no client's first event falls within the "
                       rf"run's virtual time: the fastest client's first event is at {bounds}$"):
        tf.run(name, rounds=3, **TINY, **kw)
    with pytest.raises(ValueError, match="no client's first event"):  # a config: the same check
        tf.config.execute({"algorithm": name, "rounds": 3, **TINY, **kw})
    algo = tf.algorithms.get_algorithm(name, **kw)  # the engine itself checks it too
    fed = tf.data.federate("digits", "iid", 8, seed=0)
    model = tf.models.build_model("logistic", fed.input_shape, fed.num_classes, seed=0)
    with pytest.raises(ValueError, match=f"^{name}: no client's first event"):
        tf.engine.run(RunConfig(rounds=3, seed=0), tf.topologies.ring(8), algo, fed, model)


@pytest.mark.parametrize("name", EVENT_TIME)
def test_the_bound_is_the_windows_own_test(name: str) -> None:
    # the first event exactly at the end of the last window runs, in the last round
    res = tf.run(name, rounds=3, **TINY, durations=[3.0, 7.0] * 4, window=1.0)
    _, events = res.records.series("async_events")
    assert events.tolist()[:2] == [0, 0] and events[2] > 0
    # rounds * window in floating point: 3 * 0.1 is 0.30000000000000004 (0.3 is before it)
    end = 3 * 0.1
    assert idle_reason(0.3, 0.1, 3) is None and idle_reason(end, 0.1, 3) is None
    assert idle_reason(math.nextafter(end, 1.0), 0.1, 3) is not None
    assert idle_reason(1.0, 1.0, 0) is None  # no round asked for: nothing to refuse
    for d, w, r in [(1e300, 1.0, 3), (1.0, 1e-9, 3), (1.0, 0.3, 3), (7.0, 0.1, 9)]:
        why = idle_reason(d, w, r)
        assert why is not None
        wide = float(why.split("window >= ")[1].split(" ")[0])
        need = why.split("rounds >= ")[1]
        assert d <= r * wide and (d > 1e15 or d <= int(need) * w)  # the bounds reach d


@pytest.mark.parametrize("name", EVENT_TIME)
def test_rounds_without_an_event_after_a_resume_end_with_a_warning(name: str,
                                                                   tmp_path: Path) -> None:
    ck = dict(checkpoint_path=str(tmp_path / "ck"), checkpoint_every=1, durations=3.0)
    if name == "gossip_learning":
        ck["layers"] = 8  # every send of round 2 runs in it (none held to round 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # events in round 2: no warning
        tf.run(name, rounds=3, **TINY, **ck)
    with pytest.warns(UserWarning, match=rf"^{name}: the run did nothing in rounds 3\.\.4 "
                      r"\(run '.*'\): no client trained and no message was sent"):
        res = tf.run(name, rounds=5, **TINY, **ck, resume=ck["checkpoint_path"])
    _, events = res.records.series("async_events")
    assert events.tolist()[-2:] == [0, 0]


@pytest.mark.parametrize("name", EVENT_TIME)
def test_sent_active_names_the_clients_that_acted(name: str) -> None:
    c, x0 = _problem()
    algo = tf.algorithms.get_algorithm(name, lr=0.1, durations=[1.0, 2.0] * (N // 2))
    trace = run_rounds(algo, x0, tf.topologies.ring(N), lambda z, phase, rnd: z - c, rounds=2)
    first, second = (np.asarray(s.active) for s in trace.sent)
    if name == "adpsgd":  # the clients whose computation finished in the window
        assert first.tolist() == [True, False] * (N // 2) and second.all()
    else:  # the receivers of the window's sends
        assert first.any() and second.any() and first.sum() <= N // 2
    assert not trace.sent[0].dropped
