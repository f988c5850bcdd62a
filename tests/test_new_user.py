"""What a new user trips on (issue 23): their own dataset, names mistyped, the README."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from torch.utils.data import TensorDataset

import topofl as tf


def _own_dataset() -> TensorDataset:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(240, 5, generator=g)
    return TensorDataset(x, (x[:, 0] > 0).long())


def test_own_dataset_records_no_global_metric_it_cannot_compute() -> None:
    # before: global_acc_mean was NaN in every row, and final()/best() returned NaN silently
    data = tf.data.federate(_own_dataset(), "iid", 4, seed=0, test=0.2)
    assert data.global_test[0].shape[0] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing NaN to warn about
        res = tf.run("dsgd", topology="ring", data=data, model="logistic", rounds=2, lr=0.1,
                     batch_size=8, seed=0)
        assert not [m for m in res.records.metrics if m.startswith("global_")]
        assert 0 <= res.records.final() <= 1
    with pytest.raises(KeyError, match="global_\\* only when its data has a global test set"):
        res.records.final("global_acc_mean")
    values = [r["value"] for r in res.records.rows if r["client"] is None
              and isinstance(r["value"], float)]
    assert not any(math.isnan(v) for v in values)


def test_own_train_and_test_pair_records_the_global_metric() -> None:
    ds = _own_dataset()
    data = tf.data.federate((ds, ds), "iid", 4, seed=0)
    res = tf.run("dsgd", topology="ring", data=data, model="logistic", rounds=1, lr=0.1,
                 batch_size=8, seed=0)
    assert 0 <= res.records.final("global_acc_mean") <= 1


# ------------------------------------------------------------------ did you mean
@pytest.mark.parametrize(("call", "hint"), [
    (lambda: tf.topologies.build("rnig", seed=0), "'ring'"),
    (lambda: tf.topologies.REGISTRY["torsu"], "'torus'"),
    (lambda: tf.run("dgsd", topology="ring"), "'dsgd'"),
    (lambda: tf.run("dsgd", topology="rnig", n_clients=4), "'ring'"),
    (lambda: tf.run("dsgd", topology="ring", n_clients=4, lrr=0.1), "'lr' for 'lrr'"),
    (lambda: tf.run("dsgd", topology="ring", model="logstic"), "'logistic'"),
    (lambda: tf.run("dsgd", topology="ring", partition="shard"), "'shards'"),
    (lambda: tf.data.load("mnsit"), "'mnist'"),
    (lambda: tf.data.load("synthetic", n_sample=5), "'n_samples' for 'n_sample'"),
    (lambda: tf.algorithms.get_algorithm("fedvg"), "'fedavg'"),
    (lambda: tf.config.validate({"topology": "rign"}), "'ring'"),
    (lambda: tf.config.validate({"topology": "ring", "momentm": 0.9}),
     "'momentum' for 'momentm'"),
    (lambda: tf.config.validate({"topology": "ring", "algorithm": "sgd"}), "'dsgd'"),
    (lambda: tf.config.validate({"topology": "ring:nn=4"}), "'n' for 'nn'"),
    (lambda: tf.spectral.summary(tf.topologies.ring(4), metrics=["spectral_gapp"]),
     "'spectral_gap' for 'spectral_gapp'"),
    (lambda: tf.spectral.spectral_gap(tf.topologies.ring(4), kind="modulos"), "'modulus'"),
], ids=lambda x: x if isinstance(x, str) else "")
def test_every_lookup_by_name_suggests_the_likely_one(call: object, hint: str) -> None:
    # before: the errors listed the valid names but never suggested one
    with pytest.raises((ValueError, TypeError, KeyError)) as info:
        call()  # type: ignore[operator]
    msg = str(info.value)
    assert f"did you mean {hint}?" in msg, msg


def test_the_command_line_suggests_too(capsys: pytest.CaptureFixture[str]) -> None:
    from topofl.cli import main

    assert main(["spectral", "rnig:n=8"]) == 2
    assert "did you mean 'ring'?" in capsys.readouterr().err
