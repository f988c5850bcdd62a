"""The runs of a sweep: the Cartesian product of its ``[sweep]`` table, each run's config
(validated) and name, and the shards that split them over machines.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from topofl._utils.validation import check_time
from topofl.config import ConfigError, ConfigTypeError, split_sweep, validate

__all__ = ["SweepRun", "plan", "select", "parse_shard", "run_name"]


# settings that say where a run writes, not what it computes: a sweep sets them per run
_WHERE = frozenset({"records_path", "checkpoint_path", "checkpoint_every", "progress", "run_id"})
_MAX_NAME = 120


@dataclass(frozen=True)
class SweepRun:
    """One run of a sweep.

    Attributes
    ----------
    index : int
        Position in the full sweep (0-based).
    name : str
        File stem and run id, built from the varying keys.
    values : dict
        The values of the ``[sweep]`` keys for this run.
    config : dict
        The run's config (base keys and ``values``), not yet resolved.
    """

    index: int
    name: str
    values: dict[str, Any]
    config: dict[str, Any]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _safe(text: str) -> str:
    text = text.replace(":", "-").replace(",", "-")
    return re.sub(r"[^A-Za-z0-9._=+-]", "_", text)


def run_name(values: Mapping[str, Any], varying: Sequence[str]) -> str:
    """File-safe name of a run from the values of its varying keys (``"run"`` if none).

    Examples
    --------
    >>> tf.sweep.run_name({"topology": "dcliques:clique_size=10,inter=ring", "seed": 0},
    ...                   ["topology", "seed"])
    'topology=dcliques-clique_size=10-inter=ring__seed=0'
    """
    name = "__".join(f"{_safe(k)}={_safe(_text(values[k]))}" for k in varying) or "run"
    if len(name) > _MAX_NAME:
        name = name[:_MAX_NAME - 9] + "~" + _digest(values)
    return name.lstrip(".") or "run"


def _digest(values: Mapping[str, Any]) -> str:
    return hashlib.sha1(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()[:8]


def plan(cfg: Mapping[str, Any]) -> list[SweepRun]:
    """Every run of a sweep config, in order (one run when there is no ``[sweep]`` table).

    Every run's config is validated (:func:`topofl.config.validate`).

    Raises
    ------
    ConfigError
        For a bad ``[sweep]`` table, key or value (the message names the key).
    ValueError
        For a ``[sweep]`` with so many runs that planning them alone would take longer than
        ``TOPOFL_MAX_SECONDS`` (default 60 s; the message gives the estimate).
    """
    base, sweep = split_sweep(cfg)
    base.pop("stack", None)  # how the sweep runs (run_sweep reads it), not a run's setting
    _check_plan_size(sweep)
    for key in _WHERE & (set(sweep) | set(base)) - {"checkpoint_every", "progress"}:
        raise ConfigError(f"{key!r} is set by the sweep for each run; remove it from the config")
    keys = list(sweep)
    varying = [k for k in keys if len(sweep[k]) > 1]
    runs: list[SweepRun] = []
    for index, combo in enumerate(itertools.product(*(sweep[k] for k in keys))):
        values = dict(zip(keys, combo))
        config = {**base, **values}
        try:
            validate({**config, "checkpoint_path": "set-by-the-sweep"})
        except ConfigError as exc:
            where = ", ".join(f"{k}={_text(v)}" for k, v in values.items() if k in varying)
            cls = ConfigTypeError if isinstance(exc, TypeError) else ConfigError
            raise cls(f"{exc}" + (f" (in the sweep run {where})" if where else "")) from None
        runs.append(SweepRun(index, run_name(values, varying), values, config))
    names: dict[str, int] = {}
    for r in runs:
        names[r.name] = names.get(r.name, 0) + 1
    if any(c > 1 for c in names.values()):  # two values with the same safe text: add a digest
        runs = [r if names[r.name] == 1 else
                SweepRun(r.index, f"{r.name}~{_digest(r.values)}", r.values, r.config)
                for r in runs]
    return runs


#: A lower bound on the time :func:`plan` takes per run (it validates every run's config):
#: 0.254 ms measured (process CPU time, best of 3, a 40 x 50 sweep); 2.5x below.
_PLAN_SECONDS_PER_RUN = 1e-4


def _check_plan_size(sweep: Mapping[str, Sequence[Any]]) -> None:
    """Refuse, before anything is built, a ``[sweep]`` whose product is too large to plan."""

    sizes = [len(v) for v in sweep.values()]
    total = 1
    for k in sizes:
        total *= k
    if total > 1:
        check_time(total * _PLAN_SECONDS_PER_RUN,
                   f"a [sweep] of {' x '.join(map(str, sizes))} = {total:,} runs (each "
                   "validated when planned, and each a training run)")


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/k"`` -> ``(i, k)`` with ``1 <= i <= k``.

    Examples
    --------
    >>> tf.sweep.parse_shard("2/3")
    (2, 3)
    """
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise ConfigError(f"a shard is i/k with 1 <= i <= k (e.g. 1/4), got {text!r}")
    return int(m.group(1)), int(m.group(2))


def select(runs: Sequence[SweepRun], shard: tuple[int, int] | None) -> list[SweepRun]:
    """The runs of shard ``(i, k)``: ``runs[i-1::k]`` (all of them for ``None``)."""
    if shard is None:
        return list(runs)
    i, k = shard
    if not 1 <= i <= k:
        raise ConfigError(f"a shard is (i, k) with 1 <= i <= k, got {shard}")
    return list(runs[i - 1::k])
