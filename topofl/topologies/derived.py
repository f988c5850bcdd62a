r"""Graphs derived from a round's graph: the graph of the active clients
(:func:`active_topology`), the neighbourhood pattern (:func:`neighbourhood`), which the
engine communicates over, and the block-diagonal union of several runs' graphs
(:func:`block_topology`), which a stack of runs mixes with.

Examples
--------
>>> from topofl.topologies.derived import active_topology
>>> t = active_topology(tf.topologies.ring(4), [0, 1, 2])
>>> t.name, t.params["active"], t.is_doubly_stochastic
('ring|active', 3, True)
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import networkx as nx
import numpy as np
import scipy.sparse as sp

from topofl.graph import Topology

__all__ = ["active_topology", "neighbourhood", "block_topology"]


def active_topology(topology: Topology, active: Any, *, keep: str = "doubly") -> Topology:
    r"""The round's graph with only the ``active`` clients communicating.

    Every arc into or out of an inactive client is removed: an inactive client neither sends
    nor receives, so its row and column of ``W`` become $e_i$ (it keeps its model, and its
    push-sum weight). What an active client would have exchanged with an inactive one is
    redistributed so that the property the algorithm needs survives:

    * ``keep="column"`` (push-sum): each column is renormalised over the arcs it keeps, i.e. a
      sender splits its mass over itself and its *active* out-neighbours in the proportions
      ``W`` gave them. With push-sum weights $1/|\mathcal{N}^{out}_i|$ this is DFedPGP's
      rule $p_{j,i} = 1/|\mathcal{N}^{out}_i|$ on the graph of the active clients.
    * ``keep="row"``: each row is renormalised over the arcs it keeps (a client averages its
      active in-neighbours in the proportions ``W`` gave them).
    * ``keep="doubly"``: each client keeps for itself the weight it gave an inactive
      neighbour, $W'_{ii} = 1 - \sum_{j \ne i \text{ kept}} W_{ij}$ (renormalising would break
      double stochasticity). A symmetric doubly stochastic ``W`` (Metropolis weights) stays
      symmetric and doubly stochastic; a non-symmetric one stays row stochastic.
    * ``keep="none"``: nothing is redistributed: the weight an active client gave an inactive
      neighbour is lost, $W'_{ij} = W_{ij}$ on the arcs kept and $W'_{ii} = W_{ii}$, so its row
      sums to less than 1 (a receiver adds up what arrived, as decent-bench's peer-to-peer
      algorithms combine: the absent rule ``"lose"``).

    Parameters
    ----------
    topology : Topology
    active : sequence of int or None
        The active clients (``None``: all of them, ``topology`` is returned as it is).
    keep : {"doubly", "row", "column", "none"}, default "doubly"

    Returns
    -------
    Topology
        Named ``"<name>|active"``, with ``params["active"]`` the number of active clients.

    Examples
    --------
    A 4-ring with Metropolis weights 1/3, client 3 inactive: clients 0 and 2 keep the 1/3
    they gave it, client 3 keeps its model.

    >>> from topofl.topologies.derived import active_topology
    >>> t = active_topology(tf.topologies.ring(4), [0, 1, 2])
    >>> for row in t.to_dense().tolist():
    ...     print([round(v, 3) for v in row])
    [0.667, 0.333, 0.0, 0.0]
    [0.333, 0.333, 0.333, 0.0]
    [0.0, 0.333, 0.667, 0.0]
    [0.0, 0.0, 0.0, 1.0]
    >>> t.is_doubly_stochastic, t.messages_per_round
    (True, 4)

    With ``keep="none"`` clients 0 and 2 lose that 1/3:

    >>> [round(v, 3) for v in active_topology(tf.topologies.ring(4), [0, 1, 2],
    ...                                       keep="none").to_dense()[0].tolist()]
    [0.333, 0.333, 0.0, 0.0]
    """
    if keep not in ("doubly", "row", "column", "none"):
        raise ValueError(f"keep must be 'doubly', 'row', 'column' or 'none', got {keep!r}")
    if active is None:
        return topology
    n = topology.n
    given = np.asarray(active)
    if given.dtype == bool:
        if given.shape != (n,):
            raise ValueError(f"an active mask must have shape ({n},), got {given.shape}")
        on = given
    else:
        idx = np.asarray(list(active), dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            raise ValueError(f"active clients must be in [0, {n - 1}], got "
                             f"{sorted(idx.tolist())}")
        on = np.zeros(n, dtype=bool)
        on[idx] = True
    W = topology.W
    r = np.repeat(np.arange(n, dtype=np.int64), np.diff(W.indptr))
    c = W.indices.astype(np.int64)
    v = W.data.astype(np.float64)
    self_ = r == c
    diag: np.ndarray = np.bincount(r[self_], v[self_], minlength=n)
    off = ~self_ & on[r] & on[c]
    r, c, v = r[off], c[off], v[off]
    if keep == "doubly":
        diag = 1.0 - np.bincount(r, v, minlength=n)
    elif keep == "none":  # an inactive client keeps its model; the others lose what is gone
        diag = np.where(on, diag, 1.0)
    else:
        axis = c if keep == "column" else r
        tot = diag + np.bincount(axis, v, minlength=n)
        empty = tot <= 0
        tot[empty] = 1.0
        v = v / tot[axis]
        diag = np.where(empty, 1.0, diag / tot)
    ii = np.arange(n)
    M = sp.csr_array((np.concatenate([v, diag]), (np.concatenate([r, ii]),
                                                   np.concatenate([c, ii]))), shape=(n, n))
    return Topology.from_matrix(M, name=f"{topology.name}|active",
                                params=dict(topology.params, active=int(on.sum())),
                                groups=topology.groups)


_NEIGHBOURHOODS: weakref.WeakKeyDictionary[Topology, Topology] = weakref.WeakKeyDictionary()


def neighbourhood(topology: Topology) -> Topology:
    """The 0/1 pattern of ``W`` with the diagonal set, as a topology (cached per topology).

    Row ``i`` of ``neighbourhood(t).W`` has a 1 at client ``i`` and at each of its
    in-neighbours ``j`` (``W[i, j] > 0``): mixed with it (``env.mixer.mix_``), a buffer's rows
    become the sums over each client's neighbourhood, exchanged across ranks in a distributed
    run as gossip is.

    Examples
    --------
    >>> from topofl.topologies.derived import neighbourhood
    >>> neighbourhood(tf.topologies.ring(4)).W.toarray()
    array([[1., 1., 0., 1.],
           [1., 1., 1., 0.],
           [0., 1., 1., 1.],
           [1., 0., 1., 1.]])
    """
    out = _NEIGHBOURHOODS.get(topology)
    if out is None:
        A = sp.csr_array(sp.csr_array(topology.W != 0, dtype=np.float64)
                         + sp.eye_array(topology.n, format="csr"))
        A.data[:] = 1.0  # every stored entry is a neighbour (or the client itself)
        out = Topology.from_matrix(A, name=f"{topology.name}_neighbourhood")
        _NEIGHBOURHOODS[topology] = out
    return out


def block_topology(topologies: Sequence[Topology]) -> Topology:
    """The block-diagonal union of ``topologies``: run ``r``'s node ``i`` is node
    ``offset_r + i``, its mixing matrix ``diag(W_1, ..., W_K)`` (groups shifted likewise).

    Examples
    --------
    >>> t = tf.topologies.derived.block_topology([tf.topologies.ring(3), tf.topologies.complete(2)])
    >>> t.n, t.W.nnz, t.is_doubly_stochastic
    (5, 13, True)
    """
    W = sp.csr_array(sp.block_diag([t.W for t in topologies], format="csr"))
    W.sort_indices()
    offsets = np.cumsum([0] + [t.n for t in topologies])
    groups: list[tuple[int, ...]] | None = []
    for off, t in zip(offsets, topologies):
        if t.groups is None or groups is None:
            groups = None
            continue
        groups.extend(tuple(int(off) + i for i in g) for g in t.groups)
    graph = nx.disjoint_union_all([t.graph for t in topologies])
    return Topology(graph=graph, W=W, name="stack", params={"runs": len(topologies)},
                    groups=None if groups is None else tuple(groups))
