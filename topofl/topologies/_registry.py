"""The registry of graph families: every constructor with its parameters and valid ranges.

Tests iterate over it (one contract suite for every family), the command line lists it, and the
spectral report builds graphs from short specs such as ``"ring:n=64"`` through it. Modules that
add a family call :func:`register` at import time.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from topofl._utils.registries import check_name
from topofl._utils.rng import Seed
from topofl._utils.spec import parse_spec as _parse_spec
from topofl._utils.spec import parse_value
from topofl._utils.validation import check_int, did_you_mean_each, unknown_name
from topofl.graph import GraphLike
from topofl.graph.checks import check_w_size

__all__ = ["Param", "GraphFamily", "Registry", "REGISTRY", "SCHEDULES", "register", "parse_spec",
           "check_spec", "build"]


@dataclass(frozen=True)
class Param:
    """One parameter of a graph family: its type, bounds and meaning (for docs and the CLI)."""

    name: str
    type: type
    doc: str
    low: float | None = None
    high: str | float | None = None  # a number, or an expression of n such as "n-1"
    choices: tuple[str, ...] | None = None

    def describe(self) -> str:
        """One line, e.g. ``"d: int in [0, n-1] -- degree of every node"``."""
        if self.choices is not None:
            rng = " in {" + ", ".join(self.choices) + "}"
        elif self.low is not None or self.high is not None:
            lo = "-inf" if self.low is None else f"{self.low:g}"
            hi = "inf" if self.high is None else str(self.high)
            rng = f" in [{lo}, {hi}]"
        else:
            rng = ""
        return f"{self.name}: {self.type.__name__}{rng} -- {self.doc}"


ExampleFn = Callable[[int, np.random.Generator], "dict[str, Any] | None"]


@dataclass(frozen=True)
class GraphFamily:
    """A registered graph family.

    Attributes
    ----------
    name : str
        Registry key, also the ``name`` of the graphs it builds.
    func : callable
        The public constructor (``tf.topologies.ring`` ...).
    params : tuple of Param
        Its parameters (without ``seed`` and ``weights``).
    example : callable ``(n, rng) -> dict | None``
        Keyword arguments (without ``seed``) that build a valid graph on exactly ``n`` nodes, or
        ``None`` if the family has no member of that size; used by the contract tests.
    random : bool
        Whether ``func`` takes the keyword-only ``seed``.
    time_varying : bool
        Whether ``func`` returns a :class:`~topofl.TimeVarying`.
    stochastic : str
        What every ``W`` of the family is: ``"doubly"``, ``"row"`` or ``"column"``.
    undirected : bool
        Whether every graph of the family is undirected (symmetric ``W`` for doubly stochastic
        families).
    connected : bool
        Whether every graph (or every window of ``period`` rounds) is strongly connected.
    from_spec : callable, optional
        Builds a graph from the keyword arguments of a spec string when they differ from
        ``func``'s (e.g. ``dcliques:n=100`` draws label distributions); defaults to ``func``.
    from_labels : callable, optional
        ``from_labels(label_distributions, **kwargs, seed=...)``: builds the graph for clients
        with these label counts (``dcliques`` for a run's data), used by :func:`build` when it
        is given them.
    """

    name: str
    func: Callable[..., GraphLike]
    params: tuple[Param, ...]
    example: ExampleFn
    random: bool = False
    time_varying: bool = False
    stochastic: str = "doubly"
    undirected: bool = True
    connected: bool = True
    description: str = ""
    from_spec: Callable[..., GraphLike] | None = field(default=None)
    from_labels: Callable[..., GraphLike] | None = field(default=None)

    def __call__(self, *args: Any, **kwargs: Any) -> GraphLike:
        return self.func(*args, **kwargs)

    def missing(self, kwargs: Mapping[str, Any]) -> list[str]:
        """The parameters without a default that spec-style ``kwargs`` leave out (``seed``
        apart, which :meth:`build` passes).

        Examples
        --------
        >>> fam = tf.topologies.REGISTRY["random_regular"]
        >>> fam.missing({"n": 8}), fam.missing({"n": 8, "d": 3})
        (['d'], [])
        """
        return _missing(self.from_spec if self.from_spec is not None else self.func, kwargs)

    def needs(self, kwargs: Mapping[str, Any], *, but: tuple[str, ...] = ()) -> str | None:
        """What spec-style ``kwargs`` miss (:meth:`missing`, less the names ``but``), as the
        one line that refuses them, or ``None``.

        Examples
        --------
        >>> print(tf.topologies.REGISTRY["torus"].needs({"rows": 4}))
        ... # doctest: +NORMALIZE_WHITESPACE
        torus needs the parameter(s) cols (a spec such as torus:rows=4,cols=...); parameters
        of torus: rows, cols
        """
        missing = [m for m in self.missing(kwargs) if m not in but]
        if not missing:
            return None
        known = ", ".join(p.name for p in self.params)
        spec = ",".join([f"{k}={v}" for k, v in kwargs.items()] + [f"{m}=..." for m in missing])
        return (f"{self.name} needs the parameter(s) {', '.join(missing)} (a spec such as "
                f"{self.name}:{spec}); parameters of {self.name}: {known}")

    def build(self, *, seed: Seed | None = None, **kwargs: Any) -> GraphLike:
        """Build from spec-style keyword arguments; ``seed`` is passed to random families only."""
        fn = self.from_spec if self.from_spec is not None else self.func
        why = self.needs(kwargs)
        if why is not None:
            raise ValueError(why)
        if self.random:
            if seed is None:
                raise TypeError(f"{self.name} is random: pass seed=<int>")
            return fn(**kwargs, seed=seed)
        return fn(**kwargs)

    def describe(self) -> str:
        """A few lines for ``topofl list``."""
        head = f"{self.name}{' (random)' if self.random else ''}" + (
            " (time-varying)" if self.time_varying else ""
        )
        lines = [head + (f": {self.description}" if self.description else "")]
        lines += [f"    {p.describe()}" for p in self.params]
        return "\n".join(lines)


def _missing(fn: Callable[..., Any], kwargs: Mapping[str, Any]) -> list[str]:
    """The parameters of ``fn`` without a default that ``kwargs`` does not give (``seed``
    apart, which :meth:`GraphFamily.build` passes)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # pragma: no cover - a builtin without a signature
        return []
    return [p.name for p in sig.parameters.values()
            if p.default is p.empty and p.name not in kwargs and p.name != "seed"
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


class Registry(Mapping[str, GraphFamily]):
    """Read-only mapping ``name -> GraphFamily`` that modules extend with :func:`register`."""

    def __init__(self) -> None:
        self._items: dict[str, GraphFamily] = {}

    def __getitem__(self, key: str) -> GraphFamily:
        try:
            return self._items[key]
        except KeyError:
            raise KeyError(unknown_name("graph family", key, self._items)) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Registry({sorted(self._items)})"

    def _add(self, family: GraphFamily) -> GraphFamily:
        if family.name in self._items and self._items[family.name].func is not family.func:
            raise ValueError(f"graph family {family.name!r} is already registered")
        self._items[family.name] = family
        return family


REGISTRY = Registry()

#: The schedules a spec may name beside the families (``switch``, ``periodic_averaging``;
#: :mod:`topofl.topologies.schedules`): their parameters are specs of other graphs, so they
#: combine families rather than being one (not in :data:`REGISTRY`).
SCHEDULES: dict[str, GraphFamily] = {}


def register(family: GraphFamily) -> GraphFamily:
    """Add a family to :data:`REGISTRY` (idempotent for the same function).

    Its name is what a graph spec ``"name:key=value,..."`` names it by: a non-empty
    identifier-like str (letters, digits, ``_`` and ``-``, not starting with a digit or
    ``-``), as for the other registries (:func:`topofl.algorithms.register_algorithm`).

    Raises
    ------
    TypeError
        If ``family`` is not a :class:`GraphFamily`, or its name is not a non-empty
        identifier-like str (``""``, or ``"a:b=1"``, which a spec would read as family ``a``
        with ``b=1``).
    ValueError
        If another function is registered under its name.

    Examples
    --------
    >>> fam = tf.topologies.GraphFamily(
    ...     "a:b=1", tf.topologies.ring, (tf.topologies.Param("n", int, "nodes"),),
    ...     example=lambda n, rng: {"n": n})
    >>> tf.topologies.register(fam)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: a graph family name must be a non-empty str of letters, ... got str 'a:b=1'
    """
    if not isinstance(family, GraphFamily):
        raise TypeError(f"family must be a topofl.topologies.GraphFamily, got "
                        f"{type(family).__name__} {family!r}"[:300])
    check_name(family.name, "graph family")
    return REGISTRY._add(family)


_parse_value = parse_value


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """Parse ``"family:key=value,key=value"`` into ``(family, kwargs)``.

    Values are read as bool, None, int, float, or else kept as strings (``"1e9"`` is the float
    ``1e9`` here; :func:`build` converts it to the int a parameter needs, exactly). A key
    given twice (``"ring:n=5,n=6"``) is refused with a ``ValueError``.

    Examples
    --------
    >>> from topofl.topologies import parse_spec
    >>> parse_spec("torus:rows=4,cols=8")
    ('torus', {'rows': 4, 'cols': 8})
    >>> parse_spec("random_regular:n=16,d=3")
    ('random_regular', {'n': 16, 'd': 3})
    """
    return _parse_spec(spec, "graph", "ring:n=16")


def _spec_keys(family: GraphFamily) -> list[str]:
    """The keys a spec of ``family`` may hold: its parameters, or what its ``from_spec``
    takes (with the parameters it passes on to the constructor)."""
    known = [p.name for p in family.params]
    if family.from_spec is None:
        return known
    kinds = inspect.signature(family.from_spec).parameters.values()
    named = [q.name for q in kinds if q.kind not in (q.VAR_KEYWORD, q.VAR_POSITIONAL)
             and q.name != "seed"]
    if any(q.kind is q.VAR_KEYWORD for q in kinds):
        return known + [k for k in named if k not in known]
    return named


def check_spec(spec: str) -> tuple[GraphFamily, dict[str, Any]]:
    """A spec's family and its keyword arguments, checked without building the graph.

    The one check of a graph spec, for every path that takes one (:func:`build`,
    ``topofl.run``'s ``topology``, a config's ``topology``, ``topofl spectral``): the family
    must be registered, every key one of its parameters, and an int parameter written as a
    float a whole number (``ring:n=1e1`` is ``ring(n=10)``; ``ring:n=2.5`` is refused).

    Raises
    ------
    ValueError
        For a malformed spec, an unknown family or parameter (the message lists the known
        ones), a parameter without a default left out (``n`` apart, which a run gives), or
        an int parameter that is not a whole number.

    Examples
    --------
    >>> from topofl.topologies import check_spec
    >>> family, kwargs = check_spec("ring:n=1e1")
    >>> family.name, kwargs
    ('ring', {'n': 10})
    >>> check_spec("ring:m=3")
    Traceback (most recent call last):
    ...
    ValueError: graph spec 'ring:m=3': unknown parameter(s) ['m']; parameters of ring: n
    """
    name, kwargs = parse_spec(spec)
    if name in SCHEDULES:
        family = SCHEDULES[name]
    elif name in REGISTRY:
        family = REGISTRY[name]
    else:
        raise ValueError(f"graph spec {spec!r}: " + unknown_name(
            "graph family", name, [*REGISTRY, *SCHEDULES]))  # the known list: schedules too
    known = _spec_keys(family)
    unknown = sorted(set(kwargs) - set(known))
    if unknown:
        raise ValueError(f"graph spec {spec!r}: unknown parameter(s) {unknown}"
                         f"{did_you_mean_each(unknown, known)}; parameters of {name}: "
                         f"{', '.join(known)}")
    why = family.needs(kwargs, but=("n",))  # n: the run's number of clients when left out
    if why is not None:
        raise ValueError(f"graph spec {spec!r}: {why}")
    return family, _spec_ints(spec, family, kwargs)


def _spec_ints(spec: str, family: GraphFamily, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Float values of int parameters as exact ints (``1e9`` -> ``1000000000``), else an error."""
    out = dict(kwargs)
    for p in family.params:
        v = out.get(p.name)
        if p.type is int and isinstance(v, float):
            if not v.is_integer():
                raise ValueError(
                    f"graph spec {spec!r}: {p.name} must be an int, got {v!r}, which is not a "
                    "whole number"
                )
            out[p.name] = int(v)
    return out


def build(spec: str, *, seed: Seed = 0, n: int | None = None,
          label_distributions: Any = None) -> GraphLike:
    """Build the graph a spec string describes (``seed`` is used by random families).

    The spec is checked by :func:`check_spec`: an int parameter written as a float is
    converted exactly when it is a whole number (``ring:n=1e3`` is ``ring(1000)``) and refused
    otherwise (``ring:n=2.5``). A graph that would not fit in memory is refused before it is
    built, with the estimate in the message.

    Parameters
    ----------
    spec : str
        ``"family:key=value,..."`` (``topofl list graphs``).
    seed : int or Generator, default 0
    n : int, optional
        The number of clients of a run: the ``n`` of a family that has one when the spec
        leaves it out (``"ring"`` is ``ring(n)``). An int or a numpy integer: a float (even a
        whole one), a bool or a string is refused, as by the families' own constructors.
    label_distributions : array ``(n, L)``, optional
        The clients' training label counts: a family built from them (``dcliques``) uses
        them instead of the spec's ``n``.

    Raises
    ------
    TypeError
        If ``n`` is given and is not an integer.
    ValueError
        For a malformed spec, an unknown family or parameter, a bad parameter, or a graph too
        large for the available memory.

    Examples
    --------
    >>> tf.topologies.build("ring:n=6")
    Topology(name='ring', n=6, edges=6, undirected, doubly stochastic, params={'n': 6})
    >>> tf.topologies.build("ring:n=6e0").n, tf.topologies.build("ring", n=5).n
    (6, 5)
    >>> tf.topologies.build("ring:n=1e10")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: graph spec 'ring:n=1e10': ring on n=10000000000 nodes needs about 2.91 TiB ...
    """
    family, kwargs = check_spec(spec)
    return build_checked(spec, family, kwargs, seed=seed, n=n,
                         label_distributions=label_distributions)


def build_checked(spec: str, family: GraphFamily, kwargs: Mapping[str, Any], *, seed: Seed = 0,
                  n: int | None = None, label_distributions: Any = None) -> GraphLike:
    """:func:`build` of a spec that :func:`check_spec` has read into ``family, kwargs``: the
    spec is not parsed again (``topofl.run`` checks it before reading any data and builds it
    after). ``spec`` names the graph in errors; ``n`` is checked as in :func:`build`."""
    if n is not None:
        n = check_int(n, "n")
    kwargs = dict(kwargs)
    name = family.name
    try:
        if label_distributions is not None and family.from_labels is not None:
            kwargs.pop("n", None)  # the data decide
            return family.from_labels(label_distributions, **kwargs, seed=seed)
        if n is not None and "n" not in kwargs and any(p.name == "n" for p in family.params):
            kwargs["n"] = n
        size = kwargs.get("n")
        if isinstance(size, int) and not isinstance(size, bool) and size > 0:
            # A lower bound for every family (the W of n nodes and a ring's 2n arcs), checked
            # before the family's own constructor runs its exact estimate.
            try:
                check_w_size(size, 2 * size, f"{name} on n={size} nodes")
            except ValueError as exc:
                raise ValueError(f"graph spec {spec!r}: {exc}") from None
        return family.build(seed=seed, **kwargs)
    except TypeError as exc:
        known = ", ".join(p.name for p in family.params)
        raise ValueError(f"graph spec {spec!r}: {exc} (parameters of {name}: {known})") from exc
