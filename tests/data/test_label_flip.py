"""Label-flipping clients (DPFL's malicious clients): which clients, which permutation, which rows.

Checks: round(fraction * n) clients flipped, a derangement shared by all of them, every split of
a flipped client (train, val, local test) permuted and nothing else changed (inputs, other
clients, the global test set), seeded, recorded in params and in a run's records header, and
expressible in a ``topofl run`` config (``partition_params.flip_labels``).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.data.corrupt import LabelFlip, flip_labels, label_flip_plan, random_derangement


def _data(flip: float, seed: int = 0, n: int = 10) -> tf.data.FederatedData:
    return tf.data.federate("digits", "pathological", n, classes_per_client=2, seed=seed,
                            val=0.2, flip_labels=flip)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 200), L=st.integers(2, 20), f=st.floats(0, 1), s=st.integers(0, 2**20))
def test_plan_counts_and_derangement(n: int, L: int, f: float, s: int) -> None:
    plan = label_flip_plan(n, L, f, seed=s)
    m = int(np.floor(f * n + 0.5))
    assert plan.clients.size == m == len(set(plan.clients.tolist()))
    assert np.all(np.diff(plan.clients) > 0) and (m == 0 or plan.clients.max() < n)
    assert sorted(plan.permutation.tolist()) == list(range(L))  # a permutation
    if m:
        assert np.all(plan.permutation != np.arange(L))  # no label keeps its class
    else:
        assert plan.permutation.tolist() == list(range(L))
    again = label_flip_plan(n, L, f, seed=s)
    assert np.array_equal(plan.clients, again.clients)
    assert np.array_equal(plan.permutation, again.permutation)


def test_derangement_is_uniform_over_derangements() -> None:
    # the 2 derangements of 3 classes, each drawn about half of the time
    seen = [tuple(random_derangement(3, seed=s).tolist()) for s in range(400)]
    assert set(seen) == {(1, 2, 0), (2, 0, 1)}
    assert 150 < seen.count((1, 2, 0)) < 250


def test_flip_labels_hand_case() -> None:
    plan = LabelFlip(np.array([0, 2]), np.array([2, 0, 1]))
    y = np.array([0, 1, 2, 2, 0, 1])
    # client 0: rows 0-1, client 1: rows 2-3, client 2: rows 4-5
    assert flip_labels(y, np.array([2, 2, 2]), plan).tolist() == [2, 0, 2, 2, 2, 0]
    assert y.tolist() == [0, 1, 2, 2, 0, 1]  # input not mutated
    with pytest.raises(ValueError, match="sizes must sum"):
        flip_labels(y, np.array([2, 2]), plan)


def test_federate_flips_every_split_of_the_chosen_clients_only() -> None:
    clean, bad = _data(0.0), _data(0.4)
    info = bad.params["label_flip"]
    perm = torch.tensor(info["permutation"])
    assert info["fraction"] == 0.4 and len(info["clients"]) == 4
    assert bad.flipped.tolist() == [i in info["clients"] for i in range(10)]
    assert "label_flip" not in clean.params and not clean.flipped.any()
    assert torch.equal(clean.x, bad.x)  # the same samples, the same split
    for split in ("train", "val", "test"):
        assert np.array_equal(clean.sizes(split), bad.sizes(split))
        for i in range(10):
            (_, y0), (_, y1) = clean.client(i, split), bad.client(i, split)
            assert y0.numel() > 0
            if bad.flipped[i]:
                assert torch.equal(y1, perm[y0]) and bool((y1 != y0).all())
            else:
                assert torch.equal(y1, y0)
    assert torch.equal(clean.global_test[1], bad.global_test[1])  # never flipped
    # the label counts describe the partition of the dataset's labels, before flipping
    assert np.array_equal(clean.label_distributions, bad.label_distributions)


def test_seeded() -> None:
    a, b, c = _data(0.5, seed=1), _data(0.5, seed=1), _data(0.5, seed=2)
    assert a.params["label_flip"] == b.params["label_flip"] and torch.equal(a.y, b.y)
    assert a.params["label_flip"] != c.params["label_flip"]


def test_bad_fraction() -> None:
    with pytest.raises(ValueError, match="flip_labels"):
        _data(1.5)
    with pytest.raises(TypeError, match="flip_labels"):
        _data("0.4")  # type: ignore[arg-type]


def test_config_and_records_carry_the_plan() -> None:
    cfg = tf.config.validate({"algorithm": "local", "n_clients": 6, "partition": "iid",
                              "partition_params": {"val": 0.2, "flip_labels": 0.5},
                              "rounds": 1})
    assert cfg["partition_params"]["flip_labels"] == 0.5
    with pytest.raises(tf.config.ConfigTypeError, match="flip_labels"):
        tf.config.validate({"algorithm": "local", "partition": "iid",
                            "partition_params": {"flip_labels": "half"}})
    res = tf.run("local", n_clients=6, partition="iid",
                 partition_params={"val": 0.2, "flip_labels": 0.5}, rounds=1, seed=3,
                 local_steps=1, batch_size=8)
    assert res.records.config["partition_params"]["flip_labels"] == 0.5
    plan = res.records.engine["data"]["label_flip"]
    ref = tf.data.federate("digits", "iid", 6, seed=3, val=0.2, flip_labels=0.5)
    assert plan == ref.params["label_flip"] and len(plan["clients"]) == 3
