"""Random undirected graphs: Erdős–Rényi, random regular, Watts–Strogatz.

Each constructor takes a keyword-only ``seed`` (``int`` or ``numpy.random.Generator``) and passes
one generator to networkx, so the same seed gives the same graph and the global RNG is never
touched. By default the result is required to be connected: a disconnected draw is redrawn from
the same generator at most ``max_tries`` times (so the result is still a pure function of the
seed) and then a :class:`~topofl.exceptions.NotConnectedError` says why. ``connected=False``
accepts any draw.

The draws stay networkx's: its algorithms consume the generator, so a graph drawn by topofl's own
code would be another graph for the same seed. The result keeps only ``W``: the networkx graph
is dropped once ``W`` is computed, and ``Topology.graph`` is built from ``W`` when asked for.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import networkx as nx
import numpy as np

from topofl._utils.rng import Seed, as_generator
from topofl._utils.validation import check_bool, check_graph_size, check_int, check_real
from topofl.exceptions import NotConnectedError
from topofl.graph import Topology
from topofl.mixing import has_arc_form
from topofl.topologies._registry import GraphFamily, Param, register

__all__ = ["erdos_renyi", "random_regular", "watts_strogatz"]


def _seed_param(seed: Seed) -> int | None:
    return int(seed) if isinstance(seed, (int, np.integer)) else None


def _draw_connected(
    draw: Callable[[], nx.Graph], *, connected: bool, max_tries: int, what: str, hint: str
) -> nx.Graph:
    G = draw()
    if not connected:
        return G
    for _ in range(max_tries - 1):
        if nx.is_connected(G):
            return G
        G = draw()
    if nx.is_connected(G):
        return G
    raise NotConnectedError(
        f"{what}: no connected graph in {max_tries} draws; {hint} "
        "(or pass connected=False to accept a disconnected graph, or raise max_tries)"
    )


def erdos_renyi(
    n: int,
    p: float,
    *,
    seed: Seed,
    connected: bool = True,
    max_tries: int = 100,
    weights: str | Callable[[nx.Graph], Any] = "metropolis",
) -> Topology:
    r"""Erdős–Rényi graph $G(n, p)$: each of the $\binom{n}{2}$ edges drawn with probability ``p``.

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 1``.
    p : float
        Edge probability in ``[0, 1]``. Connectivity needs roughly $p > \ln(n) / n$.
    seed : int or numpy.random.Generator
        Keyword-only; the same seed gives the same graph.
    connected : bool, default True
        Redraw (at most ``max_tries`` times) until the graph is connected.
    max_tries : int, default 100
    weights : str or callable, default ``"metropolis"``
        See :mod:`topofl.mixing`: ``"metropolis"`` is the D-Cliques paper's
        "Metropolis-Hastings" rule ``1/(max(d_i, d_j) + 1)``, not ``"metropolis_hastings"``.

    Raises
    ------
    NotConnectedError
        If ``connected`` and no connected draw was found.

    Examples
    --------
    >>> t = tf.topologies.erdos_renyi(20, 0.3, seed=1)
    >>> t.n, t.is_undirected, t.W.nnz == tf.topologies.erdos_renyi(20, 0.3, seed=1).W.nnz
    (20, True, True)
    """
    n = check_int(n, "n", low=1)
    p = check_real(p, "p", low=0, high=1)
    max_tries = check_int(max_tries, "max_tries", low=1)
    connected = check_bool(connected, "connected")
    check_graph_size(n, p * n * (n - 1), f"erdos_renyi(n={n}, p={p:g})")
    rng = as_generator(seed)
    if connected and n > 1 and p == 0:
        raise NotConnectedError(f"erdos_renyi(n={n}, p=0) has no edges and is never connected")
    G = _draw_connected(
        lambda: nx.gnp_random_graph(n, p, seed=rng),
        connected=connected,
        max_tries=max_tries,
        what=f"erdos_renyi(n={n}, p={p:g})",
        hint=f"p should exceed about ln(n)/n = {math.log(max(n, 2)) / n:.3g}",
    )
    return Topology.from_networkx(
        G, weights, keep_graph=False, name="erdos_renyi",
        params={"n": n, "p": p, "seed": _seed_param(seed)},
    )


def random_regular(
    n: int,
    d: int,
    *,
    seed: Seed,
    connected: bool = True,
    max_tries: int = 100,
    weights: str | Callable[[nx.Graph], Any] = "metropolis",
) -> Topology:
    """Uniformly random ``d``-regular graph on ``n`` nodes.

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 1``.
    d : int
        Degree, ``0 <= d <= n - 1`` with ``n * d`` even.
    seed : int or numpy.random.Generator
        Keyword-only.
    connected : bool, default True
        Require a connected graph. For ``d >= 3`` almost every draw is connected and a
        disconnected one is redrawn; for ``d = 2`` the connected 2-regular graphs are exactly the
        Hamiltonian cycles, so one is drawn directly as a random cyclic order of the nodes
        (uniform among connected 2-regular graphs); ``d <= 1`` is connected only for ``n <= 2``.

    Raises
    ------
    ValueError
        If ``d`` is out of range or ``n * d`` is odd.
    NotConnectedError
        If ``connected`` and no connected graph with these parameters exists.

    Examples
    --------
    >>> t = tf.topologies.random_regular(10, 3, seed=0)
    >>> sorted(set(t.in_degree.tolist())), t.num_edges
    ([3], 15)
    """
    n = check_int(n, "n", low=1)
    d = check_int(d, "d", low=0, high=n - 1)
    if (n * d) % 2:
        raise ValueError(f"n * d must be even for a d-regular graph, got n={n}, d={d}")
    max_tries = check_int(max_tries, "max_tries", low=1)
    connected = check_bool(connected, "connected")
    check_graph_size(n, n * d, f"random_regular(n={n}, d={d})")
    rng = as_generator(seed)
    params = {"n": n, "d": d, "seed": _seed_param(seed)}
    if connected and n > 2 and d <= 1:
        raise NotConnectedError(
            f"a {d}-regular graph on n={n} > 2 nodes is never connected; use d >= 2 "
            "(or connected=False)"
        )
    if connected and d == 2:
        order = rng.permutation(n)
        if has_arc_form(weights):  # W from the cycle's edges, no graph
            return Topology._from_edges(n, order, np.roll(order, -1), weights,
                                        name="random_regular", params=params)
        G = nx.Graph()
        G.add_nodes_from(range(n))
        G.add_edges_from(zip(order.tolist(), np.roll(order, -1).tolist()))
    else:
        G = _draw_connected(
            lambda: nx.random_regular_graph(d, n, seed=rng),
            connected=connected,
            max_tries=max_tries,
            what=f"random_regular(n={n}, d={d})",
            hint="use a larger d",
        )
    return Topology.from_networkx(G, weights, keep_graph=False, name="random_regular",
                                  params=params)


def watts_strogatz(
    n: int,
    k: int,
    p: float,
    *,
    seed: Seed,
    connected: bool = True,
    max_tries: int = 100,
    weights: str | Callable[[nx.Graph], Any] = "metropolis",
) -> Topology:
    """Watts–Strogatz small-world graph.

    Start from a ring where each node is linked to its ``k`` nearest neighbours (``k / 2`` on each
    side), then rewire each edge ``(i, i + j)`` with probability ``p`` to a uniformly random
    node (avoiding self-loops and duplicates), as in ``networkx.watts_strogatz_graph``.

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 3``.
    k : int
        Even, ``2 <= k <= n - 1``.
    p : float
        Rewiring probability in ``[0, 1]``.

    Examples
    --------
    >>> t = tf.topologies.watts_strogatz(12, 4, 0.0, seed=0)
    >>> t.num_edges, sorted(set(t.in_degree.tolist()))
    (24, [4])
    """
    n = check_int(n, "n", low=3)
    k = check_int(k, "k", low=2, high=n - 1)
    if k % 2:
        raise ValueError(f"k must be even (k/2 neighbours on each side), got k={k}")
    p = check_real(p, "p", low=0, high=1)
    max_tries = check_int(max_tries, "max_tries", low=1)
    connected = check_bool(connected, "connected")
    check_graph_size(n, n * k, f"watts_strogatz(n={n}, k={k})")
    rng = as_generator(seed)
    G = _draw_connected(
        lambda: nx.watts_strogatz_graph(n, k, p, seed=rng),
        connected=connected,
        max_tries=max_tries,
        what=f"watts_strogatz(n={n}, k={k}, p={p:g})",
        hint="use a larger k or a smaller p",
    )
    return Topology.from_networkx(
        G, weights, keep_graph=False, name="watts_strogatz",
        params={"n": n, "k": k, "p": p, "seed": _seed_param(seed)},
    )


# ---------------------------------------------------------------------------- registry
def _er_example(n: int, rng: np.random.Generator) -> dict[str, Any]:
    p = 1.0 if n <= 2 else min(1.0, 3.0 * math.log(n) / n + 0.05)
    return {"n": n, "p": p}


def _rr_example(n: int, rng: np.random.Generator) -> dict[str, Any]:
    if n <= 3:
        return {"n": n, "d": n - 1}
    ds = [d for d in range(2, min(n - 1, 6) + 1) if (n * d) % 2 == 0]
    return {"n": n, "d": int(rng.choice(ds))}


def _ws_example(n: int, rng: np.random.Generator) -> dict[str, Any] | None:
    if n < 3:
        return None
    return {"n": n, "k": 4 if n > 4 else 2, "p": float(rng.choice([0.0, 0.1, 0.3]))}


register(GraphFamily(
    "erdos_renyi", erdos_renyi,
    (Param("n", int, "number of nodes", low=1), Param("p", float, "edge probability", 0, 1)),
    _er_example, random=True, description="G(n, p), redrawn until connected"))
register(GraphFamily(
    "random_regular", random_regular,
    (Param("n", int, "number of nodes", low=1),
     Param("d", int, "degree (n*d even)", low=0, high="n-1")),
    _rr_example, random=True, description="uniform random d-regular graph"))
register(GraphFamily(
    "watts_strogatz", watts_strogatz,
    (Param("n", int, "number of nodes", low=3),
     Param("k", int, "ring neighbours (even)", low=2, high="n-1"),
     Param("p", float, "rewiring probability", 0, 1)),
    _ws_example, random=True, description="small world: ring lattice with rewired edges"))
