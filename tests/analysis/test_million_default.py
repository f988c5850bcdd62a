"""``analysis/million_default.py``: its ``time -v`` parsing, its round clock's reading, its
ratios, and its committed Markdown is what its committed JSON says (nothing run here)."""

from __future__ import annotations

import json
import statistics
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests._analysis import ROOT, load

md = load("million_default")

REPORT = """\tCommand being timed: "python -c x"
\tUser time (seconds): 455.12
\tSystem time (seconds): 20.40
\tPercent of CPU this job got: 97%
\tElapsed (wall clock) time (h:mm:ss or m:ss): 1:02:03.50
\tMaximum resident set size (kbytes): 10322264
\tExit status: 0
"""


def test_time_v_report_is_parsed() -> None:
    got = md.parse_time_v(REPORT)
    assert got == {"max_rss_bytes": 10322264 * 1024, "user_s": 455.12, "sys_s": 20.40,
                   "cpu_s": pytest.approx(475.52), "wall_s": 3723.5, "exit_status": 0,
                   "signal": None}
    killed = md.parse_time_v("Command terminated by signal 9\n" + REPORT)
    assert killed["signal"] == 9


def test_time_v_report_missing_a_field_is_refused() -> None:
    with pytest.raises(ValueError, match="Maximum resident set size"):
        md.parse_time_v(REPORT.replace("\tMaximum resident set size (kbytes): 10322264\n", ""))
    with pytest.raises(ValueError, match="h:mm:ss"):
        md.parse_elapsed("1:2:3:4")


@given(st.integers(0, 99), st.integers(0, 59), st.integers(0, 5999))
def test_elapsed_against_a_slow_sum(h: int, m: int, cs: int) -> None:
    s = cs / 100
    want = 3600 * h + 60 * m + s
    assert md.parse_elapsed(f"{h}:{m:02d}:{s:05.2f}") == pytest.approx(want, abs=1e-9)
    assert md.parse_elapsed(f"{60 * h + m}:{s:05.2f}") == pytest.approx(want, abs=1e-9)


@given(st.lists(st.floats(0.01, 10.0), min_size=12, max_size=40), st.integers(2, 7),
       st.integers(0, 5))
def test_round_times_against_the_stamps(durations: list[float], every: int, resumed: int
                                        ) -> None:
    """The rounds' sum, the median plain round and each evaluation's extra, recomputed round
    by round from the durations (a checkpoint on the third round of the attempt)."""
    rounds = len(durations) + resumed  # an attempt that started ``resumed`` rounds in
    stamps = [5.0]
    for d in durations:
        stamps.append(stamps[-1] + d)
    child = {"stamps": stamps, "checkpoints": [[2, 0.005]], "eval_every": every,
             "start_cpu_s": 4.0}
    got = md.round_times(child, rounds)
    assert got["rounds_cpu_s"] == pytest.approx(sum(durations))
    assert got["first_round"] == resumed + 1 and got["setup_cpu_s"] == pytest.approx(1.0)
    ev = [i for i in range(len(durations))
          if (resumed + i + 1) % every == 0 or resumed + i + 1 == rounds]
    plain = [d for i, d in enumerate(durations) if i > 0 and i not in ev and i != 2]
    med = statistics.median(plain) if plain else None
    assert got["train_round_s"] == (None if med is None else pytest.approx(med))
    want = [[resumed + i + 1, durations[i] - (med or 0.0) - (0.005 if i == 2 else 0.0)]
            for i in ev]
    assert [k for k, _ in got["evaluations"]] == [k for k, _ in want]
    assert [s for _, s in got["evaluations"]] == pytest.approx([s for _, s in want])


def test_ratios_of_a_resumed_attempt_leave_the_times_out() -> None:
    data: dict[str, Any] = {"rounds": 5, "plan": {"peak_bytes": 100, "process_peak_bytes": 150,
                                  "run_seconds": 9.0, "seconds_per_round": 1.0,
                                  "eval_seconds": 1.0, "evaluations": 2},
            "attempts": [{"time_v": {"max_rss_bytes": 160, "cpu_s": 10.0},
                          "child": {"stamps": [0.0, 1.0, 2.0, 4.0], "checkpoints": [],
                                    "eval_every": 4, "start_cpu_s": 0.0,
                                    "peak_above_import": 120, "baseline_rss": 50}}]}
    r = md.ratios(data)
    assert r["peak_over_parts"] == pytest.approx(1.2)
    assert r["plan_time_over_rounds"] is None and r["plan_time_over_process"] is None
    assert r["plan_eval_over_run"] is None
    data["attempts"][0]["child"] = None  # killed: only time -v's numbers
    assert md.ratios(data)["plan_peak_over_run"] == pytest.approx(150 / 160)
    assert md.ratios(data)["peak_over_parts"] is None


def test_committed_markdown_is_rendered_from_the_committed_json() -> None:
    path = ROOT / "analysis" / "million_default.json"
    if not path.exists():
        pytest.skip("analysis/million_default.json is not committed yet")
    data = json.loads(path.read_text())
    assert (ROOT / "analysis" / "million_default.md").read_text() == md.render(data)
    assert data["ratios"] == md.ratios(data)
    assert md.finished(data) and data["n"] == 10**6
