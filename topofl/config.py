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
    imports = ["my_graphs"]   # optional: modules of yours (a name, or a path to a .py file)
                              # imported first, e.g. to register a graph family the config
                              # names; recorded in the header (topofl._utils.userimports)

    [network]          # optional: a virtual clock (topofl.engine.clock.Network)
    latency = 0.05     # seconds per message
    uplink = 1.25e6    # bytes per second of each client's connection
    speed = 1e9        # FLOP per second of each client

    [availability]     # optional: clients offline per round (engine.availability)
    model = "bernoulli"
    offline = 0.1

    [byzantine]        # optional: Byzantine nodes and their attack (engine.byzantine)
    attack = "alie"    # sign_flip, gaussian, alie, ipm, dissensus or label_flip
    share = 0.1        # or nodes = [0, 5]; choose = "random" | "degree" | "betweenness"

    [sweep]            # only for `topofl sweep`: the runs are the Cartesian product
    topology = ["ring", "complete"]
    seed = [0, 1]

:func:`validate` checks the config with the check of :func:`topofl.run` itself
(:func:`topofl.api.prepare`: the same errors, before any data is read) and returns the
*resolved* config (every default filled in). :func:`topofl.run` stores that resolved config
in the header row of its records (with its provenance: versions, git commit, command line,
start time), so :func:`replay` re-runs a records file and reproduces its rows exactly (except
wall-clock metrics). Errors are :class:`ConfigError` (a ``ValueError``;
:class:`ConfigTypeError` for a wrong type or an unknown key is also a ``TypeError``), one line
each, the same from :func:`topofl.run` and from a config.

A config is checked once (:func:`resolve`): :func:`topofl.api.prepare` checks it and builds
the algorithm; this module adds only what a file needs (names, not objects; no ``[sweep]``
table; no command-line flags) and the defaults the header holds. :func:`execute` runs that
checked call (:func:`topofl.api.launch`), so the algorithm is built once per run. The errors
and the provenance live in lower modules (:mod:`topofl.exceptions`,
:mod:`topofl.workflow.provenance`); this module builds on :mod:`topofl.api`, never the other way
round.

Examples
--------
>>> cfg = tf.config.validate({"topology": "ring", "n_clients": 10, "rounds": 3, "lr": 0.5})
>>> cfg["algorithm"], cfg["lr"], cfg["momentum"], cfg["batch_size"], cfg["partition_params"]
('dsgd', 0.5, 0.0, 32, {'shards_per_client': 2})
>>> tf.config.validate({"topology": "ring", "rounds": 3, "eval_global": "no"})
Traceback (most recent call last):
...
topofl.exceptions.ConfigTypeError: eval_global must be a bool (True or False), got str 'no'
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

from topofl import api
from topofl._utils.configfiles import read_config, split_sweep
from topofl._utils.userimports import imports_problem, load_imports, replay_imports, with_imports
from topofl.engine.config import RunConfig, header_hash_problem
from topofl.engine.loop import Result
from topofl.exceptions import ConfigError, ConfigTypeError, OutputExistsError
from topofl.workflow.provenance import command_line, provenance
from topofl.workflow.schema import describe_run, hparam_signature

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


@functools.lru_cache(maxsize=1)
def _run_signature() -> dict[str, inspect.Parameter]:
    return {k: p for k, p in inspect.signature(api.run).parameters.items()
            if p.kind is not p.VAR_KEYWORD and k not in _NOT_CONFIG}


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
    out.update(dict.fromkeys(("dp_clip", "dp_noise", "dp_delta", "dp_correlated"),
                             "float"), dp_seed="int")
    out.update(dict.fromkeys(("dpsgd_clip", "dpsgd_noise", "dpsgd_delta"), "float"),
               dpsgd_seed="int")
    out.update({f.name: str(f.type) for f in dataclasses.fields(RunConfig)
                if f.name not in ("rounds", "seed")})
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

    The check is :func:`topofl.api.prepare`'s, the one :func:`topofl.run` makes (same errors,
    same messages); a file adds that it holds names, not objects, and no ``[sweep]`` table.

    Examples
    --------
    >>> r = tf.config.resolve({"topology": "ring:n=1e1", "n_clients": 10, "rounds": 2})
    >>> r.config["topology"], r.prepared.algorithm.name, r.prepared.run.batch_size
    ('ring:n=1e1', 'dsgd', 32)
    """
    if not isinstance(cfg, Mapping):
        raise ConfigTypeError(f"a config must be a table, got {type(cfg).__name__}")
    if "sweep" in cfg:
        raise ConfigError("this config has a [sweep] table: run it with `topofl sweep`")
    for key, value in cfg.items():
        if not isinstance(key, str):
            raise ConfigTypeError(f"a config's keys are names, got {type(key).__name__} {key!r}")
        if isinstance(value, Mapping) and "object" in value:
            raise ConfigError(
                f"{key} was passed to topofl.run as an object ({value.get('object')}), not a "
                "name: this config cannot be replayed"
            )
    flags = sorted(_NOT_CONFIG & set(cfg))
    if flags:
        raise ConfigTypeError(f"{flags} are not config keys: use the command-line flags "
                              f"({', '.join('--' + f for f in flags)})")
    prepared = api.prepare(**cfg)
    settings = dataclasses.asdict(prepared.run)
    settings["run_id"] = prepared.settings.get("run_id")  # None: "<algorithm>-<graph>"
    resolved, _ = describe_run({**prepared.call, "rounds": prepared.rounds,
                                "seed": prepared.seed}, prepared.hparams, settings)
    with_imports(resolved, prepared.imports)
    if "progress" in cfg:
        resolved["progress"] = cfg["progress"]
    return Resolved(resolved, prepared)


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
        run hash is not the hash of the run its header describes (an edited header), or a
        module its header imports (``config.imports``: imported again before the replay, a
        path from the absolute file recorded, whatever the current directory) cannot be
        imported, is missing, or its source is not the one recorded (``provenance.imports``,
        SHA-256).
    """
    cfg = _replayable_config(path)
    if records_path is not None and Path(records_path).resolve() == Path(path).resolve():
        raise ConfigError(f"the replay would overwrite its source {path}; write elsewhere")
    cfg.update(records_path=records_path, checkpoint_path=None, checkpoint_every=0)
    cfg.update(overrides)
    recorded, given = read_header(path).get("provenance", {}).get("imports"), cfg.get("imports")
    if given is not None:  # a path as the absolute file it was, checked before it runs
        try:
            cfg["imports"] = replay_imports(given, recorded)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}; it is not replayed") from None
    try:  # the modules the run imported, again: the same names must run the same code
        imported = load_imports(cfg.get("imports"))
    except ConfigError as exc:
        raise ConfigError(f"{path}: cannot replay: its header imports {given}: {exc}") from None
    why = imports_problem(recorded, imported)
    if why is not None:
        raise ConfigError(f"{path}: {why}; it is not replayed")
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
