"""
Time-varying graphs: exact averaging in a few rounds
====================================================

A time-varying graph gossips over a different sparse graph each round. The one-peer and
k-peer exponential graphs (Ying et al. 2021) send one or ``k`` messages a node per round; the
Base-(k+1) graph (Takezawa et al. 2023) and the null-cascade graph reach the *exact* average
after a few rounds for any ``n``, not only powers of 2; random matchings and the
(k+1)-partite random match average random pairs or groups. Here ``n = 30``, a size where the
exponential graphs are not exact.
"""

import matplotlib.pyplot as plt
import numpy as np

import topofl as tf

n = 30
families = {
    "one-peer exponential": tf.topologies.one_peer_exponential(n),
    "2-peer exponential": tf.topologies.k_peer_exponential(n, 2),
    "Base-3 (k=2)": tf.topologies.base_graph(n, 2),
    "null-cascade (k=2)": tf.topologies.null_cascade(n, 2),
    "random matching": tf.topologies.random_matching(n, seed=0),
    "3-partite match": tf.topologies.partite_match(n, 2, seed=0),
}
for name, tv in families.items():
    exact = tf.spectral.finite_time_consensus(tv, 40)
    print(f"{name:21s} period {tv.period}  exact average after "
          f"{'never (40 rounds tried)' if exact is None else f'{exact} rounds'}")

# %%
# Consensus
# ---------
# The relative disagreement of random vectors after ``t`` rounds of ``x <- W(t) x``. The
# finite-time families fall to rounding error (drawn at 1e-16) after their period; the
# exponential graphs and the random schedules only contract geometrically.
fig, ax = plt.subplots(figsize=(6.4, 4))
for name, tv in families.items():
    d = tf.spectral.disagreement(tv, 20)
    ax.semilogy(np.maximum(d, 1e-16), "o-", ms=3, label=name)
ax.set_xlabel("round t")
ax.set_ylabel("relative disagreement")
ax.set_ylim(1e-17, 2)
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# Spectra of one period
# ---------------------
# The eigenvalue moduli of the product of one period's mixing matrices, ``W(p-1) ... W(0)``:
# an exact family's product is the averaging matrix ``J`` (one modulus 1, the others 0); what
# the others leave after a period is their largest modulus below 1.
fig, ax = plt.subplots(figsize=(6.4, 4))
for name, tv in families.items():
    if tv.period is None:
        continue  # a random schedule has no period
    P = tf.spectral.mixing_product(tv, 0, tv.period)
    moduli = np.sort(np.abs(np.linalg.eigvals(P)))[::-1]
    ax.plot(moduli, "o-", ms=3, label=f"{name} (period {tv.period})")
    print(f"{name:21s} one period misses the average by "
          f"{tf.spectral.period_consensus_error(tv):.3g}")
ax.set_xlabel("index k")
ax.set_ylabel("|λ_k| of one period's product")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
