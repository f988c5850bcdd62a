"""Field claim: topology matters for D-SGD under heterogeneous data only, and all the eigenvalues of
the mixing matrix order the graphs (Takezawa, Koloskova & Stich, ICML 2026).

D-SGD (one local step and one gossip step a round), logistic regression with weight decay, real
MNIST digits (offline: the 5,000 of ``mnist5k``), n = 32 and n = 64 nodes, six graphs with
Metropolis weights (complete, undirected exponential, torus, random 3-regular, ring, star), on
IID data and under label skew (one class a node). One row per n: the mean test accuracy of the
nodes' models on the global test set under IID data and under label skew (mean over the seeds,
shaded: +- one std), then each graph's final accuracy against the all-eigenvalues metric
(``topofl.spectral.all_eigenvalues_metric``; symlog axis, the complete graph's is 0) and
against the spectral gap ``1 - max_{k >= 2} |lambda_k|`` (log axis): open markers IID, filled
label skew, circles n = 32, squares n = 64.

    python paper_figures/fig_field_all_eigenvalues.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from topofl import figures
from topofl.figures.config import FigureError

GRAPHS = {"complete": "complete", "undirected_exponential": "exponential (undirected)",
          "torus": "torus", "random_regular": "random 3-regular", "ring": "ring",
          "star": "star"}
SIZES = (32, 64)
SPLITS = {"iid": "IID", "skew": "label skew (one class a node)"}


def label(cfg: Any) -> str:
    """A curve's label: the graph's name."""
    return GRAPHS[str(cfg["topology"]).split(":")[0]]


def graph_of(one: Any) -> Any:
    """The graph that ran in a single-run Records: its config's spec built at the run's ``n``
    and the seed the engine recorded (the run's seed draws the random regular graph)."""
    import topofl as tf

    cfg, recorded = one.config, one.engine["topology"]
    seed = int(recorded.get("params", {}).get("seed", cfg.get("seed", 0)))
    topo = tf.topologies.build(str(cfg["topology"]), n=int(cfg["n_clients"]), seed=seed)
    if dict(topo.params) != dict(recorded.get("params", topo.params)):
        raise FigureError(f"the graph rebuilt from {cfg['topology']!r} has parameters "
                                  f"{dict(topo.params)}, the run recorded {recorded['params']}")
    return topo


def spectra(one: Any) -> tuple[float, float]:
    """``(all-eigenvalues metric, spectral gap)`` of the graph of a single-run Records."""
    import topofl as tf

    topo = graph_of(one)
    return tf.spectral.all_eigenvalues_metric(topo), tf.spectral.spectral_gap(topo)


def kendall(a: list[float], b: list[float]) -> float:
    """Kendall's tau-b of two equally long lists (NaN when one is constant)."""
    from scipy import stats

    return float(stats.kendalltau(a, b).statistic)


def ordering(acc: Mapping[str, figures.OverSeeds], key: Mapping[str, figures.OverSeeds],
             resolution: float) -> figures.OverSeeds:
    """Kendall's tau between the graphs' accuracies and ``key`` (larger key: predicted
    better), seed by seed, its resolution one swapped pair."""
    labels = list(acc)
    m = len(labels)
    tau = figures.seedwise(lambda *v: kendall(list(v[:m]), list(v[m:])),
                           *(acc[g] for g in labels), *(key[g] for g in labels))
    return figures.OverSeeds(tau.values, tau.seeds, resolution)


def _config(split: str, n: int) -> str:
    return f"field_all_eigenvalues_{split}_{n}"


def _title(split: str, n: int, short: bool = False) -> str:
    return f"{'label skew' if short and split == 'skew' else SPLITS[split]}, n = {n}"


def _draw(fig: Any, axes: Any, found: Mapping[str, Any], fin: Mapping[Any, Any],
          spec: Mapping[Any, Any]) -> None:
    """One row per n of curves (IID, label skew); the right column: every graph's final
    accuracy against the metric (top) and the gap (bottom); one legend under the figure."""
    import topofl as tf

    for row, n in zip(axes, SIZES):
        for ax, split in zip(row[:2], SPLITS):
            tf.plotting.convergence(found[_title(split, n)].runs, "global_acc", ax=ax,
                                    title=_title(split, n, short=True), band=False,
                                    legend=None, ylabel="global test accuracy")
            ax.set_xlabel("rounds")
            for line in ax.lines:  # thinner than the default: six curves close together
                line.set_linewidth(1.2)
    colours = {ln.get_label(): ln.get_color() for ln in axes[0][0].lines
               if ln.get_label() in GRAPHS.values()}
    for ax, which, xlabel in ((axes[0][2], 0, "all-eigenvalues metric"),
                              (axes[1][2], 1, "spectral gap")):
        for g, colour in colours.items():
            for n, marker in zip(SIZES, ("o", "s")):
                for split, face in (("iid", "none"), ("skew", colour)):
                    acc = fin[(split, n, g)]
                    ax.errorbar([spec[(split, n, g)][which].mean], [100 * acc.mean],
                                yerr=[100 * acc.std], fmt=marker, mfc=face, mec=colour,
                                ecolor=colour, ms=6, capsize=2)
        if which == 0:  # the complete graph's metric is 0: linear near it
            ax.set_xscale("symlog", linthresh=0.05, linscale=0.5)
            ax.set_xticks([0, 0.1, 1, 10], ["0", "0.1", "1", "10"])
        else:
            ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("final accuracy (%)")
        ax.set_title("final accuracy against the " + ("metric" if which == 0 else "gap"),
                     fontsize=9)
    from matplotlib.lines import Line2D

    handles = list(axes[0][0].lines) + [
        Line2D([], [], ls="", marker=m, mfc=f, mec="k", label=t)
        for m, f, t in (("o", "none", f"IID, n = {SIZES[0]}"),
                        ("s", "none", f"IID, n = {SIZES[1]}"),
                        ("o", "k", f"label skew, n = {SIZES[0]}"),
                        ("s", "k", f"label skew, n = {SIZES[1]}"))]
    fig.legend(handles, [h.get_label() for h in handles], loc="lower center", ncol=5,
               frameon=False, fontsize=8)
    fig.tight_layout(rect=(0.0, 0.09, 1.0, 1.0))


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    import matplotlib.pyplot as plt
    import pandas as pd

    configs = {_title(s, n): _config(s, n) for n in SIZES for s in SPLITS}
    found = figures.panels(args, configs, label)
    acc = figures.margin(args.name, "accuracy")
    tau_margin = figures.margin(args.name, "tau")
    pair = figures.margin(args.name, "pair")
    fin: dict[tuple[str, int, str], figures.OverSeeds] = {}
    speed: dict[tuple[str, int, str], figures.OverSeeds] = {}
    spec: dict[tuple[str, int, str], tuple[figures.OverSeeds, figures.OverSeeds]] = {}
    for n in SIZES:
        for split in SPLITS:
            runs = found[_title(split, n)].runs
            for g, rec in runs.items():
                fin[(split, n, g)] = figures.final(rec, "global_acc")
                speed[(split, n, g)] = figures.mean_over_rounds(rec, "global_acc")
                spec[(split, n, g)] = (figures.per_seed(rec, lambda one: spectra(one)[0]),
                                       figures.per_seed(rec, lambda one: spectra(one)[1]))
    labels = list(found[_title("skew", SIZES[0])].runs)
    if len(labels) != 6 or abs(pair - 2 / 15) > 1e-12:
        raise FigureError(f"the margin 'pair' is one swapped pair of six graphs "
                                  f"(2/15), got {pair} for {len(labels)} graphs")

    def taus(split: str, n: int, what: Mapping[tuple[str, int, str], figures.OverSeeds]
             ) -> tuple[figures.OverSeeds, figures.OverSeeds]:
        a = {g: what[(split, n, g)] for g in labels}
        by_metric = ordering(a, {g: -1.0 * spec[(split, n, g)][0] for g in labels}, pair)
        by_gap = ordering(a, {g: spec[(split, n, g)][1] for g in labels}, pair)
        return by_metric, by_gap

    def reading(*cells: tuple[str, int, str]) -> dict[str, Any]:
        chosen = {f"{SPLITS[s]}, n = {n}: {g}": found[_title(s, n)].runs[g]
                  for s, n, g in cells}
        return {"converged": figures.convergence(chosen, "global_acc", tolerance=acc)}

    def every(split: str, n: int) -> dict[str, Any]:
        return reading(*((split, n, g) for g in labels))

    head: list[figures.Check] = []
    more: list[figures.Check] = []
    tau_of: dict[tuple[str, int], tuple[figures.OverSeeds, figures.OverSeeds]] = {}
    for n in SIZES:
        iid_loss = fin[("iid", n, "complete")] - fin[("iid", n, "ring")]
        skew_loss = fin[("skew", n, "complete")] - fin[("skew", n, "ring")]
        tau_of[("iid", n)] = taus("iid", n, fin)
        tau_of[("skew", n)] = taus("skew", n, fin)
        (t_skew, g_skew), (t_iid, g_iid) = tau_of[("skew", n)], tau_of[("iid", n)]
        t_speed, _ = taus("skew", n, speed)
        head += [
            figures.within(f"n = {n}, IID: the ring's final accuracy within 1 point of the "
                           "complete graph's (ring - complete)", -1.0 * iid_loss, acc,
                           headline=True,
                           **reading(("iid", n, "ring"), ("iid", n, "complete"))),
            figures.above(f"n = {n}, label skew: the ring below the complete graph (complete - "
                          "ring, final accuracy)", skew_loss, margin=acc, headline=True,
                          **reading(("skew", n, "ring"), ("skew", n, "complete"))),
            figures.above(f"n = {n}, label skew: the all-eigenvalues metric orders the final "
                          "accuracies (Kendall's tau with minus the metric)", t_skew,
                          margin=tau_margin, headline=True, **every("skew", n)),
            figures.above(f"n = {n}, label skew: the metric orders them at least as well as "
                          "the spectral gap (tau of the metric - tau of the gap)",
                          t_skew - g_skew, margin=pair, tie="pass", headline=True,
                          **every("skew", n)),
        ]
        more += [
            figures.above(f"n = {n}: the ring's loss to the complete graph under label skew "
                          "more than 3 times its loss under IID data (skew loss - 3 x IID "
                          "loss)", skew_loss - 3.0 * iid_loss, margin=acc,
                          **reading(("iid", n, "ring"), ("iid", n, "complete"),
                                    ("skew", n, "ring"), ("skew", n, "complete"))),
            figures.above(f"n = {n}, IID: the metric orders the final accuracies (Kendall's "
                          "tau)", t_iid, margin=tau_margin, **every("iid", n)),
            figures.above(f"n = {n}, IID: the metric orders them at least as well as the gap",
                          t_iid - g_iid, margin=pair, tie="pass", **every("iid", n)),
            figures.above(f"n = {n}, label skew: the metric orders the mean accuracies over "
                          "the rounds (Kendall's tau)", t_speed, margin=tau_margin,
                          horizon="a speed: the mean accuracy over the run's evaluations"),
        ]

    with plt.rc_context({"font.size": 8.5}):  # six panels of text: a smaller PNG
        fig, axes = plt.subplots(len(SIZES), 3, figsize=(11.0, 6.4), squeeze=False)
        _draw(fig, axes, found, fin, spec)

    numbers: dict[str, Any] = {t: p.table("global_acc") for t, p in found.items()}
    rows = []
    for n in SIZES:
        for g in labels:
            metric, gap = spec[("skew", n, g)]
            rows.append({"n": n, "graph": g, "all-eigenvalues metric": metric,
                         "spectral gap": gap, "IID final": fin[("iid", n, g)],
                         "label skew final": fin[("skew", n, g)],
                         "label skew mean over rounds": speed[("skew", n, g)]})
    numbers["graphs: spectra and final accuracies"] = pd.DataFrame(rows)
    numbers["orderings (Kendall's tau, per seed)"] = pd.DataFrame([
        {"n": n, "data": SPLITS[s], "tau, metric": tau_of[(s, n)][0],
         "tau, spectral gap": tau_of[(s, n)][1],
         "per seed (metric / gap)": " ; ".join(
             f"{a:+.3f} / {b:+.3f}" for a, b in zip(tau_of[(s, n)][0].values,
                                                    tau_of[(s, n)][1].values))}
        for n in SIZES for s in SPLITS])

    def pts(x: figures.OverSeeds) -> str:
        return f"{100 * x.mean:.1f} ± {100 * x.std:.1f}"

    measured = "; ".join(
        f"n = {n}: IID ring {fin[('iid', n, 'ring')]:.3f} vs complete "
        f"{fin[('iid', n, 'complete')]:.3f} ("
        f"{pts(fin[('iid', n, 'complete')] - fin[('iid', n, 'ring')])} points), label skew "
        f"ring {fin[('skew', n, 'ring')]:.3f} vs complete {fin[('skew', n, 'complete')]:.3f} ("
        f"{pts(fin[('skew', n, 'complete')] - fin[('skew', n, 'ring')])} points), star "
        f"{fin[('skew', n, 'star')]:.3f}; Kendall's tau under label skew: metric "
        f"{tau_of[('skew', n)][0]:.2f}, gap {tau_of[('skew', n)][1]:.2f}; under IID: metric "
        f"{tau_of[('iid', n)][0]:.2f}, gap {tau_of[('iid', n)][1]:.2f}" for n in SIZES)
    notes = [_gap_note(spec, labels)]
    # the horizon is the one declared before the runs (the configs' base rounds)
    return figures.Result(fig, measured, head + more, numbers, panels=found, notes=notes)


def _gap_note(spec: Mapping[tuple[str, int, str], Any], labels: list[str]) -> str:
    """The pairs of graphs that the metric and the gap order differently, seed by seed (the
    pairs that decide whether the metric orders the graphs better than the gap)."""
    parts = []
    for n in SIZES:
        metric = {g: spec[("skew", n, g)][0] for g in labels}
        gap = {g: spec[("skew", n, g)][1] for g in labels}
        seeds = metric[labels[0]].seeds
        count: dict[str, int] = {}
        for k in range(len(seeds)):
            for i, a in enumerate(labels):
                for b in labels[i + 1:]:
                    if (metric[a].values[k] < metric[b].values[k]) \
                            != (gap[a].values[k] > gap[b].values[k]):
                        count[f"{a} / {b}"] = count.get(f"{a} / {b}", 0) + 1
        parts.append(f"n = {n}: " + (", ".join(f"{pair} in {c} of {len(seeds)} seeds"
                                               for pair, c in count.items()) or "none"))
    return ("The pairs of graphs that the all-eigenvalues metric and the spectral gap order "
            "differently (the random 3-regular graph is drawn by each seed): "
            + "; ".join(parts) + ". Every other pair the two order alike, so the two taus "
            "differ only by how the accuracies order these pairs.")


if __name__ == "__main__":
    raise SystemExit(main())
