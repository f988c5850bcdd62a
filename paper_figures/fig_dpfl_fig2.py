"""DPFL Figs. 2, 8-11 and 15: DPFL's collaboration graph without a budget and with B = 20, 10, 5.

One sweep (config ``dpfl_fig2``: CIFAR-10, 100 clients, budgets B_c = N (no budget), 0.2N,
0.1N, 0.05N) gives the paper's collaboration-graph figures. One row per budget: the candidate
graph Omega built by the pre-processing step (BGGC; the four of them are Appendix Fig. 15), then
the collaborators GGC chooses in the first and the last round against Omega (red: chosen in
that round; light blue: in Omega but not chosen; dark diagonal: the client itself), as
adjacency matrices with
rows and columns ordered by the clients' dominant label (a strip beside each panel colours the
clients by dominant label; Fig. 2 shows B = 10 and 5, Appendix Figs. 8-11 the four budgets).

    python paper_figures/fig_dpfl_fig2.py [--quick | --full]
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from topofl import figures


def label(config: Mapping[str, Any]) -> str:
    from topofl.algorithms.dpfl import resolve_budget

    n = int(config["n_clients"])
    b = resolve_budget(config["budget"], n)
    return "no budget" if b is None or b >= n - 1 else f"B = {b}"


def main(argv: list[str] | None = None) -> int:
    args = figures.parse_args(__doc__, "dpfl_fig2", argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd
    from matplotlib.ticker import MaxNLocator

    import topofl as tf
    from topofl.algorithms.dpfl import resolve_budget

    found = figures.panels(args, {"budgets": "dpfl_fig2"}, label)["budgets"]
    runs = found.runs
    first = next(iter(found.configs.values()))
    data = tf.data.federate(first["data"], first["partition"], first["n_clients"],
                            seed=first["seed"], **dict(first["partition_params"]))
    dom = data.label_distributions.argmax(axis=1)
    order = np.argsort(dom, kind="stable")
    same = dom[:, None] == dom[None, :]  # same[k, j]: clients k and j share their dominant label
    n = int(first["n_clients"])

    last = int(next(iter(runs.values())).series("realized_density")[0][-1])
    shown = [0, last] if last > 0 else [0]  # the first GGC round and the last one
    cols = 1 + len(shown)
    fig, axes = plt.subplots(len(runs), cols, figsize=(2.2 * cols, 2.05 * len(runs)),
                             squeeze=False)
    cmap = plt.get_cmap("tab10")
    rows = []
    for row, (name, rec) in zip(axes, runs.items()):
        tf.plotting.selection_heatmap(rec, shown, order=order.tolist(), n=n, axes=row,
                                      legend=False)
        row[0].set_ylabel(name, fontsize=11, labelpad=14)
        for ax in row:  # the clients (nodes) coloured by dominant label, beside the rows
            strip = ax.inset_axes((-0.06, 0.0, 0.04, 1.0))
            strip.imshow(dom[order][:, None], cmap=cmap, vmin=0, vmax=9, aspect="auto",
                         interpolation="nearest")
            strip.set_axis_off()
            ax.tick_params(axis="y", pad=9)
            ax.xaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))
        omega = tf.plotting.adjacency_matrix(rec, graph="omega", n=n) > 0
        chosen = tf.plotting.adjacency_matrix(rec, last, n=n) > 0
        off = ~np.eye(n, dtype=bool)
        recip = {k: float((m & m.T).sum() / max(1, m.sum())) for k, m in
                 (("omega", omega), ("last", chosen))}
        _, recorded_recip = rec.series("realized_reciprocity")
        rows.append({
            "budget": name,
            "B_c (resolved)": resolve_budget(found.configs[name]["budget"], n),
            "Omega per client": float(omega.sum(1).mean()),
            "Omega sparsity": 1.0 - float(omega.sum() / off.sum()),
            f"round {last} per client": float(chosen.sum(1).mean()),
            f"round {last} sparsity": 1.0 - float(chosen.sum() / off.sum()),
            "Omega symmetry": recip["omega"],
            f"round {last} symmetry": float(recorded_recip[-1]),
            "mean symmetry over rounds": float(np.mean(recorded_recip)),
            "same label, Omega": float(same[omega].mean()) if omega.any() else float("nan"),
            f"same label, round {last}": (float(same[chosen].mean()) if chosen.any()
                                          else float("nan")),
            "same label, random": float(same[off].mean()),
            "final test acc (mean)": rec.final("test_acc_mean"),
        })
        assert abs(recip["last"] - float(recorded_recip[-1])) < 1e-9
    fig.suptitle("DPFL collaboration graphs (receiver rows, sender columns), clients\n"
                 "ordered by dominant label (strip: one colour per label). Red: chosen in\n"
                 "that round (first column: Omega); light blue: in Omega, not chosen",
                 fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.95))

    table = pd.DataFrame(rows)
    t = table.set_index("budget")
    denser = bool((t["Omega per client"] > t[f"round {last} per client"]).all())
    sym = t["mean symmetry over rounds"].to_numpy()  # rows in the sweep's order: B falls
    sym_falls = bool((np.diff(sym) <= 0).all())
    sym_level = bool(((sym >= 0.7) & (sym <= 0.95)).all())  # the paper's 80-88%, loosely
    holds = (True if denser and sym_falls and sym_level
             else None if denser or sym_falls else False)
    per = ", ".join(f"{b}: {t.loc[b, 'Omega per client']:.1f} -> "
                    f"{t.loc[b, f'round {last} per client']:.1f}" for b in t.index)
    measured = (f"collaborators per client, Omega -> round {last}: {per}; mean symmetry over "
                "rounds " + ", ".join(f"{v:.2f}" for v in sym)
                + f" (same order); collaborators sharing the client's dominant label in round "
                f"{last}: " + ", ".join(f"{t.loc[b, f'same label, round {last}']:.2f}"
                                        for b in t.index)
                + f" vs {t['same label, random'].iloc[0]:.2f} at random")
    notes = list(found.notes)
    if args.scale != "full":
        notes.append(f"{last + 1} rounds instead of the paper's 98 (a shared CPU): the paper's "
                     "panels run to round 80 and 99, ours show the first rounds")
    notes += [
        "sparsity = 1 - edges / (N (N - 1)) of the graph without its diagonal; the paper's "
        "80% (B = 10) cannot be that fraction (at most 10 of 99 per row gives >= 90%), so only "
        "the direction (denser Omega than the later rounds) compares",
        "symmetry = the fraction of edges j -> k whose reverse k -> j is present (the engine's "
        "realized_reciprocity for the rounds); the verdict compares its mean over the rounds "
        "across budgets",
        "no budget is run as budget = 1.0 (B_c = N, more than the N - 1 other clients: the "
        "same greedy decisions as B_c = inf; a TOML config cannot hold inf or null)",
        "the figures' split is not named in the paper; Dir(0.1) as in its Section 4.4 (Fig. 3)",
    ]
    if not sym_level:
        notes.append(f"the symmetry ({sym.min():.2f} to {sym.max():.2f}) is not near the "
                     "paper's 80-88%, hence 'partly': Omega is denser than the later rounds "
                     "and the symmetry falls with the budget, as in the paper, but the graph is "
                     "far less symmetric")
    if last + 1 < 60:
        notes.append("the paper's 'from round 60 on the graph barely changes' is not tested: "
                     f"the run stops after {last + 1} rounds")
    if not denser:
        notes.append("Omega is not denser than the last round for every budget")
    if not sym_falls:
        notes.append("the mean symmetry over rounds does not fall monotonically as the budget "
                     "lowers")
    png = figures.write(
        args, fig, title="DPFL Figs. 2, 8-11, 15: the learned collaboration graph and budgets",
        setting=found.setting, numbers=table,
        claim=("the initial collaboration graph Omega is denser than the collaborators used in "
               "later rounds (B = 10: sparsity 80% initially, 88% at round 99; B = 5: 95% -> "
               "96%); the graph is 80-88% symmetric, less as the budget lowers; from round 60 "
               "on it barely changes (Figs. 2, 8-11, 15; Appendix G.4)"),
        measured=measured, holds=holds, notes=notes, dataset=str(first["data"]),
    )
    print(png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
