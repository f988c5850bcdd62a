"""Field claim: Teleportation keeps its accuracy as n grows (Takezawa and Stich, ICLR 2025), on
the real Fashion-MNIST, the paper's own data set.

``field_teleportation`` on Fashion-MNIST (Debian's ``dataset-fashion-mnist``, read by
``topofl.data.load("fashion_mnist")``; 60,000 train / 10,000 test images; the offline stand-in
of the configs' ``[stand_in]`` where the files are absent): Teleportation with k = 4 models on
a ring over its slots against D-SGD on a ring of n nodes, n = 20, 80 and 320, logistic
regression (the paper's LeNet is out of this CPU's reach: ``analysis/fmnist_cost.md``), one
label shard a node, lr 0.02, 24,000 rounds. A final accuracy is the mean of the last 5
evaluations (the last 2,000 rounds): the k models, each trained on one class a round, move by
about a point from one evaluation to the next. The methods, their labels and the checks are
``fig_field_teleportation.py``'s.

    python paper_figures/fig_field_teleportation_fmnist.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import fig_field_teleportation as base  # beside this script: NAMES, label, build

from topofl import figures

CONFIGS = ["field_teleportation_fmnist", "field_teleportation_fmnist_ring"]
NAMES, label = base.NAMES, base.label
#: the evaluations a final accuracy averages (the last 2,000 rounds; the last one at --quick,
#: whose 6 rounds hold 3)
LAST = 5


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    return base.build(args, CONFIGS, "Fashion-MNIST, label skew (one label shard, one class, "
                      "a node), logistic regression",
                      last=1 if args.scale == "quick" else LAST)


if __name__ == "__main__":
    raise SystemExit(main())
