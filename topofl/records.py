"""Run records: long-format rows ``(run, round, client, metric, value)`` in a JSONL file.

One file per run. The first line is a header holding the frozen run config (every argument, the
seed, the topofl and torch versions); every following line is one row::

    {"run": "dsgd-ring", "round": 10, "client": null, "metric": "test_acc_mean", "value": 0.83}

``client`` is ``null`` for aggregate metrics and the client index for per-client ones. The writer
appends and flushes after every round, so a crash loses nothing already computed; figures and
reports read these files and never re-run training.

Examples
--------
>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "run.jsonl")
>>> with tf.records.Recorder(path, run="demo") as rec:
...     rec.log_config({"rounds": 3})
...     for t, acc in enumerate([0.5, 0.8, 0.7]):
...         rec.log("test_acc_mean", acc, t)
>>> r = tf.records.load(path)
>>> r.config["rounds"], r.rounds_to(0.75), r.best("test_acc_mean"), r.final("test_acc_mean")
(3, 1, 0.8, 0.7)
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

__all__ = ["Recorder", "Records", "load", "rounds_to", "load_many"]

ROW_KEYS = ("run", "round", "client", "metric", "value")


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
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
        File to write; ``None`` keeps the rows in memory only. An existing file is appended to
        when ``resume=True`` (its rows after ``resume_round`` are dropped first, so a run resumed
        from a checkpoint writes each round once); otherwise it is replaced.
    run : str
        Run identifier stored in every row.
    resume : bool, default False
    resume_round : int, optional
        With ``resume``, keep only the rows of rounds ``< resume_round``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        *,
        run: str = "run",
        resume: bool = False,
        resume_round: int | None = None,
    ) -> None:
        self.run = str(run)
        self.path = None if path is None else Path(path)
        self.rows: list[dict[str, Any]] = []
        self.config: dict[str, Any] = {}
        self._fh: IO[str] | None = None
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if resume and self.path.exists():
            old = load(self.path)
            self.config = dict(old.config)
            keep = [
                r for r in old.rows if resume_round is None or int(r["round"]) < resume_round
            ]
            tmp = self.path.with_suffix(self.path.suffix + ".tmp")
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(json.dumps({"header": True, "config": _jsonable(self.config)}) + "\n")
                for r in keep:
                    fh.write(json.dumps(r) + "\n")
            os.replace(tmp, self.path)
            self.rows = keep
            self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
        else:
            self._fh = open(self.path, "w", encoding="utf-8")  # noqa: SIM115

    def log_config(self, config: Mapping[str, Any]) -> None:
        """Write the header row with the frozen config (once, before any row)."""
        self.config = _jsonable(dict(config))
        if self._fh is not None:
            if self.rows or self._fh.tell() > 0:
                return  # resumed: the header is already there
            self._fh.write(json.dumps({"header": True, "config": self.config}) + "\n")
            self._fh.flush()

    def log(self, metric: str, value: Any, round: int, client: int | None = None) -> None:
        """Record one value. Non-finite floats are stored as ``null``/``"inf"``."""
        row = {
            "run": self.run,
            "round": int(round),
            "client": None if client is None else int(client),
            "metric": str(metric),
            "value": _jsonable(value),
        }
        self.rows.append(row)
        if self._fh is not None:
            self._fh.write(json.dumps(row) + "\n")

    def log_many(self, values: Mapping[str, Any], round: int, client: int | None = None) -> None:
        """Record several metrics of one round."""
        for k, v in values.items():
            self.log(k, v, round, client)

    def log_clients(self, metric: str, values: Sequence[float], round: int) -> None:
        """Record one value per client."""
        for i, v in enumerate(values):
            self.log(metric, v, round, i)

    def flush(self) -> None:
        """Flush to disk (called by the engine after every round)."""
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        """Flush and close the file."""
        if self._fh is not None:
            self._fh.flush()
            self._fh.close()
            self._fh = None

    def records(self) -> Records:
        """The rows written so far, as :class:`Records`."""
        return Records(config=dict(self.config), rows=list(self.rows))

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class Records:
    """The rows of one or more runs with query helpers.

    Attributes
    ----------
    config : dict
        The header config (of the first run when several were concatenated).
    rows : list of dict
        Rows with keys ``run, round, client, metric, value``.
    """

    config: dict[str, Any] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def metrics(self) -> list[str]:
        """Names of the recorded metrics, sorted."""
        return sorted({r["metric"] for r in self.rows})

    @property
    def runs(self) -> list[str]:
        """Run identifiers in order of appearance."""
        return list(dict.fromkeys(r["run"] for r in self.rows))

    def series(
        self, metric: str, *, client: int | None = None, run: str | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(rounds, values)`` of one metric, sorted by round.

        Raises
        ------
        KeyError
            If the metric was never recorded (the message lists the recorded ones).
        """
        pts = [
            (r["round"], r["value"])
            for r in self.rows
            if r["metric"] == metric and r["client"] == client and (run is None or r["run"] == run)
        ]
        if not pts:
            raise KeyError(f"metric {metric!r} (client={client}) not recorded; have {self.metrics}")
        pts.sort(key=lambda p: p[0])
        rounds = np.array([p[0] for p in pts], dtype=np.int64)
        vals = np.array([np.nan if p[1] is None else float(p[1]) for p in pts], dtype=np.float64)
        return rounds, vals

    def per_client(self, metric: str, round: int) -> np.ndarray:
        """Values of a per-client metric at one round, indexed by client."""
        pts = sorted(
            (r["client"], r["value"])
            for r in self.rows
            if r["metric"] == metric and r["round"] == round and r["client"] is not None
        )
        if not pts:
            raise KeyError(f"per-client metric {metric!r} not recorded at round {round}")
        return np.array([float(v) for _, v in pts])

    def rounds_to(self, target: float, metric: str = "test_acc_mean") -> int | None:
        """First recorded round at which ``metric >= target``; ``None`` if never."""
        return rounds_to(self, target, metric)

    def best(self, metric: str = "test_acc_mean") -> float:
        """Best (largest) value of ``metric`` over the run (ignoring NaN)."""
        _, v = self.series(metric)
        return float(np.nanmax(v))

    def final(self, metric: str = "test_acc_mean") -> float:
        """Value of ``metric`` at the last recorded round."""
        _, v = self.series(metric)
        return float(v[-1])

    def last(self, metric: str) -> float:
        """Alias of :meth:`final` for any metric."""
        return self.final(metric)

    def to_rows(self) -> list[dict[str, Any]]:
        """Rows as plain dicts (``pandas.DataFrame(records.to_rows())`` for pandas users)."""
        return [dict(r) for r in self.rows]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


def rounds_to(records: Records, target: float, metric: str = "test_acc_mean") -> int | None:
    """First recorded round at which ``metric >= target`` (``None`` if never reached).

    Examples
    --------
    >>> r = tf.records.Records(rows=[
    ...     {"run": "a", "round": t, "client": None, "metric": "acc", "value": v}
    ...     for t, v in [(0, 0.1), (5, 0.6), (10, 0.9)]])
    >>> tf.records.rounds_to(r, 0.5, "acc"), tf.records.rounds_to(r, 0.95, "acc")
    (5, None)
    """
    rounds, vals = records.series(metric)
    hit = np.flatnonzero(vals >= target)
    return None if hit.size == 0 else int(rounds[hit[0]])


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


def load(path: str | os.PathLike[str]) -> Records:
    """Read a JSONL records file written by :class:`Recorder`.

    Every line must be a JSON object in UTF-8: the header ``{"header": true, "config": {...}}``
    (the first one is kept) or a row with the keys ``run`` (str), ``round`` (int ``>= 0``),
    ``client`` (int ``>= 0`` or null), ``metric`` (str) and ``value`` (any JSON value).

    A crash mid-write can only cut the *last* line short, and the writer ends every complete
    line with a newline: so a final line with no newline that does not parse is a partial row
    and is ignored. Anything else that does not parse -- an earlier line, or a final line that
    ends with its newline -- is corruption and is refused.

    Raises
    ------
    TypeError
        If ``path`` is not a str or path.
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If ``path`` is a directory, or a line is not UTF-8, not JSON, not an object, or not a
        valid header or row; the message names the file and the line (1-based).

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "run.jsonl")
    >>> with open(path, "w") as fh:
    ...     _ = fh.write('{"run": "a", "round": 0, "client": null, "metric": "m", "value": 1}\\n')
    ...     _ = fh.write('{"run": "a", "round": 1, "cli')  # killed mid-write
    >>> len(tf.records.load(path))
    1
    >>> with open(path, "a") as fh:  # the cut row completed, then a bad one
    ...     _ = fh.write('ent": null, "metric": "m", "value": 2}\\n')
    ...     _ = fh.write('{"run": "a", "round": "abc", "client": null, "metric": "m", "value": 3}')
    >>> tf.records.load(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ...run.jsonl: line 3: 'round' must be a non-negative int, found 'abc'
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__} {path!r}")
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{p} is a directory, expected a records file (.jsonl)")
    data = p.read_bytes()
    lines = data.split(b"\n")
    # ``lines[-1]`` is what follows the last newline: empty for a complete file.
    partial = len(lines) - 1
    config: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    for k, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            obj = _parse_line(p, k + 1, raw)
        except ValueError:
            if k == partial:
                break  # a row cut short by a crash mid-write
            raise
        if not isinstance(obj, dict):
            raise _row_error(p, k + 1, f"must be a JSON object, found {type(obj).__name__}")
        if obj.get("header") is True:
            cfg = obj.get("config", {})
            if not isinstance(cfg, dict):
                raise _row_error(
                    p, k + 1, f"the header's 'config' must be an object, found {type(cfg).__name__}"
                )
            if not config:
                config = dict(cfg)
            continue
        _check_row(p, k + 1, obj)
        rows.append(obj)
    return Records(config=config, rows=rows)


def load_many(paths: Iterable[str | os.PathLike[str]]) -> Records:
    """Concatenate the rows of several records files (the config of the first is kept)."""
    out = Records()
    for p in paths:
        r = load(p)
        if not out.config:
            out.config = r.config
        out.rows.extend(r.rows)
    return out
