"""Teleportation (``teleport``): k models teleported between random nodes, checked against a
per-slot reference loop (k plain models: teleport, train, gossip), the family's draws, D-SGD
on the complete graph at k = n, resume, and its bad inputs; with ``graph="random_regular"`` the
same reference on the seeded slot graph, its message count, and a small run that learns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import topofl as tf
from tests.engine._crash import Crash, CrashingData
from topofl.algorithms.teleport import teleport_map
from topofl.engine import RunConfig
from topofl.topologies import (
    teleportation,
    teleportation_active,
    teleportation_slot_degree,
    teleportation_slot_graph,
)

N, B = 8, 8


@pytest.fixture(scope="module")
def data() -> Any:
    return tf.data.federate("digits", "shards", N, shards_per_client=2, seed=0, val=0.1)


def _model(data: Any) -> torch.nn.Module:
    return tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)


def _rows(res: Any) -> list[dict[str, Any]]:
    return [r for r in res.records.rows if r["metric"] != "wall_time"]


def _slot_matrix(k: int, graph: str, seed: int = 0) -> np.ndarray:
    """The gossip weights over the k slots, written out: Metropolis ring, complete, or the
    slot graph of ``seed`` with weights 1/(d + 1)."""
    if graph == "random_regular" and k > 3:
        H = np.eye(k)
        u, v = teleportation_slot_graph(k, seed=seed)
        H[u, v] = H[v, u] = 1.0
        return H / (teleportation_slot_degree(k) + 1)
    if graph == "complete" or k <= 3:
        return np.full((k, k), 1.0 / k)
    H = np.zeros((k, k))
    for s in range(k):
        for r in (s - 1, s, s + 1):
            H[s, r % k] = 1.0 / 3.0
    return H


def _reference(data: Any, k: int, graph: str, seed: int, rounds: int, lr: float,
               steps: int) -> tuple[list[torch.Tensor], list[float]]:
    """The paper's Algorithm 1 with k plain models, one slot at a time: at round t slot s's
    model goes to node a^t_s, takes ``steps`` SGD steps on that node's batches, then the
    slots gossip. Returns the final k flat models and, per round, their mean accuracy on
    the global test set."""
    model = _model(data).double()
    names = [n for n, _ in model.named_parameters()]
    theta0 = {n: p.detach().clone() for n, p in model.named_parameters()}
    slots = [dict(theta0) for _ in range(k)]
    H = _slot_matrix(k, graph, seed)
    xg, yg = data.global_test
    accs = []
    for t in range(rounds):
        active = teleportation_active(N, k, t, seed=seed)  # slot s is now at node active[s]
        for s in range(k):
            node = int(active[s])
            for j in range(steps):
                x, y = data.sample(t, j, B)
                params = {n: v.clone().requires_grad_(True) for n, v in slots[s].items()}
                logits = torch.func.functional_call(model, params, (x[node].double(),))
                loss = F.cross_entropy(logits, y[node])
                grads = torch.autograd.grad(loss, [params[n] for n in names])
                slots[s] = {n: (params[n] - lr * g).detach() for n, g in zip(names, grads)}
        slots = [{n: sum(float(H[s, r]) * slots[r][n] for r in range(k)) for n in names}
                 for s in range(k)]
        acc = []
        for s in range(k):
            with torch.no_grad():
                pred = torch.func.functional_call(model, slots[s], (xg.double(),)).argmax(-1)
            acc.append(float((pred == yg).double().mean()))
        accs.append(float(np.mean(acc)))
    layout = tf.engine.ParamLayout.from_model(model)
    flat = [layout.flatten({n: v.unsqueeze(0) for n, v in m.items()})[0] for m in slots]
    return flat, accs


def test_active_sets_are_the_family_draws() -> None:
    tv = teleportation(10, 4, seed=5)
    for t in range(6):
        assert tuple(teleportation_active(10, 4, t, seed=5).tolist()) == \
            tv.at(t).params["active"]


def test_teleport_map_by_hand() -> None:
    # k = 4 on a ring over 6 nodes: slot s at (5, 0, 2, 3)[s] moves to (1, 5, 0, 4)[s]
    M = teleport_map(6, np.array([5, 0, 2, 3]), np.array([1, 5, 0, 4]), "ring").toarray()
    third = 1.0 / 3.0
    expected = np.eye(6)
    expected[[1, 5, 0, 4]] = 0.0
    expected[1, [3, 5, 0]] = third  # slot 0 (node 5): itself and slots 3 (node 3), 1 (node 0)
    expected[5, [5, 0, 2]] = third  # slot 1
    expected[0, [0, 2, 3]] = third  # slot 2
    expected[4, [2, 3, 5]] = third  # slot 3
    np.testing.assert_allclose(M, expected, rtol=0, atol=1e-15)
    assert np.allclose(M.sum(axis=1), 1.0)


def test_toy_quadratic_equals_per_slot_loop() -> None:
    # node i minimises (x - c_i)^2 / 2: gradient x - c_i; 2 local steps per round
    n, k, T, lr = 7, 3, 12, 0.3
    c = torch.linspace(-1.0, 2.0, n, dtype=torch.float64).unsqueeze(1)
    algo = tf.algorithms.teleport(lr=lr, k=k, graph="ring", sample_seed=3, local_steps=2)
    trace = tf.engine.run_rounds(algo, torch.zeros_like(c), None, lambda z, ph, rnd: z - c,
                                 rounds=T)
    slots = [0.0] * k
    for t in range(T):
        a = teleportation_active(n, k, t, seed=3)
        for s in range(k):
            for _ in range(2):
                slots[s] -= lr * (slots[s] - float(c[a[s]]))
        slots = [sum(slots) / k] * k  # a ring of 3 is complete
    final = teleportation_active(n, k, T, seed=3)
    assert trace.evaluated()[final].flatten().tolist() == pytest.approx(slots, abs=1e-14)


@pytest.mark.parametrize(("k", "graph"), [(5, "ring"), (3, "complete"), (6, "random_regular")])
def test_engine_equals_per_slot_reference(data: Any, k: int, graph: str) -> None:
    T, lr = 4, 0.3
    algo = tf.algorithms.teleport(lr=lr, k=k, graph=graph, sample_seed=1, local_steps=2)
    res = tf.engine.run(RunConfig(rounds=T, batch_size=B, dtype="float64", spectral=False,
                                  eval_every=1), None, algo, data, _model(data))
    flat, accs = _reference(data, k, graph, 1, T, lr, 2)
    rows = teleportation_active(N, k, T, seed=1)  # where the k models are after round T-1
    for s in range(k):
        torch.testing.assert_close(res.state.x[rows[s]], flat[s], rtol=0, atol=1e-12)
    _, acc = res.records.series("global_acc_mean")
    assert acc.tolist() == pytest.approx(accs, abs=1e-12)
    # the per-client accuracies name the k hosts only; the others hold no model
    last = res.records.per_client("test_acc", T - 1)
    host = np.zeros(N, dtype=bool)
    host[rows] = True
    assert np.isnan(np.asarray(last)[~host]).all() and np.isfinite(np.asarray(last)[host]).all()
    # the consensus distance of the k models
    X = torch.stack(flat)
    cd = float(((X - X.mean(0)) ** 2).sum(1).mean())
    assert res.records.final("consensus_distance") == pytest.approx(cd, rel=1e-9, abs=1e-15)


def test_messages_count_gossip_and_teleports(data: Any) -> None:
    k, T = 4, 3
    algo = tf.algorithms.teleport(lr=0.1, k=k, graph="ring", sample_seed=2)
    res = tf.engine.run(RunConfig(rounds=T, batch_size=B, spectral=False), None, algo, data,
                        _model(data))
    moved = sum(int((teleportation_active(N, k, t, seed=2)
                     != teleportation_active(N, k, t + 1, seed=2)).sum()) for t in range(T))
    assert res.records.final("messages") == 2 * k * T + moved
    assert res.records.final("bytes") == res.records.final("messages") * \
        res.layout.num_params * 4


def test_random_regular_messages(data: Any) -> None:
    k, T = 8, 3  # 3-regular slot graph: k * 3 gossip messages a round
    algo = tf.algorithms.teleport(lr=0.1, k=k, graph="random_regular", sample_seed=2)
    res = tf.engine.run(RunConfig(rounds=T, batch_size=B, spectral=False), None, algo, data,
                        _model(data))
    moved = sum(int((teleportation_active(N, k, t, seed=2)
                     != teleportation_active(N, k, t + 1, seed=2)).sum()) for t in range(T))
    assert res.records.final("messages") == k * teleportation_slot_degree(k) * T + moved


def test_random_regular_run_learns() -> None:
    # through the front door, as a hyper-parameter: 16 clients, 8 models on a 3-regular graph
    fed = tf.data.federate("digits", "shards", 16, shards_per_client=2, seed=0, val=0.1)
    res = tf.run("teleport", None, fed, "logistic", 25, k=8, graph="random_regular", lr=0.3,
                 local_steps=2, seed=0, progress=False)
    assert res.records.rows[0]["metric"] is not None
    _, acc = res.records.series("global_acc_mean")
    assert acc[-1] > 0.7 and acc[-1] > acc[0] + 0.4
    assert res.algorithm.hparams["graph"] == "random_regular"


def test_k_equals_n_complete_is_dsgd_on_the_complete_graph(data: Any) -> None:
    cfg = RunConfig(rounds=3, batch_size=B, dtype="float64", spectral=False)
    tele = tf.engine.run(cfg, None, tf.algorithms.teleport(lr=0.3, k=N, graph="complete",
                                                           sample_seed=4), data, _model(data))
    dsgd = tf.engine.run(cfg, tf.topologies.complete(N), tf.algorithms.dsgd(lr=0.3), data,
                         _model(data))
    torch.testing.assert_close(tele.state.x, dsgd.state.x, rtol=0, atol=1e-12)
    for metric in ("global_acc_mean", "test_acc_mean", "test_loss", "train_loss"):
        assert tele.records.series(metric)[1].tolist() == pytest.approx(
            dsgd.records.series(metric)[1].tolist(), abs=1e-12)


def test_resume_equals_uninterrupted(data: Any, tmp_path: Path) -> None:
    algo = tf.algorithms.teleport(lr=0.3, k=3, graph="ring", sample_seed=7, local_steps=2)
    full = tf.engine.run(RunConfig(rounds=7, batch_size=B, eval_every=2, seed=2), None, algo,
                         data, _model(data))
    cfg = RunConfig(rounds=7, batch_size=B, eval_every=2, seed=2, checkpoint_every=3,
                    checkpoint_path=str(tmp_path / "ck.pt"),
                    records_path=str(tmp_path / "r.jsonl"))
    with pytest.raises(Crash):
        tf.engine.run(cfg, None, algo, CrashingData(data, at=4), _model(data))
    resumed = tf.engine.run(cfg, None, algo, data, _model(data), resume=tmp_path / "ck.pt")
    strip = [r for r in full.records.rows if r["metric"] != "wall_time"]
    assert _rows(resumed) == strip
    assert torch.equal(resumed.state.x, full.state.x)


def test_bad_inputs(data: Any) -> None:
    with pytest.raises(ValueError, match="k must be"):
        tf.algorithms.teleport(k=0)
    with pytest.raises(ValueError, match="graph"):
        tf.algorithms.teleport(graph="star")
    with pytest.raises(ValueError, match=r"graph must be one of .*'random_regular'.*got 'regular'"):
        tf.run("teleport", None, data, "logistic", 1, graph="regular", progress=False)
    with pytest.raises(ValueError, match=r"k must be in \[1, n\]=\[1, 8\].*got k=9"):
        tf.run("teleport", None, data, "logistic", 1, k=9, progress=False)


def test_the_scored_hook_is_checked(data: Any) -> None:
    algo = tf.algorithms.dsgd(lr=0.1)
    with pytest.raises(TypeError, match="Algorithm.scored must be None or callable"):
        tf.engine.check_algorithm(algo._replace(scored=3))
    wrong = algo._replace(scored=lambda rnd, env: np.ones(env.n - 1, dtype=bool))
    with pytest.raises(ValueError, match=r"scored must return a \(n,\)=\(8,\) bool array"):
        tf.engine.run(RunConfig(rounds=1, batch_size=B, spectral=False), tf.topologies.ring(N),
                      wrong, data, _model(data))
    # scoring every client is the default row, to the last bit
    every = algo._replace(scored=lambda rnd, env: np.ones(env.n, dtype=bool))
    cfg = RunConfig(rounds=2, batch_size=B, spectral=False, dtype="float64")
    a = tf.engine.run(cfg, tf.topologies.ring(N), algo, data, _model(data))
    b = tf.engine.run(cfg, tf.topologies.ring(N), every, data, _model(data))
    ra = {(r["round"], r["metric"]): r["value"] for r in _rows(a)}
    rb = {(r["round"], r["metric"]): r["value"] for r in _rows(b)}
    assert ra.keys() == rb.keys()
    for key, v in ra.items():
        assert rb[key] == pytest.approx(v, rel=1e-12, abs=1e-15, nan_ok=True), key



def test_teleportation_active_refuses_a_draw_beyond_memory_before_drawing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # k > n / 50 of many nodes: numpy shuffles a full arange(n) (8 n bytes); a fuzz found
    # n = k = 10**12 filling 16 GB before failing. Refused at once, naming the call; a few
    # nodes of a huge population are drawn as before (Floyd's algorithm: O(k)).
    monkeypatch.setenv("TOPOFL_MEMORY_LIMIT", "1000000")
    with pytest.raises(tf.exceptions.InsufficientMemoryError,
                       match=r"teleportation_active\(n=10000000,"):
        tf.topologies.teleportation_active(10**7, 10**6, 0, seed=0)
    a = tf.topologies.teleportation_active(10**12, 3, 5, seed=0)
    assert a.shape == (3,) and len(set(a.tolist())) == 3 and a.max() < 10**12


# ------------------------------------------------ O(k) rounds: the same numbers as O(n) ones
# A round moves only the k active rows: the engine takes their gradients alone
# (ActiveSGD.moving / update_rows), the gossip and teleport write the k receiving rows
# (Mixer.mix_rows_) and the global test set scores the k models; every other row's loss is
# still computed (train_loss is the mean over all n rows). Each must give the bits of the
# full-row form it replaces: the same kernels on the same per-row shapes.


def _full_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every round over all n rows, as before the O(k) forms."""
    import importlib

    mod = importlib.import_module("topofl.algorithms.teleport")
    ev = importlib.import_module("topofl.engine.evaluation")
    monkeypatch.setattr(mod.ActiveSGD, "moving", None, raising=False)
    monkeypatch.setattr(mod, "Mixer", type("NotTheMixer", (), {}))
    monkeypatch.setattr(ev, "_scored_rows", lambda algorithm, rnd, env: None)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("n", "k", "graph", "model"), [
    (40, 4, "ring", "logistic"), (40, 3, "complete", "logistic"),
    (30, 8, "random_regular", "logistic"), (24, 5, "ring", "mlp"), (12, 7, "ring", "logistic")])
def test_k_row_rounds_equal_all_row_rounds_bit_for_bit(
        monkeypatch: pytest.MonkeyPatch, dtype: str, n: int, k: int, graph: str,
        model: str) -> None:
    d = tf.data.federate("digits", "shards", n, shards_per_client=1, seed=0, val=0.1)
    m = tf.models.build_model(model, d.input_shape, d.num_classes, seed=0)
    cfg = RunConfig(rounds=6, batch_size=B, dtype=dtype, spectral=False, eval_every=2,
                    eval_val=True, record_clients=True)
    algo = tf.algorithms.teleport(lr=0.2, k=k, graph=graph, sample_seed=2, local_steps=2,
                                  weight_decay=1e-3)
    fast = tf.engine.run(cfg, None, algo, d, m)
    with monkeypatch.context() as mp:
        _full_rows(mp)
        full = tf.engine.run(cfg, None, algo, d, m)
    if dtype == "float64":  # the same kernels on the same rows at the same addresses
        assert _rows(fast) == _rows(full)
        assert torch.equal(fast.state.x, full.state.x)
    else:  # bit for bit here (AVX512 EPYC); another CPU's float32 kernels: within rounding
        a, b = _rows(fast), _rows(full)
        assert [(r["round"], r["client"], r["metric"]) for r in a] == \
            [(r["round"], r["client"], r["metric"]) for r in b]
        for r, q in zip(a, b):
            if isinstance(q["value"], float):
                assert r["value"] == pytest.approx(q["value"], rel=1e-5, abs=1e-6,
                                                   nan_ok=True)
            else:
                assert r["value"] == q["value"]
        torch.testing.assert_close(fast.state.x, full.state.x, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(("n", "k", "graph", "p"), [
    (9, 2, "ring", 1100), (50, 4, "ring", 1100), (50, 4, "ring", 650), (50, 7, "complete", 333),
    (64, 8, "random_regular", 1000), (300, 16, "ring", 7850), (320, 4, "ring", 7850)])
def test_mix_rows_equals_the_full_map_bit_for_bit(dtype: torch.dtype, n: int, k: int,
                                                   graph: str, p: int) -> None:
    from topofl.algorithms.teleport import teleport_rows
    from topofl.topologies.teleportation import slot_pairs

    mixer = tf.engine.gossip.Mixer(torch.device("cpu"), dtype)
    pairs = (slot_pairs(np.random.SeedSequence(3), k) if graph == "random_regular" else None)
    gen = np.random.default_rng(n * k)
    for t in range(4):
        active = gen.choice(n, k, replace=False)
        following = gen.choice(n, k, replace=False)
        M = teleport_map(n, active, following, graph, pairs)
        assert not mixer.takes_dense(n, M.nnz)
        X = torch.randn(n, p, dtype=dtype, generator=torch.Generator().manual_seed(t))
        Y = X.clone()
        mixer.mix_(tf.Topology.from_matrix(M), X)
        mixer.mix_rows_(teleport_rows(n, active, graph, pairs), following, Y)
        if dtype == torch.float64:
            assert torch.equal(X, Y), (n, k, graph, t)
        else:  # bit for bit here; another CPU's float32 kernels: within rounding
            torch.testing.assert_close(X, Y, rtol=1e-6, atol=1e-6)


def test_mix_rows_refuses_bad_shapes() -> None:
    import scipy.sparse as sp

    mixer = tf.engine.gossip.Mixer(torch.device("cpu"), torch.float64)
    X = torch.zeros(5, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"W must be \(len\(dst\), n\) = \(2, 5\)"):
        mixer.mix_rows_(sp.csr_array(np.ones((2, 3))), np.array([2, 3]), X)
    with pytest.raises(ValueError, match="dst must not repeat"):
        mixer.mix_rows_(sp.csr_array(np.ones((2, 5))), np.array([3, 3]), X)


def test_slot_draws_kept_are_the_draws() -> None:
    from topofl.algorithms.teleport import Slots

    slots = Slots(4, 7)
    for t in (5, 3, 5, 9, 0, 3, 12, 5):  # out of order, repeated, beyond the kept few
        a = slots.draw(30, t)
        assert a.tolist() == teleportation_active(30, 4, t, seed=7).tolist()
        assert not a.flags.writeable
