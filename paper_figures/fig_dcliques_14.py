"""D-Cliques Fig. 14: CIFAR-10 at 1000 nodes, ring, fractal, small-world or full inter-clique links.

D-SGD with Clique Averaging and momentum 0.9 on Greedy Swap cliques of 10 nodes (2 shards per
node, GN-LeNet, lr 0.002, batch 2: the same number of updates per epoch as 100 nodes with batch
20), against a fully-connected network of 1000 nodes (momentum, no Clique Averaging). Bold:
average test accuracy of the nodes on the global test set (mean over the seeds, shaded: +- one
std); thin: the minimum and maximum node. The Markdown also gives the edges and the messages
per node and round of each topology (the paper's 14.5 edges for small-world and 18.9 edges /
37.8 messages for fully-connected inter-clique links).

The default scale runs on a CPU with a cheaper stand-in (the config's ``[stand_in]`` table,
analysis/standins.md): MNIST-1D (50,000 training signals, 50 a node as the paper's images, so
its batch 2 keeps 25 updates an epoch) and an MLP with one hidden layer of 64 instead of GN-LeNet,
lr 0.1, momentum 0.9 kept across rounds (``momentum_state = "keep"``), 1250 rounds (50
epochs; the paper: 100; ~55 min at ``--jobs 2``, estimated from the 500-round run), 3 seeds,
every one of the 1000 nodes scored on a 1,000-signal global test set every two epochs (no sample
of nodes needed). The earlier default run of 500 rounds (5 topologies x 3 seeds) took 543 s of
CPU time (443 s user, 100 s system) and 23 min of wall time on this 2-core machine shared with
other jobs (load 5-8); a first run of 250 rounds took 307 s. Why not the paper's model or the
calibration's CNN: measured on 2026-11-22 on the same shared CPU, one round of 1000 GN-LeNets
took 72 s of wall time (15 s of CPU time) and one evaluation of them on 1000 test images did not
finish in 27 min; the 1-D CNN ``cnn1d`` on the calibration's noisier signals took 19.5 s of CPU
time for 10 rounds and 2 evaluations of 1000 nodes, against 5.4 s for 30 rounds and one
evaluation of the MLP (one thread, load ~6). After 20 epochs the fully-connected network is flat
(65.7 %; the pooled MLP reached 68.3 % in the calibration, one seed) while the D-Cliques curves
still rise (small-world ~1 point over the last 4 epochs, ring ~1.5), so the default scale now
runs 50 epochs; the headline reads the topologies' speed (mean accuracy over the run) over that
first half of the paper's run. ``--full`` keeps the paper's setting (GN-LeNet on CIFAR-10 when
its files are in place, lr 0.002, 2500 rounds) and runs on the GPU torch sees
(``topofl.figures.load_config``).

    python paper_figures/fig_dcliques_14.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import _dcliques_inter  # beside this script

from topofl import figures


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    return _dcliques_inter.build(args, ["dcliques_14_dcliques", "dcliques_14_complete"],
                                 early=50)


if __name__ == "__main__":
    raise SystemExit(main())
