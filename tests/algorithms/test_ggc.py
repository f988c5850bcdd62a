"""GGC and BGGC (DPFL's Algorithms 2 and 3): by hand, Theorem 1 (GGC = BGGC), batched =
per-client, the budget, the aggregation matrix of eq. (4)."""

from __future__ import annotations

import itertools
import math
import sys
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topofl.algorithms import bggc, ggc
from topofl.algorithms.ggc import aggregation_matrix, bggc_batched, ggc_batched

D = torch.float64
fs = frozenset

# --------------------------------------------------------------------------- loss oracles


def _table(n: int, k: int, rng: np.random.Generator, discrete: bool) -> dict[frozenset[int], float]:
    """A loss for every subset of range(n) that holds k (discrete values give ties, zero gains)."""
    others = [i for i in range(n) if i != k]
    out = {}
    for r in range(len(others) + 1):
        for c in itertools.combinations(others, r):
            v = float(rng.integers(0, 3)) / 2 if discrete else float(rng.normal())
            out[fs((k, *c))] = v
    return out


def _support(w: torch.Tensor) -> frozenset[int]:
    return fs(torch.nonzero(w).flatten().tolist())


def _onehot(n: int) -> torch.Tensor:
    # one-hot "models": the weighted average of a set is supported exactly on that set, also
    # through BGGC's running sums (adding p_j e_j, then removing it, leaves an exact 0)
    return torch.eye(n, dtype=D)


def _table_losses(tables: list[dict[frozenset[int], float]]) -> Any:
    def losses(z: torch.Tensor) -> torch.Tensor:
        return torch.tensor([tables[k][_support(z[k])] for k in range(z.shape[0])], dtype=D)

    return losses


# --------------------------------------------------------------------------- GGC by hand

SYNERGY = {fs({0}): 1.0, fs({0, 1}): 1.1, fs({0, 2}): 1.1, fs({0, 1, 2}): 0.8}
HARMFUL = {fs({0}): 1.0, fs({0, 1}): 0.5, fs({0, 2}): 2.0, fs({0, 1, 2}): 1.5}


@pytest.mark.parametrize("seed", range(12))
def test_ggc_keeps_a_synergistic_pair(seed: int) -> None:
    # Appendix A: 1 alone and 2 alone hurt client 0, {1, 2} together help. Order (1, 2): a = 0
    # and b = max(R({0,2}) - R({0,1,2}), 0) = 0, so p = 1 and 1 is added; then a = 0.3 > 0 = b.
    assert ggc(0, [1, 2], SYNERGY.__getitem__, seed=seed) == {1, 2}
    p = torch.tensor([1.0, 2.0, 3.0], dtype=D)
    assert bggc(0, [1, 2], _onehot(3), p, lambda w: SYNERGY[_support(w)], seed=seed) == {1, 2}


@pytest.mark.parametrize("seed", range(12))
def test_ggc_drops_a_harmful_client(seed: int) -> None:
    # order (1, 2): a = 0.5, b = 0 -> add 1; then a = 0, b = 1 -> remove 2.
    # order (2, 1): a = 0, b = 1 -> remove 2; then a = 0.5, b = 0 -> add 1.
    assert ggc(0, [1, 2], HARMFUL.__getitem__, seed=seed) == {1}


def test_zero_gains_fill_the_budget_in_the_shuffled_order() -> None:
    S = [1, 3, 4, 6, 7]
    for seed in range(5):
        perm = np.random.default_rng(seed).permutation(len(S))
        for budget in (1, 2, 4, 5, 9, None, math.inf):
            got = ggc(0, S, lambda X: 1.0, budget=budget, seed=seed)
            m = len(S) if budget is None or budget == math.inf else min(int(budget), len(S))
            assert got == {S[i] for i in perm[:m]}


def test_coin_flip_has_probability_a_over_a_plus_b() -> None:
    # With B_c = 1 only the first addition counts. Order (1, 2) (prob. 1/2): a = 0.3, b = 0.1,
    # p = 0.75 for 1; if 1 is refused, 2 is added (a = 0.2, b = 0). Order (2, 1): a = b = 0.2,
    # p = 1/2 for 2; if refused, 1 is added. P(C = {1}) = 0.5 * 0.75 + 0.5 * 0.5 = 0.625.
    L = {fs({0}): 1.0, fs({0, 1}): 0.7, fs({0, 2}): 0.8, fs({0, 1, 2}): 0.9}
    runs = 3000
    got = [ggc(0, [1, 2], L.__getitem__, budget=1, seed=s) for s in range(runs)]
    assert all(len(c) == 1 for c in got)
    freq = sum(c == {1} for c in got) / runs
    assert abs(freq - 0.625) < 4 * math.sqrt(0.625 * 0.375 / runs)


def test_empty_candidates_and_oracle_calls() -> None:
    calls: list[frozenset[int]] = []

    def loss(X: frozenset[int]) -> float:
        calls.append(X)
        return float(len(X))

    assert ggc(2, [], loss, seed=0) == frozenset()
    assert calls == []
    ggc(0, [1, 2, 3], loss, seed=0)
    assert len(calls) == 4 * 3  # R(X), R(X+j), R(Y), R(Y-j) per decision (Algorithm 2)
    assert all(0 in X for X in calls)


# --------------------------------------------------------------------------- Theorem 1


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 7), data_seed=st.integers(0, 2**32 - 1), seed=st.integers(0, 2**32 - 1),
       budget=st.one_of(st.none(), st.integers(1, 7)), discrete=st.booleans())
def test_theorem1_ggc_equals_bggc_on_loss_tables(n: int, data_seed: int, seed: int,
                                                 budget: int | None, discrete: bool) -> None:
    rng = np.random.default_rng(data_seed)
    k = int(rng.integers(n))
    S = [j for j in range(n) if j != k and rng.random() < 0.8]
    table = _table(n, k, rng, discrete)
    p = torch.tensor(rng.integers(1, 50, size=n), dtype=D)
    a = ggc(k, S, table.__getitem__, budget=budget, seed=seed)
    b = bggc(k, S, _onehot(n), p, lambda w: table[_support(w)], budget=budget, seed=seed)
    assert a == b
    assert a <= set(S) and k not in a
    assert budget is None or len(a) <= budget


@pytest.mark.parametrize("seed", range(20))
def test_theorem1_ggc_equals_bggc_on_dense_models(seed: int) -> None:
    # real parameter vectors and a smooth non-convex validation loss: GGC averages afresh,
    # BGGC keeps running sums; both see the same rewards (up to the last bits) and decide alike
    rng = np.random.default_rng(seed)
    n, P = 7, 5
    x = torch.tensor(rng.normal(size=(n, P)), dtype=D)
    p = torch.tensor(rng.integers(5, 100, size=n), dtype=D)
    c = torch.tensor(rng.normal(size=P), dtype=D)

    def loss(w: torch.Tensor) -> float:
        return float(((w - c) ** 2).sum() + torch.sin(3 * w).sum())

    def set_loss(X: frozenset[int]) -> float:
        idx = sorted(X)
        return loss((p[idx, None] * x[idx]).sum(0) / p[idx].sum())

    k = seed % n
    S = [j for j in range(n) if j != k]
    for budget in (1, 2, 3, None):
        a = ggc(k, S, set_loss, budget=budget, seed=seed)
        assert a == bggc(k, S, x, p, loss, budget=budget, seed=seed)
        assert budget is None or len(a) <= budget


# --------------------------------------------------------------------------- batched = pure


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 6), data_seed=st.integers(0, 2**32 - 1),
       budget=st.one_of(st.none(), st.integers(1, 6)), discrete=st.booleans())
def test_batched_equals_per_client_and_respects_the_budget(n: int, data_seed: int,
                                                           budget: int | None,
                                                           discrete: bool) -> None:
    rng = np.random.default_rng(data_seed)
    cand = torch.tensor(rng.random((n, n)) < 0.7) & ~torch.eye(n, dtype=torch.bool)
    tables = [_table(n, k, rng, discrete) for k in range(n)]
    p = torch.tensor(rng.integers(1, 30, size=n), dtype=D)
    seeds = [int(s) for s in rng.integers(0, 2**31, size=n)]
    C = ggc_batched(_onehot(n), cand, p, _table_losses(tables), budget=budget, seeds=seeds)
    omega = bggc_batched(_onehot(n), cand, p, _table_losses(tables), budget=budget, seeds=seeds)
    for k in range(n):
        S = torch.nonzero(cand[k]).flatten().tolist()
        ref = ggc(k, S, tables[k].__getitem__, budget=budget, seed=seeds[k])
        assert set(torch.nonzero(C[k]).flatten().tolist()) == ref
        assert set(torch.nonzero(omega[k]).flatten().tolist()) == ref  # Theorem 1 as well
    for M in (C, omega):
        assert M.dtype == torch.bool and M.shape == (n, n)
        assert not bool(M.diagonal().any())
        assert bool((M <= cand).all())
        assert budget is None or int(M.sum(1).max()) <= budget


@pytest.mark.parametrize("seed", range(6))
def test_batched_equals_per_client_on_dense_models(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    n, P = 6, 4
    x = torch.tensor(rng.normal(size=(n, P)), dtype=D)
    p = torch.tensor(rng.integers(5, 60, size=n), dtype=D)
    c = torch.tensor(rng.normal(size=(n, P)), dtype=D)
    cand = torch.tensor(rng.random((n, n)) < 0.8) & ~torch.eye(n, dtype=torch.bool)
    seeds = [seed * 10 + k for k in range(n)]

    def losses(z: torch.Tensor) -> torch.Tensor:  # row k scored by client k
        return ((z - c) ** 2).sum(1) + torch.sin(3 * z).sum(1)

    def loss_k(k: int) -> Any:
        return lambda w: float(((w - c[k]) ** 2).sum() + torch.sin(3 * w).sum())

    def fresh(k: int) -> Any:
        def f(X: frozenset[int]) -> float:
            idx = sorted(X)
            return float(loss_k(k)((p[idx, None] * x[idx]).sum(0) / p[idx].sum()))
        return f

    for budget in (1, 3, None):
        C = ggc_batched(x, cand, p, losses, budget=budget, seeds=seeds)
        omega = bggc_batched(x, cand, p, losses, budget=budget, seeds=seeds)
        for k in range(n):
            S = torch.nonzero(cand[k]).flatten().tolist()
            assert set(torch.nonzero(C[k]).flatten().tolist()) == ggc(
                k, S, fresh(k), budget=budget, seed=seeds[k])
            assert set(torch.nonzero(omega[k]).flatten().tolist()) == bggc(
                k, S, x, p, loss_k(k), budget=budget, seed=seeds[k])


def test_aggregation_matrix_is_eq4() -> None:
    C = torch.tensor([[0, 1, 1], [0, 0, 0], [1, 0, 0]], dtype=torch.bool)
    p = torch.tensor([2.0, 1.0, 5.0], dtype=D)
    W = aggregation_matrix(C, p)
    ref = torch.tensor([[2 / 8, 1 / 8, 5 / 8], [0, 1, 0], [2 / 7, 0, 5 / 7]], dtype=D)
    torch.testing.assert_close(W, ref, rtol=0, atol=1e-15)


# --------------------------------------------------------------------------- bad input


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="B_c"):
        ggc(0, [1], lambda X: 0.0, budget=0, seed=0)
    with pytest.raises(ValueError, match="contain client 1"):
        ggc(1, [0, 1], lambda X: 0.0, seed=0)
    eye = torch.eye(3, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"candidates\[k, k\] must be False"):
        ggc_batched(torch.zeros(3, 2), eye, torch.ones(3), lambda z: z.sum(1), seeds=[0, 1, 2])
    with pytest.raises(ValueError, match="one seed per client"):
        ggc_batched(torch.zeros(3, 2), ~eye, torch.ones(3), lambda z: z.sum(1), seeds=[0])


def test_the_module_needs_no_engine() -> None:
    import ast
    import inspect

    module = sys.modules["topofl.algorithms.ggc"]  # tf.algorithms.ggc is the function
    tree = ast.parse(inspect.getsource(module))
    imported = {a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                for a in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert {m for m in imported if m.startswith("topofl")} == {
        "topofl._utils.callables", "topofl._utils.rng", "topofl._utils.validation"}
