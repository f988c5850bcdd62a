"""Configs: reading, validation, the replayable records header, replay, overwrite protection."""

from __future__ import annotations

import datetime
import inspect
import json
from pathlib import Path
from typing import Any

import pytest

import topofl as tf
from topofl.algorithms.hparams import flat_parameters
from topofl.config import ConfigError, ConfigTypeError

TINY: dict[str, Any] = {"algorithm": "dsgd", "topology": "ring", "data": "digits",
                        "n_clients": 10, "rounds": 4, "lr": 0.3, "batch_size": 8,
                        "eval_every": 2}


def _strip(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["metric"] not in tf.config.WALL_CLOCK_METRICS]


# ------------------------------------------------------------------------------ reading


def test_read_toml_and_json_agree(tmp_path: Path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text('algorithm = "dsgd"\ntopology = "ring"\nrounds = 4\nlr = 0.3\n'
                    'model_params = {}\n[partition_params]\nshards_per_client = 3\n')
    js = tmp_path / "c.json"
    js.write_text(json.dumps({"algorithm": "dsgd", "topology": "ring", "rounds": 4, "lr": 0.3,
                              "model_params": {}, "partition_params": {"shards_per_client": 3}}))
    assert tf.config.read_config(toml) == tf.config.read_config(js)


@pytest.mark.parametrize("name, text, match", [
    ("bad.toml", "rounds = = 3\n", r"bad.toml: invalid TOML: .*line 1"),
    ("bad.json", "{rounds: 3}", r"bad.json: invalid JSON"),
    ("list.json", "[1, 2]", r"expected a table of topofl.run keyword arguments, got list"),
])
def test_read_errors(tmp_path: Path, name: str, text: str, match: str) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError, match=match):
        tf.config.read_config(tmp_path / name)
    with pytest.raises(ConfigError, match="no such config file"):
        tf.config.read_config(tmp_path / "missing.toml")


# ------------------------------------------------------------------------------ validation


@pytest.mark.parametrize("cfg, match", [
    ({"eval_global": "no"}, r"^eval_global must be a bool \(True or False\), got str 'no'$"),
    ({"lr": "0.1"}, r"^dsgd: lr must be a real number, got str '0.1'$"),
    ({"rounds": 10.0}, r"^rounds must be an int, got float 10.0$"),
    ({"seed": True}, r"^seed must be an int, got bool True$"),
    ({"momentum": None}, r"^dsgd: momentum must be a real number, got NoneType None$"),
    ({"topology": 3},
     r"^topology must be a graph spec string, a Topology, a TimeVarying or None, got int 3$"),
    ({"local_steps": [1]}, r"^dsgd: local_steps must be an int, got list \[1\]$"),
    ({"model": "mlp", "model_params": {"hidden": ["a"]}},
     r"^model_params.hidden must be a list of int, got list \['a'\]$"),
    ({"partition_params": {"shards_per_client": "2"}},
     r"^partition_params.shards_per_client must be an int, got str '2'$"),
    ({"run_id": 3}, r"^run_id must be a str, got int 3$"),
    ({"nonsense": 1}, r"unknown key\(s\) \['nonsense'\].*; accepted: .*lr"),
    ({"resume": "x.ckpt"}, r"\['resume'\] are not config keys"),
    ({"model_params": {"width": 3}}, r"unknown key\(s\) \['width'\] in model_params"),
    ({"partition_params": {"alpha": 1.0}},
     r"unknown key\(s\) \['alpha'\] in partition_params"),
])
def test_wrong_types_and_unknown_keys(cfg: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigTypeError, match=match) as info:
        tf.config.validate(cfg)
    assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("cfg, match", [
    ({"rounds": -1}, r"rounds must be .*>= 0.*-1"),
    ({"batch_size": 0}, r"batch_size must be .*>= 1"),
    ({"n_clients": 0}, r"n_clients must be >= 1, got 0"),
    ({"lr": -0.5}, r"^dsgd: .*lr.*-0.5"),
    ({"dtype": "float16"}, r"dtype"),
    ({"algorithm": "nosuch"}, r"unknown algorithm 'nosuch'; known: .*dsgd"),
    ({"model": "nosuch"}, r"unknown model 'nosuch'; known: logistic"),
    ({"data": "nosuch"}, r"unknown dataset 'nosuch'; known: digits"),
    ({"partition": "nosuch"}, r"unknown partition 'nosuch'; known: iid"),
    ({"partition": "dirichlet"}, r"partition_params needs partition_params.alpha"),
    ({"topology": "nosuch:n=3"}, r"unknown graph family 'nosuch'"),
    ({"topology": "ring:m=4"}, r"unknown parameter\(s\) \['m'\]; parameters of ring: n"),
    ({"topology": "ring:n"}, r"expected key=value pairs"),
    ({"checkpoint_every": 2}, r"checkpoint_every > 0 needs checkpoint_path"),
    ({"topology": {"object": "Topology", "name": "ring"}},
     r"topology was passed to topofl.run as an object \(Topology\)"),
    ({"sweep": {"seed": [0]}}, r"\[sweep\] table: run it with `topofl sweep`"),
    ({"algorithm": "dsgd"}, r"^dsgd communicates over a graph: set topology"),
])
def test_impossible_values(cfg: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match) as info:
        tf.config.validate(cfg)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("name", sorted(tf.algorithms.ALGORITHMS))
def test_resolved_hyperparameters_are_the_factory_defaults(name: str) -> None:
    cfg = tf.config.validate({"algorithm": name, "rounds": 2, "topology": "ring"})
    params = flat_parameters(tf.algorithms.ALGORITHMS[name])
    for k, p in params.items():
        default = list(p.default) if isinstance(p.default, tuple) else p.default
        assert cfg[k] == default, (name, k)
    # and the run settings are RunConfig's defaults
    fields = tf.engine.RunConfig.__dataclass_fields__
    for k in ("batch_size", "dtype", "executor", "init", "spectral"):
        assert cfg[k] == fields[k].default
    # eval_every="auto": the run resolves its number from its data (what a client scores
    # against what it trains on), so the config keeps "auto"
    assert fields["eval_every"].default == "auto" and cfg["eval_every"] == "auto"
    assert cfg["run_id"] is None and "progress" not in cfg
    assert list(cfg)[:10] == ["algorithm", "topology", "data", "n_clients", "partition",
                              "partition_params", "model", "model_params", "rounds", "seed"]


def test_validate_keeps_given_values_and_fills_nested_defaults() -> None:
    cfg = tf.config.validate({"model": "mlp", "model_params": {"hidden": [8]}, "topology": None,
                              "algorithm": "local",
                              "partition": "dpfl_pathological",
                              "partition_params": {"alpha": 0.1, "val": 0.2}, "lr": 1})
    assert cfg["model_params"] == {"hidden": [8]}
    assert cfg["partition_params"] == {"classes_per_client": 3, "alpha": 0.1, "val": 0.2}
    assert cfg["lr"] == 1 and cfg["momentum"] == 0.0


# ------------------------------------------------------------------------------ the header


def test_header_holds_the_resolved_config_and_provenance(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    tf.run(**TINY, momentum=0.5, records_path=str(path))
    head = json.loads(path.read_text().splitlines()[0])
    assert set(head) == {"header", "run", "config", "provenance", "engine", "crc"}
    assert head["run"] == "dsgd-ring"  # the run id every row carries (records.load checks it)
    # exactly what `topofl run` would resolve from the same keywords
    want = tf.config.validate({**TINY, "momentum": 0.5, "records_path": str(path)})
    want["run_id"] = "dsgd-ring"
    assert head["config"] == want
    assert head["config"]["model"] == "logistic" and head["config"]["momentum"] == 0.5
    prov = head["provenance"]
    assert prov["topofl"] == tf.__version__ and prov["command"] is None and prov["replayable"]
    import torch

    assert prov["torch"] == torch.__version__
    started = datetime.datetime.fromisoformat(prov["started"])
    assert before <= started <= datetime.datetime.now(datetime.timezone.utc)
    assert prov["git_commit"] is None or len(prov["git_commit"]) == 40
    assert head["engine"]["algorithm"]["name"] == "dsgd"  # the engine's own description
    rec = tf.records.load(path)
    assert rec.config == head["config"] and rec.provenance == prov


def test_objects_are_described_and_not_replayable(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    data = tf.data.federate("digits", "iid", 10, seed=0)
    model = tf.models.build_model("logistic", data.input_shape, 10, seed=0)
    tf.run("dsgd", topology=tf.topologies.ring(10), data=data, model=model, rounds=1,
           batch_size=8, records_path=str(path))
    rec = tf.records.load(path)
    assert rec.config["topology"] == {"object": "Topology", "name": "ring", "n": 10,
                                      "params": {"n": 10}}
    assert rec.config["data"]["object"] == "FederatedData"
    assert rec.config["model"] == {"object": "SplitModel", "num_params": 650}
    assert rec.provenance["replayable"] is False
    assert rec.provenance["not_replayable"] == ["topology", "data", "model"]
    with pytest.raises(ConfigError, match="topology, data, model was passed to topofl.run as "
                                          "an object"):
        tf.config.replay(path)


def test_replay_reproduces_the_records(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    spec = "dcliques:clique_size=5,inter=ring"  # built from the data: the partition replays too
    tf.run("dsgd", topology=spec, data="digits", n_clients=10, rounds=4, lr=0.3, batch_size=8,
           eval_every=2, momentum=0.9, seed=3, records_path=str(path))
    again = tf.config.replay(path, records_path=str(tmp_path / "again.jsonl"))
    orig = tf.records.load(path).rows
    assert len(_strip(orig)) > 60  # per-client and mean metrics at 2 evaluations, graph rows once
    assert tf.config.compare_rows(orig, again.records.rows) is None
    assert _strip(orig) == _strip(tf.records.load(tmp_path / "again.jsonl").rows)
    # the comparison can fail: another seed gives other rows
    other = tf.config.replay(path, seed=4)
    diff = tf.config.compare_rows(orig, other.records.rows)
    assert diff is not None and diff.startswith("row ")
    with pytest.raises(ConfigError, match="would overwrite its source"):
        tf.config.replay(path, records_path=str(path))


def test_replay_refuses_old_headers_and_non_records(tmp_path: Path) -> None:
    old = tmp_path / "old.jsonl"
    old.write_text(json.dumps({"header": True, "config": {"run": {"rounds": 1},
                                                          "algorithm": {"name": "dsgd"}}}) + "\n")
    with pytest.raises(ConfigError, match="written before replayable headers"):
        tf.config.replay(old)
    assert tf.records.load(old).config["algorithm"] == {"name": "dsgd"}  # still readable
    junk = tmp_path / "junk.jsonl"
    junk.write_text('{"run": "a"}\n')
    with pytest.raises(ConfigError, match="not a records header"):
        tf.config.replay(junk)
    with pytest.raises(ConfigError, match="no such records file"):
        tf.config.replay(tmp_path / "none.jsonl")


def test_existing_records_are_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    tf.run(**TINY, records_path=str(path))
    text = path.read_text()
    with pytest.raises(tf.config.OutputExistsError, match="exists; pass overwrite=True"):
        tf.run(**{**TINY, "lr": 0.1}, records_path=str(path))
    assert path.read_text() == text
    tf.run(**{**TINY, "lr": 0.1}, records_path=str(path), overwrite=True)
    assert tf.records.load(path).config["lr"] == 0.1


def test_resume_keeps_the_header(tmp_path: Path) -> None:
    from tests.engine._crash import Crash, CrashingData

    path, ck = tmp_path / "r.jsonl", tmp_path / "r.ckpt"
    kw = dict(TINY, records_path=str(path), checkpoint_path=str(ck), checkpoint_every=1,
              run_id="x")
    real = tf.data.federate

    def crashing(*a: Any, **k: Any) -> Any:
        return CrashingData(real(*a, **k), at=3)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tf.data, "federate", crashing)
        with pytest.raises(Crash):
            tf.run(**kw)
    head = path.read_text().splitlines()[0]
    tf.run(**kw, resume=str(ck))
    assert path.read_text().splitlines()[0] == head
    full = tf.run(**{**kw, "records_path": None, "checkpoint_every": 0})
    assert _strip(tf.records.load(path).rows) == _strip(full.records.rows)


def test_a_config_is_resolved_once_and_its_algorithm_built_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """execute checks the config (resolve) and runs that checked call: the algorithm the check
    built is the one that trains (once per run, not once to check and again to run)."""
    from topofl.algorithms.base import _REGISTRY

    real, built = _REGISTRY.table["dsgd"], []

    def counting(*args: Any, **kwargs: Any) -> Any:
        built.append(kwargs)
        return real(*args, **kwargs)

    counting.__signature__ = inspect.signature(real)  # type: ignore[attr-defined]
    monkeypatch.setitem(_REGISTRY.table, "dsgd", counting)  # the same factory, counted
    cfg = {"topology": "ring", "n_clients": 4, "rounds": 1, "lr": 0.3, "batch_size": 8,
           "model": "logistic", "partition": "iid"}
    resolved = tf.config.resolve(cfg)
    assert len(built) == 1 and resolved.prepared.algorithm.hparams["lr"] == 0.3
    res = tf.config.execute(cfg)
    assert len(built) == 2  # one check, one run: the run used the algorithm of its check
    header = res.records.configs[next(iter(res.records.configs))]
    # the run names the run, and resolves eval_every="auto" from its data (a number)
    assert resolved.config["eval_every"] == "auto" and isinstance(header["eval_every"], int)
    assert header == {**resolved.config, "run_id": "dsgd-ring",
                      "eval_every": header["eval_every"]}
