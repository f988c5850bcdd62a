r"""The bytes ledger: what every message of a round carried, from whom to whom.

An algorithm's ``communicate`` states what it sent as :class:`Flow`\ s (in
:class:`~topofl.engine.Sent`): one flow is the messages of one *kind* (a model, its shared
body, a push-sum weight, a Dis-PFL mask ...) sent along a set of arcs ``sender -> receiver``,
each message carrying ``size`` numbers of ``bits`` bits. Clients are the nodes ``0..n-1`` and
a server, when there is one, is node ``n``. The :class:`Ledger` adds every round's flows to
per-node totals (messages and bytes sent and received) and per-kind totals; the round loop
records them (:func:`topofl.engine.run`), and :mod:`topofl.engine.clock` times them.

What a message is: one vector (or scalar) sent by one node to one other node in one round,
counted once however many numbers it holds. Bytes: ``ceil(size * bits / 8)`` per message.

Flows are built from arrays, never by a loop over clients: :func:`graph_arcs` reads the arcs of
a mixing matrix from its sparsity (cached per topology), :func:`arcs_of_mask` from a boolean
``[n, n]`` mask, :func:`server_arcs` joins a set of clients to the server.

Examples
--------
One gossip round of D-SGD on a 4-ring: 8 models of 10 float32 numbers (40 bytes each).

>>> from topofl.engine.ledger import Flow, Ledger, graph_arcs
>>> flow = Flow("model", graph_arcs(tf.topologies.ring(4)), size=10, bits=32)
>>> flow.messages, flow.bytes, flow.sent_counts().tolist()
(8, 320, [2, 2, 2, 2, 0])
>>> ledger = Ledger(4)
>>> ledger.add([flow])
(8, 320)
>>> ledger.bytes_sent.tolist(), ledger.by_kind
([80, 80, 80, 80, 0], {'model': [8, 320]})
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from topofl.graph import Topology

__all__ = ["Arcs", "Flow", "FlowError", "Ledger", "graph_arcs", "arcs_of_mask", "server_arcs",
           "clique_arcs", "KINDS",
           "dtype_bits", "total_messages", "at_steps"]

#: The kinds of message the registry's algorithms send (a flow may name another kind).
KINDS = {
    "model": "a model, or the part of it an algorithm shares (FedAvg, D-SGD, SGP ...)",
    "body": "the shared body of a personalized model (FedPer, DFedPGP, PFedDST ...)",
    "head": "a personal head sent to be compared (PFedDST's scores)",
    "gradient": "a gradient (D-Cliques' Clique Averaging, at every local step)",
    "weight": "a push-sum weight (one number)",
    "values": "the kept entries of a sparse model (Dis-PFL)",
    "mask": "a sparse model's 0/1 mask, one bit per parameter (Dis-PFL)",
    "cluster": "pFedGraph's aggregate of normalised models (the pull direction)",
    "probe": "a model sent to be scored on a peer's data (PFedDST's loss array)",
    "loss": "a loss value sent back (one number)",
    "compressed": "a compressed model difference (CHOCO-SGD: top-k/rand-k values, QSGD levels)",
    "compressed_tracker": "a compressed tracker difference (DSGT with a compressor: BEER)",
    "indices": "the 32-bit coordinate indices of a top-k/rand-k message (CHOCO-SGD)",
    "norm": "the norm of a QSGD-quantized vector (one number, CHOCO-SGD)",
    "control": "a control variate attached to a model (SCAFFOLD's c down, its change up)",
    "normalizer": "FedNova's normaliser |a_i|_1 (one number, attached to a client's update)",
}


class FlowError(ValueError):
    """A :class:`Flow` given a size, ``bits``, ``repeat`` or ``lag`` that is not a finite
    count (the engine names the ``communicate`` that built it)."""


def _finite_count(value: Any) -> bool:
    """Whether ``value`` is a real number, finite and >= 0 (a count a flow can hold)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return False
    return not isinstance(value, (bool, str)) and np.isfinite(v) and v >= 0


@dataclass(frozen=True, eq=False)
class Arcs:
    """Arcs ``senders[e] -> receivers[e]`` among ``n`` clients and a server (node ``n``).

    Build with :func:`graph_arcs`, :func:`arcs_of_mask`, :func:`server_arcs` or
    :meth:`from_pairs` (sorted by receiver, the rows of ``W``, then by sender); built
    directly, any order.

    Attributes
    ----------
    n : int
        Number of clients; node ``n`` is the server.
    senders, receivers : ndarray of int64, shape (E,)
    """

    n: int
    senders: np.ndarray
    receivers: np.ndarray
    _counts: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_pairs(cls, n: int, senders: Any, receivers: Any) -> Arcs:
        """Arcs from two equal-length sequences of node ids in ``[0, n]`` (sorted here).

        Examples
        --------
        >>> a = tf.engine.ledger.Arcs.from_pairs(3, [2, 0], [1, 3])
        >>> a.senders.tolist(), a.receivers.tolist(), len(a)
        ([2, 0], [1, 3], 2)
        """
        s = np.asarray(senders, dtype=np.int64).ravel()
        r = np.asarray(receivers, dtype=np.int64).ravel()
        if s.shape != r.shape:
            raise ValueError(f"senders and receivers must have the same length, got "
                             f"{s.size} and {r.size}")
        if s.size and (min(s.min(), r.min()) < 0 or max(s.max(), r.max()) > n):
            raise ValueError(f"arc ends must be node ids in [0, {n}] (node {n} is the server)")
        if np.any(s == r):
            raise ValueError("an arc must join two different nodes (no self-messages)")
        order = np.lexsort((s, r))
        return cls(int(n), s[order], r[order])

    def __len__(self) -> int:
        return int(self.senders.size)

    def _count(self, which: str) -> np.ndarray:
        c = self._counts.get(which)
        if c is None:
            ends = self.senders if which == "sent" else self.receivers
            c = np.bincount(ends, minlength=self.n + 1).astype(np.int64)
            self._counts[which] = c
        return c

    def sent_counts(self) -> np.ndarray:
        """``(n + 1,)``: arcs leaving each node (the server last)."""
        return self._count("sent")

    def received_counts(self) -> np.ndarray:
        """``(n + 1,)``: arcs entering each node (the server last)."""
        return self._count("received")

    def segments(self) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """``(order, receivers, starts)``: the arcs in receiver order (``order`` is ``None``
        when they are already), each receiver once and where its arcs start (cached), for
        per-receiver reductions (``np.maximum.reduceat``)."""
        got = self._counts.get("segments")
        if got is None:
            r = self.receivers
            order = None
            if r.size > 1 and bool(np.any(r[1:] < r[:-1])):
                order = np.argsort(r, kind="stable")
                r = r[order]
            starts = (np.flatnonzero(r[1:] != r[:-1]) + 1 if r.size else
                      np.zeros(0, dtype=np.int64))
            starts = np.concatenate([[0], starts]).astype(np.int64) if r.size else starts
            got = (order, r[starts] if r.size else r, starts)
            self._counts["segments"] = got
        out: tuple[np.ndarray | None, np.ndarray, np.ndarray] = got
        return out

    def keep(self, ok: np.ndarray) -> Arcs:
        """The arcs whose ``ok`` (``(E,)`` bool) is true."""
        return Arcs(self.n, self.senders[ok], self.receivers[ok])


@dataclass(frozen=True, eq=False)
class Flow:
    """The messages of one kind sent in one round (see the module docstring).

    Parameters
    ----------
    kind : str
        What the messages carry (:data:`KINDS`).
    arcs : Arcs
        One message per arc (``repeat`` times).
    size : int or ndarray
        Numbers per message: one for every message, or ``(E,)`` one per arc (a sender's
        sparse model).
    bits : int
        Bits per number (32 for float32, 64 for float64, 1 for a mask).
    stage : int, default 0
        When the messages are sent within the round: flows of equal stage travel at the same
        time, stages in increasing order; negative stages go before the round's local
        computation (a server's download, PFedDST's pulls), the others after it.
    lag : int, default 0
        Rounds until the messages are needed (OSGP's overlap: 1): timing only.
    repeat : int, default 1
        How many times the arcs carry such a message in the round, one exchange after the
        other.
    per_step : bool, default False
        Sent at every local step of the round (Clique Averaging's gradients): the engine
        multiplies ``repeat`` by the round's number of local steps (:func:`at_steps`).
    attached : bool, default False
        Carried in the message of the flow just before it, on the same arcs (a push-sum
        weight with its model, a Dis-PFL mask with its kept values): its bytes count, its
        messages do not (:attr:`messages` is 0; :attr:`carried` counts the arcs).
    """

    kind: str
    arcs: Arcs
    size: int | np.ndarray
    bits: int
    stage: int = 0
    lag: int = 0
    repeat: int = 1
    per_step: bool = False
    attached: bool = False

    def __post_init__(self) -> None:
        fix = ("(the numbers each message carries, e.g. env.layout.num_params; "
               "topofl.engine.ledger.Flow)")
        if isinstance(self.size, np.ndarray):
            if self.size.shape != (len(self.arcs),):
                raise FlowError(f"a flow's per-arc sizes must be ({len(self.arcs)},), got "
                                f"{self.size.shape}")
            if not (np.issubdtype(self.size.dtype, np.number)
                    and bool(np.isfinite(self.size).all()) and bool((self.size >= 0).all())):
                raise FlowError(f"a {self.kind!r} flow's per-arc sizes must be finite numbers "
                                f">= 0, got {self.size[:5]!r}... {fix}")
        elif not _finite_count(self.size):
            raise FlowError(f"a {self.kind!r} flow's size must be a finite number >= 0, got "
                            f"{type(self.size).__name__} {self.size!r} {fix}"[:400])
        for name in ("bits", "repeat", "lag"):
            if not _finite_count(getattr(self, name)):
                raise FlowError(f"a {self.kind!r} flow's {name} must be a finite number >= 0, "
                                f"got {getattr(self, name)!r}")
        if int(self.bits) < 1 or int(self.repeat) < 0 or int(self.lag) < 0:
            raise FlowError(f"bits must be >= 1, repeat and lag >= 0, got bits={self.bits}, "
                            f"repeat={self.repeat}, lag={self.lag}")

    @property
    def n(self) -> int:
        """Number of clients (the server is node ``n``)."""
        return self.arcs.n

    @property
    def carried(self) -> int:
        """Arcs times ``repeat``: how many messages carry this flow's payload."""
        return len(self.arcs) * int(self.repeat)

    @property
    def messages(self) -> int:
        """Messages of the flow: :attr:`carried`, or 0 when ``attached``."""
        return 0 if self.attached else self.carried

    def message_bytes(self) -> np.ndarray:
        """``(E,)`` int64: bytes of one message on each arc, ``ceil(size * bits / 8)``."""
        size = np.broadcast_to(np.asarray(self.size, dtype=np.int64), (len(self.arcs),))
        return (size * int(self.bits) + 7) // 8

    @property
    def bytes(self) -> int:
        """Bytes of the flow (every message, ``repeat`` times)."""
        if not isinstance(self.size, np.ndarray):
            return len(self.arcs) * ((int(self.size) * int(self.bits) + 7) // 8) * int(self.repeat)
        return int(self.message_bytes().sum()) * int(self.repeat)

    def sent_counts(self) -> np.ndarray:
        """``(n + 1,)``: messages each node sent (0 when ``attached``)."""
        return self.arcs.sent_counts() * (0 if self.attached else int(self.repeat))

    def received_counts(self) -> np.ndarray:
        """``(n + 1,)``: messages each node received (0 when ``attached``)."""
        return self.arcs.received_counts() * (0 if self.attached else int(self.repeat))

    def node_bytes(self) -> tuple[np.ndarray, np.ndarray]:
        """``((n + 1,), (n + 1,))`` int64: bytes each node sent and received."""
        n1 = self.n + 1
        if not isinstance(self.size, np.ndarray):
            b = ((int(self.size) * int(self.bits) + 7) // 8) * int(self.repeat)
            return self.arcs.sent_counts() * b, self.arcs.received_counts() * b
        per = self.message_bytes() * int(self.repeat)
        return (np.bincount(self.arcs.senders, per, minlength=n1).astype(np.int64),
                np.bincount(self.arcs.receivers, per, minlength=n1).astype(np.int64))

    def into(self, receivers_ok: np.ndarray) -> Flow:
        """This flow without the messages to the nodes whose ``receivers_ok`` (``(n + 1,)``
        bool) is false."""
        ok = receivers_ok[self.arcs.receivers]
        if bool(ok.all()):
            return self
        size = self.size[ok] if isinstance(self.size, np.ndarray) else self.size
        return Flow(self.kind, self.arcs.keep(ok), size, self.bits, self.stage, self.lag,
                    self.repeat, self.per_step, self.attached)


def at_steps(flows: Iterable[Flow], steps: int) -> tuple[Flow, ...]:
    """The flows of a round that took ``steps`` local steps: each ``per_step`` flow repeated
    ``steps`` times (and no longer ``per_step``).

    Examples
    --------
    >>> from topofl.engine.ledger import Flow, at_steps, server_arcs
    >>> f = Flow("gradient", server_arcs(2, None, "up"), 3, 32, per_step=True)
    >>> [g.messages for g in at_steps([f], 5)]
    [10]
    """
    out = []
    for f in flows:
        if f.per_step:
            f = Flow(f.kind, f.arcs, f.size, f.bits, f.stage, f.lag, f.repeat * int(steps),
                     False, f.attached)
        out.append(f)
    return tuple(out)


# ----------------------------------------------------------------------------- arcs


_GRAPH_ARCS: weakref.WeakKeyDictionary[Topology, Arcs] = weakref.WeakKeyDictionary()
_CLIQUE_ARCS: weakref.WeakKeyDictionary[Topology, Arcs] = weakref.WeakKeyDictionary()


def graph_arcs(topology: Topology) -> Arcs:
    """The arcs of a mixing matrix: ``j -> i`` for every ``W[i, j] != 0``, ``i != j``
    (cached per topology).

    Examples
    --------
    >>> a = tf.engine.ledger.graph_arcs(tf.topologies.ring(3))
    >>> list(zip(a.senders.tolist(), a.receivers.tolist()))
    [(1, 0), (2, 0), (0, 1), (2, 1), (0, 2), (1, 2)]
    """
    a = _GRAPH_ARCS.get(topology)
    if a is None:
        W = topology.W
        n = W.shape[0]
        rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(W.indptr))
        cols = W.indices.astype(np.int64)
        off = (rows != cols) & (W.data != 0)
        r, c = rows[off], cols[off]
        order = np.lexsort((c, r))  # canonical CSR is sorted already; be sure
        a = _GRAPH_ARCS[topology] = Arcs(int(n), c[order], r[order])
    return a


def clique_arcs(topology: Topology) -> Arcs:
    """The arcs of ``W`` whose ends are in the same group (clique) of the topology: what
    Clique Averaging sends gradients on (cached per topology).

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.disjoint_union(nx.complete_graph(3), nx.complete_graph(3))
    >>> G.add_edge(2, 3)
    >>> t = tf.Topology.from_networkx(G, groups=[[0, 1, 2], [3, 4, 5]])
    >>> len(tf.engine.ledger.graph_arcs(t)), len(tf.engine.ledger.clique_arcs(t))
    (14, 12)
    """
    if topology.groups is None:
        raise ValueError("clique arcs need a topology with groups (cliques); this one has none")
    a = _CLIQUE_ARCS.get(topology)
    if a is None:
        g = topology.group_index
        full = graph_arcs(topology)
        a = _CLIQUE_ARCS[topology] = full.keep(g[full.senders] == g[full.receivers])
    return a


def arcs_of_mask(mask: Any) -> Arcs:
    """Arcs ``j -> i`` for every true ``mask[i, j]``, ``i != j`` (``mask``: ``[n, n]`` bool,
    rows the receivers; a tensor or an array).

    Examples
    --------
    >>> import numpy as np
    >>> a = tf.engine.ledger.arcs_of_mask(np.array([[0, 1], [0, 0]], dtype=bool))
    >>> a.senders.tolist(), a.receivers.tolist()
    ([1], [0])
    """
    m = np.asarray(mask.cpu().numpy() if hasattr(mask, "cpu") else mask).astype(bool)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"mask must be [n, n], got shape {m.shape}")
    m = m.copy()
    np.fill_diagonal(m, False)
    r, c = np.nonzero(m)  # row-major: sorted by receiver, then sender
    return Arcs(int(m.shape[0]), c.astype(np.int64), r.astype(np.int64))


def server_arcs(n: int, clients: Any, direction: str) -> Arcs:
    """Arcs between the server (node ``n``) and ``clients`` (ids, a ``(n,)`` bool mask, or
    ``None`` for all): ``"up"`` (clients to the server) or ``"down"``.

    Examples
    --------
    >>> a = tf.engine.ledger.server_arcs(3, [0, 2], "up")
    >>> a.senders.tolist(), a.receivers.tolist()
    ([0, 2], [3, 3])
    """
    if clients is None:
        ids = np.arange(n, dtype=np.int64)
    else:
        c = np.asarray(clients)
        ids = (np.flatnonzero(c) if c.dtype == bool else np.unique(c.astype(np.int64)))
    server = np.full(ids.size, n, dtype=np.int64)
    if direction == "up":
        return Arcs(int(n), ids, server)
    if direction == "down":
        return Arcs(int(n), server, ids)
    raise ValueError(f"direction must be 'up' or 'down', got {direction!r}")


# ----------------------------------------------------------------------------- the ledger


class Ledger:
    """Running totals of a run's messages and bytes, per node and per kind.

    Parameters
    ----------
    n : int
        Number of clients; the totals have ``n + 1`` entries (the server last).
    lossy : bool, default False
        Messages may be lost (``[network] drop > 0``): :meth:`add_dropped` counts them, and
        :meth:`rows` adds ``messages_dropped``, ``bytes_dropped``, ``messages_delivered``
        and ``bytes_delivered``.

    Attributes
    ----------
    messages_sent, messages_received, bytes_sent, bytes_received : ndarray of int64, (n + 1,)
        A lost message counts as sent, not as received.
    by_kind : dict of str to [messages, bytes]
        Sent (delivered and lost).
    messages, bytes : int
        Totals over every node and kind, sent (delivered and lost).
    messages_dropped, bytes_dropped : int
        The lost messages and their bytes (0 unless ``lossy``).

    Examples
    --------
    A 4-ring's round with the messages ``1 -> 0`` and ``3 -> 0`` lost: 8 sent, 6 delivered.

    >>> from topofl.engine.ledger import Flow, Ledger, graph_arcs
    >>> arcs = graph_arcs(tf.topologies.ring(4))
    >>> lost = (arcs.receivers == 0)
    >>> ledger = Ledger(4, lossy=True)
    >>> ledger.add([Flow("model", arcs.keep(~lost), 10, 32)])
    (6, 240)
    >>> ledger.add_dropped([Flow("model", arcs.keep(lost), 10, 32)])
    (2, 80)
    >>> r = ledger.rows()
    >>> r["messages"], r["messages_delivered"], r["messages_dropped"], r["bytes_dropped"]
    (8, 6, 2, 80)
    >>> ledger.messages_sent[:4].tolist(), ledger.messages_received[:4].tolist()
    ([2, 2, 2, 2], [0, 2, 2, 2])
    """

    def __init__(self, n: int, *, lossy: bool = False) -> None:
        self.n = int(n)
        self.lossy = bool(lossy)
        self.messages_dropped = 0
        self.bytes_dropped = 0
        z = np.zeros(self.n + 1, dtype=np.int64)
        self.messages_sent, self.messages_received = z.copy(), z.copy()
        self.bytes_sent, self.bytes_received = z.copy(), z.copy()
        self.by_kind: dict[str, list[int]] = {}
        self.messages = 0
        self.bytes = 0

    def add(self, flows: Iterable[Flow]) -> tuple[int, int]:
        """Count a round's flows; returns the round's ``(messages, bytes)``."""
        msgs = nbytes = 0
        for f in flows:
            if f.n != self.n:
                raise ValueError(f"a flow among {f.n} clients in a ledger of {self.n}")
            m = f.messages
            if f.carried == 0:
                continue
            sent_b, recv_b = f.node_bytes()
            self.messages_sent += f.sent_counts()
            self.messages_received += f.received_counts()
            self.bytes_sent += sent_b
            self.bytes_received += recv_b
            b = int(sent_b.sum())
            k = self.by_kind.setdefault(f.kind, [0, 0])
            k[0] += f.carried
            k[1] += b
            msgs += m
            nbytes += b
        self.messages += msgs
        self.bytes += nbytes
        return msgs, nbytes

    def add_dropped(self, flows: Iterable[Flow]) -> tuple[int, int]:
        """Count a round's lost messages: sent by their senders (``messages_sent``,
        ``bytes_sent``, the per-kind and overall totals), received by nobody, and in
        ``messages_dropped``/``bytes_dropped``; returns the round's lost ``(messages,
        bytes)``."""
        msgs = nbytes = 0
        for f in flows:
            if f.n != self.n:
                raise ValueError(f"a flow among {f.n} clients in a ledger of {self.n}")
            if f.carried == 0:
                continue
            sent_b, _ = f.node_bytes()
            self.messages_sent += f.sent_counts()
            self.bytes_sent += sent_b
            b = int(sent_b.sum())
            k = self.by_kind.setdefault(f.kind, [0, 0])
            k[0] += f.carried
            k[1] += b
            msgs += f.messages
            nbytes += b
        self.messages += msgs
        self.bytes += nbytes
        self.messages_dropped += msgs
        self.bytes_dropped += nbytes
        return msgs, nbytes

    def add_totals(self, messages: int, nbytes: int, kind: str = "model") -> None:
        """Count messages whose senders are not known (an algorithm that states no flows)."""
        k = self.by_kind.setdefault(kind, [0, 0])
        k[0] += int(messages)
        k[1] += int(nbytes)
        self.messages += int(messages)
        self.bytes += int(nbytes)

    def rows(self) -> dict[str, Any]:
        """The records of the totals: ``messages``, ``bytes``, ``messages.<kind>`` and
        ``bytes.<kind>`` (every kind seen; ``messages.<kind>`` counts the messages that
        carried the kind, attached or not), ``server_bytes_sent``/``_received`` when a
        server sent or received, and with ``lossy`` ``messages_dropped``, ``bytes_dropped``,
        ``messages_delivered`` and ``bytes_delivered`` (``messages`` and ``bytes`` count
        what was sent: delivered plus dropped)."""
        out: dict[str, Any] = {"messages": self.messages, "bytes": self.bytes}
        if self.lossy:
            out.update(messages_dropped=self.messages_dropped,
                       bytes_dropped=self.bytes_dropped,
                       messages_delivered=self.messages - self.messages_dropped,
                       bytes_delivered=self.bytes - self.bytes_dropped)
        for k in sorted(self.by_kind):
            out[f"messages.{k}"] = self.by_kind[k][0]
            out[f"bytes.{k}"] = self.by_kind[k][1]
        if self.bytes_sent[-1] or self.bytes_received[-1]:
            out["server_bytes_sent"] = int(self.bytes_sent[-1])
            out["server_bytes_received"] = int(self.bytes_received[-1])
        return out

    def client_rows(self) -> dict[str, np.ndarray]:
        """Per-client totals (the server left out): ``bytes_sent``, ``bytes_received``,
        ``messages_sent``, ``messages_received``, each ``n`` int64 values (copies)."""
        n = self.n
        return {"bytes_sent": self.bytes_sent[:n].copy(),
                "bytes_received": self.bytes_received[:n].copy(),
                "messages_sent": self.messages_sent[:n].copy(),
                "messages_received": self.messages_received[:n].copy()}

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps (plain lists and ints; with ``lossy``, the dropped
        totals too)."""
        out: dict[str, Any] = {"messages_sent": self.messages_sent.tolist(),
                               "messages_received": self.messages_received.tolist(),
                               "bytes_sent": self.bytes_sent.tolist(),
                               "bytes_received": self.bytes_received.tolist(),
                               "by_kind": {k: list(v) for k, v in self.by_kind.items()},
                               "messages": self.messages, "bytes": self.bytes}
        if self.lossy:
            out["dropped"] = [self.messages_dropped, self.bytes_dropped]
        return out

    def load(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`state`'s output (a checkpoint's)."""
        for k in ("messages_sent", "messages_received", "bytes_sent", "bytes_received"):
            v = np.asarray(state[k], dtype=np.int64)
            if v.shape != (self.n + 1,):
                raise ValueError(f"ledger state {k!r} has {v.size} entries, expected "
                                 f"{self.n + 1}")
            setattr(self, k, v.copy())
        self.by_kind = {str(k): [int(a), int(b)] for k, (a, b) in dict(state["by_kind"]).items()}
        self.messages, self.bytes = int(state["messages"]), int(state["bytes"])
        dropped = state.get("dropped", (0, 0))
        self.messages_dropped, self.bytes_dropped = int(dropped[0]), int(dropped[1])


def dtype_bits(dtype: Any) -> int:
    """Bits of one number of a torch or numpy dtype (32 for float32).

    Examples
    --------
    >>> import torch
    >>> tf.engine.ledger.dtype_bits(torch.float64), tf.engine.ledger.dtype_bits(np.float32)
    (64, 32)
    """
    if hasattr(dtype, "itemsize") and not isinstance(dtype, type):
        return int(dtype.itemsize) * 8
    try:
        import torch

        if isinstance(dtype, torch.dtype):
            return int(torch.finfo(dtype).bits) if dtype.is_floating_point else \
                int(torch.iinfo(dtype).bits)
    except ImportError:  # pragma: no cover
        pass
    return int(np.dtype(dtype).itemsize) * 8


def total_messages(flows: Iterable[Flow]) -> int:
    """Messages of a round's flows.

    Examples
    --------
    >>> f = tf.engine.ledger.Flow("weight", tf.engine.ledger.server_arcs(2, None, "up"), 1, 64)
    >>> tf.engine.ledger.total_messages([f, f])
    4
    """
    return int(sum(f.messages for f in flows))

