"""Reading a git commit's ``topofl/``: its files from git's objects, its code fingerprint and
its behaviour snapshot taken in a fresh interpreter.

What :func:`topofl.figures.certificates.verify` re-runs: the files of ``topofl/`` at a commit
are read from git's objects (never from a working tree; a tree that carries a link, a submodule
or a compiled module is refused, :func:`commit_fingerprint`), fingerprinted by the *current*
fingerprint code (:func:`topofl._utils.fingerprint.tree_fingerprint`: what the commit's own
code would report about itself is never asked), and its snapshot
(:func:`topofl.figures.snapshot.take`) is taken in a fresh interpreter whose every ``topofl``
module comes from that tree (:func:`snapshot_of_commit`). :func:`clean_commit` names the commit
whose ``topofl/`` is the code running now.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from topofl._utils.fingerprint import tree_fingerprint

__all__ = ["clean_commit", "commit_fingerprint", "snapshot_of_commit"]

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
#: checkout: it is removed, and every topofl module must come from the tree.
_PROBE = """
import json, os, sys
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
    git's objects into a temporary folder and taken there in a fresh interpreter (16 s on
    this session's shared 2-core VM).

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
        found = Path(tmp) / "snapshot.json"
        out = subprocess.run([sys.executable, "-c", _PROBE, str(threads), str(found)], cwd=tree,
                             env=env, capture_output=True, timeout=900, check=False)
        if out.returncode:
            last = out.stderr.decode().strip().splitlines()[-1:] or ["(no message)"]
            raise ValueError(f"the snapshot of commit {commit[:12]} failed: {last[0][:300]}")
        got: dict[str, Any] = json.loads(found.read_text(encoding="utf-8"))
    return got
