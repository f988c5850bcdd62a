"""``eval_every="auto"`` (issue 58, item 2; issue 85, item 1): at any number of clients an
evaluation interval whose training costs about two evaluations, resolved before anything is
recorded: a run is exactly the run of the interval its header states."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.engine.config import (
    EVAL_SAMPLE_COST,
    RunConfig,
    auto_eval_every,
    config_header,
    resolve_eval_every,
)


@settings(max_examples=200, deadline=None)
@given(scored=st.floats(0, 1e5), trained=st.floats(0, 1e4))
def test_the_interval_is_the_fewest_rounds_whose_training_costs_two_evaluations(
        scored: float, trained: float) -> None:
    k = auto_eval_every(scored, trained)
    c, t = 2 * EVAL_SAMPLE_COST * scored, max(trained, 1.0)  # at least one sample is counted
    assert k >= 1 and (k - 1) * t < c + 1e-9 * t
    assert k == 1 or k * t >= c - 1e-6
    # never fewer rounds between evaluations for more scoring, nor more for more training
    assert auto_eval_every(2 * scored, trained) >= k
    assert auto_eval_every(scored, 2 * trained) <= k


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), True, "8", None])
def test_a_bad_count_of_samples_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="auto_eval_every expects scored >= 0 samples"):
        auto_eval_every(bad, 8)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="auto_eval_every expects trained >= 0 samples"):
        auto_eval_every(8, bad)  # type: ignore[arg-type]


def test_an_explicit_interval_is_kept_and_bad_ones_are_refused() -> None:
    data = tf.data.federate("synthetic:n_samples=6000,dim=4,num_classes=2,seed=0", "iid",
                            2_000, seed=0)  # 3 samples a client: 1 test (test=0.2)
    assert resolve_eval_every(RunConfig(rounds=3, eval_every=1), data).eval_every == 1
    # the global test set: 0.2 x 6000 = 1200 samples (within the budget) + 1 of its own
    auto = resolve_eval_every(RunConfig(rounds=3, batch_size=8), data).eval_every
    scored = float(np.mean(data.sizes("test"))) + data.global_test[0].shape[0]
    assert auto == math.ceil(2 * EVAL_SAMPLE_COST * scored / 8)
    with pytest.raises(ValueError, match="eval_every must be an int >= 1 or 'auto', got "
                                         "'sometimes'"):
        RunConfig(rounds=3, eval_every="sometimes")
    with pytest.raises(ValueError, match="eval_every"):
        RunConfig(rounds=3, eval_every=0)
    with pytest.raises(ValueError, match="resolve_eval_every"):
        RunConfig(rounds=3).interval  # noqa: B018


def _data(n: int) -> tf.data.FederatedData:
    return tf.data.federate(f"synthetic:n_samples={4 * n},n_test=300,dim=4,num_classes=2,"
                            "seed=0", "iid", n, seed=0)


def _run(n: int, rounds: int = 9, **kw: object) -> tf.engine.Result:
    data = _data(n)
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    cfg = RunConfig(rounds=rounds, batch_size=8, spectral=False, record_clients=False, **kw)
    return tf.engine.run(cfg, tf.topologies.ring(n), tf.algorithms.dsgd(lr=0.1), data, model)


def test_a_small_run_evaluates_as_a_large_one_that_scores_as_much() -> None:
    # the interval counts what a client scores (its test split and the 300 global test
    # samples) against what it trains on, whatever n (issue 85: a default run of 10^3
    # clients cost 3.5x one of 10^4 when every round up to 1,000 clients was evaluated)
    data = _data(8)
    k = math.ceil(2 * EVAL_SAMPLE_COST * (float(np.mean(data.sizes("test"))) + 300) / 8)
    assert k > 1
    auto, fixed = _run(8, 2 * k + 1), _run(8, 2 * k + 1, eval_every=k)
    assert auto.records.config["run"]["eval_every"] == k
    assert auto.records.config["run_hash"] == fixed.records.config["run_hash"]
    assert auto.records.series("test_acc_mean")[0].tolist() == [k - 1, 2 * k - 1, 2 * k]
    # a round that trains on more than a client scores is evaluated every round
    assert resolve_eval_every(RunConfig(rounds=3, batch_size=8), data,
                              tf.algorithms.dsgd(local_steps=30)).eval_every == 1


def test_local_epochs_count_the_steps_of_the_largest_client() -> None:
    # the engine steps every client as many times as the largest one needs (Phase.epochs)
    data = tf.data.federate("synthetic:n_samples=3000,n_test=600,dim=4,num_classes=2,seed=0",
                            "dirichlet", 20, seed=0, alpha=0.3)
    largest = int(np.max(data.sizes("train")))
    scored = float(np.mean(data.sizes("test"))) + 600
    for epochs in (0.5, 2.0, (1.0, 3.0)):
        algo = tf.algorithms.local(local_epochs=epochs, lr=0.1)
        steps = math.ceil(float(np.max(epochs)) * largest / 16)
        want = max(1, math.ceil(2 * EVAL_SAMPLE_COST * scored / (16 * steps)))
        got = resolve_eval_every(RunConfig(rounds=3, batch_size=16), data, algo).eval_every
        assert got == want, (epochs, got, want)


def test_a_large_run_evaluates_every_auto_rounds_as_its_header_says() -> None:
    n = 1_200
    data = _data(n)  # each client scores its test split and the 300 global test samples
    k = math.ceil(2 * EVAL_SAMPLE_COST * (float(np.mean(data.sizes("test"))) + 300) / 8)
    assert k == 23
    auto, fixed = _run(n, 2 * k + 1), _run(n, 2 * k + 1, eval_every=k)
    assert auto.records.config["run"]["eval_every"] == k
    assert auto.records.config["run_hash"] == fixed.records.config["run_hash"]
    rounds, acc = auto.records.series("test_acc_mean")
    assert rounds.tolist() == [k - 1, 2 * k - 1, 2 * k]  # every k rounds, and the last
    assert acc.tolist() == fixed.records.series("test_acc_mean")[1].tolist()
    # the description of a run with "auto" is that of its number (one hash, resumable)
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    head = [config_header(RunConfig(rounds=9, batch_size=8, **kw), tf.algorithms.dsgd(),
                          tf.topologies.ring(n), data, model)
            for kw in ({}, {"eval_every": k})]
    assert head[0] == head[1]
    # two local steps a round: half the interval
    two = resolve_eval_every(RunConfig(rounds=9, batch_size=8), data,
                             tf.algorithms.dsgd(local_steps=2))
    assert two.eval_every == math.ceil(2 * EVAL_SAMPLE_COST * (float(np.mean(
        data.sizes("test"))) + 300) / 16)


def test_topofl_run_resolves_it_from_its_data() -> None:
    res = tf.run("dsgd", data="synthetic:n_samples=4800,n_test=300,dim=4,num_classes=2,seed=0",
                 n_clients=1_200, model="logistic", topology="ring", rounds=24, seed=0,
                 batch_size=8, spectral=False, record_clients=False)
    assert res.records.config["eval_every"] == 23
    assert res.records.series("test_acc_mean")[0].tolist() == [22, 23]
