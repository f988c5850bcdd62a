"""DFedPGP's runs stacked (one batched pass) vs one by one: the CPU of three seeds.

Three DFedPGP runs (seeds 0, 1, 2: each its own Dirichlet split, directed push graph and
model) run as one stacked pass (:func:`topofl.engine.stack.run_stacked`) and one by one
(:func:`topofl.engine.run`), in this process, without files (records in memory), alternating,
``--repeat`` times; the ratio is the median of the repetitions' ratios. Their epochs take
different numbers of local steps in each run (a Dirichlet split per seed), so a phase of the
stack lasts its longest run's: the table says how many steps that adds.

Times are the CPU time of this process (``time.process_time``: every thread of it, the
stack's background writes included; a shared machine's other processes do not count), with
one torch thread; wall-clock seconds beside them. Writes ``analysis/bench_stack_personal.md``.

Usage: ``python analysis/bench_stack_personal.py [--repeat 3] [--rounds 20]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

import topofl as tf
from topofl.engine.local import steps_per_client
from topofl.engine.stack import Member, run_stacked, stack_problem
from topofl.tools.bench import loadavg

SEEDS = (0, 1, 2)
#: digits (1,797 images of 8x8), Dirichlet 0.5, an MLP of 64 hidden units, batch 16, one epoch
#: on the body and half an epoch on the head, 2 random out-neighbours a round
DIGITS = {"data": "digits", "partition": {"alpha": 0.5}, "hidden": (64,), "batch": 16,
          "epochs": (1.0, 0.5), "k": 2, "config": {"eval_every": 1}}
#: the stand-in of DFedPGP's Table 1 column (paper_figures/configs/dfedpgp_table1.toml):
#: MNIST-1D, 100 clients, Dirichlet 0.3, MLP 64, batch 50, 5 + 1 epochs, 10 out-neighbours
FIGURE = {"data": "mnist1d:n_samples=20000,n_test=20000,seed=0",
          "partition": {"alpha": 0.3, "min_size": 50}, "hidden": (64,), "batch": 50,
          "epochs": (5.0, 1.0), "k": 10,
          "config": {"eval_every": 2, "eval_global": False, "record_clients": False}}


def _members(case: dict[str, Any], n: int, rounds: int) -> list[Member]:
    out = []
    for s in SEEDS:
        data = tf.data.federate(case["data"], "dirichlet", n, seed=s, **case["partition"])
        config = tf.engine.RunConfig(rounds=rounds, seed=s, batch_size=case["batch"],
                                     spectral=False, **case["config"])
        algo = tf.algorithms.dfedpgp(lr=0.1, local_epochs_u=case["epochs"][0],
                                     local_epochs_v=case["epochs"][1])
        topo = tf.topologies.random_directed(n, case["k"], seed=s, mode="push")
        model = tf.models.build_model("mlp", data.input_shape, data.num_classes, seed=s,
                                      hidden=case["hidden"])
        out.append(Member(config, topo, algo, data, model))
    assert stack_problem(out) is None
    return out


def _steps(members: list[Member]) -> tuple[int, int]:
    """Local steps a round: the runs' own, summed, and the stack's (3 x its longest run's)."""
    per = np.array([[int(steps_per_client(p.steps, p.epochs,
                                          torch.as_tensor(np.array(m.data.sizes("train"))),
                                          m.config.batch_size).max())
                     for p in m.algorithm.phases] for m in members])
    return int(per.sum()), int(per.max(axis=0).sum()) * len(members)


def _time(members: list[Member], stacked: bool) -> tuple[float, float]:
    c0, w0 = time.process_time(), time.perf_counter()
    if stacked:
        run_stacked(members)
    else:
        for m in members:
            tf.engine.run(*m[:5])
    return time.process_time() - c0, time.perf_counter() - w0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--figure-rounds", type=int, default=4)
    ap.add_argument("--out", default=str(Path(__file__).with_suffix(".md")))
    args = ap.parse_args()
    torch.set_num_threads(1)
    cases = [(f"digits, n={n}", DIGITS, n, args.rounds) for n in (16, 32, 64)]
    cases.append(("Table 1 stand-in, n=100", FIGURE, 100, args.figure_rounds))
    rows = []
    load = [loadavg()]
    for name, case, n, rounds in cases:
        members = _members(case, n, rounds)
        own, stack = _steps(members)
        _time(members, True)  # warm up: imports, caches, the allocator
        got: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        for _ in range(args.repeat):
            for stacked in (True, False):
                got[stacked].append(_time(members, stacked))
        ratios = [a[0] / b[0] for a, b in zip(got[True], got[False])]
        ratio = statistics.median(ratios)
        wall = statistics.median(a[1] / b[1] for a, b in zip(got[True], got[False]))
        cpu_s = statistics.median(c for c, _ in got[True])
        cpu_a = statistics.median(c for c, _ in got[False])
        rows.append((name, rounds, own, stack, cpu_s, cpu_a, ratio, min(ratios), max(ratios),
                     wall))
        print(f"{name}: {rounds} rounds, steps {own} -> {stack}, stacked {cpu_s:.2f} CPU s, "
              f"one by one {cpu_a:.2f} CPU s, ratio {ratio:.2f} ({min(ratios):.2f}.."
              f"{max(ratios):.2f}; wall {wall:.2f})", flush=True)
    load.append(loadavg())
    lines = [
        "# DFedPGP: three seeds stacked vs one by one",
        "",
        "`python analysis/bench_stack_personal.py` (regenerates this file). Three DFedPGP "
        "runs, seeds 0, 1, 2 (each its own Dirichlet split, directed push graph "
        "`random_directed(n, k, mode=\"push\")` and model), lr 0.1, the other settings "
        "DFedPGP's defaults (momentum 0.9 restarted every round, weight decay 5e-3, decay "
        "0.99), as one stacked pass (`topofl.engine.stack.run_stacked`) and one by one "
        "(`topofl.engine.run`), in one process, records in memory; alternating, "
        f"{args.repeat} repetitions, the median of their ratios (and their range). CPU time "
        "of the process "
        "(`time.process_time`, every thread; other processes on the shared machine do not "
        "count), 1 torch thread, "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch "
        f"{torch.__version__}, topofl {tf.__version__}; load average {load[0]:.1f} at the "
        f"start, {load[1]:.1f} at the end (the machine is shared: the same script gave "
        "ratios up to ~0.15 apart from run to run).",
        "",
        "*digits*: 1,797 images of 8x8, Dirichlet 0.5, MLP (64 hidden), batch 16, 1 epoch on "
        "the body and 0.5 on the head, 2 out-neighbours a round, evaluated every round. "
        "*Table 1 stand-in*: the setting of `paper_figures/configs/dfedpgp_table1.toml` "
        "(MNIST-1D 20,000 signals, 100 clients, Dirichlet 0.3 with at least 50 samples, MLP "
        "64, batch 50, 5 + 1 epochs, 10 out-neighbours, evaluated every 2 rounds on the "
        "clients' own test splits only, no per-client records), a few rounds of its 300.",
        "",
        "*Steps a round*: the local steps the three runs take alone (each its clients' most, "
        "per phase), and the stack's: a phase of the stack lasts its longest run's, the runs "
        "past their own steps rest (learning rate 0), so the stack computes the longest "
        "run's steps for every row.",
        "",
        "What the stack batches: one local step of every run's rows (one gradient and update "
        "with per-client rates), every run's test splits side by side in one evaluation "
        "pass, and a global test set the runs share once through a block of their rows of at "
        "most 512 KiB of parameters (`topofl.engine.stack._GLOBAL_BYTES`: the MLP's 19 KB "
        "a row put each run in a block of its own, as it scores alone, since that pass is "
        "memory-bound and costs more per row in a larger block). Gossip stays each run's own "
        "product.",
        "",
        "| case | rounds | steps a round (alone -> stacked) | stacked (CPU s) "
        "| one by one (CPU s) | ratio (CPU) | range | ratio (wall) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        *[f"| {r[0]} | {r[1]} | {r[2]} -> {r[3]} | {r[4]:.2f} | {r[5]:.2f} | {r[6]:.2f} "
          f"| {r[7]:.2f}..{r[8]:.2f} | {r[9]:.2f} |" for r in rows],
        "",
    ]
    Path(args.out).write_text("\n".join(lines), encoding="utf-8")


if __name__ == "__main__":
    main()
