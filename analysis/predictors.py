"""Predictor benchmark (issue #24, item 3): which graph metric predicts D-SGD's convergence?

After the two sweeps of ``analysis/configs/predictors_explore.toml`` and
``predictors_heldout.toml`` (the protocol, the split of the graph families into an exploration
and a held-out half, and the settings are in ``analysis/predictors.md``)::

    OMP_NUM_THREADS=1 topofl sweep analysis/configs/predictors_explore.toml \\
        --out analysis/out/predictors_explore
    OMP_NUM_THREADS=1 topofl sweep analysis/configs/predictors_heldout.toml \\
        --out analysis/out/predictors_heldout
    python analysis/predictors.py

this script runs, for each half and heterogeneity level, the study ``topofl study`` runs::

    topofl study analysis/out/predictors_<half> --metric global_acc_mean --target 0.8 \\
        --where partition_params.classes_per_client=<10|1> --n-boot 1000 --no-figures \\
        --out analysis/predictors/<half>_<iid|skew>

(through :func:`topofl.study.study`, with the same arguments), then compares every metric
with the spectral gap on the *same* bootstrap draws (seeds resampled within each graph, as the
study does): the interval of ``|rho(metric)| - |rho(spectral gap)|`` over the graphs where both
are defined. It writes ``analysis/figures/predictors_rho.png`` and the block between the
``results`` markers of ``analysis/predictors.md`` (the text around it is written by hand).

``python analysis/predictors.py --gap0`` needs no records: it rebuilds the held-out studies from
their committed ``analysis/predictors/heldout_<level>/runs.csv`` (:func:`study_from_runs`) with
and without the graphs whose spectral gap is 0 (:func:`gap_zero`) and writes the ``gapzero``
block of ``analysis/predictors.md``.

``python analysis/predictors.py --alleig`` needs no records either: it adds Takezawa,
Koloskova and Stich's all-eigenvalues metric (:func:`with_all_eigenvalues_metric`, exactly
what ``topofl.spectral.summary(..., metrics="all_eigenvalues_metric")`` gives from the
eigenvalues the runs recorded) to every committed run table, rebuilds the studies and writes
the ``alleig`` block: the metric beside the spectral gap and the effective number of
neighbours, per half, level and convergence metric, and under the registered and the
low-noise regimes (homogeneous vs heterogeneous data).
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from topofl._utils.markdown import replace_block
from topofl._utils.markdown import table as md_table
from topofl.study import (
    Bootstrap,
    Output,
    Selection,
    StudyResult,
    condition_table,
    correlation_table,
    study,
)
from topofl.study.tables import CONVERGENCE_METRICS, _topology_metrics

ROOT = Path(__file__).resolve().parent
HALVES = {"explore": "exploration", "heldout": "held-out"}
LEVELS = {"iid": 10, "skew": 1}  # classes per client
LEVEL_NAMES = {"iid": "IID (10 classes per client)", "skew": "label skew (1 class per client)"}
METRIC = "global_acc_mean"
TARGET = 0.80  # registered with the settings, before the held-out runs
CONVERGENCE = ("rounds_to_target", "final")
CONV_NAMES = {"rounds_to_target": f"rounds to {METRIC} ≥ {TARGET:g}",
              "final": f"final {METRIC}"}
REFERENCE = "spectral_gap"
PRIMARY = ("spectral_gap", "effective_neighbors", "neighborhood_heterogeneity")
ALL_EIG = "all_eigenvalues_metric"


def run_study(records: Path, half: str, level: str, out: Path, n_boot: int) -> StudyResult:
    """``topofl study`` of one half and level (the command is quoted in its ``study.md``)."""
    where = {"partition_params.classes_per_client": LEVELS[level]}
    dest = out / f"{half}_{level}"
    command = (f"topofl study {records / ('predictors_' + half)} --metric {METRIC} "
               f"--target {TARGET:g} --where partition_params.classes_per_client="
               f"{LEVELS[level]} --n-boot {n_boot} --no-figures --out {dest}")
    return study(records / f"predictors_{half}", dest, metric=METRIC, target=TARGET,
                 selection=Selection(where=where), bootstrap=Bootstrap(n_boot=n_boot, seed=0),
                 output=Output(figures=False, command=command))


def run_pooled(folders: Sequence[Path], name: str, level: str, out: Path, n_boot: int
               ) -> StudyResult:
    """The study of every graph of ``folders`` at one level (both halves together)."""
    files = [f for d in folders for f in sorted(d.glob("*.jsonl"))]
    where = {"partition_params.classes_per_client": LEVELS[level]}
    dest = out / f"{name}_{level}"
    command = (f"topofl study {' '.join(f'{d}/*.jsonl' for d in folders)} --metric {METRIC} "
               f"--target {TARGET:g} --where partition_params.classes_per_client="
               f"{LEVELS[level]} --n-boot {n_boot} --no-figures --out {dest}")
    return study(files, dest, metric=METRIC, target=TARGET, selection=Selection(where=where),
                 bootstrap=Bootstrap(n_boot=n_boot, seed=0),
                 output=Output(figures=False, command=command))


def robustness_block(pooled: dict[tuple[str, str], StudyResult],
                     diffs: dict[tuple[str, str], pd.DataFrame]) -> str:
    """Registered (lr 1.0, batch 2) vs low-noise (lr 0.1, batch 128) regime, all 42 graphs."""
    lines = [
        "Generated by `python analysis/predictors.py --lownoise`: both halves together (42 "
        "graphs), the registered regime against the low-noise one; ρ [seed 95 %] and, against "
        "the spectral gap, Δ|ρ| [graphs + seeds 95 %]. Spread: the range of the graphs' mean "
        "final accuracy (%).",
        "",
    ]
    rows = []
    primary = [m for m in (*PRIMARY, "edges_per_node", "consensus_rate")]
    for level in LEVELS:
        for conv in CONVERGENCE:
            for m in primary:
                row = [LEVEL_NAMES[level], CONV_NAMES[conv], f"`{m}`"]
                for regime in ("registered", "lownoise"):
                    res = pooled[(regime, level)]
                    c = res.correlations
                    hit = c[(c.topology_metric == m) & (c.convergence_metric == conv)]
                    if hit.empty or math.isnan(hit.iloc[0].spearman):
                        row += ["–", "–"]
                        continue
                    r = hit.iloc[0]
                    row.append(f"{_fmt(r.spearman)} [{_fmt(r.ci_low)}, {_fmt(r.ci_high)}]"
                               f" (n = {int(r.n_conditions)})")
                    d = diffs[(regime, level)]
                    dd = d[(d.topology_metric == m) & (d.convergence_metric == conv)]
                    row.append("–" if m == REFERENCE or dd.empty else
                               f"{_fmt(dd.iloc[0].diff_abs_rho, '+.2f')} "
                               f"{_interval(dd.iloc[0].graphs_low, dd.iloc[0].graphs_high)}")
                rows.append(row)
    lines += [md_table(["level", "convergence", "metric", "registered: ρ", "Δ|ρ| vs gap",
                        "low noise: ρ", "Δ|ρ| vs gap"], rows), ""]
    spread = []
    for level in LEVELS:
        for regime, label in (("registered", "lr 1.0, batch 2"), ("lownoise", "lr 0.1, batch 128")):
            f = pooled[(regime, level)].conditions["final_mean"]
            spread.append([LEVEL_NAMES[level], label, f"{100 * f.min():.1f}–{100 * f.max():.1f}"])
    lines += [md_table(["level", "regime", "final accuracy over the graphs (%)"], spread), ""]
    return "\n".join(lines)


def _rho_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho of every row pair (NaN for a constant row)."""
    rx = stats.rankdata(x, axis=1)
    ry = stats.rankdata(y, axis=1)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    den = np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (rx * ry).sum(axis=1) / np.where(den > 0, den, 1.0), np.nan)


def paired_differences(res: StudyResult, *, n_boot: int, seed: int = 0, level: float = 0.95,
                       reference: str = REFERENCE) -> pd.DataFrame:
    """``|rho(m)| - |rho(reference)|`` for every topology metric ``m`` and convergence
    metric, over the conditions where both metrics are defined, with two bootstrap intervals
    (the same draws for every metric): ``diff_low/diff_high`` resample the seeds within each
    condition (these graphs, other seeds: the study's interval); ``graphs_low/graphs_high``
    also resample the conditions (other graphs like these: wider)."""
    runs = res.runs
    groups = list(runs.groupby("condition", sort=False).indices.values())
    rng = np.random.default_rng(seed)
    picks = [g[rng.integers(0, len(g), size=(n_boot, len(g)))] for g in groups]

    def means(col: str) -> tuple[np.ndarray, np.ndarray]:
        v = runs[col].to_numpy(dtype=np.float64)
        point = np.array([v[g].mean() for g in groups])
        with np.errstate(invalid="ignore"):
            boot = np.stack([v[p].mean(axis=1) for p in picks], axis=1)  # (n_boot, conds)
        return point, boot

    def quantiles(d: np.ndarray) -> tuple[float, float]:
        d = d[~np.isnan(d)]
        if not d.size:
            return math.nan, math.nan
        lo, hi = np.quantile(d, ((1 - level) / 2, 1 - (1 - level) / 2))
        return float(lo), float(hi)

    def abs_rho(x: np.ndarray, y: np.ndarray) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a constant input: NaN
            return abs(float(stats.spearmanr(x, y).statistic))

    cache = {c: means(c) for c in {*res.topology_metrics, *res.convergence_metrics}}
    out = []
    for conv in CONVERGENCE:
        yp, yb = cache[conv]
        gp, gb = cache[reference]
        for m in res.topology_metrics:
            mp, mb = cache[m]
            ok = ~np.isnan(mp) & ~np.isnan(gp)
            k = int(ok.sum())
            if k < 3:
                continue
            point = abs_rho(mp[ok], yp[ok]) - abs_rho(gp[ok], yp[ok])
            m_ok, g_ok, y_ok = mb[:, ok], gb[:, ok], yb[:, ok]
            d = np.abs(_rho_rows(m_ok, y_ok)) - np.abs(_rho_rows(g_ok, y_ok))
            sel = np.random.default_rng([seed, 1]).integers(0, k, size=(n_boot, k))
            mt, gt, yt = (np.take_along_axis(a, sel, axis=1) for a in (m_ok, g_ok, y_ok))
            dg = np.abs(_rho_rows(mt, yt)) - np.abs(_rho_rows(gt, yt))
            lo, hi = quantiles(d)
            glo, ghi = quantiles(dg)
            out.append({"topology_metric": m, "convergence_metric": conv,
                        "diff_abs_rho": point, "diff_low": lo, "diff_high": hi,
                        "graphs_low": glo, "graphs_high": ghi, "n_conditions": k})
    return pd.DataFrame(out)


def with_all_eigenvalues_metric(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with the column ``all_eigenvalues_metric`` = ``(n - 1) / n *
    (spectrum_relaxation - 1)``, NaN where the relaxation sum is.

    Each round's metric is :func:`topofl.spectral.all_eigenvalues_metric` $= \\frac{n-1}{n}
    (r_t - 1)$ with $r_t$ that round's relaxation sum, and the runs recorded the mean of
    $r_t$ over the rounds the summary examines, so the mean of the metric over the same
    rounds is this affine map of the recorded mean: the value ``summary(graph,
    metrics="all_eigenvalues_metric")`` gives (the tests check it against the summary of the
    graphs), where it is defined -- every round symmetric and doubly stochastic with no mode
    of modulus 1 besides the consensus one."""
    out = runs.copy()
    n = out["n"].astype(np.float64)
    out[ALL_EIG] = (n - 1.0) / n * (out["spectrum_relaxation"].astype(np.float64) - 1.0)
    return out


def study_from_runs(runs: pd.DataFrame | str | Path, *, exclude: Sequence[str] = (),
                    n_boot: int = 1000, seed: int = 0,
                    extra: Sequence[str] = ()) -> StudyResult:
    """The tables of a study rebuilt from its run table (the ``runs.csv`` that
    ``topofl study`` writes), less the conditions in ``exclude``: no records needed.

    The same steps as :func:`topofl.study.study` after its run table: the default topology
    metrics (those recorded and not equal on every condition kept), the condition means and
    :func:`topofl.study.correlation_table` (Spearman's rho with its seeds bootstrap, ``n_boot``
    draws seeded by ``seed``). On every row of a committed ``runs.csv`` it gives that study's
    ``correlations.csv`` exactly, and :func:`paired_differences` of it its
    ``paired_vs_spectral_gap.csv``; with conditions left out the bootstrap draws are new ones
    (the draws follow the conditions). ``extra``: columns of ``runs`` to correlate too,
    placed after ``spectrum_relaxation`` (they leave every other metric's numbers as they
    are: each metric's bootstrap draws depend only on the conditions)."""
    if not isinstance(runs, pd.DataFrame):
        runs = pd.read_csv(runs)
    unknown = sorted(set(exclude) - set(runs["condition"]))
    if unknown:
        raise ValueError(f"conditions {unknown} are not in the run table")
    runs = runs[~runs["condition"].isin(list(exclude))].reset_index(drop=True)
    topo = _topology_metrics(runs, None)
    if extra:
        at = topo.index("spectrum_relaxation") + 1 if "spectrum_relaxation" in topo else len(topo)
        topo = [*topo[:at], *(m for m in extra if m not in topo), *topo[at:]]
    conv = [c for c in CONVERGENCE_METRICS if c in runs.columns]
    return StudyResult(runs=runs, conditions=condition_table(runs, [*topo, *conv]),
                       correlations=correlation_table(runs, topo, conv, n_boot=n_boot,
                                                      seed=seed),
                       metric=METRIC, target=TARGET, topology_metrics=topo,
                       convergence_metrics=conv)


def gap_zero(runs: pd.DataFrame) -> list[str]:
    """The conditions whose spectral gap (mean over seeds) is 0 or undefined."""
    g = runs.groupby("condition", sort=False)["spectral_gap"].mean()
    return [c for c, v in g.items() if math.isnan(v) or v == 0]


def _rho_cell(res: StudyResult, m: str, conv: str) -> str:
    c = res.correlations
    hit = c[(c.topology_metric == m) & (c.convergence_metric == conv)]
    if hit.empty or math.isnan(hit.iloc[0].spearman):
        return "–"
    r = hit.iloc[0]
    return (f"{_fmt(r.spearman)} [{_fmt(r.ci_low)}, {_fmt(r.ci_high)}] "
            f"(n = {int(r.n_conditions)})")


def _diff_cells(d: pd.DataFrame, m: str, conv: str) -> list[str]:
    hit = d[(d.topology_metric == m) & (d.convergence_metric == conv)]
    if m == REFERENCE or hit.empty or math.isnan(hit.iloc[0].diff_abs_rho):
        return ["–", "–"]
    r = hit.iloc[0]
    return [f"{_fmt(r.diff_abs_rho, '+.2f')} {_interval(r.diff_low, r.diff_high)} "
            f"{_interval(r.graphs_low, r.graphs_high)}",
            _verdict(r.diff_low, r.diff_high, r.graphs_low, r.graphs_high)]


def gap_zero_block(out: Path, n_boot: int) -> str:
    """The held-out comparison with and without the graphs whose spectral gap is 0, from the
    committed ``<out>/heldout_<level>/runs.csv``."""
    lines = [
        "Generated by `python analysis/predictors.py --gap0` from the committed "
        "`analysis/predictors/heldout_iid/runs.csv` and `heldout_skew/runs.csv` (no training, "
        "no records): the held-out study rebuilt from its run table with every graph "
        "(*all*: the numbers of the tables above, reproduced exactly) and without the graphs "
        "whose spectral gap is 0 or undefined (*gap > 0*), each with the study's seeds "
        f"bootstrap and the same paired bootstrap ({n_boot} draws, seed 0; leaving graphs "
        "out makes new draws). Cells: ρ [seeds 95 %] (n graphs); Δ|ρ| vs the gap, then its "
        "*seeds* and its *graphs + seeds* 95 % intervals; verdicts as above.",
        "",
    ]
    full: dict[str, StudyResult] = {}
    kept: dict[str, StudyResult] = {}
    left: dict[str, list[str]] = {}
    for level in LEVELS:
        runs = pd.read_csv(out / f"heldout_{level}" / "runs.csv")
        left[level] = gap_zero(runs)
        full[level] = study_from_runs(runs, n_boot=n_boot)
        kept[level] = study_from_runs(runs, exclude=left[level], n_boot=n_boot)
    rows = []
    for level in LEVELS:
        r = full[level].runs
        for cond in left[level]:
            g = r[r.condition == cond].iloc[0]
            rows.append([LEVEL_NAMES[level], f"`{cond}`", _fmt(g.spectral_gap, ".3g"),
                         "yes" if g.time_varying else "no",
                         "yes" if g.strongly_connected else "no",
                         _fmt(g.b_connectivity, ".0f")])
    lines += ["Left out: the graphs whose spectral gap (for a time-varying graph the mean "
              "over its rounds of each round's gap) is 0 or undefined, as the runs recorded "
              "them (`topofl.spectral.summary`): *strongly connected* is the union of the "
              "rounds for a time-varying graph; *B*: the number of consecutive rounds whose "
              "union is strongly connected (– if none).", "",
              md_table(["level", "graph", "spectral gap", "time-varying", "strongly connected",
                        "B"], rows), ""]
    kept_text = ", ".join(f"{LEVEL_NAMES[lv]} {len(kept[lv].conditions)} of "
                          f"{len(full[lv].conditions)} graphs" for lv in LEVELS)
    lines += [f"Kept: {kept_text}.", ""]
    for level in LEVELS:
        dfull = paired_differences(full[level], n_boot=n_boot)
        dkept = paired_differences(kept[level], n_boot=n_boot)
        for conv in CONVERGENCE:
            rows = []
            metrics = dict.fromkeys([*full[level].topology_metrics,
                                     *kept[level].topology_metrics])
            for m in metrics:
                cells = [_rho_cell(full[level], m, conv), *_diff_cells(dfull, m, conv),
                         _rho_cell(kept[level], m, conv), *_diff_cells(dkept, m, conv)]
                if any(c != "–" for c in cells):
                    rows.append([f"`{m}`", *cells])
            lines += [f"#### {LEVEL_NAMES[level]}: {CONV_NAMES[conv]}", "",
                      md_table(["metric", "all: ρ", "all: Δ|ρ| vs gap [seeds] [graphs + seeds]",
                                "all: verdict", "gap > 0: ρ",
                                "gap > 0: Δ|ρ| vs gap [seeds] [graphs + seeds]",
                                "gap > 0: verdict"], rows), ""]
    return "\n".join(lines)


ALLEIG_METRICS = ("spectral_gap", "effective_neighbors", "spectrum_relaxation", ALL_EIG)
NEIGHBOURS = "effective_neighbors"


def _vs_cells(d: pd.DataFrame, m: str, conv: str, against: str, name: str) -> list[str]:
    """Δ|ρ| of ``m`` against ``against`` with both intervals, and its verdict."""
    hit = d[(d.topology_metric == m) & (d.convergence_metric == conv)]
    if m == against or hit.empty or math.isnan(hit.iloc[0].diff_abs_rho):
        return ["–", "–"]
    r = hit.iloc[0]
    return [f"{_fmt(r.diff_abs_rho, '+.2f')} {_interval(r.diff_low, r.diff_high)} "
            f"{_interval(r.graphs_low, r.graphs_high)} (n = {int(r.n_conditions)})",
            _verdict(r.diff_low, r.diff_high, r.graphs_low, r.graphs_high, name)]


def alleig_block(out: Path, n_boot: int) -> str:
    """The all-eigenvalues metric beside the spectral gap and the effective number of
    neighbours, from the committed run tables of ``out`` (no training, no records)."""
    lines = [
        "Generated by `python analysis/predictors.py --alleig` from the committed run tables "
        "(`analysis/predictors/<study>/runs.csv`; no training, no records): the column "
        f"`{ALL_EIG}` = (n − 1)/n · (`spectrum_relaxation` − 1) added to every run "
        "(`topofl.spectral.all_eigenvalues_metric`, the per-round mean the summary gives), the "
        "studies rebuilt with it (every other row reproduces the tables above exactly) and "
        f"paired as above ({n_boot} draws, seed 0). Cells: ρ [seeds 95 %] (n graphs); Δ|ρ| "
        "[seeds 95 %] [graphs + seeds 95 %] (n graphs where both are defined); verdicts as "
        "above. The metric is defined where every round is symmetric, doubly stochastic and "
        "connected without an eigenvalue −1 (the graphs of `spectrum_relaxation`; not the "
        "directed, the disconnected-per-round and the gap-0 graphs), so it is compared on "
        "those graphs only.",
        "",
    ]
    studies: dict[tuple[str, str], StudyResult] = {}
    for half in HALVES:
        for level in LEVELS:
            runs = with_all_eigenvalues_metric(pd.read_csv(out / f"{half}_{level}" / "runs.csv"))
            studies[(half, level)] = study_from_runs(runs, n_boot=n_boot, extra=(ALL_EIG,))
    lines += ["### Per half (registered regime: lr 1.0, batch 2)", ""]
    for level in LEVELS:
        ho = studies[("heldout", level)]
        d_gap = paired_differences(ho, n_boot=n_boot)
        d_nb = paired_differences(ho, n_boot=n_boot, reference=NEIGHBOURS)
        for conv in CONVERGENCE:
            rows = []
            for m in ALLEIG_METRICS:
                rows.append([f"`{m}`", _rho_cell(studies[("explore", level)], m, conv),
                             _rho_cell(ho, m, conv),
                             *_vs_cells(d_gap, m, conv, REFERENCE, "the gap"),
                             *_vs_cells(d_nb, m, conv, NEIGHBOURS, "`effective_neighbors`")])
            lines += [f"#### {LEVEL_NAMES[level]}: {CONV_NAMES[conv]}", "",
                      md_table(["metric", "exploration ρ", "held-out ρ",
                                "held-out Δ|ρ| vs gap", "verdict vs gap",
                                "held-out Δ|ρ| vs effective neighbours",
                                "verdict vs effective neighbours"], rows), ""]
    lines += [
        "### Homogeneous vs heterogeneous data (both halves, 42 graphs)", "",
        "The paper's comparison read on these runs: IID labels (homogeneous) against one "
        "class per client (heterogeneous), in the registered regime and in the low-noise one "
        "(lr 0.1, batch 128; post hoc, as above). Spread: the range of the graphs' mean final "
        "accuracy (%) over all 42 graphs, then over the graphs where the metric is defined.",
        "",
    ]
    rows = []
    for regime, label in (("registered", "lr 1.0, batch 2"), ("lownoise", "lr 0.1, batch 128")):
        for level in LEVELS:
            runs = with_all_eigenvalues_metric(
                pd.read_csv(out / f"{regime}_{level}" / "runs.csv"))
            res = study_from_runs(runs, n_boot=n_boot, extra=(ALL_EIG,))
            d_gap = paired_differences(res, n_boot=n_boot)
            f = res.conditions["final_mean"]
            defined = res.conditions[f"{ALL_EIG}_mean"].notna()
            spread = (f"{100 * f.min():.1f}–{100 * f.max():.1f}; "
                      f"{100 * f[defined].min():.1f}–{100 * f[defined].max():.1f}")
            for conv in CONVERGENCE:
                rows.append([LEVEL_NAMES[level], label, CONV_NAMES[conv],
                             _rho_cell(res, REFERENCE, conv), _rho_cell(res, NEIGHBOURS, conv),
                             _rho_cell(res, ALL_EIG, conv),
                             *_vs_cells(d_gap, ALL_EIG, conv, REFERENCE, "the gap"),
                             spread if conv == "final" else ""])
    lines += [md_table(["level", "regime", "convergence", "spectral gap ρ",
                        "effective neighbours ρ", f"`{ALL_EIG}` ρ", "Δ|ρ| metric vs gap",
                        "verdict", "final accuracy spread (%)"], rows), ""]
    return "\n".join(lines)


def _fmt(v: float, spec: str = ".2f") -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def _verdict(lo: float, hi: float, glo: float = math.nan, ghi: float = math.nan,
             against: str = "the gap") -> str:
    """Against the gap (or ``against``): from the seed interval (these graphs) and, when
    given, the graph+seed interval (other graphs like these)."""
    if math.isnan(lo):
        return "–"
    if not math.isnan(glo) and (glo > 0 or ghi < 0):
        return f"better than {against}" if glo > 0 else f"worse than {against}"
    if lo > 0 or hi < 0:
        word = "better" if lo > 0 else "worse"
        return (f"{word} than {against}" if math.isnan(glo)
                else f"{word} on these graphs; inconclusive across graphs")
    return "inconclusive"


def _interval(lo: float, hi: float) -> str:
    return f"[{_fmt(lo, '+.2f')}, {_fmt(hi, '+.2f')}]"


def full_coverage(res: StudyResult, conv: str) -> pd.DataFrame:
    """The correlations with ``conv`` of the metrics defined on every graph of ``res``,
    strongest first."""
    c = res.correlations
    c = c[(c.convergence_metric == conv) & c.spearman.notna()
          & (c.n_conditions == len(res.conditions))].copy()
    return c.assign(abs=c.spearman.abs()).sort_values("abs", ascending=False)


def results_block(studies: dict[tuple[str, str], StudyResult],
                  diffs: dict[tuple[str, str], pd.DataFrame],
                  runner_up: dict[tuple[str, str], pd.Series]) -> str:
    """The Markdown tables between the results markers of ``predictors.md``."""
    lines = [
        "Generated by `python analysis/predictors.py` from the records of the two sweeps. ρ: "
        "Spearman's ρ over the graphs of one half (condition means over 3 seeds) with the "
        "study's 95 % interval (seeds resampled within each graph) and n (the graphs where "
        "the metric is defined). Δ|ρ|: |ρ(metric)| − |ρ(spectral gap)|, paired on the same "
        "draws, over the graphs where both are defined, with two 95 % intervals: *seeds* "
        "(these graphs, other seeds) and *graphs + seeds* (the graphs resampled too: other "
        "graphs like these). Verdict: *better/worse than the gap* when the graphs + seeds "
        "interval excludes 0; *... on these graphs* when only the seeds interval does; else "
        "*inconclusive*. Per-graph tables: `analysis/predictors/<half>_<level>/study.md`.",
        "",
    ]
    for level in LEVELS:
        for conv in CONVERGENCE:
            rows = []
            ex, ho = studies[("explore", level)], studies[("heldout", level)]
            metrics = list(dict.fromkeys([*ho.topology_metrics, *ex.topology_metrics]))
            d = diffs[("heldout", level)]
            for m in metrics:
                row = [f"`{m}`"]
                for res in (ex, ho):
                    c = res.correlations
                    hit = c[(c.topology_metric == m) & (c.convergence_metric == conv)]
                    if hit.empty or math.isnan(hit.iloc[0].spearman):
                        row += ["–", "–" if hit.empty else str(int(hit.iloc[0].n_conditions))]
                        continue
                    r = hit.iloc[0]
                    ci = ("" if math.isnan(r.ci_low) else
                          f" [{_fmt(r.ci_low)}, {_fmt(r.ci_high)}]")
                    row += [f"{_fmt(r.spearman)}{ci}",
                            f"{int(r.n_conditions)}/{len(res.conditions)}"]
                hit = d[(d.topology_metric == m) & (d.convergence_metric == conv)]
                if hit.empty or m == REFERENCE or math.isnan(hit.iloc[0].diff_abs_rho):
                    row += ["–", "–", "–", "–"]
                else:
                    r = hit.iloc[0]
                    row += [_fmt(r.diff_abs_rho, "+.2f"), _interval(r.diff_low, r.diff_high),
                            _interval(r.graphs_low, r.graphs_high),
                            _verdict(r.diff_low, r.diff_high, r.graphs_low, r.graphs_high)]
                rows.append(row)
            lines += [f"### {LEVEL_NAMES[level]}: {CONV_NAMES[conv]}", "",
                      md_table(["metric", "exploration ρ [95 %]", "n", "held-out ρ [95 %]",
                                "n", "held-out Δ|ρ| vs gap", "seeds 95 %",
                                "graphs + seeds 95 %", "held-out verdict"], rows), ""]
    lines += [
        "### Best predictor per setting (held-out half)", "",
        "Among the metrics defined on every graph of the half (a metric that leaves graphs out "
        "-- `1 − λ_2`, the full-spectrum summaries, the diameter, the push-sum constants -- "
        "is compared on fewer graphs; see the tables above).", "",
    ]
    rows = []
    for level in LEVELS:
        res = studies[("heldout", level)]
        for conv in CONVERGENCE:
            c = full_coverage(res, conv)
            best, second = c.iloc[0], c.iloc[1]
            pair = runner_up[(level, conv)]
            gap = c[c.topology_metric == REFERENCE]
            d = diffs[("heldout", level)]
            dd = d[(d.topology_metric == best.topology_metric) & (d.convergence_metric == conv)]
            vs_gap = ("is the gap" if best.topology_metric == REFERENCE else
                      f"{_fmt(dd.iloc[0].diff_abs_rho, '+.2f')} "
                      f"{_interval(dd.iloc[0].graphs_low, dd.iloc[0].graphs_high)}: "
                      + _verdict(dd.iloc[0].diff_low, dd.iloc[0].diff_high,
                                 dd.iloc[0].graphs_low, dd.iloc[0].graphs_high))
            rows.append([
                LEVEL_NAMES[level], CONV_NAMES[conv], f"`{best.topology_metric}`",
                f"{_fmt(best.spearman)} [{_fmt(best.ci_low)}, {_fmt(best.ci_high)}]",
                f"`{second.topology_metric}` {_fmt(second.spearman)}"
                f" [{_fmt(second.ci_low)}, {_fmt(second.ci_high)}]",
                "overlap: inconclusive" if _abs_overlap(best, second) else "disjoint",
                f"{_fmt(pair.diff_abs_rho, '+.2f')} {_interval(pair.graphs_low, pair.graphs_high)}",
                "–" if gap.empty else _fmt(gap.iloc[0].spearman), vs_gap])
    lines += [md_table(["level", "convergence", "best", "ρ [95 %]", "runner-up",
                        "|ρ| seed intervals", "Δ|ρ| best − runner-up [graphs + seeds 95 %]",
                        "spectral gap ρ", "best vs gap: Δ|ρ| [graphs + seeds 95 %]"], rows),
              ""]
    return "\n".join(lines)


def _abs_interval(lo: float, hi: float) -> tuple[float, float]:
    """The interval of |rho| when rho lies in ``[lo, hi]``."""
    if lo <= 0 <= hi:
        return 0.0, max(-lo, hi)
    return min(abs(lo), abs(hi)), max(abs(lo), abs(hi))


def _abs_overlap(a: Any, b: Any) -> bool:
    if math.isnan(a.ci_low) or math.isnan(b.ci_low):
        return True
    la, ha = _abs_interval(a.ci_low, a.ci_high)
    lb, hb = _abs_interval(b.ci_low, b.ci_high)
    return not (la > hb or lb > ha)


def best_and_runner_up(res: StudyResult, conv: str, *, n_boot: int) -> pd.Series:
    """Paired ``|rho(best)| - |rho(runner-up)|`` with its intervals, among the metrics
    defined on every graph of ``res``."""
    c = full_coverage(res, conv)
    best, second = c.iloc[0].topology_metric, c.iloc[1].topology_metric
    d = paired_differences(res, n_boot=n_boot, reference=second)
    return d[(d.topology_metric == best) & (d.convergence_metric == conv)].iloc[0]


def figure(studies: dict[tuple[str, str], StudyResult], path: Path) -> None:
    """Spearman's rho of every metric with its interval: exploration vs held-out half, one
    panel per level and convergence metric."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 8.5), sharey=True)
    metrics = list(dict.fromkeys(m for r in studies.values() for m in r.topology_metrics
                                 if not m.startswith("pushsum_")))  # directed graphs only
    y = np.arange(len(metrics))
    for i, level in enumerate(LEVELS):
        for j, conv in enumerate(CONVERGENCE):
            ax = axes[i, j]
            for k, (half, name) in enumerate(HALVES.items()):
                c = studies[(half, level)].correlations
                c = c[c.convergence_metric == conv].set_index("topology_metric")
                for yi, m in zip(y, metrics):
                    if m not in c.index or math.isnan(c.loc[m, "spearman"]):
                        continue
                    r = c.loc[m]
                    off = -0.17 if k == 0 else 0.17
                    face = "white" if k == 0 else ("C3" if m == REFERENCE else "C0")
                    if not math.isnan(r.ci_low):
                        ax.plot([r.ci_low, r.ci_high], [yi + off] * 2, color="0.4", lw=1.2)
                    ax.plot(r.spearman, yi + off, "o", mfc=face,
                            mec="C3" if m == REFERENCE else "C0", ms=6,
                            label=name if yi == y[-1] or m == metrics[-1] else None)
            ax.axvline(0, color="0.7", lw=0.8)
            ax.set_xlim(-1.05, 1.05)
            ax.set_yticks(y, [m.replace("_", " ") for m in metrics], fontsize=8)
            ax.set_xlabel(f"Spearman ρ with {CONV_NAMES[conv]} (over graphs)")
            ax.set_title(LEVEL_NAMES[level], fontsize=10)
            ax.grid(True, axis="x", alpha=0.3)
    handles = [plt.Line2D([], [], marker="o", ls="", mfc="white", mec="C0",
                          label="exploration half"),
               plt.Line2D([], [], marker="o", ls="", mfc="C0", mec="C0",
                          label="held-out half"),
               plt.Line2D([], [], marker="o", ls="", mfc="C3", mec="C3",
                          label="spectral gap (held-out)"),
               plt.Line2D([], [], color="0.4", label="95 % seed-bootstrap interval")]
    fig.legend(handles=handles, loc="lower center", ncol=4, frameon=False, fontsize=9)
    fig.suptitle("Which graph metric ranks the graphs by D-SGD's convergence? "
                 "(one point per metric; 22 + 20 graphs, 3 seeds each)", fontsize=11)
    fig.tight_layout(rect=(0, 0.04, 1, 0.97))
    fig.savefig(path, dpi=80)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", default=str(ROOT / "out"),
                        help="folder holding predictors_explore/ and predictors_heldout/")
    parser.add_argument("--out", default=str(ROOT / "predictors"),
                        help="folder of the four studies (analysis/predictors)")
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--halves", default="explore,heldout",
                        help="comma-separated halves to study (explore first)")
    parser.add_argument("--lownoise", action="store_true",
                        help="the post-hoc robustness check: all graphs, registered vs "
                             "low-noise regime (predictors_lownoise.toml)")
    parser.add_argument("--alleig", action="store_true",
                        help="the all-eigenvalues metric beside the gap and the effective "
                             "number of neighbours, from the committed run tables of <out> "
                             "(no records needed)")
    parser.add_argument("--gap0", action="store_true",
                        help="the held-out comparison with and without the graphs whose "
                             "spectral gap is 0, from the committed "
                             "<out>/heldout_<level>/runs.csv (no records needed)")
    args = parser.parse_args(argv)
    records, out = Path(args.records), Path(args.out)
    if args.alleig:
        replace_block(ROOT / "predictors.md", alleig_block(out, args.n_boot), "alleig")
        print("wrote the alleig block of analysis/predictors.md")
        return 0
    if args.gap0:
        replace_block(ROOT / "predictors.md", gap_zero_block(out, args.n_boot), "gapzero")
        print("wrote the gapzero block of analysis/predictors.md")
        return 0
    if args.lownoise:
        pooled: dict[tuple[str, str], StudyResult] = {}
        pdiffs: dict[tuple[str, str], pd.DataFrame] = {}
        sources = {"registered": [records / "predictors_explore", records / "predictors_heldout"],
                   "lownoise": [records / "predictors_lownoise"]}
        for regime, folders in sources.items():
            for level in LEVELS:
                res = run_pooled(folders, regime, level, out, args.n_boot)
                pooled[(regime, level)] = res
                pdiffs[(regime, level)] = paired_differences(res, n_boot=args.n_boot)
                print(f"{regime} {level}: {len(res.runs)} runs, {len(res.conditions)} graphs")
        replace_block(ROOT / "predictors.md", robustness_block(pooled, pdiffs), "lownoise")
        print("wrote the lownoise block of analysis/predictors.md")
        return 0
    halves = [h.strip() for h in args.halves.split(",") if h.strip()]
    studies: dict[tuple[str, str], Any] = {}
    diffs: dict[tuple[str, str], pd.DataFrame] = {}
    for half in halves:
        for level in LEVELS:
            res = run_study(records, half, level, out, args.n_boot)
            studies[(half, level)] = res
            d = paired_differences(res, n_boot=args.n_boot)
            d.to_csv(out / f"{half}_{level}" / "paired_vs_spectral_gap.csv", index=False)
            diffs[(half, level)] = d
            print(f"{half} {level}: {len(res.runs)} runs, {len(res.conditions)} graphs")
    if set(halves) == set(HALVES):
        figure(studies, ROOT / "figures" / "predictors_rho.png")
        runner_up = {(level, conv): best_and_runner_up(studies[("heldout", level)], conv,
                                                       n_boot=args.n_boot)
                     for level in LEVELS for conv in CONVERGENCE}
        replace_block(ROOT / "predictors.md", results_block(studies, diffs, runner_up), "results")
        print("wrote analysis/predictors.md (results block), analysis/figures/predictors_rho.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
