"""Benchmark: D-SGD in one process against the same run sharded over two gloo processes.

For logistic regression (784 inputs) and the DPFL CNN (3x32x32) at n = 100 and 1000 clients
(50 synthetic samples each, batch 16, one local step and one gossip step per round, float32,
a 10-regular graph with Metropolis weights, as in ``bench_engine.py``), it runs
:func:`topofl.engine.run` once in this process with ``torch.set_num_threads(2)`` and once on
two ranks (forked processes, gloo over localhost, one thread each: the same two cores) and
reports per round:

* the wall time (median of the gaps between consecutive rounds' ends, the first rounds
  dropped; evaluation only after the last round, outside the timed gaps);
* the bytes of parameters the ranks send each other in gossip (both ranks), against the
  minimum the placement allows: the rows that cross the cut (each client row needed by another
  rank, once per such rank), times ``P`` times 4 bytes;
* the share of the round a rank spends blocked in collectives (the gossip exchange, after
  the local product it overlaps with, and the per-step loss reduction), the larger of the two
  ranks.

The ring is added for logistic regression: its placement cuts 4 arcs, so communication is
nearly free and the gap to the 10-regular graph shows what the exchange costs.

Run ``python analysis/bench_distributed.py`` (writes ``analysis/bench_distributed.md``;
``--quick``: logistic at n = 100 only, prints). The machine may be shared: the load average
before and after is written with the table.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import queue
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_engine  # noqa: E402  (the synthetic data of the engine benchmark)

import topofl as tf  # noqa: E402
from topofl.engine.protocol import Round, Sent, Services, State  # noqa: E402

ROUNDS = {("logistic", 100): 12, ("logistic", 1000): 8, ("cnn", 100): 6, ("cnn", 1000): 4}
DROP = 1  # first gaps dropped (caches, first exchange plan)


def _graph(name: str, n: int) -> Any:
    if name == "ring":
        return tf.topologies.ring(n)
    return tf.topologies.random_regular(n, bench_engine.DEGREE, seed=0)


def _timed(ticks: list[tuple[float, float, int]], shard: list[Any]) -> Any:
    """D-SGD whose communication records (time, comm seconds, bytes sent) at each round's end."""
    algo = tf.algorithms.dsgd(bench_engine.LR)
    comm = algo.communicate

    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        out = comm(state, rnd, env)
        s = getattr(env, "shard", None)
        ticks.append((time.perf_counter(), 0.0 if s is None else s.comm_seconds,
                      0 if s is None else s.bytes_sent))
        if s is not None:
            shard[:] = [s]
        return out

    return algo._replace(communicate=communicate)


def _one(model: str, n: int, graph: str, data: Any) -> dict[str, Any]:
    """Per-round figures of one run in this process (or on this rank)."""
    ticks: list[tuple[float, float, int]] = []
    shard: list[Any] = []
    m = tf.models.build_model(model, bench_engine.SHAPES[model], 10, seed=0)
    cfg = tf.engine.RunConfig(rounds=ROUNDS[(model, n)], batch_size=bench_engine.BATCH,
                              eval_every=10**6, eval_global=False, record_clients=False,
                              spectral=False, progress=False)
    tf.engine.run(cfg, _graph(graph, n), _timed(ticks, shard), data, m)
    gaps = np.diff([t[0] for t in ticks])[DROP:]
    comm = np.diff([t[1] for t in ticks])[DROP:]
    sent = np.diff([t[2] for t in ticks])[DROP:]
    out = {"round_s": float(np.median(gaps)), "comm_s": float(np.median(comm)),
           "bytes": int(np.median(sent)), "P": tf.engine.ParamLayout.from_model(m).num_params}
    if shard:
        s = shard[0]
        topo = _graph(graph, n)
        out.update(rule=s.placement.rule, cut_rows=s.placement.cut_rows(topo),
                   cut_arcs=s.placement.cut_arcs(topo), arcs=int(topo.W.nnz - n))
    return out


def _rank(rank: int, k: int, store: str, args: tuple[Any, ...], q: Any) -> None:
    code = 0
    try:
        torch.set_num_threads(1)
        dist.init_process_group("gloo", store=dist.FileStore(store, k), rank=rank,
                                world_size=k, timeout=timedelta(seconds=600))
        q.put((rank, _one(*args)))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        q.put((rank, repr(exc)))
        code = 1
    finally:
        q.close()
        q.join_thread()
        os._exit(code)


def _sharded(k: int, *args: Any) -> list[dict[str, Any]]:
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        procs = [ctx.Process(target=_rank, args=(r, k, os.path.join(tmp, "s"), args, q))
                 for r in range(k)]
        for p in procs:
            p.start()
        got: dict[int, Any] = {}
        try:
            while len(got) < k:
                r, v = q.get(timeout=3600)
                if not isinstance(v, dict):
                    raise RuntimeError(f"rank {r} failed: {v}")
                got[r] = v
        except queue.Empty:
            raise RuntimeError("a rank did not report within an hour") from None
        finally:
            for p in procs:
                p.join(timeout=10)
                if p.is_alive():
                    p.kill()
    return [got[r] for r in range(k)]


def _load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="logistic, n = 100 only; prints")
    ap.add_argument("--out", default=None, help="Markdown file (default "
                    "analysis/bench_distributed.md, none with --quick)")
    args = ap.parse_args(argv)
    cases = [("logistic", 100, "regular"), ("logistic", 100, "ring")]
    if not args.quick:
        cases += [("logistic", 1000, "regular"), ("logistic", 1000, "ring"),
                  ("cnn", 100, "regular"), ("cnn", 1000, "regular")]
    load0, t0 = _load(), time.perf_counter()
    rows = []
    for model, n, graph in cases:
        data = bench_engine.synthetic_data(n, bench_engine.SHAPES[model])
        torch.set_num_threads(2)
        one = _one(model, n, graph, data)
        two = _sharded(2, model, n, graph, data)
        row = {"model": model, "n": n, "graph": graph, "P": one["P"], "one": one["round_s"],
               "two": max(r["round_s"] for r in two),
               "bytes": sum(r["bytes"] for r in two),
               "min_bytes": two[0]["cut_rows"] * one["P"] * 4,
               "comm": max(r["comm_s"] / r["round_s"] for r in two),
               "rule": two[0]["rule"], "cut_arcs": two[0]["cut_arcs"], "arcs": two[0]["arcs"],
               "cut_rows": two[0]["cut_rows"]}
        rows.append(row)
        print(row, flush=True)
    minutes = (time.perf_counter() - t0) / 60
    lines = [
        "# Distributed engine: one process against two gloo ranks",
        "",
        f"`python analysis/bench_distributed.py` (see its docstring), "
        f"{datetime.date.today().isoformat()}. Machine: {platform.processor() or 'CPU'}, "
        f"{os.cpu_count()} logical CPUs; torch {torch.__version__}; float32. One process: "
        "`torch.set_num_threads(2)`; two ranks: one thread each, gloo over localhost. "
        f"Load average (1, 5, 15 min) before: {load0}, after: {_load()} (the machine is "
        f"shared: times are rough). Whole run: {minutes:.1f} min.",
        "",
        "*bytes / round*: parameters both ranks sent in gossip; *minimum*: the rows crossing "
        "the placement's cut (a client row once per other rank that needs it) x P x 4 B. "
        "*comm share*: time a rank is blocked in collectives over the round time (the larger "
        "rank).",
        "",
        "| model | n | P | graph | placement | arcs cut / arcs | 1 process ms / round | "
        "2 ranks ms / round | speed-up | bytes / round | minimum | comm share |",
        "|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['n']} | {r['P']:,} | {r['graph']} | {r['rule']} | "
            f"{r['cut_arcs']:,} / {r['arcs']:,} | {1000 * r['one']:.1f} | "
            f"{1000 * r['two']:.1f} | {r['one'] / r['two']:.2f}x | {r['bytes']:,} | "
            f"{r['min_bytes']:,} | {100 * r['comm']:.0f}% |")
    text = "\n".join(lines) + "\n"
    print(text)
    out = args.out or (None if args.quick else str(Path(__file__).with_suffix(".md")))
    if out:
        Path(out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
