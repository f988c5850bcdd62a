"""The commands that train, plan or time runs: ``topofl run`` (and ``run --replay``, which
re-runs a recorded run and checks its rows), ``topofl sweep``, ``topofl plan`` and
``topofl bench``; and how their ``--set`` pairs, flags and ``--import`` modules become a run's
keyword arguments.

The config file and the command line are read and checked before torch is imported: their
errors are reported at once.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from topofl._utils.configfiles import read_config
from topofl._utils.spec import parse_value
from topofl.exceptions import ConfigError, OutputExistsError

__all__: list[str] = []


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
    from topofl._utils.cpu import cpu_kind  # the CLI imports what a command runs
    from topofl._utils.environment import (  # the CLI imports what a command runs
        differences,
        numeric_environment,
    )

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
    from topofl.engine.config import config_diff  # the CLI imports what a command runs

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
        from topofl import config  # the CLI imports what a command runs
        from topofl.records import load  # the CLI imports what a command runs

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
    from topofl import config  # the CLI imports what a command runs

    kwargs.update({key: value for key, (_, value) in flags.items() if value})
    kwargs.setdefault("algorithm", "dsgd")
    kwargs.setdefault("records_path", f"runs/{kwargs['algorithm']}.jsonl")
    # the command line's default (topofl.run's is True): per-client rows are 93 % of a
    # 100-client run's records (1.4 MB -> 100 kB for 50 rounds of a ring); --set turns them on
    kwargs.setdefault("record_clients", False)
    res = config.execute(kwargs, overwrite=args.overwrite, resume=args.resume, command=command)
    from topofl.distributed import leave  # the CLI imports what a command runs

    leave()  # under torchrun: every rank finished before any closes its connections
    from topofl.distributed.world import is_main_process  # the CLI imports what a command runs

    if is_main_process():  # under torchrun: one summary, rank 0's
        print(f"records: {kwargs['records_path']}")
        _print_result(res.records)
    return 0


def _sweep(args: argparse.Namespace, command: str) -> int:
    cfg = read_config(args.config)  # before torch is imported: its errors are reported at once
    _add_imports(cfg, args.imports)
    from topofl import sweep  # the CLI imports what a command runs

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

    from topofl.workflow.plan import make_plan  # the CLI imports what a command runs

    plan = make_plan(kwargs, timed=not args.no_time, probe_timeout=args.probe_timeout)
    print(json.dumps(plan.as_json()) if args.json else plan.summary())
    return 0


def _bench(args: argparse.Namespace, command: str) -> int:
    import json

    import torch

    from topofl._utils.files import real_path  # the CLI imports what a command runs
    from topofl.tools.bench import run_bench, to_markdown  # the CLI imports what a command runs

    # the file the system will open (links and `..` applied), looked at before hours of timing
    out = None if not args.out else real_path(args.out)
    if out is not None and os.path.lexists(out) and not args.force:
        shown = args.out if args.out == str(out) else f"{args.out} ({out})"
        raise OutputExistsError(f"{shown} exists; pass --force to replace it (or another "
                                "--out)")
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    result = run_bench(args.model, args.n, batch=args.batch, device=args.device,
                       rounds=args.rounds, memory=not args.no_memory,
                       input_shape=args.input_shape, hidden=args.hidden,
                       log=lambda line: print(line, file=sys.stderr, flush=True))
    text = to_markdown(result, command)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(text)
        print(f"wrote {args.out}", file=sys.stderr)
    if args.json:
        print(json.dumps(result))
    elif not args.out:
        print(text, end="")
    return 0
