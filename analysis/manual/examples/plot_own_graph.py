"""
Your own graph, from networkx or PyTorch Geometric
==================================================

Any graph is a topology: a networkx graph on the nodes ``0..n-1`` becomes a ``Topology`` with
Metropolis weights (doubly stochastic), a PyTorch Geometric ``Data`` keeps its
``edge_weight`` as the mixing matrix, and ``topofl.run`` takes either as it is. Here a random
geometric graph (clients that talk to the clients within radio range) against the ring and a
random regular graph with as many edges: its spectrum, and D-SGD trained over it.
"""

import matplotlib.pyplot as plt
import networkx as nx

import topofl as tf

n = 32
G = nx.random_geometric_graph(n, radius=0.3, seed=0)  # nodes in the unit square
print("connected:", nx.is_connected(G))  # gossip needs a connected graph
geometric = tf.Topology.from_networkx(G, name="geometric")
degree = round(2 * G.number_of_edges() / n)
graphs = {
    "ring": tf.topologies.ring(n),
    "geometric (networkx)": geometric,
    f"random {degree}-regular": tf.topologies.random_regular(n, degree, seed=0),
}
data = geometric.to_pyg()  # edge_index (senders, receivers) and edge_weight = W
print(data)
print("round trip through PyG exact:", abs(tf.Topology.from_pyg(data).W - geometric.W).max() == 0)
for name, t in graphs.items():
    print(f"{name:22s} spectral gap {tf.spectral.spectral_gap(t):.4f}")

# %%
# The geometric graph as drawn at its nodes' positions, and the eigenvalue moduli of the three
# graphs: the geometric graph's local links mix faster than a ring, far slower than random
# links of the same number.
fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
nx.draw(G, pos=nx.get_node_attributes(G, "pos"), ax=axes[0], node_size=40,
        node_color="C1", edge_color="0.6")
axes[0].set_title("random geometric graph, 32 nodes")
tf.plotting.spectrum({name: tf.spectral.eigenvalues(t) for name, t in graphs.items()},
                     ax=axes[1])
fig.tight_layout()
plt.show()

# %%
# D-SGD over each (the networkx graph passed to ``topofl.run`` as it is): 32 clients with 2
# label shards each of the digits, logistic regression, 60 rounds.
common = dict(data="digits", n_clients=n, partition="shards", model="logistic", rounds=60,
              lr=0.1, batch_size=16, eval_every=10, seed=0)
runs = {"ring": tf.run("dsgd", topology="ring", **common).records,
        "geometric (networkx)": tf.run("dsgd", topology=G, **common).records,
        f"random {degree}-regular": tf.run("dsgd", topology=graphs[f"random {degree}-regular"],
                                           **common).records}
for name, rec in runs.items():
    print(f"{name:22s} final accuracy {rec.final('global_acc_mean'):.3f}")
fig = tf.plotting.convergence(runs, "global_acc")
plt.show()
