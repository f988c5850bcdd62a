"""Writing run records: :class:`Recorder` appends one JSON line per row and flushes every round;
per-client values go as columns to the client file beside it (:mod:`topofl.records.columns`).

Every line carries a checksum and the client file the run's identity and a checksum per
block (:mod:`topofl.records._seal`); a block is handed to the operating system before the row
after it, so a crash leaves a prefix of each file. A resumed run's recorder first checks the
file it continues (:func:`_resumable`: a complete header of the same run hash, rows of this
run only, every round the checkpoint covers, no damage to the rounds it keeps, exactly the
blocks the checkpoint counted), then drops the rows the resumed run writes again; the files
are rewritten atomically and durably.
"""

from __future__ import annotations

import bisect
import json
import math
import os
import tempfile
import weakref
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from topofl._utils.files import replace_text
from topofl._utils.runhash import header_hash_problem
from topofl.exceptions import CheckpointError
from topofl.records._format import _header_run_id, _value_problem, header_run_hash
from topofl.records._integrity import Damage
from topofl.records._seal import seal_header, seal_row, seed, unseal
from topofl.records.columns import (
    ClientBlock,
    ClientWriter,
    claim_client_file,
    client_path,
    identity,
    read_blocks,
    write_blocks,
)
from topofl.records.queries import Records
from topofl.records.reader import _read

__all__ = ["Recorder", "header_run_hash", "SPILL_BYTES"]

#: Bytes of per-client values a recorder without a file holds in memory; beyond them it moves
#: them to a temporary client file, read in place, and removed when it closes (so a run's
#: memory stays flat in its evaluations without a ``records_path`` too).
SPILL_BYTES = 64 * 2**20


def jsonable(value: Any) -> Any:
    """``value`` as a header stores it: mappings, lists and tuples element by element, NumPy
    and torch numbers and arrays as Python numbers and lists, infinities as ``"inf"`` and
    ``"-inf"``, NaN as ``None``, anything else not JSON as its ``repr``."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if type(value).__module__.split(".")[0] == "torch" and hasattr(value, "tolist"):
        return jsonable(value.tolist())  # a tensor: its number(s)
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


class Recorder:
    """Append rows to a JSONL file (and keep them in memory).

    Parameters
    ----------
    path : str or Path or None
        File to write; ``None`` keeps the rows in memory only. Without ``resume`` an existing
        file is replaced. With ``resume`` the file must exist: it is checked first (a complete
        header line, the run hash, the rows, their checksums), then its rows of rounds
        ``>= resume_round`` are dropped (the resumed run writes them again, so each round is
        written once) and the rest is kept. The per-client values of :meth:`log_clients` go
        to the client file beside it (:func:`~topofl.records.columns.client_path`), which is
        replaced with an existing records file, cut and kept alike (one beside no records
        file is not this run's: refused without ``overwrite``); in memory (``path``
        ``None``) they are kept as arrays, up to :data:`SPILL_BYTES`, then in a temporary
        client file removed when the recorder closes.
    run : str
        Run identifier stored in every row.
    resume : bool, default False
    resume_round : int, optional
        With ``resume``, keep only the rows of rounds ``< resume_round``.
    run_hash : str, optional
        With ``resume``, the header must carry this run hash (``engine.run_hash``, or
        ``config.run_hash`` in a header without an engine part): a file of another run is
        refused, never appended to.
    expect_rounds : collection of int, optional
        With ``resume``, rounds the file must have rows of (those the checkpoint's run
        evaluated): a file cut short or replaced is refused, not silently continued.
    expect_blocks : int, optional
        With ``resume``, how many per-client blocks of rounds ``< resume_round`` the client
        file must hold (:attr:`client_blocks` when the checkpoint was written): a client file
        cut short, emptied or replaced is refused, not continued with values missing (nor
        with blocks the checkpoint did not count).
    overwrite : bool, default False
        Without ``resume``: replace a client file found where this run's goes while no
        records file is at ``path`` (without it that is an error: the file is not this
        run's).

    Attributes
    ----------
    client_blocks : int
        The per-client blocks this recorder holds (:meth:`log_clients` calls, those a resumed
        run kept included); a checkpoint stores it as ``expect_blocks`` of its resume.

    Raises
    ------
    CheckpointError
        With ``resume``: the file does not exist, its first line is not a complete header,
        the header's run hash is not ``run_hash``, it holds rows of another run id, it has
        no row of one of ``expect_rounds``, its client file holds another number of blocks
        than ``expect_blocks`` or is another run's, or it is not a valid records file or is
        damaged in the rounds it keeps (the message of :func:`load`, naming the lines or
        blocks). Nothing is changed on disk then.
    topofl.exceptions.OutputExistsError
        Without ``resume``: a client file (or a folder) is where this run's goes, beside no
        records file, and ``overwrite`` is false.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "run.jsonl")
    >>> with tf.records.Recorder(path, run="a") as rec:
    ...     rec.log_config({"rounds": 3, "run_hash": "0123456789abcdef"})
    ...     rec.log("acc", 0.5, 0)
    >>> tf.records.Recorder(path, run="a", resume=True, resume_round=1,
    ...                     run_hash="fedcba9876543210")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topofl.exceptions.CheckpointError: records file ...run.jsonl holds another run ...
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        *,
        run: str = "run",
        resume: bool = False,
        resume_round: int | None = None,
        run_hash: str | None = None,
        expect_rounds: Collection[int] | None = None,
        expect_blocks: int | None = None,
        overwrite: bool = False,
    ) -> None:
        self.run = str(run)
        if path is not None and Path(path).name in ("", ".", ".."):
            raise ValueError(f"path must name a records file (such as 'runs/run.jsonl'), got "
                             f"{str(path)!r}")
        self.path = None if path is None else Path(path)
        self.rows: list[dict[str, Any]] = []
        self.config: dict[str, Any] = {}
        self.provenance: dict[str, Any] = {}
        self.engine: dict[str, Any] = {}
        self.blocks: list[ClientBlock] = []  # per-client values, in memory (no path)
        self._fh: IO[str] | None = None
        self._columns: ClientWriter | None = None
        self._spill: str | None = None  # no path: the temporary client file, once spilled
        self._held = 0
        self._closed: list[ClientBlock] | None = None
        self._header_line: str | None = None  # resumed: the header as it is on disk
        self.client_blocks = 0
        self._chain: int | None = None  # the last row's CRC (None: no row yet)
        self._block_at: list[int] = []  # the place of every block among the rows
        self._unflushed = False  # a block not yet handed to the operating system
        if self.path is None:
            return
        columns = client_path(self.path)
        if not resume:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            claim_client_file(self.path, overwrite=overwrite)  # not another's: refused
            self._fh = open(self.path, "w", encoding="utf-8")  # noqa: SIM115
            self._columns = ClientWriter(columns)
            return
        # resume: check everything before the file is touched
        first, old, damages = _resumable(self.path, self.run, run_hash, expect_rounds)
        kept = [b for b in old._blocks if resume_round is None or b.round < resume_round]
        _check_blocks(self.path, len(kept), expect_blocks, resume_round)
        for d in damages:  # what is dropped anyway (rounds >= resume_round) may be damaged
            if d.missing and expect_blocks is not None:
                continue  # the blocks before resume_round are all there: counted
            if d.since is None or resume_round is None or d.since < resume_round:
                raise CheckpointError(f"{d.message} (refused to resume into it: restore the "
                                      "file or start the run anew)")
        self.config = dict(old.config)
        self.provenance = dict(old.provenance)
        self.engine = dict(old.engine)
        keep = [r for r in old._rows if resume_round is None or int(r["round"]) < resume_round]
        self._block_at = [b.at for b in kept]
        self._rewrite(first, keep)
        self.rows = keep
        self._header_line = first
        self._columns = ClientWriter(columns, self._identity())
        if columns.exists():
            write_blocks(columns, kept, keep_open=self._columns, identity=self._identity())
        self.client_blocks = len(kept)

    def _reidentify(self) -> None:
        """Rewrite the client file with this run's identity (its header's run hash changed:
        a resumed recorder given another engine description)."""
        cols = self._columns
        if cols is None or self._spill is not None or not cols.path.exists():
            return
        cols.close()
        write_blocks(cols.path, read_blocks(cols.path, self.run)[0], keep_open=cols,
                     identity=self._identity())

    def _run_hash(self) -> str | None:
        return header_run_hash({"config": self.config, "engine": self.engine})

    def _identity(self) -> dict[bytes, bytes]:
        """The client file's schema metadata: this run's id and run hash."""
        return identity(self.run, self._run_hash())

    def _sealed(self, row: Mapping[str, Any], blocks: int) -> str:
        """``row`` as its line (no newline), chained after the rows before it."""
        prev = seed(self.run, self._run_hash()) if self._chain is None else self._chain
        line, self._chain = seal_row(json.dumps(row), blocks, prev)
        return line

    def _rewrite(self, header: str, rows: list[dict[str, Any]]) -> None:
        """Replace the file by ``header`` (its text without checksum) and ``rows``, their
        checksums computed anew (atomically, durably); append after."""
        assert self.path is not None
        if self._fh is not None:
            self._fh.close()
        self._chain = None
        lines = [seal_header(header) + "\n"]
        for i, r in enumerate(rows):
            lines.append(self._sealed(r, bisect.bisect_right(self._block_at, i)) + "\n")
        replace_text(self.path, lines)
        self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115

    def log_config(self, config: Mapping[str, Any], *,
                   provenance: Mapping[str, Any] | None = None,
                   engine: Mapping[str, Any] | None = None) -> None:
        """Write the header row (once, before any row).

        ``{"header": true, "run": RUN, "config": config, "provenance": ..., "engine": ...}``:
        ``run`` is the run id every row carries (:func:`load` checks it), ``config`` is the
        run's resolved configuration, ``provenance`` where it comes from (versions, commit,
        command line, start time) and ``engine`` the engine's own description (checked on
        resume); the last two are left out when ``None``.

        A resumed recorder keeps the header on disk as it is when ``config`` and ``engine``
        are those stored; when they differ (only in what does not change the numbers, which
        the run hash checked: more ``rounds``, a moved run folder ...) the header takes the
        new ``config`` and ``engine`` and keeps the stored provenance.
        """
        new_config = jsonable(dict(config))
        new_engine = None if engine is None else jsonable(dict(engine))
        if self._header_line is not None:  # resumed
            if new_config == self.config and (new_engine is None or new_engine == self.engine):
                return
            before = self._run_hash()
            self.config = new_config
            if new_engine is not None:
                self.engine = new_engine
            head: dict[str, Any] = {"header": True, "run": self.run, "config": self.config}
            if self.provenance:
                head["provenance"] = self.provenance
            if self.engine:
                head["engine"] = self.engine
            self._header_line = json.dumps(head)
            self._rewrite(self._header_line, self.rows)
            if self._run_hash() != before:
                self._reidentify()
            return
        self.config = new_config
        if provenance is not None:
            self.provenance = jsonable(dict(provenance))
        if new_engine is not None:
            self.engine = new_engine
        if self._fh is not None:
            if self.rows or self._fh.tell() > 0:
                return  # the header is already there
            head = {"header": True, "run": self.run, "config": self.config}
            if provenance is not None:
                head["provenance"] = self.provenance
            if engine is not None:
                head["engine"] = self.engine
            self._fh.write(seal_header(json.dumps(head)) + "\n")
            self._fh.flush()

    def log(self, metric: str, value: Any, round: int, client: int | None = None) -> None:
        """Record one value. Non-finite floats are stored as ``null``/``"inf"``.

        ``value`` is a number (numpy and torch scalars included), ``None``, or a (nested)
        list of numbers such as an edge list; anything else is a ``TypeError`` (a records file
        holds numbers, and :func:`load` refuses a row that does not).
        """
        stored = jsonable(value)
        problem = _value_problem(stored)
        if problem is not None:
            raise TypeError(
                f"the value of {metric!r} must be a number (or None, inf, or a list of "
                f"numbers), got {type(value).__name__} {value!r}"[:300])
        row = {
            "run": self.run,
            "round": int(round),
            "client": None if client is None else int(client),
            "metric": str(metric),
            "value": stored,
        }
        self.rows.append(row)
        if self._fh is not None:
            if self._unflushed:  # the blocks before it reach the system before the row
                assert self._columns is not None
                self._columns.flush()
                self._unflushed = False
            self._fh.write(self._sealed(row, self.client_blocks) + "\n")

    def log_many(self, values: Mapping[str, Any], round: int, client: int | None = None) -> None:
        """Record several metrics of one round."""
        for k, v in values.items():
            self.log(k, v, round, client)

    def log_clients(self, metric: str, values: Sequence[float] | np.ndarray, round: int) -> None:
        """Record one value per client (client ``i``'s is ``values[i]``; ``None`` or NaN:
        none): one :class:`~topofl.records.columns.ClientBlock`, written to the client file
        (or kept in memory without a path) in one copy.

        Raises
        ------
        TypeError
            If ``values`` is not a flat sequence of numbers (or ``None``).
        """
        try:
            arr = np.array(values)
            arr = arr.astype(np.int64 if arr.dtype.kind in "iu" else np.float64)
        except (TypeError, ValueError):
            arr = None
        if arr is None or arr.ndim != 1 or isinstance(values, (str, bytes, Mapping)):
            shown = repr(values)
            raise TypeError(f"the values of {metric!r} must be a flat sequence of numbers (one "
                            f"a client), got {type(values).__name__} "
                            f"{shown if len(shown) <= 80 else shown[:77] + '...'}")
        block = ClientBlock(self.run, str(metric), int(round), len(self.rows), arr)
        self.client_blocks += 1
        if self._columns is not None:
            if self._columns.count == 0:
                self._columns.identity = self._identity()
            self._columns.write(block)
            self._block_at.append(block.at)
            self._unflushed = True
            return
        self.blocks.append(block)
        self._held += arr.nbytes
        if self._held > SPILL_BYTES and self.path is None:
            fd, name = tempfile.mkstemp(prefix="topofl-clients-", suffix=".arrows")
            os.close(fd)
            weakref.finalize(self, _unlink, name)
            self._spill, self._columns = name, ClientWriter(name, self._identity())
            for b in self.blocks:
                self._columns.write(b)
            self.blocks = []

    def flush(self, *, sync: bool = True) -> None:
        """Flush to disk (the engine calls it after every round: with ``sync=False``, except
        before a checkpoint and at the end); ``sync=False`` hands the rows to the operating
        system without waiting for the disk (:meth:`sync` then does)."""
        if self._fh is not None:
            self._fh.flush()
            if sync:
                os.fsync(self._fh.fileno())
        if self._columns is not None:
            self._columns.flush()
            if sync and self._spill is None:
                self._columns.sync()

    def sync(self) -> None:
        """Wait until the rows flushed so far are on the disk (``os.fsync``). Another thread
        may call it while this one writes rows (a stacked pass's file writes do)."""
        fh = self._fh
        if fh is not None:
            os.fsync(fh.fileno())
        if self._columns is not None and self._spill is None:
            self._columns.sync()

    def close(self) -> None:
        """Flush and close the file."""
        if self._fh is not None:
            self._fh.flush()
            self._fh.close()
            self._fh = None
        if self._columns is not None:
            self._columns.close()
        if self._spill is not None and self._closed is None:  # read in place, then removed
            self._closed = read_blocks(self._spill, self.run)[0]
            _unlink(self._spill)

    def records(self) -> Records:
        """The rows written so far, as :class:`Records` (the per-client values of a file
        read from its client file in place, not copied)."""
        blocks = self.blocks if self._closed is None else self._closed
        if self._columns is not None and self._closed is None:
            self._columns.flush()
            there = self._columns.path.exists()
            blocks = read_blocks(self._columns.path, self.run)[0] if there else []
        return Records(rows=list(self.rows), configs={self.run: dict(self.config)},
                       provenances={self.run: dict(self.provenance)},
                       engines={self.run: dict(self.engine)}, blocks=list(blocks))

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _resumable(path: Path, run: str, run_hash: str | None,
               expect_rounds: Collection[int] | None) -> tuple[str, Records, list[Damage]]:
    """The header line (its text without checksum), the records of a file a resumed run may
    continue, or raise; and the damage its checksums show (refused by the caller where it
    touches the rounds the run keeps)."""
    what = f"records file {path}"
    if not path.exists():
        rows = "" if not expect_rounds else f" and its rows of rounds 0..{max(expect_rounds)}"
        raise CheckpointError(
            f"{what} does not exist, but the run to resume wrote its header{rows} there: "
            "restore the file (or the run folder) and resume again, or start the run anew")
    if path.is_dir():
        raise CheckpointError(f"{what} is a folder, expected the run's .jsonl file")
    with open(path, "rb") as fh:
        raw = fh.readline()
    head: Any = None
    if raw.endswith(b"\n"):
        try:
            head = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            head = None
    if not isinstance(head, dict) or head.get("header") is not True:
        shown = raw[:60].decode("utf-8", "replace")
        raise CheckpointError(
            f"{what} does not start with a complete header line (found {shown!r}"
            f"{'...' if len(raw) > 60 else ''}): it is not this run's records, or it was cut "
            "short; restore it or start the run anew")
    stored = header_run_hash(head)
    if run_hash is not None and stored == run_hash:  # accepted by its hash: check the hash
        why = header_hash_problem(head)
        if why is not None:
            raise CheckpointError(f"{what}: {why}; it is not continued: restore it or start "
                                  "the run anew")
    if run_hash is not None and stored != run_hash:
        found = ("a header without a run hash (written by an older topofl, or not by a run)"
                 if stored is None else f"run hash {stored}")
        rid = _header_run_id(head.get("config") or {}, head.get("engine") or {})
        raise CheckpointError(
            f"{what} holds another run ({found}"
            + (f", run id {rid!r}" if rid is not None else "")
            + f"), not the run of the checkpoint (run hash {run_hash}): its rows would mix "
            "with this run's; give this run its own records_path, or resume with the records "
            "file the checkpoint was written with")
    try:
        old, damages = _read(path)
    except ValueError as exc:  # corrupt: nothing may be appended to it
        raise CheckpointError(f"{exc} (refused to resume into it: restore the file or start "
                              "the run anew)") from None
    others = sorted({r["run"] for r in old._rows} - {run})
    if others:
        raise CheckpointError(
            f"{what} holds rows of the run id(s) {others}, expected only {run!r}: not this "
            "run's records file")
    _check_client_file(path, head, old)
    have = {int(r["round"]) for r in old._rows}
    lost = sorted(set(expect_rounds or ()) - have)
    if lost:
        shown = ", ".join(map(str, lost[:8])) + (", ..." if len(lost) > 8 else "")
        has = "no rows" if not have else f"rows of rounds {min(have)}..{max(have)}"
        raise CheckpointError(
            f"{what} has {has} but none of the round(s) {shown}, which the checkpoint covers "
            "(evaluated before it): rows are missing (the file was cut or replaced); restore "
            "it or start the run anew")
    line = raw.rstrip(b"\n")
    return (unseal(line) or (line, ""))[0].decode("utf-8"), old, damages


def _check_client_file(path: Path, head: dict[str, Any], old: Records) -> None:
    """Refuse to resume a run that recorded per-client values whose client file is gone (a
    records file copied or moved without it): its values of the rounds before would be
    silently missing."""
    declared = [part.get("record_clients") for part in
                (head.get("config"), (head.get("engine") or {}).get("run"))
                if isinstance(part, Mapping)]
    if True not in declared or client_path(path).exists() or old._blocks:
        return
    if any(r["client"] is not None for r in old._rows):  # the format before the columns
        return
    evaluated = {r["round"] for r in old._rows if str(r["metric"]).startswith("test_acc")}
    if evaluated:
        raise CheckpointError(
            f"records file {path} belongs to a run that recorded per-client values, but their "
            f"client file {client_path(path)} is missing (a records file copied or moved "
            "without it?): restore it beside the records file, or start the run anew")


def _check_blocks(path: Path, have: int, expect: int | None, resume_round: int | None) -> None:
    """Refuse to resume a run whose client file holds another number of per-client blocks
    before the checkpoint's round than the run had written when it wrote the checkpoint (the
    file is synced first, so a crash cuts only later blocks): values would be silently
    missing, or ones the run never wrote kept."""
    if expect is None or have == expect:
        return
    before = "" if resume_round is None else f" of rounds < {resume_round}"
    how = ("the file was cut, emptied or replaced" if have < expect
           else "blocks were added (duplicated, or another run's)")
    raise CheckpointError(
        f"client file {client_path(path)} holds {have} per-client block(s){before}, but the "
        f"run had written {expect} when it wrote the checkpoint: {how} (its records file's "
        "rows are kept); restore it beside the records file, or start the run anew")


def _unlink(name: str) -> None:
    """Remove a spilled client file (what maps it keeps reading it)."""
    try:
        os.unlink(name)
    except OSError:
        pass
