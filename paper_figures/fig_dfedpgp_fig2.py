"""DFedPGP Fig. 2: personalized test accuracy vs communication rounds of the typical methods.

One panel per data split of Table 1 that ran (CIFAR-10 on the first line, CIFAR-100 on the
second, as in the paper), one curve per method: FedAvg, FedRep, Ditto (server, 10% of the
clients per round), DFedAvgM, OSGP, Dis-PFL and DFedPGP (10 neighbours per round). The runs
are Table 1's (``configs/dfedpgp_table1.toml``, same cache); a curve is the mean over the seeds.

The paper reads Fig. 2 as "DFedPGP achieves the fastest convergence speed" ("almost twice as
fast" on Dir-0.3) and ends highest (Section 5.2). The headline is the speed: in every column
run, DFedPGP's mean accuracy over the rounds run (the area under its curve, a speed read at this
horizon) above that of the best other curve on the two columns the paper names (CIFAR-10 and
CIFAR-100 Dir-0.3); the other columns' speed and every final accuracy (read on converged
curves, Table 1's claim) are secondary.

    python paper_figures/fig_dfedpgp_fig2.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import _dfedpgp  # beside this script

from topofl import figures

TYPICAL = ["FedAvg", "FedRep", "Ditto", "DFedAvgM", "OSGP", "Dis-PFL", "DFedPGP"]
NAMED = ("CIFAR-10 Dir-0.3", "CIFAR-100 Dir-0.3")  # "almost twice as fast ... in Dirichlet-0.3"


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    import matplotlib.pyplot as plt

    import topofl as tf

    methods = _dfedpgp.kept("method", TYPICAL, args.scale)
    cfg, found = _dfedpgp.grid_panels(args, keep={"method": methods}, share=_dfedpgp.TABLE1)
    rows = [r for r in ([s for s in found if s.startswith(f"CIFAR-{c} ")] for c in (10, 100))
            if r]
    ncol = max(len(r) for r in rows)
    size = (max(2.5 * ncol, 4.8), max(2.1 * len(rows), 3.4))
    fig, axes = plt.subplots(len(rows), ncol, figsize=size, squeeze=False)
    numbers = {}
    for i, row in enumerate(rows):
        for j, ax in enumerate(axes[i]):
            if j >= len(row):
                ax.set_visible(False)
                continue
            p = found[row[j]]
            tf.plotting.convergence(p.runs, "test_acc", ax=ax, band=False, legend=None,
                                    title=row[j], ylabel="test accuracy")
            numbers[row[j]] = p.table("test_acc")
    axes[0][0].legend(fontsize=7, loc="lower right")
    if cfg["_notes"]:  # a stand-in ran: say so on the picture too
        used = dict.fromkeys(found[s].data for s in found)
        fig.suptitle("offline stand-ins: " + "; ".join(used) + f"; {cfg['model']}",
                     fontsize=7)
    fig.tight_layout()
    margin = figures.margin(args.name, "accuracy")
    rounds = _dfedpgp.rounds_run(found)
    speed = (f"the mean accuracy over the first {rounds} rounds (a convergence speed, read at "
             "this horizon)")
    final, area = _dfedpgp.accuracy(found), _dfedpgp.accuracy(found, "area")
    checks, parts, gates = [], [], []
    for s in _dfedpgp.COLUMNS:
        if s not in found:
            checks.append(_dfedpgp.not_run(f"{s}: DFedPGP converges fastest",
                                           headline=s in NAMED))
            continue
        c_area, r_area = _dfedpgp.best(found, area, s, "DFedPGP", "mean accuracy over the "
                                       "rounds", among=methods, margin=margin, horizon=speed,
                                       headline=s in NAMED)
        c_final, r_final = _dfedpgp.best(found, final, s, "DFedPGP", "final accuracy",
                                         among=methods, margin=margin)
        # Table 1's column, Fig. 2's rows
        gates.append(_dfedpgp.gate(final, s, among=methods, result=args.name))
        checks += [figures.gated(_dfedpgp.uncalibrated(c_area, s, found[s]), gates[-1]),
                   figures.gated(_dfedpgp.uncalibrated(c_final, s, found[s]), gates[-1])]
        parts.append(f"{s}: DFedPGP mean over rounds {100 * area[('DFedPGP', s)]:.1f} (best "
                     f"other {r_area} {100 * area[(r_area, s)]:.1f}), final "
                     f"{100 * final[('DFedPGP', s)]:.1f} (best other {r_final} "
                     f"{100 * final[(r_final, s)]:.1f})")
    notes = _dfedpgp.short_run_note(cfg, args.scale) + [
        "'Typical methods' is our choice (the text does not list Fig. 2's curves): "
        + ", ".join(methods) + "."]
    if len(found) < len(_dfedpgp.COLUMNS):
        notes.append(f"Tested at this scale: the column(s) {', '.join(found)}; the others are "
                     "not run (inconclusive); `--full` runs all eight.")
    notes += _dfedpgp.still_rising(found, margin)
    return figures.Result(fig, "; ".join(parts), checks, numbers, panels=found, notes=notes,
                          setting=figures.merged_setting(found),
                          paper_rounds=_dfedpgp.PAPER_ROUNDS, gates=gates)


if __name__ == "__main__":
    raise SystemExit(main())
