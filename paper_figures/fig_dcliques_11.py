"""D-Cliques Fig. 11: D-Cliques vs a random graph with 10 edges per node, no Clique Averaging.

100 nodes, 2 shards per node, D-SGD without Clique Averaging or momentum: D-Cliques (10 cliques
of 10 built with Greedy Swap, fully-connected inter-clique topology) against a random 10-regular
graph. Left: logistic regression on MNIST; right: GN-LeNet on CIFAR-10, with the random graph
also run with momentum 0.9 (Section IV-D: momentum on the random graph is detrimental). Bold
lines: average accuracy of the nodes on the global test set (mean over the seeds, shaded: +-
one std); thin lines: the minimum and maximum node.

    python paper_figures/fig_dcliques_11.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

from typing import Any

import _dcliques_gates  # beside this script
import _dcliques_versus  # beside this script

from topofl import figures

PANELS = {"MNIST (logistic regression)": ["dcliques_11_mnist"],
          "CIFAR-10 (GN-LeNet)": ["dcliques_11_cifar10", "dcliques_11_cifar10_momentum"]}
RND, RND_MOM = "random 10 edges/node", "random 10 edges/node w/ momentum"


def label(config: dict[str, Any]) -> str:
    """The legend of a run, from its resolved config."""
    if str(config["topology"]).startswith("dcliques"):
        return _dcliques_versus.DCL
    return RND_MOM if float(config["momentum"]) > 0 else RND


def momentum(found: dict[str, figures.Panel]) -> tuple[list[Any], str]:
    """Section IV-D: momentum on the random graph is detrimental (CIFAR-10)."""
    runs = found["CIFAR-10 (GN-LeNet)"].runs
    mom, nomom = (figures.final(runs[c], "global_acc") for c in (RND_MOM, RND))
    acc = figures.margin("dcliques_11", "accuracy")
    panel = found["CIFAR-10 (GN-LeNet)"]
    return ([figures.below("CIFAR-10: momentum hurts the random graph (final accuracy)",
                           mom - nomom, margin=acc,
                           **_dcliques_versus.reading(panel, (RND_MOM, RND), acc))],
            f"random graph with momentum {mom:.3f} vs {nomom:.3f} without")


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    res = _dcliques_versus.build(
        args, PANELS, label, _dcliques_versus.DCL, RND, extra=momentum,
        names=("D-Cliques", "random"),
        suptitle="D-SGD, 100 nodes, 2 shards/node, no Clique Averaging: D-Cliques vs random graph")
    # the CIFAR-10 stand-in's gate: momentum on the random graph is detrimental (Sec. IV-D)
    runs = res.panels["CIFAR-10 (GN-LeNet)"].runs  # type: ignore[index]
    gate = _dcliques_gates.gate(args.name, "CIFAR-10", _dcliques_gates.values(runs))
    res.checks = _dcliques_gates.cover(res.checks, gate, _dcliques_gates.COVERED[args.name])
    res.gates = [gate]
    res.notes = [*res.notes, _dcliques_gates.not_gated_note(args.name)]
    return res


if __name__ == "__main__":
    raise SystemExit(main())
