"""Sweeps: the Cartesian product of a config's ``[sweep]`` table, one records file per run.

A sweep config is a run config (:mod:`topofl.config`) with a ``[sweep]`` table whose keys map
to lists; the runs are every combination, in the order of the table (the last key varies
fastest)::

    algorithm = "dsgd"
    data = "digits"
    n_clients = 100
    rounds = 200
    lr = 0.1

    [sweep]
    topology = ["ring", "torus", "dcliques:clique_size=10,inter=ring", "complete"]
    seed = [0, 1]

Each run is written to ``OUT/<name>.jsonl`` where ``name`` (also its run id) is built from the
keys that vary (``topology=ring__seed=0``); a checkpoint ``OUT/<name>.ckpt`` beside it lets an
interrupted run resume, and ``OUT/<name>.done`` marks a finished one. Running the sweep again
skips finished runs, resumes interrupted ones from their checkpoint and starts the rest. A run
holds an advisory lock (``OUT/<name>.lock``, POSIX ``flock``) while it executes: a second sweep
over the same folder at the same time leaves that run alone (status ``"busy"``) instead of
writing the same files.
``shard=(i, k)`` runs the i-th of k disjoint slices (round-robin: runs ``i-1, i-1+k, ...``), so
``k`` machines given ``1/k .. k/k`` run every run exactly once; ``jobs=N`` runs N at once in
worker processes. Every run uses ``threads`` torch threads (default 1) whatever ``jobs`` is:
float32 sums round by the thread count, so the same seed gives the same numbers with any
``jobs`` (the count is in each run's provenance, ``torch_threads``). Every process imports
torch once and runs its runs in-process.

Examples
--------
>>> cfg = {"rounds": 5, "sweep": {"topology": ["ring", "dcliques:clique_size=5"],
...                               "seed": [0, 1], "lr": [0.1]}}
>>> for r in tf.sweep.plan(cfg):
...     print(r.name)
topology=ring__seed=0
topology=ring__seed=1
topology=dcliques-clique_size=5__seed=0
topology=dcliques-clique_size=5__seed=1
>>> [r.name for r in tf.sweep.select(tf.sweep.plan(cfg), (2, 2))]
['topology=ring__seed=1', 'topology=dcliques-clique_size=5__seed=1']
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from topofl._utils.files import replace_text
from topofl._utils.processes import lock, sigterm_raises, torch_threads, worker_pool
from topofl._utils.validation import check_time
from topofl.config import (
    ConfigError,
    ConfigTypeError,
    command_line,
    execute,
    read_config,
    read_header,
    resolve,
    split_sweep,
    validate,
)
from topofl.distributed.checkpoint import load_any
from topofl.engine.config import ADDED_SETTINGS
from topofl.exceptions import CheckpointError, ConvergenceError, InsufficientMemoryError
from topofl.records import load
from topofl.records.writer import jsonable

__all__ = ["SweepRun", "Outcome", "SweepInterrupted", "RunFiles", "plan", "select",
           "parse_shard", "run_name", "run_sweep", "run_files", "conflict", "discard"]

# settings that say where a run writes, not what it computes: a sweep sets them per run
_WHERE = frozenset({"records_path", "checkpoint_path", "checkpoint_every", "progress", "run_id"})
_MAX_NAME = 120


@dataclass(frozen=True)
class SweepRun:
    """One run of a sweep.

    Attributes
    ----------
    index : int
        Position in the full sweep (0-based).
    name : str
        File stem and run id, built from the varying keys.
    values : dict
        The values of the ``[sweep]`` keys for this run.
    config : dict
        The run's config (base keys and ``values``), not yet resolved.
    """

    index: int
    name: str
    values: dict[str, Any]
    config: dict[str, Any]


#: The honest nodes' statistics of a ``[byzantine]`` run: its summary line shows them.
_HONEST = ("honest_test_acc_mean", "honest_global_acc_mean")


@dataclass
class Outcome:
    """What happened to one run: ``status`` is ``"complete"``, ``"diverged"`` (a finished run
    whose training diverged), ``"skipped"`` (finished before), ``"busy"`` (another process was
    running it: left alone) or ``"failed"`` (an error; the run is retried by the next
    invocation)."""

    name: str
    status: str
    seconds: float = 0.0
    resumed_from: int | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    message: str = ""

    def line(self) -> str:
        """One line for the console: the final and best mean accuracies (of the honest
        nodes only, named ``honest_*``, for a ``[byzantine]`` run)."""
        parts = [self.name, self.status]
        if self.resumed_from is not None:
            parts[-1] += f" (resumed at round {self.resumed_from})"
        honest = [k for k in _HONEST if k in self.summary]
        for k in honest or ("test_acc_mean", "global_acc_mean"):
            if k in self.summary:
                s = self.summary[k]
                parts.append(f"{k} final {s['final']:.4f} best {s['best']:.4f}")
        if self.status in ("complete", "diverged", "failed") and self.seconds:
            parts.append(f"{self.seconds:.1f} s")
        if self.message:
            parts.append(self.message)
        return "  ".join(parts)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _safe(text: str) -> str:
    text = text.replace(":", "-").replace(",", "-")
    return re.sub(r"[^A-Za-z0-9._=+-]", "_", text)


def run_name(values: Mapping[str, Any], varying: Sequence[str]) -> str:
    """File-safe name of a run from the values of its varying keys (``"run"`` if none).

    Examples
    --------
    >>> tf.sweep.run_name({"topology": "dcliques:clique_size=10,inter=ring", "seed": 0},
    ...                   ["topology", "seed"])
    'topology=dcliques-clique_size=10-inter=ring__seed=0'
    """
    name = "__".join(f"{_safe(k)}={_safe(_text(values[k]))}" for k in varying) or "run"
    if len(name) > _MAX_NAME:
        name = name[:_MAX_NAME - 9] + "~" + _digest(values)
    return name.lstrip(".") or "run"


def _digest(values: Mapping[str, Any]) -> str:
    return hashlib.sha1(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()[:8]


def plan(cfg: Mapping[str, Any]) -> list[SweepRun]:
    """Every run of a sweep config, in order (one run when there is no ``[sweep]`` table).

    Every run's config is validated (:func:`topofl.config.validate`).

    Raises
    ------
    ConfigError
        For a bad ``[sweep]`` table, key or value (the message names the key).
    ValueError
        For a ``[sweep]`` with so many runs that planning them alone would take longer than
        ``TOPOFL_MAX_SECONDS`` (default 60 s; the message gives the estimate).
    """
    base, sweep = split_sweep(cfg)
    base.pop("stack", None)  # how the sweep runs (run_sweep reads it), not a run's setting
    _check_plan_size(sweep)
    for key in _WHERE & (set(sweep) | set(base)) - {"checkpoint_every", "progress"}:
        raise ConfigError(f"{key!r} is set by the sweep for each run; remove it from the config")
    keys = list(sweep)
    varying = [k for k in keys if len(sweep[k]) > 1]
    runs: list[SweepRun] = []
    for index, combo in enumerate(itertools.product(*(sweep[k] for k in keys))):
        values = dict(zip(keys, combo))
        config = {**base, **values}
        try:
            validate({**config, "checkpoint_path": "set-by-the-sweep"})
        except ConfigError as exc:
            where = ", ".join(f"{k}={_text(v)}" for k, v in values.items() if k in varying)
            cls = ConfigTypeError if isinstance(exc, TypeError) else ConfigError
            raise cls(f"{exc}" + (f" (in the sweep run {where})" if where else "")) from None
        runs.append(SweepRun(index, run_name(values, varying), values, config))
    names: dict[str, int] = {}
    for r in runs:
        names[r.name] = names.get(r.name, 0) + 1
    if any(c > 1 for c in names.values()):  # two values with the same safe text: add a digest
        runs = [r if names[r.name] == 1 else
                SweepRun(r.index, f"{r.name}~{_digest(r.values)}", r.values, r.config)
                for r in runs]
    return runs


#: A lower bound on the time :func:`plan` takes per run (it validates every run's config):
#: 0.254 ms measured (process CPU time, best of 3, a 40 x 50 sweep); 2.5x below.
_PLAN_SECONDS_PER_RUN = 1e-4


def _check_plan_size(sweep: Mapping[str, Sequence[Any]]) -> None:
    """Refuse, before anything is built, a ``[sweep]`` whose product is too large to plan."""

    sizes = [len(v) for v in sweep.values()]
    total = 1
    for k in sizes:
        total *= k
    if total > 1:
        check_time(total * _PLAN_SECONDS_PER_RUN,
                   f"a [sweep] of {' x '.join(map(str, sizes))} = {total:,} runs (each "
                   "validated when planned, and each a training run)")


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/k"`` -> ``(i, k)`` with ``1 <= i <= k``.

    Examples
    --------
    >>> tf.sweep.parse_shard("2/3")
    (2, 3)
    """
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise ConfigError(f"a shard is i/k with 1 <= i <= k (e.g. 1/4), got {text!r}")
    return int(m.group(1)), int(m.group(2))


def select(runs: Sequence[SweepRun], shard: tuple[int, int] | None) -> list[SweepRun]:
    """The runs of shard ``(i, k)``: ``runs[i-1::k]`` (all of them for ``None``)."""
    if shard is None:
        return list(runs)
    i, k = shard
    if not 1 <= i <= k:
        raise ConfigError(f"a shard is (i, k) with 1 <= i <= k, got {shard}")
    return list(runs[i - 1::k])


# ------------------------------------------------------------------------------ running


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
    """Remove the records, checkpoint and finished marker of the run ``name`` from ``out``
    (the next :func:`run_sweep` runs it from round 0).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "r.jsonl").write_text("{}")
    >>> tf.sweep.discard(d, "r")
    >>> sorted(p.name for p in d.iterdir())
    []
    """
    for path in run_files(out, name):
        path.unlink(missing_ok=True)


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


def _differs(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> str | None:

    stored, wanted = jsonable(stored), jsonable(wanted)  # inf as the header stores it
    keys = (set(stored) | set(wanted)) - _WHERE - _GUARDS
    for k in sorted(keys):
        # a setting added after the stored run was recorded: it ran at the default
        there = stored.get(k, jsonable(ADDED_SETTINGS.get(k)))
        if there != wanted.get(k):
            return f"{k}: {there!r} there, {wanted.get(k)!r} now"
    return None


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


def _summary(records: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for metric in ("test_acc_mean", "global_acc_mean", "train_loss", *_HONEST):
        if metric in records.metrics:
            _, v = records.series(metric)
            if v.size:
                finite = v[v == v]
                out[metric] = {"final": float(v[-1]),
                               "best": float(finite.max()) if finite.size else float("nan")}
    return out


def _write_json(path: Path, obj: Any) -> None:
    replace_text(path, [json.dumps(obj) + "\n"])


def _execute(cfg: dict[str, Any], name: str, mode: str, out: str,
             command: str | None) -> Outcome:
    """Run one sweep run (in this process or a worker) under its lock and mark it done."""
    with lock(Path(out) / f"{name}.lock") as mine:
        if not mine:
            return Outcome(name, "busy", message=f"another process is running it (it holds "
                           f"{Path(out) / (name + '.lock')}): left alone; run the sweep "
                           "again once that process has finished")
        records, ckpt, done = _paths(Path(out), name)
        if mode != "overwrite":  # what the files hold now: another sweep may have run it
            if done.exists():
                try:
                    marker = json.loads(done.read_text(encoding="utf-8"))
                    return Outcome(name, "skipped", summary=marker.get("summary", {}),
                                   message=f"({marker.get('status', 'complete')} before)")
                except (OSError, json.JSONDecodeError):
                    pass
            mode = "resume" if ckpt.exists() and records.exists() else "fresh"
        return _execute_locked(cfg, name, mode, out, command)


def _checkpoint_round(ckpt: Path) -> int | None:
    """The round a checkpoint (a file or a sharded folder) resumes from, read through the
    checksummed readers; ``None`` when it cannot be read (the run's own resume then falls back
    to the ``.old`` copy or reports the damage)."""

    try:
        return int(load_any(ckpt)["round"])
    except (CheckpointError, KeyError, TypeError, ValueError):
        return None


def _execute_locked(cfg: dict[str, Any], name: str, mode: str, out: str,
                    command: str | None) -> Outcome:

    records, ckpt, done = _paths(Path(out), name)
    t0 = time.perf_counter()
    resumed_from = None
    try:
        if mode == "resume":
            resumed_from = _checkpoint_round(ckpt)
            res = execute(cfg, resume=ckpt, command=command)
        else:
            for stale in (ckpt, done):
                stale.unlink(missing_ok=True)
            res = execute(cfg, overwrite=True, command=command)
        summary, status, message = _summary(res.records), "complete", ""
    except ConvergenceError as exc:
        summary = _summary(load(records)) if records.exists() else {}
        status, message = "diverged", str(exc)
    except Exception as exc:  # noqa: BLE001 - reported, and retried by the next invocation
        return Outcome(name, "failed", time.perf_counter() - t0, resumed_from,
                       message=f"{type(exc).__name__}: {exc}")
    outcome = Outcome(name, status, time.perf_counter() - t0, resumed_from, summary, message)
    _write_json(done, {"status": status, "summary": summary, "message": message})
    return outcome


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by SIGINT (Ctrl-C) or SIGTERM; ``signum`` says which.

    :func:`run_sweep` has ended its workers and printed what finished and how to resume
    before it raises this (a ``KeyboardInterrupt``, so code that catches Ctrl-C catches it).
    """

    def __init__(self, signum: int) -> None:
        super().__init__(f"sweep interrupted by {signal.Signals(signum).name}")
        self.signum = signum


def _interrupted_message(signum: int, outcomes: Sequence[Outcome], names: Sequence[str],
                         out: Path, command: str | None) -> str:
    done = {o.name for o in outcomes if o.status in ("complete", "diverged", "skipped")}
    failed = [o.name for o in outcomes if o.status in ("failed", "busy")]
    left = [n for n in names if n not in done and n not in failed]
    lines = [f"sweep interrupted ({signal.Signals(signum).name}): {len(done)} of {len(names)} "
             f"runs finished" + (f" ({', '.join(sorted(done))})" if done else "")
             + (f", {len(failed)} failed or busy ({', '.join(failed)})" if failed else "")
             + f"; {len(left)} not finished"
             + (f" ({', '.join(left[:10])}{', ...' if len(left) > 10 else ''})" if left
                else "") + "."]
    again = (f"run the same command again: {command}" if command else
             f"call run_sweep again with the same config and out={str(out)!r}")
    lines.append(f"To resume, {again} (finished runs are skipped, interrupted ones continue "
                 "from their last checkpoint).")
    return "\n".join(lines)


def _check_jobs(jobs: Any, threads: Any) -> None:
    """Refuse ``jobs`` that is not an int ``>= 1`` and ``threads`` that is neither that nor
    ``None`` (:func:`run_sweep`'s keywords)."""
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise ConfigError(f"jobs must be an int >= 1, got {jobs!r}")
    if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool)
                                or threads < 1):
        raise ConfigError(f"threads must be an int >= 1 or None, got {threads!r}")


def _pending(runs: Sequence[SweepRun], out_dir: Path, overwrite: bool
             ) -> tuple[list[tuple[SweepRun, dict[str, Any], str]], list[Outcome]]:
    """The runs still to do, each with its config and mode (``_state``), and the outcomes of
    the finished ones, skipped."""
    todo: list[tuple[SweepRun, dict[str, Any], str]] = []
    skipped: list[Outcome] = []
    for run in runs:
        mode, marker = _state(run, out_dir, overwrite)
        if mode == "done":
            skipped.append(Outcome(run.name, "skipped", summary=marker.get("summary", {}),
                                   message=f"({marker.get('status', 'complete')} before)"))
        else:
            todo.append((run, _run_config(run, out_dir), mode))
    return todo, skipped


def _execute_units(units: Sequence[list[tuple[SweepRun, dict[str, Any], str]]], out: str,
                   command: str | None, *, jobs: int, threads: int | None,
                   report: Callable[[Outcome], None], bar: Any) -> None:
    """Execute the units (runs that stack, or single runs) in this process with ``jobs == 1``
    or a single unit, else in a pool of ``min(jobs, len(units))`` workers, reporting every
    outcome as it comes."""
    if jobs == 1 or len(units) <= 1:
        with torch_threads(threads):
            for unit in units:
                bar.set_postfix_str(unit[0][0].name)
                for o in _execute_unit(unit, out, command):
                    report(o)
    else:
        with worker_pool(min(jobs, len(units)), threads) as pool:  # ended on an error
            futures = [pool.submit(_execute_unit, unit, out, command) for unit in units]
            for fut in as_completed(futures):
                for o in fut.result():
                    report(o)


def run_sweep(
    cfg: Mapping[str, Any] | str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    shard: tuple[int, int] | None = None,
    jobs: int = 1,
    overwrite: bool = False,
    progress: bool | None = None,
    command: str | None = None,
    echo: Callable[[str], None] | None = None,
    threads: int | None = 1,
    stack: bool | None = None,
) -> list[Outcome]:
    """Run the runs of a sweep (or of one shard of it) that are not finished yet.

    Parameters
    ----------
    cfg : mapping or path
        A sweep config, or the path of its TOML/JSON file.
    out : path
        Output directory (created): one ``<name>.jsonl`` records file per run, with its
        checkpoint ``<name>.ckpt`` and, once finished, ``<name>.done``.
    shard : (i, k), optional
        Run only the i-th of k disjoint slices (:func:`select`).
    jobs : int, default 1
        Runs at once, in worker processes (1: in this process).
    overwrite : bool, default False
        Run every run again from round 0, replacing its files. Otherwise finished runs are
        skipped and interrupted ones resume from their checkpoint; files that hold a run with
        another config are an error.
    progress : bool or None
        A tqdm bar over the runs on stderr; ``None`` shows it on a terminal only.
    command : str, optional
        Recorded in each run's provenance.
    echo : callable, optional
        Called with one summary line per run (default: print to stdout).
    threads : int or None, default 1
        Torch threads of every run, whatever ``jobs`` is (``None``: this process's count in
        process, ``cpu_count // jobs`` in workers). The numbers of a float32 run depend on it.
    stack : bool, optional
        Run the runs that can stack as one batched pass each
        (:mod:`topofl.engine.stack`: their records are those of the runs one by one).
        ``None`` (default): the config's ``stack`` key, true when it has none. Only fresh
        runs stack (a run resumed from its checkpoint runs alone), and the sweep says why a
        run does not stack.

    Returns
    -------
    list of Outcome
        In the order the runs finished.

    Raises
    ------
    ConfigError
        A bad config or sweep table, or an output file from another config (before any run
        starts).
    SweepInterrupted
        On SIGINT (Ctrl-C) or SIGTERM, after the workers are ended and a message on stderr
        has said which runs finished and how to resume (the same call again: finished runs
        are skipped, the others resume from their checkpoints).

    Notes
    -----
    Worker processes (``jobs > 1``) end with the sweep process however it ends, SIGKILL
    included (on Linux through ``PR_SET_PDEATHSIG``, everywhere through a thread that checks
    for the parent once a second): none is left running, or holding its output open.
    """
    _check_jobs(jobs, threads)
    if not isinstance(cfg, Mapping):
        cfg = read_config(cfg)
    stacking = cfg.get("stack", True) if stack is None else stack
    if not isinstance(stacking, bool):
        raise ConfigTypeError(f"stack must be true or false, got {stacking!r}")
    runs = select(plan(cfg), shard)
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    todo, skipped = _pending(runs, out_dir, overwrite)
    outcomes: list[Outcome] = []
    say = echo if echo is not None else print
    units = _stack_units(todo, say, jobs) if stacking else [[item] for item in todo]
    from tqdm.auto import tqdm

    show = sys.stderr.isatty() if progress is None else bool(progress)
    bar = tqdm(total=len(runs), desc="sweep", unit="run", file=sys.stderr, disable=not show)
    count = [0]

    def report(o: Outcome) -> None:
        count[0] += 1
        outcomes.append(o)
        line = f"[{count[0]}/{len(runs)}] {o.line()}"
        if show:
            bar.write(line, file=sys.stdout)
        else:
            say(line)
        bar.update(1)

    try:
        with sigterm_raises(SweepInterrupted):
            for o in skipped:
                report(o)
            _execute_units(units, str(out_dir), command, jobs=jobs, threads=threads,
                           report=report, bar=bar)
    except KeyboardInterrupt as exc:
        bar.close()
        signum = getattr(exc, "signum", int(signal.SIGINT))
        print(_interrupted_message(signum, outcomes, [r.name for r in runs], out_dir, command),
              file=sys.stderr, flush=True)
        raise SweepInterrupted(signum) from None
    finally:
        bar.close()
    return outcomes


# ------------------------------------------------------------------------------ stacking

_Item = tuple[SweepRun, dict[str, Any], str]


def _stack_group(rcfg: Mapping[str, Any]) -> tuple[Any, ...] | str:
    """The group of runs a run may stack with, or why it runs alone."""
    from topofl.engine.stack import alone_reason, stack_key

    prepared = resolve(rcfg).prepared
    why = alone_reason(prepared.run, prepared.algorithm)
    key = stack_key(prepared.run, prepared.algorithm)
    if why is not None or key is None:
        return why or "it cannot stack"
    call = prepared.call
    if not all(isinstance(call[k], str) for k in ("data", "model")):
        return "its data or model is an object, not a name"
    return (key, call["data"], call["model"], _text(call.get("model_params") or {}),
            _text(call.get("partition_params") or {}))


def _stack_units(todo: Sequence[_Item], say: Callable[[str], None],
                 jobs: int = 1) -> list[list[_Item]]:
    """The sweep's runs as units of work: stacks of runs that share a group (in the sweep's
    order, at the first member's place) and runs alone; says why a run runs alone.

    With ``jobs`` workers, a stack holds at most ``ceil(runs / jobs)`` runs (a larger group
    is cut into consecutive stacks of near-equal size), so that one stack does not keep one
    worker busy while the others have nothing to run."""
    cap = max(1, -(-len(todo) // jobs))
    units: list[list[_Item]] = []
    groups: dict[Any, list[_Item]] = {}
    alone: dict[str, list[str]] = {}
    for item in todo:
        run, rcfg, mode = item
        group: tuple[Any, ...] | str = ("resumes from its checkpoint" if mode == "resume"
                                        else _stack_group(rcfg))
        if isinstance(group, str):
            alone.setdefault(group, []).append(run.name)
            units.append([item])
        elif group in groups:
            groups[group].append(item)
        else:
            groups[group] = [item]
            units.append(groups[group])
    units = [part for unit in units for part in _cut(unit, cap)]
    for why, names in alone.items():
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        say(f"not stacked ({len(names)} run{'s' if len(names) > 1 else ''}: {shown}): {why}")
    for unit in units:
        if len(unit) > 1:
            say(f"stacked: {len(unit)} runs as one pass ({unit[0][0].name}, ...)")
    return units


def _cut(unit: list[_Item], cap: int) -> list[list[_Item]]:
    """``unit`` as consecutive parts of near-equal size, none longer than ``cap``."""
    parts = -(-len(unit) // cap)
    size, extra = divmod(len(unit), parts)
    bounds = [0]
    for i in range(parts):
        bounds.append(bounds[-1] + size + (1 if i < extra else 0))
    return [unit[a:b] for a, b in zip(bounds, bounds[1:])]


def _execute_unit(unit: Sequence[_Item], out: str, command: str | None) -> list[Outcome]:
    """Run one unit of work: a run alone (:func:`_execute`), or a stack under the locks of its
    runs (a run another process holds, or that finished meanwhile, leaves the stack)."""
    if len(unit) == 1:
        run, rcfg, mode = unit[0]
        return [_execute(rcfg, run.name, mode, out, command)]
    from contextlib import ExitStack

    outcomes: list[Outcome] = []
    with ExitStack() as held:
        mine: list[tuple[dict[str, Any], str]] = []
        for run, rcfg, mode in unit:
            name = run.name
            if not held.enter_context(lock(Path(out) / f"{name}.lock")):
                outcomes.append(Outcome(name, "busy", message="another process is running it: "
                                        "left alone; run the sweep again once it has finished"))
                continue
            done = _paths(Path(out), name)[2]
            if mode != "overwrite" and done.exists():  # finished meanwhile by another process
                try:
                    marker = json.loads(done.read_text(encoding="utf-8"))
                    outcomes.append(Outcome(name, "skipped", summary=marker.get("summary", {}),
                                            message=f"({marker.get('status', 'complete')} "
                                            "before)"))
                    continue
                except (OSError, json.JSONDecodeError):
                    pass
            mine.append((rcfg, name))
        if len(mine) == 1:
            outcomes.append(_execute_locked(mine[0][0], mine[0][1], "fresh", out, command))
        elif mine:
            outcomes.extend(_execute_stack_locked(mine, out, command))
    return outcomes


def _stack_memory_problem(prepared: Sequence[Any], members: Sequence[Any]) -> str | None:
    """Why the runs cannot run stacked for memory (:func:`topofl.workflow.memory.check_stack`), else
    ``None``: they then run one by one."""
    from topofl.workflow import memory as plan  # the memory model

    try:
        plan.check_stack([plan.run_shapes(p, model=m.model, data=m.data,
                                          topology=m.topology if p.algorithm.uses_topology
                                          else None)
                          for p, m in zip(prepared, members)])
    except InsufficientMemoryError as exc:
        return str(exc)
    return None


def _execute_stack_locked(mine: Sequence[tuple[dict[str, Any], str]], out: str,
                          command: str | None) -> list[Outcome]:
    """Run the runs ``mine`` (their locks held) as one stacked pass. A run that cannot be
    built runs alone (and reports its error); when the others cannot stack, or the pass
    stops (a run diverges), each of them runs alone instead, from round 0, which gives each
    its own outcome."""
    from topofl import api
    from topofl.engine.stack import Member, run_stacked, stack_problem

    outcomes: list[Outcome] = []
    built: list[tuple[dict[str, Any], str, Member]] = []
    prepared: list[Any] = []
    t0 = time.perf_counter()
    for rcfg, name in mine:
        _, ckpt, done = _paths(Path(out), name)
        try:
            with command_line(command):
                p = resolve(rcfg).prepared
                member = Member(*api.build(p, overwrite=True))
        except Exception:  # noqa: BLE001 - it runs alone, and reports its error there
            outcomes.append(_execute_locked(rcfg, name, "fresh", out, command))
            continue
        ckpt.unlink(missing_ok=True)
        done.unlink(missing_ok=True)
        built.append((rcfg, name, member))
        prepared.append(p)
    why = stack_problem([m for _, _, m in built]) if len(built) > 1 else "one run left"
    if why is None:  # each run fits alone (api.build checked it); together?
        why = _stack_memory_problem(prepared, [m for _, _, m in built])
    if why is None:
        try:
            results = run_stacked([m for _, _, m in built], placement=api.placement())
        except Exception as exc:  # noqa: BLE001 - each run then runs alone: its own outcome
            why = f"the stack stopped: {type(exc).__name__}: {exc}"
    if why is not None:
        for rcfg, name, _ in built:
            o = _execute_locked(rcfg, name, "fresh", out, command)
            if len(built) > 1:
                o.message = f"{o.message} (ran alone: {why})".strip()
            outcomes.append(o)
        return outcomes
    seconds = time.perf_counter() - t0
    summaries = [_summary(res.records) for res in results]
    # the runs' done markers side by side (each written and synced as a run alone writes it)
    with ThreadPoolExecutor(max_workers=min(len(built), 8)) as pool:
        list(pool.map(lambda item: _write_json(
            _paths(Path(out), item[0][1])[2],
            {"status": "complete", "summary": item[1], "message": "", "stacked": len(built)}),
            zip(built, summaries)))
    for (_, name, _), summary in zip(built, summaries):
        outcomes.append(Outcome(name, "complete", seconds, None, summary,
                                f"(stacked with {len(built) - 1} other runs)"))
    return outcomes
