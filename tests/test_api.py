"""``topofl.run`` at its boundary: the user's own datasets, and bad data arguments."""

from __future__ import annotations

import json
import re
from typing import Any

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
    kw = dict(n_clients=8, partition="iid", rounds=2, lr=0.1, batch_size=8, seed=0,
              eval_every=1)
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
    (123, TypeError, "data must be a dataset name, a topofl Dataset or FederatedData"),
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


# ------------------------------------------------------------------ one rule for input shapes
def test_a_model_that_does_not_take_the_samples_is_refused_before_the_run(tmp_path: Any) -> None:
    out = tmp_path / "r.jsonl"
    kw = dict(n_clients=4, partition="iid", rounds=1, batch_size=4, records_path=str(out))
    with pytest.raises(ValueError, match=r"samples of input_shape=\(1, 8, 8\).*wrap it as "
                       r"nn.Sequential\(nn.Flatten\(\), model\)"):
        tf.run("dsgd", "ring", data="digits", model=torch.nn.Linear(64, 10), **kw)
    with pytest.raises(ValueError, match="returns 5 logits per sample, but the data has 10"):
        tf.run("dsgd", "ring", data="digits", model=torch.nn.Sequential(
            torch.nn.Flatten(), torch.nn.Linear(64, 5)), **kw)
    with pytest.raises(ValueError, match=r"logits \[B, num_classes\]; .* returns \(2, 2, 6, 6\)"):
        tf.run("dsgd", "ring", data="digits", model=torch.nn.Conv2d(1, 2, 3), **kw)
    assert not out.exists()  # refused before any file is written


@pytest.mark.parametrize("executor", ["batched", "loop"])
def test_both_executors_apply_the_same_rule(executor: str) -> None:
    data = tf.data.federate("digits", "iid", 4, seed=0)
    cfg = tf.engine.RunConfig(rounds=1, seed=0, executor=executor, batch_size=4)
    with pytest.raises(ValueError, match="wrap it as nn.Sequential"):
        tf.engine.run(cfg, tf.topologies.ring(4), tf.algorithms.dsgd(), data,
                      torch.nn.Linear(64, 10))


def test_the_check_changes_nothing_in_the_model() -> None:
    from topofl.models import check_model_input

    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10),
                                torch.nn.BatchNorm1d(10))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    check_model_input(model, (1, 8, 8), 10)
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert all(v.device.type == "cpu" for v in after.values())


def test_flat_samples_train_a_bare_linear_exactly_like_flatten_then_linear() -> None:
    # synthetic samples are flat (16,): a bare nn.Linear takes them as they are, the fast path
    # (closed-form softmax regression) agrees with the per-client loop, and with the same
    # weights behind an nn.Flatten
    data = tf.data.federate(tf.data.synthetic(200, 16, 4, seed=0), "iid", 4, seed=0)
    torch.manual_seed(0)
    bare = torch.nn.Linear(16, 4)
    wrapped = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 4))
    wrapped[1].load_state_dict(bare.state_dict())
    acc = {}
    for name, model, executor in [("bare", bare, "batched"), ("wrapped", wrapped, "batched"),
                                  ("loop", bare, "loop")]:
        cfg = tf.engine.RunConfig(rounds=3, seed=0, executor=executor, batch_size=8,
                                  dtype="float64", eval_every=1)
        res = tf.engine.run(cfg, tf.topologies.ring(4), tf.algorithms.dsgd(lr=0.5), data, model)
        acc[name] = res.records.series("test_loss")[1]
    assert acc["bare"].size == 3
    np.testing.assert_array_equal(acc["bare"], acc["wrapped"])
    np.testing.assert_allclose(acc["bare"], acc["loop"], rtol=1e-12)


def test_a_model_that_cannot_run_on_meta_tensors_is_checked_for_real() -> None:
    from topofl.models import check_model_input

    class Scaled(torch.nn.Module):  # .item() in forward: no meta forward pass
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(4, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(x) * (1.0 + 0.0 * x.abs().max().item())

    check_model_input(Scaled(), (4,), 3)  # accepted
    with pytest.raises(ValueError, match=r"input_shape=\(5,\).*takes 4 input features"):
        check_model_input(Scaled(), (5,), 3)


# ----------------------------------------------------------------------------- one spec path
def test_a_graph_spec_means_the_same_on_every_path(capsys: pytest.CaptureFixture[str]) -> None:
    """``ring:n=1e1`` (an int written as a float) is ``ring(n=10)`` for topologies.build, a
    config, topofl.run and ``topofl spectral`` alike; ``ring:n=2.5`` is refused by each of them
    with the same message (they once had three validators that disagreed)."""
    from topofl.cli import main

    spec, bad = "ring:n=1e1", "ring:n=2.5"

    def is_ring10(t: Any) -> bool:
        return t.name == "ring" and t.n == 10 and (t.W != tf.topologies.ring(10).W).nnz == 0

    assert is_ring10(tf.topologies.build(spec))
    assert tf.config.validate({"topology": spec, "n_clients": 10, "rounds": 1})["topology"] == spec
    res = tf.run("dsgd", spec, "digits", "logistic", 1, n_clients=10, partition="iid",
                 batch_size=8, progress=False)
    assert is_ring10(res.last.topology)
    assert main(["spectral", spec, "--metrics", "spectral_gap", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["spectral_gap"] == pytest.approx(
        tf.spectral.spectral_gap(tf.topologies.ring(10)), abs=1e-12)

    why = "graph spec 'ring:n=2.5': n must be an int, got 2.5, which is not a whole number"
    with pytest.raises(ValueError, match=re.escape(why)):
        tf.topologies.build(bad)
    with pytest.raises(tf.config.ConfigError, match=re.escape(why)):
        tf.config.validate({"topology": bad, "n_clients": 10, "rounds": 1})
    with pytest.raises(ValueError, match=re.escape(why)):
        tf.run("dsgd", bad, "digits", "logistic", 1, n_clients=10, progress=False)
    assert main(["spectral", bad]) == 2
    assert why in capsys.readouterr().err
