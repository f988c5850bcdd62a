"""The topology-vs-convergence study: grouping by seed, statistics, files, command line."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import stats

import topofl as tf
from topofl import study as S
from topofl.records import Recorder
from topofl.study import rendering, statistics
from topofl.study.cli import main as study_main


def _write_run(folder: Path, run: str, config: dict[str, Any], curve: list[tuple[int, float]],
               graph: dict[str, float], *, graph_rounds: tuple[int, ...] = (),
               extra: dict[str, float] | None = None) -> Path:
    """A records file in the HEADER.md schema, written with Recorder."""
    path = folder / f"{run}.jsonl"
    with Recorder(path, run=run) as rec:
        rec.log_config(config)
        for k, (t, v) in enumerate(curve):
            rec.log("test_acc_mean", v, t)
            if k == 0 or t in graph_rounds:
                rec.log_many({f"graph.{m}": val for m, val in graph.items()}, t)
        for m, v in (extra or {}).items():
            rec.log(m, v, curve[-1][0])
    return path


def _config(topology: str, seed: int, **kw: Any) -> dict[str, Any]:
    return {"algorithm": "dsgd", "topology": topology, "data": "digits", "n_clients": 8,
            "partition": "shards", "partition_params": {"shards_per_client": 2},
            "model": "logistic", "model_params": {}, "rounds": 30, "seed": seed, "lr": 0.1,
            "batch_size": 16, "eval_every": 10, "run_id": f"{topology}-{seed}",
            "records_path": f"runs/{topology}-{seed}.jsonl", **kw}


GAPS = {"ring": 0.05, "torus": 0.2, "complete": 1.0}
# accuracy after 10, 20, 30 rounds, per topology and seed
CURVES = {
    ("ring", 0): [0.2, 0.4, 0.6], ("ring", 1): [0.2, 0.5, 0.7],
    ("torus", 0): [0.3, 0.6, 0.8], ("torus", 1): [0.4, 0.6, 0.7],
    ("complete", 0): [0.5, 0.8, 0.9], ("complete", 1): [0.6, 0.8, 0.9],
}


@pytest.fixture()
def sweep(tmp_path: Path) -> Path:
    folder = tmp_path / "sweep"
    folder.mkdir()
    for (topo, seed), vals in CURVES.items():
        _write_run(folder, f"{topo}-{seed}", _config(topo, seed),
                   list(zip((9, 19, 29), vals)),
                   {"spectral_gap": GAPS[topo], "n": 8, "edges_per_node": 2.0},
                   extra={"consensus_distance": 1.0 / GAPS[topo]})
    return folder


# ---------------------------------------------------------------------------- grouping
def test_runs_and_conditions_from_recorder_files(sweep: Path) -> None:
    res = S.study(sweep, target=0.75, bootstrap=S.Bootstrap(n_boot=50))
    runs = res.runs.set_index("run")
    assert len(runs) == 6
    assert runs.loc["torus-1", "condition"] == "topology=torus"
    assert runs.loc["torus-1", "seed"] == 1
    assert runs.loc["ring-0", "spectral_gap"] == 0.05
    # hand-computed: ring-1 reaches 0.75 never; torus-0 after 30 rounds; complete-0 after 20
    assert math.isinf(runs.loc["ring-1", "rounds_to_target"])
    assert not runs.loc["ring-1", "reached"]
    assert runs.loc["torus-0", "rounds_to_target"] == 30
    assert runs.loc["complete-0", "rounds_to_target"] == 20
    assert runs.loc["torus-1", "final"] == 0.7 and runs.loc["torus-1", "best"] == 0.7
    # AUC of 0.3, 0.6, 0.8 at 10, 20, 30: (10 * 0.45 + 10 * 0.7) / 20
    assert runs.loc["torus-0", "auc"] == pytest.approx(0.575)
    assert runs.loc["complete-1", "final_consensus_distance"] == 1.0
    cond = res.conditions.set_index("condition")
    assert list(cond.index) == ["topology=complete", "topology=ring", "topology=torus"]
    assert cond.loc["topology=ring", "n_seeds"] == 2
    assert cond.loc["topology=ring", "seeds"] == "0, 1"
    assert cond.loc["topology=ring", "final_mean"] == pytest.approx(0.65)
    assert cond.loc["topology=ring", "final_std"] == pytest.approx(np.std([0.6, 0.7], ddof=1))
    assert math.isinf(cond.loc["topology=ring", "rounds_to_target_mean"])
    # torus-1 ends at 0.7 and never reaches 0.75: the condition mean is inf, half reached
    assert math.isinf(cond.loc["topology=torus", "rounds_to_target_mean"])
    assert cond.loc["topology=torus", "reached_mean"] == 0.5
    assert cond.loc["topology=complete", "rounds_to_target_mean"] == 20
    assert cond.loc["topology=complete", "rounds_to_target_std"] == 0
    # n and edges_per_node are equal everywhere: in the run table, not correlated
    assert "n" in res.runs.columns and res.topology_metrics == ["spectral_gap"]
    # no run recorded messages, bytes or sim_time: no cost-to-target column
    assert res.convergence_metrics == ["rounds_to_target", "final", "best", "auc",
                                       "final_consensus_distance"]


def test_only_seed_and_per_run_keys_are_ignored(tmp_path: Path) -> None:
    for lr in (0.1, 0.2):
        for seed in (0, 1):
            _write_run(tmp_path, f"ring-lr{lr}-s{seed}", _config("ring", seed, lr=lr),
                       [(0, 0.5 + lr), (1, 0.6 + lr)], {"spectral_gap": 0.1})
    runs = S.run_table(tf.records.load_many(tmp_path), target=0.5)
    assert sorted(set(runs["condition"])) == ["lr=0.1", "lr=0.2"]
    assert runs.groupby("condition").size().tolist() == [2, 2]


def test_old_schema_headers_group_by_seed(tmp_path: Path) -> None:
    def old(topo: str, seed: int) -> dict[str, Any]:
        return {
            "run": {"rounds": 2, "seed": seed, "run_id": f"{topo}-{seed}", "batch_size": 8,
                    "records_path": None},
            "algorithm": {"name": "dsgd", "lr": 0.1},
            "topology": {"name": topo, "n": 8, "params": {"n": 8, "labels_sha1": f"{seed}"}},
            "data": {"dataset": "digits", "partition": {
                "name": "shards", "params": {"n_clients": 8, "seed": seed},
                "num_assigned": 100 + seed}, "seed": seed},
            "model": "SplitModel[650]",
            "versions": {"topofl": "0.1.0", "torch": "x"},
        }

    for topo in ("ring", "complete"):
        for seed in (0, 1):
            _write_run(tmp_path, f"{topo}-{seed}", old(topo, seed), [(0, 0.5), (1, 0.7)],
                       {"spectral_gap": GAPS[topo]})
    runs = S.run_table(tf.records.load_many(tmp_path), target=0.6)
    assert sorted(set(runs["condition"])) == ["topology=complete:n=8", "topology=ring:n=8"]
    assert runs["seed"].tolist() == [0, 1, 0, 1]
    assert (runs["rounds_to_target"] == 2).all()


def test_time_varying_graph_metrics_are_averaged_over_rounds(tmp_path: Path) -> None:
    path = tmp_path / "tv.jsonl"
    with Recorder(path, run="tv") as rec:
        rec.log_config({"topology": "random_directed", "seed": 0})
        for t, gap in ((0, 0.2), (1, 0.4), (2, 0.9)):
            rec.log("test_acc_mean", 0.1 * t, t)
            rec.log("graph.spectral_gap", gap, t)
            rec.log("graph.diameter", None, t)
    runs = S.run_table(tf.records.load(path), target=0.1)
    assert runs.loc[0, "spectral_gap"] == pytest.approx(0.5)
    assert math.isnan(runs.loc[0, "diameter"])
    assert runs.loc[0, "rounds_to_target"] == 2


def test_normalize_config_new_and_old() -> None:
    new = S.tables.normalize_config(_config("ring", 3))
    assert new["partition_params.shards_per_client"] == 2 and new["seed"] == 3
    with pytest.raises(TypeError, match="mapping"):
        S.tables.normalize_config(["ring"])  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- statistics
def test_spearman_known_ranks_and_bootstrap_interval_hand_computed() -> None:
    # x = 1, 2, 3 by condition; y of condition a is 1, 1, 5 over its three seeds, of b and c
    # fixed at 2 and 3. A draw resamples a's seeds: k ~ Bin(3, 1/3) copies of the 5 give the
    # mean 1 + 4k/3: k = 0 -> a < b < c, rho = 1 (8/27); k = 1 -> b < a < c, rho = 0.5
    # (12/27); k >= 2 -> b < c < a, rho = -0.5 (7/27). The 2.5 % and 97.5 % quantiles are
    # -0.5 and 1; the point estimate on the means (7/3, 2, 3) is 0.5.
    runs = pd.DataFrame({"condition": list("aaabbbccc"),
                         "x": [1, 1, 1, 2, 2, 2, 3, 3, 3], "y": [1, 1, 5, 2, 2, 2, 3, 3, 3],
                         "up": [1, 1, 1, 2, 2, 2, 3, 3, 3], "down": [9, 9, 9, 5, 5, 5, 1, 1, 1]})
    c = S.correlation_table(runs, ["x"], ["y", "up", "down"], n_boot=2000, seed=1)
    c = c.set_index("convergence_metric")
    assert c.loc["up", "spearman"] == 1.0 and c.loc["down", "spearman"] == -1.0
    assert (c.loc["up", ["ci_low", "ci_high"]] == 1.0).all()
    assert (c.loc["down", ["ci_low", "ci_high"]] == -1.0).all()
    assert c.loc["y", "spearman"] == pytest.approx(0.5)
    assert c.loc["y", "ci_low"] == -0.5 and c.loc["y", "ci_high"] == 1.0
    assert (c["n_conditions"] == 3).all() and (c["n_boot"] == 2000).all()
    assert (c["min_seeds"] == 3).all() and (c["n_left_out"] == 0).all()
    # three conditions: even rho = 1 is one ordering of six, p = 1/3
    assert c.loc["up", "p_value"] == pytest.approx(1 / 3)
    assert (c["conclusion"] == "too few conditions").all()


def test_bootstrap_interval_ends_are_resampled_rhos() -> None:
    # three conditions of three seeds: 10 multisets of seeds each, 1000 resamples in all;
    # every interval end must be the rho of one of them
    rng = np.random.default_rng(3)
    runs = pd.DataFrame({"condition": np.repeat(list("abc"), 3),
                         "x": rng.normal(size=9), "y": rng.normal(size=9)})
    multisets = list(itertools.combinations_with_replacement(range(3), 3))
    possible = set()
    for pick in itertools.product(multisets, repeat=3):
        mx = [runs["x"].to_numpy()[3 * k + np.array(p)].mean() for k, p in enumerate(pick)]
        my = [runs["y"].to_numpy()[3 * k + np.array(p)].mean() for k, p in enumerate(pick)]
        possible.add(round(float(stats.spearmanr(mx, my)[0]), 10))
    c = S.correlation_table(runs, ["x"], ["y"], n_boot=500, seed=0).loc[0]
    assert round(c["ci_low"], 10) in possible and round(c["ci_high"], 10) in possible


def test_bootstrap_needs_three_seeds_per_condition() -> None:
    runs = pd.DataFrame({"condition": list("aabbbccc") + ["d"] * 3,
                         "x": np.arange(11.0), "y": np.arange(11.0)})
    c = S.correlation_table(runs, ["x"], ["y"], n_boot=50).loc[0]
    assert math.isnan(c["ci_low"]) and math.isnan(c["ci_high"]) and c["min_seeds"] == 2
    # without condition a (its metric does not apply there) the interval is back
    runs.loc[runs["condition"] == "a", "x"] = np.nan
    c = S.correlation_table(runs, ["x"], ["y"], n_boot=50).loc[0]
    assert c["min_seeds"] == 3 and c["n_conditions"] == 3 and c["n_left_out"] == 1
    assert c["ci_low"] == 1.0 and c["ci_high"] == 1.0


def test_bootstrap_is_seeded() -> None:
    rng = np.random.default_rng(0)
    runs = pd.DataFrame({"condition": np.repeat(list("abcde"), 3),
                         "x": rng.normal(size=15), "y": rng.normal(size=15)})
    a = S.correlation_table(runs, ["x"], ["y"], n_boot=300, seed=5)
    b = S.correlation_table(runs, ["x"], ["y"], n_boot=300, seed=5)
    c = S.correlation_table(runs, ["x"], ["y"], n_boot=300, seed=6)
    pd.testing.assert_frame_equal(a, b)
    assert a["spearman"].equals(c["spearman"])  # the point estimate has no randomness
    assert -1 <= a.loc[0, "ci_low"] <= a.loc[0, "ci_high"] <= 1


def test_spearman_undefined_cases() -> None:
    assert math.isnan(S.spearman([1, 2], [1, 2])[0])  # fewer than three pairs
    assert math.isnan(S.spearman([1, 2, 3], [4, 4, 4])[0])  # constant
    rho, _, n = S.spearman([1, 2, np.nan, 4], [1, 2, 3, 5])
    assert rho == 1.0 and n == 3
    runs = pd.DataFrame({"condition": list("ab"), "x": [1, 2], "y": [1, 2]})
    c = S.correlation_table(runs, ["x"], ["y"], n_boot=10)
    assert c[["spearman", "ci_low", "ci_high"]].isna().all(axis=None)
    with pytest.raises(ValueError, match="n_boot must be an integer >= 1"):
        S.correlation_table(runs, ["x"], ["y"], n_boot=0)
    with pytest.raises(ValueError, match=r"columns \['z'\]"):
        S.correlation_table(runs, ["z"], ["y"])


def _rho_formula(a: list[float], b: list[float]) -> float:
    """1 - 6 sum d^2 / (n (n^2 - 1)) for distinct values (the textbook formula)."""
    ra = stats.rankdata(a)
    rb = stats.rankdata(b)
    n = len(a)
    return 1 - 6 * float(np.sum((ra - rb) ** 2)) / (n * (n * n - 1))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(-50, 50), st.integers(-50, 50)), min_size=3, max_size=12,
                unique_by=(lambda p: p[0], lambda p: p[1])))
def test_spearman_equals_the_textbook_formula(pairs: list[tuple[int, int]]) -> None:
    a, b = [float(p[0]) for p in pairs], [float(p[1]) for p in pairs]
    assert S.spearman(a, b)[0] == pytest.approx(_rho_formula(a, b), abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31), st.integers(3, 7), st.booleans())
def test_vectorized_bootstrap_rho_matches_scipy_row_by_row(seed: int, k: int, nan: bool) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, size=(25, k)).astype(float)  # many ties
    y = rng.integers(0, 4, size=(25, k)).astype(float)
    y[rng.random((25, k)) < 0.1] = np.inf
    if nan:
        x[rng.random((25, k)) < 0.15] = np.nan
    got = statistics._spearman_rows(x, y)
    for b in range(25):
        ok = ~np.isnan(x[b]) & ~np.isnan(y[b])
        xs, ys = x[b][ok], y[b][ok]
        if ok.sum() < 3 or np.unique(xs).size < 2 or np.unique(ys).size < 2:
            assert np.isnan(got[b])
        else:
            assert got[b] == pytest.approx(stats.spearmanr(xs, ys)[0], abs=1e-12)


def _exact_p_reference(x: list[float], y: list[float]) -> float:
    """Two-sided p of Spearman's rho by listing every pairing of y with x (slow, obvious)."""
    obs = abs(stats.spearmanr(x, y)[0])
    hits = [abs(stats.spearmanr(x, list(p))[0]) >= obs - 1e-9
            for p in itertools.permutations(y)]
    return sum(hits) / len(hits)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=3, max_size=6))
def test_exact_p_value_is_the_permutation_distribution(pairs: list[tuple[int, int]]) -> None:
    x, y = [float(p[0]) for p in pairs], [float(p[1]) for p in pairs]  # ties included
    rho, p, n = S.spearman(x, y)
    if math.isnan(rho):
        return
    assert n == len(x) and p == pytest.approx(_exact_p_reference(x, y), abs=1e-12)


def test_p_value_smallest_attainable_and_scipy_above_nine() -> None:
    for n, smallest in ((3, 1 / 3), (4, 1 / 12), (5, 1 / 60)):
        c = S.correlation_table(pd.DataFrame({"condition": list(range(n)),
                                              "x": range(n), "y": range(n)}),
                                ["x"], ["y"], n_boot=5).loc[0]
        assert c["spearman"] == pytest.approx(1.0)
        assert c["p_value"] == pytest.approx(smallest) and c["min_p"] == pytest.approx(smallest)
        assert c["conclusion"] == ("too few conditions" if n <= 4 else "significant")
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=12), rng.normal(size=12)
    rho, p, n = S.spearman(x, y)
    assert (rho, p) == pytest.approx(tuple(stats.spearmanr(x, y)))


def test_float_noise_is_neither_spread_nor_order() -> None:
    # a deterministic metric computed twice differs in the last bits
    runs = pd.DataFrame({"condition": list("aabbcc"), "seed": [0, 1] * 3,
                         "gap": [0.3, 0.1 + 0.2, 0.5, 0.5 + 1e-16, 0.9, 0.9],
                         "epn": [4.0, 4.0, 4.0 + 1e-13, 4.0, 6.0, 6.0],
                         "acc": [0.5, 0.6, 0.7, 0.8, 0.9, 0.95]})
    cond = S.condition_table(runs, ["gap", "epn"]).set_index("condition")
    assert (cond["gap_std"] == 0).all() and (cond["epn_std"] == 0).all()
    # epn of a and b is a tie, not a < b
    assert S.spearman([4.0, 4.0 + 1e-13, 6.0], [1, 2, 3])[0] == pytest.approx(
        stats.spearmanr([4, 4, 6], [1, 2, 3])[0])
    assert "± 0" not in rendering._mean_std(cond.reset_index().to_dict("records")[0], "gap")


def test_conclusions() -> None:
    f = statistics._conclusion
    assert f(math.nan, math.nan, math.nan, math.nan, math.nan, 0.05) == "undefined"
    assert f(1.0, 0.083, 0.083, 1.0, 1.0, 0.05) == "too few conditions"
    assert f(0.4, 0.3, 1e-4, -0.2, 0.8, 0.05) == "not significant"
    assert f(0.8, 0.01, 1e-4, -0.1, 0.9, 0.05) == "significant, seed interval covers 0"
    assert f(0.8, 0.01, 1e-4, 0.3, 0.9, 0.05) == "significant"
    assert f(0.8, 0.01, 1e-4, math.nan, math.nan, 0.05) == "significant"


def test_readable_labels() -> None:
    r = S.rendering.readable_condition
    assert r("topology=ring") == "ring"
    assert r("topology=torus:rows=10,cols=10") == "torus (rows 10, cols 10)"
    assert r("topology=el_oracle:s=3") == "EL-Oracle (s 3)"
    assert r("lr=0.1, topology=stl_fw:budget=4") == "lr 0.1, STL-FW (budget 4)"
    assert r("all runs") == "all runs"
    assert "unitless" in rendering._axis_label("spectral_gap")
    assert "nodes" in rendering._axis_label("effective_neighbors")
    assert rendering._axis_label("clique_skew_max").startswith("clique skew")


# ---------------------------------------------------------------------------- the study
def test_study_writes_tables_figures_and_markdown(sweep: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    res = S.study(sweep, out, target=0.75, bootstrap=S.Bootstrap(n_boot=100, seed=0))
    names = sorted(p.name for p in res.files)
    assert names == sorted(["runs.csv", "conditions.csv", "correlations.csv", "pairs.csv",
                            "curves.png", *(f"scatter_{c}.png" for c in res.convergence_metrics),
                            "study.md"])
    for p in res.files:
        assert p.exists() and p.stat().st_size > 200, p
    back = pd.read_csv(out / "runs.csv")
    assert back["run"].tolist() == res.runs["run"].tolist()
    md = (out / "study.md").read_text(encoding="utf-8")
    assert md == res.markdown
    assert "![curves](curves.png)" in md and "scatter_final.png" in md
    assert "never in 1/2 seeds" in md  # ring and torus: one seed each never reached 0.75
    corr = res.correlations.set_index(["topology_metric", "convergence_metric"])
    # gap order ring < torus < complete; final means 0.65 < 0.75 < 0.9
    assert corr.loc[("spectral_gap", "final"), "spearman"] == pytest.approx(1.0)
    assert corr.loc[("spectral_gap", "final_consensus_distance"), "spearman"] == -1.0
    # three conditions: nothing can be concluded, and the correlations collapse to one line
    corr_part = md.split("## Spearman rank correlation\n\n", 1)[1].split("\n\n## ", 1)[0]
    assert corr_part == (
        "**Too few conditions to correlate:** with n = 3 conditions even ρ = ±1 has p = 0.33 "
        "≥ 0.05, so none of the 5 correlations (`correlations.csv`) is evidence; compare the "
        "conditions pairwise (above).")
    assert "| spectral_gap | final" not in md and len(res.correlations) == 5
    # every Markdown table row has as many cells as its header
    for block in md.split("\n\n"):
        lines = [line for line in block.splitlines() if line.startswith("|")]
        if lines:
            assert len({line.replace("\\|", "").count("|") for line in lines}) == 1, block


def test_study_default_target_and_skipped_runs(sweep: Path) -> None:
    with Recorder(sweep / "empty.jsonl", run="empty") as rec:
        rec.log_config(_config("star", 0))
        rec.log("train_loss", 1.0, 29)  # finished, without the metric
    res = S.study(sweep, bootstrap=S.Bootstrap(n_boot=10))
    bests = [0.6, 0.7, 0.8, 0.7, 0.9, 0.9]
    assert res.target == pytest.approx(0.9 * float(np.median(bests)))
    assert res.skipped == ["empty"] and "empty" not in set(res.runs["run"])
    assert "Left out" in res.markdown


def test_study_errors(sweep: Path) -> None:
    with pytest.raises(ValueError, match="no run recorded the metric 'global_acc_mean'"):
        S.study(sweep, metric="global_acc_mean")
    with pytest.raises(ValueError, match=r"topology metrics \['nope'\] were not recorded"):
        S.study(sweep, topology_metrics=["graph.nope"])
    with pytest.raises(ValueError, match="band must be"):
        S.study(sweep, output=S.Output(band="iqr"))


def test_where_keeps_the_runs_of_one_setting(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    # one folder, two heterogeneity levels: each study sees only its level's runs, and its
    # conditions are the graphs (the level is no longer a varying key)
    folder = tmp_path / "two"
    folder.mkdir()
    for c, shift in ((1, 0.0), (10, 0.05)):
        for (topo, seed), vals in CURVES.items():
            cfg = _config(topo, seed, partition="pathological",
                          partition_params={"classes_per_client": c})
            cfg["run_id"] = f"{topo}-{seed}-c{c}"
            _write_run(folder, cfg["run_id"], cfg,
                       list(zip((9, 19, 29), [v + shift for v in vals])),
                       {"spectral_gap": GAPS[topo]})
    both = S.study(folder, target=0.75, bootstrap=S.Bootstrap(n_boot=10),
                   output=S.Output(figures=False))
    assert len(both.conditions) == 6
    one = S.study(folder, target=0.75,
                  selection=S.Selection(where={"partition_params.classes_per_client": "1"}),
                  bootstrap=S.Bootstrap(n_boot=10), output=S.Output(figures=False))
    assert len(one.runs) == 6 and set(one.runs["run"].str.endswith("-c1")) == {True}
    assert sorted(one.conditions["condition"]) == [
        "topology=complete", "topology=ring", "topology=torus"]
    ten = S.study(folder, target=0.75,
                  selection=S.Selection(where={"partition_params.classes_per_client": 10,
                                               "topology": "ring"}),
                  bootstrap=S.Bootstrap(n_boot=10), output=S.Output(figures=False))
    assert sorted(ten.runs["run"]) == ["ring-0-c10", "ring-1-c10"]
    with pytest.raises(ValueError, match=r"no run's config has the key\(s\) \['nope'\]"):
        S.study(folder, selection=S.Selection(where={"nope": 1}))
    with pytest.raises(ValueError, match="no run has partition_params.classes_per_client=3"):
        S.study(folder, selection=S.Selection(where={"partition_params.classes_per_client": 3}))
    out = tmp_path / "o"
    assert study_main([str(folder), "--out", str(out), "--no-figures", "--n-boot", "10",
                   "--where", "partition_params.classes_per_client=10"]) == 0
    assert "6 runs, 3 conditions" in capsys.readouterr().out
    assert study_main([str(folder), "--out", str(out), "--where", "topology"]) == 2
    assert "--where expects KEY=VALUE" in capsys.readouterr().err


def test_study_accepts_records_and_explicit_metrics(sweep: Path) -> None:
    rec = tf.records.load_many(sweep)
    res = S.study(rec, topology_metrics=["graph.spectral_gap", "edges_per_node"], target=0.5,
                  bootstrap=S.Bootstrap(n_boot=10))
    assert res.topology_metrics == ["spectral_gap", "edges_per_node"]
    ep = res.correlations[res.correlations["topology_metric"] == "edges_per_node"]
    assert ep["spearman"].isna().all()  # constant: undefined, not a number


def test_study_command_line(sweep: Path, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    assert study_main([str(sweep), "--out", str(out), "--no-figures", "--n-boot", "20",
                   "--target", "0.7"]) == 0
    assert "6 runs, 3 conditions" in capsys.readouterr().out
    assert (out / "study.md").exists() and not (out / "curves.png").exists()
    assert f"Generated by `topofl study {sweep} --out {out} --no-figures" in (
        out / "study.md").read_text(encoding="utf-8")
    assert study_main([str(tmp_path / "missing"), "--out", str(out)]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert study_main([str(sweep), "--out", str(out), "--metric", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "topofl study: error: no run recorded" in err


def test_topofl_study_command(sweep: Path, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    from topofl.cli import main

    assert main(["study", str(sweep), "--out", str(tmp_path / "o"), "--no-figures",
                 "--n-boot", "10"]) == 0
    assert (tmp_path / "o" / "correlations.csv").exists()
    assert main(["study", str(tmp_path / "nothing-here"), "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("topofl study: error: no such file or folder")


def test_study_on_real_runs(tmp_path: Path) -> None:
    for topo in ("ring", "complete"):
        tf.run("dsgd", topology=topo, data="digits", n_clients=8, partition="iid", rounds=2,
               lr=0.5, batch_size=8, seed=0, records_path=str(tmp_path / f"{topo}.jsonl"),
               run_id=topo)
    res = S.study(tmp_path, bootstrap=S.Bootstrap(n_boot=10), output=S.Output(figures=False))
    runs = res.runs.set_index("run")
    assert runs.loc["ring", "spectral_gap"] == pytest.approx(
        tf.spectral.spectral_gap(tf.topologies.ring(8)))
    assert runs.loc["complete", "spectral_gap"] == pytest.approx(1.0)
    assert (runs["rounds"] == 2).all() and res.conditions["n_seeds"].tolist() == [1, 1]
    assert "final_consensus_distance" in runs.columns


def test_figures_have_readable_labels_units_and_every_condition_in_the_legend(
    sweep: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from topofl import plotting

    made: dict[str, Any] = {}
    for name in ("metric_scatter", "seed_curves"):
        original = getattr(plotting, name)

        def keep(*args: Any, _f: Any = original, _n: str = name, **kwargs: Any) -> Any:
            fig = _f(*args, **kwargs)
            made.setdefault(_n, []).append(fig)
            return fig

        monkeypatch.setattr(plotting, name, keep)
    S.study(sweep, tmp_path / "r", target=0.75, bootstrap=S.Bootstrap(n_boot=20, seed=0))
    curves = made["seed_curves"][0]
    texts = [t.get_text() for t in curves.legends[0].get_texts()] if curves.legends else [
        t.get_text() for ax in curves.axes for t in ax.get_legend().get_texts()]
    assert sorted(texts) == ["complete (2 seeds)", "ring (2 seeds)", "torus (2 seeds)"]
    ax = curves.axes[0]
    assert ax.get_xlabel() == "rounds completed"
    assert ax.get_ylabel() == "test accuracy (mean over clients, fraction correct)"
    scatter = made["metric_scatter"][0]
    legend = [t.get_text() for t in scatter.legends[0].get_texts()]
    assert sorted(legend) == ["complete", "ring", "torus"]  # every condition, no "topology="
    panel = next(a for a in scatter.axes if a.get_visible())
    assert panel.get_xlabel() == "spectral gap 1 − max|λ_k| (unitless)"
    assert "(rounds)" in panel.get_ylabel()
    assert panel.get_title() == "ρ = -0.87, n = 3, p = 0.67"  # ring and torus tie at never


# ------------------------------------------------------------------ issue 23, item 3
def _cut(path: Path, keep: float) -> None:
    raw = path.read_bytes()
    path.write_bytes(raw[: int(len(raw) * keep)])


def test_a_truncated_run_is_not_read_as_finished(sweep: Path) -> None:
    # before: a run cut to half its bytes was "finished", its round-20 accuracy its final
    _cut(sweep / "complete-1.jsonl", 0.5)
    res = S.study(sweep, target=0.5, bootstrap=S.Bootstrap(n_boot=10))
    assert "complete-1" not in set(res.runs["run"]) and len(res.runs) == 5
    assert "stopped while writing" in res.incomplete["complete-1"] or \
        "rows end after round" in res.incomplete["complete-1"]
    assert "Left out, not finished: `complete-1`" in res.markdown
    kept = S.study(sweep, target=0.5, selection=S.Selection(include_incomplete=True),
                   bootstrap=S.Bootstrap(n_boot=10))
    assert "complete-1" in set(kept.runs["run"]) and "complete-1" in kept.incomplete
    assert "Kept although not finished: `complete-1`" in kept.markdown
    with pytest.raises(S.IncompleteRunsError, match=r"1 incomplete run\(s\): complete-1 \("):
        S.study(sweep, selection=S.Selection(strict=True), bootstrap=S.Bootstrap(n_boot=10))


def test_rows_cut_at_a_line_end_are_caught_by_the_planned_rounds(sweep: Path) -> None:
    p = sweep / "ring-0.jsonl"
    p.write_bytes(b"".join(ln for ln in p.read_bytes().splitlines(keepends=True)
                           if b'"round": 29' not in ln))
    res = S.study(sweep, target=0.5, bootstrap=S.Bootstrap(n_boot=10))
    assert res.incomplete == {"ring-0": "its rows end after round 20 of the 30 its header "
                                        "plans"}


@pytest.mark.parametrize("value", [None, float("nan")])
def test_a_missing_final_value_is_named_not_averaged_away(tmp_path: Path, value: Any) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    for seed, last in ((0, 0.6), (1, value)):  # (a row edited by hand fails its checksum)
        path = _write_run(folder, f"ring-{seed}", _config("ring", seed),
                          [(9, 0.2), (19, 0.4), (29, last)], {"spectral_gap": 0.05})
        row = json.loads(path.read_text().splitlines()[-1])
        assert row["round"] == 29 and row["metric"] == "test_acc_mean"
    res = S.study(folder, target=0.5, bootstrap=S.Bootstrap(n_boot=10))
    assert res.incomplete == {"ring-1": "its last test_acc_mean (round 29) is missing (null or "
                                        "NaN)"}
    cond = res.conditions.set_index("condition").loc["all runs"]
    assert cond["n_seeds"] == 1 and cond["final_mean"] == pytest.approx(0.6)
    with pytest.raises(S.IncompleteRunsError, match="ring-1"):
        S.study(folder, target=0.5, selection=S.Selection(strict=True),
                bootstrap=S.Bootstrap(n_boot=10))
    _write_run(folder, "ring-0", _config("ring", 0), [(9, 0.2), (19, 0.4), (29, None)],
               {"spectral_gap": 0.05})
    with pytest.raises(ValueError, match="no run recorded the metric.*2 incomplete run"):
        S.study(folder, bootstrap=S.Bootstrap(n_boot=10))


@pytest.mark.parametrize("content", [b"", b'{"header": true, "run": "x", "con', b"\x00\xff"])
def test_empty_and_half_written_files_are_named_not_dropped(sweep: Path,
                                                            content: bytes) -> None:
    # before: a 0-byte run, or one with half a header, vanished from the count
    (sweep / "x.jsonl").write_bytes(content)
    res = S.study(sweep, target=0.5, bootstrap=S.Bootstrap(n_boot=10))
    assert list(res.unreadable) == [str(sweep / "x.jsonl")] and len(res.runs) == 6
    assert "Left out, unreadable" in res.markdown
    with pytest.raises(S.IncompleteRunsError, match=r"1 unreadable file\(s\): .*x\.jsonl"):
        S.study(sweep, selection=S.Selection(strict=True), bootstrap=S.Bootstrap(n_boot=10))


def test_a_diverged_sweep_run_is_kept(sweep: Path) -> None:
    p = sweep / "ring-1.jsonl"
    p.write_bytes(b"".join(ln for ln in p.read_bytes().splitlines(keepends=True)
                           if b'"round": 29' not in ln))
    (sweep / "ring-1.done").write_text('{"status": "diverged", "summary": {}}\n')
    res = S.study(sweep, target=0.5, bootstrap=S.Bootstrap(n_boot=10))
    assert res.diverged == ["ring-1"] and not res.incomplete
    assert "ring-1" in set(res.runs["run"])


def test_study_command_line_is_strict_when_asked(sweep: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    _cut(sweep / "torus-0.jsonl", 0.6)
    (sweep / "zero.jsonl").write_bytes(b"")
    out = tmp_path / "report"
    assert study_main([str(sweep), "--out", str(out), "--no-figures", "--n-boot", "5"]) == 0
    cap = capsys.readouterr()
    assert "warning: run torus-0 is not finished (left out)" in cap.err
    assert "zero.jsonl is unreadable (left out)" in cap.err
    assert "5 runs" in cap.out and "1 incomplete and 1 unreadable left out" in cap.out
    assert study_main([str(sweep), "--out", str(out), "--no-figures", "--strict"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error: --strict: 1 incomplete run(s): torus-0" in err


# ------------------------------------------------------------------ issue 34, items 3 and 4
def _toy(folder: Path, values: dict[tuple[str, int], float], *,
         gaps: dict[str, float] | None = None) -> Path:
    """One run per (topology, seed) whose accuracy ends at the given value after 10 rounds
    (0.5 of it at round 4, so that rounds to 0.5 x final is 5 everywhere)."""
    folder.mkdir(exist_ok=True)
    for (topo, seed), v in values.items():
        _write_run(folder, f"{topo}-{seed}", _config(topo, seed, rounds=10),
                   [(4, v / 2), (9, v)], {"spectral_gap": (gaps or GAPS).get(topo, 0.5)})
    return folder


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=2, max_size=9),
       st.booleans())
# three equal differences whose float standard deviation is 6.8e-17, not 0 (found by CI)
@example([(0.0, 0.4913156524727603)] * 3, False)
def test_paired_difference_is_scipys_paired_t(pairs: list[tuple[float, float]],
                                              higher: bool) -> None:
    from topofl.study.pairs import paired_difference

    a = np.round([p[0] for p in pairs], 3)
    b = np.round([p[1] for p in pairs], 3)
    d = a - b
    r = paired_difference(a, b, higher_is_better=higher)
    assert r["n_pairs"] == len(a)
    assert r["mean_diff"] == pytest.approx(d.mean(), abs=1e-9)
    if np.ptp(np.round(d, 9)) == 0:  # one difference in every seed: no spread, sign test
        assert r["ci_low"] == r["ci_high"] == pytest.approx(d.mean(), abs=1e-9)
        nonzero = abs(d.mean()) > 1e-9
        assert r["test"] == ("sign (no spread)" if nonzero else "paired t")
        if nonzero:
            lead = "p_a_better" if (d.mean() > 0) == higher else "p_b_better"
            assert r[lead] == pytest.approx(0.5 ** len(a))
        return
    assert r["test"] == "paired t"
    good, bad = ("greater", "less") if higher else ("less", "greater")
    ref = stats.ttest_rel(a, b, alternative="two-sided")
    ci = ref.confidence_interval(0.95)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((ci.low, ci.high), abs=1e-7)
    assert r["p_a_better"] == pytest.approx(stats.ttest_rel(a, b, alternative=good).pvalue,
                                            abs=1e-7)
    assert r["p_b_better"] == pytest.approx(stats.ttest_rel(a, b, alternative=bad).pvalue,
                                            abs=1e-7)
    decided = ci.low > 0 or ci.high < 0
    assert (r["verdict"] in ("A ahead", "B ahead")) == decided or r["verdict"] == \
        "equal in every seed"


def test_paired_difference_hand_computed() -> None:
    from topofl.study.pairs import paired_difference

    # differences 0.02, 0.03, 0.04, 0.03: mean 0.03, sd sqrt(2/3) / 100, t = 7.348 (3 dof)
    r = paired_difference([0.82, 0.83, 0.84, 0.83], [0.80, 0.80, 0.80, 0.80],
                          higher_is_better=True)
    se = math.sqrt(2 / 3) / 100 / 2
    half = 3.182446305284263 * se  # t_{0.975, 3}
    assert r["mean_diff"] == pytest.approx(0.03)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((0.03 - half, 0.03 + half))
    assert r["p_a_better"] == pytest.approx(stats.t.sf(0.03 / se, 3))
    assert r["a_every_seed"] and r["verdict"] == "A ahead"
    # rounds to target (lower is better): the same numbers say B is ahead
    r = paired_difference([12, 13, 14, 13], [10, 10, 10, 10], higher_is_better=False)
    assert r["verdict"] == "B ahead" and r["b_every_seed"] and r["mean_diff"] == 3
    assert r["p_b_better"] == pytest.approx(stats.t.sf(3 / (math.sqrt(2 / 3) / 2), 3))
    # never reached: a sign test over the seeds that are not tied; P(Bin(5, 1/2) >= 5)
    inf = math.inf
    r = paired_difference([10, 20, 30, 10, 10, inf], [inf, inf, inf, inf, inf, inf],
                          higher_is_better=False)
    assert r["test"] == "sign" and (r["a_ahead"], r["b_ahead"], r["tied"]) == (5, 0, 1)
    assert r["p_a_better"] == pytest.approx(1 / 32) and math.isnan(r["mean_diff"])
    assert r["verdict"] == "not decided"  # 1/32 > 0.025: six seeds, one tied, decide nothing
    r = paired_difference([10] * 6, [inf] * 6, higher_is_better=False)
    assert r["p_a_better"] == pytest.approx(1 / 64) and r["verdict"] == "A ahead"
    assert paired_difference([1.0], [0.5], higher_is_better=True)["verdict"] == "too few seeds"
    assert paired_difference([0.5, 0.6], [0.5, 0.6], higher_is_better=True)["verdict"] == \
        "equal in every seed"
    with pytest.raises(ValueError, match="one length"):
        paired_difference([1.0, 2.0], [1.0], higher_is_better=True)


def test_pairs_are_paired_by_seed_and_only_common_seeds_count(tmp_path: Path) -> None:
    # A ran seeds 0, 1, 2; B ran 1, 2, 3: only seeds 1 and 2 are compared
    folder = _toy(tmp_path / "runs", {("ring", 0): 0.50, ("ring", 1): 0.70, ("ring", 2): 0.60,
                                      ("torus", 1): 0.60, ("torus", 2): 0.55,
                                      ("torus", 3): 0.99})
    res = S.study(folder, tmp_path / "out", target=0.2, bootstrap=S.Bootstrap(n_boot=10),
                  output=S.Output(figures=False))
    pairs = pd.read_csv(tmp_path / "out" / "pairs.csv")
    final = pairs[pairs["metric"] == "final"].iloc[0]
    assert (final["condition_a"], final["condition_b"]) == ("topology=ring", "topology=torus")
    assert final["n_pairs"] == 2 and final["seeds"] == "1, 2"
    assert final["only_a"] == 1 and final["only_b"] == 1
    ref = stats.ttest_rel([0.70, 0.60], [0.60, 0.55])  # seeds 1 and 2 only
    assert final["mean_diff"] == pytest.approx(0.075)
    ci = ref.confidence_interval(0.95)
    assert (final["ci_low"], final["ci_high"]) == pytest.approx((ci.low, ci.high))
    assert final["p_a_better"] == pytest.approx(
        stats.ttest_rel([0.70, 0.60], [0.60, 0.55], alternative="greater").pvalue)
    assert bool(final["a_every_seed"]) and final["verdict"] == "not decided"
    # rounds to 0.2: 5 in every run: equal in every seed
    rounds = pairs[pairs["metric"] == "rounds_to_target"].iloc[0]
    assert rounds["verdict"] == "equal in every seed" and rounds["mean_diff"] == 0
    assert "1 seed(s) only in the first, 1 only in the second left out" in res.markdown
    assert "common seeds 1, 2" in res.markdown


def test_verdict_line_names_the_leader_with_points_and_every_seed(tmp_path: Path) -> None:
    # torus ahead of ring by 2, 3, 4, 3 points in the four seeds
    vals = {("ring", s): v for s, v in enumerate((0.80, 0.80, 0.80, 0.80))}
    vals.update({("torus", s): v for s, v in enumerate((0.82, 0.83, 0.84, 0.83))})
    res = S.study(_toy(tmp_path / "r", vals), target=0.2,
                  labels={"ring": "Ring", "topology=torus": "Torus"},
                  bootstrap=S.Bootstrap(n_boot=10), output=S.Output(figures=False))
    se = math.sqrt(2 / 3) / 2  # in points
    half = stats.t.ppf(0.975, 3) * se
    p = stats.t.sf(3 / se, 3)
    line = (f"- **Ring** vs **Torus**: Torus ahead of Ring on final test accuracy (mean over "
            f"clients) by 3.0 points [{3 - half:.1f}, {3 + half:.1f}] (every seed, 4 seeds, "
            f"p = {p:.2g}); rounds to test accuracy (mean over clients) ≥ 0.2: equal in every "
            "seed (4).")
    assert line in res.markdown
    top = res.markdown.index("## Which condition is ahead")
    assert top < res.markdown.index("## Convergence per condition")
    row = res.pairs[res.pairs["metric"] == "final"].iloc[0]
    assert row["verdict"] == "B ahead" and row["mean_diff"] == pytest.approx(-0.03)
    # tables show the names; the CSV keeps the labels
    assert "| Ring | Torus | final test accuracy (mean over clients, fraction correct) |" in \
        res.markdown
    assert "**Ring** = `topology=ring`" in res.markdown
    assert set(res.pairs["condition_a"]) == {"topology=ring"}


def test_many_conditions_keep_the_correlation_table(tmp_path: Path) -> None:
    gaps = {t: g for t, g in zip(("a", "b", "c", "d", "e"), (0.1, 0.2, 0.3, 0.4, 0.5))}
    vals = {(t, s): 0.5 + g + 0.01 * s for t, g in gaps.items() for s in (0, 1)}
    res = S.study(_toy(tmp_path / "r", vals, gaps=gaps), target=0.2,
                  bootstrap=S.Bootstrap(n_boot=10), output=S.Output(figures=False))
    assert "Too few conditions to correlate" not in res.markdown
    assert ("| spectral gap 1 − max\\|λ_k\\| | final test accuracy (mean over clients) | 1.00 | "
            "– | 5 | 0.017 | significant |") in res.markdown
    assert len(res.pairs) == 10 * 4  # 10 pairs x final, best, auc, rounds to target


def test_labels_are_checked(sweep: Path, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="label 'star' names no condition and no metric; "
                                         "conditions: 'topology=complete', .*; metrics: "
                                         "'test_acc_mean', 'rounds_to_target'"):
        S.study(sweep, labels={"star": "Star"}, bootstrap=S.Bootstrap(n_boot=5),
                output=S.Output(figures=False))
    with pytest.raises(ValueError, match=r"name\(s\) \['X'\]"):
        S.study(sweep, labels={"ring": "X", "torus": "X"}, bootstrap=S.Bootstrap(n_boot=5),
                output=S.Output(figures=False))
    with pytest.raises(ValueError, match="formats must be one or more of png, pdf, svg"):
        S.study(sweep, bootstrap=S.Bootstrap(n_boot=5), output=S.Output(formats=("png", "jpg")))
    assert study_main([str(sweep), "--out", str(tmp_path / "o"), "--label", "ring"]) == 2
    assert "--label expects SPEC=NAME, got 'ring'" in capsys.readouterr().err


def test_labels_from_a_config_table(sweep: Path, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "sweep.toml"
    cfg.write_text('algorithm = "dsgd"\n[sweep]\ntopology = ["ring", "torus"]\n'
                   '[labels]\nring = "Ring"\ntorus = "Torus"\n')
    assert tf.config.read_config(cfg) == {"algorithm": "dsgd",
                                          "sweep": {"topology": ["ring", "torus"]}}
    out = tmp_path / "o"
    assert study_main([str(sweep), "--out", str(out), "--n-boot", "5", "--no-figures",
                   "--labels", str(cfg), "--label", "torus=2D torus"]) == 0
    md = (out / "study.md").read_text(encoding="utf-8")
    assert "**Ring** = `topology=ring`" in md and "**2D torus** = `topology=torus`" in md
    capsys.readouterr()
    bad = tmp_path / "bad.toml"
    bad.write_text("[labels]\nring = 3\n")
    assert study_main([str(sweep), "--out", str(out), "--labels", str(bad)]) == 2
    assert "bad.toml: [labels] must be a table of condition" in capsys.readouterr().err


def _capture(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
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


def test_label_option_pdf_and_one_style_per_condition(
    sweep: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    made = _capture(monkeypatch)
    out = tmp_path / "paper"
    assert study_main([str(sweep), "--out", str(out), "--n-boot", "10", "--target", "0.75",
                   "--label", "topology=ring=Ring, 8 nodes", "--label", "complete=Complete",
                   "--format", "png,pdf"]) == 0
    capsys.readouterr()
    assert (out / "curves.pdf").read_bytes().startswith(b"%PDF")
    assert (out / "scatter_final.pdf").read_bytes().startswith(b"%PDF")
    md = (out / "study.md").read_text(encoding="utf-8")
    assert "**Ring, 8 nodes** = `topology=ring`" in md and "| Ring, 8 nodes | 2 |" in md
    curves = made["seed_curves"][0]
    legend = curves.legends[0]
    texts = [t.get_text() for t in legend.get_texts()]
    assert sorted(texts) == ["Complete (2 seeds)", "Ring, 8 nodes (2 seeds)", "torus (2 seeds)"]
    # the same colour for a condition in the curves and in every scatter panel
    from matplotlib.colors import to_hex

    colour = {t.get_text().rsplit(" (", 1)[0]: to_hex(h.get_color())
              for t, h in zip(legend.get_texts(), legend.legend_handles)}
    assert colour == {"Complete": to_hex("C0"), "Ring, 8 nodes": to_hex("C1"),
                      "torus": to_hex("C2")}
    for scatter in made["metric_scatter"]:
        names = [t.get_text() for t in scatter.legends[0].get_texts()]
        keys = scatter.legends[0].legend_handles  # each condition's own marker and colour
        assert [(to_hex(h.get_color()), h.get_marker()) for h in keys] == [
            (colour[n], "o") for n in names]
        for ax in (a for a in scatter.axes if a.get_visible()):
            points = [ln for ln in ax.lines if ln.get_marker() in ("o", "^")]
            assert [to_hex(ln.get_color()) for ln in points] == [colour[n] for n in names]
    # the legend has a row of its own below the axes: the axes keep the figure's width
    curves.canvas.draw()
    ax = curves.axes[0]
    box, frame = ax.get_position(), legend.get_window_extent().transformed(
        curves.transFigure.inverted())
    assert box.width > 0.8 and frame.y1 <= box.y0


def test_every_scatter_axis_has_a_unit(sweep: Path, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    res = S.study(sweep, target=0.75, bootstrap=S.Bootstrap(n_boot=5),
                  output=S.Output(figures=False))
    for c in ("rounds_to_target", "messages_to_target", "bytes_to_target", "time_to_target",
              "final", "best", "auc", "final_consensus_distance"):
        assert rendering._convergence_label(c, res).endswith(")"), c
    assert rendering._convergence_label("bytes_to_target", res) == \
        "bytes to test accuracy (mean over clients) ≥ 0.75 (B)"  # none recorded: unscaled
    assert rendering._axis_label("pushsum_delta").endswith("(unitless)")
    assert rendering._axis_label("something_new") == "something new (as recorded)"
    made = _capture(monkeypatch)
    S.study(sweep, tmp_path / "o", target=0.75, bootstrap=S.Bootstrap(n_boot=5))
    for fig in made["metric_scatter"]:
        for ax in (a for a in fig.axes if a.get_visible()):
            assert ax.get_xlabel().endswith(")") and ax.get_ylabel().endswith(")")


def test_the_same_difference_in_every_seed_is_decided_by_the_sign_test() -> None:
    """Rounds to a target on an evaluation grid often differ by one grid step in every seed:
    no spread, so a paired t would give p = 0; the sign test gives 1/2^n."""
    from topofl.study.pairs import paired_difference

    r = paired_difference(np.array([30.0, 40.0, 30.0]), np.array([40.0, 50.0, 40.0]),
                          higher_is_better=False)
    assert r["test"] == "sign (no spread)" and r["mean_diff"] == -10.0
    assert r["p_a_better"] == pytest.approx(1 / 8) and r["p_b_better"] == 1.0
    r = paired_difference(np.arange(6.0) + 1, np.arange(6.0), higher_is_better=True)
    assert r["p_a_better"] == pytest.approx(1 / 64)
