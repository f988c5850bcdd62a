"""File-system helpers shared by the writers of records and checkpoints."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import time
from collections.abc import Iterable
from pathlib import Path

__all__ = ["fsync_dir", "private_sibling", "remove_orphans", "replace_text", "TMP_MARK",
           "ORPHAN_AGE", "ORPHAN_MAX_AGE"]

#: What every temporary name topofl creates beside a file holds: ``.<name>.topofl-tmp-...``.
TMP_MARK = ".topofl-tmp-"

#: Seconds a temporary file of a writer that is not running here must be left untouched before
#: :func:`remove_orphans` takes it for an orphan (a writer on another machine sharing the
#: folder, whose process this one cannot see, is still writing into its file or renaming it).
ORPHAN_AGE = 60.0

#: Seconds after which a temporary file is an orphan whatever its writer's pid says (the pid
#: taken again by another process, a system where a pid cannot be looked up): no save leaves
#: its file untouched for a day.
ORPHAN_MAX_AGE = 86400.0

_TAIL = re.compile(r"(\d+)-[0-9a-f]{16}")


def _running(pid: int) -> bool:
    """Whether a process ``pid`` runs on this machine (``True`` when it cannot be told)."""
    if os.name != "posix":  # pragma: no cover - os.kill(pid, 0) is not a probe on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process (EPERM): running
        return True
    return True


def remove_orphans(path: str | os.PathLike[str], *, min_age: float = ORPHAN_AGE) -> list[Path]:
    """Remove the temporary files (or folders) a killed writer left beside ``path``, and
    return them.

    A :func:`private_sibling` of ``path`` is ``.<name>.topofl-tmp-<pid>-<16 hex>``: its writer
    renames it over ``path`` or removes it, unless it was killed (SIGKILL, a lost machine)
    midway. Such a file is removed when its writer ``pid`` is not a running process here and
    the file was not modified for ``min_age`` seconds, or when it was not modified for
    :data:`ORPHAN_MAX_AGE`. A live writer's file is kept: its pid runs (this process's own
    included), or it was written to within ``min_age`` (a writer on another machine). Names
    that do not follow the pattern, other files' temporaries and files that vanish
    meanwhile are left alone.

    Examples
    --------
    >>> import os, tempfile
    >>> from topofl._fs import remove_orphans
    >>> folder = tempfile.mkdtemp()  # pid 999999999: above any pid_max, never running
    >>> orphan = os.path.join(folder, ".ck.pt.topofl-tmp-999999999-0123456789abcdef")
    >>> _ = open(orphan, "w").write("half a checkpoint")
    >>> os.utime(orphan, (0, 0))  # untouched for long
    >>> [p.name for p in remove_orphans(os.path.join(folder, "ck.pt"))]
    ['.ck.pt.topofl-tmp-999999999-0123456789abcdef']
    >>> os.listdir(folder)
    []
    """
    p = Path(path)
    prefix = f".{p.name}{TMP_MARK}"
    removed: list[Path] = []
    try:
        entries = list(os.scandir(p.parent))
    except OSError:  # no folder yet, or one that cannot be read: nothing to remove
        return removed
    now = time.time()
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        tail = _TAIL.fullmatch(entry.name[len(prefix):])
        if tail is None:
            continue
        try:
            age = now - entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        pid = int(tail.group(1))
        mine = pid == os.getpid()
        if not (age >= ORPHAN_MAX_AGE or (age >= min_age and not mine and not _running(pid))):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        except FileNotFoundError:  # removed meanwhile (another run cleaning up)
            continue
        except OSError:  # not ours to remove after all (permissions): left as it is
            continue
        removed.append(Path(entry.path))
    return removed


def private_sibling(path: str | os.PathLike[str], *, folder: bool = False) -> Path:
    """Create, exclusively, an empty file (or folder) beside ``path`` under a name no user
    would pick, ``.<name>.topofl-tmp-<pid>-<16 hex>``, and return it.

    A writer fills it and renames it over ``path`` (same folder: the rename is atomic);
    being created here, and never there before, it is the writer's own to remove. The file
    gets the permissions a plain ``open(..., "w")`` would (``0o666`` less the umask), the
    folder those of ``mkdir``.

    Raises
    ------
    OSError
        When the folder of ``path`` cannot be written.

    Examples
    --------
    >>> import os, tempfile
    >>> from topofl._fs import private_sibling
    >>> folder = tempfile.mkdtemp()
    >>> tmp = private_sibling(os.path.join(folder, "ck.pt"))
    >>> tmp.name.startswith(".ck.pt.topofl-tmp-"), tmp.is_file(), tmp.stat().st_size
    (True, True, 0)
    >>> private_sibling(os.path.join(folder, "ck"), folder=True).is_dir()
    True

    The writer of ``path`` owns its folder's temporary names for it: the orphans of earlier
    writers that were killed midway are removed first (:func:`remove_orphans`).
    """
    p = Path(path)
    remove_orphans(p)
    for _ in range(100):
        tmp = p.with_name(f".{p.name}{TMP_MARK}{os.getpid()}-{secrets.token_hex(8)}")
        try:
            if folder:
                os.mkdir(tmp)
            else:
                os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:  # pragma: no cover - 64 random bits taken: draw again
            continue
        return tmp
    raise FileExistsError(f"no free temporary name beside {p}")  # pragma: no cover


def fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (a no-op where directories cannot be opened).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from topofl._fs import fsync_dir
    >>> fsync_dir(Path(tempfile.mkdtemp()))
    """
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def replace_text(path: str | os.PathLike[str], lines: Iterable[str]) -> None:
    """Replace the file ``path`` by ``lines`` atomically and durably: written into a
    :func:`private_sibling`, fsynced, renamed over ``path``; on failure only that temporary
    file is removed (a file of the user's beside ``path`` is never touched).

    Examples
    --------
    >>> import os, tempfile
    >>> from topofl._fs import replace_text
    >>> folder = tempfile.mkdtemp()
    >>> mine = os.path.join(folder, "r.jsonl.tmp")
    >>> _ = open(mine, "w").write("a user's file")
    >>> replace_text(os.path.join(folder, "r.jsonl"), ["a\\n", "b\\n"])
    >>> open(os.path.join(folder, "r.jsonl")).read(), open(mine).read()
    ('a\\nb\\n', "a user's file")
    >>> sorted(os.listdir(folder))
    ['r.jsonl', 'r.jsonl.tmp']
    """
    p = Path(path)
    tmp = private_sibling(p)
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.writelines(lines)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(p.parent)
