"""The replication rule for close calls, the verdict of ties beside undecided parts, and the
second look named on the verdict line (topofl.figures.replication, checks.verdict)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from topofl import figures
from topofl.figures import replication as rep
from topofl.figures.config import FigureError, claim_of
from topofl.figures.measures import OverSeeds

H = "a toy horizon"


def _above(values: tuple[float, ...], margin: float = 0.01, tie: str = "inconclusive",
           headline: bool = True) -> figures.Check:
    return figures.above("A beats B", OverSeeds(values, tuple(range(len(values)))),
                         margin=margin, tie=tie, horizon=H, headline=headline)


def _slow_gap(c: figures.Check) -> float:
    """The decisive bound's distance beyond its edge, in standard errors, from first principles:
    the claimed side's bound of the mean difference minus the edge, over the standard error."""
    from scipy import stats

    v = list((c.detail or {})["values"])
    n = len(v)
    mean = sum(v) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in v) / (n - 1))
    se = sd / math.sqrt(n)
    q = stats.t.ppf(0.95, n - 1)
    if c.outcome == "pass":
        return (mean - q * se - 0.01) / se  # lower bound beyond threshold + margin
    return (0.0 - (mean + q * se)) / se  # upper bound short of the threshold


@given(st.lists(st.floats(-0.05, 0.08, allow_nan=False), min_size=3, max_size=6))
def test_a_close_call_is_a_decision_within_one_standard_error_of_its_edge(
        values: list[float]) -> None:
    c = _above(tuple(values))
    gap = rep.close_call(c)
    if c.outcome not in ("pass", "fail") or (c.detail or {}).get("se", 0) == 0:
        assert gap is None
        return
    slow = _slow_gap(c)
    assert slow >= -1e-9  # a decision clears its edge
    if slow < 1.0 - 1e-9:
        assert gap is not None and gap == pytest.approx(slow, rel=1e-9, abs=1e-9)
    elif slow > 1.0 + 1e-9:
        assert gap is None


def test_a_secondary_check_or_a_wide_decision_is_not_a_close_call() -> None:
    edge = (0.015, 0.025, 0.02)
    assert rep.close_call(_above(edge, headline=False)) is None
    assert rep.close_call(_above((0.03, 0.04, 0.035))) is None
    assert rep.close_call(figures.fact("x", True, headline=True)) is None
    assert rep.replicate(_above(edge, headline=False), None).outcome == "pass"


def test_a_close_call_stands_only_when_replicated() -> None:
    edge = (0.015, 0.025, 0.02)
    c = rep.replicate(_above(edge), None)
    assert c.outcome == "inconclusive"
    assert c.reason.startswith(rep.NOT_REPLICATED) and "would be pass" in c.reason
    fresh = rep.Replication((3, 4, 5), "before they ran")
    # the fresh seeds declared but not run yet: still not replicated
    assert rep.replicate(_above(edge), fresh).reason.startswith(rep.NOT_REPLICATED)
    agree = rep.replicate(_above(edge + (0.02, 0.025, 0.021)), fresh)
    assert agree.outcome == "pass" and agree.reason.startswith("replicated: ")
    d = agree.detail or {}
    assert d["original_seeds"] == [0, 1, 2] and d["fresh_seeds"] == [3, 4, 5]
    assert d["original_outcome"] == "pass" and d["fresh_mean"] == pytest.approx(0.022)
    # the fresh seeds on the other side: did not replicate
    other = rep.replicate(_above(edge + (-0.01, 0.0, -0.02)), fresh)
    assert other.outcome == "inconclusive"
    assert other.reason.startswith("did not replicate: the fresh seeds' mean lies on the other")
    # the same side, but the pooled seeds no longer clear the edge: did not replicate
    weak = rep.replicate(_above(edge + (0.001, 0.002, 0.0005)), fresh)
    assert weak.outcome == "inconclusive"
    assert weak.reason.startswith("did not replicate: the pooled seeds do not decide it")


def test_a_close_fail_and_a_close_comparable_are_replicated_too() -> None:
    fail = figures.above("A", OverSeeds((-0.013, -0.017, -0.006), (0, 1, 2)), margin=0.01,
                         horizon=H, headline=True)
    assert fail.outcome == "fail" and rep.close_call(fail) is not None
    assert rep.replicate(fail, None).outcome == "inconclusive"
    close = figures.within("close", OverSeeds((0.014, 0.004, 0.009), (0, 1, 2)), 0.02,
                           horizon=H, headline=True)
    assert close.outcome == "pass" and rep.close_call(close) is not None
    fresh = rep.Replication((3, 4, 5), "x")
    back = figures.within("close", OverSeeds((0.014, 0.004, 0.009, 0.008, 0.01, 0.009),
                                             tuple(range(6))), 0.02, horizon=H, headline=True)
    assert rep.replicate(back, fresh).outcome == "pass"
    out = figures.within("close", OverSeeds((0.014, 0.004, 0.009, 0.05, 0.06, 0.04),
                                            tuple(range(6))), 0.02, horizon=H, headline=True)
    assert rep.replicate(out, fresh).reason.startswith("did not replicate")


def test_an_undecidable_check_is_left_to_its_own_reason() -> None:
    one = figures.above("A", OverSeeds((0.02,), (0,)), horizon=H, headline=True)
    assert rep.replicate(one, None) is one


def test_the_declaration_is_checked() -> None:
    with pytest.raises(ValueError, match="3 distinct fresh seeds"):
        rep.Replication((3, 4), "x")
    with pytest.raises(ValueError, match="declared"):
        rep.Replication((3, 4, 5), " ")


def test_claims_declare_replications_and_second_looks(tmp_path: Path) -> None:
    toml = tmp_path / "claims.toml"
    toml.write_text('[toy]\ntitle = "T"\nclaim = "C"\nsecond_look = ["rounds doubled"]\n'
                    '[toy.replication]\nfresh = [5, 6, 7]\ndeclared = "2026-11-28"\n'
                    '[bad]\ntitle = "T"\nclaim = "C"\n[bad.replication]\nfresh = [1]\n'
                    '[odd]\ntitle = "T"\nclaim = "C"\nsecond_look = "x"\n')
    got = claim_of("toy", toml)
    assert got["second_look"] == ["rounds doubled"]
    assert got["replication"] == rep.Replication((5, 6, 7), "2026-11-28")
    with pytest.raises(FigureError, match=r"\[bad.replication\] a replication needs 3"):
        claim_of("bad", toml)
    with pytest.raises(FigureError, match="second_look must be a list"):
        claim_of("odd", toml)


def test_a_tie_beside_an_undecided_part_is_not_no_practical_effect() -> None:
    tie = figures.above("t", OverSeeds((0.002, 0.003, 0.0025), (0, 1, 2)), margin=0.01,
                        horizon=H, headline=True)
    und = figures.above("u", OverSeeds((0.0, 0.03, 0.015), (0, 1, 2)), margin=0.01,
                        horizon=H, headline=True)
    ok = figures.fact("p", True, headline=True)
    assert (tie.outcome, und.outcome) == ("no effect", "inconclusive")
    assert figures.verdict([tie]) == "no practical effect at this scale"
    assert figures.verdict([tie, und]) == "inconclusive at this scale"
    assert figures.verdict([tie, ok]) == "partly"
    assert figures.verdict([tie, und, ok]) == "partly"


def _toy_result(folder: Path, values: list[float], seeds: list[int]) -> None:
    c = figures.above("A beats B", OverSeeds(tuple(values), tuple(seeds)), margin=0.01,
                      horizon=H, headline=True)
    v = {"name": "toy", "verdict": figures.verdict([c]), "checks": [c.as_dict()],
         "seeds": seeds, "rounds": {"run": [10], "paper": []}, "seconds": 60.0}
    (folder / "toy.json").write_text(json.dumps(v), encoding="utf-8")
    (folder / "toy.md").write_text(
        "# Toy\n\n**Verdict:** holds (x)\n\n## Checks\n\n| a |\n|---|\n\nThe rule (x).\n\n"
        "## Setting\n\n| eval_every | 5 |\n", encoding="utf-8")


def test_redecide_applies_the_rule_and_prices_the_fresh_seeds(tmp_path: Path) -> None:
    _toy_result(tmp_path, [0.015, 0.025, 0.02], [0, 1, 2])
    r = figures.redecide.redecide("toy", tmp_path)
    assert (r.before, r.after) == ("holds", "inconclusive at this scale")
    v = json.loads((tmp_path / "toy.json").read_text())
    assert v["checks"][0]["reason"].startswith(rep.NOT_REPLICATED)
    md = (tmp_path / "toy.md").read_text()
    assert "; 1 close call not yet replicated" in md
    assert "3 fresh seeds, declared before they run" in md and "about 1 min here" in md
    assert figures.redecide.redecide("toy", tmp_path).after == "inconclusive at this scale"


def test_every_declared_second_look_is_on_its_committed_verdict_line() -> None:
    """A second look (seeds or rounds added after a result was seen) is declared in
    ``claims.toml`` when its run lands, so each committed page's verdict line names it; one
    declared before its run would put a look that never happened on the page at the next
    redecide."""
    import tomllib

    figs = Path(__file__).resolve().parents[2] / "paper_figures"
    claims = tomllib.loads((figs / "claims.toml").read_text(encoding="utf-8"))
    looks = {k: v["second_look"] for k, v in claims.items()
             if isinstance(v, dict) and v.get("second_look")}
    assert looks  # the rounds and seeds paid for issue 80
    for name, texts in looks.items():
        page = (figs / "results" / f"{name}.md").read_text(encoding="utf-8")
        line = next(ln for ln in page.splitlines() if ln.startswith("**Verdict:**"))
        line = re.sub(r" \[stand-in: [^\]]*\]", "", line)  # a paper's dataset, as pages name it
        for text in texts:
            assert " ".join(text.split()) in line, (name, text)
