r"""Quantities measured over seeds, the checks of a claim, and the verdict.

A figure script measures the claim's quantities seed by seed (:class:`OverSeeds`, from
:func:`per_seed` and its shorthands :func:`final`, :func:`mean_over_rounds`,
:func:`final_spread` and :func:`reach`), turns them into :class:`Check`\ s (:func:`above`,
:func:`below`, :func:`within`, :func:`fact`) and decides the claim (:func:`verdict`). The
seed-mean curve of a cell (:func:`mean_curve`, :func:`late_gain`) reads whether its curve
flattened.

**Verdicts** (:data:`RULE`). A claim is decided by checks. A check compares one quantity ``x``
with a threshold ``t``: :func:`above` (the claim is ``x > t``), :func:`below` (``x < t``) or
:func:`within` (``|x| <= t``, a claim of "comparable"). A difference between two curves is
taken seed by seed (paired: the same seed draws the same split, graph and initialisation for
both). Over ``n >= 2`` seeds, with ``δ`` the check's practical margin (stated once in
``paper_figures/claims.toml`` with its reason, :func:`margin`) and the seed-paired one-sided
95 % bounds of the mean of ``x`` (Student t with ``n - 1`` degrees of freedom, the seeds'
standard deviation taken as at least the metric's *resolution*, e.g. the evaluation grid of
rounds to a target, so that seeds agreeing exactly are decided against that grid):

* a claim of "better" (superiority, ``tie="inconclusive"``) *passes* when the bound on the
  claimed side lies beyond ``t + δ`` (``t - δ`` for :func:`below`) and *fails* when the bound
  on the other side falls short of ``t`` (shown on the other side); between the two it is a
  *tie* or the seeds' spread, *inconclusive*; a claim of "at least as good"
  (non-inferiority, ``tie="pass"``) passes when the 95 % lower bound of ``x - t`` lies above
  ``-δ`` and fails when the upper bound lies below it;
* :func:`within` passes when both one-sided 95 % bounds lie within the tolerance (two
  one-sided tests), fails when both lie outside on one side;
* less spread never weakens a check: the bounds only narrow as the seeds agree;
* a check on curves that had not flattened (:func:`convergence`: a compared curve still moved
  by the margin or more over the last quarter of its rounds) is *inconclusive (not
  converged)*, whatever its bounds say, unless the claim is read at this horizon
  (``horizon=`` says why: the paper's own rounds, a speed over the first rounds, rounds to a
  target);
* one seed has no measured spread: inconclusive (every ``--quick`` result).

Exact quantities (a graph's structure, statistics over a fixed set of constructions) are plain
numbers or :func:`fact`\ s and pass or fail. Each result names its **headline** check (the
paper's central statement); the verdict (:func:`verdict`) is the headline's: **holds** (every
part passes), **does not hold** (a part fails: a conjunction with one failed part is
refuted, and the result says how many parts pass) or **inconclusive at this scale**, with "k
of n secondary checks pass" beside it; **partly** for a headline of several parts of which
some pass and the others are inconclusive.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from topofl import data

__all__ = ["VERDICTS", "OverSeeds", "Check", "per_seed", "seedwise", "final",
           "mean_over_rounds", "final_spread", "reach", "samples_per_client", "above", "below",
           "within", "fact", "verdict", "headline_of", "secondary", "mean_curve", "late_gain",
           "Convergence", "convergence", "LEVEL", "RULE"]


# ------------------------------------------------------------------------------ over seeds


@dataclass(frozen=True)
class OverSeeds:
    """A quantity measured once per seed: its values, the seeds, mean and spread.

    Arithmetic with a number applies to every value; with another :class:`OverSeeds` of the
    same seeds it pairs the values seed by seed (so ``a - b`` is the per-seed difference, whose
    spread is what decides a comparison). Formatting with a spec gives ``"mean ± std"``
    (``ddof = 1``), or the mean alone for one seed.

    ``resolution`` is the grid the metric is measured on (e.g. the evaluation interval of
    rounds to a target, :func:`reach`; 0 for a continuous metric): a check takes the seeds'
    spread as at least this much, so that seeds that agree exactly on a grid are decided
    against the grid's step rather than as certain. Sums and differences keep the larger
    resolution of their operands, scaling by a number scales it.

    Examples
    --------
    >>> a = tf.figures.OverSeeds((0.80, 0.84, 0.82), (0, 1, 2))
    >>> b = tf.figures.OverSeeds((0.78, 0.80, 0.79), (0, 1, 2))
    >>> d = a - b
    >>> [round(v, 4) for v in d.values], round(d.mean, 4), round(d.std, 4)
    ([0.02, 0.04, 0.03], 0.03, 0.01)
    >>> f"{100 * a:.1f}", f"{tf.figures.OverSeeds((0.5,), (0,)):.3f}"
    ('82.0 ± 2.0', '0.500')
    """

    values: tuple[float, ...]
    seeds: tuple[int, ...]
    resolution: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        if not self.values or len(self.values) != len(self.seeds):
            raise ValueError(f"OverSeeds needs one value per seed (at least one), got "
                             f"{len(self.values)} values for seeds {self.seeds}")
        object.__setattr__(self, "values", tuple(float(v) for v in self.values))
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))
        r = self.resolution
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not r >= 0 \
                or not math.isfinite(r):
            raise ValueError(f"resolution must be a finite number >= 0, got {r!r}")
        object.__setattr__(self, "resolution", float(r))

    @property
    def n(self) -> int:
        """The number of seeds."""
        return len(self.values)

    @property
    def mean(self) -> float:
        """The mean over the seeds."""
        return float(math.fsum(self.values) / self.n)

    @property
    def std(self) -> float:
        """The sample standard deviation over the seeds (``ddof = 1``; 0 for one seed)."""
        if self.n < 2:
            return 0.0
        m = self.mean
        return float(math.sqrt(math.fsum((v - m) ** 2 for v in self.values) / (self.n - 1)))

    def _pair(self, other: Any, op: Callable[[float, float], float],
              scale: Callable[[float], float] | None = None) -> OverSeeds:
        """``op`` seed by seed; ``scale`` maps a number operand to the factor the resolution
        takes (``None``: the resolution is kept; with two OverSeeds the larger is kept, or
        0 for a product or quotient, whose grid is not one step)."""
        if isinstance(other, OverSeeds):
            if other.seeds != self.seeds:
                raise ValueError(f"cannot pair values of seeds {self.seeds} with values of "
                                 f"seeds {other.seeds}")
            res = 0.0 if scale is not None else max(self.resolution, other.resolution)
            return OverSeeds(tuple(op(a, b) for a, b in zip(self.values, other.values)),
                             self.seeds, res)
        if isinstance(other, (int, float)) and not isinstance(other, bool):
            res = self.resolution * (1.0 if scale is None else abs(scale(float(other))))
            return OverSeeds(tuple(op(a, float(other)) for a in self.values), self.seeds,
                             res if math.isfinite(res) else 0.0)
        return NotImplemented  # type: ignore[no-any-return]  # Python tries the other operand

    def __add__(self, other: Any) -> OverSeeds:
        return self._pair(other, lambda a, b: a + b)

    def __radd__(self, other: Any) -> OverSeeds:
        return self._pair(other, lambda a, b: b + a)

    def __sub__(self, other: Any) -> OverSeeds:
        return self._pair(other, lambda a, b: a - b)

    def __rsub__(self, other: Any) -> OverSeeds:
        return self._pair(other, lambda a, b: b - a)

    def __mul__(self, other: Any) -> OverSeeds:
        return self._pair(other, lambda a, b: a * b, lambda k: k)

    def __rmul__(self, other: Any) -> OverSeeds:
        return self._pair(other, lambda a, b: b * a, lambda k: k)

    def __truediv__(self, other: Any) -> OverSeeds:
        return self._pair(other, lambda a, b: a / b, lambda k: 1 / k if k else math.inf)

    def __neg__(self) -> OverSeeds:
        return OverSeeds(tuple(-v for v in self.values), self.seeds, self.resolution)

    def __abs__(self) -> OverSeeds:
        return OverSeeds(tuple(abs(v) for v in self.values), self.seeds, self.resolution)

    def __format__(self, spec: str) -> str:
        if not spec:
            return str(self)
        if self.n < 2:
            return format(self.mean, spec)
        return f"{format(self.mean, spec)} ± {format(self.std, spec)}"

    def __str__(self) -> str:
        return self.__format__(".4g")


def per_seed(records: Any, fn: Callable[[Any], float]) -> OverSeeds:
    """``fn`` of every run of ``records`` (one run a seed), as an :class:`OverSeeds`.

    ``fn`` takes the single-run records of one seed; the seed is the run's config ``seed``.

    Examples
    --------
    >>> r = tf.records.Records(rows=[
    ...     {"run": f"s{s}", "round": 0, "client": None, "metric": "acc", "value": v}
    ...     for s, v in ((0, 0.5), (1, 0.7))], configs={"s0": {"seed": 0}, "s1": {"seed": 1}})
    >>> tf.figures.per_seed(r, lambda one: one.final("acc"))
    OverSeeds(values=(0.5, 0.7), seeds=(0, 1))
    """
    runs = records.runs
    if not runs:
        raise ValueError("records hold no run")
    seeds = tuple(int(records.configs.get(r, {}).get("seed", k)) for k, r in enumerate(runs))
    return OverSeeds(tuple(float(fn(records.for_run(r))) for r in runs), seeds)


def seedwise(fn: Callable[..., float], *values: OverSeeds) -> OverSeeds:
    """``fn`` applied seed by seed to several :class:`OverSeeds` of the same seeds (e.g. the
    maximum over several curves, per seed).

    Examples
    --------
    >>> a = tf.figures.OverSeeds((1.0, 4.0), (0, 1))
    >>> b = tf.figures.OverSeeds((3.0, 2.0), (0, 1))
    >>> tf.figures.seedwise(max, a, b).values, tf.figures.seedwise(max, a).values
    ((3.0, 4.0), (1.0, 4.0))
    """
    if not values:
        raise ValueError("seedwise needs at least one OverSeeds")
    if len(values) == 1 and fn in (max, min):  # max(x) of one number is x, not an error
        return values[0]
    seeds = values[0].seeds
    for v in values[1:]:
        if v.seeds != seeds:
            raise ValueError(f"cannot pair values of seeds {seeds} with values of seeds "
                             f"{v.seeds}")
    return OverSeeds(tuple(float(fn(*vs)) for vs in zip(*(v.values for v in values))), seeds,
                     max(v.resolution for v in values))


def _metric(records: Any, metric: str) -> str:
    return f"{metric}_mean" if f"{metric}_mean" in records.metrics else metric


def _over_series(records: Any, metric: str, reduce: Callable[[np.ndarray], Any]) -> OverSeeds:
    """``reduce`` of the values of ``metric`` (``<metric>_mean`` when recorded), per seed."""
    name = _metric(records, metric)
    return per_seed(records, lambda one: reduce(one.series(name)[1]))


def final(records: Any, metric: str = "test_acc") -> OverSeeds:
    """The last recorded value of ``metric`` (``<metric>_mean`` when recorded), per seed.

    Examples
    --------
    >>> r = tf.records.Records(rows=[{"run": "a", "round": t, "client": None,
    ...                               "metric": "acc_mean", "value": v}
    ...                              for t, v in enumerate([0.2, 0.6])])
    >>> tf.figures.final(r, "acc").values
    (0.6,)
    """
    return _over_series(records, metric, lambda values: values[-1])


def mean_over_rounds(records: Any, metric: str = "test_acc") -> OverSeeds:
    """The mean of ``metric`` over the evaluated rounds (a convergence speed: the area under
    the curve per evaluation), per seed.

    Examples
    --------
    Two seeds whose curves end at the same value: the faster one has the larger mean.

    >>> r = tf.records.Records(rows=[{"run": run, "round": t, "client": None,
    ...                               "metric": "acc", "value": v}
    ...                              for run, curve in (("s0", [0.5, 0.6]), ("s1", [0.2, 0.6]))
    ...                              for t, v in enumerate(curve)])
    >>> tf.figures.mean_over_rounds(r, "acc").values, tf.figures.final(r, "acc").values
    ((0.55, 0.4), (0.6, 0.6))
    """
    return _over_series(records, metric, lambda values: float(np.nanmean(values)))


def final_spread(records: Any, metric: str = "test_acc") -> OverSeeds:
    """``<metric>_max - <metric>_min`` at the last evaluation (the gap between the best and
    the worst client), per seed.

    Examples
    --------
    >>> r = tf.records.Records(rows=[{"run": "a", "round": 0, "client": None,
    ...                               "metric": f"acc_{s}", "value": v}
    ...                              for s, v in (("min", 0.25), ("max", 0.75))])
    >>> tf.figures.final_spread(r, "acc").values
    (0.5,)
    """
    return per_seed(records, lambda one: one.series(f"{metric}_max")[1][-1]
                    - one.series(f"{metric}_min")[1][-1])


def reach(records: Any, target: float, metric: str = "test_acc_mean") -> OverSeeds:
    """Rounds until ``metric`` first reaches ``target`` (:meth:`Records.rounds_to`), per
    seed; a seed that never reaches it within its run counts one round more than it ran (a
    lower bound of its true count, so a comparison it decides stays true). Its
    ``resolution`` is the evaluation grid: the largest step between two evaluated rounds.

    Examples
    --------
    >>> r = tf.records.Records(rows=[{"run": "a", "round": t, "client": None,
    ...                               "metric": "acc", "value": v}
    ...                              for t, v in enumerate([0.2, 0.6, 0.9])])
    >>> tf.figures.reach(r, 0.5, "acc").values, tf.figures.reach(r, 0.95, "acc").values
    ((2.0,), (4.0,))
    >>> tf.figures.reach(r, 0.5, "acc").resolution
    1.0
    """
    def one(rec: Any) -> float:
        got = rec.rounds_to(target, metric)
        return float(got if got is not None else int(rec.series(metric)[0][-1]) + 2)

    got = per_seed(records, one)
    steps = [float(np.diff(np.asarray(records.series(metric, run=r)[0], dtype=float)).max())
             for r in records.runs if len(records.series(metric, run=r)[0]) > 1]
    return OverSeeds(got.values, got.seeds, max(steps, default=1.0))


def samples_per_client(config: Mapping[str, Any]) -> float:
    """The mean number of training samples a client holds in a run (train set / clients).

    Examples
    --------
    >>> round(tf.figures.samples_per_client({"data": "digits", "n_clients": 100}), 2)
    14.42
    """
    return float(data.load(str(config["data"])).x_train.shape[0] / int(config["n_clients"]))


# ------------------------------------------------------------------------------ seed-mean curves


def mean_curve(records: Any, metric: str = "test_acc_mean") -> tuple[Any, Any]:
    """``(rounds completed, mean of metric over the runs)``: the curve of one cell, its seeds
    averaged (rounds evaluated in every run only).

    The seed-mean *curve*, where :class:`OverSeeds` holds one number per seed: what a
    figure draws (the mean of :func:`topofl.plotting.convergence`, NumPy's mean over the runs
    at each round) and where a flatness reading (:func:`late_gain`) looks.

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
    >>> g, a, b = tf.figures.checks.late_gain(r, "acc")
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
    spread between clients (:func:`final_spread`) gives ``spread=True``, whose curve is the
    spread at each evaluation (``<metric>_max - <metric>_min``); a check of the variance
    between the clients' accuracies gives ``of="variance"``, whose curve is that variance at
    each evaluation. Either can still move after the mean accuracy has flattened.

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


# ------------------------------------------------------------------------------ verdicts


#: The four verdicts, in the order the index counts them.
VERDICTS = ("holds", "partly", "does not hold", "inconclusive at this scale")

#: The one-sided level of every check's bounds (:func:`above`, :func:`below`, :func:`within`).
LEVEL = 0.95

#: The rule's name, recorded in every result (results of the older rules have another or none).
RULE = ("paired one-sided 95 % bounds against the claim's margin (superiority beyond it, "
        "non-inferiority within it), spread at least the metric's resolution, at convergence")


@dataclass(frozen=True)
class Check:
    """One part of a claim and its outcome: ``"pass"``, ``"fail"`` or ``"inconclusive"``
    (see the rule of :mod:`topofl.figures.checks`; built by :func:`above`, :func:`below`,
    :func:`within`, :func:`fact`).

    ``reason`` says why (the test's p, a tie within the margin, curves not converged);
    ``headline`` marks the paper's central statement (the result's verdict is the headline
    checks', :func:`verdict`); ``detail`` holds what a reader needs to recompute the outcome
    (the per-seed values, the threshold, the margin, the test, the convergence reading).
    """

    name: str
    outcome: str
    measured: str
    rule: str
    reason: str = ""
    headline: bool = False
    detail: Mapping[str, Any] | None = None

    def row(self) -> list[str]:
        """The check's row of the Markdown table."""
        return [("**headline:** " if self.headline else "") + self.name, self.measured,
                self.rule, self.outcome, self.reason]

    def as_dict(self) -> dict[str, Any]:
        """The JSON form of the check (with its per-seed values)."""
        out = {"name": self.name, "headline": self.headline, "measured": self.measured,
               "rule": self.rule, "outcome": self.outcome, "reason": self.reason}
        out.update(self.detail or {})
        return out


def _test(value: OverSeeds, threshold: float) -> dict[str, Any]:
    """The seed-paired one-sided 95 % bounds of the mean of ``value - threshold``.

    Student t with ``n - 1`` degrees of freedom on the per-seed differences, their standard
    deviation taken as at least ``value.resolution`` (``sd``): less spread never widens the
    bounds, and seeds that agree exactly are decided against the metric's grid (exactly, when
    the metric has none). ``low``/``high`` are the one-sided bounds (each at :data:`LEVEL`),
    ``se`` the standard error, ``q`` the t quantile."""
    from scipy import stats  # only when a check is built

    n = value.n
    m = value.mean - float(threshold)
    sd = max(value.std, value.resolution)
    se = sd / math.sqrt(n)
    q = float(stats.t.ppf(LEVEL, n - 1)) if n >= 2 else math.inf
    finite = all(math.isfinite(v) for v in value.values)
    if not finite or n < 2:
        lo = hi = math.nan
    else:
        lo, hi = m - q * se, m + q * se
    return {"test": "paired t, sd >= resolution", "mean_diff": m, "low": lo, "high": hi,
            "sd": sd, "se": se, "q": q, "resolution": value.resolution}


def _p_beyond(test: Mapping[str, Any], n: int, bound: float, upper: bool) -> float:
    """The one-sided p of "the mean difference is above ``bound``" (``upper``: below it):
    Student t with the test's standard error (exact when it is 0)."""
    from scipy import stats

    m, se = float(test["mean_diff"]), float(test["se"])
    z = (m - bound) if not upper else (bound - m)
    if se == 0:
        return 0.0 if z > 0 else 1.0
    return float(stats.t.sf(z / se, n - 1))


def _number(value: OverSeeds | float) -> None:
    if isinstance(value, OverSeeds):
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"a check's value must be an OverSeeds or a number, got "
                        f"{type(value).__name__}")


def _detail(value: OverSeeds | float, threshold: float, margin: float,
            converged: Convergence | None, horizon: str | None,
            test: Mapping[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {"threshold": threshold, "margin": margin}
    if isinstance(value, OverSeeds):
        out.update(values=list(value.values), seeds=list(value.seeds), mean=value.mean,
                   std=value.std)
    else:
        out["value"] = float(value)
    if test is not None:
        out.update({k: (None if isinstance(v, float) and math.isnan(v) else v)
                    for k, v in test.items()})
    if converged is not None:
        out["convergence"] = converged.as_dict()
    if horizon is not None:
        out["horizon"] = horizon
    return out


def _needs_reading(value: OverSeeds | float, converged: Convergence | None,
                   horizon: str | None, name: str) -> None:
    if isinstance(value, OverSeeds) and converged is None and horizon is None:
        raise ValueError(f"check {name!r} is measured over seeds: give converged= (a "
                         "convergence reading of the curves it compares, figures.convergence) "
                         "or horizon= (why the claim is read at this horizon)")


def _finish(name: str, outcome: str, reason: str, value: OverSeeds | float, fmt: str,
            rule: str, headline: bool, detail: dict[str, Any], converged: Convergence | None,
            horizon: str | None) -> Check:
    """The check, its pass or fail made inconclusive on curves that had not flattened (unless
    read at a stated horizon, which its reason names)."""
    if horizon is None and converged is not None and not converged.flat \
            and outcome in ("pass", "fail"):
        outcome, reason = "inconclusive", f"{converged.describe()}; would be {outcome} ({reason})"
    if horizon is not None:
        reason += f"; at this horizon: {horizon}"
    return Check(name, outcome, format(value, fmt), rule, reason, headline, detail)


def _side(name: str, value: OverSeeds | float, threshold: float, fmt: str, claimed_above: bool,
          margin: float, tie: str, converged: Convergence | None, horizon: str | None,
          headline: bool) -> Check:
    _number(value)
    if not margin >= 0:
        raise ValueError(f"margin must be >= 0, got {margin!r}")
    if tie not in ("pass", "fail", "inconclusive"):
        raise ValueError(f"tie must be 'pass', 'fail' or 'inconclusive', got {tie!r}")
    _needs_reading(value, converged, horizon, name)
    sign = 1.0 if claimed_above else -1.0
    # the claim's edges, as effects on the claimed side: a claim of "better" (superiority)
    # passes beyond +margin and fails short of 0 (shown on the other side; in between it is
    # a tie); one of "at least as good" (non-inferiority) passes and fails at -margin
    inferior = tie == "pass"
    bound = -margin if inferior else margin
    short = -margin if inferior else 0.0
    op = ">" if claimed_above else "<"
    edge, fail_edge = threshold + sign * bound, threshold + sign * short
    rule = (f"{op} {threshold:{fmt}}" if not margin else
            f"{op} {edge:{fmt}} (at least as good: within the margin {margin:{fmt}})"
            if inferior else f"{op} {threshold:{fmt}} by more than {margin:{fmt}}")
    test: dict[str, Any] | None = None
    if isinstance(value, OverSeeds):
        test = _test(value, threshold)
        m = test["mean_diff"]
        # the claimed side's effect and its bounds
        lo, hi = ((test["low"], test["high"]) if claimed_above
                  else (-test["high"], -test["low"]))
    else:
        m = float(value) - threshold
        lo = hi = sign * m
    effect = sign * m
    tie_text = (f"; a tie: |difference| {abs(m):{fmt}} under the margin"
                if abs(m) < margin else "")
    if math.isnan(m):
        outcome, reason = "inconclusive", "not measured (NaN)"
    elif isinstance(value, OverSeeds) and value.n < 2:
        outcome, reason = "inconclusive", "one seed: no measured spread"
    elif isinstance(value, OverSeeds) and math.isnan(lo):
        outcome, reason = "inconclusive", "a value is not finite: no bound"
    elif not isinstance(value, OverSeeds):
        if effect > bound or (inferior and effect == bound):
            outcome, reason = "pass", "exact"
        elif effect < short:
            outcome, reason = "fail", "exact"
        else:
            outcome, reason = "inconclusive", "exact" + tie_text
    elif lo > bound:
        p = _p_beyond(test or {}, value.n, sign * bound, upper=not claimed_above)
        outcome = "pass"
        reason = f"{_bound_text(lo, hi, sign, threshold, fmt, 'low')} {edge:{fmt}} (p = {p:.3f})"
    elif hi < short:
        p = _p_beyond(test or {}, value.n, sign * short, upper=claimed_above)
        outcome = "fail"
        reason = (f"{_bound_text(lo, hi, sign, threshold, fmt, 'high')} {fail_edge:{fmt}} "
                  f"(p = {p:.3f}, the other side)" + tie_text)
    else:
        outcome = "inconclusive"
        where = (f"cover {edge:{fmt}}" if edge == fail_edge else
                 f"neither clear {edge:{fmt}} nor fall short of {fail_edge:{fmt}}")
        reason = (f"the 95 % bounds [{threshold + min(sign * lo, sign * hi):{fmt}}, "
                  f"{threshold + max(sign * lo, sign * hi):{fmt}}] {where}" + tie_text)
    detail = _detail(value, threshold, margin, converged, horizon, test)
    detail.update(kind="above" if claimed_above else "below", tie=tie, edge=edge,
                  fail_edge=fail_edge)
    return _finish(name, outcome, reason, value, fmt, rule, headline, detail, converged,
                   horizon)


def _bound_text(lo: float, hi: float, sign: float, threshold: float, fmt: str,
                which: str) -> str:
    """The bound of the value (not of the claimed side's effect) that decided a check, and
    how it lies to the edge that follows: ``"95 % lower bound 0.023 above"``."""
    b = threshold + sign * (lo if which == "low" else hi)
    lower = (sign > 0) == (which == "low")
    return f"95 % {'lower' if lower else 'upper'} bound {b:{fmt}} {'above' if lower else 'below'}"


def above(name: str, value: OverSeeds | float, threshold: float = 0.0, *,
          margin: float = 0.0, tie: str = "inconclusive", converged: Convergence | None = None,
          horizon: str | None = None, headline: bool = False, fmt: str = ".3f") -> Check:
    """The check that ``value > threshold`` (e.g. a difference between two curves above 0),
    read with a practical ``margin``.

    The claim form is ``tie``'s: ``"inconclusive"`` (or ``"fail"``), a claim of "better"
    (superiority: the value exceeds ``threshold + margin``), or ``"pass"``, one of "at least
    as good" (non-inferiority: the value is not below ``threshold - margin``). Over seeds,
    with the seed-paired one-sided 95 % bounds of the mean (Student t, ``n - 1`` degrees of
    freedom, the seeds' spread taken as at least the value's ``resolution``): a pass when the
    lower bound lies beyond the claim's edge (``threshold + margin``, or ``- margin``); a fail
    when the upper bound falls short of ``threshold`` for "better" (shown on the other side)
    or of ``threshold - margin`` for "at least as good"; inconclusive otherwise (a difference
    under the margin is then called a tie), with one seed, or when ``converged`` says the
    compared curves had not flattened (unless ``horizon`` says why the claim is read at this
    horizon). Less spread never weakens a check. A value over seeds needs ``converged`` or
    ``horizon``. An exact number passes or fails outright against the same edges.

    Examples
    --------
    >>> S = tf.figures.OverSeeds
    >>> h = "a toy"
    >>> tf.figures.above("A beats B", S((0.02, 0.04, 0.03), (0, 1, 2)), horizon=h).outcome
    'pass'

    Better by a 1-point margin: +3 +/- 1 points passes, +1.05 +/- 0.05 does not (its lower
    bound is not beyond +1); "at least as good" passes a small loss only when its bound does:

    >>> above = tf.figures.above
    >>> above("A", S((0.02, 0.04, 0.03), (0, 1, 2)), margin=0.01, horizon=h).outcome
    'pass'
    >>> above("A", S((0.0100, 0.0105, 0.011), (0, 1, 2)), margin=0.01, horizon=h).outcome
    'inconclusive'
    >>> c = above("A", S((-0.039, 0.021, -0.009), (0, 1, 2)), margin=0.01, tie="pass",
    ...           horizon=h)
    >>> c.outcome, c.reason.split(" cover")[0]
    ('inconclusive', 'the 95 % bounds [-0.060, 0.042]')
    >>> above("A", S((-0.002, 0.001, 0.0), (0, 1, 2)), margin=0.01, tie="pass",
    ...       horizon=h).outcome
    'pass'

    Seeds that agree exactly are decided (against the value's resolution, here none):

    >>> above("A", S((-50.0, -50.0, -50.0), (0, 1, 2)), margin=1, horizon=h).outcome
    'fail'
    >>> above("A", S((0.5, 0.5, 0.5), (0, 1, 2)), margin=1, horizon=h).reason.split(";")[0]
    'the 95 % bounds [0.500, 0.500] neither clear 1.000 nor fall short of 0.000'
    >>> tf.figures.above("A beats B", S((0.02, -0.03, 0.01), (0, 1, 2)), horizon=h).outcome
    'inconclusive'
    >>> tf.figures.above("A beats B", -0.01).outcome  # an exact number
    'fail'
    """
    return _side(name, value, float(threshold), fmt, True, float(margin), tie, converged,
                 horizon, headline)


def below(name: str, value: OverSeeds | float, threshold: float = 0.0, *,
          margin: float = 0.0, tie: str = "inconclusive", converged: Convergence | None = None,
          horizon: str | None = None, headline: bool = False, fmt: str = ".3f") -> Check:
    """The check that ``value < threshold`` by a practical ``margin`` (see :func:`above`).

    Examples
    --------
    >>> S = tf.figures.OverSeeds
    >>> tf.figures.below("spread shrinks", S((-0.2, -0.1, -0.15), (0, 1, 2)),
    ...                  horizon="a toy").outcome
    'pass'
    """
    return _side(name, value, float(threshold), fmt, False, float(margin), tie, converged,
                 horizon, headline)


def within(name: str, value: OverSeeds | float, tolerance: float, *,
           converged: Convergence | None = None, horizon: str | None = None,
           headline: bool = False, fmt: str = ".3f") -> Check:
    """The check that ``|value| <= tolerance`` (e.g. two curves end within 2 points): a claim
    of "comparable", whose tolerance is its margin.

    Over seeds, two one-sided tests at 95 % (TOST): passes when the one-sided bounds of the
    mean (Student t, ``n - 1`` degrees of freedom, the seeds' spread taken as at least the
    value's ``resolution``) both lie in ``[-tolerance, tolerance]``, fails when both lie on
    one side outside it, inconclusive otherwise, with one seed, or on curves that had not
    flattened (see :func:`above`). An exact number passes or fails outright.

    Examples
    --------
    >>> S, h = tf.figures.OverSeeds, "a toy"
    >>> tf.figures.within("close", S((0.01, -0.005, 0.0), (0, 1, 2)), 0.02, horizon=h).outcome
    'pass'
    >>> tf.figures.within("close", S((0.05, 0.06, 0.04), (0, 1, 2)), 0.02, horizon=h).outcome
    'fail'
    """
    _number(value)
    if not tolerance >= 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance}")
    _needs_reading(value, converged, horizon, name)
    test: dict[str, Any] | None = None
    if isinstance(value, OverSeeds):
        test = _test(value, 0.0)
        m, lo, hi = value.mean, test["low"], test["high"]
    else:
        m = lo = hi = float(value)
    if math.isnan(m):
        outcome, reason = "inconclusive", "not measured (NaN)"
    elif isinstance(value, OverSeeds) and value.n < 2:
        outcome, reason = "inconclusive", "one seed: no measured spread"
    elif not isinstance(value, OverSeeds):
        outcome, reason = ("pass" if abs(m) <= tolerance else "fail"), "exact"
    elif math.isnan(lo):
        outcome, reason = "inconclusive", "a value is not finite: no bound"
    elif -tolerance <= lo and hi <= tolerance:
        outcome, reason = "pass", f"95 % one-sided bounds [{lo:{fmt}}, {hi:{fmt}}] inside"
    elif lo > tolerance or hi < -tolerance:
        outcome, reason = "fail", f"95 % one-sided bounds [{lo:{fmt}}, {hi:{fmt}}] outside"
    else:
        outcome = "inconclusive"
        reason = f"95 % one-sided bounds [{lo:{fmt}}, {hi:{fmt}}] cross the tolerance"
    detail = _detail(value, 0.0, float(tolerance), converged, horizon, test)
    detail["kind"] = "within"
    return _finish(name, outcome, reason, value, fmt, f"|x| <= {tolerance:{fmt}}", headline,
                   detail, converged, horizon)


def fact(name: str, ok: bool, measured: str = "", *, headline: bool = False) -> Check:
    """An exact part of a claim (no seeds: a graph's structure, a count): passes or fails.

    Examples
    --------
    >>> tf.figures.fact("every clique holds every class", True).outcome
    'pass'
    """
    return Check(name, "pass" if ok else "fail", measured or ("yes" if ok else "no"), "exact",
                 "exact", headline)


def headline_of(checks: Iterable[Check]) -> list[Check]:
    """The headline checks (those marked ``headline``; every check when none is marked)."""
    checks = list(checks)
    marked = [c for c in checks if c.headline]
    return marked or checks


def verdict(checks: Iterable[Check]) -> str:
    """The verdict of a claim, one of :data:`VERDICTS`: its headline checks' (:func:`headline_of`;
    the others are secondary and reported beside it).

    ``"holds"``: every headline check passes; ``"does not hold"``: one or more fail (for a
    headline of several parts, a conjunction such as "best in every column", a failed part
    refutes it whatever the others gave: the result says how many parts pass);
    ``"partly"``: some parts pass and the others are inconclusive; ``"inconclusive at this
    scale"``: none passes or fails.

    Examples
    --------
    >>> pas, fail = tf.figures.fact("a", True), tf.figures.fact("b", False)
    >>> und = tf.figures.above("c", tf.figures.OverSeeds((0.1,), (0,)), horizon="a toy")
    >>> [tf.figures.verdict(c) for c in ([pas], [fail, und], [pas, und], [und], [pas, fail])]
    ['holds', 'does not hold', 'partly', 'inconclusive at this scale', 'does not hold']
    >>> main = tf.figures.fact("central", True, headline=True)
    >>> tf.figures.verdict([main, fail])  # a failed secondary check leaves it standing
    'holds'
    """
    checks = list(checks)
    if not checks:
        raise ValueError("a verdict needs at least one check")
    bad = {c.outcome for c in checks} - {"pass", "fail", "inconclusive"}
    if bad:
        raise ValueError(f"unknown check outcome(s) {sorted(bad)}")
    outcomes = [c.outcome for c in headline_of(checks)]
    passed, failed = outcomes.count("pass"), outcomes.count("fail")
    if failed:
        return "does not hold"
    if passed == len(outcomes):
        return "holds"
    return "partly" if passed else "inconclusive at this scale"


def secondary(checks: Iterable[Check]) -> tuple[int, int]:
    """``(passed, total)`` of the secondary checks (those not in the headline).

    Examples
    --------
    >>> c = [tf.figures.fact("a", True, headline=True), tf.figures.fact("b", False),
    ...      tf.figures.fact("c", True)]
    >>> tf.figures.checks.secondary(c)
    (1, 2)
    """
    checks = list(checks)
    head = {id(c) for c in headline_of(checks)}
    rest = [c for c in checks if id(c) not in head]
    return sum(c.outcome == "pass" for c in rest), len(rest)


def _legacy_verdict(v: Mapping[str, Any]) -> str:
    """The verdict of a result JSON (results written before the four verdicts: ``holds``)."""
    if v.get("verdict") in VERDICTS:
        return str(v["verdict"])
    return {True: "holds", False: "does not hold", None: "partly"}.get(v.get("holds"), "partly")
