"""DPFL Fig. 4 and Appendix Figs. 12-14: the collaboration graph when 40% of clients flip labels.

One script for the four figures of the data-flip experiment (Section 4.5, Appendix G.3): 40 of
100 clients (malicious) flip their labels with one shared permutation, the other 60 (benign)
keep the true labels. Config ``dpfl_fig4_no_greedy``: the malicious clients do not run GGC, they
only train locally and send their model to whoever asks (Fig. 4a, Appendix Fig. 12); config
``dpfl_fig4_greedy``: they run GGC like the benign ones (Fig. 4b, Appendix Figs. 13-14).

Top row: for each case, the candidate graph Omega of the pre-processing step and the
collaborators of the last round against it, as adjacency matrices (receiver rows, sender
columns) with the benign clients first and the malicious ones after the red line (the first
seed's). Bottom: Fig. 14 for both cases, the share of malicious clients among the collaborators
benign clients pick, every round (``topofl.algorithms.malicious_share``; mean over the seeds,
shaded +- one std; the square at round -1 is Omega), beside the share a uniformly random choice
would give.

    python paper_figures/fig_dpfl_fig4.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

from typing import Any

from topofl import figures

PAPER_ROUNDS = 98  # Figs. 12-14: DPFL's rounds 0-98 (after its 2 of pre-processing)
PANELS = {"(a) malicious clients do not run GGC": "dpfl_fig4_no_greedy",
          "(b) malicious clients run GGC": "dpfl_fig4_greedy"}
SHORT = {"(a) malicious clients do not run GGC": "(a) no GGC",
         "(b) malicious clients run GGC": "(b) GGC"}


def shares(rec: Any) -> dict[str, Any]:
    """One run's malicious shares: Omega's, and per round (``tf.algorithms.malicious_share``)."""
    import topofl as tf

    omega = tf.algorithms.malicious_share(rec, graph="omega")
    df = tf.algorithms.malicious_share(rec)
    zero = df.loc[df["from_malicious"] == 0, "round"]
    return {"omega": omega, "rounds": df, "Omega share": float(omega["share"].iloc[0]),
            "round 0 share": float(df["share"].iloc[0]),
            "last round share": float(df["share"].iloc[-1]),
            "mean share over rounds": float(df["share"].mean()),
            "benign picking a malicious one (last round)": float(df["picking"].iloc[-1]),
            "first round with none": float(zero.iloc[0]) if len(zero) else float("nan"),
            "final test acc (mean)": rec.final("test_acc_mean")}


def share_records(got: list[dict[str, Any]], seeds: tuple[int, ...]) -> Any:
    """The per-round malicious share of one case as Records (metric ``share``, one run a seed),
    for its convergence reading."""
    import topofl as tf

    return tf.records.Records(
        rows=[{"run": f"seed={s}", "round": int(t), "client": None, "metric": "share",
               "value": float(v)}
              for s, g in zip(seeds, got) for t, v in zip(g["rounds"]["round"],
                                                          g["rounds"]["share"])],
        configs={f"seed={s}": {"seed": s} for s in seeds})


def heatmaps(fig: Any, grid: Any, col: int, title: str, one: Any) -> None:
    """The first seed's Omega and last-round collaborators of one case, benign clients first."""
    import topofl as tf
    from topofl.plotting import MALICIOUS_COLOR

    last = int(one.series("realized_density")[0][-1])
    n = int(one.config["n_clients"])
    flipped = set(one.engine["data"]["label_flip"]["clients"])
    order = [k for k in range(n) if k not in flipped] + sorted(flipped)
    axs = [fig.add_subplot(grid[0, 2 * col + k]) for k in range(2)]
    tf.plotting.selection_heatmap(one, [last], order=order, n=n, axes=axs, legend=False)
    for ax in axs:
        ax.set_title(f"{SHORT[title]}\n{ax.get_title()}", fontsize=9)
        edge = n - len(flipped) - 0.5  # benign clients first, then the malicious ones
        ax.axhline(edge, color=MALICIOUS_COLOR, lw=0.8)
        ax.axvline(edge, color=MALICIOUS_COLOR, lw=0.8)
        ax.set_xlabel("sender (benign | malicious)", fontsize=8)
        ax.set_ylabel("receiver", fontsize=8)


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd
    from matplotlib.patches import Patch

    from topofl.plotting import SELECTION_COLORS

    found = figures.panels(args, {"cases": {t: c for t, c in PANELS.items()}})
    runs = found["cases"].runs
    fig = plt.figure(figsize=(11.5, 7.3))  # under 150 kB at the 98 rounds of the default scale
    grid = fig.add_gridspec(2, 4, height_ratios=[1.2, 1.0])
    share_ax = fig.add_subplot(grid[1, :])
    per_round, stat, curves = {}, {}, {}
    random_share = 0.0
    for col, (title, rec) in enumerate(runs.items()):
        one = rec.for_run(rec.runs[0])
        heatmaps(fig, grid, col, title, one)
        got = [shares(rec.for_run(r)) for r in rec.runs]
        seeds = tuple(int(rec.configs[r]["seed"]) for r in rec.runs)
        stat[title] = {k: figures.OverSeeds(tuple(g[k] for g in got), seeds)
                       for k in got[0] if k not in ("omega", "rounds")}
        curves[title] = share_records(got, seeds)
        n = int(one.config["n_clients"])
        random_share = len(one.engine["data"]["label_flip"]["clients"]) / (n - 1)
        curve = np.stack([g["rounds"]["share"].to_numpy() for g in got])
        x = got[0]["rounds"]["round"].to_numpy()
        line, = share_ax.plot(x, curve.mean(axis=0), marker=".", label=title)
        if len(got) > 1:
            sd = curve.std(axis=0, ddof=1)
            share_ax.fill_between(x, curve.mean(axis=0) - sd, curve.mean(axis=0) + sd,
                                  color=line.get_color(), alpha=0.2, lw=0)
        share_ax.plot([-1], [stat[title]["Omega share"].mean], marker="s",
                      color=line.get_color(), ls="none")
        per_round[f"{title}: per round, first seed (Omega = the candidate graph)"] = pd.concat(
            [got[0]["omega"].assign(round="Omega"), got[0]["rounds"]], ignore_index=True)
    share_ax.axhline(random_share, ls="--", color="0.5",
                     label=f"uniformly random choice ({random_share:.3f})")
    share_ax.axhline(0.10, ls=":", color="k", label="10% (the paper's bound, Fig. 14)")
    share_ax.set_xlabel("round")
    share_ax.set_ylabel("malicious share of benign\nclients' collaborators")
    share_ax.set_ylim(bottom=0)
    share_ax.legend(fontsize=8, frameon=False, loc="upper right")
    fig.legend(handles=[Patch(color=SELECTION_COLORS[2], label="chosen (first panel: Omega)"),
                        Patch(color=SELECTION_COLORS[1], label="in Omega, not chosen")],
               loc="upper center", ncol=2, frameon=False, fontsize=9,
               title="clients ordered benign first, malicious (flipped labels) after the red "
                     "line", title_fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    a, b = (stat[t] for t in PANELS)
    tol = figures.margin(args.name, "share")
    rounds = int(next(iter(runs.values())).configs[next(iter(runs.values())).runs[0]]["rounds"])
    # the claims are about the graph the paper reaches by its round 98 (Fig. 12: "until they
    # cease choosing them altogether"; Fig. 14: the share over its rounds): read at that
    # horizon when the runs reach it, else only where the share curve flattened
    reach = (f"the paper's {PAPER_ROUNDS} rounds (Figs. 12-14 end at round {PAPER_ROUNDS})"
             if rounds >= PAPER_ROUNDS else None)
    conv = {t: figures.convergence({SHORT[t]: curves[t]}, "share", tolerance=tol)
            for t in PANELS}
    ta, tb = PANELS
    checks = [figures.within(f"(a) benign clients stop choosing malicious ones (last round "
                             f"share at most {tol:g})", a["last round share"], tol,
                             headline=True, converged=conv[ta], horizon=reach),
              figures.below("(b) less than 10% of the benign clients' collaborators are "
                            "malicious (mean over the rounds)", b["mean share over rounds"],
                            0.10, margin=tol, headline=True, converged=conv[tb],
                            horizon=reach),
              figures.below("(a) benign clients pick fewer malicious ones in the last round "
                            "than in Omega", a["last round share"] - a["Omega share"],
                            margin=tol, converged=conv[ta], horizon=reach)]
    measured = (f"malicious share of the benign clients' collaborators: (a) no GGC "
                f"{a['Omega share']:.3f} in Omega -> {a['last round share']:.3f} in the last "
                f"round; (b) GGC {b['Omega share']:.3f} -> {b['last round share']:.3f}, mean over "
                f"rounds {b['mean share over rounds']:.3f} (uniformly random: {random_share:.3f})")
    summary = pd.DataFrame([{"case": t, **s} for t, s in stat.items()])
    notes = [("Convergence of the share curves (last quarter of the rounds, tolerance "
              f"{tol:g}): " + "; ".join(f"{SHORT[t]}: {c.describe(scale=1.0)}"
                                        for t, c in conv.items()))]
    if args.scale != "full" and rounds < PAPER_ROUNDS:
        notes.append(f"{rounds} rounds instead of the paper's {PAPER_ROUNDS}: the curves show "
                     "the first rounds of the evolution the paper follows to round 98")
    return figures.Result(fig, measured, checks, {"summary": summary, **per_round},
                          panels=found, notes=notes)


if __name__ == "__main__":
    raise SystemExit(main())
