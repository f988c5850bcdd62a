"""One value: a bool, an int or a real number in a range, one of some names, a path.

Every message says which argument was wrong, what was expected and what was found.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Collection
from typing import Any

import numpy as np

from topofl._utils.validation.names import did_you_mean

__all__ = ["check_bool", "check_int", "check_real", "check_choice", "check_path"]


def _type_name(value: object) -> str:
    return type(value).__name__


def check_int(
    value: Any,
    name: str,
    *,
    low: int | None = None,
    high: int | None = None,
) -> int:
    """Return ``value`` as an ``int`` in ``[low, high]`` or raise.

    Raises
    ------
    TypeError
        If ``value`` is not an integer (``bool`` and non-integral floats are refused).
    ValueError
        If it lies outside ``[low, high]``.

    Examples
    --------
    >>> from topofl._utils.validation.scalars import check_int
    >>> check_int(3, "n", low=1)
    3
    >>> check_int(0, "n", low=1)
    Traceback (most recent call last):
    ...
    ValueError: n must be >= 1, got 0
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {_type_name(value)} {value!r}")
    v = int(value)
    if low is not None and high is not None and not low <= v <= high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {v}")
    if low is not None and v < low:
        raise ValueError(f"{name} must be >= {low}, got {v}")
    if high is not None and v > high:
        raise ValueError(f"{name} must be <= {high}, got {v}")
    return v


def check_bool(value: Any, name: str) -> bool:
    """Return ``value`` if it is a ``bool`` (or ``numpy.bool_``) or raise ``TypeError``.

    Truthy strings such as ``"no"`` are refused rather than read as ``True``.

    Examples
    --------
    >>> from topofl._utils.validation.scalars import check_bool
    >>> check_bool(False, "connected")
    False
    >>> check_bool("no", "connected")
    Traceback (most recent call last):
    ...
    TypeError: connected must be a bool (True or False), got str 'no'
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be a bool (True or False), got {_type_name(value)} {value!r}")


def check_real(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a finite ``float`` in the given interval or raise.

    Examples
    --------
    >>> from topofl._utils.validation.scalars import check_real
    >>> check_real(0.5, "p", low=0, high=1)
    0.5
    >>> check_real(1.5, "p", low=0, high=1)
    Traceback (most recent call last):
    ...
    ValueError: p must be in [0, 1], got 1.5
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {_type_name(value)} {value!r}")
    v = float(value)
    if math.isnan(v):
        raise ValueError(f"{name} must be a number, got nan")
    lo_ok = low is None or (v > low if low_open else v >= low)
    hi_ok = high is None or (v < high if high_open else v <= high)
    if not (lo_ok and hi_ok):
        lb = "(" if low_open else "["
        rb = ")" if high_open else "]"
        lo_s = "-inf" if low is None else f"{low:g}"
        hi_s = "inf" if high is None else f"{high:g}"
        raise ValueError(f"{name} must be in {lb}{lo_s}, {hi_s}{rb}, got {v:g}")
    if math.isinf(v):
        raise ValueError(f"{name} must be finite, got {v}")
    return v


def check_choice(value: Any, name: str, choices: Collection[str]) -> str:
    """Return ``value`` if it is one of ``choices`` or raise a ``ValueError`` listing them.

    Examples
    --------
    >>> from topofl._utils.validation.scalars import check_choice
    >>> check_choice("ring", "inter", ["ring", "fractal"])
    'ring'
    """
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {_type_name(value)} {value!r}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}"
                         f"{did_you_mean(value, choices)}")
    return value


def check_path(value: Any, name: str, *, optional: bool = True) -> Any:
    """Return ``value`` if it is a path (``str`` or ``os.PathLike``; ``None`` if optional).

    Examples
    --------
    >>> from topofl._utils.validation.scalars import check_path
    >>> check_path("runs/a.jsonl", "records_path")
    'runs/a.jsonl'
    >>> check_path(123, "records_path")
    Traceback (most recent call last):
    ...
    TypeError: records_path must be a path (str or os.PathLike) or None, got int 123
    """
    if value is None and optional:
        return value
    if isinstance(value, (str, os.PathLike)) and not isinstance(value, bytes):
        if isinstance(value, str) and "\x00" in value:
            raise ValueError(f"{name} must not contain a NUL character, got {value!r}")
        return value
    what = "a path (str or os.PathLike)" + (" or None" if optional else "")
    raise TypeError(f"{name} must be {what}, got {_type_name(value)} {value!r}"[:300])

