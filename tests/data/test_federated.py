"""FederatedData: layout, counter-based sampling (batched == per-client reference), evaluation."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.data import FederatedData, Partition, federate
from topofl.data.sampling import _reference_indices, hash_uniform_index

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(scope="module")
def digits() -> tf.data.Dataset:
    return tf.data.load("digits")


@pytest.fixture(scope="module")
def demo(digits: tf.data.Dataset) -> FederatedData:
    return federate(digits, "shards", 100, shards_per_client=2, seed=0)


def rows_of(data: FederatedData, split: str, i: int) -> np.ndarray:
    seg = data.segments_of(split)
    return np.arange(seg.offsets[i], seg.offsets[i] + seg.sizes[i])


# ---------------------------------------------------------------------------------- layout
def test_layout_matches_partitions(digits: tf.data.Dataset) -> None:
    p = tf.data.dirichlet(digits.y_train, 12, 0.3, seed=3)
    data = FederatedData.from_partition(digits, p, seed=5, val=0.1, test=0.2)
    assert data.x.dtype == torch.float32 and data.y.dtype == torch.int64
    assert tuple(data.x.shape[1:]) == data.input_shape == (1, 8, 8)
    assert data.num_clients == 12 and data.num_classes == 10
    x_np, y_np = data.x.numpy(), data.y.numpy()
    seen = []
    for split in ("train", "val", "test"):
        part = data.partitions[split]
        for i in range(12):
            r = rows_of(data, split, i)
            assert np.array_equal(x_np[r], digits.x_train[part[i]])
            assert np.array_equal(y_np[r], digits.y_train[part[i]])
            seen.append(part[i])
            xi, yi = data.client(i, split)
            assert torch.equal(xi, data.x[r]) and torch.equal(yi, data.y[r])
    allidx = np.concatenate(seen)
    assert np.array_equal(np.sort(allidx), np.arange(digits.y_train.size))  # splits cover the data
    gx, gy = data.global_test
    assert np.array_equal(gx.numpy(), digits.x_test) and np.array_equal(gy.numpy(), digits.y_test)
    assert np.array_equal(data.label_distributions, data.partitions["train"].label_distributions)
    json.dumps(dict(data.params))


def test_split_test_follows_training_distribution(digits: tf.data.Dataset) -> None:
    data = federate(digits, "dirichlet", 20, alpha=0.3, seed=0, val=0.1, test=0.2)
    tr = data.label_distributions
    te = data.label_distributions_of("test")
    sizes = tr.sum(1) + data.label_distributions_of("val").sum(1) + te.sum(1)
    assert np.all(
        np.abs(
            te
            - te.sum(1, keepdims=True)
            * (tr + data.label_distributions_of("val") + te)
            / sizes[:, None]
        )
        < 1
    )
    assert np.all((te > 0) <= (tr > 0))  # no test class the client never trains on


def test_distributed_test_set(digits: tf.data.Dataset, demo: FederatedData) -> None:
    te = demo.label_distributions_of("test")
    assert np.all((te > 0) <= (demo.label_distributions > 0))
    assert te.sum() == digits.y_test.size  # every test sample goes to some client
    assert demo.params["test"] == "distribute"
    # Local test rows are copies of global test samples.
    gx, _ = demo.global_test
    x, _, _ = demo.segments("test")
    assert x.shape[0] == gx.shape[0]


def test_federate_partition_is_the_plain_scheme(
    digits: tf.data.Dataset, demo: FederatedData
) -> None:
    p = tf.data.shards(digits.y_train, 100, 2, seed=0)
    assert np.array_equal(demo.partitions["train"].index, p.index)
    assert demo.params["seed"] == 0 and demo.params["partition"]["name"] == "shards"


# ---------------------------------------------------------------------------------- sampling
def test_sample_gives_each_client_only_its_own_samples(demo: FederatedData) -> None:
    for r, s in [(0, 0), (3, 7), (10**6, 2**40)]:
        idx = demo.sample_indices(r, s, 64)
        x, y = demo.sample(r, s, 64)
        assert x.shape == (100, 64, 1, 8, 8) and y.shape == (100, 64)
        for i in range(100):
            rows = rows_of(demo, "train", i)
            assert np.isin(idx[i].numpy(), rows).all()
        assert torch.equal(x, demo.x[idx]) and torch.equal(y, demo.y[idx])


def test_sample_is_reproducible_and_varies(demo: FederatedData, digits: tf.data.Dataset) -> None:
    a = demo.sample(4, 2, 16)
    again = federate(digits, "shards", 100, shards_per_client=2, seed=0)
    for _ in range(3):
        again.sample(1, 1, 16)  # the order of calls does not matter
    b = again.sample(4, 2, 16)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(demo.sample_indices(4, 3, 16), demo.sample_indices(4, 2, 16))
    assert not torch.equal(demo.sample_indices(5, 2, 16), demo.sample_indices(4, 2, 16))
    other = federate(digits, "shards", 100, shards_per_client=2, seed=1)
    assert not torch.equal(other.sample_indices(4, 2, 16), demo.sample_indices(4, 2, 16))


def test_batched_equals_per_client_reference(demo: FederatedData) -> None:
    idx = demo.sample_indices(2, 5, 33)
    key = demo._key(2, 5)
    seg = demo.segments_of("train")
    for i in range(demo.num_clients):
        ref = [int(seg.offsets[i]) + j for j in _reference_indices(key, i, int(seg.sizes[i]), 33)]
        assert idx[i].tolist() == ref


@given(n=st.integers(1, 40), b=st.integers(1, 40), first=st.sampled_from([0, 7, 2**32 - 3]),
       big=st.booleans(), keys=st.lists(st.integers(0, 2**32 - 1), min_size=2, max_size=2),
       rows=st.integers(0, 2**31 - 1))
@settings(max_examples=60, deadline=None)
def test_numpy_hash_equals_the_torch_ops_and_the_reference(
        n: int, b: int, first: int, big: bool, keys: list[int], rows: int) -> None:
    """The CPU path hashes in NumPy's wrapping uint32 arithmetic, other devices in int64
    torch operations: the same integers, equal to the pure-Python reference; keys as ints or
    one per row (a stacked pass), client ids up to 2^32 - 1 and sizes up to 2^31."""
    g = np.random.default_rng(rows)
    size = torch.tensor(g.integers(1, 2**31 if big else 60, size=n))[:, None]
    client = torch.arange(first, first + n, dtype=torch.int64)[:, None]
    slot = torch.arange(b, dtype=torch.int64)[None, :]
    k0, k1 = keys
    fast = hash_uniform_index(k0, k1, client, slot, size)
    ops = hash_uniform_index(k0, k1, client, slot, size, numpy=False)
    assert fast.dtype == torch.int64 and torch.equal(fast, ops)
    for i in range(0, n, max(1, n // 3)):
        if first + i < 2**32:
            assert fast[i].tolist() == _reference_indices(
                (k0, k1), first + i, int(size[i]), b)
    per_row = torch.tensor(g.integers(0, 2**32, size=(n, 2), dtype=np.uint64).astype(np.int64))
    fast = hash_uniform_index(per_row[:, :1], per_row[:, 1:], client, slot, size)
    ops = hash_uniform_index(per_row[:, :1], per_row[:, 1:], client, slot, size, numpy=False)
    assert torch.equal(fast, ops)


def test_sample_indices_on_cpu_equal_the_device_path(demo: FederatedData) -> None:
    """``sample_indices`` hashes in NumPy on the CPU; the torch operations other devices run
    (here on CPU tensors) give the same rows."""
    key = demo._key(3, 4)
    n = demo.num_clients
    ops = demo._tensor("train.offsets")[:, None] + hash_uniform_index(
        key[0], key[1], torch.arange(n)[:, None], torch.arange(21)[None, :],
        demo._tensor("train.sizes")[:, None], numpy=False)
    assert torch.equal(demo.sample_indices(3, 4, 21), ops)


def test_client_batch_independent_of_other_clients(digits: tf.data.Dataset) -> None:
    y = digits.y_train
    base = [np.arange(0, 40), np.arange(40, 45), np.arange(45, 300)]
    other = [np.arange(0, 40), np.arange(300, 1000), np.arange(1000, 1001), np.arange(1001, 1200)]
    d1 = FederatedData.from_partition(digits, Partition.from_indices(base, y), seed=9, test=0.0)
    d2 = FederatedData.from_partition(digits, Partition.from_indices(other, y), seed=9, test=0.0)
    x1, y1 = d1.sample(7, 3, 50)
    x2, y2 = d2.sample(7, 3, 50)
    # Client 0 has the same data in both; its batch is the same despite the other clients.
    assert torch.equal(x1[0], x2[0]) and torch.equal(y1[0], y2[0])


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 40),
    b=st.integers(1, 40),
    r=st.integers(0, 2**31),
    s=st.integers(0, 2**31),
    seed=st.integers(0, 2**31),
)
def test_sample_property(n: int, b: int, r: int, s: int, seed: int) -> None:
    ds = tf.data.synthetic(200, 3, 4, seed=1)
    data = federate(ds, "dirichlet", n, alpha=0.5, seed=seed, test=0.0)
    idx = data.sample_indices(r, s, b)
    seg = data.segments_of("train")
    off = torch.tensor(seg.offsets)[:, None]
    assert ((idx >= off) & (idx < off + torch.tensor(seg.sizes)[:, None])).all()
    assert torch.equal(idx, data.sample_indices(r, s, b))


def test_sample_is_uniform(digits: tf.data.Dataset) -> None:
    p = Partition.from_indices([np.arange(7), np.arange(7, 20)], digits.y_train)
    data = FederatedData.from_partition(digits, p, seed=0, test=0.0)
    counts = np.zeros(20)
    for step in range(200):
        idx = data.sample_indices(0, step, 50).numpy().ravel()
        counts += np.bincount(idx, minlength=20)
    for rows in (slice(0, 7), slice(7, 20)):
        c = counts[rows]
        expected = c.sum() / c.size
        chi2 = ((c - expected) ** 2 / expected).sum()
        assert chi2 < 3 * c.size + 30, (chi2, c)


def test_sample_out_and_steps(demo: FederatedData) -> None:
    xo = torch.empty(100, 8, 1, 8, 8)
    yo = torch.empty(100, 8, dtype=torch.int64)
    x, y = demo.sample(1, 2, 8, out=(xo, yo))
    assert x is xo and y is yo
    ref = demo.sample(1, 2, 8)
    assert torch.equal(xo, ref[0]) and torch.equal(yo, ref[1])
    with pytest.raises(ValueError, match="out must have shapes"):
        demo.sample(1, 2, 4, out=(xo, yo))
    assert np.array_equal(demo.steps_per_epoch(4), -(-demo.sizes() // 4))


@pytest.mark.parametrize("device", DEVICES)
def test_to_device_same_batches(demo: FederatedData, device: str) -> None:
    moved = demo.to(device)
    assert moved.device.type == device and moved.x.device.type == device
    x, y = moved.sample(3, 4, 16)
    ref = demo.sample(3, 4, 16)
    assert torch.equal(x.cpu(), ref[0]) and torch.equal(y.cpu(), ref[1])
    batches = list(moved.eval_batches("test", 4))
    assert all(b.x.device.type == device for b in batches)


def test_empty_client_cannot_sample(digits: tf.data.Dataset) -> None:
    p = Partition.from_indices([np.arange(10), np.array([], dtype=int)], digits.y_train)
    data = FederatedData.from_partition(digits, p, seed=0, test=0.0)
    with pytest.raises(ValueError, match="1 client\\(s\\) have no training sample .*client 1"):
        data.sample(0, 0, 4)
    batch = data.padded("train")
    assert batch.mask.sum(1).tolist() == [10, 0]


# ---------------------------------------------------------------------------------- evaluation
@pytest.mark.parametrize("b", [None, 1, 3, 7])
def test_eval_batches_cover_each_client_exactly(demo: FederatedData, b: Any) -> None:
    sizes = demo.sizes("test")
    got: list[list[int]] = [[] for _ in range(demo.num_clients)]
    for batch in demo.eval_batches("test", b):
        assert batch.x.shape[:2] == batch.y.shape == batch.mask.shape
        for i in range(demo.num_clients):
            m = batch.mask[i]
            got[i] += batch.y[i][m].tolist()
            assert torch.equal(
                batch.x[i][m], demo.client(i, "test")[0][batch.start : batch.start + int(m.sum())]
            )
    for i in range(demo.num_clients):
        assert got[i] == demo.client(i, "test")[1].tolist() and len(got[i]) == sizes[i]


def test_segments_and_per_client_accuracy_agree(demo: FederatedData) -> None:
    x, y, client = demo.segments("test")
    assert x.shape[0] == y.shape[0] == client.shape[0] == int(demo.sizes("test").sum())
    # A toy per-client "model": predict the client's majority training label.
    major = torch.as_tensor(demo.label_distributions.argmax(1))
    acc_seg = torch.zeros(demo.num_clients).index_add_(0, client, (y == major[client]).float())
    batch = demo.padded("test")
    acc_pad = ((batch.y == major[:, None]) & batch.mask).sum(1).float()
    assert torch.equal(acc_seg, acc_pad)
    slow = torch.tensor(
        [float((demo.client(i, "test")[1] == major[i]).sum()) for i in range(demo.num_clients)]
    )
    assert torch.equal(acc_seg, slow)


# ---------------------------------------------------------------------------------- errors
def test_errors(digits: tf.data.Dataset, demo: FederatedData) -> None:
    with pytest.raises(ValueError, match="unknown partition scheme 'zipf'; known: iid, shards"):
        federate(digits, "zipf", 10, seed=0)
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['beta'\] for 'dirichlet'"):
        federate(digits, "dirichlet", 10, alpha=0.1, beta=2, seed=0)
    with pytest.raises(ValueError, match="test must be one of"):
        federate(digits, "iid", 10, seed=0, test="global")
    with pytest.raises(ValueError, match="split must be one of"):
        demo.sizes("valid")
    with pytest.raises(ValueError, match="round must be >= 0"):
        demo.sample(-1, 0, 4)
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        demo.sample(0, 0, 0)
    with pytest.raises(ValueError, match="natural"):
        federate(digits, "natural", 10, seed=0)
    other = tf.data.iid(np.arange(50) % 10, 5, seed=0)
    with pytest.raises(ValueError, match="partition must partition dataset.y_train"):
        FederatedData.from_partition(digits, other, seed=0)
    with pytest.raises(TypeError, match="seed"):
        federate(digits, "iid", 10, seed=None)  # type: ignore[arg-type]


def test_federate_by_name_and_generator_seed() -> None:
    a = federate("digits", "pathological", 10, classes_per_client=3, seed=np.random.default_rng(0))
    assert a.params["seed"] is None
    assert np.all((a.label_distributions > 0).sum(1) == 3)
    d = federate("digits", "dpfl_pathological", 10, seed=2, val=0.2)
    assert d.sizes("val").sum() > 0


def test_batch_prefix_property(demo: FederatedData) -> None:
    big = demo.sample_indices(6, 1, 40)
    small = demo.sample_indices(6, 1, 9)
    assert torch.equal(big[:, :9], small)
