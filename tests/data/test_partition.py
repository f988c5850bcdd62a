"""Partitions: invariants on every output (hypothesis), the papers' guarantees, errors."""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.data import (
    Partition,
    dirichlet,
    dpfl_pathological,
    iid,
    natural,
    pathological,
    shards,
)
from topofl.data.partition import _apportion_float, _apportion_int

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def make_labels(n: int, L: int, skew: float, seed: int) -> np.ndarray:
    """``n`` labels over ``L`` classes, class probabilities ~ Dir(skew) (some may be absent)."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(L, skew)) if L > 1 else np.ones(1)
    return rng.choice(L, size=n, p=p).astype(np.int64)


labels_st = st.builds(
    make_labels,
    n=st.integers(1, 400),
    L=st.integers(1, 12),
    skew=st.sampled_from([0.3, 1.0, 100.0]),
    seed=st.integers(0, 2**16),
)


def check_invariants(p: Partition, y: np.ndarray, *, covering: bool = True) -> None:
    """Disjoint, in range, canonical layout, consistent label counts."""
    assert p.labels.shape == y.shape and np.array_equal(p.labels, y)
    assert p.index.dtype == np.int64 and p.offsets.dtype == np.int64
    assert np.unique(p.index).size == p.index.size  # disjoint
    assert p.index.size == 0 or (p.index.min() >= 0 and p.index.max() < y.size)
    assert p.offsets[0] == 0 and p.offsets[-1] == p.index.size
    assert np.all(np.diff(p.offsets) >= 0)
    for i, idx in enumerate(p):
        assert np.all(np.diff(idx) > 0)  # ascending within client
        assert np.all(p.client_of[idx] == i)
    if covering:
        assert p.num_assigned == y.size and np.array_equal(np.sort(p.index), np.arange(y.size))
        assert p.unassigned().size == 0
    ld = p.label_distributions
    assert ld.shape == (p.num_clients, p.num_classes)
    assert np.array_equal(ld.sum(axis=1), p.sizes)
    assigned = p.index
    assert np.array_equal(ld.sum(axis=0), np.bincount(y[assigned], minlength=p.num_classes))
    json.dumps(p.to_dict(include_indices=True))  # JSON-able
    assert not p.index.flags.writeable and not p.labels.flags.writeable


def same(a: Partition, b: Partition) -> bool:
    return np.array_equal(a.index, b.index) and np.array_equal(a.offsets, b.offsets)


# ---------------------------------------------------------------------------------- properties
@SETTINGS
@given(y=labels_st, n=st.integers(1, 60), seed=st.integers(0, 2**31))
def test_iid_properties(y: np.ndarray, n: int, seed: int) -> None:
    assume(n <= y.size)
    p = iid(y, n, seed=seed)
    check_invariants(p, y)
    assert p.sizes.max() - p.sizes.min() <= 1
    assert same(p, iid(y.copy(), n, seed=seed))


@SETTINGS
@given(y=labels_st, n=st.integers(1, 60), s=st.integers(1, 4), seed=st.integers(0, 2**31))
def test_shards_properties(y: np.ndarray, n: int, s: int, seed: int) -> None:
    assume(n * s <= y.size)
    p = shards(y, n, s, seed=seed)
    check_invariants(p, y)
    q = y.size // (n * s)
    assert np.all(p.sizes >= s * q) and np.all(p.sizes <= s * (q + 1))
    assert same(p, shards(y, n, s, seed=seed))


@SETTINGS
@given(
    y=labels_st,
    n=st.integers(1, 80),
    alpha=st.sampled_from([0.001, 0.01, 0.1, 0.5, 1.0, 10.0, 1e4]),
    min_size=st.integers(0, 5),
    seed=st.integers(0, 2**31),
)
def test_dirichlet_properties(
    y: np.ndarray, n: int, alpha: float, min_size: int, seed: int
) -> None:
    if n * min_size > y.size:
        with pytest.raises(ValueError, match="min_size cannot be met"):
            dirichlet(y, n, alpha, min_size=min_size, seed=seed)
        return
    p = dirichlet(y, n, alpha, min_size=min_size, seed=seed)
    check_invariants(p, y)
    assert p.sizes.min() >= min_size
    assert p.info["moved"] >= 0 and p.info["topped_up"] <= n
    assert same(p, dirichlet(y, n, alpha, min_size=min_size, seed=seed))


@SETTINGS
@given(y=labels_st, n=st.integers(1, 60), c=st.integers(1, 6), seed=st.integers(0, 2**31))
def test_pathological_properties(y: np.ndarray, n: int, c: int, seed: int) -> None:
    counts = np.bincount(y)
    K = int((counts > 0).sum())
    try:
        p = pathological(y, n, c, seed=seed)
    except ValueError as exc:
        msg = str(exc)
        assert c > K or n * c < K or "samples but" in msg or (
            n * c > y.size and "holdings need at least one sample" in msg
        ), msg
        return
    check_invariants(p, y)
    held = p.label_distributions > 0
    assert np.all(held.sum(axis=1) == c)  # exactly c classes, each with >= 1 sample
    usage = held.sum(axis=0)[counts > 0]
    assert usage.min() >= 1 and usage.max() - usage.min() <= 1  # every class used, balanced
    # A class is split evenly over its holders.
    ld = p.label_distributions
    for k in np.flatnonzero(counts > 0):
        shares = ld[held[:, k], k]
        assert shares.max() - shares.min() <= 1
    assert same(p, pathological(y, n, c, seed=seed))


@SETTINGS
@given(
    y=labels_st,
    n=st.integers(1, 60),
    c=st.integers(1, 5),
    alpha=st.sampled_from([0.01, 0.5, 5.0]),
    seed=st.integers(0, 2**31),
)
def test_dpfl_pathological_properties(
    y: np.ndarray, n: int, c: int, alpha: float, seed: int
) -> None:
    try:
        p = dpfl_pathological(y, n, c, alpha, seed=seed)
    except ValueError:
        K = int((np.bincount(y) > 0).sum())
        holders = -(-n * c // max(K, 1))
        assert c > K or n * c < K or np.bincount(y)[np.bincount(y) > 0].min() < holders
        return
    check_invariants(p, y)
    assert np.all((p.label_distributions > 0).sum(axis=1) == c)
    assert same(p, dpfl_pathological(y, n, c, alpha, seed=seed))


@SETTINGS
@given(y=labels_st, g=st.integers(1, 20), n=st.integers(1, 25), seed=st.integers(0, 2**31))
def test_natural_properties(y: np.ndarray, g: int, n: int, seed: int) -> None:
    groups = np.random.default_rng(seed).integers(0, g, size=y.size) * 7 + 3
    ngroups = np.unique(groups).size
    if n > ngroups:
        with pytest.raises(ValueError, match="more clients than groups"):
            natural(y, groups, n, seed=seed)
        return
    p = natural(y, groups, n, seed=seed)
    check_invariants(p, y, covering=(n == ngroups))
    for i, idx in enumerate(p):
        assert np.all(groups[idx] == p.params["group_ids"][i])
        assert idx.size == int((groups == p.params["group_ids"][i]).sum())


@SETTINGS
@given(
    y=labels_st,
    n=st.integers(1, 30),
    val=st.sampled_from([0.0, 0.1, 0.25]),
    test=st.sampled_from([0.0, 0.2, 0.5]),
    seed=st.integers(0, 2**31),
)
def test_split_properties(y: np.ndarray, n: int, val: float, test: float, seed: int) -> None:
    assume(n <= y.size)
    p = dirichlet(y, n, 0.5, seed=seed)
    parts = p.split(val=val, test=test, seed=seed)
    for part in parts:
        check_invariants(part, y, covering=False)
        assert part.num_clients == n
    # Disjoint and together exactly the client's samples.
    for i in range(n):
        joined = np.concatenate([part[i] for part in parts])
        assert np.array_equal(np.sort(joined), p[i])
    tr, va, te = (part.label_distributions for part in parts)
    m = p.label_distributions
    sizes = p.sizes
    T = np.floor(test * sizes + 0.5)
    V = np.floor(val * sizes + 0.5)
    # Every class a client holds keeps a training sample: held-out classes are trained on.
    assert np.array_equal(tr > 0, m > 0)
    H = np.minimum(T + V, sizes - (m > 0).sum(axis=1))
    assert np.array_equal((va + te).sum(axis=1), H)
    assert np.array_equal(te.sum(axis=1), np.minimum(T, H))
    # Held-out label counts follow the client's label distribution (largest remainder) in every
    # client where no class is down to its last training sample (a seat such a class cannot
    # take moves to the next remainder).
    exact = H[:, None] * m / np.maximum(sizes, 1)[:, None]
    free = ((m == 0) | (m - (va + te) >= 2)).all(axis=1)
    assert np.all(np.abs((va + te) - exact)[free] < 1)
    assert np.all(va + te <= np.maximum(m - 1, 0))
    again = p.split(val=val, test=test, seed=seed)
    assert all(same(a, b) for a, b in zip(parts, again))


@SETTINGS
@given(y=labels_st, n=st.integers(1, 30), m=st.integers(1, 300), seed=st.integers(0, 2**31))
def test_distribute_properties(y: np.ndarray, n: int, m: int, seed: int) -> None:
    assume(n <= y.size)
    L = int(y.max()) + 1
    p = iid(y, n, seed=seed) if seed % 2 else shards(y, n, 1, seed=seed)
    other = np.random.default_rng(seed).integers(0, L, size=m)
    q = p.distribute(other, seed=seed)
    check_invariants(q, other, covering=False)
    held = p.label_distributions.sum(axis=0) > 0
    want = np.bincount(other, minlength=L)
    got = q.label_distributions.sum(axis=0)
    assert np.array_equal(got[held], want[held]) and np.all(got[~held] == 0)
    assert q.info["unassigned"] == int(want[~held].sum())
    # Each class is shared in proportion to the clients' counts (within one sample).
    ld = p.label_distributions
    share = want[None, :] * ld / np.maximum(ld.sum(axis=0), 1)[None, :]
    assert np.all(np.abs(q.label_distributions - share) < 1)
    assert same(q, p.distribute(other, seed=seed))


@SETTINGS
@given(
    totals=st.lists(st.integers(0, 1000), min_size=1, max_size=5),
    k=st.integers(1, 30),
    seed=st.integers(0, 2**31),
)
def test_apportion(totals: list[int], k: int, seed: int) -> None:
    from topofl.data.partition import _apportion_capped

    rng = np.random.default_rng(seed)
    T = np.array(totals, dtype=np.int64)
    W = rng.integers(0, 5, size=(T.size, k))
    W[:, 0] += 1  # no all-zero row
    c = _apportion_int(T, W, rng)
    assert np.array_equal(c.sum(axis=1), T)
    assert np.all(np.abs(c - T[:, None] * W / W.sum(axis=1, keepdims=True)) < 1)
    caps = rng.integers(0, 400, size=(T.size, k))
    Tc = np.minimum(T, caps.sum(axis=1))
    c = _apportion_capped(Tc, W, caps, rng)
    assert np.array_equal(c.sum(axis=1), Tc) and np.all(c <= caps) and np.all(c >= 0)
    P = rng.dirichlet(np.ones(k), size=T.size)
    c = _apportion_float(T, P, rng)
    assert np.array_equal(c.sum(axis=1), T) and np.all(c >= 0)
    assert np.all(np.abs(c - T[:, None] * P) < 1 + 1e-9)


# ---------------------------------------------------------------------------------- the papers
def test_shards_two_classes_when_classes_divide_evenly() -> None:
    y = np.repeat(np.arange(10), 500)  # 5000 samples, 1000 shards of 5: every shard pure
    for seed in range(5):
        p = shards(y, 500, 2, seed=seed)
        assert (p.label_distributions > 0).sum(axis=1).max() <= 2
        assert np.all(p.sizes == 10)


def test_shards_at_most_four_classes_like_mnist() -> None:
    # MNIST-like uneven classes (the 50k of D-Cliques): shards straddle at most two classes.
    counts = np.array([4932, 5678, 4968, 5101, 4859, 4506, 4951, 5175, 4842, 4988])
    y = np.repeat(np.arange(10), counts)
    p = shards(y, 1000, 2, seed=0)
    per_client = (p.label_distributions > 0).sum(axis=1)
    assert per_client.max() <= 4 and np.all(p.sizes == 50)
    assert np.mean(per_client <= 2) > 0.9  # "most nodes will have examples of 2 classes"


def test_digits_demo_partition() -> None:
    y = tf.data.load("digits").y_train
    p = shards(y, 100, 2, seed=0)
    assert p.num_clients == 100 and p.num_assigned == y.size
    assert set(p.sizes.tolist()) <= {14, 15, 16}
    assert (p.label_distributions > 0).sum(axis=1).max() <= 4


def test_dirichlet_is_skewed_for_small_alpha() -> None:
    y = np.repeat(np.arange(10), 1000)
    small = dirichlet(y, 100, 0.05, seed=0).label_distributions
    large = dirichlet(y, 100, 1000.0, seed=0).label_distributions
    assert (small > 0).sum(axis=1).mean() < 3 < 9 < (large > 0).sum(axis=1).mean()


def test_dirichlet_repair_gives_few_classes_to_topped_up_clients() -> None:
    y = np.repeat(np.arange(10), 5000)
    p = dirichlet(y, 1000, 0.01, min_size=10, seed=0)
    assert p.sizes.min() >= 10 and p.info["topped_up"] > 0
    assert (p.label_distributions > 0).sum(axis=1).mean() < 2


@pytest.mark.parametrize(
    "scheme",
    [
        lambda y: iid(y, 1000, seed=0),
        lambda y: shards(y, 1000, 2, seed=0),
        lambda y: dirichlet(y, 1000, 0.01, seed=0),
        lambda y: dirichlet(y, 1000, 0.01, min_size=20, seed=1),
        lambda y: dirichlet(y, 1000, 0.5, seed=0),
        lambda y: pathological(y, 1000, 2, seed=0),
        lambda y: dpfl_pathological(y, 1000, 3, 0.5, seed=0),
    ],
    ids=["iid", "shards", "dir0.01", "dir0.01-min20", "dir0.5", "patho2", "dpfl"],
)
def test_time_bound_1000_clients(scheme: Any) -> None:
    y = np.random.default_rng(0).integers(0, 10, size=50_000)
    t0 = time.perf_counter()
    p = scheme(y)
    elapsed = time.perf_counter() - t0
    check_invariants(p, y)
    assert elapsed < 1.0, f"took {elapsed:.3f} s"


def test_dirichlet_alpha_001_hypothesis_time_bound() -> None:
    @settings(max_examples=10, deadline=1000)
    @given(seed=st.integers(0, 2**31), min_size=st.integers(0, 40))
    def run(seed: int, min_size: int) -> None:
        y = np.random.default_rng(seed).integers(0, 10, size=50_000)
        p = dirichlet(y, 1000, 0.01, min_size=min_size, seed=seed)
        assert p.sizes.min() >= min_size

    run()


def test_seed_generator_and_independence() -> None:
    y = np.arange(300) % 7
    a = dirichlet(y, 10, 0.3, seed=np.random.default_rng(5))
    b = dirichlet(y, 10, 0.3, seed=np.random.default_rng(5))
    assert same(a, b) and a.params["seed"] is None
    assert not same(dirichlet(y, 10, 0.3, seed=1), dirichlet(y, 10, 0.3, seed=2))


def test_inputs_not_mutated() -> None:
    y = np.arange(100) % 5
    y0 = y.copy()
    p = shards(y, 5, seed=0)
    p.split(0.1, 0.2, seed=0)
    p.distribute(y, seed=0)
    assert np.array_equal(y, y0)
    y[0] = 4  # the partition holds its own copy
    assert p.labels[0] == 0


def test_accepts_lists_and_tensors() -> None:
    import torch

    y = [0, 1, 2, 0, 1, 2]
    assert same(iid(y, 2, seed=0), iid(torch.tensor(y), 2, seed=0))


def test_from_indices_and_views() -> None:
    p = Partition.from_indices([[3, 0], [], [1]], [0, 1, 1, 2], num_classes=4)
    assert p.indices[0].tolist() == [0, 3] and p[1].size == 0 and p[-1].tolist() == [1]
    assert p.unassigned().tolist() == [2]
    assert p.label_distributions.tolist() == [[1, 0, 1, 0], [0, 0, 0, 0], [0, 1, 0, 0]]
    assert len(p) == 3 and p.num_samples == 4 and p.num_assigned == 3
    with pytest.raises(ValueError, match="must lie in"):
        Partition.from_indices([[4]], [0, 1])
    with pytest.raises(ValueError, match="twice"):
        Partition.from_indices([[1, 1]], [0, 1])


def test_natural_group_ids_for_test_sets() -> None:
    y_tr, g_tr = np.array([0, 1, 1, 0]), np.array([5, 5, 8, 9])
    y_te, g_te = np.array([1, 0, 1]), np.array([9, 5, 4])
    p = natural(y_tr, g_tr, 2, seed=0)
    q = natural(y_te, g_te, group_ids=p.params["group_ids"])
    for i, gid in enumerate(p.params["group_ids"]):
        assert np.all(g_te[q[i]] == gid)
    with pytest.raises(TypeError, match="seed is required"):
        natural(y_tr, g_tr, 2)


# ------------------------------------------------------------------------- a split too large
def test_a_label_skew_split_that_cannot_fit_is_refused_before_it_allocates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # before: dirichlet(..., 10**9, min_size=0) allocated a (10, 10**9) mask, then MemoryError
    import tracemalloc

    from topofl.exceptions import InsufficientMemoryError

    monkeypatch.setenv("TOPOFL_MEMORY_LIMIT", "1000000000")  # 954 MiB, whatever the machine
    digits = tf.data.load("digits").y_train
    msg = ("a dirichlet split of 10 classes over 1,000,000,000 clients needs about 373 GiB of "
           "memory (estimated), but only 954 MiB is available; at most 2,500,000 clients fit")
    for call in (lambda: dirichlet(digits, 10**9, 0.5, min_size=0, seed=0),
                 lambda: tf.data.federate("digits", "dirichlet", 10**9, alpha=0.5, min_size=0,
                                          seed=0)):
        start = time.perf_counter()
        tracemalloc.start()
        try:
            with pytest.raises(InsufficientMemoryError) as info:
                call()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert str(info.value) == msg and isinstance(info.value, ValueError)
        assert info.value.max_clients == 2_500_000 and info.value.limit == 10**9
        assert peak < 50 * 2**20 and time.perf_counter() - start < 5.0  # nothing drawn
    # min_size >= 1 bounds n by the samples: that refusal comes first, as before
    with pytest.raises(ValueError, match=r"min_size cannot be met: n_clients \* min_size = "
                       r"1000000000 \* 1 = 1000000000 > N=1442 samples"):
        tf.data.federate("digits", "dirichlet", 10**9, alpha=0.5, seed=0)
    # the pathological schemes hold the same (class, client) tables: n <= N / c, but 10**5
    # clients of 10 classes need 40 MB
    y = np.arange(2 * 10**5) % 10
    monkeypatch.setenv("TOPOFL_MEMORY_LIMIT", "10000000")
    for scheme, fn in (("pathological", pathological), ("dpfl_pathological", dpfl_pathological)):
        with pytest.raises(InsufficientMemoryError, match=(
                rf"^a {scheme} split of 10 classes over 100,000 clients needs about 38.1 MiB of "
                r"memory \(estimated\), but only 9.54 MiB is available; at most 25,000 clients "
                "fit$")):
            fn(y, 10**5, 2, seed=0)
    # the boundary: 40 bytes a (class, client) cell
    monkeypatch.setenv("TOPOFL_MEMORY_LIMIT", str(40 * 10 * 100))
    y = np.arange(1000) % 10
    for fn in (lambda n: dirichlet(y, n, 0.5, min_size=0, seed=0),
               lambda n: pathological(y, n, 2, seed=0),
               lambda n: dpfl_pathological(y, n, 2, seed=0)):
        assert fn(100).num_clients == 100
        with pytest.raises(InsufficientMemoryError, match="at most 100 clients fit$"):
            fn(101)


def test_the_memory_check_leaves_every_split_as_it_was() -> None:
    # the check draws nothing: the docstrings' values, from a plain seed
    y = tf.data.load("digits").y_train
    p = dirichlet(y, 100, alpha=0.1, min_size=2, seed=0)
    assert (int(p.sizes.min()), p.info["topped_up"], p.info["moved"]) == (2, 9, 15)
    assert pathological(y, 5, 2, seed=0).label_distributions[0].tolist() == [
        0, 0, 142, 147, 0, 0, 0, 0, 0, 0]
    assert dpfl_pathological(y, 4, seed=0).label_distributions[0].tolist() == [
        0, 146, 7, 147, 0, 0, 0, 0, 0, 0]


# ---------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda y: dirichlet(y, 10, 0.0, seed=0), ValueError, r"alpha must be in \(0, inf\]"),
        (lambda y: dirichlet(y, 10, -1, seed=0), ValueError, "alpha"),
        (lambda y: pathological(y, 10, 11, seed=0), ValueError, "classes_per_client must be <="),
        (lambda y: dpfl_pathological(y, 10, 11, seed=0), ValueError, "classes_per_client"),
        (lambda y: pathological(y, 2, 2, seed=0), ValueError, "every class must be used"),
        (lambda y: iid(y, 101, seed=0), ValueError, "more clients than samples"),
        (lambda y: shards(y, 51, 2, seed=0), ValueError, "more shards than samples"),
        (lambda y: pathological(y, 100, 10, seed=0), ValueError, "1000 holdings need at least"),
        (lambda y: iid(y, 0, seed=0), ValueError, "n_clients must be >= 1"),
        (lambda y: iid(y, 2.5, seed=0), TypeError, "n_clients must be an int"),
        (lambda y: iid(y, 2, seed=None), TypeError, "seed must be"),
        (lambda y: iid(y.astype(float), 2, seed=0), TypeError, "labels must hold integers"),
        (lambda y: iid(y - 1, 2, seed=0), ValueError, r"labels must be integers in \[0, L\)"),
        (lambda y: iid(y, 2, seed=0, num_classes=5), ValueError, r"\[0, 5\), found 9"),
        (lambda y: iid(y.reshape(10, 10), 2, seed=0), ValueError, "one-dimensional"),
        (lambda y: iid(y[:0], 2, seed=0), ValueError, "at least one sample"),
        (lambda y: iid(y > 3, 2, seed=0), TypeError, "integers"),
        (
            lambda y: iid(y, 2, seed=0).split(0.5, 0.5, seed=0),
            ValueError,
            "val \\+ test must be < 1",
        ),
        (lambda y: iid(y, 2, seed=0).distribute([0, 10], seed=0), ValueError, "found 10"),
    ],
)
def test_bad_input(call: Any, exc: type[Exception], match: str) -> None:
    y = np.arange(100) % 10
    with pytest.raises(exc, match=match):
        call(y)
