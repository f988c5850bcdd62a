"""records.load reads what Recorder writes and refuses everything else with the file and line.

Rule under test: only a final line without its newline that does not parse (a crash mid-write)
is dropped; every other malformed line is a ValueError naming the file and the 1-based line.
"""

from __future__ import annotations

import json
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
