"""D-Cliques Fig. 13: 1000 nodes, inter-clique links by ring, fractal, small world or clique pairs.

D-SGD with Clique Averaging on Greedy Swap cliques of 10 nodes (2 shards per node, logistic
regression, batch 13: the same number of updates per epoch as 100 nodes with batch 128),
against a fully-connected network of 1000 nodes. Bold: average test accuracy of the nodes on
the global test set (mean over the seeds, shaded: +- one std); thin: the minimum and maximum
node. The Markdown also gives the edges and the messages per node and round of each topology
(the paper's 14.5 edges for small-world and 18.9 edges / 37.8 messages for fully-connected
inter-clique links).

    python paper_figures/fig_dcliques_13.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import _dcliques_inter  # beside this script

from topofl import figures


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    return _dcliques_inter.build(args, ["dcliques_13_dcliques", "dcliques_13_complete"])


if __name__ == "__main__":
    raise SystemExit(main())
