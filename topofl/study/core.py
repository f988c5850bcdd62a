"""The study itself: records in; tables, figures and ``study.md`` out (:func:`study`)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from topofl.records import Records, load_many
from topofl.study.options import Bootstrap, Output, Selection
from topofl.study.pairs import pairwise_table
from topofl.study.rendering import _figures, _markdown, readable_condition
from topofl.study.result import IncompleteRunsError, StudyResult
from topofl.study.statistics import correlation_table
from topofl.study.tables import (
    CONVERGENCE_METRICS,
    _has,
    _topology_metrics,
    condition_table,
    run_table,
    select_runs,
)

__all__ = ["study", "resolve_labels", "resolve_names"]

_Record = TypeVar("_Record", Selection, Bootstrap, Output)


def study(
    source: Records | str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str] | None = None,
    *,
    metric: str = "test_acc_mean",
    target: float | None = None,
    topology_metrics: Sequence[str] | None = None,
    labels: Mapping[str, str] | None = None,
    correction: str = "none",
    selection: Selection | None = None,
    bootstrap: Bootstrap | None = None,
    output: Output | None = None,
) -> StudyResult:
    """Run the topology-vs-convergence study on a folder (or list) of records.

    Parameters
    ----------
    source : Records, folder, or iterable of records files
        A folder is read with :func:`topofl.records.load_many` (its ``*.jsonl``; two files
        with the same run id are an error).
    out_dir : path, optional
        Where to write ``study.md``, ``runs.csv``, ``conditions.csv``, ``correlations.csv``,
        ``pairs.csv``, ``curves.png`` and ``scatter_<convergence metric>.png``; nothing is
        written without it.
    metric : str, default "test_acc_mean"
        The recorded, higher-is-better curve the convergence metrics read
        (``"global_acc_mean"`` for the accuracy on the global test set).
    target : float, optional
        Target of ``rounds_to_target``; default: 90 % of the median over runs of the best
        value of ``metric``.
    topology_metrics : sequence of str, optional
        ``graph.*`` keys to correlate (with or without the prefix); default: those of
        :data:`DEFAULT_TOPOLOGY_METRICS` that were recorded and whose condition means are not
        all equal. Every recorded key is in the run table either way.
    labels : mapping of str to str, optional
        Names of conditions and metrics for ``study.md`` and the figures, e.g. ``{"ring":
        "Ring", "topology=torus:rows=4,cols=4": "Torus 4x4", "global_acc_mean": "accuracy"}``.
        A key names one condition (its label as in the run table, its name as the figures
        show it, :func:`~topofl.study.rendering.readable_condition`, or for a condition of one
        config key that key's value) or a metric: ``metric``, a convergence metric
        (``rounds_to_target``) or a topology metric (``spectral_gap``); a metric's name
        replaces its words in titles, axes and tables, its unit added unless the name says it
        (default names: :mod:`topofl.study.names`). The CSV files keep the labels and metrics.
    correction : {"none", "holm"}, default "none"
        Correction for multiple comparisons of the pairwise verdicts (over the pairs x metrics
        tested) and of the correlations' conclusions (over the correlations tested):
        Holm-Bonferroni or none (the verdicts of earlier studies); ``study.md`` says which.
    selection, bootstrap, output : Selection, Bootstrap, Output, optional
        Which runs the study reads (``where``, ``strict``, ``include_incomplete``), the
        bootstrap over seeds (``n_boot``, ``seed``) and what it draws and writes (``figures``,
        ``band``, ``formats``, ``command``): the records of :mod:`topofl.study.options`, each
        field documented there; default: every field's default.

    Returns
    -------
    StudyResult

    Raises
    ------
    ValueError
        If no run recorded ``metric`` (the message lists the recorded metrics), for an
        unknown topology metric, a bad ``band``, ``n_boot`` or ``correction``, a ``where``
        key that no run's config has, a ``where`` that no run matches, a ``labels`` key that
        names neither a metric nor one condition, one name for two conditions (or metrics),
        or an unknown format.
    TypeError
        If ``selection``, ``bootstrap`` or ``output`` is not the record it names.
    IncompleteRunsError
        With ``selection.strict``, if a run is incomplete or a file unreadable (a
        ``ValueError``).

    Notes
    -----
    A run is *incomplete* when :meth:`~topofl.records.Records.status` says so: its rows stop
    before the rounds its header plans, or its file ends in a line cut mid-write. A run that
    diverged stops early too; when a sweep's ``<run>.done`` marker says ``"diverged"`` it is
    kept (that curve is its result).

    Examples
    --------
    Two graphs x two seeds (more in :mod:`topofl.study`):

    >>> from topofl.study import Bootstrap, Output, Selection
    >>> rows = [{"run": f"{g}-{s}", "round": t, "client": None, "metric": m, "value": v}
    ...         for g, gap, acc in (("ring", 0.01, 0.6), ("complete", 1.0, 0.9)) for s in (0, 1)
    ...         for t, m, v in ((9, "graph.spectral_gap", gap), (19, "acc", acc + 0.01 * s))]
    >>> configs = {f"{g}-{s}": {"topology": g, "seed": s, "lr": 0.1}
    ...            for g in ("ring", "complete") for s in (0, 1)}
    >>> res = tf.study.study(tf.records.Records(rows=rows, configs=configs), metric="acc",
    ...                      selection=Selection(where={"lr": 0.1}),
    ...                      bootstrap=Bootstrap(n_boot=50), output=Output(figures=False))
    >>> res.conditions[["condition", "n_seeds", "final_mean"]]
               condition  n_seeds  final_mean
    0      topology=ring        2       0.605
    1  topology=complete        2       0.905
    """
    selection = _checked("selection", selection, Selection)
    bootstrap = _checked("bootstrap", bootstrap, Bootstrap)
    output = _checked("output", output, Output)
    if output.band not in ("minmax", "std"):
        raise ValueError(f"band must be 'minmax' or 'std', got {output.band!r}")
    output = replace(output, formats=_check_formats(output.formats))
    records = source if isinstance(source, Records) else load_many(source, on_error="skip")
    unreadable = dict(records.unreadable)
    if selection.where:
        records = select_runs(records, selection.where)
    incomplete, diverged = _incomplete_runs(records, metric)
    if selection.strict and (incomplete or unreadable):
        raise IncompleteRunsError(_problems(incomplete, unreadable))
    if incomplete and not selection.include_incomplete:
        records = records.subset([r for r in records.runs if r not in incomplete])
    have, skipped = _runs_with(records, metric, _problems(incomplete, unreadable))
    target = _target(records, have, metric, target)
    result = _tables(records, metric, target, topology_metrics, labels or {}, correction,
                     bootstrap, skipped=skipped, incomplete=incomplete, unreadable=unreadable,
                     diverged=diverged)
    files, markdown = _write(records, result, out_dir, output, bootstrap)
    return StudyResult(**{**result.__dict__, "files": files, "markdown": markdown})


def _checked(name: str, value: Any, kind: type[_Record]) -> _Record:
    """``value`` when it is a ``kind`` (a record of :mod:`topofl.study.options`), the
    record's defaults for ``None``, else a ``TypeError`` naming the parameter ``name``."""
    if value is None:
        return kind()
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be a topofl.study.{kind.__name__}, got "
                        f"{type(value).__name__}")
    return value


def _tables(records: Records, metric: str, target: float,
            topology_metrics: Sequence[str] | None, labels: Mapping[str, str],
            correction: str, bootstrap: Bootstrap, **left: Any) -> StudyResult:
    """The study's tables and names (``left``: the runs left out, as :class:`StudyResult`
    holds them)."""
    runs = run_table(records, metric=metric, target=target)
    topo = _topology_metrics(runs, topology_metrics)
    conv = [c for c in CONVERGENCE_METRICS if c in runs.columns]
    conditions = condition_table(runs, [*topo, *conv])
    correlations = correlation_table(runs, topo, conv, n_boot=bootstrap.n_boot,
                                     seed=bootstrap.seed, correction=correction)
    names, metric_names = resolve_names(labels, list(conditions["condition"]),
                                        _metrics(runs, metric))
    return StudyResult(runs=runs, conditions=conditions, correlations=correlations,
                       metric=metric, target=target, topology_metrics=topo,
                       convergence_metrics=conv, pairs=pairwise_table(runs, correction=correction),
                       names=names, metric_names=metric_names, correction=correction, **left)


def _incomplete_runs(records: Records, metric: str) -> tuple[dict[str, str], list[str]]:
    """The runs that stopped early, split into the incomplete ones (run -> why, a missing last
    ``metric`` included) and those whose sweep marker says they diverged."""
    incomplete: dict[str, str] = {}
    diverged: list[str] = []
    for run in records.runs:
        status = records.status(run)
        if status.complete is not False:
            continue
        if run not in records.cut and _marker(records.sources.get(run)) == "diverged":
            diverged.append(run)
        else:
            incomplete[run] = status.reason
    for run in records.runs:  # a missing value is named, never averaged away
        if run not in incomplete and run not in diverged and _has(records, metric, run):
            rounds, vals = records.series(metric, run=run)
            if np.isnan(vals[-1]):
                incomplete[run] = (f"its last {metric} (round {int(rounds[-1])}) is missing "
                                   "(null or NaN)")
    return incomplete, diverged


def _runs_with(records: Records, metric: str, left_out: str) -> tuple[list[str], list[str]]:
    """The runs that recorded ``metric`` and those that did not; a ``ValueError`` when none
    did (naming the runs ``left_out`` before, if any)."""
    have = [run for run in records.runs if _has(records, metric, run)]
    skipped = [run for run in records.runs if run not in have]
    if not have:
        left = f" (left out: {left_out})" if left_out else ""
        raise ValueError(
            f"no run recorded the metric {metric!r}; recorded metrics: "
            f"{records.metrics}{left}"
        )
    return have, skipped


def _target(records: Records, have: Sequence[str], metric: str, target: float | None) -> float:
    """``target`` checked, or by default 90 % of the median over the runs ``have`` of the best
    value of ``metric``."""
    if target is None:
        bests = [records.best(metric, run=run) for run in have]
        target = 0.9 * float(np.nanmedian(bests))
    target = float(target)
    if not math.isfinite(target):
        raise ValueError(f"target must be a finite number (the value of {metric} whose first "
                         f"round a run reaches is its rounds to target), got {target!r}")
    return target


def _write(records: Records, result: StudyResult, out_dir: str | os.PathLike[str] | None,
           output: Output, bootstrap: Bootstrap) -> tuple[list[Path], str]:
    """Write the study's CSV tables, figures (with ``output.figures``) and ``study.md`` into
    ``out_dir`` (nothing without it); the files written and the Markdown."""
    figs: dict[str, str] = {}
    files: list[Path] = []
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        for name, df in (("runs", result.runs), ("conditions", result.conditions),
                         ("correlations", result.correlations), ("pairs", result.pairs)):
            df.to_csv(out / f"{name}.csv", index=False)
            files.append(out / f"{name}.csv")
        if output.figures:
            figs, written = _figures(records, result, out, output.band, output.formats)
            files += written
    markdown = _markdown(result, figs, n_boot=bootstrap.n_boot, seed=bootstrap.seed,
                         band=output.band, command=output.command)
    if out_dir is not None:
        (Path(out_dir) / "study.md").write_text(markdown, encoding="utf-8")
        files.append(Path(out_dir) / "study.md")
    return files, markdown


_FORMATS = ("png", "pdf", "svg")


def _check_formats(formats: Sequence[str]) -> tuple[str, ...]:
    if isinstance(formats, str):
        formats = [f for f in formats.split(",")]
    found = tuple(dict.fromkeys(str(f).strip().lower().lstrip(".") for f in formats))
    bad = [f for f in found if f not in _FORMATS]
    if not found or bad:
        raise ValueError(f"formats must be one or more of {', '.join(_FORMATS)}, got "
                         f"{list(formats)!r}")
    return found


def _metrics(runs: Any, metric: str) -> list[str]:
    """The metrics a study's ``labels`` may name: its curve, every convergence metric and every
    topology metric of the run table."""
    reserved = {"run", "condition", "seed", "rounds", "reached"}
    return list(dict.fromkeys([metric, *CONVERGENCE_METRICS,
                               *(c for c in runs.columns if c not in reserved)]))


def resolve_names(labels: Mapping[str, str], conditions: Sequence[str],
                  metrics: Sequence[str]) -> tuple[dict[str, str], dict[str, str]]:
    """``(condition -> name, metric -> name)`` from ``labels``, whose keys each name one of
    ``metrics`` (a topology metric with or without its ``graph.`` prefix) or one condition
    (see :func:`study`; a key that could be both is refused).

    Examples
    --------
    >>> from topofl.study.core import resolve_names
    >>> resolve_names({"ring": "Ring", "graph.spectral_gap": "gap"}, ["topology=ring"],
    ...               ["final", "spectral_gap"])
    ({'topology=ring': 'Ring'}, {'spectral_gap': 'gap'})
    >>> resolve_names({"fianl": "Final"}, ["topology=ring"], ["final"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: label 'fianl' names no condition and no metric; ...
    """
    if not isinstance(labels, Mapping):
        raise TypeError(f"labels must be a mapping of condition or metric to name, got "
                        f"{type(labels).__name__}")
    known = {m: m for m in metrics}
    known.update({f"graph.{m}": m for m in metrics})
    given: dict[str, str] = {}
    rest: dict[str, str] = {}
    for spec, name in labels.items():
        _check_name(spec, name)
        key = spec.strip()
        if key not in known:
            rest[spec] = name
            continue
        if any(key in _aliases(c) for c in conditions):
            raise ValueError(f"label {spec!r} names both the metric {known[key]!r} and a "
                             "condition; name the condition by its full label (key=value)")
        if known[key] in given:
            raise ValueError(f"metric {known[key]!r} is given two names: "
                             f"{given[known[key]]!r} and {name.strip()!r}")
        given[known[key]] = name.strip()
    _no_two(given, "metrics")
    return _resolve(rest, conditions, metrics), given


def _check_name(spec: Any, name: Any) -> None:
    if not isinstance(spec, str) or not isinstance(name, str) or not name.strip():
        raise TypeError(f"labels must map a condition or metric (str) to a non-empty name "
                        f"(str), got {spec!r}: {name!r}")


def _no_two(names: Mapping[str, str], what: str) -> None:
    named = list(names.values())
    dup = sorted({n for n in named if named.count(n) > 1})
    if dup:
        raise ValueError(f"labels give two {what} the name(s) {dup}")


def resolve_labels(labels: Mapping[str, str], conditions: Sequence[str]) -> dict[str, str]:
    """Condition -> name, from ``labels`` whose keys each name one condition (see
    :func:`study`; :func:`resolve_names` for labels of metrics too).

    Examples
    --------
    >>> from topofl.study.core import resolve_labels
    >>> conds = ["topology=ring", "topology=torus:rows=4,cols=4"]
    >>> resolve_labels({"ring": "Ring", "torus (rows 4, cols 4)": "Torus"}, conds)
    {'topology=ring': 'Ring', 'topology=torus:rows=4,cols=4': 'Torus'}
    >>> resolve_labels({"star": "Star"}, conds[:1])
    Traceback (most recent call last):
    ...
    ValueError: label 'star' names no condition; conditions: 'topology=ring'
    """
    if not isinstance(labels, Mapping):
        raise TypeError(f"labels must be a mapping of condition to name, got "
                        f"{type(labels).__name__}")
    return _resolve(labels, conditions, ())


def _resolve(labels: Mapping[str, str], conditions: Sequence[str],
             metrics: Sequence[str]) -> dict[str, str]:
    """Condition -> name (:func:`resolve_labels`); ``metrics``: named in the error of a key
    that names nothing."""
    out: dict[str, str] = {}
    for spec, name in labels.items():
        _check_name(spec, name)
        found = [c for c in conditions if spec.strip() in _aliases(c)]
        if len(found) != 1:
            what = ("no condition" + (" and no metric" if metrics else "") if not found
                    else f"{len(found)} conditions")
            raise ValueError(f"label {spec!r} names {what}; conditions: "
                             + ", ".join(repr(c) for c in (found or conditions))
                             + ("; metrics: " + ", ".join(repr(m) for m in metrics)
                                if metrics and not found else ""))
        if found[0] in out:
            raise ValueError(f"condition {found[0]!r} is given two names: {out[found[0]]!r} "
                             f"and {name!r}")
        out[found[0]] = name.strip()
    _no_two(out, "conditions")
    return out


def _aliases(condition: str) -> set[str]:
    """What a label key may say to name ``condition``."""
    key, eq, value = condition.partition("=")
    names = {condition, readable_condition(condition)}
    if eq and ", " not in condition:
        names.add(value)
    return names


def _problems(incomplete: Mapping[str, str], unreadable: Mapping[str, str]) -> str:
    parts = []
    if incomplete:
        parts.append(f"{len(incomplete)} incomplete run(s): " + "; ".join(
            f"{run} ({why})" for run, why in incomplete.items()))
    if unreadable:
        parts.append(f"{len(unreadable)} unreadable file(s): " + "; ".join(
            f"{path} ({why})" for path, why in unreadable.items()))
    return "; ".join(parts)


def _marker(source: str | None) -> str | None:
    """The status a sweep's ``<run>.done`` marker beside ``source`` records, if any."""
    if source is None:
        return None
    try:
        marker = json.loads(Path(source).with_suffix(".done").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    status = marker.get("status") if isinstance(marker, dict) else None
    return status if isinstance(status, str) else None
