r"""Fidelity gates: a stand-in decides a comparison only after it reproduces the paper's controls.

A result that compares a tested method with the paper's other rows (its *controls*: every
method but the one tested) measures the tested method against those rows. If the stand-in
orders the controls unlike the paper (a full-model method first where the paper has it
last ...), a "does not hold" says more about the stand-in than about the method. The gate
(:func:`fidelity_gate`) compares the controls' order on the stand-in (their seed means) with
the paper's table before the tested method is looked at:

* **Kendall's tau** (tau-b, ties counted) between the paper's values and the stand-in's means
  over the controls, at least the declared bar ``tau``, and **significant** on its own: the
  exact one-sided permutation p of that tau (:func:`kendall_permutation_p`: every pairing of
  the stand-in's values with the paper's, ties kept) at most the declared ``p_max``, so that a
  bar cleared by chance over few controls does not let a stand-in decide;
* the paper's **best control** among the stand-in's top ``ceil(top_share x k)`` of the ``k``
  controls (``top_share`` read as the fraction it declares: ``0.3333333333333333`` is a third).

Both bars are declared once in ``paper_figures/claims.toml`` (``[gates]``, with their reason;
a result's own ``[<name>.gates]`` overrides them), not tuned on what a result gave. A gate needs
at least :data:`MIN_CONTROLS` controls; with fewer it cannot pass. A headline check that
compares the tested method with the controls (:func:`gated`) keeps its outcome where the gate
passes and reads *inconclusive at this scale (the stand-in does not reproduce the paper's
baselines: tau = ...)* where it fails, what it would have been kept in its reason.

**Ordinal gates.** A paper that gives curves, not numbers (D-Cliques), has no table of its
controls to rank; what its *text* states about them is the gate (:func:`ordinal_gate`): each
order the paper asserts between two controls (an :class:`Order`, with the sentence it comes
from: "without Clique Averaging, the use of momentum is actually detrimental") is checked on
the stand-in's seed means, and the gate passes when every one holds. Its bars (``far``,
``close``) are declared in ``claims.toml`` (``[gates.ordinal]``); :func:`gated` treats both
kinds alike.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

from topofl._utils.configfiles import read_config
from topofl.figures.checks import Check
from topofl.figures.config import FigureError, _presets_root
from topofl.figures.measures import OverSeeds

__all__ = ["MIN_CONTROLS", "RELATIONS", "Gate", "Order", "OrdinalGate", "AnyGate",
           "fidelity_gate", "ordinal_gate", "ordinal_bars", "gate_from_dict", "gate_bars",
           "gated", "kendall_permutation_p", "top_of", "rebar"]

#: The fewest controls a gate decides on (Kendall's tau over 3 items takes 4 values only).
MIN_CONTROLS = 4


#: Pairings enumerated one by one up to this many controls (9! = 362,880); beyond, the exact
#: distribution comes from the q-multinomial generating function when one side has no ties.
_ENUMERATE_UP_TO = 9
#: Monte Carlo draws (seeded) for more controls than that with ties on both sides.
_DRAWS = 200_000


def _signs(v: Any) -> Any:
    """``sign(v[..., j] - v[..., i])`` over the pairs ``i < j`` of the last axis."""
    import numpy as np

    i, j = np.triu_indices(v.shape[-1], 1)
    return np.sign(v[..., j] - v[..., i]).astype(np.int8)


def _q_multinomial(counts: Sequence[int]) -> list[int]:
    """Coefficients of the q-multinomial ``[n; m_1, ..., m_r]_q``: entry ``d`` counts the
    arrangements of a multiset with those multiplicities that have ``d`` inversions."""
    def q_factorial(m: int) -> list[int]:
        poly = [1]
        for j in range(1, m + 1):  # times 1 + q + ... + q^(j-1)
            out = [0] * (len(poly) + j - 1)
            for a, c in enumerate(poly):
                for b in range(j):
                    out[a + b] += c
            poly = out
        return poly

    num = q_factorial(sum(counts))
    for m in counts:  # exact polynomial division by [m]!_q (monic, integer coefficients)
        den = q_factorial(m)
        quo = [0] * (len(num) - len(den) + 1)
        rem = list(num)
        for a in range(len(quo) - 1, -1, -1):
            quo[a] = rem[a + len(den) - 1]
            for b, c in enumerate(den):
                rem[a + b] -= quo[a] * c
        num = quo
    return num


def kendall_permutation_p(x: Sequence[float], y: Sequence[float], *, seed: int = 0
                          ) -> tuple[float, str]:
    """The one-sided exact permutation p of Kendall's tau-b between ``x`` and ``y`` (positive
    association): the share of the ``k!`` pairings of ``y``'s values with ``x``'s whose tau is
    at least the observed one, ties kept where they are (tau-b's denominator is the same for
    every pairing, so the count compares Kendall's integer score ``S`` exactly).

    Up to 9 values every pairing is enumerated; beyond, when one side has no ties, the
    distribution of ``S`` is the q-multinomial generating function of the other side's
    inversions (exact); with ties on both sides and more than 9 values, a seeded Monte Carlo
    of 200,000 pairings (``seed``). Infinite values (a target never reached) rank as ties
    among themselves.

    Returns
    -------
    (p, method) : (float, str)
        ``method`` is ``"exact (enumerated)"``, ``"exact (q-multinomial)"`` or ``"Monte Carlo
        (200000 pairings, seed S)"``.

    Examples
    --------
    Five values in the same order: one pairing of 5! = 120 reaches tau = 1:

    >>> p, how = tf.figures.kendall_permutation_p([1, 2, 3, 4, 5], [10, 20, 30, 40, 50])
    >>> round(p * 120), how
    (1, 'exact (enumerated)')
    >>> round(tf.figures.kendall_permutation_p(range(12), range(12))[0] * 479001600)
    1
    """
    import numpy as np
    from scipy import stats

    if len(x) != len(y):
        raise ValueError(f"x and y must have the same length, got {len(x)} and {len(y)}")
    k = len(x)
    if k < 2:
        raise ValueError(f"a permutation test of tau needs at least 2 values, got {k}")
    rx = stats.rankdata(np.asarray(x, dtype=float))
    ry = stats.rankdata(np.asarray(y, dtype=float))
    if np.isnan(rx).any() or np.isnan(ry).any():
        raise ValueError("x and y must not hold NaN")
    sx = _signs(rx)
    s_obs = int(sx.astype(np.int64) @ _signs(ry).astype(np.int64))
    if k <= _ENUMERATE_UP_TO:
        from itertools import permutations

        perms = np.fromiter((v for p in permutations(ry) for v in p), dtype=float,
                            count=math.factorial(k) * k).reshape(-1, k)
        scores = _signs(perms).astype(np.int64) @ sx.astype(np.int64)
        return float(np.count_nonzero(scores >= s_obs) / len(scores)), "exact (enumerated)"
    untied_x = len(np.unique(rx)) == k
    if untied_x or len(np.unique(ry)) == k:
        # order the untied side; the other side's sequence is a uniformly random arrangement
        # of its multiset, whose inversions D give S = pairs - ties - 2 D
        other = ry if untied_x else rx
        counts = np.unique(other, return_counts=True)[1]
        pairs, ties = k * (k - 1) // 2, int(sum(c * (c - 1) // 2 for c in counts))
        coef = _q_multinomial([int(c) for c in counts])
        total = sum(coef)
        # S >= s_obs  <=>  D <= (pairs - ties - s_obs) / 2
        d_max = (pairs - ties - s_obs) // 2
        return (float(sum(coef[: max(d_max + 1, 0)])) / float(total),
                "exact (q-multinomial)")
    rng = np.random.default_rng(seed)
    draws = np.stack([rng.permutation(ry) for _ in range(_DRAWS)])
    scores = _signs(draws).astype(np.int64) @ sx.astype(np.int64)
    return (float((1 + np.count_nonzero(scores >= s_obs)) / (1 + _DRAWS)),
            f"Monte Carlo ({_DRAWS} pairings, seed {seed})")


def top_of(k: int, top_share: float) -> int:
    """How many of the stand-in's best of ``k`` controls the paper's best must be among:
    ``ceil(top_share x k)``, with ``top_share`` read as the fraction it declares (its nearest
    fraction with a denominator up to 100: ``0.3333333333333333`` is a third, so 6 controls
    give 2, not the 3 of ``ceil(2.0000000000000004)``); at least 1.

    Examples
    --------
    >>> [tf.figures.gate.top_of(k, 0.3333333333333333) for k in (3, 5, 6, 9, 11)]
    [1, 2, 2, 3, 4]
    >>> tf.figures.gate.top_of(6, 0.34)
    3
    """
    from fractions import Fraction

    return max(1, math.ceil(Fraction(float(top_share)).limit_denominator(100) * k))


@dataclass(frozen=True)
class Gate:
    """The fidelity gate of one stand-in (one column or setting of a result).

    ``controls`` are in the paper's order (best first); ``paper`` and ``standin`` hold their
    values (the stand-in's: seed means), ``tau`` Kendall's tau-b between the two and ``p`` its
    two-sided p (scipy's, recorded for reference), ``best_rank`` the rank (1 = best) on the
    stand-in of the paper's best control, ``top`` how many of the stand-in's best controls it
    must be among, ``tau_min`` the declared bar of tau and ``p_max`` that of its exact
    one-sided permutation p (:attr:`p_exact`); :attr:`passed` says whether every bar holds.
    """

    name: str
    controls: tuple[str, ...]
    paper: tuple[float, ...]
    standin: tuple[float, ...]
    tau: float
    p: float
    best_rank: int
    top: int
    tau_min: float
    higher_is_better: bool = True
    p_max: float = 0.10

    @property
    def p_exact(self) -> float:
        """The exact one-sided permutation p of :attr:`tau` (:func:`kendall_permutation_p`,
        on the values as the paper orders them: less-is-better metrics negated); NaN with
        fewer than 2 controls."""
        return self._permutation[0]

    @property
    def p_method(self) -> str:
        """How :attr:`p_exact` was computed (enumerated, q-multinomial, Monte Carlo)."""
        return self._permutation[1]

    @functools.cached_property
    def _permutation(self) -> tuple[float, str]:
        if len(self.controls) < 2:
            return math.nan, "none (fewer than 2 controls)"
        sign = 1.0 if self.higher_is_better else -1.0
        return kendall_permutation_p([sign * v for v in self.paper],
                                     [sign * v for v in self.standin])

    @property
    def passed(self) -> bool:
        """At least :data:`MIN_CONTROLS` controls, ``tau >= tau_min``, the exact permutation
        p of tau at most ``p_max`` and the paper's best control among the stand-in's top
        :attr:`top`."""
        return (len(self.controls) >= MIN_CONTROLS and math.isfinite(self.tau)
                and self.tau >= self.tau_min and self.p_exact <= self.p_max
                and self.best_rank <= self.top)

    def describe(self) -> str:
        """One line: passed or not, tau, where the paper's best control ranks."""
        k = len(self.controls)
        if k < MIN_CONTROLS:
            return (f"{self.name}: gate fails: {k} control(s) with the paper's values, fewer "
                    f"than {MIN_CONTROLS}")
        word = "passes" if self.passed else "fails"
        return (f"{self.name}: gate {word}: tau = {self.tau:+.2f} (bar {self.tau_min:+.2f}), "
                f"exact one-sided permutation p = {self.p_exact:.3f} (bar {self.p_max:.2f}) "
                f"over {k} controls; the paper's best control ({self.controls[0]}) ranks "
                f"{self.best_rank} of {k} here (bar: top {self.top})")

    def shortfall(self) -> str:
        """What a failed gate says in the reason of a check it covers (:func:`gated`)."""
        tau = "n/a" if not math.isfinite(self.tau) else f"{self.tau:+.2f}"
        p = "n/a" if not math.isfinite(self.p_exact) else f"{self.p_exact:.3f}"
        return (f"tau = {tau} (permutation p = {p}) over {len(self.controls)} controls, the "
                f"paper's best ranks {self.best_rank}")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Gate:
        """The gate of its JSON form (:meth:`as_dict`)."""
        controls = dict(d["controls"])
        nan = float("nan")
        return cls(str(d["name"]), tuple(controls),
                   tuple(float(v["paper"]) for v in controls.values()),
                   tuple(float(v["standin"]) for v in controls.values()),
                   nan if d.get("tau") is None else float(d["tau"]),
                   nan if d.get("p") is None else float(d["p"]), int(d["best_rank"]),
                   int(d["top"]), float(d["tau_min"]), bool(d.get("higher_is_better", True)),
                   float(d.get("p_max", 0.10)))

    def as_dict(self) -> dict[str, Any]:
        """The JSON form: every control's paper value and stand-in mean, tau, the bars."""
        return {"name": self.name, "passed": self.passed, "tau": _num(self.tau),
                "p": _num(self.p), "best_rank": self.best_rank, "top": self.top,
                "tau_min": self.tau_min, "higher_is_better": self.higher_is_better,
                "p_exact": _num(self.p_exact), "p_method": self.p_method,
                "p_max": self.p_max, "controls": {c: {"paper": p, "standin": s} for c, p, s in
                             zip(self.controls, self.paper, self.standin)}}


def _num(x: float) -> float | None:
    return None if not math.isfinite(x) else float(x)


def gate_bars(result: str | None = None, claims: Any = None) -> dict[str, Any]:
    """The declared bars ``{"tau", "top_share", "reason"}``: ``claims.toml``'s ``[gates]``,
    updated by ``[<result>.gates]``.

    Examples
    --------
    >>> bars = tf.figures.gate_bars()
    >>> bars["tau"], bars["top_share"]
    (0.4, 0.34)
    """
    path = claims if claims is not None else _presets_root() / "claims.toml"
    table = read_config(path)
    bars = dict(table.get("gates", {}))
    if result is not None and isinstance(table.get(result), Mapping):
        bars.update(table[result].get("gates", {}))
    for key in ("tau", "top_share", "p_max"):
        v = bars.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise FigureError(f"{path}: [gates] needs {key} = a number, got {v!r}")
    if not -1 <= bars["tau"] <= 1 or not 0 < bars["top_share"] <= 1 \
            or not 0 < bars["p_max"] <= 1:
        raise FigureError(f"{path}: [gates] needs tau in [-1, 1], top_share and p_max in "
                          f"(0, 1], got {bars['tau']!r}, {bars['top_share']!r} and "
                          f"{bars['p_max']!r}")
    return bars


def rebar(gate: AnyGate, bars: Mapping[str, Any]) -> AnyGate:
    """``gate`` (a Kendall gate recorded in a result) under the declared ``bars``
    (:func:`gate_bars`): its ``tau_min``, ``p_max`` and ``top`` (from ``top_share``) as they
    are declared now, its measured values unchanged; an ordinal gate as it is."""
    if not isinstance(gate, Gate):
        return gate
    return replace(gate, tau_min=float(bars["tau"]), p_max=float(bars["p_max"]),
                   top=top_of(len(gate.controls), float(bars["top_share"])))


def fidelity_gate(name: str, paper: Mapping[str, float | None],
                  standin: Mapping[str, float | OverSeeds], *, tau_min: float,
                  top_share: float, higher_is_better: bool = True,
                  p_max: float | None = None) -> Gate:
    """The gate of one stand-in: its controls' order against the paper's.

    Parameters
    ----------
    name : str
        What the gate is of (a column, a setting).
    paper : mapping of control to number or None
        The paper's values of the controls (the tested method left out by the caller);
        ``None`` for a cell the paper does not give (the control is then left out).
    standin : mapping of control to number or OverSeeds
        The stand-in's values (an OverSeeds counts by its mean); controls missing here are
        left out. An infinite value is allowed (rounds to a target never reached); NaN is
        not.
    tau_min, top_share : float
        The declared bars (:func:`gate_bars`).
    higher_is_better : bool, default True
        ``False`` for a metric where less is better (rounds to a target, a variance).
    p_max : float, optional
        The bar of tau's exact one-sided permutation p; default the declared one
        (:func:`gate_bars`'s ``p_max``).

    Returns
    -------
    Gate

    Examples
    --------
    The paper's order reproduced but for one swap among 6 controls (6 of the 720 pairings
    reach that tau):

    >>> paper = {"A": 85.0, "B": 84.0, "C": 80.0, "D": 70.0, "E": 60.0, "F": 55.0}
    >>> here = {"A": 66.0, "B": 67.0, "C": 60.0, "D": 55.0, "E": 50.0, "F": 45.0}
    >>> g = tf.figures.fidelity_gate("col", paper, here, tau_min=0.4, top_share=1 / 3)
    >>> round(g.tau, 2), round(g.p_exact * 720), g.best_rank, g.top, g.passed
    (0.87, 6, 2, 2, True)

    Among 5 controls, two swaps clear the tau bar but not the gate's own test (14 of the 120
    pairings reach tau = 0.6: p = 0.117 > 0.10):

    >>> two = {"A": 66.0, "B": 67.0, "C": 60.0, "D": 50.0, "E": 55.0}
    >>> g = tf.figures.fidelity_gate("col", {k: paper[k] for k in "ABCDE"}, two,
    ...                              tau_min=0.4, top_share=1 / 3)
    >>> round(g.tau, 2), round(g.p_exact, 3), g.passed
    (0.6, 0.117, False)

    A stand-in that puts the paper's last control first fails:

    >>> here = {"A": 60.0, "B": 61.0, "C": 62.0, "D": 63.0, "E": 90.0}
    >>> here = {"A": 60.0, "B": 61.0, "C": 62.0, "D": 63.0, "E": 64.0, "F": 90.0}
    >>> g = tf.figures.fidelity_gate("col", paper, here, tau_min=0.4, top_share=1 / 3)
    >>> round(g.tau, 2), g.best_rank, g.passed
    (-1.0, 6, False)
    """
    from scipy import stats

    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if not -1 <= float(tau_min) <= 1 or not 0 < float(top_share) <= 1:
        raise ValueError(f"tau_min must be in [-1, 1] and top_share in (0, 1], got {tau_min!r} "
                         f"and {top_share!r}")
    sign = 1.0 if higher_is_better else -1.0
    def mean(v: float | OverSeeds) -> float:
        return v.mean if isinstance(v, OverSeeds) else float(v)

    rows = [(c, float(p), mean(standin[c])) for c, p in paper.items()
            if p is not None and c in standin]
    rows.sort(key=lambda r: -sign * r[1])  # the paper's best first
    for c, p, s in rows:
        if math.isnan(p) or math.isnan(s):
            raise ValueError(f"control {c!r}: values must be numbers (infinite for "
                             f"'never'), got paper {p}, stand-in {s}")
    k = len(rows)
    if k >= 2:
        res = stats.kendalltau([r[1] for r in rows], [r[2] for r in rows])
        tau, p_value = float(res.statistic), float(res.pvalue)
    else:
        tau = p_value = math.nan
    here = sorted(rows, key=lambda r: -sign * r[2])
    best_rank = 1 + [r[0] for r in here].index(rows[0][0]) if rows else 0
    if p_max is None:
        p_max = float(gate_bars()["p_max"])
    if not 0 < float(p_max) <= 1:
        raise ValueError(f"p_max must be in (0, 1], got {p_max!r}")
    return Gate(name, tuple(r[0] for r in rows), tuple(r[1] for r in rows),
                tuple(r[2] for r in rows), tau, p_value, best_rank,
                top_of(k, float(top_share)), float(tau_min), higher_is_better, float(p_max))


#: The relations an :class:`Order` states between its two controls ``a`` and ``b`` (``d`` the
#: difference of their seed means, ``a - b``): ``"above"`` (``d > 0``), ``"far above"`` (``d >
#: far``), ``"at least"`` (``d >= -far``: "at the same speed or slower" read from ``b``'s side)
#: and ``"close"`` (``|d| <= close``).
RELATIONS = ("above", "far above", "at least", "close")


@dataclass(frozen=True)
class Order:
    """One order that a paper's text states between two of its controls, read on ``metric``.

    ``a`` and ``b`` are the controls' labels, ``relation`` one of :data:`RELATIONS`, ``metric``
    what is compared (``"final accuracy"``, ``"mean accuracy over the run"``...) and ``source``
    the paper's sentence it comes from (quoted in the gate's table).
    """

    a: str
    relation: str
    b: str
    metric: str
    source: str

    def __post_init__(self) -> None:
        for key in ("a", "b", "metric", "source"):
            if not isinstance(getattr(self, key), str) or not getattr(self, key):
                raise TypeError(f"Order.{key} must be a non-empty str, got "
                                f"{getattr(self, key)!r}")
        if self.relation not in RELATIONS:
            raise ValueError(f"Order.relation must be one of {RELATIONS}, got "
                             f"{self.relation!r}")
        if self.a == self.b:
            raise ValueError(f"an Order compares two controls, got {self.a!r} twice")

    def text(self) -> str:
        """The order in words: ``"a above b (metric)"``."""
        rel = {"at least": "at least as high as", "close": "close to"}.get(self.relation,
                                                                            self.relation)
        return f"{self.a} {rel} {self.b} ({self.metric})"


@dataclass(frozen=True)
class OrdinalGate:
    """The ordinal gate of one stand-in (one column or setting of a result): each
    :class:`Order` the paper's text states among its controls, with the stand-in's values of
    its two controls (``values[i] = (a, b)``, each an :class:`~topofl.figures.OverSeeds` or a
    seed mean), checked against the bars ``far`` and ``close`` (metric units; built by
    :func:`ordinal_gate`). :attr:`passed` says whether every order holds.
    """

    name: str
    orders: tuple[Order, ...]
    values: tuple[tuple[float | OverSeeds, float | OverSeeds], ...]
    far: float
    close: float

    def difference(self, i: int) -> float:
        """The seed mean of ``a`` minus that of ``b`` for order ``i``."""
        a, b = self.values[i]
        return _mean(a) - _mean(b)

    def holds(self, i: int) -> bool:
        """Whether order ``i`` holds on the stand-in (see :data:`RELATIONS`)."""
        d, rel = self.difference(i), self.orders[i].relation
        if rel == "above":
            return d > 0
        if rel == "far above":
            return d > self.far
        if rel == "at least":
            return d >= -self.far
        return abs(d) <= self.close

    @property
    def failed(self) -> list[int]:
        """The indices of the orders that do not hold."""
        return [i for i in range(len(self.orders)) if not self.holds(i)]

    @property
    def passed(self) -> bool:
        """At least one order, and every order holds."""
        return bool(self.orders) and not self.failed

    def _why(self, i: int) -> str:
        return f"{self.orders[i].text()}: {100 * self.difference(i):+.2f} points"

    def describe(self) -> str:
        """One line: passed or not, how many orders hold, the first that fails."""
        k = len(self.orders)
        if self.passed:
            return (f"{self.name}: gate passes: the {k} order(s) the paper states among its "
                    "controls hold on the stand-in")
        bad = self.failed
        return (f"{self.name}: gate fails: {len(bad)} of the {k} order(s) the paper states "
                f"among its controls fail on the stand-in ({'; '.join(map(self._why, bad))})")

    def shortfall(self) -> str:
        """What a failed gate says in the reason of a check it covers (:func:`gated`)."""
        bad = self.failed
        return (f"{len(bad)} of the {len(self.orders)} order(s) the paper states among its "
                f"controls fail: {'; '.join(map(self._why, bad))}")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> OrdinalGate:
        """The gate of its JSON form (:meth:`as_dict`); whether each order holds is decided
        again from the recorded values."""
        orders, values = [], []
        for o in d["orders"]:
            orders.append(Order(str(o["a"]), str(o["relation"]), str(o["b"]),
                                str(o["metric"]), str(o["source"])))
            pair = []
            for side in ("a", "b"):
                got = o[f"{side}_values"] if o.get(f"{side}_values") is not None else None
                pair.append(OverSeeds(tuple(got), tuple(o["seeds"])) if got is not None
                            else float(o[f"{side}_mean"]))
            values.append((pair[0], pair[1]))
        return cls(str(d["name"]), tuple(orders), tuple(values), float(d["far"]),
                   float(d["close"]))

    def as_dict(self) -> dict[str, Any]:
        """The JSON form: each order, its source, the stand-in's seed means (and per-seed
        values where given), whether it holds; the bars."""
        rows = []
        for i, (o, (a, b)) in enumerate(zip(self.orders, self.values)):
            row: dict[str, Any] = {"a": o.a, "relation": o.relation, "b": o.b,
                                   "metric": o.metric, "source": o.source,
                                   "a_mean": _mean(a), "b_mean": _mean(b),
                                   "holds": self.holds(i)}
            if isinstance(a, OverSeeds) and isinstance(b, OverSeeds):
                row.update(a_values=list(a.values), b_values=list(b.values),
                           seeds=list(a.seeds))
            rows.append(row)
        return {"kind": "ordinal", "name": self.name, "passed": self.passed,
                "far": self.far, "close": self.close, "orders": rows}


#: Either kind of fidelity gate.
AnyGate: TypeAlias = "Gate | OrdinalGate"


def _mean(v: float | OverSeeds) -> float:
    return v.mean if isinstance(v, OverSeeds) else float(v)


def gate_from_dict(d: Mapping[str, Any]) -> Gate | OrdinalGate:
    """A gate of either kind from its JSON form (``"kind": "ordinal"`` for an
    :class:`OrdinalGate`, else a :class:`Gate`)."""
    return OrdinalGate.from_dict(d) if d.get("kind") == "ordinal" else Gate.from_dict(d)


def ordinal_bars(claims: Any = None) -> dict[str, Any]:
    """The declared bars of the ordinal gate ``{"far", "close", "reason"}``:
    ``claims.toml``'s ``[gates.ordinal]``.

    Examples
    --------
    >>> bars = tf.figures.gate.ordinal_bars()
    >>> bars["far"], bars["close"]
    (0.01, 0.02)
    """
    path = claims if claims is not None else _presets_root() / "claims.toml"
    bars = dict(read_config(path).get("gates", {}).get("ordinal", {}))
    for key in ("far", "close"):
        v = bars.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
            raise FigureError(f"{path}: [gates.ordinal] needs {key} = a number >= 0, got {v!r}")
    return bars


def ordinal_gate(name: str, orders: Sequence[Order],
                 values: Mapping[tuple[str, str], float | OverSeeds], *, far: float,
                 close: float) -> OrdinalGate:
    """The ordinal gate of one stand-in: every order the paper's text states among its
    controls, checked on the stand-in's seed means.

    Parameters
    ----------
    name : str
        What the gate is of (a column, a setting).
    orders : sequence of Order
        The orders the paper states (at least one).
    values : mapping of (control, metric) to number or OverSeeds
        The stand-in's value of each control on each metric an order reads (an OverSeeds
        counts by its mean, its per-seed values recorded); every order's two values are
        needed.
    far, close : float
        The declared bars (:func:`ordinal_bars`), in the metric's units.

    Returns
    -------
    OrdinalGate

    Examples
    --------
    "Without Clique Averaging, momentum is detrimental": reproduced, then reversed.

    >>> o = tf.figures.gate.Order("no momentum", "above", "momentum", "final accuracy",
    ...                      "the use of momentum is actually detrimental")
    >>> S = tf.figures.OverSeeds
    >>> ok = {("no momentum", "final accuracy"): S((0.70, 0.71, 0.69), (0, 1, 2)),
    ...       ("momentum", "final accuracy"): S((0.60, 0.62, 0.61), (0, 1, 2))}
    >>> tf.figures.gate.ordinal_gate("CIFAR-10", [o], ok, far=0.01, close=0.02).passed
    True
    >>> flip = {("no momentum", "final accuracy"): 0.63, ("momentum", "final accuracy"): 0.69}
    >>> g = tf.figures.gate.ordinal_gate("CIFAR-10", [o], flip, far=0.01, close=0.02)
    >>> g.passed
    False
    >>> g.shortfall().split(": ", 1)[1]
    'no momentum above momentum (final accuracy): -6.00 points'
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    orders = tuple(orders)
    if not orders:
        raise ValueError("an ordinal gate needs at least one order; a figure whose text states "
                         "no order among its controls is not gated")
    if not all(isinstance(o, Order) for o in orders):
        raise TypeError("orders must be Order instances")
    for key, bar in (("far", far), ("close", close)):
        if isinstance(bar, bool) or not isinstance(bar, (int, float)) or not bar >= 0:
            raise ValueError(f"{key} must be a number >= 0, got {bar!r}")
    pairs = []
    for o in orders:
        pair = []
        for side in (o.a, o.b):
            if (side, o.metric) not in values:
                raise ValueError(f"no stand-in value of {side!r} on {o.metric!r} (order "
                                 f"{o.text()!r}); have {sorted(values)}")
            v = values[(side, o.metric)]
            if isinstance(v, bool) or not isinstance(v, (int, float, OverSeeds)):
                raise TypeError(f"the value of {side!r} on {o.metric!r} must be a number or an "
                                f"OverSeeds, got {type(v).__name__}")
            if not math.isfinite(_mean(v)):
                raise ValueError(f"the value of {side!r} on {o.metric!r} must be finite, got "
                                 f"{_mean(v)}")
            pair.append(v)
        a, b = pair
        if isinstance(a, OverSeeds) and isinstance(b, OverSeeds) and a.seeds != b.seeds:
            raise ValueError(f"order {o.text()!r}: values of seeds {a.seeds} and {b.seeds}")
        pairs.append((a, b))
    return OrdinalGate(name, orders, tuple(pairs), float(far), float(close))


def gated(check: Check, gate: AnyGate) -> Check:
    """``check`` (a comparison of the tested method with the controls) as the gate allows:
    unchanged when the gate passes, else *inconclusive*, what it would have been kept in its
    reason.

    Examples
    --------
    >>> paper = {"A": 85.0, "B": 84.0, "C": 80.0, "D": 70.0}
    >>> bad = tf.figures.fidelity_gate("col", paper, {"A": 1.0, "B": 2.0, "C": 3.0, "D": 4.0},
    ...                                tau_min=0.4, top_share=0.34)
    >>> c = tf.figures.gated(tf.figures.fact("X beats every control", False), bad)
    >>> c.outcome, c.reason.split(" (")[0]
    ('inconclusive', 'inconclusive at this scale')
    """
    if gate.passed:
        return check
    why = (f"inconclusive at this scale (the stand-in does not reproduce the paper's "
           f"baselines: {gate.shortfall()})")
    was = (f"; would be {check.outcome} ({check.reason})"
           if check.outcome in ("pass", "fail", "no effect") else f"; {check.reason}")
    detail = dict(check.detail or {})
    detail["gate"] = gate.name
    return replace(check, outcome="inconclusive", reason=why + was, detail=detail)
