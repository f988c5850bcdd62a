"""DPFL Tables 1-3 and the accuracy-vs-variance figures (Figs. 1, 5-7).

Default suite: the library pieces they use (client accuracy mean and variance, the seed summary,
the scatter plot) against hand-computed values and a slow reference. Opt in
(``pytest -m figures``): every script at ``--quick`` into a temporary folder, its Markdown
numbers recomputed from the runs' records and its verdict checked.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from tests._figures import (
    quick_out_fixture,  # noqa: F401  (the quick_out fixture)
    run_quick,
    verdict,
)
from topofl.algorithms.dpfl_analysis import client_accuracy_stats

FIGS = Path(__file__).resolve().parents[2] / "paper_figures"


def _rows(accs: list[float], run: str = "r", rnd: int = 3) -> list[dict]:
    return [{"run": run, "round": rnd, "client": k, "metric": "test_acc", "value": a}
            for k, a in enumerate(accs)]


# ------------------------------------------------------------------ library pieces (fast)


def test_client_accuracy_stats_hand_computed() -> None:
    # clients at 50%, 75%, 100%: mean 75, variance ((25^2) + 0 + 25^2) / 3 = 416.67
    rec = tf.records.Records(rows=_rows([0.5, 0.75, 1.0]))
    mean, var = client_accuracy_stats(rec)
    assert mean == pytest.approx(75.0)
    assert var == pytest.approx(1250.0 / 3)


def test_client_accuracy_stats_uses_the_last_round_by_default_and_a_given_round() -> None:
    rows = _rows([0.1, 0.3], rnd=0) + _rows([0.8, 1.0], rnd=5)
    rows.append({"run": "r", "round": 9, "client": None, "metric": "test_acc_mean",
                 "value": 0.2})  # a later non-per-client row does not count
    rec = tf.records.Records(rows=rows)
    assert client_accuracy_stats(rec) == pytest.approx((90.0, 100.0))
    assert client_accuracy_stats(rec, round=0) == pytest.approx((20.0, 100.0))


def test_client_accuracy_stats_picks_the_run() -> None:
    rec = tf.records.Records(rows=_rows([0.5, 0.5], run="a") + _rows([0.0, 1.0], run="b"))
    assert client_accuracy_stats(rec, run="a") == pytest.approx((50.0, 0.0))
    assert client_accuracy_stats(rec, run="b") == pytest.approx((50.0, 2500.0))


def test_client_accuracy_stats_without_per_client_values() -> None:
    rows = [{"run": "r", "round": 0, "client": None, "metric": "test_acc_mean", "value": 0.5}]
    with pytest.raises(ValueError, match="record_clients=True"):
        client_accuracy_stats(tf.records.Records(rows=rows))


def test_client_accuracy_stats_refuses_a_client_without_accuracy() -> None:
    rec = tf.records.Records(rows=_rows([0.5, float("nan"), 1.0]))
    with pytest.raises(ValueError, match=r"client\(s\) \[1\]"):
        client_accuracy_stats(rec)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=30))
def test_client_accuracy_stats_matches_a_slow_reference(accs: list[float]) -> None:
    rec = tf.records.Records(rows=_rows(accs))
    mean, var = client_accuracy_stats(rec)
    pct = [100.0 * a for a in accs]
    assert mean == pytest.approx(statistics.fmean(pct), abs=1e-9)
    assert var == pytest.approx(statistics.pvariance(pct), abs=1e-7)
    assert 0.0 <= var <= 2500.0 + 1e-9  # the largest variance of values in [0, 100]


def test_accuracy_variance_draws_every_point_and_highlights_dpfl() -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.colors import to_rgba

    from tests._figures import assert_readable

    points = {"Local Only": (80.0, 100.0), "DPFL (inf)": (84.0, 80.0), "FedAvg": (50.0, 300.0)}
    fig = tf.plotting.accuracy_variance(points, title="t")
    ax = fig.axes[0]
    assert ax.collections[0].get_offsets().tolist() == [list(p) for p in points.values()]
    assert [t.get_text() for t in ax.texts] == list(points)
    colours = [tuple(c) for c in ax.collections[0].get_facecolors()]
    assert colours == [to_rgba("tab:grey"), to_rgba("tab:red"), to_rgba("tab:grey")]
    assert ax.get_title() == "t"
    assert_readable(fig)
    with pytest.raises(ValueError, match="at least one"):
        tf.plotting.accuracy_variance({})


def test_accuracy_variance_error_bars_are_the_seed_spread() -> None:
    import matplotlib

    matplotlib.use("Agg")
    points = {"Local Only": (80.0, 100.0), "DPFL (inf)": (84.0, 80.0)}
    errors = {"Local Only": (1.5, 10.0), "DPFL (inf)": (0.5, 4.0)}
    ax = tf.plotting.accuracy_variance(points, errors=errors).axes[0]
    assert ax.collections[0].get_offsets().tolist() == [list(p) for p in points.values()]
    xbars, ybars = (c.get_segments() for c in ax.collections[1:3])
    assert [s[:, 0].tolist() for s in xbars] == [[78.5, 81.5], [83.5, 84.5]]
    assert [s[:, 1].tolist() for s in ybars] == [[90.0, 110.0], [76.0, 84.0]]
    with pytest.raises(ValueError, match="errors"):
        tf.plotting.accuracy_variance(points, errors={"Local Only": (1.0,)})  # type: ignore[dict-item]


# ------------------------------------------------------------------ the DPFL checks (fast)


def _dpfl_checks() -> Any:
    import sys

    if str(FIGS) not in sys.path:
        sys.path.insert(0, str(FIGS))
    import _dpfl_checks

    return _dpfl_checks


def _curve_records(curves: list[list[float]]) -> tf.records.Records:
    return tf.records.Records(
        rows=[{"run": f"s{s}", "round": t, "client": None, "metric": "test_acc_mean",
               "value": v} for s, c in enumerate(curves) for t, v in enumerate(c)],
        configs={f"s{s}": {"seed": s} for s in range(len(curves))})


def test_dpfl_reading_is_inconclusive_on_rising_curves_even_at_the_papers_rounds() -> None:
    """The DPFL stand-ins do ~2.5x fewer local steps a round than the paper, so reaching the
    paper's rounds is not reaching its horizon: a check on rising curves is inconclusive (not
    converged) before and at the paper's rounds alike."""
    dc = _dpfl_checks()
    rising = _curve_records([[0.1 * t for t in range(8)]] * 3)  # +0.2 over the last quarter
    gap = tf.figures.OverSeeds((2.0, 2.5, 3.0), (0, 1, 2))  # a clear win, in points
    for configs in ([{"algorithm": "dpfl", "rounds": 58}],
                    [{"algorithm": "dpfl", "rounds": 98}, {"algorithm": "local",
                                                            "rounds": 100}]):
        read = dc.reading("dpfl_table1", {"DPFL": rising}, configs, 100)
        assert set(read) == {"converged"} and not read["converged"].flat
        check = tf.figures.above("DPFL above", gap, margin=1.0, **read)
        assert check.outcome == "inconclusive" and "not converged" in check.reason
        assert "would be pass" in check.reason


def _client_records(curves: list[list[list[float]]], **config: Any) -> tf.records.Records:
    """Runs with per-client ``test_acc`` (``curves[s][t][k]``: client k at round t of seed
    s) and the ``test_acc_mean`` the engine records beside them."""
    return tf.records.Records(
        rows=[row for s, c in enumerate(curves) for t, accs in enumerate(c) for row in (
            *({"run": f"s{s}", "round": t, "client": k, "metric": "test_acc", "value": a}
              for k, a in enumerate(accs)),
            {"run": f"s{s}", "round": t, "client": None, "metric": "test_acc_mean",
             "value": sum(accs) / len(accs)})],
        configs={f"s{s}": {"seed": s, "rounds": len(c), **config}
                 for s, c in enumerate(curves)})


def _apart(mean: float, points: list[float]) -> list[list[float]]:
    """Two clients at ``mean`` -+ d/2 points: a variance of (d/2)² %² at each round."""
    return [[mean - d / 200, mean + d / 200] for d in points]


def test_dpfl_variance_reading_reads_the_variance_between_clients() -> None:
    """``reading(kind="variance")``: the curve of the variance between clients, in %², with
    the variance margin (5 %² for dpfl_fig5); the accuracy reading of the same runs is flat."""
    dc = _dpfl_checks()
    # the mean stays at 85 %; the clients draw apart by 2, 4, 6 points over rounds 6-8
    rec = _client_records([_apart(0.85, [20, 10, 4, 2, 2, 2, 4, 6])] * 3)
    var = dc.reading("dpfl_fig5", {"DPFL": rec}, [], 100, kind="variance")["converged"]
    acc = dc.reading("dpfl_fig5", {"DPFL": rec}, [], 100)["converged"]
    assert acc.flat and acc.of == "" and acc.tolerance == 0.01
    assert not var.flat and var.of == "variance" and var.tolerance == 5.0
    # (d/2)² = 1, 4, 9 %² over rounds 6-8: a least-squares gain of 8 %² a seed
    assert var.gains[0][1].values == pytest.approx((8.0,) * 3, abs=1e-9)
    note = dc.convergence_note({"DPFL vs A": acc, "DPFL vs B, variance": var})
    assert "variance margin, in %²" in note and "DPFL (variance) still moved by 5 %²" in note
    assert "(flat: DPFL vs A)" in note
    only_acc = dc.convergence_note({"DPFL vs A": acc})
    assert "the accuracy margin over the last quarter" in only_acc and "%²" not in only_acc


def test_dpfl_variance_panels_read_the_variance_check_on_the_variance_curves(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``_dpfl_variance.panels``: the accuracy check reads the accuracy curves, the variance
    check the curves of the variance between clients (with the variance margin, %²). DPFL's
    mean accuracy is flat while its clients still draw apart at the end: its variance check is
    inconclusive (not converged), where reading the accuracy curves would have passed it."""
    import sys

    import matplotlib

    matplotlib.use("Agg")
    if str(FIGS) not in sys.path:
        sys.path.insert(0, str(FIGS))
    import _dpfl_variance as dv

    late = [30, 10, 2, 2, 2, 2, 4, 6]  # points between DPFL's two clients
    runs = {
        "DPFL (inf)": _client_records([_apart(0.90, late)] * 3, algorithm="dpfl", budget=1.0),
        "Local Only": _client_records([_apart(0.80, [20] * 8)] * 3, algorithm="local"),
        "FedAvg": _client_records([_apart(0.70, [30] * 8)] * 3, algorithm="fedavg"),
    }
    title = "toy panel"  # names no column of Table 1: no fidelity gate

    def fake_panels(args: Any, configs: Any, label: Any = None, *, share: Any = None) -> Any:
        assert list(configs) == [title]
        return {title: tf.figures.Panel(title, runs, {k: 1.0 for k in runs},
                                        {k: r.configs["s0"] for k, r in runs.items()}, [], [])}

    monkeypatch.setattr(tf.figures, "panels", fake_panels)
    args = tf.figures.FigureArgs("dpfl_fig5", "default", tmp_path, tmp_path)
    result = dv.panels(args, {"toy": title}, total=100)
    checks = {c.name: c for c in result.checks}
    acc = checks[f"{title}: DPFL (inf) more accurate than every baseline (points)"]
    var = checks[f"{title}: DPFL (inf) lower variance than every baseline (%²)"]
    assert acc.outcome == "pass" and "of" not in acc.detail["convergence"]
    assert acc.detail["convergence"]["tolerance"] == 0.01
    got = var.detail["convergence"]
    assert got["of"] == "variance" and got["tolerance"] == 5.0 and not got["flat"]
    # DPFL's (1, 4, 9 %² over rounds 6-8: +8) and Local Only's (flat at 100 %²) curves
    assert got["gains"] == {"DPFL (inf)": {"values": pytest.approx([8.0] * 3),
                                           "seeds": [0, 1, 2]},
                            "Local Only": {"values": [0.0] * 3, "seeds": [0, 1, 2]}}
    assert var.outcome == "inconclusive" and "would be pass" in var.reason
    assert "DPFL (inf) (variance) still moved by 5 %²" in var.reason
    # the note names both readings, each with its curve and units
    note = result.notes[0]
    assert "variance margin, in %²" in note
    assert f"{title}: DPFL (inf) vs Local Only, variance: not converged" in note
    assert f"flat: {title}: DPFL (inf) vs Local Only)" in note
    import matplotlib.pyplot as plt

    plt.close(result.fig)


def test_dpfl_comparisons_score_every_method_alike() -> None:
    """A comparison across methods scores every method at its last round (topofl's baselines
    have no best-validation selection); DPFL-only comparisons keep the paper's selection."""
    from topofl.figures.config import load_config

    for name in ("dpfl_table1_patho_dpfl", "dpfl_table1_dir_dpfl", "dpfl_fig5_dpfl",
                 "dpfl_fig6_dir_dpfl", "dpfl_fig6_patho_dpfl"):
        for scale in ("quick", "default", "full"):
            assert load_config(name, scale)["select"] == "last", (name, scale)
    for name in ("dpfl_table2", "dpfl_table3", "dpfl_fig3"):
        assert load_config(name, "default")["select"] == "best_val", name


def test_dpfl_default_scales_run_the_papers_rounds() -> None:
    from topofl.figures.config import load_config

    for name, rounds in (("dpfl_table1_patho_dpfl", 98), ("dpfl_table1_patho_local", 100),
                         ("dpfl_table1_patho_knn_per", 100), ("dpfl_table2", 98),
                         ("dpfl_table3", 98), ("dpfl_fig3", 98), ("dpfl_fig2", 98),
                         ("dpfl_fig4_greedy", 98), ("dpfl_fig4_no_greedy", 98),
                         ("dpfl_fig5_dpfl", 48), ("dpfl_fig5_local", 50)):
        # --full runs the paper's rounds; the default scale runs them, or doublings of them
        # where the horizon rule read a compared curve as still moving (claims.toml second_look)
        assert load_config(name, "full")["rounds"] == rounds, name
        default = load_config(name, "default")["rounds"]
        assert default in (rounds, 2 * rounds, 4 * rounds, 8 * rounds), name
    # Table 3: rounds before columns, one budget at the default scale, all four at --full
    assert load_config("dpfl_table3", "default")["sweep"]["budget"] == [0.1]
    assert load_config("dpfl_table3", "full")["sweep"]["budget"] == [1.0, 0.2, 0.1, 0.05]


# ------------------------------------------------------------------ the scripts (opt in)


def _run(name: str, out: Path) -> None:
    run_quick(name, out)


def _verdict(out: Path, name: str, md: str) -> dict:  # type: ignore[type-arg]
    """The JSON verdict, checked; the data that ran are the paper datasets' offline stand-ins
    (analysis/standins.md), named in the Markdown."""
    _, got = verdict(name, out)
    ran = got["dataset"].split(" / ")
    # (one stand-in per paper dataset is recorded; Table 1's two splits have two)
    assert got["stand_in"] and set(got["stand_in"].values()) <= set(ran), got
    assert all(d.startswith("mnist1d:") and d in md for d in ran)
    assert any(c["headline"] for c in got["checks"])  # every result names its headline
    for c in got["checks"]:  # a check over seeds carries its convergence reading
        assert "convergence" in c or "horizon" in c or c["measured"] == "not run", c
    return got


def _md_rows(md: str, first: str) -> dict[str, list[str]]:
    """The rows of the Markdown table whose header starts with ``first``, by first cell."""
    lines = md.splitlines()
    start = next(i for i, ln in enumerate(lines)  # a header: the separator line follows
                 if ln.startswith(f"| {first} |") and lines[i + 1].startswith("|---"))
    rows = {}
    for ln in lines[start + 2:]:
        if not ln.startswith("|"):
            break
        cells = [c.strip() for c in ln.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


def _select(rec: tf.records.Records) -> str:
    """The model selection of the tables and figures: each client's best-validation model for
    runs that scored their validation splits (every method of DPFL's configs), else the last."""
    return "best_val" if "val_loss" in rec.metrics else "last"


def _stats(out: Path, name: str, config: str) -> tuple[tf.records.Records, dict[str, tuple]]:
    rec = tf.records.load_many(out / "runs" / name / config)
    return rec, {r: client_accuracy_stats(rec, run=r, select=_select(rec.for_run(r)))
                 for r in rec.runs}


@pytest.mark.figures
def test_dpfl_table1_quick_numbers(quick_out: Path) -> None:
    _run("dpfl_table1", quick_out)
    assert not (quick_out / "dpfl_table1.png").exists()  # a table: Markdown and verdict only
    md = (quick_out / "dpfl_table1.md").read_text(encoding="utf-8")
    _verdict(quick_out, "dpfl_table1", md)
    rows = _md_rows(md, "method")
    assert len(rows) == 11 + 2  # the 11 baselines and DPFL's 2 quick budgets
    for split, col in (("dir", 0), ("patho", 1)):
        rec, stats = _stats(quick_out, "dpfl_table1", f"dpfl_table1_{split}_local")
        (acc, var), = stats.values()
        assert rows["Local Only"][col] == f"{acc:.2f}"
        assert rows["Local Only"][2 + col] == f"{var:.1f}"
        # the clients' test accuracy at their lowest validation loss, by hand from the rows
        assert _select(rec) == "best_val"
        assert acc == pytest.approx(100 * float(np.mean(rec.selected("test_acc", "val_loss"))))
        rec, stats = _stats(quick_out, "dpfl_table1", f"dpfl_table1_{split}_dpfl")
        for run, (acc, var) in stats.items():
            b = rec.configs[run]["budget"]
            row = {1.0: "DPFL (inf)", 0.2: "DPFL (0.2N)"}[b]
            assert rows[row][col] == f"{acc:.2f}" and rows[row][2 + col] == f"{var:.1f}"
            # one model selection for every method of the table (the baselines have no
            # best-validation selection), so DPFL is scored at its last round too
            assert rec.configs[run]["select"] == "last"
    assert rows["DPFL (inf)"][4:6] == ["84.39", "83.04"]  # the paper's numbers


@pytest.mark.figures
def test_dpfl_table2_quick_numbers(quick_out: Path) -> None:
    _run("dpfl_table2", quick_out)
    md = (quick_out / "dpfl_table2.md").read_text(encoding="utf-8")
    _verdict(quick_out, "dpfl_table2", md)
    rows = _md_rows(md, "tau_init")
    rec, stats = _stats(quick_out, "dpfl_table2", "dpfl_table2")
    assert len(stats) == 4
    for run, (acc, _) in stats.items():
        c = rec.configs[run]
        col = {1.0: 0, 0.2: 1}[c["budget"]]
        assert rows[str(int(c["tau_init"]))][col] == f"{acc:.2f}"
    for tau in ("1", "10"):
        cells = [float(v) for v in rows[tau][:2]]
        assert float(rows[tau][2]) == pytest.approx(np.mean(cells), abs=0.006)


@pytest.mark.figures
def test_dpfl_table3_quick_numbers(quick_out: Path) -> None:
    _run("dpfl_table3", quick_out)
    md = (quick_out / "dpfl_table3.md").read_text(encoding="utf-8")
    _verdict(quick_out, "dpfl_table3", md)
    rows = _md_rows(md, "P")
    rec, stats = _stats(quick_out, "dpfl_table3", "dpfl_table3")
    assert len(stats) == 4
    for run, (acc, _) in stats.items():
        c = rec.configs[run]
        assert c["seed"] == 42
        assert rows[str(c["refresh_every"])][{1.0: 0, 0.2: 1}[c["budget"]]] == f"{acc:.2f}"
    assert rows["20"][3:] == ["82.34", "82.59"]  # the paper's P = 20 row


@pytest.mark.figures
@pytest.mark.parametrize("name, panels", [
    ("dpfl_fig7", ["(a) CIFAR-10 Patho(3) (paper Fig. 1)", "(b) CIFAR-10 Dir(0.1) (paper Fig. 7)"]),
    ("dpfl_fig5", ["FEMNIST, natural split (paper Fig. 5)"]),
    ("dpfl_fig6", ["(a) CINIC-10 Dir(0.1) (paper Fig. 6a)",
                   "(b) CINIC-10 Patho(3) (paper Fig. 6b)"]),
])
def test_dpfl_accuracy_variance_quick(name: str, panels: list[str], quick_out: Path) -> None:
    import matplotlib.pyplot as plt

    _run(name, quick_out)
    fig = plt.figure(plt.get_fignums()[-1])
    axes = [ax for ax in fig.axes if ax.collections]
    assert [ax.get_title() for ax in axes] == panels
    png = quick_out / f"{name}.png"
    assert png.exists() and png.stat().st_size < 150_000
    md = png.with_suffix(".md").read_text(encoding="utf-8")
    _verdict(quick_out, name, md)
    for ax in axes:
        labels = [t.get_text() for t in ax.texts]
        assert len(labels) == 11 + 2 and "DPFL (inf)" in labels and "Local Only" in labels
        xy = dict(zip(labels, map(tuple, ax.collections[0].get_offsets().tolist())))
        # the point of Local Only equals the statistics of its run's records
        prefix = "dpfl_table1" if name == "dpfl_fig7" else name
        split = re.search(r"(Patho|Dir)", ax.get_title())
        config = f"{prefix}_{split.group(1).lower()}_local" if split else f"{prefix}_local"
        runs = quick_out / "runs" / ("dpfl_table1" if name == "dpfl_fig7" else name) / config
        rec = tf.records.load_many(runs)
        (acc, var), = (client_accuracy_stats(rec, run=r, select=_select(rec.for_run(r)))
                       for r in rec.runs)
        assert xy["Local Only"] == pytest.approx((acc, var))
