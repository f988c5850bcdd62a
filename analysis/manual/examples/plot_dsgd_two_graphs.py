"""
D-SGD on a ring and on D-Cliques
================================

A small run of the main experiment (``topofl demo`` runs it at 100 clients): 40 clients, each
holding 2 shards of the digits data (so most see 2 classes of 10), train a logistic regression
with D-SGD for 40 rounds, gossiping over a ring or over D-Cliques. Under this label skew a
ring's client learns the other classes only as slowly as gossip carries them around the ring;
each of D-Cliques' cliques holds every class.
"""

import matplotlib.pyplot as plt

import topofl as tf

common = dict(data="digits", n_clients=40, partition="shards", model="logistic", rounds=40,
              lr=0.1, batch_size=16, eval_every=5, seed=0)
runs = {
    "ring": tf.run("dsgd", topology="ring", **common).records,
    "d-cliques": tf.run("dsgd", topology="dcliques:clique_size=10,inter=small_world",
                        **common).records,
}
for name, rec in runs.items():
    print(f"{name:10s} final accuracy on the whole test set "
          f"{rec.final('global_acc_mean'):.3f}")

# %%
# Accuracy of every client's model on the whole test set: the mean over clients, with the
# band from the worst to the best client.
fig = tf.plotting.convergence(runs, "global_acc")
plt.show()
