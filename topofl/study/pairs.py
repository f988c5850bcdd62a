"""Is condition A better than condition B? Seed-paired comparisons of conditions
(:func:`pairwise_table`).

The seed of a run fixes its data split and its initialisation, so run ``s`` of condition A
and run ``s`` of condition B differ only in what defines the conditions: the difference
``A_s - B_s`` is the comparison, and its spread over seeds is the noise. For every pair of
conditions and every convergence metric of :data:`PAIR_METRICS`, over the seeds both
conditions ran:

* **paired t** (every value finite): the mean difference, its Student-t interval
  (``n - 1`` degrees of freedom) and the one-sided p-values of "A better than B" and "B better
  than A" in the metric's good direction (higher accuracy, fewer rounds, bytes, messages or
  seconds) — what :func:`scipy.stats.ttest_rel` gives;
* **sign test** (a run never reached the target, so a difference is infinite): the number of
  seeds where each is ahead, and the exact binomial one-sided p-values over the seeds that
  are not tied (neither reached, or equal); no mean or interval.

``verdict`` is ``"A ahead"`` or ``"B ahead"`` when the leader's one-sided p is below
``(1 - level) / 2`` (no direction is claimed in advance, so each direction is tested at
2.5 %: for the paired t this is the two-sided 95 % interval excluding 0), ``"not decided"``
otherwise, ``"equal in every seed"``, ``"too few seeds"`` (fewer than 2 common seeds) or
``"no common seeds"``. Values are compared at 10 significant digits (float noise is a tie).

A table of many pairs and metrics makes many comparisons: :func:`pairwise_table` gives each
tested row (a verdict of ``"A ahead"``, ``"B ahead"`` or ``"not decided"``) the two-sided p of
its comparison (twice the leader's one-sided p, at most 1) corrected for the number of rows
tested, ``p_adjusted``, and decides at ``p_adjusted < 1 - level``: with ``correction="none"``
that is the rule above; ``"holm"`` (Holm-Bonferroni,
:func:`~topofl.study.statistics.holm`) keeps the chance of any wrong verdict in the table at
most ``1 - level``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from topofl.study.statistics import _round_sig, adjust

__all__ = ["PAIR_METRICS", "paired_difference", "pairwise_table"]

#: Convergence metrics compared between conditions -> whether larger is better.
PAIR_METRICS = {"final": True, "best": True, "auc": True, "rounds_to_target": False,
                "messages_to_target": False, "bytes_to_target": False,
                "time_to_target": False}

_COLUMNS = ["condition_a", "condition_b", "metric", "better", "n_pairs", "seeds", "only_a",
            "only_b", "test", "mean_diff", "ci_low", "ci_high", "p_a_better", "p_b_better",
            "p_adjusted", "a_ahead", "b_ahead", "tied", "a_every_seed", "b_every_seed", "verdict"]


def paired_difference(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    higher_is_better: bool,
    level: float = 0.95,
) -> dict[str, Any]:
    """The seed-paired comparison of ``a`` and ``b`` (aligned: ``a[i]`` and ``b[i]`` share a
    seed); pairs with a NaN are left out.

    Returns a dict with ``n_pairs``, ``test`` (``"paired t"``, ``"sign"`` when a value is
    infinite, ``"sign (no spread)"`` when every seed differs by the same nonzero amount
    (which a t test would call certain), ``"–"`` with fewer than 2 pairs), ``mean_diff``
    (mean of ``a - b``),
    ``ci_low``/``ci_high`` (Student t, ``n - 1`` dof), ``p_a_better``/``p_b_better``
    (one-sided, in the good direction), ``a_ahead``/``b_ahead``/``tied`` (seeds),
    ``a_every_seed``/``b_every_seed`` and ``verdict`` (see the module's description).

    Examples
    --------
    Accuracy of A and B over three seeds: A is ahead in every seed, by 0.1 on average
    (differences 0.1, 0.15, 0.05: t = 3.46 with 2 dof), yet the 95 % interval covers 0.

    >>> from topofl.study.pairs import paired_difference
    >>> r = paired_difference([0.8, 0.9, 0.85], [0.7, 0.75, 0.8], higher_is_better=True)
    >>> round(r["mean_diff"], 4), round(r["ci_low"], 4), round(r["ci_high"], 4)
    (0.1, -0.0242, 0.2242)
    >>> round(r["p_a_better"], 4), r["a_every_seed"], r["verdict"]
    (0.0371, True, 'not decided')

    Rounds to a target that B never reached in two of its three seeds: a sign test.

    >>> inf = float("inf")
    >>> r = paired_difference([20, 30, 20], [inf, 30, inf], higher_is_better=False)
    >>> r["test"], r["a_ahead"], r["tied"], r["p_a_better"], r["verdict"]
    ('sign', 2, 1, 0.25, 'not decided')
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    x, y = _round_sig(a), _round_sig(b)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"a and b must be 1-d and of one length, got shapes {x.shape} and "
                         f"{y.shape}")
    ok = ~np.isnan(x) & ~np.isnan(y)
    x, y = x[ok], y[ok]
    n = int(x.size)
    sign = 1.0 if higher_is_better else -1.0
    with np.errstate(invalid="ignore"):
        a_ahead = int(np.sum(sign * x > sign * y))
        b_ahead = int(np.sum(sign * y > sign * x))
    out: dict[str, Any] = {
        "n_pairs": n, "test": "–", "mean_diff": math.nan, "ci_low": math.nan,
        "ci_high": math.nan, "p_a_better": math.nan, "p_b_better": math.nan,
        "a_ahead": a_ahead, "b_ahead": b_ahead, "tied": n - a_ahead - b_ahead,
        "a_every_seed": n > 0 and a_ahead == n, "b_every_seed": n > 0 and b_ahead == n,
    }
    infinite = bool(np.isinf(x).any() or np.isinf(y).any())
    if n < 2:
        out["verdict"] = "no common seeds" if n == 0 else "too few seeds"
        if n == 1 and not infinite:
            out["mean_diff"] = float(x[0] - y[0])
        return out
    half = (1 - level) / 2
    if infinite:
        m = a_ahead + b_ahead
        out["test"] = "sign"
        out["p_a_better"] = float(stats.binom.sf(a_ahead - 1, m, 0.5)) if m else 1.0
        out["p_b_better"] = float(stats.binom.sf(b_ahead - 1, m, 0.5)) if m else 1.0
    else:
        d = _round_sig(x - y)
        # the same difference in every seed is no spread, whatever the last bit of the float
        # mean and standard deviation of equal values say (three -0.491: sd 6.8e-17, not 0)
        no_spread = bool(np.ptp(d) == 0)
        mean = float(d[0]) if no_spread else float(np.mean(d))
        sd = 0.0 if no_spread else float(np.std(d, ddof=1))
        out["test"], out["mean_diff"] = "paired t", mean
        if sd == 0:  # no spread for a t test, which would call any such difference certain
            # (p = 0); the sign test decides instead
            out["ci_low"] = out["ci_high"] = mean
            if mean != 0:
                out["test"] = "sign (no spread)"
            up = math.nan if mean == 0 else (0.5 ** n if mean > 0 else 1.0)
        else:
            se = sd / math.sqrt(n)
            q = float(stats.t.ppf(1 - half, n - 1))
            out["ci_low"], out["ci_high"] = mean - q * se, mean + q * se
            up = float(stats.t.sf(mean / se, n - 1))  # p of "a - b > 0"
        down = math.nan if math.isnan(up) else (
            (0.5 ** n if mean < 0 else 1.0) if sd == 0
            else float(stats.t.cdf(mean / (sd / math.sqrt(n)), n - 1)))
        out["p_a_better"], out["p_b_better"] = (up, down) if higher_is_better else (down, up)
    if out["tied"] == n:
        out["verdict"] = "equal in every seed"
    elif out["p_a_better"] < half:
        out["verdict"] = "A ahead"
    elif out["p_b_better"] < half:
        out["verdict"] = "B ahead"
    else:
        out["verdict"] = "not decided"
    return out


def _seed_text(seeds: Sequence[Any]) -> str:
    return ", ".join(str(s) for s in seeds)


def _sorted(seeds: set[Any]) -> list[Any]:
    try:
        return sorted(seeds)
    except TypeError:
        return sorted(seeds, key=str)


def pairwise_table(
    runs: pd.DataFrame,
    metrics: Sequence[str] | None = None,
    *,
    level: float = 0.95,
    correction: str = "none",
) -> pd.DataFrame:
    """Every pair of conditions (in the order of their first run: A before B), compared seed
    by seed on every metric of ``metrics`` (default: the columns of ``runs`` in
    :data:`PAIR_METRICS`).

    Runs are paired by their ``seed``: only the seeds both conditions ran count (``n_pairs``,
    ``seeds``; ``only_a``/``only_b``: how many seeds one of them ran without the other); a
    run without a seed pairs with nothing; two runs of one condition with one seed count as
    their mean. ``mean_diff`` is A - B; see :func:`paired_difference` for the other columns
    and the module's description for the verdicts and ``p_adjusted`` (``correction``:
    ``"none"`` or ``"holm"``, over the rows tested).

    Examples
    --------
    >>> import pandas as pd
    >>> from topofl.study.pairs import pairwise_table
    >>> runs = pd.DataFrame({"condition": list("aaabbb"), "seed": [0, 1, 2, 2, 1, 0],
    ...                      "final": [0.8, 0.9, 0.85, 0.8, 0.75, 0.7]})
    >>> t = pairwise_table(runs)
    >>> t[["condition_a", "condition_b", "metric", "n_pairs", "mean_diff", "a_every_seed"]]
      condition_a condition_b metric  n_pairs  mean_diff  a_every_seed
    0           a           b  final        3        0.1          True
    """
    if "condition" not in runs.columns or "seed" not in runs.columns:
        raise ValueError(f"runs must have the columns 'condition' and 'seed', got "
                         f"{list(runs.columns)}")
    if metrics is None:
        metrics = [m for m in PAIR_METRICS if m in runs.columns]
    unknown = [m for m in metrics if m not in PAIR_METRICS]
    if unknown:
        raise ValueError(f"metrics {unknown} have no better direction; known: "
                         f"{list(PAIR_METRICS)}")
    adjust([], correction)  # checks it
    missing = [m for m in metrics if m not in runs.columns]
    if missing:
        raise ValueError(f"columns {missing} are not in the run table; have {list(runs.columns)}")
    seeded = runs[runs["seed"].map(lambda s: s is not None and not (
        isinstance(s, float) and math.isnan(s)))]
    conds = list(dict.fromkeys(runs["condition"]))
    by_seed: dict[str, dict[str, dict[Any, float]]] = {c: {} for c in conds}
    for m in metrics:
        means = seeded.assign(_v=seeded[m].astype("float64")).groupby(
            ["condition", "seed"], sort=False)["_v"].mean()
        for (c, s), v in means.items():
            by_seed[c].setdefault(m, {})[s] = float(v)
    rows = []
    for i, ca in enumerate(conds):
        for cb in conds[i + 1:]:
            for m in metrics:
                va, vb = by_seed[ca].get(m, {}), by_seed[cb].get(m, {})
                common = _sorted(set(va) & set(vb))
                res = paired_difference([va[s] for s in common], [vb[s] for s in common],
                                        higher_is_better=PAIR_METRICS[m], level=level)
                rows.append({"condition_a": ca, "condition_b": cb, "metric": m,
                             "better": "higher" if PAIR_METRICS[m] else "lower",
                             "seeds": _seed_text(common), "only_a": len(set(va) - set(vb)),
                             "only_b": len(set(vb) - set(va)), **res})
    _decide(rows, level, correction)
    return pd.DataFrame(rows, columns=_COLUMNS)


_TESTED = ("A ahead", "B ahead", "not decided")


def _decide(rows: list[dict[str, Any]], level: float, correction: str) -> None:
    """Give each row ``p_adjusted`` (its two-sided p corrected over the rows tested) and its
    verdict at ``p_adjusted < 1 - level``."""
    tested = [k for k, r in enumerate(rows) if r["verdict"] in _TESTED
              and not (math.isnan(r["p_a_better"]) or math.isnan(r["p_b_better"]))]
    two = [min(1.0, 2 * min(rows[k]["p_a_better"], rows[k]["p_b_better"])) for k in tested]
    for r in rows:
        r["p_adjusted"] = math.nan
    for k, p in zip(tested, adjust(two, correction)):
        r = rows[k]
        r["p_adjusted"] = float(p)
        lead = "A ahead" if r["p_a_better"] < r["p_b_better"] else "B ahead"
        r["verdict"] = lead if p < 1 - level else "not decided"
