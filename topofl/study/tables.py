"""The tables of the study: runs grouped into conditions by their configs, one row per run
(:func:`run_table`), mean and spread per condition (:func:`condition_table`), and the
selection of runs by config values (:func:`select_runs`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from topofl.records import Records, area_under_curve, cost_to, rounds_to
from topofl.study.statistics import _round_sig

__all__ = ["run_table", "condition_table", "normalize_config", "select_runs",
           "CONVERGENCE_METRICS", "COST_METRICS", "DEFAULT_TOPOLOGY_METRICS"]

#: Convergence columns of the run table, in this order (those a run did not record are absent).
CONVERGENCE_METRICS = ("rounds_to_target", "messages_to_target", "bytes_to_target",
                       "time_to_target", "final", "best", "auc", "final_consensus_distance")

#: What the runs spent to reach the target (``<cost>_to_target``): the recorded metric of each.
COST_METRICS = {"messages": "messages", "bytes": "bytes", "time": "sim_time"}

#: Topology metrics correlated by default, in this order, when recorded and not equal in every
#: condition (``clique_skew*`` and ``neighborhood_skew*`` match every key with that prefix).
DEFAULT_TOPOLOGY_METRICS = (
    "spectral_gap", "spectral_gap_lambda2", "algebraic_connectivity", "spectrum_mean_sq",
    "spectrum_relaxation", "effective_neighbors", "edges_per_node", "diameter", "clique_skew*",
    "neighborhood_skew*", "neighborhood_heterogeneity", "consensus_rate", "pushsum_q_measured",
    "pushsum_C_measured", "b_connectivity",
)
# Old-schema topology params derived from the data rather than chosen (they differ by seed).
_DERIVED_TOPOLOGY_PARAMS = ("seed", "labels_sha1", "skew", "max_skew")
# Config keys that differ between the seeds of one condition without defining it.
_PER_RUN_KEYS = {"seed", "run_id", "records_path", "checkpoint_path", "progress", "resume"}


# ---------------------------------------------------------------------------- configs
def _flatten(obj: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _spec(topology: Mapping[str, Any]) -> str:
    params = {k: v for k, v in dict(topology.get("params") or {}).items()
              if k not in _DERIVED_TOPOLOGY_PARAMS}
    body = ",".join(f"{k}={v}" for k, v in params.items())
    return str(topology.get("name")) + (f":{body}" if body else "")


def normalize_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A header config as one flat dict, for either header schema.

    The current schema (``topofl.run`` keyword arguments) is flattened (nested tables become
    dotted keys: ``partition_params.shards_per_client``). An old-schema config (the engine's
    description: ``run``, ``algorithm`` and ``topology`` as dicts) is mapped onto the same
    names: the ``run`` fields at the top level, ``algorithm`` = its name with its
    hyper-parameters at the top level, ``topology`` = a spec string (without the parameters
    derived from the data: ``labels_sha1``, ``skew``, ``max_skew``, ``seed``), the data
    description as ``data.*`` (dataset, partition and its parameters) and ``versions`` dropped.

    Examples
    --------
    >>> from topofl.study.tables import normalize_config
    >>> normalize_config({"topology": "ring", "seed": 1, "partition_params": {"alpha": 0.5}})
    {'topology': 'ring', 'seed': 1, 'partition_params.alpha': 0.5}
    >>> normalize_config({"run": {"seed": 2, "rounds": 10},
    ...                   "algorithm": {"name": "dsgd", "lr": 0.1},
    ...                   "topology": {"name": "ring", "n": 8, "params": {"n": 8}},
    ...                   "versions": {"torch": "2.13.0"}})
    {'seed': 2, 'rounds': 10, 'algorithm': 'dsgd', 'lr': 0.1, 'topology': 'ring:n=8'}
    """
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping, got {type(config).__name__}")
    old = any(isinstance(config.get(k), Mapping) for k in ("run", "algorithm", "topology"))
    if not old:
        return _flatten(config)
    flat: dict[str, Any] = {}
    flat.update(_flatten(dict(config.get("run") or {})))
    algo = config.get("algorithm")
    if isinstance(algo, Mapping):
        flat["algorithm"] = algo.get("name")
        flat.update(_flatten({k: v for k, v in algo.items() if k != "name"}))
    elif algo is not None:
        flat["algorithm"] = algo
    topo = config.get("topology")
    flat["topology"] = _spec(topo) if isinstance(topo, Mapping) else topo
    data = config.get("data")
    if isinstance(data, Mapping):
        part = data.get("partition")
        kept = {k: data[k] for k in ("dataset", "dataset_params", "val", "test") if k in data}
        if isinstance(part, Mapping):
            kept["partition"] = {"name": part.get("name"), "params": part.get("params") or {}}
        flat.update(_flatten(kept, "data."))
    elif data is not None:
        flat["data"] = data
    for k, v in config.items():
        if k not in ("run", "algorithm", "topology", "data", "versions"):
            flat.update(_flatten({k: v}))
    return flat


def _condition_key(flat: Mapping[str, Any]) -> str:
    kept = {k: v for k, v in flat.items() if k.rsplit(".", 1)[-1] not in _PER_RUN_KEYS}
    return json.dumps(kept, sort_keys=True, default=str)


def _fmt_value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _conditions(records: Records, runs: Sequence[str]) -> tuple[dict[str, str], dict[str, Any]]:
    """Run -> condition label (the config keys that vary between conditions), run -> seed."""
    flat = {run: normalize_config(records.configs.get(run, {})) for run in runs}
    keys = {run: (_condition_key(f) if f else f"run:{run}") for run, f in flat.items()}
    distinct = {keys[run]: flat[run] for run in runs}  # one config per condition
    names = list(dict.fromkeys(k for f in distinct.values() for k in f
                               if k.rsplit(".", 1)[-1] not in _PER_RUN_KEYS))
    varying = [
        k for k in names
        if len({json.dumps(f.get(k), sort_keys=True, default=str) for f in distinct.values()}) > 1
    ]
    label_of: dict[str, str] = {}
    for key, f in distinct.items():
        if not f:
            label_of[key] = key.removeprefix("run:")
        elif varying:
            label_of[key] = ", ".join(f"{k}={_fmt_value(f.get(k))}" for k in varying)
        else:
            label_of[key] = "all runs"
    seeds = {run: flat[run].get("seed") for run in runs}
    return {run: label_of[keys[run]] for run in runs}, seeds


# ---------------------------------------------------------------------------- tables
def run_table(
    records: Records, *, metric: str = "test_acc_mean", target: float
) -> pd.DataFrame:
    """One row per run of ``records`` that recorded ``metric`` (see
    :class:`~topofl.study.StudyResult`).

    Topology columns are the ``graph.<key>`` rows without their prefix, averaged over the
    run's rows (one row for a static graph; every evaluation of a time-varying one).

    Examples
    --------
    >>> from topofl.study import run_table
    >>> rows = [{"run": "a", "round": t, "client": None, "metric": "acc", "value": v}
    ...         for t, v in ((4, 0.2), (9, 0.6), (14, 0.8))]
    >>> rows += [{"run": "a", "round": 4, "client": None, "metric": "graph.diameter",
    ...           "value": 3}]
    >>> t = run_table(tf.records.Records(rows=rows, config={"seed": 0}), metric="acc",
    ...               target=0.5)
    >>> t[["run", "seed", "diameter", "rounds", "rounds_to_target", "final", "best", "auc"]]
      run  seed  diameter  rounds  rounds_to_target  final  best  auc
    0   a     0       3.0      15              10.0    0.8   0.8  0.55
    """
    runs = [run for run in records.runs if _has(records, metric, run)]
    labels, seeds = _conditions(records, runs)
    long = records.to_pandas()
    graph = long[long["metric"].str.startswith("graph.") & long["client"].isna()]
    graph_means = graph.groupby(["run", "metric"], sort=False)["value"].mean()
    topo_cols = list(dict.fromkeys(m.removeprefix("graph.") for m in graph["metric"]))
    out = []
    for run in runs:
        row: dict[str, Any] = {"run": run, "condition": labels[run], "seed": seeds[run]}
        for col in topo_cols:
            row[col] = float(graph_means.get((run, "graph." + col), math.nan))
        rounds, vals = records.series(metric, run=run)
        reach = rounds_to(records, target, metric, run=run)
        row["rounds"] = int(rounds[-1]) + 1
        row["reached"] = reach is not None
        row["rounds_to_target"] = math.inf if reach is None else float(reach)
        for cost, name in COST_METRICS.items():
            if _has(records, name, run):
                spent = cost_to(records, target, cost, metric, run=run)
                row[f"{cost}_to_target"] = math.inf if spent is None else spent
        row["final"] = float(vals[-1])
        row["best"] = float(np.nanmax(vals)) if np.any(~np.isnan(vals)) else math.nan
        row["auc"] = area_under_curve(rounds + 1, vals)
        if _has(records, "consensus_distance", run):
            row["final_consensus_distance"] = records.final("consensus_distance", run=run)
        out.append(row)
    table = pd.DataFrame(out)
    head = [c for c in table.columns if c not in CONVERGENCE_METRICS]
    return table[head + [c for c in CONVERGENCE_METRICS if c in table.columns]]


def _has(records: Records, metric: str, run: str) -> bool:
    try:
        records.series(metric, run=run)
    except KeyError:
        return False
    return True


def condition_table(runs: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Mean and sample standard deviation (ddof=1; NaN for one seed) of ``columns`` per condition.

    Conditions keep the order of their first run. ``inf`` (a target never reached) makes the
    mean ``inf`` and the std NaN; ``reached_mean`` says how many seeds reached it. Values are
    compared at 10 significant digits: a metric equal in every seed but for float noise has a
    std of exactly 0.

    Examples
    --------
    >>> import pandas as pd
    >>> from topofl.study import condition_table
    >>> runs = pd.DataFrame({"condition": ["b", "b", "a"], "seed": [0, 1, 0],
    ...                      "final": [0.5, 0.7, 0.9], "gap": [0.3, 0.1 + 0.2, 0.5]})
    >>> condition_table(runs, ["final", "gap"])
      condition  n_seeds seeds  final_mean  final_std  gap_mean  gap_std
    0         b        2  0, 1         0.6   0.141421       0.3      0.0
    1         a        1     0         0.9        NaN       0.5      NaN
    """
    groups = runs.groupby("condition", sort=False)
    out = pd.DataFrame({
        "condition": list(groups.groups),
        "n_seeds": groups.size().to_numpy(),
        "seeds": [", ".join(str(s) for s in g["seed"]) for _, g in groups],
    })
    cols = list(columns) + (["reached"] if "reached" in runs.columns else [])
    for col in cols:
        values = pd.Series(_round_sig(runs[col].astype("float64")), index=runs.index)
        with np.errstate(invalid="ignore"):
            by = values.groupby(runs["condition"], sort=False)
            out[f"{col}_mean"] = _round_sig(by.mean().to_numpy())
            if col != "reached":
                out[f"{col}_std"] = by.std().to_numpy()
    return out


def _topology_metrics(runs: pd.DataFrame, requested: Sequence[str] | None) -> list[str]:
    reserved = {"run", "condition", "seed", "rounds", "reached", *CONVERGENCE_METRICS}
    present = [c for c in runs.columns if c not in reserved]
    if requested is not None:
        names = [m.removeprefix("graph.") for m in requested]
        unknown = [m for m in names if m not in present]
        if unknown:
            raise ValueError(f"topology metrics {unknown} were not recorded; recorded: {present}")
        return names
    chosen = []
    for pattern in DEFAULT_TOPOLOGY_METRICS:
        if pattern.endswith("*"):
            chosen += sorted(c for c in present if c.startswith(pattern[:-1]))
        elif pattern in present:
            chosen.append(pattern)
    if not chosen:
        return []
    means = runs.groupby("condition", sort=False)[chosen].mean()
    keep = []
    for c in dict.fromkeys(chosen):
        vals = _round_sig(means[c].to_numpy(dtype=np.float64))
        if np.unique(vals[~np.isnan(vals)]).size >= 2:  # equal everywhere explains nothing
            keep.append(c)
    return keep


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def select_runs(records: Records, where: Mapping[str, Any]) -> Records:
    """The runs of ``records`` whose (normalised, flattened) config has the values of ``where``.

    A value matches the config's when they are equal or their texts are (a ``str`` is its own
    text, anything else its JSON: ``"1"`` matches ``1``, ``"ring"`` matches ``"ring"``).

    Raises
    ------
    ValueError
        If a key of ``where`` is in no run's config (the message lists the keys), or no run
        matches.

    Examples
    --------
    >>> from topofl.study.tables import select_runs
    >>> rows = [{"run": r, "round": 0, "client": None, "metric": "acc", "value": 0.5}
    ...         for r in ("a", "b")]
    >>> recs = tf.records.Records(rows=rows, configs={
    ...     "a": {"partition_params": {"classes_per_client": 1}},
    ...     "b": {"partition_params": {"classes_per_client": 10}}})
    >>> select_runs(recs, {"partition_params.classes_per_client": "1"}).runs
    ['a']
    """
    if not isinstance(where, Mapping):
        raise TypeError(f"where must be a mapping of config keys to values, got "
                        f"{type(where).__name__}")
    flat = {run: normalize_config(records.configs.get(run, {})) for run in records.runs}
    known = {k for f in flat.values() for k in f}
    unknown = [k for k in where if k not in known]
    if unknown:
        raise ValueError(f"where: no run's config has the key(s) {unknown}; config keys: "
                         f"{sorted(known)}")
    keep = [run for run, f in flat.items()
            if all(k in f and (f[k] == v or _as_text(f[k]) == _as_text(v))
                   for k, v in where.items())]
    if not keep:
        wanted = ", ".join(f"{k}={_as_text(v)}" for k, v in where.items())
        raise ValueError(f"where: no run has {wanted} (of {len(flat)} runs)")
    return records.subset(keep)
