"""No child process outlives the command that started it (issue 47: a ``topofl plan`` stopped
by a timeout left its probe child running at 100 % CPU, minutes after the parent was gone).
The children a command starts run :func:`topofl._utils.processes.orphan_guard` first: when the
parent ends, by SIGTERM (a timeout's) or SIGKILL, the kernel ends the child (Linux:
``PR_SET_PDEATHSIG``), and a thread watching the parent pid does elsewhere."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import topofl as tf

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="reads the process table from /proc")

ROOT = str(Path(tf.__file__).resolve().parents[1])
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    p for p in (ROOT, os.environ.get("PYTHONPATH", "")) if p)}


def _children(pid: int) -> list[int]:
    """The pids whose parent is ``pid`` (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(entry))
    return out


def _running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_for(what: str, ok: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ok():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError(f"{what} after {timeout} s")


def _stop(parent: subprocess.Popen[bytes], sig: int, child: int) -> None:
    """Stop ``parent`` with ``sig`` and check that ``child`` ends with it."""
    try:
        parent.send_signal(sig)
        parent.wait(30)
        _wait_for(f"the child {child} still runs", lambda: not _running(child), 60)
    finally:
        if _running(child):  # never leave it behind, whatever the test found
            os.kill(child, signal.SIGKILL)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill", "term"])
def test_a_guarded_child_ends_with_its_parent(sig: int) -> None:
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import subprocess, sys, time
        from topofl._utils.processes import orphan_guard
        child = subprocess.Popen([sys.executable, "-c", orphan_guard()
                                  + "print('guarded', flush=True); import time; time.sleep(300)"])
        print(child.pid, flush=True)
        time.sleep(300)
        """)], stdout=subprocess.PIPE, env=ENV)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert parent.stdout.readline() == b"guarded\n"  # the child's, past its guard
        assert _running(child) and child in _children(parent.pid)
    except BaseException:
        parent.kill()
        raise
    _stop(parent, sig, child)


def test_the_guard_ends_a_child_whose_parent_is_already_gone() -> None:
    """The race: the parent ended before the child set its guard."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    gone = int(done.stdout)
    out = subprocess.run([sys.executable, "-c", "from topofl._utils.processes import "
                          f"die_with_parent; die_with_parent({gone}); print('ran on')"],
                         capture_output=True, text=True, env=ENV, timeout=120)
    assert (out.returncode, out.stdout, out.stderr) == (1, "", "")  # os._exit(1), at once


@pytest.mark.slow  # two plans, each with a probe child that imports torch: ~20 s loaded
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["term", "kill"])
def test_a_stopped_plan_leaves_no_probe_running(tmp_path: Path, sig: int) -> None:
    """``topofl plan`` on a config whose probe round takes minutes (10^6 local steps), stopped
    as ``timeout`` stops it (SIGTERM) or killed: its probe child ends too."""
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"algorithm": "dsgd", "topology": "ring", "n_clients": 2,
                               "rounds": 1, "data": "digits", "model": "logistic",
                               "batch_size": 8, "local_steps": 10**6}))
    plan = subprocess.Popen([sys.executable, "-m", "topofl", "plan", str(cfg), "--no-time"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV,
                            cwd=tmp_path)
    try:
        probes: list[int] = []

        def started() -> bool:
            probes[:] = _children(plan.pid)
            return bool(probes) or plan.poll() is not None

        _wait_for("no probe started", started, 120)
        assert plan.poll() is None and len(probes) == 1, "the plan ended before its probe"
        time.sleep(3.0)  # the probe has run its guard and is in its long round
        assert _running(probes[0])
    except BaseException:
        plan.kill()
        for pid in _children(plan.pid):
            os.kill(pid, signal.SIGKILL)
        raise
    _stop(plan, sig, probes[0])


#: Modules of the user's in the current folder whose names the library imports: a child that
#: imports them fails with this message (the json.py of issue "bench: module 'json' has no
#: attribute 'JSONEncoder'").
_SHADOWS = {"json.py": "raise ImportError('the json.py of the current folder was imported')\n",
            "torch.py": "raise ImportError('the torch.py of the current folder was imported')\n"}


def test_a_child_command_imports_nothing_from_the_current_folder(tmp_path: Path) -> None:
    """A ``json.py`` and a ``torch.py`` in the child's working folder: ``python -c`` imports
    them (the current folder first on ``sys.path``); a :func:`child_command` child imports the
    standard library's and torch, keeps its arguments and its working folder, and ends with
    its parent (the guard ran: it imported ``topofl._utils.processes``)."""
    from topofl._utils.processes import child_command

    for name, text in _SHADOWS.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    program = ("import json, os, sys, torch\n"
               "print(json.dumps([json.__file__, torch.__file__, os.getcwd(), sys.argv[1:],"
               " 'topofl._utils.processes' in sys.modules, '' in sys.path]))\n")
    plain = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, env=ENV,
                           capture_output=True, text=True, timeout=300)
    assert plain.returncode == 1 and "the json.py of the current folder" in plain.stderr
    out = subprocess.run(child_command(program, "a", "b c"), cwd=tmp_path, env=ENV,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    json_file, torch_file, cwd, argv, guarded, cwd_on_path = json.loads(out.stdout)
    assert Path(json_file).parent != tmp_path and Path(torch_file).parent.parent != tmp_path
    assert Path(cwd) == tmp_path and argv == ["a", "b c"] and guarded and not cwd_on_path


def test_a_child_command_imports_the_parents_topofl(tmp_path: Path) -> None:
    """Without ``PYTHONPATH`` the child still imports this ``topofl`` (the folder it is in is
    put on the path when it is not there), whatever its working folder."""
    from topofl._utils.processes import child_command

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(child_command("import topofl; print(topofl.__file__)"),
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()) == Path(tf.__file__).resolve()
