"""What the window of an asynchronous (event-time) run costs against exactness.

AD-PSGD (``topofl.algorithms.adpsgd``) runs one window of virtual time per round of the loop.
For windows from half the fastest client's duration to 16 times it, on a quadratic problem in
float64 (client ``i`` minimises ``(x - c_i)^2 / 2``) with heavy-tailed durations, this script
runs the windowed algorithm (``run_rounds``) and the event-by-event reference
(``simulate_events``) up to the same virtual time and prints: rounds (windows), events and
layers (sequential batched operations) per window, the share of events deferred, the
events run against the reference's, the largest
difference from the reference, and both wall times.

Usage: ``python analysis/async_window.py [n]`` (default 64); numbers in ``async_window.md``.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import torch

import topofl as tf
from topofl.algorithms.adpsgd import heavy_tailed_durations, simulate_events
from topofl.engine import run_rounds


def main(n: int = 64) -> None:
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    c = torch.randn(n, 4, generator=g, dtype=torch.float64)
    x0 = torch.zeros(n, 4, dtype=torch.float64)
    d = heavy_tailed_durations(n, seed=1, alpha=1.5)
    dmin = min(d)
    end = 40 * dmin * 8
    topo = tf.topologies.random_regular(n, 4, seed=0)
    t0 = time.perf_counter()
    ref = simulate_events(x0, topo, lambda z, i: z - c[i], d, lr=0.05, end_time=end)
    t_ref = time.perf_counter() - t0
    print(f"n={n}, durations: min {dmin:.3f} max {max(d):.3f}, end time {end:.3f}, "
          f"{len(ref.log)} events, reference {t_ref:.2f} s")
    print("| window / min d | rounds | events/round | layers/round (max) | deferred | "
          "events run / reference | max abs diff | windowed s |")
    print("|---|---|---|---|---|---|---|---|")
    for k in (0.5, 1, 2, 4, 8, 16):
        window = k * dmin
        rounds = int(round(end / window))
        algo = tf.algorithms.adpsgd(0.05, durations=list(d), window=window)
        t0 = time.perf_counter()
        run = run_rounds(algo, x0, topo, lambda z, phase, rnd: z - c, rounds=rounds)
        secs = time.perf_counter() - t0
        recs = [s.records for s in run.sent]
        ev = np.array([r["async_events"] for r in recs])
        lay = np.array([r["async_layers"] for r in recs])
        dfr = sum(r["async_deferred"] for r in recs) / max(1, ev.sum())
        diff = float((run.state.x - ref.x).abs().max())
        print(f"| {k:g} | {rounds} | {ev.mean():.1f} | {lay.mean():.1f} ({lay.max()}) | "
              f"{dfr:.1%} | {ev.sum() / len(ref.log):.1%} | {diff:.2e} | {secs:.2f} |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 64)
