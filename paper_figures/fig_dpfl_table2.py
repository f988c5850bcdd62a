"""DPFL Table 2: effect of the pre-processing local epochs tau_init on DPFL's accuracy.

CIFAR-10 (or its offline stand-in), 100 clients, Patho(3), tau_init = 1, 5, 10 against the
budgets B_c = inf, 0.2N, 0.1N, 0.05N, three seeds: mean +- std over seeds of the clients'
average test accuracy of their best-validation models.

    python paper_figures/fig_dpfl_table2.py [--quick | --full]
"""

from __future__ import annotations

import math
import sys

from topofl import figures

BUDGETS = {1.0: "inf", 0.2: "0.2N", 0.1: "0.1N", 0.05: "0.05N"}
# the paper's Table 2 (B_c = inf, 20, 10, 5 with N = 100), mean over three seeds (%)
PAPER = {1: (81.86, 82.33, 82.53, 82.30), 5: (83.03, 82.53, 82.58, 80.90),
         10: (83.04, 82.83, 82.52, 82.17)}
COMPARABLE = 2.0  # "comparable": the tau_init rows' averages within 2 points


def budget(config: dict) -> str:
    """The column of a run (1.0 = N, every other client, is B_c = inf)."""
    b = config["budget"]
    return BUDGETS[1.0 if b is None or b == math.inf else float(b)]


def main(argv: list[str] | None = None) -> int:
    args = figures.parse_args(__doc__, "dpfl_table2", argv)
    import pandas as pd

    import topofl as tf

    cfg = figures.load_config("dpfl_table2", args.scale)
    rec = figures.sweep(cfg, args)
    groups: dict[tuple[int, str], list[str]] = {}
    for r in rec.runs:
        c = rec.configs[r]
        groups.setdefault((int(c["tau_init"]), budget(c)), []).append(r)
    taus = sorted({t for t, _ in groups})
    cols = [b for b in BUDGETS.values() if any((t, b) in groups for t in taus)]
    cell = {k: tf.plotting.seed_summary([tf.plotting.client_accuracy_stats(rec, run=r)
                                         for r in runs]) for k, runs in groups.items()}
    table = pd.DataFrame({
        "tau_init": taus,
        **{f"B_c = {b}": [f"{cell[t, b]['acc']:.2f} ± {cell[t, b]['acc_std']:.2f}" for t in taus]
           for b in cols},
        "row mean": [f"{sum(cell[t, b]['acc'] for b in cols) / len(cols):.2f}" for t in taus],
        **{f"paper B_c = {b}": [f"{PAPER[t][i]:.2f}" if t in PAPER else "-" for t in taus]
           for i, b in enumerate(BUDGETS.values()) if b in cols},
    })
    means = {t: sum(cell[t, b]["acc"] for b in cols) / len(cols) for t in taus}
    spread = max(means.values()) - min(means.values())
    comparable = spread <= COMPARABLE
    best_is_10 = max(means, key=lambda t: means[t]) == max(taus)
    holds = True if comparable and best_is_10 else (None if comparable or best_is_10 else False)
    seeds = next(iter(cell.values()))["runs"]
    rows = ", ".join(f"{means[t]:.1f}% (tau_init = {t})" for t in taus)
    measured = (f"average over the budgets {rows}: "
                f"a spread of {spread:.1f} points; best tau_init = "
                f"{max(means, key=lambda t: means[t])}")
    notes = list(cfg["_notes"]) + [
        f"Mean ± std over {seeds} seeds; 'row mean' averages the budgets' means. The claim is "
        f"read as: the tau_init rows' averages within {COMPARABLE:g} points of each other "
        "(comparable) and tau_init = 10 the best on average.",
        "The runs of tau_init = 10 have the setting of Table 1's Patho(3) DPFL rows.",
    ]
    if seeds == 1:
        notes.append("One seed at this scale (the paper: three): row differences of a point or "
                     "two are within the seed-to-seed spread of the same runs in Table 1, so "
                     "'holds' here says only that no tau_init stands out.")
    if args.scale != "full":
        notes.append("~18 digits per client and an MLP stand in for CIFAR-10 and the CNN; 18 "
                      "rounds instead of 98. With ~14 training digits a client's 10 "
                      "pre-processing epochs are only 10 SGD steps (batch 16), and all rows sit "
                      "far below the paper's level and below Local training (see Table 1: "
                      "DPFL's models are under-trained on the stand-in).")
    md = figures.write(
        args, None, title="DPFL Table 2: effect of the pre-processing epochs tau_init",
        setting=figures.setting(rec), numbers=table,
        claim=("on CIFAR-10 Patho(3), 100 clients, the accuracies across tau_init = 1, 5, 10 "
               "are comparable (81.86-83.04%, one cell 80.90%); on average slightly better with "
               "tau_init = 10 (82.64% over the four budgets vs 82.26% for 1 and 5), yet "
               "tau_init = 1 yields good results"),
        measured=measured, holds=holds, notes=notes, dataset=str(cfg["data"]),
    )
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
