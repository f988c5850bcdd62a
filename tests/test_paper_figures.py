"""Figure scripts: every config valid at every scale (default suite), and every script run
end to end at ``--quick`` with its content checked (opt in: ``pytest -m figures``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from topofl import figures, sweep

FIGS = Path(__file__).resolve().parents[1] / "paper_figures"
CONFIGS = sorted(p.stem for p in (FIGS / "configs").glob("*.toml"))


@pytest.mark.parametrize("scale", figures.SCALES)
@pytest.mark.parametrize("name", CONFIGS)
def test_every_config_plans_at_every_scale(name: str, scale: str) -> None:
    cfg = figures.load_config(name, scale)
    cells = figures.grid(cfg).values() if "grid" in cfg else [cfg]  # a table's cells
    for c in cells:
        runs = sweep.plan({k: v for k, v in c.items() if k not in ("figure", "_name", "_notes")})
        assert runs, f"{name} plans no run at scale {scale}"


def test_every_script_is_listed_with_a_title() -> None:
    names = figures.available()
    assert names and all(t for t in names.values()), names


def _run(script: str, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(FIGS / script), "--quick", "--out", str(out)],
        capture_output=True, text=True, cwd=FIGS, timeout=900,
    )


@pytest.mark.figures
@pytest.mark.parametrize("script", sorted(p.name for p in FIGS.glob("fig_*.py")))
def test_figure_script_quick(script: str, tmp_path: Path) -> None:
    out = _run(script, tmp_path)
    assert out.returncode == 0, out.stderr
    last = Path(out.stdout.strip().splitlines()[-1])
    if last.suffix == ".png":  # a figure
        assert last.exists() and last.stat().st_size > 5000
    else:  # a table: Markdown with its numbers, no picture
        assert last.suffix == ".md" and not last.with_suffix(".png").exists()
        assert "## Numbers" in last.read_text(encoding="utf-8")
    verdict = json.loads(last.with_suffix(".json").read_text(encoding="utf-8"))
    assert verdict["scale"] == "quick" and verdict["holds"] in (True, False, None)
    assert verdict["claim"] and verdict["measured"]


@pytest.mark.figures
def test_dcliques_01_numbers_match_the_records(tmp_path: Path) -> None:
    import topofl as tf

    out = _run("fig_dcliques_01.py", tmp_path)
    assert out.returncode == 0, out.stderr
    md = (tmp_path / "dcliques_01.md").read_text(encoding="utf-8")
    for panel in ("iid", "skew"):
        rec = tf.records.load_many(tmp_path / "runs" / "dcliques_01" / f"dcliques_01_{panel}")
        assert len(rec.runs) == 3
        for run in rec.runs:
            final = rec.series("global_acc_mean", run=run)[1][-1]
            assert f"{final:.4f}" in md
    assert re.search(r"\*\*Holds:\*\* (yes|no|partly)", md)
