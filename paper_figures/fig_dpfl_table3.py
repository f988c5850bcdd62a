"""DPFL Table 3: period P of refreshing the collaborators C_k (GGC every P rounds).

CIFAR-10 (or its offline stand-in), 100 clients, Dir(0.1), P = 1, 5, 10, 20 against the
budgets B_c = inf, 0.2N, 0.1N, 0.05N, seed 42 as in the paper: the clients' average test
accuracy of their best-validation models.

    python paper_figures/fig_dpfl_table3.py [--quick | --full]
"""

from __future__ import annotations

import math
import sys

from topofl import figures

BUDGETS = {1.0: "inf", 0.2: "0.2N", 0.1: "0.1N", 0.05: "0.05N"}
# the paper's Table 3 (B_c = inf, 20, 10, 5 with N = 100), seed 42 (%)
PAPER = {1: (84.20, 83.67, 84.20, 84.33), 5: (83.83, 84.01, 83.31, 83.73),
         10: (83.24, 84.17, 83.31, 83.03), 20: (82.34, 82.59, 82.08, 82.73)}
ROBUST = 2.0  # "maintains good performance": the P rows' averages within 2 points


def budget(config: dict) -> str:
    """The column of a run (1.0 = N, every other client, is B_c = inf)."""
    b = config["budget"]
    return BUDGETS[1.0 if b is None or b == math.inf else float(b)]


def main(argv: list[str] | None = None) -> int:
    args = figures.parse_args(__doc__, "dpfl_table3", argv)
    import pandas as pd

    import topofl as tf

    cfg = figures.load_config("dpfl_table3", args.scale)
    rec = figures.sweep(cfg, args)
    acc: dict[tuple[int, str], float] = {}
    for r in rec.runs:
        c = rec.configs[r]
        acc[int(c["refresh_every"]), budget(c)] = tf.plotting.client_accuracy_stats(rec, run=r)[0]
    periods = sorted({p for p, _ in acc})
    cols = [b for b in BUDGETS.values() if any((p, b) in acc for p in periods)]
    table = pd.DataFrame({
        "P": periods,
        **{f"B_c = {b}": [f"{acc[p, b]:.2f}" for p in periods] for b in cols},
        "row mean": [f"{sum(acc[p, b] for b in cols) / len(cols):.2f}" for p in periods],
        **{f"paper B_c = {b}": [f"{PAPER[p][i]:.2f}" if p in PAPER else "-" for p in periods]
           for i, b in enumerate(BUDGETS.values()) if b in cols},
    })
    means = {p: sum(acc[p, b] for b in cols) / len(cols) for p in periods}
    spread = max(means.values()) - min(means.values())
    robust = spread <= ROBUST
    decreasing = means[periods[0]] > means[periods[-1]]
    holds = True if robust and decreasing else (None if robust or decreasing else False)
    rows = ", ".join(f"{means[p]:.1f}% (P = {p})" for p in periods)
    measured = (f"average over the budgets {rows}: "
                f"a spread of {spread:.1f} points, P = {periods[-1]} "
                f"{'below' if decreasing else 'not below'} P = {periods[0]}")
    notes = list(cfg["_notes"]) + [
        "One seed (42), as the paper's Table 3; 'row mean' averages the budgets. The claim is "
        f"read as: the P rows' averages within {ROBUST:g} points of each other and P = "
        f"{periods[-1]} below P = {periods[0]}.",
        "GGC runs in rounds t with t mod P = 0; in between, clients average over their last C_k.",
    ]
    if args.scale != "full":
        notes.append("~18 digits per client and an MLP stand in for CIFAR-10 and the CNN; 18 "
                     "rounds instead of 98, so P = 20 runs GGC in round 0 only (after the "
                     "pre-processing) and P = 10 twice; single-seed differences of a point are "
                     "within the noise of a ~4-digit test split per client.")
    md = figures.write(
        args, None, title="DPFL Table 3: period P of refreshing the collaborators",
        setting=figures.setting(rec), numbers=table,
        claim=("on CIFAR-10 Dir(0.1), 100 clients, DPFL keeps good accuracy for P = 1, 5, 10, "
               "20 (82.08-84.33%), with a slight decrease as P grows (84.10% on average over "
               "the budgets at P = 1, 82.44% at P = 20)"),
        measured=measured, holds=holds, notes=notes, dataset=str(cfg["data"]),
    )
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
