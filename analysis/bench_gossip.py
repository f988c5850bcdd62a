"""Benchmark: gossip's band kernel against a copy of the buffer and the CSR kernel (issue 43,
item 5).

One gossip step ``X <- W X`` (:meth:`topofl.engine.gossip.Mixer.mix_`, in place on a float32
``[n, P]`` buffer) is timed back to back with ``Y.copy_(X)`` into a preallocated buffer of the
same shape (read ``X`` once, write ``Y`` once: the memory floor of an in-place product), for

* **csr**: the kernel every graph took before (``Mixer(..., band_min_n=None)``): column tiles
  of ``X`` copied into a buffer, MKL's CSR product written back into ``X``;
* **band**: the band kernel (``Mixer(..., band_min_n=0)``) where
  :func:`topofl.engine.gossip.band_plan` accepts the graph: every row the same offsets (a
  ring, a circulant, a one-peer round), in place block by block; from 5 offsets a row on rows
  of 64 columns or more in its matrix form (issue 58: each 8 rows one product with the window
  of ``X`` they read, a block one batched product), else each term a shifted slice;
* **shifted adds**: the band kernel as it was before issue 58 (each term a shifted slice added
  into the block, also for wide bands), for the before -> after of the circulant rows.

Each repetition runs copy, csr, copy, band (and copy, shifted adds where they differ); a
kernel's ratio is its time over the copy just before it, and the tables give medians over the
repetitions (the machine may be shared: the 1-minute load average is printed with every
case). Graphs: the Metropolis ring (3 entries a row), ``circulant(n, [1, 2, 3])`` (7), round
5 of ``one_peer_exponential(n)`` (2: the client and the peer 32 places before it), and
``random_regular(n, 6)`` (7, random columns: no band plan, the CSR kernel; up to 100,000
clients). Sizes: n = 1,000 to 1,000,000 clients with P = 10 and 650 parameters (logistic
regression on 64 features), and P = 7,850 (an MLP's size) up to 100,000 clients; one thread
and two. Before timing, the kernels' products of the first 64 columns are compared (float32,
``rtol=1e-5``).

Also, why the band kernel is not the default below 2,048 clients (every committed result has at
most 1,000): :func:`bits` compares MKL's CSR product, one tile of every width from 1 to 40
columns, bit for bit with the same sums written as a chain of fused multiply-adds in ``W``'s
CSR order (``torch.addcmul``) and with the band kernel, on a ring and a 6-regular random
graph of 1,000 nodes, float32 and float64.

Run ``python analysis/bench_gossip.py`` (about 15 minutes on a 2-core CPU; writes
``analysis/bench_gossip.md`` and ``.json``), ``--quick`` (n <= 10,000, writes nothing unless
``--out``), ``--threads 1`` for one thread only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

import topofl as tf
from topofl.engine.gossip import Mixer
from topofl.tools import bench

GRAPHS = ("ring", "circulant [1,2,3]", "one-peer round 5", "random_regular(6)")
RANDOM_MAX_N = 100_000
SIZES = [(1_000, 10), (1_000, 650), (1_000, 7_850), (10_000, 10), (10_000, 650),
         (10_000, 7_850), (100_000, 10), (100_000, 650), (100_000, 7_850),
         (1_000_000, 10), (1_000_000, 650)]


def graph(name: str, n: int) -> tf.Topology:
    if name == "ring":
        return tf.topologies.ring(n)
    if name == "circulant [1,2,3]":
        return tf.topologies.circulant(n, [1, 2, 3])
    if name == "random_regular(6)":
        return tf.topologies.random_regular(n, 6, seed=0)
    return tf.topologies.one_peer_exponential(n).at(5)


class ShiftedAdds(Mixer):
    """The band kernel without its matrix form: every term a shifted slice (before issue 58)."""

    @staticmethod
    def _panel(*args: Any) -> None:
        return None


def load() -> float:
    return os.getloadavg()[0]


def case(topo: tf.Topology, P: int, threads: int) -> dict[str, Any]:
    torch.set_num_threads(threads)
    n = topo.n
    g = torch.Generator().manual_seed(0)
    X = torch.randn(n, P, generator=g)
    Y = torch.empty_like(X)
    csr = Mixer(torch.device("cpu"), torch.float32, band_min_n=None)
    band = Mixer(torch.device("cpu"), torch.float32, band_min_n=0, jit=True)
    shifted = ShiftedAdds(torch.device("cpu"), torch.float32, band_min_n=0, jit=False)
    torch_band = Mixer(torch.device("cpu"), torch.float32, band_min_n=0, jit=False)
    default = Mixer(torch.device("cpu"), torch.float32)
    has_band = band.kernel(topo) == "band"
    # the kernels' products of a few columns (64: wide enough for the matrix form), float32
    rel = {}
    a = X[:, :64].clone()
    csr.mix_(topo, a)
    for name, m in (("band", band), ("shifted", shifted), ("torch", torch_band)) if has_band \
            else ():
        b = X[:, :64].clone()
        m.mix_(topo, b)
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6)
        rel[name] = float((a - b).abs().max() / a.abs().max())
    kernels = {"csr": csr, **({"band": band, "torch": torch_band} if has_band else {})}
    # the shifted adds are timed where the band kernel takes its matrix form
    if has_band and P >= 64 and topo.W.nnz // n >= 5:
        kernels["shifted"] = shifted
    reps = int(np.clip(4e9 / (n * P * 4), 5, 41))
    for m in kernels.values():
        m.mix_(topo, X)
    t: dict[str, list[float]] = {"copy": []}
    for k in kernels:
        t[k], t[f"r_{k}"] = [], []
    l0 = load()
    for _ in range(reps):
        for name, m in kernels.items():
            t0 = time.perf_counter()
            Y.copy_(X)
            t1 = time.perf_counter()
            m.mix_(topo, X)
            t2 = time.perf_counter()
            t["copy"].append(t1 - t0)
            t[name].append(t2 - t1)
            t[f"r_{name}"].append((t2 - t1) / (t1 - t0))
    med = {k: statistics.median(v) for k, v in t.items()}
    return {"n": n, "P": P, "threads": threads, "k": topo.W.nnz // n,
            "kernel": band.kernel(topo), "default": default.kernel(topo), "reps": reps,
            "rel": rel.get("band"), "rel_shifted": rel.get("shifted"),
            "rel_torch": rel.get("torch"), "load": (l0, load()),
            **med}


def bits() -> list[dict[str, Any]]:
    """Per graph and dtype: the tile widths (1..40 columns) where MKL's CSR product differs
    in any bit from a chain of fused multiply-adds in CSR order, and from the band kernel."""
    out = []
    for name, topo in (("ring", tf.topologies.ring(1000)),
                       ("random_regular(6)", tf.topologies.random_regular(1000, 6, seed=0))):
        W = topo.W
        k = W.nnz // topo.n
        idx = torch.as_tensor(W.indices.reshape(-1, k).astype(np.int64))
        for dtype in (torch.float32, torch.float64):
            w = torch.as_tensor(W.data.reshape(-1, k).copy(), dtype=dtype)
            csr = Mixer(torch.device("cpu"), dtype, band_min_n=None, tile_bytes=1 << 30)
            band = Mixer(torch.device("cpu"), dtype, band_min_n=0)
            fma, vs_band = [], []
            for p in range(1, 41):
                X = torch.randn(topo.n, p, dtype=dtype, generator=torch.Generator().manual_seed(p))
                a = X.clone()
                csr.mix_(topo, a)
                chain = torch.addcmul(torch.zeros(1, 1, dtype=dtype), w[:, :1], X[idx[:, 0]])
                for j in range(1, k):
                    chain.addcmul_(w[:, j:j + 1], X[idx[:, j]])
                if not torch.equal(chain, a):
                    fma.append(p)
                if band.kernel(topo) == "band":
                    b = X.clone()
                    band.mix_(topo, b)
                    if not torch.equal(b, a):
                        vs_band.append(p)
            out.append({"graph": name, "dtype": str(dtype).replace("torch.", ""),
                        "fma": fma, "band": vs_band if band.kernel(topo) == "band" else None})
    return out


def spans(v: list[int]) -> str:
    """``[2, 3, 4, 8]`` -> ``"2-4, 8"``; ``"none"`` when empty."""
    out: list[str] = []
    for x in v:
        if out and x == int(out[-1].split("-")[-1]) + 1:
            out[-1] = f"{out[-1].split('-')[0]}-{x}"
        else:
            out.append(str(x))
    return ", ".join(out) or "none"


def fmt_ms(s: float) -> str:
    ms = s * 1e3
    return f"{ms:,.0f}" if ms >= 100 else f"{ms:.1f}" if ms >= 1 else f"{ms:.3f}"


def report(rows: list[dict[str, Any]], info: dict[str, str], wall: float,
           loads: tuple[float, float], bit_rows: list[dict[str, Any]],
           command: str = "python analysis/bench_gossip.py") -> str:
    L = ["# Gossip: the band kernel against a copy of the buffer and the CSR kernel", ""]
    L.append(f"`{command}`, {info['date']}. Machine: {info['cpu']} "
             f"({info['cpu_kind']}); Python {info['python']}, torch {info['torch']}, numpy "
             f"{info['numpy']}. 1-minute load average at the start and the end: "
             f"{loads[0]:.1f}, {loads[1]:.1f} on 2 CPUs (a machine shared with other jobs: "
             f"read the ratios, each against a copy timed just before). Whole run: "
             f"{wall:.0f} s.")
    L.append("")
    L.append("float32 ``[n, P]``; *copy*: ``Y.copy_(X)`` into a preallocated buffer; *csr*: "
             "the tiled CSR kernel (what every graph took before); *band*: the band kernel "
             "compiled with Numba (`jit=True`, `topofl.engine._band_jit`: one pass, row by "
             "row; `Mixer`'s default on buffers of 1 GiB or more) on rows of 16 columns or "
             "more, else torch's; *torch band*: "
             "torch's band kernel (`jit=False`: shifted adds, in matrix form from 5 offsets "
             "a row and 64 columns); *shifted*: torch's shifted adds alone, as before issue 58 "
             "(timed where the matrix form applies); "
             "*x copy*: median over the repetitions of the kernel's time over the copy timed "
             "just before it; *default*: the kernel `Mixer(device, dtype)` picks "
             "(`band_min_n = 2048`); *rel diff*: max |band - csr| / max |csr| on 64 columns; "
             "*load*: 1-minute load average before and after the case; random_regular(6) has "
             "no band plan (csr only).")
    if {r["threads"] for r in rows} == {1}:
        L += ["", "One thread only (`--threads 1`): on a machine whose 2 cores other jobs "
              "held, two-thread rows measure the wait for the busier core (the reason the "
              "band kernel stays on one thread, see the module docstring of "
              "`topofl.engine.gossip`)."]
    for threads in sorted({r["threads"] for r in rows}):
        L += ["", f"## {threads} thread{'s' if threads > 1 else ''}", ""]
        L.append("| graph | n | P | k | default | copy ms | csr ms | csr x copy | "
                 "shifted x copy | torch band x copy | band ms | band x copy | csr / band | "
                 "rel diff | reps | load |")
        L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            if r["threads"] != threads:
                continue
            has = "r_band" in r
            L.append(f"| {r['graph']} | {r['n']:,} | {r['P']:,} | {r['k']} | {r['default']} "
                     f"| {fmt_ms(r['copy'])} | {fmt_ms(r['csr'])} | "
                     + (f"**{r['r_csr']:.2f}**" if not has else f"{r['r_csr']:.2f}") + " | "
                     + (f"{r['r_shifted']:.2f}" if "r_shifted" in r else "") + " | "
                     + (f"{r['r_torch']:.2f}" if "r_torch" in r else "") + " | "
                     + (f"{fmt_ms(r['band'])} | **{r['r_band']:.2f}** | "
                        f"{r['r_csr'] / r['r_band']:.1f}x | {r['rel']:.1e}" if has
                        else " | | | ")
                     + f" | {r['reps']} | {r['load'][0]:.1f}-{r['load'][1]:.1f} |")
    L += ["", "## Bit for bit (why the band kernel starts at 2,048 clients)", ""]
    L.append("One tile of each width from 1 to 40 columns, `W` of 1,000 nodes: the widths at "
             "which MKL's CSR product differs in any bit from a chain of fused multiply-adds "
             "in `W`'s CSR order (`torch.addcmul`), and from the band kernel.")
    L += ["", "| graph | dtype | widths where CSR != FMA chain | widths where CSR != band |",
          "|---|---|---|---|"]
    for b in bit_rows:
        band = "(no band plan)" if b["band"] is None else spans(b["band"])
        L.append(f"| {b['graph']} | {b['dtype']} | {spans(b['fma'])} | {band} |")
    L += ["", "## Reading", ""]
    for threads in sorted({r["threads"] for r in rows}):
        circ = [r for r in rows if r["threads"] == threads and "r_shifted" in r
                and r["default"] == "band"]
        if circ:
            L.append(f"- {threads} thread(s), circulant [1,2,3] (7 terms a row), P >= 64, "
                     "from 2,048 clients (where the band kernel is the default): the "
                     "band kernel " + "; ".join(
                         f"n = {r['n']:,} P = {r['P']:,}: {r['r_shifted']:.2f} -> "
                         f"{r['r_torch']:.2f} -> {r['r_band']:.2f}x a copy" for r in circ)
                     + " (torch's shifted adds -> torch's matrix form -> compiled, timed side "
                     "by side).")
        rr = [r for r in rows if r["threads"] == threads and r["graph"].startswith("random")]
        if rr:
            L.append(f"- {threads} thread(s), random_regular(6) (7 entries a row at random "
                     "columns, the CSR kernel): " + "; ".join(
                         f"n = {r['n']:,} P = {r['P']:,}: {r['r_csr']:.2f}x" for r in rr)
                     + " a copy. A row of `W X` gathers 7 rows of `X` from anywhere in it: "
                     "once `X` outgrows the cache each is a read from memory, 7 reads and a "
                     "write against a copy's read and write, so about 4x a copy is the floor "
                     "of any kernel on such a graph at large n, and 2x is out of reach. The "
                     "CSR kernel is further from it at large n: its column tiles hold all n "
                     "rows, at least 32 columns (12.8 MB at n = 100,000), and outgrow the "
                     "cache, so the gathers and the tile copies both stream from memory.")
        ring = [r for r in rows if r["threads"] == threads and r["graph"] == "ring"]
        big = [r for r in ring if r["n"] * r["P"] >= 10**8]
        if big:
            worst = max(big, key=lambda r: r["r_band"])
            L.append(f"- {threads} thread(s), ring, buffers of 10^8 elements and more (what a "
                     f"copy streams from memory): band {min(r['r_band'] for r in big):.2f}-"
                     f"{worst['r_band']:.2f}x a copy (worst at n = {worst['n']:,}, P = "
                     f"{worst['P']:,}), torch's band kernel "
                     f"{min(r['r_torch'] for r in big):.2f}-{max(r['r_torch'] for r in big):.2f}"
                     f"x, csr {min(r['r_csr'] for r in big):.2f}-"
                     f"{max(r['r_csr'] for r in big):.2f}x.")
        slower = [r for r in rows if r["threads"] == threads and r["default"] == "band"
                  and "band" in r and r["band"] > r["csr"]]
        if slower:
            L.append(f"- {threads} thread(s): where the band kernel is the default but took "
                     "longer than csr: " + "; ".join(
                         f"{r['graph']} n = {r['n']:,} P = {r['P']:,} ({fmt_ms(r['band'])} vs "
                         f"{fmt_ms(r['csr'])} ms)" for r in slower) + ".")
    two = [r for r in rows if r["threads"] > 1]
    stalled = [r for r in two if max(r["r_csr"], r.get("r_band", 0.0)) > 20]
    if stalled:
        w = max(stalled, key=lambda r: r["r_csr"])
        one = next((r for r in rows if r["threads"] == 1 and r["graph"] == w["graph"]
                    and r["n"] == w["n"] and r["P"] == w["P"]), None)
        L.append(f"- {len(stalled)} of the {len(two)} rows at {w['threads']} threads have a "
                 "kernel above 20x a copy, e.g. csr on the "
                 f"{w['graph']} at n = {w['n']:,}, P = {w['P']:,}: {fmt_ms(w['csr'])} ms"
                 + ("" if one is None else f" (one thread: {fmt_ms(one['csr'])} ms)") + ". On "
                 "a machine whose cores other jobs hold, a parallel region of two threads waits "
                 "for both: the copy and the CSR kernel run such regions; the band kernel, at "
                 "more than one thread, keeps each operation under torch's intra-op grain (one "
                 "thread). Read those rows with their load.")
    rels = [r[k] for r in rows for k in ("rel", "rel_shifted", "rel_torch")
            if r.get(k) is not None]
    L.append("- The band kernel's products (compiled, and torch's both forms) differ from the "
             f"CSR kernel's by at most {max(rels):.1e} relative (float32), as two orders of "
             "the same sums do.")
    return "\n".join(L) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n <= 10,000 only")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--max-elements", type=float, default=None,
                    help="leave out sizes with more than this many elements n * P")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
    sizes = [s for s in SIZES if (not args.quick or s[0] <= 10_000)
             and (args.max_elements is None or s[0] * s[1] <= args.max_elements)]
    out = args.out or (None if args.quick else Path(__file__).with_suffix(".md"))
    info = bench.machine_info(torch.device("cpu"))
    t0 = time.perf_counter()
    l0 = load()
    rows = []
    topos: dict[tuple[str, int], tf.Topology] = {}
    for n, P in sizes:
        for name in GRAPHS:
            if name.startswith("random") and n > RANDOM_MAX_N:
                continue
            topo = topos.setdefault((name, n), graph(name, n))
            for threads in args.threads:
                r = case(topo, P, threads) | {"graph": name}
                rows.append(r)
                print(f"{threads} thr  {name:18s} n={n:>9,} P={P:>5,}  copy {fmt_ms(r['copy'])} ms"
                      f"  csr {r['r_csr']:.2f}x  band {r.get('r_band', float('nan')):.2f}x"
                      f"  shifted {r.get('r_shifted', float('nan')):.2f}x  (load "
                      f"{r['load'][0]:.1f})", flush=True)
    torch.set_num_threads(1)
    command = " ".join(["python analysis/bench_gossip.py",
                        *(argv if argv is not None else sys.argv[1:])])
    text = report(rows, info, time.perf_counter() - t0, (l0, load()), bits(), command)
    if out is not None:
        out.write_text(text)
        out.with_suffix(".json").write_text(json.dumps(
            {"command": command, "rows": rows}, indent=1) + "\n")
        print(f"wrote {out}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
