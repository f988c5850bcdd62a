"""A registry users extend: built-in entries plus the ones a decorator adds (algorithms,
models, datasets).

:class:`Extensible` holds the table and its read-only view, and does the checks every
``register_*`` decorator and ``unregister_*`` function shares: a name is a non-empty
identifier-like string, a taken name is refused unless ``replace=True`` (which warns), and
what was replaced is remembered (:func:`replaced`) so that the records header of a run that
uses a replaced entry says so. Each module keeps its own public functions and documentation.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Generic, TypeVar

__all__ = ["Extensible", "check_name", "replaced"]

F = TypeVar("F", bound=Callable[..., Any])

#: What a registered name looks like: an identifier, ``-`` allowed after the first character
#: (a config, a spec ``"name:key=value"`` and the command line all carry it as it is).
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")

#: ``what`` -> the names whose registered entry replaced another one (every registry's).
_REPLACED: dict[str, set[str]] = {}


def check_name(name: Any, what: str) -> str:
    """``name`` if it can name a ``what`` in a registry, else a ``TypeError`` saying what a
    name must be and what was found.

    Every registry checks its names here (algorithms, models, datasets and graph families):
    a name is what a spec ``"name:key=value,..."``, a config and the command line carry, so
    none of the characters a spec separates with (``:``, ``,``, ``=``, white space) may be
    in it.

    Examples
    --------
    >>> from topofl._utils.registries import check_name
    >>> check_name("my_algo-2", "algorithm")
    'my_algo-2'
    >>> check_name(123, "algorithm")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: an algorithm name must be a non-empty str of letters, digits, ... got int 123
    """
    if not isinstance(name, str) or _NAME.fullmatch(name) is None:
        article = "an" if what[:1] in "aeiou" else "a"
        example = "my_" + what.replace(" ", "_")
        raise TypeError(f"{article} {what} name must be a non-empty str of letters, digits, "
                        "'_' and '-' that does not start with a digit or '-' (identifier-like, "
                        f"e.g. {example!r}: a spec 'name:key=value,...' carries it, so no ':', "
                        f"',', '=' or space), got {type(name).__name__} {name!r}"[:300])
    return name


def replaced(what: str) -> frozenset[str]:
    """The names of ``what`` (``"algorithm"``, ``"model"``, ``"dataset"``) whose entry was
    replaced with ``replace=True`` and not restored since.

    Examples
    --------
    >>> from topofl._utils.registries import replaced
    >>> replaced("algorithm")
    frozenset()
    """
    return frozenset(_REPLACED.get(what, ()))


class Extensible(Generic[F]):
    """``what`` names (e.g. ``"model"``) mapped to callables; the initial ones are built in.

    Parameters
    ----------
    what : str
        What an entry is, in the messages (``"model"``).
    builtin : mapping
        The built-in entries.
    home : str, optional
        A module prefix (``"topofl.algorithms."``): a callable defined there that
        :meth:`register` adds under a free name is built in too (a registry its own modules
        fill by decorating).

    Examples
    --------
    >>> import warnings
    >>> from topofl._utils.registries import Extensible
    >>> reg = Extensible("model", {"a": len})
    >>> reg.register("b", "constructor")(abs) is abs, sorted(reg.view)
    (True, ['a', 'b'])
    >>> reg.register("a", "constructor")(abs)
    Traceback (most recent call last):
    ...
    ValueError: model 'a' is already registered (built in): pass replace=True to replace it
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = reg.register("a", "constructor", replace=True)(abs)
    >>> reg.view["a"] is abs, reg.replaced_names, len(caught)
    (True, ['a'], 1)
    >>> reg.unregister("a")  # the built-in entry is back
    >>> reg.view["a"] is len, reg.replaced_names
    (True, [])
    >>> reg.unregister("a")
    Traceback (most recent call last):
    ...
    ValueError: model 'a' is built in: only a model register_model added can be removed
    """

    def __init__(self, what: str, builtin: Mapping[str, F], *, home: str | None = None) -> None:
        self.what = what
        self.table: dict[str, F] = dict(builtin)
        self.view: Mapping[str, F] = MappingProxyType(self.table)
        self.builtin: set[str] = set(builtin)
        self.home = home
        #: name -> the entry a ``replace=True`` registration replaced (the first one)
        self.originals: dict[str, F] = {}
        _REPLACED.setdefault(what, set())

    @property
    def replaced_names(self) -> list[str]:
        """The names whose entry was replaced (sorted)."""
        return sorted(self.originals)

    def register(self, name: str, kind: str, *, replace: bool = False,
                 same: Callable[[str], str | None] | None = None) -> Callable[[F], F]:
        """The decorator adding ``name``: ``kind`` names the callable in the messages,
        ``same`` maps a name to the registered one it would clash with (default: itself).

        A name taken by another callable is refused (``ValueError``) unless ``replace`` is
        true: the entry is then replaced with a ``UserWarning`` and remembered
        (:func:`replaced`, :meth:`unregister` restores it). The same callable again is a
        no-op.
        """
        check_name(name, self.what)
        if not isinstance(replace, bool):
            raise TypeError(f"replace must be a bool, got {type(replace).__name__} {replace!r}")

        def deco(fn: F) -> F:
            if not callable(fn):
                raise TypeError(f"a {self.what} {kind} must be callable, got "
                                f"{type(fn).__name__}")
            clash = same(name) if same is not None else (name if name in self.table else None)
            if clash is not None and self.table[clash] is fn:
                return fn
            if clash is None:
                self.table[name] = fn
                if self.home and str(getattr(fn, "__module__", "")).startswith(self.home):
                    self.builtin.add(name)
                return fn
            also = "" if clash == name else f" as {clash!r}"
            origin = "built in" if clash in self.builtin else "registered earlier"
            if not replace:
                raise ValueError(f"{self.what} {name!r} is already registered{also} ({origin}): "
                                 "pass replace=True to replace it")
            warnings.warn(
                f"{self.what} {clash!r} ({origin}) is replaced by "
                f"{getattr(fn, '__qualname__', type(fn).__name__)}: a run that names it runs "
                f"the new {kind}, and its records header says \"replaced\" (unregister_"
                f"{self.what}({clash!r}) restores the previous one)", UserWarning, stacklevel=3)
            self.originals.setdefault(clash, self.table[clash])
            self.table[clash] = fn
            _REPLACED[self.what].add(clash)
            return fn

        return deco

    def unregister(self, name: str) -> None:
        """Remove ``name``, which :meth:`register` added; a replaced entry gets back the one
        it replaced (a built-in one too)."""
        if name in self.originals:
            self.table[name] = self.originals.pop(name)
            _REPLACED[self.what].discard(name)
            return
        if name in self.builtin or name not in self.table:
            why = "built in" if name in self.builtin else "not registered"
            raise ValueError(f"{self.what} {name!r} is {why}: only a {self.what} "
                             f"register_{self.what} added can be removed")
        del self.table[name]

    def restore(self, table: Mapping[str, F], originals: Mapping[str, F]) -> None:
        """Put back a :meth:`snapshot` (tests: what a block registered is gone after it)."""
        self.table.clear()
        self.table.update(table)
        self.originals.clear()
        self.originals.update(originals)
        _REPLACED[self.what].clear()
        _REPLACED[self.what].update(originals)

    def snapshot(self) -> tuple[dict[str, F], dict[str, F]]:
        """The table and the replaced entries as they are now (for :meth:`restore`)."""
        return dict(self.table), dict(self.originals)
