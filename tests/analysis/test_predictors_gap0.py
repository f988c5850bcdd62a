"""analysis/predictors.py --gap0: the held-out study rebuilt from its committed run table, with
and without the graphs whose spectral gap is 0."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests._analysis import load

STUDIES = Path(__file__).resolve().parents[2] / "analysis" / "predictors"


@pytest.mark.parametrize("level", ["iid", "skew"])
def test_the_run_table_gives_back_the_committed_tables(level: str) -> None:
    P = load("predictors")
    folder = STUDIES / f"heldout_{level}"
    res = P.study_from_runs(folder / "runs.csv")
    old = pd.read_csv(folder / "correlations.csv")
    assert res.topology_metrics == list(dict.fromkeys(old.topology_metric))
    keys = ["topology_metric", "convergence_metric"]
    new = res.correlations.merge(old, on=keys, suffixes=("", "_old"))
    assert len(new) == len(old)
    for col in ("spearman", "ci_low", "ci_high"):
        np.testing.assert_array_equal(new[col], new[f"{col}_old"])
    committed = pd.read_csv(folder / "paired_vs_spectral_gap.csv")
    d = P.paired_differences(res, n_boot=1000).merge(committed, on=keys, suffixes=("", "_old"))
    assert len(d) == len(committed)
    for col in ("diff_abs_rho", "diff_low", "diff_high", "graphs_low", "graphs_high"):
        np.testing.assert_array_equal(d[col], d[f"{col}_old"])


def test_gap_zero_graphs_are_base_graph_and_iid_stl_fw() -> None:
    P = load("predictors")
    left = {lv: P.gap_zero(pd.read_csv(STUDIES / f"heldout_{lv}" / "runs.csv"))
            for lv in ("iid", "skew")}
    family = {c.split("topology=")[1].split(":")[0].split(",")[0] for c in left["iid"]}
    assert family == {"base_graph", "stl_fw"}
    assert len(left["iid"]) == 8 and len(left["skew"]) == 4
    assert all("base_graph" in c for c in left["skew"])
    res = P.study_from_runs(STUDIES / "heldout_iid" / "runs.csv", exclude=left["iid"],
                            n_boot=50)
    assert len(res.conditions) == 12 and (res.conditions.spectral_gap_mean > 0).all()
    with pytest.raises(ValueError, match="not in the run table"):
        P.study_from_runs(STUDIES / "heldout_iid" / "runs.csv", exclude=["no such graph"])
