"""Field claim: Morph (each node rewires its few in-neighbours towards dissimilar models) against
the complete graph, a static graph of the same in-degree and Epidemic Learning, under label skew.

32 nodes of MNIST (mnist5k, two classes a node), an MLP with one hidden layer of 32, the local
SGD of Morph's code for every method (lr 0.05, 10 local steps of batches of 5). Morph with its
code's defaults: 3 in-neighbours, a swap every 5 rounds by softmaxes of -/+500 times the
layer-wise cosine similarity, uniform averaging. Against D-SGD on the complete graph and on a
static random 3-regular graph, and Epidemic Learning with 3 models a node and round (EL-Oracle,
EL-Local). Left: the nodes' mean accuracy on the global test set against rounds (mean over the
seeds, shaded: +- one std); right: the final accuracies (dots: seeds).

    python paper_figures/fig_field_morph.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from topofl import figures

CONFIGS = ["field_morph_morph", "field_morph_dsgd", "field_morph_el"]
METHODS = {"morph": "Morph (3 in-neighbours)", "complete": "D-SGD, complete graph",
           "random_regular:d=3": "D-SGD, static random 3-regular",
           "el_oracle:s=3": "EL-Oracle (s = 3)", "el_local:s=3": "EL-Local (s = 3)"}
METRIC = "global_acc"


def label(cfg: Any) -> str:
    """A curve's label: Morph's, or the method on its graph (``METHODS``)."""
    return METHODS["morph" if cfg["algorithm"] == "morph" else cfg["topology"]]


#: What a node's accuracy is measured on (the first sentence of the result's notes).
ACCURACY = "the global test set"


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    return build(args, CONFIGS, "32 nodes, MNIST (mnist5k), two classes a node, MLP (32 hidden)",
                 ACCURACY)


def build(args: figures.FigureArgs, configs: list[str], title: str,
          accuracy_on: str) -> figures.Result:
    """The result of Morph's claim on the runs of ``configs`` (Morph, D-SGD, EL), titled
    ``title``; ``accuracy_on`` names the test set (the notes' first sentence). Shared with
    ``fig_field_morph_fmnist.py``."""
    import matplotlib.pyplot as plt
    import pandas as pd

    found = figures.panels(args, {title: configs}, label)
    panel = found[title]
    runs = panel.runs
    acc, close = figures.margin(args.name, "accuracy"), figures.margin(args.name, "close")
    morph, complete, static, oracle, local = METHODS.values()
    final = {k: figures.final(r, METRIC) for k, r in runs.items()}
    diff = {k: final[morph] - final[k] for k in METHODS.values() if k != morph}

    def reading(other: str, tol: float = acc) -> dict[str, Any]:
        return {"converged": figures.convergence({k: runs[k] for k in (morph, other)}, METRIC,
                                                 tolerance=tol)}

    checks = [
        figures.within("Morph's final accuracy within the 'close' margin of D-SGD's on the "
                       "complete graph", diff[complete], close, headline=True,
                       **reading(complete, close)),
        figures.above("Morph's final accuracy above D-SGD's on a static random 3-regular graph",
                      diff[static], margin=acc, headline=True, **reading(static)),
        figures.above("Morph's final accuracy above EL-Oracle's (s = 3)", diff[oracle],
                      margin=acc, **reading(oracle)),
        figures.above("Morph's final accuracy above EL-Local's (s = 3)", diff[local],
                      margin=acc, **reading(local)),
    ]

    fig, (left, right) = plt.subplots(1, 2, figsize=(11.0, 4.2),
                                      gridspec_kw={"width_ratios": [1.6, 1.0]})
    colors = dict(zip(METHODS.values(), ("C3", "0.3", "C0", "C2", "C1")))
    styles = dict(zip(METHODS.values(), ("-", "--", "-", "-", "-")))
    lows = []
    for name in METHODS.values():
        rec = runs[name]
        series = [rec.for_run(r).series(f"{METRIC}_mean") for r in rec.runs]
        m = min(len(y) for _, y in series)
        x = np.asarray(series[0][0][:m], dtype=float) + 1.0
        y = np.stack([np.asarray(s[1][:m], dtype=float) for s in series])
        mu, sd = y.mean(axis=0), y.std(axis=0, ddof=min(1, len(series) - 1))
        left.plot(x, mu, color=colors[name], ls=styles[name], label=name)
        left.fill_between(x, mu - sd, mu + sd, color=colors[name], alpha=0.15, lw=0)
        lows.append(float(mu[len(mu) // 4]))
    left.set_xlabel("round")
    left.set_ylabel("mean test accuracy (global test set)")
    left.set_title(panel.title, fontsize=10)
    left.set_ylim(max(0.0, min(lows) - 0.1), None)
    left.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=3, frameon=False,
                fontsize=8)
    for i, name in enumerate(METHODS.values()):
        v = final[name]
        right.bar(i, v.mean, 0.7, color=colors[name], alpha=0.85)
        right.plot([i] * v.n, v.values, "k.", ms=4)
    right.axhspan(final[complete].mean - close, final[complete].mean + close, color="0.5",
                  alpha=0.15, lw=0)
    right.set_xticks(range(len(METHODS)), ["Morph", "complete", "static\n3-regular",
                                           "EL-Oracle", "EL-Local"], fontsize=8)
    vals = [x for v in final.values() for x in v.values]
    right.set_ylim(max(0.0, min(vals) - 0.05), min(1.0, max(vals) + 0.02))
    right.set_xlabel("method (3 in-neighbours, but the complete graph's 31)")
    right.set_ylabel("final mean test accuracy")
    right.set_title(f"final accuracy (band: complete ± {close:g})", fontsize=10)
    fig.tight_layout()

    numbers = {panel.title: panel.table(METRIC), "final accuracy": pd.DataFrame([
        {"method": name, "final accuracy": final[name],
         "Morph - this (points)": 100 * diff[name] if name in diff else None}
        for name in METHODS.values()])}
    measured = ("final mean test accuracy: " + "; ".join(
        f"{name} {final[name].mean:.3f} ± {final[name].std:.3f}" for name in METHODS.values())
        + "; Morph minus (points): " + ", ".join(
            f"{name} {100 * d.mean:+.1f} ± {100 * d.std:.1f}" for name, d in diff.items()))
    notes = [f"Accuracy: the mean over the 32 nodes of each node's accuracy on {accuracy_on} "
             "(records' global_acc_mean) at the last evaluation. Every method runs the same "
             "local SGD; D-SGD's weights are Metropolis (1/32 on the complete graph, 1/4 on the "
             "3-regular graph, Morph's uniform 1/4 there); EL averages uniformly what arrives."]
    return figures.Result(fig, measured, checks, numbers, panels=found, notes=notes)


if __name__ == "__main__":
    raise SystemExit(main())
