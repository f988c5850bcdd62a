"""D-Cliques Fig. 17: final clique skew, random cliques vs Greedy Swap, over 100 constructions.

Sec. IV-G-1 of the paper: 100 nodes with 2 shards each (McMahan et al.'s partition of the
training set), cliques of at most 10 nodes, 100 experiments; the final mean clique skew (eq. 3)
of random cliques and of Greedy Swap after 1000 steps, as histograms, for MNIST and CIFAR-10.

The construction only sees each node's label histogram, so the figure needs the class counts of
the paper's training sets, not the images: MNIST's 50k training examples are the 60k of the
official training set minus a 10k validation set with the class ratios of the test set
(Sec. IV-A), i.e. 5923 - 980, 6742 - 1135, ... = 4943, 5607, 4926, 5121, 4860, 4529, 4960, 5237,
4877, 4940 (unbalanced); CIFAR-10's are 5000 per class. Experiment ``s`` partitions with seed
``s`` and builds the cliques with seed ``s``; "random cliques" is the partition Greedy Swap starts
from (its 0 steps). The default and --full scales run the paper's setting (100 experiments of
1000 steps); --quick runs 3 experiments of 300 steps.

    python paper_figures/fig_dcliques_17.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from topofl import figures

#: Class counts of the paper's training sets (see the module docstring).
CLASS_COUNTS = {
    "MNIST": [4943, 5607, 4926, 5121, 4860, 4529, 4960, 5237, 4877, 4940],
    "CIFAR-10": [5000] * 10,
}
SETTING = {"n": 100, "shards_per_client": 2, "clique_size": 10}
EXPERIMENTS = {"quick": 3, "default": 100, "full": 100}
STEPS = {"quick": 300, "default": 1000, "full": 1000}
#: "Close to 0": below the skew of one shard of the 20 of a clique in the wrong class,
#: 2 x 250 / 5000 = 0.1.
CLOSE_TO_ZERO = 0.1


def skews(counts: list[int], experiments: int, steps: int) -> dict[str, np.ndarray]:
    """Final mean clique skew of random cliques and of Greedy Swap, one value per experiment."""
    import topofl as tf

    y = np.repeat(np.arange(len(counts)), counts)
    out: dict[str, list[float]] = {"random cliques": [], "Greedy Swap": []}
    for s in range(experiments):
        dist = tf.data.shards(y, SETTING["n"], SETTING["shards_per_client"], seed=s)
        res = tf.topologies.greedy_swap(dist.label_distributions, SETTING["clique_size"],
                                        steps=steps, seed=s)
        out["random cliques"].append(float(res.trace[0, 1]))
        out["Greedy Swap"].append(res.skew)
    return {k: np.asarray(v) for k, v in out.items()}


def summary(values: dict[str, np.ndarray]) -> Any:
    import pandas as pd

    return pd.DataFrame([
        {"cliques": k, "experiments": v.size, "mean skew": float(v.mean()),
         "median": float(np.median(v)), "min": float(v.min()), "max": float(v.max()),
         f"share < {CLOSE_TO_ZERO}": float((v < CLOSE_TO_ZERO).mean())}
        for k, v in values.items()])


def setting(steps: int, runs: int) -> list[tuple[str, str]]:
    """The setting of the constructions (shared with ``fig_dcliques_18.py``)."""
    return [("nodes", str(SETTING["n"])),
            ("partition", f"shards, {SETTING['shards_per_client']} per node (seed = "
             "experiment)"),
            ("class counts", "; ".join(f"{k}: {', '.join(map(str, v))}"
                                       for k, v in CLASS_COUNTS.items())),
            ("clique size", str(SETTING["clique_size"])),
            ("Greedy Swap steps", str(steps)),
            ("experiments", f"{runs} (seeds 0..{runs - 1})"),
            ("data", "label histograms only (no training)")]


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    import matplotlib.pyplot as plt
    import pandas as pd

    import topofl as tf

    runs, steps = EXPERIMENTS[args.scale], STEPS[args.scale]
    results = {name: skews(counts, runs, steps) for name, counts in CLASS_COUNTS.items()}
    pooled = np.concatenate([v for r in results.values() for v in r.values()])
    edges = np.linspace(0.0, float(pooled.max()) * 1.02, 26)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    numbers: dict[str, Any] = {}
    checks, parts = [], []
    for ax, (name, values) in zip(axes, results.items()):
        tf.plotting.histogram(values, bins=edges, ax=ax, title=f"{name}, {runs} experiments",
                              xlabel="final mean clique skew", ylabel="experiments",
                              legend=None)
        numbers[name] = summary(values)
        counts = {k: np.histogram(v, edges)[0] for k, v in values.items()}
        numbers[f"{name}: histogram counts"] = pd.DataFrame(
            {"bin": [f"[{a:.3f}, {b:.3f})" for a, b in zip(edges[:-1], edges[1:])],
             **{k: c.tolist() for k, c in counts.items()}})
        r, g = values["random cliques"], values["Greedy Swap"]
        checks += [figures.fact(f"{name}: every Greedy Swap experiment below every random one",
                                bool(g.max() < r.min()),
                                f"Greedy Swap max {g.max():.3f}, random min {r.min():.3f}",
                                headline=True),
                   figures.below(f"{name}: Greedy Swap's median skew close to 0",
                                 float(np.median(g)), CLOSE_TO_ZERO, headline=True)]
        parts.append(f"{name}: Greedy Swap median {np.median(g):.3f} (max {g.max():.3f}, "
                     f"{100 * (g < CLOSE_TO_ZERO).mean():.0f}% below {CLOSE_TO_ZERO}) vs random "
                     f"median {np.median(r):.3f} (min {r.min():.3f})")
    fig.suptitle(f"Final skew of 10 cliques of 10 nodes (100 nodes, 2 shards/node), "
                 f"Greedy Swap {steps} steps")
    fig.tight_layout()
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2,
               frameon=False)
    return figures.Result(fig, "; ".join(parts), checks, numbers, setting=setting(steps, runs),
                          dataset="MNIST and CIFAR-10 class counts", seeds=[])


if __name__ == "__main__":
    raise SystemExit(main())
