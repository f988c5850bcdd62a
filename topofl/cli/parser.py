"""The arguments of ``topofl COMMAND``: the argparse parser of every command that ``topofl``
parses itself (``study``, ``report`` and ``figure`` parse their own), its usage errors raised
as one line (:class:`_UsageError`, reported by :func:`topofl.cli.main`).
"""

from __future__ import annotations

import argparse
import math
from typing import Any, NoReturn

from topofl import __version__
from topofl.cli.errors import TRACEBACK_ENV, _UsageError
from topofl.cli.lookup import _SECTIONS
from topofl.workflow.limits import MAX_PROBE_TIMEOUT

__all__: list[str] = []


def _positive(text: str) -> int:
    """An argparse type: one integer ``>= 1``."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _positive_seconds(text: str) -> float:
    """A ``--probe-timeout``: a finite number of seconds > 0, at most
    :data:`~topofl.workflow.limits.MAX_PROBE_TIMEOUT`."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0, got {text}")
    if value > MAX_PROBE_TIMEOUT:
        raise argparse.ArgumentTypeError(
            f"must be at most {MAX_PROBE_TIMEOUT:.0f} seconds (a week: "
            f"topofl.workflow.limits.MAX_PROBE_TIMEOUT), got {text}")
    return value


def _positives(text: str) -> list[int]:
    """An argparse type: comma-separated integers, each ``>= 1``."""
    values = [_positive(v.strip()) for v in text.split(",") if v.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    return values


class _Parser(argparse.ArgumentParser):
    """argparse, its usage errors raised (one line, then) rather than printed with usage."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(self.prog, message)


def _add_run_parsers(sub: Any) -> None:
    """The subcommands that run or plan training from a config: ``run``, ``sweep``, ``plan``."""
    p_run = sub.add_parser("run", help="train with topofl.run from a TOML/JSON config",
                           description="Train with topofl.run: the config's keys are its "
                           "keyword arguments (see `topofl list`).")
    p_run.add_argument("config", nargs="?", help="TOML (or .json) file of topofl.run keywords")
    p_run.add_argument("--algorithm", help="algorithm name (e.g. dsgd, dfedpgp)")
    p_run.add_argument("--topology", help="graph spec (e.g. ring, random_directed_push:k=10)")
    p_run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="any other keyword of topofl.run (repeatable; each key once, "
                       "and not one a flag sets: --set topology=... with --topology is an "
                       "error)")
    _add_import(p_run, "e.g. one that registers a graph family the config names; recorded in "
                "the records header")
    p_run.add_argument("--out", help="records file (default runs/<algorithm>.jsonl)")
    p_run.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    p_run.add_argument("--resume", metavar="CHECKPOINT",
                       help="continue the run of this config from CHECKPOINT (its "
                       "checkpoint_path), appending to its records file")
    p_run.add_argument("--replay", metavar="RECORDS.jsonl",
                       help="re-run the run recorded in RECORDS.jsonl from its header and "
                       "check that the rows are reproduced (written to --out if given)")
    p_sweep = sub.add_parser("sweep", help="run the Cartesian product of a config's [sweep]",
                             description="Run every combination of the [sweep] table, one "
                             "records file per run in --out; finished runs are skipped and "
                             "interrupted ones resume from their checkpoint.")
    p_sweep.add_argument("config", help="TOML (or .json) config with a [sweep] table")
    p_sweep.add_argument("--out", required=True, help="output directory")
    _add_import(p_sweep, "in this process and in every worker; recorded in each run's header")
    p_sweep.add_argument("--shard", metavar="I/K", help="run only the I-th of K slices")
    p_sweep.add_argument("--jobs", type=int, default=1, help="runs at once (processes; 1)")
    p_sweep.add_argument("--threads", type=int, default=1,
                         help="torch threads of every run, whatever --jobs is (1): float32 "
                         "numbers depend on it")
    p_sweep.add_argument("--overwrite", action="store_true",
                         help="run every run again from round 0")
    p_sweep.add_argument("--dry-run", action="store_true",
                         help="print the names of the runs (of this shard) and stop")
    p_sweep.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                         help="progress bar on stderr (default: on a terminal)")
    p_sweep.add_argument("--stack", choices=("on", "off"), default=None,
                         help="run the runs that share an algorithm and model shape as one "
                         "batched pass (default: on, or the config's stack key)")
    p_plan = sub.add_parser("plan", help="predict a run's peak memory and time per round",
                            description="Predict, before running, the peak memory of a config "
                            "by part, its seconds a training round and an evaluation (from a "
                            "few real rounds), the whole run's seconds and the largest number "
                            "of clients that fits here; exit 1 if it cannot fit.")
    p_plan.add_argument("config", help="TOML (or .json) file of topofl.run keywords")
    p_plan.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="any other keyword of topofl.run (repeatable)")
    _add_import(p_plan, "before the config is read")
    p_plan.add_argument("--json", action="store_true", help="print one JSON object")
    p_plan.add_argument("--no-time", action="store_true",
                        help="do not time rounds (seconds_per_round is null)")
    p_plan.add_argument("--probe-timeout", type=_positive_seconds, default=600.0,
                        metavar="SECONDS",
                        help="stop the probe run after this many seconds (600; at most a "
                        "week, 604800)")


def _add_bench_parser(sub: Any) -> None:
    """The ``bench`` subcommand."""
    p_bench = sub.add_parser(
        "bench", help="client-steps/s, samples/s, memory per client against a shared-weight "
        "floor", description="Time the engine's local step (the executor it chooses) against "
        "ONE shared-weight model doing forward, backward and update on the same n x batch "
        "samples, and its gossip against a copy of the [n, P] buffer; report client-steps and "
        "samples per second, peak memory and bytes per client as Markdown.")
    p_bench.add_argument("--model", type=lambda s: [m.strip() for m in s.split(",") if
                                                    m.strip()],
                         default=["logistic", "mlp"], metavar="A,B",
                         help="models of `topofl list models` (default logistic,mlp)")
    p_bench.add_argument("--n", type=_positives, default=[100, 1000], metavar="N1,N2",
                         help="numbers of clients, each >= 1 (default 100,1000)")
    p_bench.add_argument("--batch", type=_positive, default=16,
                         help="samples per client and step (16)")
    p_bench.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                         help="where the clients live (cpu)")
    p_bench.add_argument("--rounds", type=_positive, default=10,
                         help="timed repetitions after one untimed (10)")
    p_bench.add_argument("--threads", type=_positive, default=None,
                         help="torch threads (default: torch's)")
    p_bench.add_argument("--input-shape", type=_positives, default=None, metavar="D1,D2",
                         help="one sample's shape for every model (default: the model's data "
                         "set, e.g. 784 for logistic, 3,32,32 for gn_lenet)")
    p_bench.add_argument("--hidden", type=_positives, default=None, metavar="W1,W2",
                         help="widths of mlp's hidden layers (default 200,200); e.g. "
                         "--model mlp --input-shape 40 --hidden 64 --batch 50")
    p_bench.add_argument("--no-memory", action="store_true",
                         help="do not measure the peak memory (a child process per row)")
    p_bench.add_argument("--out", help="write the Markdown to this file (default stdout); an "
                         "existing file is refused unless --force")
    p_bench.add_argument("--force", action="store_true", help="replace an existing --out")
    p_bench.add_argument("--json", action="store_true",
                         help="print the result as one JSON object on stdout")


def _add_import(parser: argparse.ArgumentParser, what: str) -> None:
    """The ``--import MODULE`` option of a command (``run``, ``sweep``, ``plan``, and ``list``
    and ``spectral``, which only look names up): the modules are imported before the command
    reads its arguments (:func:`topofl._utils.userimports.load_imports`); ``what`` ends the
    help."""
    parser.add_argument("--import", dest="imports", action="append", default=[],
                        metavar="MODULE", help="a module of yours to import first (a name "
                        f"importable from the current directory, or a path to a .py file), "
                        f"{what}; repeatable")


def _parser(description: str) -> argparse.ArgumentParser:
    """The parser of ``topofl COMMAND`` (``description``: its first line of help)."""
    parser = _Parser(
        prog="topofl", description=description,
        epilog="Errors print one line on stderr and exit with status 2 (bad input) or 1 (a "
        "failure while running); Ctrl-C exits with 130. Add --traceback (or set "
        f"{TRACEBACK_ENV}=1) to see the full Python traceback.")
    parser.add_argument("--version", action="version", version=f"topofl {__version__}")
    parser.add_argument("--traceback", action="store_true",
                        help="on an error, show the full Python traceback instead of one line "
                        f"(also: environment variable {TRACEBACK_ENV}=1); accepted anywhere "
                        "on the command line")
    sub = parser.add_subparsers(dest="command", required=True)
    p_demo = sub.add_parser("demo", help="D-SGD on ring, D-Cliques and complete graph")
    p_demo.add_argument("--out", default="topofl-demo", help="output folder (topofl-demo)")
    p_demo.add_argument("--rounds", type=int, default=300, help="rounds (default 300)")
    p_demo.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    p_demo.add_argument("--eval-every", type=int, default=10, help="evaluation period (10)")
    _add_run_parsers(sub)
    _add_bench_parser(sub)
    sub.add_parser("quickstart", help="compare the spectral gaps of a few graphs")
    p_list = sub.add_parser("list", help="list graphs, algorithms, models, datasets, "
                            "partitions and run settings with their parameters")
    p_list.add_argument("section", nargs="?", choices=_SECTIONS,
                        help="only this section (default: all)")
    _add_import(p_list, "e.g. one that registers a graph family, algorithm, model or dataset, "
                "listed with the built-in ones")
    p_spec = sub.add_parser("spectral", help="spectral summary of graphs given as specs")
    p_spec.add_argument("specs", nargs="+", help="graph specs such as ring:n=64")
    p_spec.add_argument("--seed", type=int, default=0, help="seed of random graphs (default 0)")
    p_spec.add_argument(
        "--horizon", type=int, default=None,
        help="rounds examined by the sequence metrics (default max(50, 2 * period))",
    )
    p_spec.add_argument("--json", action="store_true", help="print every metric as JSON lines")
    p_spec.add_argument(
        "--metrics", default=None, metavar="A,B,...",
        help="only these summary keys (e.g. spectral_gap,b_connectivity); only their work is done",
    )
    p_spec.add_argument("--progress", action="store_true", help="progress bar on stderr")
    p_spec.add_argument(
        "--privacy", action="store_true",
        help="add the pairwise privacy of noisy gossip averaging and of a random walk "
             "(topofl.privacy.privacy_summary)",
    )
    p_spec.add_argument("--sigma", type=float, default=1.0,
                        help="--privacy's noise multiplier (default 1)")
    p_spec.add_argument("--privacy-rounds", type=int, default=10,
                        help="--privacy's gossip steps (default 10)")
    _add_import(p_spec, "e.g. one that registers the graph family a spec names")
    sub.add_parser("study", help="topology-vs-convergence study of a folder of records")
    sub.add_parser("report", help="spectral comparison report of graphs given as specs")
    sub.add_parser("figure", help="regenerate a paper figure: list, index or NAME (a clone)")
    return parser
