"""topofl.spectral.gaps: closed-form gaps (Metropolis ring, complete graph, ring Laplacian),
ARPACK against dense LAPACK, eigenvalue ordering.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl import spectral as S
from topofl.spectral import (
    algebraic_connectivity,
    eigenvalues,
    spectral_gap,
)
from topofl.topologies import (
    complete,
    exponential,
    random_directed,
    random_regular,
    ring,
    torus,
    watts_strogatz,
)


# ============================================================================ closed forms
@settings(max_examples=25, deadline=None)
@given(n=st.integers(3, 64))
def test_metropolis_ring_gap_closed_form(n: int) -> None:
    expected = 1 - (1 + 2 * math.cos(2 * math.pi / n)) / 3
    t = ring(n)
    assert spectral_gap(t, "lambda2") == pytest.approx(expected, abs=1e-12)
    # the most negative eigenvalue (1 + 2 cos(pi (n-1)/n ...)) / 3 >= -1/3 never dominates
    assert spectral_gap(t) == pytest.approx(expected, abs=1e-12)
    assert spectral_gap(t, "norm") == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("n", [2, 3, 7, 30])
def test_complete_graph_gap_is_one(n: int) -> None:
    for kind in ("modulus", "lambda2", "norm"):
        assert spectral_gap(complete(n), kind) == pytest.approx(1.0, abs=1e-12)  # type: ignore[arg-type]


@settings(max_examples=25, deadline=None)
@given(n=st.integers(3, 64))
def test_ring_laplacian_lambda2(n: int) -> None:
    expected = 2 - 2 * math.cos(2 * math.pi / n)
    assert algebraic_connectivity(ring(n)) == pytest.approx(expected, abs=1e-12)
    # weighted by W: L = I - W, so mu_2 = 1 - lambda_2(W)
    assert algebraic_connectivity(ring(n), weighted=True) == pytest.approx(
        spectral_gap(ring(n), "lambda2"), abs=1e-12
    )


def test_algebraic_connectivity_references() -> None:
    G = nx.petersen_graph()
    t = tf.Topology.from_networkx(G)
    ref = nx.algebraic_connectivity(G, tol=1e-12)
    assert algebraic_connectivity(t) == pytest.approx(ref, abs=1e-8)
    assert algebraic_connectivity(complete(6)) == pytest.approx(6.0)
    assert algebraic_connectivity(tf.Topology.from_matrix(np.eye(3))) == 0.0  # disconnected
    # directed graphs use the underlying undirected graph
    assert algebraic_connectivity(exponential(8)) == pytest.approx(
        algebraic_connectivity(tf.Topology.from_networkx(exponential(8).graph.to_undirected()))
    )


def test_gap_kinds_differ_for_negative_eigenvalues() -> None:
    # Metropolis-Hastings on an even ring has eigenvalue -1: modulus gap 0, lambda2 gap > 0
    t = ring(8).reweight("metropolis_hastings")
    assert spectral_gap(t) == 0.0
    assert spectral_gap(t, "lambda2") == pytest.approx(1 - math.cos(2 * math.pi / 8))


def test_lambda2_needs_symmetric() -> None:
    with pytest.raises(ValueError, match="symmetric"):
        spectral_gap(exponential(8), "lambda2")


# ============================================================================ eigenvalues
def test_eigenvalues_match_numpy() -> None:
    t = exponential(10)
    ev = eigenvalues(t)
    ref = np.linalg.eigvals(t.to_dense())
    np.testing.assert_allclose(np.sort_complex(ev), np.sort_complex(ref), atol=1e-12)
    assert np.all(np.diff(np.abs(ev)) <= 1e-12)  # decreasing modulus
    sym = eigenvalues(ring(9))
    assert sym.dtype == np.float64 and np.all(np.diff(sym) <= 0)


def test_eigenvalues_top_k_are_the_largest_moduli_in_full_order() -> None:
    t = ring(9).reweight("metropolis_hastings")
    full = eigenvalues(t)
    top = eigenvalues(t, k=3)
    assert top.size == 3
    chosen = np.sort(np.abs(full))[::-1][:3]
    np.testing.assert_allclose(np.sort(np.abs(top))[::-1], chosen, atol=1e-12)
    assert np.all(np.diff(top) <= 0)


def test_eigenvalues_sparse_needs_k() -> None:
    with pytest.raises(ValueError, match="pass k"):
        eigenvalues(ring(5), method="sparse")


SPARSE_CASES = [
    ("ring", lambda: ring(200)),
    ("torus", lambda: torus(10, 16)),
    ("random_regular", lambda: random_regular(200, 4, seed=0)),
    ("watts_strogatz", lambda: watts_strogatz(200, 4, 0.1, seed=1)),
    pytest.param("exponential", lambda: exponential(200), marks=pytest.mark.slow),
    pytest.param("pull", lambda: random_directed(200, 3, seed=0).at(0), marks=pytest.mark.slow),
    pytest.param("push", lambda: random_directed(200, 3, seed=0, mode="push").at(1),
                 marks=pytest.mark.slow),  # issue 23: ARPACK on directed n=200, several s
    ("metropolis_hastings", lambda: ring(200).reweight("metropolis_hastings")),
]


@pytest.mark.parametrize("name, make", SPARSE_CASES, ids=[
    getattr(c, "values", c)[0] for c in SPARSE_CASES])
def test_sparse_and_dense_agree(name: str, make: object) -> None:
    t = make()  # type: ignore[operator]
    kinds = ["modulus", "norm"] + (["lambda2"] if t.is_symmetric else [])
    for kind in kinds:
        d = spectral_gap(t, kind, method="dense")
        s = spectral_gap(t, kind, method="sparse")
        assert abs(d - s) <= 1e-8, (kind, d, s)
    for weighted in (False, True):
        d = algebraic_connectivity(t, weighted=weighted, method="dense")
        s = algebraic_connectivity(t, weighted=weighted, method="sparse")
        assert abs(d - s) <= 1e-8
    top_d = eigenvalues(t, k=4, method="dense")
    top_s = eigenvalues(t, k=4, method="sparse")
    np.testing.assert_allclose(np.abs(top_s), np.abs(top_d), atol=1e-8)


def test_auto_uses_sparse_above_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    t = random_regular(S.DENSE_MAX + 50, 4, seed=2)

    def no_dense(*args: object, **kwargs: object) -> None:
        raise AssertionError("dense path used")

    monkeypatch.setattr(sp.csr_array, "toarray", no_dense)
    assert 0 < spectral_gap(t) < 1
    assert 0 < spectral_gap(t, "lambda2") < 1
    assert algebraic_connectivity(t) > 0


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 40), p=st.floats(0.0, 1.0), seed=st.integers(0, 10**6),
       weighted=st.booleans())
def test_laplacian_identical_to_diag_minus_adjacency(
    n: int, p: float, seed: int, weighted: bool
) -> None:
    # scipy's csgraph.laplacian must give bit for bit the L = diag(A 1) - A built before.
    from topofl.spectral.gaps import _laplacian

    t = tf.Topology.from_networkx(nx.gnp_random_graph(n, p, seed=seed, directed=True), "uniform")
    M = t.W
    if weighted:
        A = ((M + M.T) / 2.0).tocsr()
        A = (A - sp.diags_array(A.diagonal())).tocsr()
        A.eliminate_zeros()
    else:
        P = S._pattern(M, diagonal=False)
        A = ((P + P.T) > 0).astype(np.float64).tocsr()
    old = (sp.diags_array(np.asarray(A.sum(axis=1)).ravel()) - A).tocsr()
    new = _laplacian(A)
    for a, b in ((new.data, old.data), (new.indices, old.indices), (new.indptr, old.indptr)):
        assert np.array_equal(a, b)
