"""DPFL Appendix Fig. 6: accuracy against the variance between local models on CINIC-10.

One point per method of Table 1 (Local, FedAvg, FedAvg+FT, FedProx, FedProx+FT, APFL, PerFedAvg,
Ditto, FedRep, kNN-Per, pFedGraph; DPFL with B_c = inf, 0.2N, 0.1N, 0.05N): x the clients'
average test accuracy, y the variance of the clients' accuracies (%²), both averaged over the
seeds; 200 clients, (a) Dir(0.1) and (b) Patho(3). Better is the bottom right. The Markdown
also holds Table 1's CINIC-10 columns. CINIC-10's offline stand-in is a seeded Gaussian
mixture (see the configs).

    python paper_figures/fig_dpfl_fig6.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import _dpfl_variance  # the panels of DPFL Figs. 1 and 5-7, beside this script

from topofl import figures

# config prefix (one config per method: <prefix>_<method>) -> panel title
PANELS = {"dpfl_fig6_dir": "(a) CINIC-10 Dir(0.1) (paper Fig. 6a)",
          "dpfl_fig6_patho": "(b) CINIC-10 Patho(3) (paper Fig. 6b)"}

# the paper's rounds (DPFL: 48 after its 2 of pre-processing; Appendix F)
PAPER_ROUNDS = 50


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    return _dpfl_variance.panels(args, PANELS, total=PAPER_ROUNDS)


if __name__ == "__main__":
    raise SystemExit(main())
