"""Field claim: CHOCO-SGD's accuracy per byte against D-SGD (Koloskova, Stich & Jaggi 2019).

A ring of 16 nodes, logistic regression on the synthetic 10-class data with two classes a node;
D-SGD and CHOCO-SGD with top-10 % and with QSGD (16 levels), the same learning rate, one local
step and one gossip step a round. Left: the mean test accuracy of the nodes on the global test
set against the bytes every node sent so far (the ledger's count; mean over the seeds, shaded:
+- one std), the dotted line the target; right: the same curves against rounds.

    python paper_figures/fig_field_choco.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from topofl import figures

CONFIGS = {"D-SGD": "field_choco_dsgd", "CHOCO top-10 %": "field_choco_topk",
           "CHOCO QSGD-16": "field_choco_qsgd"}
METRIC = "global_acc_mean"


def bytes_to(one: Any, target: float) -> float:
    """Bytes sent until ``METRIC`` first reached ``target`` in a one-run record; a run that
    never reached it counts the bytes of its whole run plus one round (a lower bound of its
    true count, as :func:`topofl.figures.reach` counts rounds)."""
    got = one.bytes_to(target, METRIC)
    if got is not None:
        return float(got)
    x, b = one.series("bytes")
    return float(b[-1] + (b[-1] / (x[-1] + 1)))


def accuracy_at_bytes(one: Any, budget: float) -> float:
    """``METRIC`` at the last evaluation whose running byte count is at most ``budget``."""
    xa, acc = one.series(METRIC)
    xb, b = one.series("bytes")
    sent = dict(zip(xb.tolist(), b.tolist()))
    ok = [a for t, a in zip(xa.tolist(), acc.tolist()) if sent.get(t, np.inf) <= budget]
    return float(ok[-1]) if ok else float("nan")


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    import matplotlib.pyplot as plt
    import pandas as pd

    target = float(figures.load_config(CONFIGS["D-SGD"], args.scale)["figure"]["target"])
    found = figures.panels(args, {"ring of 16, label skew (2 classes a node)": CONFIGS})
    panel = next(iter(found.values()))
    runs = panel.runs
    acc, ratio_margin = figures.margin(args.name, "accuracy"), figures.margin(args.name, "bytes")
    to = {k: figures.per_seed(r, lambda one: bytes_to(one, target)) for k, r in runs.items()}
    ratio = {k: to[k] / to["D-SGD"] for k in ("CHOCO top-10 %", "CHOCO QSGD-16")}
    per_round = {k: figures.per_seed(r, lambda one: float(one.series("bytes")[1][-1])
                                     / (float(one.series("bytes")[0][-1]) + 1))
                 for k, r in runs.items()}
    horizon = (f"bytes until the mean accuracy first reaches the target {target:g} (a "
               "claim about the way there, read at the evaluations)")
    # at an equal byte budget: CHOCO top-10 %'s whole run against D-SGD after as many bytes
    budget = figures.per_seed(runs["CHOCO top-10 %"],
                              lambda one: float(one.series("bytes")[1][-1]))
    seeds = budget.seeds
    dsgd_at = figures.OverSeeds(tuple(
        accuracy_at_bytes(runs["D-SGD"].for_run(r), b)
        for r, b in zip(runs["D-SGD"].runs, budget.values)), seeds)
    choco_final = figures.final(runs["CHOCO top-10 %"], "global_acc")
    reached = {k: sum(r.for_run(x).bytes_to(target, METRIC) is not None for x in r.runs)
               for k, r in runs.items()}
    checks = [
        figures.below("CHOCO top-10 %: bytes to the target / D-SGD's below 1", ratio[
            "CHOCO top-10 %"], 1.0, margin=ratio_margin, horizon=horizon, headline=True),
        figures.below("CHOCO QSGD-16: bytes to the target / D-SGD's below 1",
                      ratio["CHOCO QSGD-16"], 1.0, margin=ratio_margin, horizon=horizon),
        figures.above("at equal bytes (CHOCO top-10 %'s whole run): CHOCO top-10 %'s final "
                      "accuracy above D-SGD's accuracy after as many bytes",
                      choco_final - dsgd_at, margin=acc,
                      converged=figures.convergence({"CHOCO top-10 %": runs["CHOCO top-10 %"]},
                                                    "global_acc", tolerance=acc)),
    ]

    fig, (left, right) = plt.subplots(1, 2, figsize=(11.0, 4.0))
    for k, rec in runs.items():
        xs, ys = [], []
        for r in rec.runs:
            one = rec.for_run(r)
            t, a = one.series(METRIC)
            tb, b = one.series("bytes")
            sent = dict(zip(tb.tolist(), b.tolist()))
            xs.append(np.array([sent[v] for v in t.tolist()]) / 1e6)
            ys.append(a)
        m = min(len(y) for y in ys)
        x = np.mean([v[:m] for v in xs], axis=0)
        y = np.stack([v[:m] for v in ys])
        line, = left.plot(x, y.mean(axis=0), label=k)
        left.fill_between(x, y.mean(axis=0) - y.std(axis=0, ddof=min(1, len(ys) - 1)),
                          y.mean(axis=0) + y.std(axis=0, ddof=min(1, len(ys) - 1)),
                          color=line.get_color(), alpha=0.2, lw=0)
    left.axhline(target, color="grey", ls=":", lw=1.0)
    left.set_xscale("log")
    left.set_xlabel("bytes sent by all nodes (MB, log)")
    left.set_ylabel("test accuracy (global test set)")
    left.set_title(panel.title)
    left.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False,
                    fontsize=8)
    import topofl as tf

    tf.plotting.convergence(runs, "global_acc", ax=right, title="against rounds", band=True,
                            ylabel="test accuracy (global test set)", legend="below")
    for ax in (left, right):
        ax.set_ylim(max(0.0, target - 0.25), None)
    fig.tight_layout()

    numbers = {panel.title: panel.table("global_acc"), "bytes": pd.DataFrame([
        {"curve": k, "bytes a round (MB)": per_round[k] / 1e6,
         f"MB to {target:g}": to[k] / 1e6, "seeds that reached it": f"{reached[k]} of "
         f"{to[k].n}", "ratio to D-SGD": (to[k] / to["D-SGD"]) if k != "D-SGD" else "-"}
        for k in runs])}
    measured = (f"bytes to a mean accuracy of {target:g}: D-SGD {to['D-SGD'] / 1e6:.2f} MB, "
                f"CHOCO top-10 % {to['CHOCO top-10 %'] / 1e6:.2f} MB (ratio "
                f"{ratio['CHOCO top-10 %']:.2f}), CHOCO QSGD-16 "
                f"{to['CHOCO QSGD-16'] / 1e6:.2f} MB (ratio {ratio['CHOCO QSGD-16']:.2f}); "
                f"bytes a round {per_round['D-SGD'].mean / 1e6:.4f} / "
                f"{per_round['CHOCO top-10 %'].mean / 1e6:.4f} / "
                f"{per_round['CHOCO QSGD-16'].mean / 1e6:.4f} MB; at CHOCO top-10 %'s "
                f"{budget.mean / 1e6:.2f} MB: CHOCO {choco_final:.3f}, D-SGD {dsgd_at:.3f}")
    notes = []
    if min(reached.values()) < max(to["D-SGD"].n, 1):
        notes.append("A seed that never reached the target counts the bytes of its whole run "
                     "plus one round (a lower bound of its count).")
    return figures.Result(fig, measured, checks, numbers, panels=found, notes=notes)


if __name__ == "__main__":
    raise SystemExit(main())
