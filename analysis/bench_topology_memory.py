"""What a Topology costs to build and to hold, before and after issue 43; writes the Markdown.

Issue 43 (item 2): every ``Topology`` held a networkx graph, about 2 KB a node, whatever the run
needed of it, and ``ring(10**7)`` was refused for 21.4 GiB. Now the graph is built from ``W``
when asked for, and ring / exponential build ``W`` from numpy arrays. For ring, exponential and
random_regular (d = 10) at n = 10^4, 10^5, 10^6 this measures, for both code paths:

* construction time: wall clock of one call, without tracemalloc (one run: the machine is
  shared, so read the ratios rather than the seconds);
* *held*: the bytes still allocated once the topology is built (tracemalloc's current size
  after ``gc.collect()``, the topology alive), i.e. what the Topology holds; ``W``'s own arrays
  (``data``, ``indices``, ``indptr``) are given beside it;
* *peak*: tracemalloc's peak during construction (a second call, traced).

*before* is the networkx path, reproduced through the public API: ``Topology.from_networkx`` on
``nx.cycle_graph(n)`` (ring); ``Topology.from_matrix(W)`` followed by building its ``graph``
(exponential: what ``from_matrix`` did eagerly); the same networkx draw as ``random_regular``
(``nx.random_regular_graph`` with the same generator, redrawn until connected) then
``Topology.from_networkx``. *after* is the constructor of ``topofl.topologies``. Both must give
the same ``W`` bit for bit (checked here, each row). The last column is the time the *after*
topology takes to build its networkx graph the first time ``.graph`` is read (the cost is
deferred to whoever asks, not removed).

Usage::

    python analysis/bench_topology_memory.py              # ~10 minutes on 2 cores
    python analysis/bench_topology_memory.py --sizes 1000 10000 --out /tmp/x.md   # quick
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import networkx as nx
import numpy as np

import topofl as tf
from topofl import Topology
from topofl._utils.markdown import table
from topofl.tools.bench import loadavg, machine_info
from topofl.topologies.random import _draw_connected

ROOT = Path(__file__).resolve().parent.parent
SEED = 0
DEGREE = 10


# ------------------------------------------------------------------------------ the two paths
def ring_before(n: int) -> Topology:
    return Topology.from_networkx(nx.cycle_graph(n), "metropolis", name="ring",
                                  params={"n": n})


def ring_after(n: int) -> Topology:
    return tf.topologies.ring(n)


def exponential_before(n: int) -> Topology:
    t = Topology.from_matrix(tf.topologies.exponential(n).W, name="exponential",
                             params={"n": n})
    t.graph  # noqa: B018 (from_matrix built it eagerly before issue 43)
    return t


def exponential_after(n: int) -> Topology:
    return tf.topologies.exponential(n)


def random_regular_before(n: int) -> Topology:
    rng = np.random.default_rng(SEED)
    G = _draw_connected(lambda: nx.random_regular_graph(DEGREE, n, seed=rng), connected=True,
                        max_tries=100, what="", hint="")
    return Topology.from_networkx(G, "metropolis", name="random_regular",
                                  params={"n": n, "d": DEGREE, "seed": SEED})


def random_regular_after(n: int) -> Topology:
    return tf.topologies.random_regular(n, DEGREE, seed=SEED)


FAMILIES: dict[str, tuple[Callable[[int], Topology], Callable[[int], Topology]]] = {
    "ring": (ring_before, ring_after),
    "exponential": (exponential_before, exponential_after),
    f"random_regular (d={DEGREE})": (random_regular_before, random_regular_after),
}


# ------------------------------------------------------------------------------ measurements
def timed(build: Callable[[int], Topology], n: int) -> tuple[float, Topology]:
    gc.collect()
    t0 = time.perf_counter()
    top = build(n)
    return time.perf_counter() - t0, top


def traced(build: Callable[[int], Topology], n: int) -> tuple[int, int]:
    """(held, peak) bytes of one traced construction."""
    gc.collect()
    tracemalloc.start()
    try:
        top = build(n)
        _, peak = tracemalloc.get_traced_memory()
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del top
    return held, peak


def w_nbytes(t: Topology) -> int:
    return int(t.W.data.nbytes + t.W.indices.nbytes + t.W.indptr.nbytes)


def same_w(a: Topology, b: Topology) -> bool:
    return all(x.dtype == y.dtype and x.tobytes() == y.tobytes()
               for x, y in ((a.W.data, b.W.data), (a.W.indices, b.W.indices),
                            (a.W.indptr, b.W.indptr)))


def measure(sizes: list[int]) -> list[dict[str, object]]:
    for before, after in FAMILIES.values():  # imports and caches are nobody's construction
        before(100).graph  # noqa: B018
        after(100).graph  # noqa: B018
    rows: list[dict[str, object]] = []
    for family, (before, after) in FAMILIES.items():
        for n in sizes:
            t_b, top_b = timed(before, n)
            t_a, top_a = timed(after, n)
            assert top_a.__dict__["_graph"] is None, family  # built no graph
            identical = same_w(top_a, top_b)
            w = w_nbytes(top_a)
            t0 = time.perf_counter()
            g = top_a.graph
            t_g = time.perf_counter() - t0
            assert set(g.edges()) == set(top_b.graph.edges()), family
            del top_a, top_b, g
            held_b, peak_b = traced(before, n)
            held_a, peak_a = traced(after, n)
            row = {"family": family, "n": n, "t_before": t_b, "t_after": t_a,
                   "held_before": held_b, "held_after": held_a, "peak_before": peak_b,
                   "peak_after": peak_a, "w_bytes": w, "identical": identical, "t_graph": t_g}
            print(row, flush=True)
            rows.append(row)
    return rows


# ------------------------------------------------------------------------------ report
def _mb(b: object) -> str:
    return f"{float(b) / 1e6:,.1f}"  # type: ignore[arg-type]


def reading(rows: list[dict[str, object]]) -> list[str]:
    """The conclusions, from the numbers of this run (largest n of each family)."""
    out = []
    for family in dict.fromkeys(str(r["family"]) for r in rows):
        r = max((r for r in rows if r["family"] == family), key=lambda r: int(r["n"]))  # type: ignore[call-overload]
        n = int(r["n"])  # type: ignore[call-overload]
        f = {k: float(v) for k, v in r.items() if k not in ("family", "identical")}  # type: ignore[arg-type]
        out.append(
            f"- {family}, n = {n:,}: built in {f['t_before']:.3g} s -> {f['t_after']:.3g} s "
            f"({f['t_before'] / f['t_after']:,.1f}x); holds {f['held_before'] / n:,.0f} -> "
            f"{f['held_after'] / n:,.0f} bytes a node ({f['held_before'] / f['held_after']:,.0f}x "
            f"less; `W`'s arrays are {f['w_bytes'] / n:,.0f} bytes a node); peak "
            f"{_mb(f['peak_before'])} -> {_mb(f['peak_after'])} MB; `W` "
            f"{'bit-identical' if r['identical'] else 'DIFFERENT'}; its `.graph`, when first "
            f"read, takes {f['t_graph']:.3g} s to build.")
    out += [
        "- After the change a topology holds its `W` and (to a few hundred bytes of Python "
        "objects) nothing else: O(nnz) bytes. The Metropolis ring keeps the int64 indices it "
        "always had (`W` is bit-identical, index dtypes included).",
        "- random_regular keeps networkx's draw (`nx.random_regular_graph` consumes the seed's "
        "generator: an algorithm of topofl's own would give another graph for the same seed), "
        "so its time and peak stay networkx's; it no longer builds or keeps a digraph.",
        "- The graph is deferred, not gone: the last column is what the first read of `.graph` "
        "costs. Training, spectra and records read `W` only.",
    ]
    return out


def report(rows: list[dict[str, object]], machine: dict[str, str], load: tuple[float, float],
           wall: float, command: str) -> str:
    body = []
    for r in rows:
        tb, ta = float(r["t_before"]), float(r["t_after"])  # type: ignore[arg-type]
        hb, ha = float(r["held_before"]), float(r["held_after"])  # type: ignore[arg-type]
        n = int(r["n"])  # type: ignore[call-overload]
        body.append([
            str(r["family"]), f"{n:,}", f"{tb:.3f}", f"{ta:.3f}", f"**{tb / ta:,.0f}x**",
            _mb(hb), _mb(ha), f"{hb / n:,.0f} / {ha / n:,.0f}", f"**{hb / ha:,.0f}x**",
            _mb(r["peak_before"]), _mb(r["peak_after"]), _mb(r["w_bytes"]),
            "yes" if r["identical"] else "**NO**", f"{float(r['t_graph']):.2f}",  # type: ignore[arg-type]
        ])
    head = ["family", "n", "before s", "after s", "speed-up", "held before MB",
            "held after MB", "held B/node before / after", "held ratio", "peak before MB",
            "peak after MB", "W arrays MB", "W bit-identical", "`.graph` on demand s"]
    m = machine
    return "\n".join([
        "# What a Topology costs: before and after issue 43 (the graph built from W on demand)",
        "",
        f"`{command}`, {m['date']}. Machine: {m['cpu']} ({m['cpu_kind']}); Python "
        f"{m['python']}, numpy {m['numpy']}, topofl {m['topofl']}. 1-minute load average at "
        f"the start and the end: {load[0]:.1f}, {load[1]:.1f} on 2 CPUs (the machine was shared "
        f"with other jobs: one run each, read the ratios). Whole run: {wall:.0f} s.",
        "",
        "*before*: the networkx path (a frozen `nx.DiGraph` kept in every Topology); *after*: "
        "`tf.topologies.ring(n)`, `exponential(n)`, `random_regular(n, 10, seed=0)` as they are "
        "now. *held*: bytes still allocated after construction with the topology alive "
        "(tracemalloc, after `gc.collect()`); *peak*: tracemalloc's peak during construction; "
        "*W arrays*: `W.data`, `W.indices`, `W.indptr`. Times: wall clock of one untraced "
        "call. See the script's docstring for how *before* is reproduced.",
        "",
        table(head, body),
        "",
        "## Reading",
        "",
        *reading(rows),
        "",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**4, 10**5, 10**6])
    parser.add_argument("--out", default=str(ROOT / "analysis" / "bench_topology_memory.md"))
    args = parser.parse_args(argv)
    load0, t0 = loadavg(), time.perf_counter()
    rows = measure(args.sizes)
    sizes = " ".join(str(s) for s in args.sizes)
    command = ("python analysis/bench_topology_memory.py"
               + ("" if args.sizes == [10**4, 10**5, 10**6] else f" --sizes {sizes}"))
    text = report(rows, machine_info(), (load0, loadavg()), time.perf_counter() - t0, command)
    Path(args.out).write_text(text)
    print(text)
    return 0 if all(r["identical"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
