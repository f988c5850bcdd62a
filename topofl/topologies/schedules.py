r"""Schedules of graphs: one graph until a round, then another; a graph with periodic global
averaging.

* :func:`switch` -- graph ``first`` for rounds ``0 .. at - 1``, then ``then`` (its own round
  ``t - at`` at round ``t``): a sparse graph early and a dense one late, or the reverse.
* :func:`periodic_averaging` -- graph ``base``, with every ``every``-th round replaced by the
  exact average of all nodes (``W = J``, the complete graph's uniform weights): the periodic
  global averaging the null-cascade paper cites (Chen et al. 2021, "Accelerating gossip SGD
  with periodic global averaging"), or a local-SGD style merge every ``every`` rounds.

Both take graphs (a :class:`~topofl.graph.Topology` or a
:class:`~topofl.graph.TimeVarying`) already built, so any family, seed and weights combine, and
return a :class:`~topofl.graph.TimeVarying` that the engine, :func:`topofl.spectral.summary`
and every spectral function read as any other sequence.

Specs
-----
A spec names a schedule as it names a family (``topofl.run(topology=...)``, a config's
``topology``, ``topofl spectral``), its graphs written as specs in parentheses:

* ``switch:first=(SPEC),then=(SPEC),at=T``
* ``periodic_averaging:base=(SPEC),every=H``

e.g. ``switch:first=(random_regular:d=4),then=complete,at=50`` or
``periodic_averaging:base=ring,every=100`` (a spec without commas needs no parentheses).
The parts take the run's ``n`` (and its clients' labels, for ``dcliques``) when they leave it
out, and the run's ``seed``: both parts of a ``switch`` draw with the same seed.

>>> tv = tf.topologies.build("periodic_averaging:base=(random_regular:d=3),every=4", n=8,
...                          seed=0)
>>> tv.name, tv.params["base"], tv.period, tv.at(3).name
('periodic_averaging', 'random_regular', 4, 'complete')
"""

from __future__ import annotations

import math
from typing import Any

from topofl._utils.rng import Seed
from topofl._utils.validation import check_int
from topofl.graph import GraphLike, TimeVarying, as_time_varying
from topofl.topologies._registry import SCHEDULES, GraphFamily, Param, build, check_spec
from topofl.topologies.classic import complete

__all__ = ["switch", "periodic_averaging"]


def _sequence(graph: Any, name: str) -> TimeVarying:
    try:
        return as_time_varying(graph)
    except TypeError:
        raise TypeError(f"{name} must be a Topology or a TimeVarying, got "
                        f"{type(graph).__name__}") from None


def _same_n(a: TimeVarying, b: TimeVarying, names: str) -> None:
    if a.n != b.n:
        raise ValueError(f"{names} must have the same number of nodes, got n={a.n} and n={b.n}")


def switch(first: Any, then: Any, *, at: int) -> TimeVarying:
    r"""Graph ``first`` for rounds ``0 .. at - 1``, then graph ``then``.

    Round ``t >= at`` is ``then``'s round ``t - at`` (a time-varying ``then`` starts from its
    own first round at the switch). The sequence has no period (it changes once): spectral
    measures over a horizon (:func:`topofl.spectral.summary`) describe the rounds they see,
    so take them from each part where the two differ.

    Parameters
    ----------
    first, then : Topology or TimeVarying
        On the same nodes.
    at : int
        The first round of ``then``, ``>= 1``.

    Returns
    -------
    TimeVarying
        Named ``"switch"``, with ``params`` ``{"first", "then", "at"}`` (the parts' names).

    Raises
    ------
    TypeError
        If ``first`` or ``then`` is not a graph, or ``at`` not an int.
    ValueError
        If ``at < 1`` or the graphs' ``n`` differ.

    Examples
    --------
    >>> tv = tf.topologies.switch(tf.topologies.ring(8), tf.topologies.complete(8), at=3)
    >>> [tv.at(t).name for t in range(5)], tv.period
    (['ring', 'ring', 'ring', 'complete', 'complete'], None)
    """
    a, b = _sequence(first, "first"), _sequence(then, "then")
    _same_n(a, b, "first and then")
    T = check_int(at, "at", low=1)
    return TimeVarying(a.n, lambda t: a.at(t) if t < T else b.at(t - T), name="switch",
                       params={"first": a.name, "then": b.name, "at": T})


def periodic_averaging(base: Any, *, every: int) -> TimeVarying:
    r"""Graph ``base`` with every ``every``-th round an exact global average.

    Rounds ``every - 1, 2 every - 1, ...`` are the complete graph with uniform weights
    ($W = \mathbf{1}\mathbf{1}^\top / n$: every node holds the average after them); the
    others are ``base``'s own. The period is ``lcm(every, base.period)`` (``None`` when
    ``base`` has none), so :func:`topofl.spectral.finite_time_consensus` is ``every`` from
    round 0 and :func:`topofl.spectral.period_consensus_error` is 0 whenever a period
    contains an averaging round.

    A global average costs ``n (n - 1)`` messages in one round as gossip (an all-reduce or a
    server would spend ``2 n``); the ledger counts what the graph sends.

    Parameters
    ----------
    base : Topology or TimeVarying
    every : int
        ``>= 1``; 1 averages every round.

    Returns
    -------
    TimeVarying
        Named ``"periodic_averaging"``, ``params`` ``{"base", "every"}``.

    Raises
    ------
    TypeError
        If ``base`` is not a graph or ``every`` not an int.
    ValueError
        If ``every < 1``, or the complete graph on ``n`` nodes would not fit in memory.

    Examples
    --------
    >>> tv = tf.topologies.periodic_averaging(tf.topologies.ring(8), every=4)
    >>> [tv.at(t).name for t in range(5)], tv.period
    (['ring', 'ring', 'ring', 'complete', 'ring'], 4)
    >>> tf.spectral.finite_time_consensus(tv, 8)
    4
    """
    g = _sequence(base, "base")
    H = check_int(every, "every", low=1)
    J = complete(g.n)
    period = None if g.period is None else math.lcm(H, g.period)
    return TimeVarying(g.n, lambda t: J if (t + 1) % H == 0 else g.at(t),
                       name="periodic_averaging", params={"base": g.name, "every": H},
                       period=period)


def _part(spec: Any, name: str, n: int | None, labels: Any, seed: Seed) -> GraphLike:
    """The graph of a schedule spec's part ``name`` (itself a spec)."""
    if not isinstance(spec, str):
        raise ValueError(f"{name} must be a graph spec such as (random_regular:d=4), got "
                         f"{type(spec).__name__} {spec!r}"[:300])
    graph = build(spec, seed=seed, n=n, label_distributions=labels)
    if n is not None and graph.n != n:
        raise ValueError(f"{name} ({spec}) has n={graph.n} nodes, the schedule n={n}")
    return graph


def _switch_spec(first: str, then: str, at: int, n: int | None = None, *, seed: Seed,
                 labels: Any = None) -> TimeVarying:
    return switch(_part(first, "first", n, labels, seed), _part(then, "then", n, labels, seed),
                  at=at)


def _periodic_spec(base: str, every: int, n: int | None = None, *, seed: Seed,
                   labels: Any = None) -> TimeVarying:
    return periodic_averaging(_part(base, "base", n, labels, seed), every=every)


def late_switch(topology: Any, rounds: int) -> str | None:
    """Why a run of ``rounds`` rounds never reaches the second graph of a ``switch`` in
    ``topology`` (a spec string, or a :class:`~topofl.graph.TimeVarying` named ``"switch"``),
    or never averages with a ``periodic_averaging`` (``every > rounds``), or ``None``: a
    switch's ``at`` not before the last round ``rounds - 1`` makes the run that of ``first``
    alone, and a period longer than the run makes it ``base``'s alone. A spec's switches and
    periodic averages within ``first`` (from round 0) and ``then`` (from round ``at``) are
    checked too.

    Examples
    --------
    >>> from topofl.topologies.schedules import late_switch
    >>> late_switch("switch:first=ring,then=complete,at=3", 10) is None
    True
    >>> print(late_switch("switch:first=ring,then=complete,at=5", 3))
    ... # doctest: +NORMALIZE_WHITESPACE
    switch at=5 is past the run's last round (rounds=3: rounds 0..2), so its graph then
    (complete) is never used: give at <= 2, or rounds >= 6
    >>> print(late_switch("periodic_averaging:base=ring,every=20", 10))
    ... # doctest: +NORMALIZE_WHITESPACE
    periodic_averaging every=20 never averages in a run of 10 rounds: its first global
    average is round 19, the run's last round 9; give every <= 10, or rounds >= 20
    >>> late_switch("periodic_averaging:base=ring,every=10", 10) is None
    True
    """
    def problem(spec: Any, left: int) -> str | None:
        if not isinstance(spec, str) or not ("switch" in spec or "periodic_averaging" in spec):
            return None
        family, kwargs = check_spec(spec)
        if family.name == "periodic_averaging":
            return _never_averages(kwargs.get("every"), left, rounds)
        if family.name != "switch":
            return None
        at = kwargs.get("at")
        if not isinstance(at, int) or isinstance(at, bool):
            return None  # the switch's own check says what at must be
        if at >= left:
            return _late(at, kwargs.get("then"), left, rounds)
        return problem(kwargs.get("first"), left) or problem(kwargs.get("then"), left - at)

    if isinstance(topology, TimeVarying) and topology.name == "periodic_averaging":
        return _never_averages(topology.params.get("every"), rounds, rounds)
    if isinstance(topology, TimeVarying) and topology.name == "switch":
        at = topology.params.get("at")
        if isinstance(at, int) and at >= rounds:
            return _late(at, topology.params.get("then"), rounds, rounds)
        return None
    return problem(topology, rounds)


def _never_averages(every: Any, left: int, rounds: int) -> str | None:
    """Why a ``periodic_averaging`` of ``every`` run for ``left`` rounds never averages."""
    if not isinstance(every, int) or isinstance(every, bool) or every <= left:
        return None  # its own check says what every must be; or it averages
    where = "" if left == rounds else f" (within a switch, for its last {left} rounds)"
    return (f"periodic_averaging every={every} never averages in a run of {left} rounds"
            f"{where}: its first global average is round {every - 1}, the run's last round "
            f"{left - 1}; give every <= {left}, or rounds >= {rounds - left + every}")


def _late(at: int, then: Any, left: int, rounds: int) -> str:
    where = "" if left == rounds else f" (a switch within then, {rounds - left} rounds in)"
    fix = [f"at <= {left - 1}"] if left > 1 else []
    fix.append(f"rounds >= {rounds - left + at + 1}")
    return (f"switch at={at} is past the run's last round (rounds={rounds}: rounds "
            f"0..{rounds - 1}){where}, so its graph then ({then}) is never used: give "
            f"{', or '.join(fix)}")


_N = Param("n", int, "number of nodes (the run's, when left out)", low=1)
SCHEDULES["switch"] = GraphFamily(
    "switch", switch,
    (Param("first", str, "the graph of rounds 0 .. at - 1, a spec"),
     Param("then", str, "the graph from round at on, a spec"),
     Param("at", int, "the first round of then", low=1), _N),
    lambda n, rng: {"n": n, "first": "ring", "then": "complete", "at": 3},
    random=True, time_varying=True,
    description="graph first until round at, then graph then (its own rounds from 0)",
    from_spec=_switch_spec,
    from_labels=lambda labels, **kw: _switch_spec(**kw, n=len(labels), labels=labels))
SCHEDULES["periodic_averaging"] = GraphFamily(
    "periodic_averaging", periodic_averaging,
    (Param("base", str, "the graph of the other rounds, a spec"),
     Param("every", int, "rounds between two exact global averages", low=1), _N),
    lambda n, rng: {"n": n, "base": "ring", "every": 4},
    random=True, time_varying=True,
    description="graph base with every every-th round an exact global average (W = J)",
    from_spec=_periodic_spec,
    from_labels=lambda labels, **kw: _periodic_spec(**kw, n=len(labels), labels=labels))
