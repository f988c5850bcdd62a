"""Records that know when they are damaged (issue 81, items 1 and 2).

A run's records are two files: ``r.jsonl`` (a header, then one row a line) and its client file
``r.clients.arrows`` (an Arrow stream, one block of per-client values a metric an evaluation).
Each carries checksums (:mod:`topofl.records._seal`), so that :func:`topofl.records.load` never
reads damage as data: every damage below is refused (``ValueError``) or, when the client file
holds nothing, warned of (:class:`~topofl.records.DamagedRecordsWarning`), each naming the
lines or blocks and their rounds; a crash's cut is read as before; a resume needs exactly the
blocks its checkpoint counted; a run replaces no client file that is not its own.

The reference for every test is one small real run (3 rounds, 4 clients, evaluated every
round): 57 rows, 9 blocks (``test_acc`` before a round's rows, ``bytes_sent`` and
``bytes_received`` after them).
"""

from __future__ import annotations

import json
import logging
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.exceptions import CheckpointError, OutputExistsError
from topofl.records import DamagedRecordsWarning, Recorder, Records, copy_records, load
from topofl.records._seal import unseal
from topofl.records.columns import client_path, regroup

RUN: dict[str, Any] = dict(n_clients=4, batch_size=4, progress=False, spectral=False,
                           run_id="r", eval_every=1)


@dataclass(frozen=True)
class Made:
    """The reference run's two files, as bytes, and another run's client file."""

    jsonl: bytes
    arrows: bytes
    other: bytes


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Made:
    d = tmp_path_factory.mktemp("made")
    tf.run("dsgd", "ring", "digits", "logistic", 3, seed=0, records_path=str(d / "r.jsonl"),
           **RUN)
    tf.run("dsgd", "ring", "digits", "logistic", 3, seed=1, records_path=str(d / "o.jsonl"),
           **RUN)
    return Made((d / "r.jsonl").read_bytes(), client_path(d / "r.jsonl").read_bytes(),
                client_path(d / "o.jsonl").read_bytes())


def _copy(made: Made, folder: Path, name: str = "r") -> Path:
    path = folder / f"{name}.jsonl"
    path.write_bytes(made.jsonl)
    client_path(path).write_bytes(made.arrows)
    return path


def _whole(made: Made, folder: Path) -> Records:
    """The reference run's records, intact (loaded from a folder of their own)."""
    (folder / "whole").mkdir(exist_ok=True)
    return load(_copy(made, folder / "whole"))


def _offsets(data: bytes) -> list[int]:
    """Where each record batch of the stream ``data`` starts, then where the last one ends."""
    import pyarrow as pa

    src = pa.BufferReader(data)
    reader = pa.ipc.open_stream(src)
    out = [src.tell()]
    while True:
        try:
            reader.read_next_batch()
        except StopIteration:
            return out
        out.append(src.tell())


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")


def _round(line: bytes) -> int:
    return int(json.loads(line)["round"])


# ------------------------------------------------------------------ the files as written
def test_the_reference_run_is_what_the_tests_assume(made: Made, tmp_path: Path) -> None:
    r = _whole(made, tmp_path)
    assert len(r._rows) == 57 and not r.cut
    assert [(b.metric, b.round) for b in r.blocks] == [
        (m, t) for t in range(3) for m in ("test_acc", "bytes_sent", "bytes_received")]
    assert len(_offsets(made.arrows)) == 11  # 9 blocks and the closing batch


def test_plain_readers_still_read_both_files(made: Made, tmp_path: Path) -> None:
    import pandas as pd
    import pyarrow as pa

    path = _copy(made, tmp_path)
    df = pd.read_json(path, lines=True)
    assert len(df) == 58 and df["crc"].notna().all()  # the header and 57 rows
    assert df["metric"].iloc[1:].tolist() == [row["metric"] for row in load(path)._rows]
    table = pa.ipc.open_stream(str(client_path(path))).read_all().to_pandas()
    assert list(table.columns) == ["metric", "round", "at", "integer", "values"]
    assert len(table) == 9 and table["values"].map(len).tolist() == [4] * 9


# ------------------------------------------------------------------ the client file absent
@pytest.mark.parametrize("damage, state", [("deleted", "is missing"), ("emptied", "is empty"),
                                           ("folder", "is a folder")])
def test_a_client_file_that_holds_nothing_is_named_in_a_warning(made: Made, tmp_path: Path,
                                                                 damage: str, state: str) -> None:
    path = _copy(made, tmp_path)
    c = client_path(path)
    if damage == "emptied":
        c.write_bytes(b"")
    else:
        c.unlink()
        if damage == "folder":
            c.mkdir()
    with pytest.warns(DamagedRecordsWarning, match=(
            rf"^{path}: its client file {c} {state}, but its rows count 7 per-client block\(s\) "
            r"written before them \(from line 4 \(round 0, '[^']+'\) to line 42 \(round 2, "
            r"'[^']+'\)\): the per-client values of round\(s\) 0, 1, 2 are not loaded")):
        r = load(path)
    assert r.blocks == [] and r._rows == _whole(made, tmp_path)._rows  # the rows, no values
    with pytest.raises(KeyError, match="not recorded"):
        r.per_client("test_acc", 0)


# ------------------------------------------------------------------ the client file damaged
def _block_removed(data: bytes) -> bytes:
    o = _offsets(data)
    return data[:o[3]] + data[o[4]:]


def _block_duplicated(data: bytes) -> bytes:
    o = _offsets(data)
    return data[:o[4]] + data[o[3]:o[4]] + data[o[4]:]


def _block_zeroed(data: bytes) -> bytes:
    o = _offsets(data)
    return data[:o[3]] + bytes(o[4] - o[3]) + data[o[4]:]


def _bit_flipped(data: bytes, values: bytes) -> bytes:
    k = data.index(values, _offsets(data)[3]) + 3  # a value of block 3 (test_acc, round 1)
    return data[:k] + bytes([data[k] ^ 0x10]) + data[k + 1:]


def _middle_header(data: bytes) -> bytes:
    o = _offsets(data)
    k = o[3] + 4  # block 3's metadata length
    return data[:k] + b"\x7f\xff\xff\x00" + data[k + 4:]


BLOCK_3 = r"block 3 \('test_acc', round 1\)"
AFTER_2 = r"after block 2 \('bytes_received', round 0\)"


@pytest.mark.parametrize("damage, message", [
    ("removed", rf"lacks block\(s\) number 3 of the 9 the run wrote \(block 3 stands before "
                rf"line 23 \(round 1, '[^']+'\), {AFTER_2}\): the per-client values of those "
                "rounds are missing"),
    ("duplicated", r"block 4 \('test_acc', round 1\) is numbered 3, expected 4 or more after "
                   r"block number 3: a block was duplicated or moved"),
    ("zeroed", rf"bytes follow the end of its stream {AFTER_2}: not a client file written by "
               r"a run \(a block zeroed or damaged\?\)"),
    ("bit flipped", rf"{BLOCK_3} does not match the checksum it carries: its values are "
                    "damaged"),
    ("middle header", rf"cannot be read {AFTER_2} \(.+\) for its last \d+ bytes, but the file "
                      r"ends with its end-of-stream marker: the file is damaged there, not cut "
                      "by a crash"),
    ("another run's", r"belongs to another run \(run id 'r', run hash [0-9a-f]{16}\), expected "
                      r"run id 'r', run hash [0-9a-f]{16} as r\.jsonl says: its per-client "
                      "values are not this run's"),
])
def test_a_damaged_client_file_is_refused_naming_the_block_and_round(
        made: Made, tmp_path: Path, damage: str, message: str) -> None:
    path = _copy(made, tmp_path)
    c = client_path(path)
    values = _whole(made, tmp_path).blocks[3].values.tobytes()
    c.write_bytes({"removed": _block_removed, "duplicated": _block_duplicated,
                   "zeroed": _block_zeroed, "middle header": _middle_header,
                   "bit flipped": lambda d: _bit_flipped(d, values),
                   "another run's": lambda d: made.other}[damage](made.arrows))
    with pytest.raises(ValueError, match=message) as info:
        load(path)
    assert str(c) in str(info.value) and "\n" not in str(info.value)


def test_before_the_checks_these_damages_loaded_without_a_word(made: Made,
                                                                tmp_path: Path) -> None:
    """The reference for the refusals above: each damaged client file still reads as an
    Arrow stream (or as one cut short), so only the checksums tell."""
    from topofl.records.columns import read_blocks

    c = tmp_path / "r.clients.arrows"
    values = _whole(made, tmp_path).blocks[3].values.tobytes()
    for damage in (_block_removed, _block_duplicated, _middle_header,
                   lambda d: _bit_flipped(d, values)):
        c.write_bytes(damage(made.arrows))
        read_blocks(c, "r")  # no error: the stream itself does not say


# ------------------------------------------------------------------ the rows damaged
@pytest.mark.parametrize("damage, line, message", [
    ("edited", 10, "does not match its checksum: the row was edited"),
    ("removed", 10, "does not match its checksum: the row was edited, or a row before it "
                    "removed, moved or duplicated"),
    ("duplicated", 11, "does not match its checksum"),
    ("inserted", 10, r"has no checksum \('crc': '<blocks>:<8 hex>'\), but the file's line 1 "
                     "has one: the row was inserted or edited"),
])
def test_a_row_edited_by_hand_is_refused_naming_its_line_and_round(
        made: Made, tmp_path: Path, damage: str, line: int, message: str) -> None:
    path = _copy(made, tmp_path)
    lines = _lines(path)
    k = 9  # line 10
    if damage == "edited":
        row = json.loads(lines[k])
        row["value"] = row["value"] + 1  # the crc stays the last key: the line looks sealed
        lines[k] = json.dumps(row).encode()
    elif damage == "removed":
        del lines[k]
    elif damage == "duplicated":
        lines.insert(k, lines[k])
    else:
        lines.insert(k, b'{"run": "r", "round": 0, "client": null, "metric": "m", "value": 1}')
    path.write_bytes(b"\n".join(lines))
    shown = _round(lines[line - 1])
    with pytest.raises(ValueError, match=rf"^{path}: line {line} \(round {shown}, '[^']+'\) "
                       + message):
        load(path)


def test_a_header_edited_by_hand_is_refused(made: Made, tmp_path: Path) -> None:
    path = _copy(made, tmp_path)
    lines = _lines(path)
    head = json.loads(lines[0])
    head["config"]["lr"] = 0.5
    lines[0] = json.dumps(head).encode()
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(ValueError, match=rf"^{path}: line 1: the header does not match its "
                       r"checksum \(it carries [0-9a-f]{8}, its text gives [0-9a-f]{8}\): it "
                       "was edited or damaged"):
        load(path)
    del head["crc"]  # its checksum taken away too: the rows still carry theirs
    lines[0] = json.dumps(head).encode()
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(ValueError, match=r"line 2 carries a checksum \('crc'\) but the header, "
                       "line 1, carries none: the header was replaced or edited"):
        load(path)


# ------------------------------------------------------------------ any byte flipped
def _same_or_said(path: Path, whole: Records) -> None:
    """``path`` loads as ``whole`` did, or its damage is refused or warned of."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            r = load(path)
        except ValueError as exc:
            assert str(path) in str(exc) or str(client_path(path)) in str(exc), exc
            return
    if any(issubclass(w.category, DamagedRecordsWarning) for w in caught):
        return
    assert r.cut == whole.cut, r.cut
    assert (r.configs, r.provenances, r.engines) == (whole.configs, whole.provenances,
                                                     whole.engines)
    assert r.rows == whole.rows


FLIPS = settings(max_examples=150, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture])


@FLIPS
@given(where=st.floats(0.0, 1.0, exclude_max=True), xor=st.integers(1, 255))
def test_a_byte_flipped_in_the_client_file_is_said_or_changes_nothing(
        made: Made, tmp_path: Path, where: float, xor: int) -> None:
    path = _copy(made, tmp_path)
    whole = _whole(made, tmp_path)  # (a file rewritten in place changes what maps it)
    k = int(where * len(made.arrows))
    client_path(path).write_bytes(made.arrows[:k] + bytes([made.arrows[k] ^ xor])
                                  + made.arrows[k + 1:])
    _same_or_said(path, whole)


@FLIPS
@given(where=st.floats(0.0, 1.0, exclude_max=True), xor=st.integers(1, 255))
@example(where=0.78125, xor=1)  # a digit of a value: still valid JSON, a number changed
def test_a_byte_flipped_in_the_rows_is_said_or_changes_nothing(
        made: Made, tmp_path: Path, where: float, xor: int) -> None:
    path = _copy(made, tmp_path)
    whole = _whole(made, tmp_path)
    k = int(where * len(made.jsonl))
    path.write_bytes(made.jsonl[:k] + bytes([made.jsonl[k] ^ xor]) + made.jsonl[k + 1:])
    _same_or_said(path, whole)


# ------------------------------------------------------------------ a crash's cut
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.integers(0, 57), torn=st.floats(0.0, 1.0, exclude_max=True),
       ahead=st.floats(0.0, 1.0))
def test_what_a_crash_leaves_loads_as_before(made: Made, tmp_path: Path, rows: int,
                                             torn: float, ahead: float) -> None:
    """A crash leaves a prefix of each file: the rows up to one cut short, and the blocks
    every row on disk counts (handed to the system before it), then maybe more, the last cut
    short. Such files load, without a word but ``cut``, as their complete part."""
    whole = _whole(made, tmp_path)
    lines = made.jsonl.split(b"\n")
    keep = b"".join(ln + b"\n" for ln in lines[:1 + rows])
    part = b""
    if rows < 57 and torn > 0:
        part = lines[1 + rows][: max(1, int(torn * (len(lines[1 + rows]) - 1)))]
    counted = [b for b in whole.blocks if b.at <= (rows if part else rows - 1)]
    o = _offsets(made.arrows)
    least = o[len(counted)] if counted else 0  # the end of the last block counted
    size = least + int(ahead * (len(made.arrows) - least))
    path = tmp_path / "r.jsonl"
    path.write_bytes(keep + part)
    client_path(path).write_bytes(made.arrows[:size])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = load(path)
    read = [b for k, b in enumerate(whole.blocks) if o[k + 1] <= size and b.at <= rows]
    assert r.rows == regroup(list(whole._rows[:rows]), read)
    if size < o[0]:  # the stream's schema cut short (or nothing written)
        torn_block = size
    elif size in o or size >= o[-1]:  # after a whole block, or in the end-of-stream marker
        torn_block = 0
    else:
        torn_block = size - max(x for x in o if x <= size)
    assert r.cut.get("r", 0) == len(part) + torn_block


def test_a_run_resumes_after_a_crash_and_its_records_check(made: Made, tmp_path: Path) -> None:
    """Killed while writing round 2's first row (its ``test_acc`` block already out, the
    next one cut short): a resume from the checkpoint after round 1 keeps rounds 0 and 1
    and writes on; the result loads without a word."""
    path = _copy(made, tmp_path)
    whole = _whole(made, tmp_path)
    lines = _lines(path)
    first_of_2 = next(i for i, ln in enumerate(lines[1:], 1) if ln and _round(ln) == 2)
    path.write_bytes(b"\n".join(lines[:first_of_2]) + b"\n" + lines[first_of_2][:20])
    o = _offsets(made.arrows)
    client_path(path).write_bytes(made.arrows[:o[7] + 100])  # into round 2's test_acc block
    kept = [b for b in whole.blocks if b.round < 2]
    run_hash = whole.engine["run_hash"]
    with Recorder(path, run="r", resume=True, resume_round=2, run_hash=run_hash,
                  expect_rounds=[0, 1], expect_blocks=len(kept)) as rec:
        rec.log_clients("test_acc", [0.5, 0.5, 0.25, 1.0], 2)
        rec.log("test_acc_mean", 0.5625, 2)
    again = load(path)
    assert not again.cut and [(b.metric, b.round) for b in again.blocks] == [
        (b.metric, b.round) for b in kept] + [("test_acc", 2)]
    assert again._rows[:len(again._rows) - 1] == [r for r in whole._rows if r["round"] < 2]


# ------------------------------------------------------------------ resume
def test_a_resume_needs_exactly_the_blocks_its_checkpoint_counted(made: Made,
                                                                 tmp_path: Path) -> None:
    path = _copy(made, tmp_path)
    run_hash = load(path).engine["run_hash"]
    before = (path.read_bytes(), client_path(path).read_bytes())

    def resume(blocks: int) -> Recorder:
        return Recorder(path, run="r", resume=True, resume_round=2, run_hash=run_hash,
                        expect_rounds=[0, 1], expect_blocks=blocks)

    with pytest.raises(CheckpointError, match=r"holds 6 per-client block\(s\) of rounds < 2, "
                       r"but the run had written 5 when it wrote the checkpoint: blocks were "
                       r"added \(duplicated, or another run's\)"):
        resume(5)
    with pytest.raises(CheckpointError, match=r"holds 6 per-client block\(s\) of rounds < 2, "
                       "but the run had written 7 when it wrote the checkpoint: the file was "
                       "cut, emptied or replaced"):
        resume(7)
    client_path(path).write_bytes(_block_duplicated(made.arrows))
    with pytest.raises(CheckpointError, match="blocks were added"):
        resume(6)
    client_path(path).write_bytes(made.other)
    with pytest.raises(CheckpointError, match=r"belongs to another run .* \(refused to resume "
                       "into it"):
        resume(6)
    client_path(path).write_bytes(made.arrows)
    assert (path.read_bytes(), client_path(path).read_bytes()) == before  # nothing changed
    resume(6).close()
    assert [b.round for b in load(path).blocks] == [0, 0, 0, 1, 1, 1]


def test_a_resume_ignores_damage_in_the_rounds_it_drops(made: Made, tmp_path: Path) -> None:
    """A row of round 2 edited is refused by load, but a resume from round 2 drops it."""
    path = _copy(made, tmp_path)
    run_hash = load(path).engine["run_hash"]
    lines = _lines(path)
    k = len(lines) - 2  # the last row (round 2)
    row = json.loads(lines[k])
    row["value"] = -1.0
    lines[k] = json.dumps(row).encode()
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(ValueError, match="does not match its checksum"):
        load(path)
    with pytest.raises(CheckpointError, match="does not match its checksum"):
        Recorder(path, run="r", resume=True, resume_round=3, run_hash=run_hash)
    Recorder(path, run="r", resume=True, resume_round=2, run_hash=run_hash,
             expect_blocks=6).close()
    assert max(r["round"] for r in load(path)._rows) == 1


# ------------------------------------------------------------------ a user's files
def test_a_new_run_leaves_a_users_client_file_alone(tmp_path: Path) -> None:
    mine = tmp_path / "exp.clients.arrows"
    mine.write_bytes(b"my own notes")
    path = tmp_path / "exp.jsonl"
    with pytest.raises(OutputExistsError, match=r"exp\.clients\.arrows.* exists"):
        tf.run("dsgd", "ring", "digits", "logistic", 1, records_path=str(path), **RUN)
    with pytest.raises(OutputExistsError, match=rf"{mine} exists, but {path} does not: it is "
                       "not the client file of a run"):
        Recorder(path, run="r")
    assert mine.read_bytes() == b"my own notes" and not path.exists()
    tf.run("dsgd", "ring", "digits", "logistic", 1, records_path=str(path), overwrite=True,
           **RUN)
    assert [b.round for b in load(path).blocks] == [0, 0, 0]
    mine.unlink()
    mine.mkdir()
    with pytest.raises(OutputExistsError, match="is a folder where the run's client file goes"):
        Recorder(path, run="r", overwrite=True)


def test_copy_records_replaces_only_with_overwrite(made: Made, tmp_path: Path) -> None:
    src = _copy(made, tmp_path, "a")
    dst = tmp_path / "b.jsonl"
    copy_records(src, dst)
    assert load(dst).rows == load(src).rows
    with pytest.raises(OutputExistsError, match=rf"^{dst} exists; pass overwrite=True to "
                       "replace it"):
        copy_records(src, dst)
    lone = tmp_path / "c.jsonl"
    client_path(lone).write_bytes(b"mine")
    with pytest.raises(OutputExistsError, match=r"c\.clients\.arrows exists"):
        copy_records(src, lone)
    assert client_path(lone).read_bytes() == b"mine" and not lone.exists()
    bare = tmp_path / "bare.jsonl"
    shutil.copyfile(src, bare)  # a records file without its client file
    copy_records(bare, dst, overwrite=True)
    assert not client_path(dst).exists() and dst.read_bytes() == bare.read_bytes()
    with pytest.raises(TypeError, match="overwrite must be a bool, got str 'yes'"):
        copy_records(src, dst, overwrite="yes")  # type: ignore[arg-type]


# ------------------------------------------------------------------ older records
def test_records_written_before_the_checksums_load_as_then(made: Made, tmp_path: Path,
                                                           caplog: Any) -> None:
    import pyarrow as pa

    path = _copy(made, tmp_path)
    whole = _whole(made, tmp_path)
    lines = _lines(path)
    path.write_bytes(b"\n".join((unseal(ln) or (ln, ""))[0] for ln in lines))
    reader = pa.ipc.open_stream(made.arrows)  # then: no identity, no checksums, no count
    with pa.ipc.new_stream(str(client_path(path)), reader.schema.remove_metadata()) as w:
        for batch in reader:
            if batch.num_rows:
                w.write_batch(batch)
    with caplog.at_level(logging.INFO, logger="topofl.records"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            old = load(path)
    assert "no checksums: written before records carried them" in caplog.text
    assert old.rows == whole.rows and not old.cut


def test_final_of_a_per_client_metric_says_it_is_per_client(made: Made,
                                                            tmp_path: Path) -> None:
    r = _whole(made, tmp_path)
    with pytest.raises(KeyError, match=r"metric 'bytes_sent' of run 'r' is recorded per "
                       r"client, not as one value of the run: read per_client\('bytes_sent', "
                       "round\\)"):
        r.final("bytes_sent")
