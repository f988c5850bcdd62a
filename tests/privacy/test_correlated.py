"""DECOR's pairwise-correlated noise (NoisyUpdates(correlated=...), with_noisy_updates(correlated=),
``dp_correlated``) and its accountant (topofl.privacy.correlated_noise_spend): the pair noise
cancels over the nodes, the piece against a slow per-edge reference, the noise's covariance
against sigma^2 I + sigma_cor^2 L, the accountant against a brute-force incidence-matrix
construction, the complete graph's closed form, its monotonicity and its central-DP limit, the
recorded spend, reproducibility and resume, correlated = 0 bit for bit the plain defence, and
the refusals."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from tests.engine._crash import Crash, CrashingData
from topofl._utils.rng import generator_at
from topofl.algorithms import get_algorithm, with_noisy_updates
from topofl.engine import RunConfig
from topofl.engine.pieces.privacy import STREAM, STREAM_PAIR, NoisyUpdates, pair_noise
from topofl.privacy import correlated_noise_spend, gdp_epsilon, noisy_updates_spend
from topofl.privacy.correlated import inverse_diagonal, noise_covariance, pair_edges

RUN = dict(data="digits", model="logistic", n_clients=8, rounds=6, partition="shards",
           spectral=False, batch_size=16)


def _laplacian_by_hand(W: np.ndarray) -> np.ndarray:
    """The unweighted Laplacian of the pattern of ``W`` (an arc either way: one edge)."""
    n = W.shape[0]
    A = np.array([[float(i != j and (W[i, j] != 0 or W[j, i] != 0)) for j in range(n)]
                  for i in range(n)])
    return np.diag(A.sum(axis=1)) - A


def _noise_by_hand(W: np.ndarray, seed: int, t: int, width: int, noise: float,
                   correlated: float, clip: float) -> np.ndarray:
    """Each node's noise of round ``t``, looping over its neighbours (slow, obvious)."""
    n = W.shape[0]
    out = np.zeros((n, width))
    for i in range(n):
        out[i] = noise * clip * generator_at(seed, STREAM, t, i).standard_normal(width)
        for j in range(n):
            if j != i and (W[i, j] != 0 or W[j, i] != 0):
                z = generator_at(seed, STREAM_PAIR, t, min(i, j), max(i, j)).standard_normal(width)
                out[i] += correlated * clip * (1.0 if i < j else -1.0) * z
    return out


def _step(piece: NoisyUpdates, topo: tf.graph.Topology, t: int, width: int,
          start: torch.Tensor | None = None) -> tuple[torch.Tensor, dict]:
    """One round of the piece on zero updates: the noise it adds (and its records)."""
    env = tf.engine.toy_services(topo.n)
    x = torch.zeros(topo.n, width, dtype=torch.float64) if start is None else start.clone()
    state = tf.engine.State(x=x.clone())
    piece.init_(state, env)
    rnd = tf.engine.Round(t, topo)
    piece.round_start(state, rnd, env)
    rec = piece.noise_(state, rnd, env)
    return state.x - x, rec


# ------------------------------------------------------------------ the noise


@pytest.mark.parametrize("topo", [tf.topologies.ring(7), tf.topologies.torus(3, 4),
                                  tf.topologies.complete(5), tf.topologies.star(6)])
def test_the_pair_noise_cancels_over_the_nodes_every_round(topo):
    edges = pair_edges(topo)
    for t in range(4):
        z = pair_noise(11, t, edges, np.arange(topo.n), 33)
        assert np.abs(z.sum(axis=0)).max() < 1e-12
        assert np.abs(z).max() > 0.1  # and it is there
    # the piece's pair part (its noise with and without sigma_cor, same seed) cancels too
    with_pairs, _ = _step(NoisyUpdates(1.0, 2.0, 5, 1e-5, correlated=3.0), topo, 2, 17)
    without, _ = _step(NoisyUpdates(1.0, 2.0, 5, 1e-5), topo, 2, 17)
    assert float((with_pairs - without).sum(dim=0).abs().max()) < 1e-11


@pytest.mark.parametrize("topo", [tf.topologies.ring(6), tf.topologies.torus(2, 3),
                                  tf.topologies.star(5),
                                  tf.topologies.one_peer_exponential(8).at(1)])
def test_the_piece_is_the_slow_per_edge_reference(topo):
    W = topo.to_dense()
    g = torch.Generator().manual_seed(1)
    start = torch.randn(topo.n, 9, generator=g, dtype=torch.float64)
    piece = NoisyUpdates(clip=0.7, noise=1.3, seed=4, delta=1e-5, correlated=2.1)
    added, rec = _step(piece, topo, 3, 9, start)
    want = _noise_by_hand(W, 4, 3, 9, 1.3, 2.1, 0.7)
    np.testing.assert_allclose(added.numpy(), want, rtol=1e-11, atol=1e-11)
    # its record: the largest spend over the nodes of one round (the accountant, by hand)
    sigma = 1.3 ** 2 * np.eye(topo.n) + 2.1 ** 2 * _laplacian_by_hand(W)
    mu = 2.0 * math.sqrt(np.linalg.inv(sigma).diagonal().max())
    assert rec["dp_epsilon"] == pytest.approx(gdp_epsilon(mu, 1e-5), rel=1e-10)


def test_the_noise_covariance_is_sigma2_i_plus_sigma_cor2_laplacian():
    topo = tf.topologies.torus(2, 3)          # 6 nodes, 3-regular (a wrapped 2 x 3 grid)
    noise, cor, clip = 1.0, 1.5, 2.0
    samples = np.concatenate([_step(NoisyUpdates(clip, noise, s, 1e-5, correlated=cor), topo,
                                    0, 4000)[0].numpy() / clip for s in range(10)], axis=1)
    N = samples.shape[1]                      # 40000 draws of the 6-vector
    emp = samples @ samples.T / N
    want = noise_covariance(topo, noise, cor)
    np.testing.assert_allclose(want, noise ** 2 * np.eye(6)
                               + cor ** 2 * _laplacian_by_hand(topo.to_dense()), atol=1e-15)
    # each entry's standard error: sqrt((S_ii S_jj + S_ij^2) / N); 5 of them
    se = np.sqrt((np.outer(want.diagonal(), want.diagonal()) + want ** 2) / N)
    assert np.all(np.abs(emp - want) < 5 * se), np.abs(emp - want) / se
    # and the mean over the nodes carries the independent noise only: variance sigma^2 / n
    assert samples.mean(axis=0).var() == pytest.approx(noise ** 2 / 6, rel=0.05)


# ------------------------------------------------------------------ the accountant


def _spend_by_hand(W: np.ndarray, noise: float, cor: float, rounds: int,
                   colluders: tuple[int, ...]) -> np.ndarray:
    """mu per node from the noise as a linear map: sigma I z + sigma_cor B w (B the incidence
    matrix); the colluders' edges' w known and removed, the honest rows kept."""
    n = W.shape[0]
    edges = [(i, j) for i in range(n) for j in range(i + 1, n) if W[i, j] != 0 or W[j, i] != 0]
    honest = [u for u in range(n) if u not in colluders]
    unknown = [e for e in edges if e[0] not in colluders and e[1] not in colluders]
    B = np.zeros((n, len(unknown)))
    for k, (i, j) in enumerate(unknown):
        B[i, k], B[j, k] = 1.0, -1.0
    cov = noise ** 2 * np.eye(n) + cor ** 2 * B @ B.T
    inv = np.linalg.inv(cov[np.ix_(honest, honest)])
    mu = np.full(n, np.nan)
    mu[honest] = 2.0 * np.sqrt(rounds * inv.diagonal())
    return mu


@pytest.mark.parametrize("topo,colluders", [
    (tf.topologies.ring(8), ()), (tf.topologies.ring(8), (2,)),
    (tf.topologies.torus(3, 3), (0, 4)), (tf.topologies.star(6), (0,)),
    (tf.topologies.erdos_renyi(10, 0.3, seed=2), (1, 5, 7))])
def test_the_accountant_is_the_incidence_matrix_construction(topo, colluders):
    mu, eps = correlated_noise_spend(topo, 2.0, 3.0, 7, delta=1e-6, colluders=colluders)
    want = _spend_by_hand(topo.to_dense(), 2.0, 3.0, 7, colluders)
    np.testing.assert_allclose(mu, want, rtol=1e-10, equal_nan=True)
    honest = ~np.isnan(want)
    np.testing.assert_allclose(eps[honest], gdp_epsilon(want[honest], 1e-6), rtol=1e-9)
    assert np.isnan(eps[~honest]).all()


@pytest.mark.parametrize("n,k", [(2, 0), (5, 0), (9, 2), (16, 5)])
def test_the_complete_graph_closed_form(n, k):
    s, c, T = 1.7, 2.3, 5
    m = n - k
    per = 1.0 / (m * s ** 2) + (m - 1) / (m * (s ** 2 + m * c ** 2))
    mu, _ = correlated_noise_spend(tf.topologies.complete(n), s, c, T, colluders=range(k))
    np.testing.assert_allclose(mu[k:], 2.0 * math.sqrt(T * per), rtol=1e-12)
    assert np.isnan(mu[:k]).all()


def test_no_pair_noise_is_the_local_bound_exactly():
    for topo, s, T in ((tf.topologies.ring(8), 8.0, 16), (tf.topologies.star(5), 1.3, 7)):
        mu, eps = correlated_noise_spend(topo, s, 0.0, T, delta=1e-6)
        want = noisy_updates_spend(s, T, delta=1e-6)
        assert set(mu.tolist()) == {want[0]} and set(eps.tolist()) == {want[1]}
    # pair noise on a graph without edges adds nothing either (to rounding)
    mu, _ = correlated_noise_spend(np.eye(4), 2.0, 5.0, 3)
    np.testing.assert_allclose(mu, noisy_updates_spend(2.0, 3)[0], rtol=1e-14)


@settings(max_examples=25, deadline=None)
@given(s=st.floats(0.3, 10.0), c=st.floats(0.0, 20.0), dc=st.floats(0.01, 10.0),
       T=st.integers(1, 40), n=st.integers(3, 12))
def test_monotone_in_the_pair_noise_and_the_rounds(s, c, dc, T, n):
    topo = tf.topologies.ring(n)
    mu, eps = correlated_noise_spend(topo, s, c, T)
    more_noise, _ = correlated_noise_spend(topo, s, c + dc, T)
    more_rounds, eps_more = correlated_noise_spend(topo, s, c, T + 1)
    assert np.all(more_noise <= mu * (1 + 1e-12))       # more sigma_cor: never more leak
    assert np.all(more_rounds > mu) and np.all(eps_more >= eps)
    # between the central level of the mean and the local one
    assert np.all(mu <= 2 * math.sqrt(T) / s * (1 + 1e-12))
    assert np.all(mu >= 2 * math.sqrt(T / n) / s * (1 - 1e-12))


def test_much_pair_noise_leaves_only_the_mean_unmasked():
    # (Sigma^-1)_uu - 1 / (n sigma^2) = sum_{k >= 2} v_k(u)^2 / (sigma^2 + sigma_cor^2 lambda_k),
    # between 0 and 1 / (sigma^2 + sigma_cor^2 lambda_2) (lambda_2: the algebraic connectivity)
    for topo in (tf.topologies.ring(10), tf.topologies.star(7), tf.topologies.torus(3, 4)):
        n, s = topo.n, 2.0
        lam2 = np.linalg.eigvalsh(_laplacian_by_hand(topo.to_dense()))[1]
        gaps = []
        for c in (1e0, 1e1, 1e2, 1e3):
            gap = inverse_diagonal(pair_edges(topo), n, s, c) - 1.0 / (n * s * s)
            assert gap.min() > -1e-12 and gap.max() <= 1.0 / (s * s + c * c * lam2) + 1e-12
            gaps.append(float(gap.max()))
        assert gaps == sorted(gaps, reverse=True) and gaps[-1] < 1e-5
    # with a colluder cutting the ring into a path, the limit is the honest part's mean
    path_lam2 = 2 - 2 * math.cos(math.pi / 9)
    d = inverse_diagonal(pair_edges(tf.topologies.ring(10)), 10, 2.0, 1e4,
                         honest=np.arange(10) != 3)
    np.testing.assert_allclose(np.delete(d, 3), 1.0 / (9 * 4.0), rtol=0,
                               atol=1.0 / (4.0 + 1e8 * path_lam2) + 1e-10)


def test_a_time_varying_graph_composes_its_rounds():
    tv = tf.topologies.one_peer_exponential(8)       # period 3
    mu, _ = correlated_noise_spend(tv, 1.5, 2.0, 7)
    per = [inverse_diagonal(pair_edges(tv.at(t)), 8, 1.5, 2.0) for t in range(7)]
    np.testing.assert_allclose(mu, 2.0 * np.sqrt(np.sum(per, axis=0)), rtol=1e-12)


def test_the_authors_renyi_accountant_is_the_same_gaussian_mechanism():
    """The authors' ``rdp_account`` (github.com/elfirdoussilab1/DECOR, utils/dp_account.py) gives
    per round ``2 C^2 max_u (Sigma^-1)_uu`` (their noise in absolute units, ``Sigma`` with
    sigma_cdp^2 and sigma_cor^2), i.e. ``alpha -> alpha * mu_t^2 / 2``-RDP: the same Gaussian
    mechanism; their ``(epsilon, delta)`` conversion ``T r + 2 sqrt(T r log(1/delta))`` is above
    the exact one."""
    topo, clip, s_abs, c_abs, T, delta = tf.topologies.ring(16), 0.5, 1.0, 4.0, 100, 1e-5
    L = _laplacian_by_hand(topo.to_dense())
    r = 2 * clip ** 2 * np.linalg.inv(s_abs ** 2 * np.eye(16) + c_abs ** 2 * L).diagonal().max()
    mu, eps = correlated_noise_spend(topo, s_abs / clip, c_abs / clip, T, delta=delta)
    assert float(mu.max()) ** 2 / 2 == pytest.approx(T * r, rel=1e-10)
    theirs = T * r + 2 * math.sqrt(T * r * math.log(1 / delta))
    assert float(eps.max()) < theirs


# ------------------------------------------------------------------ runs


def test_a_run_records_the_spend_and_repeats_itself():
    algo = with_noisy_updates(tf.algorithms.dsgd(lr=0.3), clip=0.5, noise=2.0, seed=1,
                              correlated=3.0)
    a = tf.run(algo, "ring", seed=0, **RUN)
    rounds, eps = a.records.series("dp_epsilon")
    want = [float(correlated_noise_spend(tf.topologies.ring(8), 2.0, 3.0, t + 1)[1].max())
            for t in rounds]
    np.testing.assert_allclose(eps, want, rtol=1e-12)
    assert eps[-1] < noisy_updates_spend(2.0, 6)[1]
    b = tf.run(algo, "ring", seed=0, **RUN)
    assert torch.equal(a.evaluated(), b.evaluated())
    other = tf.run(with_noisy_updates(tf.algorithms.dsgd(lr=0.3), 0.5, 2.0, seed=2,
                                      correlated=3.0), "ring", seed=0, **RUN)
    assert not torch.equal(a.evaluated(), other.evaluated())


def test_by_name_is_the_wrapper_and_the_default_adds_nothing():
    a = tf.run("dsgd", "ring", lr=0.1, dp_clip=1, dp_noise=8, dp_correlated=4, **RUN)
    b = tf.run(with_noisy_updates(get_algorithm("dsgd", lr=0.1), 1.0, 8.0, correlated=4.0),
               "ring", **RUN)
    assert torch.equal(a.evaluated(), b.evaluated())
    assert a.algorithm.hparams == b.algorithm.hparams
    assert a.algorithm.hparams["dp_correlated"] == 4.0
    # the default: no key, the same algorithm as before the option
    plain = with_noisy_updates(get_algorithm("dsgd", lr=0.1), 1.0, 8.0)
    zero = with_noisy_updates(get_algorithm("dsgd", lr=0.1), 1.0, 8.0, correlated=0.0)
    by_name = get_algorithm("dsgd", lr=0.1, dp_clip=1.0, dp_noise=8.0, dp_correlated=0.0)
    assert "dp_correlated" not in plain.hparams
    assert plain.hparams == zero.hparams == by_name.hparams
    c, d = tf.run(plain, "ring", **RUN), tf.run(by_name, "ring", **RUN)
    assert torch.equal(c.evaluated(), d.evaluated())
    assert all(np.array_equal(u, v) for u, v in zip(c.records.series("dp_epsilon"),
                                                    d.records.series("dp_epsilon")))
    cfg = tf.config.validate({"algorithm": "dsgd", "topology": "ring", "n_clients": 8,
                              "rounds": 4, "dp_clip": 1.0, "dp_noise": 8.0,
                              "dp_correlated": 2.0})
    assert cfg["dp_correlated"] == 2.0 and tf.config.validate(cfg) == cfg


def test_no_pair_noise_is_the_plain_defence_bit_for_bit():
    topo = tf.topologies.ring(6)
    g = torch.Generator().manual_seed(3)
    start = torch.randn(6, 11, generator=g, dtype=torch.float32)
    outs = []
    for piece in (NoisyUpdates(0.4, 1.1, 2, 1e-5), NoisyUpdates(0.4, 1.1, 2, 1e-5, 0.0)):
        env = tf.engine.toy_services(6)
        state = tf.engine.State(x=start.clone())
        piece.init_(state, env)
        rnd = tf.engine.Round(5, topo)
        piece.round_start(state, rnd, env)
        state.x.mul_(1.5)
        outs.append((state.x.clone() if piece.noise_(state, rnd, env) else None, state.own))
    assert torch.equal(outs[0][0], outs[1][0])
    assert outs[0][1].spent is None and outs[1][1].spent is None   # nothing more kept
    # and as written: the clipped update plus the independent draws, nothing else
    x0, upd = start.double(), 0.5 * start.double()
    for i in range(6):
        d = upd[i].numpy()
        want = x0[i].numpy() + d * min(1.0, 0.4 / np.linalg.norm(d)) \
            + 1.1 * 0.4 * generator_at(2, STREAM, 5, i).standard_normal(11)
        np.testing.assert_allclose(outs[0][0][i].numpy(), want, rtol=1e-5, atol=1e-5)


def test_a_resumed_run_records_the_same_spend(tmp_path: Path):
    data = tf.data.federate("digits", "shards", 8, shards_per_client=2, seed=0)
    tv = tf.topologies.one_peer_exponential(8)
    algo = with_noisy_updates(tf.algorithms.dsgd(lr=0.3), 0.5, 2.0, correlated=3.0)

    def run(cfg: RunConfig, d: object, **kw: object) -> tf.engine.RunResult:
        model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
        return tf.engine.run(cfg, tv, algo, d, model, **kw)

    full = run(RunConfig(rounds=6, batch_size=8, seed=2, run_id="r"), data)
    cfg = RunConfig(rounds=6, batch_size=8, seed=2, run_id="r", checkpoint_every=2,
                    checkpoint_path=str(tmp_path / "ck.pt"),
                    records_path=str(tmp_path / "r.jsonl"))
    with pytest.raises(Crash):
        run(cfg, CrashingData(data, at=3))
    resumed = run(cfg, data, resume=tmp_path / "ck.pt")
    assert all(np.array_equal(u, v) for u, v in zip(resumed.records.series("dp_epsilon"),
                                                    full.records.series("dp_epsilon")))
    assert torch.equal(resumed.evaluated(), full.evaluated())
    want = correlated_noise_spend(tv, 2.0, 3.0, 6)[1].max()
    assert full.records.series("dp_epsilon")[1][-1] == pytest.approx(want, rel=1e-12)


# ------------------------------------------------------------------ refusals


@pytest.mark.parametrize("call,exc,match", [
    (lambda: correlated_noise_spend(tf.topologies.ring(4), 0.0, 1.0, 3), ValueError, "sigma"),
    (lambda: correlated_noise_spend(tf.topologies.ring(4), 1.0, -1.0, 3), ValueError,
     "correlated"),
    (lambda: correlated_noise_spend(tf.topologies.ring(4), 1.0, 1.0, -1), ValueError, "rounds"),
    (lambda: correlated_noise_spend(tf.topologies.ring(4), 1.0, 1.0, 3, colluders=range(4)),
     ValueError, "at least one victim"),
    (lambda: correlated_noise_spend(tf.topologies.ring(4), 1.0, 1.0, 3, colluders=[1, 1]),
     ValueError, "distinct"),
    (lambda: correlated_noise_spend(tf.topologies.ring(4), 1.0, 1.0, 3, colluders=[4]),
     ValueError, "colluder"),
    (lambda: correlated_noise_spend(tf.topologies.ring(4), 1.0, 1.0, 3, delta=0.0),
     ValueError, "delta"),
    (lambda: with_noisy_updates(tf.algorithms.dsgd(), 1.0, 1.0, correlated=-0.5), ValueError,
     "correlated"),
    (lambda: with_noisy_updates(tf.algorithms.get_algorithm("local"), 1.0, 1.0, correlated=1.0),
     ValueError, "uses no graph"),
    (lambda: get_algorithm("dsgd", dp_correlated=1.0), ValueError, "without"),
    (lambda: get_algorithm("dsgd", dp_clip=1.0, dp_noise=1.0, dp_correlated="x"), TypeError,
     "dp_correlated"),
    (lambda: tf.run("dsgd", "ring", rounds=2, n_clients=4, spectral=False, dp_clip=1.0,
                    dp_noise=1.0, dp_correlated=-1.0), ValueError, "dp_correlated"),
])
def test_bad_settings_are_refused_in_one_line(call, exc, match):
    with pytest.raises(exc, match=match) as info:
        call()
    assert "\n" not in str(info.value)
