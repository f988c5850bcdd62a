"""``topofl.run`` at its boundary: the user's own datasets, and bad data arguments."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import topofl as tf


def _pair() -> tuple[torch.utils.data.TensorDataset, torch.utils.data.TensorDataset]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(240, 1, 8, 8, generator=g)
    y = torch.arange(240) % 4
    return (torch.utils.data.TensorDataset(x[:200], y[:200]),
            torch.utils.data.TensorDataset(x[200:], y[200:]))


def test_run_accepts_a_torch_dataset_pair_like_federate() -> None:
    train, test = _pair()
    kw = dict(n_clients=8, partition="iid", rounds=2, lr=0.1, batch_size=8, seed=0)
    res = tf.run("dsgd", topology="ring", data=(train, test), **kw)
    # the same run on the FederatedData that federate builds from the same pair
    data = tf.data.federate((train, test), "iid", 8, seed=0)
    ref = tf.run("dsgd", topology="ring", data=data, **kw)
    a, b = res.records.series("test_acc_mean"), ref.records.series("test_acc_mean")
    assert np.array_equal(a[1], b[1]) and a[1].size == 2
    assert res.records.provenance["replayable"] is False  # an object, described not named
    assert res.records.config["data"]["object"] == "FederatedData"
    assert res.records.config["n_clients"] == 8


@pytest.mark.parametrize(("data", "exc", "match"), [
    (123, TypeError, "dataset must be"),
    ("nope", ValueError, "unknown dataset 'nope'"),
])
def test_run_refuses_bad_data(data: object, exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        tf.run("dsgd", topology="ring", data=data, n_clients=8, rounds=1)


def test_run_refuses_partition_params_that_are_not_a_mapping() -> None:
    with pytest.raises(TypeError, match="partition_params must be a mapping, got list"):
        tf.run("dsgd", topology="ring", n_clients=8, rounds=1, partition_params=[1])


@pytest.mark.parametrize(("key", "value"), [
    ("eval_global", "no"), ("record_clients", "yes"), ("spectral", 0), ("fuse", "false"),
    ("progress", "no"), ("nesterov", "no"), ("clique_averaging", 1),
])
def test_run_refuses_booleans_that_are_not_bools(key: str, value: object) -> None:
    with pytest.raises(TypeError, match=f"{key} must be a bool"):
        tf.run("dsgd", topology="ring", n_clients=8, rounds=1, **{key: value})


def test_a_disconnected_static_graph_warns_with_its_components() -> None:
    import networkx as nx

    two_rings = nx.disjoint_union(nx.cycle_graph(4), nx.cycle_graph(4))
    topo = tf.Topology.from_networkx(two_rings, "metropolis", name="two_rings")
    with pytest.warns(UserWarning, match="'two_rings' has 2 strongly connected components"):
        tf.run("dsgd", topology=topo, n_clients=8, rounds=1, seed=0)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a connected graph: no warning
        tf.run("dsgd", topology="ring", n_clients=8, rounds=1, seed=0)
