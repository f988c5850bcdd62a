"""A value against a type annotation (a config's keys, a factory's keyword arguments), and
the annotation in words for the message.
"""

from __future__ import annotations

import numbers
import types
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Union, get_args, get_origin

import numpy as np

from topofl._utils.validation.scalars import _type_name

__all__ = ["check_type", "type_text"]


def _fits(value: Any, tp: Any) -> bool:
    """Whether ``value`` is of the (evaluated) annotation ``tp``."""
    if tp is Any or tp is object:
        return True
    if tp is None or tp is type(None):
        return value is None
    origin, args = get_origin(tp), get_args(tp)
    if origin is Union or origin is types.UnionType:
        return any(_fits(value, a) for a in args)
    if origin is Literal:
        return any(value == a and type(value) is type(a) for a in args)
    if tp is bool:
        return isinstance(value, (bool, np.bool_))
    if tp is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))
    if tp is float:
        return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
    if origin is None:  # a plain class, or what cannot be checked (a string, a TypeVar)
        return isinstance(value, tp) if isinstance(tp, type) else True
    if _is_sequence(origin):
        if not isinstance(value, (list, tuple)):
            return False
        if origin is tuple and args and args[-1] is not Ellipsis:  # tuple[int, str]
            return len(value) == len(args) and all(map(_fits, value, args))
        return all(_fits(v, args[0]) for v in value) if args else True
    if isinstance(origin, type) and issubclass(origin, Mapping):
        if not isinstance(value, Mapping):
            return False
        key, val = args if len(args) == 2 else (Any, Any)
        return all(_fits(k, key) and _fits(v, val) for k, v in value.items())
    return isinstance(value, origin) if isinstance(origin, type) else True


def _is_sequence(origin: Any) -> bool:
    return isinstance(origin, type) and origin is not str and issubclass(origin, Sequence)


def type_text(tp: Any) -> str:
    """An annotation in words, for the message of :func:`check_type`.

    Examples
    --------
    >>> from collections.abc import Sequence
    >>> from topofl._utils.validation.typecheck import type_text
    >>> type_text(float | None), type_text(Sequence[int]), type_text(bool)
    ('a real number or None', 'a list of int', 'a bool (True or False)')
    """
    if tp is Any or tp is object:
        return "anything"
    if tp is None or tp is type(None):
        return "None"
    words = {bool: "a bool (True or False)", int: "an int", float: "a real number",
             str: "a str"}
    if tp in words:
        return words[tp]
    origin, args = get_origin(tp), get_args(tp)
    if origin is Union or origin is types.UnionType:
        parts = [type_text(a) for a in args]
        return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin is not None and _is_sequence(origin):
        elem = args[0] if args and (origin is not tuple or args[-1] is Ellipsis) else None
        noun = getattr(elem, "__name__", None) if isinstance(elem, type) else None
        return f"a list of {noun or type_text(elem)}" if elem is not None else "a list"
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        return "a mapping"
    name = getattr(tp, "__name__", str(tp))
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def check_type(value: Any, tp: Any, name: str) -> Any:
    """Return ``value`` if it is of the annotation ``tp``, else raise ``TypeError``.

    ``tp`` is an evaluated annotation (:func:`typing.get_type_hints` evaluates the strings of
    ``from __future__ import annotations``): ``int``, ``float`` (an int is a real number),
    ``bool``, ``str``, a class, ``X | None``, ``Literal[...]``, ``tuple[X, ...]``,
    ``Sequence[X]`` (a list or a tuple), ``Mapping[K, V]``; ``Any`` or an annotation it cannot
    read accepts anything. ``bool`` is not an int here.

    Examples
    --------
    >>> from topofl._utils.validation.typecheck import check_type
    >>> check_type([64, 32], tuple[int, ...], "hidden")
    [64, 32]
    >>> check_type("2", int | None, "shards_per_client")
    Traceback (most recent call last):
    ...
    TypeError: shards_per_client must be an int or None, got str '2'
    """
    if not _fits(value, tp):
        raise TypeError(f"{name} must be {type_text(tp)}, got {_type_name(value)} "
                        f"{value!r}"[:300])
    return value

