"""CHOCO-SGD and BEER as their authors' code ships them (issue 84, item 3).

Each replay option against a slow, obvious numpy transcription of the peer's loop, written
here from reading its code (file and lines cited at each; no code copied), on the same inputs:
the toy quadratics ``f_i(x) = a_i |x - b_i|^2 / 2`` (full gradients), float64, every round
of 20 compared to 1e-12, run through :func:`topofl.engine.run_rounds`. Where the peer draws
at random, the transcription takes topofl's draws (the stream ``(compress_seed, tag, t, i)``)
in the peer's formula: the same random numbers, fed to both.

* ``choco(order="consensus_first")``: ``epfml/ChocoSGD`` ``convex_code/logistic.py``, the
  ``choco`` method of ``fit``: the consensus step on the public copies as they stand, then
  the compression of the model it reached (topofl's default is the paper's Algorithm 2: the
  compression first, then the consensus step on the updated copies).
* ``choco(per_tensor=True)``: ``dl_code/pcode/optim/parallel_choco_v.py``, which compresses
  each parameter tensor on its own (and in the consensus-first order).
* QSGD without CHOCO's ``1/tau`` (``rescale=False``, the ``Compressor`` group's): BEER's
  experiments (``liboyue/beer`` ``experiments/BEER.py`` with ``liboyue/Network-Distributed-
  Algorithm`` ``nda/optimizers/compressor.py``'s ``gsgd``) and ChocoSGD's deep-learning code
  (``is_biased=False``, its default).
* BEER's ``top`` (the ``a`` smallest *signed* entries, not the largest magnitudes) is not
  offered: the test measures how far it takes BEER from topofl's top-k.

The defaults are unchanged: the numbers of a fixed case equal those the code gave before the
options (``tests/algorithms/data/choco_default.json``, written by that code) bit for bit, and
the recorded hyper-parameters have no new key.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import topofl as tf
from topofl._utils.rng import generator_at
from topofl.algorithms.dsgt import BeerState
from topofl.engine import run_rounds, toy_services
from topofl.engine.layout import ParamLayout
from topofl.engine.pieces.compression import (
    STREAM,
    CompressedGossip,
    Compression,
    compress,
    kept,
)

D = torch.float64
N, P, ROUNDS = 6, 24, 20
DATA = Path(__file__).parent / "data" / "choco_default.json"
#: A model of four parameter tensors (12 + 2 + 6 + 4 = 24 entries), for ``per_tensor``
SHAPES = ((4, 3), (2,), (6,), (2, 2))
SIZES = tuple(math.prod(s) for s in SHAPES)


def _problem(n: int = N, p: int = P, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 1.5, size=(n, 1)), rng.normal(size=(n, p)) * 2.0


def _grad(a: np.ndarray, b: np.ndarray) -> Any:
    at, bt = torch.tensor(a, dtype=D), torch.tensor(b, dtype=D)
    return lambda z, phase, rnd: at * (z - bt)


def _layout() -> ParamLayout:
    offsets = tuple(int(o) for o in np.cumsum((0,) + SIZES[:-1]))
    return ParamLayout(("w", "b", "v", "u"), tuple(torch.Size(s) for s in SHAPES), offsets,
                       P, P, ())


def _trajectory(algo: Any, topo: Any, a: np.ndarray, b: np.ndarray, lr: float,
                rounds: int = ROUNDS, env: Any = None, own: str | None = None
                ) -> list[np.ndarray]:
    """``algo`` run round by round from x = 0: every round's ``x`` (rows: clients), or the
    state's ``own`` field (a public copy) beside it."""
    n, p = b.shape
    env = toy_services(n, p) if env is None else env
    state = algo.init(torch.zeros(n, p, dtype=D), env)
    out = []
    for t in range(rounds):
        run_rounds(algo, state.x, topo, _grad(a, b), rounds=1, lr=lr, env=env, state=state,
                   start=t)
        out.append(state.x.numpy().copy() if own is None
                   else getattr(state.own, own).numpy().copy())
    return out


def _worst(xs: list[np.ndarray], ys: list[np.ndarray]) -> float:
    return max(float(np.abs(x - y).max()) for x, y in zip(xs, ys, strict=True))


def _uniforms(seed: int, tag: int, t: int, i: int, p: int) -> np.ndarray:
    """The uniforms topofl's QSGD draws for client ``i`` at round ``t``."""
    return generator_at(seed, tag, t, i).random(p)


# ------------------------------------------------------------------ ChocoSGD's convex code
# epfml/ChocoSGD @ 3cb976a, convex_code/logistic.py. Columns are machines (x: (d, n)).
# fit, lines 105-109: x_hat starts as a copy of x (here x^0 = 0, so x_hat^0 = 0 as topofl's).
# A step, lines 166-187 (method "choco"): x_plus = lr * minus_grad (178); x_plus += x (184);
# x = x_plus + consensus_lr * x_hat.dot(W - I) (185); x_hat += quantize(x - x_hat) (186-187).
# __quantize, lines 66-94: "top" keeps argsort(|x|)[::-1][:k] of each column (78-84);
# "random-biased" np.random.choice(d, k, replace=False) per column, unscaled (86-94);
# "qsgd-biased" / "qsgd-unbiased": qsgd_quantize (13-23) per column, the biased one times
# 1 / (min(d / s^2, sqrt(d) / s) + 1), its np.random.rand here topofl's uniforms.


def _convex_quantize(x: np.ndarray, kind: str, k: int, s: int, seed: int, t: int
                     ) -> np.ndarray:
    d, n = x.shape
    q = np.zeros_like(x)
    for i in range(n):
        col = x[:, i]
        if kind == "top":
            idx = np.argsort(np.abs(col))[::-1][:k]
            q[idx, i] = col[idx]
        elif kind == "random-biased":
            idx = generator_at(seed, STREAM, t, i).choice(d, k, replace=False)
            q[idx, i] = col[idx]
        else:
            norm = np.sqrt(np.sum(np.square(col)))
            level_float = s * np.abs(col) / norm
            previous_level = np.floor(level_float)
            is_next_level = _uniforms(seed, STREAM, t, i, d) < (level_float - previous_level)
            new_level = previous_level + is_next_level
            scale = 1.0
            if kind == "qsgd-biased":
                scale = 1.0 / (min(d / s**2, np.sqrt(d) / s) + 1.0)
            q[:, i] = scale * np.sign(col) * norm * new_level / s
    return q


def _choco_convex(W: np.ndarray, a: np.ndarray, b: np.ndarray, lr: float, gamma: float,
                  kind: str, k: int = 0, s: int = 0, seed: int = 0,
                  rounds: int = ROUNDS) -> list[np.ndarray]:
    n, d = b.shape
    x = np.zeros((d, n))
    x_hat = x.copy()
    out = []
    for t in range(rounds):
        x_plus = np.zeros_like(x)
        for machine in range(n):
            minus_grad = -a[machine, 0] * (x[:, machine] - b[machine])
            x_plus[:, machine] = lr * minus_grad
        x_plus += x
        x = x_plus + gamma * x_hat.dot(W - np.eye(n))
        x_hat += _convex_quantize(x - x_hat, kind, k, s, seed, t)
        out.append(x.T.copy())
    return out


_CONVEX = [("top", dict(compressor="topk", ratio=0.125), 0.4),
           ("random-biased", dict(compressor="randk", ratio=0.25), 0.2),
           ("qsgd-biased", dict(compressor="qsgd", levels=4), 0.4)]


@pytest.mark.parametrize("kind,kw,gamma", _CONVEX)
def test_consensus_first_is_chocosgd_convex_code(kind: str, kw: dict[str, Any],
                                                 gamma: float) -> None:
    a, b = _problem()
    topo = tf.topologies.random_regular(N, 3, seed=1)  # symmetric W: x.dot(W) is W x
    W = topo.to_dense()
    lr, seed = 0.1, 5
    algo = tf.algorithms.choco(lr=lr, gamma=gamma, compress_seed=seed, order="consensus_first",
                               **kw)
    ours = _trajectory(algo, topo, a, b, lr)
    theirs = _choco_convex(W, a, b, lr, gamma, kind, k=kept(kw.get("ratio", 1.0), P),
                           s=kw.get("levels", 0), seed=seed)
    assert _worst(ours, theirs) <= 1e-12  # measured: 1.3e-15 (top), 8.9e-16, 1.3e-15
    default = _trajectory(tf.algorithms.choco(lr=lr, gamma=gamma, compress_seed=seed, **kw),
                          topo, a, b, lr)
    apart = float(np.abs(default[-1] - ours[-1]).max())
    assert 0.1 < apart < 1.0, apart  # the paper's order: 0.36 (top), 0.21, 0.35 apart


def test_unbiased_qsgd_is_chocosgd_convex_code() -> None:
    # "qsgd-unbiased": no 1/tau; topofl's piece with rescale=False
    a, b = _problem()
    topo = tf.topologies.random_regular(N, 3, seed=1)
    lr, gamma, seed, s = 0.1, 0.1, 5, 8
    algo = tf.algorithms.choco(lr=lr, gamma=gamma, compress_seed=seed, compressor="qsgd",
                               levels=s, order="consensus_first", rescale=False)
    assert algo.communicate.compression.rescale is False and algo.hparams["rescale"] is False
    ours = _trajectory(algo, topo, a, b, lr)
    theirs = _choco_convex(topo.to_dense(), a, b, lr, gamma, "qsgd-unbiased", s=s, seed=seed)
    assert _worst(ours, theirs) <= 1e-12  # measured: 6.7e-16


# ------------------------------------------------------------------ ChocoSGD's deep-learning code
# epfml/ChocoSGD @ 3cb976a, dl_code. A step of ParallelCHOCO_V (pcode/optim/parallel_choco_v.py,
# step, lines 104-155): apply_gradient (pcode/optim/utils.py 13-47: p -= lr * grad, no momentum
# here); update_params_from_neighbor (utils.py 67-72): x += consensus_stepsize * (memory - hat),
# memory = sum_j w_ij hat_j; then CHOCOSparsificationCompressor.compress (parallel_choco_v.py
# 229-260) compresses `half_param - hat_param` for each parameter tensor on its own (the
# TensorBuffer iterates the tensors, pcode/utils/tensor_buffer.py 24-30); uncompress (284-310):
# hat_i += q_i, memory_i += w_ij q_j for every neighbour j (itself included). Top-k
# (pcode/utils/sparsification.py 18-31) keeps max(1, int(n (1 - compress_ratio))) entries of
# largest magnitude of an n-entry tensor (compress_ratio: the fraction dropped); QSGD
# (QuantizationCompressor, 86-120) has s = 2^quantize_level - 1 levels and the 1/tau of the
# tensor's size only with is_biased (default False, dl_code/parameters.py 123); its
# torch.rand_like here topofl's uniforms of the tensor's columns.


def _dl_compress(v: np.ndarray, op: str, compress_ratio: float, s: int, is_biased: bool,
                 u: np.ndarray) -> np.ndarray:
    q = np.zeros_like(v)
    if op == "top_k":
        top_k = max(1, int(v.size * (1 - compress_ratio)))
        idx = np.argsort(-np.abs(v), kind="stable")[:top_k]
        q[idx] = v[idx]
        return q
    norm = np.sqrt(np.sum(v * v))
    level_float = s * np.abs(v) / norm
    previous_level = np.floor(level_float)
    new_level = previous_level + (u < (level_float - previous_level))
    scale = 1.0
    if is_biased:
        d = v.size
        scale = 1.0 / (min(d / s**2, math.sqrt(d) / s) + 1.0)
    return scale * np.sign(v) * norm * new_level / s


def _choco_dl(W: np.ndarray, a: np.ndarray, b: np.ndarray, lr: float, gamma: float, op: str,
              compress_ratio: float = 0.0, quantize_level: int = 0, is_biased: bool = False,
              seed: int = 0, rounds: int = ROUNDS) -> list[np.ndarray]:
    n, p = b.shape
    x = np.zeros((n, p))
    hat = np.zeros((n, p))  # neighbor_hat_params[rank], zeros (parallel_choco_v.py 86-97)
    memory = np.zeros((n, p))  # neighbor_hat_params["memory"]
    s = 2**quantize_level - 1
    out = []
    for t in range(rounds):
        for i in range(n):
            x[i] = x[i] - lr * a[i, 0] * (x[i] - b[i])
        for i in range(n):
            x[i] = x[i] + gamma * (memory[i] - hat[i])
        q = np.zeros((n, p))
        for i in range(n):
            u = _uniforms(seed, STREAM, t, i, p)
            off = 0
            for size in SIZES:
                piece = slice(off, off + size)
                q[i, piece] = _dl_compress(x[i, piece] - hat[i, piece], op, compress_ratio,
                                           s, is_biased, u[piece])
                off += size
        for i in range(n):
            hat[i] += q[i]
            for j in range(n):
                if W[i, j] != 0:
                    memory[i] += W[i, j] * q[j]
        out.append(x.copy())
    return out


@pytest.mark.parametrize("op,quantize_level,is_biased", [("top_k", 0, False),
                                                         ("quantize", 2, False),
                                                         ("quantize", 2, True)])
def test_per_tensor_is_chocosgd_dl_code(op: str, quantize_level: int, is_biased: bool) -> None:
    a, b = _problem()
    topo = tf.topologies.ring(N)
    env = toy_services(N, P, layout=_layout())
    lr, gamma, seed = 0.1, 0.3, 2
    # compress_ratio 0.5 drops half: k = int(n / 2) = ceil(0.5 n) for these even sizes
    algo = tf.algorithms.choco(lr=lr, gamma=gamma, compress_seed=seed, per_tensor=True,
                               order="consensus_first", compressor="topk", ratio=0.5)
    if op == "quantize":
        s = 2**quantize_level - 1
        algo = algo._replace(communicate=CompressedGossip(
            Compression("qsgd", levels=s, seed=seed, per_tensor=True, rescale=is_biased),
            gamma, "consensus_first"))
    ours = _trajectory(algo, topo, a, b, lr, env=env)
    theirs = _choco_dl(topo.to_dense(), a, b, lr, gamma, op, compress_ratio=0.5,
                       quantize_level=quantize_level, is_biased=is_biased, seed=seed)
    assert _worst(ours, theirs) <= 1e-12  # measured: 1.1e-15 (top_k), 1.8e-15, 1.8e-15
    whole = algo._replace(communicate=CompressedGossip(
        Compression(algo.communicate.compression.compressor, 0.5,
                    algo.communicate.compression.levels, seed,
                    rescale=algo.communicate.compression.rescale), gamma, "consensus_first"))
    apart = float(np.abs(_trajectory(whole, topo, a, b, lr, env=env)[-1] - ours[-1]).max())
    assert 0.005 < apart < 0.1, apart  # the whole row at once: 0.013 (top_k), 0.033, 0.046


def test_per_tensor_compresses_each_piece_as_its_own_row() -> None:
    # compress(parts=...) = compress of each piece; rand-k draws piece after piece
    v = torch.tensor(np.random.default_rng(3).normal(size=(N, P)), dtype=D)
    for comp in ("topk", "randk", "qsgd"):
        q = compress(v, comp, ratio=0.25, levels=3, t=4, seed=9, parts=SIZES)
        u = torch.tensor(np.stack([_uniforms(9, STREAM, 4, i, P) for i in range(N)]))
        off = 0
        for i, size in enumerate(SIZES):
            piece = slice(off, off + size)
            if comp == "randk":
                draws = np.stack([_randk_piece(9, 4, r, i) for r in range(N)])
                want = compress(v[:, piece], comp, ratio=0.25, draws=draws)
            else:
                want = compress(v[:, piece], comp, ratio=0.25, levels=3,
                                draws=None if comp == "topk" else u[:, piece])
            assert torch.equal(q[:, piece], want), (comp, i)
            off += size
    # one piece is the whole row, draws included
    for comp in ("topk", "randk", "qsgd"):
        assert torch.equal(compress(v, comp, t=1, seed=2, parts=(P,)),
                           compress(v, comp, t=1, seed=2))


def _randk_piece(seed: int, t: int, client: int, piece: int) -> np.ndarray:
    g = generator_at(seed, STREAM, t, client)
    for j, size in enumerate(SIZES):
        idx = g.choice(size, kept(0.25, size), replace=False)
        if j == piece:
            return idx
    raise AssertionError(piece)


def test_per_tensor_ledger_counts_the_pieces() -> None:
    a, b = _problem()
    env = toy_services(N, P, layout=_layout())
    topo = tf.topologies.ring(N)
    arcs = 2 * N
    for comp, want in [("topk", sum(kept(0.1, s) for s in SIZES)), ("qsgd", len(SIZES))]:
        algo = tf.algorithms.choco(lr=0.1, compressor=comp, per_tensor=True)
        tr = run_rounds(algo, torch.zeros(N, P, dtype=D), topo, _grad(a, b), rounds=1,
                        env=env)
        flows = {f.kind: f for f in tr.sent[0].flows or ()}
        attached = flows["indices" if comp == "topk" else "norm"]
        assert attached.bytes == arcs * want * (4 if comp == "topk" else 8)


# ------------------------------------------------------------------ BEER's experiments code
# liboyue/beer @ ebd11e0, experiments/BEER.py: init (35-45) H = G = 0, V = grad(x);
# update (47-60): x += gamma H (W - I) - eta V; H += C(x - H); V += gamma G (W - I) + grad -
# grad_previous; G += C(V - G). Columns are agents. Its compressors,
# liboyue/Network-Distributed-Algorithm @ 7f661e9, nda/optimizers/compressor.py:
# gsgd (44-48) with s = 2^(b-1): norm / s * sign(x) * floor(s / norm * |x| + u), u uniform
# (unscaled: E = x); top (12-20) zeroes argpartition(x, kth=a, axis=0)[a:], keeping the a
# smallest signed entries of each column.


def _gsgd(x: np.ndarray, b: int, u: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=0)
    return norm / (2 ** (b - 1)) * np.sign(x) * np.floor((2 ** (b - 1)) / norm * np.abs(x) + u)


def _top_smallest(x: np.ndarray, a: int) -> np.ndarray:
    x = x.copy()
    index_array = np.argpartition(x, kth=a, axis=0)[a:]
    np.put_along_axis(x, index_array, 0, axis=0)
    return x


def _beer(W: np.ndarray, a: np.ndarray, bb: np.ndarray, eta: float, gamma: float, C: Any,
          rounds: int = ROUNDS) -> list[tuple[np.ndarray, np.ndarray]]:
    n = W.shape[0]
    Ws = W - np.eye(n)

    def grad(x: np.ndarray) -> np.ndarray:
        return a[:, 0] * (x - bb.T)

    x = np.zeros((bb.shape[1], n))
    H, G, V = np.zeros_like(x), np.zeros_like(x), grad(x)
    grad_previous = V.copy()
    out = []
    for t in range(rounds):
        x = x + gamma * H.dot(Ws) - eta * V
        H = H + C(x - H, STREAM, t)
        g = grad(x)
        V = V + gamma * G.dot(Ws) + g - grad_previous
        grad_previous = g
        G = G + C(V - G, STREAM + 1, t + 1)  # topofl sends the tracker's a round later
        out.append((x.T.copy(), H.T.copy()))
    return out


def test_unbiased_qsgd_is_beers_gsgd() -> None:
    a, b = _problem()
    topo = tf.topologies.ring(N)
    W = topo.to_dense()
    eta, gamma, seed, bits = 0.05, 0.3, 4, 3

    def C(M: np.ndarray, tag: int, t: int) -> np.ndarray:
        # topofl rounds a level up where its uniform u < frac, gsgd where u' >= 1 - frac:
        # the same rounding with u' = 1 - u
        u = np.stack([1.0 - _uniforms(seed, tag, t, i, M.shape[0]) for i in range(N)], axis=1)
        return _gsgd(M, bits, u)

    algo = tf.algorithms.dsgt(lr=eta, compressor="qsgd", levels=2 ** (bits - 1), gamma=gamma,
                              compress_seed=seed, rescale=False)  # BEER's gsgd, as shipped
    theirs = _beer(W, a, b, eta, gamma, C)
    xs = _trajectory(algo, topo, a, b, eta)
    hs = _trajectory(algo, topo, a, b, eta, own="h")
    assert _worst(xs, [x for x, _ in theirs]) <= 1e-12  # measured: 1.3e-15
    assert _worst(hs, [h for _, h in theirs]) <= 1e-12  # measured: 6.7e-16
    scaled = _trajectory(tf.algorithms.dsgt(lr=eta, compressor="qsgd", gamma=gamma,
                                            levels=2 ** (bits - 1), compress_seed=seed),
                         topo, a, b, eta)
    apart = float(np.abs(scaled[-1] - xs[-1]).max())
    assert 0.01 < apart < 0.2, apart  # with CHOCO's 1/tau (0.45 here): 0.047 apart


def test_beers_top_is_not_offered_and_apart() -> None:
    # their "top" keeps the a smallest signed entries; topofl's top-k the largest magnitudes
    a, b = _problem()
    topo = tf.topologies.ring(N)
    eta, gamma, ratio = 0.05, 0.3, 0.25
    k = kept(ratio, P)
    theirs = _beer(topo.to_dense(), a, b, eta, gamma,
                   lambda M, tag, t: _top_smallest(M, k), rounds=200)
    x = torch.tensor([[1.0, -4.0, 2.0, 0.5]], dtype=D)
    assert _top_smallest(x.numpy().T, 1).T.tolist() == [[0.0, -4.0, 0.0, 0.0]]
    assert compress(x, "topk", ratio=0.25).tolist() == [[0.0, -4.0, 0.0, 0.0]]
    # negated, the largest magnitude is +4, their top keeps -2
    assert _top_smallest(-x.numpy().T, 1).T.tolist() == [[0.0, 0.0, -2.0, 0.0]]
    assert compress(-x, "topk", ratio=0.25).tolist() == [[0.0, 4.0, 0.0, 0.0]]
    ours = _trajectory(tf.algorithms.dsgt(lr=eta, compressor="topk", ratio=ratio, gamma=gamma),
                       topo, a, b, eta, rounds=200)
    optimum = (a * b).sum(0) / a.sum()
    ours_off = float(np.abs(ours[-1] - optimum).max())
    theirs_off = float(np.abs(theirs[-1][0] - optimum).max())
    assert ours_off < 1e-3, ours_off  # topofl's top-k BEER converges here: 1.1e-4 off
    assert theirs_off > 1.0, theirs_off  # theirs moves away: 1.8 off at 20 rounds, 24 at 200


# ------------------------------------------------------------------ defaults unchanged


def test_defaults_are_the_numbers_before_the_options() -> None:
    # choco_default.json: written by the code before the options (the same runs: ring(6),
    # x^0 = 0, 15 rounds, lr 0.05, ratio 0.25, levels 4, gamma 0.3, compress_seed 3)
    want = json.loads(DATA.read_text(encoding="utf-8"))
    a, b = _problem(6, 20, seed=0)
    topo = tf.topologies.ring(6)
    for key, case in want["runs"].items():
        name, comp = key.split("/")
        factory = tf.algorithms.choco if name == "choco" else tf.algorithms.dsgt
        algo = factory(lr=0.05, compressor=comp, ratio=0.25, levels=4, gamma=0.3,
                       compress_seed=3)
        x = run_rounds(algo, torch.zeros(6, 20, dtype=D), topo, _grad(a, b),
                       rounds=15).evaluated().numpy()
        # written under ATEN_CPU_CAPABILITY=default: bitwise there, within float64 rounding
        # on another kernel set (AVX512's reductions differ in the last bits)
        np.testing.assert_allclose(x, np.array(case["x"]), rtol=0, atol=1e-12, err_msg=key)
        assert sorted(algo.hparams) == case["hparams"], key
    explicit = tf.algorithms.choco(order="compress_first", per_tensor=False)
    assert explicit.hparams == tf.algorithms.choco().hparams
    assert explicit.communicate == tf.algorithms.choco().communicate


def test_options_recorded_away_from_their_defaults() -> None:
    hp = tf.algorithms.choco(order="consensus_first", per_tensor=True).hparams
    assert hp["order"] == "consensus_first" and hp["per_tensor"] is True
    assert "order" not in tf.algorithms.choco(per_tensor=True).hparams


# ------------------------------------------------------------------ refusals


@pytest.mark.parametrize("kw,error,match", [
    (dict(order="authors"), ValueError,
     r"^order must be one of \['compress_first', 'consensus_first'\], got 'authors'$"),
    (dict(per_tensor="yes"), TypeError, r"per_tensor"),
    (dict(per_tensor=1), TypeError, r"per_tensor"),
])
def test_bad_options_are_refused(kw: dict[str, Any], error: type, match: str) -> None:
    with pytest.raises(error, match=match) as info:
        tf.algorithms.choco(**kw)
    assert "\n" not in str(info.value)


def test_bad_parts_and_orders_are_refused() -> None:
    v = torch.zeros(2, 7, dtype=D)
    with pytest.raises(ValueError, match=r"^parts must be sizes >= 1 summing to the row's "
                                         r"P=7, got \[3, 3\]$"):
        compress(v, "topk", parts=(3, 3))
    with pytest.raises(ValueError, match="summing"):
        compress(v, "topk", parts=(7, 0))
    with pytest.raises(TypeError, match="whole numbers"):
        compress(v, "topk", parts=("a", 4))
    with pytest.raises(ValueError, match=r"rand-k's draws by parts must be \[m, k_1 \+ k_2"):
        compress(v, "randk", ratio=0.5, parts=(3, 4), draws=np.zeros((2, 3), dtype=int))
    with pytest.raises(ValueError, match="draws are rand-k's or QSGD's"):
        compress(v, "topk", parts=(3, 4), draws=np.zeros((2, 7)))
    with pytest.raises(ValueError, match=r"^order must be one of"):
        CompressedGossip(Compression("topk"), 0.2, order="paper")


def test_per_tensor_state_is_a_choco_state() -> None:
    algo = tf.algorithms.choco(per_tensor=True, order="consensus_first")
    env = toy_services(N, P, layout=_layout())
    state = algo.init(torch.zeros(N, P, dtype=D), env)
    assert not isinstance(state.own, BeerState) and state.own.public.shape == (N, P)
