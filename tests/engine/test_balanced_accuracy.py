"""Balanced accuracy as a recorded metric (issue 59, item 8): ``RunConfig(balanced_accuracy=
True)``. The reference is scikit-learn's ``balanced_accuracy_score`` client by client."""

from __future__ import annotations

import types

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import balanced_accuracy_score

import topofl as tf
from topofl.engine.evaluation import balanced_row, class_sums
from topofl.records import Recorder


class _Fixed:
    """An executor whose logits are given: ``logits[k]`` for batch ``k``."""

    def __init__(self, logits: list[torch.Tensor]) -> None:
        self.logits_, self.k = logits, 0

    def logits(self, flat: torch.Tensor, x: torch.Tensor, shared_input: bool) -> torch.Tensor:
        out = self.logits_[self.k]
        self.k += 1
        return out


@pytest.mark.filterwarnings("ignore::UserWarning")  # sklearn: a client with one class
@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 5), b=st.integers(1, 6), batches=st.integers(1, 3),
       classes=st.integers(2, 5), seed=st.integers(0, 10**6))
def test_class_sums_give_sklearns_balanced_accuracy_client_by_client(
        m: int, b: int, batches: int, classes: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    logits = [torch.as_tensor(rng.normal(size=(m, b, classes))) for _ in range(batches)]
    ys = [torch.as_tensor(rng.integers(0, classes, size=(m, b))) for _ in range(batches)]
    masks = [torch.as_tensor(rng.random((m, b)) < 0.8) for _ in range(batches)]
    data = types.SimpleNamespace(
        num_classes=classes, input_shape=(1,), sizes=lambda split: [b] * m,
        eval_batches=lambda split, batch_size: [
            types.SimpleNamespace(x=torch.zeros(m, b, 1), y=y, mask=mask)
            for y, mask in zip(ys, masks)])
    sums = class_sums(_Fixed(logits), torch.zeros(m, 1), data, "test")
    rec = Recorder(None, run="r")
    row = balanced_row(sums, None, tf.engine.config.RunConfig(rounds=1), rec, 0)
    got = rec.records().per_client("test_bacc", 0)
    want = []
    for i in range(m):
        keep = torch.cat([mk[i] for mk in masks]).numpy()
        y = torch.cat([yy[i] for yy in ys]).numpy()[keep]
        pred = torch.cat([lg[i].argmax(dim=-1) for lg in logits]).numpy()[keep]
        want.append(balanced_accuracy_score(y, pred) if y.size else np.nan)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    if not np.all(np.isnan(want)):
        assert row["test_bacc_mean"] == pytest.approx(np.nanmean(want), abs=1e-12)


def test_a_run_records_it_and_one_class_clients_score_their_accuracy() -> None:
    """Each client holding one class: its balanced accuracy is its accuracy."""
    data = tf.data.federate("digits", "pathological", 10, seed=0, classes_per_client=1)
    res = tf.run("dsgd", topology="ring", data=data, rounds=2, seed=0,
                 balanced_accuracy=True, eval_every=1)
    rec = res.records
    for t in (0, 1):
        np.testing.assert_array_equal(rec.per_client("test_bacc", t),
                                      rec.per_client("test_acc", t))
    assert rec.final("test_bacc_mean") == pytest.approx(rec.final("test_acc_mean"), abs=1e-12)
    two = tf.data.federate("digits", "pathological", 10, seed=0, classes_per_client=2)
    res2 = tf.run("dsgd", topology="ring", data=two, rounds=2, seed=0,
                  balanced_accuracy=True)
    assert 0.0 <= res2.records.final("test_bacc_mean") <= 1.0


def test_the_default_leaves_the_run_hash_and_rows_as_they_were() -> None:
    kw = dict(topology="ring", data="digits", n_clients=6, rounds=1, seed=0)
    plain = tf.run("dsgd", **kw)
    assert "test_bacc_mean" not in plain.records.metrics
    assert "balanced_accuracy" not in plain.records.engine.get("run", {})
    on = tf.run("dsgd", **kw, balanced_accuracy=True)
    assert on.records.engine["run"]["balanced_accuracy"] is True
    assert on.records.engine["run_hash"] != plain.records.engine["run_hash"]
    with pytest.raises(TypeError, match="balanced_accuracy"):
        tf.run("dsgd", **kw, balanced_accuracy="yes")


def test_a_stacked_pass_records_what_each_run_records_alone() -> None:
    from topofl.engine.stack import Member, run_stacked
    from topofl.records.queries import Records

    members = []
    for seed, graph in ((0, "ring"), (1, "complete")):
        data = tf.data.federate("digits", "dirichlet", 6, seed=seed, alpha=0.5)
        config = tf.engine.RunConfig(rounds=2, seed=seed, dtype="float64", batch_size=8,
                                     balanced_accuracy=True, eval_every=1)
        members.append(Member(config, tf.topologies.build(graph, n=6),
                              tf.algorithms.ALGORITHMS["dsgd"](0.1), data,
                              tf.models.build_model("logistic", data.input_shape, 10,
                                                    seed=seed)))
    for m, res in zip(members, run_stacked(members)):
        alone: Records = tf.engine.run(*m[:5]).records
        for t in (0, 1):
            np.testing.assert_allclose(res.records.per_client("test_bacc", t),
                                       alone.per_client("test_bacc", t), rtol=0, atol=1e-12)
        assert res.records.final("test_bacc_mean") == pytest.approx(
            alone.final("test_bacc_mean"), abs=1e-12)
