"""The commands that show what is there, without training: ``topofl quickstart`` (the spectral
gaps of a few graphs), ``topofl spectral SPEC ...`` (the spectral summary of graphs given as
specs) and ``topofl list`` (what a config can name, with parameters and defaults).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported lazily: ``topofl --help`` and ``--version`` must not load torch
    from topofl.graph import Topology

__all__: list[str] = []


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(r[k]) for r in [header, *rows]) for k in range(len(header))]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in rows]
    return "\n".join([line, sep, *body])


def _graph_rows(graphs: list[tuple[str, Topology]]) -> list[list[str]]:
    from topofl.spectral import summary  # the CLI imports what a command runs

    rows = []
    for label, t in graphs:
        s = summary(t, metrics=["spectral_gap", "rounds_to_1e-6_bound"])
        gap, bound = s["spectral_gap"], s["rounds_to_1e-6_bound"]
        rounds = "inf" if bound is None else str(bound)
        rows.append([label, str(t.n), f"{t.edges_per_node:.2f}", f"{gap:.4f}", rounds])
    return rows


_HEADER = ["graph", "n", "edges/node", "spectral gap", "rounds_to_1e-6_bound"]


def _quickstart() -> int:
    from topofl import topologies  # the CLI imports what a command runs

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
    *,
    privacy: bool = False,
    sigma: float = 1.0,
    privacy_rounds: int = 10,
) -> int:
    """Print :func:`topofl.spectral.summary` of each spec: a table, or one JSON object per line;
    with ``privacy``, :func:`topofl.privacy.privacy_summary` beside it."""
    import json

    from topofl import topologies  # the CLI imports what a command runs
    from topofl.privacy import PRIVACY_KEYS  # the CLI imports what a command runs
    from topofl.spectral import summary  # the CLI imports what a command runs

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
            metrics=keys if keys is not None or as_json
            else [k for k, _, _ in columns if k not in PRIVACY_KEYS],
            progress=progress,
        )
        if privacy:
            s.update(_privacy(spec, seed, sigma, privacy_rounds))
            if not as_json and not any(k in PRIVACY_KEYS for k, _, _ in columns):
                columns += [(k, k.replace("_eps", " eps").replace("_", " "), ".3f")
                            for k in PRIVACY_KEYS]
        if as_json:
            print(json.dumps({"spec": spec, **s}))
            continue
        if not columns:
            columns = [(k, k, ".4g") for k in s]
        rows.append([spec, *(fmt(s[k], f) for k, _, f in columns)])
    if not as_json:
        print(_table(rows, ["graph", *(c for _, c, _ in columns)]))
        if privacy:
            print(
                f"\nprivacy (sigma={sigma}, {privacy_rounds} gossip steps, delta=1e-5): the "
                "epsilon from one node's data to another node's view; gossip: exact, noise "
                "added once then averaged (max, mean, neighbours, others); muffliato: that "
                "paper's bound; walk: a random walk of as many local steps (random_walk_rdp); "
                "- where the accountant does not apply (push-sum weights, an asymmetric walk)."
            )
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


def _privacy(spec: str, seed: int, sigma: float, rounds: int) -> dict[str, float | None]:
    from topofl import topologies  # the CLI imports what a command runs
    from topofl.privacy import privacy_summary  # the CLI imports what a command runs

    return privacy_summary(topologies.build(spec, seed=seed), sigma=sigma, rounds=rounds)


_SECTIONS = ("graphs", "algorithms", "models", "datasets", "partitions", "settings")


def _first_line(obj: Any) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip()
    return doc.splitlines()[0].rstrip(".") if doc else ""


def _print_params(func: Any, skip: Sequence[str]) -> None:
    lines = _params(func, skip)
    if lines:
        print("\n".join(lines))


def _params(func: Any, skip: Sequence[str]) -> list[str]:
    """``name: type = default`` for the parameters of ``func`` a config can set (an algorithm
    factory's groups expanded into their fields: the flat keywords)."""
    from topofl.algorithms.hparams import flat_parameters  # the CLI imports what a command uses

    out = []
    for p in flat_parameters(func).values():
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
            from topofl import topologies  # the CLI imports what a command runs

            for name in sorted(topologies.REGISTRY):
                print(topologies.REGISTRY[name].describe())
            for name in sorted(topologies.SCHEDULES):  # specs whose parameters are specs
                print(f"schedule {topologies.SCHEDULES[name].describe()}")
        elif sec == "algorithms":
            from topofl.algorithms import ALGORITHMS  # the CLI imports what a command runs

            for name in sorted(ALGORITHMS):
                print(f"{name}: {_first_line(ALGORITHMS[name])}")
                _print_params(ALGORITHMS[name], ())
        elif sec == "models":
            from topofl.models import MODELS  # the CLI imports what a command runs

            for name, fn in MODELS.items():
                print(f"{name}: {_first_line(fn)} (config: model_params)")
                _print_params(fn, ("input_shape", "num_classes"))
        elif sec == "datasets":
            from topofl.data import DATASETS  # the CLI imports what a command runs

            for name, load in DATASETS.items():
                print(f"{name}: {_first_line(load)}")
        elif sec == "partitions":
            from topofl.data import PARTITIONS  # the CLI imports what a command runs

            for name, scheme in PARTITIONS.items():
                print(f"{name}: {_first_line(scheme)} (config: partition_params)")
                _print_params(scheme, ("labels", "groups", "n_clients", "seed", "num_classes"))
        else:
            import dataclasses

            from topofl.api import RunCall, run_defaults  # the CLI imports what a command runs
            from topofl.engine import RunConfig  # the CLI imports what a command runs

            call = run_defaults()  # rounds, seed: topofl.run's defaults, a config's too
            print("the run call (topofl.api.RunCall: topofl.run's named parameters, config keys):")
            for f in dataclasses.fields(RunCall):
                if f.name not in {g.name for g in dataclasses.fields(RunConfig)}:
                    print(f"    {f.name}: {f.type} = {f.default!r}")
            print("run settings (topofl.engine.RunConfig: config keys besides the algorithm's "
                  "hyper-parameters):")
            for f in dataclasses.fields(RunConfig):
                default = ("(required)" if f.default is dataclasses.MISSING and f.name not in call
                           else repr(call.get(f.name, f.default)))
                print(f"    {f.name}: {f.type} = {default}")
    return 0
