"""Field claim: Teleportation keeps its accuracy as n grows, a ring does not (ICLR 2025).

D-SGD on topofl's node-level Teleportation (k = 4 random active nodes a round gossip on a ring
among themselves; the others keep their model) and on a ring of n nodes, n = 16, 32 and 64,
logistic regression on the synthetic 10-class data with one class a node (the setting of
field_tracking). Left: the mean test accuracy of the nodes' models on the global test set at n =
64 (mean over the seeds, shaded: +- one std); right: each graph's final accuracy against n.

    python paper_figures/fig_field_teleportation.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

from typing import Any

from topofl import figures

GRAPHS = {"teleportation:k=4": "Teleportation (k = 4)", "ring": "ring"}


def label(cfg: Any) -> str:
    """A curve's label: ``"<graph>, n = <n>"``."""
    return f"{GRAPHS[cfg['topology']]}, n = {cfg['n_clients']}"


def _points(x: figures.OverSeeds) -> str:
    """A difference in points, signed mean ± std over the seeds."""
    return f"{100 * x.mean:+.1f} ± {100 * x.std:.1f}"


def _contraction(m: Any) -> float:
    """The expected one-round contraction of a disagreement vector of a doubly stochastic
    random ``W`` (``E sum_j W_ij^2 - E sum_m W_im W_jm``; teleportation's Notes)."""
    return float(m.row_self - m.row_cross)


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    import matplotlib.pyplot as plt
    import pandas as pd

    import topofl as tf

    found = figures.panels(args, {"label skew (one class a node)": "field_teleportation"},
                           label)
    panel = next(iter(found.values()))
    runs = panel.runs
    ns = sorted({int(c["n_clients"]) for c in panel.configs.values()})
    small, large = ns[0], ns[-1]
    acc = figures.margin(args.name, "accuracy")
    fin = {(g, n): figures.final(runs[f"{g}, n = {n}"], "global_acc")
           for g in GRAPHS.values() for n in ns}
    tele, ring = GRAPHS["teleportation:k=4"], GRAPHS["ring"]

    def reading(*cells: tuple[str, int]) -> dict[str, Any]:
        chosen = {f"{g}, n = {n}": runs[f"{g}, n = {n}"] for g, n in cells}
        return {"converged": figures.convergence(chosen, "global_acc", tolerance=acc)}

    checks = [
        figures.above(f"Teleportation: final accuracy at n = {large} not below n = {small} "
                      "(at least as good)", fin[(tele, large)] - fin[(tele, small)],
                      margin=acc, tie="pass", headline=True,
                      **reading((tele, small), (tele, large))),
        figures.below(f"ring: final accuracy at n = {large} below n = {small}",
                      fin[(ring, large)] - fin[(ring, small)], margin=acc,
                      **reading((ring, small), (ring, large))),
        figures.above(f"n = {large}: Teleportation's final accuracy above the ring's",
                      fin[(tele, large)] - fin[(ring, large)], margin=acc,
                      **reading((tele, large), (ring, large))),
    ]

    fig, (left, right) = plt.subplots(1, 2, figsize=(11.0, 4.0))
    tf.plotting.convergence({k: v for k, v in runs.items() if k.endswith(f"n = {large}")},
                            "global_acc", ax=left, title=f"{panel.title}, n = {large}",
                            band=True, ylabel="test accuracy (global test set)",
                            legend="below")
    for g in GRAPHS.values():
        means = [100 * fin[(g, n)].mean for n in ns]
        stds = [100 * fin[(g, n)].std for n in ns]
        right.errorbar(ns, means, yerr=stds, marker="o", capsize=3, label=g)
    right.set_xscale("log", base=2)
    right.set_xticks(ns, [str(n) for n in ns])
    right.set_xlabel("nodes n (log)")
    right.set_ylabel("final test accuracy (%)")
    right.set_title("final accuracy against n (mean ± std over seeds)")
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False,
                     fontsize=8)
    fig.tight_layout()

    rows = []
    for spec, g in GRAPHS.items():
        for n in ns:
            t = tf.topologies.build(spec, n=n, seed=0)
            rows.append({"graph": g, "n": n, "final accuracy": fin[(g, n)],
                         "gap (ring: spectral; Teleportation: 1 - E squared contraction)":
                         round(tf.spectral.spectral_gap(t), 5) if spec == "ring" else
                         round(1 - _contraction(tf.spectral.expected_mixing(t)), 5)})
    numbers = {panel.title: panel.table("global_acc"), "against n": pd.DataFrame(rows)}
    growth = {g: _points(fin[(g, large)] - fin[(g, small)]) for g in (tele, ring)}
    measured = "final mean accuracy: " + "; ".join(
        f"{g} " + ", ".join(f"n = {n} {fin[(g, n)]:.3f}" for n in ns)
        for g in GRAPHS.values()) + (
        f" (n = {large} - n = {small}: Teleportation {growth[tele]} points, ring "
        f"{growth[ring]} points)")
    return figures.Result(fig, measured, checks, numbers, panels=found)


if __name__ == "__main__":
    raise SystemExit(main())
