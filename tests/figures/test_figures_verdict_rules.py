"""The verdict rule's measured ties ("no effect") and the fidelity gate's own test (the exact
permutation p of Kendall's tau), against slow obvious references."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from topofl import figures
from topofl.figures.gate import _q_multinomial

S = figures.OverSeeds
H = "a toy horizon"


def _bounds(values: tuple[float, ...]) -> tuple[float, float]:
    """The one-sided 95 % bounds of the mean, by the textbook formula."""
    n = len(values)
    m, sd = float(np.mean(values)), float(np.std(values, ddof=1))
    q = float(stats.t.ppf(0.95, n - 1))
    return m - q * sd / math.sqrt(n), m + q * sd / math.sqrt(n)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-3, 3, allow_nan=False), min_size=2, max_size=6),
       st.sampled_from([0.5, 1.0, 2.0]), st.booleans())
def test_a_claim_of_better_is_a_tie_exactly_when_both_bounds_lie_within_the_margin(
        values: list[float], margin: float, claimed_above: bool) -> None:
    x = S(tuple(values), tuple(range(len(values))))
    side = figures.above if claimed_above else figures.below
    c = side("A vs B", x, margin=margin, horizon=H)
    lo, hi = _bounds(tuple(values))
    if not claimed_above:  # the claimed side's effect is -x
        lo, hi = -hi, -lo
    if lo > margin:
        want = "pass"
    elif hi < 0:
        want = "fail"
    elif -margin < lo and hi < margin:
        want = "no effect"
    else:
        want = "inconclusive"
    near = min(abs(lo - margin), abs(hi), abs(lo + margin), abs(hi - margin))
    if near > 1e-9:  # away from an edge, where the last bit of two formulas may disagree
        assert c.outcome == want, (c.outcome, want, lo, hi, c.reason)
    # "at least as good" never ties: its edges are pass and fail
    inferior = side("A vs B", x, margin=margin, tie="pass", horizon=H)
    assert inferior.outcome != "no effect"


def test_a_tie_is_a_finding_not_missing_evidence() -> None:
    tie = figures.above("A", S((0.002, -0.001, 0.001), (0, 1, 2)), margin=0.01, horizon=H)
    wide = figures.above("A", S((0.03, -0.02, 0.001), (0, 1, 2)), margin=0.01, horizon=H)
    assert tie.outcome == "no effect" and "measured tie" in tie.reason
    assert wide.outcome == "inconclusive"
    # no margin: nothing lies within it, so no tie
    assert figures.above("A", S((0.002, -0.001, 0.001), (0, 1, 2)),
                         horizon=H).outcome == "inconclusive"
    # an exact effect inside the margin
    assert figures.above("A", 0.004, margin=0.01).outcome == "no effect"
    assert figures.above("A", 0.004).outcome == "pass"


def test_a_tie_on_curves_still_moving_is_not_a_finding() -> None:
    moving = figures.Convergence((("A", S((0.05, 0.04, 0.06), (0, 1, 2))),), (15, 20), 0.01)
    c = figures.above("A", S((0.002, -0.001, 0.001), (0, 1, 2)), margin=0.01,
                      converged=moving)
    assert c.outcome == "inconclusive" and "would be no effect" in c.reason


def test_the_verdict_of_ties() -> None:
    p, f = figures.fact("p", True), figures.fact("f", False)
    t = figures.above("t", 0.004, margin=0.01)
    i = figures.above("i", S((0.1,), (0,)), horizon=H)
    assert figures.verdict([t]) == "no practical effect at this scale"
    assert figures.verdict([t, i]) == "inconclusive at this scale"  # a part undecided
    assert figures.verdict([t, p]) == "partly"
    assert figures.verdict([t, f]) == "does not hold"
    assert figures.verdict([i]) == "inconclusive at this scale"
    # a failed gate makes a tie inconclusive (the stand-in cannot decide), keeping what it was
    paper = {"A": 4.0, "B": 3.0, "C": 2.0, "D": 1.0}
    bad = figures.fidelity_gate("col", paper, {"A": 1.0, "B": 2.0, "C": 3.0, "D": 4.0},
                                tau_min=0.4, top_share=1 / 3)
    g = figures.gated(t, bad)
    assert g.outcome == "inconclusive" and "would be no effect" in g.reason


# ------------------------------------------------------------------ the gate's own test


def _p_by_enumeration(x: list[float], y: list[float]) -> float:
    """Every pairing, Kendall's tau-b by scipy: the share at least the observed tau."""
    obs = stats.kendalltau(x, y).statistic
    taus = [stats.kendalltau(x, list(p)).statistic for p in itertools.permutations(y)]
    return sum(t >= obs - 1e-12 for t in taus) / len(taus)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=4, max_size=6),
       st.lists(st.integers(0, 3), min_size=6, max_size=6))
def test_the_permutation_p_is_the_share_of_pairings_with_tau_at_least_the_observed(
        x: list[int], ys: list[int]) -> None:
    y = ys[: len(x)]
    if len(set(x)) < 2 or len(set(y)) < 2:
        return  # tau-b undefined
    p, how = figures.kendall_permutation_p(x, y)
    assert how == "exact (enumerated)"
    assert p == pytest.approx(_p_by_enumeration([float(v) for v in x], [float(v) for v in y]),
                              abs=1e-12)


@pytest.mark.parametrize("k", [10, 11, 12])
def test_the_q_multinomial_p_is_scipys_exact_p_without_ties(k: int) -> None:
    rng = np.random.default_rng(k)
    for _ in range(5):
        x, y = rng.permutation(k).astype(float), rng.permutation(k).astype(float)
        p, how = figures.kendall_permutation_p(x, y)
        want = stats.kendalltau(x, y, method="exact", alternative="greater").pvalue
        assert how == "exact (q-multinomial)" and p == pytest.approx(want, rel=1e-9)


def test_the_q_multinomial_counts_inversions_of_a_multiset() -> None:
    for counts in ([1, 1, 1, 1], [2, 1, 3], [3, 3], [4]):
        seq = [v for v, c in enumerate(counts) for _ in range(c)]
        arrangements = set(itertools.permutations(seq))
        inv = [sum(a[i] > a[j] for i in range(len(a)) for j in range(i + 1, len(a)))
               for a in arrangements]
        coef = _q_multinomial(counts)
        assert coef == [inv.count(d) for d in range(len(coef))]
        assert sum(coef) == math.factorial(len(seq)) // math.prod(
            math.factorial(c) for c in counts)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=5, max_size=8), st.booleans())
def test_ties_on_one_side_beyond_enumeration_are_exact(
        tied: list[int], swap: bool) -> None:
    """With enumeration switched off, the q-multinomial p (one side tied: targets never
    reached, infinite) equals every pairing's, enumerated."""
    if len(set(tied)) < 2:
        return
    k = len(tied)
    untied = list(np.random.default_rng(k).permutation(k).astype(float))
    y = [math.inf if v == 3 else float(v) for v in tied]
    x, y = (y, untied) if swap else (untied, y)
    want, _ = figures.kendall_permutation_p(x, y)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(figures.gate, "_ENUMERATE_UP_TO", 2)
        p, how = figures.kendall_permutation_p(x, y)
    assert how == "exact (q-multinomial)" and p == pytest.approx(want, rel=1e-12)


def test_ties_on_both_sides_beyond_enumeration_are_a_seeded_monte_carlo() -> None:
    x, y = [0, 0, 1, 2, 3, 4], [1, 1, 0, 2, 3, 5]
    exact, _ = figures.kendall_permutation_p(x, y)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(figures.gate, "_ENUMERATE_UP_TO", 2)
        mp.setattr(figures.gate, "_DRAWS", 20_000)
        p, how = figures.kendall_permutation_p(x, y, seed=3)
        again, _ = figures.kendall_permutation_p(x, y, seed=3)
    assert how == "Monte Carlo (20000 pairings, seed 3)" and p == again
    assert abs(p - exact) < 4 * math.sqrt(exact * (1 - exact) / 20_000) + 1e-4


def test_the_permutation_p_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="same length"):
        figures.kendall_permutation_p([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="at least 2"):
        figures.kendall_permutation_p([1], [1])
    with pytest.raises(ValueError, match="NaN"):
        figures.kendall_permutation_p([1, 2, 3], [1, float("nan"), 2])


def test_the_gate_needs_its_own_significance() -> None:
    paper = {c: float(10 - i) for i, c in enumerate("ABCDE")}
    two_swaps = {"A": 9.0, "B": 10.0, "C": 8.0, "D": 6.0, "E": 7.0}  # tau 0.6 over 5
    g = figures.fidelity_gate("col", paper, two_swaps, tau_min=0.4, top_share=1 / 3)
    assert g.tau == pytest.approx(0.6) and g.p_exact == pytest.approx(14 / 120)
    assert not g.passed and "permutation p = 0.117 (bar 0.10)" in g.describe()
    loose = figures.fidelity_gate("col", paper, two_swaps, tau_min=0.4, top_share=1 / 3,
                                  p_max=0.2)
    assert loose.passed
    assert figures.Gate.from_dict(loose.as_dict()) == loose
    assert loose.as_dict()["p_exact"] == pytest.approx(14 / 120)
    with pytest.raises(ValueError, match="p_max"):
        figures.fidelity_gate("col", paper, two_swaps, tau_min=0.4, top_share=1 / 3, p_max=0)


def test_a_third_is_a_third() -> None:
    assert [figures.gate.top_of(k, 1 / 3) for k in range(1, 13)] == [
        math.ceil(k / 3) for k in range(1, 13)]
    assert figures.gate.top_of(6, 0.34) == 3  # what 0.34 gave: not a third


def test_the_committed_gates_are_read_under_the_declared_bars() -> None:
    """Every Kendall gate recorded in a committed result: its tau and exact p as the page
    states them, and its verdict's checks gated by what the bars decide now."""
    import json

    root = Path(__file__).resolve().parents[2] / "paper_figures" / "results"
    bars = figures.gate_bars()
    seen = 0
    for js in sorted(root.glob("*.json")):
        v = json.loads(js.read_text(encoding="utf-8"))
        if not isinstance(v, dict):
            continue
        for d in v.get("gates", []):
            if "controls" not in d:
                continue
            g = figures.gate.rebar(figures.gate.gate_from_dict(d), figures.gate_bars(js.stem))
            assert d["passed"] == g.passed, js.stem
            assert d["p_exact"] == pytest.approx(g.p_exact, rel=1e-12), js.stem
            assert d["p_max"] == bars["p_max"] and d["top"] == g.top
            md = js.with_suffix(".md").read_text(encoding="utf-8")
            assert f"permutation p = {g.p_exact:.3f}" in md, js.stem
            seen += 1
    assert seen == 14  # 11, dfedpgp_table4's two columns (gated since 2026-11-25) and
    # dfedpgp_gate_fmnist's (2026-11-30)


def test_censored_values_propagate_and_never_make_a_tie() -> None:
    a = S((81.0, 40.0, 81.0), (0, 1, 2), 2.0, (True, False, True))
    b = S((81.0, 41.0, 80.0), (0, 1, 2), 2.0)
    d = a - b
    assert d.censored == (True, False, True) and (-d).censored == d.censored
    assert (2 * d).censored == d.censored and abs(d).censored == d.censored
    assert figures.measures.seedwise(min, a, b).censored == (True, False, True)
    c = figures.above("x", d, margin=5, horizon=H)
    assert c.outcome == "inconclusive" and c.detail and c.detail["censored"] == [True, False, True]
    # the same values measured (not bounds) tie
    assert figures.above("x", S(d.values, d.seeds, 2.0), margin=5, horizon=H).outcome == \
        "no effect"
    with pytest.raises(ValueError, match="one flag per seed"):
        S((1.0, 2.0), (0, 1), 0.0, (True,))


def test_reach_marks_the_seeds_that_never_reach() -> None:
    import topofl as tf

    rows = [{"run": f"seed={s}", "round": t, "client": None, "metric": "acc", "value": v}
            for s, curve in ((0, [0.2, 0.6, 0.9]), (1, [0.1, 0.2, 0.3]))
            for t, v in enumerate(curve)]
    r = tf.records.Records(rows=rows)
    got = figures.reach(r, 0.5, "acc")
    assert got.values == (2.0, 4.0) and got.censored == (False, True)
