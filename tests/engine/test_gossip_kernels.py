"""Gossip's band kernel (shifted adds for graphs whose rows share their offsets): the dense
product ``W @ X`` as reference (float64, 1e-12), the CSR kernel (float32, 1e-5), in place, on
column slices, and where it must not apply (the CSR kernel then runs, unchanged)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.engine.gossip import BandPlan, Mixer, band_plan

CPU = torch.device("cpu")


def _x(n: int, p: int, dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, p, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def _band(dtype: torch.dtype = torch.float64, **kw: int) -> Mixer:
    """torch's band kernel (the compiled one: ``tests/engine/test_band_jit.py``)."""
    return Mixer(CPU, dtype, band_min_n=0, jit=False, **kw)


def _circulant_rows(n: int, offsets: list[int], seed: int) -> tf.Topology:
    """A circulant pattern with different weights on every row (the plan's per-row path)."""
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n), len(offsets))
    cols = (rows + np.tile(offsets, n)) % n
    W = sp.csr_array((rng.uniform(0.1, 1.0, n * len(offsets)), (rows, cols)), shape=(n, n))
    return tf.Topology.from_matrix(W, name="weighted circulant")


GRAPHS = {
    "ring": lambda: tf.topologies.ring(100),
    "circulant": lambda: tf.topologies.circulant(130, [1, 3, 7]),
    "one-peer": lambda: tf.topologies.one_peer_exponential(128).at(2),
    "k-peer": lambda: tf.topologies.k_peer_exponential(256, 2).at(1),
    "weighted": lambda: _circulant_rows(97, [-2, 0, 1, 5], 0),
}


@pytest.mark.parametrize("name", list(GRAPHS))
@pytest.mark.parametrize("block_bytes", [None, 1, 8 * 7 * 5, 1 << 20])
def test_band_equals_the_dense_product(name: str, block_bytes: int | None) -> None:
    topo = GRAPHS[name]()
    mixer = _band(block_bytes=block_bytes)
    assert mixer.kernel(topo) == "band"
    X = _x(topo.n, 7, torch.float64)
    ref = topo.to_dense() @ X.numpy()
    mixer.mix_(topo, X)
    np.testing.assert_allclose(X.numpy(), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", list(GRAPHS))
@pytest.mark.parametrize("p", [1, 4, 37, 650])
def test_band_agrees_with_the_csr_kernel_float32(name: str, p: int) -> None:
    """Another order of the same fused multiply-adds: equal to float32 rounding."""
    topo = GRAPHS[name]()
    X = _x(topo.n, p, torch.float32, seed=p)
    a, b = X.clone(), X.clone()
    Mixer(CPU, torch.float32, band_min_n=None).mix_(topo, a)
    _band(torch.float32, block_bytes=4096).mix_(topo, b)
    np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6)


def test_band_is_in_place_on_a_view_and_its_columns() -> None:
    """``X`` a column slice of a larger buffer (as a part of the state is), ``cols`` a slice of
    it: only those entries change, written where they are, and repeated calls (the mixer's
    buffers reused) keep mixing."""
    topo = tf.topologies.circulant(200, [1, 4])
    big = _x(200, 30, torch.float64)
    before = big.clone()
    X = big[:, 5:25]
    ptr = X.data_ptr()
    mixer = _band(block_bytes=8 * 20 * 7)
    cols = slice(3, 17)
    W = topo.to_dense()
    ref = before[:, 5:25].numpy().copy()
    for _ in range(3):
        mixer.mix_(topo, X, cols=cols)
        ref[:, cols] = W @ ref[:, cols]
    assert X.data_ptr() == ptr
    np.testing.assert_allclose(big[:, 5:25].numpy(), ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(big[:, :8].numpy(), before[:, :8].numpy())
    np.testing.assert_array_equal(big[:, 22:].numpy(), before[:, 22:].numpy())


def test_band_mixes_vectors_like_matrices() -> None:
    topo = GRAPHS["weighted"]()
    w = _x(topo.n, 1, torch.float64).squeeze(1)
    ref = topo.to_dense() @ w.numpy()
    _band().mix_vector_(topo, w)
    np.testing.assert_allclose(w.numpy(), ref, rtol=1e-12, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(16, 400), degree=st.integers(1, 4), p=st.integers(1, 40),
       block=st.integers(1, 4096), s=st.integers(0, 10**6), part=st.booleans())
def test_band_on_circulants_hypothesis(n: int, degree: int, p: int, block: int, s: int,
                                       part: bool) -> None:
    """Any circulant whose offsets reach at most n/16: the band kernel, equal to ``W @ X``."""
    rng = np.random.default_rng(s)
    reach = max(1, n // 16)
    offsets = sorted(set(rng.integers(1, reach + 1, size=degree).tolist()))
    topo = tf.topologies.circulant(n, offsets)
    mixer = _band(block_bytes=block)
    assert mixer.kernel(topo) == ("band" if topo.W.nnz < 0.2 * n * n else "dense")
    X = _x(n, p, torch.float64, seed=s)
    cols = slice(p // 3, p) if part else None
    ref = X.numpy().copy()
    c = slice(None) if cols is None else cols
    ref[:, c] = topo.to_dense() @ ref[:, c]
    mixer.mix_(topo, X, cols=cols)
    np.testing.assert_allclose(X.numpy(), ref, rtol=1e-12, atol=1e-12)


FALLBACK = {
    "star (degrees differ)": lambda: tf.topologies.star(60),
    "dcliques (degrees differ)": lambda: tf.topologies.dcliques(
        np.random.default_rng(1).integers(0, 5, size=(60, 4)).astype(float), clique_size=6,
        seed=0),
    "random regular (offsets differ)": lambda: tf.topologies.random_regular(80, 4, seed=0),
    "torus (the wrap of a row)": lambda: tf.topologies.torus(20, 10),
    "exponential (offsets beyond n/16)": lambda: tf.topologies.exponential(128),
}


@pytest.mark.parametrize("name", list(FALLBACK))
def test_irregular_graphs_fall_back_to_the_csr_kernel(name: str) -> None:
    topo = FALLBACK[name]()
    assert band_plan(topo.W) is None
    for dtype in (torch.float64, torch.float32):
        mixer = _band(dtype)
        assert mixer.kernel(topo) in ("csr", "dense")
        X = _x(topo.n, 50, dtype)
        a, b = X.clone(), X.clone()
        mixer.mix_(topo, a)
        Mixer(CPU, dtype, band_min_n=None).mix_(topo, b)
        np.testing.assert_array_equal(a.numpy(), b.numpy())  # the same kernel, the same call
        ref = topo.to_dense() @ X.double().numpy()
        tol = 1e-12 if dtype == torch.float64 else 1e-5
        np.testing.assert_allclose(a.double().numpy(), ref, rtol=tol, atol=tol)


def test_default_uses_the_band_kernel_from_2048_clients_only() -> None:
    """Below ``band_min_n`` (above every committed result's 1,000 clients) the CSR kernel,
    exactly as before; from it on, the band kernel."""
    for n, kernel in [(1000, "csr"), (2047, "csr"), (2048, "band"), (5000, "band")]:
        topo = tf.topologies.ring(n)
        mixer = Mixer(CPU, torch.float32)
        assert mixer.kernel(topo) == kernel
        X = _x(n, 20, torch.float32)
        a, b = X.clone(), X.clone()
        mixer.mix_(topo, a)
        Mixer(CPU, torch.float32, band_min_n=None).mix_(topo, b)
        if kernel == "csr":
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        else:
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    assert Mixer(CPU, torch.float32, band_min_n=None).kernel(tf.topologies.ring(5000)) == "csr"
    # the torch W is still there for who asks for it
    topo = tf.topologies.ring(3000)
    W = Mixer(CPU, torch.float64).matrix(topo)
    np.testing.assert_array_equal(W.to_dense().numpy(), topo.to_dense())


def test_band_plan_reads_the_offsets_and_weights() -> None:
    plan = band_plan(tf.topologies.ring(64).W)
    assert isinstance(plan, BandPlan)
    assert (plan.k, plan.deltas, plan.lead, plan.trail) == (3, (-1, 0, 1), 1, 1)
    assert plan.weights == (1 / 3, 1 / 3, 1 / 3) and plan.row_weights is None
    one_peer = band_plan(tf.topologies.one_peer_exponential(64).at(1).W)
    assert one_peer is not None and one_peer.deltas == (-2, 0)
    assert (one_peer.lead, one_peer.trail) == (2, 0)
    weighted = band_plan(GRAPHS["weighted"]().W, dtype=torch.float32)
    assert weighted is not None and weighted.deltas == (-2, 0, 1, 5)
    assert weighted.weights == (None,) * 4
    assert weighted.row_weights is not None and weighted.row_weights.shape == (4, 97)
    # explicit zeros are entries: the same offsets on every row still
    W = sp.csr_array(tf.topologies.ring(40).W, copy=True)
    W.data[0] = 0.0
    zeros = band_plan(W)
    assert zeros is not None and zeros.weights[1] is None  # row 0's weight differs
    # too far for the default reach, fine with a larger one
    far = tf.topologies.one_peer_exponential(64).at(3).W  # the peer 8 rows away; 64 // 16 = 4
    assert band_plan(far) is None
    assert band_plan(far, max_band=8) is not None


def test_mixer_checks_its_new_options() -> None:
    with pytest.raises(ValueError, match="band_min_n must be >= 0 or None, got -1"):
        Mixer(CPU, torch.float32, band_min_n=-1)
    with pytest.raises(ValueError, match="block_bytes must be >= 1 or None, got 0"):
        Mixer(CPU, torch.float32, block_bytes=0)


WIDE = {  # 5 offsets a row or more: the band kernel's matrix form on rows of 64+ columns
    "circulant [1,2,3]": lambda: tf.topologies.circulant(300, [1, 2, 3]),
    "circulant [1,3,7]": lambda: tf.topologies.circulant(130, [1, 3, 7]),
    "weights per slot": lambda: _slot_weights(200, [-2, -1, 0, 1, 2], [0.1, 0.2, 0.3, 0.2, 0.2]),
}


def _slot_weights(n: int, offsets: list[int], weights: list[float]) -> tf.Topology:
    """A circulant pattern whose offsets have weights of their own (the same on every row)."""
    rows = np.repeat(np.arange(n), len(offsets))
    cols = (rows + np.tile(offsets, n)) % n
    W = sp.csr_array((np.tile(weights, n), (rows, cols)), shape=(n, n))
    return tf.Topology.from_matrix(W, name="slot-weighted circulant")


@pytest.mark.parametrize("name", list(WIDE))
@pytest.mark.parametrize(("p", "block_bytes"), [(64, 8 * 64 * 24), (100, 8 * 100 * 9),
                                                (650, 8 * 650 * 16), (97, 8 * 97 * 40)])
@pytest.mark.parametrize("part", [False, True])
def test_band_matrix_form_equals_the_dense_product(name: str, p: int, block_bytes: int | None,
                                                   part: bool, monkeypatch: Any) -> None:
    """Wide bands in matrix form (each 8 rows one product with their window of ``X``, a
    block one batched product): ``W @ X`` to 1e-12 in float64, the CSR kernel to float32
    rounding (1e-5), on a column slice of a larger buffer too, and the form is really used."""
    topo = WIDE[name]()
    mixer = _band(block_bytes=block_bytes)
    plan = band_plan(topo.W)
    assert plan is not None and plan.k >= 5
    products = []
    bmm = torch.bmm
    monkeypatch.setattr(torch, "bmm", lambda *a, **k: products.append(1) or bmm(*a, **k))
    big = _x(topo.n, p + 9, torch.float64, seed=p)
    X = big[:, 4: 4 + p] if part else big[:, :p]
    before = big.clone()
    ref = topo.to_dense() @ X.numpy()
    mixer.mix_(topo, X)
    assert products, "the matrix form was not used"
    np.testing.assert_allclose(X.numpy(), ref, rtol=1e-12, atol=1e-12)
    if part:
        np.testing.assert_array_equal(big[:, :4].numpy(), before[:, :4].numpy())
        np.testing.assert_array_equal(big[:, 4 + p:].numpy(), before[:, 4 + p:].numpy())
    Y = _x(topo.n, p, torch.float32, seed=p)
    a, b = Y.clone(), Y.clone()
    Mixer(CPU, torch.float32, band_min_n=None).mix_(topo, a)
    _band(torch.float32, block_bytes=block_bytes).mix_(topo, b)
    np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6)


def test_band_matrix_form_only_for_wide_bands() -> None:
    """A ring (3 offsets), narrow rows or per-row weights keep the shifted adds."""
    X = torch.zeros(1)
    wide = band_plan(tf.topologies.circulant(300, [1, 2, 3]).W)
    assert wide is not None and Mixer._panel(wide, 64, 100, X) is not None
    assert Mixer._panel(wide, 63, 100, X) is None  # rows under 64 columns
    assert Mixer._panel(wide, 64, 7, X) is None  # blocks under 8 rows
    ring = band_plan(tf.topologies.ring(300).W)
    assert ring is not None and Mixer._panel(ring, 650, 100, X) is None
    rows = band_plan(_circulant_rows(97, [-2, -1, 0, 1, 5], 0).W)
    assert rows is not None and rows.row_weights is not None
    assert Mixer._panel(rows, 650, 100, X) is None
