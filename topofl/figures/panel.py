"""A figure's panels: each curve's runs over seeds, the curves drawn, what ran and the numbers.

:func:`panels` runs every config's sweep over its seeds (:func:`~topofl.figures.runs.sweep`),
or reuses the cached runs, and groups the runs of a curve (one label, several seeds) into one
:class:`Panel`; :func:`curves` draws them; :func:`setting` and :func:`merged_setting` say what
ran and :func:`curve_table` gives the numbers behind each curve.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from topofl import algorithms, data, plotting
from topofl.figures.config import FigureError, _fmt, load_config
from topofl.figures.flatness import fix_window
from topofl.figures.measures import _metric, final, mean_over_rounds, per_seed
from topofl.figures.runs import FigureArgs, sweep, sweep_all
from topofl.records import Records
from topofl.workflow.schema import hparam_signature

__all__ = ["Panel", "panels", "curves", "epochs_per_round", "setting", "merged_setting",
           "curve_table"]


@dataclass
class Panel:
    """The curves of one panel of a figure (see :func:`panels`): each label's runs over seeds.

    Attributes
    ----------
    runs : dict of label to Records
        The runs of the curve, one per seed (a single-run Records for one seed); its
        ``sources`` name the file each run was read from (its sweep's finished marker lies
        beside it: :mod:`topofl.figures.diverged`).
    epochs : dict of label to float
        Local epochs per round (:func:`epochs_per_round`).
    configs : dict of label to dict
        The resolved run config of the curve's first seed.
    setting, notes, seeds, stand_in
        What ran (:func:`setting`), the configs' notes, the seeds, and the stand-ins used
        (paper dataset -> offline dataset).
    paper_rounds
        The horizons of the panel's configs that have a file (named, or naming it in
        ``_name``): the paper's rounds (their ``--full`` scale), or the rounds a field result
        declared before its runs (their base ``rounds``).
    """

    title: str
    runs: dict[str, Any]
    epochs: dict[str, float]
    configs: dict[str, dict[str, Any]]
    setting: list[tuple[str, str]]
    notes: list[str]
    seeds: list[int] = field(default_factory=list)
    stand_in: dict[str, str] = field(default_factory=dict)
    paper_rounds: list[int] = field(default_factory=list)

    @property
    def data(self) -> str:
        """The dataset(s) that ran, ``" / "``-joined."""
        return " / ".join(dict.fromkeys(str(c.get("data", "")) for c in self.configs.values()))

    def table(self, metric: str = "test_acc") -> Any:
        """:func:`curve_table` of the panel's curves."""
        return curve_table(self.runs, metric, self.epochs)


_WHERE = frozenset({"seed", "run_id", "records_path", "checkpoint_path", "checkpoint_every",
                    "progress", "device"})  # where a run wrote and computed


def _same_but_seed(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two resolved run configs differ at most in their seed (and where they write)."""
    return ({k: v for k, v in a.items() if k not in _WHERE}
            == {k: v for k, v in b.items() if k not in _WHERE})


def _sources(source: Any) -> list[tuple[Any, str | None]]:
    """``(config name or dict, fixed label or None)`` of a panel's source."""
    if isinstance(source, (str, os.PathLike)) or (isinstance(source, Mapping)
                                                  and "_name" in source):
        return [(source, None)]
    if isinstance(source, Mapping):
        return [(v, str(k)) for k, v in source.items()]
    if isinstance(source, Sequence):
        return [(v, None) for v in source]
    raise FigureError(f"a panel's configs are a name, a config, a list of them or a mapping "
                      f"label -> config, got {type(source).__name__}")


def panels(args: FigureArgs, configs: Mapping[str, Any],
           label: Callable[[Mapping[str, Any]], str] | None = None, *,
           share: str | None = None) -> dict[str, Panel]:
    """Load, run (or reuse) and group into curves the runs of every panel of a figure.

    Parameters
    ----------
    args : FigureArgs
    configs : mapping of panel title to configs
        Each panel's configs: a config name of ``paper_figures/configs/`` (or the config
        itself, e.g. a cell of :func:`~topofl.figures.grid`), a list of them, or a mapping
        curve label -> config (every run of that config is that curve).
    label : callable, optional
        Curve label of a run, from its resolved config (needed unless the labels are given).
        The runs of a label are the seeds of one curve: they may differ in ``seed`` only.
    share : str, optional
        Another figure whose cached runs these are (two results of a paper read the same
        runs, e.g. a table of final accuracies and a figure of the curves): the runs are kept
        under that figure's cache folder, so neither script runs them twice.

    Returns
    -------
    dict of panel title to Panel

    Raises
    ------
    FigureError
        Two runs of a panel with one label that differ in more than the seed, or a config
        whose runs need a label function.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> args = tf.figures.FigureArgs("toy", "quick", d / "out", d / "runs")
    >>> cfg = {"algorithm": "dsgd", "data": "digits", "n_clients": 4, "rounds": 2,
    ...        "spectral": False, "sweep": {"topology": ["ring", "complete"], "seed": [0, 1]},
    ...        "_name": "toy", "_seeds": [0, 1]}
    >>> found = tf.figures.panels(args, {"left": cfg}, lambda c: c["topology"])
    >>> p = found["left"]
    >>> list(p.runs), p.runs["ring"].runs, p.seeds
    (['ring', 'complete'], ['topology=ring__seed=0', 'topology=ring__seed=1'], [0, 1])
    >>> fig, numbers = tf.figures.curves(found, "global_acc")
    >>> numbers["left"]["curve"].tolist(), numbers["left"].loc[0, "final global_acc"].n
    (['ring', 'complete'], 2)
    """
    cache = Path(args.runs).parent / share if share is not None else None
    # every sweep's runs in one pool of args.jobs workers first (none waits on another's tail)
    sweep_all([load_config(c, args.scale) if isinstance(c, (str, os.PathLike)) else c
               for source in configs.values() for c, _ in _sources(source)], args, cache=cache)
    out: dict[str, Panel] = {}
    for title, source in configs.items():
        groups: dict[str, list[tuple[Any, str]]] = {}
        notes: list[str] = []
        seeds: list[int] = []
        stand: dict[str, str] = {}
        paper: list[int] = []
        horizon: dict[str, int] = {}
        for cfg_or_name, fixed in _sources(source):
            cfg = (load_config(cfg_or_name, args.scale)
                   if isinstance(cfg_or_name, (str, os.PathLike)) else cfg_or_name)
            full = _horizon(cfg_or_name)  # a config by name, or one that names its file
            if full is not None and full not in paper:
                paper.append(full)
            notes += [n for n in cfg.get("_notes", []) if n not in notes]
            seeds += [s for s in cfg.get("_seeds", []) if s not in seeds]
            stand.update(cfg.get("_stand_in", {}))
            rec = sweep(cfg, args, cache=cache)
            for r in rec.runs:
                if fixed is None and label is None:
                    raise FigureError(f"panel {title!r}: the runs of {cfg.get('_name')} need "
                                      "a label function (or give the labels)")
                key = fixed if fixed is not None else str(label(rec.configs[r]))  # type: ignore[misc]
                if full is not None:
                    horizon[key] = max(horizon.get(key, 0), full)
                group = groups.setdefault(key, [])
                if group and not _same_but_seed(group[0][0].configs[group[0][1]],
                                                rec.configs[r]):
                    raise FigureError(f"two runs of panel {title!r} are both labelled {key!r} "
                                      "but differ in more than their seed")
                group.append((rec, r))
        panel = Panel(title, {}, {}, {}, [], notes, seeds, stand, paper)
        for key, group in groups.items():
            rec, first = group[0]
            if all(g[0] is rec for g in group):
                panel.runs[key] = rec.subset([r for _, r in group])
            else:  # one label over several configs' sweeps
                parts = [g.subset([r]) for g, r in group]
                panel.runs[key] = Records(
                    rows=[row for p in parts for row in p.rows],
                    configs={k: v for p in parts for k, v in p.configs.items()},
                    provenances={k: v for p in parts for k, v in p.provenances.items()})
                # where each run was read from: its sweep's finished marker lies beside it
                panel.runs[key].sources = {k: v for p in parts for k, v in p.sources.items()}
            panel.configs[key] = dict(rec.configs[first])
            panel.epochs[key] = epochs_per_round(rec.configs[first])
            if horizon.get(key, 0) >= 4:  # the flatness window: a quarter of the horizon
                fix_window(panel.runs[key], horizon[key] // 4)
        panel.setting = _setting_of([c for rec in panel.runs.values()
                                     for c in rec.configs.values()])
        out[title] = panel
    return out


def _horizon(source: Any) -> int | None:
    """The horizon of a figure config (a name, or a config that names its file in ``_name``):
    the rounds of its ``full`` scale, the paper's (its base ``rounds`` where it has no full
    scale: the horizon a field result declared); ``None`` for a config of no file.

    The ``default`` and ``full`` scales of a figure config change its rounds, evaluations and
    seeds, never its local work per round (a test holds every config to it), so a quarter of
    this horizon in rounds is a window fixed in local work (:mod:`topofl.figures.flatness`).
    """
    name = source if isinstance(source, (str, os.PathLike)) else (
        source.get("_name") if isinstance(source, Mapping) else None)
    if name is None:
        return None
    try:
        full = load_config(name, "full").get("rounds")
    except (OSError, ValueError):  # a config of no file under that name
        return None
    return full if isinstance(full, int) and not isinstance(full, bool) else None


def curves(found: Mapping[str, Panel], metric: str = "test_acc", *, band: bool | str = True,
           ylabel: str | None = None, legend: str | None = "best", epochs: bool = True,
           figsize: tuple[float, float] | None = None, sharey: bool = False,
           suptitle: str | None = None, titles: bool = True) -> tuple[Any, dict[str, Any]]:
    """One axes per panel, each curve the mean over its seeds with a seed band; the numbers.

    The figure of most curve results: :func:`topofl.plotting.convergence` of each panel's
    curves (x axis in epochs with ``epochs=True``), side by side, and :func:`curve_table` of
    each panel.

    Returns
    -------
    (matplotlib Figure, dict of panel title to DataFrame)

    Examples
    --------
    >>> r = tf.records.Records(rows=[{"run": f"s{s}", "round": t, "client": None,
    ...                               "metric": "acc", "value": 0.1 * t + s}
    ...                              for s in (0, 1) for t in range(3)],
    ...                        configs={"s0": {"seed": 0}, "s1": {"seed": 1}})
    >>> panel = tf.figures.Panel("p", {"a": r}, {}, {}, [], [])
    >>> fig, numbers = tf.figures.curves({"p": panel}, "acc", epochs=False)
    >>> f"{numbers['p'].loc[0, 'final acc']:.2f}", len(fig.axes[0].collections)  # a seed band
    ('0.70 ± 0.71', 1)
    """
    n = len(found)
    size = figsize or ((5.0 * n, 3.8) if n > 1 else (6.4, 4.0))
    fig, axes = plt.subplots(1, n, figsize=size, sharey=sharey, squeeze=False)
    ylabel = ylabel or ("test accuracy (global test set)" if metric == "global_acc"
                        else metric.replace("_", " "))
    numbers = {}
    for ax, (title, panel) in zip(axes[0], found.items()):
        plotting.convergence(panel.runs, metric, ax=ax, title=title if titles else None,
                                band=band, epochs=panel.epochs if epochs else None,
                                ylabel=ylabel, legend=legend)
        numbers[title] = curve_table(panel.runs, metric, panel.epochs if epochs else None)
    if suptitle:
        fig.suptitle(suptitle)
    fig.tight_layout()
    return fig, numbers


def epochs_per_round(config: Mapping[str, Any]) -> float:
    """Local epochs one round makes: the x-axis factor of a plot against epochs.

    Summed over the algorithm's phases: a phase of ``epochs`` counts that many, a phase of
    ``steps`` counts ``steps * batch_size / m`` with ``m`` the mean number of training samples
    per client (the train set size over ``n_clients``). ``config`` is a run's resolved config
    (``records.configs[run]``).

    Examples
    --------
    >>> cfg = tf.config.validate({"algorithm": "dsgd", "topology": "ring", "data": "digits",
    ...                           "n_clients": 10, "batch_size": 36})
    >>> round(tf.figures.panel.epochs_per_round(cfg), 4)  # 36 samples of 1442 / 10
    0.2497
    """
    name = str(config["algorithm"])
    hp = {k: config[k] for k in hparam_signature(name) if k in config}
    algo = algorithms.get_algorithm(name, **hp)
    m = data.load(str(config["data"])).x_train.shape[0] / int(config["n_clients"])
    batch = int(config.get("batch_size", 32))
    total = 0.0
    for ph in algo.phases:
        if ph.epochs is not None:
            e = ph.epochs
            total += float(sum(e) / len(e)) if isinstance(e, tuple) else float(e)
        else:
            total += int(ph.steps or 0) * min(batch, m) / m
    return total


# ------------------------------------------------------------------------------ settings


_SETTING_KEYS = ("data", "n_clients", "partition", "partition_params", "model", "algorithm",
                 "topology", "rounds", "lr", "momentum", "weight_decay", "batch_size",
                 "local_steps", "local_epochs", "clique_averaging", "eval_every")


def setting(records: Any, keys: Sequence[str] | None = None) -> list[tuple[str, str]]:
    """``(key, value)`` pairs of the settings of every run of ``records``.

    A value shared by all runs is shown once; a value that differs lists the distinct values
    in run order, separated by ``" / "``. Keys no run has are left out. ``keys`` defaults to
    the settings a reader of a paper figure looks for (dataset, n, partition, model, algorithm,
    graph, rounds, learning rate, momentum, batch size, local work) followed by the
    algorithm's other hyper-parameters; the runs' seeds close the list (``"seeds"``).

    Examples
    --------
    >>> r = tf.records.Records(configs={"a": {"topology": "ring", "lr": 0.1, "seed": 0},
    ...                                 "b": {"topology": "ring", "lr": 0.1, "seed": 1}})
    >>> tf.figures.panel.setting(r)
    [('topology', 'ring'), ('lr', '0.1'), ('seeds', '0, 1')]
    """
    return _setting_of([records.configs[r] for r in records.runs], keys)


def merged_setting(found: Mapping[str, Panel], keys: Sequence[str] | None = None
                   ) -> list[tuple[str, str]]:
    """One :func:`setting` list for every run of several panels (a table whose cells share
    most settings), instead of one list per panel.

    Examples
    --------
    >>> r = tf.records.Records(configs={"a": {"lr": 0.1, "seed": 0}})
    >>> p = tf.figures.Panel("t", {"x": r}, {}, {}, [], [])
    >>> tf.figures.merged_setting({"t": p, "u": p})
    [('lr', '0.1'), ('seeds', '0')]
    """
    return _setting_of([c for p in found.values() for rec in p.runs.values()
                        for c in rec.configs.values()], keys)


def _setting_of(configs: Sequence[Mapping[str, Any]], keys: Sequence[str] | None = None
                ) -> list[tuple[str, str]]:
    wanted = list(keys) if keys is not None else list(_SETTING_KEYS) + sorted(
        {k for c in configs for k in c} - set(_SETTING_KEYS) - _RUN_PLUMBING - {"seed"})
    out: list[tuple[str, str]] = []
    for k in wanted:
        if k == "seed":
            continue
        vals = [_fmt(c[k]) for c in configs if k in c]
        if not vals:
            continue
        distinct = list(dict.fromkeys(vals))
        out.append((k, " / ".join(distinct)))
    seeds = list(dict.fromkeys(str(c["seed"]) for c in configs if "seed" in c))
    if seeds:
        out.append(("seeds", ", ".join(seeds)))
    return out


_RUN_PLUMBING = {"device", "dtype", "executor", "chunk_size", "stream_rows", "fuse", "init",
                 "eval_global", "record_clients", "spectral", "checkpoint_every",
                 "checkpoint_path", "records_path", "run_id", "progress", "model_params"}


def curve_table(runs: Mapping[str, Any], metric: str = "test_acc",
                epochs: Mapping[str, float] | None = None) -> Any:
    """The numbers behind each curve, over its seeds: final mean (min, max), best, mean over
    the rounds.

    Parameters
    ----------
    runs : mapping of label to Records
        One curve per label: its runs, one per seed.
    metric : str
        Prefix of the ``_mean``/``_min``/``_max`` metrics, or a full metric name.
    epochs : mapping of label to float, optional
        Epochs per round, to report the final epoch.

    Returns
    -------
    pandas.DataFrame
        One row per label; the value columns hold :class:`~topofl.figures.OverSeeds`
        (printed ``mean ± std``, or the value of a single seed): ``final <metric>``,
        ``final min`` / ``final max`` (when recorded), ``best mean`` (each seed's best) and
        ``mean over rounds``.

    Examples
    --------
    >>> r = tf.records.Records(rows=[{"run": "a", "round": t, "client": None,
    ...                               "metric": "acc", "value": v}
    ...                              for t, v in enumerate([0.2, 0.6, 0.5])])
    >>> t = tf.figures.panel.curve_table({"ring": r}, "acc")
    >>> int(t.loc[0, "rounds"]), t.loc[0, "final acc"].mean, t.loc[0, "best mean"].mean
    (3, 0.5, 0.6)
    """
    rows = []
    for label, rec in runs.items():
        name = _metric(rec, metric)
        last = min(int(rec.series(name, run=r)[0][-1]) + 1 for r in rec.runs)
        row: dict[str, Any] = {"curve": label, "rounds": last}
        if epochs is not None and label in epochs:
            row["epochs"] = round(row["rounds"] * epochs[label], 2)
        row[f"final {metric}"] = final(rec, metric)
        for side in ("min", "max"):
            if f"{metric}_{side}" in rec.metrics:
                row[f"final {side}"] = final(rec, f"{metric}_{side}")
        def best(one: Any, n: str = name) -> float:
            return float(np.nanmax(one.series(n)[1]))

        row["best mean"] = per_seed(rec, best)
        row["mean over rounds"] = mean_over_rounds(rec, metric)
        rows.append(row)
    return pd.DataFrame(rows)


