"""The process machinery of a sweep (:mod:`topofl.sweep`) and of the commands that start
child processes: what keeps their processes apart, and none outliving its parent.

A run executes under an advisory lock on a file (:func:`lock`), so that two sweeps over one
folder never write the same files; ``jobs > 1`` runs go to a pool of worker processes
(:func:`worker_pool`) that end with the sweep however it ends, and are ended at once when it
is interrupted; inside :func:`sigterm_raises` a SIGTERM interrupts the main thread the way
Ctrl-C does. A child interpreter a command starts (``topofl plan``'s probe, ``topofl
bench``'s peak-memory rows) is started by :func:`child_command`: it imports nothing from the
current directory (a ``json.py`` or ``torch.py`` of the user's there would shadow the
library's own imports) and runs :func:`orphan_guard`'s lines first, so that it ends with the
command (:func:`die_with_parent`). Nothing here knows what a run is: the sweep passes in what
to call.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import torch

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: runs hold no lock
    fcntl = None  # type: ignore[assignment]

__all__ = ["lock", "sigterm_raises", "worker_pool", "die_with_parent", "orphan_guard",
           "child_command"]


@contextlib.contextmanager
def lock(path: Path) -> Iterator[bool]:
    """Hold an exclusive advisory lock on ``path`` (created) for the block; yields whether it
    was acquired (False: another process holds it). Without ``fcntl`` (Windows), no lock.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from topofl._utils.processes import lock
    >>> with lock(Path(tempfile.mkdtemp()) / "r.lock") as mine:
    ...     print(mine)
    True
    """
    if fcntl is None:  # pragma: no cover - not POSIX
        yield True
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # closing releases the lock


def die_with_parent(parent: int) -> None:
    """End this process when its parent process ``parent`` ends, however it ends.

    A SIGKILL of the parent (or a SIGTERM, whose default action ends it at once) gives its
    children no chance to be told: on Linux the kernel sends them SIGKILL then
    (``prctl(PR_SET_PDEATHSIG)``, set here); everywhere, a daemon thread checks once a second
    that the parent is still there (a dead parent's children are re-parented, so
    ``os.getppid()`` changes) and ends the process if not. A parent already gone when this is
    called ends the process at once.
    """
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # pragma: no cover - no prctl: the thread below
            pass
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="topofl-sweep-parent-watch", daemon=True).start()


def orphan_guard() -> str:
    """Python lines that make the interpreter running them end with this process: the first
    lines of the program of a child interpreter (``python -c``) a command starts, so that
    stopping the command (a timeout's SIGTERM, a SIGKILL, Ctrl-C) stops its child too
    (:func:`die_with_parent`; the child imports ``topofl``).

    Examples
    --------
    >>> import os, subprocess, sys
    >>> from topofl._utils.processes import orphan_guard
    >>> out = subprocess.run([sys.executable, "-c", orphan_guard() + "print('ran')"],
    ...                      capture_output=True, text=True, check=True)
    >>> out.stdout
    'ran\\n'
    """
    return (f"from topofl._utils.processes import die_with_parent as _die_with_parent\n"
            f"_die_with_parent({os.getpid()})\n")


def _safe_path() -> str:
    """Python lines that take the current directory off the import path of the interpreter
    running them (``python -c`` puts it first, as ``""``) and put this ``topofl``'s folder on
    it when it is not there (a parent that found ``topofl`` in its current directory)."""
    root = str(Path(__file__).resolve().parents[2])
    return ("import sys as _sys\n"
            "if not getattr(_sys.flags, 'safe_path', False) and _sys.path[:1] == ['']:\n"
            "    del _sys.path[0]\n"
            f"if {root!r} not in _sys.path:\n"
            f"    _sys.path.insert(0, {root!r})\n"
            "del _sys\n")


def child_command(program: str, *args: str) -> list[str]:
    """The command line of a child interpreter a command starts: ``python -c program``, its
    ``sys.argv[1:]`` being ``args``, that imports nothing from the current directory and
    ends with this process (:func:`orphan_guard`).

    ``python -c`` puts the current directory first on ``sys.path``, so that a ``json.py`` or
    ``torch.py`` of the user's there would be imported instead of the standard library's or
    torch's; the child's first lines take it off (what ``python -P`` does from Python 3.11
    on, done here in code so that Python 3.10 does the same) and put this ``topofl``'s folder
    on the path where it is not (``topofl`` found in the parent's current directory). The
    child keeps the current directory as its working directory, the environment and
    ``PYTHONPATH``: the user's own modules (``--import``) are imported as in the parent, with
    the current directory on the path only while they are
    (:func:`topofl._utils.userimports.load_imports`).

    Examples
    --------
    >>> import subprocess
    >>> from topofl._utils.processes import child_command
    >>> cmd = child_command("import sys; print('' in sys.path, sys.argv[1:])", "a")
    >>> subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    "False ['a']\\n"
    """
    return [sys.executable, "-c", _safe_path() + orphan_guard() + program, *args]


def _init_worker(threads: int, parent: int | None = None) -> None:
    if parent is not None:
        die_with_parent(parent)
    # Ctrl-C reaches the whole process group: the parent alone decides (it ends the workers
    # and says what finished), so a worker does not turn it into a failed run
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch.set_num_threads(threads)


def _end_workers(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the worker processes now (their runs resume
    from their last checkpoint: records and checkpoints are written atomically)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.kill()
    # SIGKILL cannot be ignored: wait until each is reaped (a loaded machine can take
    # seconds), boundedly. The pool's own thread may reap a worker first: our join then
    # returns with no exit code until that thread has recorded it, so wait for the code.
    deadline = time.monotonic() + 30
    for proc in procs:
        with contextlib.suppress(Exception):
            while proc.exitcode is None and time.monotonic() < deadline:
                proc.join(0.05)


@contextlib.contextmanager
def worker_pool(workers: int, threads: int | None = None) -> Iterator[ProcessPoolExecutor]:
    """A pool of ``workers`` spawned processes, each with ``threads`` torch threads (default
    ``cpu_count // workers``), that die with this process (SIGKILL included: on Linux through
    ``PR_SET_PDEATHSIG``, everywhere through a thread that checks for the parent once a
    second) and ignore Ctrl-C (this process decides). Leaving the block normally waits for
    the pool; leaving it by an exception (an interrupt, an error) ends the workers at once.

    Examples
    --------
    >>> from topofl._utils.processes import worker_pool
    >>> with worker_pool(2) as pool:
    ...     sorted(pool.map(abs, [-2, 1]))
    [1, 2]
    """
    if threads is None:
        threads = max(1, (os.cpu_count() or 1) // workers)
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_init_worker, initargs=(threads, os.getpid()))
    try:
        yield pool
    except BaseException:
        _end_workers(pool)
        raise
    pool.shutdown(wait=True)


@contextlib.contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """Run the block with ``threads`` torch intra-op threads (``None``: as they are), then
    restore the count: float32 sums round by the thread count, so a run's numbers depend on it.

    Examples
    --------
    >>> from topofl._utils.processes import torch_threads
    >>> before = torch.get_num_threads()
    >>> with torch_threads(1):
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before
    True
    """
    if threads is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(int(threads))
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def sigterm_raises(interrupt: Callable[[int], BaseException]) -> Iterator[None]:
    """SIGTERM raises ``interrupt(signum)`` in the main thread for this block (as Ctrl-C
    raises ``KeyboardInterrupt``), so that a terminated sweep reports like an interrupted
    one. Elsewhere than in the main thread, nothing changes.

    Examples
    --------
    >>> import os, signal
    >>> from topofl._utils.processes import sigterm_raises
    >>> try:
    ...     with sigterm_raises(lambda signum: KeyboardInterrupt(signum)):
    ...         os.kill(os.getpid(), signal.SIGTERM)
    ... except KeyboardInterrupt as exc:
    ...     print(exc.args == (signal.SIGTERM,))
    True
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_term(signum: int, frame: Any) -> None:
        raise interrupt(signum)

    old = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
