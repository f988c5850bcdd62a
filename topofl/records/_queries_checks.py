"""What the queries of :class:`~topofl.records.queries.Records` check and answer with, beside
the class (:mod:`topofl.records.queries` imports them back): the types of its arguments and of
a metric's name, the rounds a run's header plans and whether the run reached them
(:class:`RunStatus`), a per-client table widened to more clients, and the warning of a NaN
answer.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np


def _check_records_args(rows: Any, **maps: Any) -> None:
    """Types of the arguments of :class:`Records` (issue 13: no AttributeError from inside)."""
    if rows is not None and (isinstance(rows, (str, bytes, Mapping))
                             or not isinstance(rows, Iterable)):
        raise TypeError(f"rows must be an iterable of row dicts, got {type(rows).__name__}")
    for name, v in maps.items():
        if v is not None and not isinstance(v, Mapping):
            raise TypeError(f"{name} must be a mapping, got {type(v).__name__} {v!r}"[:200])
        if v is not None and name.endswith("s"):  # one mapping per run
            bad = [k for k, m in v.items() if not isinstance(m, Mapping)]
            if bad:
                raise TypeError(f"{name} must map each run to a mapping; {name}[{bad[0]!r}] "
                                f"is {type(v[bad[0]]).__name__}")


@dataclass(frozen=True)
class RunStatus:
    """Whether a run of some records finished (:meth:`Records.status`).

    Attributes
    ----------
    run : str or None
    complete : bool or None
        ``True``: its rows reach the planned last round; ``False``: they stop short, or its
        file was cut mid-write; ``None``: the header plans no number of rounds (and the file
        is not cut), so it cannot be told.
    rounds : int
        Rounds completed at its last row (``max(round) + 1``; 0 without rows).
    planned : int or None
        ``rounds`` of its header (``None`` when absent).
    reason : str
        Why it is not complete (``""`` otherwise).
    """

    run: str | None
    complete: bool | None
    rounds: int
    planned: int | None
    reason: str = ""


def _check_metric(value: Any, what: str = "metric") -> str:
    """``value`` if it can name a recorded metric, else a ``TypeError`` saying so."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str naming a recorded metric (e.g. 'test_acc'), "
                        f"got {type(value).__name__} {value!r}"[:200])
    return value


def _planned_rounds(config: Mapping[str, Any], engine: Mapping[str, Any]) -> int | None:
    """The rounds a header plans: ``config.rounds``, else the engine's (or an old-schema
    config's) ``run.rounds``."""
    for desc, key in ((config, None), (engine, "run"), (config, "run")):
        d = desc.get(key) if key is not None else desc
        if isinstance(d, Mapping):
            v = d.get("rounds")
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                return int(v)
    return None


def _widen(a: np.ndarray, n: int, fill: Any = math.nan) -> np.ndarray:
    """``a`` ``[R, m]`` padded with ``fill`` to ``[R, n]`` columns."""
    if a.shape[1] == n:
        return a
    out = np.full((a.shape[0], n), fill, dtype=a.dtype)
    out[:, :a.shape[1]] = a
    return out


def _warn_nan(metric: str, run: str | None, where: str) -> None:
    warnings.warn(
        f"{metric!r} of run {run!r} is NaN (stored as null) {where}: it was not computable "
        "then (e.g. an empty test set) or training produced NaN", RuntimeWarning, stacklevel=3)
