"""records.load reads what Recorder writes and refuses everything else with the file and line.

Rule under test: only a final line without its newline that does not parse (a crash mid-write)
is dropped; every other malformed line is a ValueError naming the file and the 1-based line.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topofl.records import Recorder, load

GOOD = {"run": "r", "round": 0, "client": None, "metric": "m", "value": 0.5}


def _write(tmp_path: Path, lines: list[bytes], *, final_newline: bool = True) -> Path:
    p = tmp_path / "run.jsonl"
    data = b"\n".join(lines) + (b"\n" if final_newline else b"")
    p.write_bytes(data)
    return p


def _row(**kw: object) -> bytes:
    return json.dumps({**GOOD, **kw}).encode()


def test_roundtrip_with_recorder(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with Recorder(path, run="x") as rec:
        rec.log_config({"rounds": 2, "lr": 0.1})
        rec.log("acc", 0.5, 0)
        rec.log_clients("acc_c", [0.1, 0.2], 1)
        rec.log("loss", float("inf"), 1)
    r = load(path)
    assert r.config == {"rounds": 2, "lr": 0.1}
    assert [(x["round"], x["client"], x["metric"], x["value"]) for x in r.rows] == [
        (0, None, "acc", 0.5), (1, 0, "acc_c", 0.1), (1, 1, "acc_c", 0.2), (1, None, "loss", "inf")
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"[1, 2]", "must be a JSON object, found list"),
        (b"42", "must be a JSON object, found int"),
        (b'"text"', "must be a JSON object, found str"),
        (b"null", "must be a JSON object, found NoneType"),
        (b"\xff\xfe{}", "is not UTF-8 text (byte 0xff at column 1)"),
        (_row(round="abc"), "'round' must be a non-negative int, found 'abc'"),
        (_row(round=1.0), "'round' must be a non-negative int, found 1.0"),
        (_row(round=-3), "'round' must be a non-negative int, found -3"),
        (_row(round=True), "'round' must be a non-negative int, found True"),
        (_row(client=1.5), "'client' must be a non-negative int or null, found 1.5"),
        (_row(client="0"), "'client' must be a non-negative int or null, found '0'"),
        (_row(run=3), "'run' must be a str, found 3"),
        (_row(metric=None), "'metric' must be a str, found None"),
        (b'{"run": "r", "round": 0}', "misses the row keys ['client', 'metric', 'value']"),
        (b'{"header": true, "config": [1]}', "the header's 'config' must be an object"),
        (b'{"run": "r", "round": 0, ', "is not valid JSON"),
        (b"[" * 100_000, "line 2:"),
    ],
)
@pytest.mark.parametrize("position", ["middle", "last"])
def test_bad_line_is_named(tmp_path: Path, line: bytes, message: str, position: str) -> None:
    lines = [b'{"header": true, "config": {}}', line] + ([_row()] if position == "middle" else [])
    # With its newline the last line is complete: a bad one is corruption, not a crash.
    p = _write(tmp_path, lines, final_newline=True)
    with pytest.raises(ValueError) as info:
        load(p)
    msg = str(info.value)
    assert msg.startswith(f"{p}: line 2: "), msg
    assert message in msg


def test_partial_last_line_is_ignored_only_at_the_end(tmp_path: Path) -> None:
    full = _row(round=1)
    for cut in (1, 10, len(full) - 1):
        p = _write(tmp_path, [_row(), full[:cut]], final_newline=False)
        r = load(p)
        assert [x["round"] for x in r.rows] == [0]
        # The same cut line followed by more lines is corruption.
        p = _write(tmp_path, [_row(), full[:cut], _row(round=2)])
        with pytest.raises(ValueError, match=r"line 2: is not valid JSON"):
            load(p)
    # A complete last line without its newline is a row.
    p = _write(tmp_path, [_row(), full], final_newline=False)
    assert [x["round"] for x in load(p).rows] == [0, 1]


def test_path_errors(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="path must be a str or os.PathLike, got int"):
        load(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="is a directory"):
        load(tmp_path)
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "missing.jsonl")


@settings(max_examples=60, deadline=None)
@given(junk=st.binary(min_size=1, max_size=40))
def test_random_bytes_give_value_error_or_rows(tmp_path_factory: pytest.TempPathFactory,
                                               junk: bytes) -> None:
    p = tmp_path_factory.mktemp("j") / "r.jsonl"
    p.write_bytes(_row() + b"\n" + junk + b"\n" + _row(round=5) + b"\n")
    try:
        r = load(p)
    except ValueError as exc:
        assert str(exc).startswith(str(p))
    else:
        # Junk that loads must have been blank or a valid row: the good rows are never lost.
        assert [x["round"] for x in r.rows][0] == 0 and r.rows[-1]["round"] == 5


# ------------------------------------------------------------------ issue 23: items 4 and 10
@pytest.mark.parametrize("value", ['"x"', "{}", '{"a": 1}', '"0.5"', '[1, "x"]', '[[[[[1]]]]]'])
def test_a_value_that_is_not_a_number_names_the_file_and_line(tmp_path: Path,
                                                               value: str) -> None:
    # before: "value": "x" loaded and .final() was NaN; {} made .rounds_to() None
    head = b'{"header": true, "run": "r", "config": {"rounds": 2}}'
    row = b'{"run": "r", "round": 1, "client": null, "metric": "acc", "value": ' + value.encode()
    p = _write(tmp_path, [head, _row(metric="acc"), row + b"}"])
    with pytest.raises(ValueError, match=rf"^{p}: line 3: 'value' of 'acc' must be a number"):
        load(p)


def test_values_the_writer_stores_load(tmp_path: Path) -> None:
    import torch

    path = tmp_path / "r.jsonl"
    with Recorder(path, run="r") as rec:
        rec.log_config({"rounds": 1})
        for k, v in enumerate([0.5, 3, True, None, float("inf"), float("-inf"), float("nan"),
                               [[0, 1], [1, 0]], [0.25, None], torch.tensor(0.5),
                               torch.tensor([1, 2])]):
            rec.log(f"m{k}", v, 0)
    r = load(path)
    assert r.final("m0") == 0.5 and r.final("m4") == float("inf") and r.final("m5") < 0
    assert r.to_rows()[7]["value"] == [[0, 1], [1, 0]] and r.final("m9") == 0.5


@pytest.mark.parametrize("bad", ["x", {}, {"a": 1}, object(), [1, "x"]])
def test_the_writer_refuses_what_load_would(tmp_path: Path, bad: object) -> None:
    with Recorder(tmp_path / "r.jsonl", run="r") as rec, \
            pytest.raises(TypeError, match="the value of 'acc' must be a number"):
        rec.log("acc", bad, 0)


def test_in_memory_values_that_are_not_numbers_are_named() -> None:
    from topofl.records import Records

    r = Records(rows=[{"run": "a", "round": 3, "client": None, "metric": "acc", "value": "x"},
                      {"run": "a", "round": 3, "client": None, "metric": "e",
                       "value": [[0, 1]]}])
    with pytest.raises(ValueError, match=r"'acc' of run 'a' at round 3 is not a number: 'x'"):
        r.final("acc")
    with pytest.raises(ValueError, match=r"'acc' of run 'a' at round 3 is not a number"):
        r.rounds_to(0.5, "acc")
    with pytest.raises(ValueError, match=r"'e' .* is not a number: \[\[0, 1\]\] \(a list\)"):
        r.series("e")


def test_final_and_best_say_why_they_are_nan() -> None:
    from topofl.records import Records

    rows = [{"run": "a", "round": t, "client": None, "metric": "g", "value": None}
            for t in range(3)]
    r = Records(rows=rows)
    with pytest.warns(RuntimeWarning, match=r"'g' of run 'a' is NaN .* at its last recorded"):
        assert math.isnan(r.final("g"))
    with pytest.warns(RuntimeWarning, match=r"at all 3 of its recorded rounds"):
        assert math.isnan(r.best("g"))


@pytest.mark.parametrize("where", [2, 6, 9])
def test_a_character_inserted_in_a_run_id_is_not_a_new_run(tmp_path: Path, where: int) -> None:
    # before: the changed row loaded as a phantom run of its own
    path = tmp_path / "r.jsonl"
    with Recorder(path, run="dsgd-ring") as rec:
        rec.log_config({"rounds": 3})
        for t in range(3):
            rec.log("acc", 0.1 * t, t)
    lines = path.read_bytes().split(b"\n")
    i = lines[2].index(b"dsgd-ring") + where
    lines[2] = lines[2][:i] + b"x" + lines[2][i:]
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(ValueError, match=rf"^{path}: line 3: the row's run id .* is not the "
                       r"run of this file, 'dsgd-ring' \(named by the header, line 1\)"):
        load(path)


def test_a_file_whose_header_names_no_run_holds_the_run_of_its_first_row(
        tmp_path: Path) -> None:
    p = _write(tmp_path, [b'{"header": true, "config": {}}', _row(run="a"), _row(run="b")])
    with pytest.raises(ValueError, match=r"line 3: the row's run id 'b' is not the run of this "
                       r"file, 'a' \(named by its first row, line 2\)"):
        load(p)
    # without a header (rows only, not a run's file) several runs may share a file
    p = _write(tmp_path, [_row(run="a"), _row(run="b")])
    assert load(p).runs == ["a", "b"]


@pytest.mark.parametrize("content", [
    bytes(range(256)) * 4,                    # binary, newlines included
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",  # a picture
    b"\x00\x01\x02\x03",                      # binary without a newline: not "a cut row"
    b'{"header": true, "run": "r", "conf',    # half a header
    b"",                                      # empty
    b"\n\n",
])
def test_a_file_that_is_not_records_is_refused(tmp_path: Path, content: bytes) -> None:
    # before: a binary file (or an empty one, or half a header) loaded as 0 rows
    p = tmp_path / "r.jsonl"
    p.write_bytes(content)
    with pytest.raises(ValueError, match=rf"^{p}: "):
        load(p)


def test_binary_bytes_after_the_last_newline_are_not_a_cut_row(tmp_path: Path) -> None:
    p = _write(tmp_path, [b'{"header": true, "run": "r", "config": {}}', _row(run="r")],
               final_newline=True)
    good = p.read_bytes()
    p.write_bytes(good + b"\xff\xd8\xff\xe0 JFIF")
    with pytest.raises(ValueError, match=r"line 3: is not UTF-8"):
        load(p)
    p.write_bytes(good + b'{"run": "r", "rou')  # a real cut row
    assert load(p).cut == {"r": 17}


def test_status_tells_finished_from_interrupted_runs(tmp_path: Path) -> None:
    import topofl as tf

    path = tmp_path / "r.jsonl"
    tf.run("dsgd", topology="ring", data="digits", n_clients=4, partition="iid", rounds=4,
           eval_every=2, lr=0.5, batch_size=8, seed=0, records_path=str(path))
    s = load(path).status()
    assert (s.complete, s.rounds, s.planned, s.reason) == (True, 4, 4, "")
    full = path.read_bytes()
    path.write_bytes(full[: len(full) // 2])  # a run killed half way
    s = load(path).status()
    assert s.complete is False and s.planned == 4 and s.rounds <= 2
    assert "line cut short" in s.reason or "rows end after round 2 of the 4" in s.reason
    lines = full.split(b"\n")
    path.write_bytes(b"\n".join(ln for ln in lines if b'"round": 3,' not in ln))
    s = load(path).status()
    # the last evaluation's rows are gone; rows of round 2 remain (the per-round ledger rows)
    assert s.complete is False and s.rounds == 3 and s.reason == (
        "its rows end after round 3 of the 4 its header plans")
