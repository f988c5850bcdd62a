"""``period_consensus_error`` (issue 59, item 3): the norm of one period's product less J.

The reference is the definition written out: the dense product of the rounds' matrices and
numpy's largest singular value of it less ``1/n``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
import topofl.spectral.consensus as consensus
from topofl.spectral import finite_time_consensus, period_consensus_error


def _reference(tv: tf.graph.TimeVarying, rounds: int, start: int = 0) -> float:
    n = tv.n
    P = np.eye(n)
    for t in range(start, start + rounds):
        P = tv.at(t).W.toarray() @ P
    return float(np.linalg.svd(P - 1.0 / n, compute_uv=False)[0])


FAMILIES = [
    ("one_peer_12", lambda: tf.topologies.one_peer_exponential(12)),
    ("one_peer_16", lambda: tf.topologies.one_peer_exponential(16)),
    ("one_peer_21", lambda: tf.topologies.one_peer_exponential(21)),
    ("base_15_2", lambda: tf.topologies.base_graph(15, 2)),
    ("base_17_2", lambda: tf.topologies.base_graph(17, 2)),
    ("cascade_15_2", lambda: tf.topologies.null_cascade(15, 2)),
    ("cascade_30_2", lambda: tf.topologies.null_cascade(30, 2)),
    ("k_peer_30_2", lambda: tf.topologies.k_peer_exponential(30, 2)),
    ("ring_9", lambda: tf.graph.as_time_varying(tf.topologies.ring(9))),
    ("torus_4x4", lambda: tf.graph.as_time_varying(tf.topologies.torus(4, 4))),
]


@pytest.mark.parametrize(("name", "build"), FAMILIES, ids=[f[0] for f in FAMILIES])
def test_equals_the_definition_and_is_zero_exactly_where_a_period_averages(
        name: str, build: object, monkeypatch: pytest.MonkeyPatch) -> None:
    tv = build()  # type: ignore[operator]
    p = int(tv.period)
    want = _reference(tv, p)
    got = period_consensus_error(tv)
    assert abs(got - want) <= 1e-12
    monkeypatch.setattr(consensus, "PERIOD_DENSE_MAX", 1)  # the ARPACK path
    assert abs(period_consensus_error(tv) - want) <= 1e-10
    exact = finite_time_consensus(tv, p)
    assert (want <= 1e-12) == (exact is not None), (name, want, exact)
    assert want <= 1 + 1e-12  # doubly stochastic rounds: no direction grows


def test_a_static_graph_is_one_less_its_spectral_gap_and_other_starts_are_measured() -> None:
    for W in (tf.topologies.ring(10), tf.topologies.random_regular(12, 4, seed=0)):
        assert abs(period_consensus_error(W) - (1 - tf.spectral.spectral_gap(W))) <= 1e-12
    tv = tf.topologies.one_peer_exponential(12)
    for start in (1, 3):
        assert abs(period_consensus_error(tv, start=start) - _reference(tv, 4, start)) <= 1e-12
    assert abs(period_consensus_error(tv, 9) - _reference(tv, 9)) <= 1e-12


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 40), rounds=st.integers(1, 8), start=st.integers(0, 5))
def test_one_peer_exponential_matches_the_definition(n: int, rounds: int, start: int) -> None:
    tv = tf.topologies.one_peer_exponential(n)
    got = period_consensus_error(tv, rounds, start=start)
    assert abs(got - _reference(tv, rounds, start)) <= 1e-12
    assert -1e-15 <= got <= 1 + 1e-12


def test_a_random_sequence_needs_rounds_and_bad_counts_are_refused() -> None:
    tv = tf.topologies.random_matching(8, seed=0)
    with pytest.raises(ValueError, match="no period: pass rounds="):
        period_consensus_error(tv)
    assert abs(period_consensus_error(tv, 3) - _reference(tv, 3)) <= 1e-12
    with pytest.raises(ValueError, match="rounds"):
        period_consensus_error(tv, 0)
    with pytest.raises(TypeError, match="rounds"):
        period_consensus_error(tv, "3")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="start"):
        period_consensus_error(tv, 2, start=-1)


def test_the_summary_gives_it_when_asked_and_keeps_its_default_row() -> None:
    tv = tf.topologies.one_peer_exponential(12)
    assert "period_consensus_error" not in tf.spectral.summary(tv)
    s = tf.spectral.summary(tv, metrics=["period_consensus_error", "finite_time_consensus"])
    assert s["finite_time_consensus"] is None
    assert s["period_consensus_error"] == pytest.approx(_reference(tv, 4), abs=1e-12)
    rand = tf.spectral.summary(tf.topologies.random_matching(8, seed=0),
                               metrics=["period_consensus_error"])
    assert rand["period_consensus_error"] is None
    static = tf.spectral.summary(tf.topologies.ring(8), metrics=["period_consensus_error"])
    assert static["period_consensus_error"] == pytest.approx(
        1 - tf.spectral.spectral_gap(tf.topologies.ring(8)), abs=1e-12)
