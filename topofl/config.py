"""Run configs: the keyword arguments of :func:`topofl.run` in a TOML (or JSON) file.

A config is a flat table whose keys are :func:`topofl.run`'s keyword arguments: the data
(``data``, ``n_clients``, ``partition``, ``partition_params``), the model (``model``,
``model_params``), the graph (``topology``, a spec string such as ``"ring"`` or
``"dcliques:clique_size=10,inter=ring"``), the algorithm (``algorithm`` and its
hyper-parameters: ``lr``, ``momentum`` ...) and the run settings of
:class:`~topofl.engine.RunConfig` (``rounds``, ``seed``, ``batch_size``, ``eval_every`` ...)::

    algorithm = "dsgd"
    topology = "ring"
    data = "digits"
    n_clients = 10
    partition = "shards"
    rounds = 20
    lr = 0.3
    batch_size = 8

    [network]          # optional: a virtual clock (topofl.engine.clock.Network)
    latency = 0.05     # seconds per message
    uplink = 1.25e6    # bytes per second of each client's connection
    speed = 1e9        # FLOP per second of each client

    [availability]     # optional: clients offline per round (engine.availability)
    model = "bernoulli"
    offline = 0.1

    [sweep]            # only for `topofl sweep`: the runs are the Cartesian product
    topology = ["ring", "complete"]
    seed = [0, 1]

:func:`validate` checks every key and value against the signatures of :func:`topofl.run`,
:class:`~topofl.engine.RunConfig` and the algorithm's factory, and returns the *resolved*
config (every default filled in). :func:`topofl.run` stores that resolved config in the header
row of its records (with its provenance: versions, git commit, command line, start time), so
:func:`replay` re-runs a records file and reproduces its rows exactly (except wall-clock
metrics). Errors are :class:`ConfigError` (a ``ValueError``; :class:`ConfigTypeError` for a
wrong type or an unknown key is also a ``TypeError``), one line each.

A config is checked once (:func:`resolve`): the names are checked against the registries,
every default is filled in and the algorithm is built; :func:`execute` runs that checked call
(:func:`topofl.api.launch`), so the algorithm is built once per run. The errors and the
provenance live in lower modules (:mod:`topofl.exceptions`, :mod:`topofl.provenance`); this
module builds on :mod:`topofl.api`, never the other way round.

Examples
--------
>>> cfg = tf.config.validate({"topology": "ring", "n_clients": 10, "rounds": 3, "lr": 0.5})
>>> cfg["algorithm"], cfg["lr"], cfg["momentum"], cfg["batch_size"], cfg["partition_params"]
('dsgd', 0.5, 0.0, 32, {'shards_per_client': 2})
>>> tf.config.validate({"topology": "ring", "rounds": 3, "eval_global": "no"})
Traceback (most recent call last):
...
topofl.exceptions.ConfigTypeError: eval_global must be bool, got str 'no'
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from topofl import api, topologies
from topofl._configfile import _kind, read_config, split_sweep
from topofl._validation import did_you_mean_each, unknown_name
from topofl.algorithms.base import get_algorithm
from topofl.data.datasets import DATASETS
from topofl.engine.config import RunConfig, header_hash_problem
from topofl.engine.loop import Result
from topofl.exceptions import ConfigError, ConfigTypeError, OutputExistsError
from topofl.provenance import (
    NOT_RECORDED,
    command_line,
    describe_run,
    hparam_signature,
    model_signature,
    partition_signature,
    plain,
    provenance,
)

__all__ = [
    "ConfigError",
    "ConfigTypeError",
    "OutputExistsError",
    "read_config",
    "split_sweep",
    "validate",
    "resolve",
    "Resolved",
    "run_keys",
    "describe_run",
    "provenance",
    "command_line",
    "read_header",
    "execute",
    "replay",
    "compare_rows",
    "WALL_CLOCK_METRICS",
]

_hparams = hparam_signature  # the name topofl.figures and analysis/ import

#: Metrics that measure time, not learning: excluded when a replay is compared with its source.
WALL_CLOCK_METRICS = frozenset({"wall_time"})

# keywords of topofl.run that are not part of a config: how to run, not what to run
_NOT_CONFIG = frozenset({"resume", "overwrite"})
# the order of the keys in a resolved config (then hyper-parameters, then run settings)
_RUN_ORDER = ("algorithm", "topology", "data", "n_clients", "partition", "partition_params",
              "model", "model_params", "rounds", "seed")



# ------------------------------------------------------------------------------ types


def _split_top(ann: str, sep: str) -> list[str]:
    """Split ``ann`` on ``sep`` outside brackets."""
    out, depth, cur = [], 0, ""
    for ch in ann:
        depth += ch == "["
        depth -= ch == "]"
        if ch == sep and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    out.append(cur.strip())
    return out


def _matches(value: Any, ann: str) -> bool:
    """Whether a TOML/JSON value fits a (string) annotation such as ``'float | None'``."""
    for alt in _split_top(ann, "|"):
        base, _, inner = alt.partition("[")
        base = base.strip().rsplit(".", 1)[-1]
        if base in ("Any", "object"):
            return True
        if base == "None" and value is None:
            return True
        if base == "bool" and isinstance(value, bool):
            return True
        if base in ("int", "Seed") and isinstance(value, int) and not isinstance(value, bool):
            return True
        if base == "float" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if base == "str" and isinstance(value, str):
            return True
        if base in ("Mapping", "dict") and isinstance(value, Mapping):
            return True
        if base in ("tuple", "list", "Sequence") and isinstance(value, (list, tuple)):
            elem = _split_top(inner.rstrip("]"), ",")[0] if inner else "Any"
            if all(_matches(v, elem) for v in value):
                return True
    return False


def _expect(ann: str) -> str:
    """An annotation in words: ``'float | None'`` -> ``'float or None'``."""
    alts = [a.rsplit(".", 1)[-1] for a in _split_top(ann, "|")]
    words = {"Sequence[int]": "list of int", "Mapping[str, Any]": "table"}
    alts = [words.get(a, a) for a in alts
            if a in ("None", "bool", "int", "float", "str") or "[" in a or a == "dict"]
    return " or ".join(alts) or ann


def _check_value(key: str, value: Any, ann: Any) -> None:
    if ann is inspect.Parameter.empty:
        return
    ann = ann if isinstance(ann, str) else getattr(ann, "__name__", str(ann))
    if not _matches(value, ann):
        raise ConfigTypeError(f"{key} must be {_expect(ann)}, got {_kind(value)}")


# ------------------------------------------------------------------------------ resolving


@functools.lru_cache(maxsize=1)
def _run_signature() -> dict[str, inspect.Parameter]:
    return {k: p for k, p in inspect.signature(api.run).parameters.items()
            if p.kind is not p.VAR_KEYWORD and k not in _NOT_CONFIG}


@functools.lru_cache(maxsize=1)
def _settings() -> dict[str, tuple[Any, Any]]:
    """RunConfig fields except rounds and seed: ``name -> (annotation, default)``."""
    return {f.name: (f.type, f.default) for f in dataclasses.fields(RunConfig)
            if f.name not in ("rounds", "seed")}


def _fill(given: Mapping[str, Any], params: Mapping[str, inspect.Parameter], what: str,
          extra: Mapping[str, Any] | None = None, prefix: str | None = None) -> dict[str, Any]:
    """Check ``given`` against ``params`` (and the ``extra`` annotations) and fill defaults."""
    known = {**{k: p.annotation for k, p in params.items()}, **dict(extra or {})}
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise ConfigTypeError(f"unknown key(s) {unknown} in {what}"
                              f"{did_you_mean_each(unknown, known)}; accepted: {sorted(known)}")
    pre = f"{what}." if prefix is None else prefix
    out: dict[str, Any] = {}
    for k, p in params.items():
        if k in given:
            _check_value(pre + k, given[k], p.annotation)
            out[k] = plain(given[k])
        elif p.default is not p.empty:
            out[k] = plain(p.default)
        else:
            raise ConfigError(f"{what} needs {pre}{k}")
    for k, ann in dict(extra or {}).items():
        if k in given:
            _check_value(pre + k, given[k], ann)
            out[k] = plain(given[k])
    return out


def _restore_nonfinite(value: Any) -> Any:
    """A header's config with its ``"inf"``/``"-inf"`` strings (non-finite floats, as the
    records file stores them) back as floats."""
    if isinstance(value, Mapping):
        return {k: _restore_nonfinite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore_nonfinite(v) for v in value]
    if value in ("inf", "-inf"):
        return float(value)
    return value


def run_keys(algorithm: str = "dsgd") -> dict[str, str]:
    """Every key a config with this algorithm accepts, with its type (for ``topofl list``).

    Examples
    --------
    >>> keys = tf.config.run_keys("dsgd")
    >>> keys["lr"], keys["eval_global"], keys["topology"]
    ('float', 'bool', 'GraphLike | str | None')
    """
    out = {k: str(p.annotation) for k, p in _run_signature().items()}
    out.update({k: str(p.annotation) for k, p in hparam_signature(algorithm).items()})
    out.update({k: str(a) for k, (a, _) in _settings().items()})
    return out


class Resolved(NamedTuple):
    """A config checked once: its resolved form and the run it describes.

    Attributes
    ----------
    config : dict
        The resolved config (:func:`validate`'s result).
    prepared : topofl.api.Prepared
        The call :func:`topofl.api.launch` runs, with the algorithm built from ``config``.
    """

    config: dict[str, Any]
    prepared: api.Prepared


def validate(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Check a config and return it resolved: every default filled in, in a fixed key order.

    Parameters
    ----------
    cfg : mapping
        Keyword arguments of :func:`topofl.run` with names only (no objects), as read from a
        config file (without its ``sweep`` table).

    Returns
    -------
    dict
        ``algorithm, topology, data, n_clients, partition, partition_params, model,
        model_params, rounds, seed``, the algorithm's hyper-parameters, then the run settings
        (the schema of a records header's ``config``).

    Raises
    ------
    ConfigTypeError
        An unknown key (the message lists the accepted ones) or a value of the wrong type.
    ConfigError
        An impossible value (unknown algorithm, model, dataset, partition or graph family;
        a value out of range).
    """
    return resolve(cfg).config


def resolve(cfg: Mapping[str, Any]) -> Resolved:
    """Check a config once: its resolved form (:func:`validate`) and the checked call,
    whose algorithm :func:`execute` runs (built here, once).

    Examples
    --------
    >>> r = tf.config.resolve({"topology": "ring:n=1e1", "n_clients": 10, "rounds": 2})
    >>> r.config["topology"], r.prepared.algorithm.name, r.prepared.settings["batch_size"]
    ('ring:n=1e1', 'dsgd', 32)
    """
    if not isinstance(cfg, Mapping):
        raise ConfigTypeError(f"a config must be a table, got {type(cfg).__name__}")
    if "sweep" in cfg:
        raise ConfigError("this config has a [sweep] table: run it with `topofl sweep`")
    for key, value in cfg.items():
        if isinstance(value, Mapping) and "object" in value:
            raise ConfigError(
                f"{key} was passed to topofl.run as an object ({value.get('object')}), not a "
                "name: this config cannot be replayed"
            )
    runsig = _run_signature()
    algorithm = cfg.get("algorithm", runsig["algorithm"].default)
    _check_value("algorithm", algorithm, "str")
    hp = hparam_signature(algorithm)
    settings = _settings()
    accepted = set(runsig) | set(hp) | set(settings)
    unknown = sorted(set(cfg) - accepted)
    if unknown:
        near = sorted(_NOT_CONFIG & set(unknown))
        hint = f" ({near} are not config keys: use the command-line flags)" if near else ""
        raise ConfigTypeError(
            f"unknown key(s) {unknown}{hint or did_you_mean_each(unknown, accepted)}; "
            f"accepted: {', '.join(sorted(runsig))}, the run "
            f"settings {', '.join(sorted(settings))} and the {algorithm} hyper-parameters "
            f"{', '.join(sorted(hp))}"
        )
    out: dict[str, Any] = {}
    for k in _RUN_ORDER:
        p = runsig[k]
        value = cfg.get(k, p.default)
        _check_value(k, value, p.annotation)
        out[k] = value
    run_settings = _run_settings(cfg, out["rounds"], out["seed"])
    hparams = _fill({k: cfg[k] for k in hp if k in cfg}, hp, algorithm, prefix="")
    try:
        algo = get_algorithm(algorithm, **hparams)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{algorithm}: {exc}") from None
    _check_names(out)
    if out["n_clients"] < 1:
        raise ConfigError(f"n_clients must be >= 1, got {out['n_clients']}")
    out["partition_params"] = _fill(dict(out["partition_params"] or {}),
                                    partition_signature(out["partition"]), "partition_params",
                                    {"val": "float", "test": "float | str",
                                     "flip_labels": "float"})
    out["model_params"] = _fill(dict(out["model_params"] or {}), model_signature(out["model"]),
                                "model_params")
    out.update(hparams)
    out.update({k: v for k, v in run_settings.items() if k not in NOT_RECORDED})
    if "progress" in cfg:
        out["progress"] = cfg["progress"]
    if algo.uses_topology and out["topology"] is None:
        raise ConfigError(f"{algorithm} communicates over a graph: set topology "
                          '(e.g. topology = "ring"; `topofl list graphs`)')
    resolved: dict[str, Any] = plain(out)
    call = {k: resolved[k] for k in _RUN_ORDER if k not in ("rounds", "seed")}
    given = {k: v for k, v in resolved.items() if k in settings}
    return Resolved(resolved, api.Prepared(call, algo, plain(hparams), given, out["rounds"],
                                           out["seed"]))


def _run_settings(cfg: Mapping[str, Any], rounds: Any, seed: Any) -> dict[str, Any]:
    """The config's :class:`~topofl.engine.RunConfig` fields (besides rounds and seed), every
    default filled in, checked by building the RunConfig."""
    out: dict[str, Any] = {}
    for k, (ann, default) in _settings().items():
        value = cfg.get(k, default)
        if k == "run_id" and k not in cfg:
            value = None  # topofl.run names the run "<algorithm>-<graph>"
        else:
            _check_value(k, value, ann)
        out[k] = value
    try:
        checked = RunConfig(rounds=rounds, seed=seed,
                            **{**out, "run_id": out["run_id"] or "run"})
    except (ValueError, TypeError) as exc:
        raise ConfigError(str(exc)) from None
    for k in ("network", "availability"):  # their tables with every key filled in
        out[k] = getattr(checked, k)
    return out


def _check_names(cfg: Mapping[str, Any]) -> None:
    if str(cfg["data"]).partition(":")[0] not in DATASETS:
        raise ConfigError(unknown_name("dataset", cfg["data"], DATASETS, sort=False)
                          + " (a spec such as 'synthetic:n_samples=5000,seed=0' passes options)")
    if cfg["topology"] is not None:
        try:  # the check every path that takes a graph spec makes
            topologies.check_spec(cfg["topology"])
        except ValueError as exc:
            raise ConfigError(f"topology: {exc}") from None


# ------------------------------------------------------------------------------ running


def execute(cfg: Mapping[str, Any], *, overwrite: bool = False, resume: Any = None,
            command: str | None = None) -> Result:
    """Check a config (:func:`resolve`) and run it (:func:`topofl.api.launch`: what
    :func:`topofl.run` runs), with the algorithm built by the check.

    Parameters
    ----------
    cfg : mapping
        A config (see :func:`validate`).
    overwrite : bool, default False
        Replace an existing ``records_path``.
    resume : path, optional
        A checkpoint to continue from.
    command : str, optional
        The command line recorded in the header's provenance.
    """
    prepared = resolve(cfg).prepared
    with command_line(command):
        return api.launch(prepared, overwrite=overwrite, resume=resume)


def read_header(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The header row of a records file (``{"header": true, "config": ..., ...}``).

    Raises
    ------
    ConfigError
        If the file is missing or its first line is not a header row.
    """
    p = Path(path)
    try:
        with open(p, encoding="utf-8") as fh:
            first = fh.readline()
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such records file") from None
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read: {exc}") from None
    try:
        obj = json.loads(first)
    except json.JSONDecodeError:
        obj = None
    if not isinstance(obj, dict) or not obj.get("header"):
        raise ConfigError(f"{p}: the first line is not a records header")
    return obj


def _replayable_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    header = read_header(path)
    why = header_hash_problem(header)
    if why is not None:  # a replaced hash would replay as "reproduced"
        raise ConfigError(f"{path}: {why}; it is not replayed")
    cfg = header.get("config")
    if "provenance" not in header or not isinstance(cfg, dict):
        raise ConfigError(f"{path}: written before replayable headers (no resolved config); "
                          "it cannot be replayed")
    objects = [k for k, v in cfg.items() if isinstance(v, dict) and "object" in v]
    if objects:
        raise ConfigError(
            f"{path}: cannot be replayed: {', '.join(objects)} was passed to topofl.run as an "
            "object, not a name"
        )
    out: dict[str, Any] = _restore_nonfinite(dict(cfg))
    return out


def replay(path: str | os.PathLike[str], *, records_path: str | None = None,
           overwrite: bool = False, command: str | None = None, **overrides: Any) -> Result:
    """Run again the run whose records are in ``path``, from its header.

    The run settings that only say where to write (``records_path``, ``checkpoint_path``,
    ``checkpoint_every``) are replaced: the replay writes to ``records_path`` (``None``: in
    memory) and no checkpoint. Same seed, same config: the rows are the same as the
    original's except :data:`WALL_CLOCK_METRICS` (see :func:`compare_rows`), bitwise when torch
    uses as many threads as the header's ``provenance["torch_threads"]`` (``topofl run
    --replay`` sets it; float32 sums may round differently with another count).

    Parameters
    ----------
    path : path
        A records file written by :func:`topofl.run` (``topofl run``, ``topofl sweep``).
    records_path : str, optional
    overwrite : bool, default False
    command : str, optional
        The command line recorded in the new header.
    **overrides
        Config keys to change (e.g. ``device="cuda"``, ``progress=False``).

    Raises
    ------
    ConfigError
        If the file has no replayable header (written before them, or from objects), or its
        run hash is not the hash of the run its header describes (an edited header).
    """
    cfg = _replayable_config(path)
    if records_path is not None and Path(records_path).resolve() == Path(path).resolve():
        raise ConfigError(f"the replay would overwrite its source {path}; write elsewhere")
    cfg.update(records_path=records_path, checkpoint_path=None, checkpoint_every=0)
    cfg.update(overrides)
    return execute(cfg, overwrite=overwrite, command=command)


def compare_rows(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]],
                 ignore: frozenset[str] = WALL_CLOCK_METRICS) -> str | None:
    """``None`` when two runs' rows are identical except the ``ignore`` metrics, else the first
    difference in words.

    Examples
    --------
    >>> r = {"run": "a", "round": 0, "client": None, "metric": "acc", "value": 0.5}
    >>> tf.config.compare_rows([r], [r]) is None
    True
    >>> tf.config.compare_rows([r], [{**r, "value": 0.6}])
    'row 1 differs: round 0 acc = 0.5 vs 0.6'
    """
    ka = [r for r in a if r["metric"] not in ignore]
    kb = [r for r in b if r["metric"] not in ignore]
    for i, (ra, rb) in enumerate(zip(ka, kb)):
        if dict(ra) != dict(rb):
            who = f" client {ra['client']}" if ra.get("client") is not None else ""
            if (ra["round"], ra["metric"], ra.get("client")) == (
                    rb["round"], rb["metric"], rb.get("client")):
                return (f"row {i + 1} differs: round {ra['round']}{who} {ra['metric']} = "
                        f"{ra['value']!r} vs {rb['value']!r}")
            return f"row {i + 1} differs: {dict(ra)} vs {dict(rb)}"
    if len(ka) != len(kb):
        return f"{len(ka)} rows vs {len(kb)} rows"
    return None
