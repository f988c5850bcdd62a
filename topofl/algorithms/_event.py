"""The hyper-parameter groups of the event-time algorithms (AD-PSGD, gossip learning).

Both take the local SGD of one event (:class:`EventSGD`: ``lr``, ``local_steps``, ``decay``)
and the clients' clocks (:class:`EventClocks`: ``durations``, ``window``, ``pair_seed``);
:func:`event_params` routes a factory's flat keywords to the two and returns them resolved:
the records both build from.

Examples
--------
>>> step, clock = event_params("toy", 0.5, EventClocks(window=0.5), {"durations": [1, 2]})
>>> step
EventSGD(lr=0.5, local_steps=1, decay=1.0)
>>> clock
EventClocks(durations=(1.0, 2.0), window=0.5, pair_seed=0)
>>> EventSGD(local_steps=0)
Traceback (most recent call last):
...
ValueError: local_steps must be >= 1, got 0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from topofl._utils.validation import check_int
from topofl.algorithms.hparams import Group, Keywords, check_decay, check_lr
from topofl.engine.event_time import EventTime, check_durations, check_window

__all__ = ["EventSGD", "EventSGDKeywords", "EventClocks", "EventClocksKeywords",
           "ONE_STEP", "UNIT_CLOCKS", "event_params", "event_hparams", "recorded_times"]


@dataclass(frozen=True)
class EventSGD(Group):
    """The local SGD of one event.

    Attributes
    ----------
    lr : float, default 0.1
        The learning rate $\\gamma$, ``lr * decay**t`` in window ``t`` (``> 0``).
    local_steps : int, default 1
        The SGD steps of one event (``>= 1``).
    decay : float, default 1
        The learning rate's decay per window, in ``(0, 1]``.
    """

    lr: float = 0.1
    local_steps: int = 1
    decay: float = 1.0

    def __post_init__(self) -> None:
        check_lr(self.lr)
        check_int(self.local_steps, "local_steps", low=1)
        check_decay(self.decay)

    def resolved(self) -> EventSGD:
        """The group as the record an algorithm builds from: its numbers checked (``lr=1``:
        ``1.0``)."""
        return EventSGD(check_lr(self.lr), check_int(self.local_steps, "local_steps", low=1),
                        check_decay(self.decay))


class EventSGDKeywords(TypedDict, total=False):
    """:class:`EventSGD`'s fields as flat keywords."""

    lr: float
    local_steps: int
    decay: float


@dataclass(frozen=True)
class EventClocks(Group):
    """The clients' clocks in virtual time (:class:`~topofl.engine.event_time.EventTime`).

    Attributes
    ----------
    durations : float or sequence of float, default 1
        Each client's virtual time between two events (one for every client, or one per
        client); positive and finite.
    window : float, default 1
        The virtual time $\\delta$ of one round (positive, finite).
    pair_seed : int, default 0
        The seed of the partner draws (:func:`~topofl.engine.event_time.partners`), ``>= 0``.
    """

    durations: float | Sequence[float] = 1.0
    window: float = 1.0
    pair_seed: int = 0

    def __post_init__(self) -> None:
        check_durations(self.durations)
        check_window(self.window)
        check_int(self.pair_seed, "pair_seed", low=0)

    def resolved(self) -> EventClocks:
        """The group as the record an algorithm builds from: its numbers checked (a tuple of
        floats for ``durations`` given one per client)."""
        times = self.clocks()
        return EventClocks(times.durations, times.window, times.pair_seed)

    def clocks(self) -> EventTime:
        """The event clocks these settings give (:class:`topofl.engine.event_time.EventTime`)."""
        return EventTime(check_durations(self.durations), check_window(self.window),
                         check_int(self.pair_seed, "pair_seed", low=0))

    def recorded_durations(self) -> float | list[float]:
        """``durations`` as the run config records them (a list where one per client)."""
        d = self.clocks().durations
        return list(d) if isinstance(d, tuple) else d


class EventClocksKeywords(TypedDict, total=False):
    """:class:`EventClocks`'s fields as flat keywords."""

    durations: float | Sequence[float]
    window: float
    pair_seed: int


#: The default groups of both factories: one step of ``lr = 0.1`` an event; every client an
#: event per unit of virtual time, one unit a window
ONE_STEP, UNIT_CLOCKS = EventSGD(), EventClocks()


def event_params(factory: str, sgd: EventSGD | float, clocks: EventClocks,
                 keywords: Mapping[str, Any]) -> tuple[EventSGD, EventClocks]:
    """An event-time factory's two groups, its flat ``keywords`` applied (a number for
    ``sgd`` is the learning rate; an unknown keyword a ``TypeError`` that names
    ``factory``), resolved: the records the algorithm builds from."""
    kw = Keywords(factory, keywords)
    step, clock = kw.take(sgd, ONE_STEP), kw.take(clocks, UNIT_CLOCKS)
    kw.done()
    return step.resolved(), clock.resolved()


def event_hparams(sgd: EventSGD, clocks: EventClocks, **after_steps: Any) -> dict[str, Any]:
    """The recorded hyper-parameters of an event-time run: its two groups' (resolved), with
    ``after_steps`` (the factory's own) between ``local_steps`` and ``pair_seed``, the order
    of the run headers recorded before the groups."""
    return dict(lr=sgd.lr, durations=clocks.recorded_durations(), window=clocks.window,
                local_steps=sgd.local_steps, **after_steps, pair_seed=clocks.pair_seed,
                decay=sgd.decay)


def recorded_times(times: float | tuple[float, ...] | None) -> float | list[float] | None:
    """Per-client times (offsets, delays) as the run config records them: a list where one
    per client."""
    return list(times) if isinstance(times, tuple) else times
