"""The statistics of the study: Spearman's rho with an exact permutation p-value, and its
interval over seeds by bootstrap (:func:`correlation_table`).

Values are compared at 10 significant digits everywhere (:func:`_round_sig`): float noise of a
deterministic quantity is a tie, neither a spread nor an order.
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

__all__ = ["spearman", "correlation_table", "holm", "adjust", "CORRECTIONS"]

# Values are compared at this many significant digits (float noise is a tie, not a spread).
_SIG_DIGITS = 10
# Spearman p-values are exact (every pairing enumerated) up to this many conditions.
_EXACT_MAX = 9
# A bootstrap over seeds needs at least this many seeds in every condition.
_MIN_BOOT_SEEDS = 3


def _round_sig(values: Any, digits: int = _SIG_DIGITS) -> np.ndarray:
    """``values`` rounded to ``digits`` significant digits (``inf``, ``nan`` and 0 kept).

    Float noise of a deterministic quantity (a spectral gap computed twice: ``0.2094 ±
    1.7e-16``) then becomes an exact tie, so it neither shows as spread nor orders conditions.

    Examples
    --------
    >>> from topofl.study.statistics import _round_sig
    >>> _round_sig([0.1 + 0.2, 1e-300, float("inf")]).tolist()
    [0.3, 1e-300, inf]
    """
    a = np.array(values, dtype=np.float64)
    ok = np.isfinite(a) & (a != 0)
    if ok.any():
        v = a[ok]
        with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
            unit = 10.0 ** (np.floor(np.log10(np.abs(v))) - (digits - 1))
            r = np.round(v / unit) * unit
        a[ok] = np.where(np.isfinite(r) & (unit > 0), r, v)
    return a


#: Corrections for multiple comparisons: none, or Holm-Bonferroni (:func:`holm`).
CORRECTIONS = ("none", "holm")


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values of a family of tests (NaN entries: not tested).

    With the ``m`` defined p-values sorted, ``p_(1) <= ... <= p_(m)``, the adjusted
    ``p_(k)`` is ``min(1, max_{j <= k} (m - j + 1) p_(j))``: rejecting where the adjusted p is
    below ``alpha`` is Holm's step-down procedure, which keeps the chance of any false
    rejection in the family at most ``alpha`` whatever the dependence between the tests. An
    adjusted p is never below its p, never above ``m`` times it, and the adjusted p-values keep
    the order of the p-values.

    Examples
    --------
    Four tests: sorted, 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 are 0.02, 0.03, 0.06, 0.04,
    the last raised to 0.06 to keep the order.

    >>> from topofl.study.statistics import holm
    >>> holm([0.01, 0.04, 0.03, 0.005]).round(4).tolist()
    [0.03, 0.06, 0.06, 0.02]
    >>> holm([0.5, float("nan"), 0.4]).tolist()
    [0.8, nan, 0.8]
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"p_values must be 1-d, got shape {p.shape}")
    ok = ~np.isnan(p)
    if np.any((p[ok] < 0) | (p[ok] > 1)):
        raise ValueError(f"p-values must be in [0, 1], got {p[ok].tolist()}")
    out = np.full(p.shape, np.nan)
    v = p[ok]
    m = v.size
    order = np.argsort(v, kind="stable")
    steps = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * v[order]))
    adjusted = np.empty(m)
    adjusted[order] = steps
    out[ok] = adjusted
    return out


def adjust(p_values: Sequence[float] | np.ndarray, correction: str) -> np.ndarray:
    """``p_values`` corrected for multiple comparisons: ``"holm"`` (:func:`holm`) or
    ``"none"`` (as they are)."""
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}, got "
                         f"{correction!r}")
    p = np.asarray(p_values, dtype=np.float64)
    return holm(p) if correction == "holm" else p.copy()


@functools.lru_cache(maxsize=8)
def _permutations(n: int) -> np.ndarray:
    """Every permutation of ``range(n)`` as an ``(n!, n)`` int8 array (``n <= 9``)."""
    return np.array(list(itertools.permutations(range(n))), dtype=np.int8)


def _exact_p(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Two-sided exact permutation p-value of Spearman's rho, and the smallest p attainable.

    Every one of the ``n!`` pairings of the average ranks is equally likely under independence;
    ``p`` is the fraction whose ``|rho|`` reaches the observed one, ``min_p`` the fraction at
    the largest ``|rho|`` any pairing reaches (``2 / n!`` without ties).
    """
    rx, ry = stats.rankdata(x), stats.rankdata(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    den = math.sqrt(float(np.sum(rx * rx) * np.sum(ry * ry)))
    perm = _permutations(x.size)
    rhos = np.abs((ry[perm] @ rx) / den)
    obs = abs(float(np.sum(rx * ry)) / den)
    eps = 1e-9
    return float(np.mean(rhos >= obs - eps)), float(np.mean(rhos >= rhos.max() - eps))


def spearman(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray
             ) -> tuple[float, float, int]:
    """Spearman's rho, its two-sided p-value and ``n``, over pairs without NaN.

    ``inf`` is a valid (largest) value. Values are compared at 10 significant digits (float
    noise is a tie, not an order). The p-value is exact for ``n <= 9`` (every pairing of the
    ranks enumerated: with ``n = 4`` even ``rho = 1`` has ``p = 2/24 = 0.083``) and scipy's
    t approximation (:func:`scipy.stats.spearmanr`) above. Returns ``(rho, p, n)``; rho and p
    are NaN with fewer than three pairs or a constant input.

    Examples
    --------
    >>> from topofl.study import spearman
    >>> spearman([0.1, 0.5, 0.9], [30, 20, float("inf")])  # ranks 1 2 3 vs 2 1 3
    (0.5, 1.0, 3)
    >>> rho, p, n = spearman([1, 2, 3, 4], [10, 20, 30, 40])
    >>> rho, round(p, 4), n
    (1.0, 0.0833, 4)
    >>> spearman([1, 2, 3], [1, 1, 1])[0]
    nan
    """
    rho, p, n, _ = _spearman_full(x, y)
    return rho, p, n


def _spearman_full(x: Any, y: Any) -> tuple[float, float, int, float]:
    """:func:`spearman` and the smallest p-value attainable at this ``n`` (and these ties)."""
    a, b = _round_sig(x), _round_sig(y)
    ok = ~np.isnan(a) & ~np.isnan(b)
    n = int(ok.sum())
    if n < 3 or np.unique(a[ok]).size < 2 or np.unique(b[ok]).size < 2:
        return math.nan, math.nan, n, math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.spearmanr(a[ok], b[ok])
    rho = float(res.statistic)
    if n <= _EXACT_MAX:
        p, min_p = _exact_p(a[ok], b[ok])
    else:
        p, min_p = float(res.pvalue), 2.0 / math.factorial(n)
    return rho, p, n, min_p


def _spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho of every row pair ``(x[b], y[b])``: Pearson's r of average ranks."""
    out = np.full(x.shape[0], np.nan)
    ok = ~np.isnan(x) & ~np.isnan(y)
    full = ok.all(axis=1)
    if full.any() and x.shape[1] >= 3:
        rx = stats.rankdata(x[full], axis=1)
        ry = stats.rankdata(y[full], axis=1)
        rx -= rx.mean(axis=1, keepdims=True)
        ry -= ry.mean(axis=1, keepdims=True)
        den = np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = np.where(den > 0, (rx * ry).sum(axis=1) / np.where(den > 0, den, 1.0), np.nan)
        out[full] = np.clip(rho, -1.0, 1.0)
    for b in np.flatnonzero(~full):
        out[b] = spearman(x[b], y[b])[0]
    return out


def _conclusion(rho: float, p: float, min_p: float, lo: float, hi: float, alpha: float) -> str:
    """What a reader may conclude from one correlation (see :func:`correlation_table`)."""
    if math.isnan(rho):
        return "undefined"
    if not min_p < alpha:
        return "too few conditions"
    if not p < alpha:
        return "not significant"
    if not math.isnan(lo) and lo <= 0 <= hi:
        return "significant, seed interval covers 0"
    return "significant"


def correlation_table(
    runs: pd.DataFrame,
    topology_metrics: Sequence[str],
    convergence_metrics: Sequence[str],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    alpha: float = 0.05,
    correction: str = "none",
) -> pd.DataFrame:
    """Spearman correlation of condition means, its p-value and a bootstrap interval over seeds.

    For every pair, ``spearman``, ``p_value`` and ``n_conditions`` come from :func:`spearman`
    on the condition means; a condition where either mean is NaN (the metric does not apply
    to it, e.g. push-sum constants on an undirected graph) is left out, and
    ``n_left_out`` counts those. ``min_p`` is the smallest p-value any ordering of
    ``n_conditions`` values could reach: with 4 conditions it is ``2/24 = 0.083``, so nothing
    can be concluded whatever rho is.

    The interval resamples the seeds: each of ``n_boot`` draws picks, in every condition, as
    many of its runs as it has, with replacement (the same picks for every pair), recomputes
    the condition means and their rho; ``ci_low``/``ci_high`` are the ``(1 -+ level) / 2``
    quantiles of the defined draws. It needs at least 3 seeds in every condition used (with
    two, a condition's resampled mean takes three values, one of them twice as often); with
    fewer it is NaN. ``min_seeds`` is the fewest seeds of a condition used.

    ``conclusion``: ``"undefined"`` (rho NaN: fewer than 3 conditions or a constant metric),
    ``"too few conditions"`` (``min_p >= alpha``), ``"not significant"`` (``p >= alpha``),
    ``"significant, seed interval covers 0"`` or ``"significant"`` (``p_adjusted < alpha``).
    ``p_adjusted`` is ``p_value`` corrected for the rows tested (those with a p-value) by
    ``correction``: ``"none"`` (equal to ``p_value``) or ``"holm"`` (:func:`holm`).

    Parameters
    ----------
    runs : DataFrame
        A :func:`~topofl.study.tables.run_table` (columns ``condition`` and the metrics).
    topology_metrics, convergence_metrics : sequence of str
        Columns of ``runs``.
    n_boot : int, default 1000
    seed : int, default 0
        Seeds the bootstrap draws.
    level : float, default 0.95
    alpha : float, default 0.05
        Significance level of ``conclusion``.
    correction : {"none", "holm"}, default "none"

    Examples
    --------
    Three conditions whose ranks agree (and reverse) exactly, three seeds each; with three
    conditions even rho = 1 is reached by one ordering in six (p = 1/3):

    >>> import pandas as pd
    >>> from topofl.study import correlation_table
    >>> runs = pd.DataFrame({"condition": list("aaabbbccc"), "gap": [1] * 3 + [2] * 3 + [3] * 3,
    ...                      "acc": [.5, .6, .5, .7, .7, .8, .9, .8, .9],
    ...                      "rounds": [30, 40, 35, 20, 20, 25, 10, 9, 12]})
    >>> c = correlation_table(runs, ["gap"], ["acc", "rounds"], n_boot=100, seed=0)
    >>> c[["convergence_metric", "spearman", "p_value", "n_conditions", "conclusion"]]
      convergence_metric  spearman   p_value  n_conditions          conclusion
    0                acc       1.0  0.333333             3  too few conditions
    1             rounds      -1.0  0.333333             3  too few conditions
    """
    if not isinstance(n_boot, (int, np.integer)) or isinstance(n_boot, bool) or n_boot < 1:
        raise ValueError(f"n_boot must be an integer >= 1, got {n_boot!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    adjust([], correction)  # checks it
    missing = [c for c in (*topology_metrics, *convergence_metrics) if c not in runs.columns]
    if missing:
        raise ValueError(f"columns {missing} are not in the run table; have {list(runs.columns)}")
    groups = runs.groupby("condition", sort=False).indices
    conds = list(groups)
    sizes = np.array([len(groups[c]) for c in conds], dtype=np.int64)
    rng = np.random.default_rng(seed)
    # picks[c]: (n_boot, size) run indices of condition c, resampled with replacement
    picks = [groups[c][rng.integers(0, len(groups[c]), size=(n_boot, len(groups[c])))]
             for c in conds]
    names = list(dict.fromkeys([*topology_metrics, *convergence_metrics]))
    values = {m: _round_sig(runs[m].to_numpy(dtype=np.float64)) for m in names}
    means = {m: _round_sig(pd.Series(values[m], index=runs.index).groupby(
        runs["condition"], sort=False).mean().reindex(conds).to_numpy()) for m in names}

    def boot_means(m: str) -> np.ndarray:  # (n_boot, conditions)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a draw of only NaN: NaN
            cols = [np.nanmean(values[m][p], axis=1) for p in picks]
        return _round_sig(np.stack(cols, axis=1)) if cols else np.zeros((n_boot, 0))

    boots = {m: boot_means(m) for m in names}
    q = ((1 - level) / 2, 1 - (1 - level) / 2)
    out: list[dict[str, Any]] = []
    for t in topology_metrics:
        for c in convergence_metrics:
            mx, my = means[t], means[c]
            rho, p, n, min_p = _spearman_full(mx, my)
            used = ~np.isnan(mx) & ~np.isnan(my)
            min_seeds = int(sizes[used].min()) if used.any() else 0
            lo = hi = math.nan
            if not math.isnan(rho) and min_seeds >= _MIN_BOOT_SEEDS:
                draws = _spearman_rows(boots[t][:, used], boots[c][:, used])
                draws = draws[~np.isnan(draws)]
                if draws.size:
                    lo, hi = (float(v) for v in np.quantile(draws, q))
            out.append({"topology_metric": t, "convergence_metric": c, "spearman": rho,
                        "ci_low": lo, "ci_high": hi, "p_value": p, "min_p": min_p,
                        "n_conditions": n, "n_left_out": int(len(conds) - used.sum()),
                        "min_seeds": min_seeds, "n_boot": int(n_boot)})
    p_adj = adjust([float(r["p_value"]) for r in out], correction)
    for r, pa in zip(out, p_adj):
        r["p_adjusted"] = float(pa)
        r["conclusion"] = _conclusion(float(r["spearman"]), float(pa), float(r["min_p"]),
                                      float(r["ci_low"]), float(r["ci_high"]), alpha)
    cols = ["topology_metric", "convergence_metric", "spearman", "ci_low", "ci_high", "p_value",
            "p_adjusted", "min_p", "n_conditions", "n_left_out", "min_seeds", "n_boot",
            "conclusion"]
    return pd.DataFrame(out, columns=cols)
