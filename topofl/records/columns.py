"""Per-client records as columns: one array a metric an evaluation, in a file beside the rows.

A run's per-client values (``test_acc``, ``val_loss``, ``bytes_sent`` ... of every client)
are not written as one JSON row a client: each ``Recorder.log_clients`` call is one
:class:`ClientBlock` (the metric, the round, the values of clients ``0..n-1`` as float64, NaN
where a client has none), appended to the run's *client file* ``<stem>.clients.arrows``
beside ``<stem>.jsonl`` (:func:`client_path`): an Arrow IPC stream (the ``.arrows``
extension), one record batch a block with the columns ``metric`` (str), ``round`` (int64),
``at`` (int64: how many rows of the ``.jsonl`` file precede the block, its place among the
rows), ``integer`` (bool: the values were integers, such as a ledger's byte counts, and are
read back as int64) and ``values`` (list of float64). Any Arrow reader opens it::

    pyarrow.ipc.open_stream("run.clients.arrows").read_all().to_pandas()

Writing a block is one copy of the array; a reader maps the file into memory and reads the
arrays in place (:func:`read_blocks`), so neither a run nor its reader holds the per-client
values of every evaluation in memory. :class:`topofl.records.Records` answers for the
blocks as for the rows they stand for (``{"run", "round", "client", "metric", "value"}``
for each client, at the block's place): :meth:`~topofl.records.Records.per_client`,
:meth:`~topofl.records.Records.clients` and :meth:`~topofl.records.Records.selected` read the
arrays, anything that iterates the rows sees them as rows.

Each block's record batch carries its number and a CRC-32 of what it holds (batch metadata
``topofl:seq`` and ``topofl:crc``), the stream the run's identity (schema metadata
``topofl:run`` and ``topofl:run_hash``), and a writer that closes the file ends it with an
empty batch counting the blocks (``topofl:blocks``): :func:`topofl.records.load` checks them
against the rows (:mod:`topofl.records._seal`). A crash can cut only the last block:
:func:`read_blocks` drops it and says how many bytes it dropped, as
:func:`topofl.records.load` does for a cut line.

pyarrow is imported on first use only.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from topofl._utils.files import fsync_dir, private_sibling
from topofl._utils.validation import check_path
from topofl.exceptions import OutputExistsError
from topofl.records._format import _number
from topofl.records._seal import (
    BLOCKS,
    CHECKS,
    CHECKS_VALUE,
    CRC,
    RUN,
    RUN_HASH,
    SEQ,
    block_crc,
)

__all__ = ["ClientBlock", "ClientStream", "ClientWriter", "block_value", "claim_client_file",
           "client_path", "client_table", "copy_records", "identity", "merged_points",
           "read_blocks", "read_stream", "regroup", "write_blocks"]

#: The client file's ending: ``run.jsonl`` -> ``run.clients.arrows``.
SUFFIX = ".clients.arrows"


@dataclass(frozen=True)
class ClientBlock:
    """One per-client metric of one evaluation: ``values[i]`` is client ``i``'s value.

    Attributes
    ----------
    run : str
        The run id.
    metric : str
    round : int
        The round the values were recorded after (as a row's ``round``).
    at : int
        How many rows of the run's records precede these values (their place in the rows'
        order: the rows they stand for come after row ``at - 1``).
    values : ndarray of float64 or int64, shape (n,)
        NaN where the client has no value (a row ``value`` of ``null``); int64 for counts.
    """

    run: str
    metric: str
    round: int
    at: int
    values: np.ndarray

    def rows(self) -> list[dict[str, Any]]:
        """The rows these values stand for, as :class:`~topofl.records.Recorder` stored them
        one a client before (NaN as ``None``, infinities as ``"inf"``/``"-inf"``).

        Examples
        --------
        >>> import numpy as np
        >>> block = ClientBlock("a", "acc", 3, 0, np.array([0.5, np.nan]))
        >>> block.rows()  # doctest: +NORMALIZE_WHITESPACE
        [{'run': 'a', 'round': 3, 'client': 0, 'metric': 'acc', 'value': 0.5},
         {'run': 'a', 'round': 3, 'client': 1, 'metric': 'acc', 'value': None}]
        """
        return [{"run": self.run, "round": self.round, "client": i, "metric": self.metric,
                 "value": block_value(v)} for i, v in enumerate(self.values.tolist())]

    def renamed(self, run: str, shift: int = 0) -> ClientBlock:
        """This block as one of run ``run``, its place moved by ``shift`` rows."""
        return ClientBlock(run, self.metric, self.round, self.at + shift, self.values)


def block_value(v: float) -> float | str | None:
    """A block's value as a row stores it: NaN as ``None``, infinities as ``"inf"``/``"-inf"``.

    Examples
    --------
    >>> [block_value(v) for v in (0.5, float("nan"), float("-inf"))]
    [0.5, None, '-inf']
    """
    if v != v:
        return None
    if v in (math.inf, -math.inf):
        return "inf" if v > 0 else "-inf"
    return v


def regroup(rows: list[dict[str, Any]], blocks: Sequence[ClientBlock]) -> list[dict[str, Any]]:
    """``rows`` with the rows of ``blocks`` inserted at their places (a block at ``at`` after
    row ``at - 1``; blocks of one place in their order).

    Examples
    --------
    >>> import numpy as np
    >>> rows = [{"run": "a", "round": 0, "client": None, "metric": "m", "value": 1.0}] * 2
    >>> out = regroup(rows, [ClientBlock("a", "acc", 0, 1, np.array([0.5]))])
    >>> [(r["metric"], r["client"]) for r in out]
    [('m', None), ('acc', 0), ('m', None)]
    """
    out: list[dict[str, Any]] = []
    k = 0
    for b in sorted(blocks, key=lambda b: b.at):
        out.extend(rows[k:max(k, b.at)])
        k = max(k, b.at)
        out.extend(b.rows())
    out.extend(rows[k:])
    return out


def merged_points(rows: Sequence[dict[str, Any]], blocks: Sequence[ClientBlock], run: str,
                  metric: str, client: int) -> list[tuple[int, Any]]:
    """The ``(round, value)`` pairs of one client's ``metric`` in run ``run``, from the rows
    and the blocks, in the order written (values as rows store them)."""
    placed = [((k, 1), r["round"], r["value"]) for k, r in enumerate(rows)
              if r["run"] == run and r["metric"] == metric and r["client"] == client]
    placed += [((b.at, 0), b.round, block_value(float(b.values[client])))
               for b in blocks if b.run == run and b.metric == metric and client < b.values.size]
    placed.sort(key=lambda p: p[0])
    return [(t, v) for _, t, v in placed]


def client_table(rows: Sequence[dict[str, Any]], blocks: Sequence[ClientBlock], run: str | None,
                 metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rounds, values, present)`` of a per-client ``metric`` of run ``run``: the sorted
    rounds it was recorded at, ``values[k, i]`` client ``i``'s at ``rounds[k]`` (NaN where
    none, or ``null``) and ``present[k, i]`` whether it was recorded (a value written twice
    keeps its last; the width is one more than the largest client recorded).

    Raises
    ------
    ValueError
        If a row's value is not a number (as :meth:`~topofl.records.Records.series`).

    Examples
    --------
    >>> import numpy as np
    >>> rows = [{"run": "a", "round": 2, "client": 1, "metric": "acc", "value": None}]
    >>> t, v, has = client_table(rows, [ClientBlock("a", "acc", 0, 0, np.array([0.5]))],
    ...                          "a", "acc")
    >>> t.tolist(), v.tolist(), has.tolist()
    ([0, 2], [[0.5, nan], [nan, nan]], [[True, False], [False, True]])
    """
    mine = [r for r in rows if r["run"] == run and r["metric"] == metric
            and r["client"] is not None]
    theirs = sorted((b for b in blocks if b.run == run and b.metric == metric),
                    key=lambda b: b.at)
    rounds = np.unique(np.array([int(r["round"]) for r in mine] + [b.round for b in theirs],
                                dtype=np.int64))
    n = max([int(r["client"]) + 1 for r in mine] + [int(b.values.size) for b in theirs],
            default=0)
    values = np.full((rounds.size, n), np.nan)
    present = np.zeros((rounds.size, n), dtype=bool)
    for r in mine:
        k, c = int(np.searchsorted(rounds, int(r["round"]))), int(r["client"])
        values[k, c] = _number(r["value"], metric, run, int(r["round"]), c)
        present[k, c] = True
    for b in theirs:
        k = int(np.searchsorted(rounds, b.round))
        values[k, :b.values.size] = b.values
        present[k, :b.values.size] = True
    return rounds, values, present


def client_path(path: str | os.PathLike[str]) -> Path:
    """The client file of the records file ``path``: ``<stem>.clients.arrows`` beside it.

    Examples
    --------
    >>> str(client_path("runs/ring.jsonl"))
    'runs/ring.clients.arrows'
    """
    p = Path(path)
    if p.name in ("", ".", ".."):
        raise ValueError(f"a records file needs a file name, got {str(path)!r}")
    return p.with_name(p.stem + SUFFIX) if p.suffix == ".jsonl" else p.with_name(p.name + SUFFIX)


def copy_records(src: str | os.PathLike[str], dst: str | os.PathLike[str], *,
                 overwrite: bool = False) -> None:
    """Copy the records file ``src`` to ``dst`` with its client file (a run's records are the
    two files).

    Parameters
    ----------
    src, dst : path
        The records file (``.jsonl``) to copy and where to; their client files
        (:func:`client_path`) go with them.
    overwrite : bool, default False
        Replace ``dst`` and its client file where either exists (a client file at ``dst`` that
        ``src`` has none of is then removed); without it an existing one is an error and
        nothing is written.

    Raises
    ------
    TypeError
        If ``src`` or ``dst`` is not a path, or ``overwrite`` not a bool.
    FileNotFoundError
        If ``src`` does not exist.
    ValueError
        If ``src`` is a folder, ``dst`` is ``src``, or ``dst`` or its client file is a folder.
    topofl.exceptions.OutputExistsError
        A ``FileExistsError``: ``dst`` or its client file exists and ``overwrite`` is false.

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> with tf.records.Recorder(os.path.join(d, "a.jsonl"), run="a") as rec:
    ...     rec.log_config({})
    ...     rec.log_clients("acc", [0.5, 0.75], 0)
    >>> tf.records.copy_records(os.path.join(d, "a.jsonl"), os.path.join(d, "b.jsonl"))
    >>> sorted(os.listdir(d))
    ['a.clients.arrows', 'a.jsonl', 'b.clients.arrows', 'b.jsonl']
    >>> tf.records.load(os.path.join(d, "b.jsonl")).per_client("acc", 0).tolist()
    [0.5, 0.75]
    >>> tf.records.copy_records(os.path.join(d, "a.jsonl"), os.path.join(d, "b.jsonl"))
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topofl.exceptions.OutputExistsError: ...b.jsonl exists; pass overwrite=True to replace it ...
    """
    import shutil

    src, dst = Path(check_path(src, "src", optional=False)), Path(check_path(dst, "dst",
                                                                            optional=False))
    if not isinstance(overwrite, bool):
        raise TypeError(f"overwrite must be a bool, got {type(overwrite).__name__} "
                        f"{overwrite!r}")
    if not src.is_file():
        if src.exists():
            raise ValueError(f"src must be a records file, got the folder {src}")
        raise FileNotFoundError(f"no records file {src}")
    if dst.exists() and dst.samefile(src):
        raise ValueError(f"src and dst are the same file, {src}: nothing to copy")
    there = [q for q in (dst, client_path(dst)) if q.exists() or q.is_symlink()]
    for q in there:
        if q.is_dir() and not q.is_symlink():
            raise ValueError(f"{q} is a folder, expected a file or nothing there: "
                             "copy_records replaces files, never folders")
    if there and not overwrite:
        raise OutputExistsError(
            f"{there[0]} exists; pass overwrite=True to replace it (copy_records replaces "
            "nothing without it)")
    if client_path(src).exists():
        shutil.copyfile(client_path(src), client_path(dst))
    else:
        client_path(dst).unlink(missing_ok=True)
    shutil.copyfile(src, dst)


def claim_client_file(path: str | os.PathLike[str], *, overwrite: bool) -> None:
    """Make way for a new run's client file beside the records file ``path``, or refuse.

    A client file beside an existing records file is that file's, replaced with it (the
    caller replaces the records file, :func:`topofl.run` only with ``overwrite``), and is
    removed. One beside no records file was not written with the run about to start there (a
    user's file, or one left by a records file moved away): it is removed only with
    ``overwrite``. A folder there never is.

    Raises
    ------
    topofl.exceptions.OutputExistsError
        A ``FileExistsError``: the client file exists beside no records file and
        ``overwrite`` is false, or it is a folder.

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> mine = os.path.join(d, "exp.clients.arrows")
    >>> _ = open(mine, "w").write("a user's file")
    >>> claim_client_file(os.path.join(d, "exp.jsonl"), overwrite=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topofl.exceptions.OutputExistsError: ...exp.clients.arrows exists, but ...exp.jsonl does not...
    >>> claim_client_file(os.path.join(d, "exp.jsonl"), overwrite=True)
    >>> os.listdir(d)
    []
    """
    c = client_path(path)
    if not (c.exists() or c.is_symlink()):
        return
    if c.is_dir() and not c.is_symlink():
        raise OutputExistsError(f"{c} is a folder where the run's client file goes (beside "
                                f"{path}): move it away; a run never replaces a folder")
    if not (overwrite or Path(path).exists()):
        raise OutputExistsError(
            f"{c} exists, but {path} does not: it is not the client file of a run at {path}, "
            "and the run would replace it; move it away, or pass overwrite=True (topofl run "
            "--overwrite) to replace it")
    c.unlink(missing_ok=True)


def identity(run: str, run_hash: str | None) -> dict[bytes, bytes]:
    """The schema metadata of run ``run``'s client file: its run id and run hash
    (:func:`topofl.records.header_run_hash`; empty when it has none).

    Examples
    --------
    >>> identity("a", "0123456789abcdef")[b"topofl:run_hash"]
    b'0123456789abcdef'
    """
    return {RUN: run.encode(), RUN_HASH: (run_hash or "").encode(), CHECKS: CHECKS_VALUE}


@functools.cache
def _columns() -> Any:
    import pyarrow as pa

    return pa.schema([("metric", pa.string()), ("round", pa.int64()), ("at", pa.int64()),
                      ("integer", pa.bool_()), ("values", pa.list_(pa.float64()))])


def _schema(meta: Mapping[bytes, bytes] | None = None) -> Any:
    """The client file's schema (with ``meta`` as its metadata)."""
    return _columns() if meta is None else _columns().with_metadata(dict(meta))


def _batch(block: ClientBlock, seq: int) -> tuple[Any, dict[bytes, bytes]]:
    """Block ``block`` as a record batch, with its batch metadata: number ``seq``, its CRC."""
    import pyarrow as pa

    integer = block.values.dtype.kind in "iu"
    values = np.ascontiguousarray(block.values, dtype=np.float64)
    lists = pa.ListArray.from_arrays(pa.array([0, values.size], pa.int32()), pa.array(values))
    batch = pa.record_batch([pa.array([block.metric]), pa.array([block.round], pa.int64()),
                             pa.array([block.at], pa.int64()), pa.array([integer]), lists],
                            schema=_schema())
    crc = block_crc(block.metric, block.round, block.at, integer, values)
    return batch, {SEQ: b"%d" % seq, CRC: b"%08x" % crc}


def _end(stream: Any, count: int) -> None:
    """End ``stream`` with the closing batch (no rows) that counts its ``count`` blocks."""
    import pyarrow as pa

    empty = pa.record_batch([pa.array([], t) for t in _schema().types], schema=_schema())
    stream.write_batch(empty, custom_metadata={BLOCKS: b"%d" % count})


class ClientWriter:
    """Append :class:`ClientBlock` s to a client file (an Arrow IPC stream).

    The file is created (replacing any) on the first block, so a run that records no
    per-client values leaves none. :meth:`flush` hands what was written to the operating
    system, :meth:`sync` waits for the disk, :meth:`close` ends the stream with its count of
    blocks.

    Parameters
    ----------
    path : path
        The client file (:func:`client_path` of the records file).
    identity : mapping, optional
        The stream's schema metadata (:func:`identity`); it may be set until the first block.

    Attributes
    ----------
    count : int
        The blocks in the stream (the next one's number).
    """

    def __init__(self, path: str | os.PathLike[str],
                 identity: Mapping[bytes, bytes] | None = None) -> None:
        self.path = Path(path)
        self.identity = identity
        self.count = 0
        self._fh: IO[bytes] | None = None
        self._stream: Any = None

    def adopt(self, fh: IO[bytes], stream: Any, count: int) -> None:
        """Continue an open stream of ``count`` blocks (:func:`write_blocks`, ``keep_open``)."""
        self._fh, self._stream, self.count = fh, stream, count

    def write(self, block: ClientBlock) -> None:
        """Append one block (one copy of its values), numbered :attr:`count`."""
        if self._stream is None:
            import pyarrow as pa

            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "wb")  # noqa: SIM115
            self._stream = pa.ipc.new_stream(self._fh, _schema(self.identity))
        batch, meta = _batch(block, self.count)
        self._stream.write_batch(batch, custom_metadata=meta)
        self.count += 1

    def flush(self) -> None:
        if self._fh is not None:
            self._fh.flush()

    def sync(self) -> None:
        fh = self._fh
        if fh is not None:
            fh.flush()
            os.fsync(fh.fileno())

    def close(self) -> None:
        if self._stream is not None:
            _end(self._stream, self.count)
            self._stream.close()
            self._stream = None
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def write_blocks(path: str | os.PathLike[str], blocks: Iterable[ClientBlock], *,
                 keep_open: ClientWriter | None = None,
                 identity: Mapping[bytes, bytes] | None = None) -> None:
    """Replace the client file ``path`` by ``blocks`` (numbered from 0; ``identity``: the
    stream's schema metadata, :func:`identity`), atomically and durably (written beside it,
    fsynced, renamed over it); with ``keep_open`` that writer goes on appending to it, else
    the stream is closed.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> path = os.path.join(tempfile.mkdtemp(), "r.clients.arrows")
    >>> write_blocks(path, [ClientBlock("r", "acc", 0, 2, np.array([0.5, 0.25]))])
    >>> blocks, cut = read_blocks(path, "r")
    >>> [(b.metric, b.round, b.at, b.values.tolist()) for b in blocks], cut
    ([('acc', 0, 2, [0.5, 0.25])], 0)
    """
    import pyarrow as pa

    p = Path(path)
    tmp = private_sibling(p)
    fh = open(tmp, "wb")  # noqa: SIM115
    count = 0
    try:
        stream = pa.ipc.new_stream(fh, _schema(identity))
        for b in blocks:
            stream.write_batch(*_batch(b, count))
            count += 1
        if keep_open is None:
            _end(stream, count)
            stream.close()
        fh.flush()
        os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        fh.close()
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(p.parent)
    if keep_open is not None:
        keep_open.adopt(fh, stream, count)
    else:
        fh.close()


#: The end-of-stream marker a closed Arrow stream ends with.
_EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"


@dataclass
class ClientStream:
    """A client file as :func:`read_stream` read it.

    Attributes
    ----------
    blocks : list of ClientBlock
        The blocks read, in the file's order.
    seals : list of (int, int) or None
        Per block: the number and CRC it carries (``None``: none).
    crcs : list of int
        Per block: the CRC of what it holds, as read
        (:func:`~topofl.records._seal.block_crc`).
    identity : dict or None
        The stream's schema metadata (:func:`identity`; ``None``: none, as written before).
    end : int or None
        The count of blocks of the closing batch (``None``: none was read).
    cut : int
        Bytes from where the stream could not be read on to the file's end (0: read to it).
    why : str
        Why it could not be read there (``""`` when ``cut`` is 0).
    eos : bool
        Whether the file ends with the end-of-stream marker (a writer closed it).
    """

    blocks: list[ClientBlock] = field(default_factory=list)
    seals: list[tuple[int, int] | None] = field(default_factory=list)
    crcs: list[int] = field(default_factory=list)
    identity: dict[bytes, bytes] | None = None
    end: int | None = None
    cut: int = 0
    why: str = ""
    eos: bool = False

    @property
    def sealed(self) -> bool:
        """Whether the stream carries the checks (:mod:`topofl.records._seal`)."""
        return self.identity is not None and self.identity.get(CHECKS) == CHECKS_VALUE


def read_blocks(path: str | os.PathLike[str], run: str) -> tuple[list[ClientBlock], int]:
    """The blocks of the client file ``path`` (as run ``run``'s) and the bytes of a last
    block cut short by a crash, which are dropped (0: none). The values are read in place
    from the file mapped into memory (not copied); their checks are
    :func:`topofl.records.load`'s.

    Raises
    ------
    ValueError
        If the file is not an Arrow stream of client blocks (its schema, or bytes after the
        end of its stream); the message names the file.
    """
    s = read_stream(path, run)
    return s.blocks, s.cut


def read_stream(path: str | os.PathLike[str], run: str) -> ClientStream:
    """The client file ``path`` as read (:class:`ClientStream`): its blocks as run ``run``'s,
    what each carries, and where the stream stops being readable. The values are read in
    place from the file mapped into memory.

    Raises
    ------
    ValueError
        If the file is not an Arrow stream of client blocks (its schema, or bytes after the
        end of its stream); the message names the file.
    """
    p = Path(path)
    try:
        return _read_stream(p, run)
    except UnicodeDecodeError as exc:  # a name or a label whose bytes were damaged
        raise ValueError(f"{p}: not a client file: a name in it is not UTF-8 ({exc})") from None


def _read_stream(p: Path, run: str) -> ClientStream:
    """:func:`read_stream` of ``p`` (a damaged name's decoding error is the caller's)."""
    import pyarrow as pa

    source = pa.memory_map(str(p))
    size = source.size()
    out = ClientStream()
    if size == 0:
        return out
    out.eos = size >= len(_EOS) and source.read_at(len(_EOS), size - len(_EOS)) == _EOS
    try:
        reader = pa.ipc.open_stream(source)
    except (pa.ArrowException, OSError) as exc:
        head = source.read_at(min(size, 8), 0)
        if _EOS[:len(head[:4])] == head[:4] and (
                len(head) < 8 or size < 8 + int.from_bytes(head[4:], "little", signed=True)):
            out.cut, out.why = size, "its schema cut short"  # a crash before its first block
            return out
        raise ValueError(f"{p}: not a client file (an Arrow stream of per-client values): "
                         f"{exc}") from None
    if not reader.schema.equals(_schema()):
        raise ValueError(f"{p}: not a client file: its columns are {reader.schema.names}, "
                         f"expected {_schema().names}")
    meta = reader.schema.metadata
    out.identity = dict(meta) if meta else None
    done = source.tell()
    while True:
        try:
            batch, custom = reader.read_next_batch_with_custom_metadata()
        except StopIteration:
            break
        except (pa.ArrowException, OSError) as exc:  # the last block, cut short by a crash?
            if out.end is not None and _EOS.startswith(source.read_at(size - done, done)):
                return out  # its end-of-stream marker cut short: nothing lost
            out.cut, out.why = size - done, _first_line(exc)
            return out
        try:
            batch.validate(full=True)
            read = _blocks_of(batch, run)
        except (pa.ArrowException, ValueError, TypeError, AttributeError, IndexError,
                OverflowError) as exc:  # bytes that do not decode: the stream stops here
            out.cut, out.why = size - done, _first_line(exc)
            return out
        done = source.tell()
        custom = dict(custom) if custom else {}
        if batch.num_rows == 0:  # the closing batch
            out.end = _count(custom.get(BLOCKS))
            continue
        seal = _seal_of(custom) if batch.num_rows == 1 else None
        for block, crc in read:
            out.blocks.append(block)
            out.seals.append(seal)
            out.crcs.append(crc)
    if source.tell() < size:
        after = ("" if not out.blocks else f" after block {len(out.blocks) - 1} "
                 f"({out.blocks[-1].metric!r}, round {out.blocks[-1].round})")
        raise ValueError(f"{p}: {size - source.tell()} bytes follow the end of its "
                         f"stream{after}: not a client file written by a run (a block zeroed "
                         "or damaged?)")
    return out


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().split("\n")[0]
    return text if len(text) <= 160 else text[:157] + "..."


def _count(raw: bytes | None) -> int | None:
    try:
        return None if raw is None else int(raw)
    except ValueError:
        return -1  # a count that is not one: never a block count


def _seal_of(custom: Mapping[bytes, bytes]) -> tuple[int, int] | None:
    """A block's ``(number, CRC)`` from its batch metadata, ``None`` if it carries none."""
    try:
        return int(custom[SEQ]), int(custom[CRC], 16)
    except (KeyError, ValueError):
        return None


def _blocks_of(batch: Any, run: str) -> list[tuple[ClientBlock, int]]:
    """The blocks of a record batch and the CRC of what each holds."""
    lists = batch.column(4)
    out = []
    for k in range(batch.num_rows):
        values = lists[k].values.to_numpy(zero_copy_only=False)
        metric = str(batch.column(0)[k].as_py())
        rnd, at = int(batch.column(1)[k].as_py()), int(batch.column(2)[k].as_py())
        integer = bool(batch.column(3)[k].as_py())
        crc = block_crc(metric, rnd, at, integer, values)
        if integer:
            values = values.astype(np.int64)
        out.append((ClientBlock(run, metric, rnd, at, values), crc))
    return out
