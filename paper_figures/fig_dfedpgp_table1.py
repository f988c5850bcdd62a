"""DFedPGP Table 1: personalized test accuracy of every method on CIFAR-10 and CIFAR-100.

Every baseline of the paper's Table 1 that topofl has (Local, FedAvg, FedPer, FedRep,
FedBABU, Ditto, DFedAvgM, OSGP, Dis-PFL) and DFedPGP, plus DFedAvgM-P (the Table 4 cell), in
the setting of Section 5.1 (``configs/dfedpgp_table1.toml``): 100 clients, lr 0.1 decayed
0.99 per round, momentum 0.9, weight decay 5e-3, 5 local epochs, sampling ratio 0.1 for the
server methods and 10 neighbours per round for the decentralized ones. Accuracy: each client's
model on its own test split (split like its training data), averaged over clients; mean ± std
over seeds of the last round.

    python paper_figures/fig_dfedpgp_table1.py [--quick | --full]
"""

from __future__ import annotations

import sys

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


def main(argv: list[str] | None = None) -> int:
    import pandas as pd

    args = figures.parse_args(__doc__, "dfedpgp_table1", argv)
    cfg = figures.load_config("dfedpgp_table1", args.scale)
    recs = figures.grid_sweep(cfg, args)
    methods = list(dict.fromkeys(m for m, _ in recs))
    splits = list(dict.fromkeys(s for _, s in recs))
    acc = {cell: figures.over_seeds(rec, "test_acc_mean") for cell, rec in recs.items()}
    measured_t = pd.DataFrame(
        [{"algorithm": m, **{s: f"{100 * acc[(m, s)][0]:.2f} ± {100 * acc[(m, s)][1]:.2f}"
                             for s in splits}} for m in methods])
    paper_t = pd.DataFrame(
        [{"algorithm": m, **{s: (f"{PAPER[m][COLUMNS.index(s)]:.2f}" if m in PAPER else "-")
                             for s in splits}} for m in methods])
    best = {s: max(methods, key=lambda m, s=s: acc[(m, s)][0]) for s in splits}
    rank = {s: 1 + sorted(methods, key=lambda m, s=s: -acc[(m, s)][0]).index("DFedPGP")
            for s in splits}
    wins = [s for s in splits if best[s] == "DFedPGP"]
    holds = True if len(wins) == len(splits) else (False if not wins else None)
    measured = (f"DFedPGP best in {len(wins)}/{len(splits)} columns; "
                + "; ".join(f"{s}: DFedPGP {100 * acc[('DFedPGP', s)][0]:.1f} (rank {rank[s]} "
                            f"of {len(methods)}), best {best[s]} {100 * acc[(best[s], s)][0]:.1f}"
                            for s in splits))
    cells = figures.grid(cfg)
    notes = list(dict.fromkeys(n for cell in recs for n in cells[cell]["_notes"]))
    if args.scale != "full":
        notes.append(f"{cfg['rounds']} rounds instead of the paper's 500 and "
                     f"{len(cfg['sweep']['seed'])} seed(s) instead of 3, and only the columns "
                     f"{', '.join(splits)} (the CPU budget of the default scale; `--full` runs "
                     "all eight). The server methods sample 10% of the clients per round, so "
                     f"in {cfg['rounds']} rounds a client trains about "
                     f"{cfg['rounds'] // 10} times: they are far from converged.")
    easy = [s for s in splits if acc[("Local", s)][0] >= acc[("DFedPGP", s)][0]]
    if easy:
        notes.append("Local training alone (no communication) is at least as accurate as "
                     "DFedPGP on " + ", ".join(f"{s} ({100 * acc[('Local', s)][0]:.1f})"
                                              for s in easy)
                     + ": on the stand-in a client's few images of its few classes nearly "
                     "suffice (on CIFAR-10 the paper's Local is 63.20 / 85.16), so there is "
                     "little for collaboration to add and this ranking says little about the "
                     "paper's.")
    if wins != splits:
        notes.append("Where DFedPGP is not the best here: " + "; ".join(
            f"{s}: {best[s]} {100 * acc[(best[s], s)][0]:.1f} vs DFedPGP "
            f"{100 * acc[('DFedPGP', s)][0]:.1f}" for s in splits if s not in wins)
            + ". With one seed and a test split of ~3-4 images per client (355 test images "
            "over 100 clients on the digits), a "
            "point is within noise.")
    notes.append("DFedAvgM-P is not a row of the paper's Table 1 (it is Table 4's partial-"
                 "personalization cell); its paper column shows '-'.")
    path = figures.write(
        args, None, title="DFedPGP Table 1: personalized test accuracy, all methods",
        setting=figures._setting_of([r.configs[r.runs[0]] for r in recs.values()]),
        numbers={"measured (%, mean ± std over seeds)": measured_t, "paper (%)": paper_t},
        claim=("DFedPGP has the best personalized accuracy in 7 of the 8 columns of Table 1 "
               "and ties the 8th: CIFAR-10 Dir-0.3 85.61 (next FedRep 84.50), Pat-2 91.26 "
               "(FedBABU 91.28), CIFAR-100 Dir-0.3 57.66 (OSGP 54.98), Pat-10 72.19 (OSGP "
               "71.08)"),
        measured=measured, holds=holds, notes=notes, dataset=str(cfg["data"]))
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
