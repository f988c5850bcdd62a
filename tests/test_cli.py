"""The public API imports and the command line works as the README says."""

from __future__ import annotations

import subprocess
import sys

import pytest

import topofl as tf
from topofl.cli import main


def test_public_api() -> None:
    assert tf.Topology and tf.TimeVarying and tf.as_time_varying
    for name in ("metropolis", "metropolis_hastings", "max_degree", "uniform", "push_sum"):
        assert callable(getattr(tf.mixing, name))
    for name in ("ring", "torus", "grid", "complete", "star", "circulant", "erdos_renyi",
                 "random_regular", "watts_strogatz", "REGISTRY", "build", "parse_spec"):
        assert hasattr(tf.topologies, name)
    for name in tf.topologies.__all__:
        assert hasattr(tf.topologies, name), name
    assert isinstance(tf.__version__, str)


def test_quickstart(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["quickstart"]) == 0
    out = capsys.readouterr().out
    assert "ring" in out and "complete" in out and "1.0000" in out


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in tf.topologies.REGISTRY:
        assert name in out


def test_spectral_command_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spectral", "ring:n=8", "complete:n=8"]) == 0
    assert "ring:n=8" in capsys.readouterr().out
    assert main(["spectral", "nosuch:n=3"]) == 2
    assert "unknown graph family 'nosuch'" in capsys.readouterr().err
    assert main(["spectral", "ring:n=0"]) == 2
    assert "n must be >= 1" in capsys.readouterr().err
    assert main(["spectral", "ring:m=4"]) == 2
    assert "parameters of ring: n" in capsys.readouterr().err
    assert main(["spectral", "ring:n"]) == 2


def test_python_dash_m() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "topofl", "list"], capture_output=True, text=True, check=True
    )
    assert "ring" in out.stdout


def test_run_command(tmp_path: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    cfg = tmp_path / "cfg.json"  # type: ignore[operator]
    cfg.write_text(json.dumps({"algorithm": "dsgd", "topology": "ring", "n_clients": 8,
                               "rounds": 2, "lr": 0.3}))
    out = tmp_path / "r.jsonl"  # type: ignore[operator]
    assert main(["run", str(cfg), "--set", "batch_size=4", "--out", str(out)]) == 0
    assert "test_acc_mean: final" in capsys.readouterr().out
    rec = tf.records.load(out)
    assert rec.config["batch_size"] == 4 and rec.config["lr"] == 0.3
    assert rec.config["records_path"] == str(out) and rec.config["run_id"] == "dsgd-ring"
    assert rec.provenance["command"] == f"topofl run {cfg} --set batch_size=4 --out {out}"
    # a second run to the same file is refused without --overwrite, and the file is kept
    before = out.read_text()
    assert main(["run", str(cfg), "--out", str(out)]) == 2
    assert "exists; pass overwrite=True (topofl run --overwrite)" in capsys.readouterr().err
    assert out.read_text() == before
    assert main(["run", "--algorithm", "dfedpgp", "--topology", "random_directed_push:k=2",
                 "--set", "n_clients=6", "--set", "rounds=1", "--set", "model=mlp",
                 "--set", 'model_params={"hidden": [8]}', "--set", "local_epochs=1",
                 "--out", str(out), "--overwrite"]) == 0
    rec = tf.records.load(out)
    assert rec.config["model"] == "mlp" and rec.config["model_params"] == {"hidden": [8]}
    assert rec.config["algorithm"] == "dfedpgp" and rec.config["local_epochs"] == 1
    assert main(["run", "--set", "nonsense=1", "--out", str(out)]) == 2
    assert "unknown key(s) ['nonsense']" in capsys.readouterr().err
