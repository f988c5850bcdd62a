"""Building data without a second copy: :func:`~topofl.data.synthetic` draws a block of
samples at a time, :class:`~topofl.data.FederatedData` writes every client's samples into one
array block by block, and a :class:`~topofl.data.Partition` rebuilds ``client_of`` from its
index. Each against the one-shot reference it replaces."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.data import assembly
from topofl.data.datasets import bundled


def _one_shot(n: int, d: int, L: int, seed: int, nt: int) -> tuple[np.ndarray, ...]:
    """The draw as one (m, d) array each (the loader before it drew blocks)."""
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((L, d))
    mu = 3.0 * g / np.maximum(np.linalg.norm(g, axis=1, keepdims=True), 1e-12)
    out = []
    for m in (n, nt):
        y = rng.permutation(np.arange(m) % L).astype(np.int64)
        x = (mu[y] + 1.0 * rng.standard_normal((m, d))).astype(np.float32)
        out += [x, y]
    return tuple(out)


@pytest.mark.parametrize("block", [1, 7, 64, 1 << 21])
def test_synthetic_by_blocks_draws_the_one_shot_numbers(monkeypatch: pytest.MonkeyPatch,
                                                        block: int) -> None:
    monkeypatch.setattr(bundled, "SYNTHETIC_BLOCK_VALUES", block)
    ds = tf.data.synthetic(103, dim=5, num_classes=4, seed=3, n_test=29)
    x, y, xt, yt = _one_shot(103, 5, 4, 3, 29)
    np.testing.assert_array_equal(ds.y_train, y)
    np.testing.assert_array_equal(ds.y_test, yt)
    # elementwise float64 sums cast to float32: the same numbers up to float32 rounding
    np.testing.assert_allclose(ds.x_train, x, rtol=1e-6, atol=0)
    np.testing.assert_allclose(ds.x_test, xt, rtol=1e-6, atol=0)
    assert ds.x_train.dtype == np.float32 and ds.x_train.flags.c_contiguous


def test_synthetic_image_shape_by_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundled, "SYNTHETIC_BLOCK_VALUES", 50)
    a = tf.data.load("synthetic:n_samples=20,shape=3x4x4,seed=0")
    monkeypatch.setattr(bundled, "SYNTHETIC_BLOCK_VALUES", 1 << 21)
    b = tf.data.load("synthetic:n_samples=20,shape=3x4x4,seed=0")
    assert a.x_train.shape == (20, 3, 4, 4)
    np.testing.assert_allclose(a.x_train, b.x_train, rtol=1e-6, atol=0)


def test_synthetic_bytes_counts_the_kept_arrays_and_one_block() -> None:
    d = 64
    rows = bundled.SYNTHETIC_BLOCK_VALUES // d
    assert bundled.synthetic_bytes(10, d) == 10 * (4 * d + 32) + 2 * 8 * 10 * d
    assert bundled.synthetic_bytes(10**7, d) == 10**7 * (4 * d + 32) + 2 * 8 * rows * d


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(0, 30), min_size=1, max_size=4),
       block=st.integers(1, 40), shape=st.sampled_from([(3,), (2, 2), (1,)]),
       dtype=st.sampled_from([np.float32, np.float64, np.uint8]), seed=st.integers(0, 9))
def test_gathered_equals_the_concatenation(sizes: list[int], block: int,
                                           shape: tuple[int, ...], dtype: type,
                                           seed: int) -> None:
    rng = np.random.default_rng(seed)
    src = (rng.random((35, *shape)) * 200).astype(dtype)
    parts = [(src, rng.integers(0, 35, size=k)) for k in sizes] + [(src[:5], None)]
    old = assembly.GATHER_BLOCK_VALUES
    assembly.GATHER_BLOCK_VALUES = block
    try:
        got = assembly._gathered(parts, shape)
    finally:
        assembly.GATHER_BLOCK_VALUES = old
    ref = np.ascontiguousarray(np.concatenate([s if i is None else s[i] for s, i in parts]),
                               dtype=np.float32)
    assert got.dtype == np.float32 and got.shape == ref.shape
    np.testing.assert_array_equal(got, ref)  # a copy and one cast: nothing to round twice


def test_federated_data_by_blocks_holds_the_same_samples(
        monkeypatch: pytest.MonkeyPatch) -> None:
    whole = tf.data.federate("digits", "dirichlet", 12, alpha=0.5, seed=0, val=0.1)
    monkeypatch.setattr(assembly, "GATHER_BLOCK_VALUES", 640)  # 10 digits a block
    blocked = tf.data.federate("digits", "dirichlet", 12, alpha=0.5, seed=0, val=0.1)
    assert np.array_equal(whole.x.numpy(), blocked.x.numpy())
    assert np.array_equal(whole.y.numpy(), blocked.y.numpy())
    ds = tf.data.load("digits")
    p = whole.partitions["train"]
    a = int(whole.segments_of("train").offsets[3])
    np.testing.assert_array_equal(whole.x[a:a + int(p.sizes[3])].numpy(),
                                  ds.x_train[p[3]].astype(np.float32))


@pytest.mark.parametrize("scheme", ["iid", "shards", "dirichlet"])
def test_client_of_is_rebuilt_from_the_index(scheme: str) -> None:
    y = tf.data.load("digits").y_train
    kw = {"alpha": 0.3} if scheme == "dirichlet" else {}
    p = getattr(tf.data, scheme)(y, 9, seed=1, **kw)
    assert "client_of" not in p.__dict__  # not kept beside the index
    c = p.client_of
    ref = np.full(y.size, -1, dtype=np.int64)
    for i in range(p.num_clients):
        ref[p[i]] = i
    np.testing.assert_array_equal(c, ref)
    assert not c.flags.writeable
    for q in p.split(val=0.1, test=0.2, seed=0):
        ref = np.full(y.size, -1, dtype=np.int64)
        for i in range(q.num_clients):
            ref[q[i]] = i
        np.testing.assert_array_equal(q.client_of, ref)
