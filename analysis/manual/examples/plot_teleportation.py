"""
Teleportation: most nodes dropped each round
============================================

Teleportation (Takezawa and Stich, ICLR 2025, the ``teleport`` algorithm) keeps only ``k``
models for ``n`` nodes: each round ``k`` nodes drawn at random are active, the ``k`` models
*teleport* to them, train one step on their data and gossip over a ring of the ``k`` slots;
the other ``n - k`` nodes are dropped from the round and do nothing. Against D-SGD on a ring
of all 64 nodes, and D-SGD on that ring with the same share of its nodes dropped (offline at
random each round, ``availability``): 64 clients with 2 label shards each of the digits,
logistic regression, 100 rounds.
"""

import matplotlib.pyplot as plt

import topofl as tf

n = 64
common = dict(data="digits", n_clients=n, partition="shards", model="logistic",
              batch_size=16, lr=0.1, rounds=100, eval_every=10, seed=0)
runs = {f"Teleportation, k = {k}": tf.run("teleport", k=k, **common).records
        for k in (4, 8, 16)}
runs["D-SGD, ring of all 64"] = tf.run("dsgd", topology="ring", **common).records
runs["D-SGD, ring, 7/8 dropped"] = tf.run(
    "dsgd", topology="ring", availability={"model": "bernoulli", "offline": 7 / 8},
    **common).records
for name, rec in runs.items():
    print(f"{name:25s} accuracy {rec.final('global_acc_mean'):.3f}  "
          f"{rec.final('bytes') / 1e6:5.1f} MB sent")

# %%
# Accuracy of the models on the whole test set (Teleportation's ``k`` models; every client's
# model for D-SGD), mean over them. With 8 of 64 nodes active, Teleportation's few models
# meet a fresh mix of labels every round and learn far faster than the full ring, whose
# models see the other classes only as slowly as gossip carries them; dropping the same share
# of the ring's nodes at random all but stops it.
fig, ax = plt.subplots(figsize=(6.4, 4))
for name, rec in runs.items():
    rounds, acc = rec.series("global_acc_mean")
    ax.plot(rounds + 1, acc, marker="o", ms=3, label=name,
            linestyle="--" if name.startswith("D-SGD") else "-")
ax.set_xlabel("round")
ax.set_ylabel("accuracy on the whole test set")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
