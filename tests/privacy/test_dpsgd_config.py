"""DP-SGD by name (``dpsgd_clip``, ``dpsgd_noise``, ``dpsgd_seed``, ``dpsgd_delta`` beside any
registered algorithm's keys): the same run as :func:`topofl.algorithms.with_dp_sgd`, bit for bit
and hash for hash; a resolved config records the keys only when it gives one and replays; a
config file runs them; bad settings, and DP-SGD with noisy updates, are refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import topofl as tf
from tests.privacy import _by_name
from topofl.algorithms import get_algorithm, with_dp_sgd
from topofl.records import header_run_hash

RUN = {**_by_name.RUN, "rounds": 4}


def _records(tmp: Path, name: str, algorithm: object, **kw: object) -> tuple[list, dict]:
    return _by_name.records(tmp, name, algorithm, RUN, **kw)


def test_keys_by_name_are_the_wrapper_bit_for_bit(tmp_path):
    by_name, a = _records(tmp_path, "name", "dsgd", lr=0.1, dpsgd_clip=0.5, dpsgd_noise=1.5,
                          dpsgd_seed=3)
    wrapped = with_dp_sgd(get_algorithm("dsgd", lr=0.1), 0.5, 1.5, seed=3)
    by_hand, b = _records(tmp_path, "hand", wrapped)
    _by_name.assert_same_run(by_name, a, by_hand, b)
    # another seed draws other noise: another run, another hash
    _, c = _records(tmp_path, "other", "dsgd", lr=0.1, dpsgd_clip=0.5, dpsgd_noise=1.5)
    assert header_run_hash(c["header"]) != header_run_hash(a["header"])
    assert not torch.equal(a["result"].evaluated(), c["result"].evaluated())


def test_a_resolved_config_records_the_keys_only_when_given_and_replays():
    base = {"algorithm": "dsgd", "topology": "ring", "n_clients": 8, "rounds": 4}
    assert not [k for k in tf.config.validate(base) if k.startswith("dpsgd_")]
    cfg = tf.config.validate({**base, "dpsgd_clip": 1.0, "dpsgd_noise": 2.0})
    assert {k: cfg[k] for k in cfg if k.startswith("dpsgd_")} == {
        "dpsgd_clip": 1.0, "dpsgd_noise": 2.0, "dpsgd_seed": 0, "dpsgd_delta": 1e-5}
    assert not [k for k in cfg if k.startswith("dp_")]
    assert tf.config.validate(cfg) == cfg          # the resolved form is a fixed point
    keys = tf.config.run_keys("dsgd")
    assert keys["dpsgd_noise"] == "float" and keys["dpsgd_seed"] == "int"


def test_a_config_file_runs_dp_sgd(tmp_path):
    cfg = {**RUN, "algorithm": "dsgd", "topology": "ring", "lr": 0.1, "dpsgd_clip": 1.0,
           "dpsgd_noise": 1.0, "records_path": str(tmp_path / "r.jsonl")}
    res = tf.config.execute(cfg)
    wrapped = tf.run(with_dp_sgd(get_algorithm("dsgd", lr=0.1), 1.0, 1.0), "ring", **RUN)
    assert torch.equal(res.evaluated(), wrapped.evaluated())
    assert res.records.series("dp_epsilon")[1].tolist() == \
        wrapped.records.series("dp_epsilon")[1].tolist()
    header = tf.config.read_header(tmp_path / "r.jsonl")
    assert header["config"]["dpsgd_noise"] == 1.0


@pytest.mark.parametrize("kw,exc,match", [
    ({"dpsgd_clip": 1.0}, ValueError,
     r"dpsgd_clip and dpsgd_noise together.*without \['dpsgd_noise'\]"),
    ({"dpsgd_seed": 2}, ValueError, "without"),
    ({"dpsgd_clip": 0.0, "dpsgd_noise": 1.0}, ValueError, "dpsgd_clip"),
    ({"dpsgd_clip": 1.0, "dpsgd_noise": "x"}, TypeError, "dpsgd_noise"),
    ({"dpsgd_clip": 1.0, "dpsgd_noise": 1.0, "dpsgd_delta": 0.0}, ValueError, "dpsgd_delta"),
    ({"dpsgd_clip": 1.0, "dpsgd_noise": 1.0, "dpsgd_seed": -1}, ValueError, "dpsgd_seed"),
    ({"dpsgd_clip": 1.0, "dpsgd_noise": 1.0, "dp_clip": 1.0, "dp_noise": 1.0}, ValueError,
     "noisy updates .* and DP-SGD .* together"),
    ({"dpsgd_clp": 1.0}, TypeError, "did you mean 'dpsgd_clip'"),
])
def test_bad_keys_are_refused_in_one_line(kw, exc, match):
    with pytest.raises(exc, match=match) as info:
        tf.run("dsgd", "ring", rounds=2, n_clients=4, spectral=False, **kw)
    assert "\n" not in str(info.value)


def test_an_algorithm_reading_data_outside_its_step_is_refused_by_name():
    with pytest.raises(ValueError, match="cannot account"):
        tf.run("dpfl", None, rounds=2, n_clients=6, spectral=False, data="digits",
               model="logistic", dpsgd_clip=1.0, dpsgd_noise=1.0)
