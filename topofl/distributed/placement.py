"""Which rank holds which clients: a partition of the graph that cuts few edges.

The rule (:func:`place`), for ``k`` ranks and ``n`` clients:

* a static graph with groups (D-Cliques' cliques): whole groups per rank, consecutive groups
  together (the inter-clique edges of a ring of cliques then stay inside a rank), balanced by
  the number of clients; if there are fewer groups than ranks, as a graph without groups;
* a static graph without groups: contiguous blocks of client ids (what a ring, a torus or any
  graph numbered along its structure wants) or a recursive Kernighan-Lin bisection of the
  undirected graph (networkx, started from those blocks, sizes kept), whichever cuts fewer
  arcs (blocks on a tie);
* a time-varying graph (its arcs change every round, so no static cut is good for all
  rounds) and algorithms without a graph: contiguous blocks.

Blocks differ in size by at most one client; the rows of a rank are its clients in
increasing id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np
import numpy.typing as npt

from topofl.graph import Topology, as_time_varying

__all__ = ["Placement", "place", "blocks"]

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Placement:
    """The rank of every client.

    Attributes
    ----------
    owner : numpy.ndarray
        ``(n,)`` int64: the rank holding client ``i``.
    size : int
        Number of ranks.
    rule : str
        ``"blocks"``, ``"cliques"`` or ``"kernighan_lin"``.

    Examples
    --------
    >>> from topofl.distributed.placement import place
    >>> p = place(tf.topologies.ring(6), 2)
    >>> p.rule, p.owner.tolist(), p.rows(1).tolist(), p.cut_arcs(tf.topologies.ring(6))
    ('blocks', [0, 0, 0, 1, 1, 1], [3, 4, 5], 4)
    """

    owner: IntArray
    size: int
    rule: str

    @property
    def n(self) -> int:
        """Number of clients."""
        return int(self.owner.size)

    def rows(self, rank: int) -> IntArray:
        """The clients of ``rank``, in increasing id."""
        out: IntArray = np.flatnonzero(self.owner == rank).astype(np.int64)
        return out

    def counts(self) -> list[int]:
        """Clients per rank."""
        return [int(c) for c in np.bincount(self.owner, minlength=self.size)]

    def cut_arcs(self, topology: Topology) -> int:
        """Arcs ``j -> i`` (``i != j``, ``W[i, j] > 0``) whose ends are on different ranks."""
        W = topology.W.tocoo()
        off = W.row != W.col
        return int(np.count_nonzero(self.owner[W.row[off]] != self.owner[W.col[off]]))

    def cut_rows(self, topology: Topology) -> int:
        """Rows that must cross ranks in one gossip step: pairs (client ``j``, rank ``r``)
        with ``r`` not ``j``'s owner and some client of ``r`` receiving from ``j``. The
        minimum any exchange of whole rows can send under this placement."""
        W = topology.W.tocoo()
        pairs = {(int(j), int(self.owner[i])) for i, j in zip(W.row, W.col)
                 if self.owner[i] != self.owner[j]}
        return len(pairs)

    def to_dict(self) -> dict[str, Any]:
        """JSON description for the records header."""
        return {"rule": self.rule, "ranks": self.size, "clients_per_rank": self.counts(),
                "owner": self.owner.tolist()}


def blocks(n: int, k: int) -> IntArray:
    """``(n,)`` owners of ``k`` contiguous blocks whose sizes differ by at most one.

    Examples
    --------
    >>> from topofl.distributed.placement import blocks
    >>> blocks(7, 3).tolist()
    [0, 0, 0, 1, 1, 2, 2]
    """
    base, extra = divmod(n, k)
    sizes = [base + (1 if r < extra else 0) for r in range(k)]
    return np.repeat(np.arange(k, dtype=np.int64), sizes)


def _cliques(groups: tuple[tuple[int, ...], ...], n: int, k: int) -> IntArray | None:
    """Whole groups per rank, consecutive groups together, balanced by size; ``None`` when
    some rank would get no client."""
    owner = np.empty(n, dtype=np.int64)
    start = 0
    for g in groups:
        mid = start + len(g) / 2.0
        owner[list(g)] = min(k - 1, int(mid * k / n))
        start += len(g)
    if np.unique(owner).size < k:
        return None
    return owner


def _kernighan_lin(topology: Topology, k: int, seed: int) -> IntArray:
    """Recursive Kernighan-Lin bisection of the undirected graph, each split started from
    contiguous blocks with the sizes the ranks need (the swaps keep the sizes)."""
    W = topology.W.tocoo()
    G = nx.Graph()
    G.add_nodes_from(range(topology.n))
    G.add_edges_from((int(i), int(j)) for i, j in zip(W.row, W.col) if i != j)
    owner = np.empty(topology.n, dtype=np.int64)

    def split(nodes: list[int], first: int, ranks: int) -> None:
        if ranks == 1:
            owner[nodes] = first
            return
        left = ranks // 2
        m = round(len(nodes) * left / ranks)
        sub = G.subgraph(nodes)
        a, b = nx.algorithms.community.kernighan_lin_bisection(
            sub, partition=(set(nodes[:m]), set(nodes[m:])), max_iter=10, seed=seed)
        split(sorted(a), first, left)
        split(sorted(b), first + left, ranks - left)

    split(list(range(topology.n)), 0, k)
    return owner


def place(topology: Any, size: int, *, n: int | None = None, seed: int = 0) -> Placement:
    """The placement of ``n`` clients on ``size`` ranks (see the module docstring).

    Parameters
    ----------
    topology : Topology, TimeVarying or None
    size : int
        Number of ranks.
    n : int, optional
        Number of clients (needed without a topology).
    seed : int, default 0
        Seeds the Kernighan-Lin swaps.

    Examples
    --------
    D-Cliques: whole cliques per rank, no clique split.

    >>> from topofl.distributed.placement import place
    >>> topo = tf.topologies.dcliques(tf.data.federate("digits", "shards", 20, seed=0)
    ...                               .label_distributions, clique_size=5, seed=0)
    >>> p = place(topo, 2)
    >>> p.rule, p.counts(), all(len({int(p.owner[i]) for i in g}) == 1 for g in topo.groups)
    ('cliques', [10, 10], True)
    """
    if topology is None:
        if n is None:
            raise ValueError("place needs n (the number of clients) when there is no topology")
        nn = int(n)
    else:
        nn = int(topology.n)
        if n is not None and int(n) != nn:
            raise ValueError(f"the topology has n={nn} nodes but n={n} clients were given")
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ValueError(f"size (the number of ranks) must be a positive int, got {size!r}")
    if size > nn:
        raise ValueError(
            f"{size} ranks for {nn} clients: every rank needs at least one client; launch at "
            f"most {nn} processes"
        )
    base = blocks(nn, size)
    if topology is None or size == 1:
        return Placement(base, size, "blocks")
    tv = as_time_varying(topology)
    if tv.period != 1:
        return Placement(base, size, "blocks")
    topo = tv.at(0)
    if topo.groups is not None:
        owner = _cliques(topo.groups, nn, size)
        if owner is not None:
            return Placement(owner, size, "cliques")
    best = Placement(base, size, "blocks")
    kl = Placement(_kernighan_lin(topo, size, seed), size, "kernighan_lin")
    return kl if kl.cut_arcs(topo) < best.cut_arcs(topo) else best
