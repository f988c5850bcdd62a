"""D-Cliques Fig. 8: D-Cliques (fully-connected, Clique Averaging) vs a fully-connected network.

100 nodes, 2 shards per node (label skew), D-SGD; D-Cliques: 10 cliques of 10 built with Greedy
Swap (1000 steps), fully-connected inter-clique topology, Clique Averaging. Left: logistic
regression on MNIST; right: GN-LeNet on CIFAR-10 with momentum 0.9 (with Clique Averaging on
D-Cliques). Bold lines: average accuracy of the nodes on the global test set (mean over the
seeds, shaded: +- one std); thin lines: the minimum and maximum node.

    python paper_figures/fig_dcliques_08.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import _dcliques_gates as gates  # beside this script
import _dcliques_versus  # beside this script

from topofl import figures

PANELS = {
    "MNIST (logistic regression)": ["dcliques_08_mnist", "dcliques_08_mnist_complete"],
    "CIFAR-10 (GN-LeNet, momentum 0.9)": ["dcliques_08_cifar10", "dcliques_08_cifar10_complete"],
}
DCL, FULL = "D-Cliques (fully-connected) w/ clique avg.", "fully connected"
# Fig. 8's text compares D-Cliques with Fig. 1's ring and grid (MNIST, label skew): those runs
# (read from Fig. 1's cache, on Fig. 1's own stand-in) are the controls of its MNIST gate
FIG1 = {"label skew (2 shards/node)": "dcliques_01_skew"}
FIG1_LABELS = {"ring": "ring", "torus:rows=10,cols=10": "grid", "complete": FULL}


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    found = figures.panels(args, PANELS,
                           lambda c: DCL if str(c["topology"]).startswith("dcliques") else FULL)
    n = next(iter(found.values())).configs[FULL]["n_clients"]
    fig, numbers = figures.curves(
        found, "global_acc", band="lines",
        suptitle=f"D-SGD, {n} nodes, 2 shards/node: D-Cliques vs fully connected")
    acc, close = figures.margin(args.name, "accuracy"), figures.margin(args.name, "close")
    checks, parts = [], []
    for title, panel in found.items():
        d, f = (figures.final(panel.runs[c], "global_acc") for c in (DCL, FULL))
        short = title.split(" ")[0]
        checks.append(figures.within(f"{short}: D-Cliques within {100 * close:g} points of fully "
                                     "connected (final accuracy)", f - d, close, headline=True,
                                     **_dcliques_versus.reading(panel, (DCL, FULL), acc)))
        parts.append(f"{short}: D-Cliques {d:.3f}, fully connected {f:.3f} "
                     f"({100 * (f - d):+.1f} points for fully connected)")
    fig1 = figures.panels(args, FIG1, lambda c: FIG1_LABELS[c["topology"]], share="dcliques_01")
    gate = gates.gate(args.name, "MNIST", gates.values(next(iter(fig1.values())).runs))
    checks = gates.cover(checks, gate, gates.COVERED[args.name])
    notes = [_dcliques_versus.convergence_note(found, acc),
             "The MNIST gate's controls are Fig. 1's label-skew runs (ring, grid, fully "
             "connected, read from Fig. 1's runs: on Fig. 1's stand-in, Fashion-MNIST at batch "
             "128, since 2026-11-29, where this MNIST panel keeps mnist5k at batch 10); "
             + gates.not_gated_note(args.name).removeprefix("Fidelity gate: ")]
    if any(c.outcome != "pass" for c in checks):
        notes.append(_dcliques_versus.scale_note(found))
    return figures.Result(fig, "; ".join(parts), checks, numbers, panels=found, notes=notes,
                          gates=[gate])


if __name__ == "__main__":
    raise SystemExit(main())
