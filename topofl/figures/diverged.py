"""The runs of a figure that stopped on divergence, read from the sweep's finished markers.

A sweep run whose training raised :class:`~topofl.exceptions.ConvergenceError` (a
non-finite loss, non-finite parameters, a loss above the divergence guard) is finished with
status ``"diverged"`` and the error's message in its marker ``<run>.done``, beside its records
file ``<run>.jsonl`` (:func:`topofl.sweep.run_files`); its records hold the rows up to its
last evaluation before the stop, or none. :func:`stopped` reads those markers for the runs of
a :class:`~topofl.records.Records` read from a sweep's files (each run's
:attr:`~topofl.records.Records.sources`), :func:`by_curve` for every curve of a panel, and
:func:`describe` words them for a page.

A run is diverged only when its marker says so: a run with no marker (killed, still running,
or resumed later) or one that finished ``"complete"`` is not, whatever rows it has.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["STATUSES", "Stop", "marker", "stopped", "by_curve", "describe"]

#: The statuses of a sweep's finished marker (:mod:`topofl.sweep`): a run that ran to its
#: last round, and one whose training diverged.
STATUSES = ("complete", "diverged")

#: The round in the engine's message of a diverged run (``topofl.engine.evaluation``):
#: ``"training diverged at round 12, local step 3: ..."``.
_ROUND = re.compile(r"\bdiverged at round (\d+)\b")


@dataclass(frozen=True)
class Stop:
    """A run that stopped on divergence: its run id, seed, the round its training stopped at
    (from the engine's message; ``None`` when the message names none) and that message."""

    run: str
    seed: int
    round: int | None
    message: str


def marker(path: str | Path) -> tuple[str, str]:
    """``(status, message)`` of a sweep's finished marker ``<run>.done``.

    A marker without a status is ``"complete"``, as the sweep reads it.

    Raises
    ------
    FileNotFoundError
        No marker at ``path``.
    ValueError
        The file is not a JSON object, or its status is not one of :data:`STATUSES`.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "seed=1.done"
    >>> _ = p.write_text(json.dumps({"status": "diverged", "summary": {},
    ...                              "message": "training diverged at round 3, ..."}))
    >>> tf.figures.diverged.marker(p)
    ('diverged', 'training diverged at round 3, ...')
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    try:
        got = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not a sweep's finished marker: not JSON ({exc})") from None
    if not isinstance(got, dict):
        raise ValueError(f"{path} is not a sweep's finished marker: expected a JSON object, "
                         f"found {type(got).__name__}")
    status = got.get("status", "complete")
    if status not in STATUSES:
        raise ValueError(f"{path}: unknown status {status!r} (a finished marker's status is "
                         f"one of {list(STATUSES)})")
    message = got.get("message", "")
    return str(status), message if isinstance(message, str) else str(message)


def _done_of(source: str, run: str) -> Path:
    """The finished marker beside the records file ``source`` of ``run``."""
    path = Path(source)
    if not path.name.endswith(".jsonl"):
        raise ValueError(f"run {run!r} was read from {path}, not a sweep's records file "
                         "(<run>.jsonl): no finished marker to read beside it")
    return path.with_name(path.name.removesuffix(".jsonl") + ".done")


def stopped(records: Any) -> dict[str, Stop]:
    """The runs of ``records`` that stopped on divergence: run id -> :class:`Stop`.

    ``records`` is read from a sweep's files (e.g. :func:`topofl.figures.runs.sweep`, or a
    panel's curve): each run's marker is the ``<run>.done`` beside the file it was read from.
    A run without a marker, or whose marker says ``"complete"``, is not diverged. The seed is
    the run's config ``seed`` (its position when the config has none, as
    :func:`~topofl.figures.per_seed` reads it).

    Raises
    ------
    ValueError
        A run not read from a records file (no :attr:`~topofl.records.Records.sources`
        entry), or a marker that is not one (:func:`marker`).

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for s in (0, 1, 2):
    ...     with tf.records.Recorder(d / f"seed={s}.jsonl", run=f"seed={s}") as rec:
    ...         rec.log_config({"seed": s})
    ...         rec.log("test_acc_mean", 0.5, 0)
    >>> msg = "training diverged at round 4, local step 0: the loss of client 2 is nan"
    >>> _ = (d / "seed=1.done").write_text(json.dumps({"status": "diverged", "message": msg}))
    >>> _ = (d / "seed=0.done").write_text(json.dumps({"status": "complete", "message": ""}))
    >>> got = tf.figures.diverged.stopped(tf.records.load_many(d))  # seed 2: no marker yet
    >>> list(got), got["seed=1"].seed, got["seed=1"].round
    (['seed=1'], 1, 4)
    """
    out: dict[str, Stop] = {}
    for k, run in enumerate(records.runs):
        source = records.sources.get(run)
        if source is None:
            raise ValueError(f"run {run!r} was not read from a records file (Records.sources "
                             "has no entry): its finished marker cannot be found")
        done = _done_of(source, run)
        if not done.exists():
            continue  # killed, still running, or never finished: not diverged
        status, message = marker(done)
        if status != "diverged":
            continue
        found = _ROUND.search(message)
        seed = int(records.configs.get(run, {}).get("seed", k))
        out[run] = Stop(run, seed, int(found.group(1)) if found else None, message)
    return out


def by_curve(curves: Any) -> dict[str, tuple[Stop, ...]]:
    """Curve label -> the runs of that curve that stopped on divergence, in seed order (the
    labels with none left out).

    ``curves`` is a :class:`~topofl.figures.Panel` (its ``runs``) or a mapping label ->
    Records read from a sweep's files (:func:`stopped`).

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for s in (0, 1):
    ...     with tf.records.Recorder(d / f"seed={s}.jsonl", run=f"seed={s}") as rec:
    ...         rec.log_config({"seed": s})
    ...     _ = (d / f"seed={s}.done").write_text(json.dumps(
    ...         {"status": "diverged", "message": f"training diverged at round {s}: ..."}))
    >>> got = tf.figures.diverged.by_curve({"OSGP": tf.records.load_many(d)})
    >>> [(x.seed, x.round) for x in got["OSGP"]]
    [(0, 0), (1, 1)]
    """
    runs: Mapping[str, Any] = getattr(curves, "runs", curves)
    if not isinstance(runs, Mapping):
        raise TypeError(f"curves must be a Panel or a mapping label -> Records, got "
                        f"{type(curves).__name__}")
    out: dict[str, tuple[Stop, ...]] = {}
    for label, rec in runs.items():
        found = stopped(rec)
        if found:
            out[str(label)] = tuple(sorted(found.values(), key=lambda s: (s.seed, s.run)))
    return out


def describe(stops: Sequence[Stop]) -> str:
    """The seeds of ``stops`` and the round each stopped at, in words (seeds that stopped at
    the same round grouped).

    Examples
    --------
    >>> S = tf.figures.diverged.Stop
    >>> tf.figures.diverged.describe([S("a", 0, 37, ""), S("b", 1, 0, ""), S("c", 2, 0, "")])
    'seed 0 at round 37, seeds 1 and 2 at round 0'
    >>> tf.figures.diverged.describe([S("a", 4, None, "ARPACK did not converge")])
    'seed 4 at a round its message does not name (ARPACK did not converge)'
    """
    if not stops:
        raise ValueError("describe needs at least one Stop")
    groups: dict[int | None, list[Stop]] = {}
    for s in sorted(stops, key=lambda s: s.seed):
        groups.setdefault(s.round, []).append(s)
    parts = []
    for rnd, group in groups.items():
        seeds = [str(s.seed) for s in group]
        who = (f"seed {seeds[0]}" if len(seeds) == 1
               else f"seeds {', '.join(seeds[:-1])} and {seeds[-1]}")
        where = (f"at round {rnd}" if rnd is not None else "at a round its message does not "
                 f"name ({'; '.join(dict.fromkeys(s.message for s in group))})")
        parts.append(f"{who} {where}")
    return ", ".join(parts)
