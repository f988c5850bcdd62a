"""Field claim: gradient tracking (DSGT) against D-SGD under label skew as the graph gets sparser.

Logistic regression on 32 nodes of the synthetic 10-class data, one class a node; D-SGD and DSGT
(variant DIGing) with the same constant step, one stochastic gradient and one gossip step a
round, on the complete graph, the exponential graph and the ring (spectral gap falling). Left:
the mean test accuracy of the nodes' models on the global test set (mean over the seeds, shaded:
+- one std); right: DSGT's final gain over D-SGD against the graph's spectral gap, seed by seed.

    python paper_figures/fig_field_tracking.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

from typing import Any

from topofl import figures

GRAPHS = {"complete": "complete", "exponential": "exponential", "ring": "ring"}
ALGOS = {"dsgd": "D-SGD", "dsgt": "DSGT"}


def label(cfg: Any) -> str:
    """A curve's label: ``"<graph>, <method>"``."""
    return f"{GRAPHS[cfg['topology']]}, {ALGOS[cfg['algorithm']]}"


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    import matplotlib.pyplot as plt

    import topofl as tf

    found = figures.panels(args, {"label skew (one class a node)": "field_tracking"}, label)
    panel = next(iter(found.values()))
    runs = panel.runs
    n = int(next(iter(panel.configs.values()))["n_clients"])
    gap = {g: tf.spectral.spectral_gap(tf.topologies.build(g, n=n)) for g in GRAPHS}
    acc = figures.margin(args.name, "accuracy")
    gain = {g: figures.final(runs[f"{g}, DSGT"], "global_acc")
            - figures.final(runs[f"{g}, D-SGD"], "global_acc") for g in GRAPHS}

    def reading(*graphs: str) -> dict[str, Any]:
        cells = {f"{g}, {a}": runs[f"{g}, {a}"] for g in graphs for a in ALGOS.values()}
        return {"converged": figures.convergence(cells, "global_acc", tolerance=acc)}

    checks = [
        figures.above("ring (the sparsest graph): DSGT's final accuracy above D-SGD's",
                      gain["ring"], margin=acc, headline=True, **reading("ring")),
        figures.above("DSGT's gain over D-SGD larger on the ring than on the exponential graph",
                      gain["ring"] - gain["exponential"], margin=acc,
                      **reading("ring", "exponential")),
        figures.above("DSGT's gain over D-SGD larger on the exponential graph than on the "
                      "complete graph", gain["exponential"] - gain["complete"], margin=acc,
                      **reading("exponential", "complete")),
    ]

    fig, (left, right) = plt.subplots(1, 2, figsize=(11.0, 4.0),
                                      gridspec_kw={"width_ratios": [1.6, 1.0]})
    tf.plotting.convergence(runs, "global_acc", ax=left, title=panel.title, band=True,
                            epochs=panel.epochs, ylabel="test accuracy (global test set)",
                            legend="below")
    lo = min(0.8, min(float(figures.final(r, "global_acc").mean) for r in runs.values()) - 0.02)
    left.set_ylim(lo, None)
    for g in GRAPHS:
        right.plot([gap[g]] * gain[g].n, [100 * v for v in gain[g].values], "o", alpha=0.6,
                   label=f"{g} (gap {gap[g]:.3f})")
        right.errorbar([gap[g]], [100 * gain[g].mean], yerr=[100 * gain[g].std], fmt="_k",
                       ms=14, capsize=3)
    right.axhline(0.0, color="grey", lw=0.8)
    right.set_xscale("log")
    right.set_xlabel("spectral gap 1 - max |lambda_k(W)|, k >= 2 (log)")
    right.set_ylabel("DSGT - D-SGD, final accuracy (points)")
    right.set_title("DSGT's gain, seed by seed")
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False,
                     fontsize=8)
    fig.tight_layout()

    numbers = {panel.title: panel.table("global_acc")}
    import pandas as pd

    numbers["DSGT - D-SGD"] = pd.DataFrame([
        {"graph": g, "spectral gap": round(gap[g], 4), "DSGT - D-SGD (final, points)":
         100 * gain[g], "D-SGD final": figures.final(runs[f"{g}, D-SGD"], "global_acc"),
         "DSGT final": figures.final(runs[f"{g}, DSGT"], "global_acc")} for g in GRAPHS])
    measured = ("DSGT - D-SGD in final mean accuracy (points): " + ", ".join(
        f"{g} (gap {gap[g]:.3f}) {100 * gain[g].mean:+.2f} ± {100 * gain[g].std:.2f}"
        for g in GRAPHS) + "; D-SGD on the ring "
        f"{figures.final(runs['ring, D-SGD'], 'global_acc'):.3f}, DSGT on the ring "
        f"{figures.final(runs['ring, DSGT'], 'global_acc'):.3f}")
    return figures.Result(fig, measured, checks, numbers, panels=found)


if __name__ == "__main__":
    raise SystemExit(main())
