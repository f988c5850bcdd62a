"""Muffliato with Chebyshev-accelerated gossip (``accelerate``), its constant and its number of
steps: the polynomial written out beside the fast path, the reduction to plain gossip at
``gamma = 1``, closed forms on the complete graph, the polynomial's invariants, refusals."""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topofl.graph import TimeVarying, Topology
from topofl.privacy import chebyshev_gamma, muffliato, muffliato_rounds
from topofl.topologies import complete, random_regular, ring, torus


def _chebyshev_slow(W: np.ndarray, T: int, gamma: float, sigma: float) -> np.ndarray:
    """rho[u, v] summed pair by pair, step by step, over the observer's senders, with the
    messages' rows P_t = gamma W P_{t-1} + (1 - gamma) P_{t-2} (P_0 = I, P_1 = W)."""
    n = len(W)
    rho = np.zeros((n, n))
    polys = [np.eye(n), W.copy()]
    while len(polys) <= T:
        polys.append(gamma * W @ polys[-1] + (1 - gamma) * polys[-2])
    for P in polys[1:]:
        for u, v in itertools.product(range(n), range(n)):
            if u == v:
                continue
            for w in range(n):
                if w != v and W[v, w] != 0:
                    rho[u, v] += P[w, u] ** 2 / np.dot(P[w], P[w]) / (2 * sigma**2)
    return rho


def _gap(W: np.ndarray) -> float:
    return float(1 - np.sort(np.linalg.eigvalsh(W))[-2])


@pytest.mark.parametrize("topo", [ring(7), torus(3, 4), random_regular(10, 3, seed=2)],
                         ids=["ring", "torus", "regular"])
def test_accelerated_fast_path_equals_the_written_out_polynomial(topo):
    W = topo.to_dense()
    p = muffliato(topo, sigma=0.8, rounds=7, accelerate=True)
    gamma = chebyshev_gamma(_gap(W))
    assert p.params["gamma"] == pytest.approx(gamma, rel=1e-12)
    np.testing.assert_allclose(p.curve, _chebyshev_slow(W, 7, gamma, 0.8), rtol=1e-10,
                               atol=1e-15)


@given(st.integers(4, 12), st.integers(1, 9), st.floats(0.3, 3.0))
@settings(max_examples=25, deadline=None)
def test_gamma_one_is_plain_gossip(n, T, sigma):
    plain = muffliato(ring(n), sigma, T)
    one = muffliato(ring(n), sigma, T, accelerate=1.0)
    np.testing.assert_allclose(one.curve, plain.curve, rtol=1e-12, atol=1e-15)
    assert "gamma" not in plain.params and one.params["gamma"] == 1.0


@pytest.mark.parametrize("n,T,sigma", [(5, 3, 1.0), (9, 6, 0.5)])
def test_accelerated_on_the_complete_graph_has_its_closed_form(n, T, sigma):
    # W = J/n: every P_t = a_t I + b_t J/n, with W P_t = (a_t + b_t) J/n, so
    # a_t = (1 - gamma) a_{t-2} and b_t = gamma (a_{t-1} + b_{t-1}) + (1 - gamma) b_{t-2}
    gamma = chebyshev_gamma(1.0)
    a, b = [1.0, 0.0], [0.0, 1.0]   # P_0 = I, P_1 = J/n
    rho = 0.0
    for t in range(1, T + 1):
        if t > 1:
            a_t = (1 - gamma) * a[t - 2]
            b_t = gamma * (a[t - 1] + b[t - 1]) + (1 - gamma) * b[t - 2]
            a.append(a_t)
            b.append(b_t)
        i, j = a[t], b[t]
        # row w: entry i + j/n at w, j/n elsewhere; u != w seen by v through n - 2 senders
        # w != u (entry j/n) and through w = u (entry i + j/n)
        norm = (i + j / n) ** 2 + (n - 1) * (j / n) ** 2
        rho += ((n - 2) * (j / n) ** 2 + (i + j / n) ** 2) / norm / (2 * sigma**2)
    p = muffliato(complete(n), sigma, T, accelerate=True)
    off = ~np.eye(n, dtype=bool)
    np.testing.assert_allclose(p.curve[off], rho, rtol=1e-12)


def test_the_polynomial_keeps_rows_stochastic_and_mixes_faster():
    # P_t 1 = 1 for every gamma; at Muffliato's own T the accelerated iterate is nearer the
    # average than the plain one on a ring of 30 (the point of the acceleration)
    W = ring(30).to_dense()
    gamma = chebyshev_gamma(_gap(W))
    T = muffliato_rounds(ring(30), 1.0)
    before, P = np.eye(30), W.copy()
    for _ in range(T - 1):
        before, P = P, gamma * W @ P + (1 - gamma) * before
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    J = np.full((30, 30), 1 / 30)
    plain = np.linalg.matrix_power(W, T)
    assert np.linalg.norm(P - J, 2) < 0.5 * np.linalg.norm(plain - J, 2)


@pytest.mark.parametrize("n,sigma", [(16, 1.0), (50, 0.3), (8, 2.0)])
def test_rounds_on_the_complete_graph(n, sigma):
    # gap 1: T = ceil(log(n max(1/4, sigma^2) / sigma^2)) for both rates
    expected = math.ceil(math.log(n * max(0.25, sigma**2) / sigma**2))
    assert muffliato_rounds(complete(n), sigma) == expected
    assert muffliato_rounds(complete(n), sigma, accelerate=False) == expected


def test_rounds_follow_the_gap_as_the_authors_code_computes_it():
    # graphutils.T_mix / T_mix_randomized on the hypercube of dimension 6 with Metropolis
    # ("hamilton") weights: W = (I + A) / 7, lambda_2(W) = (1 + 4) / 7, gap 2/7
    g = Topology.from_networkx(nx.convert_node_labels_to_integers(nx.hypercube_graph(6)),
                               weights="metropolis")
    gap = 2 / 7
    assert muffliato_rounds(g, 1.0) == math.ceil(math.log(64) / math.sqrt(gap)) == 8
    assert muffliato_rounds(g, 1.0, accelerate=False) == math.ceil(math.log(64) / gap) == 15


@pytest.mark.parametrize("call,exc,match", [
    (lambda: muffliato(TimeVarying(4, lambda t: ring(4), name="r"), 1.0, 3, accelerate=True),
     TypeError, "one fixed symmetric W"),
    (lambda: muffliato(np.array([[0.5, 0.5, 0], [0, 0.5, 0.5], [0.5, 0, 0.5]]), 1.0, 3,
                       accelerate=True), ValueError, "symmetric"),
    (lambda: muffliato(np.eye(3), 1.0, 3, accelerate=True), ValueError, "connected"),
    (lambda: muffliato(ring(5), 1.0, 3, accelerate=2.0), ValueError, "gamma"),
    (lambda: muffliato(ring(5), 1.0, 3, accelerate=0.5), ValueError, "gamma"),
    (lambda: muffliato(ring(5), 1.0, 3, accelerate="yes"), TypeError, "bool or the Chebyshev"),
    (lambda: muffliato_rounds(np.eye(3), 1.0), ValueError, "connected"),
    (lambda: muffliato_rounds(ring(5), 0.0), ValueError, "sigma"),
    (lambda: chebyshev_gamma(0.0), ValueError, "gap"),
    (lambda: chebyshev_gamma(1.5), ValueError, "gap"),
])
def test_bad_accelerated_settings_are_refused_in_one_line(call, exc, match):
    with pytest.raises(exc, match=match) as info:
        call()
    assert "\n" not in str(info.value)


def test_a_graph_above_the_stored_bound_runs_streamed():
    # muffliato keeps no matrix per round: n = 2001 (above the 2000 of the accountants that
    # do) runs, and a ring's matrix is symmetric
    p = muffliato(ring(2_001), 1.0, 2)
    assert p.n == 2_001
    np.testing.assert_allclose(p.curve, p.curve.T, atol=1e-12)
