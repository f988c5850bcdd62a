r"""Quantities measured over seeds: :class:`OverSeeds` and the measures a figure script takes
seed by seed from a cell's records.

A figure script measures the quantities of a paper's claim once per seed (:func:`per_seed`,
and its shorthands :func:`final`, :func:`mean_over_rounds`, :func:`final_spread` and
:func:`reach`; :func:`seedwise` combines several); arithmetic between two :class:`OverSeeds`
of the same seeds pairs them seed by seed, so a difference of two curves keeps the spread
that decides a comparison (:mod:`topofl.figures.checks` turns them into checks).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from topofl import data

__all__ = ["OverSeeds", "per_seed", "seedwise", "final", "mean_over_rounds", "final_spread",
           "reach", "samples_per_client"]


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

    ``censored`` marks the seeds whose value is a bound, not a measurement (rounds to a target
    never reached within the run: :func:`reach`); a value computed from a censored one is
    censored (seed by seed). A check never calls a comparison of censored values a measured
    tie (:func:`~topofl.figures.above`).

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
    censored: tuple[bool, ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.values or len(self.values) != len(self.seeds):
            raise ValueError(f"OverSeeds needs one value per seed (at least one), got "
                             f"{len(self.values)} values for seeds {self.seeds}")
        cens = tuple(bool(c) for c in self.censored) or (False,) * len(self.values)
        if len(cens) != len(self.values):
            raise ValueError(f"censored needs one flag per seed, got {len(cens)} for "
                             f"{len(self.values)} values")
        object.__setattr__(self, "censored", cens)
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
                             self.seeds, res,
                             tuple(a or b for a, b in zip(self.censored, other.censored)))
        if isinstance(other, (int, float)) and not isinstance(other, bool):
            res = self.resolution * (1.0 if scale is None else abs(scale(float(other))))
            return OverSeeds(tuple(op(a, float(other)) for a in self.values), self.seeds,
                             res if math.isfinite(res) else 0.0, self.censored)
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
        return OverSeeds(tuple(-v for v in self.values), self.seeds, self.resolution,
                         self.censored)

    def __abs__(self) -> OverSeeds:
        return OverSeeds(tuple(abs(v) for v in self.values), self.seeds, self.resolution,
                         self.censored)

    @property
    def any_censored(self) -> bool:
        """Whether a seed's value is a bound, not a measurement."""
        return any(self.censored)

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
                     max(v.resolution for v in values),
                     tuple(any(cs) for cs in zip(*(v.censored for v in values))))


def _metric(records: Any, metric: str) -> str:
    return f"{metric}_mean" if f"{metric}_mean" in records.metrics else metric


def _over_series(records: Any, metric: str, reduce: Callable[[np.ndarray], Any]) -> OverSeeds:
    """``reduce`` of the values of ``metric`` (``<metric>_mean`` when recorded), per seed."""
    name = _metric(records, metric)
    return per_seed(records, lambda one: reduce(one.series(name)[1]))


def final(records: Any, metric: str = "test_acc", *, last: int = 1) -> OverSeeds:
    """The last recorded value of ``metric`` (``<metric>_mean`` when recorded), per seed; with
    ``last`` > 1, the mean of its last ``last`` evaluations (a final accuracy read off a curve
    that oscillates from one evaluation to the next, e.g. a few models trained on one class a
    round).

    Examples
    --------
    >>> r = tf.records.Records(rows=[{"run": "a", "round": t, "client": None,
    ...                               "metric": "acc_mean", "value": v}
    ...                              for t, v in enumerate([0.2, 0.6, 0.7])])
    >>> tf.figures.final(r, "acc").values, tf.figures.final(r, "acc", last=2).values
    ((0.7,), (0.65,))
    >>> tf.figures.final(r, "acc", last=4)
    Traceback (most recent call last):
    ...
    ValueError: final(last=4): only 3 evaluations recorded
    """
    if isinstance(last, bool) or not isinstance(last, int) or last < 1:
        raise ValueError(f"final(last=...) expects an int >= 1, found {last!r}")

    def reduce(values: np.ndarray) -> float:
        if len(values) < last:
            raise ValueError(f"final(last={last}): only {len(values)} evaluations recorded")
        return values[-1] if last == 1 else float(np.mean(values[-last:]))

    return _over_series(records, metric, reduce)


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
    lower bound of its true count, so a comparison it decides stays true; such a seed is
    ``censored``). Its ``resolution`` is the evaluation grid: the largest step between two
    evaluated rounds.

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
    never = per_seed(records, lambda rec: float(rec.rounds_to(target, metric) is None))
    steps = [float(np.diff(np.asarray(records.series(metric, run=r)[0], dtype=float)).max())
             for r in records.runs if len(records.series(metric, run=r)[0]) > 1]
    return OverSeeds(got.values, got.seeds, max(steps, default=1.0),
                     tuple(v > 0 for v in never.values))


def samples_per_client(config: Mapping[str, Any]) -> float:
    """The mean number of training samples a client holds in a run (train set / clients).

    Examples
    --------
    >>> round(tf.figures.samples_per_client({"data": "digits", "n_clients": 100}), 2)
    14.42
    """
    return float(data.load(str(config["data"])).x_train.shape[0] / int(config["n_clients"]))
