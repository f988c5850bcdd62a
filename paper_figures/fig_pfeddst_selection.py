"""PFedDST's peer selection over the weights of its score: where, if anywhere, does it beat random?

Eq. (9) scores a peer ``j`` of client ``i`` by ``S = s_p (alpha s_l - s_d + c)``: the loss of
``i``'s model on ``j``'s data (``s_l``), the header distance (``s_d``) and the recency of the
last selection (``s_p``). The paper gives no weights. ``configs/pfeddst_selection.toml`` runs
random selection and seven weightings of the three terms (each alone, each pair, all three at
the library's defaults), 10 peers a round, in the CIFAR-10 setting of Section III-A (Fig. 3),
everything else equal, three seeds. Each weighting is compared with random selection seed by
seed (the same split, initialisation and batches): its final personalized test accuracy and its
mean accuracy over the evaluated rounds (convergence). Also reported: the share of selected
peers holding a class of the client (rounds 2+; round 1 scores the identical initial models).

The headline is eq. (9) with every term ("loss + header + recency", the library's weights: the
paper gives none): its final accuracy above random selection's (on the two curves having
flattened) and its mean accuracy over the rounds above random's (a speed over the run's rounds),
both by the accuracy margin; the six other weightings are secondary checks.

    python paper_figures/fig_pfeddst_selection.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

from typing import Any

import _pfeddst  # beside this script

from topofl import figures

TITLE = "PFedDST: peer selection by score weighting vs random"
RANDOM = "random"
HEADLINE = "loss + header + recency"  # eq. (9) with every term, at the library's weights


def later(metric: str) -> Any:
    """The mean over rounds 2+ of a recorded metric of one run."""
    import numpy as np

    return lambda one: float(np.nanmean(one.series(metric)[1][1:]))


def differences(fig: Any, runs: dict[str, Any]) -> None:
    """Beside the curves (mean over the seeds, the seeds' band): each weighting's accuracy
    minus random selection's, seed by seed, mean ± std over the seeds."""
    import numpy as np

    left = fig.axes[0]
    left.set_title("test accuracy (mean over seeds, ± std band)", fontsize=9)
    left.legend(loc="lower right", fontsize=7)
    ax = fig.add_subplot(1, 2, 2)
    left.set_position([0.06, 0.13, 0.36, 0.78])
    ax.set_position([0.50, 0.13, 0.30, 0.78])

    def series(rec: Any) -> Any:
        return np.array([rec.for_run(r).series("test_acc_mean")[1] for r in rec.runs])

    base = series(runs[RANDOM])
    x = runs[RANDOM].for_run(runs[RANDOM].runs[0]).series("test_acc_mean")[0] + 1
    colors = {ln.get_label(): ln.get_color() for ln in left.lines}
    for k, rec in runs.items():
        if k == RANDOM:
            continue
        d = 100 * (series(rec) - base)
        m, sd = d.mean(axis=0), d.std(axis=0, ddof=1) if len(d) > 1 else np.zeros(d.shape[1])
        ax.plot(x, m, label=k, color=colors.get(k))
        ax.fill_between(x, m - sd, m + sd, alpha=0.12, color=colors.get(k))
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xlabel("rounds completed")
    ax.set_ylabel("minus random selection (points)")
    ax.set_title("paired difference with random selection (same seed)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=8)


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    import pandas as pd

    cfg = figures.load_config("pfeddst_selection", args.scale)
    cells = figures.grid(cfg)
    found = figures.panels(args, {TITLE: {label: c for (label,), c in cells.items()}})
    fig, curves = figures.curves(found, "test_acc", band=False, epochs=False, legend=None,
                                 figsize=(10.0, 3.8), titles=False,
                                 ylabel="test accuracy (each client on its own test split)")
    runs = found[TITLE].runs
    differences(fig, runs)
    margin = figures.margin(args.name, "accuracy")
    final = {k: figures.final(r) for k, r in runs.items()}
    over = {k: figures.mean_over_rounds(r) for k, r in runs.items()}
    shared = {k: figures.per_seed(r, later("pfeddst_shared_class")) for k, r in runs.items()}
    scored = [k for k in runs if k != RANDOM]
    rounds = int(next(iter(curves.values()))["rounds"].max()) if "rounds" in next(
        iter(curves.values())) else None
    speed = (f"a speed over the first {rounds} rounds (the mean accuracy over the evaluated "
             "rounds: the paper's 'improves convergence')")
    heads: list[figures.Check] = []
    side: list[figures.Check] = []
    rows: list[dict[str, Any]] = []
    where: dict[str, list[str]] = {"beats": [], "loses to": [], "not separated from": []}
    for k in scored:
        d_final, d_over = final[k] - final[RANDOM], over[k] - over[RANDOM]
        conv = figures.convergence({k: runs[k], RANDOM: runs[RANDOM]}, "test_acc",
                                   tolerance=margin)
        head = k == HEADLINE
        c_final = figures.above(f"{k}: final accuracy above random selection's", d_final,
                                margin=margin, converged=conv, headline=head)
        c_over = figures.above(f"{k}: mean accuracy over the rounds above random selection's",
                               d_over, margin=margin, horizon=speed, headline=head)
        (heads if head else side).extend([c_final, c_over])
        key = {"pass": "beats", "fail": "loses to"}.get(c_final.outcome, "not separated from")
        where[key].append(f"{k} ({100 * d_final.mean:+.1f})")
        rows.append({"score": k, "final test acc": final[k],
                     "final minus random (points)": f"{100 * d_final.mean:+.2f} ± "
                                                    f"{100 * d_final.std:.2f}",
                     "final vs random": c_final.outcome,
                     "mean over rounds": over[k],
                     "mean over rounds minus random (points)": f"{100 * d_over.mean:+.2f} ± "
                                                               f"{100 * d_over.std:.2f}",
                     "mean over rounds vs random": c_over.outcome,
                     "peers sharing a class (rounds 2+)": shared[k]})
    rows.insert(0, {"score": RANDOM, "final test acc": final[RANDOM],
                    "mean over rounds": over[RANDOM],
                    "peers sharing a class (rounds 2+)": shared[RANDOM]})
    table = pd.DataFrame(rows).fillna("")
    measured = (f"final personalized test accuracy, random selection {final[RANDOM]:.3f}; "
                + "; ".join(f"{how} random: " + ", ".join(ks)
                            for how, ks in where.items() if ks)
                + " (points, seed-paired mean difference; the headline weighting is "
                f"{HEADLINE}, eq. (9) with every term)")
    notes = [_pfeddst.late_gains(figures.convergence(runs, "test_acc", tolerance=margin))
             + (f" {rounds} rounds at this scale." if rounds is not None else "")]
    gaps = {k: 100 * (final[k] - final[RANDOM]).mean for k in scored}
    notes.append(
        "The score changes which peers are chosen far more than the accuracy: the share of "
        "selected peers holding a class of the client is "
        + ", ".join(f"{k} {shared[k].mean:.2f}" for k in runs)
        + f" (rounds 2+), while the final accuracies differ from random selection's by "
        f"{min(gaps.values()):+.1f} to {max(gaps.values()):+.1f} points (seed-paired means).")
    return figures.Result(fig, measured, heads + side,
                          {"selection": table, "curves": curves[TITLE]}, panels=found,
                          notes=notes, paper_rounds=[_pfeddst.PAPER_ROUNDS])


if __name__ == "__main__":
    raise SystemExit(main())
