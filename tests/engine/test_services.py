"""The engine services data-driven algorithms use: local training, losses, realized graphs."""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np
import pytest
import torch

import topofl as tf
from topofl.engine import Sent
from topofl.engine.services import DataServices


@pytest.fixture(scope="module")
def setup() -> Any:
    data = tf.data.federate("digits", "shards", 6, seed=0, val=0.2)
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    model = model.double()
    layout = tf.engine.ParamLayout.from_model(model)
    ex = tf.engine.executors.LoopExecutor(model, layout)
    ctx = DataServices(layout, tf.engine.gossip.Mixer(torch.device("cpu"), torch.float64), ex, data,
                       batch_size=4)
    x = torch.randn(6, layout.num_params, dtype=torch.float64,
                    generator=torch.Generator().manual_seed(0)) * 0.1
    return data, model, layout, ctx, x


def _ref_loss(model: Any, layout: Any, row: torch.Tensor, xs: torch.Tensor,
              ys: torch.Tensor) -> float:
    params = {k: v for k, v in layout.views(row.unsqueeze(0)).items()}
    out = torch.func.functional_call(model, {k: v[0] for k, v in params.items()},
                                     (xs.double(),))
    return float(torch.nn.functional.cross_entropy(out, ys))


def test_losses_match_per_client_reference(setup: Any) -> None:
    data, model, layout, ctx, x = setup
    got = ctx.losses(x, "val")
    for i in range(6):
        xs, ys = data.client(i, "val")
        assert float(got[i]) == pytest.approx(_ref_loss(model, layout, x[i], xs, ys), rel=1e-10)


def test_cross_losses_evaluate_model_i_on_peer_data(setup: Any) -> None:
    data, model, layout, ctx, x = setup
    peers = torch.tensor([[1, 2], [0, 0], [5, 3], [2, 1], [4, 4], [0, 1]])
    got = ctx.cross_losses(x, peers, t=0)
    xb, yb = data.sample(0, (1 << 20) * 100, 4)
    for i in range(6):
        for j in range(2):
            p = int(peers[i, j])
            ref = _ref_loss(model, layout, x[i], xb[p], yb[p])
            assert float(got[i, j]) == pytest.approx(ref, rel=1e-10)


def test_local_train_only_moves_its_part_and_lowers_loss(setup: Any) -> None:
    data, model, layout, ctx, x = setup
    y = x.clone()
    before = ctx.losses(y, "train")
    ctx.local_train(y, "all", 0.5, t=0, steps=20)
    after = ctx.losses(y, "train")
    assert bool((after < before).all())
    with pytest.raises(ValueError, match="exactly one"):
        ctx.local_train(y, "all", 0.5, t=0)


def test_losses_need_the_split(setup: Any) -> None:
    data = tf.data.federate("digits", "shards", 6, seed=0)  # no validation split
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    layout = tf.engine.ParamLayout.from_model(model)
    ctx = DataServices(layout, tf.engine.gossip.Mixer(torch.device("cpu"), torch.float32),
                       tf.engine.executors.BatchedExecutor(model, layout), data, batch_size=32)
    with pytest.raises(ValueError, match="no 'val' samples"):
        ctx.losses(torch.zeros(6, layout.num_params), "val")
    # data without the split at all: no fallback (every client lacks it)
    with pytest.raises(ValueError, match=r"client 0 has no 'val' samples \(the data has none\)"):
        ctx.losses(torch.zeros(6, layout.num_params), "val", fallback="train")


def _with_a_tiny_client() -> Any:
    """Digits over 4 clients: clients 0-2 of 60 samples, client 3 of one sample of each of
    two classes (so it keeps both for training: no validation or test sample)."""
    y = tf.data.load("digits").y_train
    tiny = [int(np.flatnonzero(y == c)[0]) for c in (0, 1)]
    rest = np.setdiff1d(np.arange(y.size), tiny)[:180]
    p = tf.data.Partition.from_indices([rest[:60], rest[60:120], rest[120:], tiny], y)
    return tf.data.FederatedData.from_partition(tf.data.load("digits"), p, seed=0, val=0.2,
                                                test=0.2)


def test_losses_fall_back_to_another_split_for_a_client_without_samples() -> None:
    data = _with_a_tiny_client()
    assert data.sizes("val").tolist()[3] == 0 and data.sizes("train").tolist()[3] == 2
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0).double()
    layout = tf.engine.ParamLayout.from_model(model)
    ctx = DataServices(layout, tf.engine.gossip.Mixer(torch.device("cpu"), torch.float64),
                       tf.engine.executors.BatchedExecutor(model, layout), data, batch_size=4)
    x = torch.randn(4, layout.num_params, dtype=torch.float64,
                    generator=torch.Generator().manual_seed(1)) * 0.1
    with pytest.raises(ValueError, match="client 3 has no 'val' samples"):
        ctx.losses(x, "val")
    got = ctx.losses(x, "val", fallback="train")
    for i, split in enumerate(["val", "val", "val", "train"]):
        xs, ys = data.client(i, split)
        assert float(got[i]) == pytest.approx(_ref_loss(model, layout, x[i], xs, ys), rel=1e-10)
    rows = torch.tensor([1, 3])
    torch.testing.assert_close(ctx.losses(x, "val", rows=rows, fallback="train"), got[rows])
    with pytest.raises(ValueError, match="client 3 has no 'val' samples nor 'test'"):
        ctx.losses(x, "val", fallback="test")
    with pytest.raises(ValueError, match="fallback must be one of .*got 'nope'"):
        ctx.losses(x, "val", fallback="nope")


def test_realized_graph_is_recorded() -> None:
    data = tf.data.federate("digits", "iid", 4, seed=0)
    base = tf.algorithms.local(lr=0.1)

    def communicate(state: Any, rnd: Any, env: Any) -> Sent:
        G = nx.DiGraph([(0, 1), (1, 0), (2, 3)]) if rnd.t % 2 == 0 else nx.DiGraph([(3, 2)])
        G.add_nodes_from(range(4))
        return Sent(G.number_of_edges(),
                    tf.Topology.from_networkx(G, weights="uniform", name="chosen"))

    algo = base._replace(name="toy", communicate=communicate)
    res = tf.run(algo, data=data, rounds=3, seed=0, eval_every=1)
    rec = res.records
    edges = [r["value"] for r in rec.rows if r["metric"] == "realized_edges"]
    assert edges == [[[0, 1], [1, 0], [2, 3]], [[3, 2]], [[0, 1], [1, 0], [2, 3]]]
    _, dens = rec.series("realized_density")
    np.testing.assert_allclose(dens, [3 / 12, 1 / 12, 3 / 12])
    _, rcp = rec.series("realized_reciprocity")
    np.testing.assert_allclose(rcp, [2 / 3, 0, 2 / 3])
    assert "realized.spectral_gap" in rec.metrics or "realized.spectral_gap_norm" in rec.metrics
    _, msgs = rec.series("messages")
    assert msgs.tolist() == [3, 4, 7]
