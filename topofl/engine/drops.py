r"""Dropped messages: each message of a round is lost with probability ``p``.

``[network] drop = p`` (:class:`~topofl.engine.clock.Network`) makes every link lossy: the
message on arc $j \to i$ at round $t$ is lost when $u(s, t, j, i) < p$, with $u$ a uniform
number that is a pure function of the network's ``seed``, the round and the arc (a
counter-based hash, :func:`message_uniform`, on a stream of its own: the latency, bandwidth
and speed draws do not move it, and ``drop = 0`` draws nothing). The same seed loses the same
messages, a resumed run loses what the uninterrupted one did, and at ``drop = 0`` the run is
the run without the key (same records, header and run hash).

What an algorithm does with a missing message is its ``Algorithm.lost`` rule
(:data:`LOST_RULES`), applied by the pieces that communicate
(:func:`~topofl.engine.pieces.gossip`, :class:`~topofl.engine.pieces.PushSum`) to the round's
graph through :func:`lossy`:

* ``"renormalise"`` (D-SGD-style gossip with a doubly stochastic ``W``: ``dsgd``,
  ``dfedavgm``, ``dfedavgm_p``): a receiver averages what arrived, its own model included,
  in the proportions ``W`` gave them: row $i$ becomes
  $W'_{ij} = W_{ij} / (W_{ii} + \sum_{k \to i \text{ delivered}} W_{ik})$ on itself and the
  delivered arcs, 0 on the lost ones. Rows that lost nothing are left exactly as they were.
  ``W'`` is row stochastic (not doubly: the average of the models moves when a message is
  lost), and a node that lost every message and gives itself no weight keeps its model
  ($W'_{ii} = 1$). With ``drop = 1`` every ``W'`` is the identity: no mixing. Epidemic
  Learning (``el``) applies it to its own uniform weights
  (:func:`~topofl.algorithms.el.arrival_average`): a receiver averages uniformly itself and
  the $k_i$ models that arrived, exactly $1/(k_i + 1)$ each.
* ``"mass"`` (push-sum over a column-stochastic ``W``: ``sgp``, ``osgp``, ``dfedpgp``): the
  mass of a lost message is lost with it, numerator and push-sum weight alike
  ($W'_{ij} = 0$ on a lost arc, every other entry as it was; with OSGP's overlap the message
  in flight never arrives). The sums $\sum_i x_i$ and $\sum_i w_i$ drop by exactly what the
  lost messages carried, so the de-biased ratio $x_i / w_i$ stays a weighted average of
  the clients' ratios. The total weight shrinks geometrically with the rounds (by about
  $p (1 - W_{jj})$ of a node's weight per round), so a push-sum local step, applied to the
  numerator, moves the de-biased point by ``lr / w``: steps grow as the weights shrink. A
  node that gives itself no weight ($W_{jj} = 0$) and loses every message it sends loses
  all its mass ($w_j = 0$: no de-biased model); :func:`topofl.mixing.push_sum` gives every
  node $1 / (\text{out-degree} + 1)$ of its own. A gossip over a doubly stochastic ``W``
  may take the same rule (``gossip(lost="mass")``, :mod:`topofl.engine.pieces`): a receiver
  keeps $W_{ii} x_i + \sum_{j \text{ delivered}} W_{ij} x_j$, its row summing to less than
  1, as decent-bench's peer-to-peer algorithms combine what arrived.

An algorithm whose ``lost`` is ``None`` (server-based ones, and the gossip variants whose
messages are not all models on the graph's arcs: Clique Averaging's gradients, CHOCO,
gradient tracking, EXTRA ...) refuses ``drop > 0`` (:func:`check_drop`).

Accounting: the ledger counts a lost message as sent (``messages``, ``bytes``, the sender's
``messages_sent``/``bytes_sent``) but not as received, and records ``messages_dropped``,
``bytes_dropped``, ``messages_delivered`` and ``bytes_delivered``
(:class:`~topofl.engine.ledger.Ledger`); the clock times only the delivered messages (a lost
message takes no share of its sender's uplink and its receiver does not wait for it).

Examples
--------
A 3-ring (every weight 1/3) at round 0 with ``drop = 0.3`` and network seed 17: the messages
``1 -> 0`` and ``0 -> 2`` are lost. Node 0 averages itself and node 2, node 2 itself and node
1; node 1 received everything.

>>> from topofl.engine.drops import Drops, lossy
>>> ring = tf.topologies.ring(3)
>>> lo = lossy(ring, Drops(0.3, seed=17, t=0), "renormalise")
>>> list(zip(lo.dropped.senders.tolist(), lo.dropped.receivers.tolist()))
[(1, 0), (0, 2)]
>>> for row in lo.topology.to_dense().tolist():
...     print([round(v, 3) for v in row])
[0.5, 0.0, 0.5]
[0.333, 0.333, 0.333]
[0.0, 0.5, 0.5]
>>> m = lossy(ring, Drops(0.3, seed=17, t=0), "mass").topology.to_dense()
>>> [round(float(v), 3) for v in m.sum(axis=0)]  # what nodes 0, 1, 2 keep of their mass
[0.667, 0.667, 1.0]
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from topofl.engine.clock import Network, _mix64
from topofl.engine.ledger import Arcs, graph_arcs
from topofl.graph import Topology

__all__ = ["Drops", "LaneDrops", "Lossy", "LOST_RULES", "lossy", "message_uniform", "check_drop",
           "DROP_TAG"]

#: What an algorithm does with a message that was lost (``Algorithm.lost``; ``None``: it
#: refuses ``[network] drop > 0``).
LOST_RULES = {
    "renormalise": (
        "a receiver averages what arrived, its own model included, in the proportions W gave "
        "them (each row of W renormalised over itself and its delivered arcs; D-SGD-style "
        "gossip with a doubly stochastic W, and EL's uniform average of what arrived)"),
    "mass": (
        "the mass of a lost message is lost with it (W's entry on a lost arc becomes 0): "
        "push-sum's numerator and weight alike, so the de-biased ratio stays a weighted "
        "average; a gossip that takes it (gossip(lost='mass')) keeps what arrived unscaled"),
}

#: The stream of the drop draws: distinct from the network's other quantities' tags.
DROP_TAG = 0xD0D0_1055


def message_uniform(seed: int, t: int, senders: Any, receivers: Any) -> np.ndarray:
    """Uniform numbers in ``(0, 1)``, one per message ``senders[k] -> receivers[k]`` of round
    ``t``, a pure function of ``(seed, t, sender, receiver)`` (directed: ``j -> i`` and
    ``i -> j`` draw independently), without a loop (SplitMix64 of the tuple).

    Examples
    --------
    >>> from topofl.engine.drops import message_uniform
    >>> u = message_uniform(0, 3, [0, 1, 0], [1, 0, 1])
    >>> bool(u[0] == u[2]), bool(u[0] != u[1]), bool(0 < u.min() and u.max() < 1)
    (True, True, True)
    >>> bool((message_uniform(0, 4, [0], [1]) != u[:1]).all())
    True
    """
    s = np.asarray(senders, dtype=np.int64).astype(np.uint64)
    r = np.asarray(receivers, dtype=np.int64).astype(np.uint64)
    with np.errstate(over="ignore"):
        key = _mix64(np.full(s.shape, np.uint64(int(seed) & (2**64 - 1)), dtype=np.uint64)
                     ^ np.uint64(DROP_TAG))
        key = _mix64(key + np.uint64(int(t) & (2**64 - 1)))
        h = _mix64(_mix64(key + s) + r)
    return ((h >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53


class Drops(NamedTuple):
    """The drops of one round: each message is lost with probability ``p``
    (:func:`message_uniform` ``(seed, t, sender, receiver) < p``).

    Attributes
    ----------
    p : float
        In ``(0, 1]`` (a run at ``drop = 0`` has no ``Drops``).
    seed : int
        The network's seed.
    t : int
        The round.

    Examples
    --------
    >>> from topofl.engine.drops import Drops
    >>> arcs = tf.engine.ledger.graph_arcs(tf.topologies.complete(10))
    >>> lost = Drops(0.25, seed=0, t=0).lost(arcs)
    >>> lost.shape, 0.15 < float(lost.mean()) < 0.35
    ((90,), True)
    >>> bool(Drops(1.0, seed=0, t=0).lost(arcs).all())
    True
    """

    p: float
    seed: int
    t: int

    def lost(self, arcs: Arcs) -> np.ndarray:
        """``(E,)`` bool: which messages of ``arcs`` are lost this round."""
        if self.p >= 1.0:
            return np.ones(len(arcs), dtype=bool)
        out: np.ndarray = message_uniform(self.seed, self.t, arcs.senders,
                                          arcs.receivers) < self.p
        return out


class LaneDrops(NamedTuple):
    """The drops of one round over the rows of several runs side by side (a stack,
    :mod:`topofl.engine.stack`): run ``r``'s messages are lost as the run alone loses them
    (its own :class:`Drops`, on its clients' ids ``row - rows.start``).

    Attributes
    ----------
    parts : tuple of (slice, Drops or None)
        Each run's rows and its drops (``None``: it loses nothing).
    t : int
        The round.

    Examples
    --------
    >>> from topofl.engine.drops import Drops, LaneDrops
    >>> from topofl.engine.ledger import graph_arcs
    >>> ring = tf.topologies.ring(3)
    >>> alone = Drops(0.3, seed=17, t=0).lost(graph_arcs(ring))
    >>> both = tf.engine.stack.block_topology([ring, ring])
    >>> lost = LaneDrops(((slice(0, 3), None), (slice(3, 6), Drops(0.3, seed=17, t=0))), 0)
    >>> got = lost.lost(graph_arcs(both))
    >>> bool(not got[:6].any()), bool((got[6:] == alone).all())
    (True, True)
    """

    parts: tuple[tuple[slice, Drops | None], ...]
    t: int

    def lost(self, arcs: Arcs) -> np.ndarray:
        """``(E,)`` bool: which messages of ``arcs`` (over every row) are lost this round."""
        out = np.zeros(len(arcs), dtype=bool)
        s, r = arcs.senders, arcs.receivers
        for rows, drops in self.parts:
            mine = (s >= rows.start) & (s < rows.stop)
            if drops is None or not bool(mine.any()):
                continue
            if bool(((r >= rows.start) & (r < rows.stop) != mine).any()):
                raise ValueError("a message crosses the rows of two runs: they cannot stack")
            out[mine] = drops.lost(Arcs(rows.stop - rows.start, s[mine] - rows.start,
                                        r[mine] - rows.start))
        return out


class Lossy(NamedTuple):
    """A round's graph after its drops (:func:`lossy`).

    Attributes
    ----------
    topology : Topology
        The mixing matrix applied (the round's own when nothing was lost).
    delivered, dropped : Arcs
        The messages that arrived and those that were lost.
    """

    topology: Topology
    delivered: Arcs
    dropped: Arcs


def lossy(topology: Topology, drops: Drops | LaneDrops, rule: str) -> Lossy:
    """The mixing matrix of ``topology`` with the messages ``drops`` loses removed, by
    ``rule`` (``"renormalise"`` or ``"mass"``: :data:`LOST_RULES`; see the module docstring).

    Parameters
    ----------
    topology : Topology
        The round's graph: one message per arc of ``W`` (:func:`graph_arcs`).
    drops : Drops
    rule : {"renormalise", "mass"}

    Returns
    -------
    Lossy
        Its topology is named ``"<name>|drop"`` with ``params["dropped"]`` the number of lost
        messages; ``topology`` itself when nothing was lost.

    Examples
    --------
    >>> from topofl.engine.drops import Drops, lossy
    >>> lo = lossy(tf.topologies.ring(4), Drops(1.0, seed=0, t=0), "renormalise")
    >>> lo.topology.to_dense().tolist() == np.eye(4).tolist(), len(lo.dropped)
    (True, 8)
    """
    if rule not in LOST_RULES:
        raise ValueError(f"rule must be one of {sorted(LOST_RULES)}, got {rule!r}")
    arcs = graph_arcs(topology)
    gone = drops.lost(arcs)
    if not bool(gone.any()):
        return Lossy(topology, arcs, arcs.keep(gone))
    import scipy.sparse as sp

    n = topology.n
    W = topology.W
    r = np.repeat(np.arange(n, dtype=np.int64), np.diff(W.indptr))
    c = W.indices.astype(np.int64)
    v = W.data.astype(np.float64)
    # the arcs of graph_arcs are W's non-zero off-diagonal entries sorted by (row, column)
    idx = np.flatnonzero((r != c) & (v != 0))
    idx = idx[np.lexsort((c[idx], r[idx]))]
    drop_entry = np.zeros(r.size, dtype=bool)
    drop_entry[idx[gone]] = True
    keep = ~drop_entry
    if rule == "renormalise":
        hit = np.zeros(n, dtype=bool)
        hit[r[drop_entry]] = True  # rows that lost a message: renormalised; the others as were
        tot = np.bincount(r[keep], v[keep], minlength=n)
        empty = hit & (tot <= 0)  # lost everything and gives itself no weight: keeps its model
        scale = np.where(hit & ~empty, tot, 1.0)
        v = v / scale[r]
        rr, cc, vv = r[keep], c[keep], v[keep]
        if bool(empty.any()):
            own = np.flatnonzero(empty)
            diag_set = (rr == cc) & empty[rr]
            rr, cc, vv = rr[~diag_set], cc[~diag_set], vv[~diag_set]
            rr, cc = np.concatenate([rr, own]), np.concatenate([cc, own])
            vv = np.concatenate([vv, np.ones(own.size)])
    else:
        rr, cc, vv = r[keep], c[keep], v[keep]
    M = sp.csr_array((vv, (rr, cc)), shape=(n, n))
    out = Topology.from_matrix(M, name=f"{topology.name}|drop",
                               params=dict(topology.params, dropped=int(gone.sum())),
                               groups=topology.groups)
    return Lossy(out, arcs.keep(~gone), arcs.keep(gone))


def check_drop(algorithm: Any, network: Any) -> None:
    """A ``ValueError`` when ``network`` (a ``[network]`` table or a
    :class:`~topofl.engine.clock.Network`, or ``None``) loses messages (``drop > 0``) and
    ``algorithm`` has no rule for a lost message (``Algorithm.lost`` is ``None``).

    Examples
    --------
    >>> from topofl.engine.drops import check_drop
    >>> check_drop(tf.algorithms.dsgd(), {"drop": 0.1})
    >>> check_drop(tf.algorithms.fedavg(), {"drop": 0.1})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: fedavg has no rule for a lost message, so it cannot run with [network] drop = ...
    """
    if network is None:
        return
    p = Network.from_config(network).drop
    if p > 0 and getattr(algorithm, "lost", None) is None:
        raise ValueError(
            f"{algorithm.name} has no rule for a lost message, so it cannot run with "
            f"[network] drop = {p:g}; drop > 0 works with the gossip algorithms dsgd (without "
            "clique_averaging), dfedavgm and dfedavgm_p (a receiver renormalises over what "
            "arrived), el (a receiver averages uniformly what arrived) and the push-sum "
            "algorithms sgp, osgp and dfedpgp (a lost message's mass is lost); an algorithm "
            "of one's own declares Algorithm.lost ('renormalise' or 'mass') and communicates "
            "through topofl.engine.pieces.gossip or PushSum")
