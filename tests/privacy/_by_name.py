"""What the tests of DP by name share: a run on the ring with its records read back, and the
check that the run by name is the wrapper's, bit for bit and hash for hash."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

import topofl as tf
from topofl.records import header_run_hash

RUN: dict[str, Any] = dict(data="digits", model="logistic", n_clients=8, rounds=6,
                           partition="shards", spectral=False, batch_size=16)


def records(tmp: Path, name: str, algorithm: object, run: dict[str, Any] | None = None,
            **kw: object) -> tuple[list, dict]:
    """``(rows, {"header", "result"})`` of ``algorithm`` on the ring with ``run`` (default
    :data:`RUN`) and ``kw``, its records written to ``tmp/<name>.jsonl`` and read back."""
    path = tmp / f"{name}.jsonl"
    res = tf.run(algorithm, "ring", records_path=str(path), **(RUN if run is None else run),
                 **kw)
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    return [x for x in lines if not x.get("header")], {"header": lines[0], "result": res}


def assert_same_run(by_name: list, a: dict, by_hand: list, b: dict) -> None:
    """The two runs (:func:`records`) are one: the same models, rows (times apart, a
    ``dp_epsilon`` among them), hyper-parameters (what the run hash covers) and run hash."""
    assert torch.equal(a["result"].evaluated(), b["result"].evaluated())
    rows = [[(r.get("round"), r.get("client"), r.get("metric"), r.get("value")) for r in recs
             if "time" not in str(r.get("metric"))] for recs in (by_name, by_hand)]
    assert rows[0] == rows[1] and any(r[2] == "dp_epsilon" for r in rows[0])
    assert a["result"].algorithm.hparams == b["result"].algorithm.hparams
    assert header_run_hash(a["header"]) == header_run_hash(b["header"])
