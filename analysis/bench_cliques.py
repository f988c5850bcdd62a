"""Benchmark: Greedy Swap (D-Cliques, Fig. 4) and the whole ``dcliques`` construction.

Prints the wall-clock time of 1000 Greedy Swap steps for n = 100 and n = 1000 nodes, L = 10
classes, cliques of 10, on two label partitions of the paper:

* ``1 class/node``: node i holds only class i mod 10 (the extreme skew of Sec. IV-H);
* ``2 shards/node``: 60 000 labels (6 000 per class) sorted and cut into 2n shards, each node
  gets 2 shards at random (the MNIST partition of Sec. IV-A).

For n = 100 it also times a direct transcription of Fig. 4 (every candidate swap recomputes both
skews from scratch with :func:`topofl.topologies.skew`, as the paper's Python does) over 100 steps,
and the full :func:`topofl.topologies.dcliques` (Greedy Swap + inter-clique edges + Metropolis
weights) for each inter-clique topology.

Run: ``python analysis/bench_cliques.py`` (a few seconds).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from functools import partial

import numpy as np

import topofl as tf

STEPS = 1000
REPEATS = 5


def one_class_per_node(n: int, classes: int = 10) -> np.ndarray:
    return np.eye(classes)[np.arange(n) % classes]


def two_shards_per_node(n: int, seed: int, classes: int = 10, total: int = 60_000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    labels = np.sort(np.arange(total) % classes)
    shards = np.array_split(labels, 2 * n)
    order = rng.permutation(2 * n)
    counts = np.zeros((n, classes))
    for i in range(n):
        for s in order[2 * i : 2 * i + 2]:
            counts[i] += np.bincount(shards[s], minlength=classes)
    return counts


def timed(fn: Callable[[], object], repeats: int = REPEATS) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def naive_greedy_swap(labels: np.ndarray, clique_size: int, steps: int, seed: int) -> float:
    """Fig. 4 transcribed: all pairs in Python, both skews recomputed for every candidate."""
    rng = np.random.default_rng(seed)
    cliques = [list(c) for c in tf.topologies.random_cliques(len(labels), clique_size, seed=rng)]
    for _ in range(steps):
        a, b = rng.choice(len(cliques), 2, replace=False)
        c1, c2 = cliques[a], cliques[b]
        base = tf.topologies.skew(labels, c1) + tf.topologies.skew(labels, c2)
        swaps = []
        for i in c1:
            for j in c2:
                n1 = [v for v in c1 if v != i] + [j]
                n2 = [v for v in c2 if v != j] + [i]
                if tf.topologies.skew(labels, n1) + tf.topologies.skew(labels, n2) < base:
                    swaps.append((i, j))
        if swaps:
            i, j = swaps[rng.integers(len(swaps))]
            c1[c1.index(i)] = j
            c2[c2.index(j)] = i
    return float(np.mean(tf.topologies.clique_skews(labels, cliques)))


def main() -> None:
    print(f"Greedy Swap, {STEPS} steps, L = 10, clique_size = 10 (median of {REPEATS} runs)")
    print(f"{'n':>6} {'labels':>15} {'seconds':>9} {'swaps':>6} {'skew start':>11} {'skew end':>9}")
    for n in (100, 1000):
        for name, labels in (
            ("1 class/node", one_class_per_node(n)),
            ("2 shards/node", two_shards_per_node(n, seed=0)),
        ):
            sec, res = timed(partial(tf.topologies.greedy_swap, labels, 10, steps=STEPS, seed=0))
            assert isinstance(res, tf.topologies.GreedySwapResult)
            print(
                f"{n:>6} {name:>15} {sec:>9.3f} {res.num_swaps:>6} "
                f"{res.trace[0, 1]:>11.4f} {res.skew:>9.4f}"
            )

    labels = two_shards_per_node(100, seed=0)
    sec, _ = timed(lambda: naive_greedy_swap(labels, 10, 100, seed=0), repeats=1)
    print(
        f"\nFig. 4 transcribed (Python loops, skews from scratch), n = 100, 2 shards/node: "
        f"{sec:.2f} s per 100 steps, about {10 * sec:.0f} s per {STEPS} steps"
    )

    print(f"\nfull dcliques(...) with the default steps (auto_steps), 2 shards/node "
          f"(median of {REPEATS} runs)")
    print(f"{'n':>6} {'inter':>16} {'seconds':>9} {'edges/node':>11}")
    for n in (100, 1000):
        labels = two_shards_per_node(n, seed=0)
        for inter in tf.topologies.INTER_CLIQUE:
            sec, t = timed(partial(tf.topologies.dcliques, labels, 10, inter=inter, seed=0))
            assert isinstance(t, tf.Topology)
            print(f"{n:>6} {inter:>16} {sec:>9.3f} {t.edges_per_node:>11.2f}")


if __name__ == "__main__":
    main()
