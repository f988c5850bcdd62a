"""kNN-Per: the kNN vote against scikit-learn, interpolation 0 = the global model, the whole
evaluation chain against a brute-force reference, and the feature services."""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.neighbors import KNeighborsClassifier

import topofl as tf
from topofl.algorithms.knn_per import knn_probabilities

D = torch.float64


def _sklearn_proba(keys: np.ndarray, labels: np.ndarray, query: np.ndarray, k: int, T: float,
                   num_classes: int) -> np.ndarray:
    clf = KNeighborsClassifier(n_neighbors=k, weights=lambda d: np.exp(-d / T),
                               algorithm="brute")
    clf.fit(keys, labels)
    proba = clf.predict_proba(query)
    out = np.zeros((query.shape[0], num_classes))
    out[:, clf.classes_] = proba
    return out


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(1, 6), T=st.floats(0.2, 5.0))
def test_knn_vote_matches_sklearn(seed: int, k: int, T: float) -> None:
    rng = np.random.default_rng(seed)
    n, M, m, d, C = 3, 12, 5, 4, 4
    counts = [M, 9, k]  # client 2 holds exactly k samples: padding in the datastore
    keys = rng.normal(size=(n, M, d))
    labels = rng.integers(0, C, size=(n, M))
    valid = np.zeros((n, M), dtype=bool)
    for i, c in enumerate(counts):
        valid[i, :c] = True
        keys[i, c:] = 0.0  # padding near every query must not count
    query = rng.normal(size=(n, m, d))
    got = knn_probabilities(torch.tensor(query), torch.tensor(keys), torch.tensor(labels),
                            torch.tensor(valid), k=k, num_classes=C, temperature=T).numpy()
    for i, c in enumerate(counts):
        ref = _sklearn_proba(keys[i, :c], labels[i, :c], query[i], k, T, C)
        np.testing.assert_allclose(got[i], ref, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("m", [65, 130, 1000])
def test_sliced_queries_give_the_unsliced_numbers(monkeypatch: pytest.MonkeyPatch,
                                                  dtype: torch.dtype, m: int) -> None:
    # a cap of 64 rows forces 2, 3 and 16 slices; every row the unsliced one to rounding,
    # padding and a client with fewer stored samples than k included. Not to the last bit:
    # torch.cdist's matrix product (MKL) blocks a [n, rows, d] x [n, d, M] product by its
    # shape and the CPU, so a slice's distances may differ from the whole's in the last bits
    import importlib

    mod = importlib.import_module("topofl.algorithms.knn_per")

    gen = torch.Generator().manual_seed(m)
    n, M, d, C = 4, 300, 40, 10
    query = torch.randn(n, m, d, generator=gen, dtype=dtype)
    keys = torch.randn(n, M, d, generator=gen, dtype=dtype)
    labels = torch.randint(0, C, (n, M), generator=gen)
    valid = torch.ones(n, M, dtype=torch.bool)
    valid[1, 120:] = False
    valid[2, 3:] = False
    kw = dict(k=10, num_classes=C, temperature=0.7)
    whole = knn_probabilities(query, keys, labels, valid, **kw)
    monkeypatch.setattr(mod, "DISTANCE_ELEMENTS", n * M * 64)
    sliced = knn_probabilities(query, keys, labels, valid, **kw)
    assert sliced.shape == (n, m, C)
    # a query whose k-th and (k+1)-th neighbours are at near-equal distances (in float64) may
    # swap them between the two computations (float32 distances differ by ~3e-6): those rows
    # are left out (a handful at most)
    exact = torch.cdist(query.double(), keys.double()).masked_fill(~valid.unsqueeze(1), math.inf)
    near = exact.sort(dim=2).values
    tie = 3e-5 if dtype == torch.float32 else 1e-10
    tied = (near[:, :, kw["k"]] - near[:, :, kw["k"] - 1]) < tie  # inf - inf: nan, not tied
    assert int(tied.sum()) <= tied.numel() // 50
    if dtype == torch.float64:
        # float64: the distances agree to ~1e-14, the probabilities to ~1e-15
        torch.testing.assert_close(sliced[~tied], whole[~tied], rtol=1e-12, atol=1e-12)
    else:
        # float32: the two products sum in different orders; distances (~9, squared ~80,
        # ulp 8e-6) differ by ~3e-6 and the probabilities by ~1e-6 (measured); a wrong slice,
        # row or mask moves a probability by >1e-2
        torch.testing.assert_close(sliced[~tied], whole[~tied], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(sliced.sum(2), torch.ones(n, m, dtype=dtype))
    # against the per-client, per-query reference (the slices change nothing but memory)
    ref = knn_probabilities(query[:1, :1], keys[:1], labels[:1], valid[:1], **kw)
    torch.testing.assert_close(sliced[:1, :1], ref)


def test_fewer_samples_than_k_vote_with_all_and_none_is_uniform() -> None:
    keys = torch.tensor([[[0.0], [1.0], [5.0]], [[0.0], [0.0], [0.0]]], dtype=D)
    labels = torch.tensor([[0, 1, 1], [0, 0, 0]])
    valid = torch.tensor([[True, True, False], [False, False, False]])
    p = knn_probabilities(torch.tensor([[[0.0]], [[0.0]]], dtype=D), keys, labels, valid, k=10,
                          num_classes=2, temperature=1.0)
    w = np.exp([0.0, -1.0])
    np.testing.assert_allclose(p[0, 0].numpy(), w / w.sum(), atol=1e-15)
    assert p[1, 0].tolist() == [0.5, 0.5]


@pytest.fixture(scope="module")
def data() -> Any:
    return tf.data.federate("digits", "pathological", 5, classes_per_client=2, seed=0)


def _run(name: str, data: Any, **kw: Any) -> Any:
    model = tf.models.build_model("mlp", data.input_shape, 10, seed=0, hidden=(8,))
    return tf.run(name, data=data, model=model, rounds=2, seed=0, lr=0.1, local_steps=3,
                  record_clients=True, spectral=False, dtype="float64", **kw)


def test_interpolation_zero_is_the_global_model(data: Any) -> None:
    a = _run("knn_per", data, interpolation=0.0)
    b = _run("fedavg", data)
    np.testing.assert_allclose(a.state.x.numpy(), b.state.x.numpy(), atol=1e-13)
    for metric in ("test_acc", "global_acc_mean"):
        ra = [r["value"] for r in a.records.rows if r["metric"] == metric]
        rb = [r["value"] for r in b.records.rows if r["metric"] == metric]
        assert ra and ra == rb, metric
    assert a.records.final("test_loss") == pytest.approx(b.records.final("test_loss"),
                                                         rel=1e-12)


def test_recorded_accuracy_is_the_interpolated_classifiers(data: Any) -> None:
    lam, k, T = 0.7, 4, 2.0
    res = _run("knn_per", data, interpolation=lam, k=k, temperature=T)
    model = tf.models.build_model("mlp", data.input_shape, 10, seed=0, hidden=(8,)).double()
    rows = [r for r in res.records.rows if r["metric"] == "test_acc"]
    last = max(r["round"] for r in rows)
    per_client = {r["client"]: r["value"] for r in rows if r["round"] == last}
    assert sorted(per_client) == list(range(data.num_clients))
    for i in range(data.num_clients):
        m = copy.deepcopy(model)
        m.load_state_dict(res.client_parameters(i))
        with torch.no_grad():
            xtr, ytr = (v.double() if v.is_floating_point() else v for v in data.client(i))
            xte, yte = (v.double() if v.is_floating_point() else v
                        for v in data.client(i, "test"))
            ytr, yte = ytr.numpy(), yte.numpy()
            ftr, fte = m.body(xtr).numpy(), m.body(xte).numpy()
            p_model = torch.softmax(m(xte), dim=1).numpy()
        p = lam * _sklearn_proba(ftr, ytr, fte, k, T, 10) + (1 - lam) * p_model
        assert per_client[i] == pytest.approx(float((p.argmax(1) == yte).mean()), abs=1e-12)


def test_loop_and_batched_executors_give_the_same_features_and_records(data: Any) -> None:
    a = _run("knn_per", data, executor="batched", k=3)
    b = _run("knn_per", data, executor="loop", k=3)
    ra = [(r["metric"], r["client"], r["value"]) for r in a.records.rows
          if r["metric"] in ("test_acc", "test_loss", "global_acc_mean")]
    rb = [(r["metric"], r["client"], r["value"]) for r in b.records.rows
          if r["metric"] in ("test_acc", "test_loss", "global_acc_mean")]
    assert len(ra) == len(rb) > 0
    for x, y in zip(ra, rb):
        assert x[:2] == y[:2] and x[2] == pytest.approx(y[2], rel=1e-9)
    xs = data.x[:5].double()
    np.testing.assert_allclose(a.services.features(a.state.x, xs, shared_input=True).numpy(),
                               b.services.features(b.state.x, xs, shared_input=True).numpy(),
                               rtol=1e-12)


def test_feature_services(data: Any) -> None:
    env = tf.engine.toy_services(2, 3)
    with pytest.raises(ValueError, match="features needs"):
        env.features(torch.zeros(2, 3), torch.zeros(2, 1, 3))
    algo = tf.algorithms.knn_per(local_steps=1)
    logistic = tf.models.build_model("logistic", data.input_shape, 10, seed=0)
    res = tf.run(algo, data=data, model=logistic, rounds=1, seed=0, spectral=False)
    xs = data.x[:7]
    f = res.services.features(res.state.x, xs, shared_input=True)
    assert f.shape == (data.num_clients, 7, int(np.prod(data.input_shape)))
    np.testing.assert_array_equal(f[3].numpy(), xs.reshape(7, -1).numpy())  # raw inputs
    feats, labels, mask = res.services.split_features(res.state.x, "train")
    sizes = np.asarray(data.sizes("train"))
    assert mask.sum(1).tolist() == sizes.tolist() and feats.shape[1] == sizes.max()
    plain = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
    with pytest.raises(ValueError, match="SplitModel"):
        tf.run(algo, data=data, model=plain, rounds=1, seed=0, spectral=False)


@pytest.mark.parametrize("kw,exc,match", [
    (dict(k=0), ValueError, "k"),
    (dict(interpolation=1.5), ValueError, "interpolation"),
    (dict(temperature=0.0), ValueError, "temperature"),
    (dict(k=2.5), TypeError, "k"),
])
def test_bad_hyperparameters(kw: dict[str, Any], exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        tf.algorithms.knn_per(**kw)
