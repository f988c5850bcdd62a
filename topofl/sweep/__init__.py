"""Sweeps: the Cartesian product of a config's ``[sweep]`` table, one records file per run.

A sweep config is a run config (:mod:`topofl.config`) with a ``[sweep]`` table whose keys map
to lists; the runs are every combination, in the order of the table (the last key varies
fastest)::

    algorithm = "dsgd"
    data = "digits"
    n_clients = 100
    rounds = 200
    lr = 0.1

    [sweep]
    topology = ["ring", "torus", "dcliques:clique_size=10,inter=ring", "complete"]
    seed = [0, 1]

Each run is written to ``OUT/<name>.jsonl`` where ``name`` (also its run id) is built from the
keys that vary (``topology=ring__seed=0``); a checkpoint ``OUT/<name>.ckpt`` beside it lets an
interrupted run resume, and ``OUT/<name>.done`` marks a finished one. Running the sweep again
skips finished runs, resumes interrupted ones from their checkpoint and starts the rest. A run
holds an advisory lock (``OUT/<name>.lock``, POSIX ``flock``) while it executes: a second sweep
over the same folder at the same time leaves that run alone (status ``"busy"``) instead of
writing the same files.
``shard=(i, k)`` runs the i-th of k disjoint slices (round-robin: runs ``i-1, i-1+k, ...``), so
``k`` machines given ``1/k .. k/k`` run every run exactly once; ``jobs=N`` runs N at once in
worker processes. Every run uses ``threads`` torch threads (default 1) whatever ``jobs`` is:
float32 sums round by the thread count, so the same seed gives the same numbers with any
``jobs`` (the count is in each run's provenance, ``torch_threads``). Every process imports
torch once and runs its runs in-process.

Examples
--------
>>> cfg = {"rounds": 5, "sweep": {"topology": ["ring", "dcliques:clique_size=5"],
...                               "seed": [0, 1], "lr": [0.1]}}
>>> for r in tf.sweep.plan(cfg):
...     print(r.name)
topology=ring__seed=0
topology=ring__seed=1
topology=dcliques-clique_size=5__seed=0
topology=dcliques-clique_size=5__seed=1
>>> [r.name for r in tf.sweep.select(tf.sweep.plan(cfg), (2, 2))]
['topology=ring__seed=1', 'topology=dcliques-clique_size=5__seed=1']
"""

from topofl.sweep._execution import Outcome
from topofl.sweep._planning import SweepRun, parse_shard, plan, run_name, select
from topofl.sweep._resumption import RunFiles, conflict, discard, run_files, set_aside
from topofl.sweep._running import SweepInterrupted, run_sweep

__all__ = ["SweepRun", "Outcome", "SweepInterrupted", "RunFiles", "plan", "select",
           "parse_shard", "run_name", "run_sweep", "run_files", "conflict", "discard",
           "set_aside"]
