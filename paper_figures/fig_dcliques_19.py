"""D-Cliques Fig. 19: convergence of D-Cliques on random cliques vs cliques from Greedy Swap.

Sec. IV-G-2 of the paper: 100 nodes with 2 shards each, D-Cliques with 10 cliques of 10 nodes
and a fully-connected inter-clique topology, D-SGD with Clique Averaging; the cliques are random
(Greedy Swap with 0 steps) or optimised by Greedy Swap for 1000 steps. Left: logistic regression
on MNIST (lr 0.1, batch 128); right: GN-LeNet on CIFAR-10 (lr 0.002, batch 20, momentum 0.9).
Bold lines: average test accuracy of the nodes on the global test set; thin lines: the minimum
and maximum node. Configs: ``configs/dcliques_19_mnist.toml``, ``configs/dcliques_19_cifar10.toml``.

    python paper_figures/fig_dcliques_19.py [--quick | --full]
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from topofl import figures

PANELS = {"MNIST": "dcliques_19_mnist", "CIFAR-10": "dcliques_19_cifar10"}


def label(spec: str) -> str:
    """Curve label of a D-Cliques topology spec: random cliques or Greedy Swap."""
    steps = int(spec.rsplit("steps=", 1)[1].split(",")[0])
    return "random cliques" if steps == 0 else f"Greedy Swap ({steps} steps)"


def spread(rec: Any, metric: str = "global_acc") -> float:
    """Mean over evaluations of the gap between the best and the worst node."""
    _, lo = rec.series(f"{metric}_min")
    _, hi = rec.series(f"{metric}_max")
    return float(np.mean(hi - lo))


def main(argv: list[str] | None = None) -> int:
    args = figures.parse_args(__doc__, "dcliques_19", argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import topofl as tf

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    settings, numbers, notes, parts, verdicts = {}, {}, [], [], []
    data_used, trained = [], 0.0
    for ax, (title, name) in zip(axes, PANELS.items()):
        cfg = figures.load_config(name, args.scale)
        notes += [n for n in cfg["_notes"] if n not in notes]
        data_used.append(str(cfg["data"]))
        rec = figures.sweep(cfg, args)
        trained += sum(float(rec.series("wall_time", run=r)[1][-1]) for r in rec.runs)
        runs = {label(rec.configs[r]["topology"]): rec.for_run(r) for r in rec.runs}
        epochs = {label(rec.configs[r]["topology"]): figures.epochs_per_round(rec.configs[r])
                  for r in rec.runs}
        tf.plotting.convergence(runs, "global_acc", ax=ax, title=f"{title} ({cfg['data']})",
                                band="lines", epochs=epochs, legend=None,
                                ylabel="test accuracy (global test set)")
        settings[title] = figures.setting(rec)
        table = figures.curve_table(runs, "global_acc", epochs)
        table["mean spread (max - min)"] = [spread(runs[c]) for c in table["curve"]]
        numbers[title] = table
        rows = {c: row for c, row in zip(table["curve"], table.to_dict("records"))}
        rnd = rows["random cliques"]
        gs = next(v for k, v in rows.items() if k != "random cliques")
        faster = gs["mean over rounds"] > rnd["mean over rounds"]
        tighter = gs["mean spread (max - min)"] < rnd["mean spread (max - min)"]
        verdicts.append(faster and tighter)
        parts.append(
            f"{title}: mean accuracy over the run {gs['mean over rounds']:.3f} (Greedy Swap) vs "
            f"{rnd['mean over rounds']:.3f} (random), final {gs['final global_acc']:.3f} vs "
            f"{rnd['final global_acc']:.3f}; node spread {gs['mean spread (max - min)']:.3f} vs "
            f"{rnd['mean spread (max - min)']:.3f}")
    fig.suptitle("D-Cliques (fully connected), 100 nodes, 2 shards/node, Clique Averaging")
    fig.tight_layout()
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2,
               frameon=False)
    holds: bool | None = all(verdicts) if all(verdicts) or not any(verdicts) else None
    if not all(verdicts):
        notes.append("At the CPU scale the runs are short (the default stops at 100 epochs on "
                     "MNIST's stand-in and 30 on CIFAR-10's) and each node holds about 14 "
                     "digits: the gap between random and optimised cliques has less room to "
                     "show than with the paper's 500 examples per node and 100 epochs.")
    notes.append(f"The four runs trained for {trained:.0f} s in all on the machine that made "
                 "them (wall time in the records; a shared 2-core CPU for the default scale), "
                 "most of it GN-LeNet; a rerun with the cache in place only plots.")
    png = figures.write(
        args, fig, title="D-Cliques Fig. 19: Greedy Swap cliques converge faster than random",
        setting=settings, numbers=numbers,
        claim=("with 10 cliques of 10 nodes (100 nodes), cliques built by Greedy Swap (1000 "
               "steps) converge significantly faster than random cliques, with a dramatically "
               "lower variance between nodes, on both MNIST and CIFAR-10"),
        measured="; ".join(parts), holds=holds, notes=notes,
        dataset=" / ".join(dict.fromkeys(data_used)),
    )
    print(png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
