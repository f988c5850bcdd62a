"""A rank that dies or hangs stops the run: the others raise a DistributedError that names the
round and the silent rank, within the process group's timeout."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

import topofl as tf
from tests.distributed._launch import launch
from topofl.distributed import DistributedError
from topofl.engine.protocol import Round, Sent, Services, State

N = 4


def _faulty(kind: str, rank: int) -> Any:
    """D-SGD whose rank 1 dies (or sleeps past the timeout) in round 2's communication."""
    algo = tf.algorithms.dsgd(0.1)
    comm = algo.communicate

    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        if rank == 1 and rnd.t == 2:
            if kind == "die":
                os._exit(3)
            time.sleep(12.0)
        return comm(state, rnd, env)

    return algo._replace(communicate=communicate)


def _job(rank: int, kind: str) -> str:
    t0 = time.monotonic()
    try:
        tf.run(_faulty(kind, rank), tf.topologies.ring(N), "digits", "logistic", 5,
               n_clients=N, batch_size=4, progress=False, spectral=False)
    except DistributedError as exc:
        return f"{time.monotonic() - t0:.1f}s {exc}"
    return "finished"


@pytest.mark.parametrize("kind", ["die", pytest.param("hang", marks=pytest.mark.distributed)])
def test_a_silent_rank_is_named_with_the_round(kind: str) -> None:
    out = launch(2, _job, kind, timeout=4.0, wait=120.0, grace=20.0)
    status, msg = out[0]
    assert status == "ok", out
    assert "round 2 on rank 0 of 2" in msg and "rank 1 stopped answering" in msg, msg
    if kind == "die":
        assert out[1] == ("exit", 3)
    # bounded: the timeout (4 s) plus the survivors' announcement wait (3 s) and slack
    assert float(msg.split("s ", 1)[0]) < 60.0, msg
