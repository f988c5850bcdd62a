"""Command-line entry point: ``topofl COMMAND`` (also ``python -m topofl COMMAND``).

Commands
--------
``demo``
    Train D-SGD on a ring, D-Cliques and the complete graph (digits, 100 clients, 2 shards
    each) and write records and a convergence figure to ``./topofl-demo/``.
``run [CONFIG.json] [--algorithm A] [--topology SPEC] [--set key=value ...]``
    Train with ``topofl.run``: keys of the JSON config and ``--set`` pairs are its keyword
    arguments (``data``, ``partition``, ``n_clients``, ``model``, ``rounds``, ``seed``, run
    settings and the algorithm's hyper-parameters); prints the final accuracies and writes the
    records to ``--out`` (default ``runs/<algorithm>.jsonl``).
``quickstart``
    Build a few 64-node graphs and compare their spectral gaps (the README's first example).
``list``
    List every registered graph family with its parameters.
``spectral SPEC [SPEC ...]``
    Print the size, degree and spectral gap of graphs given as specs (``ring:n=64``).
``study DIR --out REPORT_DIR``
    The topology-vs-convergence study of a folder of records (:mod:`topofl.study`).
``report [SPEC ...] [--out DIR]``
    The spectral comparison report of graphs given as specs (:mod:`topofl.report`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from topofl import topologies
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


def _list() -> int:
    for name in sorted(topologies.REGISTRY):
        print(topologies.REGISTRY[name].describe())
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


def _run(args: argparse.Namespace) -> int:
    import json

    from topofl.api import run
    from topofl.topologies._registry import _parse_value

    kwargs: dict[str, object] = {}
    if args.config:
        with open(args.config, encoding="utf-8") as fh:
            loaded = json.load(fh)
        if not isinstance(loaded, dict):
            raise ValueError(f"{args.config}: expected a JSON object of keyword arguments")
        kwargs.update(loaded)
    for item in args.set:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ValueError(f"--set expects KEY=VALUE, got {item!r}")
        try:  # JSON first ({"hidden": [64]}, [1, 2], true), else a spec-style scalar
            kwargs[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key.strip()] = _parse_value(value.strip())
    if args.algorithm:
        kwargs["algorithm"] = args.algorithm
    if args.topology:
        kwargs["topology"] = args.topology
    kwargs.setdefault("algorithm", "dsgd")
    kwargs.setdefault("records_path", args.out or f"runs/{kwargs['algorithm']}.jsonl")
    res = run(**kwargs)  # type: ignore[arg-type]
    rec = res.records
    print(f"records: {kwargs['records_path']}")
    for metric in ("test_acc_mean", "global_acc_mean"):
        if metric in rec.metrics:
            print(f"{metric}: final {rec.final(metric):.4f}, best {rec.best(metric):.4f}")
    if "train_loss" in rec.metrics:
        print(f"train_loss: final {rec.final('train_loss'):.4f}")
    return 0


def _delegate(command: str, argv: Sequence[str]) -> int:
    """``topofl study`` / ``topofl report``: their modules parse their own arguments."""
    if command == "study":
        from topofl.study import main as study_main

        return study_main(argv, prog="topofl study")
    from topofl.report import main as report_main

    return report_main(argv, prog="topofl report")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["study"], ["report"]):
        return _delegate(argv[0], argv[1:])
    parser = argparse.ArgumentParser(prog="topofl", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_demo = sub.add_parser("demo", help="D-SGD on ring, D-Cliques and complete graph")
    p_demo.add_argument("--out", default="topofl-demo", help="output folder (topofl-demo)")
    p_demo.add_argument("--rounds", type=int, default=300, help="rounds (default 300)")
    p_demo.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    p_demo.add_argument("--eval-every", type=int, default=10, help="evaluation period (10)")
    p_run = sub.add_parser("run", help="train with topofl.run from a JSON config / options")
    p_run.add_argument("config", nargs="?", help="JSON file of topofl.run keyword arguments")
    p_run.add_argument("--algorithm", help="algorithm name (e.g. dsgd, dfedpgp)")
    p_run.add_argument("--topology", help="graph spec (e.g. ring, random_directed_push:k=10)")
    p_run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="any other keyword of topofl.run (repeatable)")
    p_run.add_argument("--out", help="records file (default runs/<algorithm>.jsonl)")
    sub.add_parser("quickstart", help="compare the spectral gaps of a few graphs")
    sub.add_parser("list", help="list the graph families")
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
    sub.add_parser("study", help="topology-vs-convergence study of a folder of records")
    sub.add_parser("report", help="spectral comparison report of graphs given as specs")
    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            from topofl.demo import run_demo

            run_demo(args.out, rounds=args.rounds, seed=args.seed, eval_every=args.eval_every)
            return 0
        if args.command == "run":
            return _run(args)
        if args.command == "quickstart":
            return _quickstart()
        if args.command == "list":
            return _list()
        return _spectral(
            args.specs, args.seed, args.horizon, args.json, args.metrics, args.progress
        )
    except (ValueError, TypeError, KeyError) as exc:
        print(f"topofl {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
