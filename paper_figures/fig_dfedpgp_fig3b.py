"""DFedPGP Fig. 3b: effect of the number of clients on DFedPGP.

DFedPGP on CIFAR-10 Dir-0.3 in the setting of Section 5.1 (``configs/dfedpgp_fig3b.toml``)
with the data split over n = 5, 10, 20, 50, 100, 200 clients (the whole data set every time:
more clients, less data each), each pushing to 10 random out-neighbours per round (all the
others when n <= 10). One curve per n: the mean personalized test accuracy against rounds, the
mean over the seeds.

The headline is the paper's sentence, "{5, 10} achieve better test accuracy and converge
faster than {50, 100, 200}", read on the two groups' means: the mean final accuracy of
n <= 10 above that of n >= 50 (on converged curves) and their mean accuracy over the rounds
run above too (a convergence speed, read at this horizon), one accuracy point of margin each.
The stricter reading, every final accuracy of n <= 10 above every one of n >= 50 (per seed:
the lowest of the small minus the highest of the large), is secondary.

    python paper_figures/fig_dfedpgp_fig3b.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import _dfedpgp  # beside this script

from topofl import figures

TITLE = "DFedPGP, CIFAR-10 Dir-0.3: number of clients"


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    cfg = figures.load_config("dfedpgp_fig3b", args.scale)
    cells = figures.grid(cfg)
    found = figures.panels(args, {TITLE: {f"n = {n}": c for (n,), c in cells.items()}})
    fig, numbers = figures.curves(found, "test_acc", band=False, epochs=False,
                                  ylabel="personalized test accuracy", figsize=(5.6, 3.8))
    runs = found[TITLE].runs
    margin = figures.margin(args.name, "accuracy")
    rounds = int(cfg["rounds"])
    small = [c for c in runs if int(c.split("= ")[1]) <= 10]
    large = [c for c in runs if int(c.split("= ")[1]) >= 50]

    def mean(*v: float) -> float:
        return sum(v) / len(v)

    checks = []
    if small and large:
        final = {c: figures.final(r) for c, r in runs.items()}
        area = {c: figures.mean_over_rounds(r) for c, r in runs.items()}
        converged = figures.convergence({c: runs[c] for c in small + large}, "test_acc",
                                        tolerance=margin)
        speed = (f"the mean accuracy over the first {rounds} rounds (a convergence speed, "
                 "read at this horizon)")
        checks = [figures.above("the mean final accuracy of n <= 10 above that of n >= 50",
                                figures.seedwise(mean, *(final[c] for c in small))
                                - figures.seedwise(mean, *(final[c] for c in large)),
                                margin=margin, converged=converged, headline=True),
                  figures.above("the mean accuracy over the rounds of n <= 10 above that of "
                                "n >= 50", figures.seedwise(mean, *(area[c] for c in small))
                                - figures.seedwise(mean, *(area[c] for c in large)),
                                margin=margin, horizon=speed, headline=True),
                  figures.above("every final accuracy of n <= 10 above every one of n >= 50",
                                figures.seedwise(min, *(final[c] for c in small))
                                - figures.seedwise(max, *(final[c] for c in large)),
                                margin=margin, converged=converged)]
    else:
        checks = [figures.Check("the mean final accuracy of n <= 10 above that of n >= 50",
                                "inconclusive", "not both groups ran at this scale", "-",
                                "not run at this scale", True)]
    measured = "; ".join(
        what + " " + ", ".join(f"{c}: {fn(r):.3f}" for c, r in runs.items())
        for what, fn in (("final accuracy", figures.final),
                         ("mean over rounds", figures.mean_over_rounds)))
    notes = _dfedpgp.short_run_note(cfg, args.scale, server=False)
    m = figures.samples_per_client(cells[list(cells)[-1]])
    notes.append(f"With {list(cells)[-1][0]} clients a client holds about {m:.0f} training "
                 f"samples of {cfg['data']}.")
    return figures.Result(fig, measured, checks, numbers[TITLE], panels=found, notes=notes,
                          paper_rounds=_dfedpgp.PAPER_ROUNDS)


if __name__ == "__main__":
    raise SystemExit(main())
