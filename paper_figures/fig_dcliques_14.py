"""D-Cliques Fig. 14: CIFAR-10 at 1000 nodes, ring, fractal, small-world or full inter-clique links.

D-SGD with Clique Averaging and momentum 0.9 on Greedy Swap cliques of 10 nodes (2 shards per
node, GN-LeNet, lr 0.002, batch 2: the same number of updates per epoch as 100 nodes with batch
20), against a fully-connected network of 1000 nodes (momentum, no Clique Averaging). Bold:
average test accuracy of the nodes on the global test set (mean over the seeds, shaded: +- one
std); thin: the minimum and maximum node. The Markdown also gives the edges and the messages
per node and round of each topology (the paper's 14.5 edges for small-world and 18.9 edges /
37.8 messages for fully-connected inter-clique links).

Needs a GPU: no default-scale result is committed. Measured on 2026-11-22 on this repository's
2-core CPU shared with other jobs (load ~15), for the small-world run of the default scale:
setting the run up (the 50,000-image stand-in, the cliques) took 58 s, one round (a local step
of the 1000 GN-LeNets and the gossip) 72 s of wall time (15 s of CPU time), and one
evaluation of the 1000 models on the 1000 global test images had not finished after 27 min
of wall time (8 min of CPU time). The default scale's five runs of 10 rounds would thus take
over three hours, and any shorter run would show the first fraction of an epoch only
(25 rounds are one epoch). Run it with ``--full`` on a GPU machine: the full scale runs on
the GPU torch sees (``topofl.figures.load_config``).

    python paper_figures/fig_dcliques_14.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import _dcliques_inter  # beside this script

from topofl import figures


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    return _dcliques_inter.build(args, ["dcliques_14_dcliques", "dcliques_14_complete"],
                                 "GN-LeNet, momentum 0.9", early=50)


if __name__ == "__main__":
    raise SystemExit(main())
