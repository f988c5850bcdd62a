"""Schedules of graphs (issue 59, item 2): ``switch`` and ``periodic_averaging``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.spectral import finite_time_consensus, mixing_product, period_consensus_error


def _dense(top: tf.Topology) -> np.ndarray:
    return top.W.toarray()


def test_switch_plays_first_then_then_from_its_own_first_round() -> None:
    first, then = tf.topologies.ring(8), tf.topologies.one_peer_exponential(8)
    tv = tf.topologies.switch(first, then, at=5)
    assert tv.period is None and tv.n == 8
    assert dict(tv.params) == {"first": "ring", "then": "one_peer_exponential", "at": 5}
    for t in range(12):
        want = first if t < 5 else then.at(t - 5)
        np.testing.assert_array_equal(_dense(tv.at(t)), _dense(want))


def test_periodic_averaging_averages_every_every_rounds_and_keeps_the_base_otherwise() -> None:
    base = tf.topologies.one_peer_exponential(12)  # period 4, never exact
    tv = tf.topologies.periodic_averaging(base, every=6)
    assert tv.period == 12
    J = np.full((12, 12), 1 / 12)
    for t in range(30):
        want = J if (t + 1) % 6 == 0 else _dense(base.at(t))
        np.testing.assert_allclose(_dense(tv.at(t)), want, rtol=0, atol=1e-15)
    assert finite_time_consensus(tv, 12) == 6
    assert period_consensus_error(tv) <= 1e-12
    assert period_consensus_error(base) > 0.2  # what the averaging round removes


@settings(max_examples=20, deadline=None)
@given(n=st.integers(2, 24), every=st.integers(1, 7), start=st.integers(0, 9))
def test_a_window_holding_an_averaging_round_is_exactly_j(n: int, every: int,
                                                         start: int) -> None:
    tv = tf.topologies.periodic_averaging(tf.topologies.ring(n), every=every)
    P = mixing_product(tv, start, start + every)  # every window of `every` rounds has one
    np.testing.assert_allclose(P, np.full((n, n), 1 / n), rtol=0, atol=1e-12)


def test_bad_schedules_are_refused_in_one_line() -> None:
    ring8, ring9 = tf.topologies.ring(8), tf.topologies.ring(9)
    with pytest.raises(ValueError, match="same number of nodes, got n=8 and n=9"):
        tf.topologies.switch(ring8, ring9, at=2)
    with pytest.raises(ValueError, match="at"):
        tf.topologies.switch(ring8, ring8, at=0)
    with pytest.raises(TypeError, match="then must be a Topology or a TimeVarying"):
        tf.topologies.switch(ring8, "ring", at=2)
    with pytest.raises(ValueError, match="every"):
        tf.topologies.periodic_averaging(ring8, every=0)
    with pytest.raises(TypeError, match="every"):
        tf.topologies.periodic_averaging(ring8, every=2.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="base must be a Topology"):
        tf.topologies.periodic_averaging(np.eye(3), every=2)


def test_a_run_on_periodic_averaging_agrees_exactly_after_each_averaging_round() -> None:
    """Each round trains then gossips: after rounds 1 and 3 (every=2) the models are equal."""
    data = tf.data.federate("digits", "iid", 8, seed=0)
    tv = tf.topologies.periodic_averaging(tf.topologies.ring(8), every=2)
    res = tf.run("dsgd", topology=tv, data=data, rounds=4, eval_every=1, seed=0,
                 dtype="float64", spectral=False)
    rounds, dist = res.records.series("consensus_distance")
    assert rounds.tolist() == [0, 1, 2, 3]
    assert dist[1] < 1e-20 and dist[3] < 1e-20 and dist[0] > 1e-8 and dist[2] > 1e-8
    ring = tf.run("dsgd", topology=tf.topologies.ring(8), data=data, rounds=4, eval_every=1,
                  seed=0, dtype="float64", spectral=False)
    np.testing.assert_allclose(ring.records.series("consensus_distance")[1][0], dist[0],
                               rtol=1e-12)  # round 0: the same ring round


# --- schedules as specs ------------------------------------------------------------------------

_PARTS = ["ring", "complete", "(random_regular:d=3)", "(exponential)", "one_peer_exponential",
          "(erdos_renyi:p=0.7)"]


@settings(max_examples=25, deadline=None)
@given(first=st.sampled_from(_PARTS), then=st.sampled_from(_PARTS),
       at=st.integers(1, 6), seed=st.integers(0, 50))
def test_a_switch_spec_is_the_switch_of_its_parts_built_alone(first: str, then: str, at: int,
                                                              seed: int) -> None:
    n = 8
    tv = tf.topologies.build(f"switch:first={first},then={then},at={at}", n=n, seed=seed)

    def alone(part: str) -> tf.TimeVarying:
        return tf.graph.as_time_varying(tf.topologies.build(part.strip("()"), n=n, seed=seed))

    a, b = alone(first), alone(then)
    assert tv.n == n and tv.period is None and tv.params["at"] == at
    for t in range(at + 5):
        want = a.at(t) if t < at else b.at(t - at)
        np.testing.assert_array_equal(_dense(tv.at(t)), _dense(want))


@settings(max_examples=25, deadline=None)
@given(base=st.sampled_from(_PARTS), every=st.integers(1, 5), n=st.integers(2, 9))
def test_a_periodic_averaging_spec_averages_exactly_every_every_rounds(base: str, every: int,
                                                                       n: int) -> None:
    if "random_regular" in base and n * 3 % 2:
        base = "ring"
    if "random_regular" in base and n < 4 or ("exponential" in base and n < 2):
        base = "complete"
    tv = tf.topologies.build(f"periodic_averaging:base={base},every={every}", n=n, seed=1)
    J = np.full((n, n), 1.0 / n)
    for t in range(3 * every):
        if (t + 1) % every == 0:
            np.testing.assert_allclose(_dense(tv.at(t)), J, rtol=0, atol=1e-15)
    assert 1 <= finite_time_consensus(tv, 3 * every) <= every  # its base may average sooner


def test_schedule_specs_are_checked_and_refused_in_one_line() -> None:
    family, kwargs = tf.topologies.check_spec("switch:first=(ring),then=(random_regular:d=4),"
                                              "at=1e1")
    assert family.name == "switch" and kwargs == {"first": "ring",
                                                  "then": "random_regular:d=4", "at": 10}
    bad = {
        "switch:first=ring,at=3": "switch needs the parameter\\(s\\) then",
        "switch:first=ring,then=ring,at=0": "at must be >= 1",
        "switch:first=ring,then=ring,at=2,every=3": "unknown parameter\\(s\\) \\['every'\\]",
        "periodic_averaging:base=3,every=2": "base must be a graph spec",
        "periodic_averaging:base=(ring:n=5),every=2,n=6": "base \\(ring:n=5\\) has n=5",
        "periodic_averaging:base=(ring,every=2": "a '\\(' without its '\\)'",
        "periodic_averaging:base=ring),every=2": "a '\\)' without its '\\('",
        "switch:first=rnig,then=ring,at=2": "did you mean 'ring'",
    }
    for spec, match in bad.items():
        with pytest.raises(ValueError, match=match) as info:
            tf.topologies.build(spec, n=8)
        assert "\n" not in str(info.value)


def test_a_run_and_a_config_take_a_schedule_spec_and_record_it(tmp_path) -> None:
    spec = "periodic_averaging:base=ring,every=2"
    data = tf.data.federate("digits", "iid", 8, seed=0)
    by_spec = tf.run("dsgd", topology=spec, data=data, rounds=4, seed=0, dtype="float64",
                     spectral=False, eval_every=1)
    by_object = tf.run("dsgd", topology=tf.topologies.periodic_averaging(
        tf.topologies.ring(8), every=2), data=data, rounds=4, seed=0, dtype="float64",
        spectral=False, eval_every=1)
    for metric in ("consensus_distance", "test_acc_mean"):
        np.testing.assert_array_equal(by_spec.records.series(metric)[1],
                                      by_object.records.series(metric)[1])
    assert by_spec.records.config["topology"] == spec
    # a switch between D-Cliques (built from the clients' labels) and the complete graph
    res = tf.run("dsgd", data="digits", partition="dirichlet", partition_params={"alpha": 0.1},
                 n_clients=20, topology="switch:first=(dcliques),then=complete,at=2",
                 rounds=3, seed=0, dtype="float64", spectral=False, eval_every=1)
    dist = res.records.series("consensus_distance")[1]
    assert dist[0] > 1e-8 and dist[2] < 1e-20
