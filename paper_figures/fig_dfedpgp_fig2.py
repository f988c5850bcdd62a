"""DFedPGP Fig. 2: personalized test accuracy vs communication rounds of the typical methods.

One panel per data split of Table 1 that ran (CIFAR-10 on the first line, CIFAR-100 on the
second, as in the paper), one curve per method: FedAvg, FedRep, Ditto (server, 10% of the
clients per round), DFedAvgM, OSGP, Dis-PFL and DFedPGP (10 neighbours per round). The runs
are Table 1's (``configs/dfedpgp_table1.toml``, same cache); a curve is the mean over the seeds
(shaded: +- one std).

    python paper_figures/fig_dfedpgp_fig2.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import _dfedpgp  # beside this script

from topofl import figures

TYPICAL = ["FedAvg", "FedRep", "Ditto", "DFedAvgM", "OSGP", "Dis-PFL", "DFedPGP"]


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    import matplotlib.pyplot as plt

    import topofl as tf

    keep = figures.load_config(_dfedpgp.TABLE1, args.scale).get("grid_keep", {})
    methods = [m for m in TYPICAL if m in keep.get("method", TYPICAL)]
    cfg, found = _dfedpgp.grid_panels(args, keep={"method": methods}, share=_dfedpgp.TABLE1)
    rows = [r for r in ([s for s in found if s.startswith(f"CIFAR-{c} ")] for c in (10, 100))
            if r]
    ncol = max(len(r) for r in rows)
    fig, axes = plt.subplots(len(rows), ncol, figsize=(2.5 * ncol, 2.1 * len(rows)),
                             squeeze=False)
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
    # the paper reads Fig. 2 as: DFedPGP converges fastest and ends highest (Section 5.2)
    final, area = _dfedpgp.accuracy(found), _dfedpgp.accuracy(found, "area")
    checks, parts = [], []
    for s in found:
        (c_area, r_area), (c_final, r_final) = (_dfedpgp.best(area, s, "DFedPGP",
                                                              "mean accuracy over the rounds"),
                                                _dfedpgp.best(final, s, "DFedPGP",
                                                              "final accuracy"))
        checks += [c_area, c_final]
        parts.append(f"{s}: DFedPGP final {100 * final[('DFedPGP', s)]:.1f} (best other "
                     f"{r_final} {100 * final[(r_final, s)]:.1f}), mean over rounds "
                     f"{100 * area[('DFedPGP', s)]:.1f} (best other {r_area} "
                     f"{100 * area[(r_area, s)]:.1f})")
    notes = _dfedpgp.short_run_note(cfg, args.scale) + [
        "'Typical methods' is our choice (the text does not list Fig. 2's curves): "
        + ", ".join(methods) + "."]
    return figures.Result(fig, "; ".join(parts), checks, numbers, panels=found, notes=notes,
                          setting=figures.merged_setting(found))


if __name__ == "__main__":
    raise SystemExit(main())
