"""``topofl spectral --metrics/--progress`` and the two "rounds to 1e-6" columns of the CLI."""

from __future__ import annotations

import json
import math

import pytest

import topofl as tf
from topofl.cli import main


def test_spectral_metrics_option(capsys: pytest.CaptureFixture[str]) -> None:
    metrics = ["--metrics", "b_connectivity,diameter"]
    assert main(["spectral", "ring:n=8", "complete:n=4", *metrics]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [c.strip() for c in lines[0].split("|")[1:-1]] == ["graph", "diameter", "b_connectivity"]
    assert [c.strip() for c in lines[2].split("|")[1:-1]] == ["ring:n=8", "4", "1"]
    assert [c.strip() for c in lines[3].split("|")[1:-1]] == ["complete:n=4", "1", "1"]
    assert main(["spectral", "ring:n=8", "--json", "--metrics", "spectral_gap"]) == 0
    row = json.loads(capsys.readouterr().out)
    gap = tf.spectral.spectral_gap(tf.topologies.ring(8))
    assert row == {"spec": "ring:n=8", "spectral_gap": gap}


def test_spectral_unknown_metric_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spectral", "ring:n=8", "--metrics", "gap"]) == 2
    err = capsys.readouterr().err
    assert "unknown metric 'gap'" in err and "spectral_gap" in err


def test_spectral_progress(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spectral", "one_peer_exponential:n=8", "--progress"]) == 0
    captured = capsys.readouterr()
    assert "summary one_peer_exponential" in captured.err
    assert "one_peer_exponential:n=8" in captured.out


def test_rounds_columns_are_named_by_definition(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["quickstart"]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[2]
    assert "rounds_to_1e-6_bound" in header and "measured" not in header
    gap = tf.spectral.spectral_gap(tf.topologies.ring(64))
    ring_row = next(line for line in out.splitlines() if line.startswith("| ring "))
    assert ring_row.split("|")[5].strip() == str(math.ceil(math.log(1e6) / -math.log(1 - gap)))
    assert main(["spectral", "ring:n=64"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split("|")[-2].strip() == "rounds_to_1e-6_measured"
    s = tf.spectral.summary(tf.topologies.ring(64))
    assert lines[2].split("|")[-2].strip() == str(s["rounds_to_1e-6_measured"])
    assert s["rounds_to_1e-6_measured"] != s["rounds_to_1e-6_bound"]  # 1103 vs 4297
