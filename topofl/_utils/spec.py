"""Spec strings ``"name:key=value,key=value"``: graphs (``ring:n=16``) and datasets
(``synthetic:n_samples=5000,seed=0``) share one grammar."""

from __future__ import annotations

import math
from typing import Any

#: The deepest a spec may nest specs in parentheses (``switch:first=(switch:first=(...)...)``
#: is two levels). Each level is a graph built within the one above, so a spec nested
#: hundreds deep would exhaust Python's stack; it is refused by its depth before any parsing.
MAX_SPEC_DEPTH = 16


def parse_value(text: str) -> Any:
    """A spec value as bool, None, int, float, or else the string itself."""
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        v = float(text)
        if math.isfinite(v):
            return v
    except ValueError:
        pass
    return text


def spec_depth(spec: str) -> int:
    """How deep ``spec`` nests parentheses (``0`` for none), in one pass.

    Examples
    --------
    >>> from topofl._utils.spec import spec_depth
    >>> spec_depth("ring"), spec_depth("switch:first=(switch:first=(ring),then=ring),then=x")
    (0, 2)
    """
    depth = deepest = 0
    for ch in spec:
        if ch == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == ")":
            depth -= 1
    return deepest


def _items(rest: str, spec: str, what: str) -> list[str]:
    """``rest`` split at its commas outside parentheses (a nested spec's own commas kept)."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(rest):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise ValueError(f"{what} spec {spec!r}: a ')' without its '('")
        elif ch == "," and depth == 0:
            items.append(rest[start:i])
            start = i + 1
    if depth:
        raise ValueError(f"{what} spec {spec!r}: a '(' without its ')'")
    items.append(rest[start:])
    return [s.strip() for s in items if s.strip()]


def _wrapped(value: str) -> bool:
    """Whether ``value`` is one group in parentheses, ``"(...)"`` (not ``"(a)(b)"``)."""
    if not value.startswith("("):
        return False
    depth = 0
    for i, ch in enumerate(value):
        depth += (ch == "(") - (ch == ")")
        if depth == 0:
            return i == len(value) - 1
    return False


def parse_spec(spec: str, what: str = "graph", example: str = "ring:n=16"
               ) -> tuple[str, dict[str, Any]]:
    """Parse ``"name:key=value,..."`` into ``(name, kwargs)``; ``what`` names the kind in errors.

    A value in parentheses is kept as the text inside them, commas included: a spec within a
    spec (``switch:first=(random_regular:d=4),then=complete,at=50``). A key given twice
    (``ring:n=5,n=6``) is refused.

    Raises
    ------
    ValueError
        If ``spec`` is not a non-empty string, an item is not ``key=value``, the parentheses do
        not match, a key is repeated, or specs nest deeper than :data:`MAX_SPEC_DEPTH`.

    Examples
    --------
    >>> from topofl._utils.spec import parse_spec
    >>> parse_spec("synthetic:n_samples=500,seed=0", "dataset")
    ('synthetic', {'n_samples': 500, 'seed': 0})
    >>> parse_spec("switch:first=(random_regular:d=4,seed=1),at=5")
    ('switch', {'first': 'random_regular:d=4,seed=1', 'at': 5})
    >>> parse_spec("switch:first=(" * 17 + "ring" + "),then=ring,at=1" * 17)
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: graph spec 'switch:first=(switch:first=(...' nests specs 17 deep: at most 16 ...
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"a {what} spec must be a non-empty string like {example!r}, "
                         f"got {spec!r}"[:300])
    depth = spec_depth(spec)
    if depth > MAX_SPEC_DEPTH:
        shown = spec if len(spec) <= 60 else spec[:30] + "..."
        raise ValueError(f"{what} spec {shown!r} nests specs {depth} deep: at most "
                         f"{MAX_SPEC_DEPTH} levels of parentheses "
                         "(topofl._utils.spec.MAX_SPEC_DEPTH)")
    name, _, rest = spec.strip().partition(":")
    kwargs: dict[str, Any] = {}
    for item in _items(rest, spec, what):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(
                f"{what} spec {spec!r}: expected key=value pairs after ':', got {item!r}"
            )
        value = value.strip()
        key = key.strip()
        if key in kwargs:
            raise ValueError(
                f"{what} spec {spec!r}: the key {key!r} is given twice (each key at most once)"
            )
        kwargs[key] = value[1:-1].strip() if _wrapped(value) else parse_value(value)
    return name.strip(), kwargs
