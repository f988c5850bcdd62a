"""Teleportation's result on the real Fashion-MNIST (fig_field_teleportation_fmnist.py): its
configs and claim (field_teleportation's on the paper's own data set), every config planned at
every scale, the final-accuracy reading over the last evaluations, the committed default-scale
result checked against itself and the rule, and the script at ``--quick`` (opt in:
``pytest -m figures``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tomllib

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

NAME = "field_teleportation_fmnist"
ROOT = Path(__file__).resolve().parents[2] / "paper_figures"
RESULTS = ROOT / "results"
CONFIGS = ("field_teleportation_fmnist", "field_teleportation_fmnist_ring")
#: the settings the Fashion-MNIST configs change from field_teleportation's
CHANGED = {"data", "stand_in", "lr", "rounds", "eval_every"}


def _raw(config: str) -> dict[str, Any]:
    return tomllib.loads((ROOT / "configs" / f"{config}.toml").read_text(encoding="utf-8"))


@pytest.fixture(autouse=True)
def _close_figures() -> Any:
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


def test_listed_with_field_teleportations_checks_and_margin() -> None:
    assert available()[NAME].startswith("Field claim")
    meta = figures.claim_of(NAME)
    assert meta["title"].startswith("Field: ") and "Fashion-MNIST" in meta["title"]
    assert "paper's own data set" in meta["claim"] and "last 5 evaluations" in meta["claim"]
    assert meta["notes"][0].startswith("Declared before the default scale ran")
    assert figures.margin(NAME, "accuracy") == figures.margin("field_teleportation",
                                                              "accuracy") == 0.01
    mod, base = script(NAME), script("field_teleportation")
    assert mod["CONFIGS"] == list(CONFIGS) and mod["NAMES"] == base["NAMES"]
    assert mod["LAST"] == 5


def test_configs_are_field_teleportations_on_fashion_mnist() -> None:
    for config in CONFIGS:
        raw = _raw(config)
        old = _raw(config.replace("_fmnist", ""))
        assert raw["data"] == "fashion_mnist" and raw["stand_in"] == {"data": "mnist5k:seed=0"}
        assert raw["lr"] == 0.02 and raw["rounds"] == 24000 and raw["eval_every"] == 500
        same = {k: v for k, v in raw.items() if k not in CHANGED | {"scale"}}
        assert same == {k: v for k, v in old.items() if k not in CHANGED | {"scale"}}, config
        assert raw["scale"]["default"] == {"rounds": 24000, "eval_every": 500, "seeds": 5}
        cfg = figures.load_config(config, "default")
        assert cfg["data"] in ("fashion_mnist", "mnist5k:seed=0")


@pytest.mark.parametrize("scale", figures.config.SCALES)
@pytest.mark.parametrize("config", CONFIGS)
def test_plans_at_every_scale(config: str, scale: str) -> None:
    cfg = figures.load_config(config, scale)
    runs = sweep.plan(figures.config._clean(cfg))
    assert sorted({r.config["seed"] for r in runs}) == sorted(cfg["_seeds"])
    assert (len(cfg["_seeds"]) == 1) if scale == "quick" else (len(cfg["_seeds"]) >= 3)
    assert len(runs) == 3 * len(cfg["_seeds"])  # n = 20, 80, 320


def test_final_over_the_last_evaluations_is_their_mean_seed_by_seed() -> None:
    rng = np.random.default_rng(0)
    curves = {s: rng.uniform(0.7, 0.9, size=12) for s in range(3)}
    r = tf.records.Records(rows=[{"run": f"s{s}", "round": t, "client": None,
                                  "metric": "global_acc_mean", "value": float(v)}
                                 for s, c in curves.items() for t, v in enumerate(c)],
                           configs={f"s{s}": {"seed": s} for s in curves})
    got = figures.final(r, "global_acc", last=5)
    assert got.seeds == (0, 1, 2)
    assert np.allclose(got.values, [c[-5:].mean() for c in curves.values()], atol=1e-12)
    assert figures.final(r, "global_acc").values == tuple(float(c[-1]) for c in curves.values())
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="int >= 1"):
            figures.final(r, "global_acc", last=bad)


# ------------------------------------------------------------------- the committed result


def _committed() -> tuple[str, dict[str, Any]]:
    if not (RESULTS / f"{NAME}.json").exists():
        pytest.skip(f"default-scale result of {NAME} not committed yet")
    return verdict(NAME, RESULTS, "default")


def test_committed_result_ran_on_fashion_mnist_and_redecides_to_itself() -> None:
    md, v = _committed()
    assert 5_000 < (RESULTS / f"{NAME}.png").stat().st_size < 200_000
    assert v["seeds"] == [0, 1, 2, 3, 4] and v["threads"] == [1]
    assert v["dataset"].startswith("fashion_mnist") and v["stand_in"] == {}
    assert [c["headline"] for c in v["checks"]] == [True, False, False]
    for c in v["checks"]:
        assert len(c["values"]) == 5 and "convergence" in c, c["name"]
    again = redecide(NAME, RESULTS, write=False)
    assert again.before == again.after == v["verdict"] and not again.moved
    assert "n_clients | 20 / 80 / 320" in md and "fashion_mnist" in md


# ------------------------------------------------------------------- --quick (opt in)


@pytest.mark.figures
def test_quick_content(quick_out: Path) -> None:
    fig = run_quick(NAME, quick_out)
    assert fig is not None
    assert_readable(fig)
    md, v = verdict(NAME, quick_out)
    assert v["seeds"] == [0] and v["verdict"] == "inconclusive at this scale"
    assert len(v["checks"]) == 3
