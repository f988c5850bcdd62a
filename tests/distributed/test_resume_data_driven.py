"""The data-driven algorithms' state (loss arrays, recency, candidate and collaboration graphs,
learned graph rows) is sharded by client: a run checkpointed on 2 ranks resumes on 3 ranks
and in one process with the records of the uninterrupted run."""

from __future__ import annotations

import functools
import math
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch

import topofl as tf
from tests.distributed._launch import launch
from topofl.distributed import checkpoint as sharded
from topofl.records.columns import copy_records

N, ROUNDS = 6, 3  # checkpoints at round 2 only: the resumed runs write none
KW: dict[str, Any] = dict(seed=0, dtype="float64", batch_size=8, model_params={"hidden": [8]},
                          progress=False, run_id="r", checkpoint_every=2)
CASES: dict[str, dict[str, Any]] = {
    "pfeddst": dict(peers=2, local_steps=2, head_steps=1, peer_accuracy="val"),
    "dpfl": dict(budget=2, tau_init=0.1, local_steps=2, refresh_every=2, select="best_val"),
    "pfedgraph": dict(local_steps=2, participation=0.5),
}


class Stop(Exception):
    """The crash that interrupts the first run."""


def _algo(name: str, crash_at: int | None = None) -> Any:
    algo = tf.algorithms.ALGORITHMS[name](**CASES[name])
    start = algo.round_start

    def round_start(state: Any, rnd: Any, env: Any) -> None:
        if rnd.t == crash_at:
            raise Stop(f"stopped at round {rnd.t}")
        start(state, rnd, env)

    return algo._replace(round_start=round_start)


@functools.lru_cache(maxsize=1)
def _data() -> Any:
    return tf.data.federate("digits", "dirichlet", N, alpha=1.0, seed=0, val=0.1)


def _topo(name: str) -> Any:
    return tf.topologies.ring(N) if name == "pfeddst" else None


def _rows(res: Any) -> dict[tuple[Any, ...], Any]:
    rows = getattr(res, "records", res).rows
    return {(r["round"], r["client"], r["metric"]): r["value"] for r in rows
            if r["metric"] != "wall_time"}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-10 * max(1.0, abs(a))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(u, v) for u, v in zip(a, b))
    return bool(a == b)


def _check(a: dict[tuple[Any, ...], Any], b: dict[tuple[Any, ...], Any]) -> None:
    assert set(a) == set(b), set(a) ^ set(b)
    bad = {k: (a[k], b[k]) for k in a if not _same(a[k], b[k])}
    assert not bad, bad


def _paths(tmp: str) -> dict[str, str]:
    return {"checkpoint_path": os.path.join(tmp, "ck"),
            "records_path": os.path.join(tmp, "run.jsonl")}


def _crash(rank: int, name: str, tmp: str) -> str:
    try:
        tf.run(_algo(name, crash_at=2), _topo(name), _data(), "mlp", ROUNDS, **KW,
               **_paths(tmp))
    except Stop as exc:
        return str(exc)
    return "not stopped"


def _resume(rank: int, name: str, tmp: str) -> dict[tuple[Any, ...], Any]:
    res = tf.run(_algo(name), _topo(name), _data(), "mlp", ROUNDS,
                 resume=_paths(tmp)["checkpoint_path"], **KW, **_paths(tmp))
    return _rows(res)


@pytest.mark.distributed
@pytest.mark.parametrize("name", sorted(CASES))
def test_checkpoint_on_two_ranks_resumes_on_three_and_in_one_process(
        name: str, tmp_path: Path) -> None:
    tmp = str(tmp_path)
    whole = _rows(tf.run(_algo(name), _topo(name), _data(), "mlp", ROUNDS, **KW,
                         checkpoint_path=str(tmp_path / "whole")))
    out = launch(2, _crash, name, tmp, timeout=60.0, wait=600.0)
    assert all(s == "ok" and v == "stopped at round 2" for s, v in out.values()), out
    ck = tmp_path / "ck"
    full = sharded.load_full(ck, torch.device("cpu"))
    # every per-client array came back whole: [n, ...] rows, as one process holds them
    assert full["round"] == 2 and full["state"]["x"].shape[0] == N
    assert all(v.shape[0] == N for v in full["state"].values() if v.dim())
    backup = tmp_path / "ck_round2"
    shutil.copytree(ck, backup)
    copy_records(tmp_path / "run.jsonl", tmp_path / "run_round2.jsonl")

    out3 = launch(3, _resume, name, tmp, timeout=60.0, wait=600.0)
    assert all(s == "ok" for s, _ in out3.values()), out3
    _check(whole, out3[0][1])

    shutil.rmtree(ck)
    shutil.copytree(backup, ck)
    copy_records(tmp_path / "run_round2.jsonl", tmp_path / "run.jsonl", overwrite=True)
    one = tf.run(_algo(name), _topo(name), _data(), "mlp", ROUNDS, resume=str(ck), **KW,
                 **_paths(tmp))
    _check(whole, _rows(one))
