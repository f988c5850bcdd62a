"""DFedPGP Fig. 3a: effect of the number of neighbouring clients on DFedPGP.

DFedPGP on CIFAR-10 Dir-0.3 in the setting of Section 5.1 (``configs/dfedpgp_fig3a.toml``),
every client pushing its shared part to k = 2, 5, 10, 20, 40 random out-neighbours per round
(a time-varying directed graph). One curve per k: the mean personalized test accuracy
(each client's model on its own test split) against communication rounds, the mean over the
seeds (shaded: +- one std).

    python paper_figures/fig_dfedpgp_fig3a.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import _dfedpgp  # beside this script

from topofl import figures


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    found = figures.panels(args, {"DFedPGP, CIFAR-10 Dir-0.3: number of neighbours":
                                  "dfedpgp_fig3a"},
                           lambda c: f"k = {c['topology'].split('k=')[1]}")
    fig, numbers = figures.curves(found, "test_acc", band=False, epochs=False,
                                  ylabel="personalized test accuracy", figsize=(5.6, 3.8))
    panel = next(iter(found.values()))
    ks = list(panel.runs)
    stats = {"final accuracy": {(k, ""): figures.final(panel.runs[k]) for k in ks},
             "mean accuracy over the rounds": {(k, ""): figures.mean_over_rounds(panel.runs[k])
                                               for k in ks}}
    checks = [_dfedpgp.best(acc, "", ks[-1], what)[0] for what, acc in stats.items()]
    measured = "; ".join(what + " " + ", ".join(f"{k}: {acc[(k, '')]:.3f}" for k in ks)
                         for what, acc in stats.items())
    cfg = next(iter(panel.configs.values()))
    return figures.Result(fig, measured, checks, next(iter(numbers.values())), panels=found,
                          notes=_dfedpgp.short_run_note(cfg, args.scale, server=False))


if __name__ == "__main__":
    raise SystemExit(main())
