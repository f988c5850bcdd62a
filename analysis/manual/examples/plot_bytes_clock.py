"""
What a round costs: bytes against the clock
===========================================

A denser graph mixes faster per round but sends more per round, and on a real network a
client's uplink is shared by the messages it sends. With a ``network`` (latency per link,
bytes per second of uplink, FLOP/s of compute) every run keeps a virtual clock beside its
ledger of bytes, so graphs can be compared on the axes that cost money and time: bytes sent
and simulated seconds. D-SGD, 32 clients with 2 label shards each of the digits, logistic
regression, 60 rounds; a slow 1 Mbit/s uplink.
"""

import matplotlib.pyplot as plt

import topofl as tf

network = {"latency": 0.05, "uplink": 1.25e5, "speed": 1e9}  # s, bytes/s, FLOP/s
common = dict(data="digits", n_clients=32, partition="shards", model="logistic", rounds=60,
              lr=0.1, batch_size=16, eval_every=5, seed=0, network=network)
graphs = {"ring": "ring", "exponential": "exponential", "random 8-regular":
          "random_regular:d=8", "complete": "complete"}
runs = {name: tf.run("dsgd", topology=spec, **common).records for name, spec in graphs.items()}
for name, rec in runs.items():
    seconds = rec.time_to(0.7, "global_acc_mean")  # None: never reached
    print(f"{name:17s} accuracy {rec.final('global_acc_mean'):.3f}  "
          f"{rec.final('bytes') / 1e6:6.1f} MB sent  {rec.final('sim_time'):5.1f} s simulated  "
          f"70 % {'never' if seconds is None else f'after {seconds:.1f} s'}")

# %%
# The same runs on three axes: rounds, megabytes sent by all clients, and simulated seconds.
# Per round the complete graph leads; per byte and per second, the sparse graphs that still
# mix well (the exponential and random regular ones) reach the same accuracy first, and the
# complete graph pays 31 messages a client a round through a shared uplink.
fig, axes = plt.subplots(1, 3, figsize=(10, 3.6), sharey=True)
for name, rec in runs.items():
    rounds, acc = rec.series("global_acc_mean")
    sent = rec.series("bytes")[1]
    clock = rec.series("sim_time")
    axes[0].plot(rounds + 1, acc, label=name)
    axes[1].plot(sent / 1e6, acc, label=name)
    axes[2].plot(clock[1][rounds], acc, label=name)  # sim_time is recorded every round
axes[0].set_xlabel("round")
axes[1].set_xlabel("MB sent (all clients)")
axes[2].set_xlabel("simulated seconds")
axes[0].set_ylabel("accuracy on the whole test set")
axes[2].legend(fontsize=8)
fig.tight_layout()
plt.show()
