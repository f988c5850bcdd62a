"""The membership attack recorded per run (``membership_attack`` setting, issue 83 item 3):
its rows are :func:`topofl.privacy.membership_attack` on the models of that round (a run of
``r`` rounds is the first ``r`` of a longer one), the attack changes nothing else the run
records, it resumes, and bad settings are refused in one line."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import topofl as tf
from topofl._utils.configfiles import read_config
from topofl.engine.membership import Membership
from topofl.privacy import membership_attack
from topofl.privacy.attack import _losses

KW: dict[str, Any] = dict(data="digits", model="mlp", n_clients=8, lr=0.3, local_steps=5,
                          partition="iid", seed=0, spectral=False, batch_size=8,
                          eval_every=1)
ATTACK = {"samples": 10, "seed": 2}


@pytest.fixture(scope="module")
def attacked() -> Any:
    return tf.run("dsgd", "ring", rounds=4, membership_attack=ATTACK, **KW)


def test_the_rows_are_the_attack_on_that_rounds_models(attacked: Any) -> None:
    rec = attacked.records
    for r in (2, 4):  # the run of r rounds is the first r rounds of the longer one
        short = attacked if r == 4 else tf.run("dsgd", "ring", rounds=r, **KW)
        a = membership_attack(short, samples=10, seed=2)
        off = ~np.eye(8, dtype=bool)
        want = {"mia_auc_own": np.diag(a.auc).mean(), "mia_adv_own": np.diag(a.advantage).mean(),
                "mia_auc_others": a.auc[off].mean(), "mia_adv_others": a.advantage[off].mean()}
        for d, stats in a.by_distance("advantage").items():
            if d >= 1:
                want[f"mia_adv_d{d}"] = stats["mean"]
        for d, stats in a.by_distance("auc").items():
            if d >= 1:
                want[f"mia_auc_d{d}"] = stats["mean"]
        assert sorted(k for k in rec.metrics if k.startswith("mia_")) == sorted(want)
        for name, value in want.items():  # the same models to float32 rounding
            assert rec.series(name)[1][r - 1] == pytest.approx(value, abs=1e-9), name


def test_the_attack_changes_nothing_else_the_run_records(attacked: Any) -> None:
    plain = tf.run("dsgd", "ring", rounds=4, **KW)
    assert set(attacked.records.metrics) - set(plain.records.metrics) == {
        k for k in attacked.records.metrics if k.startswith("mia_")}
    for name in plain.records.metrics:
        if name == "wall_time":
            continue
        try:
            got, want = attacked.records.series(name)[1], plain.records.series(name)[1]
        except KeyError:  # recorded per client
            got, want = (np.asarray([r.per_client(name, t) for t in range(4)])
                         for r in (attacked.records, plain.records))
        np.testing.assert_array_equal(got, want, err_msg=name)
    assert plain.config.membership_attack is None
    assert attacked.config.membership_attack == {"samples": 10, "seed": 2}


def test_the_losses_are_the_engines_per_sample_cross_entropy(attacked: Any) -> None:
    flat = attacked.evaluated().detach()
    x, y = attacked.services.data.client(3, "test")
    got = _losses(attacked.services.executor, flat, x[:7], y[:7])
    for j in range(7):  # the engine's own loss on a batch of one sample, model by model
        one = attacked.services.executor.losses(flat, x[j:j + 1].unsqueeze(0).expand(
            8, *x[j:j + 1].shape).contiguous(), y[j:j + 1].unsqueeze(0).expand(8, 1).contiguous())
        np.testing.assert_allclose(got[:, j], one.double().numpy(), rtol=1e-5, atol=1e-6)


def test_a_sample_of_victims_and_a_time_varying_graph() -> None:
    some = tf.run("dsgd", "ring", rounds=2, membership_attack={"samples": 6, "victims": 3},
                  **KW)
    chosen = Membership.from_config({"samples": 6, "victims": 3}).victims_of(8)
    assert len(chosen) == 3 and chosen == sorted(set(chosen))
    full = membership_attack(some, samples=6, seed=0, victims=chosen)
    assert some.records.final("mia_auc_own") == pytest.approx(
        np.mean([full.auc[u, u] for u in chosen]), abs=1e-12)
    listed = tf.run("dsgd", "ring", rounds=2, membership_attack={"samples": 6, "victims": [5, 1]},
                    **KW)
    assert listed.config.membership_attack["victims"] == [1, 5]
    # a graph that changes every round has no one distance: the means only
    tv = tf.run("dsgd", "one_peer_exponential", rounds=2, membership_attack={"samples": 6},
                **KW)
    names = {k for k in tv.records.metrics if k.startswith("mia_")}
    assert names == {"mia_auc_own", "mia_adv_own", "mia_auc_others", "mia_adv_others"}


def test_a_resumed_run_records_the_same_attack(tmp_path: Any) -> None:
    ck, rec = tmp_path / "c.ckpt", tmp_path / "r.jsonl"
    kw = dict(KW, membership_attack=ATTACK)
    whole = tf.run("dsgd", "ring", rounds=4, **kw)
    tf.run("dsgd", "ring", rounds=2, checkpoint_every=2, checkpoint_path=str(ck),
           records_path=str(rec), **kw)
    tf.run("dsgd", "ring", rounds=4, checkpoint_every=2, checkpoint_path=str(ck),
           records_path=str(rec), resume=str(ck), **kw)
    again = tf.records.load(rec)
    for name in ("mia_adv_own", "mia_auc_d1", "mia_adv_d4"):
        np.testing.assert_array_equal(again.series(name)[1], whole.records.series(name)[1])


def test_it_runs_alone_and_goes_through_a_config_file(tmp_path: Any) -> None:
    cfg = tf.engine.RunConfig(rounds=2, membership_attack={"samples": 6})
    why = tf.engine.stack.alone_reason(cfg, tf.algorithms.dsgd())
    assert why == "a run with [membership_attack] runs alone"
    path = tmp_path / "c.toml"
    path.write_text('algorithm = "dsgd"\ntopology = "ring"\ndata = "digits"\nn_clients = 4\n'
                    'rounds = 1\n[membership_attack]\nsamples = 5\n')
    resolved = tf.config.validate(read_config(path))
    assert resolved["membership_attack"] == {"samples": 5, "seed": 0}


@pytest.mark.parametrize("table, kind, match", [
    ({"sample": 5}, ValueError, "no key 'sample'.*did you mean 'samples'"),
    ({"samples": 2}, ValueError, "samples must be >= 4"),
    ({"victims": "all"}, TypeError, "victims must be a list of client ids"),
    ({"victims": [1, 1]}, ValueError, "distinct ids"),
    ({"victims": 0}, ValueError, "victims must be >= 1"),
    ({"seed": -1}, ValueError, "seed must be >= 0"),
    ([1], TypeError, "membership_attack must be a table"),
])
def test_bad_tables_are_refused_in_one_line(table: Any, kind: type, match: str) -> None:
    with pytest.raises(kind, match=match):
        tf.engine.RunConfig(rounds=1, membership_attack=table)


@pytest.mark.parametrize("table, match", [
    ({"samples": 10_000}, "smallest split"),
    ({"victims": [99]}, "client ids below 8"),
    ({"victims": 9}, "more than the run's 8 clients"),
])
def test_settings_the_data_cannot_meet_are_refused_before_the_run(table: Any, match: str,
                                                                  tmp_path: Any) -> None:
    path = tmp_path / "r.jsonl"
    with pytest.raises(ValueError, match=match):
        tf.run("dsgd", "ring", rounds=1, membership_attack=table, records_path=str(path), **KW)
    assert not path.exists()  # refused before anything is written
