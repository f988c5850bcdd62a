"""Deterministic classic graphs: ring, torus, grid, complete, star, circulant.

Each constructor is a small pure function ``(n, ...) -> Topology`` that validates its input, lists
the edges of an undirected graph on the nodes ``0..n-1``, attaches mixing weights
(``metropolis`` by default, see :mod:`topofl.mixing`) and returns. With a named scheme the edges
are numpy arrays and ``W`` is computed from them directly (no networkx graph: a ring of ``10**6``
nodes costs its CSR arrays and takes well under a second); a weight function, which takes a
graph, gets the networkx graph it always got (``nx.cycle_graph(n)`` for the ring, ...). Both
give the same ``W``, bit for bit (``tests/topologies/test_classic.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import networkx as nx
import numpy as np

from topofl._utils.validation import check_graph_size, check_int
from topofl.graph import Topology
from topofl.graph.checks import check_w_size
from topofl.mixing import has_arc_form
from topofl.topologies._registry import GraphFamily, Param, register

__all__ = ["ring", "torus", "grid", "complete", "star", "circulant"]


def ring(n: int, *, weights: str | Callable[[nx.Graph], Any] = "metropolis") -> Topology:
    r"""Ring (cycle) on ``n`` nodes: node ``i`` is linked to ``i - 1`` and ``i + 1`` mod ``n``.

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 1`` (``n = 2`` is a single edge, ``n = 1`` a lone node).
    weights : str or callable, default ``"metropolis"``
        Weight scheme, see :mod:`topofl.mixing`. ``"metropolis"``, ``1/(max(d_i, d_j) + 1)``, is
        what the D-Cliques paper calls Metropolis-Hastings; ``"metropolis_hastings"`` is
        ``1/max(d_i, d_j)`` and leaves every node of a ring a zero self-weight.

    Returns
    -------
    Topology

    Notes
    -----
    With Metropolis weights every nonzero entry is 1/3 (for ``n >= 3``) and the eigenvalues are
    $1/3 + (2/3)\cos(2\pi k / n)$, so the spectral gap is $(2/3)(1 - \cos(2\pi/n)) = O(1/n^2)$.

    Examples
    --------
    >>> t = tf.topologies.ring(8)
    >>> t.num_edges, round(tf.spectral.spectral_gap(t), 4)
    (8, 0.1953)
    """
    n = check_int(n, "n", low=1)
    return _edges_or_networkx(n, lambda: _circulant_edges(n, [1]), lambda: nx.cycle_graph(n),
                              2 * n, weights, name="ring", params={"n": n}, what=f"ring(n={n})")


def _edges_or_networkx(
    n: int,
    edges: Callable[[], tuple[np.ndarray, np.ndarray]],
    graph: Callable[[], nx.Graph],
    arcs: int,
    weights: str | Callable[[nx.Graph], Any],
    *,
    name: str,
    params: dict[str, Any],
    what: str,
) -> Topology:
    # A named scheme: W from the edge arrays u, v = edges(), no graph. Any other weights (a
    # function of a graph, or a name the scheme check will refuse) gets the networkx graph
    # graph(), as it always did. arcs (each direction counted) sizes the memory check.
    if has_arc_form(weights):
        check_w_size(n, arcs, what)
        u, v = edges()
        return Topology._from_edges(n, u, v, weights, name=name, params=params)
    check_graph_size(n, arcs, what)
    return Topology.from_networkx(graph(), weights, keep_graph=False, name=name, params=params)


def _circulant_edges(n: int, offsets: Iterable[int]) -> tuple[np.ndarray, np.ndarray]:
    # {i, i + o mod n} for every node i and offset o (the edges {i, i - o} are the same ones);
    # repeats (o and n - o) and self-loops are dropped by Topology._from_edges.
    idx = np.arange(n, dtype=np.int64)
    offs = list(offsets)
    return np.tile(idx, len(offs)), np.concatenate([(idx + o) % n for o in offs])


def _grid_edges(rows: int, cols: int, periodic: bool) -> tuple[np.ndarray, np.ndarray]:
    # Node r * cols + c linked to its right and lower neighbours, with wrap-around if periodic
    # (with 2 rows or columns the wrap-around edge repeats an edge, with 1 it is a self-loop:
    # both dropped, as networkx adds no wrap-around below 3).
    node = np.arange(rows * cols, dtype=np.int64)
    r, c = np.divmod(node, cols)
    if periodic:
        right, down = node, node
    else:
        right, down = node[c < cols - 1], node[r < rows - 1]
    rr, rc = np.divmod(right, cols)
    dr, dc = np.divmod(down, cols)
    u = np.concatenate([right, down])
    v = np.concatenate([rr * cols + (rc + 1) % cols, ((dr + 1) % rows) * cols + dc])
    return u, v


def _grid_graph(rows: int, cols: int, periodic: bool) -> nx.Graph:
    # networkx's grid on the nodes (r, c), renumbered row by row to r * cols + c.
    G = nx.grid_2d_graph(rows, cols, periodic=periodic)
    return nx.relabel_nodes(G, {(r, c): r * cols + c for r in range(rows) for c in range(cols)})


def torus(
    rows: int, cols: int, *, weights: str | Callable[[nx.Graph], Any] = "metropolis"
) -> Topology:
    """Two-dimensional torus (periodic grid) of ``rows x cols`` nodes.

    Node ``r * cols + c`` is linked to its four neighbours with wrap-around; with 2 rows (or
    columns) the two wrap-around neighbours coincide, with 1 the torus is a ring.

    Parameters
    ----------
    rows, cols : int
        Both ``>= 1``.

    Examples
    --------
    >>> t = tf.topologies.torus(4, 4)
    >>> t.num_edges, sorted(set(t.in_degree.tolist()))
    (32, [4])
    """
    rows = check_int(rows, "rows", low=1)
    cols = check_int(cols, "cols", low=1)
    return _edges_or_networkx(
        rows * cols, lambda: _grid_edges(rows, cols, True), lambda: _grid_graph(rows, cols, True),
        4 * rows * cols, weights, name="torus", params={"rows": rows, "cols": cols},
        what=f"torus(rows={rows}, cols={cols})")


def grid(
    rows: int, cols: int, *, weights: str | Callable[[nx.Graph], Any] = "metropolis"
) -> Topology:
    """Two-dimensional grid (no wrap-around) of ``rows x cols`` nodes, numbered row by row.

    Examples
    --------
    >>> t = tf.topologies.grid(2, 3)
    >>> t.num_edges, t.in_degree.tolist()
    (7, [2, 3, 2, 2, 3, 2])
    """
    rows = check_int(rows, "rows", low=1)
    cols = check_int(cols, "cols", low=1)
    return _edges_or_networkx(
        rows * cols, lambda: _grid_edges(rows, cols, False),
        lambda: _grid_graph(rows, cols, False), 4 * rows * cols, weights, name="grid",
        params={"rows": rows, "cols": cols}, what=f"grid(rows={rows}, cols={cols})")


def complete(n: int, *, weights: str | Callable[[nx.Graph], Any] = "metropolis") -> Topology:
    """Complete graph on ``n`` nodes; with Metropolis weights ``W = 11^T / n`` exactly.

    Examples
    --------
    >>> tf.topologies.complete(4).W.toarray()
    array([[0.25, 0.25, 0.25, 0.25],
           [0.25, 0.25, 0.25, 0.25],
           [0.25, 0.25, 0.25, 0.25],
           [0.25, 0.25, 0.25, 0.25]])
    """
    n = check_int(n, "n", low=1)
    return _edges_or_networkx(
        n, lambda: np.triu_indices(n, 1), lambda: nx.complete_graph(n), n * (n - 1), weights,
        name="complete", params={"n": n}, what=f"complete(n={n})")


def star(n: int, *, weights: str | Callable[[nx.Graph], Any] = "metropolis") -> Topology:
    """Star on ``n`` nodes: node 0 is the hub linked to every other node.

    Examples
    --------
    >>> t = tf.topologies.star(5)
    >>> t.in_degree.tolist()
    [4, 1, 1, 1, 1]
    """
    n = check_int(n, "n", low=1)
    return _edges_or_networkx(
        n, lambda: (np.zeros(n - 1, dtype=np.int64), np.arange(1, n, dtype=np.int64)),
        lambda: nx.star_graph(n - 1), 2 * (n - 1), weights, name="star", params={"n": n},
        what=f"star(n={n})")


def circulant(
    n: int, offsets: Iterable[int], *, weights: str | Callable[[nx.Graph], Any] = "metropolis"
) -> Topology:
    """Circulant graph: node ``i`` is linked to ``i ± o mod n`` for every offset ``o``.

    ``circulant(n, [1])`` is the ring. Offsets ``o`` and ``n - o`` give the same edges.

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 2``.
    offsets : iterable of int
        Non-empty, each in ``[1, n-1]``. Not modified.

    Examples
    --------
    >>> tf.topologies.circulant(8, [1, 2]).edges_per_node
    4.0
    """
    n = check_int(n, "n", low=2)
    try:
        raw = list(offsets)
    except TypeError:
        raise TypeError(
            f"offsets must be an iterable of ints, got {type(offsets).__name__}"
        ) from None
    if not raw:
        raise ValueError("offsets must hold at least one offset in [1, n-1], got none")
    offs = sorted({check_int(o, "offset", low=1, high=n - 1) for o in raw})
    return _edges_or_networkx(
        n, lambda: _circulant_edges(n, offs), lambda: nx.circulant_graph(n, offs),
        2 * n * len(offs), weights, name="circulant", params={"n": n, "offsets": offs},
        what=f"circulant(n={n}, {len(offs)} offsets)")


# ---------------------------------------------------------------------------- registry
def _divisor_pair(n: int, rng: np.random.Generator) -> tuple[int, int]:
    divs = [d for d in range(1, n + 1) if n % d == 0]
    r = int(rng.choice(divs))
    return r, n // r


def _spec_offsets(offsets: Any) -> list[int]:
    # In a spec string several offsets are written "offsets=1;3".
    if isinstance(offsets, str):
        try:
            return [int(o) for o in offsets.split(";")]
        except ValueError:
            raise ValueError(f"offsets must look like '1;3', got {offsets!r}") from None
    return [offsets] if isinstance(offsets, int) else list(offsets)


_N = Param("n", int, "number of nodes", low=1)

register(GraphFamily(
    "ring", ring, (_N,), lambda n, rng: {"n": n}, description="cycle, 2 neighbours per node"))
register(GraphFamily(
    "torus", torus,
    (Param("rows", int, "rows", low=1), Param("cols", int, "columns", low=1)),
    lambda n, rng: dict(zip(("rows", "cols"), _divisor_pair(n, rng))),
    description="periodic 2-D grid, 4 neighbours per node"))
register(GraphFamily(
    "grid", grid,
    (Param("rows", int, "rows", low=1), Param("cols", int, "columns", low=1)),
    lambda n, rng: dict(zip(("rows", "cols"), _divisor_pair(n, rng))),
    description="2-D grid without wrap-around"))
register(GraphFamily(
    "complete", complete, (_N,), lambda n, rng: {"n": n}, description="every pair linked"))
register(GraphFamily(
    "star", star, (_N,), lambda n, rng: {"n": n}, description="hub 0 linked to all others"))
register(GraphFamily(
    "circulant", circulant,
    (Param("n", int, "number of nodes", low=2),
     Param("offsets", list, "offsets o in [1, n-1]: i is linked to i±o")),
    lambda n, rng: None if n < 2 else {
        "n": n,
        "offsets": [1] + rng.integers(1, n, size=int(rng.integers(0, 3))).tolist()},
    description="node i linked to i±o for each offset o",
    from_spec=lambda n, offsets: circulant(n, _spec_offsets(offsets))))
