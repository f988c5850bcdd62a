"""The spectral quantities of large graphs (:mod:`topofl.spectral.large`): the circulant closed
forms against dense LAPACK, Lanczos against ARPACK, the diameters against all-pairs search,
and the summary's ``spectral_method`` / ``estimated`` keys above ``SUMMARY_EXACT_MAX``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl._utils.validation import arc_pattern
from topofl.engine.evaluation import spectral_row
from topofl.spectral import algebraic_connectivity, diameter, spectral_gap, summary
from topofl.spectral.large import (
    LargeSpectra,
    bounded_diameter,
    circulant_eigenvalues,
    circulant_row,
)
from topofl.spectral.summarize import SUMMARY_EXACT_MAX
from topofl.topologies import circulant, complete, exponential, random_regular, ring, star, torus

KEYS = ["spectral_gap", "spectral_gap_lambda2", "spectral_gap_norm", "algebraic_connectivity",
        "diameter", "strongly_connected"]


def _random_circulant(n: int, offsets: list[int], weights: list[float]) -> sp.csr_array:
    """A dense circulant built entry by entry: ``W[i, (i + d) % n] = w`` (the slow way)."""
    A = np.zeros((n, n))
    for i in range(n):
        for d, w in zip(offsets, weights):
            A[i, (i + d) % n] += w
    return sp.csr_array(A)


def _sorted(ev: np.ndarray) -> np.ndarray:
    ev = np.asarray(ev, dtype=np.complex128)
    return ev[np.lexsort((ev.imag.round(9), ev.real.round(9)))]


# ----------------------------------------------------------------------------- circulant
@pytest.mark.parametrize("topo", [ring(3), ring(64), circulant(30, [1, 4, 7]), complete(9),
                                  exponential(40), exponential(64)], ids=lambda t: t.name)
def test_closed_form_spectrum_equals_lapack(topo: tf.Topology) -> None:
    ev = circulant_eigenvalues(topo)
    dense = np.linalg.eigvals(topo.W.toarray())
    np.testing.assert_allclose(_sorted(ev), _sorted(dense), atol=1e-10)
    assert (ev.dtype == np.float64) == bool(np.allclose(topo.W.toarray(), topo.W.toarray().T))


@given(st.integers(2, 48), st.data())
@settings(max_examples=40, deadline=None)
def test_closed_form_spectrum_of_any_circulant(n: int, data: st.DataObject) -> None:
    offsets = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=5, unique=True))
    weights = data.draw(st.lists(st.floats(0.01, 1.0), min_size=len(offsets),
                                 max_size=len(offsets)))
    W = _random_circulant(n, offsets, weights)
    off, w = circulant_row(W)  # type: ignore[misc]
    assert off.tolist() == sorted(offsets)
    np.testing.assert_allclose(_sorted(circulant_eigenvalues(W)),
                               _sorted(np.linalg.eigvals(W.toarray())), atol=1e-10)


def test_what_is_not_circulant_is_found() -> None:
    assert circulant_row(star(6)) is None
    assert circulant_row(torus(4, 5)) is None
    assert circulant_row(random_regular(20, 3, seed=0)) is None
    W = ring(8).W.toarray()
    W[3, 3] += 1e-12  # one weight off: not circulant (compared exactly)
    assert circulant_row(W) is None
    with pytest.raises(ValueError, match="not circulant"):
        circulant_eigenvalues(star(5))


@pytest.mark.parametrize("topo", [ring(300), circulant(257, [1, 5, 40]), complete(60),
                                  exponential(200)], ids=lambda t: t.name)
def test_closed_form_gaps_equal_dense(topo: tf.Topology) -> None:
    s = LargeSpectra(topo.W)
    assert s.circulant
    for kind in ("modulus", "norm") + (("lambda2",) if s.symmetric else ()):
        want = spectral_gap(topo, kind, method="dense")  # type: ignore[arg-type]
        assert s.gap(kind) == pytest.approx(want, rel=1e-9, abs=1e-12), kind
    want = algebraic_connectivity(topo, method="dense")
    assert s.algebraic_connectivity() == pytest.approx(want, rel=1e-9, abs=1e-12)
    assert s.diameter() == diameter(topo)
    assert s.estimated == []


def test_the_ring_gap_is_exact_where_arpack_is_not() -> None:
    # the Metropolis ring: 1 - lambda_2 = (2/3)(1 - cos(2 pi / n)) = (4/3) sin^2(pi / n)
    for n in (2000, 10**5):
        s = LargeSpectra(ring(n).W)
        exact = 4.0 / 3.0 * float(np.sin(np.pi / n)) ** 2
        assert s.gap("lambda2") == pytest.approx(exact, rel=1e-12)
        assert s.gap("modulus") == pytest.approx(exact, rel=1e-12)
        assert s.algebraic_connectivity() == pytest.approx(
            4.0 * float(np.sin(np.pi / n)) ** 2, rel=1e-12)
        assert s.diameter() == n // 2


# ----------------------------------------------------------------------------- Lanczos
@pytest.mark.parametrize("topo", [random_regular(400, 6, seed=0), torus(12, 15),
                                  tf.topologies.erdos_renyi(300, 0.05, seed=1)],
                         ids=lambda t: t.name)
def test_lanczos_estimates_equal_dense_when_converged(topo: tf.Topology) -> None:
    s = LargeSpectra(topo.W)
    assert not s.circulant
    for kind in ("modulus", "lambda2", "norm"):
        want = spectral_gap(topo, kind, method="dense")  # type: ignore[arg-type]
        assert s.gap(kind) == pytest.approx(want, rel=1e-7, abs=1e-10), kind
    want = algebraic_connectivity(topo, method="dense")
    assert s.algebraic_connectivity() == pytest.approx(want, rel=1e-7, abs=1e-10)
    assert set(s.estimated) >= {"spectral_gap_modulus", "algebraic_connectivity"}


def test_an_unconverged_lanczos_overestimates_the_gap() -> None:
    # 300 steps cannot resolve a 400 x 400 torus' slowest mode: the Ritz values lie inside
    # the spectrum, so the gap is an upper bound
    topo = torus(400, 400)
    exact = 0.8 * float(np.sin(np.pi / 400)) ** 2  # 1 - (1 + 2 + 2 cos(2 pi / 400)) / 5
    got = LargeSpectra(topo.W).gap("lambda2")
    assert got is not None and exact * (1 + 1e-3) < got < 2 * exact


@given(st.integers(2, 40), st.integers(0, 10**6))
@settings(max_examples=25, deadline=None)
def test_the_diameter_estimate_is_a_lower_bound(n: int, seed: int) -> None:
    topo = tf.topologies.erdos_renyi(n, 0.2, seed=seed)
    P = arc_pattern(topo.W)
    d, estimated = bounded_diameter(P)
    connected = tf.spectral.is_strongly_connected(topo)
    assert (d is None) == (not connected)
    if connected:
        exact = diameter(topo)
        assert d is not None and (d == exact if not estimated else 1 <= d <= exact)


# ----------------------------------------------------------------------------- summary
def test_summary_says_how_it_computed_above_the_exact_size() -> None:
    n = SUMMARY_EXACT_MAX + 1
    s = summary(ring(n), metrics=KEYS)
    assert s["spectral_method"] == "closed_form" and s["estimated"] is False
    assert s["spectral_gap"] == pytest.approx(4 / 3 * float(np.sin(np.pi / n)) ** 2, rel=1e-12)
    assert s["diameter"] == n // 2
    rr = random_regular(n, 6, seed=0)
    s = summary(rr, metrics=KEYS)
    assert s["spectral_method"] == "lanczos" and s["estimated"] is True
    arpack = summary(rr, metrics=KEYS, method="sparse")  # the method before, kept on request
    assert "estimated" not in arpack
    for k in KEYS[:4]:
        assert s[k] == pytest.approx(arpack[k], rel=1e-7), k
    assert s["diameter"] <= arpack["diameter"] and s["strongly_connected"]


def test_summary_of_small_graphs_has_the_keys_it_had() -> None:
    for topo in (ring(SUMMARY_EXACT_MAX), random_regular(64, 4, seed=0)):
        s = summary(topo, metrics=KEYS)
        assert list(s) == KEYS
    assert "estimated" not in summary(ring(8))


def test_the_engine_row_records_the_estimate_flag() -> None:
    n = SUMMARY_EXACT_MAX + 1
    big = spectral_row(random_regular(n, 4, seed=0), None, {})
    assert big["graph.estimated"] is True
    assert spectral_row(ring(n), None, {})["graph.estimated"] is False
    assert "graph.estimated" not in spectral_row(ring(16), None, {})


def test_finite_time_consensus_of_a_static_normal_w_needs_no_simulation() -> None:
    # W^t = J only when every eigenvalue but the first is 0 (W = J): the simulated answer
    for topo in (complete(SUMMARY_EXACT_MAX + 5), ring(SUMMARY_EXACT_MAX + 5),
                 random_regular(SUMMARY_EXACT_MAX + 5, 4, seed=0)):
        got = summary(topo, metrics=["finite_time_consensus"])["finite_time_consensus"]
        want = tf.spectral.finite_time_consensus(topo, 50)
        assert got == want
    assert summary(complete(SUMMARY_EXACT_MAX + 5),
                   metrics=["finite_time_consensus"])["finite_time_consensus"] == 1
