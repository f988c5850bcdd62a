"""The temporary file a checkpoint save killed midway leaves beside its path (issue 47: a
hidden half-size ``.<name>.topofl-tmp-<pid>-<hex>`` that no later run removed) is removed by
the next save to that path, when its writer is gone; a live writer's file never is.

A name carries its writer's machine (:func:`~topofl._utils.files.machine_token`): a dead writer of
this machine is gone for sure, so its file goes at once, by the next save or by a run that
checkpoints to the path when it starts or resumes (before: only once untouched for a minute,
so a kill and a resume within a minute left one more file each time)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import topofl as tf
from topofl._utils.files import (
    ORPHAN_AGE,
    ORPHAN_MAX_AGE,
    TMP_MARK,
    _running,
    machine_token,
    private_sibling,
    remove_orphans,
)
from topofl.engine.checkpoint import load_checkpoint, save_checkpoint

_HEX = "0123456789abcdef"


def _dead_pid() -> int:
    """The pid of a process that has ended (and been waited for)."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    pid = int(done.stdout)
    if _running(pid):  # pragma: no cover - taken again at once
        pytest.skip(f"pid {pid} was taken again")
    return pid


def _age(path: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


def _tmp(folder: Path, target: str, pid: int | str, token: str = _HEX) -> Path:
    return folder / f".{target}{TMP_MARK}{pid}-{token}"


def _writer(pid: int, machine: str | None = None) -> str:
    """``<pid>-<machine>`` as a writer names its files (this machine's by default)."""
    machine = machine_token() if machine is None else machine
    return str(pid) if machine is None else f"{pid}-{machine}"


def test_a_save_removes_the_orphans_of_dead_writers_and_keeps_the_others(
        tmp_path: Path) -> None:
    ck = tmp_path / "ck.pt"
    save_checkpoint(ck, {"round": 1, "x": tf.topologies.ring(4).W.toarray().tolist()})
    half = ck.read_bytes()[: ck.stat().st_size // 2]
    dead = _dead_pid()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        orphan = _tmp(tmp_path, "ck.pt", dead)  # the case: half a checkpoint
        orphan.write_bytes(half)
        folder = _tmp(tmp_path, "ck.pt", dead, "fedcba9876543210")  # a sharded save's
        (folder / "rank0").mkdir(parents=True)
        (folder / "rank0" / "part.pt").write_bytes(half)
        stale = _tmp(tmp_path, "ck.pt", live.pid, "00000000000000ff")  # pid taken again
        stale.write_bytes(half)
        kept = {
            "a live writer's": _tmp(tmp_path, "ck.pt", live.pid),
            "this process's": _tmp(tmp_path, "ck.pt", os.getpid()),
            "a dead writer's, written to just now": _tmp(tmp_path, "ck.pt", dead, "1" * 16),
            "another path's": _tmp(tmp_path, "other.pt", dead),
            "a user's, not topofl's pattern": tmp_path / f".ck.pt{TMP_MARK}notes",
            "a user's visible one": tmp_path / "ck.pt.tmp",
        }
        for path in kept.values():
            path.write_bytes(half)
        for path in (orphan, folder, stale, *kept.values()):
            _age(path, 2 * ORPHAN_AGE)
        _age(stale, ORPHAN_MAX_AGE + 60)  # untouched for over a day: no save is that long
        os.utime(kept["a dead writer's, written to just now"])
        save_checkpoint(ck, {"round": 2})
        assert load_checkpoint(ck)["round"] == 2
        left = {p.name for p in tmp_path.iterdir()}
        assert not {orphan.name, folder.name, stale.name} & left
        assert left == {"ck.pt", *(p.name for p in kept.values())}
        for what, path in kept.items():
            assert path.read_bytes() == half, what
    finally:
        live.kill()
        live.wait()


@pytest.mark.slow  # a child that imports torch, then a run: about 7 s on a loaded 2-core VM
def test_a_run_that_owns_the_path_removes_the_orphan_of_a_killed_save(tmp_path: Path) -> None:
    """A real orphan: a writer killed with SIGKILL between its write and its rename; the
    next run checkpointing to that path removes it."""
    ck = tmp_path / "ck.pt"
    writer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import os, time
        from topofl.engine import checkpoint
        os.replace = lambda *a: time.sleep(600)  # killed before the rename
        checkpoint.save_checkpoint({str(ck)!r}, {{"round": 1, "x": list(range(10**5))}})
        """)], env={**os.environ, "PYTHONPATH": str(Path(tf.__file__).parents[1])})
    try:
        deadline = time.monotonic() + 60
        made: list[Path] = []
        while not made and time.monotonic() < deadline and writer.poll() is None:
            made = [p for p in tmp_path.iterdir() if p.name.startswith(".ck.pt" + TMP_MARK)]
            time.sleep(0.05)
        assert made, "the writer made no temporary file"
        size = -1
        while size != made[0].stat().st_size:  # until its write (and fsync) is over
            size = made[0].stat().st_size
            time.sleep(0.2)
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait(30)
    assert not ck.exists() and made[0].exists() and size > 0
    assert made[0].name == _tmp(tmp_path, "ck.pt", _writer(writer.pid), made[0].name[-16:]).name
    # its writer ran here and is gone: removed at once, though it was written to just now
    tf.run("dsgd", "ring", "digits", "logistic", 1, n_clients=4, batch_size=4, progress=False,
           spectral=False, checkpoint_every=1, checkpoint_path=str(ck))
    assert [p.name for p in tmp_path.iterdir()] == ["ck.pt"]


def test_a_dead_writer_of_this_machine_is_gone_at_once_others_wait(tmp_path: Path) -> None:
    here = machine_token()
    if here is None:  # pragma: no cover - not Linux: every name waits ORPHAN_AGE
        pytest.skip("no machine token here (no /proc boot id and pid namespace)")
    other = "0" * 8 if here != "0" * 8 else "1" * 8
    dead = _dead_pid()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        gone = _tmp(tmp_path, "ck.pt", _writer(dead))  # written to just now, its writer gone
        kept = {
            "a live writer's of this machine": _tmp(tmp_path, "ck.pt", _writer(live.pid)),
            "this process's": _tmp(tmp_path, "ck.pt", _writer(os.getpid())),
            "another machine's, written to just now": _tmp(tmp_path, "ck.pt",
                                                           _writer(dead, other)),
            "without a machine, written to just now": _tmp(tmp_path, "ck.pt", dead, "2" * 16),
            "another path's": _tmp(tmp_path, "other.pt", _writer(dead)),
        }
        late = _tmp(tmp_path, "ck.pt", _writer(dead, other), "3" * 16)
        for path in (gone, late, *kept.values()):
            path.write_bytes(b"half a checkpoint")
        _age(late, ORPHAN_AGE + 1)  # another machine's writer: gone once untouched a minute
        assert sorted(remove_orphans(tmp_path / "ck.pt")) == sorted([gone, late])
        assert {p.name for p in tmp_path.iterdir()} == {p.name for p in kept.values()}
    finally:
        live.kill()
        live.wait()


def _half_save(tmp_path: Path) -> tuple[Path, bytes]:
    """A checkpoint of round 2 of a small run, and beside it the half-size temporary file a
    save of it killed midway on this machine leaves (written to just now)."""
    ck = tmp_path / "ck.pt"
    tf.run("dsgd", "ring", "digits", "logistic", 2, n_clients=4, batch_size=4, progress=False,
           spectral=False, checkpoint_every=2, checkpoint_path=str(ck))
    whole = ck.read_bytes()
    orphan = tmp_path / private_sibling(ck).name.replace(str(os.getpid()), str(_dead_pid()), 1)
    for p in tmp_path.iterdir():
        if p.name.startswith(".ck.pt" + TMP_MARK):
            p.unlink()  # private_sibling's own empty file
    orphan.write_bytes(whole[: len(whole) // 2])
    return orphan, whole


def test_a_save_right_after_a_killed_save_removes_its_leftover(tmp_path: Path) -> None:
    # before: kept for a minute (and for good if no save came within the run)
    orphan, whole = _half_save(tmp_path)
    save_checkpoint(tmp_path / "ck.pt", {"round": 9})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.pt"]
    assert load_checkpoint(tmp_path / "ck.pt")["round"] == 9


def test_a_resume_removes_the_leftover_of_a_save_killed_midway(tmp_path: Path) -> None:
    # before: a resume that made no save of its own (3 rounds, a checkpoint every 2) left it
    orphan, whole = _half_save(tmp_path)
    ck = tmp_path / "ck.pt"
    res = tf.run("dsgd", "ring", "digits", "logistic", 3, n_clients=4, batch_size=4,
                 progress=False, spectral=False, checkpoint_every=2, checkpoint_path=str(ck),
                 resume=str(ck))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.pt"]
    assert ck.read_bytes() == whole and load_checkpoint(ck)["round"] == 2  # intact, untouched
    assert res.records.rows[-1]["round"] == 2


_KILLED_MID_SAVE = """
import sys, time
import topofl as tf
from topofl.engine import checkpoint

real = checkpoint._write
calls = []


def half(path, body):  # the second save writes half its file, then hangs (a slow disk)
    calls.append(path)
    if len(calls) < 2:
        return real(path, body)
    real(path, body)
    data = open(path, "rb").read()
    with open(path, "wb") as fh:
        fh.write(data[: len(data) // 2])
        fh.flush()
    print("mid-save", flush=True)
    time.sleep(600)


checkpoint._write = half
tf.run("dsgd", "ring", "digits", "logistic", 4, n_clients=4, batch_size=4, progress=False,
       spectral=False, checkpoint_every=1, checkpoint_path=sys.argv[1])
"""


@pytest.mark.slow  # two children that import torch and run, then a resume: about 10 s
def test_saves_killed_midway_then_a_resume_leave_only_the_checkpoint(tmp_path: Path) -> None:
    """Real kills: a run whose second save is killed (SIGKILL) with half its file written,
    twice in a row, then resumed at once: one file beside the checkpoint after each kill (the
    second run's first save removed the first's), none after the resume."""
    ck = tmp_path / "ck.pt"
    env = {**os.environ, "PYTHONPATH": str(Path(tf.__file__).parents[1])}
    for _ in range(2):
        child = subprocess.Popen([sys.executable, "-c", _KILLED_MID_SAVE, str(ck)],
                                 stdout=subprocess.PIPE, text=True, env=env)
        try:
            assert child.stdout is not None and child.stdout.readline() == "mid-save\n"
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(30)
        left = [p for p in tmp_path.iterdir() if p.name != "ck.pt"]
        assert len(left) == 1 and 0 < left[0].stat().st_size < ck.stat().st_size
        assert load_checkpoint(ck)["round"] == 1  # the first save's, whole
    res = tf.run("dsgd", "ring", "digits", "logistic", 4, n_clients=4, batch_size=4,
                 progress=False, spectral=False, checkpoint_every=1, checkpoint_path=str(ck),
                 resume=str(ck))
    assert [p.name for p in tmp_path.iterdir()] == ["ck.pt"]
    assert load_checkpoint(ck)["round"] == 4 and res.records.rows[-1]["round"] == 3
