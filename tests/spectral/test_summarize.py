"""topofl.spectral.summary: keys, types, JSON, degenerate graphs, timing, metric selection."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest

import topofl as tf
from topofl import spectral as S
from topofl.spectral import (
    spectral_gap,
    summary,
)
from topofl.spectral import summarize as summarize_module
from topofl.topologies import (
    base_graph,
    complete,
    dcliques,
    one_peer_exponential,
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
    assert b["pushsum_delta"] < 1
    # an undirected graph with symmetric weights has no push-sum constants (they are not data)
    assert all(a[k] is None for k in S._SUMMARY_KEYS if k.startswith("pushsum_"))


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


@pytest.mark.slow  # issue 23: heavy for the default suite (CI runs -m slow)
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


# ============================================================================ metric selection
def selection_cases() -> list[tuple[str, object, dict[str, object]]]:
    labels = np.eye(4)[np.arange(16) % 4]
    return [
        ("ring", ring(12), {}),
        ("complete", complete(6), {}),
        ("dcliques+labels", dcliques(labels, clique_size=4, seed=0),
         {"label_distributions": labels}),
        ("push", random_directed(10, 2, seed=0, mode="push"), {"horizon": 20}),
        ("one_peer", one_peer_exponential(8), {}),
        ("base_graph", base_graph(12, k=2), {}),
        ("cheap", random_directed(10, 2, seed=1), {"horizon": 20, "measured": False}),
    ]


@pytest.mark.parametrize("case", selection_cases(), ids=lambda c: c[0])
def test_each_metric_alone_equals_the_full_summary(case: tuple[str, object, dict]) -> None:
    _, g, kwargs = case
    full = summary(g, **kwargs)  # type: ignore[arg-type]
    for key in S._SUMMARY_KEYS:
        alone = summary(g, metrics=[key], **kwargs)  # type: ignore[arg-type]
        assert list(alone) == [key]
        assert alone[key] == full[key] or (alone[key] is None and full[key] is None), key
    pair = summary(g, metrics="b_connectivity, spectral_gap", **kwargs)  # type: ignore[arg-type]
    assert list(pair) == ["spectral_gap", "b_connectivity"]  # the order of the full summary


def test_only_the_needed_work_is_done(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("computed a metric that was not asked for")

    for name in ("spectral_gap", "algebraic_connectivity", "pushsum_constants",
                 "consensus_rate", "finite_time_consensus", "b_connectivity",
                 "is_strongly_connected", "neighborhood_skew", "neighborhood_heterogeneity",
                 "random_walk_variance", "_from_eigenvalues", "_effective_neighbors"):
        monkeypatch.setattr(summarize_module, name, boom)
    tv = random_directed(10, 2, seed=0)
    s = summary(tv, metrics=["diameter", "edges_per_node", "stochastic", "n"], horizon=20)
    assert set(s) == {"diameter", "edges_per_node", "stochastic", "n"}
    assert summary(ring(8), metrics="b_connectivity,strongly_connected") == {
        "strongly_connected": True, "b_connectivity": 1}
    assert summary(ring(8), metrics=["consensus_rate"], measured=False) == {"consensus_rate": None}


def test_metric_names_are_checked() -> None:
    with pytest.raises(ValueError, match=r"unknown metric 'gap'; valid: name, n, .*spectral_gap"):
        summary(ring(4), metrics=["gap"])
    with pytest.raises(ValueError, match="unknown metrics 'a', 'b'"):
        summary(ring(4), metrics="a,b")
    with pytest.raises(ValueError, match="at least one metric"):
        summary(ring(4), metrics=[])
    with pytest.raises(TypeError, match="str names"):
        summary(ring(4), metrics=[1])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="iterable of metric names"):
        summary(ring(4), metrics=3)  # type: ignore[arg-type]


def test_rounds_to_1e6_definitions() -> None:
    # Hand-computed: ln(1e6) / ln(2) = 19.93, so 20 rounds at gap 1/2 or rate 1/2.
    assert summarize_module._rounds_bound(0.5) == 20
    assert summarize_module._rounds_bound(1.0) == 1
    assert summarize_module._rounds_bound(0.0) is None
    assert summarize_module._rounds_bound(None) is None
    assert summarize_module._rounds_measured(0.5, None) == 20
    assert summarize_module._rounds_measured(0.9, 7) == 7  # finite-time consensus wins
    assert summarize_module._rounds_measured(0.0, None) == 1
    assert summarize_module._rounds_measured(1.0, None) is None
    assert summarize_module._rounds_measured(None, None) is None
    s = summary(ring(64))
    gap, rate = s["spectral_gap"], s["consensus_rate"]
    assert s["rounds_to_1e-6_bound"] == math.ceil(math.log(1e6) / -math.log(1 - gap))
    assert s["rounds_to_1e-6_measured"] == math.ceil(math.log(1e-6) / math.log(rate))
    # the bound is what it says: (1 - gap)^t reaches 1e-6 at that t and not one round earlier
    t = s["rounds_to_1e-6_bound"]
    assert (1 - gap) ** t <= 1e-6 < (1 - gap) ** (t - 1)
    assert summary(complete(5), metrics=["rounds_to_1e-6_bound", "rounds_to_1e-6_measured"]) == {
        "rounds_to_1e-6_bound": 1, "rounds_to_1e-6_measured": 1}


def test_progress_bar(capsys: pytest.CaptureFixture[str]) -> None:
    g = random_directed(12, 2, seed=0)
    quiet = summary(g, horizon=20)
    assert capsys.readouterr().err == ""
    loud = summary(g, horizon=20, progress=True)
    assert "summary random_directed" in capsys.readouterr().err
    assert json.dumps(loud) == json.dumps(quiet)


# ============================================================================ beyond the gap
def test_summary_effective_neighbors_per_kind_of_graph() -> None:
    from topofl.topologies import el_local, el_oracle, torus

    cases = [
        (ring(12), {}, "eigenvalues"),
        (torus(3, 4), {"gamma": 0.5}, "eigenvalues"),
        (S_star_uniform(), {}, "lyapunov"),
        (one_peer_exponential(8), {}, "periodic"),
        (el_oracle(12, 3, seed=0), {}, "closed_form"),
        (el_local(12, 3, seed=0), {}, "closed_form"),
        (random_directed(12, 2, seed=0), {}, "closed_form"),
    ]
    for g, kw, method in cases:
        s = summary(g, metrics=["effective_neighbors", "effective_neighbors_method"],
                    **kw)  # type: ignore[arg-type]
        assert s["effective_neighbors_method"] == method, g
        assert s["effective_neighbors"] == pytest.approx(
            S.effective_neighbors(g, kw.get("gamma", S.DEFAULT_GAMMA)), rel=1e-10)
    push = summary(random_directed(12, 2, seed=0, mode="push"), horizon=10)
    assert push["effective_neighbors"] is None and push["effective_neighbors_method"] is None
    # a random schedule without a closed form: Monte-Carlo, only when measured quantities are
    custom = tf.TimeVarying(8, el_local(8, 2, seed=1).at, name="custom", params={})
    s = summary(custom, metrics=["effective_neighbors", "effective_neighbors_method"])
    assert s["effective_neighbors_method"] == "monte_carlo"
    exact = S.effective_neighbors(el_local(8, 2, seed=1))
    assert s["effective_neighbors"] == pytest.approx(exact, rel=0.05)
    assert summary(custom, metrics=["effective_neighbors"], measured=False) == {
        "effective_neighbors": None}


def S_star_uniform() -> tf.Topology:
    return tf.topologies.star(6).reweight("uniform")  # row-stochastic, not symmetric


def test_summary_spectrum_and_heterogeneity() -> None:
    from topofl.topologies import el_oracle

    P = np.eye(2)[np.arange(12) % 2]
    s = summary(ring(12), label_distributions=P)
    sp_ = S.spectrum(ring(12))
    assert s["spectrum_mean_sq"] == pytest.approx(sp_.mean_sq)
    assert s["spectrum_relaxation"] == pytest.approx(sp_.relaxation)
    assert s["neighborhood_heterogeneity"] == pytest.approx(
        S.neighborhood_heterogeneity(ring(12), P))
    d = summary(one_peer_exponential(8))  # directed rounds: no symmetric spectrum
    assert d["spectrum_mean_sq"] is None and d["spectrum_relaxation"] is None
    tv = el_oracle(12, 3, seed=0)  # per-round mean over the rounds examined
    s = summary(tv, spectral_rounds=4, label_distributions=P)
    assert s["spectrum_mean_sq"] == pytest.approx(
        np.mean([S.spectrum(tv.at(t)).mean_sq for t in range(4)]))
    assert s["neighborhood_heterogeneity"] == pytest.approx(
        np.mean([S.neighborhood_heterogeneity(tv.at(t), P) for t in range(4)]))
    with pytest.raises(ValueError, match="gamma"):
        summary(ring(5), gamma=1.5)


def test_disconnected_graph_has_no_rounds_to_consensus() -> None:
    # two separate pairs: the measured rate is 1 up to rounding, not 1e13 rounds
    W = np.kron(np.eye(2), np.full((2, 2), 0.5))
    s = summary(tf.Topology.from_matrix(W))
    assert s["strongly_connected"] is False
    assert s["rounds_to_1e-6_measured"] is None and s["rounds_to_1e-6_bound"] is None
    labels = np.eye(10)[np.arange(40) % 10]
    s = summary(tf.topologies.stl_fw(labels, 4), metrics=["rounds_to_1e-6_measured"])
    assert s == {"rounds_to_1e-6_measured": None}


# ============================================================================ opt-in keys
def test_all_eigenvalues_metric_is_opt_in() -> None:
    # not in the default row (records and the behaviour snapshot hold its keys) ...
    g = ring(10)
    full = summary(g)
    assert "all_eigenvalues_metric" not in full and list(full) == list(S._SUMMARY_KEYS)
    # ... and asked for, it sits after the spectrum keys; the others are unchanged
    both = summary(g, metrics=[*S._SUMMARY_KEYS, "all_eigenvalues_metric"])
    assert list(both) == [k for k in summarize_module._ALL_KEYS if k != "period_consensus_error"]
    assert {k: v for k, v in both.items() if k != "all_eigenvalues_metric"} == full
    keys = list(both)
    assert keys.index("all_eigenvalues_metric") == keys.index("spectrum_relaxation") + 1
    assert both["all_eigenvalues_metric"] == pytest.approx(
        S.all_eigenvalues_metric(g), rel=1e-12)
    assert both["all_eigenvalues_metric"] == pytest.approx(
        (10 - 1) / 10 * (full["spectrum_relaxation"] - 1), rel=1e-12)


def test_all_eigenvalues_metric_in_summary() -> None:
    def one(g: object, **kw: object) -> object:
        return summary(g, metrics="all_eigenvalues_metric", **kw)["all_eigenvalues_metric"]

    assert one(complete(7)) == 0.0
    # static, not circulant; and a periodic undirected schedule: the mean over its rounds
    t = tf.topologies.torus(4, 5)
    assert one(t) == pytest.approx(S.all_eigenvalues_metric(t), rel=1e-12)
    tv = tf.topologies.el_oracle(12, 3, seed=0)  # random undirected rounds: mean of 10
    rounds = [S.all_eigenvalues_metric(tv.at(r)) for r in range(10)]
    assert one(tv) == pytest.approx(float(np.mean(rounds)), rel=1e-12)
    # infinite or undefined: None (a round that is disconnected, a directed round)
    assert one(tf.topologies.random_matching(12, seed=0)) is None
    assert one(one_peer_exponential(8)) is None
    assert one(tf.Topology.from_matrix(np.eye(3))) is None
    # above SUMMARY_DENSE_MAX: the closed form of a circulant round, else None
    big = ring(3000)
    assert one(big) == pytest.approx(S.all_eigenvalues_metric(big), rel=1e-12)
    assert one(random_regular(1100, 4, seed=0)) is None
    assert summary(ring(8), metrics="all_eigenvalues_metric, n") == {
        "n": 8, "all_eigenvalues_metric": pytest.approx(S.all_eigenvalues_metric(ring(8)))}


def test_all_eigenvalues_metric_from_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    from topofl.cli import main

    assert main(["spectral", "ring:n=4", "--json", "--metrics", "all_eigenvalues_metric"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row == {"spec": "ring:n=4", "all_eigenvalues_metric": pytest.approx(3 / 32)}
