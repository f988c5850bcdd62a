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

A crash can cut only the last block: :func:`read_blocks` drops it and says how many bytes it
dropped, as :func:`topofl.records.load` does for a cut line.

pyarrow is imported on first use only.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from topofl._utils.files import fsync_dir, private_sibling
from topofl._utils.validation import check_path
from topofl.records._format import _number

__all__ = ["ClientBlock", "ClientWriter", "block_value", "client_path", "client_table",
           "copy_records", "merged_points", "read_blocks", "regroup", "write_blocks"]

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


def copy_records(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Copy the records file ``src`` to ``dst`` with its client file (a run's records are the
    two files; a client file at ``dst`` that ``src`` has none of is removed).

    Raises
    ------
    TypeError
        If ``src`` or ``dst`` is not a path.
    FileNotFoundError
        If ``src`` does not exist.
    ValueError
        If ``src`` is a folder, or ``dst`` is ``src``.

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
    """
    import shutil

    src, dst = Path(check_path(src, "src", optional=False)), Path(check_path(dst, "dst",
                                                                            optional=False))
    if not src.is_file():
        if src.exists():
            raise ValueError(f"src must be a records file, got the folder {src}")
        raise FileNotFoundError(f"no records file {src}")
    if dst.exists() and dst.samefile(src):
        raise ValueError(f"src and dst are the same file, {src}: nothing to copy")
    shutil.copyfile(src, dst)
    if client_path(src).exists():
        shutil.copyfile(client_path(src), client_path(dst))
    else:
        client_path(dst).unlink(missing_ok=True)


def _schema() -> Any:
    import pyarrow as pa

    return pa.schema([("metric", pa.string()), ("round", pa.int64()), ("at", pa.int64()),
                      ("integer", pa.bool_()), ("values", pa.list_(pa.float64()))])


def _batch(block: ClientBlock) -> Any:
    import pyarrow as pa

    integer = block.values.dtype.kind in "iu"
    values = np.ascontiguousarray(block.values, dtype=np.float64)
    lists = pa.ListArray.from_arrays(pa.array([0, values.size], pa.int32()), pa.array(values))
    return pa.record_batch([pa.array([block.metric]), pa.array([block.round], pa.int64()),
                            pa.array([block.at], pa.int64()), pa.array([integer]), lists],
                           schema=_schema())


class ClientWriter:
    """Append :class:`ClientBlock` s to a client file (an Arrow IPC stream).

    The file is created (replacing any) on the first block, so a run that records no
    per-client values leaves none. :meth:`flush` hands what was written to the operating
    system, :meth:`sync` waits for the disk, :meth:`close` ends the stream.

    Parameters
    ----------
    path : path
        The client file (:func:`client_path` of the records file).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._fh: IO[bytes] | None = None
        self._stream: Any = None

    def adopt(self, fh: IO[bytes], stream: Any) -> None:
        """Continue an open stream (:func:`write_blocks` with ``keep_open``)."""
        self._fh, self._stream = fh, stream

    def write(self, block: ClientBlock) -> None:
        """Append one block (one copy of its values)."""
        if self._stream is None:
            import pyarrow as pa

            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "wb")  # noqa: SIM115
            self._stream = pa.ipc.new_stream(self._fh, _schema())
        self._stream.write_batch(_batch(block))

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
            self._stream.close()
            self._stream = None
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def write_blocks(path: str | os.PathLike[str], blocks: Iterable[ClientBlock], *,
                 keep_open: ClientWriter | None = None) -> None:
    """Replace the client file ``path`` by ``blocks``, atomically and durably (written beside
    it, fsynced, renamed over it); with ``keep_open`` that writer goes on appending to it.

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
    try:
        stream = pa.ipc.new_stream(fh, _schema())
        for b in blocks:
            stream.write_batch(_batch(b))
        fh.flush()
        os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        fh.close()
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(p.parent)
    if keep_open is not None:
        keep_open.adopt(fh, stream)
    else:
        stream.close()
        fh.close()


def read_blocks(path: str | os.PathLike[str], run: str) -> tuple[list[ClientBlock], int]:
    """The blocks of the client file ``path`` (as run ``run``'s) and the bytes of a last
    block cut short by a crash, which are dropped (0: none). The values are read in place
    from the file mapped into memory (not copied).

    Raises
    ------
    ValueError
        If the file is not an Arrow stream of client blocks (its schema, or bytes that are
        not a block before its last one); the message names the file.
    """
    import pyarrow as pa

    p = Path(path)
    source = pa.memory_map(str(p))
    size = source.size()
    if size == 0:
        return [], 0
    try:
        reader = pa.ipc.open_stream(source)
    except (pa.ArrowInvalid, OSError) as exc:
        raise ValueError(f"{p}: not a client file (an Arrow stream of per-client values): "
                         f"{exc}") from None
    if not reader.schema.equals(_schema()):
        raise ValueError(f"{p}: not a client file: its columns are {reader.schema.names}, "
                         f"expected {_schema().names}")
    blocks: list[ClientBlock] = []
    done = source.tell()
    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            break
        except (pa.ArrowInvalid, OSError):
            return blocks, size - done  # the last block, cut short by a crash
        done = source.tell()
        blocks.extend(_blocks_of(batch, run))
    if source.tell() < size:
        raise ValueError(f"{p}: {size - source.tell()} bytes follow the end of its stream: "
                         "not a client file written by a run")
    return blocks, 0


def _blocks_of(batch: Any, run: str) -> Sequence[ClientBlock]:
    lists = batch.column(4)
    out = []
    for k in range(batch.num_rows):
        values = lists[k].values.to_numpy(zero_copy_only=False)
        if batch.column(3)[k].as_py():
            values = values.astype(np.int64)
        out.append(ClientBlock(run, str(batch.column(0)[k].as_py()),
                               int(batch.column(1)[k].as_py()), int(batch.column(2)[k].as_py()),
                               values))
    return out
