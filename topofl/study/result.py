"""What :func:`topofl.study.study` returns, and the error it raises when told to be strict."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

__all__ = ["StudyResult", "IncompleteRunsError"]


@dataclass(frozen=True)
class StudyResult:
    """Tables (pandas DataFrames) and files of :func:`topofl.study.study`.

    Attributes
    ----------
    runs : DataFrame
        One row per run: ``run, condition, seed``, the topology metrics, ``rounds``
        (completed at the last evaluation), ``reached`` and the convergence metrics.
    conditions : DataFrame
        One row per condition: ``condition, n_seeds, seeds`` and ``<metric>_mean``,
        ``<metric>_std`` for every topology and convergence metric (``reached_mean``: the
        fraction of seeds that reached the target).
    correlations : DataFrame
        One row per (topology metric, convergence metric): ``spearman, ci_low, ci_high,
        p_value, n_conditions, n_boot``.
    pairs : DataFrame
        One row per pair of conditions (A before B) and convergence metric: the seed-paired
        comparison of :func:`topofl.study.pairs.pairwise_table` (``mean_diff`` = A - B over
        the common seeds, its Student-t interval, one-sided p-values of "A better" and "B
        better", seeds where each is ahead, ``verdict``).
    names : dict
        Condition -> the name given with ``labels`` (empty without): what tables and figures
        show instead of the condition's label.
    metric_names : dict
        Metric -> the name given with ``labels`` (empty without): what titles, axes and
        ``study.md`` show instead of its words (:mod:`topofl.study.names`).
    correction : str
        The correction for multiple comparisons of the pairwise verdicts and the correlations'
        conclusions: ``"none"`` or ``"holm"`` (their ``p_adjusted`` columns).
    metric, target : str, float
        The curve the convergence metrics read and the target of ``rounds_to_target``.
    topology_metrics, convergence_metrics : list of str
    skipped : list of str
        Runs left out because they never recorded ``metric``.
    incomplete : dict
        Run -> why it is not finished (:meth:`topofl.records.Records.status`: its rows stop
        before the rounds its header plans, or its file was cut mid-write): left out, unless
        ``include_incomplete``.
    unreadable : dict
        File -> why it could not be read (empty, cut before its header, corrupt): left out.
    diverged : list of str
        Runs that stopped early because training diverged (a sweep's ``<run>.done`` marker
        says so): kept, their curve up to the divergence is their result.
    files : list of Path
        Files written to ``out_dir`` (empty without one).
    markdown : str
        The text of ``study.md``.
    """

    runs: pd.DataFrame
    conditions: pd.DataFrame
    correlations: pd.DataFrame
    metric: str
    target: float
    topology_metrics: list[str]
    convergence_metrics: list[str]
    skipped: list[str] = field(default_factory=list)
    incomplete: dict[str, str] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)
    diverged: list[str] = field(default_factory=list)
    pairs: pd.DataFrame = field(default_factory=pd.DataFrame)
    names: dict[str, str] = field(default_factory=dict)
    metric_names: dict[str, str] = field(default_factory=dict)
    correction: str = "none"
    files: list[Path] = field(default_factory=list)
    markdown: str = ""


class IncompleteRunsError(ValueError):
    """:func:`topofl.study.study` with ``strict=True``: a run is incomplete or a records file
    unreadable."""
