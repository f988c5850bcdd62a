"""DFedPGP Fig. 3b: effect of the number of clients on DFedPGP.

DFedPGP on CIFAR-10 Dir-0.3 in the setting of Section 5.1 (``configs/dfedpgp_fig3b.toml``)
with the data split over n = 5, 10, 20, 50, 100, 200 clients (the whole data set every time:
more clients, less data each), each pushing to 10 random out-neighbours per round (all the
others when n <= 10). One curve per n: the mean personalized test accuracy against rounds.

    python paper_figures/fig_dfedpgp_fig3b.py [--quick | --full]
"""

from __future__ import annotations

import sys

from topofl import figures


def main(argv: list[str] | None = None) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    import topofl as tf

    args = figures.parse_args(__doc__, "dfedpgp_fig3b", argv)
    cfg = figures.load_config("dfedpgp_fig3b", args.scale)
    recs = figures.grid_sweep(cfg, args)
    runs = {f"n = {n}": rec.for_run(rec.runs[0]) for (n,), rec in recs.items()}
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    tf.plotting.convergence(runs, "test_acc", ax=ax, band=False, legend="best",
                            ylabel="personalized test accuracy",
                            title="DFedPGP, CIFAR-10 Dir-0.3: number of clients")
    fig.tight_layout()
    table = figures.curve_table(runs, "test_acc")
    t = table.set_index("curve")
    small = [c for c in runs if int(c.split("= ")[1]) <= 10]
    large = [c for c in runs if int(c.split("= ")[1]) >= 50]
    if small and large:
        lo, hi = t.loc[small, "final test_acc"], t.loc[large, "final test_acc"]
        holds: bool | None = (True if lo.min() > hi.max() else
                              None if float(np.mean(lo)) > float(np.mean(hi)) else False)
    else:
        holds = None
    measured = ("final accuracy " + ", ".join(f"{c}: {t.loc[c, 'final test_acc']:.3f}"
                                              for c in runs)
                + "; mean over rounds " + ", ".join(f"{c}: {t.loc[c, 'mean over rounds']:.3f}"
                                                   for c in runs))
    cells = figures.grid(cfg)
    notes = list(dict.fromkeys(n for cell in recs for n in cells[cell]["_notes"]))
    if args.scale != "full":
        notes.append(f"{cfg['rounds']} rounds instead of 500 and one seed. On the digits "
                     "stand-in 200 clients hold about 7 training images each.")
    png = figures.write(
        args, fig, title="DFedPGP Fig. 3b: number of clients",
        setting=figures._setting_of([r.configs[r.runs[0]] for r in recs.values()]),
        numbers=table,
        claim=("with the same hyper-parameters, fewer clients {5, 10} (more local data each) "
               "reach a higher personalized accuracy and converge faster than {50, 100, 200} "
               "(read here as: every final accuracy of n <= 10 above every one of n >= 50; "
               "partly: their means ordered so)"),
        measured=measured, holds=holds, notes=notes, dataset=str(cfg["data"]))
    print(png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
