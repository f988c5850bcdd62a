"""
Spectra of four graphs of the same size
=======================================

How fast gossip averages on a graph is read from the eigenvalues of its mixing matrix ``W``:
the disagreement between nodes shrinks by about the second largest eigenvalue modulus per
round, and the spectral gap is one minus it. Four graphs on 64 nodes, each with Metropolis
weights: the ring (2 neighbours each), the 8 x 8 torus and a random 4-regular graph (4 each),
and the exponential graph (6 out-neighbours each, directed).
"""

import matplotlib.pyplot as plt

import topofl as tf

graphs = {
    "ring": tf.topologies.ring(64),
    "torus 8x8": tf.topologies.torus(8, 8),
    "random 4-regular": tf.topologies.random_regular(64, 4, seed=0),
    "exponential": tf.topologies.exponential(64),
}
for name, g in graphs.items():
    print(f"{name:17s} spectral gap {tf.spectral.spectral_gap(g):.4f}")

# %%
# The sorted eigenvalue moduli: everything below the Perron root 1 is what gossip removes,
# round after round. The ring's moduli stay close to 1, which is why it mixes slowly.
eigenvalues = {name: tf.spectral.eigenvalues(g) for name, g in graphs.items()}
fig = tf.plotting.spectrum(eigenvalues)
plt.show()

# %%
# The same ranking, seen as gossip: the relative disagreement of random vectors after ``t``
# rounds of ``x <- W x``.
fig, ax = plt.subplots(figsize=(6, 4))
for name, g in graphs.items():
    ax.semilogy(tf.spectral.disagreement(g, 60), label=name)
ax.set_xlabel("round")
ax.set_ylabel("relative disagreement")
ax.legend()
plt.show()
