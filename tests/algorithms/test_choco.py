"""CHOCO-SGD against D-SGD, closed-form fixed points, a slow per-client reference, the
compressors' laws, its ledger bytes by hand, and the peer code's update equations.

The toy problem (as in ``test_tracking.py``): client ``i`` minimises
``f_i(x) = a_i |x - b_i|^2 / 2`` with heterogeneous ``a_i`` and ``b_i`` (full gradients).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from tests.algorithms.test_tracking import (
    _assert_follows,
    _dsgd_fixed_point,
    _grad,
    _mix,
    _problem,
)
from topofl._utils.rng import generator_at
from topofl.algorithms.choco import compress, kept, qsgd_bits, qsgd_scale
from topofl.engine import run_rounds, toy_services
from topofl.engine.availability import Availability
from topofl.engine.pieces.compression import STREAM

D = torch.float64
N, P = 8, 30


def _run(algo: Any, topo: Any, a: np.ndarray, b: np.ndarray, rounds: int, lr: float) -> Any:
    return run_rounds(algo, torch.zeros(a.shape[0], b.shape[1], dtype=D), topo, _grad(a, b),
                      rounds=rounds, lr=lr)


def _lazy(W: np.ndarray, gamma: float) -> np.ndarray:
    return (1 - gamma) * np.eye(W.shape[0]) + gamma * W


# ----------------------------------------------------------------------------- reference
# Slow and obvious: one client at a time, numpy float64, the paper's Algorithm 2 line by line;
# the random compressors draw the same streams (seed, tag, t, client) as the library.


def _q_ref(v: np.ndarray, compressor: str, ratio: float, levels: int, seed: int, t: int,
           i: int) -> np.ndarray:
    p = v.size
    q = np.zeros(p)
    if compressor == "topk":
        k = kept(ratio, p)
        for j in np.argsort(-np.abs(v), kind="stable")[:k]:
            q[j] = v[j]
    elif compressor == "randk":
        k = kept(ratio, p)
        for j in generator_at(seed, STREAM, t, i).choice(p, k, replace=False):
            q[j] = v[j]
    else:
        u = generator_at(seed, STREAM, t, i).random(p)
        norm = math.sqrt(sum(c * c for c in v))
        tau = 1 + min(p / levels**2, math.sqrt(p) / levels)
        for j in range(p):
            if norm == 0:
                continue
            lev = levels * abs(v[j]) / norm
            lo = math.floor(lev)
            xi = lo + (1 if u[j] < lev - lo else 0)
            q[j] = np.sign(v[j]) * norm * xi / levels / tau
    return q


def _ref_choco(W: np.ndarray, a: np.ndarray, b: np.ndarray, lr: float, gamma: float,
               rounds: int, compressor: str, ratio: float = 0.1, levels: int = 4,
               seed: int = 0) -> list[np.ndarray]:
    n = a.shape[0]
    x, xhat = np.zeros_like(b), np.zeros_like(b)
    out = []
    for t in range(rounds):
        half = np.array([x[i] - lr * a[i] * (x[i] - b[i]) for i in range(n)])
        q = np.array([_q_ref(half[i] - xhat[i], compressor, ratio, levels, seed, t, i)
                      for i in range(n)])
        xhat = xhat + q
        x = np.array([half[i] + gamma * sum(W[i, j] * (xhat[j] - xhat[i]) for j in range(n)
                                            if W[i, j] != 0) for i in range(n)])
        out.append(x)
    return out


@pytest.mark.parametrize("compressor,gamma", [("topk", 0.3), ("randk", 0.2), ("qsgd", 0.5)])
def test_matches_the_per_client_reference_step_by_step(compressor: str, gamma: float) -> None:
    a, b = _problem(N, P, seed=1)
    topo = tf.topologies.random_regular(N, 3, seed=0)
    lr, rounds = 0.05, 40
    ref = _ref_choco(topo.to_dense(), a, b, lr, gamma, rounds, compressor, seed=5)
    algo = tf.algorithms.choco(lr=lr, compressor=compressor, ratio=0.1, levels=4,
                               gamma=gamma, compress_seed=5)
    _assert_follows(algo, topo, a, b, lr, ref)


# ----------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize("momentum", [0.0, 0.5])
def test_no_compression_and_gamma_one_is_dsgd(momentum: float) -> None:
    # Q = identity, gamma = 1: x^ = x^{t+1/2} after every exchange, x <- W x^{t+1/2}
    a, b = _problem(N, P, seed=2)
    topo = tf.topologies.random_regular(N, 3, seed=1)
    c = _run(tf.algorithms.choco(lr=0.05, ratio=1.0, gamma=1.0, momentum=momentum), topo,
             a, b, 200, 0.05)
    d = _run(tf.algorithms.dsgd(lr=0.05, momentum=momentum), topo, a, b, 200, 0.05)
    np.testing.assert_allclose(c.evaluated().numpy(), d.evaluated().numpy(), rtol=0,
                               atol=1e-12)
    # ... and the same bytes: at ratio 1 the dense difference is sent, without indices
    assert [f.bytes for f in c.sent[-1].flows or ()] == [f.bytes for f in d.sent[-1].flows or ()]


@pytest.mark.parametrize("compressor", ["topk", "randk", "qsgd"])
def test_the_fixed_point_is_dsgds_on_the_lazy_matrix(compressor: str) -> None:
    # at a fixed point q = 0, so x^ = x^{t+1/2} and x = ((1 - gamma) I + gamma W) x^{t+1/2}:
    # D-SGD's fixed point on W_gamma, whatever the compressor
    a, b = _problem(N, P, seed=0)
    ring = tf.topologies.ring(N)
    W, lr, gamma = ring.to_dense(), 0.05, 0.2
    got = _run(tf.algorithms.choco(lr=lr, compressor=compressor, ratio=0.1, gamma=gamma),
               ring, a, b, 3000, lr).evaluated().numpy()
    np.testing.assert_allclose(got, _dsgd_fixed_point(_lazy(W, gamma), a, b, lr), rtol=0,
                               atol=1e-10)


def test_top_k_ten_percent_reaches_dsgds_neighbourhood_at_a_fraction_of_its_bytes() -> None:
    a, b = _problem(N, P, seed=3)
    ring = tf.topologies.ring(N)
    W, lr, rounds = ring.to_dense(), 0.05, 3000
    opt = (a * b).sum(0) / a.sum()
    dsgd = _run(tf.algorithms.dsgd(lr=lr), ring, a, b, rounds, lr)
    choco = _run(tf.algorithms.choco(lr=lr, ratio=0.1, gamma=0.3), ring, a, b, rounds, lr)
    x, d = choco.evaluated().numpy(), dsgd.evaluated().numpy()
    np.testing.assert_allclose(d, _dsgd_fixed_point(W, a, b, lr), atol=1e-10)
    # CHOCO's point is D-SGD's on W_gamma (test above): a step-size bias from the optimum of
    # at most 1 / gamma times D-SGD's (first order in lr: (I - W_gamma)^+ = (I - W)^+ / gamma;
    # measured 0.86 / gamma here), not D-SGD's point itself (1.9 times its bias away)
    bias = np.linalg.norm(d - opt)
    assert np.linalg.norm(x - opt) <= 0.9 * bias / 0.3
    assert np.linalg.norm(x - opt) > 2 * bias
    # bytes: k = 3 of 30 values (8 bytes) with 3 int32 indices, against 30 values
    per_round = {k: sum(f.bytes for f in t.sent[-1].flows or ()) for k, t in
                 (("dsgd", dsgd), ("choco", choco))}
    assert per_round == {"dsgd": 2 * N * P * 8, "choco": 2 * N * 3 * (8 + 4)}
    assert per_round["dsgd"] / per_round["choco"] > 6.6
    assert choco.sent[-1].messages == dsgd.sent[-1].messages == 2 * N


def test_absent_clients_send_nothing_and_stand_still() -> None:
    a, b = _problem(N, P, seed=4)
    ring = tf.topologies.ring(N)
    avail = Availability.from_config({"model": "bernoulli", "offline": 0.3, "seed": 0})
    algo = tf.algorithms.choco(lr=0.05, compressor="randk", ratio=0.2, gamma=0.2,
                               compress_seed=1)
    env = toy_services(N, P)
    state = algo.init(torch.zeros(N, P, dtype=D), env)
    for t in range(30):
        before = {k: v.clone() for k, v in state.tensors().items()}
        tr = run_rounds(algo, state.x, ring, _grad(a, b), rounds=1, lr=0.05, env=env,
                        state=state, start=t, availability=avail)
        off = ~avail.online(t, N)
        for k, v in state.tensors().items():
            assert torch.equal(v[off], before[k][off]), (t, k)
        for f in tr.sent[-1].flows or ():
            assert not np.isin(f.arcs.senders, np.flatnonzero(off)).any()
            assert not np.isin(f.arcs.receivers, np.flatnonzero(off)).any()


def test_split_runs_equal_one_run() -> None:
    # the random compressors draw by (seed, round, client): continuing from a saved state
    # draws what the uninterrupted run drew
    a, b = _problem(N, P, seed=6)
    topo = tf.topologies.random_regular(N, 3, seed=2)
    for compressor in ("randk", "qsgd"):
        algo = tf.algorithms.choco(lr=0.05, compressor=compressor, gamma=0.2,
                                   compress_seed=9)
        full = _run(algo, topo, a, b, 12, 0.05)
        env = toy_services(N, P)
        first = algo.init(torch.zeros(N, P, dtype=D), env)
        run_rounds(algo, first.x, topo, _grad(a, b), rounds=7, lr=0.05, env=env, state=first)
        saved = {k: v.clone() for k, v in first.tensors().items()}
        second = algo.init(torch.zeros(N, P, dtype=D), env)
        second.load_tensors(saved)
        run_rounds(algo, second.x, topo, _grad(a, b), rounds=5, lr=0.05, env=env,
                   state=second, start=7)
        assert torch.equal(second.x, full.evaluated()), compressor


# ----------------------------------------------------------------------------- compressors


@settings(deadline=None, max_examples=40)
@given(m=st.integers(1, 4), p=st.integers(1, 60), ratio=st.floats(0.01, 1.0),
       seed=st.integers(0, 1000))
def test_top_k_keeps_exactly_the_k_largest_magnitudes(m: int, p: int, ratio: float,
                                                     seed: int) -> None:
    v = torch.tensor(np.random.default_rng(seed).normal(size=(m, p)), dtype=D)
    q = compress(v, "topk", ratio=ratio)
    k = kept(ratio, p)
    assert k == max(1, min(p, math.ceil(round(ratio * p, 9))))
    for r in range(m):
        keep = q[r] != 0
        assert int(keep.sum()) == k
        assert torch.equal(q[r][keep], v[r][keep])
        if k < p:  # every kept magnitude >= every dropped one
            assert float(v[r][keep].abs().min()) >= float(v[r][~keep].abs().max())


def test_rand_k_is_k_over_p_times_the_vector_in_expectation() -> None:
    # unscaled rand-k (the paper's): each coordinate kept with probability k / P
    p, ratio, draws = 20, 0.25, 4000
    v = torch.tensor(np.random.default_rng(0).normal(size=(1, p)), dtype=D)
    qs = torch.cat([compress(v, "randk", ratio=ratio, t=t, seed=2) for t in range(draws)])
    assert bool(((qs != 0).sum(1) == 5).all())
    assert bool(((qs == 0) | (qs == v)).all())
    frac = (qs != 0).double().mean(0)  # Bernoulli(1/4) per coordinate: sd sqrt(3/16 / n)
    assert float((frac - 0.25).abs().max()) < 5 * math.sqrt(0.25 * 0.75 / draws)
    # distinct clients and rounds draw distinct sets; the same (seed, t, client) the same
    a = compress(v.expand(3, p), "randk", ratio=ratio, t=0, seed=2)
    assert not torch.equal(a[0] != 0, a[1] != 0)
    assert torch.equal(a, compress(v.expand(3, p), "randk", ratio=ratio, t=0, seed=2))


@pytest.mark.parametrize("levels", [1, 4, 16])
def test_qsgd_is_unbiased_once_rescaled(levels: int) -> None:
    # tau Q(v) is QSGD: E[tau Q(v)] = v, each coordinate a two-point variable on adjacent
    # levels (variance <= (|v| / s)^2 / 4); tau Q(v) / |v| * s is an integer in [0, s]
    p, draws = 12, 4000
    v = torch.tensor(np.random.default_rng(1).normal(size=(1, p)), dtype=D)
    tau = 1 / qsgd_scale(levels, p)
    qs = torch.cat([compress(v, "qsgd", levels=levels, t=t, seed=3) for t in range(draws)])
    norm = float(v.norm())
    lev = (qs * tau).abs() * levels / norm
    torch.testing.assert_close(lev, lev.round(), rtol=0, atol=1e-9)
    assert float(lev.max()) <= levels + 1e-9
    assert bool(((torch.sign(qs) == torch.sign(v)) | (qs == 0)).all())
    sd = norm / levels / 2 / math.sqrt(draws)
    assert float(((qs * tau).mean(0) - v[0]).abs().max()) < 5 * sd
    # the rescaled quantizer contracts: E|Q(v) - v|^2 <= (1 - 1 / tau) |v|^2
    err = float(((qs - v) ** 2).sum(1).mean())
    assert err <= (1 - 1 / tau) * norm**2 * 1.02


def test_qsgd_of_zero_is_zero_and_bits_are_levels_and_sign() -> None:
    z = torch.zeros(2, 5, dtype=D)
    assert torch.equal(compress(z, "qsgd", levels=3), z)
    assert [qsgd_bits(s) for s in (1, 2, 3, 4, 7, 8, 16)] == [2, 3, 3, 4, 4, 5, 6]


# ----------------------------------------------------------------------------- the ledger


@pytest.mark.parametrize("compressor,ratio,levels,want", [
    # 4 arcs of a path's ... ring of 3: 6 arcs; P = 100 float32 numbers
    ("topk", 0.1, 16, 6 * (10 * 4 + 10 * 4)),   # 10 values + 10 int32 indices
    ("randk", 0.05, 16, 6 * (5 * 4 + 5 * 4)),
    ("topk", 0.5, 16, 6 * 100 * 4),             # 50 * (4 + 4) >= 400: the dense vector
    ("qsgd", 0.1, 16, 6 * (math.ceil(100 * 6 / 8) + 4)),  # 5-bit levels + sign, 32-bit norm
    ("qsgd", 0.1, 1, 6 * (math.ceil(100 * 2 / 8) + 4)),
])
def test_bytes_by_hand(compressor: str, ratio: float, levels: int, want: int) -> None:
    algo = tf.algorithms.choco(compressor=compressor, ratio=ratio, levels=levels)
    env = toy_services(3, 100, dtype=torch.float32)
    state = algo.init(torch.ones(3, 100), env)
    sent = algo.communicate(state, tf.engine.Round(0, tf.topologies.ring(3)), env)
    assert sent.messages == 6
    assert sum(f.bytes for f in sent.flows or ()) == want
    ledger = tf.engine.ledger.Ledger(3)
    assert ledger.add(sent.flows or ()) == (6, want)
    assert ledger.by_kind["compressed"][0] == 6


# ----------------------------------------------------------------------------- peer code


def test_gossip_agrees_with_epfml_chocosgds_update_order() -> None:
    # epfml/ChocoSGD (convex_code/logistic.py, the "choco" branch; dl_code's parallel_choco
    # likewise) orders a round as: x <- x + gamma x^ (W - I) (the estimates before the
    # exchange), then q = Q(x - x^), x^ <- x^ + q. The paper's Algorithm 2 compresses first and
    # gossips with the new estimates. Without gradients the two are the same operations
    # shifted by half a round: ours after T rounds = one gossip after T - 1 of theirs started
    # from (x_0, Q(x_0)). Their equations written here from reading, top-k as theirs
    # (argsort of |v|, descending).
    n, p, gamma, rounds = 6, 10, 0.4, 50
    rng = np.random.default_rng(0)
    x0 = rng.normal(size=(n, p))
    topo = tf.topologies.ring(n)
    W = topo.to_dense()

    def q_top(v: np.ndarray, k: int) -> np.ndarray:
        out = np.zeros_like(v)
        for i in range(v.shape[0]):
            idx = np.argsort(np.abs(v[i]))[::-1][:k]
            out[i, idx] = v[i, idx]
        return out

    x, xhat = x0.copy(), q_top(x0, 2)
    for _ in range(rounds - 1):  # theirs
        x = x + gamma * (_mix(W, xhat) - xhat)
        xhat = xhat + q_top(x - xhat, 2)
    x = x + gamma * (_mix(W, xhat) - xhat)
    ours = run_rounds(tf.algorithms.choco(lr=0.1, ratio=0.2, gamma=gamma),
                      torch.tensor(x0, dtype=D), topo, lambda z, ph, r: torch.zeros_like(z),
                      rounds=rounds)
    np.testing.assert_allclose(ours.evaluated().numpy(), x, rtol=0, atol=1e-12)
    # the average is preserved (W doubly stochastic) and consensus is approached
    np.testing.assert_allclose(x.mean(0), x0.mean(0), atol=1e-12)


# ----------------------------------------------------------------------------- through tf.run


def test_trains_an_mlp_on_digits_with_a_fifth_of_dsgds_bytes() -> None:
    kw = dict(topology="ring", n_clients=8, rounds=40, seed=0, model="mlp", lr=0.05,
              eval_every=20, spectral=False, record_clients=False)
    res = tf.run("choco", gamma=0.2, **kw)
    ref = tf.run("dsgd", **kw)
    _, acc = res.records.series("test_acc_mean")
    assert acc[-1] > acc[0] + 0.05, acc.tolist()
    assert res.records.final("messages") == ref.records.final("messages")
    # k = ceil(P / 10) float32 values + k int32 indices against P float32 values
    p = res.layout.num_params
    k = kept(0.1, p)
    assert res.records.final("bytes") == 40 * 16 * k * 8
    assert ref.records.final("bytes") / res.records.final("bytes") == pytest.approx(
        p * 4 / (k * 8))
    assert ref.records.final("bytes") / res.records.final("bytes") > 4.9


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="compressor must be one of"):
        tf.algorithms.choco(compressor="sign")
    with pytest.raises(ValueError, match="ratio"):
        tf.algorithms.choco(ratio=0.0)
    with pytest.raises(ValueError, match="gamma"):
        tf.algorithms.choco(gamma=1.5)
    with pytest.raises(ValueError, match="levels"):
        tf.algorithms.choco(levels=0)
    with pytest.raises(ValueError, match="compressor must be one of"):
        compress(torch.ones(1, 3), "sign")
