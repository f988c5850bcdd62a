"""D-Cliques Fig. 12: D-Cliques vs the exponential graph (14 undirected edges per node).

100 nodes, 2 shards per node, D-SGD without Clique Averaging or momentum: D-Cliques (10 cliques
of 10 built with Greedy Swap, fully-connected inter-clique topology) against the exponential
graph of Assran et al. with its edges made undirected (i linked to i +- 2^k, 14 edges per node).
Left: logistic regression on MNIST; right: GN-LeNet on CIFAR-10. Bold lines: average accuracy of
the nodes on the global test set; thin lines: the minimum and maximum node.

    python paper_figures/fig_dcliques_12.py [--quick | --full]
"""

from __future__ import annotations

import sys

from topofl import figures

PANELS = {"MNIST (logistic regression)": "dcliques_12_mnist",
          "CIFAR-10 (GN-LeNet)": "dcliques_12_cifar10"}
DCL, EXP = "D-Cliques (fully-connected) w/o clique avg.", "exponential (14 edges/node)"


def label(config: dict) -> str:
    """The legend of a run, from its resolved config."""
    return DCL if str(config["topology"]).startswith("dcliques") else EXP


def main(argv: list[str] | None = None) -> int:
    args = figures.parse_args(__doc__, "dcliques_12", argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import topofl as tf

    found = figures.panels(args, PANELS, label)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    settings, numbers, t = {}, {}, {}
    for ax, (title, panel) in zip(axes, found.items()):
        tf.plotting.convergence(panel.runs, "global_acc", ax=ax, title=title, band="lines",
                                epochs=panel.epochs, ylabel="test accuracy (global test set)",
                                legend="best")
        settings[title] = panel.setting
        numbers[title] = figures.curve_table(panel.runs, "global_acc", panel.epochs)
        t[title] = numbers[title].set_index("curve")
    notes = list(dict.fromkeys(n for q in found.values() for n in q.notes))
    datasets = [str(next(iter(q.configs.values()))["data"]) for q in found.values()]
    n = dict(next(iter(settings.values())))["n_clients"]
    fig.suptitle(f"D-SGD, {n} nodes, 2 shards/node, no Clique Averaging or momentum: "
                 "D-Cliques vs exponential graph")
    fig.tight_layout()

    def spread(p: str, c: str) -> float:
        return float(t[p].loc[c, "final max"] - t[p].loc[c, "final min"])

    checks, parts = {}, []
    for p in PANELS:
        short = p.split(" ")[0]
        area_d, area_e = (float(t[p].loc[c, "mean over rounds"]) for c in (DCL, EXP))
        checks[f"{short}: D-Cliques faster"] = area_d > area_e
        checks[f"{short}: D-Cliques lower spread"] = spread(p, DCL) < spread(p, EXP)
        parts.append(f"{short}: final mean D-Cliques {t[p].loc[DCL, 'final global_acc']:.3f} "
                     f"vs exponential {t[p].loc[EXP, 'final global_acc']:.3f}, mean over the "
                     f"run {area_d:.3f} vs {area_e:.3f}, final spread {spread(p, DCL):.3f} vs "
                     f"{spread(p, EXP):.3f}")
    holds = True if all(checks.values()) else (None if any(checks.values()) else False)
    measured = "; ".join(parts) + ". " + "; ".join(
        f"{k}: {'yes' if v else 'no'}" for k, v in checks.items())
    pm = list(PANELS)[0]
    mnist_gap = max(abs(float(t[pm].loc[DCL, "mean over rounds"])
                        - float(t[pm].loc[EXP, "mean over rounds"])),
                    abs(spread(pm, DCL) - spread(pm, EXP)))
    if mnist_gap < 0.01:
        notes.append(f"On the MNIST panel D-Cliques and the exponential graph differ by "
                     f"{100 * mnist_gap:.1f} points at most (mean accuracy over the run, final "
                     "spread): within the noise of a 355-image test set and one seed per curve, "
                     "so neither check says much either way there.")
    if not all(checks.values()):
        lo, hi = (f"{100 * v:.1f}%" for v in (t[pm]["final global_acc"].min(),
                                              t[pm]["final global_acc"].max()))
        notes.append("Likely reasons where it does not hold: the stand-in digits are small "
                     "(~14 training images per node; the MNIST panel's batch 4 keeps the "
                     "paper's number of updates per epoch, and logistic regression on the 8x8 "
                     f"digits ends at {lo if lo == hi else f'{lo} to {hi}'} on every graph "
                     "of that panel); the GN-LeNet runs (batch 20 > ~14 local "
                     "images: one step per epoch) make 10 steps of the paper's 2500 at lr "
                     "0.002, the first steps of training only; one seed per curve.")
    png = figures.write(
        args, fig, title="D-Cliques Fig. 12: D-Cliques vs the exponential graph",
        setting=settings, numbers=numbers,
        claim=("without Clique Averaging or momentum, D-Cliques (fully-connected, 10 cliques "
               "of 10) converge faster and with less variance than the exponential graph with "
               "14 undirected edges per node (1.4 times more edges), on MNIST and CIFAR-10 "
               "(read here: higher mean accuracy over the run and smaller final max-min "
               "spread)"),
        measured=measured, holds=holds, notes=notes, dataset=" / ".join(dict.fromkeys(datasets)),
    )
    print(png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
