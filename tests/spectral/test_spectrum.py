"""topofl.spectral.spectrum: all eigenvalues of a symmetric W and the full-spectrum summaries;
the all-eigenvalues metric against closed forms (ring, complete, torus), a slow dense reference,
the trace of (I - W^2 + J)^{-1}, and its identity with the relaxation sum."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.spectral import all_eigenvalues_metric, spectral_gap, spectrum
from topofl.spectral.spectrum import _metric_of_eigenvalues
from topofl.topologies import complete, random_regular, ring, star, torus


def test_hand_computed_ring_and_complete() -> None:
    s = spectrum(ring(4))  # eigenvalues 1, 1/3, 1/3, -1/3
    np.testing.assert_allclose(s.eigenvalues, [1, 1 / 3, 1 / 3, -1 / 3], atol=1e-15)
    assert s.lambda_2 == pytest.approx(1 / 3) and s.lambda_min == pytest.approx(-1 / 3)
    assert s.mean_sq == pytest.approx(1 / 9) and s.relaxation == pytest.approx(9 / 8)
    c = spectrum(complete(100))  # W = J: one mode at 1, the others exactly 0 (not 1e-33)
    assert c.mean_sq == 0.0 and c.relaxation == 1.0
    assert c.gap == pytest.approx(1.0)


def test_modes_that_never_decay_have_no_relaxation() -> None:
    s = spectrum(np.eye(3))  # disconnected: every mode stays
    assert s.relaxation is None and s.gap == 0.0 and s.mean_sq == pytest.approx(1.0)
    bip = tf.Topology.from_matrix([[0.0, 1.0], [1.0, 0.0]])  # eigenvalue -1
    assert spectrum(bip).relaxation is None
    one = spectrum(np.ones((1, 1)))
    assert one.n == 1 and one.mean_sq is None and one.lambda_2 is None


@settings(max_examples=20, deadline=None)
@given(n=st.integers(4, 40), d=st.integers(2, 5), seed=st.integers(0, 2**16))
def test_identities_against_slow_references(n: int, d: int, seed: int) -> None:
    if n * d % 2 or d >= n:
        return
    t = random_regular(n, d, seed=seed)
    s = spectrum(t)
    W = t.W.toarray()
    ev = np.sort(np.linalg.eigvals(W).real)[::-1]
    np.testing.assert_allclose(s.eigenvalues, ev, atol=1e-10)
    # mean_sq = (||W||_F^2 - 1) / (n - 1); the gap is spectral_gap's
    assert s.mean_sq == pytest.approx((np.sum(W * W) - 1) / (n - 1), abs=1e-12)
    assert s.gap == pytest.approx(spectral_gap(t), abs=1e-10)
    # relaxation = mean over modes of sum_t lambda^(2t): the series, term by term
    if s.relaxation is not None and s.gap > 0.05:
        rest = np.array(s.eigenvalues[1:])
        series = sum(np.mean(rest ** (2 * k)) for k in range(2000))
        assert s.relaxation == pytest.approx(series, rel=1e-8)


def test_mean_sq_is_the_expected_contraction_of_an_isotropic_disagreement() -> None:
    t = torus(4, 5)
    W = t.W.toarray()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 20000))
    X -= X.mean(axis=0)  # isotropic in the space orthogonal to 1
    ratio = np.sum((W @ X) ** 2) / np.sum(X**2)
    assert ratio == pytest.approx(spectrum(t).mean_sq, rel=0.01)


def test_refusals_and_json() -> None:
    import json

    with pytest.raises(ValueError, match="symmetric"):
        spectrum(tf.topologies.exponential(8))
    with pytest.raises(ValueError, match="stochastic"):
        spectrum(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="stochastic"):
        spectrum(star(5).reweight("uniform"))  # row-stochastic only
    json.dumps(spectrum(ring(6)).as_dict(), allow_nan=False)


# ------------------------------------------------------------- the all-eigenvalues metric


def _metric_reference(W: np.ndarray) -> float:
    """Slow and obvious: every eigenvalue of the dense matrix, the largest one dropped, the
    terms lambda^2 / (1 - lambda^2) summed one by one, divided by n."""
    ev = sorted(np.linalg.eigvalsh(W).tolist(), reverse=True)
    return sum(lam * lam / (1.0 - lam * lam) for lam in ev[1:]) / W.shape[0]


def _metric_by_trace(W: np.ndarray) -> float:
    """Another route: (tr[(I - W^2 + J)^{-1}] - n) / n (the consensus mode of I - W^2 + J has
    eigenvalue 1, mode k the eigenvalue 1 - lambda_k^2)."""
    n = W.shape[0]
    A = np.eye(n) - W @ W + np.full((n, n), 1.0 / n)
    return float((np.trace(np.linalg.inv(A)) - n) / n)


def _ring_closed_form(n: int) -> float:
    # lambda_k = (1 + 2 cos(2 pi k / n)) / 3, with 1 - lambda_k = (4/3) sin^2(pi k / n) written
    # without the cancellation of 1 - lambda near 1
    one_minus = 4 / 3 * np.sin(np.pi * np.arange(1, n) / n) ** 2
    lam = 1 - one_minus
    return float(np.sum(lam**2 / (one_minus * (2 - one_minus))) / n)


def _torus_closed_form(r: int, c: int) -> float:
    a, b = np.meshgrid(np.arange(r), np.arange(c), indexing="ij")
    lam = ((1 + 2 * np.cos(2 * np.pi * a / r) + 2 * np.cos(2 * np.pi * b / c)) / 5).ravel()[1:]
    return float(np.sum(lam**2 / (1 - lam**2)) / (r * c))


def test_metric_by_hand() -> None:
    assert all_eigenvalues_metric(ring(4)) == pytest.approx(3 / 32, abs=1e-16)
    # ring(6): 2/3 twice (4/5 each), 0 twice, -1/3 once (1/8): (8/5 + 1/8) / 6
    assert all_eigenvalues_metric(ring(6)) == pytest.approx((8 / 5 + 1 / 8) / 6, abs=1e-15)
    for n in (1, 2, 3, 5, 40, 300):
        assert all_eigenvalues_metric(complete(n)) == 0.0  # W = J: every other mode is 0


@pytest.mark.parametrize("n", [3, 4, 5, 8, 17, 64, 257, 1000])
def test_metric_ring_closed_form(n: int) -> None:
    got = all_eigenvalues_metric(ring(n))  # circulant: closed form
    assert got == pytest.approx(_ring_closed_form(n), rel=1e-12, abs=1e-15)
    if n <= 257:
        W = ring(n).W.toarray()
        assert got == pytest.approx(_metric_reference(W), rel=1e-9, abs=1e-14)
        assert got == pytest.approx(_metric_by_trace(W), rel=1e-9, abs=1e-14)


def test_metric_large_ring_tends_to_n_over_8() -> None:
    # lambda_k^2 / (1 - lambda_k^2) ~ 3 n^2 / (8 pi^2 k^2) for the slow modes, at both ends
    # of the spectrum: sum ~ n^2 / 8, metric ~ n / 8 (measured: n / 8 - 0.567, the faster
    # modes' correction)
    for n in (10**4, 10**5, 10**6):
        m = all_eigenvalues_metric(ring(n))
        assert 0 < n / 8 - m < 1
        assert m == pytest.approx(_ring_closed_form(n), rel=1e-9)


@pytest.mark.parametrize(("r", "c"), [(3, 3), (3, 4), (4, 5), (6, 6), (8, 5)])
def test_metric_torus_closed_form(r: int, c: int) -> None:
    t = torus(r, c)  # not circulant: the dense path
    assert all_eigenvalues_metric(t) == pytest.approx(_torus_closed_form(r, c), rel=1e-12)
    assert all_eigenvalues_metric(t) == pytest.approx(_metric_reference(t.W.toarray()),
                                                      rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 48), d=st.integers(2, 6), lazy=st.floats(0.0, 0.9),
       seed=st.integers(0, 2**16))
def test_metric_identity_with_relaxation(n: int, d: int, lazy: float, seed: int) -> None:
    # (1/n) sum lambda^2/(1 - lambda^2) = ((n-1)/n) (relaxation - 1), and both routes agree
    d = min(d, n - 1)
    if n * d % 2:
        d -= 1
    if d < 2 and n > 2:
        d = 2
    t = random_regular(n, d, seed=seed)
    W = lazy * np.eye(n) + (1 - lazy) * t.W.toarray()  # still symmetric doubly stochastic
    s = spectrum(W)
    assert s.relaxation is not None  # connected (random_regular), lazy or with self-weights
    m = all_eigenvalues_metric(W)
    assert m >= 0
    assert m == pytest.approx((n - 1) / n * (s.relaxation - 1), rel=1e-10, abs=1e-14)
    assert m == pytest.approx(_metric_reference(W), rel=1e-10, abs=1e-14)
    assert m == pytest.approx(_metric_by_trace(W), rel=1e-8, abs=1e-12)


def test_metric_circulant_and_dense_paths_agree() -> None:
    for t in (ring(12), tf.topologies.circulant(15, [1, 2, 5]), complete(9),
              tf.topologies.undirected_exponential(16)):
        W = t.W.toarray()
        ev = np.linalg.eigvalsh(W)
        dense = _metric_of_eigenvalues(ev)
        assert dense is not None
        assert all_eigenvalues_metric(t) == pytest.approx(dense, rel=1e-12, abs=1e-15)
        # the same matrix with its nodes relabelled is no longer circulant: the dense path
        p = np.random.default_rng(0).permutation(W.shape[0])
        assert all_eigenvalues_metric(W[np.ix_(p, p)]) == pytest.approx(dense, rel=1e-12,
                                                                        abs=1e-15)


def test_metric_refusals() -> None:
    with pytest.raises(ValueError, match="symmetric"):
        all_eigenvalues_metric(tf.topologies.exponential(8))
    with pytest.raises(ValueError, match="stochastic"):
        all_eigenvalues_metric(star(5).reweight("uniform"))  # row-stochastic only
    with pytest.raises(ValueError, match="stochastic"):
        all_eigenvalues_metric(np.zeros((3, 3)))
    # disconnected: eigenvalue 1 with multiplicity = number of components -> infinite
    two = np.kron(np.eye(2), ring(4).W.toarray())
    with pytest.raises(ValueError, match=r"infinite.*eigenvalue 1 with multiplicity 2.*2 "
                                         r"connected components"):
        all_eigenvalues_metric(two)
    with pytest.raises(ValueError, match="multiplicity 3"):
        all_eigenvalues_metric(np.eye(3))
    # bipartite without self-weights: eigenvalue -1 (circulant and dense paths)
    with pytest.raises(ValueError, match=r"infinite.*eigenvalue -1"):
        all_eigenvalues_metric(ring(8).reweight("metropolis_hastings"))
    with pytest.raises(ValueError, match=r"infinite.*eigenvalue -1"):
        all_eigenvalues_metric(np.array([[0.0, 1.0], [1.0, 0.0]]))
    with pytest.raises(TypeError, match="TimeVarying"):
        all_eigenvalues_metric(tf.topologies.random_matching(6, seed=0))
    assert all_eigenvalues_metric(np.ones((1, 1))) == 0.0
