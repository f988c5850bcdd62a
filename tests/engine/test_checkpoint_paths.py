"""A checkpoint write never destroys what it was not asked to: colliding ``records_path`` and
``checkpoint_path`` are refused before anything is written, ``checkpoint_path`` is guarded
as ``records_path`` is (replaced only when it holds a checkpoint of this run, or with
``overwrite``; a folder that is not a checkpoint, never), and what the user keeps beside it
(``<checkpoint_path>.tmp``, ``.old``) is neither written over nor removed: the writes'
temporary files have names of their own and only they are removed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import torch

import topofl as tf
from topofl._utils.files import TMP_MARK, machine_token, private_sibling
from topofl.cli import main
from topofl.config import OutputExistsError
from topofl.distributed.checkpoint import checkpoint_target_problem, save_any
from topofl.engine import RunConfig
from topofl.engine.checkpoint import check_output_paths, load_checkpoint, save_checkpoint

SMALL: dict[str, Any] = dict(n_clients=4, batch_size=4, progress=False, spectral=False,
                             run_id="p", checkpoint_every=1)


def _run(rounds: int = 1, **kw: Any) -> Any:
    return tf.run("dsgd", "ring", "digits", "logistic", rounds, **SMALL, **kw)


def test_records_and_checkpoint_on_the_same_file_are_refused(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "r.jsonl").write_text("the records of an earlier run\n")
    same = [("real/r.jsonl", "real/r.jsonl"),  # plainly
            ("real/r.jsonl", str(tmp_path / "real" / "r.jsonl")),  # relative vs absolute
            ("real/r.jsonl", "link/r.jsonl"),  # through a link
            ("real/r.jsonl", "real/../real/./r.jsonl")]
    for records, ck in same:
        with pytest.raises(ValueError, match="name the same file .*real/r.jsonl"):
            RunConfig(rounds=2, checkpoint_every=2, records_path=records, checkpoint_path=ck)
    with pytest.raises(ValueError, match="name the same file .*real/r.jsonl"):
        _run(records_path="real/r.jsonl", checkpoint_path="link/r.jsonl", overwrite=True)
    # in each other's way: the records inside a (sharded) checkpoint folder or its .old
    for records, ck in [("ck/r.jsonl", "ck"), ("link/ck.old", "real/ck")]:
        with pytest.raises(ValueError, match="in each other's way"):
            RunConfig(rounds=2, checkpoint_every=2, records_path=records, checkpoint_path=ck)
    # the records' rewrite writes a private temporary name, so <records>.tmp is no collision
    check_output_paths("r.jsonl", "r.jsonl.tmp")
    with pytest.raises(ValueError, match="in each other's way"):
        _run(records_path="ck/r.jsonl", checkpoint_path="ck", overwrite=True)
    assert (tmp_path / "real" / "r.jsonl").read_text() == "the records of an earlier run\n"
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["r.jsonl"]
    # apart: fine (and no checkpoint written: no collision to refuse)
    check_output_paths("real/r.jsonl", "real/r.pt")
    check_output_paths("real/r.jsonl", "real/r.jsonl.old")
    check_output_paths("real/ck.tmp", "real/ck")  # a checkpoint's temporary has its own name
    RunConfig(rounds=2, checkpoint_every=0, records_path="a", checkpoint_path="a")


def test_an_unrelated_file_at_checkpoint_path_is_replaced_only_when_asked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "existing.txt"
    other.write_text("not a checkpoint")
    kw = dict(records_path=str(tmp_path / "r.jsonl"), checkpoint_path=str(other))
    with pytest.raises(OutputExistsError, match=r"existing.txt is not a topofl checkpoint; "
                                                r"pass overwrite=True"):
        _run(**kw)
    assert other.read_text() == "not a checkpoint" and not (tmp_path / "r.jsonl").exists()
    # the command line: one line, exit 2, the file kept
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'topology = "ring"\nn_clients = 4\nrounds = 1\nbatch_size = 4\n'
                   f'checkpoint_every = 1\ncheckpoint_path = "{other.as_posix()}"\n')
    assert main(["run", str(cfg), "--out", str(tmp_path / "cli.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "existing.txt is not a topofl checkpoint" in err and err.count("\n") == 1, err
    assert other.read_text() == "not a checkpoint"
    # asked: replaced by the run's checkpoint
    _run(**kw, overwrite=True)
    assert load_checkpoint(other)["round"] == 1


def test_a_checkpoint_of_this_run_is_replaced_and_one_of_another_run_is_guarded(
        tmp_path: Path) -> None:
    ck = str(tmp_path / "ck.pt")
    _run(2, records_path=str(tmp_path / "a.jsonl"), checkpoint_path=ck)
    assert load_checkpoint(ck)["round"] == 2
    # the same run again (rounds may change: same run hash), and resumed: replaced freely
    _run(1, records_path=str(tmp_path / "b.jsonl"), checkpoint_path=ck)
    assert load_checkpoint(ck)["round"] == 1
    _run(3, records_path=str(tmp_path / "b.jsonl"), checkpoint_path=ck, resume=ck)
    assert load_checkpoint(ck)["round"] == 3
    # another run (another lr): refused, naming both run hashes; replaced with overwrite
    before = Path(ck).read_bytes()
    with pytest.raises(OutputExistsError, match=r"holds the checkpoint of another run \(run "
                                                r"hash [0-9a-f]{16}, this run's [0-9a-f]{16}"):
        _run(1, records_path=str(tmp_path / "c.jsonl"), checkpoint_path=ck, lr=0.5)
    assert Path(ck).read_bytes() == before and not (tmp_path / "c.jsonl").exists()
    _run(1, records_path=str(tmp_path / "c.jsonl"), checkpoint_path=ck, lr=0.5, overwrite=True)
    assert load_checkpoint(ck)["config"]["algorithm"]["lr"] == 0.5
    # a damaged checkpoint: guarded too
    Path(ck).write_bytes(Path(ck).read_bytes()[:50])
    with pytest.raises(OutputExistsError, match="is not a topofl checkpoint"):
        _run(1, records_path=str(tmp_path / "d.jsonl"), checkpoint_path=ck)


def test_a_folder_that_is_not_a_checkpoint_is_never_replaced(tmp_path: Path) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    for overwrite in (False, True):
        with pytest.raises(OutputExistsError, match="is a folder that is not a topofl "
                                                    "checkpoint; it is never replaced"):
            _run(records_path=str(tmp_path / "r.jsonl"), checkpoint_path=str(folder),
                 overwrite=overwrite)
    # the writers themselves refuse too (called directly, without the guard): topofl.run's,
    # which replaces only a sharded checkpoint's folder, and the engine's, which no folder
    with pytest.raises(IsADirectoryError, match="is a folder that is not a topofl checkpoint"):
        save_any(folder, {"x": torch.zeros(1)})
    with pytest.raises(IsADirectoryError, match="is a folder, not a checkpoint file"):
        save_checkpoint(folder, {"x": torch.zeros(1)})
    assert [p.name for p in folder.iterdir()] == ["keep.txt"]
    assert not os.path.exists(str(folder) + ".tmp")


def _tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (relative path -> content, ``<dir>`` for a folder)."""
    return {str(p.relative_to(folder)): "<dir>" if p.is_dir() else p.read_bytes().hex()
            for p in sorted(folder.rglob("*"))}


def test_the_users_tmp_and_old_beside_the_checkpoint_survive_a_run(tmp_path: Path) -> None:
    # a folder (with content) at <ck>.tmp and a file at <ck>.old: what a user may keep there
    keep = tmp_path / "ck.pt.tmp"
    (keep / "sub").mkdir(parents=True)
    (keep / "sub" / "notes.txt").write_text("mine")
    (tmp_path / "ck.pt.old").write_text("my backup")
    # and for a second run, a file at <ck>.tmp
    (tmp_path / "other.pt.tmp").write_text("also mine")
    before = _tree(tmp_path)
    ck, other = str(tmp_path / "ck.pt"), str(tmp_path / "other.pt")
    _run(3, records_path=str(tmp_path / "r.jsonl"), checkpoint_path=ck)  # 3 checkpoint writes
    _run(2, records_path=str(tmp_path / "o.jsonl"), checkpoint_path=other)
    _run(4, records_path=str(tmp_path / "r.jsonl"), checkpoint_path=ck, resume=ck)
    assert load_checkpoint(ck)["round"] == 4 and load_checkpoint(other)["round"] == 2
    after = _tree(tmp_path)
    assert {k: after[k] for k in before} == before  # every file of the user's, as it was
    # and nothing else is left: the runs' outputs, no temporary file
    assert set(after) - set(before) == {"ck.pt", "other.pt", "r.jsonl", "o.jsonl",
                                        "r.clients.arrows", "o.clients.arrows"}


def test_a_failed_write_removes_its_own_temporary_file_and_nothing_else(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ck.pt.tmp").write_text("mine")
    save_checkpoint(tmp_path / "ck.pt", {"round": 1})

    def disk_full(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", disk_full)
    with pytest.raises(OSError, match="No space left"):
        save_checkpoint(tmp_path / "ck.pt", {"round": 2})
    with pytest.raises(OSError, match="No space left"):
        save_any(tmp_path / "ck.pt", {"round": 2})
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.pt", "ck.pt.tmp"]
    assert load_checkpoint(tmp_path / "ck.pt")["round"] == 1  # the old one, whole
    assert (tmp_path / "ck.pt.tmp").read_text() == "mine"
    # a payload that cannot be stored: refused before any file is created
    with pytest.raises(TypeError, match="cannot store a object"):
        save_checkpoint(tmp_path / "ck.pt", {"x": object()})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.pt", "ck.pt.tmp"]


def test_temporary_names_are_fresh_hidden_and_created_exclusively(tmp_path: Path) -> None:
    made = {private_sibling(tmp_path / "ck.pt") for _ in range(50)}
    made |= {private_sibling(tmp_path / "ck.pt", folder=True) for _ in range(50)}
    assert len(made) == 100  # never the same name twice, never an existing one
    for p in made:
        assert p.parent == tmp_path and p.name.startswith(".ck.pt" + TMP_MARK)
        pid, *machine, token = p.name.removeprefix(".ck.pt" + TMP_MARK).split("-")
        assert pid == str(os.getpid()) and len(token) == 16 and int(token, 16) >= 0
        assert machine == ([] if machine_token() is None else [machine_token()])
    assert sum(p.is_dir() for p in made) == 50 and sum(p.is_file() for p in made) == 50
    assert all(p.stat().st_size == 0 for p in made if p.is_file())


def test_a_users_old_is_guarded_where_a_sharded_save_would_use_it(tmp_path: Path) -> None:
    # a sharded checkpoint's folder at checkpoint_path (as a distributed run leaves it): its
    # next save moves it to <ck>.old, so a user's <ck>.old is refused, before and at the write
    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "topofl.json").write_text('{"format": "topofl-sharded-checkpoint/2"}')
    (tmp_path / "ck.old").mkdir()
    (tmp_path / "ck.old" / "keep.txt").write_text("mine")
    why = checkpoint_target_problem(ck, "abc", overwrite=True)
    assert why is not None and "ck.old is not a topofl checkpoint: it is not replaced" in why
    assert "\n" not in why
    with pytest.raises(FileExistsError, match=r"ck.old is not a topofl checkpoint"):
        save_any(ck, {"round": 1})
    assert (tmp_path / "ck.old" / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck", "ck.old"]
    # a one-process file checkpoint never uses <ck>.old: nothing to refuse there
    assert checkpoint_target_problem(tmp_path / "f.pt", "abc", overwrite=False) is None
    (tmp_path / "f.pt.old").write_text("mine")
    assert checkpoint_target_problem(tmp_path / "f.pt", "abc", overwrite=False) is None
    # the .old copy an interrupted sharded save left (a topofl checkpoint) is superseded
    (tmp_path / "ck.old" / "keep.txt").unlink()
    (tmp_path / "ck.old" / "topofl.json").write_text('{"format": "topofl-sharded-checkpoint/2"}')
    assert checkpoint_target_problem(ck, "abc", overwrite=True) is None
    save_any(ck, {"round": 1})
    assert load_checkpoint(ck)["round"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck", "f.pt.old"]


def test_a_users_file_beside_the_records_survives_their_rewrite(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    """A resume rewrites the records (cut at the checkpoint's round); a sweep writes its
    finished marker: neither touches the user's <name>.tmp."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r.jsonl.tmp").write_text("mine")
    (tmp_path / "r.jsonl.tmp.d").mkdir()
    _run(2, records_path="r.jsonl", checkpoint_path="r.pt")
    _run(3, records_path="r.jsonl", checkpoint_path="r.pt", resume="r.pt")
    assert (tmp_path / "r.jsonl.tmp").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.clients.arrows", "r.jsonl",
                                                          "r.jsonl.tmp", "r.jsonl.tmp.d",
                                                          "r.pt"]
    out = tmp_path / "sweep"
    out.mkdir()
    (out / "run.done.tmp").write_text("mine too")
    cfg = {k: v for k, v in SMALL.items() if k != "run_id"}
    tf.sweep.run_sweep({"algorithm": "dsgd", "topology": "ring", "rounds": 1, **cfg,
                        "sweep": {"seed": [0]}}, out, progress=False, echo=lambda s: None)
    assert (out / "run.done").exists()
    assert (out / "run.done.tmp").read_text() == "mine too"
