"""A records header's run hash is checked against the run it describes before it is trusted:
by ``topofl run --replay`` (a replaced hash would replay as "reproduced") and by a resume
(which accepts a records file by its hash)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import topofl as tf
from topofl.cli import main
from topofl.cli.runs import _other_run
from topofl.config import ConfigError
from topofl.engine.config import header_hash_problem, run_hash
from topofl.exceptions import CheckpointError

KW: dict[str, Any] = dict(n_clients=4, batch_size=4, progress=False, spectral=False,
                          run_id="h", lr=0.1)


def _run(path: Path, rounds: int = 2, **kw: Any) -> Any:
    return tf.run("dsgd", "ring", "digits", "logistic", rounds, **{**KW, **kw},
                  records_path=str(path))


def _edit_header(path: Path, edit: Any) -> None:
    lines = path.read_text().splitlines()
    head = json.loads(lines[0])
    edit(head)
    path.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")


def test_a_replaced_run_hash_is_not_replayed(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    rec = tmp_path / "r.jsonl"
    _run(rec)
    head = json.loads(rec.read_text().splitlines()[0])
    assert header_hash_problem(head) is None  # as written: the hash of its description
    assert main(["run", "--replay", str(rec)]) == 0
    assert "reproduced" in capsys.readouterr().out

    def replace(h: dict[str, Any]) -> None:
        h["engine"]["run_hash"] = "0123456789abcdef"

    _edit_header(rec, replace)
    assert main(["run", "--replay", str(rec)]) == 2
    captured = capsys.readouterr()
    assert "reproduced" not in captured.out
    err = captured.err
    assert err.count("\n") == 1 and "run hash 0123456789abcdef is not the hash of the run the " \
        f"header describes ({head['engine']['run_hash']}" in err, err
    with pytest.raises(ConfigError, match="is not the hash of the run the header describes"):
        tf.config.replay(rec)


def test_a_distributed_header_checks_without_its_placement() -> None:
    desc = {"run": {"seed": 0, "rounds": 3}, "algorithm": {"name": "dsgd", "lr": 0.1}}
    engine = {**desc, "run_hash": run_hash(desc),
              "distributed": {"world_size": 2, "placement": {"rule": "blocks"}}}
    assert header_hash_problem({"engine": engine}) is None
    assert header_hash_problem({"config": engine}) is None  # tf.engine.run's header
    assert header_hash_problem({"config": {"lr": 0.1}}) is None  # no hash: nothing to check
    wrong = {**engine, "algorithm": {"name": "dsgd", "lr": 0.2}}
    assert "recomputed from its 'engine' entry" in str(header_hash_problem({"engine": wrong}))


def test_resume_does_not_trust_a_replaced_run_hash(tmp_path: Path) -> None:
    """A records file of another run (another lr), its hash replaced by the checkpoint's run's:
    continuing it would mix the two runs' rows under one header."""
    ck = tmp_path / "ck.pt"
    _run(tmp_path / "a.jsonl", checkpoint_every=1, checkpoint_path=str(ck))
    mine = json.loads((tmp_path / "a.jsonl").read_text().splitlines()[0])["engine"]["run_hash"]
    other = tmp_path / "b.jsonl"
    _run(other, lr=0.5)

    def replace(h: dict[str, Any]) -> None:
        h["engine"]["run_hash"] = mine

    _edit_header(other, replace)
    before = other.read_bytes()
    with pytest.raises(CheckpointError, match=r"b.jsonl: its header's run hash [0-9a-f]{16} is "
                                              r"not the hash of the run the header describes"):
        _run(other, rounds=3, resume=str(ck), checkpoint_every=1, checkpoint_path=str(ck))
    assert other.read_bytes() == before
    # its own records file continues
    res = _run(tmp_path / "a.jsonl", rounds=3, resume=str(ck), checkpoint_every=1,
               checkpoint_path=str(ck))
    assert max(r["round"] for r in res.records.rows) == 2


def test_a_replay_of_another_run_is_not_reproduced() -> None:
    """The rows alone could agree (settings that do not change them); the run hash says
    whether the replay ran the run the header describes (versions aside)."""
    desc = {"run": {"seed": 0, "executor": "auto"}, "algorithm": {"lr": 0.1},
            "versions": {"torch": "2.0"}}
    stored = {**desc, "run_hash": run_hash(desc)}
    same = {**desc, "versions": {"torch": "9.9"}}
    assert _other_run(stored, {**same, "run_hash": run_hash(same)}) is None
    other = {**desc, "run": {"seed": 0, "executor": "loop"}}
    msg = _other_run(stored, {**other, "run_hash": run_hash(other)})
    assert msg is not None and "run.executor: expected 'auto', found 'loop'" in msg, msg
    assert _other_run(None, other) is None  # a header without an engine part
