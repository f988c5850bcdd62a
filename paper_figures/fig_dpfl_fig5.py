"""DPFL Appendix Fig. 5: accuracy against the variance between local models on FEMNIST.

One point per method of Table 1 (Local, FedAvg, FedAvg+FT, FedProx, FedProx+FT, APFL, PerFedAvg,
Ditto, FedRep, kNN-Per, pFedGraph; DPFL with B_c = inf, 0.2N, 0.1N, 0.05N): x the clients'
average test accuracy, y the variance of the clients' accuracies (%²), both averaged over the
seeds. Better is the bottom right. The Markdown also holds Table 1's FEMNIST column. FEMNIST's
offline stand-in is the digits with 7 of 10 classes per client (see the configs).

    python paper_figures/fig_dpfl_fig5.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import _dpfl_variance  # the panels of DPFL Figs. 1 and 5-7, beside this script

from topofl import figures

# config prefix (one config per method: <prefix>_<method>) -> panel title
PANELS = {"dpfl_fig5": "FEMNIST, natural split (paper Fig. 5)"}

# the paper's rounds (DPFL: 48 after its 2 of pre-processing; Appendix F)
PAPER_ROUNDS = 50


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    return _dpfl_variance.panels(args, PANELS, total=PAPER_ROUNDS)


if __name__ == "__main__":
    raise SystemExit(main())
