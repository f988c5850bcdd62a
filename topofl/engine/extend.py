"""Checking an algorithm of one's own: every field of an :class:`~topofl.engine.Algorithm` and
every member its pieces need, with an error that names the member and the class.

``topofl.run`` (:func:`topofl.api.prepare`) calls :func:`check_algorithm` when it builds the
algorithm, before any data is read, so a piece missing ``update`` is refused at once, not
rounds later. The base classes are :class:`~topofl.engine.LocalUpdate` and
:class:`~topofl.engine.Communicate` (:mod:`topofl.engine.protocol`).

Examples
--------
>>> class OnlyPoint:
...     def point(self, state, phase, env):
...         return state.x
>>> algo = tf.algorithms.dsgd()._replace(local=OnlyPoint())
>>> tf.engine.check_algorithm(algo)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
TypeError: dsgd's local update OnlyPoint has no method update(state, grads, phase, lr, ...)
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

from topofl.engine.availability import ABSENT_RULES
from topofl.engine.drops import LOST_RULES
from topofl.engine.protocol import Algorithm, Phase
from topofl.graph import TimeVarying

__all__ = ["check_algorithm", "check_local_update", "stochasticity_problem"]

_STOCHASTIC = ("doubly", "column", "row", None)
_SHARED = ("all", "body")
_HOOKS = (
    ("init", "(x0, env) -> State"),
    ("communicate", "(state, rnd, env) -> Sent"),
    ("evaluate", "(state, rnd, env) -> Tensor"),
    ("round_start", "(state, rnd, env) -> None"),
)
_REQUIRED = (("point", "(state, phase, env)"), ("update", "(state, grads, phase, lr, rnd, env)"))
_HINT = "subclass topofl.engine.LocalUpdate for the defaults of the optional members"


def _kind(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"[:200]


def check_local_update(local: Any, owner: str = "the algorithm") -> None:
    """Check that ``local`` has what the engine calls on a local-update piece.

    Required: the methods ``point`` and ``update`` (a subclass of
    :class:`~topofl.engine.LocalUpdate` inherits ``point``). Optional, checked when present:
    ``rowwise`` a bool, ``fused`` a method or ``None``, ``init_`` a method.

    Raises
    ------
    TypeError
        Naming ``owner``, the class and the member.

    Examples
    --------
    >>> class Half:
    ...     rowwise = "yes"
    ...     def point(self, state, phase, env): return state.x
    ...     def update(self, state, grads, phase, lr, rnd, env): pass
    >>> tf.engine.extend.check_local_update(Half(), "mine")
    Traceback (most recent call last):
    ...
    TypeError: mine's local update Half: rowwise must be a bool, got str 'yes'
    """
    cls = type(local).__name__
    for member, signature in _REQUIRED:
        if not callable(getattr(local, member, None)):
            found = "" if not hasattr(local, member) else (
                f" (its {member} is {_kind(getattr(local, member))})")
            raise TypeError(f"{owner}'s local update {cls} has no method {member}{signature}"
                            f"{found} ({_HINT})")
    if hasattr(local, "rowwise") and not isinstance(local.rowwise, bool):
        raise TypeError(f"{owner}'s local update {cls}: rowwise must be a bool, got "
                        f"{_kind(local.rowwise)}")
    fused = getattr(local, "fused", None)
    if fused is not None and not callable(fused):
        raise TypeError(f"{owner}'s local update {cls}: fused must be a method "
                        f"fused(executor) -> kernel or None, or None, got {_kind(fused)}")
    if hasattr(local, "init_") and not callable(local.init_):
        raise TypeError(f"{owner}'s local update {cls}: init_ must be a method "
                        f"init_(state, env), got {_kind(local.init_)}")


def check_algorithm(algorithm: Any) -> Algorithm:
    """``algorithm``, checked field by field (see :class:`~topofl.engine.Algorithm`).

    Raises
    ------
    TypeError
        A field of the wrong type, a hook that is not callable, a local-update piece without
        ``point`` or ``update``: the message names the algorithm, the field (or member) and
        the class found.
    ValueError
        ``requires``, ``shared``, ``absent``, ``lost`` or ``decay`` out of their ranges, no
        phase.

    Examples
    --------
    >>> tf.engine.check_algorithm(tf.algorithms.dsgd()).name
    'dsgd'
    >>> tf.engine.check_algorithm(tf.algorithms.dsgd()._replace(communicate=None))
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: dsgd: Algorithm.communicate must be callable (state, rnd, env) -> Sent, got ...
    """
    if not isinstance(algorithm, Algorithm):
        raise TypeError(f"algorithm must be a topofl.engine.Algorithm, got {_kind(algorithm)}")
    a = algorithm
    if not isinstance(a.name, str) or not a.name:
        raise TypeError(f"Algorithm.name must be a non-empty str, got {_kind(a.name)}")
    who = a.name
    if not isinstance(a.hparams, Mapping):
        raise TypeError(f"{who}: Algorithm.hparams must be a mapping, got {_kind(a.hparams)}")
    if not isinstance(a.phases, tuple) or not a.phases:
        raise ValueError(f"{who}: Algorithm.phases must be a non-empty tuple of "
                         f"topofl.engine.Phase, got {_kind(a.phases)}")
    for k, ph in enumerate(a.phases):
        if not isinstance(ph, Phase):
            raise TypeError(f"{who}: Algorithm.phases[{k}] must be a topofl.engine.Phase, got "
                            f"{_kind(ph)}")
    for hook, signature in _HOOKS:
        if not callable(getattr(a, hook)):
            raise TypeError(f"{who}: Algorithm.{hook} must be callable {signature}, got "
                            f"{_kind(getattr(a, hook))}")
    check_local_update(a.local, who)
    if a.requires not in _STOCHASTIC:
        raise ValueError(f"{who}: Algorithm.requires must be one of {list(_STOCHASTIC)}, got "
                         f"{a.requires!r}")
    if a.shared not in _SHARED:
        raise ValueError(f"{who}: Algorithm.shared must be 'all' or 'body', got {a.shared!r}")
    if a.absent not in ABSENT_RULES:
        raise ValueError(f"{who}: Algorithm.absent must be one of {sorted(ABSENT_RULES)}, got "
                         f"{a.absent!r}")
    if a.lost is not None and a.lost not in LOST_RULES:
        raise ValueError(f"{who}: Algorithm.lost must be one of {sorted(LOST_RULES)} or None, "
                         f"got {a.lost!r}")
    if not isinstance(a.uses_topology, bool):
        raise TypeError(f"{who}: Algorithm.uses_topology must be a bool, got "
                        f"{_kind(a.uses_topology)}")
    if (isinstance(a.decay, bool) or not isinstance(a.decay, numbers.Real)
            or not float(a.decay) > 0):
        raise ValueError(f"{who}: Algorithm.decay must be a number > 0, got {a.decay!r}")
    if a.predict is not None and not callable(a.predict):
        raise TypeError(f"{who}: Algorithm.predict must be None or callable "
                        f"(x_eval, rnd, env) -> adjust, got {_kind(a.predict)}")
    if a.scored is not None and not callable(a.scored):
        raise TypeError(f"{who}: Algorithm.scored must be None or callable "
                        f"(rnd, env) -> (n,) bool, got {_kind(a.scored)}")
    return a


def stochasticity_problem(algorithm: Algorithm, topology: Any) -> str | None:
    """Why ``algorithm`` cannot gossip with ``topology``'s weights (its first round's, for a
    time-varying graph: the engine checks every round), with a way out that can be followed;
    ``None`` when it can.

    Examples
    --------
    >>> g = tf.topologies.random_directed(10, 3, seed=0)
    >>> print(tf.engine.extend.stochasticity_problem(tf.algorithms.dsgd(), g))
    ... # doctest: +ELLIPSIS +NORMALIZE_WHITESPACE
    dsgd needs a doubly-stochastic W, but random_directed's W is row-stochastic and its graph
    is directed (Metropolis weights need an undirected graph): on a directed graph use
    push-sum, e.g. algorithm "sgp" or "osgp" with topology "random_directed_push:k=3" ...
    >>> tf.engine.extend.stochasticity_problem(tf.algorithms.sgp(),
    ...                              tf.topologies.random_directed(10, 3, seed=0, mode="push"))
    """
    if algorithm.requires is None or not algorithm.uses_topology or topology is None:
        return None
    topo = topology.at(0) if isinstance(topology, TimeVarying) else topology
    if {"doubly": topo.is_doubly_stochastic, "column": topo.is_column_stochastic,
            "row": topo.is_row_stochastic}[algorithm.requires]:
        return None
    k = topo.params.get("k", 3) if isinstance(topo.params, Mapping) else 3
    push = (f'use push-sum, e.g. algorithm "sgp" or "osgp" with topology '
            f'"random_directed_push:k={k}" (or a Topology built with weights="push_sum": '
            'Topology.from_networkx(G, weights="push_sum"))')
    found = ("not stochastic" if topo.stochasticity == "none"
             else f"{topo.stochasticity}-stochastic")
    head = (f"{algorithm.name} needs a {algorithm.requires}-stochastic W, but {topo.name}'s W "
            f"is {found}")
    if algorithm.requires == "column":
        return (f"{head}: push-sum needs column-stochastic weights (each sender splits its "
                f"mass over its out-neighbours); {push}")
    el = ('; or train it with algorithm "el" (Epidemic Learning: each node averages what it '
          "receives, its own model included; for el_local and el_oracle)"
          if algorithm.requires == "doubly" and topo.stochasticity == "row" else "")
    if topo.is_directed:
        return (f"{head} and its graph is directed (Metropolis weights need an undirected "
                f"graph): on a directed graph {push}; or keep {algorithm.name} on an undirected "
                f'graph ("ring", "random_regular:d=4", "exponential"){el}')
    if el:
        return (f"{head}: build the graph with Metropolis weights (Topology.from_networkx(G) "
                f"or Topology.from_adjacency(A), whose default they are){el}")
    return (f"{head}: build the graph with Metropolis weights "
            "(Topology.from_networkx(G) or Topology.from_adjacency(A), whose default they are; "
            "every undirected family of topofl.topologies has them)")
