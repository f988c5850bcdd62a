"""A distributed run touches only what topofl made beside its checkpoint: a user's folder at
``<checkpoint_path>.tmp`` survives every sharded save (their temporaries are folders of their
own, ``.<name>.topofl-tmp-...``), and a user's ``<checkpoint_path>.old``, where a sharded save
moves the previous checkpoint, is refused before the run, naming it, and left as it was."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

import topofl as tf
from tests.distributed._launch import launch
from topofl.distributed import checkpoint as sharded
from topofl.exceptions import OutputExistsError

N = 6
KW: dict[str, Any] = dict(n_clients=N, seed=0, dtype="float64", batch_size=8, progress=False,
                          spectral=False, run_id="u", checkpoint_every=1, lr=0.1)


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): "<dir>" if p.is_dir() else p.read_bytes().hex()
            for p in sorted(folder.rglob("*"))}


def _runs(rank: int, tmp: str) -> tuple[str, str]:
    # three rounds, a sharded save each: the second and third move the previous one to .old
    tf.run("dsgd", "ring", "digits", "logistic", 3, **KW,
           checkpoint_path=os.path.join(tmp, "a", "ck"),
           records_path=os.path.join(tmp, "a", "r.jsonl"))
    try:
        tf.run("dsgd", "ring", "digits", "logistic", 1, **KW,
               checkpoint_path=os.path.join(tmp, "b", "ck"),
               records_path=os.path.join(tmp, "b", "r.jsonl"))
    except OutputExistsError as exc:
        return "ran", str(exc)
    return "ran", "not refused"


def test_a_users_tmp_survives_sharded_saves_and_a_users_old_is_refused(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "ck.tmp" / "sub").mkdir(parents=True)
    (a / "ck.tmp" / "sub" / "notes.txt").write_text("mine")
    (a / "ck.tmp" / "topofl.json").write_text("{}")  # even one that looks like ours
    (b / "ck.old").mkdir(parents=True)
    (b / "ck.old" / "keep.txt").write_text("mine too")
    before = _tree(tmp_path)
    out = launch(2, _runs, str(tmp_path), timeout=60.0, wait=600.0)
    assert all(s == "ok" for s, _ in out.values()), out
    for _, (ran, msg) in out.values():
        assert ran == "ran" and msg.startswith(f"checkpoint_path {b / 'ck'}: "), msg
        assert f"{b / 'ck.old'} is not a topofl checkpoint: it is not replaced" in msg, msg
        assert "\n" not in msg
    after = _tree(tmp_path)
    assert {k: after[k] for k in before} == before  # the user's files, as they were
    assert sharded.load_full(a / "ck", torch.device("cpu"))["round"] == 3
    # no temporary folder, no .old left; nothing written for the refused run
    assert sorted(p.name for p in a.iterdir()) == ["ck", "ck.tmp", "r.clients.arrows",
                                                   "r.jsonl"]
    assert sorted(p.name for p in b.iterdir()) == ["ck.old"]
