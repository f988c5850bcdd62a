"""PFedDST Fig. 3: personalized test accuracy vs rounds on CIFAR-10, against the baselines.

100 clients, pathological split with 2 classes per client, SGD (lr 0.1, momentum 0.9, weight
decay 0.005), 5 local epochs per round (PFedDST: 5 on the body, then 1 on the head), batch 128;
the centralized baselines (FedAvg, FedPer, FedBABU) sample 10% of the clients per round, the
decentralized ones talk to 10 neighbours, PFedDST selects 10 peers by score (Section III-A).
Every curve is the mean over clients of each client's model on its own test split. The same runs
give the CIFAR-10 column of Table I (``fig_pfeddst_table1.py``).

The headline check: PFedDST's final accuracy above the best other method's, seed by seed, by
more than the margin (``claims.toml``: half the paper's 1.0-point lead), on the two curves having
flattened; PFedDST against each other method are secondary checks.

    python paper_figures/fig_pfeddst_fig3.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import _pfeddst  # beside this script

from topofl import figures


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    return _pfeddst.curves(args, "CIFAR-10", "PFedDST")


if __name__ == "__main__":
    raise SystemExit(main())
