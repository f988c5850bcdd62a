"""File-system helpers shared by the writers of records and checkpoints."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import time
from collections.abc import Iterable
from pathlib import Path

__all__ = ["fsync_dir", "private_sibling", "remove_orphans", "replace_text", "TMP_MARK",
           "ORPHAN_AGE", "ORPHAN_MAX_AGE", "machine_token", "real_path"]

#: What every temporary name topofl creates beside a file holds: ``.<name>.topofl-tmp-...``.
TMP_MARK = ".topofl-tmp-"

#: Seconds a temporary file of a writer that is not running here must be left untouched before
#: :func:`remove_orphans` takes it for an orphan, when its name does not say that its writer
#: ran where this process runs (a writer on another machine sharing the folder, whose process
#: this one cannot see, is still writing into its file or renaming it).
ORPHAN_AGE = 60.0

#: Seconds after which a temporary file is an orphan whatever its writer's pid says (the pid
#: taken again by another process, a system where a pid cannot be looked up): no save leaves
#: its file untouched for a day.
ORPHAN_MAX_AGE = 86400.0

#: ``<pid>-<machine>-<16 hex>`` (``<pid>-<16 hex>``: a name without the machine, as written
#: before it was added, or where :func:`machine_token` is ``None``).
_TAIL = re.compile(r"(\d+)(?:-([0-9a-f]{8}))?-[0-9a-f]{16}")

_BOOT_ID = "/proc/sys/kernel/random/boot_id"
_PID_NS = "/proc/self/ns/pid"


def real_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as the file the system would open once its missing folders exist: absolute,
    each link among its parts that exist followed and each ``..`` applied after it
    (:func:`os.path.realpath`, not strict).

    What a writer checks before it looks whether something is there, and what it then writes:
    ``g/../f/keep.jsonl`` is ``f/keep.jsonl`` whether ``g`` exists or not (the writer makes
    the missing folders of the path it was given, so ``g`` would be made and ``..`` would
    leave it), and a link to a user's file is that file. ``~`` is not expanded (a shell
    does it).

    Examples
    --------
    >>> import os, tempfile
    >>> from topofl._utils.files import real_path
    >>> folder = os.path.realpath(tempfile.mkdtemp())
    >>> os.mkdir(os.path.join(folder, "f"))
    >>> os.symlink(os.path.join(folder, "f"), os.path.join(folder, "link"))
    >>> [os.path.relpath(real_path(os.path.join(folder, p)), folder)
    ...  for p in ("g/../f/keep.jsonl", "link/keep.jsonl", "link/../f/x")]
    ['f/keep.jsonl', 'f/keep.jsonl', 'f/x']
    """
    return Path(os.path.realpath(os.fspath(path)))


def machine_token() -> str | None:
    """8 hex digits naming where this process's pids mean what they say (this boot of this
    kernel, this pid namespace: Linux's boot id and pid namespace), or ``None`` where that
    cannot be read.

    Two processes with the same token see the same processes under the same pids: a
    temporary name carrying it tells :func:`remove_orphans` that its writer's pid can be
    looked up here, so that a writer that is gone is known to be gone at once.

    Examples
    --------
    >>> from topofl._utils.files import machine_token
    >>> token = machine_token()
    >>> token is None or (len(token) == 8 and int(token, 16) >= 0)
    True
    """
    try:
        with open(_BOOT_ID, encoding="ascii") as fh:
            boot = fh.read().strip()
        ns = os.readlink(_PID_NS)
    except (OSError, ValueError):
        return None
    if not boot:
        return None
    return hashlib.sha256(f"{boot}\0{ns}".encode()).hexdigest()[:8]


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

    A :func:`private_sibling` of ``path`` is ``.<name>.topofl-tmp-<pid>-<machine>-<16 hex>``
    (``<machine>``: :func:`machine_token`): its writer renames it over ``path`` or removes
    it, unless it was killed (SIGKILL, a lost machine) midway. Such a file is removed

    - at once when its writer ran where this process runs (its ``<machine>`` is this
      process's) and its ``pid`` is not a running process: that writer is gone, and no
      other process writes under its name;
    - when its writer ``pid`` is not a running process here and the file was not modified
      for ``min_age`` seconds, for a name of another machine (or one without a machine,
      ``.<name>.topofl-tmp-<pid>-<16 hex>``, as earlier versions wrote them);
    - when it was not modified for :data:`ORPHAN_MAX_AGE`, whatever its pid says.

    A live writer's file is kept: its pid runs (this process's own included), or it was
    written to within ``min_age`` by a writer that may run elsewhere (another machine sharing
    the folder). Names that do not follow the pattern, other files' temporaries and files
    that vanish meanwhile are left alone.

    Examples
    --------
    >>> import os, tempfile
    >>> from topofl._utils.files import remove_orphans
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
    here = machine_token()
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
        pid, where = int(tail.group(1)), tail.group(2)
        local = where is not None and where == here  # its pid is one of this machine's
        gone = pid != os.getpid() and not _running(pid)
        if not (age >= ORPHAN_MAX_AGE or (gone and (local or age >= min_age))):
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
    would pick, ``.<name>.topofl-tmp-<pid>-<machine>-<16 hex>`` (``<machine>``:
    :func:`machine_token`; left out where it is ``None``), and return it.

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
    >>> from topofl._utils.files import private_sibling
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
    token = machine_token()
    writer = f"{os.getpid()}" if token is None else f"{os.getpid()}-{token}"
    for _ in range(100):
        tmp = p.with_name(f".{p.name}{TMP_MARK}{writer}-{secrets.token_hex(8)}")
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
    >>> from topofl._utils.files import fsync_dir
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
    >>> from topofl._utils.files import replace_text
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
