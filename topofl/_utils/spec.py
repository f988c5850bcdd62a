"""Spec strings ``"name:key=value,key=value"``: graphs (``ring:n=16``) and datasets
(``synthetic:n_samples=5000,seed=0``) share one grammar."""

from __future__ import annotations

import math
from typing import Any


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


def parse_spec(spec: str, what: str = "graph", example: str = "ring:n=16"
               ) -> tuple[str, dict[str, Any]]:
    """Parse ``"name:key=value,..."`` into ``(name, kwargs)``; ``what`` names the kind in errors.

    Examples
    --------
    >>> from topofl._utils.spec import parse_spec
    >>> parse_spec("synthetic:n_samples=500,seed=0", "dataset")
    ('synthetic', {'n_samples': 500, 'seed': 0})
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"a {what} spec must be a non-empty string like {example!r}, "
                         f"got {spec!r}")
    name, _, rest = spec.strip().partition(":")
    kwargs: dict[str, Any] = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(
                f"{what} spec {spec!r}: expected key=value pairs after ':', got {item!r}"
            )
        kwargs[key.strip()] = parse_value(value.strip())
    return name.strip(), kwargs
