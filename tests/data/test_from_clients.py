"""Every client's own samples (``tf.data.from_clients``): the layout, the sampling and the
batched engine's regression path, against slow obvious references."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from topofl.exceptions import ConvergenceError


def _problem(n: int, m: int | list[int], d: int, k: int | None = None, *, seed: int = 0):
    """``n`` clients of a linear model each (``m`` samples, ``d`` features, ``k`` outputs or
    one for ``None``) around their own optimum, float64."""
    rng = np.random.default_rng(seed)
    sizes = [m] * n if isinstance(m, int) else m
    A = [rng.normal(size=(s, d)) for s in sizes]
    if k is None:
        b = [a @ rng.normal(size=d) + 0.1 * rng.normal(size=len(a)) for a in A]
    else:
        b = [a @ rng.normal(size=(d, k)) for a in A]
    return A, b


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(1, 9), min_size=1, max_size=6), d=st.integers(1, 4),
       k=st.sampled_from([None, 1, 3]), seed=st.integers(0, 2**16))
def test_every_client_holds_its_own_rows(sizes, d, k, seed):
    """Client ``i``'s train and test rows are its arrays, in order; a batch holds only its own
    rows, and the padded evaluation batches hold every test sample once."""
    A, b = _problem(len(sizes), sizes, d, k, seed=seed)
    data = tf.data.from_clients(list(zip(A, b)), seed=seed)
    assert data.objective == "squared_error"
    assert data.num_classes == (1 if k is None else k) and data.input_shape == (d,)
    for i, (a, t) in enumerate(zip(A, b)):
        for split in ("train", "test"):
            x, y = data.client(i, split)
            np.testing.assert_array_equal(x.numpy(), a.astype(np.float32))
            np.testing.assert_array_equal(y.numpy(), t.astype(np.float32))
    x, y = data.sample(round=3, step=1, batch_size=4)
    assert tuple(y.shape) == (len(sizes), 4) + (() if k is None else (k,))
    idx = data.sample_indices(3, 1, 4)
    offsets = data.segments_of("train").offsets
    for i in range(len(sizes)):
        assert bool(((idx[i] >= offsets[i]) & (idx[i] < offsets[i] + sizes[i])).all())
        torch.testing.assert_close(y[i], data.y[idx[i]])
    seen = sum(int(bt.mask.sum()) for bt in data.eval_batches("test", batch_size=2))
    assert seen == sum(sizes)
    ys = torch.cat([bt.y[bt.mask] for bt in data.eval_batches("test", batch_size=2)])
    assert tuple(ys.shape[1:]) == (() if k is None else (k,))


def test_validation_pairs_are_each_clients_own_and_dpfl_reads_them():
    """``val=``: client ``i``'s validation rows are its pair, in order; DPFL, which builds its
    graph from validation losses, runs on them (and is refused without them); an uneven
    count is refused in one line."""
    rng = np.random.default_rng(3)
    train = [(rng.normal(size=(12, 4)), rng.integers(0, 3, 12)) for _ in range(4)]
    val = [(rng.normal(size=(m, 4)), rng.integers(0, 3, m)) for m in (3, 0, 2, 5)]
    data = tf.data.from_clients(train, seed=0, val=val)
    assert data.sizes("val").tolist() == [3, 0, 2, 5]
    for i, (x, y) in enumerate(val):
        xv, yv = data.client(i, "val")
        np.testing.assert_array_equal(xv.numpy(), x.astype(np.float32))
        np.testing.assert_array_equal(yv.numpy(), y)
    assert data.params["val"] == "given"
    assert "val" not in tf.data.from_clients(train, seed=0).params  # earlier runs' hash
    res = tf.run("dpfl", None, data, "logistic", 2, seed=0, batch_size=4, lr=0.1,
                 eval_val=True)
    assert "val_acc_mean" in res.records.metrics
    with pytest.raises(ValueError, match=r"no 'val' samples \(the data has none\)"):
        tf.run("dpfl", None, tf.data.from_clients(train, seed=0), "logistic", 2, seed=0,
               batch_size=4, lr=0.1)
    with pytest.raises(ValueError, match="val must hold one"):
        tf.data.from_clients(train, seed=0, val=val[:3])


def test_labels_make_a_classification_task():
    rng = np.random.default_rng(1)
    pairs = [(rng.normal(size=(5, 2)), np.array([0, 1, 1, 4, 0])) for _ in range(3)]
    data = tf.data.from_clients(pairs, seed=0, global_test=(np.ones((2, 2)), np.array([0, 3])))
    assert data.objective == "cross_entropy" and data.num_classes == 5
    assert data.label_distributions.tolist() == [[2, 2, 0, 0, 1]] * 3
    assert tuple(data.global_test[0].shape) == (2, 2)
    res = tf.run("dsgd", "ring", data, "logistic", 3, seed=0, batch_size=2)
    assert {"test_acc_mean", "global_acc_mean"} <= set(res.records.metrics)


def test_the_engines_dsgd_is_the_hand_written_one():
    """D-SGD through ``tf.run`` on least squares, float64: every round, each client's
    gradient of the squared error on the engine's own mini-batch
    (``data.sample_indices``), then the ring's gossip, written out by hand: equal to 1e-12."""
    n, d, rounds, lr, bs = 6, 3, 12, 0.05, 5
    A, b = _problem(n, 25, d)
    data = tf.data.from_clients(list(zip(A, b)), seed=0)
    model = torch.nn.Linear(d, 1, bias=False).double()
    x = model.weight.detach().reshape(-1).repeat(n, 1).clone()
    topo = tf.topologies.ring(n)
    res = tf.run("dsgd", topo, data, model, rounds, seed=0, batch_size=bs, lr=lr,
                 dtype="float64")
    W = torch.as_tensor(topo.W.toarray(), dtype=torch.float64)
    X, Y = data.x.double(), data.y.double()
    for t in range(rounds):
        idx = data.sample_indices(t, 0, bs)
        g = torch.stack([X[idx[i]].T @ (X[idx[i]] @ x[i] - Y[idx[i]]) / bs for i in range(n)])
        x = W @ (x - lr * g)
    torch.testing.assert_close(res.state.x, x, rtol=1e-12, atol=1e-12)
    # the recorded test loss is every client's mean squared error / 2 on its own samples
    want = np.mean([0.5 * np.mean((A[i] @ x[i].numpy() - b[i]) ** 2) for i in range(n)])
    assert res.records.final("test_loss") == pytest.approx(want, rel=1e-6)


def test_a_regression_run_records_losses_not_accuracies(tmp_path):
    """Several outputs, an MLP, validation scoring, per-client records: losses everywhere, no
    accuracy column (not a NaN one), and no label skew made up (NaN: the data has none)."""
    A, b = _problem(5, 16, 4, k=2)
    data = tf.data.from_clients(list(zip(A, b)), seed=0,
                                global_test=(np.ones((3, 4)), np.zeros((3, 2))))
    res = tf.run("dsgd", "ring", data, "mlp", 4, seed=0, batch_size=4, lr=0.02,
                 records_path=tmp_path / "r.jsonl")
    metrics = set(res.records.metrics)
    assert {"test_loss", "global_loss", "train_loss"} <= metrics
    assert not {m for m in metrics if m.endswith("acc") or "_acc_" in m}
    rounds, per = res.records.clients("test_loss")
    assert per.shape == (len(rounds), 5) and np.isfinite(per).all()
    with pytest.warns(RuntimeWarning, match="neighborhood_skew"):  # NaN: no labels
        assert np.isnan(res.records.final("graph.neighborhood_skew"))
    data_row = tf.records.load(tmp_path / "r.jsonl").config["data"]["params"]
    assert data_row["task"] == "regression" and len(data_row["digest"]) == 16


def test_regression_is_refused_where_labels_are_needed():
    A, b = _problem(4, 10, 3)
    data = tf.data.from_clients(list(zip(A, b)), seed=0)
    with pytest.raises(ValueError, match="has no labels to count"):
        _ = data.label_distributions
    with pytest.raises(ValueError, match="knn_per .* needs class labels"):
        tf.run("knn_per", None, data, "mlp", 2, seed=0, batch_size=4)
    with pytest.raises(ValueError, match="balanced accuracy"):
        tf.run("dsgd", "ring", data, "logistic", 2, seed=0, balanced_accuracy=True)


@pytest.mark.parametrize("name", ["dsgt", "gt_saga", "exact_diffusion", "fedavg", "scaffold",
                                  "ditto", "fedrep", "choco"])
def test_algorithms_train_on_regression(name):
    """A sample of the algorithms (tracking, variance reduction, server, personalised,
    compressed) on two-output least squares with an MLP: a finite test loss below the
    starting one after 15 rounds."""
    A, b = _problem(6, 20, 4, k=2, seed=3)
    data = tf.data.from_clients(list(zip(A, b)), seed=0)
    topology = None if name in ("fedavg", "scaffold", "ditto", "fedrep") else "ring"
    res = tf.run(name, topology, data, "mlp", 15, seed=0, batch_size=5, lr=0.01, eval_every=1)
    losses = res.records.series("test_loss")[1]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]


def test_bad_input_is_refused_in_one_line():
    good = [(np.ones((3, 2)), np.ones(3)), (np.ones((2, 2)), np.ones(2))]
    cases = [
        (TypeError, "train must be a sequence of .x, y. pairs", np.ones((3, 2))),
        (ValueError, "at least one client", []),
        (TypeError, r"train\[0\] must be an \(x, y\) pair", [np.ones((3, 2))]),
        (ValueError, r"train\[0\] must be x \[m, \*input_shape\]",
         [(np.ones((3, 2)), np.ones(4))]),
        (ValueError, "share one shape", [(np.ones((3, 2)), np.ones(3)),
                                         (np.ones((3, 5)), np.ones(3))]),
        (TypeError, "all floating .* or all integer", [(np.ones((3, 2)), np.ones(3)),
                                                      (np.ones((3, 2)), np.ones(3, int))]),
        (ValueError, "non-finite", [(np.ones((3, 2)), np.array([1.0, np.nan, 0.0]))]),
        (ValueError, "labels must be >= 0", [(np.ones((2, 2)), np.array([0, -1]))]),
        (TypeError, "must hold numbers", [(np.array([["a"]]), np.ones(1))]),
    ]
    for error, match, train in cases:
        with pytest.raises(error, match=match):
            tf.data.from_clients(train, seed=0)
    with pytest.raises(ValueError, match="one .x, y. pair a client: 2 clients train, got 1"):
        tf.data.from_clients(good, test=good[:1], seed=0)
    with pytest.raises(ValueError, match="or 'train', got 'val'"):
        tf.data.from_clients(good, test="val", seed=0)


def test_the_same_arrays_are_the_same_data():
    """The digest names the arrays: equal arrays, equal params (and run hashes); one changed
    target, another digest."""
    A, b = _problem(3, 6, 2)
    one = tf.data.from_clients(list(zip(A, b)), seed=0)
    again = tf.data.from_clients([(torch.as_tensor(a), torch.as_tensor(t)) for a, t in
                                  zip(A, b)], seed=0)
    assert dict(one.params) == dict(again.params)
    b[1] = b[1].copy()
    b[1][0] += 1.0
    other = tf.data.from_clients(list(zip(A, b)), seed=0)
    assert other.params["digest"] != one.params["digest"]


def test_a_diverging_regression_run_stops_with_the_runs_error():
    A, b = _problem(4, 10, 3)
    data = tf.data.from_clients(list(zip(A, [100 * t for t in b])), seed=0)
    with pytest.raises(ConvergenceError):
        tf.run("dsgd", "ring", data, "logistic", 30, seed=0, batch_size=10, lr=5.0)


def test_regression_runs_do_not_stack():
    """A stack scores class labels: runs on regression targets run alone, saying why."""
    A, b = _problem(4, 10, 3)
    data = tf.data.from_clients(list(zip(A, b)), seed=0)
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    run = tf.engine.stack.Member(tf.engine.RunConfig(rounds=2), tf.topologies.ring(4),
                                 tf.algorithms.dsgd(), data, model)
    assert "trains on regression targets: it runs alone" in tf.engine.stack.stack_problem(
        [run, run])


def test_a_ranks_share_of_regression_data_is_the_wholes():
    """A distributed rank's ``ShardData`` of several-output targets: its batches, its padded
    evaluation batches and its objective are the whole data's rows of its clients."""
    from topofl.distributed.data import ShardData

    A, b = _problem(5, [4, 7, 3, 6, 5], 3, k=2)
    data = tf.data.from_clients(list(zip(A, b)), seed=0)
    part = ShardData(data, [1, 3])
    assert part.objective == "squared_error"
    x, y = part.sample(2, 1, 4)
    wx, wy = data.sample(2, 1, 4)
    assert torch.equal(x, wx[[1, 3]]) and torch.equal(y, wy[[1, 3]])
    out = (torch.empty_like(x), torch.empty_like(y))
    part.sample(2, 1, 4, out=out)
    assert torch.equal(out[1], y)
    for mine, whole in zip(part.eval_batches("test", 3), data.eval_batches("test", 3)):
        assert torch.equal(mine.y, whole.y[[1, 3]]) and torch.equal(mine.mask, whole.mask[[1, 3]])
    with pytest.raises(ValueError, match="has no labels to count"):
        _ = part.label_distributions
