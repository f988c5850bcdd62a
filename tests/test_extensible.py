"""The registries users extend (issue 47, the extension surface): a taken name is refused
unless ``replace=True``, which warns and is recorded in the records header of every run that
uses the replaced entry; a name must be a non-empty identifier-like str."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from torch import nn

import topofl as tf
from topofl._utils.registries import Extensible, replaced
from topofl.algorithms.base import _REGISTRY as _ALGORITHMS
from topofl.algorithms.base import register_algorithm, unregister_algorithm
from topofl.data.datasets.registry import _REGISTRY as _DATASETS
from topofl.models._registry import _REGISTRY as _MODELS

_RUN = dict(topology="ring", data="digits", n_clients=4, partition="iid", rounds=2,
            batch_size=8, seed=0, spectral=False)


@pytest.fixture(autouse=True)
def _registries_as_they_were() -> Iterator[None]:
    """Every registry as it was before the test, whatever the test replaced."""
    saved = [(r, r.snapshot()) for r in (_ALGORITHMS, _MODELS, _DATASETS)]
    yield
    for registry, (table, originals) in saved:
        registry.restore(table, originals)


def _noop_dsgd(lr: float = 0.1) -> tf.engine.Algorithm:
    """The issue's fuzz: D-SGD's local steps, and a communicate that sends nothing."""
    real = _ALGORITHMS.originals.get("dsgd", _ALGORITHMS.table["dsgd"])
    return real(lr=lr)._replace(communicate=lambda state, rnd, env: tf.engine.Sent(0))


def _blobs(n: int = 60, seed: int = 0) -> tf.data.Dataset:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, n)
    x = (rng.normal(size=(n, 1, 8, 8)) + y[:, None, None, None]).astype(np.float32)
    k = n * 5 // 6
    return tf.data.Dataset("blobs", x[:k], y[:k], x[k:], y[k:], num_classes=10,
                           input_shape=(1, 8, 8))


def _tiny(input_shape: Any, num_classes: int) -> tf.models.SplitModel:
    body = nn.Sequential(nn.Flatten(), nn.Linear(64, 3), nn.ReLU())
    return tf.models.SplitModel(body, nn.Linear(3, num_classes), arch="logistic",
                                input_shape=input_shape, num_classes=num_classes)


REGISTER: dict[str, Callable[..., Any]] = {
    "algorithm": register_algorithm,
    "model": tf.models.register_model,
    "dataset": tf.data.register_dataset,
}
BUILTIN = {"algorithm": "dsgd", "model": "logistic", "dataset": "digits"}


@pytest.mark.parametrize("what", sorted(REGISTER))
def test_a_taken_name_is_refused_without_replace(what: str) -> None:
    """Before: register_algorithm("dsgd")(f) silently replaced the built-in."""
    before = dict(_ALGORITHMS.table), dict(_MODELS.table), dict(_DATASETS.table)
    with pytest.raises(ValueError, match=rf"{what} '{BUILTIN[what]}' is already registered "
                                         r"\(built in\): pass replace=True to replace it"):
        REGISTER[what](BUILTIN[what])(lambda *a, **k: None)
    assert (dict(_ALGORITHMS.table), dict(_MODELS.table), dict(_DATASETS.table)) == before
    assert replaced(what) == frozenset()


@pytest.mark.parametrize("what", sorted(REGISTER))
@pytest.mark.parametrize("name", ["", 123, None, "two words", "1st", "-x", "a.b"])
def test_a_name_that_is_not_identifier_like_is_refused(what: str, name: Any) -> None:
    """Before: register_algorithm accepted "", 123 and None."""
    with pytest.raises(TypeError, match=rf"name must be a non-empty str of letters, digits, "
                                        rf"'_' and '-' .* got {type(name).__name__} "):
        REGISTER[what](name)


def test_every_builtin_name_is_identifier_like_and_built_in() -> None:
    from topofl._utils.registries import check_name

    for registry in (_ALGORITHMS, _MODELS, _DATASETS):
        assert set(registry.table) == registry.builtin, registry.what
        for name in registry.table:
            assert check_name(name, registry.what) == name
    assert {"dsgd", "sgp", "fedavg", "teleport"} <= _ALGORITHMS.builtin
    with pytest.raises(ValueError, match="algorithm 'dsgd' is built in"):
        unregister_algorithm("dsgd")


def test_the_same_factory_again_is_a_no_op() -> None:
    def mine(lr: float = 0.1) -> tf.engine.Algorithm:
        return tf.algorithms.dsgd(lr=lr)._replace(name="mine_again")

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning either
        assert register_algorithm("mine_again")(mine) is mine
        assert register_algorithm("mine_again")(mine) is mine
    assert "mine_again" not in _ALGORITHMS.builtin
    unregister_algorithm("mine_again")
    assert "mine_again" not in tf.algorithms.ALGORITHMS


def test_the_registry_is_read_only() -> None:
    with pytest.raises(TypeError):
        tf.algorithms.ALGORITHMS["dsgd"] = _noop_dsgd  # type: ignore[index]


def test_replacing_an_algorithm_warns_runs_the_new_one_and_the_header_says_so() -> None:
    """The issue's case: the records of the replaced dsgd said "dsgd" (0.149 -> 0.048)."""
    plain = tf.run("dsgd", **_RUN)
    with pytest.warns(UserWarning, match=r"algorithm 'dsgd' \(built in\) is replaced by "
                                         r"_noop_dsgd: a run that names it runs the new "
                                         r"factory, and its records header says \"replaced\""):
        assert register_algorithm("dsgd", replace=True)(_noop_dsgd) is _noop_dsgd
    assert tf.algorithms.ALGORITHMS["dsgd"] is _noop_dsgd and replaced("algorithm") == {"dsgd"}
    mine = tf.run("dsgd", **_RUN)
    assert mine.records.final("messages") == 0.0 < plain.records.final("messages")  # it ran
    engine, prov = mine.records.engines["dsgd-ring"], mine.records.provenances["dsgd-ring"]
    assert engine["algorithm"]["replaced"] is True
    assert prov["replaced"] == {"algorithm": "dsgd"} and prov["replayable"] is False
    assert "algorithm 'dsgd' (its registration was replaced)" in prov["not_replayable"]
    # a run of the replacement never passes for one of the built-in (its hash differs)
    assert engine["run_hash"] != plain.records.engines["dsgd-ring"]["run_hash"]
    assert "replaced" not in plain.records.engines["dsgd-ring"]["algorithm"]
    assert "replaced" not in plain.records.provenances["dsgd-ring"]
    unregister_algorithm("dsgd")  # the built-in is back, and so is its header
    assert replaced("algorithm") == frozenset()
    again = tf.run("dsgd", **_RUN)
    assert again.records.engines["dsgd-ring"] == plain.records.engines["dsgd-ring"]
    for metric in ("test_acc_mean", "train_loss", "messages"):  # the same code, once more
        assert again.records.final(metric) == plain.records.final(metric), metric


def test_replacing_a_model_and_a_dataset_is_recorded_in_the_header() -> None:
    with pytest.warns(UserWarning, match=r"model 'logistic' \(built in\) is replaced"):
        tf.models.register_model("logistic", replace=True)(_tiny)
    with pytest.warns(UserWarning, match=r"dataset 'digits' \(built in\) is replaced"):
        tf.data.register_dataset("Digits", replace=True)(_blobs)  # the name up to case
    assert tf.data.DATASETS["digits"] is _blobs and "Digits" not in tf.data.DATASETS
    res = tf.run("dsgd", model="logistic", **{**_RUN, "data": "digits:n=120,seed=1"})
    prov = res.records.provenances["dsgd-ring"]
    assert prov["replaced"] == {"model": "logistic", "data": "digits"}
    assert res.state.x.shape == (4, 64 * 3 + 3 + 3 * 10 + 10)  # the replacement's model
    assert res.records.engines["dsgd-ring"]["data"]["dataset"] == "blobs"
    tf.models.unregister_model("logistic")
    tf.data.unregister_dataset("digits")
    assert replaced("model") == replaced("dataset") == frozenset()
    assert tf.data.load("digits").input_shape == (1, 8, 8)


def test_replace_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="replace must be a bool, got str 'yes'"):
        register_algorithm("mine", replace="yes")  # type: ignore[arg-type]


def test_a_registry_s_own_module_fills_its_built_in_names() -> None:
    reg: Extensible[Callable[..., Any]] = Extensible("thing", {}, home="topofl.")
    reg.register("tests_own", "maker")(_tiny)  # defined in tests: not built in
    reg.register("topofls", "maker")(tf.topologies.ring)  # defined in topofl: built in
    assert reg.builtin == {"topofls"}
