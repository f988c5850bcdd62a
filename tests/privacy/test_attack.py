"""topofl.privacy.attack: the AUC against scikit-learn's, the held-out advantage against a
brute-force threshold search, invariance to monotone transforms of the losses, the losses the
engine's own, the seed, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

import topofl as tf
from topofl.privacy import MembershipAttack, membership_attack
from topofl.privacy.attack import _losses, auc, held_out_advantage

losses = st.lists(st.integers(0, 6).map(lambda k: k / 2), min_size=2, max_size=30)


@given(losses, losses)
@settings(max_examples=80, deadline=None)
def test_auc_is_scikit_learns_roc_auc(member, nonmember):
    # members are the positives, scored by minus their loss; ties count one half in both
    labels = [1] * len(member) + [0] * len(nonmember)
    scores = [-x for x in member + nonmember]
    want = roc_auc_score(labels, scores)
    assert auc(np.array(member), np.array(nonmember)) == pytest.approx(want, abs=1e-12)


def _advantage_slow(member: np.ndarray, nonmember: np.ndarray) -> float:
    a_fit, b_fit, a_test, b_test = member[0::2], nonmember[0::2], member[1::2], nonmember[1::2]
    cands = sorted(set(a_fit) | set(b_fit))
    best, rule = -2.0, None
    for i, tau in enumerate(cands):
        gain = np.mean(a_fit <= tau) - np.mean(b_fit <= tau)
        if gain > best:  # the first best; its whole interval, up to the next observed loss
            best = gain
            rule = ((lambda x, t=tau: x <= t) if i + 1 == len(cands)
                    else (lambda x, t=cands[i + 1]: x < t))
    return float(np.mean(rule(a_test)) - np.mean(rule(b_test)))


@given(losses, losses)
@settings(max_examples=80, deadline=None)
def test_held_out_advantage_is_the_brute_force_search(member, nonmember):
    a, b = np.array(member), np.array(nonmember)
    assert held_out_advantage(a, b) == pytest.approx(_advantage_slow(a, b), abs=1e-12)
    # a strictly increasing transform of the losses changes nothing
    assert held_out_advantage(np.exp(a), np.exp(b)) == held_out_advantage(a, b)
    assert auc(np.exp(a) + 1, np.exp(b) + 1) == pytest.approx(auc(a, b), abs=1e-12)


def test_separated_losses_give_the_extremes():
    low, high = np.linspace(0, 1, 10), np.linspace(2, 3, 10)
    assert auc(low, high) == 1.0 and held_out_advantage(low, high) == 1.0
    assert auc(high, low) == 0.0
    assert auc(np.ones(5), np.ones(7)) == 0.5 and held_out_advantage(np.ones(6), np.ones(6)) == 0


@pytest.fixture(scope="module")
def alone():
    # no communication: each of 24 clients' MLP trains on its own ~50 digits only
    return tf.run("local", None, data="digits", model="mlp", n_clients=24, rounds=30, lr=0.3,
                  local_steps=20, partition="iid", seed=0, spectral=False, batch_size=8)


def test_a_model_knows_its_own_members_better_than_anyone_elses(alone):
    a = membership_attack(alone, samples=12, seed=0)
    own = np.diag(a.auc)
    others = a.auc[~np.eye(24, dtype=bool)]
    assert own.mean() > 0.6 and own.mean() > others.mean() + 0.1
    assert abs(others.mean() - 0.5) < 0.05                # nobody else saw them
    assert a.adjacency is None
    with pytest.raises(ValueError, match="needs the run's graph"):
        a.by_distance()


@pytest.fixture(scope="module")
def overfit():
    # 24 clients of about 50 digits each, an MLP trained long on them: members are easier
    return tf.run("dsgd", "ring", data="digits", model="mlp", n_clients=24, rounds=30, lr=0.3,
                  local_steps=20, partition="iid", seed=0, spectral=False, batch_size=8)


def test_the_attack_reads_the_engines_losses_and_finds_members(overfit):
    res = overfit
    flat = res.evaluated().detach()
    data = res.services.data
    x, y = data.client(2, "train")
    per_sample = _losses(res.services.executor, flat, x, y)       # (n, m)
    engine = res.services.losses(flat, "train")                    # [n]: row i on client i
    assert per_sample[2].mean() == pytest.approx(float(engine[2]), rel=1e-5, abs=1e-6)
    a = membership_attack(res, samples=12, seed=3)
    assert isinstance(a, MembershipAttack) and a.auc.shape == (24, 24)
    b = membership_attack(res, samples=12, seed=3)
    np.testing.assert_array_equal(a.auc, b.auc)          # same seed, same samples
    assert not np.array_equal(membership_attack(res, samples=12, seed=4).auc, a.auc)
    by_d = a.by_distance("auc")
    assert sorted(by_d) == list(range(13)) and by_d[0]["pairs"] == 24 and by_d[1]["pairs"] == 48
    only = membership_attack(res, samples=12, seed=3, victims=[1])
    np.testing.assert_array_equal(only.auc[1], a.auc[1])
    assert np.isnan(only.auc[0]).all()


def test_bad_settings_are_refused(overfit):
    with pytest.raises(ValueError, match="samples must be >= 4"):
        membership_attack(overfit, samples=2)
    with pytest.raises(ValueError, match="smallest split"):
        membership_attack(overfit, samples=10_000)
    with pytest.raises(TypeError, match="what topofl.run returns"):
        membership_attack(tf.topologies.ring(4))
    with pytest.raises(ValueError, match="victims"):
        membership_attack(overfit, victims=[99])
    with pytest.raises(ValueError, match="of must be one of"):
        membership_attack(overfit, samples=12).by_distance("advantages")
    with pytest.raises(ValueError, match="at least 2 samples"):
        held_out_advantage(np.ones(1), np.ones(3))
    assert torch.is_tensor(overfit.evaluated())
