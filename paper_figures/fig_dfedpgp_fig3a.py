"""DFedPGP Fig. 3a: effect of the number of neighbouring clients on DFedPGP.

DFedPGP on CIFAR-10 Dir-0.3 in the setting of Section 5.1 (``configs/dfedpgp_fig3a.toml``),
every client pushing its shared part to k = 2, 5, 10, 20, 40 random out-neighbours per round
(a time-varying directed graph). One curve per k: the mean personalized test accuracy
(each client's model on its own test split) against communication rounds, the mean over the
seeds.

The headline is "k = 40 gives the highest personalized accuracy": its final accuracy above that
of the best other k (seed-paired, one accuracy point of margin), read on converged curves. The
paper's "with more neighbours a quicker convergence" is secondary: k = 40's mean accuracy over
the rounds run (a speed, read at this horizon) above the best other k's.

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
    title, panel = next(iter(found.items()))
    ks = list(panel.runs)
    margin = figures.margin(args.name, "accuracy")
    cfg = next(iter(panel.configs.values()))
    rounds = int(cfg["rounds"])
    stats = {"final accuracy": {(k, title): figures.final(panel.runs[k]) for k in ks},
             "mean accuracy over the rounds": {(k, title): figures.mean_over_rounds(
                 panel.runs[k]) for k in ks}}
    speed = (f"the mean accuracy over the first {rounds} rounds (a convergence speed, read at "
             "this horizon)")
    checks = [_dfedpgp.best(found, stats["final accuracy"], title, ks[-1], "final accuracy",
                            margin=margin, headline=True, where="")[0],
              _dfedpgp.best(found, stats["mean accuracy over the rounds"], title, ks[-1],
                            "mean accuracy over the rounds", margin=margin, horizon=speed,
                            where="")[0]]
    measured = "; ".join(what + " " + ", ".join(f"{k}: {acc[(k, title)]:.3f}" for k in ks)
                         for what, acc in stats.items())
    return figures.Result(fig, measured, checks, next(iter(numbers.values())), panels=found,
                          notes=_dfedpgp.short_run_note(cfg, args.scale, server=False),
                          paper_rounds=_dfedpgp.PAPER_ROUNDS)


if __name__ == "__main__":
    raise SystemExit(main())
