"""topofl.privacy's accountants: closed forms on the complete graph, slow references beside the
fast paths (the view's covariance against its leverage scores, path enumeration against the
first-hitting recursion, per-component CDFs against the mixture's), invariants (symmetry,
monotonicity in noise and rounds, the local level), and the refusals."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from topofl.graph import TimeVarying
from topofl.privacy import (
    first_hitting,
    gdp_epsilon,
    gossip_linear,
    gossip_views,
    muffliato,
    random_walk_fdp,
    random_walk_rdp,
    zcdp_epsilon,
)
from topofl.privacy.conversions import gdp_delta
from topofl.privacy.walks import _MixturePRV
from topofl.topologies import complete, erdos_renyi, random_regular, ring, torus

# ---------------------------------------------------------------- conversions


@given(st.floats(1e-4, 50.0), st.sampled_from([1e-3, 1e-5, 1e-8]))
@settings(max_examples=60, deadline=None)
def test_balle2020_is_the_optimum_over_orders_and_below_zcdp(rho, delta):
    e = zcdp_epsilon(rho, delta)
    assert e <= zcdp_epsilon(rho, delta, method="zcdp") + 1e-12
    # a grid over the order never beats the root-found optimum
    a = 1 + np.geomspace(1e-6, 1e3, 20001)
    grid = rho * a + np.log((a - 1) / a) + (math.log(1 / delta) - np.log(a)) / (a - 1)
    assert e <= grid.min() + 1e-9
    assert e >= grid.min() - 1e-3 * max(1.0, e)


@given(st.floats(0.05, 8.0), st.sampled_from([1e-2, 1e-5, 1e-9]))
@settings(max_examples=60, deadline=None)
def test_gdp_epsilon_solves_the_analytic_gaussian_delta(mu, delta):
    e = gdp_epsilon(mu, delta)
    assert e >= 0
    if e > 0:
        assert gdp_delta(mu, e) == pytest.approx(delta, rel=1e-7, abs=1e-15)


def test_gdp_epsilon_agrees_with_the_prv_accountant_gaussian():
    from prv_accountant import PRVAccountant
    from prv_accountant.privacy_random_variables import GaussianMechanism

    for mu in (0.3, 1.0, 2.5):
        acc = PRVAccountant(prvs=[GaussianMechanism(noise_multiplier=1 / mu)],
                            max_self_compositions=[1], eps_error=1e-4, delta_error=1e-12)
        low, est, up = acc.compute_epsilon(delta=1e-5, num_self_compositions=[1])
        assert low - 1e-4 <= gdp_epsilon(mu, 1e-5) <= up + 1e-4


def test_conversions_refuse_bad_numbers():
    with pytest.raises(ValueError, match="delta"):
        zcdp_epsilon(1.0, 1.0)
    with pytest.raises(ValueError, match="rho must be finite"):
        zcdp_epsilon(-1.0, 1e-5)
    with pytest.raises(ValueError, match="method"):
        zcdp_epsilon(1.0, 1e-5, method="rdp")
    with pytest.raises(ValueError, match="mu must be"):
        gdp_epsilon(-0.1, 1e-5)
    assert gdp_epsilon(math.inf, 1e-5) == math.inf


# ---------------------------------------------------------------- gossip: Muffliato


@pytest.mark.parametrize("n,T,sigma", [(4, 3, 1.0), (7, 10, 0.5), (12, 1, 3.0)])
def test_muffliato_on_the_complete_graph_has_its_closed_form(n, T, sigma):
    # W = J/n: every P_t = J/n, each of the n-1 neighbours' messages carries (1/n^2)/(1/n) = 1/n
    p = muffliato(complete(n), sigma=sigma, rounds=T)
    expected = T * (n - 1) / (n * 2 * sigma**2)
    off = ~np.eye(n, dtype=bool)
    np.testing.assert_allclose(p.curve[off], expected, rtol=1e-12)
    assert p.curve_kind == "rho" and (np.diag(p.epsilon) == 0).all()


def _muffliato_slow(W: np.ndarray, T: int, sigma: float) -> np.ndarray:
    """Muffliato's sum written out: for each pair, each step, each neighbour of the observer."""
    n = len(W)
    rho = np.zeros((n, n))
    Wt = W.copy()
    for _ in range(T):
        for u, v in itertools.product(range(n), range(n)):
            if u == v:
                continue
            for w in range(n):
                if w != v and W[v, w] != 0:
                    rho[u, v] += Wt[w, u] ** 2 / np.dot(Wt[w], Wt[w]) / (2 * sigma**2)
        Wt = W @ Wt
    return rho


@pytest.mark.parametrize("topo", [ring(7), torus(3, 3), erdos_renyi(9, 0.4, seed=3)],
                         ids=["ring", "torus", "er"])
def test_muffliato_fast_path_equals_the_written_out_sum(topo):
    W = topo.to_dense()
    p = muffliato(topo, sigma=0.7, rounds=6)
    np.testing.assert_allclose(p.curve, _muffliato_slow(W, 6, 0.7), rtol=1e-12, atol=1e-15)


def test_muffliato_is_monotone_and_scales_as_one_over_sigma_squared():
    # symmetric where the graph looks the same from every node (a ring), not in general: the
    # observer's neighbourhood and each message's norm enter asymmetrically
    r = muffliato(ring(9), 1.0, 6).curve
    np.testing.assert_allclose(r, r.T, atol=1e-12)
    g = random_regular(12, 3, seed=1)
    a, b = muffliato(g, 1.0, 5), muffliato(g, 1.0, 9)
    assert np.abs(a.curve - a.curve.T).max() > 0.01
    assert (b.curve >= a.curve - 1e-15).all() and (b.epsilon >= a.epsilon - 1e-12).all()
    np.testing.assert_allclose(muffliato(g, 2.0, 5).curve, a.curve / 4, rtol=1e-12)
    assert (muffliato(g, 2.0, 5).epsilon <= a.epsilon + 1e-12).all()


def test_a_time_varying_graph_with_one_matrix_is_the_static_one():
    tv = TimeVarying(8, lambda t: ring(8), name="same", period=1)
    np.testing.assert_allclose(muffliato(tv, 1.0, 7).curve, muffliato(ring(8), 1.0, 7).curve)
    np.testing.assert_allclose(gossip_linear(tv, 1.0, 4).curve,
                               gossip_linear(ring(8), 1.0, 4).curve)


# ---------------------------------------------------------------- gossip: the exact view


def _mu_slow(M: np.ndarray, u: int, v: int) -> float:
    """The Gaussian mechanism's mu by the covariance: a^T (M' M'^T)^+ a, M' without v's column."""
    keep = [i for i in range(M.shape[1]) if i != v]
    Mp = M[:, keep]
    a = M[:, u]
    return float(np.sqrt(max(a @ np.linalg.pinv(Mp @ Mp.T, rcond=1e-10, hermitian=True) @ a,
                             0.0)))


@pytest.mark.parametrize("topo,T", [(ring(7), 1), (ring(7), 2), (torus(3, 3), 2),
                                    (erdos_renyi(8, 0.35, seed=5), 2)],
                         ids=["ring-1", "ring-2", "torus-2", "er-2"])
def test_gossip_linear_equals_the_covariance_formula(topo, T):
    p = gossip_linear(topo, sigma=1.0, rounds=T)
    for v in range(topo.n):
        M = gossip_views(topo, T, observer=v)
        for u in range(topo.n):
            if u != v:
                assert p.curve[u, v] == pytest.approx(_mu_slow(M, u, v), abs=1e-7)


def test_gossip_linear_on_the_complete_graph_and_the_local_level():
    # every message is the mean: the view's row space is the all-ones direction of the others
    for n in (3, 5, 9):
        p = gossip_linear(complete(n), sigma=2.0, rounds=4)
        off = ~np.eye(n, dtype=bool)
        np.testing.assert_allclose(p.curve[off], 1 / (2.0 * math.sqrt(n - 1)), rtol=1e-10)
    # never above the local level 1/sigma; reached once the view spans everyone
    p = gossip_linear(random_regular(10, 3, seed=0), sigma=0.5, rounds=40)
    assert p.curve.max() <= 2.0 + 1e-12
    np.testing.assert_allclose(p.curve[~np.eye(10, dtype=bool)], 2.0, rtol=1e-9)


def test_the_exact_view_can_exceed_muffliato_at_few_steps():
    # ring of 6, 3 steps: node 0 solves its neighbours' 6 messages for x_3 + eta_3
    m, g = muffliato(ring(6), 1.0, 3), gossip_linear(ring(6), 1.0, 3)
    assert g.curve[3, 0] ** 2 / 2 == pytest.approx(0.5, abs=1e-12)
    assert m.curve[3, 0] == pytest.approx(0.11557, abs=1e-4)
    M = gossip_views(ring(6), 3, observer=0)
    z = np.random.default_rng(0).normal(size=6)
    solved = np.linalg.lstsq(M[:, 1:], M @ z - M[:, 0] * z[0], rcond=None)[0]
    assert solved[2] == pytest.approx(z[3], abs=1e-12)
    # over long runs Muffliato's sum passes the exact value, which stays at the local level
    assert muffliato(ring(6), 1.0, 100).curve[3, 0] > 10 * 0.5


def test_summaries_read_the_matrix():
    p = muffliato(ring(10), sigma=1.0, rounds=8)
    by_d = p.by_distance()
    assert sorted(by_d) == [1, 2, 3, 4, 5]
    means = [by_d[d]["mean"] for d in sorted(by_d)]
    assert means == sorted(means, reverse=True)
    assert sum(by_d[d]["pairs"] for d in by_d) == 90
    nb = p.neighbours()
    assert nb["neighbours"] == pytest.approx(by_d[1]["mean"])
    s = p.summary()
    assert s["max"] == pytest.approx(p.epsilon.max()) and s["farthest"] == by_d[5]["mean"]


# ---------------------------------------------------------------- random walks


def test_random_walk_rdp_on_the_complete_graph_has_its_closed_form():
    # W = J/n: every other eigenvalue is 0, log(I - W + J/n) = 0, rho = T H_T / (sigma^2 n^2)
    n, T, s = 6, 40, 1.5
    p = random_walk_rdp(complete(n), sigma=s, rounds=T)
    H = sum(1 / k for k in range(1, T + 1))
    np.testing.assert_allclose(p.curve[~np.eye(n, dtype=bool)], T * H / (s * s * n * n),
                               rtol=1e-12)


def test_random_walk_rdp_finite_form_is_the_sum_over_steps():
    g = erdos_renyi(9, 0.5, seed=2)
    W = g.to_dense()
    T, s = 30, 0.8
    P, total = np.eye(9), np.zeros((9, 9))
    for t in range(1, T + 1):
        P = P @ W
        total += P / t
    want = T / (s * s * 9) * total
    np.fill_diagonal(want, 0)
    np.testing.assert_allclose(random_walk_rdp(g, s, T).curve, want, rtol=1e-10, atol=1e-14)


def test_the_closed_form_is_refused_before_the_walk_mixes():
    # a ring of 100 after 1000 steps: far pairs' closed form is negative, the sum is not
    p = random_walk_rdp(ring(100), 1.0, 1000)
    assert p.curve.min() >= 0 and p.by_distance()[1]["mean"] > p.by_distance()[50]["mean"]
    with pytest.raises(ValueError, match="below zero for the pair") as info:
        random_walk_rdp(ring(100), 1.0, 1000, form="pnfdp")
    assert "\n" not in str(info.value)


def test_random_walk_rdp_is_symmetric_and_monotone():
    g = random_regular(10, 3, seed=2)
    a, b = random_walk_rdp(g, 1.0, 50), random_walk_rdp(g, 1.0, 80)
    np.testing.assert_allclose(a.curve, a.curve.T, atol=1e-12)
    assert (b.epsilon >= a.epsilon - 1e-12).all()
    assert (random_walk_rdp(g, 2.0, 50).epsilon <= a.epsilon + 1e-12).all()


def _first_hitting_slow(W: np.ndarray, T: int) -> np.ndarray:
    """Every path of length <= T enumerated, summed where it first reaches its target at its end."""
    n = len(W)
    F = np.zeros((n, n, T))
    for u, v in itertools.product(range(n), range(n)):
        for t in range(1, T + 1):
            for path in itertools.product(range(n), repeat=t):
                if path[-1] != v or v in path[:-1]:
                    continue
                prob, here = 1.0, u
                for step in path:
                    prob *= W[here, step]
                    here = step
                F[u, v, t - 1] += prob
    return F


def test_first_hitting_equals_path_enumeration():
    for topo in (ring(4), erdos_renyi(4, 0.7, seed=1)):
        W = topo.to_dense()
        np.testing.assert_allclose(first_hitting(topo, 4), _first_hitting_slow(W, 4),
                                   atol=1e-14)
    F = first_hitting(ring(9), 200)
    assert (F.sum(axis=2) <= 1 + 1e-12).all() and F.sum(axis=2).min() > 0.99


def test_the_mixture_cdf_equals_its_components():
    w = np.array([0.2, 0.3, 0.1])
    mus = np.array([1.0, 0.5, 0.25])
    prv = _MixturePRV(w, mus)
    y = np.linspace(-3, 3, 41)
    slow = sum(wi * scipy.stats.norm.cdf(y / m - m / 2) for wi, m in zip(w, mus)) + 0.4 * (y >= 0)
    np.testing.assert_allclose(np.asarray(prv.cdf(y), dtype=float), slow, atol=1e-15)
    assert float(prv.cdf(0.5)) == pytest.approx(float(slow[np.argmin(abs(y - 0.5))]), abs=0.1)


def test_random_walk_fdp_decreases_with_noise_and_is_inf_free_at_moderate_noise():
    g = ring(6)
    lo = random_walk_fdp(g, 2.0, 30, pairs=[(0, 1), (0, 3)])
    hi = random_walk_fdp(g, 1.0, 30, pairs=[(0, 1), (0, 3)])
    for u, v in ((0, 1), (0, 3)):
        assert 0 < lo.epsilon[u, v] < hi.epsilon[u, v] < math.inf
    assert lo.epsilon[0, 1] > lo.epsilon[0, 3]          # nearer leaks more
    assert np.isnan(lo.epsilon[1, 0])


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize("call,exc,match", [
    (lambda: muffliato(ring(5), 0.0, 3), ValueError, "sigma"),
    (lambda: muffliato(ring(5), 1.0, 0), ValueError, "rounds"),
    (lambda: muffliato(ring(5), 1.0, 2.5), TypeError, "rounds"),
    (lambda: muffliato(ring(5), 1.0, 3, delta=0), ValueError, "delta"),
    (lambda: muffliato(np.array([[1.0, 1.0], [0.0, 1.0]]), 1.0, 3), ValueError,
     "row-stochastic"),
    (lambda: muffliato(np.ones((1, 1)), 1.0, 3), ValueError, "at least 2 nodes"),
    (lambda: gossip_linear("ring", 1.0, 3), TypeError, "numeric .n, n. array"),
    (lambda: random_walk_rdp(TimeVarying(4, lambda t: ring(4), name="r"), 1.0, 3), TypeError,
     "fixed mixing matrix"),
    (lambda: random_walk_rdp(np.array([[0.5, 0.5, 0], [0, 0.5, 0.5], [0.5, 0, 0.5]]), 1.0, 3),
     ValueError, "symmetric"),
    (lambda: random_walk_rdp(np.eye(3), 1.0, 3), ValueError, "connected"),
    (lambda: random_walk_fdp(ring(4), 1.0, 3, pairs=[(0, 0)]), ValueError, "different nodes"),
    (lambda: random_walk_fdp(ring(4), 1.0, 3, pairs=[(0, 9)]), ValueError, "different nodes"),
    (lambda: random_walk_fdp(ring(4), 1.0, 3, pairs=[0]), TypeError, "pairs"),
    (lambda: random_walk_fdp(ring(4), 1.0, 3, local_steps=0), ValueError, "local_steps"),
    (lambda: random_walk_rdp(ring(4), 1.0, 3, form="log"), ValueError, "form"),
    (lambda: muffliato(ring(4_097), 1.0, 1), ValueError, "n <= 4096"),
    (lambda: gossip_linear(ring(2_001), 1.0, 1), ValueError, "n <= 2000"),
    (lambda: gdp_epsilon("a", 1e-5), TypeError, "mu must be a number"),
    (lambda: zcdp_epsilon([1.0, "x"], 1e-5), TypeError, "rho must be a number"),
    (lambda: gossip_linear(ring(1_000), 1.0, 300), ValueError, "rounds = 300"),
    (lambda: zcdp_epsilon(np.array([1.0, -2.0, 3.0]), 1e-5), ValueError, "one of 3 entries"),
])
def test_bad_settings_are_refused_in_one_line(call, exc, match):
    with pytest.raises(exc, match=match) as info:
        call()
    assert "\n" not in str(info.value)
