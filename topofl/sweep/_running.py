"""Running a sweep (:func:`run_sweep`): the runs still to do, their units of work in this
process or in a pool of workers, the progress bar and one line per run, and the message that
says how to resume when the sweep is interrupted.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import as_completed
from pathlib import Path
from typing import Any

from topofl._utils.processes import sigterm_raises, torch_threads, worker_pool
from topofl.config import ConfigError, ConfigTypeError, read_config
from topofl.sweep._execution import Outcome
from topofl.sweep._planning import SweepRun, plan, select
from topofl.sweep._resumption import _run_config, _state
from topofl.sweep._stacking import _execute_unit, _stack_units

__all__ = ["SweepInterrupted", "run_sweep"]


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
