"""D-SGD's two orders of a round, Aug-DGM's tracking, and D-SGD's ``absent`` and ``lost``
keywords (issue 84).

* ``dsgd(order="parallel")`` (:class:`~topofl.engine.pieces.FromStart`) against a slow numpy
  loop of D-PSGD's update with several local steps and momentum, on fixed and time-varying
  graphs, with absent clients and lost messages; through the engine it resumes from a
  checkpoint as the uninterrupted run. (Its single step is decent-bench's ``DGD``:
  ``test_decentbench_server.py``.)
* ``dsgt(variant="augdgm")``: the trackers keep summing to the latest gradients (the
  invariant gradient tracking rests on) on time-varying graphs with absent clients, and a
  constant step reaches the exact optimum; its ledger sends no tracker in round 0.
* ``absent`` and ``lost`` are recorded in the hyper-parameters (and so the run hash) when they
  are not the default, and the defaults record what they did before.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import topofl as tf
from tests.engine._crash import Crash, CrashingData
from topofl.algorithms.dsgt import TrackingState
from topofl.engine import RunConfig
from topofl.engine.availability import local_rates
from topofl.engine.drops import Drops, lossy
from topofl.engine.pieces import MessageNoise, ProximalState, gossip
from topofl.records import header_run_hash
from topofl.topologies.derived import active_topology

D = torch.float64
N, P = 6, 3


def _problem(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Client ``i``: ``f_i(x) = (x - b_i)^T A_i (x - b_i) / 2``, ``A_i`` positive definite."""
    g = torch.Generator().manual_seed(seed)
    M = torch.randn(N, P, P, generator=g, dtype=D)
    A = M @ M.transpose(1, 2) / P + 0.5 * torch.eye(P, dtype=D)
    b = 3 * torch.randn(N, P, generator=g, dtype=D)
    return A, b


def _grad(A: torch.Tensor, b: torch.Tensor) -> Any:
    return lambda z, *_: torch.einsum("npq,nq->np", A, z - b)


def _graphs(t: int) -> tf.Topology:
    """A time-varying sequence: the ring, then an Erdos-Renyi graph of the round's seed."""
    return tf.topologies.ring(N) if t % 2 == 0 else tf.topologies.erdos_renyi(N, 0.6, seed=t)


def _online(t: int) -> np.ndarray | None:
    """Every client, or (every third round) clients 1 and 4 absent."""
    if t % 3 != 2:
        return None
    on = np.ones(N, dtype=bool)
    on[[1, 4]] = False
    return on


def _drive(algo: tf.engine.Algorithm, rounds: int, *, drop: float = 0.0,
           lr: float = 0.05) -> tuple[np.ndarray, tf.engine.State, list[tf.engine.Sent]]:
    """The engine's order by hand (round start, the phase's local steps with the absent
    clients' rate 0, communicate), on the rounds of :func:`_graphs` and :func:`_online`,
    each round's graph as the engine builds it (:func:`round_view`)."""
    from topofl.engine.availability import round_view  # the engine's own round builder

    A, b = _problem()
    grad = _grad(A, b)
    env = tf.engine.toy_services(N, P)
    state = algo.init(torch.zeros(N, P, dtype=D), env)
    (phase,) = algo.phases
    out, sent = [], []
    for t in range(rounds):
        online = _online(t)
        rnd = round_view(algo, t, _graphs(t), online)
        if drop:
            rnd = rnd._replace(drop=Drops(drop, seed=5, t=t))
        on = None if online is None else torch.as_tensor(online)
        algo.round_start(state, rnd, env)
        for _ in range(phase.steps or 1):
            g = grad(algo.local.point(state, phase, env))
            algo.local.update(state, g, phase, local_rates(torch.full((N,), lr, dtype=D), on),
                              rnd, env)
        sent.append(algo.communicate(state, rnd, env))
        out.append(state.x.numpy().copy())
    return np.array(out), state, sent


def _reference_parallel(rounds: int, steps: int, momentum: float, *, drop: float = 0.0,
                        lost: str = "renormalise", absent: str = "renormalise",
                        lr: float = 0.05) -> np.ndarray:
    """D-PSGD's update in numpy: ``x <- M_t x^t + (x' - x^t)``, ``x'`` after ``steps``
    heavy-ball steps (``v <- m v + g``, ``x <- x - lr v``, momentum kept across rounds),
    ``M_t`` the round's matrix (the absent clients' arcs removed by the rule ``absent``, the
    lost messages' by ``lost``); an absent client neither steps nor moves its momentum."""
    A, b = (a.numpy() for a in _problem())
    x, v, out = np.zeros((N, P)), np.zeros((N, P)), []
    keep = {"renormalise": "doubly", "lose": "none"}[absent]
    for t in range(rounds):
        online = _online(t)
        topo = _graphs(t)
        moving = np.ones(N, dtype=bool) if online is None else online
        if online is not None:
            topo = active_topology(topo, online, keep=keep)
        if drop:
            topo = lossy(topo, Drops(drop, seed=5, t=t), lost).topology
        M = topo.to_dense()
        start = x.copy()
        for _ in range(steps):
            g = np.einsum("npq,nq->np", A, x - b)
            v = np.where(moving[:, None], momentum * v + g, v)
            x = np.where(moving[:, None], x - lr * v, x)
        x = M @ start + (x - start)
        out.append(x)
    return np.array(out)


# ----------------------------------------------------------------------------- D-PSGD's order

@pytest.mark.parametrize("steps,momentum", [(1, 0.0), (3, 0.5)])
def test_parallel_is_the_mixed_start_plus_the_local_update(steps: int, momentum: float) -> None:
    algo = tf.algorithms.dsgd(lr=0.05, order="parallel", local_steps=steps, momentum=momentum)
    got, state, _ = _drive(algo, 12)
    ref = _reference_parallel(12, steps, momentum)
    assert np.abs(got - ref).max() <= 1e-12
    assert np.abs(ref[-1]).max() > 0.5  # the models moved
    # the anchor kept is the last round's start, not its end
    assert not torch.equal(state.own_as(ProximalState).anchor, state.x)
    # and adapting first is another trajectory
    other, _, _ = _drive(tf.algorithms.dsgd(lr=0.05, local_steps=steps, momentum=momentum), 12)
    assert np.abs(other - ref).max() > 1e-3


@pytest.mark.parametrize("lost,absent", [("renormalise", "renormalise"), ("mass", "lose")])
def test_parallel_under_drops_and_absence_mixes_the_starts_by_the_rules(lost: str,
                                                                        absent: str) -> None:
    algo = tf.algorithms.dsgd(lr=0.05, order="parallel", local_steps=2, lost=lost,
                              absent=absent)
    got, _, sent = _drive(algo, 9, drop=0.3)
    ref = _reference_parallel(9, 2, 0.0, drop=0.3, lost=lost, absent=absent)
    assert np.abs(got - ref).max() <= 1e-12
    assert any(s.dropped for s in sent)  # messages were lost
    default = _reference_parallel(9, 2, 0.0, drop=0.3)
    if lost != "renormalise":
        assert np.abs(default - ref).max() > 1e-3  # the rules change the numbers


def test_an_absent_client_stands_still_under_the_parallel_order() -> None:
    # clients 1 and 4 are absent every third round: no local step, no neighbour's weight
    got, _, _ = _drive(tf.algorithms.dsgd(lr=0.05, order="parallel", momentum=0.5), 9)
    for t in (2, 5, 8):
        np.testing.assert_array_equal(got[t][[1, 4]], got[t - 1][[1, 4]])
        assert np.abs(got[t] - got[t - 1]).max() > 1e-3  # the others moved


def test_parallel_resumes_from_a_checkpoint_as_the_uninterrupted_run(tmp_path: Path) -> None:
    data = tf.data.federate("digits", "shards", 8, shards_per_client=2, seed=0)
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    algo = tf.algorithms.dsgd(lr=0.3, momentum=0.5, local_steps=2, order="parallel")
    topo = tf.topologies.random_regular(8, 3, seed=0)
    full = tf.engine.run(RunConfig(rounds=6, batch_size=8, eval_every=2, seed=2), topo, algo,
                         data, model)
    cfg = RunConfig(rounds=6, batch_size=8, eval_every=2, seed=2, checkpoint_every=2,
                    checkpoint_path=str(tmp_path / "ck.pt"),
                    records_path=str(tmp_path / "r.jsonl"))
    with pytest.raises(Crash):
        tf.engine.run(cfg, topo, algo, CrashingData(data, at=3), model)
    resumed = tf.engine.run(cfg, topo, algo, data, model, resume=tmp_path / "ck.pt")
    assert torch.equal(resumed.state.x, full.state.x)
    adapt = tf.engine.run(RunConfig(rounds=6, batch_size=8, eval_every=2, seed=2), topo,
                          tf.algorithms.dsgd(lr=0.3, momentum=0.5, local_steps=2), data, model)
    assert not torch.allclose(adapt.state.x, full.state.x, atol=1e-4)


def test_parallel_takes_the_robust_rules_and_clique_averaging() -> None:
    # FromStart runs any mixing piece on the starting models: the trimmed mean of the starts,
    # and Clique Averaging's gradients with the models gossiped from the start
    A, b = _problem()
    x0 = 3 * torch.randn(N, P, generator=torch.Generator().manual_seed(1), dtype=D)
    robust = tf.algorithms.dsgd(lr=0.1, order="parallel", aggregator="trimmed_mean", trim=1)
    got = tf.engine.run_rounds(robust, x0, tf.topologies.complete(N), _grad(A, b),
                               rounds=1).state.x
    sorted_ = x0.sort(dim=0).values[1:-1].mean(dim=0)  # every node: the same trimmed mean
    np.testing.assert_allclose(got.numpy(), (sorted_ - 0.1 * _grad(A, b)(x0)).numpy(),
                               rtol=0, atol=1e-12)
    dc = tf.topologies.dcliques(np.eye(3)[np.repeat(np.arange(3), 4)], seed=0)
    ca = tf.algorithms.dsgd(lr=0.1, order="parallel", clique_averaging=True)
    n = dc.n
    c = torch.arange(float(n), dtype=D).unsqueeze(1)
    z0 = torch.randn(n, 1, generator=torch.Generator().manual_seed(2), dtype=D)
    trace = tf.engine.run_rounds(ca, z0, dc, lambda z, *_: z - c, rounds=1)
    W = torch.as_tensor(dc.to_dense(), dtype=D)
    C = torch.as_tensor(tf.topologies.clique_averaging_matrix(dc).toarray(), dtype=D)
    # the start mixed, and the step along the clique-averaged gradient at the start
    np.testing.assert_allclose(trace.state.x.numpy(), (W @ z0 - 0.1 * C @ (z0 - c)).numpy(),
                               rtol=0, atol=1e-12)
    assert not torch.allclose(C @ c, c)  # the clique average changed the gradients


# ----------------------------------------------------------------------------- Aug-DGM

def test_augdgm_trackers_sum_to_the_latest_gradients() -> None:
    algo = tf.algorithms.dsgt(lr=0.05, variant="augdgm")
    _, state, sent = _drive(algo, 13)
    own = state.own_as(TrackingState)
    np.testing.assert_allclose(own.y.sum(0).numpy(), own.grad.sum(0).numpy(), rtol=0,
                               atol=1e-11)
    # round 0 sends the model only (y_0 = g(x_0), unmixed); later rounds the tracker, then
    # the model
    assert [f.kind for f in sent[0].flows] == ["model"]
    assert [(f.kind, f.stage) for f in sent[1].flows] == [("tracker", 0), ("model", 1)]


def test_augdgm_reaches_the_exact_optimum_with_a_constant_step() -> None:
    A, b = _problem()
    opt = torch.linalg.solve(A.sum(0), torch.einsum("npq,nq->p", A, b))
    out = {}
    for variant in ("augdgm", "diging"):
        trace = tf.engine.run_rounds(tf.algorithms.dsgt(lr=0.05, variant=variant),
                                     torch.zeros(N, P, dtype=D), tf.topologies.ring(N),
                                     _grad(A, b), rounds=1500)
        out[variant] = trace.state.x
        assert torch.abs(trace.state.x - opt).max() <= 1e-9, variant
    assert not torch.equal(out["augdgm"], out["diging"])


def test_augdgm_refuses_a_compressor() -> None:
    with pytest.raises(ValueError, match="variant='augdgm' does not combine with compressor"):
        tf.algorithms.dsgt(variant="augdgm", compressor="topk")


# ----------------------------------------------------------------------------- the keywords

def test_the_defaults_record_what_they_did_and_the_options_are_recorded() -> None:
    base = tf.algorithms.dsgd(lr=0.1)
    assert set(base.hparams) == {"lr", "momentum", "weight_decay", "local_steps",
                                 "local_epochs", "decay", "nesterov", "clique_averaging"}
    assert (base.absent, base.lost) == ("renormalise", "renormalise")
    for kw in ({"order": "parallel"}, {"absent": "lose"}, {"lost": "mass"}):
        algo = tf.algorithms.dsgd(lr=0.1, **kw)
        (k, v), = kw.items()
        assert algo.hparams == {**base.hparams, k: v}
    algo = tf.algorithms.dsgd(lr=0.1, absent="lose", lost="mass")
    assert (algo.absent, algo.lost) == ("lose", "mass")


def test_the_options_change_the_run_hash(tmp_path: Path) -> None:
    data = tf.data.federate("digits", "iid", 4, seed=0)
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    hashes = {}
    for name, kw in {"default": {}, "absent": {"absent": "lose"}, "lost": {"lost": "mass"},
                     "order": {"order": "parallel"}}.items():
        path = tmp_path / f"{name}.jsonl"
        tf.engine.run(RunConfig(rounds=1, batch_size=8, seed=0, records_path=str(path)),
                      tf.topologies.ring(4), tf.algorithms.dsgd(lr=0.1, **kw), data, model)
        header = json.loads(path.read_text().splitlines()[0])
        hashes[name] = header_run_hash(header)
    assert len(set(hashes.values())) == 4, hashes


@pytest.mark.parametrize("kw,match", [
    ({"order": "reverse"}, "order must be one of"),
    ({"absent": "stale"}, "absent must be one of"),
    ({"lost": "keep"}, "lost must be one of"),
    ({"lost": "mass", "clique_averaging": True}, "lost='mass' does not combine with "
                                                  "clique_averaging"),
    ({"lost": "mass", "aggregator": "median"}, "lost='mass' does not combine with "
                                               "aggregator='median'"),
    ({"order": "parallel", "compressor": "topk"}, "compressor='topk' combines with the "
                                                  "defaults"),
    ({"absent": "lose", "compressor": "qsgd"}, "compressor='qsgd' combines with the defaults"),
])
def test_bad_combinations_are_refused(kw: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        tf.algorithms.dsgd(lr=0.1, **kw)


# ----------------------------------------------------------------------------- message noise

def test_message_noise_adds_each_delivered_copys_weighted_noise() -> None:
    # a constant noise (std 0, mean m) adds m sum_{j != i} W_ij to receiver i: its row's
    # off-diagonal weight as mixed, after the lost messages under either rule
    x0 = torch.zeros(N, P, dtype=D)
    topo = tf.topologies.erdos_renyi(N, 0.6, seed=3)
    for lost in ("renormalise", "mass"):
        algo = tf.algorithms.dsgd(lr=0.1, noise_mean=0.25, lost=lost)
        env = tf.engine.toy_services(N, P)
        state = algo.init(x0.clone(), env)
        rnd = tf.engine.Round(0, topo, drop=Drops(0.4, seed=2, t=0))
        algo.communicate(state, rnd, env)
        M = lossy(topo, Drops(0.4, seed=2, t=0), lost).topology.to_dense()
        off = M.sum(1) - np.diag(M)
        np.testing.assert_allclose(state.x.numpy(), 0.25 * np.repeat(off[:, None], P, 1),
                                   rtol=0, atol=1e-15)
        assert (off < (topo.to_dense().sum(1) - np.diag(topo.to_dense())) - 1e-12).any()


def test_message_noise_has_the_variance_of_its_weighted_copies() -> None:
    # receiver i's noise is sum_j W_ij xi_ij, variance std^2 sum_{j != i} W_ij^2
    width, std = 20_000, 0.7
    topo = tf.topologies.ring(5)
    env = tf.engine.toy_services(5, width)
    state = tf.engine.State(x=torch.zeros(5, width, dtype=D))
    gossip(noise=MessageNoise(std, seed=4))(state, tf.engine.Round(3, topo), env)
    W = topo.to_dense()
    expect = std**2 * ((W**2).sum(1) - np.diag(W) ** 2)
    np.testing.assert_allclose(state.x.var(dim=1).numpy(), expect, rtol=0.05)
    np.testing.assert_allclose(state.x.mean(dim=1).numpy(), 0.0, atol=0.02)


def test_message_noise_is_drawn_from_its_streams_and_recorded() -> None:
    A, b = _problem()
    runs = [tf.engine.run_rounds(tf.algorithms.dsgd(lr=0.05, message_noise=0.1, noise_seed=s),
                                 torch.zeros(N, P, dtype=D), tf.topologies.ring(N),
                                 _grad(A, b), rounds=6).state.x for s in (1, 1, 2)]
    assert torch.equal(runs[0], runs[1]) and not torch.allclose(runs[0], runs[2])
    algo = tf.algorithms.dsgd(lr=0.05, message_noise=0.1, noise_seed=1)
    assert {k: algo.hparams[k] for k in ("message_noise", "noise_seed")} == {
        "message_noise": 0.1, "noise_seed": 1}
    assert "noise_seed" not in tf.algorithms.dsgd(lr=0.05, noise_seed=3).hparams
    for kw, match in [({"message_noise": -1.0}, "message_noise must be"),
                      ({"message_noise": 0.1, "aggregator": "median"},
                       "do not combine with aggregator='median'"),
                      ({"noise_mean": 0.1, "clique_averaging": True},
                       "do not combine with clique_averaging"),
                      ({"message_noise": 0.1, "compressor": "topk"},
                       "combines with the defaults")]:
        with pytest.raises(ValueError, match=match):
            tf.algorithms.dsgd(**kw)
