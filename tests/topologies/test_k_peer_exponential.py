"""The k-peer exponential graph: the definition entry by entry, commutativity, exact averaging.

Facts checked against an obviously correct dense reference built from the definition
``W(t) = (1/(k+1)) sum_{j=0..k} P^{j (k+1)^(t mod tau)}`` (``P`` the cyclic shift, node ``i``
hearing ``i - s``), for both periods: the paper's ``tau = floor(log_{k+1} n)`` (the default,
Definition 5 of Niwa et al., NeurIPS 2025) and ``period="exact"``'s ``ceil(log_{k+1} n)``.
Hand-computed matrices for n = 3, 5 and 6; ``k = 1`` with ``period="exact"`` is the one-peer
exponential graph; every round is a doubly stochastic circulant; all rounds commute; the product
over one period is the closed form ``(k+1)^-tau sum_{m < (k+1)^tau} P^m`` and equals
``J = 11^T/n`` to 1e-12 exactly when ``n`` divides ``(k+1)^tau`` -- for the paper's period that
is when ``n`` is a power of ``k + 1`` -- then ``finite_time_consensus`` returns ``tau`` from any
start, otherwise ``None``; the expected spectral gap of Theorem 2 equals the measured one; the
periods of the paper's tables. The default suite runs every ``n`` in 2..48 and every ``k``; the
slow one every ``n`` in 2..200 with every ``k`` up to 16 and ``k = n - 1``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.spectral import finite_time_consensus
from topofl.topologies import k_peer_exponential, one_peer_exponential

PERIODS = ("paper", "exact")


def reference_tau(n: int, k: int, period: str = "paper") -> int:
    """floor (the paper's) or ceil of log_{k+1} n, by counting powers."""
    if period == "paper":
        tau = 0
        while (k + 1) ** (tau + 1) <= n:
            tau += 1
        return tau
    tau = 0
    while (k + 1) ** tau < n:
        tau += 1
    return tau


def reference_round(n: int, k: int, t: int, period: str = "paper") -> np.ndarray:
    """W(t) from the definition, one entry at a time."""
    s = (k + 1) ** (t % reference_tau(n, k, period))
    W = np.zeros((n, n))
    for i in range(n):
        for j in range(k + 1):
            W[i, (i - j * s) % n] += 1.0 / (k + 1)
    return W


def period_product(tv: tf.TimeVarying, order: list[int] | None = None) -> np.ndarray:
    assert tv.period is not None
    P = np.eye(tv.n)
    for t in order if order is not None else range(tv.period):
        P = tv.at(t).W.toarray() @ P
    return P


def closed_form_product(n: int, k: int, period: str = "paper") -> np.ndarray:
    """(k+1)^-tau sum_{m < (k+1)^tau} P^m: entry (i, j) counts the m = i - j mod n."""
    N = (k + 1) ** reference_tau(n, k, period)
    counts = np.bincount(np.arange(N) % n, minlength=n) / N
    return np.array([[counts[(i - j) % n] for j in range(n)] for i in range(n)])


def reference_exact(n: int, k: int, period: str) -> bool:
    """The slow obvious reference: multiply the definition's dense rounds, compare with J."""
    P = np.eye(n)
    for t in range(reference_tau(n, k, period)):
        P = reference_round(n, k, t, period) @ P
    return bool(np.max(np.abs(P - 1.0 / n)) <= 1e-12)


# ---------------------------------------------------------------- hand-computed small cases
def test_n3_k1_by_hand() -> None:
    # the paper's tau = floor(log2 3) = 1: round 0 only, i hears i - 1 with weight 1/2
    h = 0.5
    W0 = [[h, 0, h], [h, h, 0], [0, h, h]]
    tv = k_peer_exponential(3, 1)
    assert tv.period == 1
    np.testing.assert_array_equal(tv.at(0).W.toarray(), W0)
    np.testing.assert_array_equal(tv.at(1).W.toarray(), W0)  # the period repeats
    assert finite_time_consensus(tv, 30) is None
    # ceil: tau = 2, round 1: i hears i - 2 = i + 1
    tv = k_peer_exponential(3, 1, period="exact")
    assert tv.period == 2
    np.testing.assert_array_equal(tv.at(0).W.toarray(), W0)
    np.testing.assert_array_equal(tv.at(1).W.toarray(), [[h, h, 0], [0, h, h], [h, 0, h]])
    # product (2I + P + P^2)/4: not 11^T/3, so no finite-time consensus.
    np.testing.assert_array_equal(period_product(tv), [[0.5, 0.25, 0.25], [0.25, 0.5, 0.25],
                                                       [0.25, 0.25, 0.5]])
    assert finite_time_consensus(tv, 30) is None


@pytest.mark.parametrize("period", PERIODS)
def test_n3_k2_is_the_complete_graph_in_one_round(period: str) -> None:
    tv = k_peer_exponential(3, 2, period=period)
    assert tv.period == 1
    np.testing.assert_array_equal(tv.at(0).W.toarray(), np.full((3, 3), 1 / 3))
    assert finite_time_consensus(tv, 5) == 1


def test_n5_k2_by_hand() -> None:
    # Round 0: shifts 0, 1, 2; ceil's round 1: shifts 0, 3, 6 = 1 (mod 5). floor(log3 5) = 1.
    t = 1 / 3
    W0 = np.array([[t, 0, 0, t, t], [t, t, 0, 0, t], [t, t, t, 0, 0], [0, t, t, t, 0],
                   [0, 0, t, t, t]])
    W1 = np.array([[t, 0, t, 0, t], [t, t, 0, t, 0], [0, t, t, 0, t], [t, 0, t, t, 0],
                   [0, t, 0, t, t]])
    paper, exact = k_peer_exponential(5, 2), k_peer_exponential(5, 2, period="exact")
    assert (paper.period, exact.period) == (1, 2)
    np.testing.assert_array_equal(paper.at(0).W.toarray(), W0)
    np.testing.assert_array_equal(exact.at(0).W.toarray(), W0)
    np.testing.assert_array_equal(exact.at(1).W.toarray(), W1)
    assert finite_time_consensus(paper, 30) is None  # 5 is no power of 3
    assert finite_time_consensus(exact, 30) is None  # 5 does not divide 9


def test_n6_k2_coinciding_shift_adds_to_the_self_weight() -> None:
    # ceil's round 1: shifts 0, 3, 6 = 0 (mod 6): W = (2/3) I + (1/3) P^3; one message a node.
    tv = k_peer_exponential(6, 2, period="exact")
    W1 = tv.at(1).W.toarray()
    expected = (2 / 3) * np.eye(6) + (1 / 3) * np.roll(np.eye(6), 3, axis=1)
    np.testing.assert_allclose(W1, expected, rtol=0, atol=1e-16)
    assert tv.at(1).in_degree.tolist() == [1] * 6
    assert tv.at(1).weights == "custom" and tv.at(0).weights == "uniform"
    assert finite_time_consensus(tv, 30) is None  # 6 does not divide 9
    # the paper's period stops before a shift can wrap: k distinct messages, uniform weights
    tv = k_peer_exponential(6, 2)
    assert tv.period == 1 and tv.at(0).weights == "uniform"


def test_n6_k5_and_n12_k5_divide_a_power_of_six() -> None:
    assert finite_time_consensus(k_peer_exponential(6, 5), 5) == 1
    tv = k_peer_exponential(12, 5, period="exact")  # 12 divides 36: exact after tau = 2 rounds
    assert tv.period == 2 and finite_time_consensus(tv, 10) == 2
    np.testing.assert_allclose(period_product(tv), np.full((12, 12), 1 / 12), rtol=0, atol=1e-15)
    tv = k_peer_exponential(12, 5)  # the paper's: tau = 1, 12 is no power of 6
    assert tv.period == 1 and finite_time_consensus(tv, 10) is None


# ---------------------------------------------------------------- the paper's numbers
# Its Tables 2, 5 and 6 list the k-peer exponential graph's tau at nine (n, k): Definition 5's
# floor at six of them, the ceiling at the other three.
TABLE_FLOOR = [(15, 2, 2), (17, 2, 2), (30, 2, 3), (17, 3, 2), (30, 4, 2), (31, 4, 2)]
TABLE_CEIL = [(15, 3, 2), (30, 3, 3), (69, 2, 4)]


@pytest.mark.parametrize(("n", "k", "tau"), TABLE_FLOOR)
def test_the_paper_tables_periods_that_follow_definition_5(n: int, k: int, tau: int) -> None:
    assert k_peer_exponential(n, k).period == tau
    assert k_peer_exponential(n, k, period="exact").period == tau + 1


@pytest.mark.parametrize(("n", "k", "tau"), TABLE_CEIL)
def test_the_paper_tables_periods_that_follow_the_ceiling(n: int, k: int, tau: int) -> None:
    assert k_peer_exponential(n, k, period="exact").period == tau
    assert k_peer_exponential(n, k).period == tau - 1


def _theorem2_gap(n: int, k: int, tau: int) -> float:
    """Theorem 2: 1 - max_i |sin(pi i (k+1)^tau / n) / ((k+1)^tau sin(pi i / n))|."""
    i = np.arange(1, n)
    N = (k + 1) ** tau
    return float(1.0 - np.max(np.abs(np.sin(np.pi * i * N / n) / (N * np.sin(np.pi * i / n)))))


@pytest.mark.parametrize("period", PERIODS)
def test_expected_spectral_gap_is_theorem_2(period: str) -> None:
    for n, k in itertools.product(range(2, 41), (1, 2, 3, 5)):
        if k > n - 1:
            continue
        tv = k_peer_exponential(n, k, period=period)
        P = tf.spectral.mixing_product(tv, 0, tv.period)
        want = _theorem2_gap(n, k, tv.period)
        assert tf.spectral.spectral_gap(P, kind="norm") == pytest.approx(want, abs=1e-12)
        assert tf.spectral.spectral_gap(P) == pytest.approx(want, abs=1e-12)
    # a power of k + 1: p = 1 (finite-time convergence), up to the sines' rounding
    assert _theorem2_gap(27, 2, 3) == pytest.approx(1.0, abs=1e-14)
    assert _theorem2_gap(15, 2, 2) < 0.9


# ---------------------------------------------------------------- the definition, every round
@pytest.mark.parametrize("period", PERIODS)
@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 64), data=st.data())
def test_rounds_equal_the_reference(period: str, n: int, data: st.DataObject) -> None:
    k = data.draw(st.integers(1, n - 1))
    tv = k_peer_exponential(n, k, period=period)
    assert tv.period == reference_tau(n, k, period)
    assert dict(tv.params) == {"n": n, "k": k, "period": period}
    for t in range(tv.period + 1):
        W = tv.at(t).W
        np.testing.assert_allclose(W.toarray(), reference_round(n, k, t, period), rtol=0,
                                   atol=1e-15)
        np.testing.assert_allclose(W.sum(axis=0), 1.0, rtol=0, atol=1e-14)
        np.testing.assert_allclose(W.sum(axis=1), 1.0, rtol=0, atol=1e-14)
        assert W.nnz <= n * (k + 1)
        if period == "paper":  # k distinct shifts: every node hears exactly k others
            assert tv.at(t).in_degree.tolist() == [k] * n


def test_the_two_periods_share_their_first_rounds() -> None:
    for n, k in itertools.product(range(2, 60), (1, 2, 3, 5)):
        if k > n - 1:
            continue
        paper, exact = k_peer_exponential(n, k), k_peer_exponential(n, k, period="exact")
        power = (k + 1) ** paper.period == n
        assert exact.period == paper.period + (0 if power else 1)
        for t in range(paper.period):
            assert (paper.at(t).W != exact.at(t).W).nnz == 0


def test_k1_exact_is_the_one_peer_exponential_graph() -> None:
    for n in range(2, 40):
        a, b = k_peer_exponential(n, 1, period="exact"), one_peer_exponential(n)
        assert a.period == b.period
        for t in range(a.period):
            assert (a.at(t).W != b.at(t).W).nnz == 0
            assert a.at(t).weights == b.at(t).weights == "uniform"
        # the paper's period is the one-peer graph's only at powers of two
        assert (k_peer_exponential(n, 1).period == b.period) is (n & (n - 1) == 0)


@pytest.mark.parametrize("period", PERIODS)
@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 80), data=st.data())
def test_rounds_commute_and_the_order_does_not_matter(period: str, n: int,
                                                      data: st.DataObject) -> None:
    k = data.draw(st.integers(1, min(n - 1, 8)))
    tv = k_peer_exponential(n, k, period=period)
    Ws = [tv.at(t).W.toarray() for t in range(tv.period)]
    for A, B in itertools.combinations(Ws, 2):
        np.testing.assert_allclose(A @ B, B @ A, rtol=0, atol=1e-14)
    order = data.draw(st.permutations(list(range(tv.period))))
    np.testing.assert_allclose(period_product(tv, order), period_product(tv), rtol=0, atol=1e-14)


# ---------------------------------------------------------------- exact averaging
def check_exact_averaging(n: int, k: int, period: str) -> None:
    tv = k_peer_exponential(n, k, period=period)
    tau = tv.period
    assert tau is not None
    P = period_product(tv)
    np.testing.assert_allclose(P, closed_form_product(n, k, period), rtol=0, atol=1e-13)
    exact = (k + 1) ** tau % n == 0
    if period == "paper":  # (k+1)^tau <= n: divides it only when equal
        assert exact is ((k + 1) ** tau == n)
    if exact:
        assert np.max(np.abs(P - 1.0 / n)) <= 1e-12
        assert finite_time_consensus(tv, tau + 2) == tau
        assert finite_time_consensus(tv, tau + 2, start=1) == tau  # any tau consecutive rounds
    else:
        # entries count / N with N = (k+1)^tau not a multiple of n: |count/N - 1/n| >= 1/(nN)
        assert np.max(np.abs(P - 1.0 / n)) >= 1.0 / (n * (k + 1) ** tau) - 1e-15
        assert finite_time_consensus(tv, 2 * tau + 2) is None


@pytest.mark.parametrize("n", range(2, 49))
def test_exact_averaging_where_each_period_says(n: int) -> None:
    for k, period in itertools.product(range(1, n), PERIODS):
        check_exact_averaging(n, k, period)


@pytest.mark.slow
@pytest.mark.parametrize("n", range(49, 201))
def test_exact_averaging_where_each_period_says_up_to_200(n: int) -> None:
    for k, period in itertools.product([*range(1, 17), n - 1], PERIODS):
        check_exact_averaging(n, k, period)


def test_where_each_period_is_exact_against_the_slow_reference() -> None:
    # k in {1, 2, 3, 5}, n = k + 1..100: 389 (n, k); the paper's period is exact at the 15
    # powers of k + 1, the ceiling at 22 (n | (k+1)^ceil), e.g. (8, 3) and (12, 5)
    pairs = [(n, k) for k in (1, 2, 3, 5) for n in range(k + 1, 101)]
    assert len(pairs) == 389
    found: dict[str, list[tuple[int, int]]] = {}
    for period in PERIODS:
        found[period] = [(n, k) for n, k in pairs
                         if finite_time_consensus(k_peer_exponential(n, k, period=period),
                                                  reference_tau(n, k, period) + 1)]
        assert found[period] == [(n, k) for n, k in pairs if reference_exact(n, k, period)]
    powers = [(n, k) for n, k in pairs if (k + 1) ** reference_tau(n, k) == n]
    assert found["paper"] == powers and len(powers) == 15
    assert len(found["exact"]) == 22 and set(powers) < set(found["exact"])
    assert {(8, 3), (12, 5)} <= set(found["exact"]) - set(found["paper"])
    differ = [(n, k) for n, k in pairs
              if reference_tau(n, k, "paper") != reference_tau(n, k, "exact")]
    assert len(differ) == 374


def test_exact_sizes_up_to_200() -> None:
    # n divides a power of k + 1 prime: n is a power of k + 1 (6 divides no power of 3).
    for period in PERIODS:
        exact1 = [n for n in range(2, 201)
                  if finite_time_consensus(k_peer_exponential(n, 1, period=period), 12)]
        assert exact1 == [2, 4, 8, 16, 32, 64, 128]
        exact2 = [n for n in range(3, 201)
                  if finite_time_consensus(k_peer_exponential(n, 2, period=period), 12)]
        assert exact2 == [3, 9, 27, 81]


def test_spectral_summary_and_spec() -> None:
    tv = tf.topologies.build("k_peer_exponential:n=27,k=2")
    assert isinstance(tv, tf.TimeVarying) and tv.period == 3
    s = tf.spectral.summary(tv)
    assert (s["period"], s["finite_time_consensus"], s["strongly_connected"]) == (3, 3, True)
    assert s["effective_neighbors_method"] == "periodic"
    with pytest.raises(ValueError, match="no closed form"):
        tf.spectral.expected_mixing(tv)  # deterministic periodic: no distribution to average
    tv = tf.topologies.build("k_peer_exponential:n=8,k=3,period=exact")
    assert tv.period == 2 and tf.spectral.summary(tv)["finite_time_consensus"] == 2
    assert tf.spectral.summary(tf.topologies.build("k_peer_exponential:n=8,k=3"))[
        "finite_time_consensus"] is None


@pytest.mark.parametrize("bad", [{"n": 1}, {"n": 5, "k": 0}, {"n": 5, "k": 5}, {"n": 2.5},
                                 {"n": 5, "period": "floor"}, {"n": 5, "period": 1}])
def test_bad_input(bad: dict) -> None:
    with pytest.raises((TypeError, ValueError)):
        k_peer_exponential(**bad)
