"""The all-eigenvalues result (issue 45, fig_field_all_eigenvalues.py): its orderings by hand, the
committed default-scale result checked against itself, the library and the rule, and the script
at ``--quick`` against its records (opt in: ``pytest -m figures``)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

import topofl as tf
from tests._figures import (
    assert_readable,
    quick_out_fixture,  # noqa: F401  (the quick_out fixture)
    run_quick,
    script,
    verdict,
)
from topofl import figures
from topofl.figures.redecide import redecide
from topofl.figures.results import available

NAME = "field_all_eigenvalues"
RESULTS = Path(__file__).resolve().parents[2] / "paper_figures" / "results"
S = figures.OverSeeds


@pytest.fixture(autouse=True)
def _close_figures() -> Any:
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


def test_all_eigenvalues_result_is_listed_with_its_claim_and_margins() -> None:
    assert available()[NAME].startswith("Field claim")
    meta = figures.claim_of(NAME)
    assert meta["title"].startswith("Field: ") and "not reachable" in meta["claim"]
    assert figures.margin(NAME, "tau") == 0.4
    # one swapped pair of the 15 pairs of six graphs: the step of Kendall's tau
    assert figures.margin(NAME, "pair") == pytest.approx(2 / 15, abs=1e-15)
    assert len(script(NAME)["GRAPHS"]) == 6


def test_all_eigenvalues_orderings_by_hand() -> None:
    mod = script(NAME)
    kendall, ordering = mod["kendall"], mod["ordering"]
    assert kendall([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert kendall([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    # one swapped pair of the C(4, 2) = 6: (5 - 1) / 6
    assert kendall([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    assert math.isnan(kendall([1, 2, 3], [5, 5, 5]))
    acc = {"a": S((0.9, 0.8), (0, 1)), "b": S((0.7, 0.85), (0, 1)), "c": S((0.1, 0.2), (0, 1))}
    metric = {"a": S((0.0, 0.0), (0, 1)), "b": S((1.0, 1.0), (0, 1)),
              "c": S((9.0, 9.0), (0, 1))}
    tau = ordering(acc, {g: -1.0 * m for g, m in metric.items()}, 2 / 3)
    # seed 0 agrees on all 3 pairs; seed 1 swaps a / b: (2 - 1) / 3
    assert tau.values == pytest.approx((1.0, 1 / 3)) and tau.seeds == (0, 1)
    assert tau.resolution == 2 / 3


def test_all_eigenvalues_the_graphs_spectra_as_the_library_computes_them() -> None:
    # the ring and the star are the pair the metric and the gap order differently at both n
    for n in (32, 64):
        ring, star = tf.topologies.ring(n), tf.topologies.star(n)
        assert tf.spectral.all_eigenvalues_metric(star) > tf.spectral.all_eigenvalues_metric(
            ring)
        assert tf.spectral.spectral_gap(star) > tf.spectral.spectral_gap(ring)
        # Metropolis star: every leaf gives 1/n to the hub, gap 1/n exactly
        assert tf.spectral.spectral_gap(star) == pytest.approx(1 / n, abs=1e-12)


# ------------------------------------------------------------------- the committed result


def _committed() -> tuple[str, dict[str, Any]]:
    if not (RESULTS / f"{NAME}.json").exists():
        pytest.skip(f"default-scale result of {NAME} not committed yet")
    return verdict(NAME, RESULTS, "default")


def test_all_eigenvalues_committed_result_is_complete() -> None:
    md, v = _committed()
    png = RESULTS / f"{NAME}.png"
    assert 5_000 < png.stat().st_size < 200_000
    # seeds 0-4, and the fresh seeds of its replication declared in claims.toml (5, 6, 7)
    assert v["seeds"] == list(range(8)) and v["dataset"].startswith("mnist5k")
    assert v["replication"]["fresh"] == [5, 6, 7]
    assert v["stand_in"] == {"mnist": "mnist5k:seed=0"} and v["threads"] == [1]
    heads = [c for c in v["checks"] if c["headline"]]
    assert len(heads) == 8 and len(v["checks"]) == 16
    for c in v["checks"]:
        assert len(c["values"]) == 8 and ("convergence" in c or "horizon" in c), c["name"]
        if "tau" in c["name"] or "orders" in c["name"]:  # on the grid of Kendall's tau, 1/15
            assert c["resolution"] == pytest.approx(2 / 15)
            assert all(abs(15 * x - round(15 * x)) < 1e-9 for x in c["values"])
    for c in heads:  # the verdict is decided at convergence
        assert c["convergence"]["flat"], c["name"]
    # decided again under the current rule from its own per-seed values: nothing moves
    again = redecide(NAME, RESULTS, write=False)
    assert again.before == again.after == v["verdict"] and not again.moved
    assert "n_clients | 32" in md and "n_clients | 64" in md


def test_all_eigenvalues_committed_spectra_match_the_library() -> None:
    md, _ = _committed()
    labels = set(script(NAME)["GRAPHS"].values())
    rows = [r for r in re.findall(r"^\| (32|64) \| ([^|]+) \| ([0-9.]+) ± [0-9.]+ \| "
                                  r"([0-9.]+) ± ", md, re.M) if r[1].strip() in labels]
    assert len(rows) == 12
    build = {"complete": "complete", "exponential (undirected)": "undirected_exponential",
             "ring": "ring", "star": "star"}
    checked = 0
    for n, graph, metric, gap in rows:
        spec = build.get(graph.strip()) or (
            f"torus:rows={4 if n == '32' else 8},cols=8" if graph.strip() == "torus" else None)
        if spec is None:  # the random graph: drawn by each seed
            continue
        topo = tf.topologies.build(spec, n=int(n), seed=0)
        assert float(metric) == pytest.approx(tf.spectral.all_eigenvalues_metric(topo),
                                              abs=6e-5)
        assert float(gap) == pytest.approx(tf.spectral.spectral_gap(topo), abs=6e-5)
        checked += 1
    assert checked == 10


# ------------------------------------------------------------------- --quick (opt in)


@pytest.mark.figures
def test_all_eigenvalues_quick_content(quick_out: Path) -> None:
    fig = run_quick(NAME, quick_out)
    assert fig is not None
    assert_readable(fig)
    assert 5000 < (quick_out / f"{NAME}.png").stat().st_size < 150_000
    md, v = verdict(NAME, quick_out)
    assert v["seeds"] == [0] and v["verdict"] == "inconclusive at this scale"
    assert sum(c["headline"] for c in v["checks"]) == 8
    folder = quick_out / "runs" / NAME
    mod = script(NAME)
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        rec = tf.records.load_many(sub)
        assert len(rec.runs) == 6
        for run in rec.runs:
            one = rec.for_run(run)
            final = float(one.series("global_acc_mean")[1][-1])
            assert f"{final:.4f}" in md, (sub.name, run)
            # the graph rebuilt for the spectra is the one the engine recorded
            assert dict(mod["graph_of"](one).params) == dict(one.engine["topology"]["params"])
    # the Kendall taus of the JSON are those of the Markdown's per-seed table
    skew = json.loads((quick_out / f"{NAME}.json").read_text(encoding="utf-8"))
    taus = [c["values"][0] for c in skew["checks"] if "orders the final accuracies" in c["name"]]
    assert taus and all(f"{t:+.3f}" in md for t in taus)
