"""topofl.spectral.summary: keys, types, JSON, degenerate graphs, timing.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

import topofl as tf
from topofl import spectral as S
from topofl.spectral import (
    spectral_gap,
    summary,
)
from topofl.topologies import (
    base_graph,
    random_directed,
    random_regular,
    ring,
)


# ============================================================================ summary
def test_summary_keys_types_and_json() -> None:
    a = summary(ring(10))
    b = summary(random_directed(10, 2, seed=0, mode="push"), horizon=20)
    assert list(a) == list(b) == list(S._SUMMARY_KEYS)
    for s in (a, b):
        json.dumps(s, allow_nan=False)
        for v in s.values():
            assert v is None or type(v) in (bool, int, float, str)
    assert a["time_varying"] is False and b["time_varying"] is True
    assert a["period"] == 1 and b["period"] is None and b["horizon"] == 20
    assert a["spectral_gap"] == pytest.approx(spectral_gap(ring(10)))
    assert b["stochastic"] == "column" and b["directed"] is True
    assert b["pushsum_B"] == b["b_connectivity"]
    assert b["pushsum_delta"] < 1 and a["pushsum_delta"] == pytest.approx(1.0)


def test_summary_without_measured_quantities() -> None:
    g = random_directed(30, 4, seed=0, mode="push")
    full, cheap = summary(g, horizon=20), summary(g, horizon=20, measured=False)
    assert list(full) == list(cheap)
    for key in ("consensus_rate", "finite_time_consensus", "pushsum_q_measured",
                "pushsum_C_measured"):
        assert full[key] is not None or key == "finite_time_consensus"
        assert cheap[key] is None
    for key in ("spectral_gap", "b_connectivity", "pushsum_q", "pushsum_delta", "diameter"):
        assert cheap[key] == full[key]


def test_summary_of_degenerate_graphs_has_nones_not_errors() -> None:
    s = summary(tf.Topology.from_matrix(np.eye(3)))
    assert s["strongly_connected"] is False and s["diameter"] is None
    assert s["b_connectivity"] is None and s["pushsum_q"] is None
    assert s["algebraic_connectivity"] == 0.0 and s["spectral_gap"] == 0.0
    s = summary(ring(6).reweight("metropolis_hastings"))  # zero diagonal: no push-sum bounds
    assert s["pushsum_q"] is None and s["diameter"] == 3
    s = summary(tf.Topology.from_matrix([[1.0]]))
    json.dumps(s, allow_nan=False)


def test_summary_neighborhood_skew_and_finite_time() -> None:
    P = np.eye(2)[[0, 1, 0, 1, 0, 1, 0, 1]]
    s = summary(base_graph(8, 1), label_distributions=P)
    assert s["finite_time_consensus"] == 3 and s["consensus_rate"] == 0.0
    assert s["neighborhood_skew"] is not None and s["neighborhood_skew"] > 0
    with pytest.raises(TypeError, match="Topology or a TimeVarying"):
        summary(np.eye(3))


def test_summary_timing_moderate() -> None:
    t0 = time.perf_counter()
    summary(random_regular(2000, 10, seed=0))
    summary(random_directed(300, 10, seed=0, mode="push"), horizon=100)
    assert time.perf_counter() - t0 < 30


@pytest.mark.slow
def test_summary_timing_large() -> None:
    g = random_regular(10_000, 10, seed=0)
    t0 = time.perf_counter()
    s = summary(g)
    assert time.perf_counter() - t0 < 30
    assert s["spectral_gap"] == pytest.approx(0.3633, abs=1e-3)
    tv = random_directed(1000, 10, seed=0, mode="push")
    t0 = time.perf_counter()
    summary(tv, horizon=100)
    assert time.perf_counter() - t0 < 60
