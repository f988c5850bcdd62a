"""The checks of an event-time algorithm's settings (its clients' durations, its window, its
start offsets), the refusal of a run without an event, heavy-tailed durations and the check
that one process holds every client. :mod:`topofl.engine.event_time` imports them back: they
are importable from there, where its docstring tells what the clocks and windows are.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from topofl._utils.rng import as_generator
from topofl._utils.validation import check_int
from topofl.engine.protocol import Services


def check_window(window: Any) -> float:
    """``window`` as a positive finite float, else a one-line ``ValueError``.

    Examples
    --------
    >>> from topofl.engine.event_time import check_window
    >>> check_window(2)
    2.0
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
    >>> from topofl.engine.event_time import check_durations
    >>> check_durations([1, 2.5])
    (1.0, 2.5)
    >>> check_durations([1.0, -2.0])
    Traceback (most recent call last):
    ...
    ValueError: durations must be positive finite times, got -2.0 for client 1
    """
    return client_times(durations, "durations", positive=True)


def client_times(times: Any, name: str, *, positive: bool) -> float | tuple[float, ...]:
    """``times`` (one time for every client, or one per client) checked finite and positive
    (``positive=True``: :func:`check_durations`) or non-negative (the start offsets and
    delays of :mod:`topofl.engine.transit`), else a one-line error naming ``name``.

    Examples
    --------
    >>> from topofl.engine.event_time import client_times
    >>> client_times(0, "offsets", positive=False), client_times((2, 3), "d", positive=True)
    (0.0, (2.0, 3.0))
    """
    kind = "positive" if positive else "non-negative"

    def ok(v: float) -> bool:
        return math.isfinite(v) and (v > 0 if positive else v >= 0)

    if isinstance(times, numbers.Real) and not isinstance(times, bool):
        if not ok(float(times)):
            raise ValueError(f"{name} must be a {kind} finite time (or one per client), got "
                             f"{times!r}")
        return float(times) + 0.0  # -0.0 as 0.0
    if isinstance(times, (str, bytes)) or not isinstance(times, (Sequence, np.ndarray)):
        raise TypeError(f"{name} must be a {kind} time or a sequence of them (one per "
                        f"client), got {type(times).__name__} {times!r}"[:300])
    out = []
    for i, v in enumerate(times):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"{name} must hold real numbers, got {type(v).__name__} {v!r} "
                            f"for client {i}"[:300])
        if not ok(float(v)):
            raise ValueError(f"{name} must be {kind} finite times, got {float(v)!r} for "
                             f"client {i}")
        out.append(float(v) + 0.0)
    if not out:
        raise ValueError(f"{name} must hold one time per client, got an empty sequence")
    return tuple(out)


def per_client(durations: float | Sequence[float], n: int, name: str = "durations"
               ) -> np.ndarray:
    """``(n,)`` float64: checked ``durations`` (:func:`check_durations`; or the times
    ``name``) as one time per client, else a one-line ``ValueError`` naming both counts.

    Examples
    --------
    >>> from topofl.engine.event_time import per_client
    >>> per_client(2.0, 3).tolist()
    [2.0, 2.0, 2.0]
    >>> per_client((1.0, 2.0), 3)
    Traceback (most recent call last):
    ...
    ValueError: durations must hold one time per client: 3 clients, got 2 times
    """
    if isinstance(durations, float):
        return np.full(n, durations)
    if len(durations) != n:
        raise ValueError(f"{name} must hold one time per client: {n} clients, got "
                         f"{len(durations)} times")
    return np.asarray(durations, dtype=np.float64)


def idle_reason(durations: float | tuple[float, ...], window: float, rounds: int,
                offsets: float | tuple[float, ...] | None = None) -> str | None:
    r"""Why an event-time run of ``rounds`` windows holds no event at all, or ``None``.

    Round ``t`` is the window $(t\,\delta, (t+1)\,\delta]$ and client ``i``'s first event
    is at $d_i$: the run holds an event iff $\min_i d_i \le$ ``rounds * window`` (the same
    arithmetic as the windows' own test). The reason names the settings and the bounds
    that would give the run an event. The ``Algorithm.idle`` of
    :func:`~topofl.algorithms.adpsgd.adpsgd` and
    :func:`~topofl.algorithms.gossip_learning.gossip_learning`.

    Examples
    --------
    >>> from topofl.engine.event_time import idle_reason
    >>> idle_reason([2.0, 3.0], 1.0, 2) is None
    True
    >>> idle_reason(1e300, 1.0, 3)  # doctest: +ELLIPSIS
    "no client's first event falls within the run's virtual time: the fastest client's ..."
    """
    if offsets is not None:  # the first events o_i + d_i, as the windows compute them
        n = 1 if isinstance(durations, float) and isinstance(offsets, float) else max(
            len(v) for v in (durations, offsets) if not isinstance(v, float))
        first = float(min(per_client(offsets, n, "offsets") + per_client(durations, n)))
    else:
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
    at = "min(durations)" if offsets is None else "min(offsets + durations)"
    return (f"no client's first event falls within the run's virtual time: the fastest "
            f"client's first event is at {at} = {first!r}, after the end of the "
            f"last window, rounds * window = {rounds} * {window!r} = {end!r}; the run would "
            f"train no client and send no message. Set durations <= {end!r}, window >= "
            f"{wide!r} or rounds >= {count}")


def heavy_tailed_durations(n: int, *, seed: Any, alpha: float = 1.5,
                           scale: float = 1.0) -> tuple[float, ...]:
    r"""``n`` compute durations drawn from a Pareto law: $d_i = s\,(1 + P_i)$ with
    $P_i \sim$ Lomax($\alpha$) (so $d_i \ge s$, with a tail of index $\alpha$: stragglers).

    Examples
    --------
    >>> from topofl.engine.event_time import heavy_tailed_durations
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


def one_process(env: Services, name: str, events: str) -> int:
    """The run's number of clients, after checking that this process holds every one of them
    (an event-time algorithm's ``events`` reach any client), else a one-line ``ValueError``.

    Examples
    --------
    >>> from topofl.engine.event_time import one_process
    >>> one_process(tf.engine.toy_services(3), "mine", "pairwise events")
    3
    """
    n = int(env.n)
    if len(env.clients.ids) != n:
        raise ValueError(f"{name} does not run distributed: its {events} need every client in "
                         "one process (run it without torchrun)")
    return n
