"""PFedDST's peer-selection quality in the records (the paper's Figure 2).

Toy data: 3 classes over 6 clients with one class each (pathological(1)), so every class is
held by exactly two clients and each client shares its class with exactly one of the 5 others.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import topofl as tf
from topofl.engine import Round
from topofl.engine.services import DataServices

D = torch.float64
N = 6


@pytest.fixture(scope="module")
def data() -> tf.data.FederatedData:
    g = torch.Generator().manual_seed(0)
    y = torch.arange(600) % 3
    x = torch.randn(600, 1, 4, 4, generator=g) + y.view(-1, 1, 1, 1).float()
    train = torch.utils.data.TensorDataset(x[:480], y[:480])
    test = torch.utils.data.TensorDataset(x[480:], y[480:])
    d = tf.data.federate((train, test), "pathological", N, classes_per_client=1, seed=0,
                         val=0.25)
    classes = (d.label_distributions > 0).sum(axis=1)
    assert classes.tolist() == [1] * N  # one class per client
    assert np.bincount(d.label_distributions.argmax(1), minlength=3).tolist() == [2, 2, 2]
    return d


def _model(data: Any) -> Any:
    return tf.models.build_model("mlp", data.input_shape, data.num_classes, seed=0,
                                 hidden=(8,))


def _values(rec: Any, metric: str) -> list[Any]:
    return [r["value"] for r in rec.rows if r["metric"] == metric]


def _run(data: Any, **kw: Any) -> Any:
    base: dict[str, Any] = dict(data=data, model=_model(data), rounds=2, seed=0,
                                local_steps=1, head_steps=1, batch_size=16, spectral=False)
    return tf.run("pfeddst", **{**base, **kw})


def test_selecting_every_peer_shares_a_class_one_time_in_five(data: Any) -> None:
    rec = _run(data, peers=N - 1, selection="random").records
    assert _values(rec, "pfeddst_shared_class") == [0.2, 0.2]
    for per in _values(rec, "pfeddst_shared_class_clients"):
        np.testing.assert_allclose(per, [0.2] * N, rtol=0, atol=1e-15)
    for peers in _values(rec, "pfeddst_peers"):
        assert [sorted(p) for p in peers] == [[j for j in range(N) if j != i] for i in range(N)]


@pytest.mark.parametrize("selection", ["random", "score"])
def test_shared_class_rate_matches_the_selected_peers(data: Any, selection: str) -> None:
    rec = _run(data, peers=2, selection=selection, rounds=3).records
    cls = data.label_distributions.argmax(1)
    edges = _values(rec, "realized_edges")
    for t, (peers, rate, per) in enumerate(zip(_values(rec, "pfeddst_peers"),
                                               _values(rec, "pfeddst_shared_class"),
                                               _values(rec, "pfeddst_shared_class_clients"))):
        same = [[cls[j] == cls[i] for j in peers[i]] for i in range(N)]
        assert rate == pytest.approx(sum(map(sum, same)) / (2 * N), abs=1e-15)
        np.testing.assert_allclose(per, [sum(s) / 2 for s in same], atol=1e-15)
        # the recorded peers are the realized graph's in-neighbours
        assert sorted([j, i] for i in range(N) for j in peers[i]) == edges[t]


def test_peer_accuracy_is_each_selected_model_on_the_clients_data(data: Any) -> None:
    model = _model(data).double()
    layout = tf.engine.ParamLayout.from_model(model)
    env = DataServices(layout, tf.engine.gossip.Mixer(torch.device("cpu"), D),
                       tf.engine.executors.BatchedExecutor(model, layout), data, batch_size=16)
    x0 = tf.engine.layout.init_parameters(model, layout, N, seed=3, same=False,
                                   device=torch.device("cpu"), dtype=D)
    algo = tf.algorithms.pfeddst(peers=3, selection="random", peer_accuracy="val",
                                 local_steps=1, head_steps=1)
    state = algo.init(x0.clone(), env)
    before = state.x.clone()
    algo.round_start(state, Round(0), env)
    chosen = state.own.peers

    def acc(w: torch.Tensor, i: int) -> float:  # the slow path: one model, one client
        xs, ys = data.client(i, "val")
        params = {k: v[0] for k, v in layout.views(w.unsqueeze(0)).items()}
        out = torch.func.functional_call(model, params, (xs.double(),))
        return float((out.argmax(1) == ys).double().mean())

    ref = [[acc(before[int(j)], i) for j in chosen[i]] for i in range(N)]
    np.testing.assert_allclose(state.own.peer_acc.numpy(), ref, rtol=0, atol=1e-12)
    own = [acc(before[i], i) for i in range(N)]
    np.testing.assert_allclose(state.own.own_acc.numpy(), own, rtol=0, atol=1e-12)
    records = algo.communicate(state, Round(0), env).records
    np.testing.assert_allclose(records["pfeddst_peer_acc"], ref, rtol=0, atol=1e-12)
    assert records["pfeddst_peer_acc_mean"] == pytest.approx(float(np.mean(ref)))
    assert records["pfeddst_own_acc_mean"] == pytest.approx(float(np.mean(own)))


def test_peer_accuracy_through_a_run_and_bad_input(data: Any) -> None:
    rec = _run(data, peers=2, peer_accuracy="test").records
    accs = _values(rec, "pfeddst_peer_acc")
    assert len(accs) == 2 and np.asarray(accs).shape == (2, N, 2)
    assert np.all((np.asarray(accs) >= 0) & (np.asarray(accs) <= 1))
    assert rec.config["peer_accuracy"] == "test"
    assert "pfeddst_peer_acc" in rec.metrics
    assert "pfeddst_peer_acc" not in _run(data, peers=2).records.metrics  # off by default
    with pytest.raises(ValueError, match="peer_accuracy"):
        tf.algorithms.pfeddst(peer_accuracy="train")
