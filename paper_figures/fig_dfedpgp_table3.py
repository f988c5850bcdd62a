"""DFedPGP Table 3: personalized test accuracy under computation heterogeneity.

The 100 clients fall into 5 groups of 20 that train 1, 2, 3, 4 and 5 local epochs per round
(the shared part, for the methods that split the model) before they communicate, in the
setting of Section 5.1 otherwise (``configs/dfedpgp_table3.toml``): CIFAR-10 Dir-0.3, and
Pat-2 for the second row. Accuracy: each client's model on its own test split, averaged over
clients, mean ± std over seeds of the last round.

The check of a row: DFedPGP above the best other method (seed-paired, one accuracy point of
margin), read on converged curves. The paper's own leads (Dir 0.82 over OSGP, Pat 0.22 over
OSGP) are under the margin, so its claim reads "at least as good as the best other": a tie
within the margin passes.

    python paper_figures/fig_dfedpgp_table3.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import _dfedpgp  # beside this script

from topofl import figures

PAPER = {  # Table 3 (%); None: the cell is unreadable in our copy of the paper
    "Dir": {"FedAvg": 75.76, "FedPer": None, "FedRep": None, "FedBABU": 72.66,
            "Ditto": 75.63, "DFedAvgM": None, "Dis-PFL": 82.41, "OSGP": 82.81,
            "DFedPGP": 83.63},
    "Pat": {"FedAvg": 81.04, "FedPer": 91.09, "FedRep": 88.57, "FedBABU": 83.06,
            "Ditto": 82.26, "DFedAvgM": 91.52, "Dis-PFL": 91.40, "OSGP": 91.61,
            "DFedPGP": 91.83},
}
SPLIT_OF = {"Dir": "CIFAR-10 Dir-0.3", "Pat": "CIFAR-10 Pat-2"}  # Table 1's column of a row


def paper_lead(row: str) -> float:
    """DFedPGP's lead over the best other readable cell of the paper's row (points)."""
    others = [v for m, v in PAPER[row].items() if m != "DFedPGP" and v is not None]
    return float(PAPER[row]["DFedPGP"]) - max(others)


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    import pandas as pd

    cfg, found = _dfedpgp.grid_panels(args, "dfedpgp_table3")
    acc = _dfedpgp.accuracy(found)
    rows = list(found)
    methods = list(dict.fromkeys(m for m, _ in acc))
    margin = figures.margin(args.name, "accuracy")
    measured_t = pd.DataFrame([{"row": s, **{m: _dfedpgp.pct(acc[(m, s)]) for m in methods}}
                               for s in rows])
    paper_t = pd.DataFrame([{"row": s, **{m: ("?" if v is None else f"{v:.2f}")
                                          for m, v in PAPER[s].items()}} for s in PAPER])
    checks, gates = [], []
    for s in PAPER:
        if s not in found:
            checks.append(_dfedpgp.not_run(f"{s}: DFedPGP above the best other",
                                           headline=True))
            continue
        c, _ = _dfedpgp.best(found, acc, s, "DFedPGP", margin=margin,
                             tie=_dfedpgp.paper_tie(paper_lead(s), margin), headline=True)
        gates.append(_dfedpgp.gate(acc, s, paper=PAPER[s], result=args.name))
        checks.append(figures.gated(_dfedpgp.uncalibrated(c, SPLIT_OF[s], found[s]),
                                    gates[-1]))
    measured = "; ".join(f"{s}: " + ", ".join(f"{m} {100 * acc[(m, s)]:.1f}" for m in methods)
                         for s in rows)
    notes = _dfedpgp.short_run_note(cfg, args.scale)
    every = figures.grid(figures.load_config("dfedpgp_table3", "full"))
    if args.scale != "full" and len(acc) < len(every):
        notes.append(f"Tested at this scale: the row(s) {', '.join(rows)} with the methods "
                     f"{', '.join(methods)} (rounds before rows: run to where the compared "
                     "curves flatten); the rest is not run (inconclusive); `--full` runs all.")
    notes.append("The paper's own leads of DFedPGP (" + ", ".join(
        f"{s} {paper_lead(s):+.2f}" for s in PAPER) + " points over the best other readable "
        "cell) are under the margin: the checks read \"at least as good\" (a tie passes).")
    notes += _dfedpgp.still_rising(found, margin)
    return figures.Result(None, measured, checks, {"measured (%, mean ± std over seeds)":
                                                   measured_t, "paper (%)": paper_t},
                          panels=found, notes=notes, setting=figures.merged_setting(found),
                          paper_rounds=_dfedpgp.PAPER_ROUNDS, gates=gates)


if __name__ == "__main__":
    raise SystemExit(main())
