"""
Planning a million-client run
=============================

Before a large run, ask the planner what it will need: the predicted peak memory by part
(the clients' parameters, gossip's scratch and mixing matrix, gradients and batches, the
data, evaluation, the graph's spectral summary, the records, the runtime), and the largest
number of clients that fits in a given memory. Nothing is trained: the plan builds the data
of a few clients and counts (``topofl plan CONFIG`` on the command line; with a probe, it
also times real rounds in a subprocess). Here D-SGD with logistic regression on a synthetic
Gaussian mixture (10 samples a client, 40 features), from a thousand to a million clients.
"""

import matplotlib.pyplot as plt
import numpy as np

from topofl.workflow.plan import make_plan


def config(n, topology="ring"):
    return dict(algorithm="dsgd", topology=topology, n_clients=n, rounds=200, seed=0,
                data=f"synthetic:n_samples={10 * n},n_test=10000,dim=40,num_classes=10,seed=0",
                partition="shards", partition_params={"shards_per_client": 2},
                model="logistic", lr=0.1, batch_size=8, eval_every=25, record_clients=False)


budget = 24 * 2**30  # plan for a 24 GiB machine
sizes = [10**3, 10**4, 10**5, 10**6]
plans = {n: make_plan(config(n), timed=False, probe=False, available=budget) for n in sizes}
print(plans[10**6].summary())

# %%
# What the peak is made of, as shares of it, with the total above each bar. At a thousand
# clients the fixed costs (the runtime, evaluation buffers, the spectral summary) are most
# of it; at a million, the clients' parameters and data are, and they grow linearly.
fig, ax = plt.subplots(figsize=(6.4, 4))
labels = [f"$10^{int(np.log10(n))}$" for n in sizes]
bottom = np.zeros(len(sizes))
for k, part in enumerate(plans[sizes[0]].parts):
    share = np.array([plans[n].parts[part] / plans[n].peak_bytes for n in sizes])
    if share.max() > 0:
        ax.bar(labels, 100 * share, bottom=bottom, label=part, color=plt.cm.tab10(k % 10))
        bottom += 100 * share
for x, n in enumerate(sizes):
    ax.text(x, 101, f"{plans[n].peak_bytes / 2**30:.2g} GiB", ha="center", va="bottom")
ax.set_ylim(0, 112)
ax.set_xlabel("clients")
ax.set_ylabel("share of the predicted peak (%)")
ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1, 0.5))
fig.tight_layout()
plt.show()

# %%
# The graph changes the bill too: its mixing matrix and gossip scratch grow with the
# neighbours a client has. At a million clients, and the largest number of clients each
# would fit in 24 GiB:
graphs = {"ring": "ring", "one-peer exponential": "one_peer_exponential",
          "exponential": "exponential"}
million = {name: make_plan(config(10**6, spec), timed=False, probe=False, available=budget)
           for name, spec in graphs.items()}
for name, plan in million.items():
    print(f"{name:21s} {plan.peak_bytes / 2**30:5.2f} GiB at 10^6 clients; "
          f"fits up to {plan.max_clients:,} clients in 24 GiB")
fig, ax = plt.subplots(figsize=(6.4, 2.8))
ax.barh(list(million), [p.peak_bytes / 2**30 for p in million.values()], color="C2")
ax.set_xlabel("predicted peak memory at 10^6 clients (GiB)")
fig.tight_layout()
plt.show()
