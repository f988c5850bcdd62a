"""Noisy updates by name (``dp_clip``, ``dp_noise``, ``dp_seed``, ``dp_delta`` beside any
registered algorithm's keys): the same run as the Python wrapper, bit for bit and hash for hash;
a resolved config records the keys only when it gives one and replays; a config file runs them;
bad settings are refused in one line naming the key."""

from __future__ import annotations

import pytest

import topofl as tf
from tests.privacy import _by_name
from topofl.algorithms import get_algorithm, with_noisy_updates
from topofl.records import header_run_hash

RUN = _by_name.RUN
_records = _by_name.records


def test_keys_by_name_are_the_wrapper_bit_for_bit(tmp_path):
    by_name, a = _records(tmp_path, "name", "dsgd", lr=0.1, dp_clip=0.5, dp_noise=2.0,
                          dp_seed=3)
    wrapped = with_noisy_updates(get_algorithm("dsgd", lr=0.1), 0.5, 2.0, seed=3)
    by_hand, b = _records(tmp_path, "hand", wrapped)
    _by_name.assert_same_run(by_name, a, by_hand, b)
    plain, c = _records(tmp_path, "plain", "dsgd", lr=0.1)
    assert header_run_hash(c["header"]) != header_run_hash(a["header"])


def test_a_resolved_config_records_the_keys_only_when_given_and_replays():
    base = {"algorithm": "dsgd", "topology": "ring", "n_clients": 8, "rounds": 4}
    assert not [k for k in tf.config.validate(base) if k.startswith("dp_")]
    cfg = tf.config.validate({**base, "dp_clip": 1.0, "dp_noise": 8.0})
    assert {k: cfg[k] for k in cfg if k.startswith("dp_")} == {
        "dp_clip": 1.0, "dp_noise": 8.0, "dp_seed": 0, "dp_delta": 1e-5, "dp_correlated": 0.0}
    assert tf.config.validate(cfg) == cfg          # the resolved form is a fixed point
    keys = tf.config.run_keys("dsgd")
    assert keys["dp_noise"] == "float" and keys["dp_seed"] == "int"
    assert keys["dp_correlated"] == "float"


def test_a_config_file_runs_noisy_updates(tmp_path):
    cfg = {**RUN, "algorithm": "dsgd", "topology": "ring", "lr": 0.1, "dp_clip": 1.0,
           "dp_noise": 8.0, "records_path": str(tmp_path / "r.jsonl")}
    res = tf.config.execute(cfg)
    eps = res.records.series("dp_epsilon")[1]
    # 6 rounds of the Gaussian mechanism of mu = 2 / 8, composed: mu = 2 sqrt(6) / 8
    assert eps[-1] == pytest.approx(tf.privacy.noisy_updates_spend(8.0, 6)[1], rel=1e-12)
    header = tf.config.read_header(tmp_path / "r.jsonl")
    assert header["config"]["dp_noise"] == 8.0


@pytest.mark.parametrize("kw,exc,match", [
    ({"dp_clip": 1.0}, ValueError, r"dp_clip and dp_noise together.*without \['dp_noise'\]"),
    ({"dp_seed": 2}, ValueError, "without"),
    ({"dp_clip": -1.0, "dp_noise": 1.0}, ValueError, "dp_clip"),
    ({"dp_clip": 1.0, "dp_noise": "x"}, TypeError, "dp_noise"),
    ({"dp_clip": 1.0, "dp_noise": 1.0, "dp_delta": 1.0}, ValueError, "dp_delta"),
    ({"dp_clip": 1.0, "dp_noise": 1.0, "dp_seed": -1}, ValueError, "dp_seed"),
    ({"dp_clp": 1.0}, TypeError, "did you mean 'dp_clip'"),
])
def test_bad_keys_are_refused_in_one_line(kw, exc, match):
    with pytest.raises(exc, match=match) as info:
        tf.run("dsgd", "ring", rounds=2, n_clients=4, spectral=False, **kw)
    assert "\n" not in str(info.value)


def test_clique_averaging_with_noise_is_refused_by_name():
    with pytest.raises(ValueError, match="Clique Averaging"):
        get_algorithm("dsgd", clique_averaging=True, dp_clip=1.0, dp_noise=1.0)
