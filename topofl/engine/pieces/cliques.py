"""Clique Averaging (D-Cliques): the group means of the gradients (:func:`clique_average_`,
over every process: :func:`group_mean_`), the topology's cliques (:func:`clique_index`), the
local update :class:`CliqueAveraged` and the paper's message count
(:func:`clique_messages`)."""

from __future__ import annotations

import warnings
import weakref
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from topofl.engine.clients import Clients
from topofl.engine.pieces.local import SGD, _Wrapper, sgd_step
from topofl.engine.protocol import Phase, Round, Services, State
from topofl.graph import Topology
from topofl.topologies.cliques.averaging import clique_averaging_matrix

__all__ = ["clique_average_", "group_mean_", "clique_index", "clique_messages", "CliqueAveraged"]


def clique_average_(g: Tensor, group_index: Tensor, group_sizes: Tensor) -> None:
    """In place: replace each row of ``g`` by the mean of its group's rows (Clique Averaging).

    Examples
    --------
    >>> import torch
    >>> g = torch.tensor([[1.0], [2.0], [6.0]])
    >>> tf.engine.pieces.clique_average_(g, torch.tensor([0, 1, 0]), torch.tensor([2.0, 1.0]))
    >>> g.flatten().tolist()
    [3.5, 2.0, 3.5]
    """
    sums = torch.zeros(int(group_sizes.numel()), g.shape[1], dtype=g.dtype, device=g.device)
    sums.index_add_(0, group_index, g)
    sums.div_(group_sizes.unsqueeze(1))
    torch.index_select(sums, 0, group_index, out=g)


def group_mean_(g: Tensor, group_index: Tensor, group_sizes: Tensor, topology: Topology,
                clients: Clients) -> None:
    """In place: each of this process's rows of ``g`` becomes the mean of its group's rows over
    every client (:func:`clique_average_` when every client is here; the group sums are
    completed over the processes, ``clients.group_sums_``)."""
    local = clients.own(group_index.to(g.device))
    sums = torch.zeros(int(group_sizes.numel()), g.shape[1], dtype=g.dtype, device=g.device)
    sums.index_add_(0, local, g)
    clients.group_sums_(sums, topology)
    sums.div_(group_sizes.to(device=g.device, dtype=g.dtype).unsqueeze(1))
    torch.index_select(sums, 0, local, out=g)


_CLIQUES: weakref.WeakKeyDictionary[Topology, tuple[Tensor, Tensor]] = (
    weakref.WeakKeyDictionary()
)
# Clique Averaging on cliques that lost edges: the matrix A of clique_averaging_matrix as torch
# CSR (float64, CPU; converted to the gradients' device and dtype when used), or None when
# every clique is complete (the plain clique mean, clique_average_, is then exact and faster);
# per topology and per set of rows held (the rows of A of this process's clients).
_REACH: weakref.WeakKeyDictionary[Topology, dict[bytes, Tensor | None]] = (
    weakref.WeakKeyDictionary())


def clique_index(topology: Topology | None) -> tuple[Tensor, Tensor]:
    """``(group index [n], group sizes)`` of the topology's cliques (cached per topology); a
    ``ValueError`` for a topology without groups."""
    if topology is None or topology.groups is None:
        raise ValueError(
            "clique_averaging=True needs a topology with groups (cliques), e.g. "
            "topofl.topologies.dcliques(...); this topology has none"
        )
    e = _CLIQUES.get(topology)
    if e is None:
        idx = torch.as_tensor(topology.group_index)
        e = _CLIQUES[topology] = (idx, torch.bincount(idx))
    return e


def _reach(topology: Topology, clients: Clients) -> Tensor | None:
    """The rows of this process's clients of the Clique Averaging matrix, as torch CSR
    (``[m, n]``), or ``None`` if every clique is complete."""
    cache = _REACH.get(topology)
    if cache is None:
        cache = _REACH[topology] = {}
    key = clients.ids.tobytes()
    if key in cache:
        return cache[key]
    A = clique_averaging_matrix(topology)
    _, sizes = clique_index(topology)
    out: Tensor | None = None
    if A.nnz != int((sizes.to(torch.int64) ** 2).sum()):  # some S_i is not its whole clique
        if clients.m != clients.n:
            A = A[clients.ids]
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
            out = torch.sparse_csr_tensor(
                torch.as_tensor(A.indptr.astype(np.int64)),
                torch.as_tensor(A.indices.astype(np.int64)),
                torch.as_tensor(A.data), size=A.shape,
                check_invariants=False,  # a canonical scipy CSR: sorted, in range
            )
    cache[key] = out
    return out


def clique_messages(topology: Topology | None) -> int:
    r"""Gradient messages of one round of Clique Averaging, counted as the D-Cliques paper does.

    What a message is: one vector (a model or a gradient) sent by one node to one neighbour in
    one round. Gossip sends the model on every arc (:attr:`Topology.messages_per_round`);
    Clique Averaging sends gradients "separately from the model parameters: the number of
    messages exchanged between nodes is therefore twice their number of edges" (Sec. III-D), so
    the paper counts one gradient per arc as well, which gives its 37.8 messages per node and
    round for 18.9 edges per node at ``n = 1000`` (Sec. IV-E). Fig. 7 itself only uses the
    gradients of clique neighbours, and that is what the engine's ledger counts (one per arc
    within a clique and per local step: :func:`topofl.engine.ledger.clique_arcs`;
    ``messages_per_node(..., gradients="clique")``, 27.9 at ``n = 1000``); this function
    is the paper's count.

    Examples
    --------
    Two triangles joined by one edge: 7 edges, 14 arcs, so 14 gradients on top of 14 models.

    >>> import networkx as nx
    >>> G = nx.disjoint_union(nx.complete_graph(3), nx.complete_graph(3))
    >>> G.add_edge(2, 3)
    >>> t = tf.Topology.from_networkx(G, groups=[[0, 1, 2], [3, 4, 5]])
    >>> tf.engine.pieces.clique_messages(t), t.messages_per_round
    (14, 14)
    """
    if topology is None or topology.groups is None:
        return 0
    return topology.messages_per_round


@dataclass(frozen=True)
class CliqueAveraged(_Wrapper):
    r"""Clique Averaging (D-Cliques, Fig. 7, eq. 4-5): each client steps with the mean gradient
    of the clique members it receives gradients from (itself included; weight decay of its own
    model added first); the momentum then acts on the averaged gradient. On complete cliques
    that is the clique's mean; with intra-clique edges removed (Sec. IV-F), the mean over the
    client and its remaining clique neighbours, $g \leftarrow A g$ with ``A`` =
    :func:`topofl.topologies.clique_averaging_matrix`. Not rowwise: a client's step reads its
    clique's rows."""

    sgd: SGD
    rowwise = False

    @property
    def wrapped(self) -> SGD:
        """The inner :class:`SGD`."""
        return self.sgd

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        """Average the gradients within each clique of ``rnd.topology``, then step."""
        idx, sizes = clique_index(rnd.topology)
        assert rnd.topology is not None  # clique_index raised otherwise
        cols = env.layout.cols(phase.part)
        g = grads[:, cols]
        if self.sgd.weight_decay:  # decay each node's own model, then average the gradients
            g.add_(state.x[:, cols], alpha=self.sgd.weight_decay)
        clients = env.clients
        A = _reach(rnd.topology, clients)
        if A is None:  # complete cliques: each client's clique mean
            group_mean_(g, idx, sizes, rnd.topology, clients)
        else:  # cliques that lost edges: g <- A g, A's rows of this process's clients
            g.copy_(A.to(device=g.device, dtype=g.dtype) @ clients.all_rows(g, "clique averaging"))
        sgd_step(
            state.x[:, cols], g, lr,
            momentum_buf=None if state.momentum is None else state.momentum[:, cols],
            momentum=self.sgd.momentum, nesterov=self.sgd.nesterov,
        )
