"""Close calls and their replication: a decision on the edge stands only if fresh seeds agree.

A headline check over seeds that passes or fails is a **close call** when its decisive bound
(the one-sided 95 % bound that cleared the claim's edge: the lower bound of a pass of "better",
the upper bound of a fail ...) lies within one standard error of that edge
(:func:`close_call`): a result decided by a hair's breadth of one draw of seeds. Such a
decision stands only if **3 fresh seeds, declared before they run**, agree
(:func:`replicate`): the fresh seeds' mean effect has the same sign as the original seeds'
(for a comparable check: lies on the same side of the tolerance), and the pooled seeds still
decide the same way. Otherwise the check is *inconclusive (did not replicate)*; a close call
not yet replicated is *inconclusive (a close call, not yet replicated)*, what it would be kept
in its reason, and its page prices the 3 fresh seeds.

The fresh seeds are declared in ``paper_figures/claims.toml`` before they run, in the result's
``[<name>.replication]`` table (``fresh = [...]``, ``declared = "..."``: when, and what was
seen), and the result's configs then run them beside the original ones; a page shows both
sets (the check's reason gives the original seeds' bounds, the fresh seeds' mean and the
pooled bounds). A result whose seeds or rounds were added after its results were seen names
that **second look** on its verdict line (``second_look = [...]`` in its claims table).

The same rule decides a committed result again from its JSON alone
(:func:`topofl.figures.redecide.redecide`): :func:`rebuild` recomputes a check from its
recorded per-seed values, on all its seeds or on a subset.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from topofl.figures.checks import Check, Convergence, above, below, within
from topofl.figures.config import FRESH_SEEDS, FigureError, Replication
from topofl.figures.measures import OverSeeds

__all__ = ["Replication", "close_call", "replicate", "rebuild", "pooled_look", "FRESH_SEEDS"]

#: The reason a script gives a check it cannot decide on its stand-in (``_pfeddst.untestable``,
#: ``_dfedpgp.uncalibrated``): the prefix kept when the check is read again.
_MARKED = re.compile(r"^(untestable on this stand-in[^()]*\([^()]*\))")

#: The start of the reason of a close call not yet replicated, and of one that did not.
NOT_REPLICATED = "a close call, not yet replicated"
DID_NOT_REPLICATE = "did not replicate"

#: The kinds of check a replication reads, and the reasons of checks that no added seed
#: decides (a failed gate or calibration, curves still moving, a run short of the horizon).
_KINDS = ("above", "below", "within")
_UNDECIDABLE = ("inconclusive at this scale (the stand-in", "untestable", "not converged",
                "before the paper's horizon", "one seed", "a value is not finite",
                "not measured")


def _edge_gap(d: Mapping[str, Any], outcome: str) -> float | None:
    """How far the decisive bound of a decided check (its JSON detail ``d``) lies beyond the
    edge it cleared, in the check's units (``None`` without bounds)."""
    lo, hi = d.get("low"), d.get("high")
    if lo is None or hi is None:
        return None
    lo, hi = float(lo), float(hi)
    if d.get("kind") == "within":
        tol = float(d["margin"])
        return min(tol - hi, lo + tol) if outcome == "pass" else max(lo - tol, -tol - hi)
    sign = 1.0 if d.get("kind") == "above" else -1.0
    elo, ehi = (lo, hi) if sign > 0 else (-hi, -lo)  # the claimed side's effect
    thr = float(d["threshold"])
    if outcome == "pass":
        return elo - sign * (float(d["edge"]) - thr)
    return sign * (float(d["fail_edge"]) - thr) - ehi


def close_call(check: Check) -> float | None:
    """The distance, in standard errors, between the decisive bound of ``check`` and the edge
    it cleared, when it is a headline pass or fail over seeds that lies within one standard
    error of that edge; ``None`` otherwise (not a close call).

    Examples
    --------
    >>> S, h = tf.figures.OverSeeds, "a toy"
    >>> wide = tf.figures.above("A", S((0.03, 0.04, 0.035), (0, 1, 2)), margin=0.01,
    ...                         horizon=h, headline=True)
    >>> tf.figures.replication.close_call(wide) is None  # cleared by 5.7 standard errors
    True
    >>> edge = tf.figures.above("A", S((0.015, 0.025, 0.02), (0, 1, 2)), margin=0.01,
    ...                         horizon=h, headline=True)
    >>> edge.outcome, round(tf.figures.replication.close_call(edge), 2)
    ('pass', 0.54)
    """
    d = check.detail or {}
    if not check.headline or check.outcome not in ("pass", "fail") or not d.get("values"):
        return None
    gap, se = _edge_gap(d, check.outcome), d.get("se")
    if gap is None or not se:
        return None
    ratio = gap / float(se)
    return ratio if ratio < 1.0 else None


def _reading(d: Mapping[str, Any], name: str) -> Convergence:
    """The convergence reading of a check's JSON, rebuilt; it must say what it recorded."""
    gains = tuple((str(k), OverSeeds(tuple(g["values"]), tuple(g["seeds"])))
                  for k, g in d.get("gains", {}).items())
    span = tuple(d.get("span", (0, 0)))
    c = Convergence(gains, (int(span[0]), int(span[1])), float(d["tolerance"]),
                    str(d.get("of", "")), int(d.get("window", 0)),
                    tuple(str(s) for s in d.get("short", ())))
    if c.flat != bool(d["flat"]):
        raise FigureError(f"check {name!r}: its convergence reading does not rebuild (flat "
                          f"{d['flat']} recorded, {c.flat} from its gains)")
    return c


def _fmt_of(c: Mapping[str, Any]) -> str:
    """The number format the script used for the check (read back from its ``rule``)."""
    m = re.search(r"[-\d]\.(\d+)", str(c.get("rule", "")))
    return f".{len(m.group(1))}f" if m else ".3f"


def rebuild(c: Mapping[str, Any], step: float = 1.0, drop_horizon: str | None = None,
            seeds: Sequence[int] | None = None) -> Check | None:
    """The check of ``c`` (a result JSON's check) decided again under the current rule, or
    ``None`` to keep it (a fact, a check not run, one without per-seed values).

    ``step`` is the evaluation grid of a rounds-to-target check written before resolutions
    were recorded; a horizon starting with ``drop_horizon`` no longer exempts the check (its
    convergence reading decides); ``seeds`` keeps only those seeds' values (the original or
    the fresh set of a replication).
    """
    if "values" not in c or c.get("kind") not in ("above", "below", "within"):
        return None
    if drop_horizon and str(c.get("horizon", "")).startswith(drop_horizon) \
            and isinstance(c.get("convergence"), dict):
        c = {k: v for k, v in c.items() if k != "horizon"}
    if "not run" in str(c.get("reason", "")):
        return None
    res = c.get("resolution")
    if res is None:  # decided before resolutions were recorded: rounds to a target on a grid
        integral = all(float(v).is_integer() for v in c["values"])
        res = step if integral and "rounds" in c["name"] else 0.0
    censored = tuple(c.get("censored", ())) or (False,) * len(c["values"])
    keep = [i for i, s in enumerate(c["seeds"]) if seeds is None or s in set(seeds)]
    x = OverSeeds(tuple(c["values"][i] for i in keep), tuple(c["seeds"][i] for i in keep),
                  float(res), tuple(censored[i] for i in keep))
    reading: dict[str, Any] = {}
    if "horizon" in c:
        reading["horizon"] = c["horizon"]
    if isinstance(c.get("convergence"), dict):
        reading["converged"] = _reading(c["convergence"], c["name"])
    if not reading:
        raise FigureError(f"check {c['name']!r} has per-seed values but no convergence reading "
                          "or horizon to decide them")
    fmt = _fmt_of(c)
    if c["kind"] == "within":
        new = within(c["name"], x, float(c["margin"]), headline=bool(c["headline"]), fmt=fmt,
                     **reading)
    else:
        side = above if c["kind"] == "above" else below
        new = side(c["name"], x, float(c["threshold"]), margin=float(c["margin"]),
                   tie=str(c.get("tie", "inconclusive")), headline=bool(c["headline"]),
                   fmt=fmt, **reading)
    marked = _MARKED.match(str(c.get("reason", "")))
    if marked:
        why = marked.group(1)
        reason = (f"{why}; would be {new.outcome} ({new.reason})"
                  if new.outcome in ("pass", "fail", "no effect") else f"{why}; {new.reason}")
        new = Check(new.name, "inconclusive", new.measured, new.rule, reason, new.headline,
                    new.detail)
    # keep what the script measured and showed, when the seeds are the same
    measured = str(c.get("measured", new.measured)) if seeds is None else new.measured
    return Check(new.name, new.outcome, measured, new.rule, new.reason, new.headline,
                 new.detail)


def _effect_sign(d: Mapping[str, Any], mean: float) -> int:
    """The side of the claim's edge a mean lies on: for ``above``/``below`` the sign of the
    claimed side's effect (``mean - threshold``), for ``within`` +1 inside the tolerance and
    -1 outside."""
    if d.get("kind") == "within":
        return 1 if abs(mean) <= float(d["margin"]) else -1
    sign = 1.0 if d.get("kind") == "above" else -1.0
    effect = sign * (mean - float(d["threshold"]))
    return 1 if effect > 0 else -1 if effect < 0 else 0


def _with(check: Check, outcome: str, reason: str, **extra: Any) -> Check:
    return Check(check.name, outcome, check.measured, check.rule, reason, check.headline,
                 {**(check.detail or {}), **extra})


def replicate(check: Check, replication: Replication | None) -> Check:
    """``check`` under the replication rule (see the module): unchanged unless it is a
    headline pass or fail over seeds whose original seeds decide it within one standard error
    of its edge; then it stands only if ``replication``'s fresh seeds, among the check's
    seeds, agree.

    Examples
    --------
    A pass by a hair, then 3 fresh seeds (3, 4, 5) that agree, and 3 that do not:

    >>> S, h, r = tf.figures.OverSeeds, "a toy", tf.figures.replication
    >>> first = (0.015, 0.025, 0.02)
    >>> c = tf.figures.above("A", S(first, (0, 1, 2)), margin=0.01, horizon=h, headline=True)
    >>> r.replicate(c, None).outcome, r.replicate(c, None).reason.split(" (")[0]
    ('inconclusive', 'a close call, not yet replicated')
    >>> r.replicate(c, None).detail["close_call"]  # its bound, in standard errors past the edge
    0.5441
    >>> fresh = r.Replication((3, 4, 5), "before they ran")
    >>> agree = tf.figures.above("A", S(first + (0.02, 0.025, 0.021), (0, 1, 2, 3, 4, 5)),
    ...                          margin=0.01, horizon=h, headline=True)
    >>> r.replicate(agree, fresh).outcome
    'pass'
    >>> apart = tf.figures.above("A", S(first + (-0.01, 0.0, -0.02), (0, 1, 2, 3, 4, 5)),
    ...                          margin=0.01, horizon=h, headline=True)
    >>> r.replicate(apart, fresh).outcome, r.replicate(apart, fresh).reason.split(":")[0]
    ('inconclusive', 'did not replicate')
    """
    d = check.detail or {}
    if not check.headline or not d.get("values") or d.get("kind") not in _KINDS \
            or str(check.reason).startswith(_UNDECIDABLE):
        return check  # a fact, a secondary check, or one no seed decides (gate, rounds)
    seeds = [int(s) for s in d.get("seeds", [])]
    fresh = [s for s in (replication.fresh if replication else ()) if s in seeds]
    original = [s for s in seeds if s not in fresh]
    first = check if not fresh else rebuild(check.as_dict(), seeds=original)
    if first is None:
        return check
    gap = close_call(first)
    if gap is None:
        return check  # not a close call on the original seeds: every seed decides it
    if len(fresh) < FRESH_SEEDS:
        return _with(check, "inconclusive", (
            f"{NOT_REPLICATED} (its decisive bound lies {gap:.2f} standard errors beyond its "
            f"edge): it stands only if {FRESH_SEEDS} fresh seeds, declared before they run, "
            f"agree; would be {first.outcome} ({first.reason})"), close_call=round(gap, 4))
    fd = {**d, "values": [v for v, s in zip(d["values"], seeds) if s in fresh]}
    fresh_mean = sum(fd["values"]) / len(fd["values"])
    first_mean = sum(v for v, s in zip(d["values"], seeds) if s in original) / len(original)
    same = _effect_sign(d, fresh_mean) == _effect_sign(d, first_mean) != 0
    pooled = check.outcome == first.outcome
    record = {"close_call": round(gap, 4), "original_seeds": original, "fresh_seeds": fresh,
              "original_outcome": first.outcome, "fresh_mean": fresh_mean}
    text = (f"the original seeds {original} decided it by {gap:.2f} standard errors "
            f"({first.outcome}: {first.reason}); the fresh seeds {fresh} (declared before they "
            f"ran) have mean {fresh_mean:.4g}, the original {first_mean:.4g}; pooled over "
            f"{len(seeds)} seeds: {check.outcome} ({check.reason})")
    if same and pooled:
        return _with(check, check.outcome, f"replicated: {text}", **record)
    why = ("the fresh seeds' mean lies on the other side" if not same
           else "the pooled seeds do not decide it the same way")
    return _with(check, "inconclusive", f"{DID_NOT_REPLICATE}: {why}; {text}", **record)


def pooled_look(replication: Replication | None, seeds: Sequence[int]) -> list[str]:
    """The second look a replication also is: its fresh seeds, once they ran, are pooled into
    every check of the result, not only the close call's (``[]`` before they ran).

    Examples
    --------
    >>> tf.figures.replication.pooled_look(Replication((3, 4, 5), "x"), range(6))
    ['the fresh seeds [3, 4, 5] of the replication pooled into every other check (6 seeds)']
    >>> tf.figures.replication.pooled_look(Replication((3, 4, 5), "x"), range(3))
    []
    """
    seeds = list(seeds)
    if replication is None or not set(replication.fresh) <= set(seeds):
        return []
    return [f"the fresh seeds {list(replication.fresh)} of the replication pooled into every "
            f"other check ({len(seeds)} seeds)"]


def replicate_all(checks: Sequence[Check], replication: Replication | None) -> list[Check]:
    """Every check of a result under the replication rule (:func:`replicate`)."""
    return [replicate(c, replication) for c in checks]
