"""A sweep run's files in its output folder (records, checkpoint, finished marker) and what they
say: the run is finished, resumes from its checkpoint, or starts fresh; files that hold another
config's run, or that topofl did not write, are refused rather than replaced.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from topofl.algorithms.base import ALGORITHMS
from topofl.algorithms.hparams import flat_parameters
from topofl.config import ConfigError, read_header, validate
from topofl.distributed.checkpoint import load_any
from topofl.engine.config import ADDED_SETTINGS
from topofl.exceptions import CheckpointError
from topofl.records.columns import client_path
from topofl.records.writer import jsonable
from topofl.sweep._planning import _WHERE, SweepRun

__all__ = ["RunFiles", "run_files", "conflict", "discard"]


def _paths(out: Path, name: str) -> tuple[Path, Path, Path]:
    return out / f"{name}.jsonl", out / f"{name}.ckpt", out / f"{name}.done"


class RunFiles(NamedTuple):
    """The files of one sweep run in its output folder (see :func:`run_files`)."""

    records: Path
    checkpoint: Path
    done: Path


def run_files(out: str | os.PathLike[str], name: str) -> RunFiles:
    """The records file, checkpoint and finished marker of the run ``name`` in ``out``.

    Examples
    --------
    >>> f = tf.sweep.run_files("out", "topology=ring")
    >>> f.records.name, f.checkpoint.name, f.done.name
    ('topology=ring.jsonl', 'topology=ring.ckpt', 'topology=ring.done')
    """
    return RunFiles(*_paths(Path(out), name))


def conflict(run: SweepRun, out: str | os.PathLike[str]) -> str | None:
    """Why the files of ``run`` in ``out`` cannot be reused for it, or ``None``.

    ``None`` when ``out`` holds nothing of the run, or a run (finished or interrupted) of the
    same resolved config; otherwise the message of the first setting that differs. A caller
    that wants the new config run anyway removes the old files first with :func:`discard`
    (which :func:`run_sweep` never does on its own).

    Examples
    --------
    >>> import tempfile
    >>> run = tf.sweep.plan({"rounds": 2, "topology": "ring", "n_clients": 4})[0]
    >>> tf.sweep.conflict(run, tempfile.mkdtemp()) is None
    True
    """
    try:
        _state(run, Path(out), False)
    except ConfigError as exc:
        return str(exc)
    return None


def discard(out: str | os.PathLike[str], name: str) -> None:
    """Remove the records (with their client file), checkpoint and finished marker of the run
    ``name`` from ``out`` (the next :func:`run_sweep` runs it from round 0).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "r.jsonl").write_text("{}")
    >>> tf.sweep.discard(d, "r")
    >>> sorted(p.name for p in d.iterdir())
    []
    """
    files = run_files(out, name)
    for path in (*files, client_path(files.records)):
        path.unlink(missing_ok=True)


def set_aside(out: str | os.PathLike[str], name: str, to: str | os.PathLike[str]) -> Path:
    """Move the records (with their client file), checkpoint and finished marker of the run
    ``name`` from ``out`` into the folder ``to`` (made if absent) instead of removing them, so
    that the next :func:`run_sweep` runs it from round 0 and what it had computed is kept.
    A file already in ``to`` is not replaced: the run goes to ``to.1``, ``to.2`` ... instead.
    Returns the folder the files went to.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for _ in range(2):
    ...     _ = (d / "r.jsonl").write_text("{}")
    ...     print(tf.sweep.set_aside(d, "r", d / "old").name)
    old
    old.1
    >>> sorted(p.name for p in d.iterdir()), sorted(p.name for p in (d / "old").iterdir())
    (['old', 'old.1'], ['r.jsonl'])
    """
    files = run_files(out, name)
    moving = [p for p in (*files, client_path(files.records)) if p.exists()]
    base = dest = Path(to)
    k = 0
    while any((dest / p.name).exists() for p in moving):
        k += 1
        dest = base.with_name(f"{base.name}.{k}")
    dest.mkdir(parents=True, exist_ok=True)
    for p in moving:
        os.replace(p, dest / p.name)
    return dest


def _run_config(run: SweepRun, out: Path) -> dict[str, Any]:
    records, ckpt, _ = _paths(out, run.name)
    cfg = dict(run.config)
    rounds = int(cfg.get("rounds", 100))
    if not cfg.get("checkpoint_every"):
        cfg["checkpoint_every"] = max(1, -(-rounds // 10))  # at most 10 checkpoints a run
    cfg.update(run_id=run.name, records_path=str(records), checkpoint_path=str(ckpt),
               progress=False)
    return cfg


# settings that change neither the numbers nor where they go: a finished run stays valid
_GUARDS = frozenset({"stream_rows", "divergence"})
# where a run computes, like its thread count and its processor: the same run's numbers to
# float rounding (its records' provenance names the device, torch and environment it ran in;
# a figure's certificates judge values per numeric environment), so a run finished on a GPU
# is reused on the CPU and the other way round; an interrupted one resumes only where it ran
# (the engine's resume refuses another device, naming it)
_PLACE = frozenset({"device"})


def _added_hparams(wanted: Mapping[str, Any]) -> dict[str, Any]:
    """The hyper-parameters of ``wanted``'s algorithm (a registry name) with their defaults:
    one a stored run's config lacks was added to the algorithm after that run, which ran at
    the default (a new hyper-parameter's default keeps the numbers it had)."""
    name = wanted.get("algorithm")
    if not isinstance(name, str) or name not in ALGORITHMS:
        return {}
    return {k: jsonable(p.default) for k, p in flat_parameters(ALGORITHMS[name]).items()
            if p.default is not p.empty}


def _differs(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> str | None:

    stored, wanted = jsonable(stored), jsonable(wanted)  # inf as the header stores it
    keys = (set(stored) | set(wanted)) - _WHERE - _GUARDS - _PLACE
    added = {**_added_hparams(wanted), **jsonable(ADDED_SETTINGS)}
    for k in sorted(keys):
        # a setting or hyper-parameter added after the stored run was recorded: it ran at
        # the default
        there = stored.get(k, added.get(k))
        if k == "eval_every" and wanted.get(k) == "auto" and _interval(there):
            continue  # "auto" as the stored run resolved it from its data (its header's number)
        if there != wanted.get(k):
            return f"{k}: {there!r} there, {wanted.get(k)!r} now"
    return None


def _interval(value: Any) -> bool:
    """Whether ``value`` is an evaluation interval a run resolved ``eval_every="auto"`` to."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _state(run: SweepRun, out: Path, overwrite: bool) -> tuple[str, dict[str, Any]]:
    """``("done" | "resume" | "fresh", marker)``; raises if the files hold another config."""

    records, ckpt, done = _paths(out, run.name)
    if overwrite:
        return "overwrite", {}
    if not records.exists():
        _refuse_foreign(ckpt, done)
        return "fresh", {}
    try:
        stored = read_header(records).get("config", {})
    except ConfigError:
        if not _header_cut(records):
            raise ConfigError(f"{records} is not the records of a sweep run (its first line is "
                              "not a topofl header): the sweep does not replace it; move it "
                              "away, or use another output directory") from None
        _refuse_foreign(ckpt, done)
        return "fresh", {}  # killed before its header was written
    diff = _differs(stored, validate(_run_config(run, out)))
    if diff is not None:
        raise ConfigError(f"{records} holds a run with another config ({diff}); use another "
                          "output directory, or overwrite")
    if done.exists():
        try:
            return "done", json.loads(done.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            pass
    return ("resume" if ckpt.exists() else "fresh"), {}


def _header_cut(records: Path) -> bool:
    """Whether ``records`` is what a run killed while writing its header leaves: an empty
    file, or the start of a header line (``{"header": true, ...`` cut short, no newline)."""
    try:
        with open(records, "rb") as fh:
            head = fh.read(64 * 1024)
    except OSError:
        return False
    mark = b'{"header": true'
    return b"\n" not in head and (mark.startswith(head) or head.startswith(mark))


def _refuse_foreign(ckpt: Path, done: Path) -> None:
    """Refuse to run fresh over a checkpoint or finished marker that topofl did not write (the
    fresh run would remove them)."""
    if ckpt.exists() and _checkpoint_round(ckpt) is None:
        raise ConfigError(f"{ckpt} is in the way of a sweep run and is not a topofl checkpoint "
                          "(it cannot be read as one): the sweep does not remove it; move it "
                          "away, or use another output directory")
    if done.exists():
        try:
            marker = json.loads(done.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            marker = None
        if not isinstance(marker, dict):
            raise ConfigError(f"{done} is in the way of a sweep run and is not a sweep's "
                              "finished marker: the sweep does not remove it; move it away, or "
                              "use another output directory")


def _checkpoint_round(ckpt: Path) -> int | None:
    """The round a checkpoint (a file or a sharded folder) resumes from, read through the
    checksummed readers; ``None`` when it cannot be read (the run's own resume then falls back
    to the ``.old`` copy or reports the damage)."""

    try:
        return int(load_any(ckpt)["round"])
    except (CheckpointError, KeyError, TypeError, ValueError):
        return None
