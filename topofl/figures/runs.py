"""What a figure script was asked to do, and the cached runs it reads.

:func:`parse_args` reads a script's command line into a :class:`FigureArgs`; :func:`sweep`
runs a config's sweep over its seeds, or reuses the cached runs.

**Cache and provenance.** A cached run is reused only while its stored resolved config equals
the wanted one *and* it was computed by the current library code, or by code certified to
compute the same (:func:`current_codes`): :func:`~topofl._utils.fingerprint.code_fingerprint` (the
version and a hash of the source files of ``topofl/`` that affect results; see
:data:`~topofl._utils.fingerprint.NOT_RESULT_CODE`) is stored beside each run (``<run>.code``); a
run of other code is run again. Cached runs live in ``paper_figures/out/runs/<scale>/<name>/``.

**Outputs.** Every scale writes to ``paper_figures/out/<scale>/`` (``--out DIR`` elsewhere);
``--update-results`` writes the default scale to the committed ``paper_figures/results/`` (and
``--full`` to ``paper_figures/results/full/``), the only way those files change.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import os
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from topofl import sweep as _sweep
from topofl._utils.fingerprint import code_fingerprint
from topofl._utils.processes import lock
from topofl.figures.certificates import equivalent_codes
from topofl.figures.config import FigureError, _clean, _root
from topofl.records import load_many

__all__ = ["THREADS", "FigureArgs", "parse_args", "current_codes", "sweep", "sweep_all"]

#: Torch threads of every figure run, whatever ``--jobs`` is: float32 sums round by the thread
#: count, so a result's numbers are reproducible to the bit only at a fixed count (recorded in
#: each run's provenance, ``torch_threads``, and in the result).
THREADS = 1


@dataclass
class FigureArgs:
    """What a figure script was asked to do (see :func:`parse_args`)."""

    name: str
    scale: str
    out: Path
    runs: Path
    rerun: bool = False
    jobs: int = 1
    started: float = field(default_factory=time.perf_counter)
    sweep_seconds: float = 0.0  # spent in :func:`sweep` (running or reading runs)
    run_seconds: float = 0.0    # the training time the runs recorded (``wall_time``)
    counted: set[str] = field(default_factory=set)  # the runs in run_seconds (read once)
    update_results: bool = False
    run_codes: set[str] = field(default_factory=set)  # the fingerprints that computed the runs
    stack: bool = True  # run the runs that can stack as stacked passes (``--stack off``: alone)


def parse_args(doc: str | None, name: str, argv: Sequence[str] | None = None) -> FigureArgs:
    """Parse a figure script's command line: ``[--quick | --full] [--out DIR |
    --update-results] [--rerun] [--jobs N] [--stack {on,off}] [--runs DIR]``.

    Every scale writes to ``paper_figures/out/<scale>/`` unless ``--out`` is given;
    ``--update-results`` writes the default scale to the committed ``paper_figures/results/``
    (``--full``: ``paper_figures/results/full/``). Cached runs live in
    ``paper_figures/out/runs/<scale>/<name>/`` (``DIR/runs/<name>/`` with ``--out`` at another
    scale than the default, so that a test keeps its own), or in ``--runs DIR``.

    Examples
    --------
    >>> a = tf.figures.runs.parse_args("Fig. 1", "dcliques_01", ["--quick"])
    >>> a.scale, a.out.parts[-2:], a.update_results
    ('quick', ('out', 'quick'), False)
    >>> tf.figures.runs.parse_args("Fig. 1", "dcliques_01", ["--update-results"]).out.name
    'results'
    """
    title = (doc or name).strip().splitlines()[0]
    p = argparse.ArgumentParser(prog=f"fig_{name}.py", description=title)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="a few rounds, one seed (smoke test)")
    g.add_argument("--full", action="store_true", help="the paper's exact setting (GPU)")
    o = p.add_mutually_exclusive_group()
    o.add_argument("--out", type=Path, default=None,
                   help="output folder (default: paper_figures/out/<scale>)")
    o.add_argument("--update-results", action="store_true",
                   help="write the committed results (paper_figures/results/, or results/full "
                   "with --full) instead of paper_figures/out/<scale>")
    p.add_argument("--rerun", action="store_true", help="ignore cached runs")
    p.add_argument("--jobs", type=int, default=1, help="runs at once (processes; 1)")
    p.add_argument("--runs", type=Path, default=None,
                   help="the cached runs' folder (default: paper_figures/out/runs/<scale>/<name>)")
    p.add_argument("--stack", choices=("on", "off"), default="on",
                   help="run the runs that can stack as stacked passes (on) or one by one")
    a = p.parse_args(list(sys.argv[1:] if argv is None else argv))
    if a.jobs < 1:
        p.error(f"--jobs must be >= 1, got {a.jobs}")
    scale = "quick" if a.quick else "full" if a.full else "default"
    if a.update_results and scale == "quick":
        p.error("--update-results writes the committed results of the default (or --full) "
                "scale; --quick results are never committed")
    root = _root()
    if a.out is not None:
        out = Path(a.out)
    elif a.update_results:
        out = root / "results" if scale == "default" else root / "results" / scale
    else:
        out = root / "out" / scale
    runs = root / "out" / "runs" / scale / name
    if a.out is not None and scale != "default":
        runs = Path(a.out) / "runs" / name  # a test's own folder keeps its own cache
    if a.runs is not None:
        runs = Path(a.runs)
    return FigureArgs(name, scale, out, runs, bool(a.rerun), int(a.jobs),
                      update_results=bool(a.update_results), stack=a.stack == "on")


# ------------------------------------------------------------------------------ provenance


def current_codes() -> set[str]:
    """The current :func:`code_fingerprint` and those certified to compute what it computes
    (:mod:`topofl.figures.snapshot`; the certificates beside the committed results): a committed
    result or cached run of one of these is current.

    Examples
    --------
    >>> tf.figures.code_fingerprint() in tf.figures.runs.current_codes()
    True
    """
    code = code_fingerprint()
    try:
        return equivalent_codes(code, _root() / "results")
    except FigureError:  # not in a clone: no certificates
        return {code}


# ------------------------------------------------------------------------------ running


def _stacked(out: Path, name: str) -> int:
    """How many runs ran in the stacked pass that ran ``name`` (1: it ran alone)."""
    try:
        marker = json.loads(_sweep.run_files(out, name).done.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 1
    k = marker.get("stacked", 1) if isinstance(marker, dict) else 1
    return k if isinstance(k, int) and not isinstance(k, bool) and k >= 1 else 1


def _restamp(out: Path, run: Any, code: str, same: set[str], rerun: bool, name: str) -> None:
    """Before :func:`sweep` runs ``run`` (its lock held): set its files aside when another
    setting or code not certified equal computed them, and stamp the code that will run it."""
    stamp = out / f"{run.name}.code"
    stored = stamp.read_text(encoding="utf-8").strip() if stamp.exists() else None
    there = _sweep.run_files(out, run.name).records.exists()
    if there and (stored not in same or _sweep.conflict(run, out) is not None):
        # kept, not removed: a checkout whose certificates lag its code would otherwise
        # delete runs a later certificate makes current again
        kept = _sweep.set_aside(out, run.name, out / "superseded" / (stored or "unstamped"))
        print(f"{name}/{run.name}: computed by other code ({stored}) or another config; "
              f"set aside in {kept}, run again", file=sys.stderr)
    if rerun or not there or stored not in same:  # --rerun: this code runs it
        stamp.write_text(code + "\n", encoding="utf-8")


def sweep(cfg: Mapping[str, Any], args: FigureArgs, *, cache: str | os.PathLike[str] | None
          = None) -> Any:
    """Run (or reuse) every run of ``cfg``'s sweep; their records, one run id per sweep run.

    Runs are written to ``<cache>/<name>/`` (``cache`` defaults to ``args.runs``, ``name`` to
    the config's stem). A finished run is reused while its stored config equals the wanted one
    and its ``<run>.code`` stamp is one of :func:`current_codes`; a run of another config or
    other code (or without a stamp) is run again from round 0, its files moved to
    ``<cache>/<name>/superseded/<its code>/`` (never deleted); an interrupted one of the same
    config and code resumes. Runs that can stack run as stacked passes
    (:mod:`topofl.engine.stack`: their accuracies and counts are those of the runs one by
    one, float32 losses to rounding), cut so that each of ``args.jobs`` workers has a share
    (``--stack off``: one by one).

    Returns
    -------
    Records
        Every run of the sweep (``records.runs`` are the sweep's run names, in plan order),
        each with its resolved config in ``records.configs``.

    Raises
    ------
    FigureError
        When a run fails (its message) or another process is running it.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> args = tf.figures.FigureArgs("toy", "quick", d / "out", d / "runs")
    >>> cfg = {"algorithm": "dsgd", "topology": "ring", "data": "digits", "n_clients": 4,
    ...        "rounds": 2, "spectral": False, "sweep": {"seed": [0, 1]}, "_name": "toy"}
    >>> rec = tf.figures.runs.sweep(cfg, args)  # one line a run on stderr
    >>> rec.runs, sorted(p.suffix for p in (d / "runs" / "toy").glob("seed=0.*"))
    (['seed=0', 'seed=1'], ['.arrows', '.ckpt', '.code', '.done', '.jsonl', '.lock'])
    """
    run_cfg = _clean(cfg)
    name = str(cfg.get("_name") or args.name)
    out = Path(cache if cache is not None else args.runs) / name
    out.mkdir(parents=True, exist_ok=True)
    planned = _sweep.plan(run_cfg)
    code = code_fingerprint()
    same = current_codes()
    for run in planned:  # another setting or other code invalidates the cached run
        with lock(out / f"{run.name}.lock") as mine:
            if not mine:  # another process runs it: its files and stamp are its own (a run
                continue  # set aside while it appends would split its records; busy below)
            _restamp(out, run, code, same, args.rerun, name)
    t0 = time.perf_counter()
    outcomes = _sweep.run_sweep(run_cfg, out, jobs=args.jobs, overwrite=args.rerun,
                                progress=False, threads=THREADS, stack=args.stack,
                                command=f"python paper_figures/fig_{args.name}.py",
                                echo=lambda line: print(line, file=sys.stderr))
    failed = [o for o in outcomes if o.status in ("failed", "busy")]
    if failed:
        raise FigureError(f"{len(failed)} run(s) of {name} failed or are running elsewhere, so "
                          "the figure is not drawn: "
                          + "; ".join(f"{o.name}: {o.message}" for o in failed))
    rec = load_many([_sweep.run_files(out, r.name).records for r in planned])
    args.run_codes.update((out / f"{r.name}.code").read_text(encoding="utf-8").strip()
                          for r in planned)
    args.sweep_seconds += time.perf_counter() - t0
    for run_id in rec.runs:
        key = str((out / run_id).resolve())  # a run a script reads twice counts once
        if "wall_time" in rec.metrics and key not in args.counted:
            args.counted.add(key)
            try:
                _, wall = rec.series("wall_time", run=run_id)
            except KeyError:  # a run that diverged before its first evaluation: no time
                continue
            # a stack of k runs took its wall time once: each of its runs counts its k-th
            args.run_seconds += float(wall[-1]) / _stacked(out, run_id) if wall.size else 0.0
    return rec




def sweep_all(cfgs: Sequence[Mapping[str, Any]], args: FigureArgs, *,
              cache: str | os.PathLike[str] | None = None) -> None:
    """Run the runs of several sweeps ``cfgs`` (a figure's configs, e.g. a grid's cells) in
    one pool of ``args.jobs`` workers, so that no worker waits for the last run of one sweep
    while another sweep has runs to do; :func:`sweep` then reads them.

    Each worker is a fresh interpreter that goes through every sweep with :func:`sweep` at
    one job, worker ``k`` from the ``k``-th sweep on, and leaves a run another worker holds
    (its lock: ``"busy"``) to that worker; a run that fails is left for the caller's
    :func:`sweep`, which reports it. The runs are those :func:`sweep` would run, with the
    same numbers: each is one interpreter's run at :data:`THREADS` threads either way.
    Nothing is done at one job, with ``--rerun`` (the caller runs every run again), for a
    single sweep (:func:`sweep`'s own workers share its runs) or with stacking on
    (``args.stack``: :func:`sweep` cuts a sweep's stacks by ``args.jobs``, and a stacked
    pass's float32 losses round by its stack, so the pool keeps to ``--stack off``).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> args = tf.figures.FigureArgs("toy", "quick", d / "out", d / "runs", jobs=2,
    ...                              stack=False)
    >>> cells = [{"algorithm": "dsgd", "topology": t, "data": "digits", "n_clients": 4,
    ...           "rounds": 1, "spectral": False, "sweep": {"seed": [0, 1]},
    ...           "_name": f"toy/{t}"} for t in ("ring", "complete")]
    >>> tf.figures.runs.sweep_all(cells, args)  # two workers, one line a run on stderr
    >>> sorted(p.parent.name + "/" + p.name for p in (d / "runs").rglob("*.done"))
    ['complete/seed=0.done', 'complete/seed=1.done', 'ring/seed=0.done', 'ring/seed=1.done']
    """
    if args.jobs < 2 or args.rerun or args.stack or len(cfgs) < 2:
        return
    one = dataclasses.replace(args, jobs=1, counted=set(), run_codes=set())
    order = [dict(c) for c in cfgs]
    with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        work = [pool.submit(_work_through, order[k:] + order[:k], one, cache)
                for k in range(args.jobs)]
        for w in work:
            w.result()


def _work_through(cfgs: list[dict[str, Any]], args: FigureArgs,
                  cache: str | os.PathLike[str] | None) -> None:
    """One worker of :func:`sweep_all`: every sweep of ``cfgs`` in turn, a run another
    worker holds, or one that fails, left to the caller's :func:`sweep`."""
    for cfg in cfgs:
        try:
            sweep(cfg, args, cache=cache)
        except (FigureError, OSError) as exc:  # busy elsewhere, or failed: the caller says
            print(f"{cfg.get('_name')}: left to the figure's own pass ({exc})"[:400],
                  file=sys.stderr)
