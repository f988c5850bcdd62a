"""DPFL Figs. 1 and 7: accuracy against the variance between local models on CIFAR-10.

One point per method of Table 1 (Local, FedAvg, FedAvg+FT, FedProx, FedProx+FT, APFL, PerFedAvg,
Ditto, FedRep, kNN-Per, pFedGraph; DPFL with B_c = inf, 0.2N, 0.1N, 0.05N): x the clients'
average test accuracy, y the variance of the clients' accuracies (%²), both averaged over the
seeds; (a) Patho(3) is the paper's Fig. 1, (b) Dir(0.1) its Fig. 7. Better is the bottom right.
The runs are those of fig_dpfl_table1.py (its run cache is reused).

    python paper_figures/fig_dpfl_fig7.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import _dpfl_variance  # the panels of DPFL Figs. 1 and 5-7, beside this script

from topofl import figures

# config prefix (one config per method: <prefix>_<method>) -> panel title
PANELS = {"dpfl_table1_patho": "(a) CIFAR-10 Patho(3) (paper Fig. 1)",
          "dpfl_table1_dir": "(b) CIFAR-10 Dir(0.1) (paper Fig. 7)"}


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    return _dpfl_variance.panels(args, PANELS, share="dpfl_table1")


if __name__ == "__main__":
    raise SystemExit(main())
