"""DPFL Table 2: effect of the pre-processing local epochs tau_init on DPFL's accuracy.

CIFAR-10 (or its offline stand-in), 100 clients, Patho(3), tau_init = 1, 5, 10 against the
budgets B_c = inf, 0.2N, 0.1N, 0.05N, over the seeds: mean +- std over seeds of the clients'
average test accuracy of their best-validation models.

    python paper_figures/fig_dpfl_table2.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import _dpfl_budgets  # beside this script

from topofl import figures

# the paper's Table 2 (B_c = inf, 20, 10, 5 with N = 100), mean over three seeds (%)
PAPER = {1: (81.86, 82.33, 82.53, 82.30), 5: (83.03, 82.53, 82.58, 80.90),
         10: (83.04, 82.83, 82.52, 82.17)}


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    return _dpfl_budgets.build(args, "dpfl_table2", "tau_init", "tau_init", PAPER,
                               best="last", gap_kind="gap")


if __name__ == "__main__":
    raise SystemExit(main())
