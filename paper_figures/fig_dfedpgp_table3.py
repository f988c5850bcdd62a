"""DFedPGP Table 3: personalized test accuracy under computation heterogeneity.

The 100 clients fall into 5 groups of 20 that train 1, 2, 3, 4 and 5 local epochs per round
(the shared part, for the methods that split the model) before they communicate, in the
setting of Section 5.1 otherwise (``configs/dfedpgp_table3.toml``): CIFAR-10 Dir-0.3, and
Pat-2 for the second row. Accuracy: each client's model on its own test split, averaged over
clients, mean ± std over seeds of the last round.

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


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    import pandas as pd

    cfg, found = _dfedpgp.grid_panels(args, "dfedpgp_table3")
    acc = _dfedpgp.accuracy(found)
    rows = list(found)
    methods = list(dict.fromkeys(m for m, _ in acc))
    measured_t = pd.DataFrame([{"row": s, **{m: _dfedpgp.pct(acc[(m, s)]) for m in methods}}
                               for s in rows])
    paper_t = pd.DataFrame([{"row": s, **{m: ("?" if PAPER[s][m] is None
                                              else f"{PAPER[s][m]:.2f}") for m in methods}}
                            for s in PAPER])
    checks = [_dfedpgp.best(acc, s, "DFedPGP")[0] for s in rows]
    measured = "; ".join(f"{s}: " + ", ".join(f"{m} {100 * acc[(m, s)]:.1f}" for m in methods)
                         for s in rows)
    notes = _dfedpgp.short_run_note(cfg, args.scale)
    every = figures.grid(figures.load_config("dfedpgp_table3", "full"))
    if args.scale != "full" and len(acc) < len(every):
        notes.append(f"Row(s) {', '.join(rows)} and the methods {', '.join(methods)} only at "
                     "this scale (the CPU budget of the default scale; `--full` runs all).")
    return figures.Result(None, measured, checks, {"measured (%, mean ± std over seeds)":
                                                   measured_t, "paper (%)": paper_t},
                          panels=found, notes=notes, setting=figures.merged_setting(found))


if __name__ == "__main__":
    raise SystemExit(main())
