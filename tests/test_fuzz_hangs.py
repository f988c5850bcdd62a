"""Inputs a fuzzer found to hang or to slip past validation: each is refused at once, with a
message that says what was expected and what was found."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import topofl.spectral as S
import topofl.topologies as T
from topofl.exceptions import InsufficientMemoryError

HUGE = 10**12
_NOT_BOOL: Any = "x"  # a truthy str where a bool is expected


# 1. D-Cliques' paper small world with a huge c -------------------------------------------
def test_connect_cliques_small_world_huge_c_refused() -> None:
    with pytest.raises(ValueError, match=r"c=1000000000000 on 2 cliques.*at most"):
        T.connect_cliques([[0, 1], [2, 3]], c=HUGE, inter="small_world", seed=0)


def test_dcliques_small_world_huge_c_refused() -> None:
    labels = np.eye(5)[np.arange(20) % 5]
    with pytest.raises(ValueError, match=r"dcliques with inter='small_world' and c=10+"):
        T.dcliques(labels, clique_size=5, inter="small_world", c=HUGE, seed=0)


def test_dcliques_spec_small_world_huge_c_refused() -> None:
    with pytest.raises(ValueError, match=r"inter='small_world' and c=10+"):
        T.build("dcliques:n=20,clique_size=5,inter=small_world,c=1000000000000", seed=0)


def test_small_world_moderate_c_still_builds() -> None:
    t = T.connect_cliques([[0, 1], [2, 3]], c=1000, inter="small_world", seed=0)
    assert t.n == 4 and t.params["c"] == 1000


# 2. periodic_averaging with a huge every ------------------------------------------------
def test_summary_huge_period_refused() -> None:
    with pytest.raises(ValueError, match=r"1,000,000,000,000 rounds of its period"):
        S.summary(T.periodic_averaging(T.ring(4), every=HUGE))


def test_random_walk_variance_huge_period_refused() -> None:
    tv = T.periodic_averaging(T.ring(4), every=HUGE)
    with pytest.raises(ValueError, match=r"random_walk_variance.*rounds of its period"):
        S.random_walk_variance(tv)
    with pytest.raises(ValueError, match=r"rounds of its period"):
        S.effective_neighbors(tv, rounds=50)


def test_mixing_product_huge_period_refused() -> None:
    tv = T.periodic_averaging(T.ring(4), every=HUGE)
    with pytest.raises(ValueError, match=r"period=1000000000000 rounds"):
        S.mixing_product(tv, 0, 3 * HUGE)


def test_summary_moderate_period_unchanged() -> None:
    s = S.summary(T.periodic_averaging(T.ring(4), every=3))
    assert s["period"] == 3 and s["finite_time_consensus"] == 3


# 3. one_peer_exponential with a huge n; mixing_product of an empty range ------------------
@pytest.mark.parametrize("n", [HUGE, 2**70])
def test_one_peer_exponential_huge_n_refused(n: int) -> None:
    with pytest.raises(InsufficientMemoryError, match=rf"one_peer_exponential\(n={n}\)"):
        T.one_peer_exponential(n)


def test_mixing_product_empty_range_counts_result(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOPOFL_MEMORY_LIMIT", "1000000")
    with pytest.raises(InsufficientMemoryError, match=r"dense \(1000, 1000\) product"):
        S.mixing_product(T.ring(1000), 0, 0)


# 4. bool flags ----------------------------------------------------------------------------
def test_algebraic_connectivity_weighted_must_be_bool() -> None:
    with pytest.raises(TypeError, match=r"weighted must be a bool .*got str 'x'"):
        S.algebraic_connectivity(T.ring(5), weighted=_NOT_BOOL)


@pytest.mark.parametrize("flag", ["measured", "progress"])
def test_summary_flags_must_be_bool(flag: str) -> None:
    with pytest.raises(TypeError, match=rf"{flag} must be a bool .*got str 'x'"):
        kwargs: dict[str, Any] = {flag: _NOT_BOOL}
        S.summary(T.ring(5), **kwargs)


def test_random_walk_variance_per_node_must_be_bool() -> None:
    with pytest.raises(TypeError, match=r"per_node must be a bool .*got str 'x'"):
        S.random_walk_variance(T.ring(5), per_node=_NOT_BOOL)
