"""PFedDST Fig. 4: personalized test accuracy vs rounds on CIFAR-100, against the baselines.

The setting of Fig. 3 (``fig_pfeddst_fig3.py``: Section III-A's optimiser, 5 local epochs,
10% sampling for the server methods, 10 neighbours or peers for the others) on CIFAR-100 with
5 of the 100 classes per client. The same runs give the CIFAR-100 column of Table I
(``fig_pfeddst_table1.py``).

The headline check: DFedPGP's final accuracy above the best other method's by more than the
margin (``claims.toml``: half the paper's 0.7-point lead), on the two curves having flattened.
On the offline stand-in (the 100-class mixture, which fails its calibration) every check is
inconclusive whatever the numbers: the result reports them and what they would give.

    python paper_figures/fig_pfeddst_fig4.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import _pfeddst  # beside this script

from topofl import figures


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    return _pfeddst.curves(args, "CIFAR-100", "DFedPGP")


if __name__ == "__main__":
    raise SystemExit(main())
