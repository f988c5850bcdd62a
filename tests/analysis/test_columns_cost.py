"""``analysis/columns_cost.py``: the seconds a round read from the round stamps (against a slow
obvious reference), the hours, and its Markdown is what its committed JSON says (no timing)."""

from __future__ import annotations

import json
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests._analysis import ROOT, load

cc = load("columns_cost")


def _reference(stamps: list[float], every: int) -> tuple[float, float]:
    """Round by round: round t lasts stamps[t+1] - stamps[t] and evaluates when
    (t + 1) % every == 0; blocks of rounds t+1-every..t ending on an evaluating t >= every."""
    blocks, plain = [], []
    for t in range(1, len(stamps) - 1):
        if (t + 1) % every == 0 and t - every + 1 >= 1:
            blocks.append(sum(stamps[u + 1] - stamps[u] for u in range(t - every + 1, t + 1))
                          / every)
        if (t + 1) % every != 0:
            plain.append(stamps[t + 1] - stamps[t])
    return statistics.median(blocks), statistics.median(plain) if plain else float("nan")


@given(st.lists(st.floats(0.01, 10.0), min_size=6, max_size=12), st.sampled_from([1, 2, 3]))
def test_per_round_matches_a_round_by_round_reference(steps: list[float], every: int) -> None:
    stamps = [0.0]
    for d in steps:
        stamps.append(stamps[-1] + d)
    got = cc.per_round(stamps, every)
    want, plain = _reference(stamps, every)
    assert got["round0"] == pytest.approx(steps[0], rel=1e-12)
    assert got["per_round"] == pytest.approx(want, rel=1e-12)
    if every == 1:
        assert got["train"] is None
    else:
        assert got["train"] == pytest.approx(plain, rel=1e-12)


def test_evaluation_every_other_round_is_counted_at_half() -> None:
    # training 1 s a round, an evaluation of 2 s after every odd round
    stamps = [0.0, 9.0, 12.0, 13.0, 16.0, 17.0]
    assert cc.per_round(stamps, 2) == {"round0": 9.0, "per_round": 2.0, "train": 1.0}


def test_hours_and_bad_input() -> None:
    assert cc.hours(0.0, 1.0, 3600, 1.0, 2, 2) == pytest.approx(1.0)
    assert cc.hours(30.0, 6.0, 1, 5.0, 100, 1) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="jobs"):
        cc.hours(0.0, 0.0, 1, 1.0, 1, 0)
    with pytest.raises(ValueError, match="stamps"):
        cc.per_round([0.0, 1.0], 1)


def test_committed_markdown_is_computed_from_the_committed_json() -> None:
    data = json.loads((ROOT / "analysis" / "columns_cost.json").read_text(encoding="utf-8"))
    md = (ROOT / "analysis" / "columns_cost.md").read_text(encoding="utf-8")
    first = md.splitlines()[2]
    assert md.startswith("# ") and md == cc.render(data, first.split("`")[1])
