"""Command-line entry point: ``topofl COMMAND`` (also ``python -m topofl COMMAND``).

Commands
--------
``demo``
    Train D-SGD on a ring, D-Cliques and the complete graph (digits, 100 clients, 2 shards
    each) and write records and a convergence figure to ``./topofl-demo/``.
``run [CONFIG.toml] [--algorithm A] [--topology SPEC] [--set key=value ...] [--out F]``
    Train with ``topofl.run``: keys of the TOML (or JSON) config and ``--set`` pairs are its
    keyword arguments (``data``, ``partition``, ``n_clients``, ``model``, ``rounds``, ``seed``,
    run settings and the algorithm's hyper-parameters; see :mod:`topofl.config`); prints the
    final accuracies (of the honest nodes in a ``[byzantine]`` run) and writes the records to
    ``--out`` (default ``runs/<algorithm>.jsonl``; an existing file needs ``--overwrite``).
    ``--set`` and the flags replace the config's keys; one key given twice on the command
    line (``--topology ring --set topology=torus``, ``--out`` and ``--set records_path=``, a
    key in two ``--set``) is an error naming both.
``run ... --resume CHECKPOINT``
    Continue an interrupted run of the same config from its checkpoint.
``run --replay RECORDS.jsonl [--out F]``
    Re-run a recorded run from its header and check that its rows are reproduced.
``sweep CONFIG.toml --out DIR [--shard I/K] [--jobs N] [--stack on|off]``
    Run the Cartesian product of the config's ``[sweep]`` table (:mod:`topofl.sweep`).
``run / sweep / plan / spectral / list ... --import MODULE``
    Import a module of yours first (repeatable; a name importable from the current directory
    or ``sys.path``, or the path of a ``.py`` file), e.g. one that registers a graph family,
    algorithm, model or dataset the config names; the config's ``imports = [...]`` key does
    the same. Recorded in the records header; a replay imports them again (a path from the
    absolute file the header records, so a replay runs from any folder) and a replay or a
    resume whose modules are missing or changed is refused (:mod:`topofl._utils.userimports`).
``quickstart``
    Build a few 64-node graphs and compare their spectral gaps (the README's first example).
``list [graphs|algorithms|models|datasets|partitions|settings]``
    List what a config can name, with parameters and defaults.
``spectral SPEC [SPEC ...]``
    Print the size, degree and spectral gap of graphs given as specs (``ring:n=64``).
``plan CONFIG.toml [--json] [--set key=value ...]``
    Predict a run's peak memory (by part), seconds a training round and an evaluation, the
    whole run's seconds and the largest number of clients that fits here, before running it
    (:mod:`topofl.workflow.plan`); a plan that cannot fit exits 1, a config a run would refuse
    (a device not here, ``eval_val`` without validation splits, a batch that cannot fit)
    exits 2.
``bench [--model A,B] [--n N1,N2] [--batch B] [--hidden W1,W2] [--out F.md [--force]] ...``
    Time the engine's local step against one shared-weight model on the same samples, and its
    gossip against a copy of the parameter buffer; client-steps and samples per second, peak
    memory and bytes per client, as Markdown (:mod:`topofl.tools.bench`). A row whose estimated
    memory cannot fit, or an existing ``--out`` without ``--force``, is refused (status 2)
    before anything runs.
``study DIR --out REPORT_DIR``
    The topology-vs-convergence study of a folder of records (:mod:`topofl.study`).
``report [SPEC ...] [--out DIR]``
    The spectral comparison report of graphs given as specs (:mod:`topofl.report`).

Errors end in one line on stderr (``topofl run: error: ...``) and a non-zero exit status;
``--traceback`` (or ``TOPOFL_TRACEBACK=1``) shows the full traceback instead. The arguments
and the config file are checked before torch is imported: a mistyped flag, a missing or
malformed config is reported at once.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence

from topofl._utils.heartbeat import heartbeat
from topofl.cli.errors import TRACEBACK_ENV, _exit_code, _one_line, _report, _UsageError
from topofl.cli.lookup import _list, _quickstart, _spectral
from topofl.cli.parser import _parser
from topofl.cli.runs import _bench, _plan, _run, _sweep

__all__ = ["main"]


def _dispatch(args: argparse.Namespace, command: str) -> int:
    if args.command == "demo":
        from topofl.tools.demo import run_demo  # the CLI imports what a command runs

        run_demo(args.out, rounds=args.rounds, seed=args.seed, eval_every=args.eval_every)
        return 0
    if args.command == "run":
        return _run(args, command)
    if args.command == "sweep":
        return _sweep(args, command)
    if args.command == "plan":
        return _plan(args)
    if args.command == "bench":
        return _bench(args, command)
    if args.command == "quickstart":
        return _quickstart()
    if args.imports:  # list, spectral: the user's names, before any is looked up
        from topofl._utils.userimports import load_imports  # the CLI imports what a command runs

        load_imports(args.imports)
    if args.command == "list":
        return _list(args.section)
    return _spectral(args.specs, args.seed, args.horizon, args.json, args.metrics,
                     args.progress, privacy=args.privacy, sigma=args.sigma,
                     privacy_rounds=args.privacy_rounds)


def _delegate(command: str, argv: Sequence[str]) -> int:
    """``topofl study`` / ``report`` / ``figure``: their modules parse their own arguments."""
    if command == "figure":
        from topofl.figures.cli import main as figure_main  # the CLI imports what a command runs

        return figure_main(argv, prog="topofl figure")
    if command == "study":
        from topofl.study.cli import main as study_main  # the CLI imports what a command runs

        return study_main(argv, prog="topofl study")
    from topofl.report import main as report_main  # the CLI imports what a command runs

    return report_main(argv, prog="topofl report")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status.

    Errors are one line on stderr, ``topofl COMMAND: error: ...``: status 2 for a bad config or
    usage (``ValueError``, ``TypeError``, ``KeyError``, an output that exists without
    ``--overwrite``), 1 for a failure while running (any other ``OSError``, memory running out,
    a diverged run or another ``RuntimeError`` of topofl's). ``--traceback`` anywhere on the
    command line (or the environment variable ``TOPOFL_TRACEBACK=1``) shows the full traceback
    instead. Ctrl-C ends with status 130 (128 + SIGINT), quietly except for a sweep, which
    says which runs finished and how to resume (as it does for SIGTERM, status 143); output
    cut short by a closed pipe (``topofl list | head``) ends quietly with 141.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    traceback = "--traceback" in argv or os.environ.get(TRACEBACK_ENV, "") not in ("", "0")
    argv = [a for a in argv if a != "--traceback"]
    prog = "topofl"
    try:
        if argv[:1] in (["study"], ["report"], ["figure"]):
            prog = f"topofl {argv[0]}"
            with heartbeat(prog if argv[0] == "figure" else None):  # a line every 30 s in a log
                code = _delegate(argv[0], argv[1:])
        else:
            args, extra = _parser(__doc__.split("\n\n")[0]).parse_known_args(argv)
            prog = f"topofl {args.command}"
            if extra:
                raise _UsageError(prog, f"unrecognized arguments: {shlex.join(extra)}")
            with heartbeat(prog if args.command in ("run", "demo") else None):
                code = _dispatch(args, "topofl " + shlex.join(argv))
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # the reader went away (``| head``): silence the final flush at exit too
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports a process killed by a closed pipe
    except _UsageError as exc:
        if traceback:
            raise
        print(f"{exc.prog}: error: {_one_line(exc)} (see `{exc.prog} --help`)",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        if traceback:
            raise
        # 128 + the signal, as a shell reports a process stopped by Ctrl-C (130) or by
        # SIGTERM (143, an interrupted sweep: it has said what finished and how to resume)
        return 128 + int(getattr(exc, "signum", 2))
    except Exception as exc:
        status = _exit_code(exc)
        if traceback or status is None:
            raise
        _report(prog, exc, status)
        return status
