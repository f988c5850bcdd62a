"""Noisy updates as a defence (topofl.engine.pieces.privacy, topofl.algorithms.with_noisy_updates):
the clip-and-noise step against a slow reference from the noise's own streams, the recorded
spend against the accountant, reproducibility, the limit of no noise, the cost of much noise,
and the refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import topofl as tf
from topofl._utils.rng import generator_at
from topofl.algorithms import with_noisy_updates
from topofl.engine.pieces.privacy import STREAM, NoisyUpdates
from topofl.privacy import gdp_epsilon, noisy_updates_spend

RUN = dict(data="digits", model="logistic", n_clients=8, rounds=12, partition="shards",
           spectral=False, batch_size=16)


def test_the_step_clips_and_noises_as_written():
    env = tf.engine.toy_services(5)
    piece = NoisyUpdates(clip=0.7, noise=1.3, seed=4, delta=1e-5)
    g = torch.Generator().manual_seed(0)
    start = torch.randn(5, 9, generator=g, dtype=torch.float64)
    update = torch.randn(5, 9, generator=g, dtype=torch.float64) * torch.tensor(
        [0.01, 0.5, 1.0, 3.0, 10.0], dtype=torch.float64).unsqueeze(1)
    state = tf.engine.State(x=start.clone())
    piece.init_(state, env)
    rnd = tf.engine.Round(3, None)
    piece.round_start(state, rnd, env)
    state.x += update
    rec = piece.noise_(state, rnd, env)
    for i in range(5):
        d = update[i].numpy()
        clipped = d * min(1.0, 0.7 / np.linalg.norm(d))
        eta = generator_at(4, STREAM, 3, i).standard_normal(9)
        np.testing.assert_allclose(state.x[i].numpy(), start[i].numpy() + clipped + 1.3 * 0.7 * eta,
                                   rtol=1e-12, atol=1e-12)
    norms = torch.linalg.vector_norm(update, dim=1)
    assert rec["dp_clipped"] == float((norms > 0.7).double().mean())
    assert rec["dp_epsilon"] == noisy_updates_spend(1.3, 4, delta=1e-5)[1]


def test_the_spend_is_gaussian_composition():
    for noise, rounds in ((1.0, 1), (4.0, 9), (8.0, 16)):
        mu, eps = noisy_updates_spend(noise, rounds, delta=1e-6)
        assert mu == pytest.approx(2 * math.sqrt(rounds) / noise, rel=1e-15)
        assert eps == gdp_epsilon(mu, 1e-6)
    eps = [noisy_updates_spend(2.0, t)[1] for t in range(1, 30)]
    assert eps == sorted(eps) and noisy_updates_spend(2.0, 0)[1] == 0.0


def test_a_run_records_its_spend_and_repeats_itself():
    algo = with_noisy_updates(tf.algorithms.dsgd(lr=0.3), clip=0.5, noise=2.0, seed=1)
    a = tf.run(algo, "ring", seed=0, **RUN)
    rounds, eps = a.records.series("dp_epsilon")
    assert list(rounds) == list(range(12))
    np.testing.assert_array_equal(eps, [noisy_updates_spend(2.0, t + 1)[1] for t in range(12)])
    hp = a.records.engine["algorithm"]
    assert (hp["dp_clip"], hp["dp_noise"], hp["dp_seed"], hp["dp_delta"]) == (0.5, 2.0, 1, 1e-5)
    b = tf.run(algo, "ring", seed=0, **RUN)
    assert torch.equal(a.evaluated(), b.evaluated())            # same seeds, same bits
    other = with_noisy_updates(tf.algorithms.dsgd(lr=0.3), clip=0.5, noise=2.0, seed=2)
    assert not torch.equal(tf.run(other, "ring", seed=0, **RUN).evaluated(), a.evaluated())


def test_no_noise_and_no_clip_is_the_plain_algorithm_and_much_noise_costs_accuracy():
    plain = tf.run("dsgd", "ring", lr=0.3, dtype="float64", **RUN)
    faint = tf.run(with_noisy_updates(tf.algorithms.dsgd(lr=0.3), clip=1e6, noise=1e-15),
                   "ring", dtype="float64", **RUN)
    torch.testing.assert_close(faint.evaluated(), plain.evaluated(), rtol=1e-7, atol=1e-7)
    loud = tf.run(with_noisy_updates(tf.algorithms.dsgd(lr=0.3), clip=0.1, noise=20.0),
                  "ring", **RUN)
    assert (loud.records.final("global_acc_mean")
            < plain.records.final("global_acc_mean") - 0.2)


@pytest.mark.parametrize("call,exc,match", [
    (lambda: with_noisy_updates("dsgd", 1.0, 1.0), TypeError, "built Algorithm"),
    (lambda: with_noisy_updates(tf.algorithms.dsgd(), 0.0, 1.0), ValueError, "clip"),
    (lambda: with_noisy_updates(tf.algorithms.dsgd(), 1.0, -1.0), ValueError, "noise"),
    (lambda: with_noisy_updates(tf.algorithms.dsgd(), 1.0, 1.0, seed=-1), ValueError, "seed"),
    (lambda: with_noisy_updates(tf.algorithms.dsgd(), 1.0, 1.0, delta=2), ValueError, "delta"),
    (lambda: with_noisy_updates(tf.algorithms.dsgd(clique_averaging=True), 1.0, 1.0),
     ValueError, "Clique Averaging"),
])
def test_bad_settings_are_refused_in_one_line(call, exc, match):
    with pytest.raises(exc, match=match) as info:
        call()
    assert "\n" not in str(info.value)


def test_an_algorithm_keeping_its_own_record_is_refused_when_built():
    algo = with_noisy_updates(tf.algorithms.sgp(), 1.0, 1.0)   # push-sum keeps PushSumState
    push = tf.topologies.random_directed(8, 2, seed=0, mode="push")
    with pytest.raises(ValueError, match="already holds a PushSumState") as info:
        tf.run(algo, push, **RUN)
    assert "\n" not in str(info.value)
