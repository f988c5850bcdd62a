"""Reading a git commit's ``topofl/``: its files from git's objects, its code fingerprint and
its behaviour snapshot taken in a fresh interpreter.

What :func:`topofl.figures.certificates.verify` re-runs: the files of ``topofl/`` at a commit
are read from git's objects (never from a working tree; a tree that carries a link, a submodule
or a compiled module is refused, :func:`commit_fingerprint`), fingerprinted by the *current*
fingerprint code (:func:`topofl._utils.fingerprint.tree_fingerprint`: what the commit's own
code would report about itself is never asked), and its snapshot
(:func:`topofl.figures.snapshot.take`) is taken in a fresh interpreter whose every ``topofl``
module comes from that tree (:func:`snapshot_of_commit`). :class:`Reruns` takes several at
once (``topofl figure index --check --jobs N``: one fresh interpreter a commit, each at the
certificate's torch thread count), giving each back as it finishes; an interrupted caller
ends them, and an interpreter whose caller died (killed: its pipe closed) ends itself.
:func:`clean_commit` names the commit whose ``topofl/`` is the code running now.
"""

from __future__ import annotations

import collections
import functools
import importlib.machinery
import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path, PurePosixPath
from typing import Any

from topofl._utils.fingerprint import tree_fingerprint

__all__ = ["Reruns", "clean_commit", "commit_fingerprint", "snapshot_of_commit"]

_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def _repo() -> Path:
    """The checkout this ``topofl/`` lies in (its git repository, when it is a clone)."""
    return Path(__file__).resolve().parents[2]


def _git(*args: str, repo: Path | None = None, stdin: bytes | None = None
         ) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(repo or _repo()), *args], input=stdin,
                          capture_output=True, timeout=120, check=False)


def clean_commit() -> str | None:
    """The git commit whose ``topofl/`` is the code running now, or ``None`` (not a git
    checkout, or ``topofl/`` differs from ``HEAD``)."""
    try:
        head = _git("rev-parse", "HEAD")
        dirty = _git("status", "--porcelain", "--", "topofl")
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode or dirty.returncode or dirty.stdout.strip():
        return None
    commit = head.stdout.decode().strip()
    return commit if _COMMIT.match(commit) else None


#: Run in a fresh interpreter inside an exported tree: its snapshot, into the file argv[2].
#: An editable install's import hook would fill a module the old tree lacks from the installed
#: checkout: it is removed, and every topofl module must come from the tree. Its standard input
#: is a pipe its caller holds open: at its end (the caller gone, even killed) it ends itself.
#: (The pipe is read from its descriptor: a thread blocked in ``sys.stdin`` would hold the
#: reader's lock, which the interpreter takes when it exits, and abort it.)
_PROBE = """
import json, os, sys, threading
def _orphaned():
    while os.read(0, 4096):
        pass
    os._exit(3)
threading.Thread(target=_orphaned, daemon=True).start()
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
try:
    from topofl.figures.snapshot import take
except ImportError:  # a tree from before the snapshot moved into topofl.figures
    from topofl.snapshot import take
snap = take(threads=int(sys.argv[1]))
root = os.path.realpath(os.getcwd())
for name, mod in list(sys.modules.items()):
    if name.split(".")[0] == "topofl" and getattr(mod, "__file__", None):
        if not os.path.realpath(mod.__file__).startswith(root + os.sep):
            raise SystemExit(f"{name} was imported from {mod.__file__}, not the exported tree")
with open(sys.argv[2], "w", encoding="utf-8") as fh:
    json.dump({"torch": snap["torch"], "values": snap["values"]}, fh)
"""

#: Files Python would import in place of (or beside) a module's source: a tree that carries
#: one could run code no fingerprint covers.
_NOT_SOURCE = tuple(importlib.machinery.EXTENSION_SUFFIXES) + tuple(
    importlib.machinery.BYTECODE_SUFFIXES) + (".pyd", ".so")


def _export(commit: str, repo: Path | None = None) -> dict[str, bytes]:
    """The files of ``topofl/`` at ``commit``, read from git's objects: their path inside
    ``topofl/`` -> their bytes (what is fingerprinted is what is run)."""
    if not _COMMIT.match(commit):
        raise ValueError(f"commit must be 40 hex digits, got {commit!r:.60}")
    try:
        listing = _git("ls-tree", "-r", "-z", "--full-tree", commit, "--", "topofl", repo=repo)
        if listing.returncode:
            raise ValueError(f"commit {commit[:12]} is not in this repository (a shallow "
                             f"clone? `git fetch --unshallow`): "
                             f"{listing.stderr.decode(errors='replace').strip()[:200]}")
        blobs: dict[str, str] = {}
        for item in listing.stdout.split(b"\0"):
            if not item:
                continue
            meta, raw = item.split(b"\t", 1)
            mode, _, sha = meta.decode().split()
            path = raw.decode("utf-8", errors="replace")
            parts = PurePosixPath(path).parts
            why = ("a link or a submodule" if mode not in ("100644", "100755")
                   else "a file Python imports in place of source"
                   if path.endswith(_NOT_SOURCE) else "an odd path"
                   if ".." in parts or "\ufffd" in path or parts[0] != "topofl" else "")
            if why:
                raise ValueError(f"commit {commit[:12]} carries {path!r:.120}, {why}: not a "
                                 "tree this check runs")
            blobs[path.removeprefix("topofl/")] = sha
        if not blobs:
            raise ValueError(f"commit {commit[:12]} has no topofl/")
        out = _git("cat-file", "--batch", repo=repo,
                   stdin="".join(f"{sha}\n" for sha in blobs.values()).encode())
    except (OSError, subprocess.SubprocessError) as exc:
        raise ValueError(f"cannot read commit {commit[:12]} with git: {exc}") from None
    files, data, at = {}, out.stdout, 0
    for path, sha in blobs.items():
        nl = data.index(b"\n", at)
        head = data[at:nl].split()
        if out.returncode or len(head) != 3 or head[0].decode() != sha or head[1] != b"blob":
            raise ValueError(f"cannot read {path} of commit {commit[:12]} with git")
        size = int(head[2])
        files[path] = data[nl + 1:nl + 1 + size]
        at = nl + 1 + size + 1
    return files


def commit_fingerprint(commit: str, repo: str | os.PathLike[str] | None = None) -> str:
    """The code fingerprint of the ``topofl/`` of a git ``commit`` (of this repository, or of
    ``repo``), computed from its files by the current fingerprint code
    (:func:`topofl._utils.fingerprint.tree_fingerprint`); nothing of the commit runs (~0.1 s).

    Raises
    ------
    ValueError
        When the commit is not in the repository, carries a link, a submodule or a compiled
        module in ``topofl/``, or its fingerprint cannot be computed.
    """
    return tree_fingerprint(_export(commit, Path(repo) if repo is not None else None))


def snapshot_of_commit(commit: str, threads: int = 1,
                       repo: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """``{torch, values}``: the snapshot of the ``topofl/`` of a git ``commit``, written from
    git's objects into a temporary folder and taken there in a fresh interpreter (~25 s of
    one core: its imports ~4 s, the snapshot's runs ~14 s, the rest its graphs, spectra,
    environment and fingerprint).

    Raises
    ------
    ValueError
        When the commit is not in this repository, or its snapshot cannot be taken.
    """
    files = _export(commit, Path(repo) if repo is not None else None)
    with tempfile.TemporaryDirectory(prefix="topofl-certificate-") as tmp:
        tree = Path(tmp) / "tree"
        for rel, data in files.items():
            path = tree / "topofl" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        env = {**os.environ, "PYTHONPATH": str(tree)}
        found, errors = Path(tmp) / "snapshot.json", Path(tmp) / "stderr.txt"
        with open(errors, "wb") as err:
            code = _run_probe([sys.executable, "-c", _PROBE, str(threads), str(found)], tree,
                              env, err)
        if code:
            lines = errors.read_bytes().decode(errors="replace").strip().splitlines()
            last = (lines[-1:] or ["(no message)"])[0] if code > 0 else f"stopped (signal {-code})"
            raise ValueError(f"the snapshot of commit {commit[:12]} failed: {last[:300]}")
        got: dict[str, Any] = json.loads(found.read_text(encoding="utf-8"))
    return got


class _Batch:
    """The snapshot interpreters of one :class:`Reruns`, which an
    interrupted caller ends (:meth:`stop`)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.live: set[subprocess.Popen[bytes]] = set()
        self.stopped = False

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            live = list(self.live)
        for proc in live:
            if proc.poll() is None:
                proc.kill()


_BATCH = threading.local()  # the batch a worker thread runs for (none: a call of its own)


def _run_probe(argv: list[str], cwd: Path, env: Mapping[str, str], err: Any) -> int:
    """Run the probe, its standard input a pipe held open until it ends; its exit status (the
    signal's negative when killed: after 900 s, or its batch stopped)."""
    batch: _Batch | None = getattr(_BATCH, "batch", None)
    lock = batch.lock if batch is not None else threading.Lock()
    with lock:
        if batch is not None and batch.stopped:
            return -15
        proc = subprocess.Popen(argv, cwd=cwd, env=dict(env), stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=err)
        if batch is not None:
            batch.live.add(proc)
    try:
        return proc.wait(timeout=900)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()
    finally:
        if proc.poll() is None:  # interrupted while it waited
            proc.kill()
            proc.wait()
        if proc.stdin is not None:
            proc.stdin.close()
        if batch is not None:
            with batch.lock:
                batch.live.discard(proc)


def _in_batch(batch: _Batch, run: Callable[[str, int], Mapping[str, Any]], commit: str,
              threads: int) -> Mapping[str, Any]:
    _BATCH.batch = batch
    try:
        return run(commit, threads)
    finally:
        _BATCH.batch = None


class Reruns:
    """Snapshots of commits taken ``jobs`` at a time, each from the moment it is added
    (:meth:`add`), read back as they finish (:meth:`finished`); used as a context manager.

    ``of_commit`` takes one (default :func:`snapshot_of_commit`: a fresh interpreter of its
    own, so that ``jobs`` interpreters run at once, each at its ``threads``) in a worker
    thread; a finished run starts the next at once, while the caller reads it in its own
    thread. Leaving the block by an exception (an interruption) drops the queued runs and
    ends the running interpreters.

    Examples
    --------
    >>> with Reruns(jobs=2, of_commit=lambda c, t: {"values": {"x": c[:1]}}) as runs:
    ...     runs.add("a" * 40, 1), runs.add("b" * 40, 1), runs.add("a" * 40, 1)
    ...     sorted((key[0][:1], got["values"]["x"]) for key, got in runs.finished())
    (True, True, False)
    [('a', 'a'), ('b', 'b')]
    """

    def __init__(self, *, jobs: int = 1,
                 of_commit: Callable[[str, int], Mapping[str, Any]] | None = None) -> None:
        if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
            raise ValueError(f"jobs must be an integer of at least 1, got {jobs!r}")
        self._jobs, self._run = jobs, of_commit or snapshot_of_commit
        self._pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="topofl-snapshot")
        self._batch = _Batch()
        self._lock = threading.RLock()  # a run that is done when submitted reports at once
        self._todo: collections.deque[tuple[str, int]] = collections.deque()
        self._added: set[tuple[str, int]] = set()
        self._running = self._unread = 0
        self._done: queue.SimpleQueue[tuple[tuple[str, int], Any]] = queue.SimpleQueue()

    def add(self, commit: str, threads: int) -> bool:
        """Take the snapshot of ``commit`` at ``threads`` (once: ``False`` when it was added
        before)."""
        with self._lock:
            if (commit, threads) in self._added:
                return False
            self._added.add((commit, threads))
            self._todo.append((commit, threads))
            self._unread += 1
        self._fill()
        return True

    def _fill(self) -> None:
        with self._lock:
            while self._todo and self._running < self._jobs and not self._batch.stopped:
                key = self._todo.popleft()
                self._running += 1
                fut = self._pool.submit(_in_batch, self._batch, self._run, *key)
                fut.add_done_callback(functools.partial(self._finished, key))

    def _finished(self, key: tuple[str, int], fut: Future[Mapping[str, Any]]) -> None:
        with self._lock:
            self._running -= 1
        if fut.cancelled():
            return
        exc = fut.exception()
        self._done.put((key, exc if exc is not None else fut.result()))
        self._fill()

    def finished(self) -> Iterator[tuple[tuple[str, int], Mapping[str, Any] | Exception]]:
        """``((commit, threads), its snapshot or the error that stopped it)`` for every run
        added (those added meanwhile too), in the order they finish."""
        while True:
            with self._lock:
                if not self._unread:
                    return
            key, got = self._done.get()
            with self._lock:
                self._unread -= 1
            if isinstance(got, BaseException) and not isinstance(got, Exception):
                raise got  # an interruption inside a run
            yield key, got

    def __enter__(self) -> Reruns:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: Any) -> None:
        if kind is not None:
            self._batch.stop()
        self._pool.shutdown(wait=kind is None, cancel_futures=True)
