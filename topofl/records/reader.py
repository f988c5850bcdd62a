"""Reading run records: :func:`load` (one file) and :func:`load_many` (several, or a folder).

The reader accepts exactly what :class:`~topofl.records.Recorder` writes: a header line, then
one JSON object per row with the keys ``run, round, client, metric, value``; a final line cut
short by a crash is dropped and said so (:attr:`Records.cut`), anything else that is not a
valid line is refused with the file and the line.
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from topofl._utils.validation import check_path
from topofl.records._format import ROW_KEYS, _header_run_id, _value_problem, header_run_hash
from topofl.records._integrity import (
    Damage,
    DamagedRecordsWarning,
    Line,
    check_blocks,
    check_rows,
    identity_damage,
)
from topofl.records._seal import torn_seal, unseal
from topofl.records.columns import client_path, read_stream
from topofl.records.queries import Records

__all__ = ["load", "load_many", "DamagedRecordsWarning"]

_log = logging.getLogger("topofl.records")


def _row_error(p: Path, k: int, what: str) -> ValueError:
    return ValueError(f"{p}: line {k}: {what}")


def _parse_line(p: Path, k: int, raw: bytes) -> Any:
    """The JSON value of line ``k`` (1-based) of ``p``; ValueError naming both if it is none."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _row_error(
            p, k, f"is not UTF-8 text (byte {raw[exc.start]:#04x} at column {exc.start + 1})"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _row_error(p, k, f"is not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise _row_error(p, k, "is JSON nested too deeply to be a records row") from None


def _check_row(p: Path, k: int, obj: dict[str, Any]) -> None:
    missing = [key for key in ROW_KEYS if key not in obj]
    if missing:
        raise _row_error(p, k, f"misses the row keys {missing} (a row has {list(ROW_KEYS)})")
    for key, allow_none in (("round", False), ("client", True)):
        v = obj[key]
        if v is None and allow_none:
            continue
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            expected = "a non-negative int or null" if allow_none else "a non-negative int"
            raise _row_error(p, k, f"{key!r} must be {expected}, found {v!r}")
    for key in ("run", "metric"):
        if not isinstance(obj[key], str):
            raise _row_error(p, k, f"{key!r} must be a str, found {obj[key]!r}")
    problem = _value_problem(obj["value"])
    if problem is not None:
        shown = json.dumps(obj["value"])
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise _row_error(
            p, k, f"'value' of {obj['metric']!r} must be a number (or null, \"inf\", \"-inf\", "
            f"or a list of numbers), found {shown} (it {problem})")


def _cut_line(raw: bytes) -> bool:
    """Whether the final line ``raw`` (no newline after it) looks like a line of this format
    cut short by a crash mid-write: text that starts a JSON object. Anything else (binary
    bytes, other text) is not a records line at all."""
    if not raw.lstrip().startswith(b"{"):
        return False
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:  # only a character cut at the very end is a cut
        return exc.reason == "unexpected end of data"
    return True


def _check_header(p: Path, line: int, obj: dict[str, Any]) -> None:
    """Refuse a header row (line ``line`` of ``p``) whose ``config``, ``provenance`` or
    ``engine`` is not an object, or whose ``run`` is not a str."""
    for part in ("config", "provenance", "engine"):
        v = obj.get(part)
        if v is not None and not isinstance(v, dict):
            raise _row_error(
                p, line,
                f"the header's {part!r} must be an object, found {type(v).__name__}",
            )
    if "run" in obj and not isinstance(obj["run"], str):
        raise _row_error(p, line, f"the header's 'run' must be a str, found {obj['run']!r}")


def _check_kind(p: Path, line: int, obj: dict[str, Any],
                kinds: dict[str, tuple[bool, int]]) -> None:
    """Refuse a row whose value is a list for a metric an earlier row gave a number, or the
    reverse; ``kinds`` (metric -> (holds lists, first line)) remembers the first value."""
    v = obj["value"]
    if v is not None:  # a metric holds numbers, or lists (an edge list), never both
        is_list = isinstance(v, list)
        first = kinds.setdefault(obj["metric"], (is_list, line))
        if first[0] != is_list:
            now, then = ("a list", "a number") if is_list else ("a number", "a list")
            raise _row_error(
                p, line, f"'value' of {obj['metric']!r} is {now}, but line {first[1]} "
                f"holds {then} for it: a metric holds numbers or lists, not both")


def load(path: str | os.PathLike[str]) -> Records:
    """Read a JSONL records file written by :class:`Recorder`.

    The header row holds ``config`` (the resolved ``topofl.run`` keyword arguments) and, in
    files written since the schema has them, ``provenance`` and ``engine``; older files have
    only ``config`` (the engine's description). They become ``Records.config``,
    ``.provenance`` and ``.engine``, and ``configs[run]`` ... for each run id of the rows (the
    header's run id, or the file name, when the file has no rows).

    Every line must be a JSON object in UTF-8: the header ``{"header": true, "config": {...}}``
    (the first one is kept) or a row with the keys ``run`` (str), ``round`` (int ``>= 0``),
    ``client`` (int ``>= 0`` or null), ``metric`` (str) and ``value`` (a number, ``null``,
    ``"inf"``, ``"-inf"`` or a list of numbers such as an edge list).

    A file with a header holds one run: every row's ``run`` must be the run the header names
    (its ``run``, else its config's ``run_id``), or, when it names none, that of the first
    row. A row of another run id is corruption (one changed character would otherwise load as
    a run of its own).

    The run's per-client values written as columns, in the client file beside ``path``
    (:func:`~topofl.records.columns.client_path`), are read with it
    (:attr:`Records.blocks`; every query answers for them as for rows).

    A crash mid-write can only cut the *last* line short, and the writer ends every complete
    line with a newline: so a final line with no newline that does not parse, but starts a
    JSON object, is a partial row and is ignored (:attr:`Records.cut` says so). Anything else
    that does not parse -- an earlier line, a final line that ends with its newline, or bytes
    that are not the start of a JSON object -- is corruption and is refused, and so is a file
    with no complete line at all (empty, or a header cut short: not a run's records).

    **Checksums.** Records written since they carry them (:mod:`topofl.records._seal`) are
    checked, so that damage is never read as data nor taken for a crash's cut: the header's
    CRC, every row's link in the rows' chain (a row edited, removed, moved or duplicated
    breaks it there), the client file's run identity (another run's is refused), every
    block's CRC and number, and that it holds every block the rows count (a block removed,
    or one that cannot be read with complete rows or the stream's end after it, is damage,
    not a cut). What would leave data wrong or partly missing is refused; a client file
    that is missing, empty or a folder leaves every per-client value out, with a
    :class:`~topofl.records.DamagedRecordsWarning` naming the rounds. A final line or last
    block cut short by a crash, which no later row counts on, is still dropped and said so
    (:attr:`Records.cut`). Files written before the checksums are read as then (logged at
    INFO level: ``no checksums: written before records carried them``).

    Raises
    ------
    TypeError
        If ``path`` is not a str or path.
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If ``path`` is a directory or holds no complete line, or a line is not UTF-8, not
        JSON, not an object, or not a valid header or row; the message names the file and the
        line (1-based). If its client file is not one (the message names it). If the file or
        its client file does not match its checksums: the message names both files, the
        lines or blocks and their rounds.

    Warns
    -----
    DamagedRecordsWarning
        When its rows count per-client blocks but its client file is missing, empty or a
        folder (the message names the rows and rounds whose values are left out).

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "run.jsonl")
    >>> with open(path, "w") as fh:
    ...     _ = fh.write('{"run": "a", "round": 0, "client": null, "metric": "m", "value": 1}\\n')
    ...     _ = fh.write('{"run": "a", "round": 1, "cli')  # killed mid-write
    >>> r = tf.records.load(path)
    >>> len(r), r.cut
    (1, {'a': 29})
    >>> with open(path, "a") as fh:  # the cut row completed, then a bad one
    ...     _ = fh.write('ent": null, "metric": "m", "value": 2}\\n')
    ...     _ = fh.write('{"run": "a", "round": 3, "client": null, "metric": "m", "value": "x"}')
    >>> tf.records.load(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ...run.jsonl: line 3: 'value' of 'm' must be a number (or null, ...), found "x" ...

    A row edited by hand no longer matches its checksum:

    >>> with tf.records.Recorder(path, run="a") as rec:
    ...     rec.log_config({"rounds": 2})
    ...     for t in range(2):
    ...         rec.log("m", 0.5 * t, t)
    >>> text = open(path).read()
    >>> _ = open(path, "w").write(text.replace('"value": 0.5', '"value": 0.9'))
    >>> tf.records.load(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ...run.jsonl: line 3 (round 1, 'm') does not match its checksum: the row ...
    """
    records, damages = _read(path)
    report(damages)
    return records


def report(damages: Sequence[Damage], stacklevel: int = 3) -> None:
    """Raise the first damage that is refused (a ``ValueError``); warn of the others
    (:class:`~topofl.records.DamagedRecordsWarning`)."""
    for d in damages:
        if d.refuse:
            raise ValueError(d.message)
    for d in damages:
        warnings.warn(d.message, DamagedRecordsWarning, stacklevel=stacklevel)


def _read(path: str | os.PathLike[str]) -> tuple[Records, list[Damage]]:
    """:func:`load`'s records and the damages found (not raised: a resumed run decides by
    the rounds they touch); a file that is not records at all is refused as :func:`load`
    says."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__} {path!r}")
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{p} is a directory, expected a records file (.jsonl)")
    data = p.read_bytes()
    if not data.strip():
        raise ValueError(
            f"{p}: the file is empty ({len(data)} bytes): not a run's records (a run killed "
            "before it wrote its header leaves such a file)")
    lines = data.split(b"\n")
    # ``lines[-1]`` is what follows the last newline: empty for a complete file.
    partial = len(lines) - 1
    header: dict[str, Any] | None = None
    head: Line | None = None
    first: Line | None = None  # the first line: the file carries checksums if it does
    rows: list[dict[str, Any]] = []
    seals: list[Line] = []
    cut = 0
    owner: str | None = None  # the run id every row must carry (a file with a header)
    named_by = ""
    kinds: dict[str, tuple[bool, int]] = {}  # metric -> (holds lists, first line)
    for k, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            obj = _parse_line(p, k + 1, raw)
        except ValueError:
            if k == partial and k > 0 and _cut_line(raw):
                if first is not None and first.seal is not None and torn_seal(raw):
                    raise _row_error(
                        p, k + 1, f"{len(raw)} bytes without a newline that hold more than a "
                        "row cut short by a crash can (bytes after its checksum): the line is "
                        "damaged, not cut short") from None
                cut = len(raw)
                break  # a row cut short by a crash mid-write
            if k == partial and k == 0 and _cut_line(raw):
                raise _row_error(
                    p, 1, f"holds no complete line: {len(raw)} bytes cut short before the "
                    "first line (the header) was complete; not a run's records") from None
            raise
        if not isinstance(obj, dict):
            raise _row_error(p, k + 1, f"must be a JSON object, found {type(obj).__name__}")
        text, seal = unseal(raw) or (None, None)
        line = Line(k + 1, text, seal, obj.pop("crc", None) is not None)
        first = first or line
        if obj.get("header") is True:
            _check_header(p, k + 1, obj)
            if header is None:
                header, head = obj, line
                owner = obj.get("run") or _header_run_id(obj.get("config") or {},
                                                         obj.get("engine") or {})
                named_by = f"the header, line {k + 1}"
            continue
        _check_row(p, k + 1, obj)
        _check_kind(p, k + 1, obj, kinds)
        if header is not None:
            if owner is None:
                owner, named_by = obj["run"], f"its first row, line {k + 1}"
            elif obj["run"] != owner:
                raise _row_error(
                    p, k + 1, f"the row's run id {obj['run']!r} is not the run of this file, "
                    f"{owner!r} (named by {named_by}): a records file holds one run, so the "
                    "row is corrupt")
        rows.append(obj)
        seals.append(line)
    return _records(p, header or {}, head, rows, seals, cut)


def _records(p: Path, header: dict[str, Any], head: Line | None, rows: list[dict[str, Any]],
             seals: list[Line], cut: int) -> tuple[Records, list[Damage]]:
    """The :class:`Records` of file ``p`` read as ``header`` (empty: none; its line
    ``head``) and ``rows`` (their lines ``seals``), its final row ``cut`` short after that
    many bytes (0: none), with its client file; and the damages their checksums show."""
    config = dict(header.get("config") or {})
    provenance = dict(header.get("provenance") or {})
    engine = dict(header.get("engine") or {})
    runs = list(dict.fromkeys(r["run"] for r in rows))
    if not runs and header:
        runs = [header.get("run") or _header_run_id(config, engine) or p.stem]
    run_hash = header_run_hash(header) if header else None
    run = runs[0] if runs else p.stem
    sealed, damages, counts = check_rows(p, head, rows, seals, run, run_hash)
    columns = client_path(p)
    stream = read_stream(columns, run) if runs and columns.is_file() else None
    if sealed:
        state = "is a folder" if columns.is_dir() else "is missing"
        found, cut_values = check_blocks(p, columns, state, stream, rows, seals, counts, run,
                                         run_hash)
        damages += found
    else:
        if rows or header:
            _log.info("%s: no checksums: written before records carried them (topofl "
                      "0.1.0); read without checking them", p)
        cut_values = 0 if stream is None else stream.cut
        wrong = None if stream is None or not stream.sealed or run_hash is None else \
            identity_damage(p, columns, stream, run, run_hash)
        damages += [] if wrong is None else [wrong]
    blocks = [] if stream is None else stream.blocks
    # values written after the last row that survived (a crash between the two files) are
    # not part of the run's records: its rows say where it stopped
    blocks = [b for b in blocks if b.at <= len(rows)]
    out = Records(
        config=config, rows=rows, provenance=provenance, engine=engine,
        configs={run: config for run in runs},
        provenances={run: provenance for run in runs},
        engines={run: engine for run in runs}, blocks=blocks,
    )
    out.sources = {run: str(p) for run in runs}
    if cut or cut_values:
        out.cut = {run: cut + cut_values for run in runs}
    return out, damages


def load_many(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], *, rename: bool = False,
    on_error: str = "raise",
) -> Records:
    """Load several records files (or every ``*.jsonl`` of a folder) into one :class:`Records`.

    Every run keeps its own header (``configs[run]``, ``provenances[run]``, ``engines[run]``);
    queries then need ``run=`` (or :meth:`Records.summary_table` answers for all).

    Parameters
    ----------
    paths : path or iterable of paths
        Files, or one folder whose ``*.jsonl`` files are read in name order.
    rename : bool, default False
        Two files holding the same run id are an error by default. With ``rename=True`` the
        later occurrences are renamed ``"<run>@<path>"`` (the path as given), in their rows
        and header entries.
    on_error : {"raise", "skip"}, default "raise"
        A file :func:`load` refuses (empty, cut before its header, corrupt) is an error; with
        ``"skip"`` it is left out and named, with the reason, in :attr:`Records.unreadable`.

    Raises
    ------
    TypeError
        If ``paths`` is neither a path nor an iterable of paths (``None``), or one of its
        entries is not a path.
    ValueError
        If two files hold the same run id (and ``rename`` is false), a folder holds no
        ``*.jsonl`` file, or (``on_error="raise"``) a file is not a valid records file.

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> for name, vals in (("ring", [0.2, 0.5]), ("complete", [0.6, 0.9])):
    ...     with tf.records.Recorder(os.path.join(d, name + ".jsonl"), run=name) as rec:
    ...         rec.log_config({"topology": name, "seed": 0})
    ...         for t, v in enumerate(vals):
    ...             rec.log("acc", v, t)
    >>> r = tf.records.load_many(d)
    >>> r.runs, r.configs["ring"]["topology"]
    (['complete', 'ring'], 'ring')
    >>> r.final("acc", run="ring"), r.rounds_to(0.8, "acc", run="complete")
    (0.5, 2)
    """
    if isinstance(paths, (str, os.PathLike)):
        p = Path(paths)
        if p.is_dir():
            files = sorted(p.glob("*.jsonl"))
            if not files:
                raise ValueError(f"no *.jsonl records files in the folder {p}")
        else:
            files = [p]
    elif isinstance(paths, bytes) or not isinstance(paths, Iterable):
        raise TypeError(f"paths must be a path (str or os.PathLike) or an iterable of paths, "
                        f"got {type(paths).__name__} {paths!r}"[:300])
    else:
        files = [Path(check_path(f, f"paths[{i}]", optional=False))
                 for i, f in enumerate(paths)]
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    out = Records()
    origin: dict[str, Path] = {}
    for f in files:
        if on_error == "skip":
            try:
                r = load(f)
            except (ValueError, OSError) as exc:
                out.unreadable[str(f)] = str(exc)
                continue
        else:
            r = load(f)
        rename_map: dict[str, str] = {}
        for run in r.runs:
            if run in origin:
                if not rename:
                    raise ValueError(
                        f"run id {run!r} is in both {origin[run]} and {f}; load them "
                        "separately, or pass rename=True to rename the later one "
                        f"{run + '@' + str(f)!r}"
                    )
                rename_map[run] = f"{run}@{f}"
        for run in r.runs:
            new = rename_map.get(run, run)
            origin[new] = f
            out.configs[new] = r.configs.get(run, {})
            out.provenances[new] = r.provenances.get(run, {})
            out.engines[new] = r.engines.get(run, {})
            out.sources[new] = str(f)
            if run in r.cut:
                out.cut[new] = r.cut[run]
        shift = len(out._rows)
        out._blocks.extend(b.renamed(rename_map.get(b.run, b.run), shift) for b in r._blocks)
        out._rows.extend(
            {**row, "run": rename_map[row["run"]]} if row["run"] in rename_map else row
            for row in r._rows
        )
    return out
