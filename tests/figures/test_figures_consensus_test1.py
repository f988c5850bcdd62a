"""paper_figures/fig_field_consensus_test1.py, the null-cascade paper's Test 1 (issue 59): the
committed page's numbers are what the script computes, its checks read the paper's orderings
right (a made-up result that breaks one fails it), and the committed result is complete and
decides again to itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import topofl as tf
from tests._figures import script, verdict
from topofl.figures.redecide import redecide

NAME = "field_consensus_test1"
RESULTS = Path(__file__).resolve().parents[2] / "paper_figures" / "results"


@pytest.fixture(scope="module")
def mod() -> dict[str, Any]:
    return script(NAME)


@pytest.fixture(scope="module")
def res15(mod: dict[str, Any]) -> dict[str, Any]:
    """(15, 2) at the default scale: 100 trials, 30 rounds (about 0.5 s)."""
    out: dict[str, Any] = mod["measure"](15, 2, mod["TRIALS"], mod["ROUNDS"])
    return out


def _copy(res: dict[str, Any]) -> dict[str, Any]:
    out = dict(res, graphs={lab: dict(g, errors=np.array(g["errors"]))
                            for lab, g in res["graphs"].items()})
    return out


def test_the_setting_is_the_papers(mod: dict[str, Any]) -> None:
    assert mod["CONFIGS"] == ((15, 2), (17, 2), (30, 2)) and mod["TRIALS"] == 100
    assert mod["LABELS"] == ("C1", "C2", "C3", "C4", "P1", "P2")
    assert tf.figures.margin(NAME, "relative") == 0.5
    # Table 2's periods are topofl's periods of the same graphs
    for (n, k), tau in mod["PAPER_TAU"]["P2"].items():
        assert tf.topologies.null_cascade(n, k).period == tau
    for (n, k), tau in mod["PAPER_TAU"]["C2"].items():
        assert tf.topologies.base_graph(n, k).period == tau


def test_every_graph_starts_from_the_same_vectors_and_keeps_the_average(
        mod: dict[str, Any]) -> None:
    d = {lab: mod["consensus_errors"](lab, 15, 2, 5, 4) for lab in mod["LABELS"]}
    for lab in mod["LABELS"]:
        assert d[lab].shape == (5, 5)
        np.testing.assert_array_equal(d[lab][0], d["C1"][0])  # the same x(0) per trial
    # by hand: Delta(0) of trial s is the population variance of column s of x(0)
    X = np.random.default_rng(0).standard_normal((15, 5))
    np.testing.assert_allclose(d["C1"][0], X.var(axis=0), rtol=1e-14)
    # the ring's first round by hand: x <- (x_{i-1} + x_i + x_{i+1}) / 3
    Y = (np.roll(X, 1, axis=0) + X + np.roll(X, -1, axis=0)) / 3
    np.testing.assert_allclose(d["C1"][1], Y.var(axis=0), rtol=1e-12)


def test_the_committed_numbers_are_recomputed(mod: dict[str, Any],
                                              res15: dict[str, Any]) -> None:
    md = (RESULTS / f"{NAME}.md").read_text(encoding="utf-8")
    table = mod["_tables"]([res15], mod["ROUNDS"])["(15, 2): mean Delta(t) over the trials"]
    for row in table.itertuples(index=False):
        assert "| " + " | ".join(map(str, row)) + " |" in md, row[0]
    g = res15["graphs"]
    assert g["C2"]["first_exact"] == 4 and g["P2"]["first_exact"] == 3
    assert g["C4"]["first_exact"] is None and g["P1"]["first_exact"] is None
    assert res15["C4_max_z"] < 3.0  # C4's mean against beta^t Delta(0), rounds 1..5
    assert res15["C4_beta"] == pytest.approx((5 - 1) / 14)


def test_relative_is_the_paired_difference_over_the_others_mean(
        mod: dict[str, Any]) -> None:
    res = {"graphs": {"A": {"errors": np.array([[1.0, 3.0]])},
                      "B": {"errors": np.array([[2.0, 6.0]])}}}
    r = mod["relative"](res, "A", "B", 0)
    assert r.values == (-0.25, -0.75) and r.seeds == (0, 1)
    assert r.mean == pytest.approx(4.0 / 8.0 - 1)  # mean_a / mean_b - 1


def test_the_checks_hold_and_a_broken_ordering_fails(mod: dict[str, Any],
                                                     res15: dict[str, Any]) -> None:
    rounds, margin = mod["ROUNDS"], 0.5
    found = mod["checks_of"](res15, rounds, margin)
    assert all(c.outcome == "pass" for c in found), found
    assert [c.headline for c in found] == [True, False, False, False, False]
    # a made-up result where C4 stays above the ring from round 8: below C1 fails
    bad = _copy(res15)
    bad["graphs"]["C4"]["errors"][8:] = 2.0 * bad["graphs"]["C1"]["errors"][8:]
    follow, below = mod["checks_of"](bad, rounds, margin)[3:]
    assert "follow C2 and P2" in follow.name and "below C1 and C3" in below.name
    assert follow.outcome == "pass"  # still above the exact graphs' zero
    assert below.outcome == "fail" and below.measured.startswith("closest: C4 vs C1")
    # within a factor of 2 of the ring: a measured tie, not a pass
    tie = _copy(res15)
    tie["graphs"]["C4"]["errors"][8:] = 0.9 * tie["graphs"]["C1"]["errors"][8:]
    c = mod["checks_of"](tie, rounds, margin)[4]
    assert c.outcome == "no effect"
    # P2 no longer before C2: the headline part fails
    late = _copy(res15)
    late["graphs"]["P2"]["first_exact"] = 5
    head = mod["checks_of"](late, rounds, margin)[0]
    assert head.headline and head.outcome == "fail"


def test_weakest_picks_the_worst_outcome_then_the_least_room(mod: dict[str, Any]) -> None:
    S = tf.figures.OverSeeds
    h = "a toy"

    def b(vals: tuple[float, ...]) -> Any:
        return tf.figures.below("x", S(vals, tuple(range(len(vals)))), 0.0, margin=0.5,
                                horizon=h)

    far, near, tie = b((-0.99, -0.98, -0.97)), b((-0.7, -0.65, -0.6)), b((-0.1, 0.0, 0.1))
    assert far.outcome == near.outcome == "pass" and tie.outcome != "pass"
    assert mod["weakest"]([("far", far), ("near", near)])[0] == "near"
    assert mod["weakest"]([("far", far), ("tie", tie), ("near", near)])[0] == "tie"


def test_p1_against_c4_reads_each_configuration_its_way(mod: dict[str, Any]) -> None:
    def fake(n: int, p1: float, c4: float) -> dict[str, Any]:
        e = {"P1": np.full((11, 3), p1) * [1.0, 1.1, 0.9],
             "C4": np.full((11, 3), c4) * [1.0, 0.9, 1.1]}
        return {"n": n, "k": 2, "graphs": {lab: {"errors": v, "mean": v.mean(axis=1)}
                                           for lab, v in e.items()}}

    good = [fake(15, 1e-3, 1e-5), fake(17, 1e-3, 1e-5), fake(30, 1e-7, 1e-5)]
    assert mod["p1_check"](good, 10, 0.5).outcome == "pass"
    bad = [fake(15, 1e-3, 1e-5), fake(17, 1e-3, 1e-5), fake(30, 1e-4, 1e-5)]
    c = mod["p1_check"](bad, 10, 0.5)
    assert c.outcome == "fail" and "(30, 2): P1 below C4" in c.measured


def test_ranking_ties_only_exact_graphs(mod: dict[str, Any]) -> None:
    res = {"graphs": {"C1": {"mean": [1.0, 0.5]}, "C2": {"mean": [1.0, 0.0]},
                      "P2": {"mean": [1.0, 1e-30]}, "C4": {"mean": [1.0, 0.1]}}}
    assert mod["ranking"](res, 1) == "C2 = P2 < C4 < C1"


def test_committed_result_is_complete_and_redecides_to_itself() -> None:
    if not (RESULTS / f"{NAME}.json").exists():
        pytest.skip(f"default-scale result of {NAME} not committed yet")
    md, v = verdict(NAME, RESULTS, "default")
    assert 5_000 < (RESULTS / f"{NAME}.png").stat().st_size < 200_000
    assert v["seeds"] == [] and v["dataset"] == "none (graph math)"
    assert v["verdict"] == "holds" and v["secondary"] == {"passed": 13, "total": 13}
    assert len(v["checks"]) == 16 and all(c["outcome"] == "pass" for c in v["checks"])
    heads = [c for c in v["checks"] if c["headline"]]
    assert len(heads) == 3 and all(c["rule"] == "exact" for c in heads)
    over_trials = [c for c in v["checks"] if "values" in c]
    assert len(over_trials) == 4
    for c in over_trials:  # the 100 trials, read at the paper's figure's rounds
        assert c["seeds"] == list(range(100)) and "horizon" in c and c["margin"] == 0.5
    again = redecide(NAME, RESULTS, write=False)
    assert again.before == again.after == v["verdict"] and not again.moved
    assert json.loads((RESULTS / f"{NAME}.json").read_text(encoding="utf-8"))["referee"]
