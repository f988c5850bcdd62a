"""Contract over the whole registry: every algorithm gives the same run by every engine path,
and the algorithms theory says converge reach the known optimum of a toy quadratic.

Paths: batched (``vmap``/closed form) and per-client (the loop executor), fused and unfused
local SGD, streamed and not, resumed from a checkpoint and uninterrupted. Runs are small
(8 clients, a few rounds, float64) so that the default suite stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import topofl as tf
from tests.algorithms.test_contract import N, _topology_for
from tests.engine._crash import Crash, CrashingData
from topofl.algorithms import ALGORITHMS, get_algorithm
from topofl.engine import RunConfig, run_rounds

ROUNDS = 3
# a few local steps per phase, so that the per-client (loop) runs stay fast
STEPS: dict[str, dict[str, Any]] = {
    "dfedavgm": {"local_steps": 2},
    "dfedpgp": {"local_steps_u": 2, "local_steps_v": 1},
    "dfedavgm_p": {"local_steps_u": 2, "local_steps_v": 1},
    "pfeddst": {"local_steps": 2, "head_steps": 1, "peers": 2},
    "dpfl": {"tau_init": 0.25, "local_steps": 2, "lr": 0.1, "budget": 2},
    "fedrep": {"head_steps": 2, "body_steps": 1},
    "fedbabu": {"finetune_steps": 2},
    # issue 15, second batch of baselines
    "dis_pfl": {"local_steps": 2},
    "pfedgraph": {"local_steps": 2},
    "knn_per": {"local_steps": 2, "k": 3},
    "apfl": {"local_steps": 2},
    "perfedavg": {"local_steps": 2},
    "fedprox": {"local_steps": 2},
    "fedprox_ft": {"local_steps": 2},
    # issue 59: server baselines with a server state (control variates, server moments)
    "scaffold": {"local_steps": 2},
    "fedopt": {"local_steps": 2, "optimizer": "yogi"},
    # issue 84: FedNova with every counter it keeps, FedDyn's dynamic states
    "fednova": {"local_steps": 2, "momentum": 0.5, "mu": 0.1, "server_momentum": 0.5},
    "feddyn": {"local_steps": 2, "alpha": 0.1},
    # issue 46: event time, heterogeneous durations, a window that defers events
    "adpsgd": {"local_steps": 2, "durations": [1.0, 1.3, 2.0, 0.8, 3.5, 1.0, 0.9, 2.2],
               "window": 0.8},
    "gossip_learning": {"local_steps": 2, "window": 0.8, "layers": 2, "merge": "age",
                        "durations": [1.0, 1.3, 2.0, 0.8, 3.5, 1.0, 0.9, 2.2]},
}


@pytest.fixture(scope="module")
def data() -> Any:
    return tf.data.federate("digits", "pathological", N, classes_per_client=3, seed=0, val=0.2)


def _model(data: Any, algo: Any) -> Any:
    # softmax regression where the algorithm allows it (the fused path exists only there)
    if algo.shared == "all":
        return tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    return tf.models.build_model("mlp", data.input_shape, data.num_classes, seed=0,
                                 hidden=(8,))


def _run(name: str, data: Any, **kw: Any) -> Any:
    algo = get_algorithm(name, **STEPS.get(name, {}))
    cfg = dict(rounds=ROUNDS, seed=0, batch_size=16, eval_every=1, dtype="float64",
               record_clients=True, spectral=False)
    cfg.update(kw)
    resume = cfg.pop("resume", None)
    d = cfg.pop("run_data", data)
    return tf.engine.run(RunConfig(**cfg), _topology_for(algo), algo, d, _model(data, algo),
                         resume=resume)


def _same_run(a: Any, b: Any, rtol: float = 1e-9) -> None:
    for k, v in a.state.tensors().items():
        w = b.state.tensors()[k]
        if v.is_floating_point():
            np.testing.assert_allclose(w.numpy(), v.numpy(), rtol=rtol, atol=1e-11, err_msg=k)
        else:
            assert torch.equal(v, w), k
    ra = [r for r in a.records.rows if r["metric"] != "wall_time"]
    rb = [r for r in b.records.rows if r["metric"] != "wall_time"]
    assert len(ra) == len(rb)
    for x, y in zip(ra, rb):
        assert (x["metric"], x["round"], x["client"]) == (y["metric"], y["round"], y["client"])
        if isinstance(x["value"], float) and np.isfinite(x["value"]):
            assert y["value"] == pytest.approx(x["value"], rel=rtol, abs=1e-11), x["metric"]
        elif (isinstance(x["value"], list) and x["value"]
              and all(isinstance(v, float) for v in x["value"])):  # e.g. realized_weights
            np.testing.assert_allclose(y["value"], x["value"], rtol=rtol, atol=1e-11,
                                       err_msg=x["metric"])
        else:
            assert x["value"] == y["value"] or (x["value"] != x["value"]), x["metric"]


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_batched_equals_per_client(name: str, data: Any) -> None:
    _same_run(_run(name, data, executor="batched"), _run(name, data, executor="loop"))


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_fused_equals_unfused_and_streamed_equals_not(name: str, data: Any) -> None:
    ref = _run(name, data, executor="batched", fuse=False, stream_rows=N)
    _same_run(ref, _run(name, data, executor="batched", fuse=True, stream_rows=N))
    _same_run(ref, _run(name, data, executor="batched", fuse=True, stream_rows=3))


def test_the_fused_path_is_taken_where_the_piece_offers_it(data: Any) -> None:
    algo = get_algorithm("dsgd")
    model = _model(data, algo)
    layout = tf.engine.ParamLayout.from_model(model)
    ex = tf.engine.executors.BatchedExecutor(model, layout)
    assert algo.local.fused(ex) == algo.local.fused_step


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_resumed_equals_uninterrupted(name: str, data: Any, tmp_path: Path) -> None:
    full = _run(name, data, rounds=4, eval_every=2)
    ck = dict(rounds=4, eval_every=2, checkpoint_every=2,
              checkpoint_path=str(tmp_path / "ck.pt"), records_path=str(tmp_path / "r.jsonl"))
    with pytest.raises(Crash):
        _run(name, data, run_data=CrashingData(data, at=3), **ck)
    resumed = _run(name, data, resume=tmp_path / "ck.pt", **ck)
    _same_run(full, resumed, rtol=0)
    _same_run(full.__class__(records=tf.records.load(tmp_path / "r.jsonl"), state=full.state,
                             layout=full.layout, config=full.config, algorithm=full.algorithm,
                             services=full.services, last=full.last), full, rtol=0)


# ----------------------------------------------------------------------------- known optima
D = torch.float64


def _quadratic(n: int, p: int, seed: int, consistent: bool) -> tuple[Any, torch.Tensor]:
    """``f_i(x) = a_i |x - c_i|^2 / 2`` with ``a_i`` in [0.5, 1.5]; ``c_i = c`` for all when
    ``consistent``. Returns the gradient function and the minimiser of ``sum_i f_i``, the
    ``a``-weighted mean of the ``c_i``."""
    rng = np.random.default_rng(seed)
    a = torch.tensor(rng.uniform(0.5, 1.5, size=(n, 1)), dtype=D)
    c = torch.tensor(rng.normal(size=(n, p)), dtype=D)
    if consistent:
        c[:] = c[0]
    opt = (a * c).sum(0) / a.sum()

    def grad(z: torch.Tensor, phase: Any, rnd: Any) -> torch.Tensor:
        return a * (z - c)

    return grad, opt


# name -> (hyper-parameters, consistent problem, topology); every other algorithm is listed in
# NO_COMMON_OPTIMUM with the reason it has none to reach
OPTIMA: dict[str, tuple[dict[str, Any], bool, Any]] = {
    "dsgd": ({}, False, tf.topologies.ring(6)),
    "dfedavgm": ({"momentum": 0.5, "local_steps": 2}, True, tf.topologies.ring(6)),
    "sgp": ({}, False, tf.topologies.random_directed(6, 2, seed=0, mode="push")),
    "osgp": ({}, False, tf.topologies.random_directed(6, 2, seed=0, mode="push")),
    "fedavg": ({"local_steps": 5}, True, None),
    # issue 15: kNN-Per trains FedAvg's global model (the kNN acts only at prediction)
    "knn_per": ({"local_steps": 5}, True, None),
    "fedprox": ({"local_steps": 5}, True, None),
    # issue 59: SCAFFOLD's control variates remove the client drift of several local steps:
    # the optimum of the sum with a constant step, on heterogeneous clients too
    "scaffold": ({"local_steps": 5}, False, None),
    # FedAdam: FedAvg's fixed point (a common minimiser) reached by the server's steps
    "fedopt": ({"local_steps": 5, "server_lr": 0.01}, True, None),
    # issue 84: FedNova with equal local work is FedAvg (a common minimiser is its fixed
    # point); FedDyn's fixed point is the minimiser of the sum with a constant step
    "fednova": ({"local_steps": 5}, True, None),
    "feddyn": ({"local_steps": 5, "alpha": 0.5}, False, None),
    # issue 35: exact with a constant step (closed forms in test_tracking.py)
    "dsgt": ({}, False, tf.topologies.ring(6)),
    "extra": ({}, False, tf.topologies.ring(6)),
    "exact_diffusion": ({}, False, tf.topologies.ring(6)),
    "nids": ({}, False, tf.topologies.ring(6)),
    # local-update tracking: exact with a constant step and several local steps
    "kgt": ({"local_steps": 2}, False, tf.topologies.ring(6)),
    "led": ({"local_steps": 2, "beta": 0.2}, False, tf.topologies.ring(6)),
    # ProxSkip (a coin skips about half the gossip steps) and DLM: exact with a constant step
    # (closed forms in test_proxskip_dlm.py)
    "proxskip": ({"comm_probability": 0.5}, False, tf.topologies.ring(6)),
    "dlm": ({"penalty": 0.5}, False, tf.topologies.ring(6)),
    # GT-SAGA and GT-SARAH with each step's gradient as a client's only sample: gradient
    # tracking (their finite sums' exact convergence in test_gt_vr.py)
    "gt_saga": ({"samples": "gradient"}, False, tf.topologies.ring(6)),
    "gt_sarah": ({"samples": "gradient", "inner_steps": 5}, False, tf.topologies.ring(6)),
    # CHOCO: D-SGD's fixed point on (1 - gamma) I + gamma W (test_choco.py), -> x* as lr -> 0
    "choco": ({"gamma": 0.5}, False, tf.topologies.ring(6)),
    "el": ({}, False, tf.topologies.el_oracle(6, 2, seed=0)),
    # issue 46: equal durations, every client steps once a window (unequal ones weight the
    # optimum by the clients' rates: the adpsgd docstring)
    "adpsgd": ({}, False, tf.topologies.ring(6)),
    # gossip learning: a client's gradient acts when it receives, at random (a push to a
    # random neighbour), so with distinct optima it settles near a randomly weighted one
    # (3e-2 from the mean here); a common minimiser is its fixed point
    "gossip_learning": ({}, True, tf.topologies.ring(6)),
    # Morph averages its in-neighbours uniformly on a directed graph it rewires: row
    # stochastic, not doubly, so only a common minimiser is a fixed point
    "morph": ({"degree": 2, "local_steps": 1}, True, None),
}
NO_COMMON_OPTIMUM = {
    "local": "never communicates: each client reaches its own optimum",
    "dfedpgp": "personalized heads: no common optimum", "dfedavgm_p": "personalized heads",
    "fedper": "personalized heads", "fedrep": "personalized heads",
    "fedbabu": "fine-tunes at evaluation", "ditto": "personal models",
    "pfeddst": "data-driven peer selection", "dpfl": "data-driven collaboration graph",
    # issue 15, second batch of baselines
    "dis_pfl": "personalized sparse masks",
    "pfedgraph": "personalized aggregation along a learned graph",
    "apfl": "personal mixed models",
    "fedavg_ft": "fine-tunes at evaluation",
    "fedprox_ft": "fine-tunes at evaluation",
    "perfedavg": "adapts at evaluation",
    # Teleportation: k models trained on k random nodes a round (k < n): the sampled nodes'
    # gradients keep moving them at a constant step, no fixed point (at k = n, complete
    # graph, it is D-SGD: test_teleport.py)
    "teleport": "k models on k random nodes a round: no fixed point at a constant step",
}


def test_every_algorithm_is_classified() -> None:
    assert set(OPTIMA) | set(NO_COMMON_OPTIMUM) == set(ALGORITHMS)
    assert not set(OPTIMA) & set(NO_COMMON_OPTIMUM)


@pytest.mark.parametrize("name", sorted(OPTIMA))
def test_reaches_the_optimum_of_a_toy_quadratic(name: str) -> None:
    hp, consistent, topo = OPTIMA[name]
    n, p, rounds = 6, 3, 1500
    grad, opt = _quadratic(n, p, seed=1, consistent=consistent)
    algo = get_algorithm(name, lr=0.1, **hp)
    # a constant step to approach, then a geometric decay that removes the O(lr / gap) bias
    trace = run_rounds(algo, torch.zeros(n, p, dtype=D), topo, grad, rounds=rounds,
                       lr=lambda rnd, ph: 0.1 * 0.99 ** max(0, rnd.t - rounds // 3))
    np.testing.assert_allclose(trace.evaluated().numpy(), opt.expand(n, p).numpy(), atol=2e-3)


def test_local_training_reaches_each_clients_own_optimum() -> None:
    grad, _ = _quadratic(4, 2, seed=2, consistent=False)
    rng = np.random.default_rng(2)  # the same draws as _quadratic: the c_i
    rng.uniform(0.5, 1.5, size=(4, 1))
    c = torch.tensor(rng.normal(size=(4, 2)), dtype=D)
    trace = run_rounds(get_algorithm("local", lr=0.1), torch.zeros(4, 2, dtype=D), None, grad,
                       rounds=800)
    np.testing.assert_allclose(trace.evaluated().numpy(), c.numpy(), atol=1e-8)
