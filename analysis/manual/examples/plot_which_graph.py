"""
Which graph for my n and my label skew?
=======================================

Two numbers decide most of the choice. How fast gossip averages on the graph (its spectral
gap: the larger, the fewer rounds to agree) and, when clients hold different classes, how far
the label mix a node averages over is from the global one (the neighbourhood skew: 0 when every
neighbourhood holds every class in its global share). Both are read from the graph alone, in
a fraction of a second, before any training.
"""

import matplotlib.pyplot as plt
import numpy as np

import topofl as tf

sizes = [16, 36, 64, 100, 144, 256]
families = {
    "ring (2 neighbours)": lambda n: tf.topologies.ring(n),
    "torus (4)": lambda n: tf.topologies.torus(int(n**0.5), int(n**0.5)),
    "random 4-regular (4)": lambda n: tf.topologies.random_regular(n, 4, seed=0),
    "exponential (log2 n)": lambda n: tf.topologies.exponential(n),
}
gaps = {name: [tf.spectral.spectral_gap(make(n)) for n in sizes]
        for name, make in families.items()}
for name, g in gaps.items():
    print(f"{name:22s} gap at n=16: {g[0]:.3f}   at n=256: {g[-1]:.5f}")

# %%
# The spectral gap against the number of nodes: the ring's falls as ``1/n^2``, the torus's
# as ``1/n``, while the random regular and exponential graphs keep a gap that barely moves.
# Pick a ring only for a few nodes.
fig, ax = plt.subplots(figsize=(6.4, 4))
for name, g in gaps.items():
    ax.loglog(sizes, g, "o-", label=name)
ax.set_xlabel("number of nodes n")
ax.set_ylabel("spectral gap  1 - max |λ_k|, k ≥ 2")
ax.legend()
fig.tight_layout()
plt.show()

# %%
# Under label skew
# ----------------
# 100 nodes, each holding a single class of ten. The neighbourhood skew is the mean L1
# distance between what a node averages in one gossip step and the global label mix. A
# well-mixing graph still leaves every neighbourhood skewed; D-Cliques builds its cliques so
# that each holds every class (their clique skew is 0) and has the least skewed
# neighbourhoods: half the skew of a random graph with as many neighbours, at half its gap.
labels = np.eye(10)[np.arange(100) % 10]
graphs = {
    "ring": tf.topologies.ring(100),
    "torus 10x10": tf.topologies.torus(10, 10),
    "random 12-regular": tf.topologies.random_regular(100, 12, seed=0),
    "exponential": tf.topologies.exponential(100),
    "D-Cliques": tf.topologies.dcliques(labels, clique_size=10, inter="small_world", seed=0),
}
print("D-Cliques' clique skew:", graphs["D-Cliques"].params["skew"])
skew = {name: tf.spectral.neighborhood_skew(g, labels) for name, g in graphs.items()}
gap = {name: tf.spectral.spectral_gap(g) for name, g in graphs.items()}
neighbours = {name: (g.W.nnz - 100) / 100 for name, g in graphs.items()}  # off-diagonal
for name in graphs:
    print(f"{name:17s} skew {skew[name]:.3f}  gap {gap[name]:.4f}  "
          f"neighbours {neighbours[name]:.1f}")

fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
names = list(graphs)
axes[0].barh(names, [skew[k] for k in names], color="C1")
axes[0].set_xlabel("neighbourhood skew (L1, lower is better)")
axes[1].barh(names, [gap[k] for k in names], color="C0")
axes[1].set_xlabel("spectral gap (higher is better)")
axes[1].set_yticklabels([])
fig.tight_layout()
plt.show()
