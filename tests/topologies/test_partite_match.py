"""The (k+1)-partite random match graph (Niwa, Zhang, Takezawa, Kleijn, NeurIPS 2025, (C4)).

Checked against a reference written apart from the construction (``W`` filled entry by entry
from the round's permutation, with loops); on every round: doubly stochastic, symmetric,
idempotent, and block structure (the nodes fall into disjoint groups, ``n // (k+1)`` of size
``k + 1`` and one of size ``n mod (k+1)`` when that is not 0, each averaged exactly); ``k = 1``
against :func:`random_matching` (equal, entry for entry); the seed rules; bad input; the
second moments against an enumeration of every permutation and against the empirical mean over
many seeds; the expected consensus contraction against a Monte Carlo run; and the spectral
summary's closed form.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl._utils.rng import as_seed_sequence, generator_at
from topofl.spectral import expected_mixing, random_walk_variance, summary
from topofl.topologies import REGISTRY, partite_match, random_matching


# ---------------------------------------------------------------- references
def reference_matrix(perm: Sequence[int] | np.ndarray, k: int) -> np.ndarray:
    """The paper's steps i)-iii) with loops: cut the permuted order into subgroups of k + 1
    consecutive nodes (the ones left over form one last, smaller subgroup) and give every
    pair of a subgroup (a node and itself included) the weight 1/size."""
    n = len(perm)
    W = np.zeros((n, n))
    groups: list[list[int]] = []
    for pos, node in enumerate(perm):
        if pos % (k + 1) == 0:
            groups.append([])
        groups[-1].append(int(node))
    for grp in groups:
        for i in grp:
            for j in grp:
                W[i, j] = 1.0 / len(grp)
    return W


def round_perm(seed: int, t: int, n: int) -> np.ndarray:
    """The permutation the docstring says round ``t`` draws."""
    return generator_at(as_seed_sequence(seed), t).permutation(n)


def groups_of(W: np.ndarray) -> list[frozenset[int]]:
    """The support of each row, as sets (the classes of "i and j share a group")."""
    return [frozenset(np.flatnonzero(W[i]).tolist()) for i in range(W.shape[0])]


def check_round(W: np.ndarray, n: int, k: int) -> None:
    """Every invariant of one round."""
    assert W.shape == (n, n)
    np.testing.assert_allclose(W.sum(axis=0), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(W, W.T)
    np.testing.assert_allclose(W @ W, W, rtol=0, atol=1e-12)  # a projection
    rows = groups_of(W)
    classes = set(rows)
    # every node in exactly one group: the supports are disjoint and cover the nodes
    assert sum(len(c) for c in classes) == n
    assert set().union(*classes) == set(range(n))
    for i, grp in enumerate(rows):
        assert i in grp
        assert all(rows[j] == grp for j in grp)
        np.testing.assert_array_equal(W[i, sorted(grp)], 1.0 / len(grp))  # block 1/size
    sizes = sorted((len(c) for c in classes), reverse=True)
    r = n % (k + 1)
    assert sizes == [k + 1] * (n // (k + 1)) + ([r] if r else [])


# ---------------------------------------------------------------- structure
@pytest.mark.parametrize(("n", "k"), [(2, 1), (3, 1), (7, 2), (9, 2), (15, 2), (17, 2),
                                      (30, 2), (10, 3), (31, 4), (8, 7), (12, 11)])
def test_rounds_equal_the_reference_and_keep_the_invariants(n: int, k: int) -> None:
    tv = partite_match(n, k, seed=5)
    for t in range(6):
        g = tv.at(t)
        W = g.to_dense()
        np.testing.assert_array_equal(W, reference_matrix(round_perm(5, t, n), k))
        check_round(W, n, k)
        assert g.is_doubly_stochastic and g.is_symmetric and g.is_undirected
        assert g.name == "partite_match" and g.params["round"] == t
        assert g.weights == "metropolis"
        np.testing.assert_allclose(tf.mixing.metropolis(g.graph).toarray(), W, atol=1e-15)
        assert g.in_degree.max() == k  # k peers, fewer only in the remainder group


def test_the_reference_on_a_hand_example() -> None:
    # order 4 0 3 | 1 2 : groups {0, 3, 4} (1/3 each) and the remainder {1, 2} (1/2 each)
    W = reference_matrix([4, 0, 3, 1, 2], 2)
    third, half = 1.0 / 3.0, 0.5
    assert W[0, 3] == W[3, 4] == W[4, 4] == third
    assert W[1, 2] == W[2, 1] == W[1, 1] == half
    assert W[0, 1] == W[2, 4] == 0.0


def test_k_equal_n_minus_1_is_the_exact_average() -> None:
    W = partite_match(6, 5, seed=0).at(3).to_dense()
    np.testing.assert_allclose(W, np.full((6, 6), 1.0 / 6.0), rtol=0, atol=1e-15)


@pytest.mark.parametrize("n", [2, 3, 8, 9, 31])
@pytest.mark.parametrize("seed", [0, 3])
def test_k1_is_random_matching(n: int, seed: int) -> None:
    pm, rm = partite_match(n, 1, seed=seed), random_matching(n, seed=seed)
    for t in (0, 1, 7, 40):
        a, b = pm.at(t), rm.at(t)
        assert a.W.shape == b.W.shape and (a.W != b.W).nnz == 0
        assert a.weights == b.weights
    assert expected_mixing(pm).as_dict() | {"family": ""} == (
        expected_mixing(rm).as_dict() | {"family": ""})


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 64), data=st.data(), seed=st.integers(0, 2**32 - 1),
       t=st.integers(0, 10**6))
def test_property_every_round_is_a_partition_averaged_exactly(
        n: int, data: st.DataObject, seed: int, t: int) -> None:
    k = data.draw(st.integers(1, n - 1), label="k")
    W = partite_match(n, k, seed=seed).at(t).to_dense()
    check_round(W, n, k)
    np.testing.assert_array_equal(W, reference_matrix(round_perm(seed, t, n), k))


# ---------------------------------------------------------------- randomness
def test_same_seed_same_sequence_in_any_order() -> None:
    a = partite_match(20, 3, seed=11)
    b = partite_match(20, 3, seed=11)
    late_first = [b.at(t).W for t in (9, 3, 0)]
    for W, t in zip(late_first, (9, 3, 0)):
        assert (W != a.at(t).W).nnz == 0


def test_different_seeds_and_rounds_differ() -> None:
    a = partite_match(20, 3, seed=11)
    assert (a.at(0).W != a.at(1).W).nnz > 0
    assert (a.at(0).W != partite_match(20, 3, seed=12).at(0).W).nnz > 0
    patterns = {tuple(sorted(groups_of(partite_match(20, 3, seed=s).at(0).to_dense()),
                             key=min)) for s in range(8)}
    assert len(patterns) == 8


def test_generator_seed_is_consumed_once() -> None:
    rng = np.random.default_rng(4)
    tv = partite_match(10, 2, seed=rng)
    first = tv.at(5).W.copy()
    rng.random(100)  # using the generator afterwards does not change the sequence
    tv._cache.clear()
    assert (tv.at(5).W != first).nnz == 0
    assert tv.params["seed"] is None and partite_match(10, 2, seed=7).params["seed"] == 7


# ---------------------------------------------------------------- bad input
_untyped: Any = partite_match  # the calls below break its signature on purpose

@pytest.mark.parametrize(
    ("call", "exc", "msg"),
    [
        (lambda: _untyped(1, 1, seed=0), ValueError, r"n must be >= 2, got 1"),
        (lambda: _untyped(0, 1, seed=0), ValueError, r"n must be >= 2, got 0"),
        (lambda: _untyped(-3, 1, seed=0), ValueError, r"n must be >= 2, got -3"),
        (lambda: _untyped(5, 0, seed=0), ValueError, r"k must be in \[1, 4\], got 0"),
        (lambda: _untyped(5, 5, seed=0), ValueError, r"k must be in \[1, 4\], got 5"),
        (lambda: _untyped(5, -1, seed=0), ValueError, r"k must be in \[1, 4\], got -1"),
        (lambda: _untyped(5.0, 2, seed=0), TypeError, "n must be an int, got float 5.0"),
        (lambda: _untyped(5, 2.0, seed=0), TypeError, "k must be an int, got float 2.0"),
        (lambda: _untyped("5", 2, seed=0), TypeError, "n must be an int, got str"),
        (lambda: _untyped(None, 2, seed=0), TypeError, "n must be an int"),
        (lambda: _untyped(True, 1, seed=0), TypeError, "n must be an int, got bool"),
        (lambda: _untyped(5, True, seed=0), TypeError, "k must be an int, got bool"),
        (lambda: _untyped(5, 2, seed=None), TypeError, "seed"),
        (lambda: _untyped(5, 2, seed=1.5), TypeError, "seed"),
        (lambda: _untyped(5, 2), TypeError, "seed"),
        (lambda: _untyped(5, 2, 0), TypeError, "positional"),
    ],
)
def test_bad_input_is_refused_in_one_line(call: object, exc: type, msg: str) -> None:
    with pytest.raises(exc, match=msg) as info:
        call()  # type: ignore[operator]
    assert "\n" not in str(info.value)


# ---------------------------------------------------------------- registry and specs
def test_registry_entry_and_spec() -> None:
    fam = REGISTRY["partite_match"]
    assert fam.func is partite_match and tf.topologies.partite_match is partite_match
    assert fam.random and fam.time_varying and fam.connected and fam.undirected
    assert fam.stochastic == "doubly"
    assert fam.example(1, np.random.default_rng(0)) is None
    built = tf.topologies.build("partite_match:n=15,k=2", seed=3)
    assert isinstance(built, tf.TimeVarying) and built.params == {"n": 15, "k": 2, "seed": 3}
    assert (built.at(2).W != partite_match(15, 2, seed=3).at(2).W).nnz == 0
    with pytest.raises(ValueError, match="k"):
        tf.topologies.build("partite_match:n=5,k=5", seed=0)
    assert "partite_match" in fam.describe() and "k+1" in fam.describe()


# ---------------------------------------------------------------- second moments
def exact_moments(n: int, k: int) -> tuple[float, float, float]:
    """c, d, d' of the schedule, averaged over every permutation of the nodes."""
    Ws = [reference_matrix(p, k) for p in itertools.permutations(range(n))]
    off = ~np.eye(n, dtype=bool)
    WW = np.mean([W @ W.T for W in Ws], axis=0)
    WtW = np.mean([W.T @ W for W in Ws], axis=0)
    return float(np.mean(np.diag(WW))), float(np.mean(WW[off])), float(np.mean(WtW[off]))


@pytest.mark.parametrize(("n", "k"), [(3, 2), (4, 1), (4, 2), (5, 2), (6, 2), (6, 3), (7, 2),
                                      (7, 3)])
def test_closed_form_moments_equal_every_permutation(n: int, k: int) -> None:
    m = expected_mixing(partite_match(n, k, seed=0))
    assert (m.row_self, m.row_cross, m.col_cross) == pytest.approx(exact_moments(n, k),
                                                                   rel=1e-12)
    groups = math.ceil(n / (k + 1))
    assert m.row_self == pytest.approx(groups / n, rel=1e-15)
    assert m.consensus_contraction == pytest.approx((groups - 1) / (n - 1), rel=1e-12)
    assert m.family == "partite_match"


@pytest.mark.parametrize(("n", "k"), [(12, 2), (11, 2)])
def test_expected_w_over_many_seeds(n: int, k: int) -> None:
    """E[W^T W] = E[W] (every round is a projection); E[W] = c I + (1-c)/(n-1) (11^T - I),
    c = ceil(n/(k+1))/n: 1/(k+1) and k/((k+1)(n-1)) when (k+1) | n. 4000 seeds; an
    off-diagonal entry is 1/3 (or 1/2 in the remainder pair at n = 11) with probability about
    k/(n-1): a standard error below 2.5e-3 per entry; every entry within 5 of its standard
    errors (1.25e-2), their mean within 5e-4."""
    draws = 4000
    mats = np.stack([partite_match(n, k, seed=s).at(0).to_dense() for s in range(draws)])
    mean_w = mats.mean(axis=0)
    mean_wtw = np.einsum("sji,sjk->ik", mats, mats) / draws
    np.testing.assert_allclose(mean_wtw, mean_w, rtol=0, atol=1e-12)
    c = math.ceil(n / (k + 1)) / n
    off_value = (1.0 - c) / (n - 1)
    if n % (k + 1) == 0:
        assert c == pytest.approx(1.0 / (k + 1)) and off_value == pytest.approx(
            k / ((k + 1) * (n - 1)))
        np.testing.assert_allclose(np.diag(mean_w), 1.0 / (k + 1), rtol=0, atol=1e-12)
    off = ~np.eye(n, dtype=bool)
    se = np.sqrt(mats.var(axis=0, ddof=1) / draws)
    assert se[off].max() < 2.5e-3
    assert np.all(np.abs(mean_w[off] - off_value) <= 5 * se[off])
    assert abs(mean_w[off].mean() - off_value) < 5e-4
    assert abs(np.diag(mean_w).mean() - c) < 5e-3


def test_expected_consensus_contraction_monte_carlo() -> None:
    """E||W(t-1) ... W(0) x||^2 = beta^t ||x||^2 for every x orthogonal to 1, the rounds being
    independent: 3000 seeds at (15, 2), beta = 4/14, within 5 standard errors."""
    n, k, rounds, draws = 15, 2, 3, 3000
    beta = expected_mixing(partite_match(n, k, seed=0)).consensus_contraction
    assert beta == pytest.approx(4 / 14, rel=1e-12)
    x0 = np.random.default_rng(0).standard_normal(n)
    x0 -= x0.mean()
    x0 /= np.linalg.norm(x0)
    errs = np.empty((draws, rounds))
    for s in range(draws):
        tv, x = partite_match(n, k, seed=s), x0
        for t in range(rounds):
            x = tv.at(t).W @ x
            errs[s, t] = x @ x
    mean, se = errs.mean(axis=0), errs.std(axis=0, ddof=1) / math.sqrt(draws)
    for t in range(rounds):
        assert abs(mean[t] - beta ** (t + 1)) <= 5 * se[t], (t, mean[t], beta ** (t + 1))


# ---------------------------------------------------------------- spectral functions
def test_summary_uses_the_closed_form_with_random_matchings_keys() -> None:
    s = summary(partite_match(15, 2, seed=0), seed=0)
    assert s.keys() == summary(random_matching(15, seed=0), seed=0).keys()
    assert s["effective_neighbors_method"] == "closed_form"
    m = expected_mixing(partite_match(15, 2, seed=0))
    assert s["effective_neighbors"] == pytest.approx(m.effective_neighbors(), rel=1e-12)
    assert s["time_varying"] and s["period"] is None and s["stochastic"] == "doubly"


def test_closed_form_equals_the_monte_carlo_random_walk() -> None:
    tv = partite_match(10, 2, seed=1)
    exact = random_walk_variance(tv, 0.9)
    assert exact.method == "closed_form" and exact.exact
    unknown = tf.TimeVarying(tv.n, tv.at, name="custom", params={})
    mc = random_walk_variance(unknown, 0.9, rounds=2000)
    assert mc.method == "monte_carlo" and mc.stderr is not None
    assert abs(mc.mean_variance - exact.mean_variance) < 5 * mc.stderr
    assert mc.stderr < 0.02 * exact.mean_variance
