"""
A topology study: is graph A ahead of graph B?
==============================================

A sweep trains the same setup over several graphs and seeds; the study reads the folder of
records and answers two questions. *Is A ahead of B?* Runs that share a seed share their
data split and initialisation, so each pair of graphs is compared seed by seed, with a
paired interval and a one-sided test. *Which property of the graph predicts convergence?*
A rank correlation of every topology metric with every convergence metric. D-SGD, 32 clients
with 2 label shards each of the digits, logistic regression, 60 rounds; 4 graphs x 3 seeds,
written to a temporary folder.
"""

import tempfile

import matplotlib.pyplot as plt
import numpy as np

import topofl as tf

config = dict(algorithm="dsgd", data="digits", n_clients=32, partition="shards",
              model="logistic", rounds=60, lr=0.1, batch_size=16, eval_every=10,
              record_clients=False,
              sweep={"topology": ["ring", "torus:rows=4,cols=8", "exponential", "complete"],
                     "seed": [0, 1, 2]})
with tempfile.TemporaryDirectory() as folder:
    tf.sweep.run_sweep(config, folder, echo=lambda line: None)  # 12 runs, one stacked pass
    result = tf.study.study(folder, metric="global_acc_mean", target=0.6,
                            output=tf.study.Output(figures=False))

# %%
# The verdicts
# ------------
# One line per pair of graphs on the final accuracy (the whole test set, mean over clients):
# the mean seed-paired difference A - B in points with its 95 % interval, the leader's
# one-sided p-value and the verdict.
def name(condition):
    return condition.removeprefix("topology=")  # "topology=ring" -> "ring"


final = result.pairs[result.pairs["metric"] == "final"]
for row in final.itertuples():
    a, b = name(row.condition_a), name(row.condition_b)
    p = min(row.p_a_better, row.p_b_better)  # the leader's one-sided p-value
    print(f"{a:>20s} - {b:<20s} {100 * row.mean_diff:+6.1f} points "
          f"[{100 * row.ci_low:+.1f}, {100 * row.ci_high:+.1f}]  p = {p:.3f}  {row.verdict}")

fig, ax = plt.subplots(figsize=(7, 3.4))
labels = [f"{name(a)} - {name(b)}"
          for a, b in zip(final["condition_a"], final["condition_b"])]
y = np.arange(len(final))
ax.errorbar(100 * final["mean_diff"], y, fmt="o", capsize=3,
            xerr=[100 * (final["mean_diff"] - final["ci_low"]),
                  100 * (final["ci_high"] - final["mean_diff"])])
ax.axvline(0, color="grey", lw=0.8)
ax.set_yticks(y, labels, fontsize=8)
ax.set_xlabel("final accuracy, A - B (points, seed-paired, 95 % interval)")
fig.tight_layout()
plt.show()

# %%
# What predicts it
# ----------------
# Each graph's final accuracy (mean and spread over the seeds) against three of its
# properties. With four graphs a rank
# correlation cannot be decided (even a perfect one has p = 0.083), as the study's table
# says: an indication to test with more graphs.
table = result.correlations.query("convergence_metric == 'final'")
print(table[["topology_metric", "spearman", "p_value", "conclusion"]].head(6)
      .to_string(index=False))
conditions = result.conditions.assign(condition=result.conditions["condition"].map(name))
fig = tf.plotting.metric_scatter(conditions, ["spectral_gap", "edges_per_node",
                                              "neighborhood_skew"], "final",
                                 ylabel="final accuracy")
plt.show()
