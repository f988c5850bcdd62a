"""The single-process loop's guards on several ranks: the divergence threshold stops a run with
the message one process gives, and a checkpoint of another run is refused on resume, naming
the fields that differ (the engine's own checks: ``resume_from``, ``Divergence``)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
import torch

import topofl as tf
from tests.distributed._launch import launch
from topofl.distributed import checkpoint as sharded
from topofl.distributed.placement import place
from topofl.engine.checkpoint import load_checkpoint
from topofl.exceptions import CheckpointError, ConvergenceError

N = 6
# (seed, lr, divergence): the first client above the limit is client 0 (every client is
# above it), client 4 (clients 4 and 5 are: the first of one rank's two), client 2 (clients 2
# and 5 are: the lowest id over the ranks), all in round 0's second local step; client 1 in
# round 3 (after three evaluations)
CASES = [(0, 1e6, 1e3), (2, 10.0, 12.0), (1, 10.0, 10.0), (3, 10.0, 12.0)]


def _diverge(seed: int, lr: float, divergence: float, records: str | None = None) -> str:
    try:
        tf.run("dsgd", "ring", "digits", "logistic", 4, n_clients=N, lr=lr, local_steps=2,
               batch_size=8, seed=seed, dtype="float64", progress=False, spectral=False,
               divergence=divergence, records_path=records, run_id="d")
    except ConvergenceError as exc:
        return str(exc)
    return "not stopped"


def _diverge_all(rank: int, tmp: str) -> list[str]:
    return [_diverge(*case, records=os.path.join(tmp, f"r{i}.jsonl") if i == 3 else None)
            for i, case in enumerate(CASES)]


def test_a_diverging_run_stops_with_the_message_of_one_process(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    one = [_diverge(*case) for case in CASES]
    assert all("above divergence=" in m for m in one), one
    clients = [int(re.search(r"client (\d+)", m).group(1)) for m in one]  # type: ignore[union-attr]
    assert clients == [0, 4, 2, 1], one
    # the placements the runs make (seeded by the run's seed): the cases cross the ranks
    owners = [place(tf.topologies.ring(N), 2, n=N, seed=seed).owner for seed, _, _ in CASES]
    assert owners[1][4] == owners[1][5] and owners[2][2] != owners[2][5]
    assert owners[1][4] != owners[1][0]  # client 4 is not on rank 0's side
    out = launch(2, _diverge_all, str(tmp_path), timeout=60.0, wait=600.0)
    assert all(s == "ok" for s, _ in out.values()), out
    for r in range(2):
        assert out[r][1] == one, (r, out[r][1], one)
    # the rows of the rounds before the bad one are on disk (rank 0 wrote them), not its own
    t = int(re.search(r"round (\d+)", one[3]).group(1))  # type: ignore[union-attr]
    rows = tf.records.load(tmp_path / "r3.jsonl").rows
    assert t == 3 and {r["round"] for r in rows} == set(range(t))


KW: dict[str, Any] = dict(n_clients=N, seed=0, dtype="float64", batch_size=8, progress=False,
                          spectral=False, run_id="c", checkpoint_every=1)


def _paths(tmp: str, sub: str = "") -> dict[str, str]:
    return {"checkpoint_path": os.path.join(tmp, "ck"),
            "records_path": os.path.join(tmp, f"run{sub}.jsonl")}


def _first(rank: int, tmp: str) -> str:
    tf.run("sgp", "ring", "digits", "logistic", 2, lr=0.1, **KW, **_paths(tmp))
    return "ok"


def _again(rank: int, tmp: str, lr: float, rounds: int) -> str:
    try:
        res = tf.run("sgp", "ring", "digits", "logistic", rounds, lr=lr,
                     resume=_paths(tmp)["checkpoint_path"], **KW, **_paths(tmp))
    except CheckpointError as exc:
        return f"refused: {exc}"
    return f"rounds {sorted({r['round'] for r in res.records.rows})}"


def test_resuming_with_a_changed_setting_is_refused_naming_it(tmp_path: Path) -> None:
    tmp = str(tmp_path)
    out = launch(2, _first, tmp, timeout=60.0, wait=600.0)
    assert all(s == "ok" for s, _ in out.values()), out
    ck = sharded.load_full(tmp_path / "ck", torch.device("cpu"))
    # the first local step's loss travels with the checkpoint (a resumed run's threshold)
    single = tf.run("sgp", "ring", "digits", "logistic", 1, lr=0.1, **KW,
                    **_paths(str(tmp_path / "one")))
    one = load_checkpoint(tmp_path / "one" / "ck")
    assert single.records.rows and ck["loss_ref"] == pytest.approx(one["loss_ref"], rel=1e-12)

    # a changed learning rate: every rank refuses, naming the field; nothing is written
    before = (tmp_path / "run.jsonl").read_text()
    out = launch(2, _again, tmp, 0.2, 3, timeout=60.0, wait=600.0)
    assert all(s == "ok" for s, _ in out.values()), out
    for r in range(2):
        msg = out[r][1]
        assert msg.startswith("refused: ") and "algorithm.lr: expected 0.1, found 0.2" in msg, msg
    assert (tmp_path / "run.jsonl").read_text() == before

    # rounds may change (RESUME_FREE): the run is extended from round 2
    out = launch(2, _again, tmp, 0.1, 3, timeout=60.0, wait=600.0)
    assert all(s == "ok" for s, _ in out.values()), out
    assert out[0][1] == "rounds [0, 1, 2]", out
    assert sharded.load_full(tmp_path / "ck", torch.device("cpu"))["round"] == 3


def _other_records(rank: int, tmp: str) -> str:
    try:  # the records file is another run's: rank 0 finds out, every rank refuses
        tf.run("sgp", "ring", "digits", "logistic", 3, lr=0.1,
               resume=_paths(tmp)["checkpoint_path"], **KW,
               **{**_paths(tmp), "records_path": os.path.join(tmp, "other.jsonl")})
    except CheckpointError as exc:
        return f"refused: {exc}"
    return "resumed"


def test_a_records_file_of_another_run_is_refused_on_every_rank(tmp_path: Path) -> None:
    tmp = str(tmp_path)
    out = launch(2, _first, tmp, timeout=60.0, wait=600.0)
    assert all(s == "ok" for s, _ in out.values()), out
    tf.run("sgp", "ring", "digits", "logistic", 2, lr=0.3, n_clients=N, seed=0,
           dtype="float64", batch_size=8, progress=False, spectral=False, run_id="c",
           records_path=str(tmp_path / "other.jsonl"))
    out = launch(2, _other_records, tmp, timeout=60.0, wait=600.0)
    assert all(s == "ok" for s, _ in out.values()), out
    assert out[0][1] == out[1][1] and "holds another run" in out[0][1], out
