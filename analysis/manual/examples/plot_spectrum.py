"""
Spectra of three graphs
=======================

placeholder
"""

import matplotlib.pyplot as plt

import topofl as tf

ring = tf.topologies.ring(32)
fig, ax = plt.subplots()
ax.plot(sorted(tf.spectral.eigenvalues(ring).real))
plt.show()
