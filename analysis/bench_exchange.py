"""Benchmark: how a rank gets other ranks' rows (the exchange of the data-driven algorithms).

``n = 100`` clients in blocks over ``k`` = 2 and 3 gloo ranks (forked processes, one thread
each, a FileStore), float32 rows of ``P`` = 1,000, 10,000 and 100,000 entries. Two needs:

* **dense**: every rank needs every row (pFedGraph's similarities, DPFL's pre-processing
  candidates, PFedDST's heads). Four ways: ``Shard.all_rows`` (one ``all_to_all_single``,
  counts from the placement), ``all_gather`` of the blocks padded to the largest (written
  here), ``Shard.fetch`` of every id (``all_to_all_single`` after a request round) and
  ``Shard.to_global`` (``all_reduce`` of zero-padded ``[n, P]`` buffers);
* **sparse**: every rank needs 10 rows of other ranks (DPFL's candidates within a budget,
  PFedDST's chosen peers): ``fetch`` of those against ``all_rows`` of everything.

Per configuration: the median over 7 repetitions (after 2 warm-ups) of the slowest rank's
seconds, and the bytes each rank sends (``Shard.bytes_sent``; ``to_global`` counts the
padded buffer it reduces). Run ``python analysis/bench_exchange.py`` (writes
``analysis/bench_exchange.md``); the machine may be shared: the load average is written with
the table.
"""

from __future__ import annotations

import datetime
import os
import queue
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from topofl.distributed import World
from topofl.distributed.comm import Shard
from topofl.distributed.placement import Placement, blocks

N, REPS, WARM = 100, 7, 2
SIZES = (1_000, 10_000, 100_000)


def _bench(rank: int, k: int, p: int) -> dict[str, tuple[float, int]]:
    shard = Shard(World(rank, k, "gloo", torch.device("cpu"), 120.0),
                  Placement(blocks(N, k), k, "blocks"))
    local = torch.randn(shard.m, p, generator=torch.Generator().manual_seed(rank))
    others = np.flatnonzero(shard.placement.owner != rank)
    sparse = np.random.default_rng(rank).choice(others, size=10, replace=False)
    def gather() -> torch.Tensor:
        counts = shard.placement.counts()
        pad = torch.zeros(max(counts), p)
        pad[:shard.m] = local
        parts = [torch.empty_like(pad) for _ in range(k)]
        dist.all_gather(parts, pad)
        shard.bytes_sent += (k - 1) * pad.numel() * 4
        return torch.cat([parts[r][:counts[r]] for r in range(k)])  # blocks: client order

    ways = {
        "dense all_rows (all_to_all)": lambda: shard.all_rows(local),
        "dense all_gather (padded blocks)": gather,
        "dense fetch of every id (all_to_all)": lambda: shard.fetch(np.arange(N), local),
        "dense to_global (all_reduce)": lambda: shard.to_global(local),
        "sparse fetch of 10 rows": lambda: shard.fetch(sparse, local),
        "sparse all_rows": lambda: shard.all_rows(local),
    }
    out = {}
    for name, fn in ways.items():
        times = []
        for r in range(WARM + REPS):
            dist.barrier()
            before = shard.bytes_sent
            t0 = time.perf_counter()
            fn()
            dt = time.perf_counter() - t0
            sent = shard.bytes_sent - before
            if "to_global" in name:
                sent = (k - 1) * N * p * 4 // k * 2  # ring all_reduce: 2 (k-1)/k of the buffer
            if r >= WARM:
                times.append(dt)
        out[name] = (float(np.median(times)), int(sent))
    return out


def _child(rank: int, k: int, store: str, p: int, q: Any) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", store=dist.FileStore(store, k), rank=rank, world_size=k,
                            timeout=timedelta(seconds=300))
    q.put((rank, _bench(rank, k, p)))
    dist.barrier()
    dist.destroy_process_group()


def run(k: int, p: int) -> dict[str, tuple[float, int]]:
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        procs = [ctx.Process(target=_child, args=(r, k, os.path.join(tmp, "s"), p, q))
                 for r in range(k)]
        for proc in procs:
            proc.start()
        got: dict[int, dict[str, tuple[float, int]]] = {}
        try:
            while len(got) < k:
                rank, res = q.get(timeout=600)
                got[rank] = res
        except queue.Empty:
            raise RuntimeError("a rank did not report") from None
        finally:
            for proc in procs:
                proc.join(timeout=30)
    return {name: (max(got[r][name][0] for r in got), got[0][name][1]) for name in got[0]}


def main() -> None:
    load0 = os.getloadavg()
    lines = ["| ranks | P | way | seconds (slowest rank) | bytes sent by rank 0 |",
             "|---|---|---|---|---|"]
    for k in (2, 3):
        for p in SIZES:
            for name, (sec, sent) in run(k, p).items():
                lines.append(f"| {k} | {p:,} | {name} | {sec:.4f} | {sent:,} |")
                print(lines[-1], flush=True)
    load1 = os.getloadavg()
    text = "\n".join([
        "# Exchange of peer rows: all_gather, all_to_all, all_reduce",
        "",
        f"Measured {datetime.date.today()} with `python analysis/bench_exchange.py` on "
        f"{os.cpu_count()} CPU cores, n = {N} float32 rows in blocks, gloo; load average "
        f"{load0[0]:.1f} before, {load1[0]:.1f} after (a shared machine: times are noisy).",
        "", *lines, ""])
    Path(__file__).with_suffix(".md").write_text(text)


if __name__ == "__main__":
    main()
