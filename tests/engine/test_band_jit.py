"""The band kernel compiled with Numba (``topofl.engine._band_jit``): against ``W @ X``, against
torch's band kernel and a plain-Python loop (to rounding), in place on column slices, row
weights, bands reaching one way only, bands too wide to write out, non-finite rows kept to
their neighbours, and its errors; its forms (blocks of rows, the one-row loop prefetching)
against the one-row loop (float64 bit for bit, float32 within 1e-6)."""

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
    assert (_band_jit.MAX_K + 1, 1, False) in _band_jit._KERNELS


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


# The forms of the compiled kernel against the one-row loop as first written (``_source(k)``,
# no prefetching): bit for bit, each output's terms being added in the same order in every form.

def _run_form(X: np.ndarray, deltas: tuple[int, ...], w: np.ndarray, rows: int,
              ahead: int | None = None) -> None:
    """``X <- W X`` in place with the kernel for ``len(deltas)`` offsets in blocks of
    ``rows`` rows; ``ahead``: the one-row loop prefetching that many rows ahead (``None``: the
    one-row loop without prefetching)."""
    k = len(deltas)
    lead, trail = max(0, -deltas[0]), max(0, deltas[-1])
    kernel = _band_jit._kernel(k, rows, ahead is not None)
    head = np.array(X[:trail])
    ring = np.empty((lead + rows, X.shape[1]), dtype=X.dtype)
    d = np.asarray(deltas, dtype=np.int64)
    if ahead is not None and rows == 1 and k <= _band_jit.MAX_K:
        kernel(X, d, w, head, ring, ahead)
    else:
        kernel(X, d, w, head, ring)


def _same(X: np.ndarray, ref: np.ndarray, msg: str = "") -> None:
    """float64: bit for bit; float32: within 1e-6 of the largest (another CPU's LLVM may fuse
    one form's products otherwise; on this project's CPUs every form gave the same bits)."""
    if X.dtype == np.float64:
        np.testing.assert_array_equal(X, ref, err_msg=msg)
    else:
        tol = 1e-6 * max(1.0, float(np.abs(ref).max()))
        np.testing.assert_allclose(X, ref, rtol=1e-6, atol=tol, err_msg=msg)


def _offsets(k: int) -> list[tuple[int, ...]]:
    """Bands of ``k`` offsets: contiguous and centred, one way only, and spread out."""
    centred = tuple(range(-(k // 2), k - k // 2))
    forward = tuple(range(k))
    spread = tuple(sorted({3 * j - 2 * (k // 2) for j in range(k)}))
    return [centred, forward, spread]


def _check_forms(k: int, dtype: Any, shared: bool, sliced: bool, seed: int) -> None:
    """Every form for ``k`` offsets (blocks of 2 to :func:`block_rows` rows, the one-row loop
    prefetching 0, 1 and 3 rows ahead, ``band_`` itself, the generic loop past ``MAX_K``)
    against the one-row loop without prefetching, bit for bit: bands centred, one way only and
    spread out, n from the narrowest a plan allows (divisible by the block or not), P = 1 and
    33, weights shared (broadcast, as ``Mixer`` passes them) or per row, rows contiguous or a
    column slice of a wider buffer."""
    rng = np.random.default_rng(seed)
    for deltas in _offsets(k):
        lead, trail = max(0, -deltas[0]), max(0, deltas[-1])
        least = max(deltas[-1] - deltas[0] + 1, 2 * max(lead, trail) + 1)  # a plan's offsets
        for n in (least, least + 1, least + 2, max(least, 23)):
            for P in (1, 33):
                w = (np.broadcast_to(rng.uniform(0.1, 1, k).astype(dtype)[:, None], (k, n))
                     if shared else rng.uniform(-1, 1, (k, n)).astype(dtype))
                big = rng.standard_normal((n, P + 5)).astype(dtype)

                def fresh(big: np.ndarray = big, P: int = P) -> np.ndarray:
                    return big.copy()[:, 2: 2 + P] if sliced else big[:, :P].copy()

                ref = fresh()
                if k <= _band_jit.MAX_K:
                    _run_form(ref, deltas, w, 1)
                else:
                    _band_jit.band_(ref, deltas, w, lead, trail)  # the generic loop
                forms: list[tuple[int, int | None]] = [(1, 0), (1, 1), (1, 3)]
                if k <= _band_jit.MAX_K:
                    forms += [(r, None) for r in range(2, _band_jit.block_rows(k) + 1)]
                for rows, ahead in forms:
                    X = fresh()
                    _run_form(X, deltas, w, rows, ahead)
                    _same(X, ref, f"{deltas} {n} {P} {rows}")
                X = fresh()
                _band_jit.band_(X, deltas, w, lead, trail)
                _same(X, ref, f"{deltas} {n} {P}")


# By default the ``k`` where the forms change (4 rows a block up to 7, 3 from 8, 2 from 14, the
# generic loop past MAX_K); every ``k`` under ``-m slow`` (each kernel compiles in about a second).
_FORM_EDGES = (1, 2, 3, 7, 8, 14, _band_jit.MAX_K + 1)


def _every_k(ks: Any, edges: tuple[int, ...]) -> list[Any]:
    return [k if k in edges else pytest.param(k, marks=pytest.mark.slow) for k in ks]


@pytest.mark.parametrize("k", _every_k(range(1, _band_jit.MAX_K + 2), _FORM_EDGES))
def test_every_form_equals_the_one_row_loop_bit_for_bit(k: int) -> None:
    """float64, ``k = 1`` to ``MAX_K + 1``: weights shared for odd ``k``, per row for even."""
    _check_forms(k, np.float64, shared=k % 2 == 1, sliced=False, seed=k)


@pytest.mark.parametrize("k", _every_k([2, 3, 7, 13], (3,)))
def test_every_form_agrees_with_the_one_row_loop_float32_slices(k: int) -> None:
    """float32, on column slices of a wider buffer (rows strided) and on contiguous rows."""
    _check_forms(k, np.float32, shared=False, sliced=True, seed=100 + k)
    _check_forms(k, np.float32, shared=True, sliced=False, seed=200 + k)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("deltas", [(-1, 0, 1), tuple(range(-3, 4)), (0, 5), (-2, 0, 1)])
def test_band_picks_each_form_on_wide_rows(dtype: Any,
                                                       deltas: tuple[int, ...]) -> None:
    """Rows wider than ``L1_BYTES`` allows take blocks of rows (C-contiguous ``X``) or the
    one-row loop (a column slice), narrower ones the one-row loop prefetching (from
    ``PREFETCH_MIN_BYTES``) or not: the same bits as the one-row loop without prefetching, and
    ``W @ X`` to rounding."""
    k = len(deltas)
    lead, trail = max(0, -deltas[0]), max(0, deltas[-1])
    itemsize = np.dtype(dtype).itemsize
    R = _band_jit.block_rows(k)
    wide = _band_jit.L1_BYTES * (5 - R) // ((k + 2) * itemsize) + 3
    fetched = _band_jit.PREFETCH_MIN_BYTES // itemsize + 1
    short = _band_jit.PREFETCH_MIN_BYTES // itemsize - 1
    forms = {(wide, False): (R, False), (wide, True): (1, False), (fetched, False): (1, True),
             (short, False): (1, False)}
    rng = np.random.default_rng(7)
    for n in (37, 40):
        for (P, sliced), form in forms.items():
            assert _band_jit._form(k, P * itemsize, not sliced) == form
            w = rng.uniform(0.1, 1, (k, n)).astype(dtype)
            big = rng.standard_normal((n, P + 3)).astype(dtype)
            X = big.copy()[:, 1: 1 + P] if sliced else big[:, :P].copy()
            ref = X.copy()
            _run_form(ref, deltas, w, 1)
            dense = np.zeros((n, n))
            for j, d in enumerate(deltas):
                dense[np.arange(n), (np.arange(n) + d) % n] += w[j]
            expect = dense @ X.astype(np.float64)
            _band_jit.band_(X, deltas, w, lead, trail)
            _same(X, ref)
            tol = 1e-5 if dtype == np.float32 else 1e-12
            np.testing.assert_allclose(X, expect, rtol=tol, atol=tol)


def test_block_rows_keeps_llvms_runtime_checks_within_128_pairs() -> None:
    for k in range(1, _band_jit.MAX_K + 1):
        r = _band_jit.block_rows(k)
        assert 2 <= r <= 4
        assert r * (r - 1) // 2 + r * r * k <= 128
        assert r == 4 or (r + 1) * r // 2 + (r + 1) ** 2 * k > 128
