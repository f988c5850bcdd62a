"""D-Cliques Fig. 19: convergence of D-Cliques on random cliques vs cliques from Greedy Swap.

Sec. IV-G-2 of the paper: 100 nodes with 2 shards each, D-Cliques with 10 cliques of 10 nodes
and a fully-connected inter-clique topology, D-SGD with Clique Averaging; the cliques are random
(Greedy Swap with 0 steps) or optimised by Greedy Swap for 1000 steps. Left: logistic regression
on MNIST (lr 0.1, batch 128); right: GN-LeNet on CIFAR-10 (lr 0.002, batch 20, momentum 0.9).
Bold lines: average test accuracy of the nodes on the global test set (mean over the seeds,
shaded: +- one std); thin lines: the minimum and maximum node. Configs:
``configs/dcliques_19_mnist.toml``, ``configs/dcliques_19_cifar10.toml``.

    python paper_figures/fig_dcliques_19.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

from typing import Any

import _dcliques_gates  # beside this script
import _dcliques_versus  # beside this script
import numpy as np

from topofl import figures

PANELS = {"MNIST": "dcliques_19_mnist", "CIFAR-10": "dcliques_19_cifar10"}
RANDOM = "random cliques"


def label(config: dict[str, Any]) -> str:
    """Curve label of a D-Cliques run: random cliques or Greedy Swap."""
    steps = int(str(config["topology"]).rsplit("steps=", 1)[1].split(",")[0])
    return RANDOM if steps == 0 else f"Greedy Swap ({steps} steps)"


def spread(rec: Any, metric: str = "global_acc") -> float:
    """Mean over evaluations of the gap between the best and the worst node (one run)."""
    _, lo = rec.series(f"{metric}_min")
    _, hi = rec.series(f"{metric}_max")
    return float(np.mean(hi - lo))


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    found = figures.panels(args, PANELS, label)
    fig, numbers = figures.curves(
        {f"{t} ({p.data.split(':')[0]})": p for t, p in found.items()}, "global_acc", band="lines",
        legend=None, suptitle="D-Cliques (fully connected), 100 nodes, 2 shards/node, Clique "
                              "Averaging")
    handles, labels = fig.axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2,
               frameon=False)
    numbers = dict(zip(found, numbers.values()))
    acc, spr = figures.margin(args.name, "accuracy"), figures.margin(args.name, "spread")
    checks, parts = [], []
    for title, panel in found.items():
        gs = next(k for k in panel.runs if k != RANDOM)
        area = {k: figures.mean_over_rounds(panel.runs[k], "global_acc") for k in (gs, RANDOM)}
        width = {k: figures.per_seed(panel.runs[k], spread) for k in (gs, RANDOM)}
        fin = {k: figures.final(panel.runs[k], "global_acc") for k in (gs, RANDOM)}
        numbers[title]["mean spread (max - min)"] = [width[c] for c in numbers[title]["curve"]]
        speed = _dcliques_versus.reading(panel, (gs, RANDOM), acc, speed=True)
        checks += [figures.above(f"{title}: Greedy Swap faster (mean accuracy over the run)",
                                 area[gs] - area[RANDOM], margin=acc, headline=True, **speed),
                   figures.below(f"{title}: Greedy Swap lower spread between nodes (mean over "
                                 "the run)", width[gs] - width[RANDOM], margin=spr,
                                 headline=True,
                                 **_dcliques_versus.reading(panel, (gs, RANDOM), spr,
                                                            speed=True, spread=True))]
        parts.append(f"{title}: mean accuracy over the run {area[gs]:.3f} (Greedy Swap) vs "
                     f"{area[RANDOM]:.3f} (random), final {fin[gs]:.3f} vs {fin[RANDOM]:.3f}; "
                     f"node spread {width[gs]:.3f} vs {width[RANDOM]:.3f}")
    return figures.Result(fig, "; ".join(parts), checks, numbers, panels=found,
                          notes=[_dcliques_versus.convergence_note(found, acc),
                                 _dcliques_gates.not_gated_note(args.name)])


if __name__ == "__main__":
    raise SystemExit(main())
