r"""Whether a curve flattened: the seed-mean curve of a cell and the convergence reading of
the curves a check compares.

:func:`mean_curve` is a cell's curve with its seeds averaged, :func:`late_gain` how much it
still rose over the last quarter of its rounds. :func:`convergence` reads, seed by seed, the
gain of each compared curve over that quarter (of the metric's mean, of the spread between the
best and the worst client, or of the variance between the clients) against the check's margin:
a :class:`Convergence`, which a check (:mod:`topofl.figures.checks`) takes as ``converged=``
and which makes a pass or a fail on curves that had not flattened *inconclusive (not
converged)*.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from topofl.figures.measures import OverSeeds, _metric, per_seed

__all__ = ["mean_curve", "late_gain", "Convergence", "convergence"]


def mean_curve(records: Any, metric: str = "test_acc_mean") -> tuple[Any, Any]:
    """``(rounds completed, mean of metric over the runs)``: the curve of one cell, its seeds
    averaged (rounds evaluated in every run only).

    The seed-mean *curve*, where :class:`~topofl.figures.measures.OverSeeds` holds one number
    per seed: what a figure draws (the mean of :func:`topofl.plotting.convergence`, NumPy's
    mean over the runs at each round) and where a flatness reading (:func:`late_gain`) looks.

    Examples
    --------
    >>> r = tf.records.Records(rows=[
    ...     {"run": s, "round": t, "client": None, "metric": "acc", "value": v}
    ...     for s, vals in [("a", [0.2, 0.6]), ("b", [0.4, 0.4])] for t, v in enumerate(vals)])
    >>> x, y = tf.figures.mean_curve(r, "acc")
    >>> x.tolist(), [round(v, 6) for v in y.tolist()]
    ([1, 2], [0.3, 0.5])
    """
    curves_ = [dict(zip(*(a.tolist() for a in records.series(metric, run=r))))
               for r in records.runs]
    if not curves_:
        raise ValueError("records hold no run")
    common = sorted(set.intersection(*(set(c) for c in curves_)))
    mean = np.array([np.mean([c[t] for c in curves_]) for t in common], dtype=float)
    return np.array(common, dtype=int) + 1, mean


def late_gain(records: Any, metric: str = "test_acc_mean") -> tuple[float, int, int]:
    """How much the seed-mean curve of one cell still rose at the end: ``(points, a, b)``,
    the gain in points (``100 x`` the metric) from round ``a`` (the last evaluation at or
    before the start of the last quarter of the rounds) to the last round ``b`` (rounds
    completed, as :func:`mean_curve`): the slope of the least-squares line through those
    evaluations times ``b - a``. A curve is read as flat when it gained under 1 point.

    Examples
    --------
    >>> r = tf.records.Records(rows=[
    ...     {"run": "a", "round": t, "client": None, "metric": "acc", "value": v}
    ...     for t, v in enumerate([0.1, 0.5, 0.6, 0.62, 0.63, 0.65, 0.66, 0.7])])
    >>> g, a, b = tf.figures.flatness.late_gain(r, "acc")
    >>> round(g, 6), a, b
    (5.0, 6, 8)
    """
    x, y = mean_curve(records, metric)
    gain, a, b = _late_gain_of(x, y)
    return 100 * gain, a, b


# ------------------------------------------------------------------------------ convergence


def _late_gain_of(x: np.ndarray, y: np.ndarray) -> tuple[float, int, int]:
    """``(gain, a, b)`` of one curve (rounds completed ``x``, values ``y``): see
    :func:`late_gain`. The gain is the least-squares line through the evaluations from round
    ``a`` to ``b``, over that span (not the difference of two single evaluations, which the
    noise of one evaluation would decide)."""
    i = max(int((x <= x[-1] - x[-1] // 4).sum()) - 1, 0)
    xs, ys = x[i:].astype(float), y[i:].astype(float)
    if xs.size < 2 or xs[-1] == xs[0]:
        return 0.0, int(x[i]), int(x[-1])
    slope = float(np.polyfit(xs - xs.mean(), ys, 1)[0])
    return slope * float(xs[-1] - xs[0]), int(x[i]), int(x[-1])


@dataclass(frozen=True)
class Convergence:
    """Whether the compared curves of a check flattened (built by :func:`convergence`).

    ``gains`` holds, per curve (its label), the gain of each seed's curve over the last quarter
    of its rounds (in the metric's units), ``span`` the rounds ``(a, b)`` of that quarter and
    ``tolerance`` the largest seed-mean gain (either sign) of a flat curve. :attr:`flat` is
    true when every curve's mean gain is smaller than the tolerance. ``of`` names the curve
    read when it is not the metric's mean (``"spread"``: the gap between the best and the worst
    client, the quantity a spread check tests; ``"variance"``: the variance between the
    clients, in %², the quantity a variance check tests).
    """

    gains: tuple[tuple[str, OverSeeds], ...]
    span: tuple[int, int]
    tolerance: float
    of: str = ""

    @property
    def flat(self) -> bool:
        """Every compared curve moved by less than :attr:`tolerance` over the last quarter."""
        return all(abs(g.mean) < self.tolerance for _, g in self.gains)

    @property
    def rising(self) -> list[str]:
        """The labels of the curves that did not flatten."""
        return [label for label, g in self.gains if not abs(g.mean) < self.tolerance]

    def describe(self, scale: float | None = None) -> str:
        """One line: flat or not, and the largest late gain (``scale`` x the metric; by
        default points of an accuracy, and a variance curve's own %², marked as such)."""
        if scale is None:
            scale = 1.0 if self.of == "variance" else 100.0
        unit = " %²" if self.of == "variance" else ""
        label, g = max(self.gains, key=lambda kv: abs(kv[1].mean))
        a, b = self.span
        moved = f"{label} {scale * g.mean:+.2f} ± {scale * g.std:.2f}{unit}"
        curve = f"{self.of} curve" if self.of else "curve"
        rising = ", ".join(self.rising) + (f" ({self.of})" if self.of else "")
        if self.flat:
            return (f"flat (rounds {a}-{b}: every {curve} moved by less than "
                    f"{scale * self.tolerance:g}{unit}; largest {moved})")
        return (f"not converged (rounds {a}-{b}: {rising} still moved by "
                f"{scale * self.tolerance:g}{unit} or more; largest {moved})")

    def as_dict(self) -> dict[str, Any]:
        """The JSON form: the tolerance, the span, each curve's per-seed gains, flat or not
        (and the curve read, where not the metric's mean)."""
        return {"flat": self.flat, "tolerance": self.tolerance, "span": list(self.span),
                "gains": {label: {"values": list(g.values), "seeds": list(g.seeds)}
                          for label, g in self.gains}, **({"of": self.of} if self.of else {})}


def convergence(cells: Mapping[str, Any], metric: str = "test_acc_mean", *,
                tolerance: float = 0.01, spread: bool = False,
                of: str | None = None) -> Convergence:
    r"""The convergence reading of the curves a check compares: each curve's gain over the last
    quarter of its rounds, seed by seed, against ``tolerance`` (the check's margin, in the
    units of the curve read; 0.01 = one accuracy point).

    A check reads convergence from the curve of the quantity it tests: a check of the final
    spread between clients (:func:`~topofl.figures.measures.final_spread`) gives
    ``spread=True``, whose curve is the spread at each evaluation (``<metric>_max -
    <metric>_min``); a check of the variance between the clients' accuracies gives
    ``of="variance"``, whose curve is that variance at each evaluation. Either can still move
    after the mean accuracy has flattened.

    Parameters
    ----------
    cells : mapping of label to Records
        The compared curves, each one run per seed.
    metric : str
        The curve's metric (``<metric>_mean`` when recorded).
    tolerance : float
        The largest seed-mean gain (either sign) over the last quarter of a flat curve.
    spread : bool, default False
        Read the curve of ``<metric>_max - <metric>_min`` (the gap between the best and the
        worst client) instead of the metric's mean; the same as ``of="spread"``.
    of : {None, "spread", "variance"}, optional
        The curve read: ``None``, the metric's mean; ``"spread"``, as ``spread=True``;
        ``"variance"``, the population variance between the clients of the per-client
        ``metric`` (a fraction; the rows with ``client`` set, a run with
        ``record_clients=True``) in %² at each evaluated round,
        $\frac1n \sum_k (100 a_k - \bar a)^2$ with $\bar a$ the clients' mean in %, as
        :func:`~topofl.algorithms.client_accuracy_stats` (``tolerance`` in %² then).

    Raises
    ------
    ValueError
        No curve, a tolerance not > 0, an unknown ``of`` or one that contradicts ``spread``;
        the spread without ``<metric>_max`` and ``<metric>_min`` recorded; the variance of a
        run without per-client rows of ``metric``, or with a client's value missing (NaN) at
        an evaluation.

    Examples
    --------
    >>> def cell(curves):
    ...     return tf.records.Records(rows=[
    ...         {"run": f"s{s}", "round": t, "client": None, "metric": "acc", "value": v}
    ...         for s, c in enumerate(curves) for t, v in enumerate(c)],
    ...         configs={f"s{s}": {"seed": s} for s in range(len(curves))})
    >>> still = cell([[0.1, 0.5, 0.6, 0.7], [0.1, 0.4, 0.6, 0.72]])
    >>> done = cell([[0.1, 0.7, 0.71, 0.71], [0.2, 0.7, 0.70, 0.705]])
    >>> c = tf.figures.convergence({"A": done}, "acc")
    >>> c.flat, [round(v, 3) for v in c.gains[0][1].values]
    (True, [0.0, 0.005])
    >>> tf.figures.convergence({"A": done, "B": still}, "acc").rising
    ['B']

    A flat mean whose clients still draw apart: the spread's curve has not flattened.

    >>> rows = [{"run": "s0", "round": t, "client": None, "metric": f"acc_{k}", "value": v}
    ...         for t in range(8) for k, v in (("mean", 0.7), ("min", 0.7 - 0.02 * t),
    ...                                        ("max", 0.7 + 0.02 * t))]
    >>> r = tf.records.Records(rows=rows, configs={"s0": {"seed": 0}})
    >>> tf.figures.convergence({"A": r}, "acc").flat
    True
    >>> c = tf.figures.convergence({"A": r}, "acc", spread=True)
    >>> c.flat, round(c.gains[0][1].values[0], 6), c.as_dict()["of"]
    (False, 0.08, 'spread')

    The same with per-client rows: two clients at 70 % -+ 2t points, whose variance between
    them is (2t)² %² at round t, 100, 144 and 196 over rounds 6-8 (a gain of 96 %²).

    >>> rows = [{"run": "s0", "round": t, "client": k, "metric": "acc",
    ...          "value": 0.7 + (0.02 * t if k else -0.02 * t)}
    ...         for t in range(8) for k in (0, 1)]
    >>> r = tf.records.Records(rows=rows, configs={"s0": {"seed": 0}})
    >>> c = tf.figures.convergence({"A": r}, "acc", tolerance=5.0, of="variance")
    >>> c.flat, round(c.gains[0][1].values[0], 6), c.as_dict()["of"]
    (False, 96.0, 'variance')
    >>> print(c.describe())
    not converged (rounds 6-8: A (variance) still moved by 5 %² or more; largest A +96.00 ± 0.00 %²)
    """
    if not cells:
        raise ValueError("convergence needs at least one curve")
    if not tolerance > 0:
        raise ValueError(f"tolerance must be > 0, got {tolerance!r}")
    if of not in (None, "spread", "variance"):
        raise ValueError(f"of must be None, 'spread' or 'variance', got {of!r}")
    if spread and of not in (None, "spread"):
        raise ValueError(f"spread=True reads the spread's curve, not of={of!r}: give one")
    read = "spread" if spread else (of or "")
    gains: list[tuple[str, OverSeeds]] = []
    span = (0, 0)
    for label, rec in cells.items():
        name = _metric(rec, metric)

        def curve(run: Any, name: str = name) -> tuple[np.ndarray, np.ndarray]:
            if read == "spread":
                return _spread_curve(run, metric)
            if read == "variance":
                return _variance_curve(run, metric)
            x, y = run.series(name)
            return np.asarray(x, dtype=int), np.asarray(y, dtype=float)

        def one(run: Any) -> float:
            x, y = curve(run)
            if not len(x):
                return math.nan
            return _late_gain_of(x + 1, y)[0]

        gains.append((str(label), per_seed(rec, one)))
        x, _ = curve(rec.for_run(rec.runs[0]))
        if len(x):
            span = _late_gain_of(x + 1, np.zeros(len(x)))[1:]
    return Convergence(tuple(gains), span, float(tolerance), read)


def _spread_curve(run: Any, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """``(rounds, <metric>_max - <metric>_min)`` of one run, at the rounds where both are
    recorded."""
    names = (f"{metric}_max", f"{metric}_min")
    missing = [n for n in names if n not in run.metrics]
    if missing:
        raise ValueError(f"the spread of {metric!r} needs {names[0]!r} and {names[1]!r} in the "
                         f"records; missing {missing}")
    (xh, yh), (xl, yl) = (run.series(n) for n in names)
    lo = dict(zip(np.asarray(xl, dtype=int).tolist(), np.asarray(yl, dtype=float).tolist()))
    pairs = [(t, v - lo[t]) for t, v in zip(np.asarray(xh, dtype=int).tolist(),
                                            np.asarray(yh, dtype=float).tolist()) if t in lo]
    return (np.array([t for t, _ in pairs], dtype=int),
            np.array([v for _, v in pairs], dtype=float))


def _variance_curve(run: Any, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """``(rounds, variance)`` of one run: at each round with per-client rows of ``metric``,
    the population variance of the clients' values in %² (as
    :func:`~topofl.algorithms.client_accuracy_stats`)."""
    at: dict[int, list[tuple[int, float]]] = {}
    for r in run.rows:
        if r["metric"] == metric and r["client"] is not None:
            v = r["value"]
            at.setdefault(int(r["round"]), []).append(
                (int(r["client"]), math.nan if v is None else float(v)))
    if not at:
        raise ValueError(f"the variance between clients of {metric!r} needs its per-client "
                         f"rows (a run with record_clients=True); run {run.runs[0]!r} has "
                         "none")
    rounds = sorted(at)
    out = np.empty(len(rounds), dtype=float)
    for i, t in enumerate(rounds):
        acc = 100.0 * np.array([v for _, v in sorted(at[t])], dtype=float)
        if np.isnan(acc).any():
            missing = [k for k, v in sorted(at[t]) if math.isnan(v)]
            raise ValueError(f"client(s) {missing} have no {metric!r} at round {t} of run "
                             f"{run.runs[0]!r} (NaN): the variance between clients needs "
                             "every client's value")
        out[i] = float(acc.var())
    return np.array(rounds, dtype=int), out
