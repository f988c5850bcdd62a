"""The all-eigenvalues result on the real Fashion-MNIST (fig_field_all_eigenvalues_fmnist.py): its
configs and claim, the eight graphs' spectra at n = 25 as the library computes them, the
committed default-scale result checked against itself and the rule, and the script at
``--quick`` against its records (opt in: ``pytest -m figures``)."""

from __future__ import annotations

import json
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

NAME = "field_all_eigenvalues_fmnist"
RESULTS = Path(__file__).resolve().parents[2] / "paper_figures" / "results"
CONFIGS = ("field_all_eigenvalues_fmnist_iid", "field_all_eigenvalues_fmnist_dirichlet")


@pytest.fixture(autouse=True)
def _close_figures() -> Any:
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


def _raw(config: str) -> dict[str, Any]:
    import tomllib

    path = Path(__file__).resolve().parents[2] / "paper_figures" / "configs" / f"{config}.toml"
    return tomllib.loads(path.read_text(encoding="utf-8"))


def test_fmnist_result_is_listed_with_its_claim_and_margins() -> None:
    assert available()[NAME].startswith("Field claim")
    meta = figures.claim_of(NAME)
    assert meta["title"].startswith("Field: ") and "Fashion-MNIST" in meta["title"]
    assert "not reachable" in meta["claim"] and "Fashion-MNIST" in meta["claim"]
    # the margins of field_all_eigenvalues, one swapped pair now of the 28 pairs of 8 graphs
    assert figures.margin(NAME, "tau") == figures.margin("field_all_eigenvalues", "tau") == 0.4
    assert figures.margin(NAME, "accuracy") == 0.01
    assert figures.margin(NAME, "pair") == pytest.approx(2 / 28, abs=1e-15)
    mod = script(NAME)
    assert mod["PAIR"] == pytest.approx(2 / 28) and len(mod["GRAPHS"]) == 8 and mod["N"] == 25


def test_fmnist_configs_parse_and_differ_only_by_the_split() -> None:
    raws = [_raw(c) for c in CONFIGS]
    for raw in raws:
        assert raw["data"] == "fashion_mnist" and raw["n_clients"] == 25
        assert raw["model"] == "logistic" and raw["algorithm"] == "dsgd"
        assert raw["stand_in"] == {"data": "mnist5k:seed=0"}
        assert raw["scale"]["default"]["seeds"] >= 3
        assert len(raw["sweep"]["topology"]) == 8
    iid, skew = raws
    assert iid["partition"] == "iid"
    assert skew["partition"] == "dirichlet" and skew["partition_params"] == {"alpha": 0.1}
    same = {k: v for k, v in iid.items() if k != "partition"}
    assert same == {k: v for k, v in skew.items() if k not in ("partition", "partition_params")}
    for c in CONFIGS:  # a config of the real data set, or its stand-in where it is absent
        cfg = figures.load_config(c, "default")
        assert cfg["data"] in ("fashion_mnist", "mnist5k:seed=0")
        assert cfg["_seeds"] == list(range(raws[0]["scale"]["default"]["seeds"]))


def test_fmnist_every_graph_is_accepted_by_the_metric_with_distinct_values() -> None:
    mod = script(NAME)
    specs = _raw(CONFIGS[0])["sweep"]["topology"]
    assert {s.split(":")[0] for s in specs} == set(mod["GRAPHS"])
    for seed in (0, 1, 2, 3, 4, 100):
        values, gaps = {}, {}
        for spec in specs:
            topo = tf.topologies.build(spec, n=25, seed=seed)
            assert topo.is_symmetric, spec  # a symmetric W: the metric is defined
            values[spec] = tf.spectral.all_eigenvalues_metric(topo)
            gaps[spec] = tf.spectral.spectral_gap(topo)
        assert values["complete"] == pytest.approx(0.0, abs=1e-12)
        assert len({round(v, 6) for v in values.values()}) == 8, (seed, values)
        assert all(0 < g <= 1 + 1e-12 for g in gaps.values())
        # the ring / star pair the metric and the gap order differently at every seed (the
        # metric ranks the star last, the gap above the ring); the grid is below the small
        # world by the metric at every seed, by the gap at some (seed 3 not)
        assert values["star"] > values["ring"] and gaps["star"] > gaps["ring"]
        assert values["grid:rows=5,cols=5"] > values["watts_strogatz:k=4,p=0.2"]
        assert gaps["star"] == pytest.approx(1 / 25, abs=1e-12)  # every leaf gives 1/n to the hub


def test_fmnist_the_metric_refuses_a_directed_graph() -> None:
    with pytest.raises((ValueError, TypeError)):
        tf.spectral.all_eigenvalues_metric(tf.topologies.build("exponential", n=25))


# ------------------------------------------------------------------- the committed result


def _committed() -> tuple[str, dict[str, Any]]:
    if not (RESULTS / f"{NAME}.json").exists():
        pytest.skip(f"default-scale result of {NAME} not committed yet")
    return verdict(NAME, RESULTS, "default")


def test_fmnist_committed_result_is_complete_and_ran_on_fashion_mnist() -> None:
    md, v = _committed()
    png = RESULTS / f"{NAME}.png"
    assert 5_000 < png.stat().st_size < 200_000
    seeds = _raw(CONFIGS[0])["scale"]["default"]["seeds"]
    assert v["seeds"] == list(range(seeds)) and v["threads"] == [1]
    # the real data set ran, not its stand-in
    assert v["dataset"].startswith("fashion_mnist") and v["stand_in"] == {}
    heads = [c for c in v["checks"] if c["headline"]]
    assert len(heads) == 4 and len(v["checks"]) == 8
    for c in v["checks"]:
        assert len(c["values"]) == seeds and ("convergence" in c or "horizon" in c), c["name"]
        if "tau" in c["name"] or "orders" in c["name"]:  # on the grid of Kendall's tau, 1/28
            assert c["resolution"] == pytest.approx(2 / 28)
            assert all(abs(28 * x - round(28 * x)) < 1e-9 for x in c["values"])
    for c in heads:  # the verdict is decided at convergence
        assert c["convergence"]["flat"], c["name"]
    again = redecide(NAME, RESULTS, write=False)
    assert again.before == again.after == v["verdict"] and not again.moved
    assert "n_clients | 25" in md and "fashion_mnist" in md


def test_fmnist_committed_spectra_match_the_library() -> None:
    md, _ = _committed()
    labels = set(script(NAME)["GRAPHS"].values())
    rows = [r for r in re.findall(r"^\| 25 \| ([^|]+) \| ([0-9.]+) ± [0-9.]+ \| "
                                  r"([0-9.]+) ± ", md, re.M) if r[0].strip() in labels]
    assert len(rows) == 8
    build = {"complete": "complete", "exponential (undirected)": "undirected_exponential",
             "torus 5 x 5": "torus:rows=5,cols=5", "grid 5 x 5": "grid:rows=5,cols=5",
             "ring": "ring", "star": "star"}
    checked = 0
    for graph, metric, gap in rows:
        spec = build.get(graph.strip())
        if spec is None:  # the random graphs: drawn by each seed
            continue
        topo = tf.topologies.build(spec, n=25, seed=0)
        assert float(metric) == pytest.approx(tf.spectral.all_eigenvalues_metric(topo),
                                              abs=6e-5)
        assert float(gap) == pytest.approx(tf.spectral.spectral_gap(topo), abs=6e-5)
        checked += 1
    assert checked == 6


# ------------------------------------------------------------------- --quick (opt in)


@pytest.mark.figures
def test_fmnist_quick_content(quick_out: Path) -> None:
    fig = run_quick(NAME, quick_out)
    assert fig is not None
    assert_readable(fig)
    assert 5000 < (quick_out / f"{NAME}.png").stat().st_size < 150_000
    md, v = verdict(NAME, quick_out)
    assert v["seeds"] == [0] and v["verdict"] == "inconclusive at this scale"
    assert sum(c["headline"] for c in v["checks"]) == 4
    folder = quick_out / "runs" / NAME
    base = script("field_all_eigenvalues")
    subs = sorted(p for p in folder.iterdir() if p.is_dir())
    assert len(subs) == 2
    for sub in subs:
        rec = tf.records.load_many(sub)
        assert len(rec.runs) == 8
        for run in rec.runs:
            one = rec.for_run(run)
            final = float(one.series("global_acc_mean")[1][-1])
            assert f"{final:.4f}" in md, (sub.name, run)
            # the graph rebuilt for the spectra is the one the engine recorded
            assert dict(base["graph_of"](one).params) == dict(one.engine["topology"]["params"])
    skew = json.loads((quick_out / f"{NAME}.json").read_text(encoding="utf-8"))
    taus = [c["values"][0] for c in skew["checks"] if "orders the final accuracies" in c["name"]]
    assert taus and all(f"{t:+.3f}" in md for t in taus)
