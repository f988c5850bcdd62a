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

import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from torch import Tensor

from topofl.engine.availability import ABSENT_RULES
from topofl.engine.drops import LOST_RULES
from topofl.engine.ledger import Flow, FlowError
from topofl.engine.protocol import Algorithm, Phase, Round, Sent, Services, State
from topofl.graph import TimeVarying

__all__ = ["check_algorithm", "check_local_update", "stochasticity_problem", "checked_pieces",
           "check_state", "check_sent", "check_idle"]

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
    if not (isinstance(a.stacks, bool) or (isinstance(a.stacks, str) and a.stacks.strip())):
        raise TypeError(f"{who}: Algorithm.stacks must be True, False or a non-empty str "
                        f"saying why its runs do not stack, got {_kind(a.stacks)}")
    if not (a.clocked is True or (isinstance(a.clocked, str) and a.clocked.strip())):
        raise TypeError(f"{who}: Algorithm.clocked must be True or a non-empty str saying why "
                        f"the [network] clock cannot time its rounds, got {_kind(a.clocked)}")
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
    if a.idle is not None and not callable(a.idle):
        raise TypeError(f"{who}: Algorithm.idle must be None or callable "
                        f"rounds -> str | None, got {_kind(a.idle)}")
    return a


def check_idle(algorithm: Algorithm, rounds: int) -> None:
    """A one-line ``ValueError`` when a run of ``algorithm`` for ``rounds`` rounds would do
    nothing at all, as its ``Algorithm.idle`` says (no check for ``rounds = 0``, which asks
    for no round, or without ``idle``).

    Raises
    ------
    ValueError
        Naming the algorithm and its reason (the settings and the bound they miss).

    Examples
    --------
    >>> from topofl.engine.extend import check_idle
    >>> check_idle(tf.algorithms.adpsgd(durations=2.0), 2)
    >>> check_idle(tf.algorithms.adpsgd(durations=2.0), 1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: adpsgd: no client's first event falls within the run's virtual time: ...
    """
    idle = getattr(algorithm, "idle", None)
    if idle is None or rounds < 1:
        return
    why = idle(int(rounds))
    if why is not None:
        raise ValueError(f"{algorithm.name}: {why}")


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
    if algorithm.requires == "column":  # a push-sum algorithm: keep it, change the graph
        return (f"{head}: push-sum needs column-stochastic weights (each sender splits its "
                f'mass over its out-neighbours); keep {algorithm.name} with topology '
                f'"random_directed_push:k={k}" (or a Topology built with weights="push_sum": '
                'Topology.from_networkx(G, weights="push_sum"))')
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


# ------------------------------------------------------------------ what the pieces return


def _piece(fn: Any) -> str:
    """How a message names a piece: its function or class."""
    return str(getattr(fn, "__qualname__", None) or type(fn).__qualname__)


def check_state(state: Any, x0: Tensor, who: str = "the algorithm", piece: str = "init"
                ) -> State:
    """``state``, what an algorithm's ``init(x0, env)`` returned, checked against ``x0``.

    It must be a :class:`~topofl.engine.State` whose ``x`` has ``x0``'s shape, dtype and
    device; its ``momentum`` (and every other buffer shaped like ``x0``: the parameters'
    companions, which are mixed and updated with them) ``x0``'s dtype; every tensor on
    ``x0``'s device.

    Raises
    ------
    TypeError
        Not a ``State``, a tensor of another dtype or device: the message names the
        algorithm, the piece, the buffer and the fix.
    ValueError
        ``x`` of another shape.

    Examples
    --------
    >>> import torch
    >>> x0 = torch.zeros(3, 2)
    >>> check_state(tf.engine.State(x=x0), x0).x is x0
    True
    >>> check_state(None, x0, "mine")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: mine's init returned NoneType None: it must return a topofl.engine.State ...
    >>> check_state(tf.engine.State(x=x0.double()), x0, "mine")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: mine's init returned a state whose x is torch.float64, but the run is ...
    """
    head = f"{who}'s {piece}"
    if not isinstance(state, State):
        raise TypeError(f"{head} returned {_kind(state)}: it must return a topofl.engine.State "
                        "holding the parameters, e.g. `return tf.engine.State(x=x0)` (with "
                        "momentum=, weight= and own= for the buffers the algorithm keeps)")
    if not isinstance(state.x, Tensor):
        raise TypeError(f"{head} returned a State whose x is {_kind(state.x)}: x must be the "
                        f"[n, P] tensor x0 it was given (or a copy, x0.clone())")
    if tuple(state.x.shape) != tuple(x0.shape):
        raise ValueError(f"{head} returned a state whose x has shape {tuple(state.x.shape)}, "
                         f"expected x0's {tuple(x0.shape)} (one row of P parameters per "
                         "client): keep x0, or a copy of it, as x")
    for name, t in state.tensors().items():
        if not isinstance(t, Tensor):  # pragma: no cover - tensors() holds tensors
            continue
        shaped = name in ("x", "momentum") or tuple(t.shape) == tuple(x0.shape)
        if shaped and t.is_floating_point() and t.dtype != x0.dtype:
            raise TypeError(
                f"{head} returned a state whose {name} is {t.dtype}, but the run is "
                f"{x0.dtype}: create the algorithm's buffers with x0's dtype and device "
                f"(torch.zeros_like(x0), or x0.new_zeros(...)) and let the run's dtype "
                "setting choose the precision")
        if t.device != x0.device:
            raise TypeError(
                f"{head} returned a state whose {name} is on {t.device}, but the run is on "
                f"{x0.device}: create the algorithm's buffers on x0's device "
                f"(torch.zeros_like(x0), or x0.new_zeros(...))")
    return state


def check_sent(sent: Any, who: str = "the algorithm", piece: str = "communicate") -> Sent:
    """``sent``, what an algorithm's ``communicate`` returned, checked.

    It must be a :class:`~topofl.engine.Sent` whose ``messages`` is a finite count >= 0 and
    whose ``flows`` and ``dropped`` are ``None`` or tuples of
    :class:`~topofl.engine.ledger.Flow` (each checks its own sizes when built).

    Raises
    ------
    TypeError
        Not a ``Sent``, a field of the wrong type: the message names the algorithm, the
        piece and the fix.
    ValueError
        A message count that is negative, NaN or infinite.

    Examples
    --------
    >>> check_sent(tf.engine.Sent(4)).messages
    4
    >>> check_sent(None, "mine")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: mine's communicate returned NoneType None: it must return a topofl.engine.Sent ...
    >>> check_sent(tf.engine.Sent(float("nan")), "mine")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: mine's communicate returned Sent(messages=nan): messages must be ...
    """
    head = f"{who}'s {piece}"
    if not isinstance(sent, Sent):
        raise TypeError(f"{head} returned {_kind(sent)}: it must return a topofl.engine.Sent "
                        "saying what was sent, `return tf.engine.Sent.of(*flows)` (the bytes "
                        "ledger and the clock read its flows) or `tf.engine.Sent(messages)` "
                        "(a bare count of messages)")
    m = sent.messages
    if (isinstance(m, bool) or not isinstance(m, (numbers.Real, np.integer))
            or not math.isfinite(float(m)) or float(m) < 0 or float(m) != int(m)):
        exc = ValueError if isinstance(m, numbers.Real) and not isinstance(m, bool) \
            else TypeError
        raise exc(f"{head} returned Sent(messages={m!r}): messages must be a whole number "
                  ">= 0 of messages (Sent.of(*flows) counts them from the flows)")
    for field_name in ("flows", "dropped"):
        flows = getattr(sent, field_name)
        if flows is not None and not (isinstance(flows, tuple)
                                      and all(isinstance(f, Flow) for f in flows)):
            raise TypeError(f"{head} returned a Sent whose {field_name} is {_kind(flows)}: it "
                            "must be None or a tuple of topofl.engine.ledger.Flow "
                            "(Sent.of(*flows) builds it)")
    if sent.records is not None and not isinstance(sent.records, Mapping):
        raise TypeError(f"{head} returned a Sent whose records is {_kind(sent.records)}: it "
                        "must be None or a mapping of metric name -> JSON-able value")
    return sent


class _CheckedInit:
    """``Algorithm.init`` whose result is checked (:func:`check_state`)."""

    def __init__(self, inner: Callable[[Tensor, Services], State], who: str) -> None:
        self.inner, self.who = inner, who
        self.__qualname__ = _piece(inner)
        self.__doc__ = getattr(inner, "__doc__", None)

    def __call__(self, x0: Tensor, env: Services) -> State:
        return check_state(self.inner(x0, env), x0, self.who, f"init ({self.__qualname__})")


class _CheckedCommunicate:
    """``Algorithm.communicate`` whose result is checked (:func:`check_sent`)."""

    def __init__(self, inner: Callable[[State, Round, Services], Sent], who: str) -> None:
        self.inner, self.who = inner, who
        self.__qualname__ = _piece(inner)
        self.__doc__ = getattr(inner, "__doc__", None)

    def __call__(self, state: State, rnd: Round, env: Services) -> Sent:
        piece = f"communicate ({self.__qualname__})"
        try:
            sent = self.inner(state, rnd, env)
        except FlowError as exc:  # a Flow it built: named with the piece that built it
            raise FlowError(f"{self.who}'s {piece}: {exc}") from None
        return check_sent(sent, self.who, piece)

    def __getattr__(self, name: str) -> Any:  # a piece's own members (init_ ...)
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


def checked_pieces(algorithm: Algorithm) -> Algorithm:
    """``algorithm`` whose ``init`` and ``communicate`` check what they return, at every call
    (:func:`check_state`, :func:`check_sent`): a piece of one's own that returns ``None``, a
    state of another dtype or a message count that is not a number is named with its fix
    where it returns, not as an ``AttributeError`` rounds later. The numbers are those of
    ``algorithm`` (the same calls, then a check of their results); ``topofl.run`` applies it
    to every algorithm it runs.

    Examples
    --------
    >>> import torch
    >>> algo = checked_pieces(tf.algorithms.dsgd()._replace(init=lambda x0, env: None))
    >>> algo.init(torch.zeros(2, 1), tf.engine.toy_services(2))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: dsgd's init (<lambda>) returned NoneType None: it must return a ...
    >>> checked_pieces(algo) is algo
    True
    """
    if isinstance(algorithm.init, _CheckedInit) and isinstance(algorithm.communicate,
                                                                _CheckedCommunicate):
        return algorithm
    init, comm = algorithm.init, algorithm.communicate
    return algorithm._replace(
        init=init if isinstance(init, _CheckedInit) else _CheckedInit(init, algorithm.name),
        communicate=comm if isinstance(comm, _CheckedCommunicate)
        else _CheckedCommunicate(comm, algorithm.name))

