"""Benchmark and comparison: DECOR's pairwise-correlated noise (issue 83, item 2).

What is timed (CPU time, ``time.process_time``, in this one process, one torch and one BLAS
thread; medians over the
repetitions, each case's ratio against the plain defence measured beside it):

* **the round's noise**: :meth:`topofl.engine.pieces.privacy.NoisyUpdates.noise_` on a float32
  ``[n, P]`` buffer, plain (``correlated=0``: one draw of ``P`` per client) and with the pair
  noise (``correlated=4``: one more draw of ``P`` per edge of the round's graph, and the
  accountant's ``n x n`` Cholesky for a graph it has not seen, cached after), on
  ``ring(n)`` and ``random_regular(n, 6)``, n = 32 and 128, P = 650 (logistic regression on 64
  features) and 7,850 (an MLP);
* **the accountant**: :func:`topofl.privacy.correlated_noise_spend` on a ring, n = 32 to 2,000
  (one dense ``n x n`` Cholesky and triangular inverse).

And the comparison with the authors' accountant (github.com/elfirdoussilab1/DECOR,
``utils/dp_account.py``, ``rdp_account`` and ``user_level_rdp``), written here from its formulas
(no code copied): per round the Rényi ``epsilon(alpha) = alpha * r`` with
``r = 2 C^2 max_u (Sigma^-1)_uu``, ``Sigma = sigma_cdp^2 I + sigma_cor^2 L`` in absolute units,
composed over ``T`` rounds and converted with ``T r + 2 sqrt(T r log(1/delta))``; topofl's
``mu^2 / 2`` per round is the same ``r`` (the same Gaussian mechanism), and its exact GDP
conversion gives the smaller ``epsilon``.

Run ``python analysis/bench_correlated_noise.py`` (about a minute on a 2-core CPU; writes
``analysis/bench_correlated_noise.md`` and ``.json`` next to it); ``--quick`` writes nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from threadpoolctl import threadpool_limits

import topofl as tf
from topofl.engine.pieces.privacy import NoisyUpdates
from topofl.privacy import correlated_noise_spend

HERE = Path(__file__).resolve().parent


def _cpu(fn: Any) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def noise_cost(topo: tf.graph.Topology, P: int, reps: int) -> dict[str, Any]:
    """Median CPU seconds of one round's noise_, plain and correlated (the second has seen the
    graph before: its accountant cached), and the first correlated round (Cholesky included)."""
    env = tf.engine.toy_services(topo.n)
    g = torch.Generator().manual_seed(0)
    start = torch.randn(topo.n, P, generator=g)
    pieces = {"plain": NoisyUpdates(1.0, 2.0, 0, 1e-5),
              "correlated": NoisyUpdates(1.0, 2.0, 0, 1e-5, correlated=4.0)}
    states = {}
    for k, piece in pieces.items():
        state = tf.engine.State(x=start.clone())
        piece.init_(state, env)
        states[k] = state
    first = 0.0
    times: dict[str, list[float]] = {k: [] for k in pieces}
    for r in range(reps + 1):
        for k, piece in pieces.items():
            rnd = tf.engine.Round(r, topo)
            state = states[k]
            piece.round_start(state, rnd, env)
            state.x.add_(0.01)
            t = _cpu(lambda p=piece, s=state, rd=rnd: p.noise_(s, rd, env))
            if r == 0 and k == "correlated":
                first = t
            elif r > 0:
                times[k].append(t)
    plain, cor = statistics.median(times["plain"]), statistics.median(times["correlated"])
    return {"graph": topo.name, "n": topo.n, "P": P, "edges": topo.num_edges,
            "plain_ms": 1e3 * plain, "correlated_ms": 1e3 * cor, "ratio": cor / plain,
            "first_round_ms": 1e3 * first}


def accountant_cost(n: int, reps: int) -> dict[str, Any]:
    topo = tf.topologies.ring(n)
    ts = [_cpu(lambda: correlated_noise_spend(topo, 2.0, 4.0, 100)) for _ in range(reps)]
    return {"n": n, "ms": 1e3 * statistics.median(ts)}


def authors_comparison() -> list[dict[str, Any]]:
    """topofl's spend against the authors' formulas, same inputs (absolute noise units)."""
    rows = []
    cases = [("ring", tf.topologies.ring(16)), ("torus 4x4", tf.topologies.torus(4, 4)),
             ("complete", tf.topologies.complete(16)), ("ring", tf.topologies.ring(64))]
    for name, topo in cases:
        for clip, s_abs, c_abs, T, delta in ((1.0, 2.0, 8.0, 100, 1e-5),
                                             (0.5, 1.0, 20.0, 1000, 1e-5)):
            n = topo.n
            A = (topo.to_dense() != 0).astype(float)
            np.fill_diagonal(A, 0.0)
            A = np.maximum(A, A.T)
            Lap = np.diag(A.sum(axis=1)) - A
            sigma = s_abs ** 2 * np.eye(n) + c_abs ** 2 * Lap
            r = 2 * clip ** 2 * float(np.linalg.inv(sigma).diagonal().max())
            theirs = T * r + 2 * math.sqrt(T * r * math.log(1 / delta))
            mu, eps = correlated_noise_spend(topo, s_abs / clip, c_abs / clip, T, delta=delta)
            ours_r = float(mu.max()) ** 2 / (2 * T)
            ldp = tf.privacy.noisy_updates_spend(s_abs / clip, T, delta=delta)[1]
            rows.append({"graph": name, "n": n, "clip": clip, "sigma": s_abs, "sigma_cor": c_abs,
                         "T": T, "delta": delta, "authors_r": r, "topofl_r": ours_r,
                         "r_rel_diff": abs(ours_r - r) / r, "authors_eps": theirs,
                         "topofl_eps": float(eps.max()), "ldp_eps": ldp})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    threadpool_limits(1)  # OpenBLAS's threads spin on a shared 2-core machine: CPU time doubles
    reps = 5 if args.quick else 15
    noise = [noise_cost(topo, P, reps)
             for n in (32, 128) for topo in (tf.topologies.ring(n),
                                             tf.topologies.random_regular(n, 6, seed=0))
             for P in (650, 7850)]
    acct = [accountant_cost(n, 3 if args.quick else 5) for n in (32, 256, 1000, 2000)]
    comp = authors_comparison()
    load = os.getloadavg()[0]
    lines = ["# DECOR's pairwise-correlated noise: cost and the authors' accountant", "",
             "Written by `python analysis/bench_correlated_noise.py` (its docstring says what is "
             "timed). CPU time, one thread (torch and BLAS); "
             f"1-minute load average {load:.2f}.", "",
             "## One round's noise (`NoisyUpdates.noise_`, float32)", "",
             "| graph | n | edges | P | plain ms | correlated ms | ratio | first round ms |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in noise:
        lines.append(f"| {r['graph']} | {r['n']} | {r['edges']} | {r['P']} | "
                     f"{r['plain_ms']:.2f} | {r['correlated_ms']:.2f} | {r['ratio']:.2f} | "
                     f"{r['first_round_ms']:.2f} |")
    lines += ["", "## The accountant (`correlated_noise_spend`, ring, 100 rounds)", "",
              "| n | ms |", "|---:|---:|"]
    lines += [f"| {r['n']} | {r['ms']:.1f} |" for r in acct]
    lines += ["", "## Against the authors' accountant (same inputs)", "",
              "`r`: the per-round Rényi slope (`epsilon(alpha) = alpha r`), the authors' "
              "`2 C^2 max (Sigma^-1)_uu` and topofl's `max mu^2 / (2 T)`; epsilon at delta: the "
              "authors' `T r + 2 sqrt(T r log(1/delta))` and topofl's exact GDP conversion; "
              "`ldp`: the same independent noise without the pair noise.", "",
              "| graph | n | C | sigma | sigma_cor | T | r (authors) | r rel. diff | "
              "eps (authors) | eps (topofl) | eps (ldp) |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in comp:
        lines.append(f"| {r['graph']} | {r['n']} | {r['clip']} | {r['sigma']} | "
                     f"{r['sigma_cor']} | {r['T']} | {r['authors_r']:.6g} | "
                     f"{r['r_rel_diff']:.1e} | {r['authors_eps']:.4f} | {r['topofl_eps']:.4f} | "
                     f"{r['ldp_eps']:.4f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.quick:
        (HERE / "bench_correlated_noise.md").write_text(text, encoding="utf-8")
        (HERE / "bench_correlated_noise.json").write_text(json.dumps(
            {"load": load, "noise": noise, "accountant": acct, "authors": comp}, indent=1),
            encoding="utf-8")


if __name__ == "__main__":
    main()
