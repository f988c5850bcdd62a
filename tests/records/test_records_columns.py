"""Per-client records as columns (issue 58, item 1): the client file beside a run's records.

The reference is the format before it: one JSON row a client (``Recorder.log(metric, v,
round, client)``). Whatever is written as columns reads back, through every query and as
rows, exactly as those rows do.
"""

from __future__ import annotations

import math
import os
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.exceptions import CheckpointError
from topofl.records import Recorder, Records, load, load_many
from topofl.records.columns import ClientBlock, client_path, read_blocks

#: a value a client may have: a number, NaN (no value), an infinity
VALUE = st.one_of(st.floats(-1e6, 1e6, allow_nan=False), st.just(math.nan),
                  st.just(math.inf), st.just(-math.inf))


@st.composite
def logs(draw: Any) -> list[tuple[Any, ...]]:
    """A run's writes: per round, scalar rows and per-client blocks in a drawn order."""
    n = draw(st.integers(1, 6))
    out: list[tuple[Any, ...]] = []
    for t in range(draw(st.integers(1, 5))):
        for _ in range(draw(st.integers(0, 4))):
            kind = draw(st.sampled_from(["scalar", "floats", "ints"]))
            metric = draw(st.sampled_from(["acc", "loss", "bytes_sent"]))
            if kind == "scalar":
                out.append(("log", f"{metric}_mean", draw(VALUE), t))
            elif kind == "floats":
                out.append(("clients", metric, draw(st.lists(VALUE, min_size=n, max_size=n)), t))
            else:
                out.append(("clients", "count", draw(st.lists(st.integers(0, 2**40),
                                                               min_size=n, max_size=n)), t))
    return out


def _write(rec: Recorder, ops: list[tuple[Any, ...]], legacy: bool) -> None:
    rec.log_config({"rounds": 5})
    for kind, metric, value, t in ops:
        if kind == "log":
            rec.log(metric, value, t)
        elif legacy:  # the format before: one row a client
            for i, v in enumerate(value):
                rec.log(metric, v, t, i)
        else:
            rec.log_clients(metric, value, t)
        rec.flush(sync=False)


def _same_answers(a: Records, b: Records) -> None:
    """Every query of ``a`` (columns) answers as ``b`` (rows) does; ``a``'s rows last."""
    assert len(a) == len(b) and a.metrics == b.metrics and a.runs == b.runs
    assert a.status() == b.status()
    per = sorted({(r["metric"], r["round"]) for r in b.rows if r["client"] is not None})
    for metric, t in per:
        np.testing.assert_array_equal(a.per_client(metric, t), b.per_client(metric, t))
    for metric in {m for m, _ in per}:
        ra, va = a.clients(metric)
        rb, vb = b.clients(metric)
        np.testing.assert_array_equal(ra, rb)
        np.testing.assert_array_equal(va, vb)
        for c in range(va.shape[1]):
            assert a.points(metric, client=c) == b.points(metric, client=c)
    if {"acc", "loss"} <= {m for m, _ in per}:
        np.testing.assert_array_equal(a.selected("acc", "loss"), b.selected("acc", "loss"))
        np.testing.assert_array_equal(a.selected("acc", "loss", mode="max"),
                                      b.selected("acc", "loss", mode="max"))
    assert a.to_pandas().equals(b.to_pandas())
    assert a.rows == b.rows  # built from the blocks, in the order written


@settings(max_examples=40, deadline=None)
@given(ops=logs())
def test_columns_answer_as_the_rows_they_stand_for(ops: list[tuple[Any, ...]],
                                                   tmp_path_factory: Any) -> None:
    d = tmp_path_factory.mktemp("cols")
    with Recorder(d / "new.jsonl", run="r") as rec:
        _write(rec, ops, legacy=False)
        mem_rec = rec.records()
    with Recorder(d / "old.jsonl", run="r") as rec:
        _write(rec, ops, legacy=True)
    old = load(d / "old.jsonl")
    assert not client_path(d / "old.jsonl").exists()
    _same_answers(load(d / "new.jsonl"), old)
    _same_answers(mem_rec, old)
    memory = Recorder(None, run="r")
    _write(memory, ops, legacy=False)
    _same_answers(memory.records(), old)


def test_a_run_writes_its_per_client_values_as_columns(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    data = tf.data.federate("digits", "iid", 6, seed=0, val=0.2)
    res = tf.run("dsgd", topology="ring", data=data, rounds=4, eval_every=2,
                 seed=0, records_path=str(path), eval_val=True)
    on_disk = load(path)
    assert {b.metric for b in on_disk.blocks} == {"test_acc", "val_loss", "val_acc",
                                                 "bytes_sent", "bytes_received"}
    assert all(b.values.size == 6 for b in on_disk.blocks)
    assert not any(r["client"] is not None for r in on_disk._rows)  # the .jsonl: scalars only
    for t in (1, 3):
        np.testing.assert_array_equal(on_disk.per_client("test_acc", t),
                                      res.records.per_client("test_acc", t))
    np.testing.assert_array_equal(on_disk.selected(), res.records.selected())
    memory = tf.run("dsgd", topology="ring", data=data, rounds=4,
                    eval_every=2, seed=0, eval_val=True)
    assert [r for r in memory.records.rows if r["metric"] != "wall_time"] == [
        r for r in on_disk.rows if r["metric"] != "wall_time"]
    sent = on_disk.clients("bytes_sent")[1]
    assert sent.dtype == np.float64 and np.all(sent > 0)
    assert all(isinstance(r["value"], int) for r in on_disk.rows if r["metric"] == "bytes_sent")


def _rounds(path: Path, rounds: int, values: Any) -> None:
    """A run ``r`` of ``rounds`` rounds: ``acc_mean`` and per client ``acc`` (``values(t)``)."""
    with Recorder(path, run="r") as rec:
        rec.log_config({"rounds": rounds})
        for t in range(rounds):
            rec.log("acc_mean", 0.1 * t, t)
            rec.log_clients("acc", values(t), t)


def test_a_resumed_run_keeps_the_values_before_its_round_and_writes_the_rest(
        tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    _rounds(path, 4, lambda t: [0.1 * t, 0.2 * t])
    whole = load(path)
    with Recorder(path, run="r", resume=True, resume_round=2,
                  expect_rounds=[0, 1]) as rec:
        assert [b.round for b in read_blocks(client_path(path), "r")[0]] == [0, 1]
        for t in (2, 3):
            rec.log("acc_mean", 0.1 * t, t)
            rec.log_clients("acc", [0.1 * t, 0.2 * t], t)
    again = load(path)
    assert again.rows == whole.rows and not again.cut


def test_a_crash_cuts_only_the_last_block_and_values_past_the_rows_are_not_kept(
        tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    _rounds(path, 3, lambda t: np.full(1000, 0.5))
    cols = client_path(path)
    data = cols.read_bytes()
    cols.write_bytes(data[:-3000])  # the last block cut (and the stream's end)
    r = load(path)
    assert [b.round for b in r.blocks] == [0, 1] and r.cut["r"] > 0
    assert r.status().complete is False
    cols.write_bytes(data)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:3]))  # rows of rounds 0 and 1 only: killed in between
    r = load(path)
    assert [b.round for b in r.blocks] == [0, 1] and r.status().rounds == 2


def test_load_many_subset_and_for_run_keep_each_block_at_its_place(tmp_path: Path) -> None:
    for name in ("a", "b"):
        with Recorder(tmp_path / f"{name}.jsonl", run=name) as rec:
            rec.log_config({"rounds": 2})
            for t in range(2):
                rec.log("m", float(t), t)
                rec.log_clients("acc", [t, 0.5], t)
                rec.log("after", 1.0, t)
    both = load_many(tmp_path)
    rows = both.rows
    order = [(r["run"], r["metric"], r["client"]) for r in rows]
    assert order[:5] == [("a", "m", None), ("a", "acc", 0), ("a", "acc", 1),
                         ("a", "after", None), ("a", "m", None)]
    for run in ("a", "b"):
        fresh = load_many(tmp_path)
        assert fresh.for_run(run).rows == [r for r in rows if r["run"] == run]
        assert fresh.subset([run]).rows == [r for r in rows if r["run"] == run]
    renamed = load_many([tmp_path / "a.jsonl", tmp_path / "a.jsonl"], rename=True)
    other = f"a@{tmp_path / 'a.jsonl'}"
    np.testing.assert_array_equal(renamed.per_client("acc", 1, run=other), [1.0, 0.5])


def test_a_recorder_with_a_file_holds_no_per_client_values(tmp_path: Path) -> None:
    """Flat in the evaluations: 40 evaluations of 10^5 clients (32 MB of float64) leave the
    recorder's memory where one left it."""
    n, values = 100_000, np.linspace(0, 1, 100_000)
    with Recorder(tmp_path / "r.jsonl", run="r") as rec:
        rec.log_config({"rounds": 40})
        rec.log_clients("acc", values, 0)
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        for t in range(1, 40):
            rec.log_clients("acc", values, t)
            rec.flush(sync=False)
        grown = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
        assert rec.blocks == [] and grown < 200_000, grown
    assert os.path.getsize(client_path(tmp_path / "r.jsonl")) >= 40 * n * 8
    r = load(tmp_path / "r.jsonl")
    np.testing.assert_array_equal(r.per_client("acc", 39), values)


def test_legacy_rows_and_columns_mix_in_one_file(tmp_path: Path) -> None:
    """A run recorded before the columns and resumed after: its rows, then its blocks."""
    path = tmp_path / "r.jsonl"
    with Recorder(path, run="r") as rec:
        rec.log_config({"rounds": 2})
        rec.log("m", 0.0, 0)
        for i, v in enumerate([0.25, 0.5]):
            rec.log("acc", v, 0, i)  # the old format
    with Recorder(path, run="r", resume=True, resume_round=1,
                  expect_rounds=[0]) as rec:
        rec.log("m", 1.0, 1)
        rec.log_clients("acc", [0.75, 1.0], 1)
    r = load(path)
    rounds, values = r.clients("acc")
    assert rounds.tolist() == [0, 1] and values.tolist() == [[0.25, 0.5], [0.75, 1.0]]
    assert [r_["client"] for r_ in r.rows] == [None, 0, 1, None, 0, 1]


def test_bad_values_and_bad_client_files_are_refused_in_one_line(tmp_path: Path) -> None:
    rec = Recorder(None, run="r")
    for bad in ([[1.0, 2.0]], "abc", [1.0, "x"], {"a": 1.0}):
        with pytest.raises(TypeError, match="must be a flat sequence of numbers"):
            rec.log_clients("acc", bad, 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be a ClientBlock"):
        Records(blocks=[{"metric": "acc"}])  # type: ignore[list-item]
    path = tmp_path / "r.jsonl"
    with Recorder(path, run="r") as w:
        w.log_config({"rounds": 1})
        w.log("m", 1.0, 0)
    client_path(path).write_bytes(b"not an arrow stream at all")
    with pytest.raises(ValueError, match=r"r\.clients\.arrows: not a client file"):
        load(path)
    with pytest.raises(CheckpointError, match="not a client file"):
        Recorder(path, run="r", resume=True, resume_round=1)


def test_a_fresh_run_replaces_another_runs_client_file(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with Recorder(path, run="r") as rec:
        rec.log_config({})
        rec.log_clients("acc", [1.0], 0)
    with Recorder(path, run="r") as rec:
        rec.log_config({})
        rec.log("m", 1.0, 0)
    assert not client_path(path).exists() and load(path).blocks == []
    tf.sweep.discard(tmp_path, "r")
    assert list(tmp_path.iterdir()) == []


def test_a_block_reads_as_its_rows() -> None:
    b = ClientBlock("r", "acc", 2, 0, np.array([1.0, np.nan, np.inf, -np.inf]))
    assert [r["value"] for r in b.rows()] == [1.0, None, "inf", "-inf"]
    ints = ClientBlock("r", "n", 2, 0, np.array([3, 4], dtype=np.int64))
    assert [type(r["value"]) for r in ints.rows()] == [int, int]


def test_resuming_a_run_whose_client_file_is_gone_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    tf.run("dsgd", topology="ring", data="digits", n_clients=4, rounds=2, seed=0,
           records_path=str(path))
    moved = tmp_path / "moved.jsonl"
    os.replace(path, moved)  # the records file alone: its per-client values stay behind
    with pytest.raises(CheckpointError, match=r"client file .*moved\.clients\.arrows is "
                       "missing"):
        Recorder(moved, run="dsgd-ring", resume=True, resume_round=1, expect_rounds=[1])
    tf.records.copy_records(moved, tmp_path / "copy.jsonl")  # no client file: none copied
    client_path(path).rename(client_path(moved))
    with Recorder(moved, run="dsgd-ring", resume=True, resume_round=1,
                  expect_rounds=[1]) as rec:
        assert rec.rows


def test_a_recorder_without_a_file_spills_to_a_temporary_one_and_removes_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Beyond SPILL_BYTES a recorder without a path moves its per-client values to a
    temporary client file: it holds no more, answers as before, and the file is gone once it
    closes (its records still read, from the mapping)."""
    import topofl.records.writer as writer

    monkeypatch.setattr(writer, "SPILL_BYTES", 10_000)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    reference = Recorder(None, run="r")
    monkeypatch.setattr(writer, "SPILL_BYTES", 10**12)
    for t in range(5):
        reference.log("m", float(t), t)
        reference.log_clients("acc", np.arange(1000.0) + t, t)
    monkeypatch.setattr(writer, "SPILL_BYTES", 10_000)
    rec = Recorder(None, run="r")
    for t in range(5):
        rec.log("m", float(t), t)
        rec.log_clients("acc", np.arange(1000.0) + t, t)
        assert len(rec.blocks) <= 1  # spilled at the second block
    assert [p.suffix for p in tmp_path.iterdir()] == [".arrows"]
    live = rec.records()
    rec.close()
    assert list(tmp_path.iterdir()) == []
    _same_answers(live, reference.records())
    _same_answers(rec.records(), reference.records())


@pytest.mark.parametrize("bad", ["", ".", "runs/.."])
def test_a_records_path_that_names_no_file_is_refused_in_one_line(bad: str) -> None:
    with pytest.raises(ValueError, match="path must name a records file"):
        Recorder(bad, run="r")
    with pytest.raises(ValueError, match="records_path must name a file"):
        tf.engine.RunConfig(rounds=1, records_path=bad)
    with pytest.raises(ValueError, match="needs a file name"):
        client_path(bad)


@settings(max_examples=60, deadline=None)
@given(rounds=st.integers(1, 5), per_round=st.lists(st.integers(0, 3), min_size=5, max_size=5),
       at=st.integers(1, 5), cut=st.floats(0.0, 1.0))
def test_a_resume_refuses_a_client_file_that_lost_blocks_the_checkpoint_covers(
        rounds: int, per_round: list[int], at: int, cut: float) -> None:
    """A checkpoint after round ``at - 1`` stores the recorder's block count then; a client
    file cut anywhere afterwards is refused on resume exactly when it lost one of those
    blocks (the reference: which (metric, round) blocks of rounds < ``at`` still read), and
    the refusal leaves both files as they were; an accepted resume keeps their values."""
    at = min(at, rounds)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "r.jsonl"
        counted = None
        with Recorder(path, run="r") as rec:
            rec.log_config({"rounds": rounds})
            for t in range(rounds):
                for k in range(per_round[t]):
                    rec.log_clients(f"m{k}", [float(t), float(k), math.nan], t)
                rec.log("acc_mean", float(t), t)
                if t == at - 1:
                    counted = rec.client_blocks
        assert counted == sum(per_round[:at])
        whole = load(path)
        cpath = client_path(path)
        if not cpath.exists():
            cpath.write_bytes(b"")
        cpath.write_bytes(cpath.read_bytes()[: int(cut * cpath.stat().st_size)])
        try:
            left = {(b.metric, b.round) for b in read_blocks(cpath, "r")[0]}
        except ValueError:  # cut inside the stream's schema: not a client file any more
            with pytest.raises(CheckpointError, match="not a client file"):
                Recorder(path, run="r", resume=True, resume_round=at, expect_blocks=counted)
            return
        lost = {(b.metric, b.round) for b in whole.blocks if b.round < at} - left
        before = (path.read_bytes(), cpath.read_bytes())
        if lost:
            with pytest.raises(CheckpointError, match=rf"holds {counted - len(lost)} "
                               rf"per-client block\(s\) of rounds < {at}, but the run had "
                               rf"written {counted}"):
                Recorder(path, run="r", resume=True, resume_round=at,
                         expect_rounds=range(at), expect_blocks=counted)
            assert (path.read_bytes(), cpath.read_bytes()) == before
            # a checkpoint written before the count was stored: the rows' checksums count
            # the blocks, and a lost one the run keeps is refused all the same
            rows_count = any(b.at < len(whole._rows) for b in whole.blocks
                             if (b.metric, b.round) in lost)
            if rows_count:
                with pytest.raises(CheckpointError, match=r"(lacks block|is empty|cannot be "
                                   r"read).*refused to resume into it"):
                    Recorder(path, run="r", resume=True, resume_round=at)
                assert (path.read_bytes(), cpath.read_bytes()) == before
            return
        with Recorder(path, run="r", resume=True, resume_round=at, expect_rounds=range(at),
                      expect_blocks=counted) as rec:
            assert rec.client_blocks == counted
        kept = load(path)
        assert [(b.metric, b.round, b.values.tobytes()) for b in kept.blocks] == [
            (b.metric, b.round, b.values.tobytes()) for b in whole.blocks if b.round < at]


@pytest.mark.parametrize("damage", ["half", "empty"])
def test_a_run_resumed_on_a_damaged_client_file_is_refused(tmp_path: Path,
                                                            damage: str) -> None:
    """The round loop stores its recorder's block count in each checkpoint, and a resume on
    a client file cut or emptied since (outside damage: the file is synced before each
    checkpoint) is refused in one line, nothing changed; the intact file resumes."""
    from topofl.engine.checkpoint import load_checkpoint

    path, ck = tmp_path / "r.jsonl", tmp_path / "r.ckpt"
    kw: dict[str, Any] = dict(n_clients=4, batch_size=4, progress=False, spectral=False,
                              run_id="r", records_path=str(path), checkpoint_path=str(ck),
                              checkpoint_every=2, seed=0)
    tf.run("dsgd", "ring", "digits", "logistic", 4, **kw)
    blocks = load(path).blocks
    assert blocks and load_checkpoint(ck)["client_blocks"] == len(blocks)
    cpath = client_path(path)
    intact = cpath.read_bytes()
    cpath.write_bytes(intact[: len(intact) // 2] if damage == "half" else b"")
    before = (path.read_bytes(), cpath.read_bytes())
    with pytest.raises(CheckpointError, match=r"r\.clients\.arrows holds \d+ per-client "
                       rf"block\(s\) of rounds < 4, but the run had written {len(blocks)}"):
        tf.run("dsgd", "ring", "digits", "logistic", 6, **kw, resume=str(ck))
    assert (path.read_bytes(), cpath.read_bytes()) == before
    cpath.write_bytes(intact)
    tf.run("dsgd", "ring", "digits", "logistic", 6, **kw, resume=str(ck))
    assert max(b.round for b in load(path).blocks) == 5
