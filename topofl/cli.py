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
    Predict a run's peak memory (by part), seconds per round and the largest number of clients
    that fits here, before running it (:mod:`topofl.workflow.plan`); a plan that cannot fit exits 1,
    a config a run would refuse (a device not here, ``eval_val`` without validation splits, a
    batch that cannot fit) exits 2.
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
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from topofl._utils.configfiles import read_config
from topofl._utils.heartbeat import heartbeat
from topofl.exceptions import ConfigError, OutputExistsError

if TYPE_CHECKING:  # imported lazily: ``topofl --help`` and ``--version`` must not load torch
    from topofl.graph import Topology

__all__ = ["main"]


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(r[k]) for r in [header, *rows]) for k in range(len(header))]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in rows]
    return "\n".join([line, sep, *body])


def _graph_rows(graphs: list[tuple[str, Topology]]) -> list[list[str]]:
    from topofl.spectral import summary

    rows = []
    for label, t in graphs:
        s = summary(t, metrics=["spectral_gap", "rounds_to_1e-6_bound"])
        gap, bound = s["spectral_gap"], s["rounds_to_1e-6_bound"]
        rounds = "inf" if bound is None else str(bound)
        rows.append([label, str(t.n), f"{t.edges_per_node:.2f}", f"{gap:.4f}", rounds])
    return rows


_HEADER = ["graph", "n", "edges/node", "spectral gap", "rounds_to_1e-6_bound"]


def _quickstart() -> int:
    from topofl import topologies

    graphs = [
        ("ring", topologies.ring(64)),
        ("torus 8x8", topologies.torus(8, 8)),
        ("random 4-regular", topologies.random_regular(64, 4, seed=0)),
        ("small world k=4 p=0.1", topologies.watts_strogatz(64, 4, 0.1, seed=0)),
        ("complete", topologies.complete(64)),
    ]
    print("Spectral gap 1 - max_{k>=2} |lambda_k(W)| of Metropolis mixing matrices, n = 64:\n")
    print(_table(_graph_rows(graphs), _HEADER))
    print(
        "\nA larger gap means faster gossip averaging: the disagreement between nodes shrinks by "
        "a factor (1 - gap) per round. rounds_to_1e-6_bound: ceil(ln(1e6) / -ln(1 - gap)), the "
        "rounds after which (1 - gap)^t <= 1e-6."
    )
    return 0


def _spectral(
    specs: Sequence[str],
    seed: int,
    horizon: int | None = None,
    as_json: bool = False,
    metrics: str | None = None,
    progress: bool = False,
) -> int:
    """Print :func:`topofl.spectral.summary` of each spec: a table, or one JSON object per line."""
    import json

    from topofl import topologies
    from topofl.spectral import summary

    def fmt(x: object, spec: str = ".4f") -> str:
        return "-" if x is None else format(x, spec) if isinstance(x, float) else str(x)

    columns = [  # (summary key, column, float format)
        ("n", "n", ".4f"), ("edges_per_node", "edges/node", ".2f"), ("spectral_gap", "gap", ".4f"),
        ("b_connectivity", "B", ".4f"), ("pushsum_one_minus_q", "1-q bound", ".2e"),
        ("pushsum_q_measured", "q measured", ".4f"), ("consensus_rate", "consensus rate", ".4f"),
        ("finite_time_consensus", "finite-time", ".4f"),
        ("rounds_to_1e-6_measured", "rounds_to_1e-6_measured", ".4f"),
    ]
    keys = None if metrics is None else [m.strip() for m in metrics.split(",") if m.strip()]
    if keys is not None:  # the chosen metrics, each under its own key
        columns = []
    rows: list[list[str]] = []
    for spec in specs:
        s = summary(
            topologies.build(spec, seed=seed), horizon=horizon,
            metrics=keys if keys is not None or as_json else [k for k, _, _ in columns],
            progress=progress,
        )
        if as_json:
            print(json.dumps({"spec": spec, **s}))
            continue
        if not columns:
            columns = [(k, k, ".4g") for k in s]
        rows.append([spec, *(fmt(s[k], f) for k, _, f in columns)])
    if not as_json:
        print(_table(rows, ["graph", *(c for _, c, _ in columns)]))
        if keys is None:
            print(
                "\ngap: 1 - max_{k>=2} |lambda_k(W)| (mean over rounds of a time-varying graph); "
                "B: rounds whose union is always strongly connected; 1-q bound: the push-sum "
                "bound (SGP Lemma 3), q measured: the contraction the products of W actually "
                "show; consensus rate: measured per-round contraction of the disagreement; "
                "finite-time: rounds after which the product of W is exactly 11^T/n; "
                "rounds_to_1e-6_measured: the finite-time round, else ln(1e-6) / ln(consensus "
                "rate) (rounds_to_1e-6_bound, from the gap alone, is in --json). --json prints "
                "every metric, --metrics a,b picks them."
            )
    return 0


_SECTIONS = ("graphs", "algorithms", "models", "datasets", "partitions", "settings")


def _first_line(obj: Any) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip()
    return doc.splitlines()[0].rstrip(".") if doc else ""


def _print_params(func: Any, skip: Sequence[str]) -> None:
    lines = _params(func, skip)
    if lines:
        print("\n".join(lines))


def _params(func: Any, skip: Sequence[str]) -> list[str]:
    """``name: type = default`` for the parameters of ``func`` a config can set."""
    import inspect

    out = []
    for p in inspect.signature(func).parameters.values():
        if p.name in skip or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        ann = "" if p.annotation is p.empty else f": {p.annotation}"
        default = " (required)" if p.default is p.empty else f" = {p.default!r}"
        out.append(f"    {p.name}{ann}{default}")
    return out


def _list(section: str | None) -> int:
    """Print the registered graphs, algorithms, models, datasets, partitions, run settings."""
    sections = _SECTIONS if section is None else (section,)
    for k, sec in enumerate(sections):
        if section is None:
            print(("\n" if k else "") + f"== {sec} ==")
        if sec == "graphs":
            from topofl import topologies

            for name in sorted(topologies.REGISTRY):
                print(topologies.REGISTRY[name].describe())
        elif sec == "algorithms":
            from topofl.algorithms import ALGORITHMS

            for name in sorted(ALGORITHMS):
                print(f"{name}: {_first_line(ALGORITHMS[name])}")
                _print_params(ALGORITHMS[name], ())
        elif sec == "models":
            from topofl.models import MODELS

            for name, fn in MODELS.items():
                print(f"{name}: {_first_line(fn)} (config: model_params)")
                _print_params(fn, ("input_shape", "num_classes"))
        elif sec == "datasets":
            from topofl.data import DATASETS

            for name, load in DATASETS.items():
                print(f"{name}: {_first_line(load)}")
        elif sec == "partitions":
            from topofl.data import PARTITIONS

            for name, scheme in PARTITIONS.items():
                print(f"{name}: {_first_line(scheme)} (config: partition_params)")
                _print_params(scheme, ("labels", "groups", "n_clients", "seed", "num_classes"))
        else:
            import dataclasses

            from topofl.api import run_defaults
            from topofl.engine import RunConfig

            print("run settings (config keys besides the algorithm's hyper-parameters):")
            call = run_defaults()  # rounds, seed: topofl.run's defaults, a config's too
            for f in dataclasses.fields(RunConfig):
                default = ("(required)" if f.default is dataclasses.MISSING and f.name not in call
                           else repr(call.get(f.name, f.default)))
                print(f"    {f.name}: {f.type} = {default}")
    return 0


def _parse_set(items: Sequence[str], flags: Mapping[str, tuple[str, Any]] | None = None
               ) -> dict[str, Any]:
    """The ``--set KEY=VALUE`` pairs as a dict of config keys, and the command line's flags
    that are such keys (``flags``: key -> (flag, value or ``None`` when not given)).

    One setting given twice on the command line is an error naming both (``--topology ring
    --set topology=torus``, or ``--set lr=0.1 --set lr=0.2``): neither silently wins. The
    config file is not the command line: ``--set`` and the flags replace its keys.
    """
    import json

    pairs: list[tuple[str, str]] = []
    given: dict[str, str] = {}
    for item in items:  # the form first: a mistyped pair is reported before any import
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"--set expects KEY=VALUE, got {item!r}")
        if key.strip() in given:
            raise ConfigError(f"{key.strip()} is set twice on the command line: "
                              f"--set {given[key.strip()]} and --set {item}; give it once")
        given[key.strip()] = item
        pairs.append((key.strip(), value))
    for key, (flag, value) in (flags or {}).items():
        if value and key in given:
            raise ConfigError(f"{key} is set twice on the command line: {flag} {value} and "
                              f"--set {given[key]}; give it once")
    if not pairs:
        return {}
    from topofl._utils.spec import parse_value

    out: dict[str, Any] = {}
    for key, value in pairs:
        try:  # JSON first ({"hidden": [64]}, [1, 2], true), else a spec-style scalar
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = parse_value(value.strip())
    return out


def _add_imports(cfg: dict[str, Any], flags: Sequence[str]) -> None:
    """The ``--import`` modules after the config's own ``imports`` (a config without either
    keeps no ``imports`` key: it resolves and records as before)."""
    if not flags:
        return
    given = cfg.get("imports", [])
    if not isinstance(given, list):  # the front door says what it expected
        return
    cfg["imports"] = [*given, *(f for f in flags if f not in given)]


def _print_result(records: Any) -> None:
    """The final (and best) accuracies and training loss of a run's records; of a
    ``[byzantine]`` run, the honest nodes' (its ``honest_*`` rows), saying so, and the
    statistics over every node on a line that says the Byzantine nodes are in them."""
    metrics = records.metrics
    every = ""
    if "honest_test_acc_mean" in metrics or "honest_global_acc_mean" in metrics:
        byz = (f"the {int(records.final('byzantine_clients'))} Byzantine nodes"
               if "byzantine_clients" in metrics else "the Byzantine nodes")
        print(f"honest nodes only ({byz} left out, as in the records' honest_* rows):")
        for metric in ("honest_test_acc_mean", "honest_global_acc_mean"):
            if metric in metrics:
                print(f"{metric}: final {records.final(metric):.4f}, "
                      f"best {records.best(metric):.4f}")
        every = " (every node, the Byzantine ones included)"
    for metric in ("test_acc_mean", "global_acc_mean"):
        if metric in metrics:
            print(f"{metric}: final {records.final(metric):.4f}, "
                  f"best {records.best(metric):.4f}{every}")
    if "train_loss" in metrics:
        print(f"train_loss: final {records.final('train_loss'):.4f}{every}")


def _environment_note(prov: Mapping[str, Any]) -> str:
    """Where the numeric environment a run recorded differs from this one (float sums round
    by it), as a note to a replay that did not reproduce; empty where it is the same."""
    from topofl._utils.cpu import cpu_kind
    from topofl._utils.environment import differences, numeric_environment

    recorded = prov.get("environment")
    if isinstance(recorded, Mapping):
        apart = differences(recorded, numeric_environment())
        if apart:
            return (f" (recorded in another numeric environment: {'; '.join(apart)}; a replay "
                    "is bitwise only in the same one, float values differ in the last bits "
                    "in another)")
        return ""
    if prov.get("cpu") != cpu_kind():  # recorded before environments were: the CPU kind
        return (f" (recorded on CPU kind {prov.get('cpu') or 'not recorded'}, this is "
                f"{cpu_kind()}, the rest of its numeric environment not recorded: a replay is "
                "bitwise only in the same environment, float values differ in the last bits "
                "in another)")
    return ""


def _other_run(stored: Any, replayed: Mapping[str, Any]) -> str | None:
    """How the replay's run differs from the one a header describes (its run hash and the
    fields that change the numbers, versions aside), or ``None``."""
    from topofl.engine.config import config_diff

    if not isinstance(stored, Mapping) or not isinstance(stored.get("run_hash"), str):
        return None  # a header without an engine description: nothing to compare

    def plain(d: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in d.items() if k not in ("distributed", "versions")}

    fields = config_diff(plain(stored), plain(replayed))
    if not fields:
        return None
    return (f"the replay ran another run than the header's (run hash "
            f"{replayed.get('run_hash')}, the header's {stored['run_hash']}): "
            + "; ".join(fields[:5]) + ("; ..." if len(fields) > 5 else ""))


def _run(args: argparse.Namespace, command: str) -> int:
    if args.replay:
        if (args.config or args.set or args.algorithm or args.topology or args.resume
                or args.imports):
            raise ConfigError("--replay re-runs a records header: it takes no config, --set, "
                              "--algorithm, --topology, --resume or --import (the header's "
                              "imports are imported again)")
        from topofl import config
        from topofl.records import load

        threads = config.read_header(args.replay).get("provenance", {}).get("torch_threads")
        if isinstance(threads, int) and threads > 0:
            import torch

            torch.set_num_threads(threads)  # float32 sums round by thread count
        res = config.replay(args.replay, records_path=args.out, overwrite=args.overwrite,
                            command=command)
        diff = config.compare_rows(load(args.replay).rows, res.records.rows)
        if diff is None:  # the same rows from another run (the header's config was edited)
            diff = _other_run(config.read_header(args.replay).get("engine"),
                              res.records.engine)
        _print_result(res.records)
        if args.out:
            print(f"records: {args.out}")
        n = sum(r["metric"] not in config.WALL_CLOCK_METRICS for r in res.records.rows)
        if diff is None:
            print(f"replay of {args.replay}: reproduced, {n} rows identical "
                  f"(wall-clock metrics {', '.join(sorted(config.WALL_CLOCK_METRICS))} "
                  "excluded)")
            return 0
        prov = config.read_header(args.replay).get("provenance", {})
        diff += _environment_note(prov)
        print(f"replay of {args.replay}: NOT reproduced: {diff}")
        return 1
    # the config file first, before torch is imported: its errors are reported at once
    kwargs: dict[str, Any] = read_config(args.config) if args.config else {}
    if "sweep" in kwargs:
        raise ConfigError(f"{args.config} has a [sweep] table: run it with "
                          f"`topofl sweep {args.config} --out DIR`")
    flags = {"algorithm": ("--algorithm", args.algorithm),
             "topology": ("--topology", args.topology), "records_path": ("--out", args.out)}
    kwargs.update(_parse_set(args.set, flags))
    _add_imports(kwargs, args.imports)
    from topofl import config

    kwargs.update({key: value for key, (_, value) in flags.items() if value})
    kwargs.setdefault("algorithm", "dsgd")
    kwargs.setdefault("records_path", f"runs/{kwargs['algorithm']}.jsonl")
    # the command line's default (topofl.run's is True): per-client rows are 93 % of a
    # 100-client run's records (1.4 MB -> 100 kB for 50 rounds of a ring); --set turns them on
    kwargs.setdefault("record_clients", False)
    res = config.execute(kwargs, overwrite=args.overwrite, resume=args.resume, command=command)
    from topofl.distributed import leave

    leave()  # under torchrun: every rank finished before any closes its connections
    from topofl.distributed.world import is_main_process

    if is_main_process():  # under torchrun: one summary, rank 0's
        print(f"records: {kwargs['records_path']}")
        _print_result(res.records)
    return 0


def _sweep(args: argparse.Namespace, command: str) -> int:
    cfg = read_config(args.config)  # before torch is imported: its errors are reported at once
    _add_imports(cfg, args.imports)
    from topofl import sweep

    shard = sweep.parse_shard(args.shard) if args.shard else None
    if args.dry_run:
        for r in sweep.select(sweep.plan(cfg), shard):
            print(r.name)
        return 0
    outcomes = sweep.run_sweep(cfg, args.out, shard=shard, jobs=args.jobs,
                               overwrite=args.overwrite, progress=args.progress,
                               command=command, threads=args.threads,
                               stack=None if args.stack is None else args.stack == "on")
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    what = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    print(f"sweep: {len(outcomes)} runs ({what or 'none'}) in {args.out}")
    return 1 if counts.get("failed") or counts.get("busy") else 0


def _plan(args: argparse.Namespace) -> int:
    kwargs: dict[str, Any] = read_config(args.config)  # before torch is imported
    if "sweep" in kwargs:
        raise ConfigError(f"{args.config} has a [sweep] table: plan one run of it")
    kwargs.update(_parse_set(args.set))
    _add_imports(kwargs, args.imports)
    kwargs.setdefault("algorithm", "dsgd")
    import json

    from topofl.workflow.plan import make_plan

    plan = make_plan(kwargs, timed=not args.no_time)
    print(json.dumps(plan.as_json()) if args.json else plan.summary())
    return 0


def _bench(args: argparse.Namespace, command: str) -> int:
    import json

    import torch

    from topofl.tools.bench import run_bench, to_markdown

    if args.out and os.path.exists(args.out) and not args.force:  # before hours of timing
        raise OutputExistsError(f"{args.out} exists; pass --force to replace it (or another "
                                "--out)")
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    result = run_bench(args.model, args.n, batch=args.batch, device=args.device,
                       rounds=args.rounds, memory=not args.no_memory,
                       input_shape=args.input_shape, hidden=args.hidden,
                       log=lambda line: print(line, file=sys.stderr, flush=True))
    text = to_markdown(result, command)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
        print(f"wrote {args.out}", file=sys.stderr)
    if args.json:
        print(json.dumps(result))
    elif not args.out:
        print(text, end="")
    return 0


def _positive(text: str) -> int:
    """An argparse type: one integer ``>= 1``."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _positives(text: str) -> list[int]:
    """An argparse type: comma-separated integers, each ``>= 1``."""
    values = [_positive(v.strip()) for v in text.split(",") if v.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    return values


class _UsageError(Exception):
    """A command line argparse refuses: reported in one line by :func:`main` (status 2)."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog = prog


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
    p_run.add_argument("--import", dest="imports", action="append", default=[],
                       metavar="MODULE",
                       help="a module of yours to import first (a name importable from the "
                       "current directory, or a path to a .py file), e.g. one that registers "
                       "a graph family the config names; repeatable; recorded in the records "
                       "header")
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
    p_sweep.add_argument("--import", dest="imports", action="append", default=[],
                         metavar="MODULE", help="a module of yours to import first, in this "
                         "process and in every worker (a name or a path to a .py file); "
                         "repeatable; recorded in each run's header")
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
                            "by part, its seconds per round (from a few real rounds) and the "
                            "largest number of clients that fits here; exit 1 if it cannot fit.")
    p_plan.add_argument("config", help="TOML (or .json) file of topofl.run keywords")
    p_plan.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="any other keyword of topofl.run (repeatable)")
    p_plan.add_argument("--import", dest="imports", action="append", default=[],
                        metavar="MODULE", help="a module of yours to import first (a name or "
                        "a path to a .py file); repeatable")
    p_plan.add_argument("--json", action="store_true", help="print one JSON object")
    p_plan.add_argument("--no-time", action="store_true",
                        help="do not time rounds (seconds_per_round is null)")


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
    """The ``--import MODULE`` option of a command that only looks names up (``list``,
    ``spectral``): the modules are imported before (:func:`topofl._utils.userimports.load_imports`,
    as ``run`` imports them)."""
    parser.add_argument("--import", dest="imports", action="append", default=[],
                        metavar="MODULE", help="a module of yours to import first (a name "
                        f"importable from the current directory, or a path to a .py file), "
                        f"{what}; repeatable")


def _parser() -> argparse.ArgumentParser:
    from topofl import __version__

    parser = _Parser(
        prog="topofl", description=__doc__.split("\n\n")[0],
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
    _add_import(p_spec, "e.g. one that registers the graph family a spec names")
    sub.add_parser("study", help="topology-vs-convergence study of a folder of records")
    sub.add_parser("report", help="spectral comparison report of graphs given as specs")
    sub.add_parser("figure", help="regenerate a paper figure: list, index or NAME (a clone)")
    return parser


def _dispatch(args: argparse.Namespace, command: str) -> int:
    if args.command == "demo":
        from topofl.tools.demo import run_demo

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
        from topofl._utils.userimports import load_imports

        load_imports(args.imports)
    if args.command == "list":
        return _list(args.section)
    return _spectral(args.specs, args.seed, args.horizon, args.json, args.metrics,
                     args.progress)


def _delegate(command: str, argv: Sequence[str]) -> int:
    """``topofl study`` / ``report`` / ``figure``: their modules parse their own arguments."""
    if command == "figure":
        from topofl.figures.cli import main as figure_main

        return figure_main(argv, prog="topofl figure")
    if command == "study":
        from topofl.study.cli import main as study_main

        return study_main(argv, prog="topofl study")
    from topofl.report import main as report_main

    return report_main(argv, prog="topofl report")


def _one_line(exc: BaseException) -> str:
    msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    return " ".join(str(msg).split()) or type(exc).__name__


#: Set (to anything but ``0``) to let errors end in a full Python traceback, as ``--traceback``.
TRACEBACK_ENV = "TOPOFL_TRACEBACK"


def _exit_code(exc: BaseException) -> int | None:
    """The exit status for an error reported in one line, or None for a bug (traceback).

    2 for bad input (``ValueError``, ``TypeError``, ``KeyError``, an output that exists), 1 for
    a failure while running: an ``OSError`` (a file that cannot be read or written), memory
    running out, or a ``RuntimeError`` raised by topofl itself (a diverged run, a client's
    error). Any other exception is a bug and keeps its traceback.
    """
    if isinstance(exc, (ValueError, TypeError, KeyError, OutputExistsError)):
        return 2
    if isinstance(exc, (OSError, MemoryError)):
        return 1
    if isinstance(exc, RuntimeError) and (
        type(exc).__module__.split(".")[0] == "topofl" or type(exc).__name__ == "OutOfMemoryError"
    ):
        return 1
    return None


#: What registers a name of each kind a user adds (the kinds of :func:`_import_hint`).
_REGISTERED_BY = {"graph family": "topofl.topologies.register",
                  "algorithm": "topofl.algorithms.register_algorithm",
                  "model": "topofl.models.register_model",
                  "dataset": "topofl.data.register_dataset"}

#: The commands that take ``--import``.
_IMPORTING = ("run", "sweep", "plan", "spectral", "list")


def _import_hint(prog: str, message: str) -> str:
    """``message`` of a failed lookup of a graph family, algorithm, model or dataset
    (:func:`topofl._utils.validation.unknown_name`'s ``unknown KIND 'NAME'...``) by a command that
    takes ``--import``, with how one of the user's becomes known from the command line;
    any other message as it is.

    Examples
    --------
    >>> from topofl.cli import _import_hint
    >>> print(_import_hint("topofl spectral", "unknown graph family 'wheel'; known: ring"))
    ... # doctest: +NORMALIZE_WHITESPACE
    unknown graph family 'wheel'; known: ring; one of yours is known once the module that
    registers it (topofl.topologies.register) is imported: --import FILE.py (or imports =
    ['FILE.py'] in a config)
    >>> _import_hint("topofl report", "unknown graph family 'wheel'; known: ring")
    "unknown graph family 'wheel'; known: ring"
    """
    import re

    found = re.search(r"\bunknown (graph family|algorithm|model|dataset) '", message)
    if found is None or prog.removeprefix("topofl ") not in _IMPORTING:
        return message
    return (f"{message}; one of yours is known once the module that registers it "
            f"({_REGISTERED_BY[found.group(1)]}) is imported: --import FILE.py (or imports = "
            "['FILE.py'] in a config)")


def _report(prog: str, exc: BaseException, code: int) -> None:
    name = type(exc).__name__
    what = _one_line(exc) if code == 2 else f"{name}: {_one_line(exc)}"
    print(f"{prog}: error: {_import_hint(prog, what)}", file=sys.stderr)


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
            args, extra = _parser().parse_known_args(argv)
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
