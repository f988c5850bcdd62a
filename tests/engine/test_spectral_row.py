"""The graph rows of a run's records: a time-varying graph is recorded as its schedule."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import topofl as tf
from topofl.engine.evaluation import spectral_row
from topofl.study import run_table


def _labels(n: int, classes: int = 4) -> np.ndarray:
    counts = np.zeros((n, classes))
    counts[np.arange(n), np.arange(n) % classes] = 10.0
    return counts


def test_random_schedule_records_its_expected_effective_neighbors() -> None:
    tv = tf.topologies.el_oracle(64, 3, seed=1)
    expected = tf.spectral.expected_mixing(tv).effective_neighbors(0.95)
    cache: dict[int, dict[str, Any]] = {}
    rows = [spectral_row(tv.at(t), tv, cache) for t in (0, 7, 31)]
    for row in rows:
        assert row["graph.effective_neighbors"] == pytest.approx(expected, rel=1e-12)
        assert row["graph.time_varying"] is True
    # one draw has far fewer effective neighbours than the schedule: what the row used to hold
    one_draw = tf.spectral.effective_neighbors(tv.at(7), 0.95)
    assert one_draw < 0.8 * expected
    assert len(cache) == 1  # summarised once per run


def test_periodic_schedule_row_is_the_schedule_whatever_round_is_evaluated() -> None:
    tv = tf.topologies.one_peer_exponential(8)
    labels = _labels(8)
    props = labels / labels.sum(axis=1, keepdims=True)
    want = tf.spectral.summary(tv, label_distributions=props)
    for t in range(tv.period or 1):
        row = spectral_row(tv.at(t), tv, {}, labels)
        assert row["graph.effective_neighbors"] == pytest.approx(
            tf.spectral.effective_neighbors(tv, 0.95), rel=1e-12)
        # exact average after log2(8) = 3 rounds, which a single round does not show
        assert row["graph.finite_time_consensus"] == 3
        assert row["graph.consensus_rate"] == pytest.approx(0.0, abs=1e-12)
        assert row["graph.b_connectivity"] == want["b_connectivity"] == 3
        # per-round metrics: the mean over the period, not the evaluated round's
        assert row["graph.neighborhood_heterogeneity"] == pytest.approx(
            want["neighborhood_heterogeneity"], rel=1e-12)
        assert row["graph.edges_per_node"] == pytest.approx(1.0)


def test_static_graph_row_is_the_graph_summary() -> None:
    ring = tf.topologies.ring(10)
    labels = _labels(10)
    row = spectral_row(ring, None, {}, labels)
    props = labels / labels.sum(axis=1, keepdims=True)
    s = tf.spectral.summary(ring, label_distributions=props)
    assert row["graph.effective_neighbors"] == pytest.approx(s["effective_neighbors"])
    assert row["graph.neighborhood_heterogeneity"] == pytest.approx(
        s["neighborhood_heterogeneity"])
    assert row["graph.edges_per_node"] == 2.0
    assert row["graph.time_varying"] is False
    # measured=False leaves the simulated quantities out
    assert spectral_row(ring, None, {}, measured=False)["graph.consensus_rate"] is None


def test_study_reads_the_schedule_value_from_a_run() -> None:
    data = tf.data.federate("digits", "shards", 12, shards_per_client=2, seed=0)
    tv = tf.topologies.el_oracle(12, 3, seed=4)
    res = tf.run("dsgd", topology=tv, data=data, rounds=6, lr=0.2, batch_size=8,
                 eval_every=2, seed=4, record_clients=False)
    table = run_table(res.records, metric="test_acc_mean", target=0.5)
    assert float(table["effective_neighbors"].iloc[0]) == pytest.approx(
        tf.spectral.expected_mixing(tv).effective_neighbors(0.95), rel=1e-12)
    assert float(table["consensus_rate"].iloc[0]) < 1.0  # measured for the schedule
