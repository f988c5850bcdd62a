"""The behaviour snapshot (the certificates that rest on it: tests/figures/test_certificates.py)."""

from __future__ import annotations

import json

import pytest

import topofl as tf
from topofl.figures import snapshot


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
    assert small["digest"] == snapshot.digest(small["values"]) == snapshot.digest(again["values"])


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


def test_cli_snapshot_usage(capsys: pytest.CaptureFixture[str]) -> None:
    from topofl.figures import cli  # by module path: not in topofl.figures' public face

    assert cli.main(["snapshot", "--take"]) == 2
    assert "snapshot --out FILE" in capsys.readouterr().err
    assert cli.main(["snapshot", "--certify", "/nonexistent/snap.json"]) == 2
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
