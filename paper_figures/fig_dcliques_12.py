"""D-Cliques Fig. 12: D-Cliques vs the exponential graph (14 undirected edges per node).

100 nodes, 2 shards per node, D-SGD without Clique Averaging or momentum: D-Cliques (10 cliques
of 10 built with Greedy Swap, fully-connected inter-clique topology) against the exponential
graph of Assran et al. with its edges made undirected (i linked to i +- 2^k, 14 edges per node).
Left: logistic regression on MNIST; right: GN-LeNet on CIFAR-10. Bold lines: average accuracy of
the nodes on the global test set (mean over the seeds, shaded: +- one std); thin lines: the
minimum and maximum node.

    python paper_figures/fig_dcliques_12.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import _dcliques_gates  # beside this script
import _dcliques_versus  # beside this script

from topofl import figures

PANELS = {"MNIST (logistic regression)": "dcliques_12_mnist",
          "CIFAR-10 (GN-LeNet)": "dcliques_12_cifar10"}
EXP = "exponential (14 edges/node)"


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    dcl = _dcliques_versus.DCL
    res = _dcliques_versus.build(
        args, PANELS, lambda c: dcl if str(c["topology"]).startswith("dcliques") else EXP,
        dcl, EXP, names=("D-Cliques", "exponential"),
        suptitle="D-SGD, 100 nodes, 2 shards/node, no Clique Averaging or momentum: D-Cliques "
                 "vs exponential graph")
    res.notes = [*res.notes, _dcliques_gates.not_gated_note(args.name)]
    return res


if __name__ == "__main__":
    raise SystemExit(main())
