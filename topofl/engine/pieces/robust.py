r"""Robust gossip: each node aggregates its neighbourhood's models by a rule that bounds what
a Byzantine neighbour can do (:func:`robust_gossip`, :data:`AGGREGATORS`).

For node $i$ with in-neighbours $N_i$ (the arcs of $W_t$) and the models $m_{ij}$ it
receives (a Byzantine sender's attack vector, :mod:`topofl.engine.byzantine`):

* ``"mean"``: $x_i \leftarrow W_{ii} x_i + \sum_{j \in N_i} W_{ij} m_{ij}$ (plain gossip;
  without an attack :func:`~topofl.engine.pieces.gossip` itself runs);
* ``"clipped"`` (ClippedGossip, self-centred clipping; He, Karimireddy and Jaggi 2022):
  $x_i \leftarrow x_i + \sum_{j \in N_i} W_{ij}\, \mathrm{clip}(m_{ij} - x_i, \tau)$ with
  $\mathrm{clip}(z, \tau) = z \min(1, \tau / \lVert z \rVert_2)$: a fixed radius ``tau``
  ($\tau = \infty$ is plain gossip), or ``tau="adaptive"``, each node's own radius
  $\tau_i$ (:func:`adaptive_radii`): the smallest of $0$ and the distances
  $d_{ij} = \lVert m_{ij} - x_i \rVert_2$ for which the weight of the in-neighbours
  strictly farther away, $\sum_{j \in N_i: d_{ij} > \tau_i} W_{ij}$, is at most ``delta``
  (the Byzantine weight a node budgets for). The neighbours clipped are the farthest ones,
  of total weight at most ``delta``; ``delta = 0`` clips nothing (plain gossip); with equal
  weights $w$ and ``delta`` in $[w, 2w)$ the farthest neighbour is pulled in to the second
  farthest's distance, the rule of the authors' code ([1]_, its ``scp`` aggregator, except
  at a node with one in-neighbour, which that code leaves unclipped and this rule clips to
  0; the paper's analysis sets $\tau_i$ from the honest neighbours' spread and the
  Byzantine weight $\delta_i$ around node $i$, which a node cannot observe); or
  ``tau="rank"``, the authors' code's rule itself on any graph (:func:`rank_radii`): $\tau_i$
  the second-largest of the distances $d_{ij}$ (ties kept, as a sort gives them), the only
  one's at a node with one in-neighbour (nothing clipped there), 0 at a node without any:
  whatever the weights, the farthest neighbour is pulled in to the second farthest's
  distance (on an irregular graph the weight budget of ``"adaptive"`` clips other
  neighbours);
* ``"trimmed_mean"`` (BRIDGE-T, Yang and Bajwa 2019): per coordinate, the mean of the
  neighbourhood's values ($x_i$ and the $m_{ij}$, unweighted) without its ``trim`` largest
  and ``trim`` smallest (every neighbourhood needs at least ``2 trim + 1`` models);
* ``"median"``: per coordinate, the median of the neighbourhood's values (for an even count
  the mean of the two middle ones).

All clients at once: the neighbourhoods are padded to the largest (``[n, K, P]``, ``K`` one
plus the largest in-degree), in blocks of receivers so that a block holds at most
:data:`BLOCK_ELEMENTS` values; the cost is $O(|E| P)$ (with a sort along the neighbourhood
for the trimmed mean and the median). Every client must live in this process: a sharded
placement is refused.

References
----------
.. [1] L. He, S. P. Karimireddy, M. Jaggi, "Byzantine-robust decentralized learning via
   ClippedGossip", 2022.
.. [2] Z. Yang, W. U. Bajwa, "ByRDiE / BRIDGE: Byzantine-resilient decentralized gradient
   descent", IEEE TSIPN 2019.

Examples
--------
Three nodes on a complete graph (weights 1/3); node 2 holds an outlier: the median ignores it.

>>> import torch
>>> from topofl.engine.pieces.robust import aggregate, neighbourhoods
>>> x = torch.tensor([[0.0], [1.0], [100.0]], dtype=torch.float64)
>>> nb = neighbourhoods(tf.topologies.complete(3), x.device, x.dtype)
>>> aggregate(x, nb, "median").flatten().tolist()
[1.0, 1.0, 1.0]
>>> [round(v, 4) for v in aggregate(x, nb, "mean").flatten().tolist()]
[33.6667, 33.6667, 33.6667]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from topofl.engine.byzantine import Attack, attack_messages
from topofl.engine.layout import Part
from topofl.engine.ledger import Flow, dtype_bits, graph_arcs
from topofl.engine.protocol import Round, Sent, Services, State
from topofl.graph import Topology

__all__ = ["AGGREGATORS", "robust_gossip", "aggregate", "adaptive_radii", "rank_radii",
           "neighbourhoods",
           "Neighbourhoods", "check_aggregator"]

#: The rules a node aggregates its neighbourhood with.
AGGREGATORS = ("mean", "clipped", "trimmed_mean", "median")
#: The most values one block of receivers' padded neighbourhoods holds.
BLOCK_ELEMENTS = 1 << 24


class Neighbourhoods(NamedTuple):
    """Every node's neighbourhood, padded: slot 0 the node itself, then its in-neighbours
    in increasing id.

    Attributes
    ----------
    ids : Tensor
        ``[n, K]`` int64 ids (padding: the node itself).
    weight : Tensor
        ``[n, K]`` ``W_ij`` (``W_ii`` in slot 0; 0 on padding).
    valid : Tensor
        ``[n, K]`` bool: the real slots.
    """

    ids: Tensor
    weight: Tensor
    valid: Tensor

    def rows(self, a: int, b: int) -> Neighbourhoods:
        """The receivers ``a .. b - 1``."""
        return Neighbourhoods(self.ids[a:b], self.weight[a:b], self.valid[a:b])


def neighbourhoods(topology: Topology, device: torch.device, dtype: torch.dtype
                   ) -> Neighbourhoods:
    """The padded neighbourhoods of ``topology``'s ``W`` (its non-zero off-diagonal entries
    ``W_ij``, ``j -> i``)."""
    W = topology.W.tocsr()
    n = topology.n
    r = np.repeat(np.arange(n, dtype=np.int64), np.diff(W.indptr))
    c = W.indices.astype(np.int64)
    v = W.data.astype(np.float64)
    keep = (r != c) & (v != 0)
    r, c, v = r[keep], c[keep], v[keep]
    order = np.lexsort((c, r))
    r, c, v = r[order], c[order], v[order]
    deg = np.bincount(r, minlength=n)
    K = 1 + int(deg.max(initial=0))
    start = np.concatenate([[0], np.cumsum(deg)[:-1]])
    slot = 1 + np.arange(r.size) - start[r]
    index = np.repeat(np.arange(n, dtype=np.int64)[:, None], K, axis=1)
    weight = np.zeros((n, K))
    valid = np.zeros((n, K), dtype=bool)
    index[r, slot] = c
    weight[r, slot] = v
    valid[r, slot] = True
    valid[:, 0] = True
    weight[:, 0] = W.diagonal()
    return Neighbourhoods(torch.as_tensor(index, device=device),
                          torch.as_tensor(weight, device=device, dtype=dtype),
                          torch.as_tensor(valid, device=device))


#: ``tau``'s value for ClippedGossip's per-node radius (:func:`adaptive_radii`).
ADAPTIVE = "adaptive"
#: ``tau``'s value for the authors' code's per-node radius (:func:`rank_radii`).
RANK = "rank"


def check_aggregator(aggregator: str, tau: float | str | None, trim: int,
                     delta: float | None = None) -> None:
    """One-line errors for a rule's parameters (``tau``: ``clipped`` only, a number ``>= 0``
    or ``"adaptive"``; ``delta``: with ``tau="adaptive"`` only, in ``[0, 1]``; ``trim``:
    ``trimmed_mean`` only, ``>= 0``)."""
    if not isinstance(aggregator, str) or aggregator not in AGGREGATORS:
        raise ValueError(f"aggregator must be one of {', '.join(AGGREGATORS)}, got "
                         f"{aggregator!r}")
    if tau is not None:
        if aggregator != "clipped":
            raise ValueError(f"tau is the clipping radius of aggregator='clipped', not of "
                             f"{aggregator!r}")
        if isinstance(tau, str):
            if tau not in (ADAPTIVE, RANK):
                raise ValueError(f"tau must be a number >= 0, {ADAPTIVE!r} or {RANK!r} (each "
                                 f"node's radius from its neighbours' distances), got {tau!r}")
        elif isinstance(tau, bool) or not isinstance(tau, (int, float)) or math.isnan(tau):
            raise TypeError(f"tau must be a number >= 0, {ADAPTIVE!r} or {RANK!r}, got "
                            f"{type(tau).__name__} {tau!r}")
        elif tau < 0:
            raise ValueError(f"tau must be >= 0 (a clipping radius), got {tau!r}")
    elif aggregator == "clipped":
        raise ValueError(f"aggregator='clipped' needs tau, its clipping radius (inf: plain "
                         f"gossip; {ADAPTIVE!r}: each node's own, with delta)")
    if tau == ADAPTIVE:
        if delta is None:
            raise ValueError("tau='adaptive' needs delta, the largest weight of neighbours a "
                             "node clips (in [0, 1]; 0: plain gossip)")
        if (isinstance(delta, bool) or not isinstance(delta, (int, float))
                or math.isnan(delta)):
            raise TypeError(f"delta must be a number in [0, 1], got {type(delta).__name__} "
                            f"{delta!r}")
        if not 0 <= delta <= 1:
            raise ValueError(f"delta must be in [0, 1] (a weight of neighbours), got {delta!r}")
    elif delta is not None:
        raise ValueError("delta is the clipped weight of tau='adaptive', not a parameter of "
                         f"aggregator={aggregator!r} with tau={tau!r}")
    if isinstance(trim, bool) or not isinstance(trim, int):
        raise TypeError(f"trim must be an int >= 0, got {type(trim).__name__} {trim!r}")
    if trim < 0:
        raise ValueError(f"trim must be >= 0, got {trim}")
    if trim and aggregator != "trimmed_mean":
        raise ValueError(f"trim is the number of values aggregator='trimmed_mean' drops at "
                         f"each end, not a parameter of {aggregator!r}")


def _blocks(x: Tensor, nb: Neighbourhoods, attack: Attack | None
            ) -> Iterator[tuple[int, int, Tensor, Neighbourhoods]]:
    """Blocks of receivers ``a .. b - 1``: their messages ``[b - a, K, P]`` (a Byzantine
    sender's replaced by ``attack``'s vector) and neighbourhoods."""
    n, P = x.shape
    noise = (attack.noise(P, x.device, x.dtype)
             if attack is not None and attack.attack == "gaussian" else None)
    K = nb.ids.shape[1]
    block = max(1, BLOCK_ELEMENTS // max(1, K * P))
    for a in range(0, n, block):  # blocks of receivers, not clients one by one
        b = min(n, a + block)
        part = nb.rows(a, b)
        M = x[part.ids]  # [r, K, P]
        if attack is not None:
            M = attack_messages(M, part.ids, part.weight, part.valid, attack, noise)
        yield a, b, M, part


def aggregate(x: Tensor, nb: Neighbourhoods, rule: str, *, tau: float | str = math.inf,
              trim: int = 0, attack: Attack | None = None, delta: float = 0.0) -> Tensor:
    """``[n, P]``: every node's aggregate of its neighbourhood by ``rule`` (module
    docstring), the messages of ``attack``'s Byzantine senders replaced by its vectors.

    ``x`` ``[n, P]`` holds every node's model; ``nb`` the neighbourhoods
    (:func:`neighbourhoods`); ``tau`` a radius or ``"adaptive"`` (then ``delta``, the
    largest weight of neighbours a node clips). A new tensor; ``x`` is not changed.
    """
    if rule == "trimmed_mean":
        smallest = int(nb.valid.sum(dim=1).min())
        if 2 * trim + 1 > smallest:
            raise ValueError(f"trimmed_mean with trim={trim} needs every neighbourhood (the "
                             f"node and its in-neighbours) to hold at least {2 * trim + 1} "
                             f"models; the smallest holds {smallest}")
    out = torch.empty_like(x)
    for a, b, M, part in _blocks(x, nb, attack):
        out[a:b] = _rule(M, part, rule, tau, trim, delta)
    return out


def adaptive_radii(x: Tensor, nb: Neighbourhoods, delta: float, *,
                   attack: Attack | None = None) -> Tensor:
    r"""``[n]``: every node's ClippedGossip radius $\tau_i$ for ``tau="adaptive"`` (module
    docstring): the smallest of 0 and the distances $\lVert m_{ij} - x_i \rVert_2$ with at
    most ``delta`` of in-neighbour weight strictly beyond it (0 for a node without
    in-neighbours).

    Examples
    --------
    Node 0 of a 4-node complete graph (weights 1/4) sees neighbours at distances 1, 2 and 10:
    a budget of one neighbour's weight pulls the farthest in to 2.

    >>> import torch
    >>> x = torch.tensor([[0.0], [1.0], [2.0], [10.0]], dtype=torch.float64)
    >>> nb = neighbourhoods(tf.topologies.complete(4), x.device, x.dtype)
    >>> adaptive_radii(x, nb, 0.25)[0].item(), adaptive_radii(x, nb, 0.0)[0].item()
    (2.0, 10.0)
    """
    out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
    for a, b, M, part in _blocks(x, nb, attack):
        norm = torch.linalg.vector_norm(M - M[:, :1], dim=2)
        out[a:b] = _radii(norm, part, delta)
    return out


def rank_radii(x: Tensor, nb: Neighbourhoods, *, attack: Attack | None = None) -> Tensor:
    r"""``[n]``: every node's ClippedGossip radius $\tau_i$ for ``tau="rank"`` (module
    docstring), the rule of the authors' code: the second-largest distance
    $\lVert m_{ij} - x_i \rVert_2$ over its in-neighbours, the only one's for a node with one
    in-neighbour, 0 for a node without any.

    Examples
    --------
    Node 0 of a 4-node complete graph sees neighbours at distances 1, 2 and 10: the farthest
    is pulled in to 2, whatever the weights; on a path 0 - 1 - 2 the end node 0 has one
    in-neighbour, which is not clipped.

    >>> import torch
    >>> x = torch.tensor([[0.0], [1.0], [2.0], [10.0]], dtype=torch.float64)
    >>> nb = neighbourhoods(tf.topologies.complete(4), x.device, x.dtype)
    >>> rank_radii(x, nb).tolist()
    [2.0, 1.0, 2.0, 9.0]
    >>> path = tf.Topology.from_adjacency([[0, 1, 0], [1, 0, 1], [0, 1, 0]])
    >>> rank_radii(x[:3], neighbourhoods(path, x.device, x.dtype)).tolist()
    [1.0, 1.0, 1.0]
    """
    out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
    for a, b, M, part in _blocks(x, nb, attack):
        norm = torch.linalg.vector_norm(M - M[:, :1], dim=2)
        out[a:b] = _rank_radii(norm, part)
    return out


def _rank_radii(norm: Tensor, nb: Neighbourhoods) -> Tensor:
    """``[r]``: the rank rule's radii from the distances ``norm`` ``[r, K]`` (slot 0: the
    node itself, not a neighbour)."""
    nbr = nb.valid.clone()
    nbr[:, 0] = False
    key = torch.where(nbr, norm, torch.full_like(norm, -math.inf))  # non-neighbours last
    top = key.topk(min(2, key.shape[1]), dim=1).values
    degree = nbr.sum(dim=1)
    second = top[:, -1] if top.shape[1] > 1 else top[:, 0]
    radius = torch.where(degree >= 2, second, top[:, 0])
    return torch.where(degree >= 1, radius, torch.zeros_like(radius))


def _radii(norm: Tensor, nb: Neighbourhoods, delta: float) -> Tensor:
    """``[r]``: the adaptive radii from the distances ``norm`` ``[r, K]`` (slot 0: the
    node itself, not a neighbour)."""
    r, K = norm.shape
    nbr = nb.valid.clone()
    nbr[:, 0] = False
    key = torch.where(nbr, norm, torch.full_like(norm, -1.0))  # non-neighbours last
    ds, order = key.sort(dim=1, descending=True)
    ws = torch.where(nbr, nb.weight, torch.zeros_like(norm)).gather(1, order)
    before = ws.cumsum(dim=1) - ws  # weight of the positions before each one
    # entries strictly farther than ds[:, p] all stand before the first of p's ties
    greater = K - torch.searchsorted(ds.flip(1).contiguous(), ds.contiguous(), right=True)
    beyond = before.gather(1, greater)
    fits = (ds >= 0) & (beyond <= delta)
    radius = torch.where(fits, ds, torch.full_like(ds, math.inf)).min(dim=1).values
    total = ws.sum(dim=1)
    return torch.where((total <= delta) | torch.isinf(radius), torch.zeros_like(radius),
                       radius)


def _rule(M: Tensor, nb: Neighbourhoods, rule: str, tau: float | str, trim: int,
          delta: float = 0.0) -> Tensor:
    """One block's aggregates ``[r, P]`` from its messages ``M`` ``[r, K, P]``."""
    w = nb.weight.unsqueeze(2)
    if rule == "mean":
        return (w * M).sum(dim=1)
    if rule == "clipped":
        own = M[:, 0]
        d = M - own.unsqueeze(1)
        norm = torch.linalg.vector_norm(d, dim=2, keepdim=True)
        if isinstance(tau, str):  # "adaptive" or "rank": each node's own radius
            radius = (_radii(norm.squeeze(2), nb, delta) if tau == ADAPTIVE
                      else _rank_radii(norm.squeeze(2), nb)).view(-1, 1, 1)
            scale = torch.where(norm > radius, radius / norm, torch.ones_like(norm))
        else:
            scale = torch.where(norm > tau, tau / norm, torch.ones_like(norm))
        return own + (w * scale * d).sum(dim=1)
    count = nb.valid.sum(dim=1)  # [r]
    padded = torch.where(nb.valid.unsqueeze(2), M, torch.full_like(M, math.inf))
    ranked = padded.sort(dim=1).values  # padding (inf) last
    if rule == "trimmed_mean":
        k = torch.arange(M.shape[1], device=M.device).unsqueeze(0)
        keep = ((k >= trim) & (k < (count - trim).unsqueeze(1))).unsqueeze(2)
        total = torch.where(keep, ranked, torch.zeros_like(ranked)).sum(dim=1)
        return total / (count - 2 * trim).unsqueeze(1).to(M.dtype)
    lo = ((count - 1) // 2).view(-1, 1, 1).expand(-1, 1, M.shape[2])
    hi = (count // 2).view(-1, 1, 1).expand(-1, 1, M.shape[2])
    return 0.5 * (ranked.gather(1, lo) + ranked.gather(1, hi)).squeeze(1)


def robust_gossip(rule: str = "mean", *, tau: float | str | None = None, trim: int = 0,
                  part: Part = "all", delta: float | None = None
                  ) -> Callable[[State, Round, Services], Sent]:
    """A ``communicate`` piece: ``X[:, cols(part)]`` becomes every node's ``rule``
    aggregate of its neighbourhood in ``W_t`` (:func:`aggregate`), under the round's attack
    (``rnd.byzantine``); messages: the arcs of ``W_t`` (kind ``"model"`` or ``"body"``).

    Parameters
    ----------
    rule : {"mean", "clipped", "trimmed_mean", "median"}
    tau : float, "adaptive" or "rank", optional
        ``clipped``'s radius (``>= 0``; ``inf``: plain gossip; ``"adaptive"``: each node's
        own, :func:`adaptive_radii`; ``"rank"``: the authors' code's, :func:`rank_radii`).
    trim : int, default 0
        ``trimmed_mean``'s values dropped at each end.
    part : {"all", "body"}
    delta : float, optional
        ``tau="adaptive"``'s largest weight of neighbours a node clips (in ``[0, 1]``).
    """
    check_aggregator(rule, tau, trim, delta)
    radius: float | str = (math.inf if tau is None else tau if isinstance(tau, str)
                           else float(tau))
    budget = 0.0 if delta is None else float(delta)

    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        topo = rnd.topology
        if topo is None:
            raise ValueError(f"round {rnd.t} has no topology to communicate over")
        if rnd.drop is not None:
            raise ValueError("robust gossip and [byzantine] attacks do not take lost messages "
                             "([network] drop > 0)")
        if len(env.clients.ids) != topo.n:
            raise ValueError("robust gossip and [byzantine] attacks need every client in one "
                             "process: a sharded (distributed) placement is not supported")
        cols = env.layout.cols(part)
        X = state.x[:, cols]
        nb = neighbourhoods(topo, X.device, X.dtype)
        attack = rnd.byzantine
        state.x[:, cols] = aggregate(X, nb, rule, tau=radius, trim=trim, attack=attack,
                                     delta=budget)
        kind = "model" if part == "all" else part
        return Sent.of(Flow(kind, graph_arcs(topo), int(cols.stop - cols.start),
                            dtype_bits(state.x.dtype)))

    return communicate
