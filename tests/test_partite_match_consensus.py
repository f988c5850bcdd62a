"""analysis/partite_match_consensus.py: the committed page is the render of the committed
numbers, those numbers are what the script computes, and its checks read them right."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests._analysis import load

ROOT = Path(__file__).resolve().parents[1] / "analysis"


@pytest.fixture(scope="module")
def committed() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (ROOT / "partite_match_consensus.json").read_text(encoding="utf-8"))
    return data


def test_the_page_is_the_render_of_the_committed_numbers(committed: dict[str, Any]) -> None:
    M = load("partite_match_consensus")
    page = (ROOT / "partite_match_consensus.md").read_text(encoding="utf-8")
    assert page == M.render(committed)
    assert committed["setting"]["trials"] == M.TRIALS == 100
    assert [tuple(c) for c in committed["setting"]["configs"]] == list(M.CONFIGS)


def test_the_committed_numbers_are_recomputed(committed: dict[str, Any]) -> None:
    M = load("partite_match_consensus")
    for saved in committed["results"]:
        n, k = saved["n"], saved["k"]
        for label in ("C2", "C4", "P2"):
            d = M.consensus_errors(label, n, k, M.TRIALS, 6).mean(axis=1)
            np.testing.assert_allclose(d, saved["graphs"][label]["mean"][:7], rtol=1e-9,
                                       atol=1e-28)


def test_the_checks_hold_and_say_what_was_measured(committed: dict[str, Any]) -> None:
    M = load("partite_match_consensus")
    assert all(c["holds"] for c in committed["checks"])
    for r in committed["results"]:
        key = (r["n"], r["k"])
        assert r["graphs"]["C2"]["first_exact"] == M.PAPER_TAU["C2"][key]
        assert r["graphs"]["P2"]["first_exact"] == M.PAPER_TAU["P2"][key]
        assert r["graphs"]["C4"]["first_exact"] is None
        assert r["C4_max_z"] < 3.0
    # a made-up result where C4 stays above the ring: the ordering check says no
    bad = json.loads(json.dumps(committed["results"][0]))
    bad["graphs"]["C4"]["mean"] = [1.0] * len(bad["graphs"]["C4"]["mean"])
    found = M.checks(bad, committed["setting"]["rounds"])

    def holds(start: str) -> bool:
        return next(bool(c["holds"]) for c in found if c["claim"].startswith(start))

    assert holds("C4 and P1 follow C2 and P2")  # 1.0 is above the exact graphs' zero
    assert not holds("C4 and P1 are below C1 and C3")


def test_ranking_ties_only_exact_graphs() -> None:
    M = load("partite_match_consensus")
    res = {"graphs": {"C1": {"mean": [1.0, 0.5]}, "C2": {"mean": [1.0, 0.0]},
                      "P2": {"mean": [1.0, 1e-30]}, "C4": {"mean": [1.0, 0.1]}}}
    assert M.ranking(res, 1) == "C2 = P2 < C4 < C1"


def test_quick_prints_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    M = load("partite_match_consensus")
    assert M.main(["--quick", "--out", str(tmp_path / "page")]) == 0
    assert "## The paper's statements" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []
