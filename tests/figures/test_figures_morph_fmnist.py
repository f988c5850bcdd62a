"""Morph's result on the real Fashion-MNIST (fig_field_morph_fmnist.py): its configs and claim
(field_morph's on Fashion-MNIST), every config planned at every scale, the committed
default-scale result checked against itself and the rule, and the script at ``--quick``
against its records (opt in: ``pytest -m figures``)."""

from __future__ import annotations

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
from topofl import figures, sweep
from topofl.figures.redecide import redecide
from topofl.figures.results import available

NAME = "field_morph_fmnist"
RESULTS = Path(__file__).resolve().parents[2] / "paper_figures" / "results"
CONFIGS = ("field_morph_fmnist_morph", "field_morph_fmnist_dsgd", "field_morph_fmnist_el")
#: the settings the Fashion-MNIST configs change from field_morph's (the data, its stand-in)
#: what the Fashion-MNIST replication changes from field_morph (seeds: field_morph's declared
#: second look raised its own to 6; the replication keeps its 3)
CHANGED = {"data", "stand_in", "seeds"}


@pytest.fixture(autouse=True)
def _close_figures() -> Any:
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


def _raw(config: str) -> dict[str, Any]:
    import tomllib

    path = Path(__file__).resolve().parents[2] / "paper_figures" / "configs" / f"{config}.toml"
    return tomllib.loads(path.read_text(encoding="utf-8"))


def test_morph_fmnist_is_listed_with_field_morphs_claim_and_margins() -> None:
    assert available()[NAME].startswith("Field claim")
    meta = figures.claim_of(NAME)
    assert meta["title"].startswith("Field: ") and "Fashion-MNIST" in meta["title"]
    assert "Fashion-MNIST" in meta["claim"] and "bacox/Morph" in meta["claim"]
    for m in ("close", "accuracy"):
        assert figures.margin(NAME, m) == figures.margin("field_morph", m)
    assert figures.margin(NAME, "close") == 0.02 and figures.margin(NAME, "accuracy") == 0.01
    mod, base = script(NAME), script("field_morph")
    assert mod["CONFIGS"] == list(CONFIGS)
    assert mod["METHODS"] == base["METHODS"] and mod["METRIC"] == base["METRIC"]


def test_morph_fmnist_configs_are_field_morphs_on_fashion_mnist() -> None:
    for config in CONFIGS:
        raw = _raw(config)
        old = _raw(config.replace("field_morph_fmnist_", "field_morph_"))
        assert raw["data"] == "fashion_mnist" and raw["stand_in"] == {"data": "mnist5k:seed=0"}
        assert raw["n_clients"] == 32 and raw["model"] == "mlp"
        assert raw["seeds"] >= 3
        same = {k: v for k, v in raw.items() if k not in CHANGED | {"scale"}}
        assert same == {k: v for k, v in old.items() if k not in CHANGED | {"scale"}}, config
        # a config of the real data set, or its stand-in where it is absent
        cfg = figures.load_config(config, "default")
        assert cfg["data"] in ("fashion_mnist", "mnist5k:seed=0")
    rounds = {_raw(c)["scale"]["default"]["rounds"] for c in CONFIGS}
    assert len(rounds) == 1  # every method at the same horizon


@pytest.mark.parametrize("scale", figures.config.SCALES)
@pytest.mark.parametrize("config", CONFIGS)
def test_morph_fmnist_plans_at_every_scale(config: str, scale: str) -> None:
    cfg = figures.load_config(config, scale)
    runs = sweep.plan(figures.config._clean(cfg))
    assert runs and sorted({r.config["seed"] for r in runs}) == sorted(cfg["_seeds"])
    assert (len(cfg["_seeds"]) == 1) if scale == "quick" else (len(cfg["_seeds"]) >= 3)
    want = {"field_morph_fmnist_morph": 1, "field_morph_fmnist_dsgd": 2,
            "field_morph_fmnist_el": 2}[config]
    assert len(runs) == want * len(cfg["_seeds"])


# ------------------------------------------------------------------- the committed result


def _committed() -> tuple[str, dict[str, Any]]:
    if not (RESULTS / f"{NAME}.json").exists():
        pytest.skip(f"default-scale result of {NAME} not committed yet")
    return verdict(NAME, RESULTS, "default")


def test_morph_fmnist_committed_result_is_complete_and_ran_on_fashion_mnist() -> None:
    md, v = _committed()
    assert 5_000 < (RESULTS / f"{NAME}.png").stat().st_size < 200_000
    seeds = _raw(CONFIGS[0])["seeds"]
    assert v["seeds"] == list(range(seeds)) and v["threads"] == [1]
    # the real data set ran, not its stand-in
    assert v["dataset"].startswith("fashion_mnist") and v["stand_in"] == {}
    heads = [c for c in v["checks"] if c["headline"]]
    assert [c["kind"] for c in heads] == ["within", "above"] and len(v["checks"]) == 4
    for c in v["checks"]:
        assert len(c["values"]) == seeds and "convergence" in c, c["name"]
    again = redecide(NAME, RESULTS, write=False)
    assert again.before == again.after == v["verdict"] and not again.moved
    assert "n_clients | 32" in md and "fashion_mnist" in md


# ------------------------------------------------------------------- --quick (opt in)


@pytest.mark.figures
def test_morph_fmnist_quick_content(quick_out: Path) -> None:
    fig = run_quick(NAME, quick_out)
    assert fig is not None
    assert_readable(fig)
    md, v = verdict(NAME, quick_out)
    assert v["seeds"] == [0] and v["verdict"] == "inconclusive at this scale"
    assert sum(c["headline"] for c in v["checks"]) == 2
    folder = quick_out / "runs" / NAME
    finals = []
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        rec = tf.records.load_many(sub)
        for run in rec.runs:
            finals.append(float(rec.for_run(run).series("global_acc_mean")[1][-1]))
    assert len(finals) == 5 and all(f"{x:.3f}" in md for x in finals)
