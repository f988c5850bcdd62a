"""
Building D-Cliques under label skew
===================================

D-Cliques groups 100 nodes, each holding one class of ten, into cliques whose label mix matches
the global one (Greedy Swap), makes each clique complete and joins the cliques sparsely. The
clique skew (how far a clique's label distribution is from the global one) goes to zero as
Greedy Swap proceeds.
"""

import matplotlib.pyplot as plt
import numpy as np

import topofl as tf

labels = np.eye(10)[np.arange(100) % 10]  # 100 nodes, one class each
t = tf.topologies.dcliques(labels, clique_size=10, inter="small_world", seed=0)
print(t)
print("cliques:", len(t.groups), " skew:", t.params["skew"],
      " spectral gap:", round(tf.spectral.spectral_gap(t), 4))

# %%
# One colour per clique; the black edges join the cliques (a small world over them).
fig = tf.plotting.dcliques_drawing(t, labels=list(np.argmax(labels, axis=1)))
plt.show()

# %%
# Greedy Swap from random cliques: the (min, mean, max) clique skew at each step.
res = tf.topologies.greedy_swap(labels, 10, steps=1000, seed=0)
fig, ax = plt.subplots(figsize=(6, 4))
for k, name in enumerate(("min", "mean", "max")):
    ax.plot(res.trace[:, k], label=name)
ax.set_xlabel("Greedy Swap step")
ax.set_ylabel("clique skew")
ax.legend()
plt.show()
