"""The band kernel compiled with Numba (``topofl.engine._band_jit``): against ``W @ X``, against
torch's band kernel and a plain-Python loop (to rounding), in place on column slices, row
weights, bands reaching one way only, bands too wide to write out, non-finite rows kept to
their neighbours, and its errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.engine import _band_jit, gossip
from topofl.engine.gossip import Mixer, band_plan

CPU = torch.device("cpu")


def _pattern(n: int, offsets: list[int], seed: int | None = None) -> tf.Topology:
    """Every row ``i`` with entries at ``i + d`` (mod n): weights per row when ``seed`` is
    given, else the same weight ``1 / k`` on every entry."""
    k = len(offsets)
    rows = np.repeat(np.arange(n), k)
    cols = (rows + np.tile(offsets, n)) % n
    data = (np.full(n * k, 1 / k) if seed is None else
            np.random.default_rng(seed).uniform(0.1, 1.0, n * k))
    return tf.Topology.from_matrix(sp.csr_array((data, (rows, cols)), shape=(n, n)),
                                   name="pattern")


GRAPHS = {
    "ring": lambda: tf.topologies.ring(101),
    "circulant [1,2,3]": lambda: tf.topologies.circulant(130, [1, 2, 3]),
    "weights per row": lambda: _pattern(97, [-2, 0, 1], seed=3),
    "forward only": lambda: _pattern(64, [0, 1, 2]),
    "backward only": lambda: _pattern(64, [-3, -1, 0], seed=1),
    "one-peer round": lambda: tf.topologies.k_peer_exponential(128, 1).at(3),
}


def _x(n: int, p: int, dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, p, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def test_numba_is_installed() -> None:
    # a dependency of the package: the default band kernel at scale is the compiled one
    assert _band_jit.available()


def test_by_default_the_compiled_kernel_runs_from_one_gib(monkeypatch: Any) -> None:
    """``jit=None`` compiles only on buffers of ``JIT_MIN_BYTES`` or more (Numba and LLVM
    take about 0.4 GB once a process); ``jit=False`` never."""
    calls: list[int] = []
    band = _band_jit.band_
    monkeypatch.setattr(_band_jit, "band_", lambda *a, **k: calls.append(1) or band(*a, **k))
    topo = tf.topologies.ring(64)
    X = _x(64, 32, torch.float64)
    Mixer(CPU, torch.float64, band_min_n=0).mix_(topo, X)
    assert not calls
    monkeypatch.setattr(gossip, "JIT_MIN_BYTES", 64 * 32 * 8)
    ref = topo.to_dense() @ X.numpy()
    Mixer(CPU, torch.float64, band_min_n=0).mix_(topo, X)
    assert calls == [1]
    np.testing.assert_allclose(X.numpy(), ref, rtol=1e-12, atol=1e-12)
    Mixer(CPU, torch.float64, band_min_n=0, jit=False).mix_(topo, X)
    assert calls == [1]


@pytest.mark.parametrize("name", list(GRAPHS))
@pytest.mark.parametrize("p", [16, 33, 650])
@pytest.mark.parametrize("part", [False, True])
def test_compiled_band_equals_the_dense_product(name: str, p: int, part: bool) -> None:
    """``W @ X`` to 1e-12 in float64, on a column slice of a larger buffer too (the columns
    around it untouched)."""
    topo = GRAPHS[name]()
    assert band_plan(topo.W) is not None
    big = _x(topo.n, p + 7, torch.float64, seed=p)
    X = big[:, 3: 3 + p] if part else big[:, :p]
    before = big.clone()
    ref = topo.to_dense() @ X.numpy()
    mixer = Mixer(CPU, torch.float64, band_min_n=0, jit=True)
    assert mixer.kernel(topo) == "band"
    mixer.mix_(topo, X)
    np.testing.assert_allclose(X.numpy(), ref, rtol=1e-12, atol=1e-12)
    if part:
        np.testing.assert_array_equal(big[:, :3].numpy(), before[:, :3].numpy())
        np.testing.assert_array_equal(big[:, 3 + p:].numpy(), before[:, 3 + p:].numpy())


@pytest.mark.parametrize("name", list(GRAPHS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_compiled_band_against_torchs_band_kernel(name: str, dtype: torch.dtype) -> None:
    """The same sums in the same order, products and sums possibly fused: equal to rounding."""
    topo = GRAPHS[name]()
    X = _x(topo.n, 650, dtype, seed=1)
    a, b = X.clone(), X.clone()
    Mixer(CPU, dtype, band_min_n=0, jit=True).mix_(topo, a)
    Mixer(CPU, dtype, band_min_n=0, jit=False).mix_(topo, b)
    tol = 1e-6 if dtype == torch.float32 else 1e-14
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol, atol=tol)


def test_wider_bands_take_the_generic_loop() -> None:
    """More than ``MAX_K`` offsets a row: the generic compiled loop, still ``W @ X``."""
    offsets = list(range(-8, 9))
    assert len(offsets) > _band_jit.MAX_K
    topo = _pattern(300, offsets, seed=4)
    X = _x(300, 40, torch.float64, seed=3)
    ref = topo.to_dense() @ X.numpy()
    Mixer(CPU, torch.float64, band_min_n=0, jit=True).mix_(topo, X)
    np.testing.assert_allclose(X.numpy(), ref, rtol=1e-12, atol=1e-12)
    assert _band_jit.MAX_K + 1 in _band_jit._KERNELS


def test_compiled_band_equals_the_plain_python_loop() -> None:
    """The generic loop run as plain Python (the slow obvious reference) and the compiled
    kernel written out for ``k = 3`` agree in float64 on a small band with row weights, to the
    rounding of the compiled loop's fused multiply-adds."""
    topo = _pattern(48, [-1, 0, 2], seed=5)
    plan = band_plan(topo.W)
    assert plan is not None and plan.row_weights is not None
    X = _x(48, 5, torch.float64, seed=2).numpy()
    slow = X.copy()
    head = slow[: plan.trail].copy()
    _band_jit._band_rows(slow, np.asarray(plan.deltas), plan.row_weights.numpy(), head,
                         np.empty((plan.lead + 1, 5)))
    fast = X.copy()
    _band_jit.band_(fast, plan.deltas, plan.row_weights.numpy(), plan.lead, plan.trail)
    np.testing.assert_allclose(fast, slow, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(fast, topo.to_dense() @ X, rtol=1e-13, atol=1e-13)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(40, 200), p=st.integers(16, 80),
       offsets=st.sets(st.integers(-2, 2), min_size=1, max_size=5), seed=st.integers(0, 99),
       rows=st.booleans())
def test_compiled_band_hypothesis(n: int, p: int, offsets: set[int], seed: int,
                                  rows: bool) -> None:
    topo = _pattern(n, sorted(offsets), seed=seed if rows else None)
    X = _x(n, p, torch.float64, seed=seed)
    ref = topo.to_dense() @ X.numpy()
    Mixer(CPU, torch.float64, band_min_n=0, jit=True).mix_(topo, X)
    np.testing.assert_allclose(X.numpy(), ref, rtol=1e-12, atol=1e-12)


def test_a_nan_row_reaches_only_its_neighbours() -> None:
    topo = tf.topologies.ring(64)
    X = _x(64, 32, torch.float32)
    X[10, 3] = float("nan")
    Mixer(CPU, torch.float32, band_min_n=0, jit=True).mix_(topo, X)
    bad = torch.isnan(X).any(dim=1).nonzero().flatten().tolist()
    assert bad == [9, 10, 11]


@pytest.fixture
def compiled_calls(monkeypatch: Any) -> list[int]:
    """The calls of the compiled kernel, which is replaced by a spy that computes nothing."""
    calls: list[int] = []
    monkeypatch.setattr(_band_jit, "band_", lambda *a, **k: calls.append(1))
    return calls


def test_narrow_rows_keep_torchs_blocks(compiled_calls: list[int]) -> None:
    """Rows under 16 columns take torch's shifted adds (a row's compiled loop is too short)."""
    topo = tf.topologies.ring(50)
    X = _x(50, 15, torch.float64)
    ref = topo.to_dense() @ X.numpy()
    Mixer(CPU, torch.float64, band_min_n=0, jit=True).mix_(topo, X)
    assert not compiled_calls
    np.testing.assert_allclose(X.numpy(), ref, rtol=1e-12, atol=1e-12)


def test_other_dtypes_keep_torchs_kernel(compiled_calls: list[int]) -> None:
    """Only float32 and float64 are compiled; a bfloat16 buffer takes torch's forms."""
    topo = tf.topologies.ring(64)
    X = _x(64, 32, torch.float64)
    ref = topo.to_dense() @ X.numpy()
    Y = X.to(torch.bfloat16)
    Mixer(CPU, torch.bfloat16, band_min_n=0, jit=True).mix_(topo, Y)
    assert not compiled_calls
    np.testing.assert_allclose(Y.double().numpy(), ref, rtol=0.05, atol=0.05)


def test_jit_errors(monkeypatch: Any) -> None:
    with pytest.raises(TypeError, match="jit must be True, False or None, got str"):
        Mixer(CPU, torch.float32, jit="yes")  # type: ignore[arg-type]
    monkeypatch.setattr(_band_jit, "_KERNELS", {})
    monkeypatch.setattr(_band_jit, "_MISSING", True)
    assert not _band_jit.available()
    with pytest.raises(RuntimeError, match="jit=True needs Numba"):
        Mixer(CPU, torch.float32, jit=True)
    monkeypatch.setattr(gossip, "JIT_MIN_BYTES", 0)  # it would compile, were Numba here
    X = _x(3000, 32, torch.float32)
    ref = tf.topologies.ring(3000).to_dense() @ X.numpy()
    Mixer(CPU, torch.float32).mix_(tf.topologies.ring(3000), X)  # falls back to torch's kernel
    np.testing.assert_allclose(X.numpy(), ref, rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="needs Numba"):
        _band_jit.band_(np.zeros((4, 2)), (0,), np.ones((1, 4)), 0, 0)
