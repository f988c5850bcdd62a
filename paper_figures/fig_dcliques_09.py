"""D-Cliques Fig. 9: MNIST, effect of Clique Averaging on D-Cliques (fully-connected).

100 nodes, 2 shards per node, logistic regression, D-SGD on D-Cliques (10 cliques of 10 built
with Greedy Swap, fully-connected inter-clique topology), with and without Clique Averaging.
Bold lines: average accuracy of the nodes on the global test set (mean over the seeds, shaded:
+- one std); thin lines: the minimum and maximum node. As in the paper, the y axis starts at
89% when every curve stays above it.

    python paper_figures/fig_dcliques_09.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import _dcliques_gates  # beside this script
import _dcliques_versus  # beside this script

from topofl import figures

CA, NO_CA = "D-Cliques w/ clique avg.", "D-Cliques w/o clique avg."


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    res = _dcliques_versus.build(
        args, {"MNIST (logistic regression), D-Cliques": "dcliques_09_mnist"},
        lambda c: CA if c["clique_averaging"] else NO_CA, CA, NO_CA,
        names=("Clique Averaging", "none"), suptitle="", titles=True, slight=True)
    rec = next(iter(res.panels.values())).runs  # type: ignore[union-attr]
    lows = [float(r.series("global_acc_min", run=run)[1].min())
            for r in rec.values() for run in r.runs]
    if min(lows) > 0.89:
        res.fig.axes[0].set_ylim(bottom=0.89)
    res.notes = [*res.notes, _dcliques_gates.not_gated_note(args.name)]
    return res


if __name__ == "__main__":
    raise SystemExit(main())
