"""Field claim: topology matters for D-SGD under heterogeneous data only, and all the eigenvalues of
the mixing matrix order the graphs (Takezawa, Koloskova & Stich, ICML 2026), on the real
Fashion-MNIST, the dataset of the paper's Fig. 3.

``field_all_eigenvalues`` at n = 25 on Fashion-MNIST (Debian's ``dataset-fashion-mnist``, read
by ``topofl.data.load("fashion_mnist")``; 60,000 train / 10,000 test images; offline stand-in
of the configs' ``[stand_in]`` where the files are absent): D-SGD (one local step and one
gossip step a round), logistic regression with weight decay (the paper's LeNet is out of this
CPU's reach at this scale: ``analysis/fmnist_cost.md``), eight graphs with Metropolis weights
(complete, undirected exponential, 5 x 5 torus, random 4-regular, small world, 5 x 5 grid,
ring, star) on IID data and under a Dirichlet(0.1) label split. One row: the mean test accuracy
of the nodes' models on the global test set under IID data and under the Dirichlet split (mean
over the seeds), then each graph's final accuracy against the all-eigenvalues metric
(``topofl.spectral.all_eigenvalues_metric``; symlog axis, the complete graph's is 0) and
against the spectral gap ``1 - max_{k >= 2} |lambda_k|`` (log axis): open markers IID, filled
Dirichlet. The helpers (the graph that ran, its spectra, Kendall's tau seed by seed) are
``fig_field_all_eigenvalues.py``'s.

    python paper_figures/fig_field_all_eigenvalues_fmnist.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import fig_field_all_eigenvalues as base  # beside this script: graph_of, spectra, ordering

from topofl import figures
from topofl.figures.config import FigureError

GRAPHS = {"complete": "complete", "undirected_exponential": "exponential (undirected)",
          "torus": "torus 5 x 5", "random_regular": "random 4-regular",
          "watts_strogatz": "small world", "grid": "grid 5 x 5", "ring": "ring",
          "star": "star"}
N = 25
SPLITS = {"iid": "IID", "dirichlet": "Dirichlet(0.1) label split"}
SHORT = {"iid": "IID", "dirichlet": "Dirichlet(0.1)"}
#: a swapped pair of the C(8, 2) = 28 pairs of the eight graphs: the step of Kendall's tau
PAIR = 2 / 28


def label(cfg: Any) -> str:
    """A curve's label: the graph's name."""
    return GRAPHS[str(cfg["topology"]).split(":")[0]]


def _config(split: str) -> str:
    return f"field_all_eigenvalues_fmnist_{split}"


def _title(split: str) -> str:
    return f"{SPLITS[split]}, n = {N}"


def _draw(fig: Any, axes: Any, found: Mapping[str, Any], fin: Mapping[Any, Any],
          spec: Mapping[Any, Any]) -> None:
    """The curves (IID, Dirichlet), then every graph's final accuracy against the metric and
    against the gap; one legend under the figure."""
    import topofl as tf

    for ax, split in zip(axes[:2], SPLITS):
        tf.plotting.convergence(found[_title(split)].runs, "global_acc", ax=ax,
                                title=f"{SHORT[split]}, n = {N}", band=False, legend=None,
                                ylabel="global test accuracy")
        ax.set_xlabel("rounds")
        for line in ax.lines:  # thinner than the default: eight curves close together
            line.set_linewidth(1.1)
    colours = {ln.get_label(): ln.get_color() for ln in axes[0].lines
               if ln.get_label() in GRAPHS.values()}
    for ax, which, xlabel in ((axes[2], 0, "all-eigenvalues metric"),
                              (axes[3], 1, "spectral gap")):
        for g, colour in colours.items():
            for split, face in (("iid", "none"), ("dirichlet", colour)):
                acc = fin[(split, g)]
                ax.errorbar([spec[(split, g)][which].mean], [100 * acc.mean],
                            yerr=[100 * acc.std], fmt="o", mfc=face, mec=colour,
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

    handles = list(axes[0].lines) + [
        Line2D([], [], ls="", marker="o", mfc=f, mec="k", label=t)
        for f, t in (("none", "IID"), ("k", "Dirichlet(0.1)"))]
    fig.legend(handles, [h.get_label() for h in handles], loc="lower center", ncol=5,
               frameon=False, fontsize=8)
    fig.tight_layout(rect=(0.0, 0.16, 1.0, 1.0))


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    import matplotlib.pyplot as plt
    import pandas as pd

    configs = {_title(s): _config(s) for s in SPLITS}
    found = figures.panels(args, configs, label)
    acc = figures.margin(args.name, "accuracy")
    tau_margin = figures.margin(args.name, "tau")
    pair = figures.margin(args.name, "pair")
    fin: dict[tuple[str, str], figures.OverSeeds] = {}
    speed: dict[tuple[str, str], figures.OverSeeds] = {}
    spec: dict[tuple[str, str], tuple[figures.OverSeeds, figures.OverSeeds]] = {}
    for split in SPLITS:
        for g, rec in found[_title(split)].runs.items():
            fin[(split, g)] = figures.final(rec, "global_acc")
            speed[(split, g)] = figures.mean_over_rounds(rec, "global_acc")
            spec[(split, g)] = (figures.per_seed(rec, lambda one: base.spectra(one)[0]),
                                figures.per_seed(rec, lambda one: base.spectra(one)[1]))
    labels = list(found[_title("dirichlet")].runs)
    if len(labels) != len(GRAPHS) or abs(pair - PAIR) > 1e-12:
        raise FigureError(f"the margin 'pair' is one swapped pair of {len(GRAPHS)} graphs "
                          f"({PAIR}), got {pair} for {len(labels)} graphs")

    def taus(split: str, what: Mapping[tuple[str, str], figures.OverSeeds]
             ) -> tuple[figures.OverSeeds, figures.OverSeeds]:
        a = {g: what[(split, g)] for g in labels}
        by_metric = base.ordering(a, {g: -1.0 * spec[(split, g)][0] for g in labels}, pair)
        by_gap = base.ordering(a, {g: spec[(split, g)][1] for g in labels}, pair)
        return by_metric, by_gap

    def reading(*cells: tuple[str, str]) -> dict[str, Any]:
        chosen = {f"{SHORT[s]}: {g}": found[_title(s)].runs[g] for s, g in cells}
        return {"converged": figures.convergence(chosen, "global_acc", tolerance=acc)}

    def every(split: str) -> dict[str, Any]:
        return reading(*((split, g) for g in labels))

    iid_loss = fin[("iid", "complete")] - fin[("iid", "ring")]
    skew_loss = fin[("dirichlet", "complete")] - fin[("dirichlet", "ring")]
    tau_of = {s: taus(s, fin) for s in SPLITS}
    (t_skew, g_skew), (t_iid, g_iid) = tau_of["dirichlet"], tau_of["iid"]
    t_speed, _ = taus("dirichlet", speed)
    head = [
        figures.within(f"n = {N}, IID: the ring's final accuracy within 1 point of the "
                       "complete graph's (ring - complete)", -1.0 * iid_loss, acc,
                       headline=True, **reading(("iid", "ring"), ("iid", "complete"))),
        figures.above(f"n = {N}, Dirichlet(0.1): the ring below the complete graph (complete "
                      "- ring, final accuracy)", skew_loss, margin=acc, headline=True,
                      **reading(("dirichlet", "ring"), ("dirichlet", "complete"))),
        figures.above(f"n = {N}, Dirichlet(0.1): the all-eigenvalues metric orders the final "
                      "accuracies (Kendall's tau with minus the metric)", t_skew,
                      margin=tau_margin, headline=True, **every("dirichlet")),
        figures.above(f"n = {N}, Dirichlet(0.1): the metric orders them at least as well as "
                      "the spectral gap (tau of the metric - tau of the gap)",
                      t_skew - g_skew, margin=pair, tie="pass", headline=True,
                      **every("dirichlet")),
    ]
    more = [
        figures.above(f"n = {N}: the ring's loss to the complete graph under the Dirichlet "
                      "split more than 3 times its loss under IID data (Dirichlet loss - 3 x "
                      "IID loss)", skew_loss - 3.0 * iid_loss, margin=acc,
                      **reading(("iid", "ring"), ("iid", "complete"),
                                ("dirichlet", "ring"), ("dirichlet", "complete"))),
        figures.above(f"n = {N}, IID: the metric orders the final accuracies (Kendall's tau)",
                      t_iid, margin=tau_margin, **every("iid")),
        figures.above(f"n = {N}, IID: the metric orders them at least as well as the gap",
                      t_iid - g_iid, margin=pair, tie="pass", **every("iid")),
        figures.above(f"n = {N}, Dirichlet(0.1): the metric orders the mean accuracies over "
                      "the rounds (Kendall's tau)", t_speed, margin=tau_margin,
                      horizon="a speed: the mean accuracy over the run's evaluations"),
    ]

    with plt.rc_context({"font.size": 8.5}):
        fig, axes = plt.subplots(1, 4, figsize=(13.0, 4.0), squeeze=False)
        _draw(fig, axes[0], found, fin, spec)

    numbers: dict[str, Any] = {t: p.table("global_acc") for t, p in found.items()}
    numbers["graphs: spectra and final accuracies"] = pd.DataFrame([
        {"n": N, "graph": g, "all-eigenvalues metric": spec[("dirichlet", g)][0],
         "spectral gap": spec[("dirichlet", g)][1], "IID final": fin[("iid", g)],
         "Dirichlet final": fin[("dirichlet", g)],
         "Dirichlet mean over rounds": speed[("dirichlet", g)]} for g in labels])
    numbers["orderings (Kendall's tau, per seed)"] = pd.DataFrame([
        {"n": N, "data": SPLITS[s], "tau, metric": tau_of[s][0],
         "tau, spectral gap": tau_of[s][1],
         "per seed (metric / gap)": " ; ".join(
             f"{a:+.3f} / {b:+.3f}" for a, b in zip(tau_of[s][0].values, tau_of[s][1].values))}
        for s in SPLITS])

    def pts(x: figures.OverSeeds) -> str:
        return f"{100 * x.mean:.1f} ± {100 * x.std:.1f}"

    measured = (
        f"n = {N}: IID ring {fin[('iid', 'ring')]:.3f} vs complete "
        f"{fin[('iid', 'complete')]:.3f} ({pts(iid_loss)} points), Dirichlet(0.1) ring "
        f"{fin[('dirichlet', 'ring')]:.3f} vs complete {fin[('dirichlet', 'complete')]:.3f} "
        f"({pts(skew_loss)} points), star {fin[('dirichlet', 'star')]:.3f}; Kendall's tau "
        f"under the Dirichlet split: metric {t_skew:.2f}, gap {g_skew:.2f}; under IID: metric "
        f"{t_iid:.2f}, gap {g_iid:.2f}")
    notes = [_gap_note(spec, labels)]
    # the horizon is the one declared before the runs (the configs' base rounds)
    return figures.Result(fig, measured, head + more, numbers, panels=found, notes=notes)


def _gap_note(spec: Mapping[tuple[str, str], Any], labels: list[str]) -> str:
    """The pairs of graphs that the metric and the gap order differently, seed by seed."""
    metric = {g: spec[("dirichlet", g)][0] for g in labels}
    gap = {g: spec[("dirichlet", g)][1] for g in labels}
    seeds = metric[labels[0]].seeds
    count: dict[str, int] = {}
    for k in range(len(seeds)):
        for i, a in enumerate(labels):
            for b in labels[i + 1:]:
                if (metric[a].values[k] < metric[b].values[k]) \
                        != (gap[a].values[k] > gap[b].values[k]):
                    count[f"{a} / {b}"] = count.get(f"{a} / {b}", 0) + 1
    found = ", ".join(f"{p} in {c} of {len(seeds)} seeds" for p, c in count.items()) or "none"
    return ("The pairs of graphs that the all-eigenvalues metric and the spectral gap order "
            f"differently (the random 4-regular graph and the small world are drawn by each "
            f"seed): {found}. Every other pair the two order alike, so the two taus differ "
            "only by how the accuracies order these pairs.")


if __name__ == "__main__":
    raise SystemExit(main())
