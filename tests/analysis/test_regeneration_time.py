"""analysis/regeneration_time.py: the recorded regeneration time from the committed JSON."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests._analysis import ROOT, load

rt = load("regeneration_time")


def _has_base() -> bool:
    """A checkout whose history holds the baseline commit (not a shallow clone, a wheel)."""
    done = subprocess.run(["git", "cat-file", "-e", f"{rt.BASE}^{{commit}}"], cwd=ROOT,
                          capture_output=True)
    return done.returncode == 0


def test_working_tree_totals_are_the_results_own_seconds():
    """Every committed result but the certificates' file, with its own ``seconds``."""
    got = rt._results_at(None)
    files = [p for p in (ROOT / "paper_figures" / "results").glob("*.json")
             if p.name != "equivalence.json"]
    assert set(got) == {p.stem for p in files}
    total = sum(json.loads(p.read_text())["seconds"] for p in files)
    assert sum(d["seconds"] for d in got.values()) == pytest.approx(total, rel=0, abs=1e-9)


def test_table_rows_ratio_and_blanks():
    base = {"a": {"seconds": 100.0, "code": "0.1.0+aaaaaaaaaaaa", "cpu": ["x86_64 GenuineIntel"]},
            "b": {"seconds": 10.0, "code": "0.1.0+bbbbbbbbbbbb", "cpu": None}}
    now = {"a": {"seconds": 40.0, "code": "0.1.0+cccccccccccc",
                 "cpu": ["x86_64 AuthenticAMD AVX512"]},
           "b": {"seconds": 10.0, "code": "0.1.0+bbbbbbbbbbbb", "cpu": None},
           "c": {"seconds": 5.0, "code": "0.1.0+cccccccccccc", "cpu": None}}
    rows = rt.table(base, now)[2:]
    assert rows[0] == ("| a | 100 | aaaaaaaaaaaa | GenuineIntel | 40 | cccccccccccc | "
                       "AuthenticAMD | 0.40 |")
    assert rows[1] == "| b | 10 | bbbbbbbbbbbb | not recorded | 10 | (same) | (same) | 1.00 |"
    assert rows[2] == "| c |  |  |  | 5 | cccccccccccc | not recorded |  |"


@pytest.mark.skipif(not _has_base(), reason="needs the git history down to the baseline")
def test_page_totals_against_the_baseline(tmp_path: Path):
    out = tmp_path / "page.md"
    assert rt.main(["--out", str(out)]) == 0
    text = out.read_text()
    base = rt._results_at(rt.BASE)
    now = rt._results_at(None)
    tb = sum(d["seconds"] for d in base.values())
    tn = sum(now[k]["seconds"] for k in set(base) & set(now))
    assert f"recording {tb:,.0f} s" in text
    assert f"**{100 * (tn - tb) / tb:+.1f} %**" in text


def test_a_missing_baseline_is_a_clear_error(tmp_path: Path):
    with pytest.raises(SystemExit, match="not a commit of this checkout"):
        rt.main(["--base", "0" * 40, "--out", str(tmp_path / "page.md")])
