"""The row format the writer, the reader and the queries share: what a stored value may be.

A row's ``value`` is a number, ``null`` (NaN), ``"inf"``/``"-inf"`` (``"nan"`` is read too), or
a (nested) list of those such as an edge list. :func:`_value_problem` says why a value is not
one (the writer refuses to write it, the reader to load it); :func:`_number` and
:func:`_as_float` read one back as a float.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

#: The keys of every row.
ROW_KEYS = ("run", "round", "client", "metric", "value")

#: The text values a row may hold besides numbers: how :class:`Recorder` stores infinities
#: (NaN is stored as ``null``; ``"nan"`` is read too).
_NONFINITE_TEXT = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def _value_problem(value: Any, depth: int = 0) -> str | None:
    """Why ``value`` (a decoded JSON value) is not a records value, or ``None`` if it is one:
    a number, ``null``, ``"inf"``/``"-inf"``/``"nan"``, or a (nested) list of those."""
    if value is None or isinstance(value, (bool, int, float)):
        return None
    if isinstance(value, str):
        return None if value in _NONFINITE_TEXT else "is text, not a number"
    if isinstance(value, list):
        if depth >= 4:
            return "is a list nested more than 4 deep"
        for v in value:
            if v is None or isinstance(v, (bool, int, float)):
                continue
            inner = _value_problem(v, depth + 1)
            if inner is not None:
                return f"is a list with an entry that {inner}"
        return None
    return f"is a {_json_type(value)}, not a number"


def _json_type(value: Any) -> str:
    names: dict[type, str] = {dict: "JSON object", list: "list", str: "text"}
    return names.get(type(value), type(value).__name__)


def _number(value: Any, metric: str, run: str | None, round: int, client: int | None) -> float:
    """A stored value as float (as :func:`_as_float`), or a ``ValueError`` naming the row when
    it is not a number."""
    if value is None:
        return math.nan
    if isinstance(value, (bool, int, float)):
        return float(value)
    if isinstance(value, str) and value in _NONFINITE_TEXT:
        return _NONFINITE_TEXT[value]
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    who = "" if client is None else f", client {client}"
    raise ValueError(
        f"{metric!r} of run {run!r} at round {round}{who} is not a number: {shown} (a "
        f"{_json_type(value)}){' -- read it with to_rows()' if isinstance(value, list) else ''}")


def _as_float(value: Any) -> float:
    """A stored value as float: ``None`` -> NaN, ``"inf"``/``"-inf"`` -> inf, other text NaN."""
    if value is None:
        return math.nan
    if isinstance(value, (bool, int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return math.nan
    return math.nan


def _header_run_id(config: Mapping[str, Any], engine: Mapping[str, Any]) -> str | None:
    """The run id a header names: ``config["run_id"]``, else the engine's ``run.run_id``."""
    if isinstance(config.get("run_id"), str):
        return str(config["run_id"])
    for desc in (engine, config):  # the engine description, or an old-schema config
        run = desc.get("run")
        if isinstance(run, Mapping) and isinstance(run.get("run_id"), str):
            return str(run["run_id"])
    return None


def header_run_hash(header: Mapping[str, Any]) -> str | None:
    """The run hash a records header carries (``engine.run_hash``, else ``config.run_hash``)."""
    for part in ("engine", "config"):
        d = header.get(part)
        if isinstance(d, Mapping) and isinstance(d.get("run_hash"), str):
            return str(d["run_hash"])
    return None
