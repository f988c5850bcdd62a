"""Sequences of topologies: :class:`TimeVarying`, ``t -> Topology`` pure in the seed and ``t``;
:data:`GraphLike`, what accepts either; :func:`as_time_varying`, the one to the other.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from threading import Lock
from types import MappingProxyType
from typing import Any, TypeAlias, Union

from topofl._utils.validation import check_int
from topofl.graph.checks import _params_dict
from topofl.graph.topology import Topology

__all__ = ["TimeVarying", "GraphLike", "as_time_varying"]


class TimeVarying:
    r"""A sequence of topologies ``t -> Topology`` on a fixed set of ``n`` nodes.

    ``at(t)`` must be a pure function of ``t`` (and of the seed the constructor captured): the
    graph of round ``t`` never depends on which rounds were asked for before, so a resumed run sees
    the same graphs as an uninterrupted one. Results are cached (a small LRU), which is safe
    because ``at`` is pure.

    Parameters
    ----------
    n : int
        Number of nodes of every graph.
    at : callable ``int -> Topology``
        The graph of round ``t``.
    name : str
        Family name.
    params : Mapping, optional
        The constructor's arguments (including the seed, for random sequences).
    period : int, optional
        If set, ``at(t) == at(t % period)``; ``at`` is then only called with ``t < period``.
    cache_size : int, default 128
        How many graphs to keep.

    Raises
    ------
    TypeError
        If ``n``, ``period`` or ``cache_size`` is not an int, ``at`` is not callable, or
        ``params`` is not a mapping or ``None``.
    ValueError
        If ``n`` or ``period`` is below 1 or ``cache_size`` below 0.

    Examples
    --------
    >>> tv = tf.TimeVarying.cycle([tf.topologies.ring(4), tf.topologies.complete(4)])
    >>> tv
    TimeVarying(name='cycle', n=4, period=2, params={'names': ['ring', 'complete']})
    >>> tv.at(3).name
    'complete'
    """

    def __init__(
        self,
        n: int,
        at: Callable[[int], Topology],
        *,
        name: str = "custom",
        params: Mapping[str, Any] | None = None,
        period: int | None = None,
        cache_size: int = 128,
    ) -> None:
        self._n = check_int(n, "n", low=1)
        if not callable(at):
            raise TypeError(f"at must be callable (t -> Topology), got {type(at).__name__}")
        self._at = at
        self._name = name
        self._params = MappingProxyType(_params_dict(params))
        self._period = None if period is None else check_int(period, "period", low=1)
        self._cache: OrderedDict[int, Topology] = OrderedDict()
        self._cache_size = check_int(cache_size, "cache_size", low=0)
        self._lock = Lock()

    # -- constructors --------------------------------------------------------------
    @classmethod
    def static(cls, topology: Topology) -> TimeVarying:
        """The constant sequence ``t -> topology`` (period 1).

        Examples
        --------
        >>> tf.TimeVarying.static(tf.topologies.ring(5)).at(10).name
        'ring'
        """
        if not isinstance(topology, Topology):
            raise TypeError(f"topology must be a Topology, got {type(topology).__name__}")
        return cls(
            topology.n,
            lambda t: topology,
            name=topology.name,
            params=topology.params,
            period=1,
        )

    @classmethod
    def cycle(cls, topologies: Sequence[Topology], *, name: str = "cycle") -> TimeVarying:
        """The periodic sequence ``t -> topologies[t % len(topologies)]``.

        Examples
        --------
        >>> tv = tf.TimeVarying.cycle([tf.topologies.ring(3), tf.topologies.star(3)])
        >>> [tv.at(t).name for t in range(3)]
        ['ring', 'star', 'ring']
        """
        tops = list(topologies)
        if not tops:
            raise ValueError("topologies must hold at least one Topology, got an empty sequence")
        for k, t in enumerate(tops):
            if not isinstance(t, Topology):
                raise TypeError(f"topologies[{k}] must be a Topology, got {type(t).__name__}")
            if t.n != tops[0].n:
                raise ValueError(
                    f"all topologies must have the same n; topologies[0] has n={tops[0].n}, "
                    f"topologies[{k}] has n={t.n}"
                )
        return cls(
            tops[0].n,
            lambda t: tops[t],
            name=name,
            params={"names": [t.name for t in tops]},
            period=len(tops),
        )

    # -- access --------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of nodes."""
        return self._n

    @property
    def name(self) -> str:
        """Family name."""
        return self._name

    @property
    def params(self) -> Mapping[str, Any]:
        """The constructor's arguments (read-only)."""
        return self._params

    @property
    def period(self) -> int | None:
        """Period of the sequence, or ``None`` if it is not periodic (e.g. random)."""
        return self._period

    @property
    def is_static(self) -> bool:
        """True for a period-1 sequence."""
        return self._period == 1

    def at(self, t: int) -> Topology:
        """The topology of round ``t`` (``t >= 0``).

        Raises
        ------
        TypeError, ValueError
            If ``t`` is not a non-negative int, or the sequence's function returns something
            that is not a ``Topology`` on ``n`` nodes.
        """
        t = check_int(t, "t", low=0)
        if self._period is not None:
            t = t % self._period
        with self._lock:
            hit = self._cache.get(t)
            if hit is not None:
                self._cache.move_to_end(t)
                return hit
        top = self._at(t)
        if not isinstance(top, Topology):
            raise TypeError(
                f"{self._name}.at({t}) must return a Topology, got {type(top).__name__}"
            )
        if top.n != self._n:
            raise ValueError(
                f"{self._name}.at({t}) returned a graph with n={top.n}, expected {self._n}"
            )
        with self._lock:
            if self._cache_size:
                self._cache[t] = top
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return top

    def __getitem__(self, t: int) -> Topology:
        return self.at(t)

    def window(self, start: int, stop: int) -> Iterator[Topology]:
        """Iterate over ``at(start), ..., at(stop - 1)``.

        Examples
        --------
        >>> tv = tf.TimeVarying.cycle([tf.topologies.ring(3), tf.topologies.star(3)])
        >>> [t.name for t in tv.window(1, 4)]
        ['star', 'ring', 'star']
        """
        start = check_int(start, "start", low=0)
        stop = check_int(stop, "stop", low=start)
        for t in range(start, stop):
            yield self.at(t)

    def __repr__(self) -> str:
        return (
            f"TimeVarying(name={self._name!r}, n={self._n}, period={self._period}, "
            f"params={dict(self._params)!r})"
        )


GraphLike: TypeAlias = Union[Topology, TimeVarying]  # noqa: UP007 (runtime alias on 3.10)


def as_time_varying(graph: GraphLike) -> TimeVarying:
    """Accept a ``Topology`` or a ``TimeVarying`` and return a ``TimeVarying``.

    Examples
    --------
    >>> tf.graph.as_time_varying(tf.topologies.ring(4)).period
    1
    """
    if isinstance(graph, TimeVarying):
        return graph
    if isinstance(graph, Topology):
        return TimeVarying.static(graph)
    raise TypeError(f"expected a Topology or a TimeVarying, got {type(graph).__name__}")
