r"""Event time: clients on virtual clocks of their own, run as windows of the round loop.

An algorithm in event time (AD-PSGD, gossip learning) gives each client ``i`` a duration
$d_i$ (``durations[i]``) and a virtual clock: its ``k``-th event (``k = 1, 2, ...``: a finished
computation, a send) happens at $T_i^k = k \, d_i$, each client back to back, whatever the
others do. What an event does is the algorithm's; that events run in the order of $(T, i)$
(ties by client id), and that each event names a *partner* (a uniformly drawn neighbour of the
graph, :func:`partners`, a pure function of ``(pair_seed, client, event number)``), is this
module's.

Windows
-------
Round ``t`` of the run is the window $(t\,\delta, (t+1)\,\delta]$ of virtual time (``window``
$= \delta$; :class:`Windows`). A client's next event is *due* in a window when its time is at
most the window's end; a client takes at most one event per window, so its later due events
wait for the next windows (:meth:`Windows.surplus` counts them), and an event run in a window
after its own is *deferred* (:attr:`Due.late`: its time is at most the window's start). With
$\delta \le \min_i d_i$ no client has two events in one window and none is deferred. The due
events of a window, in the order of $(T, i)$ (:meth:`Windows.due`), are batched into *layers*
of events that a batched index operation can apply at once and in order: :func:`pair_layers`
for events that write both their nodes (a pairwise average), :func:`push_layers` for events
that read one node and write the other (a push).

Everything the schedule needs is each client's count of events (in the algorithm's state) and
pure functions of it, so a resumed run equals an uninterrupted one. :func:`events` is the
slow, obvious order of the same events (a heap of times, one event at a time): the reference
the windowed runs are tested against. :func:`window_records` and :func:`window_sent` say what a
window did (the records' ``event_time``, ``async_*`` and ``staleness_*``; the models sent).
The checks of the settings (:func:`check_window`, :func:`check_durations`,
:func:`client_times`, :func:`per_client`, :func:`idle_reason`, :func:`one_process`) and
:func:`heavy_tailed_durations` are written in ``topofl/engine/_event_time_checks.py``
and importable from here.

Examples
--------
Two clients, one three times as fast as the other, in windows of one unit of time: in window
1 (after one event of client 0) client 0's event at 2.0 is due, client 1's first (at 3.0) is
not.

>>> import numpy as np
>>> from topofl.engine.event_time import Windows
>>> win = Windows.of([1.0, 3.0], 1.0, 2)
>>> win.due(np.array([1, 0]), 1, tf.topologies.complete(2), 0).clients.tolist()
[0]
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from torch import Tensor

from topofl.engine._event_time_checks import (
    check_durations,
    check_window,
    client_times,
    heavy_tailed_durations,
    idle_reason,
    one_process,
    per_client,
)
from topofl.engine.ledger import Arcs, Flow, dtype_bits
from topofl.engine.protocol import Sent
from topofl.graph import Topology

__all__ = [
    "check_window",
    "check_durations",
    "client_times",
    "idle_reason",
    "heavy_tailed_durations",
    "partners",
    "initiated",
    "per_client",
    "Windows",
    "Due",
    "pair_layers",
    "push_layers",
    "window_records",
    "window_sent",
    "one_process",
    "EventTime",
    "Event",
    "events",
    "Replay",
    "replay",
    "CLOCKED",
]

#: Why an event-time algorithm refuses the ``[network]`` clock (its ``Algorithm.clocked``).
CLOCKED = ("its clients keep their own event time (durations and window), which the clock "
           "would price as synchronous rounds: set durations instead and read the records' "
           "event_time")


# ---------------------------------------------------------------------------- partner draws


def _mix64(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on uint64 arrays (wrapping arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    out: np.ndarray = z ^ (z >> np.uint64(31))
    return out


def _uniform(seed: int, clients: np.ndarray, events: np.ndarray) -> np.ndarray:
    """Uniforms in [0, 1), a pure function of ``(seed, client, event)`` elementwise."""
    with np.errstate(over="ignore"):
        h = _mix64(np.full(clients.shape, seed, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15))
        h = _mix64(h ^ clients.astype(np.uint64))
        h = _mix64(h ^ (events.astype(np.uint64) * np.uint64(0xD6E8FEB86659FD93)))
    out: np.ndarray = (h >> np.uint64(11)).astype(np.float64) * 2.0**-53
    return out


def _neighbours(topology: Topology) -> tuple[np.ndarray, np.ndarray]:
    """CSR ``(indptr, indices)`` of each node's neighbours in ``W``'s rows, itself left out
    (sorted ids)."""
    w = topology.W.tocsr()
    w.sort_indices()
    n = w.shape[0]
    rows = np.repeat(np.arange(n), np.diff(w.indptr))
    keep = (w.indices != rows) & (w.data != 0)
    indices = w.indices[keep].astype(np.int64)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows[keep], minlength=n))])
    return indptr.astype(np.int64), indices


def partners(topology: Topology, seed: int, clients: Any, events: Any) -> np.ndarray:
    """The partner of client ``clients[e]`` at its event number ``events[e]`` (from 0): a
    uniformly drawn neighbour (a ``j != i`` with ``W[i, j] != 0``), a pure function of
    ``(seed, client, event)``; the client itself when it has no neighbour.

    Examples
    --------
    >>> from topofl.engine.event_time import partners
    >>> ring = tf.topologies.ring(5)
    >>> p = partners(ring, 0, [0, 0, 3], [0, 1, 7])
    >>> all(int(j) in ((i + 1) % 5, (i - 1) % 5) for i, j in zip([0, 0, 3], p))
    True
    >>> bool((p == partners(ring, 0, [0, 0, 3], [0, 1, 7])).all())
    True
    """
    i = np.asarray(clients, dtype=np.int64).ravel()
    k = np.asarray(events, dtype=np.int64).ravel()
    indptr, indices = _neighbours(topology)
    deg = indptr[i + 1] - indptr[i]
    u = _uniform(int(seed), i, k)
    pick = np.minimum((u * deg).astype(np.int64), np.maximum(deg - 1, 0))
    out = np.where(deg > 0, indices[np.minimum(indptr[i] + pick, max(len(indices) - 1, 0))]
                   if len(indices) else i, i)
    return out.astype(np.int64)


def initiated(clients: np.ndarray, mates: np.ndarray, active: np.ndarray | None
              ) -> np.ndarray:
    """The partners of ``clients``' events when only the ``active`` clients (a ``(n,)``
    bool mask; ``None``: all) initiate an exchange: a passive client's event is its own
    (its partner is itself: it applies its update and averages with nobody).

    Examples
    --------
    >>> import numpy as np
    >>> from topofl.engine.event_time import initiated
    >>> initiated(np.array([0, 1]), np.array([1, 0]), np.array([True, False])).tolist()
    [1, 1]
    """
    if active is None:
        return mates
    out: np.ndarray = np.where(active[clients], mates, clients)
    return out


# ---------------------------------------------------------------------------------- windows


def _counts(steps: Tensor | np.ndarray) -> np.ndarray:
    """Each client's number of events done, as a NumPy array."""
    if isinstance(steps, Tensor):
        out: np.ndarray = steps.detach().cpu().numpy()
        return out
    return np.asarray(steps)


class Due(NamedTuple):
    """A window's due events, in the order of ``(time, client)`` (:meth:`Windows.due`).

    Attributes
    ----------
    clients : ndarray of int64
        ``(e,)``: the client of each event (a client at most once).
    partners : ndarray of int64
        ``(e,)``: its partner (:func:`partners` at the client's event number).
    late : ndarray of bool
        ``(e,)``: the events deferred from an earlier window (time at most the window's start).
    start, end : float
        The window's bounds, $(t\\,\\delta, (t+1)\\,\\delta]$.
    """

    clients: np.ndarray
    partners: np.ndarray
    late: np.ndarray
    start: float
    end: float


class Windows(NamedTuple):
    r"""The clients' virtual clocks seen through windows of ``width`` $\delta$ (round ``t``:
    the window $(t\,\delta, (t+1)\,\delta]$).

    Attributes
    ----------
    durations : ndarray
        ``(n,)`` float64: each client's time per event $d_i$.
    width : float
        The window $\delta$.

    Examples
    --------
    Three clients, windows of one unit. In window 0 client 2 (at 0.5) comes before client 0
    (at 1.0); in window 1 client 2's second event (at 1.0, the window's start) is deferred.

    >>> import numpy as np
    >>> from topofl.engine.event_time import Windows
    >>> win = Windows.of([1.0, 2.0, 0.5], 1.0, 3)
    >>> win.finish(np.array([0, 0, 0])).tolist()
    [1.0, 2.0, 0.5]
    >>> due = win.due(np.array([1, 0, 1]), 1, tf.topologies.complete(3), 0)
    >>> due.clients.tolist(), due.late.tolist(), (due.start, due.end)
    ([2, 0, 1], [True, False, False], (1.0, 2.0))
    """

    durations: np.ndarray
    width: float
    offsets: np.ndarray | None = None

    @classmethod
    def of(cls, durations: float | Sequence[float], width: float, n: int,
           offsets: float | Sequence[float] | None = None) -> Windows:
        """The windows of ``n`` clients (``durations`` one time for all, or one per client:
        :func:`per_client`; ``offsets`` likewise, each client's clock start $o_i$, or
        ``None``: 0)."""
        return cls(per_client(durations, n), width,
                   None if offsets is None else per_client(offsets, n, "offsets"))

    def finish(self, steps: Tensor | np.ndarray) -> np.ndarray:
        """``(n,)``: each client's next event time $o_i + (k_i + 1)\\,d_i$ (``steps``:
        ``[n]``, the $k_i$ events done; $o_i$ the offsets, none: 0)."""
        out: np.ndarray = (_counts(steps).astype(np.float64) + 1.0) * self.durations
        if self.offsets is not None:
            out = self.offsets + out
        return out

    def end(self, t: int) -> float:
        """The end of window ``t``, $(t+1)\\,\\delta$."""
        return (t + 1) * self.width

    def active(self, steps: Tensor | np.ndarray, t: int) -> np.ndarray:
        """``(n,)`` bool: the clients with an event due in window ``t``."""
        out: np.ndarray = self.finish(steps) <= self.end(t)
        return out

    def due(self, steps: Tensor | np.ndarray, t: int, topology: Topology,
            pair_seed: int, active: np.ndarray | None = None) -> Due:
        """Window ``t``'s due events (one per client), in the order of ``(time, client)``,
        with their partners on ``topology`` (seed ``pair_seed``; a client outside
        ``active``, a ``(n,)`` bool mask, is its own partner: :func:`initiated`)."""
        k = _counts(steps)
        finish = self.finish(k)
        start, end = t * self.width, self.end(t)
        due = np.flatnonzero(finish <= end)
        order = due[np.lexsort((due, finish[due]))]
        mates = initiated(order, partners(topology, pair_seed, order, k[order]), active)
        return Due(order, mates, finish[order] <= start, start, end)

    def surplus(self, steps: Tensor | np.ndarray, t: int) -> int:
        """How many events beyond each client's first due one are due by the end of window
        ``t`` (with $k_i$ done: the events $m > k_i + 1$ with $m\\,d_i \\le$ the end), in the
        arithmetic of :meth:`finish`.

        Examples
        --------
        >>> import numpy as np
        >>> from topofl.engine.event_time import Windows
        >>> Windows.of(0.25, 1.0, 1).surplus(np.array([0]), 0)  # 0.25, 0.5, 0.75, 1.0: 3
        3
        """
        end, d = self.end(t), self.durations
        if self.offsets is not None:
            o = self.offsets
            m = np.floor((end - o) / d)
            m = np.where(o + (m + 1.0) * d <= end, m + 1.0, m)  # the largest m with
            m = np.where(o + m * d > end, m - 1.0, m)  # o + m d <= end
            return int(np.maximum(m - _counts(steps).astype(np.float64) - 1.0, 0.0).sum())
        m = np.floor(end / d)
        m = np.where((m + 1.0) * d <= end, m + 1.0, m)  # the largest m with m d <= end, in
        m = np.where(m * d > end, m - 1.0, m)  # the arithmetic of the finish times
        return int(np.maximum(m - _counts(steps).astype(np.float64) - 1.0, 0.0).sum())


class EventTime(NamedTuple):
    """An event-time algorithm's checked settings: the clients' durations, the window of a
    round and the seed of the partner draws.

    Attributes
    ----------
    durations : float or tuple of float
        One time per event for every client, or one per client (:func:`check_durations`).
    window : float
        The virtual time $\\delta$ of one round (:func:`check_window`).
    pair_seed : int
        The seed of :func:`partners`.
    offsets : float or tuple of float, optional
        Each client's clock start $o_i$ (its ``k``-th event at $o_i + k\\,d_i$;
        :func:`check_times`); ``None``: 0.

    Examples
    --------
    >>> from topofl.engine.event_time import EventTime
    >>> clocks = EventTime((1.0, 2.0), 0.5, 0)
    >>> clocks.windows(2).end(3), clocks.fields("mine runs alone")["idle"](1) is not None
    (2.0, True)
    """

    durations: float | tuple[float, ...]
    window: float
    pair_seed: int
    offsets: float | tuple[float, ...] | None = None

    def windows(self, n: int) -> Windows:
        """The windows of the run's ``n`` clients."""
        return Windows.of(self.durations, self.window, n, self.offsets)

    def fields(self, stacks: str) -> dict[str, Any]:
        """The :class:`~topofl.engine.protocol.Algorithm` fields every event-time algorithm
        has: any graph (``requires=None``: partners are drawn among a client's neighbours,
        whatever the weights), no clients offline (``absent="refuse"``: the windows choose who
        acts) nor lost messages (``lost=None``), no stack (``stacks``: why, in the
        algorithm's words), no ``[network]`` clock (:data:`CLOCKED`) and the refusal of a run
        without an event (``idle``: :func:`idle_reason`)."""
        return dict(requires=None, absent="refuse", lost=None, stacks=stacks, clocked=CLOCKED,
                    idle=functools.partial(idle_reason, self.durations, self.window,
                                           offsets=self.offsets))


# ----------------------------------------------------------------------------------- layers


def pair_layers(first: Any, second: Any) -> np.ndarray:
    """Each pairwise event's layer, the events in order: one more than the last layer that
    touched either of its nodes (the events of a layer touch disjoint nodes, so a layer is
    one batched operation and the layers in order are the events in order).

    Examples
    --------
    >>> from topofl.engine.event_time import pair_layers
    >>> pair_layers([0, 2, 1, 0], [1, 3, 2, 3]).tolist()  # (1, 2) and (0, 3) wait for both
    [0, 0, 1, 1]
    """
    a = np.asarray(first, dtype=np.int64).ravel()
    b = np.asarray(second, dtype=np.int64).ravel()
    last: dict[int, int] = {}
    out = np.empty(len(a), dtype=np.int64)
    for e, (i, j) in enumerate(zip(a.tolist(), b.tolist())):
        layer = max(last.get(i, -1), last.get(j, -1)) + 1
        out[e] = last[i] = last[j] = layer
    return out


def push_layers(senders: Any, receivers: Any) -> np.ndarray:
    """Each push event's layer, the events in order: a send ``i -> j`` reads ``i`` after its
    last receive and writes ``j`` after its last receive and not before its last send.

    Examples
    --------
    >>> from topofl.engine.event_time import push_layers
    >>> push_layers([0, 1, 2, 3], [1, 2, 1, 0]).tolist()  # 1 sends after receiving; 1 twice
    [0, 1, 2, 0]

    (``0`` sent in layer 0 before it receives, so its receive can be in layer 0 too.)
    """
    s = np.asarray(senders, dtype=np.int64).ravel()
    r = np.asarray(receivers, dtype=np.int64).ravel()
    wrote: dict[int, int] = {}
    read: dict[int, int] = {}
    out = np.empty(len(s), dtype=np.int64)
    for e, (i, j) in enumerate(zip(s.tolist(), r.tolist())):
        layer = max(wrote.get(i, -1) + 1, wrote.get(j, -1) + 1, read.get(j, 0))
        out[e] = wrote[j] = layer
        read[i] = max(read.get(i, 0), layer)
    return out


# ------------------------------------------------------------------------ what a window did


def window_records(end: float, layer: np.ndarray, late: np.ndarray, stale: np.ndarray,
                   steps: Tensor | np.ndarray, *, held: int | None = None) -> dict[str, Any]:
    """A window's records: ``event_time`` (its end), ``async_events``, ``async_layers``,
    ``async_deferred`` (events run after their own window), ``async_held`` (with ``held``:
    due events left to the next windows), the clients' event counts
    (``async_steps_min`` / ``_mean`` / ``_max``) and, over the window's events,
    ``staleness_mean`` / ``staleness_max``.

    Parameters
    ----------
    end : float
    layer, late, stale : ndarray
        ``(e,)``: the layer, the deferral and the staleness of each event the window ran.
    steps : Tensor or ndarray
        ``[n]``: every client's number of events after the window.
    held : int, optional

    Examples
    --------
    >>> import numpy as np
    >>> from topofl.engine.event_time import window_records
    >>> window_records(2.0, np.array([0, 0, 1]), np.array([True, False, False]),
    ...                np.array([0, 2, 1]), np.array([1, 2, 3]))  # doctest: +NORMALIZE_WHITESPACE
    {'event_time': 2.0, 'async_events': 3, 'async_layers': 2, 'async_deferred': 1,
     'async_steps_min': 1, 'async_steps_mean': 2.0, 'async_steps_max': 3,
     'staleness_mean': 1.0, 'staleness_max': 2}
    """
    now = _counts(steps)
    records: dict[str, Any] = {
        "event_time": float(end), "async_events": int(len(layer)),
        "async_layers": int(layer.max()) + 1 if len(layer) else 0,
        "async_deferred": int(late.sum())}
    if held is not None:
        records["async_held"] = held
    records.update(async_steps_min=int(now.min()), async_steps_mean=float(now.mean()),
                   async_steps_max=int(now.max()))
    if len(layer):
        records.update(staleness_mean=float(stale.mean()), staleness_max=int(stale.max()))
    return records


def window_sent(n: int, x: Tensor, senders: np.ndarray, receivers: np.ndarray,
                acted: np.ndarray, records: Mapping[str, Any], *,
                both_ways: bool = False) -> Sent:
    """What a window sent: one model (``x``'s row size and dtype) from each sender to its
    receiver (an event of a client with itself sends nothing), and back with ``both_ways``
    (a pairwise average); ``acted``: the clients that trained (``Sent.active``).

    Examples
    --------
    >>> import numpy as np, torch
    >>> from topofl.engine.event_time import window_sent
    >>> x = torch.zeros(3, 2, dtype=torch.float64)
    >>> s = window_sent(3, x, np.array([0, 2]), np.array([1, 2]), np.array([0, 2]), {},
    ...                 both_ways=True)
    >>> s.messages, s.active.tolist()
    (2, [True, False, True])
    """
    real = senders != receivers
    s, r = senders[real], receivers[real]
    if both_ways:
        s, r = np.concatenate([s, r]), np.concatenate([r, s])
    flow = Flow("model", Arcs.from_pairs(n, s, r), int(x.shape[1]), dtype_bits(x.dtype))
    took = np.zeros(n, dtype=bool)
    took[acted] = True
    return Sent.of(flow, records=records, active=took)


# ---------------------------------------------------------------------------- the reference


class Event(NamedTuple):
    """One event of :func:`events`.

    Attributes
    ----------
    time : float
        $T_i^k = k\\,d_i$.
    client : int
    number : int
        The client's events before this one ($k - 1$, what :func:`partners` is drawn at).
    partner : int
    """

    time: float
    client: int
    number: int
    partner: int


def events(topology: Topology, durations: np.ndarray, end_time: float,
           pair_seed: int = 0, *, offsets: np.ndarray | None = None,
           active: np.ndarray | None = None) -> Iterator[Event]:
    """The events with a time ``<= end_time``, one at a time in the order of ``(time,
    client)``: a heap of each client's next time, the slow, obvious order the windows are
    tested against.

    Parameters
    ----------
    topology : Topology
        Where the partners are drawn (:func:`partners`, seed ``pair_seed``).
    durations : ndarray
        ``(n,)``: each client's time per event (:func:`per_client`).
    end_time : float
    pair_seed : int, default 0
    offsets : ndarray, optional
        ``(n,)``: each client's clock start (its ``k``-th event at ``offsets[i] + k d_i``).
    active : ndarray of bool, optional
        ``(n,)``: the clients that initiate; the others are their own partners
        (:func:`initiated`).

    Examples
    --------
    >>> import numpy as np
    >>> from topofl.engine.event_time import events
    >>> [(e.time, e.client, e.number, e.partner) for e in
    ...  events(tf.topologies.complete(2), np.array([1.0, 1.5]), 3.0)]
    [(1.0, 0, 0, 1), (1.5, 1, 0, 0), (2.0, 0, 1, 1), (3.0, 0, 2, 1), (3.0, 1, 1, 0)]
    """
    d = durations
    o = np.zeros(len(d)) if offsets is None else offsets
    steps = [0] * len(d)
    heap = [(float(o[i] + 1.0 * d[i]) if offsets is not None else float(d[i]), i)
            for i in range(len(d))]
    heapq.heapify(heap)
    while heap and heap[0][0] <= end_time:
        t, i = heapq.heappop(heap)
        k = steps[i]
        mate = int(initiated(np.array([i]), partners(topology, pair_seed, [i], [k]),
                             active)[0])
        yield Event(float(t), i, k, mate)
        steps[i] = k + 1
        nxt = (steps[i] + 1.0) * d[i]
        heapq.heappush(heap, (float(o[i] + nxt) if offsets is not None else nxt, i))


class Replay(NamedTuple):
    """What :func:`replay` returns (an event-by-event reference's run).

    Attributes
    ----------
    x : Tensor
        ``[n, P]``: the models at ``end_time``.
    steps : list of int
        Each client's number of events (computations, sends).
    log : list of tuple
        ``(time, client, partner, staleness)`` of every event, in order; the staleness is
        what the event said (:func:`replay`'s ``event``).
    """

    x: Tensor
    steps: list[int]
    log: list[tuple[float, int, int, int]]


def replay(x0: Tensor, topology: Topology, durations: Sequence[float], end_time: float,
           event: Callable[[Tensor, float, int, int], int], *, pair_seed: int = 0,
           offsets: Sequence[float] | None = None, active: np.ndarray | None = None
           ) -> Replay:
    """Run an event-time algorithm the slow, obvious way: its events one at a time, in the
    order of :func:`events`, each applied by ``event(x, time, client, partner)`` to the models
    ``x`` in place (it returns the event's staleness, for the log).

    The one loop the event-by-event references of AD-PSGD
    (:func:`topofl.algorithms.adpsgd.simulate_events`) and gossip learning
    (:func:`topofl.algorithms.gossip_learning.simulate_gossip`) share; what an event does is
    theirs.

    Parameters
    ----------
    x0 : Tensor
        ``[n, P]`` initial models (copied, never written).
    topology : Topology
    durations : sequence of float
        One duration for every client, or one for all (:func:`per_client`).
    end_time : float
        The events with a time ``<= end_time`` run.
    event : callable
        ``event(x, time, client, partner) -> staleness``.
    pair_seed : int, default 0
    offsets, active : optional
        The clients' clock starts and initiators (:func:`events`).

    Examples
    --------
    Each event moves the client's value to its partner's average with it:

    >>> import torch
    >>> from topofl.engine.event_time import replay
    >>> def average(x, t, i, j):
    ...     x[i] = x[j] = (x[i] + x[j]) / 2
    ...     return 0
    >>> r = replay(torch.tensor([[0.0], [4.0]]), tf.topologies.complete(2), [1.0, 1.5], 1.5,
    ...            average)
    >>> r.x.flatten().tolist(), r.steps, [e[:3] for e in r.log]
    ([2.0, 2.0], [1, 1], [(1.0, 0, 1), (1.5, 1, 0)])
    """
    n = x0.shape[0]
    x = x0.clone()
    steps = [0] * n
    log: list[tuple[float, int, int, int]] = []
    d = per_client(tuple(float(v) for v in durations), n)
    o = None if offsets is None else per_client(tuple(float(v) for v in offsets), n, "offsets")
    for t, i, _, j in events(topology, d, end_time, pair_seed, offsets=o, active=active):
        log.append((t, i, j, int(event(x, t, i, j))))
        steps[i] += 1
    return Replay(x, steps, log)
