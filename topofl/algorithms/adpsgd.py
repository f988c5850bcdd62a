r"""AD-PSGD in event time: asynchronous pairwise gossip, run as windows of the round loop.

Event time
----------
Client ``i`` computes one local update (``local_steps`` SGD steps) in ``durations[i]`` units of
virtual time, back to back: its ``k``-th computation (``k = 1, 2, ...``) finishes at
$T_i^k = k \, d_i$. At a finish (an *event*) it writes: it picks a random neighbour ``j`` of
the graph (an in-neighbour of ``W``'s row ``i``, drawn by
:func:`~topofl.engine.event_time.partners`, a pure function of ``(pair_seed, i, k)``),
averages the two models, $x_i, x_j \leftarrow (x_i + x_j)/2$, adds its update computed
at the model it *read* when it started, $x_i \leftarrow x_i + \Delta_i$
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
The clocks, windows, partner draws and layers are the engine's
(:mod:`topofl.engine.event_time`); what an event does is this module's.

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

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import torch
from torch import Tensor

from topofl.algorithms._event import (
    ONE_STEP,
    UNIT_CLOCKS,
    EventClocks,
    EventClocksKeywords,
    EventSGD,
    EventSGDKeywords,
    event_hparams,
    event_params,
    recorded_times,
)
from topofl.algorithms.base import register_algorithm
from topofl.engine.event_time import (
    EventTime,
    Replay,
    one_process,
    pair_layers,
    replay,
    window_records,
    window_sent,
)
from topofl.engine.event_time import check_durations as check_durations
from topofl.engine.event_time import check_window as check_window
from topofl.engine.event_time import heavy_tailed_durations as heavy_tailed_durations
from topofl.engine.event_time import idle_reason as idle_reason
from topofl.engine.event_time import partners as partners
from topofl.engine.pieces import compose_init
from topofl.engine.protocol import Algorithm, LocalUpdate, Phase, Round, Sent, Services, State
from topofl.engine.transit import bipartite_split, check_times
from topofl.graph import Topology

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["adpsgd", "ADPSGDKeywords", "ADPSGDState", "EventSGD", "EventClocks",
           "simulate_events"]


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


class _AsyncSGD(LocalUpdate):
    """Local SGD on each active client's read model; the inactive clients do not move."""

    def __init__(self, clocks: EventTime) -> None:
        self.clocks = clocks

    def init_(self, state: State, env: Services) -> None:
        n = one_process(env, "adpsgd", "pairwise events")
        self.clocks.windows(n)  # one duration per client
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
        active = self.clocks.windows(int(env.n)).active(own.steps, rnd.t)
        rate = lr * torch.as_tensor(active, device=lr.device, dtype=lr.dtype)
        cols = env.layout.cols(phase.part)
        step = rate.unsqueeze(1) * grads[:, cols]
        own.work[:, cols] -= step
        own.delta[:, cols] -= step


def _communicate(clocks: EventTime, split: str | None
                 ) -> Callable[[State, Round, Services], Sent]:
    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        if rnd.topology is None:
            raise ValueError("adpsgd pairs neighbours of a graph: pass a topology")
        own = state.own_as(ADPSGDState)
        n = int(env.n)
        active = None if split is None else bipartite_split(rnd.topology)
        due = clocks.windows(n).due(own.steps, rnd.t, rnd.topology, clocks.pair_seed, active)
        order, mates = due.clients, due.partners
        layer = pair_layers(order, mates)
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
        records = window_records(due.end, layer, due.late, stale, own.steps)
        # the clients whose computation finished in the window trained
        return window_sent(n, x, order, mates, order, records, both_ways=True)

    return communicate


class ADPSGDKeywords(EventSGDKeywords, EventClocksKeywords, total=False):
    """AD-PSGD's flat keywords: the fields of its groups (documented at :func:`adpsgd`)."""


@register_algorithm("adpsgd")
def adpsgd(sgd: EventSGD | float = ONE_STEP, clocks: EventClocks = UNIT_CLOCKS, *,
           offsets: float | Sequence[float] | None = None, split: str | None = None,
           **keywords: Unpack[ADPSGDKeywords]) -> Algorithm:
    r"""AD-PSGD (Lian et al. 2018) in event time, one window of virtual time per round.

    Parameters
    ----------
    sgd : EventSGD or float, default EventSGD()
        The local SGD of a computation (``lr``, ``local_steps``, ``decay``, also given as
        flat keywords); a number is its ``lr`` (``adpsgd(0.05)``).
    clocks : EventClocks, default EventClocks()
        The clients' clocks (``durations``, ``window``, ``pair_seed``, also given as flat
        keywords).
    lr : float, default 0.1
        Learning rate $\gamma$ (``lr * decay**t`` in window ``t``).
    durations : float or sequence of float, default 1
        Each client's virtual time per computation (one for every client, or one per
        client, e.g. :func:`~topofl.engine.event_time.heavy_tailed_durations`); positive
        and finite.
    window : float, default 1
        The virtual time $\delta$ of one round (positive, finite). With
        ``window <= min(durations)`` the run equals the event-by-event order
        (:func:`simulate_events`); a larger window defers a fast client's second event
        of a window to the next one (see the module docstring).
    local_steps : int, default 1
        SGD steps of one computation, from the read model (1: AD-PSGD proper).
    pair_seed : int, default 0
        Seed of the partner draws (:func:`~topofl.engine.event_time.partners`).
    decay : float, default 1
    offsets : float or sequence of float, optional
        Each client's clock start $o_i$ (non-negative): its ``k``-th computation finishes
        at $o_i + k\,d_i$. ``None``: 0.
    split : {"bipartite"}, optional
        Lian et al.'s deployment (Section 4 of the paper): the graph's two sides are *active*
        and *passive* clients (:func:`~topofl.engine.transit.bipartite_split`, the side of
        each component's smallest node active); only an active client's event averages, with
        a passive neighbour, and a passive client's event applies its update alone (it is
        averaged when an active neighbour picks it). No two active clients ever wait on each
        other, which is how the paper avoids deadlock. A graph that is not bipartite is
        refused. ``None``: every client initiates (Algorithm 1).

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

    The groups, or their fields as flat keywords, make the same algorithm:

    >>> from topofl.algorithms.adpsgd import EventClocks, EventSGD
    >>> grouped = tf.algorithms.adpsgd(EventSGD(lr=0.05, local_steps=2), EventClocks(window=0.5))
    >>> grouped.hparams == tf.algorithms.adpsgd(0.05, local_steps=2, window=0.5).hparams
    True
    """
    step, clock = event_params("adpsgd", sgd, clocks, keywords)
    start = check_times(offsets, "offsets")
    if split is not None and not isinstance(split, str):
        raise TypeError(f"split must be None or 'bipartite', got {type(split).__name__}")
    if split not in (None, "bipartite"):
        raise ValueError(f"split must be None or 'bipartite', got {split!r}"[:300])
    times = clock.clocks()._replace(offsets=start)
    local = _AsyncSGD(times)
    hparams = event_hparams(step, clock)
    if start is not None:  # recorded only when set: a default run's header as before
        hparams["offsets"] = recorded_times(start)
    if split is not None:
        hparams["split"] = split
    return Algorithm(
        name="adpsgd",
        hparams=hparams,
        phases=(Phase("all", step.local_steps, None, step.lr),),
        init=compose_init(local),
        local=local,
        communicate=_communicate(times, split),
        decay=step.decay,
        **times.fields("adpsgd's events pair clients of one run in an order of their own: it "
                       "runs alone"),
    )


# ------------------------------------------------------------------- the event reference


#: What :func:`simulate_events` returns: :class:`~topofl.engine.event_time.Replay` (the models
#: at ``end_time``, each client's number of events, and ``(time, client, partner,
#: staleness)`` of every event, in order).
Events = Replay


def simulate_events(x0: Tensor, topology: Topology, grad: Callable[[Tensor, int], Tensor],
                    durations: Sequence[float], *, lr: float, end_time: float,
                    pair_seed: int = 0, local_steps: int = 1,
                    offsets: Sequence[float] | None = None, split: str | None = None
                    ) -> Events:
    """The slow, obvious event-by-event AD-PSGD: a heap of finish times, one event at a time.

    Client ``i`` finishes its ``k``-th computation at ``k * durations[i]``; the events with a
    time ``<= end_time`` run in the order of ``(time, client)``: the client picks its partner
    (:func:`~topofl.engine.event_time.partners` at its event number, in the
    order of :func:`~topofl.engine.event_time.events`), both average, it adds the update of its
    ``local_steps`` SGD steps (``grad(z, i)``: its gradient at ``z`` ``[P]``) taken from the
    model it read at its previous event, and reads its model again.

    ``offsets`` start the clients' clocks; with ``split="bipartite"`` only the active
    clients average (:func:`~topofl.engine.transit.bipartite_split`).

    The reference the windowed :func:`adpsgd` is tested against.
    """
    active = None if split is None else bipartite_split(topology)
    read = x0.clone()
    touched = [0] * x0.shape[0]

    def event(x: Tensor, t: float, i: int, j: int) -> int:
        z, delta = read[i].clone(), torch.zeros_like(read[i])
        for _ in range(local_steps):
            g = grad(z, i)
            z = z - lr * g
            delta = delta - lr * g
        avg = (x[i] + x[j]) / 2
        x[j] = avg
        x[i] = avg + delta
        stale, touched[i] = touched[i], 0
        if j != i:
            touched[j] += 1
        read[i] = x[i]
        return stale

    return replay(x0, topology, durations, end_time, event, pair_seed=pair_seed,
                  offsets=offsets, active=active)
