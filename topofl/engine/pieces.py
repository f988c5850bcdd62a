r"""The pieces algorithms are composed of: local updates, communication, round hooks.

Local-update pieces (the ``local`` of an :class:`~topofl.engine.Algorithm`):

* :class:`SGD`: local SGD with heavy-ball/Nesterov momentum and weight decay, with the gradient
  taken at the parameters or, for push-sum, at the de-biased point $z = x / w$ and applied to
  the numerators $x$. Plain SGD (no momentum, no weight decay, gradient at $x$) also offers a
  fused kernel (:meth:`SGD.fused`): gradient and step in one executor pass.
* :class:`CliqueAveraged`: an :class:`SGD` whose gradients are first averaged over each clique
  of the round's topology (D-Cliques' Clique Averaging).
* :class:`Sampled`: an :class:`SGD` that only moves the round's sampled participants.

Communication pieces (``communicate(state, rnd, env) -> Sent``): :func:`gossip` (``X <- W_t X``
on the shared columns), :class:`PushSum` (numerators and weights, optionally one round of
overlap, with its de-biased ``evaluate``), :func:`exact_average` (FedAvg's mean),
:func:`server_average` (sampled, optionally data-size weighted mean of a part),
:func:`no_communication`. Round hooks: :func:`restart_momentum`.

The buffers hold the rows of the clients this process owns (``env.clients``; every client in
one process, a rank's in a distributed run): pieces reach other clients' rows only through
``env.mixer`` (gossip) and ``env.clients`` (the averages, Clique Averaging, client sampling),
so every piece runs in every placement.

Examples
--------
D-SGD is local SGD composed with gossip; one round by hand on a 3-ring (every Metropolis weight
is 1/3, so one gossip step averages):

>>> import torch
>>> env = tf.engine.toy_services(3)
>>> local, comm = tf.engine.pieces.SGD(), tf.engine.pieces.gossip()
>>> state = tf.engine.State(x=torch.tensor([[0.0], [3.0], [6.0]], dtype=torch.float64))
>>> rnd = tf.engine.Round(0, tf.topologies.ring(3))
>>> local.update(state, torch.ones(3, 1, dtype=torch.float64), tf.engine.Phase(),
...              torch.full((3,), 0.5, dtype=torch.float64), rnd, env)
>>> comm(state, rnd, env).messages, state.x.flatten().tolist()
(6, [2.5, 2.5, 2.5])
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from topofl._rng import generator_at
from topofl.engine.clients import Clients, row
from topofl.engine.drops import Drops, LaneDrops, lossy
from topofl.engine.layout import ParamLayout, Part
from topofl.engine.ledger import Arcs, Flow, dtype_bits, graph_arcs, server_arcs
from topofl.engine.protocol import (
    Algorithm,
    Kernel,
    LocalUpdate,
    Phase,
    Round,
    Sent,
    Services,
    State,
)
from topofl.graph import Topology
from topofl.topologies.cliques.averaging import clique_averaging_matrix

__all__ = [
    "sgd_step",
    "clique_average_",
    "debias_",
    "PushSumState",
    "ProximalState",
    "hold",
    "SGD",
    "CliqueAveraged",
    "Sampled",
    "participants",
    "round_active",
    "server_flows",
    "active_topology",
    "with_participation",
    "Proximal",
    "gossip",
    "PushSum",
    "exact_average",
    "server_average",
    "no_communication",
    "data_sizes",
    "restart_momentum",
    "no_round_start",
    "clique_messages",
    "clique_index",
    "compose_init",
    "require_split",
    "neighbourhood",
    "neighbourhood_sum_",
]

Communicate = Callable[[State, Round, Services], Sent]


# ----------------------------------------------------------------------------- arithmetic


def sgd_step(
    x: Tensor,
    g: Tensor,
    lr: Tensor,
    *,
    momentum_buf: Tensor | None = None,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    nesterov: bool = False,
    decay_point: Tensor | None = None,
) -> None:
    r"""One fused SGD step on ``[n, p]`` column blocks, in place.

    $g \leftarrow g + \lambda\, x_{wd}$; $m \leftarrow \mu m + g$;
    $x \leftarrow x - \eta_i (g + \mu m)$ (Nesterov) or $x - \eta_i m$ (heavy ball), with
    $\eta$ the ``[n]`` per-client learning rates (0 freezes a client: neither its parameters
    nor its momentum move). ``decay_point`` is where
    weight decay is evaluated (``x`` by default; the de-biased ``z`` for push-sum). ``g`` is
    overwritten.

    Examples
    --------
    $g = 1 + 0.5 \cdot 2 = 2$, $m = 2$, Nesterov step $2 + 0.9 \cdot 2 = 3.8$:

    >>> import torch
    >>> x, m = torch.tensor([[2.0]]), torch.zeros(1, 1)
    >>> tf.engine.pieces.sgd_step(x, torch.tensor([[1.0]]), torch.tensor([0.1]),
    ...     momentum_buf=m, momentum=0.9, weight_decay=0.5, nesterov=True)
    >>> round(float(x), 6), float(m)
    (1.62, 2.0)
    """
    if weight_decay:
        g.add_(x if decay_point is None else decay_point, alpha=weight_decay)
    if momentum_buf is not None and momentum:
        if bool((lr == 0).any()):  # clients past their own step count keep their momentum
            frozen = (lr == 0).unsqueeze(1)
            momentum_buf.copy_(torch.where(frozen, momentum_buf, momentum_buf * momentum + g))
        else:
            momentum_buf.mul_(momentum).add_(g)
        step = g.add_(momentum_buf, alpha=momentum) if nesterov else momentum_buf
    else:
        step = g
    x.addcmul_(step, lr.unsqueeze(1), value=-1.0)


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


@dataclass
class PushSumState:
    """The state :class:`PushSum` keeps (``State.own``; the weights are ``State.weight``).

    Attributes
    ----------
    z : Tensor
        ``[n, P]`` the de-biased point ``x / w`` (:func:`debias_`).
    inflight_x, inflight_w : Tensor or None
        With ``overlap``: ``[n, P]`` and ``[n]``, the mass sent in the round and received in
        the next one.
    """

    z: Tensor
    inflight_x: Tensor | None = None
    inflight_w: Tensor | None = None


@dataclass
class ProximalState:
    """The state :class:`Proximal` keeps (``State.own``).

    Attributes
    ----------
    anchor : Tensor
        ``[n, P]`` each client's model at the start of the round, $x^t$.
    """

    anchor: Tensor


def hold(state: State, record: Any) -> None:
    """Put a piece's state record into ``state.own``; a ``ValueError`` when another piece's
    record is there already (one piece of an algorithm keeps its state in ``State.own``)."""
    if state.own is not None:
        raise ValueError(
            f"this state already holds a {type(state.own).__name__} (State.own): a "
            f"{type(record).__name__} cannot be added; compose at most one piece that keeps "
            "state of its own, or declare one record for the algorithm")
    state.own = record


def debias_(state: State, part: Part, layout: ParamLayout) -> Tensor:
    """Push-sum's de-biased point into :attr:`PushSumState.z`, returned: ``x / w`` on the
    columns of ``part``, ``x`` on the others."""
    z = state.own_as(PushSumState).z
    w = state.push_weights().unsqueeze(1)
    if part == "all":
        torch.div(state.x, w, out=z)
        return z
    cols = layout.cols(part)
    torch.div(state.x[:, cols], w, out=z[:, cols])
    other = layout.cols("head" if part == "body" else "body")
    z[:, other].copy_(state.x[:, other])
    return z


# ----------------------------------------------------------------------------- local updates


@dataclass(frozen=True)
class SGD:
    r"""Local SGD on the phase's columns: the local-update piece of most algorithms.

    Parameters
    ----------
    momentum : float, default 0
        Heavy-ball coefficient (buffers in ``state.momentum``, kept across steps; restart them
        with :func:`restart_momentum`).
    weight_decay : float, default 0
    nesterov : bool, default False
    debias : {"all", "body"} or None, default None
        Push-sum: take the gradient (and the weight decay) at the de-biased point
        $z = x / w$ on these columns and apply it to the numerators $x$ (Assran et al.,
        Algorithm 1, line 5). ``None``: at the parameters.
    """

    momentum: float = 0.0
    weight_decay: float = 0.0
    nesterov: bool = False
    debias: Part | None = None

    @property
    def rowwise(self) -> bool:
        """Each client's step reads its own row only."""
        return True

    @property
    def plain(self) -> bool:
        """``x <- x - lr * grad(x)`` exactly: no momentum, no weight decay, no de-biasing."""
        return self.debias is None and not self.momentum and not self.weight_decay

    def init_(self, state: State, env: Services) -> None:
        """Momentum buffers when there is momentum."""
        if self.momentum:
            state.momentum = torch.zeros_like(state.x)

    def point(self, state: State, phase: Phase, env: Services) -> Tensor:
        """``state.x``, or the de-biased ``z`` for push-sum."""
        return state.x if self.debias is None else debias_(state, self.debias, env.layout)

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        """One SGD step on the phase's columns."""
        cols = env.layout.cols(phase.part)
        sgd_step(
            state.x[:, cols], grads[:, cols], lr,
            momentum_buf=None if state.momentum is None else state.momentum[:, cols],
            momentum=self.momentum, weight_decay=self.weight_decay, nesterov=self.nesterov,
            decay_point=(None if self.debias is None
                         else state.own_as(PushSumState).z[:, cols]),
        )

    def fused(self, executor: Any) -> Kernel | None:
        """For plain SGD and an executor that ``fuses_sgd``: :meth:`fused_step`."""
        if self.plain and getattr(executor, "fuses_sgd", False):
            return self.fused_step
        return None

    def fused_step(self, executor: Any, state: State, x: Tensor, y: Tensor, phase: Phase,
                   lr: Tensor) -> Tensor:
        """Plain SGD as one pass of ``executor.sgd_``: each block's gradient applied in cache,
        without a gradient buffer (the same numbers as ``grad`` then :meth:`update`)."""
        loss: Tensor = executor.sgd_(state.x, x, y, phase.part, lr)
        return loss


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


class _Wrapper:
    """A local update around another (:attr:`wrapped`), whose buffers and evaluation point it
    keeps; never fused (its update does more than the inner kernel)."""

    @property
    def wrapped(self) -> LocalUpdate:
        """The inner piece."""
        raise NotImplementedError

    def init_(self, state: State, env: Services) -> None:
        """As the inner piece."""
        self.wrapped.init_(state, env)

    def point(self, state: State, phase: Phase, env: Services) -> Tensor:
        """As the inner piece."""
        return self.wrapped.point(state, phase, env)

    def fused(self, executor: Any) -> Kernel | None:
        """Never fused."""
        return None


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


_SAMPLE_STREAM = 0x5A3D  # tag of the client-sampling stream: (sample_seed, tag, t)


def participants(n: int, t: int, participation: float, sample_seed: int) -> list[int] | None:
    """Clients taking part in round ``t`` (sorted), or ``None`` when all of them do.

    ``max(1, floor(participation * n))`` clients drawn without replacement from the stream
    ``(sample_seed, t)``: a pure function of its arguments.

    Examples
    --------
    >>> from topofl.engine.pieces import participants
    >>> participants(10, 3, 0.3, 0) == participants(10, 3, 0.3, 0)
    True
    >>> len(participants(10, 3, 0.3, 0)), participants(10, 3, 1.0, 0)
    (3, None)
    """
    if participation >= 1.0:
        return None
    m = max(1, int(participation * n))
    rng = generator_at(sample_seed, _SAMPLE_STREAM, t)
    return sorted(int(i) for i in rng.choice(n, size=m, replace=False))


def round_active(rnd: Round, n: int, participation: float = 1.0, sample_seed: int = 0
                 ) -> np.ndarray | None:
    """``(n,)`` bool: the clients that take part in round ``rnd``, or ``None`` when all do.

    One notion for partial participation and availability: a client takes part when it is
    sampled (:func:`participants` of ``(n, t, participation, sample_seed)``) and online
    (``rnd.online``). The sample is drawn among all clients, then the offline ones drop out,
    so the sample sequence does not depend on who is online.

    Examples
    --------
    >>> import numpy as np
    >>> from topofl.engine.pieces import round_active
    >>> rnd = tf.engine.Round(0, None, np.array([True, False, True, True]))
    >>> round_active(rnd, 4).tolist(), round_active(tf.engine.Round(0), 4)
    ([True, False, True, True], None)
    """
    sel = participants(n, rnd.t, participation, sample_seed)
    if sel is None and rnd.online is None:
        return None
    mask = np.ones(n, dtype=bool) if sel is None else np.zeros(n, dtype=bool)
    if sel is not None:
        mask[np.asarray(sel, dtype=np.int64)] = True
    if rnd.online is not None:
        mask &= np.asarray(rnd.online, dtype=bool)
    return mask


_NEIGHBOURHOODS: weakref.WeakKeyDictionary[Topology, Topology] = weakref.WeakKeyDictionary()


def neighbourhood(topology: Topology) -> Topology:
    """The 0/1 pattern of ``W`` with the diagonal set, as a topology (cached per topology).

    Row ``i`` of ``neighbourhood(t).W`` has a 1 at client ``i`` and at each of its
    in-neighbours ``j`` (``W[i, j] > 0``): mixed with it (``env.mixer.mix_``), a buffer's rows
    become the sums over each client's neighbourhood, exchanged across ranks in a distributed
    run as gossip is.

    Examples
    --------
    >>> from topofl.engine.pieces import neighbourhood
    >>> neighbourhood(tf.topologies.ring(4)).W.toarray()
    array([[1., 1., 0., 1.],
           [1., 1., 1., 0.],
           [0., 1., 1., 1.],
           [1., 0., 1., 1.]])
    """
    out = _NEIGHBOURHOODS.get(topology)
    if out is None:
        import scipy.sparse as sp

        A = sp.csr_array(sp.csr_array(topology.W != 0, dtype=np.float64)
                         + sp.eye_array(topology.n, format="csr"))
        A.data[:] = 1.0  # every stored entry is a neighbour (or the client itself)
        out = Topology.from_matrix(A, name=f"{topology.name}_neighbourhood")
        _NEIGHBOURHOODS[topology] = out
    return out


def neighbourhood_sum_(env: Services, topology: Topology, X: Tensor) -> None:
    """In place: each row of ``X`` (this process's clients) becomes the sum of the rows of its
    client and its in-neighbours in ``topology`` (:func:`neighbourhood`), through
    ``env.mixer`` (rows on other ranks arrive through the mixer's exchange)."""
    env.mixer.mix_(neighbourhood(topology), X)


def _mask(n: int, rnd: Round, participation: float, sample_seed: int, like: Tensor
          ) -> Tensor | None:
    """``[n]`` 0/1 mask of round ``rnd``'s participants (:func:`round_active`), or None when
    everyone takes part."""
    sel = round_active(rnd, n, participation, sample_seed)
    if sel is None:
        return None
    return torch.as_tensor(sel, device=like.device).to(like.dtype)


@dataclass(frozen=True)
class Sampled(_Wrapper):
    """A local update that only the round's participants take (sampled and online:
    :func:`round_active`; the others' learning rate is 0), for server-based baselines with
    partial participation."""

    inner: LocalUpdate
    participation: float = 1.0
    sample_seed: int = 0
    rowwise = False  # the mask is over all clients

    @property
    def wrapped(self) -> LocalUpdate:
        """The inner piece."""
        return self.inner

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        """The inner update with the non-participants' rates set to 0."""
        mask = _mask(env.n, rnd, self.participation, self.sample_seed, state.x)
        if mask is not None:
            mask = env.clients.own(mask)
        self.inner.update(state, grads, phase, lr if mask is None else lr * mask, rnd, env)


@dataclass(frozen=True)
class Proximal(_Wrapper):
    r"""A local update with FedProx's proximal term: the gradient of
    $F_i(x) + \frac{\mu}{2}\|x - x^t\|^2$, i.e. ``g + mu * (x - anchor)``, fed to ``inner``.

    The anchor $x^t$ is each client's model at the start of the round, kept in
    :attr:`ProximalState.anchor` (:meth:`round_start` copies it); rowwise when ``inner`` is.
    """

    inner: SGD
    mu: float

    @property
    def rowwise(self) -> bool:
        """As the inner piece (the term reads the client's own row)."""
        return self.inner.rowwise

    def init_(self, state: State, env: Services) -> None:
        """The inner piece's buffers and the anchor."""
        self.inner.init_(state, env)
        hold(state, ProximalState(anchor=state.x.clone()))

    def round_start(self, state: State, rnd: Round, env: Services) -> None:
        """Anchor the round at the models the clients hold now."""
        state.own_as(ProximalState).anchor.copy_(state.x)

    @property
    def wrapped(self) -> SGD:
        """The inner :class:`SGD`."""
        return self.inner

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        """``grads += mu * (x - anchor)`` on the phase's columns, then the inner step."""
        cols = env.layout.cols(phase.part)
        g = grads[:, cols]
        anchor = state.own_as(ProximalState).anchor
        g.add_(state.x[:, cols], alpha=self.mu).sub_(anchor[:, cols], alpha=self.mu)
        self.inner.update(state, grads, phase, lr, rnd, env)


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

    Parameters
    ----------
    topology : Topology
    active : sequence of int or None
        The active clients (``None``: all of them, ``topology`` is returned as it is).
    keep : {"doubly", "row", "column"}, default "doubly"

    Returns
    -------
    Topology
        Named ``"<name>|active"``, with ``params["active"]`` the number of active clients.

    Examples
    --------
    A 4-ring with Metropolis weights 1/3, client 3 inactive: clients 0 and 2 keep the 1/3
    they gave it, client 3 keeps its model.

    >>> from topofl.engine.pieces import active_topology
    >>> t = active_topology(tf.topologies.ring(4), [0, 1, 2])
    >>> for row in t.to_dense().tolist():
    ...     print([round(v, 3) for v in row])
    [0.667, 0.333, 0.0, 0.0]
    [0.333, 0.333, 0.333, 0.0]
    [0.0, 0.333, 0.667, 0.0]
    [0.0, 0.0, 0.0, 1.0]
    >>> t.is_doubly_stochastic, t.messages_per_round
    (True, 4)
    """
    import scipy.sparse as sp

    if keep not in ("doubly", "row", "column"):
        raise ValueError(f"keep must be 'doubly', 'row' or 'column', got {keep!r}")
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


def with_participation(algorithm: Algorithm, participation: float, sample_seed: int = 0
                       ) -> Algorithm:
    """``algorithm`` (a gossip or push-sum algorithm) with a fraction of its clients active
    each round.

    Round ``t``'s active clients are :func:`participants` ``(n, t, participation,
    sample_seed)``: ``max(1, floor(participation * n))`` of them, a pure function of
    ``(sample_seed, t)``. The others take no local step (:class:`Sampled`: learning rate 0,
    momentum frozen) and neither send nor receive: the algorithm's ``communicate`` runs on
    :func:`active_topology` of the round's graph (``keep`` = what the algorithm ``requires``:
    column renormalisation for push-sum, the dropped weights kept on the diagonal for a doubly
    stochastic ``W``), so an inactive client keeps its model and the messages counted are the
    arcs between active clients (with OSGP's overlap, what was already in flight towards a
    client that becomes inactive still arrives). ``participation`` and ``sample_seed`` go into
    the recorded hyper-parameters. With ``participation >= 1`` the pieces are returned
    unchanged (the same run, fused and streamed paths included).

    Examples
    --------
    >>> from topofl.engine.pieces import with_participation
    >>> algo = with_participation(tf.algorithms.dsgd(lr=0.1), 0.5, sample_seed=3)
    >>> algo.hparams["participation"], algo.hparams["sample_seed"], algo.local.rowwise
    (0.5, 3, False)
    """
    hparams = dict(algorithm.hparams, participation=float(participation),
                   sample_seed=int(sample_seed))
    if participation >= 1.0:
        return algorithm._replace(hparams=hparams)
    keep = algorithm.requires if algorithm.requires in ("row", "column") else "doubly"
    inner = algorithm.communicate

    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        sel = round_active(rnd, env.n, participation, sample_seed)
        sent = inner(state, rnd._replace(topology=active_topology(_graph(rnd), sel,
                                                                  keep=keep)), env)
        return sent._replace(active=sel)

    stacks = algorithm.stacks
    if stacks is True:  # the sample is drawn among every row of a pass, not the run's
        stacks = (f"participation={participation:g} draws the round's active clients among "
                  "all the clients of the pass (a stack's rows, not the run's)")
    return algorithm._replace(
        hparams=hparams,
        local=Sampled(algorithm.local, participation, sample_seed),
        communicate=communicate,
        stacks=stacks,
    )


# ----------------------------------------------------------------------------- communication


def _graph(rnd: Round) -> Topology:
    if rnd.topology is None:
        raise ValueError(f"round {rnd.t} has no topology to communicate over")
    return rnd.topology


def _width(env: Services, part: Part) -> int:
    cols = env.layout.cols(part)
    return int(cols.stop - cols.start)


def _kind(part: Part) -> str:
    return "model" if part == "all" else part


def gossip(part: Part = "all") -> Communicate:
    """``X[:, cols(part)] <- W_t X[:, cols(part)]``; messages: the arcs of ``W_t``, each
    carrying the ``part`` (kind ``"model"``, or ``"body"``).

    With lost messages (``rnd.drop``) it mixes with the round's ``W_t`` renormalised over
    what arrived (:func:`~topofl.engine.drops.lossy`, rule ``"renormalise"``) and returns
    the delivered messages as its flows, the lost ones as ``Sent.dropped``.
    """

    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        topo = _graph(rnd)
        if rnd.drop is not None:
            return _lossy_gossip(part, topo, rnd.drop, state, env)
        env.mixer.mix_(topo, state.x, None if part == "all" else env.layout.cols(part))
        return Sent.of(Flow(_kind(part), graph_arcs(topo), _width(env, part),
                            dtype_bits(state.x.dtype)))

    return communicate


def _lossy_gossip(part: Part, topo: Topology, drop: Drops | LaneDrops, state: State,
                  env: Services) -> Sent:
    """:func:`gossip` with the round's lost messages: each receiver renormalises."""
    lo = lossy(topo, drop, "renormalise")
    env.mixer.mix_(lo.topology, state.x, None if part == "all" else env.layout.cols(part))
    size, bits = _width(env, part), dtype_bits(state.x.dtype)
    return Sent.of(Flow(_kind(part), lo.delivered, size, bits),
                   dropped=(Flow(_kind(part), lo.dropped, size, bits),))


@dataclass(frozen=True)
class PushSum:
    r"""Push-sum over column-stochastic ``W_t``: the numerators ``x`` (on ``part``) and the
    weights ``w`` are both mixed, ``x <- W x``, ``w <- W w``; the evaluated point is the
    de-biased ``z = x / w`` (Kempe et al.; SGP, Assran et al.).

    With ``overlap`` (OSGP, one round of overlap): node ``j`` keeps ``W_jj x_j`` at once and
    what it sends (``W_ij x_j``, ``i != j``) arrives one round later; mass in flight is in
    :attr:`PushSumState.inflight_x` and ``inflight_w`` until received.

    Messages: one on every arc of ``W_t``, the ``part`` (kind ``"model"`` or ``"body"``) with
    its push-sum weight attached (kind ``"weight"``, one number); with ``overlap`` both have
    ``lag=1``.

    With lost messages (``rnd.drop``) the mass of a lost message, numerator and weight, is
    lost with it: ``W_t``'s entries on the lost arcs become 0
    (:func:`~topofl.engine.drops.lossy`, rule ``"mass"``); the flows are the delivered
    messages and ``Sent.dropped`` the lost ones.
    """

    part: Part = "all"
    overlap: bool = False

    def init_(self, state: State, env: Services) -> None:
        """Weights 1, the de-biased buffer ``z`` and the in-flight buffers."""
        x0 = state.x
        n = x0.shape[0]
        if self.overlap and self.part != "all":
            raise ValueError("overlapped push-sum communicates all the parameters (part='all')")
        state.weight = torch.ones(n, dtype=x0.dtype, device=x0.device)
        hold(state, PushSumState(
            z=torch.empty_like(x0),
            inflight_x=torch.zeros_like(x0) if self.overlap else None,
            inflight_w=(torch.zeros(n, dtype=x0.dtype, device=x0.device) if self.overlap
                        else None)))
        debias_(state, self.part, env.layout)

    def __call__(self, state: State, rnd: Round, env: Services) -> Sent:
        """One push-sum round, then de-bias."""
        topo = _graph(rnd)
        lost = None
        if rnd.drop is not None:
            lost = lossy(topo, rnd.drop, "mass")
            topo = lost.topology
        weight = state.push_weights()
        if not self.overlap:
            cols = None if self.part == "all" else env.layout.cols(self.part)
            env.mixer.mix_(topo, state.x, cols)
            env.mixer.mix_vector_(topo, weight)
        else:
            d = env.mixer.diagonal(topo)
            own = state.own_as(PushSumState)
            fx, fw = own.inflight_x, own.inflight_w
            assert fx is not None and fw is not None  # init_ made them (overlap)
            kept_x = state.x * d.unsqueeze(1)
            env.mixer.mix_(topo, state.x)          # x <- W x  (= kept + sent)
            state.x.sub_(kept_x)                   # x <- sent now
            state.x, fx_new = fx, state.x          # swap: receive last round's messages
            state.x.add_(kept_x)
            own.inflight_x = fx_new
            kept_w = weight * d
            sent_w = weight.clone()
            env.mixer.mix_vector_(topo, sent_w)
            sent_w.sub_(kept_w)
            weight.copy_(kept_w + fw)
            fw.copy_(sent_w)
        debias_(state, self.part, env.layout)
        if lost is not None:
            return Sent.of(*self._flows(lost.delivered, state, env),
                           dropped=self._flows(lost.dropped, state, env))
        arcs, bits, lag = graph_arcs(topo), dtype_bits(state.x.dtype), int(self.overlap)
        return Sent.of(Flow(_kind(self.part), arcs, _width(env, self.part), bits, lag=lag),
                       Flow("weight", arcs, 1, bits, lag=lag, attached=True))

    def _flows(self, arcs: Arcs, state: State, env: Services) -> tuple[Flow, Flow]:
        """The messages on ``arcs``: the ``part`` with its weight attached."""
        bits, lag = dtype_bits(state.x.dtype), int(self.overlap)
        return (Flow(_kind(self.part), arcs, _width(env, self.part), bits, lag=lag),
                Flow("weight", arcs, 1, bits, lag=lag, attached=True))

    def evaluate(self, state: State, rnd: Round, env: Services) -> Tensor:
        """The de-biased parameters ``z``."""
        return debias_(state, self.part, env.layout)


def server_flows(n: int, active: np.ndarray | None, size: int, bits: int,
                 kind: str = "model") -> tuple[Flow, Flow]:
    """A server round's messages: the server's model to every participant before the local
    work (stage -1, the download), their models to the server after it (stage 0, the upload);
    ``active``: ``(n,)`` bool participants, ``None`` for all.

    Examples
    --------
    >>> from topofl.engine.pieces import server_flows
    >>> down, up = server_flows(3, None, 10, 32)
    >>> down.sent_counts().tolist(), up.received_counts().tolist(), up.bytes
    ([0, 0, 0, 3], [0, 0, 0, 3], 120)
    """
    return (Flow(kind, server_arcs(n, active, "down"), size, bits, stage=-1),
            Flow(kind, server_arcs(n, active, "up"), size, bits, stage=0))


def exact_average(part: Part = "all") -> Communicate:
    """FedAvg with full participation: every client gets the mean of ``part`` (``W = 11^T/n``
    computed as a mean); messages ``2 n`` (:func:`server_flows`: download and upload). With
    clients offline (``rnd.online``), the mean of the online clients (:func:`server_average`).
    """
    partial = server_average(part)

    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        if rnd.online is not None:
            return partial(state, rnd, env)
        block = state.x if part == "all" else state.x[:, env.layout.cols(part)]
        mean = env.clients.mean(block, "exact average")
        block.copy_(mean.unsqueeze(0).expand_as(block))
        return Sent.of(*server_flows(env.n, None, _width(env, part),
                                     dtype_bits(state.x.dtype), _kind(part)))

    return communicate


def server_average(part: Part, *, participation: float = 1.0, sample_seed: int = 0,
                   weighting: str = "uniform") -> Communicate:
    """Replace ``part`` of every client by the (weighted) mean over the round's participants.

    The participants are :func:`round_active` (sampled and online). The mean is
    ``x_0 + mean(x_i - x_0)`` (averaging models that agree changes nothing);
    ``weighting="data_size"`` weighs client ``i`` by ``env.train_sizes[i]``. Messages: ``2 m``
    with ``m`` participants (:func:`server_flows`). No participant: nothing changes.
    """

    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        block = state.x[:, env.layout.cols(part)]
        full_mask = _mask(env.n, rnd, participation, sample_seed, state.x)
        clients = env.clients
        mask = None if full_mask is None else clients.own(full_mask)
        ref = row(clients, block, 0)
        if weighting == "uniform" and mask is None:
            avg = clients.mean(block - ref, "server average").add_(ref)
        else:
            w = torch.ones(block.shape[0], dtype=block.dtype, device=block.device)
            if weighting == "data_size":
                w = w * data_sizes(env).to(device=block.device, dtype=block.dtype)
            if mask is not None:
                w = w * mask
            num, den = (w.unsqueeze(1) * (block - ref)).sum(dim=0), w.sum()
            both = clients.reduce_(torch.cat([num, den.view(1)]), "server average")
            if float(both[-1]) <= 0:  # nobody took part: the server's model stays
                avg = None
            else:
                avg = both[:-1].div_(both[-1]).add_(ref)
        if avg is not None:
            block.copy_(avg.unsqueeze(0).expand_as(block))
        active = None if full_mask is None else full_mask.cpu().numpy() > 0
        return Sent.of(*server_flows(env.n, active, _width(env, part),
                                     dtype_bits(state.x.dtype), _kind(part)), active=active)

    return communicate


def data_sizes(env: Services) -> Tensor:
    """``env.train_sizes`` (this process's clients' training-set sizes), or the
    ``ValueError`` of ``weighting='data_size'`` without them (toy services)."""
    sizes = env.train_sizes
    if sizes is None:
        raise ValueError(
            "weighting='data_size' needs the clients' training-set sizes (env.train_sizes, set "
            "by the engine); run through topofl.run or use weighting='uniform'"
        )
    return torch.as_tensor(sizes)


def no_communication(state: State, rnd: Round, env: Services) -> Sent:
    """Local training: nothing is sent."""
    return Sent.of()


# ----------------------------------------------------------------------------- round hooks


def no_round_start(state: State, rnd: Round, env: Services) -> None:
    """``round_start`` piece that does nothing."""


def restart_momentum(*also: Callable[[State], Tensor | None]
                     ) -> Callable[[State, Round, Services], None]:
    """``round_start`` piece: zero the momentum buffers (and those ``also`` reads from the
    state, e.g. a personal model's momentum in the algorithm's record; ``None``: none), as
    a client that builds a fresh local optimizer every round does."""

    def round_start(state: State, rnd: Round, env: Services) -> None:
        if state.momentum is not None:
            state.momentum.zero_()
        for buffer in also:
            b = buffer(state)
            if b is not None:
                b.zero_()

    return round_start


def require_split(name: str, env: Services) -> None:
    """A ``ValueError`` unless the model splits into a non-empty body and head."""
    lay = env.layout
    if not lay.has_split:
        raise ValueError(
            f"{name} personalizes a head and shares a body, but the model's parameters do not "
            f"split into a non-empty body and head ({lay.num_body} body of {lay.num_params}); "
            "use a model with a body and a head (e.g. topofl.models.build_model('mlp', ...))"
        )


def compose_init(*pieces: Any, check: Callable[[Tensor, Services], None] | None = None
                 ) -> Callable[[Tensor, Services], State]:
    """``init(x0, env)``: a state on ``x0`` with the buffers each piece adds (``init_``)."""

    def init(x0: Tensor, env: Services) -> State:
        if check is not None:
            check(x0, env)
        state = State(x=x0)
        for p in pieces:
            p.init_(state, env)
        return state

    return init
