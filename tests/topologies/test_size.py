"""Graphs too large for memory are refused before networkx allocates them (issue 13).

Constructors that build ``W`` from arrays (no networkx graph, issue 43) size themselves with
``topofl.graph.checks.w_bytes``; those that still draw a networkx graph with ``graph_bytes``.
"""

from __future__ import annotations

import gc
import time
import tracemalloc

import pytest

import topofl as tf
from topofl._utils.validation import memory as V
from topofl.graph.checks import w_bytes
from topofl.topologies import _registry as R

CASES = [
    (tf.topologies.ring, (10**9,), {}),
    (tf.topologies.complete, (10**6,), {}),
    (tf.topologies.torus, (10**5, 10**5), {}),
    (tf.topologies.grid, (10**5, 10**5), {}),
    (tf.topologies.star, (10**10,), {}),
    (tf.topologies.circulant, (10**9, [1, 2]), {}),
    (tf.topologies.erdos_renyi, (10**6, 0.5), {"seed": 0}),
    (tf.topologies.random_regular, (10**8, 100), {"seed": 0}),
    (tf.topologies.watts_strogatz, (10**9, 4, 0.1), {"seed": 0}),
    (tf.topologies.random_directed, (10**9, 5), {"seed": 0}),
    (tf.topologies.random_matching, (10**10,), {"seed": 0}),
    (tf.topologies.partite_match, (10**10, 2), {"seed": 0}),
]


@pytest.mark.parametrize(("fn", "args", "kw"), CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_huge_graphs_refused_at_once(fn, args, kw) -> None:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"needs about .* of memory \(estimated\), but only "):
        fn(*args, **kw)
    assert time.perf_counter() - t0 < 1.0


@pytest.mark.parametrize("spec", ["ring:n=1e9", "ring:n=1000000000", "complete:n=1e6",
                                  "exponential:n=1e10", "dcliques:n=1e10"])
def test_huge_specs_refused_at_once(spec: str) -> None:
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"needs about .* [GT]iB of memory \(estimated\)"):
        tf.topologies.build(spec)
    assert time.perf_counter() - t0 < 1.0


def test_spec_floats_for_int_parameters() -> None:
    assert tf.topologies.build("ring:n=1e1").params["n"] == 10
    assert tf.topologies.build("torus:rows=2.0,cols=3").n == 6
    with pytest.raises(ValueError, match=r"n must be an int, got 2\.5, which is not a whole"):
        tf.topologies.build("ring:n=2.5")


def test_refusal_follows_the_available_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    # ring(1000), W without a graph: 1000 * 80 + 2000 * 120 = 3.2e5 bytes estimated.
    assert w_bytes(1000, 2000) == 3.2e5
    monkeypatch.setattr(V, "available_memory", lambda: 320_000)
    assert tf.topologies.ring(1000).n == 1000
    monkeypatch.setattr(V, "available_memory", lambda: 319_999)
    with pytest.raises(ValueError, match=r"ring\(n=1000\) needs about 312 KiB of memory "
                                         r"\(estimated\), but only 312 KiB is available"):
        tf.topologies.ring(1000)
    # a weight function takes a networkx graph: the graph's estimate, 2.3e6 bytes
    assert V.graph_bytes(1000, 2000) == 2.3e6
    with pytest.raises(ValueError, match=r"ring\(n=1000\) needs about 2.19 MiB of memory"):
        tf.topologies.ring(1000, weights=tf.mixing.metropolis)
    monkeypatch.setattr(V, "available_memory", lambda: None)  # unknown: never refused
    assert tf.topologies.ring(1000).n == 1000


def test_a_ring_of_ten_million_is_no_longer_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 43: ring(10**7) was refused for 21.4 GiB (a networkx graph of ~2 KB a node); its W
    # is estimated at 3.2e9 bytes (measured at 10**6: 56 B a node kept, 232 B a node at peak).
    monkeypatch.setattr(V, "available_memory", lambda: 4 * 2**30)
    with pytest.raises(ValueError, match=r"ring\(n=10000000\) needs about 21.4 GiB"):
        tf.topologies.ring(10**7, weights=tf.mixing.metropolis)  # a function: networkx's graph
    built: list[int] = []
    monkeypatch.setattr(tf.Topology, "_from_edges",
                        classmethod(lambda cls, n, u, v, w, **kw: built.append(n)))
    tf.topologies.ring(10**7)  # passes the check (W itself is not built here: 2.3 GB)
    assert built == [10**7]
    with pytest.raises(ValueError, match=r"ring\(n=100000000\) needs about 29.8 GiB"):
        tf.topologies.ring(10**8)  # W's own estimate still refuses what cannot fit


@pytest.mark.parametrize(("fn", "args", "kw", "n", "arcs", "estimate"), [
    (tf.topologies.ring, (20000,), {}, 20000, 40000, w_bytes),
    (tf.topologies.complete, (300,), {}, 300, 300 * 299, w_bytes),
    (tf.topologies.torus, (100, 100), {}, 10000, 40000, w_bytes),
    (tf.topologies.exponential, (20000,), {}, 20000, 20000 * 15, w_bytes),
    (tf.topologies.undirected_exponential, (20000,), {}, 20000, 2 * 20000 * 15, w_bytes),
    (tf.topologies.random_regular, (20000, 2), {"seed": 0}, 20000, 40000, w_bytes),
    (tf.topologies.random_regular, (5000, 8), {"seed": 0}, 5000, 40000, V.graph_bytes),
    (tf.topologies.ring, (5000,), {"weights": tf.mixing.metropolis}, 5000, 10000,
     V.graph_bytes),
])
def test_estimate_bounds_the_measured_peak(fn, args, kw, n, arcs, estimate) -> None:  # type: ignore[no-untyped-def]
    fn(*args, **kw)  # once first: imports and caches are not the constructor's memory
    gc.collect()
    tracemalloc.start()
    try:
        fn(*args, **kw)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    est = estimate(n, arcs)
    # An upper bound, and not a wildly loose one.
    assert peak <= est <= 4 * peak


def test_available_memory_is_positive_here() -> None:
    avail = V.available_memory()
    assert avail is None or avail > 0


def test_registry_lower_bound_uses_the_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, float, str]] = []
    monkeypatch.setattr(R, "check_w_size", lambda n, a, w: calls.append((n, a, w)))
    tf.topologies.build("ring:n=5")
    assert calls == [(5, 10, "ring on n=5 nodes")]
