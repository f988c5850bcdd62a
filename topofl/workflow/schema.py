"""A run call's schema: the resolved call of :func:`topofl.run` that its records header
holds (:func:`describe_run`: names with every default filled in, the schema of a ``topofl run``
config, or a description of the objects it was given) and the keyword arguments the registries
a call names accept (:func:`hparam_signature`: an algorithm's flat keywords,
:func:`partition_signature`, :func:`model_signature`). It sits beside
:class:`topofl.api.RunCall` (the call's named parameters) in the front door's layer; both the
face (:mod:`topofl.api`) and the configs (:mod:`topofl.config`) build on it. Where a run comes
from is :mod:`topofl.workflow.provenance`.

Examples
--------
>>> from topofl.workflow.schema import hparam_signature
>>> sorted(hparam_signature("dsgd"))[:4]
['absent', 'aggregator', 'clique_averaging', 'compress_seed']
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from topofl._utils.registries import replaced
from topofl._utils.validation import unknown_name
from topofl.algorithms.base import ALGORITHMS, DP_DEFAULTS, DP_KEYS, DPSGD_DEFAULTS, DPSGD_KEYS
from topofl.algorithms.hparams import flat_parameters
from topofl.data.partition import PARTITIONS
from topofl.exceptions import ConfigError
from topofl.models import MODELS
from topofl.records.writer import jsonable

__all__ = ["describe_run", "replaced_entries", "plain", "hparam_signature",
           "partition_signature", "model_signature", "NOT_RECORDED"]

#: keywords of topofl.run that are not recorded: how to show a run, not what it computes
NOT_RECORDED = frozenset({"progress"})


# ------------------------------------------------------------------------------ signatures


def hparam_signature(algorithm: str) -> dict[str, inspect.Parameter]:
    """The keyword arguments of a registry algorithm's factory (its hyper-parameters)."""
    if algorithm not in ALGORITHMS:
        raise ConfigError(unknown_name("algorithm", algorithm, ALGORITHMS))
    return flat_parameters(ALGORITHMS[algorithm])


def _extra_params(func: Any, skip: Sequence[str]) -> dict[str, inspect.Parameter]:
    return {k: p for k, p in inspect.signature(func).parameters.items()
            if k not in skip and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}


def partition_signature(scheme: str) -> dict[str, inspect.Parameter]:
    """The options of a partition scheme (what ``partition_params`` may hold)."""
    if scheme not in PARTITIONS:
        raise ConfigError(unknown_name("partition", scheme, PARTITIONS, sort=False))
    return _extra_params(PARTITIONS[scheme], ("labels", "groups", "n_clients", "seed",
                                              "num_classes"))


def model_signature(model: str) -> dict[str, inspect.Parameter]:
    """The options of a registry model (what ``model_params`` may hold)."""
    if model not in MODELS:
        raise ConfigError(unknown_name("model", model, MODELS, sort=False))
    return _extra_params(MODELS[model], ("input_shape", "num_classes"))


def plain(value: Any) -> Any:
    """``value`` as plain Python (what a JSON header holds), keeping non-finite floats as
    floats: a run gets ``budget = inf`` as ``math.inf``; only the header writes it ``"inf"``
    (``topofl.config`` reads it back)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value)
    return jsonable(value)


# ------------------------------------------------------------------------------ the resolved call


def describe_run(call: Mapping[str, Any], hparams: Mapping[str, Any],
                 settings: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The resolved config of a :func:`topofl.run` call, and why it is not replayable.

    ``call`` holds the call's named parameters (the fields of :class:`topofl.api.RunCall`:
    ``algorithm``, ``topology``, ``data``, ``model``, ``rounds``, ``seed``, ``n_clients``,
    ``partition``, ``partition_params``, ``model_params``), ``hparams`` the algorithm's
    hyper-parameters it named, ``settings`` the run settings (a
    :class:`~topofl.engine.RunConfig` as a dict).

    Names are kept and their defaults filled in (the schema :func:`topofl.config.validate`
    returns); objects (a built Algorithm, Topology, FederatedData or module) are described by
    a table ``{"object": <type>, ...}``, which :func:`topofl.config.validate` refuses, and
    named in the returned list.

    Returns
    -------
    (config, reasons)
        ``reasons`` is empty when the config replays the run.
    """
    algorithm, topology, data, model = (call["algorithm"], call["topology"], call["data"],
                                        call["model"])
    n_clients, partition = call["n_clients"], call["partition"]
    partition_params, model_params = call["partition_params"], call["model_params"]
    rounds, seed = call["rounds"], call["seed"]
    reasons: list[str] = []
    cfg: dict[str, Any] = {}
    if isinstance(algorithm, str):
        cfg["algorithm"] = algorithm
        params = hparam_signature(algorithm)
        hp = {k: hparams[k] if k in hparams else p.default for k, p in params.items()
              if k in hparams or p.default is not p.empty}
        if any(k in hparams for k in DP_KEYS):  # noisy updates: only when asked for
            hp.update({k: hparams.get(k, default) for k, default in DP_DEFAULTS.items()})
        if any(k in hparams for k in DPSGD_KEYS):  # DP-SGD: only when asked for
            hp.update({k: hparams.get(k, default) for k, default in DPSGD_DEFAULTS.items()})
    else:
        cfg["algorithm"] = {"object": "Algorithm", "name": algorithm.name}
        hp = dict(algorithm.hparams)
        reasons.append("algorithm")
    if topology is None or isinstance(topology, str):
        cfg["topology"] = topology
    else:
        cfg["topology"] = {"object": type(topology).__name__, "name": topology.name,
                           "n": topology.n, "params": plain(topology.params)}
        reasons.append("topology")
    if isinstance(data, str):
        cfg.update(data=data, n_clients=n_clients, partition=partition,
                   partition_params=_partition_defaults(partition, partition_params))
    else:
        cfg.update(data={"object": type(data).__name__,
                         "params": plain(getattr(data, "params", {}))},
                   n_clients=int(data.num_clients), partition=None, partition_params=None)
        reasons.append("data")
    if isinstance(model, str):
        cfg["model"] = model
        params = model_signature(model)
        given = dict(model_params or {})
        cfg["model_params"] = {
            **{k: given.get(k, p.default) for k, p in params.items()
               if k in given or p.default is not p.empty},
            **{k: v for k, v in given.items() if k not in params}}
    else:
        cfg["model"] = {"object": type(model).__name__,
                        "num_params": sum(p.numel() for p in model.parameters())}
        cfg["model_params"] = None
        reasons.append("model")
    cfg.update(rounds=rounds, seed=seed)
    plain_hp = plain(hp)
    for k, v in hp.items():
        if not _isplain(v):
            reasons.append(f"{k} (a {type(v).__name__})")
    cfg.update(plain_hp)
    cfg.update({k: v for k, v in settings.items()
                if k not in ("rounds", "seed") and k not in NOT_RECORDED})
    return plain(cfg), reasons


def replaced_entries(algorithm: Any, model: Any, data: Any) -> dict[str, str]:
    """The registry names a call gives (``algorithm``, ``model``, ``data``: names or
    objects) whose entry a ``register_*(name, replace=True)`` replaced: what its records
    header then says under ``provenance.replaced``.

    Examples
    --------
    >>> from topofl.workflow.provenance import replaced_entries
    >>> replaced_entries("dsgd", "logistic", "digits:seed=0")
    {}
    """
    out: dict[str, str] = {}
    if isinstance(algorithm, str) and algorithm in replaced("algorithm"):
        out["algorithm"] = algorithm
    if isinstance(model, str) and model in replaced("model"):
        out["model"] = model
    if isinstance(data, str):  # a dataset name is read up to case, "-" and "_", and a spec
        key = data.split(":", 1)[0].lower().replace("-", "").replace("_", "")
        for name in replaced("dataset"):
            if name.lower().replace("-", "").replace("_", "") == key:
                out["data"] = name
    return out


def _partition_defaults(scheme: str, given: Mapping[str, Any] | None) -> dict[str, Any]:
    params = partition_signature(scheme)
    g = dict(given or {})
    out = {k: g.get(k, p.default) for k, p in params.items()
           if k in g or p.default is not p.empty}
    out.update({k: v for k, v in g.items() if k not in params})
    return out


def _isplain(v: Any) -> bool:
    if v is None or isinstance(v, (bool, int, float, str)):
        return True
    if isinstance(v, (list, tuple)):
        return all(_isplain(x) for x in v)
    if isinstance(v, Mapping):
        return all(isinstance(k, str) and _isplain(x) for k, x in v.items())
    return False


# ------------------------------------------------------------------------------ provenance
