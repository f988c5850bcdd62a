"""The null-cascade graph (Niwa, Zhang, Takezawa, Kleijn, NeurIPS 2025, Sec. 4 and App. B).

Checked against references written apart from the construction: the period against the paper's
Table 1 formula minimised over *every* factorisation of ``n`` (enumerated) and against the
values printed in its Tables 2, 5, 6 and Examples 5-9; every round against the definition
(circulant, doubly stochastic, positive weights, the largest on the node itself, the same number
of peers for every node, at most ``k``); every SNF's weights against the polynomial with the
stated roots (``numpy.poly``, not the construction's product of quadratics); the nulls of every
round through the FFT, and their union over a period is every frequency ``1..n-1`` (eq. 6); the
product of a period's matrices is ``J = 11^T/n`` to 1e-12 for every ``n`` in 2..200 and ``k`` in
{2, 3, 4, 5} (to 2..600 and k up to 10 under ``slow``), in any order (every permutation on
small cases, the reverse order everywhere, pairwise commutators up to n = 64, 200 under
``slow``); and the spectral functions read it.
"""

from __future__ import annotations

import itertools
import math
from functools import cache

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.spectral import finite_time_consensus
from topofl.topologies import CascadeFilter, null_cascade, null_cascade_schedule

KS = (2, 3, 4, 5)


# ---------------------------------------------------------------- references
def cost(f: int, k: int) -> int:
    """Rounds the paper gives a factor f = nu + 1: one MAF if nu <= k, else ceil(nu / c)."""
    return 1 if f <= k + 1 else math.ceil((f - 1) / (2 * (k // 2)))


def formula_min(n: int, k: int) -> int:
    """Table 1's tau = kappa + sum ceil(nu_i / (2 floor(k/2))), minimised over every
    factorisation of n into factors >= 2 (enumerated, factors non-decreasing)."""

    @cache
    def best(m: int, low: int) -> int:
        if m == 1:
            return 0
        out = cost(m, k)  # m itself as the last factor
        for f in range(low, math.isqrt(m) + 1):
            if m % f == 0:
                out = min(out, cost(f, k) + best(m // f, f))
        return out

    return best(n, 2)


def dense_round(n: int, f: CascadeFilter) -> np.ndarray:
    """W[i, (i - d) mod n] = w_d, one entry at a time."""
    W = np.zeros((n, n))
    for i in range(n):
        for d, w in zip(f.offsets, f.weights):
            W[i, (i - d) % n] += w
    return W


def response(n: int, f: CascadeFilter) -> np.ndarray:
    """H(i) = sum_d w_d exp(-2 pi j i d / n), i = 0..n-1: the eigenvalues of the round."""
    h = np.zeros(n)
    np.add.at(h, np.asarray(f.offsets), np.asarray(f.weights))
    return np.fft.fft(h)


def targets(n: int, f: CascadeFilter) -> set[int]:
    return {i for i in range(1, n) if i % f.base == 0 and (i // f.base) % f.factor in f.residues}


def period_product(tv: tf.TimeVarying, order: list[int] | None = None) -> np.ndarray:
    assert tv.period is not None
    P = np.eye(tv.n)
    for t in order if order is not None else range(tv.period):
        P = tv.at(t).W @ P
    return np.asarray(P)


# ---------------------------------------------------------------- the paper's numbers
# (n, k, tau): Table 2 (15, 17, 30 nodes, k = 2), Table 5 (k = 3, 4), Table 6 (69, 2) and
# Examples 5-9 (17, 30, 60 nodes).
PAPER_PERIODS = [(15, 2, 3), (17, 2, 8), (30, 2, 4), (15, 3, 3), (17, 3, 8), (30, 4, 3),
                 (31, 4, 8), (69, 2, 12), (60, 4, 3), (60, 3, 4), (60, 2, 5)]


@pytest.mark.parametrize(("n", "k", "tau"), PAPER_PERIODS)
def test_the_paper_periods(n: int, k: int, tau: int) -> None:
    tv = null_cascade(n, k)
    assert tv.period == tau == formula_min(n, k)
    assert finite_time_consensus(tv, 2 * tau) == tau


def test_where_the_paper_contradicts_itself() -> None:
    # Example 4 says tau = 4 at (15, 2) but lists three null sets; Table 2 and Sec. 4 say 3
    assert null_cascade(15, 2).period == 3
    # Table 5 says 3 at (30, 3); its formula: 30 = 2 x 3 x 5, kappa = 2, ceil(4 / 2) = 2 -> 4
    assert null_cascade(30, 3).period == 4 == formula_min(30, 3)


def test_figure_1b_by_hand() -> None:
    # 15 = 3 x 5, k = 2: a MAF of length 3 expanded by 5, then two SNFs for the pairs of 5
    maf, snf1, snf2 = null_cascade_schedule(15, 2)
    assert (maf.kind, maf.factor, maf.offsets, maf.weights) == ("maf", 3, (0, 5, 10),
                                                                (1 / 3,) * 3)
    phi = (1 + math.sqrt(5)) / 2  # -2 cos(4 pi / 5): roots at +-2 pi 2 / 5 -> (1, phi, 1)
    for f, pair, mult in ((snf1, (2, 3), 1), (snf2, (1, 4), 2)):
        assert (f.kind, f.factor, f.base, f.residues, f.multiplier) == ("snf", 5, 3, pair, mult)
        np.testing.assert_allclose(f.weights, np.array([1, phi, 1]) / (2 + phi), atol=1e-15)
        assert f.offsets == ((-f.expansion) % 15, 0, f.expansion)  # the largest weight: self
    # the largest remaining pair (2, 3) works at m_tmp = 1; the pair (1, 4) needs m_tmp = 2
    # (at m_tmp = 1 the middle coefficient is -2 cos(2 pi / 5) < 0)
    assert -2 * math.cos(2 * math.pi / 5) < 0


# ---------------------------------------------------------------- every round, by definition
def check_rounds(n: int, k: int) -> None:
    tv = null_cascade(n, k)
    sched = null_cascade_schedule(n, k)
    assert tv.period == len(sched) == formula_min(n, k)
    covered: list[int] = []
    for t, f in enumerate(sched):
        top = tv.at(t)
        W = top.W.toarray()
        np.testing.assert_array_equal(W, dense_round(n, f))
        assert np.all(top.W.data > 0) and len(set(f.offsets)) == len(f.offsets)
        np.testing.assert_allclose(W.sum(axis=0), 1.0, rtol=0, atol=1e-14)
        np.testing.assert_allclose(W.sum(axis=1), 1.0, rtol=0, atol=1e-14)
        # circulant: every row is the first one shifted, so all rounds commute
        np.testing.assert_array_equal(W, np.stack([np.roll(W[0], i) for i in range(n)]))
        # uniform degree, at most k; the node's own weight is its largest (Alg. 2)
        deg = len(f.offsets) - 1
        assert top.in_degree.tolist() == [deg] * n and top.out_degree.tolist() == [deg] * n
        assert deg <= (f.factor - 1 if f.kind == "maf" else 2 * (k // 2)) <= k
        assert W[0, 0] == max(f.weights)
        assert top.weights == ("uniform" if f.kind == "maf" else "custom")
        # the round nulls its targets
        tg = targets(n, f)
        H = response(n, f)
        assert np.max(np.abs(H[sorted(tg)]), initial=0.0) <= 1e-13
        assert abs(H[0] - 1) <= 1e-14
        covered += tg
    # eq. (6): the targets of one period are every non-zero frequency, each exactly once
    assert sorted(covered) == list(range(1, n))


@pytest.mark.parametrize("n", [*range(2, 41), 60, 69, 97, 105, 120, 121, 143, 200])
def test_rounds_by_definition(n: int) -> None:
    for k in KS:
        check_rounds(n, k)


def test_snf_weights_are_the_polynomial_with_the_stated_roots() -> None:
    # Definition 8 / Alg. 3 line 8: prod (x - e^{j 2 pi q / n'}) (x - e^{-j 2 pi q / n'}) with
    # q = m_tmp * s over the factor's frequencies, normalised to sum 1; numpy.poly from the roots
    for n, k in itertools.product((7, 11, 13, 17, 23, 31, 35, 77, 97, 187), KS):
        for f in null_cascade_schedule(n, k):
            if f.kind != "snf":
                continue
            roots = np.exp(2j * np.pi * f.multiplier * np.asarray(f.residues) / f.factor)
            poly = np.poly(roots)
            assert np.max(np.abs(poly.imag)) <= 1e-12
            want = poly.real / poly.real.sum()
            np.testing.assert_allclose(f.weights, want, rtol=0, atol=1e-13)
            assert min(want) > 0  # "positive definite" (Alg. 4, line 21)
            # the smallest multiplier that gives positive coefficients (Alg. 4's search)
            for u in range(1, f.multiplier):
                co = np.poly(np.exp(2j * np.pi * u * np.asarray(f.residues) / f.factor)).real
                assert min(co) <= 1e-9 * max(co)
            # taps expansion apart, shifted by the position of the largest weight
            t_max = int(np.argmax(f.weights))
            assert f.offsets == tuple((t - t_max) * f.expansion % n
                                      for t in range(len(f.weights)))
            assert f.expansion == n // (f.factor * f.base) * f.multiplier


# ---------------------------------------------------------------- exact averaging, every n
def check_product(n: int, k: int, *, pairs: bool) -> None:
    tv = null_cascade(n, k)
    Ws = [tv.at(t).W for t in range(tv.period)]
    P = np.eye(n)
    for W in Ws:
        P = W @ P
    assert np.max(np.abs(P - 1.0 / n)) <= 1e-12, (n, k)
    assert tv.period == formula_min(n, k), (n, k)
    # the same product in reverse order
    R = np.eye(n)
    for W in reversed(Ws):
        R = W @ R
    assert np.max(np.abs(R - 1.0 / n)) <= 1e-12, (n, k)
    if pairs:  # commuting: every pair of rounds (sparse products), so every order gives J
        for A, B in itertools.combinations(Ws, 2):
            D = (A @ B - B @ A).tocoo()
            assert np.max(np.abs(D.data), initial=0.0) <= 1e-15, (n, k)


@pytest.mark.parametrize("n", range(2, 201))
def test_period_product_is_J_for_every_n(n: int) -> None:
    for k in KS:
        check_product(n, k, pairs=n <= 64)


@pytest.mark.slow
@pytest.mark.parametrize("n", range(2, 601))
def test_period_product_is_J_for_every_n_up_to_600(n: int) -> None:
    for k in (*KS, 6, 7, 10):
        check_product(n, k, pairs=n <= 200)  # every round is also checked circulant above


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 3000), k=st.integers(2, 12))
def test_period_nulls_every_frequency_fft(n: int, k: int) -> None:
    # the eigenvalues of the product are the products of the rounds' responses: 1 at 0, 0
    # elsewhere, for n well beyond the dense checks
    sched = null_cascade_schedule(n, k)
    H = np.prod([response(n, f) for f in sched], axis=0)
    assert abs(H[0] - 1) <= 1e-12 and np.max(np.abs(H[1:])) <= 1e-12
    assert len(sched) == formula_min(n, k)
    assert all(len(f.offsets) - 1 <= k and min(f.weights) > 0 for f in sched)


@pytest.mark.parametrize(("n", "k"), [(15, 2), (30, 2), (60, 2), (60, 3), (35, 2), (105, 4),
                                      (24, 2), (77, 5)])
def test_every_order_gives_the_same_product(n: int, k: int) -> None:
    tv = null_cascade(n, k)
    assert tv.period is not None and tv.period <= 6
    want = period_product(tv)
    for order in itertools.permutations(range(tv.period)):
        np.testing.assert_allclose(period_product(tv, list(order)), want, rtol=0, atol=1e-14)
    np.testing.assert_allclose(want, 1.0 / n, rtol=0, atol=1e-14)
    # any tau consecutive rounds average exactly
    for start in range(tv.period):
        assert finite_time_consensus(tv, tv.period + 1, start=start) == tv.period


def test_the_factorisation_packs_the_small_primes_and_keeps_the_large_ones() -> None:
    # (60, 3): 5 x 4 x 3 (a MAF of 4 rather than two of 2), as the paper's Example 8
    kinds = [(f.kind, f.factor) for f in null_cascade_schedule(60, 3)]
    assert kinds == [("maf", 4), ("maf", 3), ("snf", 5), ("snf", 5)]
    # (60, 2): 5 x 3 x 2 x 2 (Example 9); a power of k + 1 is the k-peer hyper-hypercube
    assert [f.factor for f in null_cascade_schedule(60, 2)] == [3, 2, 2, 5, 5]
    assert [(f.kind, f.factor) for f in null_cascade_schedule(27, 2)] == [("maf", 3)] * 3
    # the largest prime first (Alg. 1, i = lambda .. kappa + 1)
    assert [f.factor for f in null_cascade_schedule(7 * 11, 2)] == [11] * 5 + [7] * 3


def test_small_n_and_large_k() -> None:
    # k >= n - 1: the complete graph in one round (a MAF over all n nodes)
    for n in range(2, 12):
        tv = null_cascade(n, max(2, n - 1))
        assert tv.period == 1
        np.testing.assert_allclose(tv.at(0).W.toarray(), 1.0 / n, rtol=0, atol=1e-15)
    assert null_cascade(2, 10**6).period == 1
    # a prime above k + 1 with k odd: SNFs use 2 floor(k/2) = k - 1 peers
    assert {len(f.offsets) - 1 for f in null_cascade_schedule(13, 3)} == {2}
    assert {len(f.offsets) - 1 for f in null_cascade_schedule(13, 5)} == {4}  # 6 = 2 + 2 + 2
    # 11 with k = 5: five pairs, two filters of two and a last, shorter one of one pair
    assert [len(f.offsets) - 1 for f in null_cascade_schedule(11, 5)] == [4, 4, 2]


# ---------------------------------------------------------------- the library reads it
def test_spectral_functions_read_it() -> None:
    tv = tf.topologies.build("null_cascade:n=30,k=2")
    assert isinstance(tv, tf.TimeVarying) and tv.period == 4
    s = tf.spectral.summary(tv)
    assert (s["period"], s["finite_time_consensus"], s["strongly_connected"]) == (4, 4, True)
    assert s["directed"] and s["stochastic"] == "doubly"
    assert s["effective_neighbors_method"] == "periodic"
    P = tf.spectral.mixing_product(tv, 0, 4)
    assert tf.spectral.spectral_gap(P, kind="norm") == pytest.approx(1.0, abs=1e-12)
    # expected_mixing is for random i.i.d. schedules; a periodic one has no distribution
    with pytest.raises(ValueError, match="no closed form"):
        tf.spectral.expected_mixing(tv)
    en = tf.spectral.effective_neighbors(tv)
    assert 1.0 < en < 30.0


def test_registry_entry() -> None:
    fam = tf.topologies.REGISTRY["null_cascade"]
    assert fam.func is null_cascade and fam.time_varying and not fam.random
    assert not fam.undirected and fam.stochastic == "doubly"
    assert [p.name for p in fam.params] == ["n", "k"]
    tv = null_cascade(12, 3)
    assert dict(tv.params) == {"n": 12, "k": 3} and tv.name == "null_cascade"
    assert tv.at(0).params["round"] == 0


@pytest.mark.parametrize("bad", [{"n": 1}, {"n": 5, "k": 1}, {"n": 2.5}, {"n": 5, "k": 2.0},
                                 {"n": "5"}, {"n": True}])
def test_bad_input(bad: dict) -> None:
    with pytest.raises((TypeError, ValueError)):
        null_cascade(**bad)
    with pytest.raises((TypeError, ValueError)):
        null_cascade_schedule(**{"k": 2, **bad})


def test_huge_sizes_are_refused_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="memory"):
        null_cascade(10**12, 2)
    # a large prime costs a nulling filter per conjugate pair: refused by the time estimate
    # (its ~3 GB pass the memory check on a machine with that much free; the limit says so
    # here, so that a shared machine's free memory does not decide which refusal comes first)
    monkeypatch.setenv("TOPOFL_MEMORY_LIMIT", "64e9")
    with pytest.raises(ValueError, match="computation"):
        null_cascade(9_999_991, 2)


def test_schedule_is_a_pure_function() -> None:
    a, b = null_cascade_schedule(187, 4), null_cascade_schedule(187, 4)
    assert a == b
    tv = null_cascade(187, 4)
    assert (tv.at(3).W != sp.csr_array(null_cascade(187, 4).at(3).W)).nnz == 0
