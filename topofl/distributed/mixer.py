"""Gossip ``X <- W_t X`` over rows spread across ranks: each rank sends only the rows that its
neighbours' owners need, with one ``all_to_all_single``, while it multiplies its own rows."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
import torch.distributed as dist
from torch import Tensor

from topofl.distributed.comm import Shard
from topofl.engine.gossip import TopologyCache
from topofl.graph import Topology

__all__ = ["ShardMixer", "ExchangePlan", "exchange_plan"]


@dataclass(frozen=True)
class ExchangePlan:
    """What one rank sends and receives in one gossip step over a topology.

    Attributes
    ----------
    send : list of numpy.ndarray
        ``send[r]``: the global ids of this rank's clients that rank ``r`` needs.
    recv : list of numpy.ndarray
        ``recv[r]``: the global ids of rank ``r``'s clients this rank needs (in the order they
        arrive).
    own : scipy.sparse.csr_array
        ``[m, m]``: ``W`` restricted to this rank's rows and columns.
    halo : scipy.sparse.csr_array
        ``[m, R]``: ``W`` on this rank's rows and the received rows' columns.
    total_rows : int
        Rows crossing ranks in one step, summed over every rank (0: no exchange at all).
    """

    send: list[np.ndarray]
    recv: list[np.ndarray]
    own: sp.csr_array
    halo: sp.csr_array
    total_rows: int


def exchange_plan(W: sp.csr_array, owner: np.ndarray, rank: int) -> ExchangePlan:
    """The rows ``rank`` exchanges for ``X <- W X`` when client ``i`` lives on ``owner[i]``.

    Examples
    --------
    A 6-ring on two ranks: each rank sends its two boundary clients and receives the other's.

    >>> import numpy as np
    >>> from topofl.distributed.mixer import exchange_plan
    >>> W = tf.topologies.ring(6).W
    >>> p = exchange_plan(W, np.array([0, 0, 0, 1, 1, 1]), 0)
    >>> [s.tolist() for s in p.send], [r.tolist() for r in p.recv], p.total_rows
    ([[], [0, 2]], [[], [3, 5]], 4)
    >>> p.own.shape, p.halo.shape
    ((3, 3), (3, 2))
    """
    k = int(owner.max()) + 1
    coo = W.tocoo()
    i, j = coo.row.astype(np.int64), coo.col.astype(np.int64)
    cross = owner[i] != owner[j]
    # (client j, receiving rank) pairs, each row sent once per rank that needs it
    pairs = np.unique(j[cross] * k + owner[i[cross]])
    pj, pr = pairs // k, pairs % k
    send = [np.sort(pj[(owner[pj] == rank) & (pr == r)]) for r in range(k)]
    recv = [np.sort(pj[(owner[pj] == r) & (pr == rank)]) for r in range(k)]
    mine = np.flatnonzero(owner == rank)
    pos = np.full(owner.size, -1, dtype=np.int64)
    pos[mine] = np.arange(mine.size)
    halo_ids = np.concatenate(recv) if recv else np.zeros(0, np.int64)
    hpos = np.full(owner.size, -1, dtype=np.int64)
    hpos[halo_ids] = np.arange(halo_ids.size)
    sel = owner[i] == rank
    ri, rj, rv = pos[i[sel]], j[sel], coo.data[sel]
    local = owner[rj] == rank
    m = mine.size
    own = sp.csr_array((rv[local], (ri[local], pos[rj[local]])), shape=(m, m))
    halo = sp.csr_array((rv[~local], (ri[~local], hpos[rj[~local]])), shape=(m, halo_ids.size))
    return ExchangePlan(send, recv, own, halo, int(pairs.size))


def _torch_csr(A: sp.csr_array, device: torch.device, dtype: torch.dtype) -> Tensor:
    A = sp.csr_array(A)
    A.sort_indices()
    with warnings.catch_warnings():  # torch's notes that sparse CSR is in beta
        warnings.simplefilter("ignore", UserWarning)
        return _csr(A, device, dtype)


def _csr(A: sp.csr_array, device: torch.device, dtype: torch.dtype) -> Tensor:
    return torch.sparse_csr_tensor(
        torch.as_tensor(A.indptr.astype(np.int64), device=device),
        torch.as_tensor(A.indices.astype(np.int64), device=device),
        torch.as_tensor(A.data, dtype=dtype, device=device),
        size=A.shape,
        check_invariants=False,  # built from a canonical scipy CSR: sorted, in range
    )


class ShardMixer(TopologyCache):
    """The engine's mixer (``env.mixer``) over the rows of one rank.

    ``mix_(topology, X, cols)`` with ``X`` this rank's ``[m, P]`` rows computes this rank's
    rows of ``W X``: it starts the exchange of the rows other ranks need
    (``all_to_all_single``, counts from ``W``'s sparsity and the placement), multiplies its
    own rows by ``W``'s local block meanwhile, then adds the received rows' contribution.

    Parameters
    ----------
    shard : Shard
    dtype : torch.dtype
    """

    def __init__(self, shard: Shard, dtype: torch.dtype) -> None:
        super().__init__()
        self.shard = shard
        self.device = shard.world.device
        self.dtype = dtype

    def plan(self, topology: Topology) -> ExchangePlan:
        """The exchange plan of ``topology`` on this rank."""
        p: ExchangePlan = self._entry(topology)["plan"]
        return p

    def _build(self, topology: Topology) -> dict[str, Any]:
        if topology.n != self.shard.n:
            raise ValueError(f"the topology has n={topology.n} nodes, the run "
                             f"{self.shard.n} clients")
        plan = exchange_plan(topology.W, self.shard.placement.owner, self.shard.rank)
        pos = np.searchsorted(self.shard.clients, np.concatenate(plan.send))
        diag = topology.W.diagonal()[self.shard.clients]  # diag(W) on this rank's clients
        return {
            "plan": plan,
            "own": _torch_csr(plan.own, self.device, self.dtype),
            "halo": _torch_csr(plan.halo, self.device, self.dtype),
            "send_idx": torch.as_tensor(pos.astype(np.int64), device=self.device),
            "send_counts": [int(s.size) for s in plan.send],
            "recv_counts": [int(r.size) for r in plan.recv],
            "diag": torch.as_tensor(np.ascontiguousarray(diag), dtype=self.dtype,
                                    device=self.device),
        }

    def matrix(self, topology: Topology) -> Tensor:
        """Not available: no rank holds the whole product."""
        raise ValueError("the whole mixing matrix is not available in a distributed run; "
                         "use mix_ on this rank's rows")

    def mix_(self, topology: Topology, X: Tensor, cols: slice | None = None) -> None:
        """In place: this rank's rows of ``W X`` on the columns ``cols`` (all by default)."""
        e = self._entry(topology)
        Xc = X if cols is None else X[:, cols]
        m, p = Xc.shape
        if m != self.shard.m:
            raise ValueError(f"X has {m} rows but this rank holds {self.shard.m} clients")
        if p == 0:
            return
        own, halo = e["own"].to(Xc.dtype), e["halo"].to(Xc.dtype)
        if e["plan"].total_rows == 0:
            Xc.copy_(own @ Xc)
            return
        shard = self.shard
        send = Xc.index_select(0, e["send_idx"])
        recv = torch.empty(sum(e["recv_counts"]), p, dtype=Xc.dtype, device=Xc.device)
        work = shard.call("gossip", lambda: dist.all_to_all_single(
            recv, send, e["recv_counts"], e["send_counts"], async_op=True))
        out = own @ Xc  # the local product while the rows travel
        shard.call("gossip", lambda: work.wait())
        shard.bytes_sent += send.numel() * send.element_size()
        if recv.shape[0]:
            out = torch.addmm(out, halo, recv)
        Xc.copy_(out)

    def mix_vector_(self, topology: Topology, w: Tensor) -> None:
        """In place ``w <- W w`` on this rank's ``[m]`` entries (push-sum weights)."""
        self.mix_(topology, w.unsqueeze(1))
