"""
Stacking a sweep: many runs, one batched pass
=============================================

The engine's batch dimension is clients, and the clients of several runs can share it: a
sweep's runs that share the algorithm, the model and the round settings run *stacked*, their
clients side by side in one buffer with block-diagonal gossip, each run with its own data,
seeds and records. The records are those of the runs one by one. Here 4 graphs x 2 seeds of
D-SGD on 32 clients (digits, logistic regression, 40 rounds), run both ways into temporary
folders.
"""

import tempfile
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import topofl as tf

config = dict(algorithm="dsgd", data="digits", n_clients=32, partition="shards",
              model="logistic", rounds=40, lr=0.1, batch_size=16, eval_every=10,
              record_clients=False,
              sweep={"topology": ["ring", "torus:rows=4,cols=8", "exponential", "complete"],
                     "seed": [0, 1]})
# load the data and warm up once, so that neither timing below pays for it
tf.run("dsgd", topology="ring", data="digits", n_clients=32, model="logistic", rounds=1)
seconds, finals = {}, {}
with tempfile.TemporaryDirectory() as tmp:
    for stack in (False, True):
        folder = Path(tmp) / ("stacked" if stack else "one_by_one")
        start = time.perf_counter()
        tf.sweep.run_sweep(config, folder, stack=stack, echo=lambda line: None)
        seconds[stack] = time.perf_counter() - start
        finals[stack] = {p.stem: tf.records.load(p).final("global_acc_mean")
                         for p in sorted(folder.glob("*.jsonl"))}
print(f"8 runs stacked: {seconds[True]:.1f} s, one by one: {seconds[False]:.1f} s (wall clock)")
runs = list(finals[True])
gap = max(abs(finals[True][r] - finals[False][r]) for r in runs)
print(f"largest difference of a final accuracy between the two: {gap:.2g}")

# %%
# Each run's final accuracy, stacked against alone: the same numbers (float32 within
# rounding), for a fraction of the time.
fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), gridspec_kw={"width_ratios": [2, 1]})
y = np.arange(len(runs))
axes[0].barh(y - 0.2, [finals[True][r] for r in runs], 0.4, label="stacked")
axes[0].barh(y + 0.2, [finals[False][r] for r in runs], 0.4, label="one by one")
axes[0].set_yticks(y, [r.replace("topology=", "").replace("__", ", ") for r in runs],
                   fontsize=8)
axes[0].set_xlabel("final accuracy (whole test set)")
axes[0].legend(fontsize=8)
axes[1].bar(["stacked", "one by one"], [seconds[True], seconds[False]], color=["C0", "C1"])
axes[1].set_ylabel("seconds (wall clock), 8 runs")
fig.tight_layout()
plt.show()
