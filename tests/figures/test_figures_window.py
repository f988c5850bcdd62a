"""The flatness window fixed in local work (issue 56, item 2): a check's convergence reading
covers the last quarter of the result's horizon (the paper's rounds, or those a field result
declared), in rounds of the paper's local work, not the last quarter of whatever ran. The fast
reading against a slow obvious one, the old quarter rule as the special case window = b // 4,
short runs never flat, early-stopped runs read at their end, the window :func:`panels` fixes,
the scales that keep local work, and every committed decision read over its window."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import tomllib
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl import figures
from topofl.figures import flatness
from topofl.figures.panel import _horizon
from topofl.figures.replication import _reading

ROOT = Path(__file__).resolve().parents[2] / "paper_figures"
#: the config keys that set a round's local work (steps, epochs, and what an epoch is)
LOCAL_WORK = ("local_steps", "local_epochs", "local_epochs_u", "local_epochs_v", "head_epochs",
              "batch_size", "n_clients", "data", "partition", "partition_params")


def _cell(curves: list[list[float]], *, every: int = 1, rounds: int | None = None) -> Any:
    """A cell of one run per seed; evaluation ``t`` of a curve at round index
    ``(t + 1) * every - 1`` (rounds completed ``(t + 1) * every``)."""
    rows = [{"run": f"s{s}", "round": (t + 1) * every - 1, "client": None, "metric": "acc",
             "value": v} for s, c in enumerate(curves) for t, v in enumerate(c)]
    cfg = {"eval_every": every} | ({"rounds": rounds} if rounds is not None else {})
    return tf.records.Records(rows=rows, configs={f"s{s}": {"seed": s, **cfg}
                                                  for s in range(len(curves))})


def _slow_gain(x: list[int], y: list[float], window: int) -> float:
    """The gain over the window, written out: the evaluations from the last one at or before
    ``b - window`` to ``b``, the least-squares slope through them times their span."""
    b = x[-1]
    start = max([i for i, t in enumerate(x) if t <= b - window], default=0)
    xs, ys = x[start:], y[start:]
    if len(xs) < 2:
        return 0.0
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = (sum((a - mx) * (c - my) for a, c in zip(xs, ys))
             / sum((a - mx) ** 2 for a in xs))
    return slope * (xs[-1] - xs[0])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=3, max_size=40), st.integers(1, 5),
       st.integers(1, 60))
def test_the_fast_reading_equals_the_slow_one(values: list[float], every: int,
                                              window: int) -> None:
    c = figures.convergence({"A": _cell([values], every=every)}, "acc", window=window,
                            tolerance=0.01)
    x = [(t + 1) * every for t in range(len(values))]
    assert c.gains[0][1].values[0] == pytest.approx(_slow_gain(x, values, window), abs=1e-9)
    assert c.covered == (x[0] <= x[-1] - window)
    assert c.window == window and c.span[1] == x[-1]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=4, max_size=40))
def test_a_window_of_a_quarter_of_the_run_is_the_old_reading(values: list[float]) -> None:
    cell = _cell([values])
    old = figures.convergence({"A": cell}, "acc")  # no window fixed: the run's last quarter
    b = len(values)
    new = figures.convergence({"A": cell}, "acc", window=b // 4)
    assert old.span == new.span and old.window == 0 and old.covered
    assert old.gains[0][1].values == pytest.approx(new.gains[0][1].values, abs=1e-12)
    assert old.flat == new.flat


def test_flatness_does_not_scale_with_the_run() -> None:
    # rises by 0.6 points every 10 rounds: under 1 point over a short run's last quarter
    # (round 6 to 8), over it across a quarter of a 400-round horizon
    curve = [0.5 + 0.0006 * t for t in range(8)]
    short = _cell([curve, curve], rounds=8)
    assert figures.convergence({"A": short}, "acc").flat  # the old rule: flat
    c = figures.convergence({"A": short}, "acc", window=100)
    assert not c.covered and not c.flat and c.short == ("A",)
    assert "cannot show that they flattened" in c.describe()
    long = _cell([[0.5 + 0.0006 * t for t in range(400)]] * 2, rounds=400)
    c = figures.convergence({"A": long}, "acc", window=100)
    assert c.covered and not c.flat and c.span == (300, 400)
    assert c.gains[0][1].mean == pytest.approx(0.0006 * 100, rel=1e-6)


def test_a_run_stopped_early_is_read_at_its_end() -> None:
    # a run set to 1000 rounds whose model went non-finite at round 220: its curve ends there
    stopped = _cell([[0.2] * 11, [0.21] * 11], every=20, rounds=1000)
    done = _cell([[0.9] * 50, [0.9] * 50], every=20, rounds=1000)
    c = figures.convergence({"clipped": done, "plain": stopped}, "acc", window=250)
    assert c.covered and c.flat and c.span == (160, 220)
    d = c.as_dict()
    assert d["window"] == 250 and "short" not in d
    assert _reading(d, "x").flat  # the JSON rebuilds


def test_a_short_reading_rebuilds_from_its_json() -> None:
    c = figures.convergence({"A": _cell([[0.5, 0.5, 0.5]], rounds=3)}, "acc", window=10)
    d = c.as_dict()
    assert d["short"] == ["A"] and d["window"] == 10 and d["flat"] is False
    back = _reading(json.loads(json.dumps(d)), "A check")
    assert back == c and not back.flat


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "10"])
def test_a_window_is_a_positive_number_of_rounds(bad: Any) -> None:
    cell = _cell([[0.1, 0.2, 0.3]])
    with pytest.raises(ValueError, match="window must be a positive number of rounds"):
        figures.convergence({"A": cell}, "acc", window=bad)
    with pytest.raises(ValueError, match="a window is a positive number of rounds"):
        flatness.fix_window(cell, bad)


def test_a_fixed_window_is_read_unless_one_is_given() -> None:
    cell = _cell([[0.1 * t for t in range(40)]])
    flatness.fix_window(cell, 8)
    assert flatness.window_of(cell) == 8 and flatness.window_of(_cell([[0.1]])) is None
    assert figures.convergence({"A": cell}, "acc").window == 8
    assert figures.convergence({"A": cell}, "acc", window=4).window == 4


def test_panels_fix_a_quarter_of_the_horizon(tmp_path: Path) -> None:
    """A named config's curves get a quarter of its full scale's rounds; a config of no
    file keeps the run's own quarter."""
    assert _horizon("dcliques_09_mnist") == figures.load_config("dcliques_09_mnist",
                                                                "full")["rounds"]
    assert _horizon({"_name": "no such config here"}) is None
    assert _horizon({"algorithm": "dsgd"}) is None
    args = figures.FigureArgs("toy", "quick", tmp_path / "out", tmp_path / "runs")
    cfg = {"algorithm": "dsgd", "data": "digits", "n_clients": 4, "rounds": 2,
           "spectral": False, "sweep": {"topology": ["ring"]}, "_name": "toy", "_seeds": [0]}
    found = figures.panels(args, {"p": cfg}, lambda c: c["topology"])
    assert flatness.window_of(found["p"].runs["ring"]) is None
    name = "field_base_graph_fmnist_iid"
    horizon = _horizon(name)
    assert horizon == 8000 and horizon // 4 == 2000


def _scales(path: Path) -> dict[str, Any]:
    return tomllib.loads(path.read_text(encoding="utf-8")).get("scale", {})


@pytest.mark.parametrize("path", sorted((ROOT / "configs").glob("*.toml")),
                         ids=lambda p: p.stem)
def test_the_default_and_full_scales_keep_the_local_work(path: Path) -> None:
    """The window is a quarter of the horizon in rounds of the paper's local work: only the
    quick scale may change what a round does."""
    for scale in ("default", "full"):
        table = _scales(path).get(scale, {})
        changed = [k for k in LOCAL_WORK if k in table or k in table.get("sweep", {})]
        assert not changed, f"{path.stem}: [scale.{scale}] changes the local work ({changed})"


def _decided_readings() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    out = []
    for f in sorted((ROOT / "results").glob("*.json")):
        d = json.loads(f.read_text(encoding="utf-8"))
        if not isinstance(d, dict):
            continue
        for c in d.get("checks", []):
            if isinstance(c.get("convergence"), dict) and c["outcome"] in ("pass", "fail",
                                                                          "no effect"):
                out.append((f.stem, c, d.get("rounds") or {}))
    return out


def test_every_committed_decision_reads_its_whole_window() -> None:
    """0 decisions on a reading shorter than its window: each decided check's reading ends at
    a horizon of its result (the paper's rounds, else the rounds the field result declared)
    and spans a quarter of it, or reads a curve whose run stopped early (non-finite) at its
    last evaluation."""
    readings = _decided_readings()
    assert len(readings) >= 50
    for name, c, rounds in readings:
        a, b = c["convergence"]["span"]
        horizons = [int(h) for h in (rounds.get("paper") or rounds.get("run") or [])]
        ran = [int(r) for r in rounds.get("run") or []]
        covers = any(b >= h and b - a >= h // 4 for h in horizons)
        stopped = bool(ran) and b < min(ran)
        assert covers or stopped, (name, c["name"], (a, b), rounds)
        assert c["convergence"]["flat"] or c["outcome"] != "pass" or "horizon" in c, \
            (name, c["name"])
        assert not c["convergence"].get("short"), (name, c["name"])


def test_curves_fixed_at_different_horizons_each_read_their_own_window() -> None:
    # field_async: 800 synchronous rounds (window 200) beside 4000 asynchronous windows
    # (window 1000); the largest window would leave the synchronous curve uncovered
    sync = _cell([[0.1] * 790 + [0.5] * 10, [0.1] * 790 + [0.5] * 10], rounds=800)
    sync_flat = _cell([[0.5] * 800, [0.5] * 800], rounds=800)
    late = _cell([[0.2] * 4000, [0.2] * 4000], rounds=4000)
    flatness.fix_window(sync, 200)
    flatness.fix_window(sync_flat, 200)
    flatness.fix_window(late, 1000)
    c = figures.convergence({"sync": sync_flat, "async": late}, "acc")
    assert c.flat and not c.short  # each over a quarter of its own horizon
    c = figures.convergence({"sync": sync, "async": late}, "acc")
    assert not c.flat and c.rising == ["sync"] and not c.short  # the sync curve's own last 200
    # a curve whose own window is longer than its runs is still not covered
    one = _cell([[0.5] * 800, [0.5] * 800], rounds=800)
    flatness.fix_window(one, 1000)
    assert figures.convergence({"sync": sync_flat, "other": one}, "acc").short
