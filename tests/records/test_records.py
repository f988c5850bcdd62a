"""Records: per-run queries, headers (new and old schema), load_many, pandas views, AUC."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.records import Recorder, Records, area_under_curve, load, load_many


def _rows(run: str, metric: str, pts: list[tuple[int, Any]]) -> list[dict[str, Any]]:
    return [{"run": run, "round": t, "client": None, "metric": metric, "value": v}
            for t, v in pts]


# the case: the ring never reaches 0.8, the complete graph does after 20 rounds
RING = _rows("ring", "acc", [(9, 0.3), (19, 0.6), (29, 0.7)])
COMPLETE = _rows("complete", "acc", [(9, 0.5), (19, 0.85), (29, 0.9)])


def _write(path: Path, header: dict[str, Any] | None, rows: list[dict[str, Any]]) -> Path:
    lines = ([json.dumps({"header": True, **header})] if header is not None else [])
    lines += [json.dumps(r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# ---------------------------------------------------------------------------- rounds to target
def test_rounds_to_counts_completed_rounds_from_one() -> None:
    r = Records(rows=_rows("a", "acc", [(0, 0.1), (1, 0.5), (2, 0.9)]))
    # row at round index 1 = after 2 completed rounds
    assert r.rounds_to(0.5, "acc") == 2
    assert r.rounds_to(0.05, "acc") == 1
    assert r.rounds_to(0.9, "acc") == 3  # >= target counts
    assert r.rounds_to(0.91, "acc") is None


def test_rounds_to_with_evaluation_period_and_nan() -> None:
    r = Records(rows=_rows("a", "acc", [(4, None), (9, 0.7), (14, 0.6), (19, 0.95)]))
    assert r.rounds_to(0.65, "acc") == 10  # NaN at round 5 never reaches
    assert r.rounds_to(0.9, "acc") == 20
    assert np.isnan(r.series("acc")[1][0])


def test_rounds_to_matches_a_slow_reference_on_a_real_run(tmp_path: Path) -> None:
    res = tf.run("dsgd", topology="ring", data="digits", n_clients=8, partition="iid",
                 rounds=6, eval_every=2, lr=0.5, batch_size=8, seed=0,
                 records_path=str(tmp_path / "r.jsonl"))
    rec = load(tmp_path / "r.jsonl")
    rows = [r for r in rec.rows if r["metric"] == "test_acc_mean"]
    assert [r["round"] for r in rows] == [1, 3, 5]  # evaluated after rounds 2, 4, 6
    target = rows[1]["value"]
    expect = next(k + 1 for k, v in ((r["round"], r["value"]) for r in rows) if v >= target)
    assert rec.rounds_to(target) == expect
    assert res.records.rounds_to(target) == expect
    assert rec.rounds_to(1.01) is None


# ---------------------------------------------------------------------------- cost queries
COSTLY = (_rows("a", "acc", [(4, 0.1), (9, 0.6), (14, 0.9)])
          + _rows("a", "bytes", [(4, 500), (9, 1000), (14, 1500)])
          + _rows("a", "messages", [(4, 20), (9, 40), (14, 60)])
          + _rows("a", "sim_time", [(t, 1.5 * (t + 1)) for t in range(15)]))


def test_cost_queries_read_the_cost_at_the_round_the_target_is_reached() -> None:
    r = Records(rows=COSTLY)
    assert r.rounds_to(0.5, "acc") == 10  # the row of round 9
    assert (r.bytes_to(0.5, "acc"), r.messages_to(0.5, "acc"), r.time_to(0.5, "acc")) == (
        1000.0, 40.0, 15.0)
    assert (r.bytes_to(0.05, "acc"), r.time_to(0.9, "acc")) == (500.0, 22.5)
    for query in (r.bytes_to, r.messages_to, r.time_to):
        assert query(0.95, "acc") is None  # never reached
    no_clock = Records(rows=[row for row in COSTLY if row["metric"] != "sim_time"])
    with pytest.raises(KeyError, match="'sim_time'"):
        no_clock.time_to(0.5, "acc")
    late = Records(rows=[row for row in COSTLY if (row["metric"], row["round"]) != ("bytes", 9)])
    with pytest.raises(KeyError, match="'bytes' was not recorded at round 9"):
        late.bytes_to(0.5, "acc")


def test_the_aliases_answer_as_the_methods() -> None:
    r = Records(rows=COSTLY)
    for target in (0.05, 0.5, 0.9, 0.95):
        assert tf.records.rounds_to(r, target, "acc") == r.rounds_to(target, "acc")
        assert tf.records.cost_to(r, target, "bytes", "acc") == r.bytes_to(target, "acc")
        assert tf.records.cost_to(r, target, "messages", "acc") == r.messages_to(target, "acc")
        assert tf.records.cost_to(r, target, "time", "acc") == r.time_to(target, "acc")
    # another cost names a cumulative metric of its own
    assert tf.records.cost_to(r, 0.5, "sim_time", "acc") == 15.0
    for alias in (tf.records.rounds_to, tf.records.cost_to):
        with pytest.raises(TypeError, match="records must be a Records.*got dict"):
            alias({"rows": COSTLY}, 0.5)  # type: ignore[operator]


def test_one_name_per_question() -> None:
    # issue 30: the methods are the queries; the retired doubles are gone
    for gone in ("last", "auc"):
        assert not hasattr(Records, gone)
    for gone in ("bytes_to", "messages_to", "time_to", "malicious_share"):
        assert not hasattr(tf.records, gone)
    assert tf.algorithms.malicious_share.__module__ == "topofl.algorithms.dpfl_analysis"


BAD_TARGETS = [
    (None, TypeError, "got NoneType None"),
    ("0.5", TypeError, "got str '0.5'"),
    (True, TypeError, "got bool True"),
    (np.bool_(False), TypeError, "got bool.* np.False_"),
    ([0.5], TypeError, r"got list \[0.5\]"),
    (np.array([0.5]), TypeError, "got ndarray"),
    (math.nan, ValueError, "got NaN"),
    (np.float32("nan"), ValueError, "got NaN"),
]


@pytest.mark.parametrize(("target", "error", "found"), BAD_TARGETS,
                         ids=[repr(t[0]) for t in BAD_TARGETS])
def test_cost_queries_refuse_a_target_that_is_not_a_number(
    target: Any, error: type[Exception], found: str
) -> None:
    # issue 33: before, bytes_to(None) was a raw numpy TypeError and a NaN target read as
    # "never reached"
    r = Records(rows=COSTLY)
    queries = [lambda: r.rounds_to(target, "acc"), lambda: r.bytes_to(target, "acc"),
               lambda: r.messages_to(target, "acc"), lambda: r.time_to(target, "acc"),
               lambda: tf.records.rounds_to(r, target, "acc"),
               lambda: tf.records.cost_to(r, target, "bytes", "acc")]
    if target is not None:  # summary_table(target=None) asks for no rounds_to column
        queries.append(lambda: r.summary_table("acc", target=target))
    for query in queries:
        with pytest.raises(error, match="^target must be a real number .*" + found) as exc:
            query()
        assert type(exc.value) is error and "\n" not in str(exc.value)


def test_cost_queries_take_any_real_target() -> None:
    r = Records(rows=COSTLY)
    for target in (0.5, np.float32(0.5), np.float64(0.5)):
        assert r.rounds_to(target, "acc") == 10 and r.bytes_to(target, "acc") == 1000.0
    assert r.rounds_to(0, "acc") == 5 and r.rounds_to(np.int64(1), "acc") is None
    assert r.rounds_to(-math.inf, "acc") == 5 and r.rounds_to(math.inf, "acc") is None
    assert r.summary_table("acc", target=np.float32(0.9))["rounds_to"].tolist() == [15]


# ---------------------------------------------------------------------------- several runs
def test_several_runs_need_run_and_never_mix() -> None:
    r = Records(rows=RING + COMPLETE)
    for query in (lambda: r.rounds_to(0.8, "acc"), lambda: r.final("acc"),
                  lambda: r.best("acc"), lambda: r.series("acc"), lambda: r.bytes_to(0.8, "acc"),
                  lambda: r.per_client("acc", 9), lambda: r.config):
        with pytest.raises(ValueError, match=r"2 runs are loaded \(ring, complete\)"):
            query()
    assert r.rounds_to(0.8, "acc", run="ring") is None
    assert r.rounds_to(0.8, "acc", run="complete") == 20
    assert r.final("acc", run="ring") == 0.7 and r.best("acc", run="complete") == 0.9
    rounds, vals = r.series("acc", run="ring")
    assert rounds.tolist() == [9, 19, 29] and vals.tolist() == [0.3, 0.6, 0.7]
    with pytest.raises(ValueError, match="no run 'star'.*'ring', 'complete'"):
        r.final("acc", run="star")
    one = r.for_run("complete")
    assert one.runs == ["complete"] and one.final("acc") == 0.9


def test_summary_table_equals_per_run_queries() -> None:
    r = Records(rows=RING + COMPLETE + _rows("star", "loss", [(0, 1.0)]))
    table = r.summary_table("acc", target=0.8)
    assert list(table["run"]) == ["ring", "complete", "star"]
    for run in ("ring", "complete"):
        row = table.set_index("run").loc[run]
        assert row["final"] == r.final("acc", run=run)
        assert row["best"] == r.best("acc", run=run)
        assert row["auc"] == area_under_curve(*r.series("acc", run=run))
        assert row["rounds"] == 30
        reach = r.rounds_to(0.8, "acc", run=run)
        assert (math.isnan(row["rounds_to"]) if reach is None else row["rounds_to"] == reach)
    assert table.set_index("run").loc["star"].drop("rounds").isna().all()
    assert "rounds_to" not in r.summary_table("acc").columns


# ---------------------------------------------------------------------------- headers and files
NEW_HEADER = {
    "config": {"algorithm": "dsgd", "topology": "ring", "data": "digits", "n_clients": 8,
               "seed": 1, "lr": 0.1, "rounds": 30},
    "provenance": {"topofl": "0.1.0", "torch": "2.13.0+cpu", "git_commit": None,
                   "command": "topofl run cfg.toml", "started": "2026-11-22T10:00:00+00:00"},
    "engine": {"run": {"run_id": "ring-s1", "seed": 1}, "algorithm": {"name": "dsgd"}},
}
OLD_HEADER = {"config": {"run": {"run_id": "old", "seed": 0, "rounds": 30},
                         "algorithm": {"name": "dsgd", "lr": 0.1},
                         "topology": {"name": "ring", "n": 8, "params": {"n": 8}},
                         "model": "SplitModel[650]"}}


def test_load_new_and_old_headers(tmp_path: Path) -> None:
    new = load(_write(tmp_path / "new.jsonl", NEW_HEADER, _rows("ring-s1", "acc", [(0, 0.5)])))
    assert new.config == NEW_HEADER["config"]
    assert new.provenance["command"] == "topofl run cfg.toml"
    assert new.engine == NEW_HEADER["engine"]
    assert new.configs == {"ring-s1": NEW_HEADER["config"]}
    old = load(_write(tmp_path / "old.jsonl", OLD_HEADER, _rows("old", "acc", [(0, 0.5)])))
    assert old.config["topology"]["name"] == "ring"
    assert old.provenance == {} and old.engine == {}
    # a header-only file (killed before its first evaluation) is still a run
    empty = load(_write(tmp_path / "e.jsonl", NEW_HEADER, []))
    assert empty.runs == ["ring-s1"] and empty.config["seed"] == 1
    nameless = load(_write(tmp_path / "n.jsonl", {"config": {"seed": 2}}, []))
    assert nameless.runs == ["n"]


def test_load_rejects_bad_lines_and_tolerates_a_truncated_tail(tmp_path: Path) -> None:
    p = _write(tmp_path / "r.jsonl", NEW_HEADER, _rows("ring-s1", "acc", [(0, 0.5), (1, 0.6)]))
    p.write_text(p.read_text() + '{"run": "ring-s1", "rou', encoding="utf-8")
    assert len(load(p)) == 2 and load(p).cut == {"ring-s1": 23}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"run": "x"}\n{"run": "x", "round": 0, "client": null, "metric": "a", '
                   '"value": 1}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 1: misses the row keys \[.round."):
        load(bad)
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "missing.jsonl")


def test_load_many_keeps_every_header_and_refuses_duplicates(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.jsonl", NEW_HEADER, _rows("ring-s1", "acc", [(0, 0.5)]))
    b = _write(tmp_path / "b.jsonl", OLD_HEADER, _rows("old", "acc", [(0, 0.7)]))
    r = load_many([a, b])
    assert r.runs == ["ring-s1", "old"]
    assert r.configs["ring-s1"]["lr"] == 0.1 and r.configs["old"]["run"]["run_id"] == "old"
    assert r.provenances["ring-s1"]["torch"] == "2.13.0+cpu" and r.provenances["old"] == {}
    assert r.final("acc", run="old") == 0.7
    with pytest.raises(ValueError, match="2 runs are loaded"):
        _ = r.provenance
    # a folder: every *.jsonl in name order
    assert load_many(tmp_path).runs == ["ring-s1", "old"]
    (tmp_path / "sub").mkdir()
    c_header = {"config": {**OLD_HEADER["config"], "run": {"run_id": "ring-s1", "seed": 7}}}
    c = _write(tmp_path / "sub" / "c.jsonl", c_header, _rows("ring-s1", "acc", [(0, 0.9)]))
    with pytest.raises(ValueError, match=r"run id 'ring-s1' is in both .*a.jsonl and .*c.jsonl"):
        load_many([a, c])
    both = load_many([a, c], rename=True)
    renamed = f"ring-s1@{c}"
    assert both.runs == ["ring-s1", renamed]
    assert both.final("acc", run=renamed) == 0.9 and both.final("acc", run="ring-s1") == 0.5
    assert both.configs[renamed]["run"]["seed"] == 7  # c's own header
    assert both.sources == {"ring-s1": str(a), renamed: str(c)}
    (tmp_path / "nothing").mkdir()
    with pytest.raises(ValueError, match="no \\*.jsonl"):
        load_many(tmp_path / "nothing")


def test_recorder_resume_keeps_provenance_and_engine(tmp_path: Path) -> None:
    p = _write(tmp_path / "r.jsonl", NEW_HEADER, _rows("ring-s1", "acc", [(0, 0.5), (1, 0.6)]))
    with Recorder(p, run="ring-s1", resume=True, resume_round=1) as rec:
        rec.log("acc", 0.65, 1)
    r = load(p)
    assert r.provenance == NEW_HEADER["provenance"] and r.engine == NEW_HEADER["engine"]
    assert r.series("acc")[1].tolist() == [0.5, 0.65]


def test_recorder_records_carry_the_config() -> None:
    rec = Recorder(None, run="x")
    rec.log_config({"seed": 3})
    assert rec.records().config == {"seed": 3} and rec.records().runs == ["x"]


# ---------------------------------------------------------------------------- pandas
def test_to_pandas_long_and_wide_agree_with_the_rows() -> None:
    rows = RING + COMPLETE + _rows("ring", "loss", [(9, 2.0), (29, None)]) + [
        {"run": "ring", "round": 9, "client": 1, "metric": "acc", "value": 0.25},
        {"run": "ring", "round": 9, "client": 0, "metric": "acc", "value": "inf"},
    ]
    r = Records(rows=rows)
    long = r.to_pandas()
    assert list(long.columns) == ["run", "round", "client", "metric", "value"]
    assert len(long) == len(rows)
    for row, (_, got) in zip(rows, long.iterrows()):
        assert got["run"] == row["run"] and got["round"] == row["round"]
        assert (pd.isna(got["client"]) if row["client"] is None
                else got["client"] == row["client"])
        v = row["value"]
        assert (math.isnan(got["value"]) if v is None else got["value"] == float(v))
    wide = r.to_pandas(wide=True)
    assert list(wide.columns) == ["run", "round", "client", "acc", "loss"]
    agg = wide[wide["client"].isna()]
    for run in ("ring", "complete"):
        sub = agg[agg["run"] == run]
        rounds, acc = r.series("acc", run=run)
        assert sub["round"].tolist() == rounds.tolist()
        assert sub["acc"].tolist() == acc.tolist()
    ring = agg[agg["run"] == "ring"].set_index("round")["loss"]
    assert ring[9] == 2.0 and math.isnan(ring[19]) and math.isnan(ring[29])
    per_client = wide[(wide["run"] == "ring") & wide["client"].notna()]
    assert per_client["client"].tolist() == [0, 1]
    assert per_client["acc"].tolist() == [math.inf, 0.25]
    assert r.per_client("acc", 9, run="ring").tolist() == [math.inf, 0.25]


# ---------------------------------------------------------------------------- AUC
def test_area_under_curve_hand_computed() -> None:
    assert area_under_curve([10, 20, 30], [0.0, 0.5, 1.0]) == 0.5
    # unequal spacing: (1 * 0.3 + 2 * 0.4) / 3
    assert area_under_curve([1, 2, 4], [0.2, 0.4, 0.4]) == pytest.approx(1.1 / 3)
    assert area_under_curve([5], [0.7]) == 0.7
    assert area_under_curve([3, 1, 2], [0.0, 1.0, 1.0]) == pytest.approx(0.75)  # sorted first
    assert area_under_curve([1, 2, 3], [1.0, math.nan, 1.0]) == 1.0  # NaN skipped
    assert math.isnan(area_under_curve([], []))
    with pytest.raises(ValueError, match="same length"):
        area_under_curve([1, 2], [1.0])
    r = Records(rows=_rows("a", "acc", [(9, 0.0), (19, 0.5), (29, 1.0)]))
    assert r.summary_table("acc")["auc"].tolist() == [0.5]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 500), st.floats(0, 1)), min_size=1, max_size=20,
                unique_by=lambda p: p[0]))
def test_area_under_curve_against_a_slow_reference(pts: list[tuple[int, float]]) -> None:
    pts = sorted(pts)
    if len(pts) == 1:
        expect = pts[0][1]
    else:
        area = 0.0
        for (r0, v0), (r1, v1) in zip(pts, pts[1:]):
            area += (r1 - r0) * (v0 + v1) / 2
        expect = area / (pts[-1][0] - pts[0][0])
    got = area_under_curve([p[0] for p in pts], [p[1] for p in pts])
    assert got == pytest.approx(expect, rel=1e-12, abs=1e-12)
    assert min(p[1] for p in pts) - 1e-12 <= got <= max(p[1] for p in pts) + 1e-12
