"""Sharded checkpoints: a run checkpointed on 2 ranks resumes on 3 ranks and in one process
with the records of the uninterrupted run."""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import topofl as tf
from tests.distributed._launch import launch
from topofl.distributed import checkpoint as sharded
from topofl.records.columns import copy_records

N, ROUNDS = 6, 3  # checkpoints at round 2 only: the resumed runs write none
KW: dict[str, Any] = dict(n_clients=N, seed=0, dtype="float64", batch_size=8,
                          model_params={"hidden": [8]}, progress=False, run_id="r",
                          checkpoint_every=2)


class Stop(Exception):
    """The crash that interrupts the first run."""


def _algo(crash_at: int | None = None) -> Any:
    """SGP with momentum (weights and momentum buffers to checkpoint); ``crash_at``: raise at
    that round's start (after the checkpoint of the round before)."""
    algo = tf.algorithms.sgp(0.1, momentum=0.5)
    start = algo.round_start

    def round_start(state: Any, rnd: Any, env: Any) -> None:
        if rnd.t == crash_at:
            raise Stop(f"stopped at round {rnd.t}")
        start(state, rnd, env)

    return algo._replace(round_start=round_start)


def _topo() -> Any:
    return tf.topologies.random_directed(N, 2, seed=1, mode="push")  # time-varying, push-sum


def _rows(res: Any) -> dict[tuple[Any, ...], Any]:
    rows = getattr(res, "records", res).rows  # a Result or Records
    return {(r["round"], r["client"], r["metric"]): r["value"] for r in rows
            if r["metric"] != "wall_time"}


def _close(a: dict[tuple[Any, ...], Any], b: dict[tuple[Any, ...], Any]) -> bool:
    assert set(a) == set(b), set(a) ^ set(b)
    return all((abs(a[k] - b[k]) <= 1e-10 * max(1.0, abs(a[k])) or
                (math.isnan(a[k]) and math.isnan(b[k]))) if isinstance(a[k], float)
               else a[k] == b[k] for k in a)


def _paths(tmp: str) -> dict[str, str]:
    return {"checkpoint_path": os.path.join(tmp, "ck"),
            "records_path": os.path.join(tmp, "run.jsonl")}


def _crash(rank: int, tmp: str) -> str:
    try:
        tf.run(_algo(crash_at=2), _topo(), "digits", "mlp", ROUNDS, **KW, **_paths(tmp))
    except Stop as exc:
        return str(exc)
    return "not stopped"


def _resume(rank: int, tmp: str) -> dict[tuple[Any, ...], Any]:
    res = tf.run(_algo(), _topo(), "digits", "mlp", ROUNDS, resume=_paths(tmp)["checkpoint_path"],
                 **KW, **_paths(tmp))
    return _rows(res)


@pytest.mark.distributed
def test_sharded_checkpoint_resumes_on_other_ranks_and_in_one_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp = str(tmp_path)
    whole = _rows(tf.run(_algo(), _topo(), "digits", "mlp", ROUNDS, **KW,
                         checkpoint_path=str(tmp_path / "whole")))
    out = launch(2, _crash, tmp, timeout=60.0, wait=600.0)
    assert all(s == "ok" and v == "stopped at round 2" for s, v in out.values()), out
    ck = tmp_path / "ck"
    assert sharded.is_sharded(ck) and not (tmp_path / "ck.tmp").exists()
    full = sharded.load_full(ck, torch.device("cpu"))
    assert full["round"] == 2 and full["state"]["x"].shape[0] == N
    assert float(full["state"]["weight"].sum()) == pytest.approx(N, abs=1e-9)  # mass kept
    backup = tmp_path / "ck_round2"
    shutil.copytree(ck, backup)
    copy_records(tmp_path / "run.jsonl", tmp_path / "run_round2.jsonl")

    # on 3 ranks (each reads the runs of ids that hold its clients): the uninterrupted records
    out3 = launch(3, _resume, tmp, timeout=60.0, wait=600.0)
    assert all(s == "ok" for s, _ in out3.values()), out3
    assert _close(whole, out3[0][1])
    assert _close(whole, _rows(tf.records.load(tmp_path / "run.jsonl")))

    # in one process: the engine's own loader reads a sharded directory (load_full)
    shutil.rmtree(ck)
    shutil.copytree(backup, ck)
    copy_records(tmp_path / "run_round2.jsonl", tmp_path / "run.jsonl", overwrite=True)
    one = tf.run(_algo(), _topo(), "digits", "mlp", ROUNDS, resume=str(ck), **KW,
                 **_paths(tmp))
    assert _close(whole, _rows(one))


def test_runs_of_ids() -> None:
    assert sharded.runs(np.array([3])) == [(3, 4)]
    assert sharded.runs(np.array([0, 2, 3, 4, 9])) == [(0, 1), (2, 5), (9, 10)]
