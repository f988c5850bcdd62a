"""analysis/predictors.py and analysis/design_budget.py: the protocol's configs, the paired
bootstrap, and the equal budget of the design comparison."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import topofl as tf
from tests._analysis import load
from topofl.config import read_config

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "analysis" / "configs"



def test_the_two_halves_differ_only_in_their_disjoint_graph_families() -> None:
    explore = read_config(CONFIGS / "predictors_explore.toml")
    heldout = read_config(CONFIGS / "predictors_heldout.toml")
    ex_topo, ho_topo = explore["sweep"].pop("topology"), heldout["sweep"].pop("topology")
    assert explore == heldout  # same settings, levels, sizes and seeds
    fam = {s.split(":", 1)[0] for s in ex_topo}
    assert fam.isdisjoint({s.split(":", 1)[0] for s in ho_topo})
    assert len(ex_topo) + len(ho_topo) >= 15  # x 2 sizes: at least 30 graphs
    assert explore["sweep"]["n_clients"] == [32, 64]
    assert explore["sweep"]["seed"] == [0, 1, 2]
    assert [p["classes_per_client"] for p in explore["sweep"]["partition_params"]] == [10, 1]
    for spec in ex_topo + ho_topo:
        tf.topologies.check_spec(spec)


def _result(runs: pd.DataFrame, metrics: list[str]) -> SimpleNamespace:
    return SimpleNamespace(runs=runs, topology_metrics=metrics,
                           convergence_metrics=["rounds_to_target", "final"])


def test_paired_difference_of_the_gap_with_itself_is_zero_and_a_perfect_ranker_wins() -> None:
    P = load("predictors")
    rng = np.random.default_rng(0)
    rows = []
    for c in range(8):
        for s in range(3):
            final = 0.5 + 0.05 * c + rng.normal(0, 0.002)
            rows.append({"condition": f"g{c}", "seed": s, "final": final,
                         "rounds_to_target": 100.0 - 10 * c + s,
                         "spectral_gap": [3, 1, 4, 1.5, 5, 9, 2, 6][c],  # a poor ranker
                         "same_as_gap": [3, 1, 4, 1.5, 5, 9, 2, 6][c],
                         "perfect": float(c)})
    runs = pd.DataFrame(rows)
    d = P.paired_differences(_result(runs, ["spectral_gap", "same_as_gap", "perfect"]),
                             n_boot=200).set_index(["topology_metric", "convergence_metric"])
    same = d.loc[("same_as_gap", "final")]
    assert same.diff_abs_rho == 0 and same.diff_low == 0 and same.diff_high == 0
    best = d.loc[("perfect", "final")]
    gap_rho = abs(pd.Series([3, 1, 4, 1.5, 5, 9, 2, 6]).corr(pd.Series(range(8)),
                                                                 method="spearman"))
    assert best.diff_abs_rho == pytest.approx(1 - gap_rho)
    assert best.diff_low > 0 and best.n_conditions == 8
    assert P._verdict(best.diff_low, best.diff_high) == "better than the gap"
    assert P._verdict(-0.1, 0.2) == "inconclusive"


def test_abs_interval() -> None:
    P = load("predictors")
    assert P._abs_interval(-0.9, -0.7) == (0.7, 0.9)
    assert P._abs_interval(-0.2, 0.5) == (0.0, 0.5)
    assert P._abs_interval(0.3, 0.6) == (0.3, 0.6)


@pytest.mark.parametrize("name", ["design_budget", "design_budget_mixture"])
def test_design_budget_topologies_have_the_same_mean_degree(name: str) -> None:
    cfg = read_config(CONFIGS / f"{name}.toml")
    data = tf.data.federate(cfg["data"], cfg["partition"], cfg["n_clients"],
                            seed=0, **cfg["partition_params"])
    counts = data.label_distributions
    budgeted = [s for s in cfg["sweep"]["topology"] if s != "complete"]  # the off-budget ceiling
    assert len(budgeted) == 5
    for spec in budgeted:
        g = tf.topologies.build(spec, seed=0, n=cfg["n_clients"], label_distributions=counts)
        s = tf.spectral.summary(g, metrics=["edges_per_node", "messages_per_round"])
        assert s["edges_per_node"] == pytest.approx(11.0), spec
        assert s["messages_per_round"] == pytest.approx(704.0), spec
