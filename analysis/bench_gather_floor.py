"""Benchmark: gossip on graphs without locality against the floor of a gather (issue 85, item 3).

One gossip step ``X <- W X`` costs at least what a gather of the ``k + 1`` rows each row of
``W`` reads costs. On this machine, for ``n`` in {10^4, 10^5} clients, ``P = 650`` (float32
rows), at torch's thread count, this script times, repetitions interleaved in one process:

* **copy**: ``Y.copy_(X)`` into a preallocated buffer (read ``X`` once, write ``Y`` once);
* **the gathers** (random 6-regular graph and Erdős–Rényi graph of mean degree 6, Metropolis
  weights, CSR order), each ``out[i] = sum_j w_ij X[j]`` out of place into a preallocated
  ``[n, P]`` buffer: NumPy ``take`` of a block of rows' neighbour rows and ``add.reduceat``;
  torch ``index_select`` and ``index_add_``; a Numba loop summing each row's neighbour rows in
  CSR order into the output row (in cache), serial and ``prange`` over rows (Numba's threads:
  torch's); the serial loop again with the nodes renumbered by reverse Cuthill-McKee
  (``scipy.sparse.csgraph.reverse_cuthill_mckee``: ``W`` and ``X`` permuted beforehand,
  untimed);
* **gossip**: :meth:`topofl.engine.gossip.Mixer.mix_` in place, *before* (``Mixer(...,
  serial_min_n=None)``: the CSR kernel's column tiles on torch's threads, as before issue 85)
  and *after* (the default: from 2,048 clients on one thread), on those graphs and on a ring
  and ``circulant(n, [1, 2, 3])`` (the band kernel, untouched: it must not get slower).

Two floors: the **traffic floor**, the memory traffic of a gather (``k + 1`` rows read and one
written a row, ``k + 1 = nnz / n``) at the copy's bandwidth, ``(nnz / n + 1) / 2`` copies; and
the **gather floor**, the fastest gather measured. Times are the process's CPU time
(``time.process_time``: the machine is shared, a wall clock counts the time waiting for a
core; a spinning thread counts); wall-clock medians are in the JSON too. A ratio is the median
over the repetitions of the per-repetition ratio (each repetition times everything once).
Before timing, every gather's and gossip's result is compared with ``W @ X`` in float64.

Run ``python analysis/bench_gather_floor.py`` (about 5 minutes on 2 shared cores; writes
``analysis/bench_gather_floor.md`` and ``.json``), ``--quick`` (``n = 10^4``, 3 repetitions,
writes nothing unless ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx
import numba
import numpy as np
import scipy.sparse as sp
import torch
from numba import njit, prange
from scipy.sparse.csgraph import reverse_cuthill_mckee

import topofl as tf
from topofl.engine.gossip import Mixer

P = 650
GRAPHS = ("random_regular(6)", "erdos_renyi(6/n)", "ring", "circulant [1,2,3]")
GATHERS = ("numpy take+reduceat", "torch index_select+index_add", "numba rows",
           "numba rows prange", "numba rows, RCM order")
BLOCK = 2048  # rows a block of the NumPy and torch gathers (their buffer: k+1 rows each)


def _prows(X: Any, indptr: Any, indices: Any, data: Any, out: Any) -> None:
    n, p = out.shape
    for i in prange(n):  # noqa: PLR1702 -- the loop Numba parallelizes
        o = out[i]
        a0, a1 = indptr[i], indptr[i + 1]
        if a0 == a1:
            for c in range(p):
                o[c] = 0
            continue
        w, s = data[a0], X[indices[a0]]
        for c in range(p):
            o[c] = w * s[c]
        for e in range(a0 + 1, a1):
            w, s = data[e], X[indices[e]]
            for c in range(p):
                o[c] = o[c] + w * s[c]


# without parallel=True, prange is range: the serial loop is the same function
rows = njit(fastmath={"contract"}, boundscheck=False, nogil=True)(_prows)
prows = njit(parallel=True, fastmath={"contract"}, boundscheck=False, nogil=True)(_prows)


def graph(name: str, n: int) -> tf.Topology:
    if name == "random_regular(6)":
        return tf.topologies.random_regular(n, 6, seed=0)
    if name == "erdos_renyi(6/n)":  # networkx's O(n + m) sampler (the library's is O(n^2))
        G = nx.fast_gnp_random_graph(n, 6 / (n - 1), seed=0)
        return tf.Topology.from_networkx(G, "metropolis", keep_graph=False, name="erdos_renyi")
    if name == "ring":
        return tf.topologies.ring(n)
    return tf.topologies.circulant(n, [1, 2, 3])


def gathers(W: sp.csr_array, X: torch.Tensor) -> dict[str, Callable[[], Any]]:
    """The gathers of ``W X`` (float32), each writing its own preallocated ``[n, P]``."""
    n = X.shape[0]
    x = X.numpy()
    indptr = W.indptr.astype(np.int64)
    indices = W.indices.astype(np.int64)
    data = W.data.astype(np.float32)
    out = {g: np.empty_like(x) for g in GATHERS}
    k1 = int(np.diff(indptr).max())
    g_np = np.empty((BLOCK * k1, P), dtype=np.float32)
    g_t = torch.empty(BLOCK * k1, P)
    idx_t, w_t = torch.from_numpy(indices), torch.from_numpy(data)
    row_t = torch.from_numpy(np.repeat(np.arange(n), np.diff(indptr)))

    def numpy_take() -> None:
        o = out["numpy take+reduceat"]
        for r0 in range(0, n, BLOCK):
            r1 = min(n, r0 + BLOCK)
            e0, e1 = int(indptr[r0]), int(indptr[r1])
            g = g_np[: e1 - e0]
            np.take(x, indices[e0:e1], axis=0, out=g)
            g *= data[e0:e1, None]
            np.add.reduceat(g, indptr[r0:r1] - e0, axis=0, out=o[r0:r1])

    def torch_index() -> None:
        o = torch.from_numpy(out["torch index_select+index_add"])
        for r0 in range(0, n, BLOCK):
            r1 = min(n, r0 + BLOCK)
            e0, e1 = int(indptr[r0]), int(indptr[r1])
            g = g_t[: e1 - e0]
            torch.index_select(X, 0, idx_t[e0:e1], out=g)
            g.mul_(w_t[e0:e1, None])
            o[r0:r1].zero_().index_add_(0, row_t[e0:e1] - r0, g)

    perm = reverse_cuthill_mckee(sp.csr_matrix(W), symmetric_mode=False)
    Wp = sp.csr_array(W[perm][:, perm])
    Wp.sort_indices()
    xp = np.ascontiguousarray(x[perm])
    pi, pj, pd = Wp.indptr.astype(np.int64), Wp.indices.astype(np.int64), Wp.data.astype(
        np.float32)
    out_rcm = out["numba rows, RCM order"]
    return {
        "numpy take+reduceat": numpy_take,
        "torch index_select+index_add": torch_index,
        "numba rows": lambda: rows(x, indptr, indices, data, out["numba rows"]),
        "numba rows prange": lambda: prows(x, indptr, indices, data, out["numba rows prange"]),
        "numba rows, RCM order": lambda: rows(xp, pi, pj, pd, out_rcm),
        "_out": lambda: (out, perm),
    }


def measure(name: str, n: int, reps: int) -> dict[str, Any]:
    topo = graph(name, n)
    W = topo.W
    rng = np.random.default_rng(0)
    X = torch.from_numpy(rng.standard_normal((n, P), dtype=np.float32))
    Y = torch.empty_like(X)
    before = Mixer(torch.device("cpu"), torch.float32, serial_min_n=None)
    after = Mixer(torch.device("cpu"), torch.float32)
    fns: dict[str, Callable[[], Any]] = {"copy": lambda: Y.copy_(X)}
    random_graph = name in GRAPHS[:2]
    ref = W @ X.numpy().astype(np.float64)
    scale = float(np.abs(ref).max())
    err: dict[str, float] = {}
    if random_graph:
        g = gathers(W, X)
        outs, perm = g.pop("_out")()
        for key, f in g.items():
            f()
            o = outs[key]
            if key == "numba rows, RCM order":
                o = np.empty_like(o)
                o[perm] = outs[key]
            err[key] = float(np.abs(o - ref).max()) / scale
        fns.update(g)
    for label, m in (("gossip before", before), ("gossip after", after)):
        Z = X.clone()
        m.mix_(topo, Z)
        err[label] = float(np.abs(Z.numpy() - ref).max()) / scale
        fns[label] = lambda m=m: m.mix_(topo, X)  # X drifts to consensus: same work
    for f in fns.values():  # warm (compile, caches)
        f()
    cpu: dict[str, list[float]] = {k: [] for k in fns}
    wall: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(reps):
        for key, f in fns.items():
            c0, w0 = time.process_time(), time.perf_counter()
            f()
            cpu[key].append(time.process_time() - c0)
            wall[key].append(time.perf_counter() - w0)
    row: dict[str, Any] = {
        "graph": name, "n": n, "P": P, "nnz_per_row": W.nnz / n, "kernel": after.kernel(topo),
        "rel_err": err, "load": os.getloadavg()[0],
        "cpu_ms": {k: 1e3 * statistics.median(v) for k, v in cpu.items()},
        "wall_ms": {k: 1e3 * statistics.median(v) for k, v in wall.items()},
        "per_copy": {k: statistics.median(a / c for a, c in zip(v, cpu["copy"]))
                     for k, v in cpu.items()},
    }
    if random_graph:
        best = [min(cpu[g][r] for g in GATHERS) for r in range(reps)]
        row["traffic_floor_per_copy"] = (W.nnz / n + 1) / 2
        row["gather_floor_per_copy"] = statistics.median(b / c for b, c in zip(best, cpu["copy"]))
        row["best_gather"] = min(GATHERS, key=lambda g: statistics.median(cpu[g]))
        row["per_floor"] = {k: statistics.median(a / b for a, b in zip(cpu[k], best))
                            for k in ("gossip before", "gossip after")}
    return row


def markdown(rows_: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    out = ["# Gossip on graphs without locality against the floor of a gather (issue 85, item 3)",
           "",
           f"`{meta['command']}`, {meta['date']}. Machine: {meta['machine']}; torch "
           f"{torch.__version__}, numba {numba.__version__}, threads (torch and Numba): "
           f"{meta['threads']}; {meta['reps']} repetitions a case. Whole run: "
           f"{meta['seconds']:.0f} s. See the script's docstring for what is timed. Times are "
           "the process's CPU time (median), ratios the median of per-repetition ratios; "
           "*load* is the 1-minute load average when the case finished (the machine is shared "
           "with other jobs).", "",
           "## Gathers and the two floors (random graphs, float32, P = 650)", "",
           "| graph | n | nnz/n | copy ms | " + " | ".join(GATHERS)
           + " | traffic floor | gather floor | best gather | load |",
           "|---|---:|---:|---:|" + "---:|" * len(GATHERS) + "---:|---:|---|---:|"]
    for r in rows_:
        if "per_floor" not in r:
            continue
        out.append(f"| {r['graph']} | {r['n']:,} | {r['nnz_per_row']:.2f} | "
                   f"{r['cpu_ms']['copy']:.2f} | "
                   + " | ".join(f"{r['per_copy'][g]:.2f}x" for g in GATHERS)
                   + f" | {r['traffic_floor_per_copy']:.2f}x | "
                   f"{r['gather_floor_per_copy']:.2f}x | {r['best_gather']} | {r['load']:.1f} |")
    out += ["", "Gathers and floors as multiples of the copy.", "",
            "## Gossip before and after", "",
            "| graph | n | kernel | copy ms | before ms | after ms | before / copy | "
            "after / copy | before / gather floor | after / gather floor | load |",
            "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows_:
        pf = r.get("per_floor", {})
        fl = {k: f"**{v:.2f}x**" for k, v in pf.items()}
        out.append(f"| {r['graph']} | {r['n']:,} | {r['kernel']} | {r['cpu_ms']['copy']:.2f} | "
                   f"{r['cpu_ms']['gossip before']:.2f} | {r['cpu_ms']['gossip after']:.2f} | "
                   f"{r['per_copy']['gossip before']:.2f}x | {r['per_copy']['gossip after']:.2f}x"
                   f" | {fl.get('gossip before', '')} | {fl.get('gossip after', '')}"
                   f" | {r['load']:.1f} |")
    worst = max(max(r["rel_err"].values()) for r in rows_)
    out += ["", f"Largest difference from `W @ X` in float64 over every result above: "
            f"{worst:.2e} of the largest entry.", ""]
    return "\n".join(out)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    threads = torch.get_num_threads()
    numba.set_num_threads(threads)
    sizes = [10_000] if args.quick else [10_000, 100_000]
    t0 = time.time()
    results = []
    for n in sizes:
        reps = args.reps or (3 if args.quick else (9 if n <= 10_000 else 5))
        for name in GRAPHS:
            r = measure(name, n, reps)
            r["reps"] = reps
            print(json.dumps({k: r[k] for k in ("graph", "n", "per_copy", "load")}), flush=True)
            results.append(r)
    out = args.out or (None if args.quick else Path(__file__).with_suffix(""))
    if out is None:
        return
    meta = {"command": "python analysis/bench_gather_floor.py" + (" --quick" if args.quick
                                                                   else ""),
            "date": time.strftime("%Y-%m-%d"), "threads": threads,
            "machine": f"{cpu_model()}, {os.cpu_count()} CPUs",
            "reps": "/".join(str(r["reps"]) for r in results[::len(GRAPHS)]),
            "seconds": time.time() - t0}
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": results}, indent=1))
    out.with_suffix(".md").write_text(markdown(results, meta))


if __name__ == "__main__":
    main()
