"""The Fashion-MNIST results fall back to their offline stand-in where Debian's
dataset-fashion-mnist is absent (the configs' ``[stand_in]``), and run on the real images where
it is present."""

from __future__ import annotations

import pytest

from topofl import figures
from topofl.figures import config as figure_config

CONFIGS = ["field_all_eigenvalues_fmnist_iid", "field_morph_fmnist_morph"]


@pytest.mark.parametrize("name", CONFIGS)
def test_absent_files_run_the_configs_stand_in(name: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    real = figure_config._available
    monkeypatch.setattr(figure_config, "_available",
                        lambda d: False if d == "fashion_mnist" else real(d))
    cfg = figures.load_config(name, "quick")
    assert cfg["data"] == "mnist5k:seed=0"
    assert cfg["_stand_in"] == {"fashion_mnist": "mnist5k:seed=0"}


@pytest.mark.parametrize("name", CONFIGS)
def test_present_files_run_the_real_images(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(figure_config, "_available", lambda d: True)
    cfg = figures.load_config(name, "quick")
    assert cfg["data"] == "fashion_mnist" and not cfg.get("_stand_in")


def test_without_a_config_stand_in_the_digits_stand_in() -> None:
    assert figure_config.stand_in("fashion_mnist", "mlp") == "digits"
    assert figure_config.stand_in("fashion_mnist", "gn_lenet") == "digits28"
