r"""Whether a curve flattened: the seed-mean curve of a cell and the convergence reading of
the curves a check compares.

:func:`mean_curve` is a cell's curve with its seeds averaged, :func:`late_gain` how much it
still rose over the last quarter of its rounds. :func:`convergence` reads, seed by seed, the
gain of each compared curve over its *window* (of the metric's mean, of the spread between the
best and the worst client, or of the variance between the clients) against the check's margin:
a :class:`Convergence`, which a check (:mod:`topofl.figures.checks`) takes as ``converged=``
and which makes a pass or a fail on curves that had not flattened *inconclusive (not
converged)*.

The window is fixed in local work, not a fraction of the run: a quarter of the result's horizon
(the paper's rounds, or the rounds a field result declared before its runs), in rounds of the
paper's local work per round (the ``default`` and ``full`` scales of a figure config keep the
local work of its base keys; only ``--quick`` changes it). :func:`topofl.figures.panels` fixes
it on each curve it loads (:func:`fix_window`); a run shorter than its window does not cover it
and is never read as flat. Outside a figure (no window fixed, none given) the window is the last
quarter of the run's rounds.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from topofl.figures.measures import OverSeeds, _metric, per_seed

__all__ = ["mean_curve", "late_gain", "Convergence", "convergence", "fix_window",
           "window_of"]


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


# ------------------------------------------------------------------------------ the window

_WINDOWS: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def fix_window(records: Any, rounds: int) -> None:
    """Fix the flatness window of one curve (its runs, a Records): the last ``rounds`` rounds
    of a run, read by :func:`convergence` when it is given no ``window``.

    :func:`topofl.figures.panels` fixes a quarter of the curve's horizon (``horizon // 4``):
    the paper's rounds, or those a field result declared; a curve loaded otherwise keeps the
    default, the last quarter of its own rounds.

    Raises
    ------
    ValueError
        ``rounds`` not a positive integer.

    Examples
    --------
    >>> r = tf.records.Records(rows=[
    ...     {"run": "a", "round": t, "client": None, "metric": "acc", "value": 0.1 * t}
    ...     for t in range(8)])
    >>> tf.figures.flatness.fix_window(r, 100)
    >>> tf.figures.flatness.window_of(r)
    100
    """
    if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 1:
        raise ValueError(f"a window is a positive number of rounds, got {rounds!r}")
    _WINDOWS[records] = int(rounds)


def window_of(records: Any) -> int | None:
    """The window :func:`fix_window` fixed on ``records``, or ``None``."""
    try:
        return _WINDOWS.get(records)
    except TypeError:  # not weakly referable: nothing was fixed on it
        return None


# ------------------------------------------------------------------------------ convergence


def _late_gain_of(x: np.ndarray, y: np.ndarray, window: int | None = None
                  ) -> tuple[float, int, int]:
    """``(gain, a, b)`` of one curve (rounds completed ``x``, values ``y``): see
    :func:`late_gain`. The gain is the least-squares line through the evaluations from round
    ``a`` to ``b``, over that span (not the difference of two single evaluations, which the
    noise of one evaluation would decide). ``a`` is the last evaluation at or before
    ``b - window`` (``window``: the last quarter of the run when ``None``); a run whose first
    evaluation comes after that does not cover its window, and its span is shorter than it."""
    back = x[-1] // 4 if window is None else window
    i = max(int((x <= x[-1] - back).sum()) - 1, 0)
    xs, ys = x[i:].astype(float), y[i:].astype(float)
    if xs.size < 2 or xs[-1] == xs[0]:
        return 0.0, int(x[i]), int(x[-1])
    slope = float(np.polyfit(xs - xs.mean(), ys, 1)[0])
    return slope * float(xs[-1] - xs[0]), int(x[i]), int(x[-1])


@dataclass(frozen=True)
class Convergence:
    """Whether the compared curves of a check flattened (built by :func:`convergence`).

    ``gains`` holds, per curve (its label), the gain of each seed's curve over its window (in
    the metric's units), ``span`` the rounds ``(a, b)`` read (``a`` the last evaluation at or
    before ``b - window``), ``window`` the window in rounds (0: the last quarter of the run) and
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
    window: int = 0
    short: tuple[str, ...] = ()

    @property
    def covered(self) -> bool:
        """The reading spans its whole window (``window`` rounds; always, when none was
        fixed): a run shorter than its window cannot show that it flattened. ``short`` lists
        the curves with a run that ran all its rounds and still ended inside its window (a run
        stopped early, non-finite, is read over the last quarter of what it ran, at its last
        evaluation).

        Examples
        --------
        A window fixed in rounds, not a fraction of the run: a flat curve read over its last 2
        rounds, then the same 4-round run against a window of 100, which it cannot cover.

        >>> r = tf.records.Records(rows=[
        ...     {"run": f"s{s}", "round": t, "client": None, "metric": "acc", "value": v}
        ...     for s, c in enumerate([[0.1, 0.7, 0.71, 0.71], [0.2, 0.7, 0.70, 0.705]])
        ...     for t, v in enumerate(c)], configs={"s0": {"seed": 0}, "s1": {"seed": 1}})
        >>> c = tf.figures.convergence({"A": r}, "acc", window=2)
        >>> c.flat, c.span, c.window, c.covered
        (True, (2, 4), 2, True)
        >>> short = tf.figures.convergence({"A": r}, "acc", window=100)
        >>> short.covered, short.flat, short.short
        (False, False, ('A',))
        >>> print(short.describe())
        not converged (A: runs shorter than their fixed window of 100 rounds, a quarter of the horizon, cannot show that they flattened; rounds 1-4 read; largest A +50.32 ± 6.89)
        """  # noqa: E501
        return not self.short

    @property
    def flat(self) -> bool:
        """The reading covers its window and every compared curve moved by less than
        :attr:`tolerance` over it."""
        return self.covered and all(abs(g.mean) < self.tolerance for _, g in self.gains)

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
        if not self.covered:
            return (f"not converged ({', '.join(self.short)}: runs shorter than their fixed "
                    f"window of {self.window} rounds, a quarter of the horizon, cannot show "
                    f"that they flattened; rounds {a}-{b} read; largest {moved})")
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
                          for label, g in self.gains}, **({"of": self.of} if self.of else {}),
                **({"window": self.window} if self.window else {}),
                **({"short": list(self.short)} if self.short else {})}


def convergence(cells: Mapping[str, Any], metric: str = "test_acc_mean", *,
                tolerance: float = 0.01, spread: bool = False,
                of: str | None = None, window: int | None = None) -> Convergence:
    r"""The convergence reading of the curves a check compares: each curve's gain over its
    window (the last ``window`` rounds; by default the window :func:`fix_window` fixed on the
    curve, else the last quarter of its rounds), seed by seed, against ``tolerance`` (the
    check's margin, in the units of the curve read; 0.01 = one accuracy point). Curves of one
    horizon share the largest window; of different horizons (rounds of different units:
    synchronous rounds, asynchronous windows) each reads its own. A reading whose runs are
    shorter than its window does not cover it and is not flat (:attr:`Convergence.covered`).

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
        The largest seed-mean gain (either sign) over the window of a flat curve.
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
    window : int, optional
        The window in rounds for every curve, in place of the ones fixed on them.

    Raises
    ------
    ValueError
        No curve, a tolerance not > 0, a window not a positive integer, an unknown ``of`` or
        one that contradicts ``spread``;
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
    read = _check_reading(cells, tolerance, spread, of, window)
    gains: list[tuple[str, OverSeeds]] = []
    span = (0, 0)
    windows = [window if window is not None else window_of(rec) for rec in cells.values()]
    fixed = max((w for w in windows if w), default=None)
    short: set[str] = set()
    for (label, rec), own in zip(cells.items(), windows):
        name = _metric(rec, metric)
        # one horizon: the largest window; different horizons (units): each its own
        mine = fixed if own is None or len(set(w for w in windows if w)) == 1 else own

        def curve(run: Any, name: str = name) -> tuple[np.ndarray, np.ndarray]:
            return _curve(run, metric, name, read)

        def one(run: Any, label: str = str(label), mine: int | None = mine) -> float:
            x, y = curve(run)
            if not len(x):
                return math.nan
            w = mine if _ran_all(run, x) else None
            if w is not None and x[0] + 1 > x[-1] + 1 - w:
                short.add(label)
            return _late_gain_of(x + 1, y, w)[0]

        gains.append((str(label), per_seed(rec, one)))
        first = rec.for_run(rec.runs[0])
        x, _ = curve(first)
        if len(x):
            span = _late_gain_of(x + 1, np.zeros(len(x)),
                                 mine if _ran_all(first, x) else None)[1:]
    return Convergence(tuple(gains), span, float(tolerance), read, fixed or 0,
                       tuple(lab for lab in map(str, cells) if lab in short))


def _check_reading(cells: Mapping[str, Any], tolerance: float, spread: bool, of: str | None,
                   window: int | None) -> str:
    """The curve a :func:`convergence` reads (``""``, ``"spread"`` or ``"variance"``), once
    its arguments are checked (a one-line ``ValueError`` for each bad one)."""
    if not cells:
        raise ValueError("convergence needs at least one curve")
    if not tolerance > 0:
        raise ValueError(f"tolerance must be > 0, got {tolerance!r}")
    if of not in (None, "spread", "variance"):
        raise ValueError(f"of must be None, 'spread' or 'variance', got {of!r}")
    if spread and of not in (None, "spread"):
        raise ValueError(f"spread=True reads the spread's curve, not of={of!r}: give one")
    if window is not None and (isinstance(window, bool) or not isinstance(window, int)
                               or window < 1):
        raise ValueError(f"window must be a positive number of rounds, got {window!r}")
    return "spread" if spread else (of or "")


def _curve(run: Any, metric: str, name: str, read: str) -> tuple[np.ndarray, np.ndarray]:
    """``(rounds, values)`` of the curve a reading reads in one run."""
    if read == "spread":
        return _spread_curve(run, metric)
    if read == "variance":
        return _variance_curve(run, metric)
    x, y = run.series(name)
    return np.asarray(x, dtype=int), np.asarray(y, dtype=float)


def _ran_all(run: Any, x: np.ndarray) -> bool:
    """Whether a run (one run's Records; ``x`` its evaluated rounds, 0-based) ran the rounds
    its config set: its last evaluation within one evaluation interval of the end. A run the
    engine stopped early (a non-finite model, the divergence guard) ends before."""
    cfg = run.configs.get(run.runs[0], {}) if run.runs else {}
    rounds, every = cfg.get("rounds"), cfg.get("eval_every", 1)
    if not isinstance(rounds, int) or not isinstance(every, int):
        return True
    return int(x[-1]) + 1 + max(every, 1) > rounds


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
    try:
        rounds, values = run.clients(metric)
    except KeyError:
        raise ValueError(f"the variance between clients of {metric!r} needs its per-client "
                         f"rows (a run with record_clients=True); run {run.runs[0]!r} has "
                         "none") from None
    out = np.empty(len(rounds), dtype=float)
    for i, t in enumerate(rounds.tolist()):
        acc = 100.0 * values[i]
        if np.isnan(acc).any():
            missing = np.flatnonzero(np.isnan(acc)).tolist()
            raise ValueError(f"client(s) {missing} have no {metric!r} at round {t} of run "
                             f"{run.runs[0]!r} (NaN): the variance between clients needs "
                             "every client's value")
        out[i] = float(acc.var())
    return np.array(rounds, dtype=int), out
