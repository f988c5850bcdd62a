r"""The checks of a claim and its verdict: the rule that decides them.

A figure script measures the claim's quantities seed by seed (:class:`OverSeeds`, from
:func:`per_seed` and its shorthands :func:`final`, :func:`mean_over_rounds`,
:func:`final_spread` and :func:`reach`: :mod:`topofl.figures.measures`), turns them into
:class:`Check`\ s (:func:`above`, :func:`below`, :func:`within`, :func:`fact`) and decides the
claim (:func:`verdict`). Whether the compared curves flattened is read from the seed-mean
curve of a cell (:func:`mean_curve`, :func:`late_gain`, :func:`convergence`:
:mod:`topofl.figures.flatness`). This module owns the seed-paired tests, the checks and the
verdict; the flatness readings are also reachable here, where they were first documented
(``topofl.figures.checks.late_gain``).

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
  on the other side falls short of ``t`` (shown on the other side); between the two it is
  **no effect** when both bounds lie within ``t ± δ`` (a *measured tie*: the seeds place the
  effect confidently inside the margin, and more seeds only narrow the bounds around it) and
  *inconclusive* otherwise (the seeds' spread covers the margin: too little evidence, which
  more seeds or longer runs could decide); a claim of "at least as good"
  (non-inferiority, ``tie="pass"``) passes when the 95 % lower bound of ``x - t`` lies above
  ``-δ`` and fails when the upper bound lies below it;
* :func:`within` passes when both one-sided 95 % bounds lie within the tolerance (two
  one-sided tests), fails when both lie outside on one side;
* less spread never weakens a check: the bounds only narrow as the seeds agree;
* a check on curves that had not flattened (:func:`convergence`: a compared curve still moved
  by the margin or more over its window, the last quarter of the result's horizon in rounds
  of the paper's local work, or its runs were shorter than that window) is *inconclusive
  (not converged)*, whatever its bounds say, unless the claim is read at this horizon
  (``horizon=`` says why: the paper's own rounds, a speed over the first rounds, rounds to a
  target);
* a check over seeds on a run that stopped before the paper's rounds is *inconclusive
  (before the paper's horizon)* (:func:`at_horizon`), whatever it would be: the paper's claim
  is about its whole run, and curves separate, close or cross after the rounds run;
* one seed has no measured spread: inconclusive (every ``--quick`` result).

Exact quantities (a graph's structure, statistics over a fixed set of constructions) are plain
numbers or :func:`fact`\ s and pass or fail. Each result names its **headline** check (the
paper's central statement); the verdict (:func:`verdict`) is the headline's: **holds** (every
part passes), **does not hold** (a part fails: a conjunction with one failed part is
refuted, and the result says how many parts pass), **no practical effect at this scale**
(every part is a measured tie: the claimed effect is absent at this scale) or **inconclusive
at this scale** (too little evidence: a part's bounds cover its margin, its curves still
moved, or a close call was not replicated), with "k of n secondary checks pass" beside it;
**partly** for a headline of several parts of which some pass and the others are ties or
inconclusive. A pass or fail whose decisive bound lies within one standard error of its edge
stands only if 3 fresh seeds, declared before they run, agree
(:mod:`topofl.figures.replication`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from topofl.figures.flatness import Convergence, convergence, late_gain, mean_curve
from topofl.figures.measures import OverSeeds

__all__ = ["VERDICTS", "OUTCOMES", "Check", "above", "below", "within", "fact", "verdict",
           "headline_of", "secondary", "mean_curve", "late_gain", "Convergence", "convergence",
           "LEVEL", "RULE"]


# ------------------------------------------------------------------------------ verdicts


#: The four verdicts, in the order the index counts them.
VERDICTS = ("holds", "partly", "does not hold", "no practical effect at this scale",
            "inconclusive at this scale")

#: The outcomes of a check: ``"no effect"`` is a claim of "better" whose effect the seeds place
#: confidently within ± its practical margin (a measured tie: no added seed moves it to a
#: pass), ``"inconclusive"`` one the evidence cannot decide.
OUTCOMES = ("pass", "fail", "no effect", "inconclusive")

#: The one-sided level of every check's bounds (:func:`above`, :func:`below`, :func:`within`).
LEVEL = 0.95

#: The rule's name, recorded in every result (results of the older rules have another or none).
RULE = ("paired one-sided 95 % bounds against the claim's margin (superiority beyond it, "
        "non-inferiority within it; a claimed superiority with both bounds within ± the "
        "margin is no practical effect, a verdict only when every headline part is such a "
        "tie), spread at least the metric's resolution, at convergence and at the paper's "
        "horizon; a decision within one standard error of its edge stands only if 3 fresh "
        "seeds, declared before they run, agree")


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
        if value.any_censored:
            out["censored"] = list(value.censored)
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
            and outcome in ("pass", "fail", "no effect"):
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
        elif not inferior and margin > 0:
            outcome = "no effect"
            reason = (f"exact: a measured tie, the effect {effect:{fmt}} within the margin "
                      f"{margin:{fmt}}: no practical effect")
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
    elif not inferior and margin > 0 and -margin < lo and hi < margin \
            and not value.any_censored:
        outcome = "no effect"
        a, b = threshold + min(sign * lo, sign * hi), threshold + max(sign * lo, sign * hi)
        reason = (f"a measured tie: the 95 % bounds [{a:{fmt}}, {b:{fmt}}] lie within ± the margin "
                  f"{margin:{fmt}} of {threshold:{fmt}}: no practical effect (more seeds narrow "
                  "the bounds, they do not move them to a pass)")
    else:
        outcome = "inconclusive"
        where = (f"cover {edge:{fmt}}" if edge == fail_edge else
                 f"neither clear {edge:{fmt}} nor fall short of {fail_edge:{fmt}}")
        reason = (f"the 95 % bounds [{threshold + min(sign * lo, sign * hi):{fmt}}, "
                  f"{threshold + max(sign * lo, sign * hi):{fmt}}] {where}" + tie_text)
        if isinstance(value, OverSeeds) and value.any_censored:
            reason += (f"; {sum(value.censored)} of {value.n} seeds' values are bounds (the "
                       "target never reached within the run), so no tie is measured")
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
    or of ``threshold - margin`` for "at least as good"; for "better", ``"no effect"`` when
    both bounds lie within ``threshold ± margin`` (a measured tie); inconclusive otherwise,
    with one seed, or when ``converged`` says the
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

    Seeds that agree exactly are decided (against the value's resolution, here none); an
    effect the seeds place within ± the margin is a measured tie, not missing evidence:

    >>> above("A", S((-50.0, -50.0, -50.0), (0, 1, 2)), margin=1, horizon=h).outcome
    'fail'
    >>> c = above("A", S((0.5, 0.5, 0.5), (0, 1, 2)), margin=1, horizon=h)
    >>> c.outcome, c.reason.split(" lie")[0]
    ('no effect', 'a measured tie: the 95 % bounds [0.500, 0.500]')
    >>> above("A", S((0.5, -0.3, 1.6), (0, 1, 2)), margin=1, horizon=h).outcome  # too wide
    'inconclusive'
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


def short_of_horizon(rounds: Mapping[str, Any] | None) -> tuple[int, int] | None:
    """``(rounds run, the paper's rounds)`` of the shortest panel of a result that stopped
    before the paper's horizon (``rounds`` as a result records it: ``{"run": [...], "paper":
    [...]}``, one paper value standing for every panel); ``None`` when every panel reached it
    or the paper's rounds are not known.

    Examples
    --------
    >>> short = tf.figures.checks.short_of_horizon
    >>> short({"run": [18, 20], "paper": [48, 50]}), short({"run": [98], "paper": [98]})
    ((18, 48), None)
    >>> short({"run": [80, 160], "paper": [500]}), short({"run": [2000], "paper": []})
    ((80, 500), None)
    """
    if not rounds:
        return None
    run = [int(r) for r in rounds.get("run") or []]
    paper = [int(p) for p in rounds.get("paper") or []]
    if not run or not paper:
        return None
    if len(paper) == 1:
        paper = paper * len(run)
    pairs = [(r, p) for r, p in zip(run, paper) if r < p]
    return min(pairs, key=lambda rp: rp[0] / rp[1]) if pairs else None


def at_horizon(check: Check, rounds: Mapping[str, Any] | None) -> Check:
    """``check`` as the rule reads it at the paper's horizon: a check over seeds decided (a
    pass, a fail or a tie) on a run that stopped before the paper's rounds is *inconclusive
    (before the paper's horizon)*, what it would be kept in its reason; exact checks (no
    seeds) and undecided ones are unchanged. Curves can separate, close or cross after the
    rounds run, so a claim about the paper's run is not decided on its first fraction.

    Examples
    --------
    >>> c = tf.figures.above("A", tf.figures.OverSeeds((2.0, 3.0, 4.0), (0, 1, 2)),
    ...                      horizon="a speed over the first 100 rounds")
    >>> late = tf.figures.checks.at_horizon(c, {"run": [100], "paper": [500]})
    >>> late.outcome, late.reason.split(":")[0]
    ('inconclusive', "before the paper's horizon (round 100 of its 500)")
    >>> tf.figures.checks.at_horizon(c, {"run": [500], "paper": [500]}).outcome
    'pass'
    """
    short = short_of_horizon(rounds)
    if short is None or check.outcome not in ("pass", "fail", "no effect") \
            or not (check.detail or {}).get("values"):
        return check
    ran, paper = short
    reason = (f"before the paper's horizon (round {ran} of its {paper}): would be "
              f"{check.outcome} ({check.reason})")
    return Check(check.name, "inconclusive", check.measured, check.rule, reason,
                 check.headline, check.detail)


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
    ``"partly"``: some parts pass and the others are ties or inconclusive; ``"no practical
    effect at this scale"``: every part is a measured tie (``"no effect"``), none undecided;
    ``"inconclusive at this scale"``: none passes or fails, and a part is undecided (a tie
    beside an undecided part is not an absence of effect: that part may still show one).

    Examples
    --------
    >>> pas, fail = tf.figures.fact("a", True), tf.figures.fact("b", False)
    >>> und = tf.figures.above("c", tf.figures.OverSeeds((0.1,), (0,)), horizon="a toy")
    >>> [tf.figures.verdict(c) for c in ([pas], [fail, und], [pas, und], [und], [pas, fail])]
    ['holds', 'does not hold', 'partly', 'inconclusive at this scale', 'does not hold']
    >>> tie = tf.figures.above("d", 0.2, margin=1.0)  # an exact effect inside the margin
    >>> tie.outcome, tf.figures.verdict([tie]), tf.figures.verdict([tie, pas])
    ('no effect', 'no practical effect at this scale', 'partly')
    >>> tf.figures.verdict([tie, und])  # an undecided part: no absence measured
    'inconclusive at this scale'
    >>> main = tf.figures.fact("central", True, headline=True)
    >>> tf.figures.verdict([main, fail])  # a failed secondary check leaves it standing
    'holds'
    """
    checks = list(checks)
    if not checks:
        raise ValueError("a verdict needs at least one check")
    bad = {c.outcome for c in checks} - set(OUTCOMES)
    if bad:
        raise ValueError(f"unknown check outcome(s) {sorted(bad)}")
    outcomes = [c.outcome for c in headline_of(checks)]
    passed, failed = outcomes.count("pass"), outcomes.count("fail")
    if failed:
        return "does not hold"
    if passed == len(outcomes):
        return "holds"
    if passed:
        return "partly"
    if "no effect" in outcomes and "inconclusive" not in outcomes:
        return "no practical effect at this scale"
    return "inconclusive at this scale"


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
