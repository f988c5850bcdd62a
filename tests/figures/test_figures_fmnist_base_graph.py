"""The two results of issue 57 on their papers' own data set, Fashion-MNIST at n = 25:
``field_base_graph_fmnist`` (the Base-(k+1) graph against the exponential graphs) and
``field_teleportation_dirichlet_fmnist`` (Teleportation against D-SGD under the paper's
Dirichlet split). Their claims and configs, every config planned at every scale, the exact
facts against the graphs' matrices, the committed results checked against themselves and the
rule, and the scripts at ``--quick`` (opt in: ``pytest -m figures``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import topofl as tf
from tests._figures import (
    assert_readable,
    close_figures_fixture,  # noqa: F401  (the close_figures fixture)
    quick_out_fixture,  # noqa: F401  (the quick_out fixture)
    raw_config,
    run_quick,
    script,
    verdict,
)
from topofl import figures, sweep
from topofl.figures.redecide import redecide
from topofl.figures.results import available

ROOT = Path(__file__).resolve().parents[2] / "paper_figures"
RESULTS = ROOT / "results"
BASE, TELE = "field_base_graph_fmnist", "field_teleportation_dirichlet_fmnist"
CONFIGS = {BASE: ("field_base_graph_fmnist_dirichlet", "field_base_graph_fmnist_iid"),
           TELE: ("field_teleportation_dirichlet_fmnist",
                  "field_teleportation_dirichlet_fmnist_dsgd")}
#: the seeds of each result: 5, and for the Base-2 result the 3 fresh seeds of its
#: replication (claims.toml [field_base_graph_fmnist.replication]: 5, 6, 7)
SEEDS = {BASE: 8, TELE: 5}
#: what every config of the two results shares (field_all_eigenvalues_fmnist's setting)
SHARED = {"data": "fashion_mnist", "n_clients": 25, "model": "logistic", "lr": 0.1,
          "batch_size": 10, "eval_every": 200, "record_clients": False,
          "spectral": False, "stand_in": {"data": "mnist5k:seed=0"}}


pytestmark = pytest.mark.usefixtures("close_figures")
_raw = raw_config


@pytest.mark.parametrize("name", [BASE, TELE])
def test_listed_with_a_claim_declared_before_its_runs(name: str) -> None:
    assert available()[name].startswith("Field claim")
    meta = figures.claim_of(name)
    assert meta["title"].startswith("Field: ") and "Fashion-MNIST" in meta["title"]
    assert "paper's own data set" in meta["claim"] and "last 5 evaluations" in meta["claim"]
    assert any(n.startswith("Declared before") for n in meta["notes"])
    assert figures.margin(name, "accuracy") == 0.01
    assert script(name)["LAST"] == 5


@pytest.mark.parametrize("config", [c for cs in CONFIGS.values() for c in cs])
def test_configs_share_one_setting_on_fashion_mnist(config: str) -> None:
    raw = _raw(config)
    assert {k: raw.get(k) for k in SHARED} == SHARED
    rounds = 16_000 if config.startswith(TELE) else 8_000
    seeds = SEEDS[TELE if config.startswith(TELE) else BASE]
    assert raw["rounds"] == raw["scale"]["default"]["rounds"] == rounds
    assert raw["seeds"] == seeds
    assert raw["scale"]["default"] == {"rounds": rounds, "eval_every": 200, "seeds": seeds}
    if config.endswith("_iid"):
        assert raw["partition"] == "iid"
    else:
        assert raw["partition"] == "dirichlet" and raw["partition_params"] == {"alpha": 0.1}


def test_the_baseline_is_the_base_graph_results_setting_at_its_own_horizon() -> None:
    base, dsgd = _raw(CONFIGS[BASE][0]), _raw(CONFIGS[TELE][1])
    differ = {"rounds", "scale", "sweep", "seeds"}  # the Base-2 result's 3 fresh seeds
    assert ({k: v for k, v in base.items() if k not in differ}
            == {k: v for k, v in dsgd.items() if k not in differ})
    assert dsgd["sweep"]["topology"] == ["ring", "exponential", "complete"]
    assert set(dsgd["sweep"]["topology"]) <= set(base["sweep"]["topology"])
    tele = _raw(CONFIGS[TELE][0])
    assert tele["algorithm"] == "teleport" and tele["k"] == 4 and tele["graph"] == "ring"


@pytest.mark.parametrize("scale", figures.config.SCALES)
@pytest.mark.parametrize("config", [c for cs in CONFIGS.values() for c in cs])
def test_plans_at_every_scale(config: str, scale: str) -> None:
    cfg = figures.load_config(config, scale)
    runs = sweep.plan(figures.config._clean(cfg))
    assert sorted({r.config["seed"] for r in runs}) == sorted(cfg["_seeds"])
    graphs = len(cfg.get("sweep", {}).get("topology", [None]))
    assert len(runs) == graphs * len(cfg["_seeds"])


def test_the_exact_facts_hold_on_the_graphs_matrices() -> None:
    """The periods the script reports, against the product of each graph's matrices over one
    period written out: exactly J after it, not one round before; the exponential graphs
    never J within the window; every Base-(k+1) round has at most k peers a node."""
    got = script(BASE)["periods"](25)
    n = 25
    J = np.full((n, n), 1.0 / n)
    for k in (1, 2, 3, 4):
        g = tf.topologies.base_graph(n, k=k)
        mats = [np.asarray(g.at(t).to_dense(), dtype=np.float64) for t in range(g.period)]
        P = np.eye(n)
        for t, w in enumerate(mats, 1):
            P = w @ P
            off = (np.abs(w) > 0) & ~np.eye(n, dtype=bool)
            assert off.sum(axis=1).max() <= k
            if t < len(mats):
                assert np.abs(P - J).max() > 1e-6
        assert np.abs(P - J).max() < 1e-12 and got[f"base_graph:k={k}"] == g.period
        assert g.period <= 2 * np.log(n) / np.log(k + 1) + 2
    assert got["one_peer_exponential"] is None and got["exponential"] is None


# ------------------------------------------------------------------- the committed results


def _committed(name: str) -> tuple[str, dict[str, Any]]:
    if not (RESULTS / f"{name}.json").exists():
        pytest.skip(f"default-scale result of {name} not committed yet")
    return verdict(name, RESULTS, "default")


@pytest.mark.parametrize("name", [BASE, TELE])
def test_committed_result_ran_on_fashion_mnist_and_redecides_to_itself(name: str) -> None:
    md, v = _committed(name)
    assert 5_000 < (RESULTS / f"{name}.png").stat().st_size < 300_000
    assert v["seeds"] == list(range(SEEDS[name])) and v["threads"] == [1]
    assert v["dataset"].startswith("fashion_mnist") and v["stand_in"] == {}
    # Teleportation's headline: above D-SGD on each of the three graphs compared
    assert sum(c["headline"] for c in v["checks"]) == (2 if name == BASE else 3)
    for c in v["checks"]:
        if "values" in c:
            assert len(c["values"]) == SEEDS[name] and "convergence" in c, c["name"]
            window = c["convergence"]["window"]
            assert window == (4000 if name == TELE else 2000), c["name"]
    again = redecide(name, RESULTS, write=False)
    assert again.before == again.after == v["verdict"] and not again.moved
    assert "| n_clients | 25 |" in md and "fashion_mnist" in md


# ------------------------------------------------------------------- --quick (opt in)


@pytest.mark.figures
@pytest.mark.parametrize("name", [BASE, TELE])
def test_quick_content(quick_out: Path, name: str) -> None:
    fig = run_quick(name, quick_out)
    assert fig is not None
    assert_readable(fig)
    md, v = verdict(name, quick_out)
    assert v["seeds"] == [0] and v["verdict"] == "inconclusive at this scale"
