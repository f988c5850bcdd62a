"""The study's words and numbers on paper (issue 44, item 5): metric names with units, names
given to metrics, bytes in kB/MB/GB, no offset text on an axis, one name per condition, and
the correction for multiple comparisons (Holm-Bonferroni)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topofl import study as S
from topofl.records import Recorder
from topofl.study.cli import main as study_main
from topofl.study.core import resolve_names
from topofl.study.names import MetricNames, byte_unit, default_name
from topofl.study.pairs import pairwise_table
from topofl.study.rendering import condition_names
from topofl.study.statistics import adjust, holm

#: spectral gap, final accuracy of seeds 0 and 1, bytes sent in 10 rounds
GRAPHS = {"ring": (0.05, (0.60, 0.62), 1.3e7), "torus": (0.2, (0.70, 0.73), 2.6e7),
          "complete": (1.0, (0.90, 0.91), 5.2e7)}


@pytest.fixture()
def sweep(tmp_path: Path) -> Path:
    """Three graphs x two seeds; accuracy at rounds 10 and 20, bytes (1e7s) and messages."""
    folder = tmp_path / "sweep"
    folder.mkdir()
    for topo, (gap, finals, per10) in GRAPHS.items():
        for seed, final in enumerate(finals):
            run = f"{topo}-{seed}"
            with Recorder(folder / f"{run}.jsonl", run=run) as rec:
                rec.log_config({"algorithm": "dsgd", "topology": topo, "seed": seed,
                                "rounds": 20, "run_id": run})
                for t, acc in ((9, final / 2), (19, final)):
                    rec.log_many({"test_acc_mean": acc, "bytes": per10 * (t + 1) / 10,
                                  "messages": 40 * (t + 1)}, t)
                rec.log_many({"graph.spectral_gap": gap, "graph.diameter": 4.0 / gap,
                              "graph.consensus_rate": 0.999 + 1e-4 * gap}, 9)
    return folder


def _capture(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """The figures the study draws, kept (matplotlib Figure objects)."""
    from topofl import plotting

    made: dict[str, list[Any]] = {}
    for name in ("metric_scatter", "seed_curves"):
        original = getattr(plotting, name)

        def keep(*args: Any, _f: Any = original, _n: str = name, **kwargs: Any) -> Any:
            fig = _f(*args, **kwargs)
            made.setdefault(_n, []).append(fig)
            return fig

        monkeypatch.setattr(plotting, name, keep)
    return made


def _scatter(made: dict[str, list[Any]], ylabel_part: str) -> Any:
    return next(f for f in made["metric_scatter"]
                if ylabel_part in f.axes[0].get_ylabel().replace("\n", " "))


def _flat(text: str) -> str:
    return text.replace("\n", " ")


# ---------------------------------------------------------------------------- Holm
def test_holm_hand_computed() -> None:
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04 -> 0.06 (order)
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02],
                               rtol=1e-12)
    # five at 0.01 .. 0.05: 0.05, 0.08, 0.09, then 0.08 and 0.05 raised to 0.09
    np.testing.assert_allclose(holm([0.05, 0.04, 0.03, 0.02, 0.01]),
                               [0.09, 0.09, 0.09, 0.08, 0.05], rtol=1e-12)
    # capped at 1; NaN is not a test (m = 2 here)
    out = holm([0.6, math.nan, 0.7])
    assert out[0] == 1.0 and out[2] == 1.0 and math.isnan(out[1])
    assert holm([]).size == 0 and holm([0.03]).tolist() == [0.03]
    # rejections at 5 %: Holm rejects 0.005 (0.0125) and 0.01 (0.0167), stops at 0.03 (0.025)
    assert (holm([0.01, 0.04, 0.03, 0.005]) < 0.05).tolist() == [True, False, False, True]
    assert adjust([0.2, 0.01], "none").tolist() == [0.2, 0.01]
    with pytest.raises(ValueError, match="correction must be one of none, holm, got 'bh'"):
        adjust([0.1], "bh")
    with pytest.raises(ValueError, match=r"p-values must be in \[0, 1\]"):
        holm([1.5])


def _holm_slow(p: list[float]) -> list[float]:
    """Holm's adjusted p-values by their definition, loop by loop."""
    m = len(p)
    order = sorted(range(m), key=lambda i: (p[i], i))
    out = [0.0] * m
    for k, i in enumerate(order):
        out[i] = min(1.0, max((m - j) * p[order[j]] for j in range(k + 1)))
    return out


def _step_down(p: list[float], alpha: float) -> set[int]:
    """Holm's procedure: reject the smallest p-values while p_(k) (m - k + 1) <= alpha."""
    m = len(p)
    rejected: set[int] = set()
    for k, i in enumerate(sorted(range(m), key=lambda i: (p[i], i))):
        if (m - k) * p[i] > alpha:
            break
        rejected.add(i)
    return rejected


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 1000), min_size=1, max_size=12),
       st.sampled_from([0.01, 0.05, 0.1]))
def test_holm_is_the_step_down_procedure_and_monotone(ints: list[int], alpha: float) -> None:
    p = [i / 1000 for i in ints]
    adj = holm(p)
    assert adj.tolist() == _holm_slow(p)
    assert {i for i, a in enumerate(adj) if a <= alpha} == _step_down(p, alpha)
    m = len(p)
    for i in range(m):
        assert p[i] <= adj[i] <= min(1.0, m * p[i])
        for j in range(m):
            if p[i] <= p[j]:
                assert adj[i] <= adj[j]  # the order of the p-values is kept


# ---------------------------------------------------------------------------- pairs
def _runs(seed: int = 3) -> pd.DataFrame:
    """Four conditions x five seeds of final accuracy, two of them close to each other."""
    rng = np.random.default_rng(seed)
    rows = []
    for k, cond in enumerate("abcd"):
        for s in range(5):
            rows.append({"condition": cond, "seed": s,
                         "final": 0.5 + 0.01 * k * (k != 1) + 0.02 * rng.normal(),
                         "rounds_to_target": 30.0 - 5 * (k == 3) + 10 * (s == 4 and k == 0)})
    return pd.DataFrame(rows)


def test_pairwise_holm_adjusts_the_two_sided_p_of_the_rows_tested() -> None:
    runs = _runs()
    raw = pairwise_table(runs)
    corrected = pairwise_table(runs, correction="holm")
    tested = raw["verdict"].isin(["A ahead", "B ahead", "not decided"])
    assert tested.sum() >= 6 and not tested.all()  # rounds: some pairs equal in every seed
    two = np.minimum(1.0, 2 * np.minimum(raw["p_a_better"], raw["p_b_better"]))
    # without a correction p_adjusted is the two-sided p and the verdicts are the old rule
    np.testing.assert_array_equal(raw.loc[tested, "p_adjusted"], two[tested])
    assert raw.loc[~tested, "p_adjusted"].isna().all()
    old = np.where(raw["p_a_better"] < 0.025, "A ahead",
                   np.where(raw["p_b_better"] < 0.025, "B ahead", "not decided"))
    assert (raw.loc[tested, "verdict"] == old[tested]).all()
    # Holm over the tested rows only; the one-sided p-values are untouched
    np.testing.assert_array_equal(corrected.loc[tested, "p_adjusted"], holm(two[tested]))
    for col in ("mean_diff", "ci_low", "ci_high", "p_a_better", "p_b_better"):
        np.testing.assert_array_equal(corrected[col], raw[col])
    decided = corrected["verdict"].isin(["A ahead", "B ahead"])
    assert (corrected.loc[decided, "p_adjusted"] < 0.05).all()
    assert (raw.loc[decided, "verdict"] == corrected.loc[decided, "verdict"]).all()
    assert decided.sum() < raw["verdict"].isin(["A ahead", "B ahead"]).sum()  # fewer survive


def test_correlations_holm(tmp_path: Path) -> None:
    runs = pd.DataFrame({"condition": np.repeat(list("abcde"), 2),
                         "x": np.repeat([1.0, 2, 3, 4, 5], 2),
                         "up": np.repeat([1.0, 2, 3, 4, 5], 2) + np.tile([0, 0.1], 5),
                         "mixed": np.repeat([2.0, 1, 3, 5, 4], 2)})
    runs["x2"] = runs["x"] ** 2  # the ranks of x
    raw = S.correlation_table(runs, ["x", "x2"], ["up", "mixed"], n_boot=5)
    holm_t = S.correlation_table(runs, ["x", "x2"], ["up", "mixed"], n_boot=5,
                                 correction="holm")
    np.testing.assert_array_equal(raw["p_adjusted"], raw["p_value"])
    np.testing.assert_array_equal(holm_t["p_adjusted"], holm(raw["p_value"].to_numpy()))
    # rho = 1 over 5 conditions: p = 2/120 = 0.0167, significant alone, not among four tests
    # (two of them at 0.0167: Holm gives both 4 x 0.0167 = 0.067)
    up = raw["convergence_metric"] == "up"
    np.testing.assert_allclose(raw.loc[up, "p_value"], 2 / 120, rtol=1e-12)
    assert (raw.loc[up, "conclusion"] == "significant").all()
    np.testing.assert_allclose(holm_t.loc[up, "p_adjusted"], 4 * 2 / 120, rtol=1e-12)
    assert (holm_t.loc[up, "conclusion"] == "not significant").all()
    assert (holm_t["p_value"] == raw["p_value"]).all()


def test_study_md_says_whether_it_corrects(sweep: Path, tmp_path: Path) -> None:
    plain = S.study(sweep, target=0.5, bootstrap=S.Bootstrap(n_boot=5),
                    output=S.Output(figures=False))
    n = int(plain.pairs["p_adjusted"].notna().sum())
    assert n == 12  # 3 pairs x 4 metrics (final, best, auc, bytes): rounds equal (20)
    assert (f"The verdicts are not corrected for the {n} comparisons tested (if nothing "
            f"differed, up to about {0.05 * n:.2g} of them could pass at 5 % by chance; "
            "`--correction holm` corrects for them).") in plain.markdown
    assert "not corrected for the 6 correlations tested" in plain.markdown or \
        "Too few conditions to correlate" in plain.markdown
    assert "p (Holm)" not in plain.markdown
    holm_res = S.study(sweep, target=0.5, correction="holm", bootstrap=S.Bootstrap(n_boot=5),
                       output=S.Output(figures=False))
    assert holm_res.correction == "holm"
    assert (f"Holm–Bonferroni-corrected for the {n} comparisons tested") in holm_res.markdown
    assert "| p (Holm) |" in holm_res.markdown
    with pytest.raises(ValueError, match="correction must be one of none, holm"):
        S.study(sweep, target=0.5, correction="bonferroni", bootstrap=S.Bootstrap(n_boot=5),
                output=S.Output(figures=False))


# ---------------------------------------------------------------------------- names
def test_metric_names_in_words_with_units() -> None:
    assert default_name("global_acc_mean") == ("global accuracy (mean over clients)",
                                               "fraction correct")
    assert default_name("val_loss") == ("validation loss", "")
    assert default_name("train_acc_std")[0] == "training accuracy (std over clients)"
    assert default_name("honest_test_acc_min")[0] == "honest clients' test accuracy (lowest client)"
    assert default_name("test_acc_median") == ("test acc median", "as recorded")
    names = MetricNames.for_values("global_acc_mean", 0.8, {},
                                   {"round_bytes": [2.6e8], "bytes_to_target": [3e9, math.inf]})
    assert names.label("round_bytes") == "bytes a round (MB)"
    assert names.scale("round_bytes") == 1e6
    assert names.label("bytes_to_target") == \
        "bytes to global accuracy (mean over clients) ≥ 0.8 (GB)"
    assert names.label("time_to_target").endswith("(s)")
    assert names.label("sim_time") == "simulated time (s)"
    assert names.label("wall_time") == "wall-clock time (s)"
    assert names.label("final") == "final global accuracy (mean over clients, fraction correct)"
    assert names.label("rounds_to_target").endswith("≥ 0.8 (rounds)")
    # a name given replaces the words and keeps the unit (once)
    given = MetricNames.for_values("global_acc_mean", 0.8,
                                   {"global_acc_mean": "accuracy", "round_bytes": "traffic (MB)"},
                                   {"round_bytes": [2.6e8]})
    assert given.label("final") == "final accuracy (fraction correct)"
    assert given.label("round_bytes") == "traffic (MB)"


def test_bytes_are_scaled_to_kb_mb_gb() -> None:
    assert byte_unit([999.0]) == (1e3, "kB") and byte_unit([5e4, 99_999.0]) == (1e3, "kB")
    assert byte_unit([1e6]) == (1e6, "MB") and byte_unit([2.6e8, math.inf]) == (1e6, "MB")
    assert byte_unit([-3e9, 1.0]) == (1e9, "GB")
    assert byte_unit([math.inf, math.nan]) == (1e6, "MB") and byte_unit([0.0]) == (1e6, "MB")


def test_labels_name_metrics_and_conditions() -> None:
    conds = ["topology=ring", "topology=final"]
    assert resolve_names({"ring": "Ring", "graph.spectral_gap": "gap", "final": "last"},
                         conds[:1], ["final", "spectral_gap"]) == (
        {"topology=ring": "Ring"}, {"spectral_gap": "gap", "final": "last"})
    with pytest.raises(ValueError, match="names both the metric 'final' and a condition"):
        resolve_names({"final": "x"}, conds, ["final"])
    assert resolve_names({"topology=final": "F"}, conds, ["final"]) == (
        {"topology=final": "F"}, {})
    with pytest.raises(ValueError, match=r"labels give two metrics the name\(s\) \['x'\]"):
        resolve_names({"final": "x", "best": "x"}, conds[:1], ["final", "best"])
    with pytest.raises(ValueError, match="metric 'spectral_gap' is given two names"):
        resolve_names({"spectral_gap": "a", "graph.spectral_gap": "b"}, conds, ["spectral_gap"])
    with pytest.raises(TypeError, match="non-empty name"):
        resolve_names({"final": " "}, conds, ["final"])


def test_one_name_per_condition(sweep: Path) -> None:
    res = S.study(sweep, target=0.5, labels={"torus": "Torus"}, bootstrap=S.Bootstrap(n_boot=5),
                  output=S.Output(figures=False))
    md = res.markdown
    key = next(p for p in md.split("\n\n") if p.startswith("Condition names"))
    assert key == ("Condition names (as the CSV files label them): **complete** = "
                   "`topology=complete`; **ring** = `topology=ring`; **Torus** = "
                   "`topology=torus`.")
    rest = md.replace(key, "")
    for label in ("topology=ring", "topology=torus", "topology=complete"):
        assert label not in rest  # tables, verdicts and figures use the one name
    assert "| Torus | 2 |" in md and "**ring** vs **Torus**" in md
    assert "| complete | ring | final test accuracy" in md
    # two conditions that would read alike keep their labels
    assert condition_names(["a=x_y", "a=x y", "b=1"], {}) == {
        "a=x_y": "a=x_y", "a=x y": "a=x y", "b=1": "b 1"}
    assert condition_names(["topology=ring", "topology=torus"], {"topology=ring": "torus"}) == {
        "topology=ring": "torus", "topology=torus": "topology=torus"}


# ---------------------------------------------------------------------------- on paper
def test_study_shows_bytes_in_mb_and_keeps_them_in_the_csv(
        sweep: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = _capture(monkeypatch)
    out = tmp_path / "o"
    res = S.study(sweep, out, target=0.5, bootstrap=S.Bootstrap(n_boot=5))
    # bytes to 0.5: every run reaches it at round 20, having sent twice its bytes of 10 rounds
    cond = res.conditions.set_index("condition")
    assert cond.loc["topology=torus", "bytes_to_target_mean"] == 5.2e7
    back = pd.read_csv(out / "conditions.csv").set_index("condition")
    assert back.loc["topology=torus", "bytes_to_target_mean"] == 5.2e7  # the CSV keeps bytes
    header = "bytes to test accuracy (mean over clients) ≥ 0.5 (MB)"
    assert f"| {header} |" in res.markdown
    row = next(line for line in res.markdown.splitlines() if line.startswith("| torus | 2 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    table = next(line for line in res.markdown.splitlines() if f"| {header} |" in line)
    assert cells[[c.strip() for c in table.strip("|").split("|")].index(header)] == "52"
    assert "5.2e+07" not in res.markdown
    fig = _scatter(made, "bytes to")
    assert _flat(fig.axes[0].get_ylabel()) == header
    ys = sorted(float(ln.get_ydata()[0]) for ln in fig.axes[0].lines if ln.get_marker() == "o")
    assert ys == [26.0, 52.0, 104.0]  # MB: the condition means / 1e6


def _offsets(figures: list[Any]) -> list[str]:
    out = []
    for fig in figures:
        fig.canvas.draw()
        for ax in (a for a in fig.axes if a.get_visible()):
            out += [axis.get_offset_text().get_text() for axis in (ax.xaxis, ax.yaxis)]
    return out


def test_no_offset_text_on_any_axis(sweep: Path, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from topofl.study import rendering

    made = _capture(monkeypatch)
    S.study(sweep, tmp_path / "o", target=0.5, bootstrap=S.Bootstrap(n_boot=5))
    figures = made["seed_curves"] + made["metric_scatter"]
    assert len(figures) == 1 + 6  # curves; rounds, messages, bytes, final, best, auc
    assert set(_offsets(figures)) == {""}
    # the consensus rate (0.99900 .. 0.99910) would carry "+9.99e-1" under each panel
    monkeypatch.setattr(rendering, "plain_ticks", lambda fig: None)
    made.clear()
    S.study(sweep, tmp_path / "o2", target=0.5, bootstrap=S.Bootstrap(n_boot=5))
    assert "+9.99e\u22121" in _offsets(made["metric_scatter"])
    # bytes in bytes would carry a "1e8" above the axis: shown in MB, they need none
    bytes_fig = _scatter(made, "bytes to")
    labels = [t.get_text() for t in bytes_fig.axes[0].get_yticklabels()]
    assert labels and not any("e" in t for t in labels)


def test_labels_are_in_the_figures_and_the_markdown(
        sweep: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    made = _capture(monkeypatch)
    out = tmp_path / "o"
    assert study_main([str(sweep), "--out", str(out), "--n-boot", "5", "--target", "0.5",
                       "--label", "test_acc_mean=accuracy", "--label", "spectral_gap=gap",
                       "--label", "bytes_to_target=traffic to 50 %", "--label", "ring=Ring",
                       "--correction", "holm"]) == 0
    capsys.readouterr()
    curves = made["seed_curves"][0]
    assert curves.axes[0].get_ylabel() == "accuracy (fraction correct)"
    assert curves.axes[0].get_title().startswith("accuracy: mean over seeds")
    scatter = _scatter(made, "traffic")
    assert _flat(scatter.axes[0].get_ylabel()) == "traffic to 50 % (MB)"
    assert _flat(scatter.axes[0].get_xlabel()) == "gap (unitless)"
    assert "(Holm " in scatter.axes[0].get_title()
    final = _scatter(made, "final accuracy")
    assert _flat(final.axes[0].get_ylabel()) == "final accuracy (fraction correct)"
    md = (out / "study.md").read_text(encoding="utf-8")
    assert "| traffic to 50 % (MB) |" in md and "| gap (unitless) |" in md
    assert "**Ring** vs " in md or " vs **Ring**" in md
    assert "on final accuracy by" in md or "final accuracy: no difference" in md
    assert "accuracy = `test_acc_mean`" in md and "gap = `spectral_gap`" in md
    assert "Holm–Bonferroni-corrected for the" in md
    body = [line for line in md.split("## Definitions")[0].splitlines()
            if not line.startswith(("Generated by", "![traffic to 50 %](scatter_"))]
    for text in ("test_acc_mean >=", "spectral_gap", "bytes_to_target", "final test"):
        assert not [line for line in body if text in line], text
    with pytest.raises(SystemExit):
        study_main([str(sweep), "--out", str(out), "--correction", "bh"])
    assert "invalid choice: 'bh'" in capsys.readouterr().err
    assert study_main([str(sweep), "--out", str(out), "--label", "fianl=Final"]) == 2
    assert "label 'fianl' names no condition and no metric" in capsys.readouterr().err
