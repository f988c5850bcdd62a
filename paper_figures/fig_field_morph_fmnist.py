"""Field claim: Morph (each node rewires its few in-neighbours towards dissimilar models) against
the complete graph, a static graph of the same in-degree and Epidemic Learning, under label skew,
on the real Fashion-MNIST (Morph's paper used CIFAR-10 and FEMNIST).

``field_morph`` on Fashion-MNIST (Debian's ``dataset-fashion-mnist``, read by
``topofl.data.load("fashion_mnist")``; 60,000 train / 10,000 test images; the offline stand-in of
the configs' ``[stand_in]`` where the files are absent): 32 nodes, two classes a node, an MLP
with one hidden layer of 32 (Morph's LeNet is out of this CPU's reach: ``analysis/fmnist_cost.md``),
the local SGD of Morph's code for every method (lr 0.05, 10 local steps of batches of 5). Morph
with its code's defaults (3 in-neighbours, a swap every 5 rounds, beta 500, uniform averaging)
against D-SGD on the complete graph and on a static random 3-regular graph, and Epidemic
Learning with 3 models a node and round (EL-Oracle, EL-Local). Left: the nodes' mean accuracy on
the global test set against rounds (mean over the seeds, shaded: +- one std); right: the final
accuracies (dots: seeds). The methods, their labels and the checks are ``fig_field_morph.py``'s.

    python paper_figures/fig_field_morph_fmnist.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import fig_field_morph as base  # beside this script: METHODS, METRIC, label

from topofl import figures

CONFIGS = ["field_morph_fmnist_morph", "field_morph_fmnist_dsgd", "field_morph_fmnist_el"]
METHODS, METRIC, label = base.METHODS, base.METRIC, base.label


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    return base.build(args, CONFIGS, "32 nodes, Fashion-MNIST, two classes a node, MLP (32 "
                      "hidden)", "Fashion-MNIST's 10,000 test images")


if __name__ == "__main__":
    raise SystemExit(main())
