"""``topofl study``: the command line of :func:`topofl.study.study`."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from topofl._utils.configfiles import read_labels
from topofl.study.core import study
from topofl.study.options import Bootstrap, Output, Selection
from topofl.study.result import IncompleteRunsError

__all__ = ["main"]


def main(argv: Sequence[str] | None = None, *, prog: str = "topofl study") -> int:
    """``topofl study DIR --out REPORT_DIR``: run :func:`~topofl.study.study` and print where
    it wrote.

    Returns the exit status: 2 with a one-line error for bad input, 1 with ``--strict`` when
    a run is incomplete or a file unreadable (without it they are left out and each is named
    in a warning line on stderr).
    """
    parser = argparse.ArgumentParser(
        prog=prog, description="The topology-vs-convergence study of a folder of records.")
    parser.add_argument("source", nargs="+", help="a folder of *.jsonl records, or files")
    parser.add_argument("--out", required=True, help="folder for study.md, CSVs and PNGs")
    parser.add_argument("--metric", default="test_acc_mean",
                        help="higher-is-better curve (default test_acc_mean)")
    parser.add_argument("--target", type=float, default=None,
                        help="target of rounds-to-target (default 0.9 x median best)")
    parser.add_argument("--topology-metrics", default=None,
                        help="comma-separated graph.* keys to correlate (default: all varying)")
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap draws (1000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (0)")
    parser.add_argument("--band", choices=("minmax", "std"), default="minmax",
                        help="band of the curves (minmax)")
    parser.add_argument("--no-figures", action="store_true", help="tables and Markdown only")
    parser.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                        help="keep only runs whose config has KEY=VALUE (repeatable; keys as "
                             "in the run table's condition labels, e.g. "
                             "partition_params.classes_per_client=1)")
    parser.add_argument("--strict", action="store_true",
                        help="exit with status 1 if a run is incomplete or a file unreadable "
                        "(default: leave them out and name them on stderr)")
    parser.add_argument("--include-incomplete", action="store_true",
                        help="keep incomplete runs in the tables (still named)")
    parser.add_argument("--label", action="append", default=[], metavar="SPEC=NAME",
                        help="show a condition or a metric as NAME in study.md and the figures "
                             "(repeatable; SPEC: the condition's label, e.g. topology=ring, its "
                             "name in the figures, or the value of a one-key condition, e.g. "
                             "ring; or a metric, e.g. global_acc_mean=accuracy, "
                             "rounds_to_target, spectral_gap; split at the last '=')")
    parser.add_argument("--correction", choices=("none", "holm"), default="none",
                        help="correct the pairwise verdicts and the correlations for the "
                             "number of tests: holm (Holm-Bonferroni) or none (default)")
    parser.add_argument("--labels", metavar="CONFIG",
                        help="read the names from the [labels] table of a config file (e.g. the "
                             "sweep's own TOML); --label wins over it")
    parser.add_argument("--format", default="png", metavar="FMT[,FMT]",
                        help="figure formats among png, pdf, svg (default png; e.g. png,pdf)")
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    src: Any = args.source[0] if len(args.source) == 1 else args.source
    try:
        where: dict[str, str] = {}
        for item in args.where:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise ValueError(f"--where expects KEY=VALUE, got {item!r}")
            where[key.strip()] = value.strip()
        labels: dict[str, str] = {} if args.labels is None else read_labels(args.labels)
        for item in args.label:
            spec, sep, name = item.rpartition("=")
            if not sep or not spec.strip() or not name.strip():
                raise ValueError(f"--label expects SPEC=NAME, got {item!r}")
            labels[spec.strip()] = name.strip()
        if len(args.source) == 1 and not Path(src).exists():
            raise FileNotFoundError(f"no such file or folder: {src}")
        res = study(
            src, args.out, metric=args.metric, target=args.target,
            topology_metrics=None if args.topology_metrics is None
            else [m.strip() for m in args.topology_metrics.split(",") if m.strip()],
            labels=labels, correction=args.correction,
            selection=Selection(where=where, strict=args.strict,
                                include_incomplete=args.include_incomplete),
            bootstrap=Bootstrap(n_boot=args.n_boot, seed=args.seed),
            output=Output(figures=not args.no_figures, band=args.band,
                          formats=[f for f in args.format.split(",") if f.strip()],
                          command=" ".join([prog, *(shlex.quote(a) for a in argv)])),
        )
    except IncompleteRunsError as exc:
        print(f"{prog}: error: --strict: {exc}", file=sys.stderr)
        return 1
    except (ValueError, TypeError, KeyError, FileNotFoundError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    what = "kept" if args.include_incomplete else "left out"
    for run, why in res.incomplete.items():
        print(f"{prog}: warning: run {run} is not finished ({what}): {why}", file=sys.stderr)
    for path, why in res.unreadable.items():
        print(f"{prog}: warning: {path} is unreadable (left out): {why}", file=sys.stderr)
    left = [f"{len(d)} {w}" for d, w in ((res.incomplete, "incomplete"),
                                          (res.unreadable, "unreadable")) if d]
    print(f"{len(res.runs)} runs, {len(res.conditions)} conditions, target "
          f"{res.metric} >= {res.target:.4g}; wrote {len(res.files)} files to {args.out} "
          f"(study.md)" + (f"; {' and '.join(left)} {what} (named above)" if left else ""))
    return 0
