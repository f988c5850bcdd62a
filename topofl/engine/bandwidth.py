r"""Gossip learning over links of finite bandwidth: the sacs-epfl simulator's schedule.

The sacs-epfl decentralized-learning simulator [1]_ sends a gossip model through a
bandwidth scheduler and gives a client a training time. Client ``i`` disseminates (copies its
model into a message to a peer) at $o_i + k\,d_i$, ``k = 1, 2, ...``; the message is
*requested* over the link ``i -> j``, which gets ``min(i``'s outgoing bandwidth left, ``j``'s
incoming bandwidth left``)`` bytes per second, or waits (in ``i``'s queue, in order, while
``i`` has nothing left; in ``j``'s list while ``j`` has nothing left); a transfer takes
``int(model_bytes / allocated * 1e6)`` microseconds, and when it ends, the bandwidth it
frees goes to ``j``'s other transfers, ongoing (their end moved, the bytes sent so far
counted in whole bytes) then waiting, and ``i`` tries its queue again. An arrived model is
*kept* (replacing, unmerged, a model kept before); a client that is not training merges the
kept model into its own (the merged model is its model at once) and trains from it for
``train_time``; when a training ends its result becomes the model and the model kept
meanwhile, if any, is merged. Every client first trains from time 0.

Nothing in that schedule depends on the models: the send times, the peers
(:func:`~topofl.engine.event_time.partners`), the bandwidths, the model's size and the
training time decide when every message is sent, when its transfer ends, whether it is merged
or replaced, and when every training ends. :class:`SacsClock` replays the simulator's event
queue (its order: time, then creation) without models, as a list of *operations* in order:

``SEND``
    client ``i`` copies its model (and age) into a message slot;
``MERGE``
    client ``j`` merges the message of a slot into its model (the slot is freed);
``TRAIN``
    a training of client ``j`` ends: ``j``'s model takes its SGD steps (from the model it
    holds, which no operation changes while it trains);
``DROP``
    a kept message is replaced unmerged (its slot is freed).

Times are the simulator's: whole microseconds (virtual time in seconds: offsets and
durations are rounded to the microsecond), bandwidths in bytes per second. Without a
training time (``train_time=None``) every client starts idle with its model as given (no
first training) and a merge is trained at once (a training time of 0): with no two transfers
sharing a link, this is ``delay = int(model_bytes / bandwidth * 1e6) / 1e6``
(:mod:`topofl.engine.transit`), ties of one instant aside (here: the simulator's order).

A window of the fast path (:meth:`SacsClock.window`) runs the operations of its time in
*layers* (sends, then merges, then the training of a layer's trainers); an operation's layer
is the first that keeps its dependencies on the models and the slots, and from the first
operation whose layer is ``layers`` or more, the rest are held to the next window. The
schedule is a pure function of the settings and a window's plan a pure function of the number
of operations run, so a resumed run, which recomputes the schedule from time 0, equals an
uninterrupted one.

References
----------
.. [1] The sacs-epfl decentralized-learning-simulator (github.com/sacs-epfl/
   decentralized-learning-simulator, ``dasklearn/``: ``simulation/bandwidth_scheduler.py``
   ``BWScheduler``, ``simulation/gossip/client.py`` ``GossipClient``,
   ``simulation/asynchronous_client.py``).
"""

from __future__ import annotations

import heapq
import itertools
import math
import numbers
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from topofl._utils.validation import check_int
from topofl.engine.event_time import client_times, partners, per_client
from topofl.graph import Topology

__all__ = ["SEND", "MERGE", "TRAIN", "DROP", "LINK_KEYS", "MAX_MICROSECONDS", "Link",
           "check_link", "Schedule", "Plan", "SacsClock", "sacs_schedule", "op_layers"]

#: the kinds of the schedule's operations
SEND, MERGE, TRAIN, DROP = 0, 1, 2, 3

#: the keys of a gossip ``timing`` mapping that set the bandwidth schedule
LINK_KEYS = ("bandwidth", "model_bytes", "train_time", "slots")


class Link(NamedTuple):
    """The bandwidth settings of a gossip ``timing``, checked (:func:`check_link`).

    Attributes
    ----------
    bandwidth : float or tuple of float
        Each client's incoming and outgoing bandwidth, bytes per second (one for all, or
        one per client).
    model_bytes : float
        The size of a model message, bytes.
    train_time : float or None
        A training's duration, seconds (every client first trains from time 0); ``None``:
        none (a merge is trained at once, no first training).
    slots : int or None
        Message copies kept per client (queued, in transfer or kept by a receiver; the run
        holds ``n * slots``); ``None``: :meth:`copies`.
    """

    bandwidth: float | tuple[float, ...]
    model_bytes: float
    train_time: float | None = None
    slots: int | None = None

    def copies(self, durations: np.ndarray) -> int:
        r"""Message copies per client: ``slots``, else $\lceil S / (B_{\min} d_{\min})
        \rceil + 2$ (the messages of one client in flight on free links, and one kept)."""
        if self.slots is not None:
            return self.slots
        low = min(self.bandwidth) if isinstance(self.bandwidth, tuple) else self.bandwidth
        return int(min(math.ceil(self.model_bytes / low / float(durations.min())), 2**20)) + 2

    def recorded(self) -> dict[str, Any]:
        """The settings as a run's header records them (the keys set only)."""
        out: dict[str, Any] = dict(bandwidth=list(self.bandwidth) if isinstance(
            self.bandwidth, tuple) else self.bandwidth, model_bytes=self.model_bytes)
        if self.train_time is not None:
            out["train_time"] = self.train_time
        if self.slots is not None:
            out["slots"] = self.slots
        return out


#: the longest time the schedule counts, in microseconds (int64, with room for sums)
MAX_MICROSECONDS = 2**62


def _within(seconds: Any, name: str) -> None:
    """A one-line ``ValueError`` unless ``seconds`` (a number or an array) are at most
    :data:`MAX_MICROSECONDS` once in microseconds (the schedule's int64 clock)."""
    top = float(np.max(seconds)) * 1e6
    if not top <= MAX_MICROSECONDS:
        raise ValueError(f"{name} must be at most {MAX_MICROSECONDS / 1e6:.4g} s (the "
                         f"schedule counts whole microseconds in int64), got {top / 1e6:.4g} s")


def _positive(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"timing's {name} must be a positive finite number, got "
                        f"{type(value).__name__} {value!r}"[:300])
    if not (math.isfinite(float(value)) and float(value) > 0):
        raise ValueError(f"timing's {name} must be a positive finite number, got {value!r}")
    return float(value)


def check_link(timing: Mapping[str, Any], order: str, delay: Any) -> Link | None:
    """The bandwidth settings of a ``timing`` mapping (:data:`LINK_KEYS`), checked, or
    ``None`` when it sets none; a one-line error for a bad one, or for one set without
    ``bandwidth`` and ``model_bytes``, with ``order`` other than ``"continuous"`` or with a
    ``delay`` (the bandwidths decide the transfer times).

    Examples
    --------
    >>> from topofl.engine.bandwidth import check_link
    >>> check_link({"bandwidth": 1e6, "model_bytes": 2e6}, "continuous", None)
    Link(bandwidth=1000000.0, model_bytes=2000000.0, train_time=None, slots=None)
    >>> check_link({"bandwidth": [1e6, 0]}, "continuous", None)
    Traceback (most recent call last):
    ...
    ValueError: timing's bandwidth of client 1 must be a positive finite number, got 0
    >>> check_link({"bandwidth": 1e6, "model_bytes": 1}, "tick", None)
    ... # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ValueError: timing's bandwidth schedules sacs-epfl's gossip in continuous time: it needs
    order='continuous', got order='tick'
    """
    if not any(key in timing for key in LINK_KEYS):
        return None
    bandwidth = timing.get("bandwidth")
    if isinstance(bandwidth, list | tuple | np.ndarray):
        bandwidth = tuple(_positive(v, f"bandwidth of client {i}")
                          for i, v in enumerate(bandwidth))
        if not bandwidth:
            raise ValueError("timing's bandwidth must hold one rate per client, got an empty "
                             "sequence")
    elif bandwidth is not None:
        bandwidth = _positive(bandwidth, "bandwidth")
    if bandwidth is None or timing.get("model_bytes") is None:
        given = sorted(k for k in LINK_KEYS if timing.get(k) is not None)
        raise ValueError(f"timing's bandwidth schedule needs both bandwidth and model_bytes, "
                         f"got {', '.join(given) or 'neither'}")
    if order != "continuous":
        raise ValueError(f"timing's bandwidth schedules sacs-epfl's gossip in continuous "
                         f"time: it needs order='continuous', got order={order!r}")
    if delay is not None:
        raise ValueError(f"timing's bandwidth decides each transfer's time: give it or a "
                         f"delay, not both (got delay={delay!r})"[:300])
    train = timing.get("train_time")
    if train is not None:
        train = client_times(train, "timing's train_time", positive=False)
        if isinstance(train, tuple):
            raise TypeError(f"timing's train_time must be one time for every client, got "
                            f"{len(train)} times")
    slots = timing.get("slots")
    size = _positive(timing["model_bytes"], "model_bytes")
    low = min(bandwidth) if isinstance(bandwidth, tuple) else bandwidth
    _within(size / low, "a transfer's time on a free link (timing's model_bytes / bandwidth)")
    if train is not None:
        _within(train, "timing's train_time")
    return Link(bandwidth, size, train,
                None if slots is None else check_int(slots, "timing's slots", low=2))


class Schedule(NamedTuple):
    """The operations of :func:`sacs_schedule`, in order (``(e,)`` arrays).

    Attributes
    ----------
    time : ndarray of int64
        When, in microseconds (nondecreasing).
    kind : ndarray of int64
        :data:`SEND`, :data:`MERGE`, :data:`TRAIN` or :data:`DROP`.
    client : ndarray of int64
        Who acts: the sender of a send, the receiver of a merge, a drop or a training.
    peer : ndarray of int64
        The other client: the receiver of a send, the sender of a merge's or a drop's
        message (-1: a training).
    number : ndarray of int64
        The message's number among its sender's messages (-1: a training).
    slot : ndarray of int64
        The message's slot (the lowest free one at its send; -1: a training).
    """

    time: np.ndarray
    kind: np.ndarray
    client: np.ndarray
    peer: np.ndarray
    number: np.ndarray
    slot: np.ndarray


class Plan(NamedTuple):
    """A window's operations (:meth:`SacsClock.window`): the fields of :class:`Schedule`
    for the ``ran`` operations from ``first`` on, with ``layer`` (each ``< layers``),
    ``late`` (due at or before the window's start), ``held`` (operations of the window
    left to the next) and the window's ``end``."""

    kind: np.ndarray
    client: np.ndarray
    peer: np.ndarray
    slot: np.ndarray
    layer: np.ndarray
    late: np.ndarray
    first: int
    ran: int
    held: int
    end: float


class _Transfer:
    """One request or transfer of the bandwidth scheduler (compared by identity)."""

    __slots__ = ("i", "j", "msg", "bw", "done", "since", "asked", "token")

    def __init__(self, i: int, j: int, msg: tuple[int, int, int], now: int) -> None:
        self.i, self.j, self.msg, self.asked = i, j, msg, now
        self.bw: float = 0
        self.done, self.since, self.token = 0, 0, -1


class SacsClock:
    """The sacs-epfl gossip's event queue without models (the module docstring), run as
    far as asked and extended on demand: the schedule of :func:`sacs_schedule`.

    Parameters
    ----------
    topology : Topology
        Where each send's peer is drawn (:func:`~topofl.engine.event_time.partners`).
    durations, offsets : ndarray
        ``(n,)`` int64 microseconds: each client's period and start shift (its ``k``-th send
        at ``offsets[i] + k * durations[i]``).
    pair_seed : int
    bandwidth : ndarray
        ``(n,)`` float64 bytes per second, in and out.
    model_bytes : float
    train_time : int or None
        Microseconds; ``None``: no first training, a merge trained at once.
    """

    def __init__(self, topology: Topology, durations: np.ndarray, offsets: np.ndarray,
                 pair_seed: int, bandwidth: np.ndarray, model_bytes: float,
                 train_time: int | None) -> None:
        n = len(durations)
        self.topology, self.pair_seed = topology, pair_seed
        self.period, self.shift = durations.tolist(), offsets.tolist()
        self.bw: list[float] = bandwidth.tolist()
        self.size = model_bytes
        self.first_training, self.train_time = train_time is not None, train_time or 0
        self.queue: list[tuple[int, int, str, Any]] = []
        self.counter = itertools.count()
        self.now, self.horizon, self.sends = 0, -1, [0] * n
        self.available = [train_time is None] * n
        self.last: list[tuple[int, int, int] | None] = [None] * n
        self.out_req: list[list[_Transfer]] = [[] for _ in range(n)]
        self.in_req: list[list[_Transfer]] = [[] for _ in range(n)]
        self.out_now: list[list[_Transfer]] = [[] for _ in range(n)]
        self.in_now: list[list[_Transfer]] = [[] for _ in range(n)]
        self.free: list[int] = []
        self.fresh = self.live = self.peak = 0
        self.peak_time, self.replaced, self.waited = 0, 0, 0
        self.ops: list[tuple[int, int, int, int, int, int]] = []  # from the base-th on
        self.base, self._times = 0, np.zeros(0, dtype=np.float64)
        self._mates: dict[int, tuple[int, list[int]]] = {}
        for i in range(n):
            self._at(0, "init", i)

    @classmethod
    def of(cls, topology: Topology, durations: np.ndarray, offsets: np.ndarray | None,
           pair_seed: int, link: Link) -> SacsClock:
        """The clock of ``link`` for clients with ``durations`` and ``offsets`` (``(n,)``
        seconds, ``None``: 0), their times rounded to the microsecond."""
        n = topology.n
        _within(durations, "the durations (with a bandwidth timing)")
        if offsets is not None:
            _within(offsets, "the offsets (with a bandwidth timing)")
        return cls(topology, np.round(durations * 1e6).astype(np.int64),
                   np.zeros(n, np.int64) if offsets is None else
                   np.round(offsets * 1e6).astype(np.int64), pair_seed,
                   per_client(link.bandwidth, n, "timing's bandwidth"), link.model_bytes,
                   None if link.train_time is None else int(round(link.train_time * 1e6)))

    def check_graph(self, topology: Topology, t: int) -> None:
        """Refuse, in one line, a round ``t`` whose graph is not the clock's (a
        time-varying one): every send's peer is drawn on one graph."""
        a, b = self.topology.W, topology.W
        if topology is not self.topology and (a.shape != b.shape or (a != b).nnz):
            raise ValueError(f"timing's bandwidth schedule draws every send's peer on one "
                             f"graph: the run's graph changed at round {t}")

    def _at(self, t: int, kind: str, data: Any) -> int:
        c = next(self.counter)
        heapq.heappush(self.queue, (t, c, kind, data))
        return c

    def until(self, end: int) -> None:
        """Run every event with a time ``<= end`` (microseconds)."""
        if end <= self.horizon:
            return
        while self.queue and self.queue[0][0] <= end:
            t, c, kind, data = heapq.heappop(self.queue)
            if kind == "finish_transfer" and data.token != c:
                continue  # moved (more bandwidth freed)
            self.now = t
            getattr(self, "_" + kind)(data)
        self.horizon = end

    def _op(self, kind: int, client: int, msg: tuple[int, int, int] | None,
            peer: int = -1) -> None:
        s, k, slot = (-1, -1, -1) if msg is None else msg
        self.ops.append((self.now, kind, client, s if peer < 0 else peer, k, slot))
        if kind in (MERGE, DROP):
            heapq.heappush(self.free, slot)
            self.live -= 1

    # -- the client (gossip/client.py, asynchronous_client.py, client.py)
    def _init(self, i: int) -> None:
        if self.first_training:
            self._at(self.now, "start_train", i)
        self._at(self.now + self.shift[i] + self.period[i], "disseminate", i)

    def _start_train(self, i: int) -> None:
        self._at(self.now + self.train_time, "finish_train", i)

    def _finish_train(self, i: int) -> None:
        self._op(TRAIN, i, None)
        self.available[i] = True
        if self.last[i] is not None:
            self._clear(i)

    def _clear(self, j: int) -> None:
        self.available[j] = False
        msg, self.last[j] = self.last[j], None
        self._op(MERGE, j, msg)
        self._at(self.now, "start_train", j)

    def _disseminate(self, i: int) -> None:
        k = self.sends[i]
        at, mates = self._mates.get(i, (0, []))
        if not at <= k < at + len(mates):  # drawn 64 sends at a time (a pure function)
            at, mates = k, partners(self.topology, self.pair_seed, np.full(64, i),
                                    np.arange(k, k + 64)).tolist()
            self._mates[i] = (at, mates)
        j = int(mates[k - at])
        self.sends[i] += 1
        slot = heapq.heappop(self.free) if self.free else self.fresh
        self.fresh = max(self.fresh, slot + 1)
        self.live += 1
        if self.live > self.peak:
            self.peak, self.peak_time = self.live, self.now
        self._op(SEND, i, (i, k, slot), j)
        self._at(self.now, "start_transfer", _Transfer(i, j, (i, k, slot), self.now))
        self._at(self.now + self.period[i], "disseminate", i)

    def _incoming(self, j: int, msg: tuple[int, int, int]) -> None:
        if self.last[j] is not None:
            self.replaced += 1
            self._op(DROP, j, self.last[j])
        self.last[j] = msg
        if self.available[j]:
            self._clear(j)

    # -- the bandwidth scheduler (bandwidth_scheduler.py)
    def _start_transfer(self, tr: _Transfer) -> None:
        self.out_req[tr.i].append(tr)
        self._try_send(tr.i)

    def _left_out(self, i: int) -> float:
        return self.bw[i] - sum(tr.bw for tr in self.out_now[i])

    def _left_in(self, j: int) -> float:
        return self.bw[j] - sum(tr.bw for tr in self.in_now[j])

    def _try_send(self, i: int) -> None:
        if self._left_out(i) == 0:
            return
        started = []
        for tr in self.out_req[i]:
            give = min(self._left_out(i), self._left_in(tr.j))
            if give > 0:
                self._start(tr, give)
                started.append(tr)
                if self._left_out(i) == 0:
                    break
            elif not any(tr is o for o in self.in_req[tr.j]):
                self.in_req[tr.j].append(tr)
        for tr in started:
            _remove(self.out_req[i], tr)

    def _start(self, tr: _Transfer, give: float) -> None:
        tr.bw, tr.since = give, self.now
        self.waited += self.now > tr.asked
        tr.token = self._at(self.now + int(self.size / give * 1_000_000), "finish_transfer", tr)
        self.out_now[tr.i].append(tr)
        self.in_now[tr.j].append(tr)
        _remove(self.in_req[tr.j], tr)

    def _finish_transfer(self, tr: _Transfer) -> None:
        _remove(self.out_now[tr.i], tr)
        _remove(self.in_now[tr.j], tr)
        self._incoming(tr.j, tr.msg)
        for other in self.in_now[tr.j] + self.in_req[tr.j]:
            self._freed(other)
            if self._left_in(tr.j) == 0:
                break
        self._try_send(tr.i)

    def _freed(self, tr: _Transfer) -> None:
        give = min(self._left_out(tr.i), self._left_in(tr.j))
        if any(tr is o for o in self.out_now[tr.i]):
            if give > 0:
                tr.done += int((self.now - tr.since) / 1_000_000 * tr.bw)
                tr.since = self.now
                tr.bw += give
                rest = (self.size - tr.done) / tr.bw
                tr.token = self._at(self.now + int(rest * 1_000_000), "finish_transfer", tr)
        elif give > 0:  # waiting in its sender's queue
            self._start(tr, give)
            _remove(self.out_req[tr.i], tr)

    # -- the schedule
    def schedule(self) -> Schedule:
        """The operations run so far, from the first no window has run (:class:`Schedule`)."""
        a = np.asarray(self.ops, dtype=np.int64).reshape(-1, 6).T
        return Schedule(*(np.ascontiguousarray(v) for v in a))

    def window(self, first: int, start: float, end: float, layers: int, pool: int) -> Plan:
        r"""The plan of a window $(\mathrm{start}, \mathrm{end}]$ (seconds) from the
        operation ``first`` on, in at most ``layers`` layers; a one-line error if a message
        needs a slot beyond ``pool``. The operations before ``first`` ran: they are
        forgotten (:meth:`schedule` starts after them)."""
        if first < self.base:
            raise ValueError(f"this clock forgot the operations before {self.base}, asked "
                             f"from {first}: a run starts a fresh clock")
        self.until(math.floor(end * 1e6) + 1)
        if len(self._times) < len(self.ops):
            new = [op[0] for op in self.ops[len(self._times):]]
            self._times = np.concatenate([self._times, np.asarray(new, np.float64) / 1e6])
        del self.ops[:first - self.base]
        self._times, self.base = self._times[first - self.base:], first
        upto = int(np.searchsorted(self._times, end, side="right"))
        ops = np.asarray(self.ops[:upto], dtype=np.int64).reshape(-1, 6)
        if len(ops) and int(ops[:, 5].max()) >= pool:
            e = int(np.argmax(ops[:, 5] >= pool))
            raise ValueError(
                f"timing's bandwidth schedule holds more than {pool} messages at once "
                f"(queued, in transfer or kept) at {ops[e, 0] / 1e6:g} s, the most this run "
                f"keeps (timing's slots per client times the clients); give a larger slots")
        layer = op_layers(ops[:, 1], ops[:, 2], ops[:, 5])
        deep = np.flatnonzero(layer >= layers)
        ran = int(deep[0]) if len(deep) else len(ops)
        run = ops[:ran]
        return Plan(run[:, 1], run[:, 2], run[:, 3], run[:, 5], layer[:ran],
                    self._times[:ran] <= start, first, ran, len(ops) - ran, float(end))


def _remove(items: list[_Transfer], tr: _Transfer) -> None:
    for e, o in enumerate(items):
        if o is tr:
            del items[e]
            return


def op_layers(kind: np.ndarray, client: np.ndarray, slot: np.ndarray) -> np.ndarray:
    """Each operation's layer, the operations in order: a layer runs its sends, then its
    merges, then trains its trainers. A send reads its client after the client's last merge
    or training and writes a slot after every use of it; a merge reads its slot not before
    the send, writes its client after its last merge or training and not before its last
    send; a training comes after the client's last training and not before its last merge
    or send; a drop touches no model.

    Examples
    --------
    >>> import numpy as np
    >>> from topofl.engine.bandwidth import SEND, MERGE, TRAIN, op_layers
    >>> op_layers(np.array([SEND, MERGE, TRAIN, SEND, SEND]), np.array([0, 1, 1, 1, 0]),
    ...           np.array([0, 0, -1, 0, 1])).tolist()
    [0, 0, 0, 1, 0]
    """
    merged: dict[int, int] = {}
    trained: dict[int, int] = {}
    read: dict[int, int] = {}
    used: dict[int, int] = {}
    out = np.empty(len(kind), dtype=np.int64)
    for e, (k, c, s) in enumerate(zip(kind.tolist(), client.tolist(), slot.tolist())):
        wrote = max(merged.get(c, -1), trained.get(c, -1))
        if k == SEND:
            layer = max(wrote + 1, used.get(s, -1) + 1)
            read[c] = max(read.get(c, 0), layer)
        elif k == MERGE:
            layer = max(used.get(s, 0), wrote + 1, read.get(c, 0))
            merged[c] = layer
        elif k == TRAIN:
            layer = max(trained.get(c, -1) + 1, merged.get(c, 0), read.get(c, 0))
            trained[c] = layer
        else:
            layer = used.get(s, 0)
        out[e] = layer
        if s >= 0:
            used[s] = max(used.get(s, 0), layer)
    return out


def sacs_schedule(topology: Topology, durations: Any, end_time: float, pair_seed: int = 0,
                  *, offsets: Any = None, bandwidth: Any, model_bytes: float,
                  train_time: float | None = None) -> Schedule:
    """The sacs-epfl gossip's operations with a time ``<= end_time`` (seconds), in the
    order its event queue runs them (:class:`SacsClock`, the module docstring).

    Parameters
    ----------
    topology : Topology
    durations : float or sequence of float
        Each client's period between two sends, seconds (one for all or one per client).
    end_time : float
    pair_seed : int, default 0
    offsets : float or sequence of float, optional
        Each client's start shift, seconds (0 by default).
    bandwidth : float or sequence of float
        Bytes per second, each client's in and out.
    model_bytes : float
    train_time : float, optional
        Seconds; ``None``: no first training, each merge trained at once.

    Returns
    -------
    Schedule

    Notes
    -----
    Each event costs a constant number of list operations per transfer of the two clients
    involved (the scheduler's lists), and a partner draw per send.

    Examples
    --------
    Two clients sending every 10 s (shifted by 1 s and 2 s), a 2 MB model over 1 MB/s: a
    transfer takes 2 s, and with a training of 3 s (the first from time 0) client 0's
    model reaches client 1 at 13 s, is merged there at once and trained by 16 s.

    >>> from topofl.engine.bandwidth import sacs_schedule
    >>> s = sacs_schedule(tf.topologies.complete(2), 10.0, 16.0, offsets=[1.0, 2.0],
    ...                   bandwidth=1e6, model_bytes=2e6, train_time=3.0)
    >>> list(zip((s.time / 1e6).tolist(), s.kind.tolist(), s.client.tolist()))
    ... # doctest: +NORMALIZE_WHITESPACE
    [(3.0, 2, 0), (3.0, 2, 1), (11.0, 0, 0), (12.0, 0, 1), (13.0, 1, 1), (14.0, 1, 0),
     (16.0, 2, 1)]
    """
    link = check_link(dict(bandwidth=bandwidth, model_bytes=model_bytes,
                           train_time=train_time), "continuous", None)
    if link is None:  # not reached: the keys are given
        raise ValueError("sacs_schedule needs bandwidth and model_bytes")
    n = topology.n
    clock = SacsClock.of(topology, per_client(client_times(durations, "durations",
                                                           positive=True), n),
                         None if offsets is None else per_client(
                             client_times(offsets, "offsets", positive=False), n, "offsets"),
                         pair_seed, link)
    clock.until(math.floor(end_time * 1e6))
    return clock.schedule()
