"""
Asynchronous vs synchronous gossip under stragglers
===================================================

In synchronous D-SGD every round waits for the slowest client. AD-PSGD (Lian et al. 2018,
``adpsgd``) lets each client run at its own speed: client ``i`` computes a gradient in
``durations[i]`` time units, then averages with one random neighbour, while the others go on.
With the heavy-tailed compute times of a real fleet (a Pareto law: most clients take 1-2
units, a few take far longer), the asynchronous run learns in the time the synchronous one
spends waiting. 16 clients on a random 4-regular graph, 2 label shards each of the digits,
logistic regression.
"""

import matplotlib.pyplot as plt
import numpy as np

import topofl as tf
from topofl.engine.event_time import heavy_tailed_durations

durations = heavy_tailed_durations(16, seed=0)  # time units per local computation
print("compute durations:", np.round(durations, 1))
common = dict(topology="random_regular:d=4", data="digits", n_clients=16,
              partition="shards", model="logistic", batch_size=16, lr=0.1, seed=0)

# one round of the asynchronous run is a window of 1 time unit (the fastest client's
# duration: the windows then give exactly the event-by-event run)
asyn = tf.run("adpsgd", durations=durations, window=1.0, rounds=150, eval_every=10,
              **common).records
sync = tf.run("dsgd", rounds=40, eval_every=2, **common).records

t_async, _ = asyn.series("event_time")
rounds, acc_async = asyn.series("global_acc_mean")
time_async = t_async[rounds]  # the virtual time at each evaluation
sync_rounds, acc_sync = sync.series("global_acc_mean")
time_sync = (sync_rounds + 1) * max(durations)  # each round waits for the slowest client
print(f"asynchronous: {acc_async[-1]:.3f} at time {time_async[-1]:.0f}")
print(f"synchronous:  {acc_sync[-1]:.3f} at time {time_sync[-1]:.0f}")

# %%
# Each client's compute time: one straggler is 57 times slower than the fastest clients.
fig, ax = plt.subplots(figsize=(6.4, 2.8))
ax.bar(range(16), durations, color="C7")
ax.set_yscale("log")
ax.set_xlabel("client")
ax.set_ylabel("time units per gradient")
fig.tight_layout()
plt.show()

# %%
# Accuracy on the whole test set (mean over clients) against virtual time. The synchronous
# run needs about 15 times as long to reach what the asynchronous run reached in 150 units.
fig, ax = plt.subplots(figsize=(6.4, 4))
ax.semilogx(time_async, acc_async, "o-", ms=3, label="asynchronous (AD-PSGD)")
ax.semilogx(time_sync, acc_sync, "s-", ms=3, label="synchronous (D-SGD)")
ax.set_xlabel("virtual time (time units)")
ax.set_ylabel("accuracy on the whole test set")
ax.legend()
fig.tight_layout()
plt.show()
