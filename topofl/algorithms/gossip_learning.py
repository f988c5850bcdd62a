r"""Gossip learning in event time: push a model to a random neighbour, merge, train.

The protocol
------------
Gossip learning (Ormándi, Hegedűs and Jelasity 2013; in the form of Hegedűs, Danner and
Jelasity 2019, 2021) runs two threads at every node ``k``, which holds a model $w_k$ and its
*age* $t_k$. The active thread waits $\Delta$, picks a random peer and sends it $(t_k, w_k)$,
with no reply; the handler of a received $(t_r, w_r)$ merges it into the node's own model,
$(t_k, w_k) \leftarrow \mathrm{merge}((t_k, w_k), (t_r, w_r))$, then trains the merged model
on the node's data, $(t_k, w_k) \leftarrow \mathrm{update}((t_k, w_k), D_k)$. (The 2013 paper
merges a received model with the one received before it, from a cache; the 2019/2021 form,
followed here, merges into the node's own model.)

Here client ``i`` sends in event time: its ``k``-th send (``k = 1, 2, ...``) happens at
$T_i^k = k \, d_i$ (``durations[i]``), to a uniformly drawn neighbour ``j`` of the graph
(:func:`~topofl.engine.event_time.partners`, a pure function of ``(pair_seed, i, k - 1)``; the
client itself when it has none). Delivery is instantaneous: ``j`` merges ``i``'s current model
into its own and takes ``local_steps`` SGD steps from the merged model, $w_j \leftarrow
\mathrm{merge} - \gamma \nabla f_j(\cdot)$ (one step: the gradient at the merged model), and its
age grows by ``local_steps``. The sender does not change. Events run in the order of $(T, i)$.

``merge="mean"`` (the default) averages, $w_j \leftarrow (w_j + w_i)/2$. ``merge="age"`` weights
by age, $a = t_i / (t_i + t_j)$, $w_j \leftarrow (1 - a) w_j + a w_i$, keeping $w_j$ when both
ages are 0; either way the merged age is $\max(t_i, t_j)$. The age-weighted rule is the
``merge`` of the mergeable models of the authors' simulator (Hegedűs's Gossip Learning
Framework, e.g. ``MergeableMultiLogReg``), whose ``update`` adds 1 to the age per training
example; here the age counts SGD steps (the same weights when every step takes one batch of
one size). That simulator also derives its step size from the age (Pegasos-style
$1/(\lambda t)$); here the step is the run's ``lr`` (with ``decay``).

Windows, layers and exactness
-----------------------------
Round ``t`` of the run is the window $(t\,\delta, (t+1)\,\delta]$ of virtual time (``window``
$= \delta$), as in :mod:`~topofl.algorithms.adpsgd` (the windows, partner draws and layers
are the engine's: :mod:`topofl.engine.event_time`). At the window's start (``round_start``)
each client's next send is *due* when its time is at most the window's end; a client sends at
most once a window. The due sends, in the order of $(T, i)$, are put in *layers*: a send
$i \to j$ reads $w_i$ after ``i``'s last receive and writes $w_j$ after ``j``'s last receive and
not before ``j``'s last send (a model sent and then received in one layer is read before it is
written). The local phase then runs ``layers`` layers of ``local_steps`` batched gradient steps
each: a layer merges all its receivers at once (from the models at the layer's start), then
takes their gradients (the other clients' are masked). A layer's events have distinct receivers
and no receiver of a layer sends later in it, so each layer is exactly its events in order.

A due send whose layer is ``layers`` or more is *held* to the next window (``async_held``), as
is every later send of the window that touches one of its nodes (the layer rule sees to it),
and so is every due send of a client after its first in one window (a client sends at most
once a window). **The windowed run equals the event-by-event run** (:func:`simulate_gossip`;
the tests check it in float64, to the last bit) **whenever no window holds a send**, i.e.
every record's ``async_held`` is 0. That is guaranteed when ``window <= min(durations)`` (no
client has two sends in one window) and ``layers`` is at least the number of sends a window
can hold (``layers = n`` always suffices: the ``e``-th send of a window gets a layer of at most
``e``). With fewer layers, a window whose sends chain (``i`` sends to ``j``, then ``j`` sends
or receives again) holds the rest, and the run then approximates the event-by-event one: a
held send runs in a later window, first there (its time is earlier), so it may come after a
receive of its sender that followed it in time; a client that falls behind sends once a
window (like AD-PSGD's deferral, which caps a fast client's rate at $1/\delta$). Each layer
costs ``local_steps`` batched gradients of every client, most of them masked. With data, a
receive's gradients use the batches of its window's local steps.

Every window records ``event_time`` (its end), ``async_events`` (sends run), ``async_layers``,
``async_deferred`` (sends run after their own window, as AD-PSGD counts them),
``async_held``, over the window's receives ``staleness_mean`` / ``staleness_max`` (how many
updates older the received model is than the receiver's, $\max(0, t_j - t_i)$ by age), and the
clients' send counts (``async_steps_min`` / ``_mean`` / ``_max``). Everything the schedule needs
is in the state (sends, receives, ages) or a pure function of ``(pair_seed, client, event)``, so
a resumed run equals an uninterrupted one.

References
----------
.. [1] R. Ormándi, I. Hegedűs, M. Jelasity, "Gossip learning with linear models on fully
   distributed data", Concurrency and Computation: Practice and Experience 25(4), 2013.
.. [2] I. Hegedűs, G. Danner, M. Jelasity, "Gossip Learning as a Decentralized Alternative to
   Federated Learning", DAIS 2019; "Decentralized learning works: An empirical comparison of
   gossip learning and federated learning", JPDC 148, 2021.
.. [3] M. Polato, gossipy (github.com/makgyver/gossipy), whose ticks ``timing="tick"``
   replays, its shuffled node order with ``node_order`` (``analysis/async_timing.md``).
.. [4] The sacs-epfl decentralized-learning-simulator, whose gossip (start shifts, bandwidth
   queueing, training time) ``timing={"offsets": ..., "bandwidth": ..., "model_bytes": ...,
   "train_time": ...}`` replays (:mod:`topofl.engine.bandwidth`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

from topofl._utils.validation import check_int
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
from topofl.engine.bandwidth import DROP, MERGE, SEND, TRAIN, Link, Plan, SacsClock
from topofl.engine.event_time import (
    EventTime,
    one_process,
    per_client,
    replay,
    window_records,
    window_sent,
)
from topofl.engine.event_time import push_layers as push_layers
from topofl.engine.pieces import compose_init
from topofl.engine.protocol import Algorithm, LocalUpdate, Phase, Round, Sent, Services, State
from topofl.engine.transit import NodeOrder, Timing, message_steps, read_timing, slots, transit
from topofl.graph import Topology

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["gossip_learning", "GossipLearningKeywords", "GossipLearningState",
           "GossipTransitState", "GossipBandwidthState", "EventSGD", "EventClocks",
           "simulate_gossip", "MERGES"]

#: the merge rules: plain average, or weighted by the models' ages
MERGES = ("mean", "age")


class GossipLearningState(NamedTuple):
    """What gossip learning keeps beside the models ``state.x`` (checkpointed with them).

    Attributes
    ----------
    steps : Tensor
        ``[n]`` int64: each client's number of sends (its events).
    updates : Tensor
        ``[n]`` int64: each client's number of receives (each merged, then trained).
    age : Tensor
        ``[n]`` int64: the age of each client's model (SGD steps, max-merged).
    """

    steps: Tensor
    updates: Tensor
    age: Tensor


def _merged(xj: Tensor, xi: Tensor, aj: Tensor, ai: Tensor, merge: str) -> Tensor:
    """Receiver models ``xj`` merged with the received ``xi`` (rows), ages ``aj``, ``ai``."""
    if merge == "mean":
        return (xj + xi) / 2
    total = (ai + aj).to(torch.float64)
    a = torch.where(total > 0, ai.to(torch.float64) / total.clamp_min(1), 0.0)
    a = a.to(xj.dtype).unsqueeze(-1)
    return (1 - a) * xj + a * xi


class _Window(NamedTuple):
    """One window's schedule (rebuilt from the state at every round start)."""

    senders: np.ndarray  # the due sends in order
    receivers: np.ndarray
    layer: np.ndarray  # >= layers: held
    late: np.ndarray  # bool: due before the window's start
    held: int
    end: float
    stale: np.ndarray


def _merge_into(x: Tensor, age: Tensor, j: Tensor, xi: Tensor, ai: Tensor,
                merge: str) -> np.ndarray:
    """Receivers ``j`` merge the received models ``xi`` of ages ``ai`` (in place, ages
    max-merged); the staleness of each receive, ``max(0, age_j - age_i)``."""
    aj = age[j]
    stale = (aj - ai).clamp_min(0).cpu().numpy()
    x[j] = _merged(x[j], xi, aj, ai, merge)
    age[j] = torch.maximum(ai, aj)
    return stale


class _Layers(LocalUpdate):
    """A window's layers of receives, each merged then trained ``steps`` times (the layer
    bookkeeping of :class:`_Gossip` and :class:`_Transit`)."""

    steps: int
    cursor: int

    def _receivers(self, layer: int) -> np.ndarray:
        """The clients that receive (then train) in ``layer``."""
        raise NotImplementedError

    def _layer(self, state: State, layer: int) -> None:
        """Run ``layer``'s merges."""
        raise NotImplementedError

    def point(self, state: State, phase: Phase, env: Services) -> Tensor:
        """The models (a layer's receivers hold their merged models)."""
        return state.x

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        """``x -= lr g`` on the current layer's receivers; a layer's last step ends it."""
        own: Any = state.own
        layer = self.cursor // self.steps
        rows = torch.as_tensor(self._receivers(layer), device=state.x.device)
        mask = torch.zeros(state.x.shape[0], dtype=lr.dtype, device=lr.device)
        mask[rows] = 1.0
        cols = env.layout.cols(phase.part)
        state.x[:, cols] -= (lr * mask).unsqueeze(1) * grads[:, cols]
        self.cursor += 1
        if self.cursor % self.steps == 0:
            own.age[rows] += self.steps
            own.updates[rows] += 1
            self._layer(state, layer + 1)


class _Gossip(_Layers):
    """The window's layers: merge a layer's receivers, then train them ``steps`` times."""

    def __init__(self, clocks: EventTime, steps: int, layers: int, merge: str) -> None:
        self.clocks, self.steps, self.layers, self.merge = clocks, steps, layers, merge
        self.win: _Window | None = None
        self.cursor = 0

    def init_(self, state: State, env: Services) -> None:
        n = one_process(env, "gossip_learning", "push events")
        self.clocks.windows(n)  # one duration per client
        dev = state.x.device
        state.own = GossipLearningState(*(torch.zeros(n, dtype=torch.int64, device=dev)
                                          for _ in range(3)))

    def start(self, state: State, rnd: Round, env: Services) -> None:
        """``round_start``: the window's due sends, their layers; layer 0's merges."""
        if rnd.topology is None:
            raise ValueError("gossip_learning sends to neighbours of a graph: pass a topology")
        own = state.own_as(GossipLearningState)
        windows = self.clocks.windows(int(env.n))
        due = windows.due(own.steps, rnd.t, rnd.topology, self.clocks.pair_seed)
        layer = push_layers(due.clients, due.partners)
        held = int((layer >= self.layers).sum()) + windows.surplus(own.steps, rnd.t)
        self.win = _Window(due.clients, due.partners, layer, due.late, held, float(due.end),
                           np.zeros(len(due.clients), dtype=np.int64))
        self.cursor = 0
        self._layer(state, 0)

    def _layer(self, state: State, layer: int) -> None:
        win = self.win
        assert win is not None
        e = np.flatnonzero(win.layer == layer)
        if not len(e):
            return
        own, x = state.own_as(GossipLearningState), state.x
        i = torch.as_tensor(win.senders[e], device=x.device)
        j = torch.as_tensor(win.receivers[e], device=x.device)
        win.stale[e] = _merge_into(x, own.age, j, x[i], own.age[i], self.merge)

    def _receivers(self, layer: int) -> np.ndarray:
        win = self.win
        assert win is not None
        return np.asarray(win.receivers[win.layer == layer])


def _communicate(local: _Gossip) -> Callable[[State, Round, Services], Sent]:
    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        win = local.win
        assert win is not None
        own = state.own_as(GossipLearningState)
        run = win.layer < local.layers
        s, r = win.senders[run], win.receivers[run]
        if len(s):
            own.steps[torch.as_tensor(s, device=state.x.device)] += 1
        records = window_records(win.end, win.layer[run], win.late[run], win.stale[run],
                                 own.steps, held=win.held)
        # the receivers: each merged and trained
        return window_sent(int(env.n), state.x, s, r, r, records)

    return communicate


class GossipTransitState(NamedTuple):
    """What gossip learning keeps with ``timing``, ``delay`` or ``offsets`` set: the fields of
    :class:`GossipLearningState`, each sender's messages delivered, and the messages in
    flight (a sender's ``slots`` rows, :func:`~topofl.engine.transit.slots`).

    Attributes
    ----------
    steps, updates, age : Tensor
        ``[n]`` int64, as in :class:`GossipLearningState`.
    delivered : Tensor
        ``[n]`` int64: each client's messages received by their receivers.
    inbox : Tensor
        ``[n * slots, P]``: the models in flight (copied at their send).
    inbox_age : Tensor
        ``[n * slots]`` int64: their ages.
    """

    steps: Tensor
    updates: Tensor
    age: Tensor
    delivered: Tensor
    inbox: Tensor
    inbox_age: Tensor


class _Transit(_Layers):
    """Gossip learning with sends and receives apart (:mod:`topofl.engine.transit`): a
    layer copies its sends into the inbox, merges its receives, then trains them."""

    def __init__(self, clocks: EventTime, steps: int, layers: int, merge: str, timing: str,
                 delay: float | tuple[float, ...] | None,
                 node_order: NodeOrder | None = None) -> None:
        self.clocks, self.steps, self.layers, self.merge = clocks, steps, layers, merge
        self.timing, self.delay = timing, 0.0 if delay is None else delay
        self.node_order = node_order
        self.plan: Any = None
        self.cursor = 0

    def _lag(self, n: int) -> np.ndarray:
        return per_client(self.delay, n, "delay")

    def init_(self, state: State, env: Services) -> None:
        n = one_process(env, "gossip_learning", "push events")
        win = self.clocks.windows(n)  # one duration (and offset) per client
        self.slots = slots(win.durations, self._lag(n))
        if self.node_order is not None:
            self.node_order.check(n)
        x = state.x
        zeros = [torch.zeros(n, dtype=torch.int64, device=x.device) for _ in range(4)]
        state.own = GossipTransitState(
            steps=zeros[0], updates=zeros[1], age=zeros[2], delivered=zeros[3],
            inbox=x.new_zeros(n * self.slots, x.shape[1]),
            inbox_age=torch.zeros(n * self.slots, dtype=torch.int64, device=x.device))

    def start(self, state: State, rnd: Round, env: Services) -> None:
        """``round_start``: the window's sends and receives, their layers; layer 0."""
        if rnd.topology is None:
            raise ValueError("gossip_learning sends to neighbours of a graph: pass a topology")
        own, n = state.own_as(GossipTransitState), int(env.n)
        self.plan = transit(self.clocks.windows(n), own.steps, own.delivered, rnd.t,
                            rnd.topology, self.clocks.pair_seed, delay=self._lag(n),
                            timing=self.timing, slots=self.slots, layers=self.layers,
                            node_order=self.node_order)
        self.stale = np.zeros(len(self.plan.layer), dtype=np.int64)
        self.cursor = 0
        self._layer(state, 0)

    def _layer(self, state: State, layer: int) -> None:
        """Copy the layer's sends into the inbox, then merge its receives."""
        plan, own, x = self.plan, state.own_as(GossipTransitState), state.x
        here = plan.layer == layer
        for receive in (False, True):
            e = np.flatnonzero(here & (plan.receive == receive))
            if not len(e):
                continue
            slot = torch.as_tensor(plan.slot[e], device=x.device)
            if not receive:
                i = torch.as_tensor(plan.sender[e], device=x.device)
                own.inbox[slot], own.inbox_age[slot] = x[i], own.age[i]
                continue
            j = torch.as_tensor(plan.receiver[e], device=x.device)
            self.stale[e] = _merge_into(x, own.age, j, own.inbox[slot], own.inbox_age[slot],
                                        self.merge)

    def _receivers(self, layer: int) -> np.ndarray:
        plan = self.plan
        return np.asarray(plan.receiver[(plan.layer == layer) & plan.receive])

    def communicate(self, state: State, rnd: Round, env: Services) -> Sent:
        """Count the sends and deliveries run; what the window sent."""
        plan, own, dev = self.plan, state.own_as(GossipTransitState), state.x.device
        run = plan.layer < self.layers
        sends, gets = run & ~plan.receive, run & plan.receive
        n = int(env.n)
        own.steps.add_(torch.as_tensor(np.bincount(plan.sender[sends], minlength=n),
                                       device=dev))
        own.delivered.add_(torch.as_tensor(np.bincount(plan.sender[gets], minlength=n),
                                           device=dev))
        records = _apart_records(plan.end, plan.layer[run], plan.late[run],
                                 ~plan.receive[run], self.stale[gets], own.steps, plan.held)
        return window_sent(n, state.x, plan.sender[sends], plan.receiver[sends],
                           plan.receiver[gets], records)


def _apart_records(end: float, layer: np.ndarray, late: np.ndarray, sends: np.ndarray,
                   stale: np.ndarray, steps: Tensor, held: int) -> dict[str, Any]:
    """A window's records, sends and receives apart: ``window_records`` over the ``sends``
    (a mask of the events run), the layers of all, the receives' ``stale`` and number."""
    records = window_records(end, layer[sends], late[sends],
                             np.zeros(int(sends.sum()), dtype=np.int64), steps, held=held)
    records["async_layers"] = int(layer.max()) + 1 if len(layer) else 0
    for key in ("staleness_mean", "staleness_max"):
        records.pop(key, None)
    if len(stale):
        records.update(staleness_mean=float(stale.mean()), staleness_max=int(stale.max()))
    records["async_delivered"] = len(stale)
    return records


class GossipBandwidthState(NamedTuple):
    """What gossip learning keeps on a bandwidth ``timing`` (:mod:`topofl.engine.bandwidth`):
    :class:`GossipTransitState`'s fields (``delivered``: merged), ``done`` (``[]`` int64:
    operations run), and ``n * slots`` message copies in ``inbox`` (queued, sent or kept)."""

    steps: Tensor
    updates: Tensor
    age: Tensor
    delivered: Tensor
    done: Tensor
    inbox: Tensor
    inbox_age: Tensor


class _Bandwidth(_Layers):
    """Gossip learning on the sacs-epfl schedule (:class:`~topofl.engine.bandwidth.SacsClock`):
    a layer copies its sends into their slots, merges its merges, then trains its trainers."""

    def __init__(self, clocks: EventTime, steps: int, layers: int, merge: str,
                 link: Link) -> None:
        self.clocks, self.steps, self.layers, self.merge = clocks, steps, layers, merge
        self.link, self.cursor = link, 0
        self.clock: SacsClock | None = None
        self.plan: Plan = Plan(*(np.zeros(0, np.int64),) * 6, 0, 0, 0, 0.0)

    def init_(self, state: State, env: Services) -> None:
        n = one_process(env, "gossip_learning", "push events")
        pool = n * self.link.copies(self.clocks.windows(n).durations)
        self.clock = None  # recomputed from time 0 (a resumed run too)
        x, dev = state.x, state.x.device
        z = [torch.zeros(m, dtype=torch.int64, device=dev) for m in (n, n, n, n, (), pool)]
        state.own = GossipBandwidthState(z[0], z[1], z[2], z[3], z[4],
                                         x.new_zeros(pool, x.shape[1]), z[5])

    def start(self, state: State, rnd: Round, env: Services) -> None:
        """``round_start``: the window's operations and their layers; layer 0."""
        if rnd.topology is None:
            raise ValueError("gossip_learning sends to neighbours of a graph: pass a topology")
        own, win = state.own_as(GossipBandwidthState), self.clocks.windows(int(env.n))
        if self.clock is None:
            self.clock = SacsClock.of(rnd.topology, win.durations, win.offsets,
                                      self.clocks.pair_seed, self.link)
        self.clock.check_graph(rnd.topology, rnd.t)
        self.plan = self.clock.window(int(own.done), rnd.t * win.width, win.end(rnd.t),
                                      self.layers, int(own.inbox_age.shape[0]))
        self.stale = np.zeros(self.plan.ran, dtype=np.int64)
        self.cursor = 0
        self._layer(state, 0)

    def _layer(self, state: State, layer: int) -> None:
        """Copy the layer's sends into their slots, then merge its merges."""
        plan, own, x = self.plan, state.own_as(GossipBandwidthState), state.x
        for kind in (SEND, MERGE):
            e = np.flatnonzero((plan.layer == layer) & (plan.kind == kind))
            if not len(e):
                continue
            slot = torch.as_tensor(plan.slot[e], device=x.device)
            c = torch.as_tensor(plan.client[e], device=x.device)
            if kind == SEND:
                own.inbox[slot], own.inbox_age[slot] = x[c], own.age[c]
            else:
                self.stale[e] = _merge_into(x, own.age, c, own.inbox[slot],
                                            own.inbox_age[slot], self.merge)

    def _receivers(self, layer: int) -> np.ndarray:
        plan = self.plan
        return np.asarray(plan.client[(plan.layer == layer) & (plan.kind == TRAIN)])

    def communicate(self, state: State, rnd: Round, env: Services) -> Sent:
        """Count the operations run; what the window sent."""
        plan, own, dev = self.plan, state.own_as(GossipBandwidthState), state.x.device
        sends, gets, n = plan.kind == SEND, plan.kind == MERGE, int(env.n)
        for have, who in ((own.steps, plan.client[sends]), (own.delivered, plan.peer[gets])):
            have.add_(torch.as_tensor(np.bincount(who, minlength=n), device=dev))
        own.done.add_(plan.ran)
        records = _apart_records(plan.end, plan.layer, plan.late, sends, self.stale[gets],
                                 own.steps, plan.held)
        records["async_replaced"] = int((plan.kind == DROP).sum())
        return window_sent(n, state.x, plan.client[sends], plan.peer[sends],
                           plan.client[plan.kind == TRAIN], records)


def _apart(hparams: dict[str, Any], times: EventTime, steps: int, depth: int, merge: str,
           how: Timing) -> _Transit | _Bandwidth:
    """Sends and receives apart: the header's ``timing`` (a key not set absent), the local."""
    order, lag, start, node_order, link = how
    hparams["timing"] = dict(order=order, delay=recorded_times(lag),
                             offsets=recorded_times(start))
    if node_order is not None:  # absent when not set: the header as before
        hparams["timing"]["node_order"] = node_order.recorded()
    times = times._replace(offsets=start)
    if link is None:
        return _Transit(times, steps, depth, merge, order, lag, node_order)
    hparams["timing"].update(link.recorded())
    return _Bandwidth(times, steps, depth, merge, link)


def _check_merge(merge: Any) -> None:
    if not isinstance(merge, str):
        raise TypeError(f"merge must be a str, one of {MERGES}, got {type(merge).__name__}")
    if merge not in MERGES:
        raise ValueError(f"merge must be one of {MERGES}, got {merge!r}")


class GossipLearningKeywords(EventSGDKeywords, EventClocksKeywords, total=False):
    """Gossip learning's flat keywords: the fields of its groups (documented at
    :func:`gossip_learning`)."""


@register_algorithm("gossip_learning")
def gossip_learning(sgd: EventSGD | float = ONE_STEP, clocks: EventClocks = UNIT_CLOCKS, *,
                    layers: int = 1, merge: str = "mean",
                    timing: str | Mapping[str, Any] = "continuous",
                    **keywords: Unpack[GossipLearningKeywords]) -> Algorithm:
    r"""Gossip learning (Ormándi et al. 2013; Hegedűs et al. 2019, 2021) in event time.

    Parameters
    ----------
    sgd : EventSGD or float, default EventSGD()
        The local SGD of a receive (``lr``, ``local_steps``, ``decay``; flat keywords too).
    clocks : EventClocks, default EventClocks()
        The clients' clocks (``durations``, ``window``, ``pair_seed``; flat keywords too).
    lr : float, default 0.1
        Learning rate $\gamma$ (``lr * decay**t`` in window ``t``).
    durations : float or sequence of float, default 1
        Each client's virtual time between two sends (one for all or one per client, e.g.
        :func:`~topofl.engine.event_time.heavy_tailed_durations`); positive and finite.
    window : float, default 1
        The virtual time $\delta$ of one round, a window (positive, finite).
    local_steps : int, default 1
        SGD steps a receiver takes from the merged model.
    layers : int, default 1
        Layers of receives a window runs (each ``local_steps`` batched gradients): with
        ``window <= min(durations)`` and ``layers >= n``, exactly :func:`simulate_gossip`;
        with fewer, ``async_held`` counts the sends held to the next window (module doc).
    merge : {"mean", "age"}, default "mean"
        How a receiver merges: the plain average, or weighted by the models' ages.
    pair_seed : int, default 0
        Seed of the partner draws (:func:`~topofl.engine.event_time.partners`).
    decay : float, default 1
    timing : str or mapping, default "continuous"
        The order of one instant's events, ``"continuous"`` (a receive right after its
        send) or ``"tick"`` (gossipy's: every send of an instant reads the models before the
        instant's receives), or a mapping (a TOML table) of ``order`` (one of them),
        ``delay`` (each sender's delivery time $\Delta_i$, one for all or one per client: a
        model sent at $T$ is merged at $T + \Delta_i$; 0 by default), ``offsets`` (each
        client's clock start $o_i$: its ``k``-th send at $o_i + k\,d_i$; 0 by default) and,
        with ``"tick"``, ``node_order`` (gossipy's order of one instant's senders: ids by
        default, a seed of one permutation per unit tick, or the permutations themselves:
        :class:`~topofl.engine.transit.NodeOrder`). See :mod:`topofl.engine.transit`. Or,
        for ``delay``, sacs-epfl's links and training time (seconds): ``bandwidth``,
        ``model_bytes``, ``train_time`` and ``slots`` (:mod:`topofl.engine.bandwidth`).

    Returns
    -------
    Algorithm
        In one process, alone (no stack), without lost messages, offline clients, Byzantine
        nodes or a ``[network]`` clock (its time is its own event time).

    Notes
    -----
    With a ``timing`` other than ``"continuous"``, sends and receives are events apart
    (:func:`~topofl.engine.transit.transit`): a window needs up to ``2 n`` layers to hold
    nothing (a send and a receive per client), the records add ``async_delivered``, and the
    run equals :func:`simulate_gossip` with the same settings whenever no window holds an
    event. These settings replay gossipy's simulator (order ``"tick"``, its constant
    ``delay`` in ticks, its nodes' time-outs as ``offsets``, its shuffles' orders as
    ``node_order``; ``window`` 1 per tick) and the sacs-epfl simulator's gossip (``offsets``
    its shifts, ``durations`` its period, ``bandwidth`` ...; records add ``async_replaced``);
    ``analysis/async_timing.md`` measures both, to the bit. Left at ``"continuous"``, the
    run, its records and its header are as before.

    Examples
    --------
    Five clients minimising ``(x - i)^2 / 2`` on the complete graph, clients 0 and 1 sending
    every unit of time, 2 and 3 every 2 units, 4 every 4, receivers merging by age
    (``merge="age"``). A client's gradient acts when it receives, and its model spreads when
    it sends: the fast clients' optima 0 and 1 pull the models to 1.5-1.8, under the plain
    mean 2 (the bias of asynchrony under heterogeneous speeds). With ``layers = n`` and
    ``window`` the fastest duration, the windowed run equals the event-by-event one to the last
    bit.

    >>> import torch
    >>> from topofl.algorithms.gossip_learning import simulate_gossip
    >>> c = torch.arange(5.0, dtype=torch.float64).unsqueeze(1)
    >>> speeds = [1.0, 1.0, 2.0, 2.0, 4.0]
    >>> algo = tf.algorithms.gossip_learning(0.05, durations=speeds, layers=5, merge="age")
    >>> graph = tf.topologies.complete(5)
    >>> trace = tf.engine.run_rounds(algo, torch.zeros_like(c), graph,
    ...                              lambda z, phase, rnd: z - c, rounds=200)
    >>> [round(v, 2) for v in trace.evaluated().flatten().tolist()]
    [1.52, 1.47, 1.62, 1.78, 1.75]
    >>> ref = simulate_gossip(torch.zeros_like(c), graph, lambda z, i: z - c[i], speeds,
    ...                       lr=0.05, end_time=200.0, merge="age")
    >>> bool(torch.equal(ref.x, trace.state.x))
    True

    The local SGD of a receive as a group (:class:`EventSGD`):

    >>> from topofl.algorithms.gossip_learning import EventSGD
    >>> tf.algorithms.gossip_learning(EventSGD(lr=0.05, local_steps=2)).hparams["local_steps"]
    2
    """
    step, clock = event_params("gossip_learning", sgd, clocks, keywords)
    depth = check_int(layers, "layers", low=1)
    _check_merge(merge)
    how = read_timing(timing)
    hparams = event_hparams(step, clock, layers=depth, merge=merge)
    local: _Gossip | _Transit | _Bandwidth
    if how == Timing("continuous"):  # as before, to the bit
        local = _Gossip(clock.clocks(), step.local_steps, depth, merge)
        talk = _communicate(local)
    else:
        local = _apart(hparams, clock.clocks(), step.local_steps, depth, merge, how)
        talk = local.communicate
    return Algorithm(
        name="gossip_learning",
        hparams=hparams,
        phases=(Phase("all", step.local_steps * depth, None, step.lr),),
        init=compose_init(local),
        local=local,
        communicate=talk,
        round_start=local.start,
        decay=step.decay,
        **local.clocks.fields("gossip_learning's sends reach clients of one run in an order of "
                              "their own: it runs alone"),
    )


# ------------------------------------------------------------------- the event reference


class Pushes(NamedTuple):
    """What :func:`simulate_gossip` returns: the fields of
    :class:`~topofl.engine.event_time.Replay` (the models at ``end_time``, each client's number
    of sends, and ``(time, sender, receiver, staleness)`` of every send) and ``age``, the age
    of each client's model.
    """

    x: Tensor
    steps: list[int]
    age: list[int]
    log: list[tuple[float, int, int, int]]


def simulate_gossip(x0: Tensor, topology: Topology, grad: Callable[[Tensor, int], Tensor],
                    durations: Sequence[float], *, lr: float, end_time: float,
                    pair_seed: int = 0, local_steps: int = 1, merge: str = "mean",
                    timing: str | Mapping[str, Any] = "continuous") -> Pushes:
    """The slow, obvious event-by-event gossip learning: a heap of send times, one at a time.

    Client ``i`` sends its ``k``-th model at ``k * durations[i]``; the sends with a time
    ``<= end_time`` run in the order of ``(time, client)``
    (:func:`~topofl.engine.event_time.events`): the receiver (the sender's partner at its
    event number) merges the sender's current model into its own (``merge``),
    takes ``local_steps`` SGD steps from the merged model (``grad(z, j)``: its gradient at
    ``z`` ``[P]``) and its age grows by ``local_steps``.

    With a ``timing`` other than ``"continuous"`` (:func:`gossip_learning`'s), sends and
    receives are steps apart, in
    the order of :func:`~topofl.engine.transit.messages`: a send copies the sender's model
    and age, its receive merges the copy. The log then lists the receives.

    The reference the windowed :func:`gossip_learning` is tested against.
    """
    _check_merge(merge)
    how = read_timing(timing)
    if how != Timing("continuous"):
        return _simulate_messages(x0, topology, grad, durations, lr, end_time, pair_seed,
                                  local_steps, merge, how)
    age = [0] * x0.shape[0]

    def event(x: Tensor, t: float, i: int, j: int) -> int:
        stale = max(0, age[j] - age[i])
        if merge == "mean":
            z = (x[j] + x[i]) / 2
        else:
            a = age[i] / (age[i] + age[j]) if age[i] + age[j] > 0 else 0.0
            z = (1 - a) * x[j] + a * x[i]
        age[j] = max(age[i], age[j])
        for _ in range(local_steps):
            z = z - lr * grad(z, j)
        x[j] = z
        age[j] += local_steps
        return stale

    r = replay(x0, topology, durations, end_time, event, pair_seed=pair_seed)
    return Pushes(r.x, r.steps, age, r.log)


def _simulate_messages(x0: Tensor, topology: Topology, grad: Callable[[Tensor, int], Tensor],
                       durations: Sequence[float], lr: float, end_time: float, pair_seed: int,
                       local_steps: int, merge: str, how: Timing) -> Pushes:
    """:func:`simulate_gossip` with sends and receives apart (the message reference)."""
    n = x0.shape[0]
    d = per_client(tuple(float(v) for v in durations), n)
    if how.node_order is not None:
        how.node_order.check(n)
    x, age, steps = x0.clone(), [0] * n, [0] * n
    inbox: dict[Any, tuple[Tensor, int]] = {}
    log: list[tuple[float, int, int, int]] = []
    for kind, t, i, j, key in message_steps(topology, d, end_time, pair_seed, how):
        if kind == "send":
            inbox[key] = (x[i].clone(), age[i])
            steps[i] += 1
        if kind in ("receive", "merge"):
            xi, ai = inbox.pop(key)
            log.append((t, i, j, max(0, age[j] - ai)))
            if merge == "mean":
                x[j] = (x[j] + xi) / 2
            else:
                a = ai / (ai + age[j]) if ai + age[j] > 0 else 0.0
                x[j] = (1 - a) * x[j] + a * xi
            age[j] = max(ai, age[j])
        if kind in ("receive", "train"):
            z = x[j]
            for _ in range(local_steps):
                z = z - lr * grad(z, j)
            x[j] = z
            age[j] += local_steps
    return Pushes(x, steps, age, log)
