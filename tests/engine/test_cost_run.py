"""Runs with the ledger, the clock and availability on: resume-exact, configs with ``[network]``
and ``[availability]`` tables, sweeps, and the study's cost outcomes."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import topofl as tf
from tests.engine._crash import Crash, CrashingData
from topofl.config import ConfigError
from topofl.engine import RunConfig
from topofl.engine.config import config_header, run_hash

NET = {"latency": {"dist": "uniform", "low": 0.01, "high": 0.05}, "uplink": 1e5,
       "speed": {"dist": "lognormal", "median": 1e7, "sigma": 0.5}, "seed": 2}
AVAIL = {"model": "markov", "p_off": 0.2, "p_on": 0.5, "straggle": 0.2, "slowdown": 3.0,
         "seed": 1}


@pytest.fixture(scope="module")
def data() -> Any:
    return tf.data.federate("digits", "shards", 12, shards_per_client=2, seed=0)


def _strip(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["metric"] != "wall_time"]


@pytest.mark.parametrize("algorithm", ["dsgd", "osgp", "fedper"])
def test_resume_equals_uninterrupted_with_every_account_on(data: Any, tmp_path: Path,
                                                           algorithm: str) -> None:
    model = tf.models.build_model("mlp", data.input_shape, data.num_classes, seed=0,
                                  hidden=(8,))
    algo = tf.algorithms.get_algorithm(algorithm, lr=0.3)
    topo = (None if not algo.uses_topology else tf.topologies.random_directed(
        12, 3, seed=0, mode="push") if algo.requires == "column"
        else tf.topologies.random_regular(12, 3, seed=0))
    kw = dict(rounds=7, batch_size=8, eval_every=2, seed=2, network=NET, availability=AVAIL)
    full = tf.engine.run(RunConfig(**kw), topo, algo, data, model)
    cfg = RunConfig(**kw, checkpoint_every=3, checkpoint_path=str(tmp_path / "ck.pt"),
                    records_path=str(tmp_path / "r.jsonl"))
    with pytest.raises(Crash):
        tf.engine.run(cfg, topo, algo, CrashingData(data, at=4), model)
    resumed = tf.engine.run(cfg, topo, algo, data, model, resume=tmp_path / "ck.pt")
    assert _strip(resumed.records.rows) == _strip(full.records.rows)
    assert _strip(tf.records.load(tmp_path / "r.jsonl").rows) == _strip(full.records.rows)
    assert torch.equal(resumed.state.x, full.state.x)
    r = full.records
    assert r.series("sim_time")[0].tolist() == list(range(7))
    assert np.all(np.diff(r.series("sim_time")[1]) > 0)
    assert min(r.series("online_clients")[1]) < 12


def test_defaults_keep_the_header_and_hash_of_older_runs(data: Any) -> None:
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    algo = tf.algorithms.dsgd()
    plain = config_header(RunConfig(rounds=3), algo, None, data, model)
    assert not {"network", "availability", "ledger"} & set(plain["run"])
    timed = config_header(RunConfig(rounds=3, network={"latency": 0.1}), algo, None, data,
                          model)
    assert timed["run"]["network"]["latency"] == 0.1
    assert run_hash(timed) != run_hash(plain)


def test_config_tables_are_checked_and_filled_in(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text('topology = "ring"\nn_clients = 6\nrounds = 2\nbatch_size = 8\n'
                    'spectral = false\n[network]\nlatency = 0.02\nuplink = 2e5\n'
                    'speed = {dist = "uniform", low = 1e6, high = 2e6}\n'
                    '[availability]\nmodel = "bernoulli"\noffline = 0.25\n')
    cfg = tf.config.read_config(path)
    resolved = tf.config.validate(cfg)
    assert resolved["network"]["downlink"] == math.inf
    assert resolved["availability"] == {"model": "bernoulli", "offline": 0.25,
                                        "straggle": 0.0, "slowdown": 1.0, "seed": 0}
    res = tf.config.execute(cfg)
    assert res.records.config["network"]["uplink"] == 2e5
    assert "sim_time" in res.records.metrics and "online_clients" in res.records.metrics
    for bad, match in ((dict(cfg, network={"latency": 1, "lag": 2}), "unknown key"),
                       (dict(cfg, availability={"model": "markov"}), "needs"),
                       (dict(cfg, network="fast"), "network must be")):
        with pytest.raises(ConfigError, match=match):
            tf.config.validate(bad)


def test_a_replay_reproduces_the_accounts(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    res = tf.run("dsgd", "ring", "digits", "logistic", 3, n_clients=6, batch_size=8,
                 spectral=False, records_path=str(path), network={"latency": 0.1},
                 availability={"offline": 0.3, "seed": 4})
    again = tf.config.replay(path)
    assert tf.config.compare_rows(res.records.rows, again.records.rows) is None


def test_a_sweep_over_availability_and_its_skip(tmp_path: Path) -> None:
    cfg = {"algorithm": "dsgd", "topology": "ring", "n_clients": 6, "rounds": 2,
           "batch_size": 8, "spectral": False, "record_clients": False,
           "network": {"latency": 0.1},
           "sweep": {"availability": [{"offline": 0.0}, {"offline": 0.5, "seed": 1}]}}
    runs = tf.sweep.plan(cfg)
    assert len(runs) == 2 and runs[0].name != runs[1].name
    out = tmp_path / "out"
    first = tf.sweep.run_sweep(cfg, out, progress=False, echo=lambda s: None)
    assert [o.status for o in first] == ["complete", "complete"]
    second = tf.sweep.run_sweep(cfg, out, progress=False, echo=lambda s: None)
    assert [o.status for o in second] == ["skipped", "skipped"]
    a, b = (tf.records.load(out / f"{r.name}.jsonl") for r in runs)
    assert a.final("messages") > b.final("messages")  # offline clients send nothing


def test_stored_runs_without_the_new_settings_do_not_differ() -> None:
    from topofl.sweep._resumption import _differs

    stored = {"lr": 0.1, "rounds": 5}  # recorded before network, availability and ledger
    assert _differs(stored, {**stored, "network": None, "availability": None,
                             "ledger": True}) is None
    assert "ledger" in (_differs(stored, {**stored, "ledger": False}) or "")
    assert "network" in (_differs(stored, {**stored, "network": {"latency": 1.0}}) or "")


def _run_file(folder: Path, name: str, topo: str, seed: int, accs: list[float],
              nbytes: list[int], times: list[float]) -> None:
    with tf.records.Recorder(folder / f"{name}.jsonl", run=name) as rec:
        rec.log_config({"topology": topo, "seed": seed})
        for t, (a, b, s) in enumerate(zip(accs, nbytes, times)):
            rec.log_many({"test_acc_mean": a, "bytes": b, "messages": b // 10, "sim_time": s},
                         t)


def test_study_reports_bytes_and_time_to_target(tmp_path: Path) -> None:
    # a dense graph reaches 0.5 in fewer rounds but spends more bytes and time per round
    _run_file(tmp_path, "dense-0", "complete", 0, [0.4, 0.6, 0.7], [900, 1800, 2700],
              [3.0, 6.0, 9.0])
    _run_file(tmp_path, "dense-1", "complete", 1, [0.5, 0.6, 0.7], [900, 1800, 2700],
              [3.0, 6.0, 9.0])
    _run_file(tmp_path, "sparse-0", "ring", 0, [0.3, 0.4, 0.5], [100, 200, 300],
              [1.0, 2.0, 3.0])
    _run_file(tmp_path, "sparse-1", "ring", 1, [0.3, 0.4, 0.45], [100, 200, 300],
              [1.0, 2.0, 3.0])
    res = tf.study.study(tmp_path, target=0.5, bootstrap=tf.study.Bootstrap(n_boot=20),
                         output=tf.study.Output(figures=False))
    runs = res.runs.set_index("run")
    assert runs.loc["dense-0", "rounds_to_target"] == 2
    assert runs.loc["dense-0", "bytes_to_target"] == 1800
    assert runs.loc["dense-1", "bytes_to_target"] == 900
    assert runs.loc["sparse-0", "bytes_to_target"] == 300
    assert runs.loc["sparse-0", "time_to_target"] == 3.0
    assert runs.loc["sparse-0", "messages_to_target"] == 30
    assert math.isinf(runs.loc["sparse-1", "time_to_target"])
    assert res.convergence_metrics[:4] == ["rounds_to_target", "messages_to_target",
                                           "bytes_to_target", "time_to_target"]
    assert "simulated time to test accuracy (mean over clients) ≥ 0.5 (s)" in res.markdown
    cond = res.conditions.set_index("condition")
    assert cond.loc["topology=complete", "bytes_to_target_mean"] == 1350
    r = tf.records.load_many(tmp_path)
    assert r.bytes_to(0.5, run="sparse-0") == 300 and r.time_to(0.7, run="dense-0") == 9.0
    assert r.messages_to(0.6, run="dense-1") == 180
    assert r.bytes_to(0.9, run="dense-0") is None
