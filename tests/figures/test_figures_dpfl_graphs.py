"""DPFL's collaboration-graph figures (fig_dpfl_fig2: Figs. 2, 8-11, 15; fig_dpfl_fig4: Figs. 4,
12-14): the committed default-scale results are checked by default; each script's --quick run
(opt in: ``pytest -m figures``) is checked against its records: the numbers of the Markdown, the
panels drawn and the JSON verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import topofl as tf
from tests._figures import (
    quick_out_fixture,  # noqa: F401  (the quick_out fixture)
    run_quick,
    verdict,
)
from topofl.algorithms.dpfl import resolve_budget
from topofl.plotting.heatmaps import SELECTION_CODES

FIGS = Path(__file__).resolve().parents[2] / "paper_figures"
RESULTS = FIGS / "results"


def _md_table(md: str, first_header: str) -> list[list[str]]:
    """The rows of the Markdown table whose header starts with ``first_header``."""
    lines = md.splitlines()
    start = next(k for k, ln in enumerate(lines) if ln.startswith(f"| {first_header} |"))
    rows = []
    for ln in lines[start + 2:]:
        if not ln.startswith("|"):
            break
        rows.append([c.strip() for c in ln.strip("|").split("|")])
    return rows


@pytest.mark.parametrize("name", ["dpfl_fig2", "dpfl_fig4"])
def test_committed_results(name: str) -> None:
    png, md, js = (RESULTS / f"{name}{ext}" for ext in (".png", ".md", ".json"))
    assert png.stat().st_size < 150_000
    got = json.loads(js.read_text(encoding="utf-8"))
    assert got["name"] == name and got["scale"] == "default"
    text = md.read_text(encoding="utf-8")
    if "verdict" in got:
        verdict(name, RESULTS, "default")
    else:  # a result written before the four verdicts (until it is rerun)
        holds = {True: "yes", False: "no", None: "partly"}[got["holds"]]
        assert f"**Holds:** {holds}" in text
    assert got["measured"] in text and got["claim"] in text
    assert "n_clients | 100" in text  # the paper's 100 clients


def _run_quick(name: str, out: Path) -> Any:
    import matplotlib.pyplot as plt

    fig = run_quick(name, out)
    assert len(plt.get_fignums()) == 1
    return fig


@pytest.mark.figures
def test_fig4_quick_content(quick_out: Path) -> None:
    fig = _run_quick("dpfl_fig4", quick_out)
    md = (quick_out / "dpfl_fig4.md").read_text(encoding="utf-8")
    _, got = verdict("dpfl_fig4", quick_out)
    # the two experiments' central statements are the headline, "fewer than in Omega" is not
    head = [c["name"][:3] for c in got["checks"] if c["headline"]]
    assert head == ["(a)", "(b)"] and not got["checks"][2]["headline"]
    assert all("convergence" in c for c in got["checks"])
    summary = {r[0]: r for r in _md_table(md, "case")}
    share_ax = next(ax for ax in fig.axes if ax.get_xlabel() == "round")
    curves = {ln.get_label(): ln for ln in share_ax.lines}
    for case, cfg in (("(a) malicious clients do not run GGC", "dpfl_fig4_no_greedy"),
                      ("(b) malicious clients run GGC", "dpfl_fig4_greedy")):
        rec = tf.records.load_many(quick_out / "runs" / "dpfl_fig4" / cfg)
        rec = rec.for_run(rec.runs[0])
        flipped = rec.engine["data"]["label_flip"]["clients"]
        assert len(flipped) == 4  # 40% of the 10 quick clients
        passive = rec.config.get("no_greedy")
        assert passive == ("flipped" if "do not" in case else None)
        omega = tf.algorithms.malicious_share(rec, graph="omega")
        df = tf.algorithms.malicious_share(rec)
        row = summary[case]
        assert float(row[1]) == pytest.approx(float(omega["share"].iloc[0]), abs=5e-5)
        assert float(row[3]) == pytest.approx(float(df["share"].iloc[-1]), abs=5e-5)
        assert float(row[4]) == pytest.approx(float(df["share"].mean()), abs=5e-5)
        # the curve drawn is the per-round share of the records
        assert np.allclose(curves[case].get_ydata(), df["share"].to_numpy(), equal_nan=True)
        # a malicious client that does not run GGC never receives an edge
        if passive == "flipped":
            for _, edges in rec.points("realized_edges", run=rec.runs[0]):
                assert all(k not in flipped for _, k in edges)
    # 4 heat maps, benign clients first: in case (a) the malicious rows (receivers) are empty
    heat = [ax for ax in fig.axes if ax.images and ax.images[0].get_array().shape == (10, 10)]
    assert len(heat) == 4
    for ax in heat[:2]:
        codes = np.asarray(ax.images[0].get_array())
        assert codes.shape == (10, 10)
        assert not (codes[6:] == SELECTION_CODES["chosen"]).any()


@pytest.mark.figures
def test_fig2_quick_content(quick_out: Path) -> None:
    fig = _run_quick("dpfl_fig2", quick_out)
    md = (quick_out / "dpfl_fig2.md").read_text(encoding="utf-8")
    rec = tf.records.load_many(quick_out / "runs" / "dpfl_fig2" / "dpfl_fig2")
    assert len(rec.runs) == 4
    table = {r[0]: r for r in _md_table(md, "budget | B_c (resolved)")}
    assert list(table) == ["no budget", "B = 4", "B = 2", "B = 1"]
    heat = [ax for ax in fig.axes if ax.images and ax.images[0].get_array().shape == (20, 20)]
    assert len(heat) == 4 * 3  # Omega + rounds 0 and 2 for each budget
    for run in rec.runs:  # files load in name order; rows and panels are in sweep order
        r = rec.for_run(run)
        n = int(r.config["n_clients"])
        omega = tf.plotting.adjacency_matrix(r, graph="omega", n=n) > 0
        budget = resolve_budget(r.config["budget"], n)
        assert budget is not None and int(omega.sum(1).max()) <= min(budget, n - 1)
        name = "no budget" if budget >= n - 1 else f"B = {budget}"
        k = list(table).index(name)
        assert float(table[name][2]) == pytest.approx(omega.sum(1).mean(), abs=5e-5)
        # the Omega panel shows Omega (reordered): as many 'chosen' cells as Omega edges
        codes = np.asarray(heat[3 * k].images[0].get_array())
        assert int((codes == SELECTION_CODES["chosen"]).sum()) == int(omega.sum())
        assert int((codes == SELECTION_CODES["self"]).sum()) == n
        # the last-round panel: chosen = the recorded collaborators, all inside Omega
        last = tf.plotting.adjacency_matrix(r, 2, n=n) > 0
        codes = np.asarray(heat[3 * k + 2].images[0].get_array())
        assert int((codes == SELECTION_CODES["chosen"]).sum()) == int(last.sum())
        assert not (last & ~omega).any()
        assert int((codes == SELECTION_CODES["candidate"]).sum()) == int((omega & ~last).sum())
    _, got = verdict("dpfl_fig2", quick_out)
    assert [c["headline"] for c in got["checks"]] == [True, False, False]


def test_fig3_committed_result() -> None:
    md = (RESULTS / "dpfl_fig3.md").read_text(encoding="utf-8")
    got = json.loads((RESULTS / "dpfl_fig3.json").read_text(encoding="utf-8"))
    # seeds 3-5: the close calls' replication, declared in claims.toml before they ran
    assert got["scale"] == "default" and got["seeds"] == [0, 1, 2, 3, 4, 5]
    verdict("dpfl_fig3", RESULTS, "default")
    assert got["optimizer_state"] == ["keep"]  # the DPFL comparisons' policy, both graphs
    rows = _md_table(md, "c")
    assert [r[0] for r in rows] == ["20", "10", "5"]  # Fig. 3's three budgets of N = 100


@pytest.mark.figures
def test_fig3_quick_content(quick_out: Path) -> None:
    fig = _run_quick("dpfl_fig3", quick_out)
    md = (quick_out / "dpfl_fig3.md").read_text(encoding="utf-8")
    _, got = verdict("dpfl_fig3", quick_out)
    assert all(c["headline"] and "convergence" in c for c in got["checks"])
    rec = tf.records.load_many(quick_out / "runs" / "dpfl_fig3" / "dpfl_fig3")
    assert len(rec.runs) == 2  # DPFL and the random graph, one budget, one seed
    final = {}
    for run in rec.runs:
        r = rec.for_run(run)
        n = int(r.config["n_clients"])
        b = resolve_budget(r.config["budget"], n)
        assert b == 2 and r.config["momentum_state"] == "keep"
        final[r.config["graph"]] = 100 * r.series("test_acc_mean")[1][-1]
        # every round's collaborators respect the budget, for both graphs
        for _, edges in r.points("realized_edges", run=run):
            per = np.bincount([k for _, k in edges], minlength=n)
            assert per.max() <= b
    (row,) = _md_table(md, "c")
    assert row[0] == "2"
    assert float(row[1]) == pytest.approx(final["greedy"], abs=5e-3)
    assert float(row[2]) == pytest.approx(final["random"], abs=5e-3)
    assert float(row[3]) == pytest.approx(final["greedy"] - final["random"], abs=1e-2)
    assert len([ax for ax in fig.axes if ax.lines]) == 1  # one panel per budget
