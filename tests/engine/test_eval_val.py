"""Validation scores at every evaluation (``RunConfig.eval_val``) and the best-validation model
selection read from them (``Records.selected``): against DPFL's own ``select="best_val"``, a
direct scoring of the final models, stacked runs and the records' brute force."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import topofl as tf
from topofl.engine.config import config_header
from topofl.engine.stack import Member, run_stacked
from topofl.records import Records

DATA = tf.data.federate("digits", "shards", 8, seed=0, val=0.2)


def _run(algorithm: Any, rounds: int = 6, **kw: Any) -> Any:
    topo = tf.topologies.ring(8) if algorithm.uses_topology else None
    return tf.run(algorithm, topo, DATA, "logistic", rounds, seed=1, dtype="float64",
                  batch_size=16, progress=False, **kw)


def test_selection_equals_dpfl_keeping_its_best_validation_models() -> None:
    # DPFL keeps each client's best model on validation loss every round and scores it; the
    # engine's selection over every round's evaluation must pick the same models
    kw = {"lr": 0.002, "local_epochs": 1}
    kept = _run(tf.algorithms.dpfl(select="best_val", **kw), rounds=10)
    read = _run(tf.algorithms.dpfl(select="last", **kw), rounds=10, eval_val=True,
                eval_every=1)
    final = kept.records.per_client("test_acc", 9)
    chosen = read.records.selected("test_acc", "val_loss")
    np.testing.assert_array_equal(chosen, final)
    best_round = [r["value"] for r in kept.records.rows if r["metric"] == "dpfl_best_round"][-1]
    assert len(set(best_round)) > 1  # the clients chose different rounds: not trivial
    # and the selection differs from the last round's models for some client
    assert not np.array_equal(chosen, read.records.per_client("test_acc", 9))


def test_val_rows_are_the_final_models_scored_on_their_validation_splits() -> None:
    res = _run(tf.algorithms.dsgd(lr=0.3), eval_val=True)
    loss = res.services.losses(res.state.x, "val").numpy()
    acc = res.services.accuracies(res.state.x, "val").numpy()
    np.testing.assert_allclose(res.records.per_client("val_loss", 5), loss, rtol=1e-12)
    np.testing.assert_allclose(res.records.per_client("val_acc", 5), acc, rtol=1e-12)
    assert math.isclose(res.records.final("val_loss"), float(loss.mean()), rel_tol=1e-12)
    assert math.isclose(res.records.final("val_acc_mean"), float(acc.mean()), rel_tol=1e-12)
    assert math.isclose(res.records.final("val_acc_min"), float(acc.min()), rel_tol=1e-12)


def test_off_by_default_changes_nothing() -> None:
    a, b = _run(tf.algorithms.dsgd(lr=0.3)), _run(tf.algorithms.dsgd(lr=0.3), eval_val=True)
    assert not any(r["metric"].startswith("val_") for r in a.records.rows)
    strip = [r for r in b.records.rows if not r["metric"].startswith("val_")
             and r["metric"] != "wall_time"]
    assert strip == [r for r in a.records.rows if r["metric"] != "wall_time"]
    # the header (and the run hash) of a run at the default is that of a run before the field
    algo, model = tf.algorithms.dsgd(), tf.models.build_model("logistic", (1, 8, 8), 10, seed=0)
    head = config_header(tf.engine.RunConfig(rounds=2), algo, None, DATA, model)
    assert "eval_val" not in head["run"]
    other = config_header(tf.engine.RunConfig(rounds=2, eval_val=True), algo, None, DATA, model)
    assert other["run"]["eval_val"] is True and other["run_hash"] != head["run_hash"]


def test_a_personalized_algorithm_is_scored_with_its_own_prediction_rule() -> None:
    # kNN-Per predicts with its own rule (the predict hook): its val scores use it too
    res = _run(tf.algorithms.get_algorithm("knn_per", lr=0.1), rounds=3, eval_val=True)
    assert np.isfinite(res.records.selected()).all()
    assert 0.0 <= res.records.final("val_acc_mean") <= 1.0


def test_stacked_runs_record_the_val_rows_of_their_runs_alone() -> None:
    members = []
    for s, lr in ((0, 0.1), (1, 0.3)):
        cfg = tf.engine.RunConfig(rounds=3, seed=s, dtype="float64", batch_size=8,
                                  eval_val=True, eval_every=1)
        members.append(Member(cfg, tf.topologies.ring(8), tf.algorithms.dsgd(lr=lr), DATA,
                              tf.models.build_model("logistic", DATA.input_shape, 10, seed=s)))
    for m, res in zip(members, run_stacked(members)):
        alone = tf.engine.run(*m[:5])
        for metric in ("val_loss", "val_acc"):
            for t in range(3):
                np.testing.assert_allclose(res.records.per_client(metric, t),
                                           alone.records.per_client(metric, t), rtol=1e-10)
        np.testing.assert_array_equal(res.records.selected(), alone.records.selected())


def test_a_resumed_run_selects_as_the_run_uninterrupted(tmp_path: Any) -> None:
    whole = _run(tf.algorithms.dsgd(lr=0.3), eval_val=True)
    ck, rec = tmp_path / "c.ckpt", tmp_path / "r.jsonl"
    _run(tf.algorithms.dsgd(lr=0.3), rounds=4, eval_val=True, checkpoint_every=2,
         checkpoint_path=str(ck), records_path=str(rec))
    again = _run(tf.algorithms.dsgd(lr=0.3), eval_val=True, checkpoint_every=2,
                 checkpoint_path=str(ck), records_path=str(rec), resume=str(ck))
    np.testing.assert_allclose(tf.records.load(rec).selected(), whole.records.selected())
    assert again.records.final("val_loss") == pytest.approx(whole.records.final("val_loss"))


def test_bad_settings_say_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="needs record_clients=True"):
        tf.engine.RunConfig(rounds=2, eval_val=True, record_clients=False)
    with pytest.raises(TypeError, match="eval_val"):
        tf.engine.RunConfig(rounds=2, eval_val=1)  # type: ignore[arg-type]
    no_val = tf.data.federate("digits", "shards", 4, seed=0)
    with pytest.raises(ValueError, match="no client of the data has one"):
        tf.run(tf.algorithms.dsgd(), tf.topologies.ring(4), no_val, "logistic", 1,
               eval_val=True, progress=False)
    res = _run(tf.algorithms.dsgd(lr=0.3), rounds=1)
    with pytest.raises(KeyError, match="eval_val=True"):
        res.records.selected()
    with pytest.raises(ValueError, match="mode must be"):
        res.records.selected(mode="best")


@given(st.integers(1, 5), st.integers(1, 6), st.integers(0, 2**31 - 1),
       st.sampled_from(["min", "max"]))
def test_selection_is_the_first_best_round_of_each_client(n: int, rounds: int, seed: int,
                                                          mode: str) -> None:
    rng = np.random.default_rng(seed)
    by = rng.integers(0, 3, size=(rounds, n)).astype(float)  # small integers: many ties
    by[rng.random((rounds, n)) < 0.2] = np.nan
    odd = rng.random((rounds, n)) < 0.2  # a diverged model's loss: never the best one
    by[odd] = rng.choice([np.inf, -np.inf], size=int(odd.sum()))
    metric = rng.random((rounds, n))
    stored = {np.inf: "inf", -np.inf: "-inf"}  # as the records file writes them
    rows = [{"run": "r", "round": t, "client": c, "metric": m, "value": v}
            for t in range(rounds) for c in range(n)
            for m, v in (("val_loss", None if np.isnan(by[t, c]) else
                          stored.get(float(by[t, c]), float(by[t, c]))),
                         ("test_acc", metric[t, c]))]
    got = Records(rows=rows).selected(mode=mode)
    for c in range(n):
        col = np.where(np.isfinite(by[:, c]), by[:, c], np.nan)
        col = col if mode == "min" else -col
        if np.isnan(col).all():
            assert math.isnan(got[c])
        else:  # nanargmin over the finite values: the first round of the smallest one
            assert got[c] == metric[int(np.nanargmin(col)), c]


@pytest.mark.parametrize("bad", ["-inf", float("-inf"), "inf", None, float("nan")])
def test_a_non_finite_validation_loss_is_never_the_best_round(bad: Any) -> None:
    """Before: a "-inf" validation loss was selected as the best round."""
    rows = [{"run": "r", "round": t, "client": 0, "metric": m, "value": v}
            for t, m, v in [(0, "val_loss", 0.5), (0, "test_acc", 0.1),
                            (1, "val_loss", bad), (1, "test_acc", 0.2),
                            (2, "val_loss", 0.3), (2, "test_acc", 0.9)]]
    assert Records(rows=rows).selected().tolist() == [0.9]
    assert Records(rows=rows).selected(mode="max").tolist() == [0.1]


def test_a_metric_that_is_not_a_name_is_a_type_error() -> None:
    """Before: ``Records.selected(1)`` raised ``AttributeError: 'int' object has no attribute
    'startswith'``."""
    rec = Records(rows=[{"run": "r", "round": 0, "client": 0, "metric": "val_loss",
                         "value": 0.5}])
    with pytest.raises(TypeError, match=r"^metric must be a str naming a recorded metric "
                                        r"\(e.g. 'test_acc'\), got int 1$"):
        rec.selected(1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^by must be a str .* got NoneType None$"):
        rec.selected("test_acc", None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^metric must be a str .* got int 1$"):
        rec.series(1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^metric must be a str .* got float 0.5$"):
        rec.per_client(0.5, 0)  # type: ignore[arg-type]


def test_client_accuracy_stats_of_the_selected_models() -> None:
    from topofl.algorithms.dpfl_analysis import client_accuracy_stats

    res = _run(tf.algorithms.dsgd(lr=0.3), eval_val=True)
    chosen = 100.0 * res.records.selected()
    mean, var = client_accuracy_stats(res.records, select="best_val")
    assert math.isclose(mean, float(chosen.mean()), rel_tol=1e-12)
    assert math.isclose(var, float(chosen.var()), rel_tol=1e-12)
    last = 100.0 * res.records.per_client("test_acc", 5)
    assert client_accuracy_stats(res.records) == (float(last.mean()), float(last.var()))
    with pytest.raises(ValueError, match="pass round=None"):
        client_accuracy_stats(res.records, select="best_val", round=5)
    with pytest.raises(ValueError, match="select"):
        client_accuracy_stats(res.records, select="best")


def test_a_client_that_cannot_validate_is_scored_at_its_last_evaluation() -> None:
    """Before: a client without validation samples (all its val_loss NaN) made
    ``client_accuracy_stats(select="best_val")`` refuse the whole run."""
    from topofl.algorithms.dpfl_analysis import client_accuracy_stats

    nan = float("nan")
    rows = [{"run": "r", "round": t, "client": k, "metric": m, "value": v}
            for t, k, m, v in [(0, 0, "val_loss", 0.9), (0, 0, "test_acc", 0.5),
                               (1, 0, "val_loss", 0.4), (1, 0, "test_acc", 0.7),
                               (2, 0, "val_loss", 0.6), (2, 0, "test_acc", 0.8),
                               (0, 1, "val_loss", nan), (0, 1, "test_acc", 0.6),
                               (1, 1, "val_loss", nan), (1, 1, "test_acc", 0.9),
                               (2, 1, "val_loss", nan), (2, 1, "test_acc", 0.3)]]
    rec = Records(rows=rows)
    assert np.isnan(rec.selected()[1])
    mean, var = client_accuracy_stats(rec, select="best_val")
    assert math.isclose(mean, (70.0 + 30.0) / 2) and math.isclose(var, 400.0)
