"""The behaviour snapshot and the certificates that let a refactor keep committed results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import topofl as tf
from topofl import snapshot


@pytest.fixture(scope="module")
def small() -> dict:
    return snapshot.take(("topologies", "partitions"))


def test_a_snapshot_is_reproducible_and_covers_every_family(small: dict) -> None:
    again = snapshot.take(("topologies", "partitions"))
    assert snapshot.compare(small, again) == []
    names = {k.split("/", 1)[1] for k in small["values"] if k.startswith("topologies/")}
    assert set(tf.topologies.REGISTRY) <= names
    assert {"dcliques_ring", "dcliques_small_world"} <= names
    assert small["code"] == tf.figures.code_fingerprint()


def test_compare_names_what_moved(small: dict) -> None:
    moved = json.loads(json.dumps(small))
    moved["values"]["topologies/ring"][0][0][0] += 1e-15
    del moved["values"]["partitions/iid"]
    assert snapshot.compare(small, moved) == ["partitions/iid", "topologies/ring"]
    assert snapshot.compare(small, moved, rtol=1e-12) == ["partitions/iid"]


def test_every_registry_algorithm_has_a_case() -> None:
    data = tf.data.federate("digits", "dirichlet", 6, alpha=1.0, seed=0, val=0.1)
    assert {c[0] for c in snapshot.algorithm_cases(data).values()} == set(
        tf.algorithms.ALGORITHMS)


def test_unknown_part_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown snapshot part.*runs, topologies"):
        snapshot.take(("graphs",))


def _result(folder: Path, name: str, code: str) -> None:
    (folder / f"{name}.json").write_text(json.dumps({"name": name, "code": code,
                                                     "verdict": "holds", "seeds": [0, 1, 2]}))


def test_certificate_makes_older_results_current(tmp_path: Path, small: dict) -> None:
    before = json.loads(json.dumps(small))
    before["code"] = "0.1.0+000000000000"  # as if taken by the code before a refactor
    (tmp_path / "before.json").write_text(json.dumps(before))
    results = tmp_path / "results"
    results.mkdir()
    _result(results, "old", before["code"])
    _result(results, "new", small["code"])
    assert list(tf.figures.stale(results)) == ["old"]
    cert = snapshot.certify(tmp_path / "before.json", results)
    assert (cert["from"], cert["to"]) == (before["code"], small["code"]) == (
        before["code"], cert["code"])
    assert cert["seeds"] == list(snapshot.SEEDS)
    assert cert["values"] == len(small["values"])
    assert tf.figures.stale(results) == {}
    rows = tf.figures.index(results)
    assert "current (certified)" in rows and rows.startswith("2 results")  # the file is no result
    assert snapshot.equivalent_codes(small["code"], results) == {before["code"], small["code"]}
    assert snapshot.equivalent_codes(before["code"], results) == {before["code"]}  # one way


def test_a_moved_value_cannot_be_certified(tmp_path: Path, small: dict) -> None:
    before = json.loads(json.dumps(small))
    before["code"] = "0.1.0+000000000000"
    before["values"]["partitions/dirichlet"]["labels"][0][0] += 1
    (tmp_path / "before.json").write_text(json.dumps(before))
    with pytest.raises(ValueError, match="1 of .* values moved.*partitions/dirichlet"):
        snapshot.certify(tmp_path / "before.json", tmp_path)
    assert not (tmp_path / snapshot.EQUIVALENCE_FILE).exists()


def test_the_same_code_needs_no_certificate(tmp_path: Path, small: dict) -> None:
    (tmp_path / "before.json").write_text(json.dumps(small))
    cert = snapshot.certify(tmp_path / "before.json", tmp_path)
    assert cert["from"] == cert["to"]
    assert not (tmp_path / snapshot.EQUIVALENCE_FILE).exists()


def test_cli_snapshot_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert tf.figures.main(["snapshot", "--take"]) == 2
    assert "snapshot --out FILE" in capsys.readouterr().err
    assert tf.figures.main(["snapshot", "--certify", "/nonexistent/snap.json"]) == 2
    assert "no snapshot" in capsys.readouterr().err


@pytest.mark.slow
def test_the_whole_snapshot_runs_every_case_in_both_dtypes() -> None:
    snap = snapshot.take()
    data = tf.data.federate("digits", "dirichlet", 6, alpha=1.0, seed=0, val=0.1)
    for case in snapshot.algorithm_cases(data):
        for dtype in ("float64", "float32"):
            rows = snap["values"][f"runs/{case}/{dtype}"]
            assert any(k.endswith("|test_acc_mean") for k in rows), (case, dtype)
    assert {"models/cnn1d", "models/resnet18_gn", "spectral/dcliques_fractal",
            "data/digits"} <= set(snap["values"])
