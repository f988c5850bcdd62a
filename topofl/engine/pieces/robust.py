r"""Robust gossip: each node aggregates its neighbourhood's models by a rule that bounds what
a Byzantine neighbour can do (:func:`robust_gossip`, :data:`AGGREGATORS`).

For node $i$ with in-neighbours $N_i$ (the arcs of $W_t$) and the models $m_{ij}$ it
receives (a Byzantine sender's attack vector, :mod:`topofl.engine.byzantine`):

* ``"mean"``: $x_i \leftarrow W_{ii} x_i + \sum_{j \in N_i} W_{ij} m_{ij}$ (plain gossip;
  without an attack :func:`~topofl.engine.pieces.gossip` itself runs);
* ``"clipped"`` (ClippedGossip, self-centred clipping; He, Karimireddy and Jaggi 2022):
  $x_i \leftarrow x_i + \sum_{j \in N_i} W_{ij}\, \mathrm{clip}(m_{ij} - x_i, \tau)$ with
  $\mathrm{clip}(z, \tau) = z \min(1, \tau / \lVert z \rVert_2)$ (a fixed radius ``tau``;
  $\tau = \infty$ is plain gossip);
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
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from topofl.engine.byzantine import Attack, attack_messages
from topofl.engine.layout import Part
from topofl.engine.ledger import Flow, dtype_bits, graph_arcs
from topofl.engine.protocol import Round, Sent, Services, State
from topofl.graph import Topology

__all__ = ["AGGREGATORS", "robust_gossip", "aggregate", "neighbourhoods", "Neighbourhoods",
           "check_aggregator"]

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


def check_aggregator(aggregator: str, tau: float | None, trim: int) -> None:
    """One-line errors for a rule's parameters (``tau``: ``clipped`` only, ``>= 0``;
    ``trim``: ``trimmed_mean`` only, ``>= 0``)."""
    if not isinstance(aggregator, str) or aggregator not in AGGREGATORS:
        raise ValueError(f"aggregator must be one of {', '.join(AGGREGATORS)}, got "
                         f"{aggregator!r}")
    if tau is not None:
        if aggregator != "clipped":
            raise ValueError(f"tau is the clipping radius of aggregator='clipped', not of "
                             f"{aggregator!r}")
        if isinstance(tau, bool) or not isinstance(tau, (int, float)) or math.isnan(tau):
            raise TypeError(f"tau must be a number >= 0, got {type(tau).__name__} {tau!r}")
        if tau < 0:
            raise ValueError(f"tau must be >= 0 (a clipping radius), got {tau!r}")
    elif aggregator == "clipped":
        raise ValueError("aggregator='clipped' needs tau, its clipping radius (inf: plain "
                         "gossip)")
    if isinstance(trim, bool) or not isinstance(trim, int):
        raise TypeError(f"trim must be an int >= 0, got {type(trim).__name__} {trim!r}")
    if trim < 0:
        raise ValueError(f"trim must be >= 0, got {trim}")
    if trim and aggregator != "trimmed_mean":
        raise ValueError(f"trim is the number of values aggregator='trimmed_mean' drops at "
                         f"each end, not a parameter of {aggregator!r}")


def aggregate(x: Tensor, nb: Neighbourhoods, rule: str, *, tau: float = math.inf,
              trim: int = 0, attack: Attack | None = None) -> Tensor:
    """``[n, P]``: every node's aggregate of its neighbourhood by ``rule`` (module
    docstring), the messages of ``attack``'s Byzantine senders replaced by its vectors.

    ``x`` ``[n, P]`` holds every node's model; ``nb`` the neighbourhoods
    (:func:`neighbourhoods`). A new tensor; ``x`` is not changed.
    """
    n, P = x.shape
    if rule == "trimmed_mean":
        smallest = int(nb.valid.sum(dim=1).min())
        if 2 * trim + 1 > smallest:
            raise ValueError(f"trimmed_mean with trim={trim} needs every neighbourhood (the "
                             f"node and its in-neighbours) to hold at least {2 * trim + 1} "
                             f"models; the smallest holds {smallest}")
    noise = (attack.noise(P, x.device, x.dtype)
             if attack is not None and attack.attack == "gaussian" else None)
    K = nb.ids.shape[1]
    block = max(1, BLOCK_ELEMENTS // max(1, K * P))
    out = torch.empty_like(x)
    for a in range(0, n, block):  # blocks of receivers, not clients one by one
        b = min(n, a + block)
        part = nb.rows(a, b)
        M = x[part.ids]  # [r, K, P]
        if attack is not None:
            M = attack_messages(M, part.ids, part.weight, part.valid, attack, noise)
        out[a:b] = _rule(M, part, rule, tau, trim)
    return out


def _rule(M: Tensor, nb: Neighbourhoods, rule: str, tau: float, trim: int) -> Tensor:
    """One block's aggregates ``[r, P]`` from its messages ``M`` ``[r, K, P]``."""
    w = nb.weight.unsqueeze(2)
    if rule == "mean":
        return (w * M).sum(dim=1)
    if rule == "clipped":
        own = M[:, 0]
        d = M - own.unsqueeze(1)
        norm = torch.linalg.vector_norm(d, dim=2, keepdim=True)
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


def robust_gossip(rule: str = "mean", *, tau: float | None = None, trim: int = 0,
                  part: Part = "all") -> Callable[[State, Round, Services], Sent]:
    """A ``communicate`` piece: ``X[:, cols(part)]`` becomes every node's ``rule``
    aggregate of its neighbourhood in ``W_t`` (:func:`aggregate`), under the round's attack
    (``rnd.byzantine``); messages: the arcs of ``W_t`` (kind ``"model"`` or ``"body"``).

    Parameters
    ----------
    rule : {"mean", "clipped", "trimmed_mean", "median"}
    tau : float, optional
        ``clipped``'s radius (``>= 0``; ``inf``: plain gossip).
    trim : int, default 0
        ``trimmed_mean``'s values dropped at each end.
    part : {"all", "body"}
    """
    check_aggregator(rule, tau, trim)
    radius = math.inf if tau is None else float(tau)

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
        state.x[:, cols] = aggregate(X, nb, rule, tau=radius, trim=trim, attack=attack)
        kind = "model" if part == "all" else part
        return Sent.of(Flow(kind, graph_arcs(topo), int(cols.stop - cols.start),
                            dtype_bits(state.x.dtype)))

    return communicate
