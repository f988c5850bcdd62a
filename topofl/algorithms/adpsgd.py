r"""AD-PSGD in event time: asynchronous pairwise gossip, run as windows of the round loop.

Event time
----------
Client ``i`` computes one local update (``local_steps`` SGD steps) in ``durations[i]`` units of
virtual time, back to back: its ``k``-th computation (``k = 1, 2, ...``) finishes at
$T_i^k = k \, d_i$. At a finish (an *event*) it writes: it picks a random neighbour ``j`` of
the graph (an in-neighbour of ``W``'s row ``i``, drawn by :func:`partners`, a pure function of
``(pair_seed, i, k)``), averages the two models, $x_i, x_j \leftarrow (x_i + x_j)/2$, adds its
update computed at the model it *read* when it started, $x_i \leftarrow x_i + \Delta_i$
($\Delta_i = -\gamma \nabla f_i(\hat x_i)$ for one step), and reads its model again
($\hat x_i \leftarrow x_i$) to start its next computation (Lian et al. 2018, Algorithm 1).
Events run in the order of $(T, i)$.

Round ``t`` of the run is the window $(t\,\delta, (t+1)\,\delta]$ of virtual time
(``window`` $= \delta$). A client is *active* in a window when its next finish time is at most
the window's end. The local phase takes every client's gradient at its read model (one batched
step; the inactive clients' updates are masked); ``communicate`` then applies the window's
events in the order of $(T, i)$, batched into *layers*: an event goes to the layer after the
last one that touched either of its two nodes, and each layer (events on disjoint pairs) is one
batched index operation. Events on disjoint nodes commute, so this is exactly the event order.

What the window costs
---------------------
A client takes at most one event per window (its gradient is taken once, in the local phase).
When $d_i < \delta$ its next finish can fall in the same window: that event is *deferred* to
the next window (still ordered by its true time) and the client runs at most once per window.
So with $\delta \le \min_i d_i$ no event is deferred and the windowed run **equals** the
event-by-event run (:func:`simulate_events`; the tests check it in float64); a larger window
caps the fast clients' rate at $1/\delta$ and counts each capped event in the records'
``async_deferred``. A smaller window costs more rounds (each round is one batched gradient of
every client, most of them masked) and fewer layers per round. Every window records
``event_time`` (its end), ``async_events``, ``async_layers``, ``async_deferred``, and over the
window's events ``staleness_mean`` / ``staleness_max`` (how many times another client's event
changed the writer's model between its read and its write) and the clients' step counts
(``async_steps_min`` / ``_mean`` / ``_max``).

Everything the schedule needs is in the state (each client's number of events, its read model,
its update, its staleness counter) or a pure function of ``(pair_seed, client, event)``, so a
resumed run equals an uninterrupted one.

References
----------
.. [1] X. Lian, W. Zhang, C. Zhang, J. Liu, "Asynchronous Decentralized Parallel Stochastic
   Gradient Descent", ICML 2018.
"""

from __future__ import annotations

import functools
import heapq
import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

from topofl._utils.rng import as_generator
from topofl._utils.validation import check_int
from topofl.algorithms._common import check_decay, check_lr
from topofl.algorithms.base import register_algorithm
from topofl.engine.ledger import Arcs, Flow, dtype_bits
from topofl.engine.protocol import (
    Algorithm,
    LocalUpdate,
    Phase,
    Round,
    Sent,
    Services,
    State,
)
from topofl.graph import Topology

__all__ = ["adpsgd", "ADPSGDState", "partners", "heavy_tailed_durations", "simulate_events",
           "check_durations", "check_window", "idle_reason"]


class ADPSGDState(NamedTuple):
    """What AD-PSGD keeps beside the models ``state.x`` (checkpointed with them).

    Attributes
    ----------
    work : Tensor
        ``[n, P]``: where each client's local steps are (its read model, then the steps of its
        computation).
    delta : Tensor
        ``[n, P]``: the update of each client's computation (0 until its window).
    steps : Tensor
        ``[n]`` int64: each client's number of events (finished computations).
    touched : Tensor
        ``[n]`` int64: how many other clients' events changed its model since its read.
    """

    work: Tensor
    delta: Tensor
    steps: Tensor
    touched: Tensor


def check_window(window: Any) -> float:
    """``window`` as a positive finite float, else a one-line ``ValueError``.

    Examples
    --------
    >>> from topofl.algorithms.adpsgd import check_window
    >>> check_window(0.0)
    Traceback (most recent call last):
    ...
    ValueError: window must be a positive finite time, got 0.0
    """
    if isinstance(window, bool) or not isinstance(window, numbers.Real):
        raise TypeError(f"window must be a positive finite time (a real number), got "
                        f"{type(window).__name__} {window!r}")
    w = float(window)
    if not (math.isfinite(w) and w > 0):
        raise ValueError(f"window must be a positive finite time, got {window!r}")
    return w


def check_durations(durations: Any) -> float | tuple[float, ...]:
    """``durations`` (one time for every client, or one per client) checked positive and
    finite, else a one-line ``ValueError``.

    Examples
    --------
    >>> from topofl.algorithms.adpsgd import check_durations
    >>> check_durations([1, 2.5])
    (1.0, 2.5)
    >>> check_durations([1.0, -2.0])
    Traceback (most recent call last):
    ...
    ValueError: durations must be positive finite times, got -2.0 for client 1
    """
    if isinstance(durations, numbers.Real) and not isinstance(durations, bool):
        d = float(durations)
        if not (math.isfinite(d) and d > 0):
            raise ValueError(f"durations must be a positive finite time, got {durations!r}")
        return d
    if isinstance(durations, (str, bytes)) or not isinstance(durations, (Sequence, np.ndarray)):
        raise TypeError(f"durations must be a positive time or a sequence of them (one per "
                        f"client), got {type(durations).__name__} {durations!r}"[:300])
    out = []
    for i, v in enumerate(durations):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"durations must hold real numbers, got {type(v).__name__} "
                            f"{v!r} for client {i}")
        if not (math.isfinite(float(v)) and float(v) > 0):
            raise ValueError(f"durations must be positive finite times, got {float(v)!r} "
                             f"for client {i}")
        out.append(float(v))
    if not out:
        raise ValueError("durations must hold one time per client, got an empty sequence")
    return tuple(out)


def idle_reason(durations: float | tuple[float, ...], window: float, rounds: int
                ) -> str | None:
    r"""Why an event-time run of ``rounds`` windows holds no event at all, or ``None``.

    Round ``t`` is the window $(t\,\delta, (t+1)\,\delta]$ and client ``i``'s first event
    is at $d_i$: the run holds an event iff $\min_i d_i \le$ ``rounds * window`` (the same
    arithmetic as the windows' own test). The reason names the settings and the bounds
    that would give the run an event. The ``Algorithm.idle`` of :func:`adpsgd` and
    :func:`~topofl.algorithms.gossip_learning.gossip_learning`.

    Examples
    --------
    >>> from topofl.algorithms.adpsgd import idle_reason
    >>> idle_reason([2.0, 3.0], 1.0, 2) is None
    True
    >>> idle_reason(1e300, 1.0, 3)  # doctest: +ELLIPSIS
    "no client's first event falls within the run's virtual time: the fastest client's ..."
    """
    first = durations if isinstance(durations, float) else min(durations)
    end = rounds * window  # the end of the last window, as the windows compute it
    if rounds < 1 or first <= end:
        return None
    need = math.ceil(first / window)
    while need * window < first:  # the smallest count of windows that reaches first
        need += 1
    wide = first / rounds
    while rounds * wide < first:
        wide = math.nextafter(wide, math.inf)
    count = str(need) if need < 10**15 else f"{float(need):.3g}"
    return (f"no client's first event falls within the run's virtual time: the fastest "
            f"client's first event is at min(durations) = {first!r}, after the end of the "
            f"last window, rounds * window = {rounds} * {window!r} = {end!r}; the run would "
            f"train no client and send no message. Set durations <= {end!r}, window >= "
            f"{wide!r} or rounds >= {count}")


def heavy_tailed_durations(n: int, *, seed: Any, alpha: float = 1.5,
                           scale: float = 1.0) -> tuple[float, ...]:
    r"""``n`` compute durations drawn from a Pareto law: $d_i = s\,(1 + P_i)$ with
    $P_i \sim$ Lomax($\alpha$) (so $d_i \ge s$, with a tail of index $\alpha$: stragglers).

    Examples
    --------
    >>> from topofl.algorithms.adpsgd import heavy_tailed_durations
    >>> d = heavy_tailed_durations(4, seed=0)
    >>> len(d), min(d) >= 1.0, d == heavy_tailed_durations(4, seed=0)
    (4, True, True)
    """
    n = check_int(n, "n", low=1)
    if not (isinstance(alpha, numbers.Real) and math.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha must be a positive finite number, got {alpha!r}")
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(f"scale must be one positive time (the fastest duration), got "
                        f"{type(scale).__name__} {scale!r}"[:300])
    s = float(scale)
    check_durations(s)  # positive and finite
    draws = as_generator(seed).pareto(float(alpha), size=n)
    return tuple(float(s * (1.0 + p)) for p in draws)


# ------------------------------------------------------------------------- partner draws

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
    >>> from topofl.algorithms.adpsgd import partners
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


def _layers(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Each event's layer: one more than the last layer that touched either of its nodes
    (events in order; the events of a layer touch disjoint nodes)."""
    last: dict[int, int] = {}
    out = np.empty(len(first), dtype=np.int64)
    for e, (i, j) in enumerate(zip(first.tolist(), second.tolist())):
        layer = max(last.get(i, -1), last.get(j, -1)) + 1
        out[e] = last[i] = last[j] = layer
    return out


# ------------------------------------------------------------------------------- pieces


def _durations_of(durations: float | tuple[float, ...], n: int) -> np.ndarray:
    if isinstance(durations, float):
        return np.full(n, durations)
    if len(durations) != n:
        raise ValueError(f"durations must hold one time per client: {n} clients, got "
                         f"{len(durations)} times")
    return np.asarray(durations, dtype=np.float64)


def _finish_times(steps: Tensor, d: np.ndarray) -> np.ndarray:
    """``(n,)``: each client's next finish time ``(k + 1) d_i`` (``k`` events done)."""
    out: np.ndarray = (steps.detach().cpu().numpy().astype(np.float64) + 1.0) * d
    return out


class _AsyncSGD(LocalUpdate):
    """Local SGD on each active client's read model; the inactive clients do not move."""

    def __init__(self, durations: float | tuple[float, ...], window: float) -> None:
        self.durations, self.window = durations, window

    def init_(self, state: State, env: Services) -> None:
        n = int(env.n)
        if len(env.clients.ids) != n:
            raise ValueError("adpsgd does not run distributed: its pairwise events need every "
                             "client in one process (run it without torchrun)")
        _durations_of(self.durations, n)  # one per client
        x = state.x
        state.own = ADPSGDState(
            work=x.clone(), delta=torch.zeros_like(x),
            steps=torch.zeros(n, dtype=torch.int64, device=x.device),
            touched=torch.zeros(n, dtype=torch.int64, device=x.device))

    def point(self, state: State, phase: Phase, env: Services) -> Tensor:
        """The read models and the steps taken from them."""
        return state.own_as(ADPSGDState).work

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        """``work -= lr g`` and ``delta -= lr g`` on the window's active clients."""
        own = state.own_as(ADPSGDState)
        d = _durations_of(self.durations, int(env.n))
        active = _finish_times(own.steps, d) <= (rnd.t + 1) * self.window
        rate = lr * torch.as_tensor(active, device=lr.device, dtype=lr.dtype)
        cols = env.layout.cols(phase.part)
        step = rate.unsqueeze(1) * grads[:, cols]
        own.work[:, cols] -= step
        own.delta[:, cols] -= step


def _communicate(durations: float | tuple[float, ...], window: float,
                 pair_seed: int) -> Callable[[State, Round, Services], Sent]:
    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        if rnd.topology is None:
            raise ValueError("adpsgd pairs neighbours of a graph: pass a topology")
        own = state.own_as(ADPSGDState)
        n = int(env.n)
        d = _durations_of(durations, n)
        steps = own.steps.detach().cpu().numpy()
        finish = (steps.astype(np.float64) + 1.0) * d
        start, end = rnd.t * window, (rnd.t + 1) * window
        active = np.flatnonzero(finish <= end)
        order = active[np.lexsort((active, finish[active]))]
        mates = partners(rnd.topology, pair_seed, order, steps[order])
        layer = _layers(order, mates)
        x, dev = state.x, state.x.device
        stale = np.zeros(len(order), dtype=np.int64)
        for L in range(int(layer.max()) + 1 if len(layer) else 0):
            e = np.flatnonzero(layer == L)
            i_np, j_np = order[e], mates[e]
            i = torch.as_tensor(i_np, device=dev)
            j = torch.as_tensor(j_np, device=dev)
            avg = (x[i] + x[j]) / 2
            x[j] = avg
            x[i] = avg + own.delta[i]
            stale[e] = own.touched[i].cpu().numpy()
            own.touched[i] = 0
            other = torch.as_tensor(j_np[j_np != i_np], device=dev)
            own.touched[other] += 1
            own.work[i] = x[i]
            own.delta[i] = 0
        if len(order):
            own.steps[torch.as_tensor(order, device=dev)] += 1
        real = mates != order
        s, r = np.concatenate([order[real], mates[real]]), np.concatenate([mates[real],
                                                                            order[real]])
        now = own.steps.detach().cpu().numpy()
        records: dict[str, Any] = {
            "event_time": float(end), "async_events": int(len(order)),
            "async_layers": int(layer.max()) + 1 if len(layer) else 0,
            "async_deferred": int((finish[order] <= start).sum()),
            "async_steps_min": int(now.min()), "async_steps_mean": float(now.mean()),
            "async_steps_max": int(now.max())}
        if len(order):
            records.update(staleness_mean=float(stale.mean()), staleness_max=int(stale.max()))
        flow = Flow("model", Arcs.from_pairs(n, s, r), int(x.shape[1]), dtype_bits(x.dtype))
        took = np.zeros(n, dtype=bool)
        took[order] = True  # the clients whose computation finished in the window
        return Sent.of(flow, records=records, active=took)

    return communicate


@register_algorithm("adpsgd")
def adpsgd(
    lr: float = 0.1,
    *,
    durations: float | Sequence[float] = 1.0,
    window: float = 1.0,
    local_steps: int = 1,
    pair_seed: int = 0,
    decay: float = 1.0,
) -> Algorithm:
    r"""AD-PSGD (Lian et al. 2018) in event time, one window of virtual time per round.

    Parameters
    ----------
    lr : float, default 0.1
        Learning rate $\gamma$ (``lr * decay**t`` in window ``t``).
    durations : float or sequence of float, default 1
        Each client's virtual time per computation (one for every client, or one per
        client, e.g. :func:`heavy_tailed_durations`); positive and finite.
    window : float, default 1
        The virtual time $\delta$ of one round (positive, finite). With
        ``window <= min(durations)`` the run equals the event-by-event order
        (:func:`simulate_events`); a larger window defers a fast client's second event
        of a window to the next one (see the module docstring).
    local_steps : int, default 1
        SGD steps of one computation, from the read model (1: AD-PSGD proper).
    pair_seed : int, default 0
        Seed of the partner draws (:func:`partners`).
    decay : float, default 1

    Returns
    -------
    Algorithm
        Runs in one process, alone (no stack), without lost messages or clients offline
        (its clients' own durations make them late).

    Notes
    -----
    Event time is the records' ``event_time`` (each window's end). A run under a
    ``[network]`` clock is refused (``Algorithm.clocked``): the clock would price every window
    as a synchronous round, which is not event time.

    Examples
    --------
    Clients minimising ``(x - i)^2 / 2`` on a ring, client ``i`` twice as slow as client
    ``i - 1``. The fast clients step more often, so the models settle near the optimum
    weighted by the clients' rates, $\sum_i (i / d_i) / \sum_i (1 / d_i) = 0.733$, not the
    plain mean 1.5 (the bias of asynchrony under heterogeneous speeds); the windowed run
    equals the event-by-event one, as no window holds two events of a client.

    >>> import torch
    >>> from topofl.algorithms.adpsgd import simulate_events
    >>> c = torch.arange(4.0, dtype=torch.float64).unsqueeze(1)
    >>> algo = tf.algorithms.adpsgd(0.05, durations=[1.0, 2.0, 4.0, 8.0], window=1.0)
    >>> trace = tf.engine.run_rounds(algo, torch.zeros_like(c), tf.topologies.ring(4),
    ...                              lambda z, phase, rnd: z - c, rounds=400)
    >>> [round(v, 1) for v in trace.evaluated().flatten().tolist()]
    [0.7, 0.7, 0.8, 0.8]
    >>> ref = simulate_events(torch.zeros_like(c), tf.topologies.ring(4),
    ...                       lambda z, i: z - c[i], [1.0, 2.0, 4.0, 8.0], lr=0.05,
    ...                       end_time=400.0)
    >>> bool(torch.equal(ref.x, trace.state.x))
    True
    """
    rate = check_lr(lr)
    d = check_durations(durations)
    delta = check_window(window)
    steps = check_int(local_steps, "local_steps", low=1)
    seed = check_int(pair_seed, "pair_seed", low=0)
    dec = check_decay(decay)
    local = _AsyncSGD(d, delta)

    def init(x0: Tensor, env: Services) -> State:
        state = State(x=x0)
        local.init_(state, env)
        return state

    return Algorithm(
        name="adpsgd",
        hparams=dict(lr=rate, durations=d if isinstance(d, float) else list(d),
                     window=delta, local_steps=steps, pair_seed=seed, decay=dec),
        phases=(Phase("all", steps, None, rate),),
        init=init,
        local=local,
        communicate=_communicate(d, delta, seed),
        requires=None,
        decay=dec,
        absent="refuse",
        lost=None,
        stacks="adpsgd's events pair clients of one run in an order of their own: it runs alone",
        clocked=("its clients keep their own event time (durations and window), which the "
                 "clock would price as synchronous rounds: set durations instead and read the "
                 "records' event_time"),
        idle=functools.partial(idle_reason, d, delta),
    )


# ------------------------------------------------------------------- the event reference


class Events(NamedTuple):
    """What :func:`simulate_events` returns.

    Attributes
    ----------
    x : Tensor
        ``[n, P]``: the models at ``end_time``.
    steps : list of int
        Each client's number of events.
    log : list of tuple
        ``(time, client, partner, staleness)`` of every event, in order.
    """

    x: Tensor
    steps: list[int]
    log: list[tuple[float, int, int, int]]


def simulate_events(x0: Tensor, topology: Topology, grad: Callable[[Tensor, int], Tensor],
                    durations: Sequence[float], *, lr: float, end_time: float,
                    pair_seed: int = 0, local_steps: int = 1) -> Events:
    """The slow, obvious event-by-event AD-PSGD: a heap of finish times, one event at a time.

    Client ``i`` finishes its ``k``-th computation at ``k * durations[i]``; the events with a
    time ``<= end_time`` run in the order of ``(time, client)``: the client picks its partner
    (:func:`partners` at its event number), both average, it adds the update of its
    ``local_steps`` SGD steps (``grad(z, i)``: its gradient at ``z`` ``[P]``) taken from the
    model it read at its previous event, and reads its model again.

    The reference the windowed :func:`adpsgd` is tested against.
    """
    n = x0.shape[0]
    d = _durations_of(tuple(float(v) for v in durations), n)
    x = x0.clone()
    read = x0.clone()
    steps, touched = [0] * n, [0] * n
    log: list[tuple[float, int, int, int]] = []
    heap = [(float(d[i]), i) for i in range(n)]
    heapq.heapify(heap)
    while heap and heap[0][0] <= end_time:
        t, i = heapq.heappop(heap)
        j = int(partners(topology, pair_seed, [i], [steps[i]])[0])
        z, delta = read[i].clone(), torch.zeros_like(read[i])
        for _ in range(local_steps):
            g = grad(z, i)
            z = z - lr * g
            delta = delta - lr * g
        avg = (x[i] + x[j]) / 2
        x[j] = avg
        x[i] = avg + delta
        log.append((t, i, j, touched[i]))
        touched[i] = 0
        if j != i:
            touched[j] += 1
        read[i] = x[i]
        steps[i] += 1
        heapq.heappush(heap, ((steps[i] + 1.0) * d[i], i))
    return Events(x, steps, log)
