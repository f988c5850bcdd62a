"""Design at an equal budget (issue #24, item 4): five topologies with 11 edges per node.

After the sweep of ``analysis/configs/design_budget.toml`` (what it runs and why is in its
header and in ``analysis/design_budget.md``)::

    OMP_NUM_THREADS=1 topofl sweep analysis/configs/design_budget.toml \\
        --out analysis/out/design_budget
    python analysis/design_budget.py

this script reads the records through :func:`topofl.study.study` (the same tables as
``topofl study analysis/out/design_budget --metric global_acc_mean --target 0.55``), and
writes ``analysis/figures/design_budget.png`` and the block between the ``results`` markers of
``analysis/design_budget.md``; with ``--mixture``, the block between the ``mixture`` markers
from the sweep of ``design_budget_mixture.toml`` (target 0.85), without a figure. Per
topology: the edges per node and messages per round (from the ``graph.*`` rows every run
records), the neighbourhood heterogeneity of its ``W`` on the run's label distributions, its
effective number of neighbours and spectral gap, and the accuracy of every client's model on
the global test set (final, best, rounds to the target), mean ± standard deviation over the 3
seeds. Differences are called *inconclusive* when the seeds' ranges overlap.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from topofl._utils.markdown import replace_block
from topofl._utils.markdown import table as md_table
from topofl.records import Records, load_many
from topofl.study import Bootstrap, Output, StudyResult, study

ROOT = Path(__file__).resolve().parent
METRIC = "global_acc_mean"
TARGETS = {"results": 0.55, "mixture": 0.85}
NAMES = {
    "dcliques": "D-Cliques (Greedy Swap, small world, 5 intra edges removed per clique)",
    "stl_fw": "STL-FW (budget 11)",
    "el_oracle": "EL-Oracle (s = 11)",
    "random_regular": "random 11-regular",
    "undirected_exponential": "undirected exponential",
    "complete": "complete graph (off budget: the ceiling)",
}


def _family(condition: str) -> str:
    fam = condition.removeprefix("topology=").split(":", 1)[0].split(",", 1)[0]
    return fam + "+ca" if "clique_averaging=True" in condition else fam


SHORT = {"dcliques": "D-Cliques", "dcliques+ca": "D-Cliques + Clique Averaging (2 x messages)",
         "stl_fw": "STL-FW", "el_oracle": "EL-Oracle", "random_regular": "random regular",
         "undirected_exponential": "undirected exponential",
         "complete": "complete (off budget: 63 edges per node)"}


def _name(condition: str) -> str:
    fam = _family(condition)
    if fam == "dcliques+ca":
        return NAMES["dcliques"] + " + Clique Averaging (gradients too: 2 x messages)"
    return NAMES.get(fam, fam)


def messages_per_round(records: Records, runs: Sequence[str]) -> float:
    """Messages the engine counted (``messages`` rows: cumulative), per round, mean over
    ``runs``."""
    out = []
    for run in runs:
        t, v = records.series("messages", run=run)
        out.append(float(v[-1]) / float(t[-1] + 1))
    return float(np.mean(out))


def _ms(mean: float, std: float, spec: str, reached: str = "") -> str:
    if math.isinf(mean):
        return "never" + reached
    s = format(mean, spec)
    return s if math.isnan(std) or std == 0 else f"{s} ± {format(std, spec)}"


def table(res: StudyResult, records: Records, target: float) -> str:
    c = res.conditions
    runs = res.runs
    rows = []
    for r in c.sort_values("final_mean", ascending=False).to_dict("records"):
        finals = runs.loc[runs.condition == r["condition"], "final"]
        ids = runs.loc[runs.condition == r["condition"], "run"].tolist()
        k = round(r["reached_mean"] * r["n_seeds"])
        rows.append([
            _name(r["condition"]), f"{r['edges_per_node_mean']:.2f}",
            f"{messages_per_round(records, ids):.0f}",
            _ms(r["neighborhood_heterogeneity_mean"], r["neighborhood_heterogeneity_std"], ".4f"),
            _ms(r["effective_neighbors_mean"], r["effective_neighbors_std"], ".1f"),
            _ms(r["spectral_gap_mean"], r["spectral_gap_std"], ".3f"),
            _ms(100 * r["final_mean"], 100 * r["final_std"], ".2f"),
            f"{100 * finals.min():.2f}–{100 * finals.max():.2f}",
            _ms(100 * r["best_mean"], 100 * r["best_std"], ".2f"),
            _ms(r["rounds_to_target_mean"], r["rounds_to_target_std"], ".0f",
                f" in {r['n_seeds'] - k}/{r['n_seeds']} seeds" if k else ""),
        ])
    return md_table(
        ["topology", "edges / node", "messages / round (counted)", "neighbourhood heterogeneity",
         "effective neighbours (γ = 0.95)", "spectral gap", "final accuracy (%)",
         "range over seeds (%)", "best accuracy (%)", f"rounds to {target:.0%}"], rows)


def comparisons(res: StudyResult) -> list[str]:
    """Each topology against the next best by final accuracy: separated, or inconclusive."""
    runs = res.runs
    order = [c for c in res.conditions.sort_values("final_mean", ascending=False)["condition"]
             if _family(c) != "complete"]
    out = []
    for a, b in zip(order, order[1:]):
        fa = runs.loc[runs.condition == a, "final"]
        fb = runs.loc[runs.condition == b, "final"]
        sep = fa.min() > fb.max()
        out.append(
            f"- {_name(a)} vs {_name(b)}: "
            f"{100 * (fa.mean() - fb.mean()):+.2f} points of final accuracy; "
            + ("every seed of the first above every seed of the second."
               if sep else "the seeds' ranges overlap: inconclusive at this scale."))
    return out


def figure(res: StudyResult, records: Records, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 5.6),
                                 gridspec_kw={"width_ratios": [1.4, 1]})
    order = res.conditions.sort_values("final_mean", ascending=False)
    for k, r in enumerate(order.to_dict("records")):
        runs = res.runs.loc[res.runs.condition == r["condition"], "run"]
        curves = [records.series(METRIC, run=run) for run in runs]
        t = curves[0][0] + 1
        v = np.stack([100 * c[1] for c in curves])
        color = f"C{k}"
        fam = _family(r["condition"])
        a1.plot(t, v.mean(axis=0), color=color, lw=1.6, label=SHORT.get(fam, fam))
        a1.fill_between(t, v.min(axis=0), v.max(axis=0), color=color, alpha=0.2, lw=0)
        het = res.runs.loc[res.runs.condition == r["condition"], "neighborhood_heterogeneity"]
        fin = 100 * res.runs.loc[res.runs.condition == r["condition"], "final"]
        a2.errorbar(het.mean(), fin.mean(), xerr=het.std(), yerr=fin.std(), fmt="o",
                    color=color, capsize=3, ms=7)
        a2.scatter(het, fin, color=color, s=10, alpha=0.6)
    a1.set_xlabel("rounds completed")
    a1.set_ylabel("mean accuracy of the clients' models\non the global test set (%)")
    low = 100 * float(res.conditions["final_mean"].min())
    a1.set_ylim(max(0.0, low - 15), None)
    a1.grid(True, alpha=0.3)
    a1.set_title("mean over 3 seeds, band = min..max over seeds", fontsize=9)
    a2.set_xlabel("neighbourhood heterogeneity of W (squared L2 distance)")
    a2.set_ylabel(f"final accuracy after {int(res.runs['rounds'].max())} rounds (%)")
    a2.grid(True, alpha=0.3)
    a2.set_title("small points: seeds; markers: mean ± std", fontsize=9)
    handles, labels = a1.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8.5, frameon=False)
    fig.suptitle("D-SGD under label skew (1 class per client, 64 clients) at an equal budget: "
                 "11 edges per node, 704 model messages a round", fontsize=10)
    fig.tight_layout(rect=(0, 0.1, 1, 0.95))
    fig.savefig(path, dpi=80)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mixture", action="store_true",
                        help="the convex-stand-in sweep (design_budget_mixture.toml)")
    parser.add_argument("--records", default=None,
                        help="records folder (default analysis/out/design_budget[_mixture])")
    args = parser.parse_args(argv)
    marker = "mixture" if args.mixture else "results"
    folders = ([Path(args.records)] if args.records else
               [ROOT / "out" / "design_budget_mixture"] if args.mixture else
               [ROOT / "out" / "design_budget", ROOT / "out" / "design_budget_ca"])
    records = load_many([f for d in folders if d.is_dir() for f in sorted(d.glob("*.jsonl"))])
    target = TARGETS[marker]
    res = study(records, metric=METRIC, target=target,
                topology_metrics=["edges_per_node", "messages_per_round",
                                  "neighborhood_heterogeneity", "effective_neighbors",
                                  "spectral_gap"],
                bootstrap=Bootstrap(n_boot=10), output=Output(figures=False))
    if not args.mixture:
        figure(res, records, ROOT / "figures" / "design_budget.png")
    block = "\n".join([
        f"Generated by `python analysis/design_budget.py{' --mixture' if args.mixture else ''}`"
        f" from {len(res.runs)} runs ({len(res.conditions)} conditions x seeds "
        f"{', '.join(str(x) for x in sorted(set(res.runs['seed'])))}). Topology columns: "
        "from the `graph.*` rows of the records (`topofl.spectral.summary` of each run's "
        "graph on its clients' label distributions); messages: as the engine counted them "
        "(`messages` rows), per round.",
        "",
        table(res, records, target),
        "",
        *comparisons(res),
        "",
        *([] if args.mixture else
          ["![design at an equal budget](figures/design_budget.png)", ""]),
    ])
    replace_block(ROOT / "design_budget.md", block, marker)
    pd.options.display.width = 200
    print(res.conditions[["condition", "final_mean", "final_std",
                          "neighborhood_heterogeneity_mean"]].to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
