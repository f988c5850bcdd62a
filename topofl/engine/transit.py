r"""Messages in event time: start offsets, delivery delays and same-instant ticks.

:mod:`~topofl.engine.event_time` gives client ``i`` its ``k``-th event at $o_i + k\,d_i$
(``offsets`` $o_i$, 0 by default; ``durations`` $d_i$). A *push* event (gossip learning's
send) here is split in two: the **send** at $T = o_i + k\,d_i$ reads the sender's model (and
its age) into a message, and the **receive** at $T + \Delta_i$ (``delay`` $\Delta_i$, the
sender's delivery time; 0 by default) merges the message into the receiver. What the two
do is the algorithm's; when they happen, in what order, and how a window batches them, is this
module's. Two timings order the events of one instant:

``timing="continuous"``
    Events run in the order of $(T, s, \mathrm{kind})$: time, then the sending client $s$
    (of a send, or of the message a receive delivers), a send before a receive. With no
    delay each receive directly follows its send, which is the order of
    :func:`~topofl.engine.event_time.events` (today's default, unchanged). The sacs-epfl
    decentralized-learning simulator's gossip (start offsets, then a send every period, a
    transfer time per model) replays in this timing (its ties, rare with real-valued times,
    go by the order its events were created) when no two transfers share a link and
    training takes no time. Its bandwidth queueing and its training time, during which a
    client keeps only the last model it receives, make the schedule depend on every earlier
    transfer, not on the clients' counts: they replay through the ``bandwidth`` settings of
    a ``timing`` mapping (:data:`~topofl.engine.bandwidth.LINK_KEYS`), whose schedule
    :mod:`topofl.engine.bandwidth` computes from the settings alone.
``timing="tick"``
    gossipy's simulator (Polato 2022): all sends of an instant read the models *before*
    any receive of that instant (each timed-out node's model is copied into its message
    first), then the instant's receives run in the order of (send time, sender) -- the
    order its message queue of that tick holds them (gossipy walks the nodes in an order
    it shuffles every round; here ties go by client id, or by ``node_order``: a
    permutation of the nodes per unit tick, :class:`NodeOrder`).

The windowed fast path (:func:`transit`) runs window ``t``'s events as *layers*: a layer
first copies its sends into the message slots, then merges its receives (and the
algorithm trains the receivers). An event's layer is the first that keeps every dependency
of the event order (a send reads its sender after that client's last receive; a receive
writes its receiver after its last receive and not before its last send, reads its message
not before the send, and delivers a sender's messages in order); an event whose layer is
``layers`` or more is *held* to the next window, as is a client's second send of a window
and a send whose sender has ``slots`` messages in flight. Whenever no window holds an
event, the windowed run equals :func:`messages`, the slow reference, event for event.
Everything is a pure function of the counts of sends and deliveries, so a resumed run equals
an uninterrupted one.

References
----------
.. [1] M. Polato, "gossipy: a Python framework for simulating gossip learning", 2022
   (github.com/makgyver/gossipy: ``GossipSimulator.start``, ``ConstantDelay``).
.. [2] The sacs-epfl decentralized-learning-simulator (github.com/sacs-epfl/
   decentralized-learning-simulator: ``GossipClient.init_client`` draws each client's start
   shift, ``BWScheduler`` a model's transfer time).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from torch import Tensor

from topofl.engine.bandwidth import LINK_KEYS, SEND, Link, SacsClock, check_link
from topofl.engine.event_time import (
    Windows,
    _counts,
    _neighbours,
    client_times,
    events,
    partners,
    per_client,
)
from topofl.graph import Topology

__all__ = ["TIMINGS", "check_times", "check_timing", "read_timing", "Timing", "NodeOrder",
           "check_node_order", "bipartite_split", "slots", "MAX_SLOTS", "Message",
           "messages", "message_steps", "Transit", "transit"]

#: the orders of one instant's events: gossip learning's own, and gossipy's ticks
TIMINGS = ("continuous", "tick")

#: The most message slots a sender may need (:func:`slots`): each holds a copy of its model,
#: so a ``delay`` of more windows than this is refused before any is allocated.
MAX_SLOTS = 2**31 - 1


def check_timing(timing: Any) -> str:
    """``timing`` as one of :data:`TIMINGS`, else a one-line error.

    Examples
    --------
    >>> from topofl.engine.transit import check_timing
    >>> check_timing("tick")
    'tick'
    """
    if not isinstance(timing, str):
        raise TypeError(f"timing must be a str, one of {TIMINGS}, got "
                        f"{type(timing).__name__} {timing!r}"[:300])
    if timing not in TIMINGS:
        raise ValueError(f"timing must be one of {TIMINGS}, got {timing!r}"[:300])
    return timing


class Timing(NamedTuple):
    """A ``timing`` setting, checked (:func:`read_timing`).

    Attributes
    ----------
    order : str
        One of :data:`TIMINGS`.
    delay, offsets : float or tuple of float or None
        Each sender's delivery time, each client's clock start (:func:`check_times`).
    node_order : NodeOrder or None
        The order of the nodes of a tick (``order="tick"`` only); ``None``: their ids.
    link : Link or None
        The bandwidth schedule's settings (:class:`~topofl.engine.bandwidth.Link`);
        ``None``: none.
    """

    order: str
    delay: float | tuple[float, ...] | None = None
    offsets: float | tuple[float, ...] | None = None
    node_order: NodeOrder | None = None
    link: Link | None = None


def read_timing(timing: Any) -> Timing:
    """``timing`` (an order of :data:`TIMINGS`, or a mapping with the keys ``order``,
    ``delay``, ``offsets``, ``node_order`` and those of the bandwidth schedule,
    :data:`~topofl.engine.bandwidth.LINK_KEYS`, each optional) as a :class:`Timing`, checked
    (:func:`check_timing`, :func:`check_times`, :func:`check_node_order`,
    :func:`~topofl.engine.bandwidth.check_link`), else a one-line error.

    Examples
    --------
    >>> from topofl.engine.transit import read_timing
    >>> tuple(read_timing("tick")), tuple(read_timing({"delay": 2, "offsets": [0, 1]}))
    (('tick', None, None, None, None), ('continuous', 2.0, (0.0, 1.0), None, None))
    >>> read_timing({"order": "tick", "node_order": 7}).node_order
    NodeOrder(seed=7, orders=None)
    >>> read_timing({"bandwidth": 1e6, "model_bytes": 4e6, "train_time": 3}).link
    Link(bandwidth=1000000.0, model_bytes=4000000.0, train_time=3.0, slots=None)
    >>> read_timing({"lag": 1})  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ValueError: timing's keys are order, delay, offsets, node_order, bandwidth, model_bytes,
    train_time and slots, got 'lag'
    >>> read_timing({"node_order": 7})  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ValueError: timing's node_order orders the nodes of a tick: it needs order='tick', got
    order='continuous'
    """
    if isinstance(timing, str) or not isinstance(timing, Mapping):
        return Timing(check_timing(timing))
    for key in timing:
        if key not in ("order", "delay", "offsets", "node_order", *LINK_KEYS):
            raise ValueError(f"timing's keys are order, delay, offsets, node_order, "
                             f"{', '.join(LINK_KEYS[:-1])} and {LINK_KEYS[-1]}, got "
                             f"{key!r}"[:300])
    order = check_timing(timing.get("order", "continuous"))
    node_order = check_node_order(timing.get("node_order"))
    if node_order is not None and order != "tick":
        raise ValueError(f"timing's node_order orders the nodes of a tick: it needs "
                         f"order='tick', got order={order!r}")
    delay = check_times(timing.get("delay"), "delay")
    return Timing(order, delay, check_times(timing.get("offsets"), "offsets"), node_order,
                  check_link(timing, order, delay))


class NodeOrder(NamedTuple):
    r"""The order of the nodes that act at one tick, gossipy's node order (its simulator
    walks its nodes in an order it shuffles every round): tick $w$ is the unit of time
    $[w, w + 1)$, and in tick timing the messages of one instant sent at the same time $T$
    are taken in the order of tick $\lfloor T \rfloor$'s permutation of their senders
    instead of by sender id.

    Attributes
    ----------
    seed : int or None
        A permutation per tick from a seeded stream, a pure function of ``(seed, w)``
        (``numpy.random.default_rng([seed, w]).permutation(n)``).
    orders : tuple of tuple of int, or None
        The nodes of tick ``w`` in the order they act, ``orders[w]`` (a permutation of
        ``0..n-1``), given explicitly: gossipy's own draws replayed.

    Examples
    --------
    >>> import numpy as np
    >>> from topofl.engine.transit import NodeOrder
    >>> given = NodeOrder(orders=((0, 1, 2), (2, 0, 1)))
    >>> given.ranks(np.array([0, 1, 2, 2]), np.array([0.5, 1.0, 1.0, 0.0]), 3).tolist()
    [0, 2, 0, 2]
    >>> given.ranks(np.array([0]), np.array([2.0]), 3)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ValueError: timing's node_order lists the node orders of ticks 0-1, a message sent at 2
    needs tick 2's
    >>> sorted(NodeOrder(seed=3).ranks(np.arange(4), np.full(4, 5.5), 4).tolist())
    [0, 1, 2, 3]
    """

    seed: int | None = None
    orders: tuple[tuple[int, ...], ...] | None = None

    def permutation(self, tick: int, n: int) -> np.ndarray:
        """``(n,)``: the nodes of ``tick`` in the order they act."""
        if self.orders is None:
            out: np.ndarray = np.random.default_rng([int(self.seed or 0), tick]).permutation(n)
            return out
        return np.asarray(self.orders[tick], dtype=np.int64)

    def ranks(self, senders: np.ndarray, sent: np.ndarray, n: int) -> np.ndarray:
        r"""``(e,)`` int64: each sender's place in the order of the tick of its send time
        (``sent``: tick $\lfloor T \rfloor$), ``n`` nodes."""
        senders = np.asarray(senders, dtype=np.int64)
        times = np.asarray(sent, dtype=np.float64)
        ticks = np.floor(times).astype(np.int64)
        out = np.zeros(len(senders), dtype=np.int64)
        for tick in np.unique(ticks).tolist():
            here = ticks == tick
            if self.orders is not None and tick >= len(self.orders):
                raise ValueError(
                    f"timing's node_order lists the node orders of ticks 0-"
                    f"{len(self.orders) - 1}, a message sent at {float(times[here][0]):g} "
                    f"needs tick {tick}'s")
            rank = np.empty(n, dtype=np.int64)
            rank[self.permutation(tick, n)] = np.arange(n)
            out[here] = rank[senders[here]]
        return out

    def check(self, n: int) -> None:
        """Refuse, in one line, explicit orders of another number of nodes than ``n``."""
        if self.orders is not None and len(self.orders[0]) != n:
            raise ValueError(f"timing's node_order must order the run's {n} clients, got "
                             f"permutations of {len(self.orders[0])}")

    def recorded(self) -> int | list[list[int]]:
        """The setting as a run's header records it (the seed, or the orders as lists)."""
        if self.orders is None:
            return int(self.seed or 0)
        return [list(row) for row in self.orders]


def check_node_order(node_order: Any) -> NodeOrder | None:
    """``node_order`` (``None``: the ids; a seed, an int ``>= 0``; or a sequence of
    permutations of ``0..n-1``, one per tick) as a :class:`NodeOrder`, else a one-line
    error.

    Examples
    --------
    >>> from topofl.engine.transit import check_node_order
    >>> check_node_order([[1, 0], [0, 1]])
    NodeOrder(seed=None, orders=((1, 0), (0, 1)))
    >>> check_node_order([[0, 0]])
    Traceback (most recent call last):
    ...
    ValueError: timing's node_order must hold permutations of 0..n-1, got [0, 0] for tick 0
    """
    if node_order is None:
        return None
    if isinstance(node_order, numbers.Integral) and not isinstance(node_order, bool):
        if int(node_order) < 0:
            raise ValueError(f"timing's node_order seed must be >= 0, got {node_order!r}")
        return NodeOrder(seed=int(node_order))
    rows = None
    if isinstance(node_order, Sequence | np.ndarray) and not isinstance(node_order, str):
        rows = [list(r) if isinstance(r, Sequence | np.ndarray) and not isinstance(r, str)
                else None for r in node_order]
    given = [r for r in rows or [] if r is not None]
    if not rows or len(given) != len(rows):
        raise TypeError(f"timing's node_order must be None, a seed (an int >= 0) or a "
                        f"sequence of permutations (one per tick), got "
                        f"{type(node_order).__name__} {node_order!r}"[:300])
    orders = []
    for w, row in enumerate(given):
        if any(isinstance(v, bool | np.bool_) or not isinstance(v, numbers.Integral)
               for v in row) or sorted(int(v) for v in row) != list(range(len(row))) \
                or len(row) != len(given[0]):
            raise ValueError(f"timing's node_order must hold permutations of 0..n-1, got "
                             f"{row!r} for tick {w}"[:300])
        orders.append(tuple(int(v) for v in row))
    return NodeOrder(orders=tuple(orders))


def check_times(times: Any, name: str) -> float | tuple[float, ...] | None:
    """``times`` (``None``, one time for every client, or one per client) checked
    non-negative and finite, else a one-line ``ValueError``: the start ``offsets`` of the
    clients' clocks and the ``delay`` of their messages.

    Examples
    --------
    >>> from topofl.engine.transit import check_times
    >>> check_times([0, 2.5], "offsets"), check_times(None, "delay")
    ((0.0, 2.5), None)
    >>> check_times(-1, "delay")
    Traceback (most recent call last):
    ...
    ValueError: delay must be a non-negative finite time (or one per client), got -1
    """
    return None if times is None else client_times(times, name, positive=False)




def bipartite_split(topology: Topology) -> np.ndarray:
    """``(n,)`` bool: the *active* clients of Lian et al.'s (2018) deployment of AD-PSGD on
    a bipartite graph, the side of each connected component that holds its smallest node
    (the even nodes of an even ring); the other side is passive. A graph that is not
    bipartite (an odd cycle) is refused in one line.

    Examples
    --------
    >>> from topofl.engine.transit import bipartite_split
    >>> bipartite_split(tf.topologies.ring(6)).tolist()
    [True, False, True, False, True, False]
    >>> bipartite_split(tf.topologies.ring(5))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: split='bipartite' needs a bipartite graph ..., got ring with an odd cycle ...
    """
    indptr, indices = _neighbours(topology)
    n = len(indptr) - 1
    side = np.full(n, -1, dtype=np.int64)
    for root in range(n):  # breadth first from each component's smallest node
        if side[root] >= 0:
            continue
        side[root], queue = 0, [root]
        while queue:
            i = queue.pop()
            for j in indices[indptr[i]:indptr[i + 1]].tolist():
                if side[j] < 0:
                    side[j] = 1 - side[i]
                    queue.append(j)
                elif side[j] == side[i]:
                    raise ValueError(f"split='bipartite' needs a bipartite graph (two sides, "
                                     f"every edge between them), got {topology.name} with an "
                                     f"odd cycle through node {root}")
    out: np.ndarray = side == 0
    return out




def slots(durations: np.ndarray, delay: np.ndarray) -> int:
    r"""Message slots per sender: $\max_i \lfloor \Delta_i / d_i \rfloor + 2$, enough for
    every message in flight when no event is held (a sender has at most
    $\lfloor \Delta_i / d_i \rfloor + 1$ in flight at a window's start, plus its send).

    Examples
    --------
    >>> import numpy as np
    >>> from topofl.engine.transit import slots
    >>> slots(np.array([1.0, 2.0]), np.array([2.5, 0.0]))
    4
    >>> slots(np.array([1.0]), np.array([1e300]))  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ValueError: timing's delay=1e+300 is 1e+300 windows of client 0 (its window 1): a sender
    keeps a copy of its model for each message in flight, at most 2,147,483,647
    (topofl.engine.transit.MAX_SLOTS); give a delay under 2.15e+09 windows
    """
    with np.errstate(over="ignore"):
        ratio = delay / durations
    i = int(np.argmax(ratio))
    if not ratio[i] < MAX_SLOTS - 2:  # an inf too
        raise ValueError(
            f"timing's delay={delay[i]:g} is {ratio[i]:.3g} windows of client {i} (its window "
            f"{durations[i]:g}): a sender keeps a copy of its model for each message in "
            f"flight, at most {MAX_SLOTS:,} (topofl.engine.transit.MAX_SLOTS); give a delay "
            f"under {MAX_SLOTS - 2:.3g} windows")
    return int(np.floor(ratio).max()) + 2


class Message(NamedTuple):
    """One step of :func:`messages`: a send or a receive of the message ``number`` of
    ``sender`` (its events before the send), sent at ``sent`` and received at ``sent``
    plus the sender's delay."""

    time: float
    kind: str  # "send" or "receive"
    sender: int
    receiver: int
    number: int
    sent: float


def _key(m: Message, timing: str, rank: int) -> tuple[Any, ...]:
    phase = 0 if m.kind == "send" else 1
    if timing == "tick":
        return (m.time, phase, m.sent, rank)
    return (m.time, m.sender, phase)


def messages(topology: Topology, durations: np.ndarray, end_time: float, pair_seed: int = 0,
             *, offsets: np.ndarray | None = None, delay: np.ndarray | None = None,
             timing: str = "continuous", node_order: NodeOrder | None = None
             ) -> Iterator[Message]:
    """The sends with a time ``<= end_time`` and their receives with a time ``<=
    end_time``, one at a time in the order of ``timing`` (the module docstring): every
    step listed, then sorted, the slow, obvious order :func:`transit` is tested against.
    In tick timing the messages sent at one instant go by sender id, or by their sender's
    place in ``node_order``'s permutation of that tick (:class:`NodeOrder`).

    Examples
    --------
    Two clients, client 1's messages taking 0.5: in tick timing client 1's send at 2.0
    reads its model before client 0's message of 2.0 arrives.

    >>> import numpy as np
    >>> from topofl.engine.transit import messages
    >>> [(m.time, m.kind, m.sender) for m in messages(tf.topologies.complete(2),
    ...  np.array([1.0, 2.0]), 2.0, delay=np.array([0.0, 0.5]), timing="tick")]
    ... # doctest: +NORMALIZE_WHITESPACE
    [(1.0, 'send', 0), (1.0, 'receive', 0), (2.0, 'send', 0), (2.0, 'send', 1),
     (2.0, 'receive', 0)]
    """
    n = len(durations)
    lag = np.zeros(n) if delay is None else delay
    steps: list[Message] = []
    for ev in events(topology, durations, end_time, pair_seed, offsets=offsets):
        steps.append(Message(ev.time, "send", ev.client, ev.partner, ev.number, ev.time))
        arrive = ev.time + float(lag[ev.client])
        if arrive <= end_time:
            steps.append(Message(arrive, "receive", ev.client, ev.partner, ev.number,
                                 ev.time))
    def rank(m: Message) -> int:
        if node_order is None:
            return m.sender
        return int(node_order.ranks(np.array([m.sender]), np.array([m.sent]), n)[0])

    yield from sorted(steps, key=lambda m: _key(m, timing, rank(m)))


def message_steps(topology: Topology, durations: np.ndarray, end_time: float, pair_seed: int,
                  timing: Timing) -> Iterator[tuple[str, float, int, int, Any]]:
    """The steps of a message reference in order, ``(kind, time, sender, receiver, key)``:
    a ``"send"`` copies the sender's model to ``key``, a ``"receive"`` merges it into the
    receiver's, then trains it (:func:`messages`); on a bandwidth schedule (``timing.link``,
    :mod:`topofl.engine.bandwidth`) a ``"merge"`` and a ``"train"`` (its ``sender`` -1)
    are steps apart, and a ``"drop"`` replaces a kept message unmerged.

    Examples
    --------
    >>> import numpy as np
    >>> from topofl.engine.transit import message_steps, read_timing
    >>> how = read_timing({"bandwidth": 1e6, "model_bytes": 5e5})
    >>> [s[:4] for s in message_steps(tf.topologies.complete(2), np.array([1.0, 2.0]), 1.5,
    ...                               0, how)]
    [('send', 1.0, 0, 1), ('merge', 1.5, 0, 1), ('train', 1.5, -1, 1)]
    """
    order, lag, start, node_order, link = timing
    n = len(durations)
    offsets = None if start is None else per_client(start, n, "offsets")
    if link is None:
        for m in messages(topology, durations, end_time, pair_seed, timing=order,
                          offsets=offsets, node_order=node_order,
                          delay=per_client(0.0 if lag is None else lag, n, "delay")):
            yield m.kind, m.time, m.sender, m.receiver, (m.sender, m.number)
        return
    clock = SacsClock.of(topology, durations, offsets, pair_seed, link)
    clock.until(math.floor(end_time * 1e6))
    ops = clock.schedule()
    for t, kind, c, peer, slot in zip(ops.time.tolist(), ops.kind.tolist(),
                                      ops.client.tolist(), ops.peer.tolist(),
                                      ops.slot.tolist()):
        yield ("send", "merge", "train", "drop")[kind], t / 1e6, *(
            (c, peer) if kind == SEND else (peer, c)), slot


class Transit(NamedTuple):
    """A window's sends and receives in order, with their layers (:func:`transit`).

    Attributes
    ----------
    receive : ndarray of bool
        ``(e,)``: a receive (else a send).
    sender, receiver, number : ndarray of int64
        ``(e,)``: the message's clients and its number among the sender's.
    slot : ndarray of int64
        ``(e,)``: where the message waits, ``sender * slots + number % slots``.
    layer : ndarray of int64
        ``(e,)``: its layer (``>= layers``: held to the next window).
    late : ndarray of bool
        ``(e,)``: due at or before the window's start (deferred from an earlier one).
    held : int
        Events held: a layer too deep, a send beyond a client's first of the window or with
        its slots full.
    end : float
        The window's end.
    """

    receive: np.ndarray
    sender: np.ndarray
    receiver: np.ndarray
    number: np.ndarray
    slot: np.ndarray
    layer: np.ndarray
    late: np.ndarray
    held: int
    end: float


def _deliveries(win: Windows, k: np.ndarray, done: np.ndarray, sending: np.ndarray,
                lag: np.ndarray, end: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The messages in flight (or sent this window) that arrive by ``end``: senders,
    numbers, arrival and send times."""
    rows, nums = [], []
    upto = k + sending  # messages sent once this window's sends ran
    for i in np.flatnonzero(upto > done).tolist():
        for q in range(int(done[i]), int(upto[i])):
            rows.append(i)
            nums.append(q)
    s = np.asarray(rows, dtype=np.int64)
    m = np.asarray(nums, dtype=np.int64)
    sent = Windows(win.durations[s], win.width,
                   None if win.offsets is None else win.offsets[s]).finish(m)
    arrive = sent + lag[s]
    keep = arrive <= end
    return s[keep], m[keep], np.stack([arrive[keep], sent[keep]])


def _layers(receive: np.ndarray, sender: np.ndarray, receiver: np.ndarray,
            number: np.ndarray) -> np.ndarray:
    """Each ordered event's layer (the module docstring's dependencies)."""
    wrote: dict[int, int] = {}
    read: dict[int, int] = {}
    sent_at: dict[tuple[int, int], int] = {}
    last: dict[int, int] = {}
    out = np.empty(len(receive), dtype=np.int64)
    for e, (r, i, j, k) in enumerate(zip(receive.tolist(), sender.tolist(),
                                         receiver.tolist(), number.tolist())):
        if not r:
            out[e] = sent_at[(i, k)] = wrote.get(i, -1) + 1
            read[i] = max(read.get(i, 0), int(out[e]))
            continue
        layer = max(sent_at.get((i, k), 0), wrote.get(j, -1) + 1, read.get(j, 0),
                    last.get(i, 0))
        out[e] = wrote[j] = last[i] = layer
    return out


def transit(win: Windows, steps: Tensor | np.ndarray, delivered: Tensor | np.ndarray, t: int,
            topology: Topology, pair_seed: int, *, delay: np.ndarray, timing: str,
            slots: int, layers: int, node_order: NodeOrder | None = None) -> Transit:
    """Window ``t``'s sends and receives in the order of ``timing``, with their layers:
    the batched plan of :func:`messages` (``steps``, ``delivered``: ``[n]``, each client's
    messages sent and delivered so far; ``delay``: ``(n,)``; ``layers``: the window's
    depth; ``node_order``: the order of a tick's senders, :class:`NodeOrder`, else their
    ids).

    Examples
    --------
    Two clients sending every unit, messages taking 1.5: in window 1 (times (1, 2]) both
    send and client 0's first message (sent at 1.0) is not there yet.

    >>> import numpy as np
    >>> from topofl.engine.event_time import Windows
    >>> from topofl.engine.transit import transit
    >>> plan = transit(Windows.of(1.0, 1.0, 2), np.array([1, 1]), np.array([0, 0]), 1,
    ...                tf.topologies.complete(2), 0, delay=np.array([1.5, 1.5]),
    ...                timing="continuous", slots=3, layers=4)
    >>> plan.receive.tolist(), plan.sender.tolist(), plan.held
    ([False, False], [0, 1], 0)
    """
    k, done = _counts(steps).astype(np.int64), _counts(delivered).astype(np.int64)
    due = win.due(k, t, topology, pair_seed)
    full = (k - done + 1 > slots)[due.clients]
    s_cli, s_mate = due.clients[~full], due.partners[~full]
    sending = np.zeros(len(k), dtype=np.int64)
    sending[s_cli] = 1
    r_cli, r_num, times = _deliveries(win, k, done, sending, delay, due.end)
    r_mate = partners(topology, pair_seed, r_cli, r_num)
    s_time = win.finish(k)[s_cli]
    receive = np.concatenate([np.zeros(len(s_cli), bool), np.ones(len(r_cli), bool)])
    sender = np.concatenate([s_cli, r_cli])
    receiver = np.concatenate([s_mate, r_mate])
    number = np.concatenate([k[s_cli], r_num])
    at = np.concatenate([s_time, times[0]])
    sent = np.concatenate([s_time, times[1]])
    phase = receive.astype(np.int64)
    if timing == "tick":
        place = sender if node_order is None else node_order.ranks(sender, sent, len(k))
        keys: tuple[np.ndarray, ...] = (place, sent, phase, at)
    else:
        keys = (phase, sender, at)
    order = np.lexsort(keys)
    receive, sender, receiver = receive[order], sender[order], receiver[order]
    number, at = number[order], at[order]
    layer = _layers(receive, sender, receiver, number)
    held = int(full.sum()) + win.surplus(k, t) + int((layer >= layers).sum())
    return Transit(receive, sender, receiver, number, sender * slots + number % slots, layer,
                   at <= due.start, held, due.end)
