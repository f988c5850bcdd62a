"""DFedPGP Table 1: personalized test accuracy of every method on CIFAR-10 and CIFAR-100.

Every baseline of the paper's Table 1 that topofl has (Local, FedAvg, FedPer, FedRep,
FedBABU, Ditto, DFedAvgM, OSGP, Dis-PFL) and DFedPGP, plus DFedAvgM-P (the Table 4 cell), in
the setting of Section 5.1 (``configs/dfedpgp_table1.toml``): 100 clients, lr 0.1 decayed
0.99 per round, momentum 0.9, weight decay 5e-3, 5 local epochs, sampling ratio 0.1 for the
server methods and 10 neighbours per round for the decentralized ones. Accuracy: each client's
model on its own test split (split like its training data), averaged over clients; mean ± std
over seeds of the last round.

    python paper_figures/fig_dfedpgp_table1.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import _dfedpgp  # beside this script

from topofl import figures

COLUMNS = ["CIFAR-10 Dir-0.1", "CIFAR-10 Dir-0.3", "CIFAR-10 Pat-2", "CIFAR-10 Pat-5",
           "CIFAR-100 Dir-0.1", "CIFAR-100 Dir-0.3", "CIFAR-100 Pat-5", "CIFAR-100 Pat-10"]
PAPER = {  # Table 1, in the order of COLUMNS (%)
    "Local": (78.96, 63.20, 85.16, 68.56, 39.38, 22.59, 71.34, 53.15),
    "FedAvg": (84.17, 79.66, 85.04, 81.18, 57.43, 55.06, 69.05, 66.37),
    "FedPer": (88.57, 84.06, 90.94, 86.97, 54.23, 34.07, 78.48, 70.38),
    "FedRep": (88.78, 84.50, 91.09, 86.22, 44.02, 26.88, 78.77, 67.65),
    "FedBABU": (87.79, 83.26, 91.28, 83.90, 60.23, 52.37, 77.50, 69.81),
    "Ditto": (80.22, 73.51, 84.96, 75.59, 48.85, 48.65, 69.48, 60.77),
    "DFedAvgM": (86.94, 82.49, 90.23, 85.26, 58.80, 54.89, 75.89, 70.55),
    "OSGP": (87.39, 83.14, 90.72, 84.69, 59.76, 54.98, 76.70, 71.08),
    "Dis-PFL": (87.77, 82.71, 88.19, 84.18, 56.06, 46.65, 71.79, 65.35),
    "DFedPGP": (88.85, 85.61, 91.26, 87.12, 66.26, 57.66, 78.78, 72.19),
}


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    import pandas as pd

    cfg, found = _dfedpgp.grid_panels(args)
    acc = _dfedpgp.accuracy(found)
    splits = list(found)
    methods = list(dict.fromkeys(m for m, _ in acc))
    measured_t = pd.DataFrame([{"algorithm": m, **{s: _dfedpgp.pct(acc[(m, s)]) for s in splits}}
                               for m in methods])
    paper_t = pd.DataFrame(
        [{"algorithm": m, **{s: (f"{PAPER[m][COLUMNS.index(s)]:.2f}" if m in PAPER else "-")
                             for s in splits}} for m in methods])
    checks, rivals = zip(*(_dfedpgp.best(acc, s, "DFedPGP") for s in splits))
    rank = {s: 1 + sorted(methods, key=lambda m, s=s: -acc[(m, s)].mean).index("DFedPGP")
            for s in splits}
    measured = "; ".join(f"{s}: DFedPGP {100 * acc[('DFedPGP', s)]:.1f} (rank {rank[s]} of "
                         f"{len(methods)} by mean), best other {r} {100 * acc[(r, s)]:.1f}"
                         for s, r in zip(splits, rivals))
    notes = _dfedpgp.short_run_note(cfg, args.scale)
    if args.scale != "full" and len(splits) < len(COLUMNS):
        notes.append(f"Only the columns {', '.join(splits)} ran at this scale; `--full` runs "
                     "all eight.")
    weak = [s for s in ("CIFAR-10 Dir-0.1", "CIFAR-100 Pat-5")
            if s in splits and found[s].stand_in]
    if "CIFAR-10 Dir-0.1" in weak:
        notes.append("CIFAR-10 Dir-0.1 ran the MLP on the default MNIST-1D signals, not its "
                     "calibrated stand-in (the 1-D CNN on noisier signals, ~20x the CPU per "
                     "round): on it Local is within ~1 point of the label-masked pooled "
                     "ceiling (75.6 vs 76.8 %, analysis/standins.md), so the stand-in does "
                     "not meet the 5-point gap criterion and this column has little room to "
                     "discriminate.")
    if "CIFAR-100 Pat-5" in weak:
        notes.append("CIFAR-100 Pat-5's stand-in (the 100-class mixture + MLP) does not meet "
                     "the 5-point gap criterion: Local is 1.3 points below the label-masked "
                     "pooled ceiling (88.6 vs 90.0 %, 3 seeds, analysis/standins.md), so this "
                     "column has little room to discriminate.")
    if args.scale == "default":
        notes.append("Budget: 264 runs (11 methods x 8 columns x 3 seeds) do not fit the "
                     "10-minute budget of a default result (at 10 rounds they took 1058 s of "
                     "CPU, measured with /usr/bin/time: 44 minutes of wall time on the shared "
                     "2-core machine, load 5-9); the cut is "
                     f"in rounds ({cfg['rounds']}, where the curves have not flattened: "
                     "DFedPGP on the CIFAR-10 Dir-0.3 stand-in flattens from round ~36, "
                     "analysis/standins.md), not in seeds or columns. The ranking is that of "
                     "the start of training.")
    easy = [s for s in splits if acc[("Local", s)].mean >= acc[("DFedPGP", s)].mean]
    if easy:
        notes.append("Local training alone (no communication) is at least as accurate as "
                     "DFedPGP on " + ", ".join(f"{s} ({100 * acc[('Local', s)]:.1f})"
                                              for s in easy)
                     + " (the paper's Local: "
                     + ", ".join(f"{s} {PAPER['Local'][COLUMNS.index(s)]:.2f}" for s in easy)
                     + f"). After {cfg['rounds']} rounds the collaborative methods have not "
                     "caught up with a client training alone on its own data (where the stand-in "
                     "leaves Local close to its pooled ceiling -- CIFAR-10 Dir-0.1, CIFAR-100 "
                     "Pat-5 -- there is also little for collaboration to add), so this ranking "
                     "says little about the paper's.")
    return figures.Result(None, measured, list(checks),
                          {"measured (%, mean ± std over seeds)": measured_t,
                           "paper (%)": paper_t}, panels=found, notes=notes,
                          setting=figures.merged_setting(found))


if __name__ == "__main__":
    raise SystemExit(main())
