"""The temporary file a checkpoint save killed midway leaves beside its path (issue 47: a
hidden half-size ``.<name>.topofl-tmp-<pid>-<hex>`` that no later run removed) is removed by
the next save to that path, when its writer is gone; a live writer's file never is."""

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
from topofl._fs import ORPHAN_AGE, ORPHAN_MAX_AGE, TMP_MARK, _running, remove_orphans
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
    assert made[0].name == f".ck.pt{TMP_MARK}{writer.pid}-{made[0].name[-16:]}"
    assert remove_orphans(ck) == []  # written to less than ORPHAN_AGE ago: not yet
    _age(made[0], ORPHAN_AGE + 1)
    tf.run("dsgd", "ring", "digits", "logistic", 1, n_clients=4, batch_size=4, progress=False,
           spectral=False, checkpoint_every=1, checkpoint_path=str(ck))
    assert [p.name for p in tmp_path.iterdir()] == ["ck.pt"]
