"""D-Cliques Fig. 15: removing intra-clique edges, without and with Clique Averaging (MNIST).

D-Cliques (fully-connected inter-clique links, Greedy Swap cliques of 10, 100 nodes, 2 shards per
node), D-SGD on logistic regression with 0, 1 or 5 of the 45 edges of every clique removed
at random (both directions); left without, right with Clique Averaging (which then averages
gradients over the clique neighbours a node still has). Bold: average test accuracy of the
nodes on the global test set; thin: the minimum and maximum node.

    python paper_figures/fig_dcliques_15.py [--quick | --full]
"""

from __future__ import annotations

import sys

from topofl import figures

PANELS = {"without Clique Averaging": "dcliques_15_no_ca",
          "with Clique Averaging": "dcliques_15_ca"}


def label(config: dict) -> str:  # type: ignore[type-arg]
    removed = str(config["topology"]).partition("remove_intra_edges=")[2].split(",")[0] or "0"
    return {"0": "full cliques", "1": "1 edge removed per clique"}.get(
        removed, f"{removed} edges removed per clique")


def main(argv: list[str] | None = None) -> int:
    args = figures.parse_args(__doc__, "dcliques_15", argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import topofl as tf

    found = figures.panels(args, PANELS, label)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    numbers, finals, spread, notes = {}, {}, {}, []
    for ax, p in zip(axes, found.values()):
        tf.plotting.convergence(p.runs, "global_acc", ax=ax, title=p.title, band="lines",
                                epochs=p.epochs, ylabel="test accuracy (global test set)",
                                legend="best")
        table = figures.curve_table(p.runs, "global_acc", p.epochs)
        table["edges per node"] = [p.runs[k].last("graph.edges_per_node")
                                   for k in table["curve"]]
        numbers[p.title] = table
        finals[p.title] = dict(zip(table["curve"], table["final global_acc"]))
        spread[p.title] = dict(zip(table["curve"], table["final max"] - table["final min"]))
        notes += [n for n in p.notes if n not in notes]
    axes[1].set_ylabel("")
    axes[0].set_ylim(bottom=0.85)  # the paper's Fig. 15 starts its y axis at 89%
    fig.suptitle("D-Cliques (fully-connected inter-clique), logistic regression, 100 nodes")
    fig.tight_layout()
    def speed(panel: str, curve: str) -> float:  # mean accuracy over the run: convergence speed
        t = numbers[panel].set_index("curve")
        return float(t.loc[curve, "mean over rounds"])

    full, five = "full cliques", "5 edges removed per clique"
    slow = {p: speed(p, full) - speed(p, five) for p in numbers}
    wider = {p: spread[p][five] - spread[p][full] for p in numbers}
    no_ca, ca = "without Clique Averaging", "with Clique Averaging"
    ca_unaffected = abs(slow[ca]) < 0.005 and abs(finals[ca][full] - finals[ca][five]) < 0.005
    no_ca_hurt = slow[no_ca] > max(slow[ca], 0.0) and wider[no_ca] > 0
    holds = True if ca_unaffected and no_ca_hurt else None if ca_unaffected else False
    measured = (f"removing 5 edges per clique lowers the mean accuracy over the run by "
                f"{100 * slow[no_ca]:.2f} points without and {100 * slow[ca]:.2f} with Clique "
                f"Averaging, and changes the final spread between nodes by "
                f"{100 * wider[no_ca]:+.2f} and {100 * wider[ca]:+.2f} points; final accuracy "
                f"{finals[no_ca][full]:.3f} -> {finals[no_ca][five]:.3f} without, "
                f"{finals[ca][full]:.3f} -> {finals[ca][five]:.3f} with Clique Averaging")
    if not no_ca_hurt:
        notes.append("without Clique Averaging the removal barely matters here either: on the "
                     "stand-in a node's 2 classes hold 14 samples, so its gradient bias is "
                     "small next to MNIST's 500 (a likely reason, not measured)")
    png = figures.write(
        args, fig, title="D-Cliques Fig. 15: intra-clique edge removal on MNIST",
        setting={p.title: p.setting for p in found.values()}, numbers=numbers,
        claim=("without Clique Averaging, removing edges slightly slows convergence and "
               "increases the variance between nodes; with Clique Averaging, removing up to 5 "
               "edges (11% of intra-clique edges) does not noticeably affect convergence speed "
               "or variance"),
        measured=measured, holds=holds, notes=notes,
        dataset=str(next(iter(found.values())).configs["full cliques"]["data"]),
    )
    print(png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
