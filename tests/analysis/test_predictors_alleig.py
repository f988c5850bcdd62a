"""analysis/predictors.py --alleig: the all-eigenvalues metric added to the committed run
tables equals what ``topofl.spectral.summary`` gives for the runs' graphs, leaves every other
row of the studies as committed, and the committed block is what the script writes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import topofl as tf
from tests._analysis import load

STUDIES = Path(__file__).resolve().parents[2] / "analysis" / "predictors"
MD = STUDIES.parent / "predictors.md"


def test_the_column_is_the_summary_of_the_runs_graphs() -> None:
    P = load("predictors")
    runs = P.with_all_eigenvalues_metric(pd.read_csv(STUDIES / "heldout_iid" / "runs.csv"))
    checked = 0
    for _, row in runs.drop_duplicates("condition").iterrows():
        spec = row.condition.split("topology=")[1].split(", n_clients")[0]
        g = tf.topologies.build(spec, seed=int(row.seed), n=int(row.n))
        want = tf.spectral.summary(g, metrics="all_eigenvalues_metric")[P.ALL_EIG]
        if want is None:
            assert np.isnan(row[P.ALL_EIG]), spec
            continue
        assert row[P.ALL_EIG] == pytest.approx(want, rel=1e-12, abs=1e-15), spec
        checked += 1
    assert checked == 10  # the undirected static graphs of the held-out half


@pytest.mark.parametrize("study", ["explore_skew", "heldout_iid"])
def test_adding_the_metric_leaves_the_committed_rows(study: str) -> None:
    P = load("predictors")
    folder = STUDIES / study
    runs = P.with_all_eigenvalues_metric(pd.read_csv(folder / "runs.csv"))
    res = P.study_from_runs(runs, extra=(P.ALL_EIG,))
    old = pd.read_csv(folder / "correlations.csv")
    assert [m for m in res.topology_metrics if m != P.ALL_EIG] == list(
        dict.fromkeys(old.topology_metric))
    keys = ["topology_metric", "convergence_metric"]
    new = res.correlations.merge(old, on=keys, suffixes=("", "_old"))
    assert len(new) == len(old)
    for col in ("spearman", "ci_low", "ci_high"):
        np.testing.assert_array_equal(new[col], new[f"{col}_old"])
    assert P.ALL_EIG in set(res.correlations.topology_metric)


def test_the_committed_block_is_what_the_script_writes() -> None:
    P = load("predictors")
    text = MD.read_text(encoding="utf-8")
    block = text.split("<!-- alleig:begin -->\n", 1)[1].split("\n<!-- alleig:end -->", 1)[0]
    assert block == P.alleig_block(STUDIES, 1000)
