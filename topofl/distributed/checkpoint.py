"""Sharded checkpoints: each rank writes its clients' rows; checksummed, never unpickled.

A checkpoint is a directory holding one file per rank, ``rank<r>.pt``, and ``topofl.json``.
Each rank file is a ``torch.save`` archive of ``{"tensors": {key: tensor}}`` whose keys are
``"<state tensor>/<a>:<b>"`` for each contiguous run ``[a, b)`` of client ids the rank held;
the tensors without a client dimension (a server model) are in ``shared.pt``, written by
rank 0, under ``"<tensor>/all"``. ``topofl.json`` is plain JSON: the format, the round, the
counters and the run's description, and for every file its SHA-256, its size and its keys,
the whole under a checksum of its own.

Reading never unpickles arbitrary objects: ``topofl.json`` is parsed as JSON and checked
(format, fields, checksum) first; a rank file is read only after its size and its SHA-256
match those the manifest lists, and then with ``torch.load(weights_only=True)`` (tensors and
plain containers only). Anything else (a missing, truncated, corrupted or crafted file, or a
folder in the pickled ``torch.distributed.checkpoint`` format earlier topofl versions wrote)
is refused with a :class:`~topofl.exceptions.CheckpointError` naming the file, on every rank.

Because the keys name client ids, not ranks, a checkpoint written on ``K`` ranks loads on
``K'`` ranks (each reads the files that hold its clients) or in one process
(:func:`load_full`). It is written into a folder rank 0 creates for this save beside
``<path>`` (``.<name>.topofl-tmp-<pid>-<machine>-<random>``,
:func:`~topofl._utils.files.private_sibling`: no
user's name) and, once every rank has written, rank 0 moves the previous checkpoint to
``<path>.old``, renames its folder to ``<path>`` and removes ``<path>.old``. A crash between
those renames leaves no ``<path>`` but a whole ``<path>.old``: the loaders fall back to it
(with a warning) when ``<path>`` is missing or incomplete. Only what topofl wrote is ever
removed: the folder of this save (if it fails), and a ``<path>.old`` that is a topofl
checkpoint (anything else there is refused, naming it, before it would be replaced). A save
killed midway leaves its ``.<name>.topofl-tmp-...`` folder, which is safe to delete (the next
save, or a run that checkpoints to ``<path>``, removes it once its writer is gone:
:func:`~topofl._utils.files.remove_orphans`).

Examples
--------
>>> import json, os, tempfile
>>> from topofl.distributed.checkpoint import FORMAT, META, is_sharded
>>> folder = tempfile.mkdtemp()
>>> is_sharded(folder)
False
>>> _ = open(os.path.join(folder, META), "w").write(json.dumps({"format": FORMAT}))
>>> is_sharded(folder)
True
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor

from topofl._utils.files import private_sibling
from topofl.distributed.comm import Shard
from topofl.distributed.world import is_distributed
from topofl.engine.checkpoint import (
    CHECKSUM_KEY,
    fsync_dir,
    load_checkpoint,
    save_checkpoint,
    write_beside,
)
from topofl.engine.protocol import State
from topofl.exceptions import CheckpointError

__all__ = ["save_sharded", "load_rows", "load_full", "load_any", "save_any", "is_sharded",
           "runs", "resolve", "read_manifest", "stored_run_hash", "checkpoint_target_problem",
           "FORMAT", "META"]

META = "topofl.json"
FORMAT = "topofl-sharded-checkpoint/2"
_RESERVED = ("format", "n", "kinds", "files", "checksum")
_FILE = re.compile(r"(?:rank[0-9]{1,9}|shared)\.pt")
_KEY = re.compile(r"(?P<name>.+)/(?:(?P<a>[0-9]{1,12}):(?P<b>[0-9]{1,12})|all)")
_HEX = re.compile(r"[0-9a-f]{64}")
_CHUNK = 1 << 22
T = TypeVar("T")


def runs(ids: np.ndarray) -> list[tuple[int, int]]:
    """Contiguous runs ``[a, b)`` of increasing ids.

    Examples
    --------
    >>> import numpy as np
    >>> from topofl.distributed.checkpoint import runs
    >>> runs(np.array([0, 1, 2, 5, 7, 8]))
    [(0, 3), (5, 6), (7, 9)]
    """
    out: list[tuple[int, int]] = []
    for i in ids.tolist():
        if out and out[-1][1] == i:
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i, i + 1))
    return out


def _old(path: Path) -> Path:
    return path.with_name(path.name + ".old")


def is_sharded(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a sharded checkpoint directory (it has a ``topofl.json``), or is
    missing while the ``<path>.old`` copy of an interrupted save is one.

    Nothing is read: :func:`resolve` and the loaders check the content.
    """
    p = Path(path)
    if (p / META).is_file():
        return True
    return not os.path.lexists(p) and (_old(p) / META).is_file()


def _canonical(body: Mapping[str, Any]) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def _digest(body: Mapping[str, Any]) -> str:
    return "sha256:" + hashlib.sha256(_canonical(body).encode()).hexdigest()


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


_NOT_LOADED = "; it was not loaded"


def _fail(folder: Path, what: str) -> CheckpointError:
    return CheckpointError(f"sharded checkpoint {folder} {what}{_NOT_LOADED}")


def read_manifest(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``topofl.json`` of a sharded checkpoint, checked: its format, fields and checksum,
    and that every rank file it lists is there with its size (nothing else is read).

    Raises
    ------
    CheckpointError
        Naming the folder and what is wrong: missing, not JSON, another format (a folder in
        the pickled ``torch.distributed.checkpoint`` format of earlier versions is refused:
        its index cannot be read without unpickling), a field of the wrong type, a checksum
        that does not match (edited or corrupted), or a rank file missing or of another size
        (truncated).

    Examples
    --------
    >>> import json, os, tempfile
    >>> from topofl.distributed.checkpoint import META, read_manifest
    >>> folder = tempfile.mkdtemp()
    >>> _ = open(os.path.join(folder, META), "w").write(json.dumps({"round": 3}))
    >>> read_manifest(folder)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topofl.exceptions.CheckpointError: sharded checkpoint ... is not a topofl sharded ...
    """
    folder = Path(path)
    if not folder.is_dir():
        raise CheckpointError(f"checkpoint {folder} does not exist" if not folder.exists()
                              else f"checkpoint {folder} is not a sharded checkpoint folder")
    try:
        text = (folder / META).read_text(encoding="utf-8")
        man = json.loads(text)
    except FileNotFoundError:
        raise _fail(folder, f"has no {META}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _fail(folder, f"has an unreadable {META} ({type(exc).__name__})") from None
    if not isinstance(man, dict) or man.get("format") != FORMAT:
        found = man.get("format") if isinstance(man, dict) else None
        if found is None and (folder / ".metadata").exists():
            raise _fail(folder, "is in the torch.distributed.checkpoint format that earlier "
                        "topofl versions wrote, whose index (.metadata) is a pickle: it is not "
                        "read, since unpickling can run arbitrary code; resume it with the "
                        "version that wrote it, or start the run again")
        raise _fail(folder, f"is not a topofl sharded checkpoint (format {found!r} in its "
                    f"{META}, expected {FORMAT!r})")
    stored = man.pop("checksum", None)
    if not isinstance(stored, str) or stored != _digest(man):
        raise _fail(folder, f"is corrupted: its {META} does not match its checksum (edited, "
                    "or damaged on disk)")
    n, kinds, files = man.get("n"), man.get("kinds"), man.get("files")
    if not (isinstance(n, int) and not isinstance(n, bool) and n >= 1
            and isinstance(kinds, dict) and isinstance(files, dict) and files
            and all(v in ("clients", "shared") for v in kinds.values())):
        raise _fail(folder, f"has a malformed {META} (n, kinds or files)")
    for name, entry in files.items():
        if not (_FILE.fullmatch(name) and isinstance(entry, dict)
                and isinstance(entry.get("sha256"), str) and _HEX.fullmatch(entry["sha256"])
                and isinstance(entry.get("bytes"), int) and entry["bytes"] >= 0
                and isinstance(entry.get("keys"), list)
                and all(isinstance(k, str) and _key(k, kinds, n) for k in entry["keys"])):
            raise _fail(folder, f"has a malformed {META} entry for {name!r}")
        f = folder / name
        if not f.is_file():
            raise _fail(folder, f"misses its file {name}")
        size = f.stat().st_size
        if size != entry["bytes"]:
            raise _fail(folder, f"has a truncated or damaged file {name}: {size} bytes, "
                        f"{entry['bytes']} written")
    return dict(man)


def _key(key: str, kinds: Mapping[str, Any], n: int) -> tuple[str, int, int] | None:
    """``(name, a, b)`` of a rank file key (``a = b = -1`` for ``/all``), None if malformed."""
    m = _KEY.fullmatch(key)
    if m is None or m["name"] not in kinds:
        return None
    if m["a"] is None:
        return (m["name"], -1, -1) if kinds[m["name"]] == "shared" else None
    a, b = int(m["a"]), int(m["b"])
    ok = kinds[m["name"]] == "clients" and 0 <= a < b <= n
    return (m["name"], a, b) if ok else None


def resolve(path: str | os.PathLike[str], *, warn: bool = True) -> Path:
    """The folder to load for the sharded checkpoint ``path``: ``path`` when
    :func:`read_manifest` accepts it, else ``<path>.old`` when a save was interrupted between
    its two renames and that copy is whole (with a ``UserWarning`` when ``warn``).

    Raises
    ------
    CheckpointError
        ``path``'s own problem, when there is no whole ``<path>.old`` to fall back to.
    """
    p = Path(path)
    try:
        read_manifest(p)
        return p
    except CheckpointError as exc:
        old = _old(p)
        if not (old / META).is_file():
            raise
        try:
            read_manifest(old)
        except CheckpointError:
            raise exc from None
        if warn:
            why = str(exc).removesuffix(_NOT_LOADED)
            warnings.warn(f"{why}; loading {old} instead, the previous checkpoint that an "
                          "interrupted save left", UserWarning, stacklevel=3)
        return old


def _read_file(folder: Path, name: str, entry: Mapping[str, Any], n: int,
               kinds: Mapping[str, Any]) -> dict[str, Tensor]:
    """A rank file's tensors, read only once its SHA-256 matches the manifest's."""
    f = folder / name
    if _file_sha256(f) != entry["sha256"]:
        raise _fail(folder, f"is corrupted: its file {name} does not match its checksum")
    try:  # tensors and plain containers only: nothing else is unpickled
        ck = torch.load(f, map_location="cpu", weights_only=True, mmap=True)
    except Exception as exc:  # noqa: BLE001 - every way a foreign archive fails, one message
        raise _fail(folder, f"has a file {name} that cannot be read as tensors (not written "
                    f"by topofl: {type(exc).__name__})") from None
    tensors = ck.get("tensors") if isinstance(ck, dict) else None
    if not isinstance(tensors, dict) or set(tensors) != set(entry["keys"]):
        raise _fail(folder, f"has a file {name} whose keys are not those of its {META}")
    for key, v in tensors.items():
        _, a, b = _key(key, kinds, n) or ("", 0, 0)
        if not isinstance(v, Tensor) or (a >= 0 and (v.dim() == 0 or v.shape[0] != b - a)):
            raise _fail(folder, f"has a file {name} whose tensor {key!r} is not of its shape")
    return tensors


def _agree(shard: Shard, what: str, fn: Callable[[], T], exc_type: type[Exception]) -> T:
    """``fn()`` on every rank; when it fails on any rank (``CheckpointError``, ``OSError``,
    ``ValueError``), every rank raises ``exc_type`` with the lowest failing rank's message."""
    err: str | None = None
    out: Any = None
    try:
        out = fn()
    except (OSError, ValueError) as exc:
        err = str(exc) if isinstance(exc, CheckpointError) else f"{type(exc).__name__}: {exc}"
    errors: list[str | None] = [None] * shard.size
    shard.call(what, lambda: dist.all_gather_object(errors, err))
    first = next(((r, e) for r, e in enumerate(errors) if e is not None), None)
    if first is not None:
        r, msg = first
        raise exc_type(msg if shard.size == 1 else f"{msg} (rank {r} of {shard.size})")
    result: T = out
    return result


def _per_client(v: Tensor, m: int) -> bool:
    return v.dim() > 0 and v.shape[0] == m


def _remove(p: Path) -> None:
    """Remove a file, a link or a folder at ``p`` (nothing if there is none); called only on
    what topofl wrote (this save's own folder, or a :func:`is_topofl_checkpoint`)."""
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    else:
        try:
            p.unlink()
        except FileNotFoundError:
            pass


def is_topofl_checkpoint(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is, recognisably, a checkpoint topofl wrote: a folder whose
    ``topofl.json`` names the sharded format, or a file ``torch.load(weights_only=True)``
    reads as a dict with its checksum (not a link, nor anything else).

    Only the manifest (JSON) or the file's plain entries are read, never unpickled objects.

    Examples
    --------
    >>> import os, tempfile, torch
    >>> from topofl.distributed.checkpoint import is_topofl_checkpoint, save_any
    >>> folder = tempfile.mkdtemp()
    >>> mine = os.path.join(folder, "notes.old")
    >>> _ = open(mine, "w").write("a user's notes")
    >>> is_topofl_checkpoint(mine), is_topofl_checkpoint(folder)
    (False, False)
    >>> save_any(os.path.join(folder, "ck"), {"x": torch.zeros(2)})
    >>> is_topofl_checkpoint(os.path.join(folder, "ck"))
    True
    """
    p = Path(path)
    if p.is_symlink():
        return False
    if p.is_dir():
        try:
            man = json.loads((p / META).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return False
        return isinstance(man, dict) and man.get("format") == FORMAT
    if not p.is_file():
        return False
    try:
        ck = torch.load(p, map_location="cpu", weights_only=True, mmap=True)
    except Exception:  # noqa: BLE001 - anything that is not a readable torch archive
        return False
    return isinstance(ck, dict) and isinstance(ck.get(CHECKSUM_KEY), str)


def _old_in_the_way(final: Path) -> str:
    old = _old(final)
    return (f"{old} is not a topofl checkpoint: it is not replaced (topofl keeps the previous "
            f"checkpoint of {final.name} there while it writes the next one); move it, or "
            "choose another checkpoint_path")


def swap_into_place(tmp: Path, final: Path) -> None:
    """Replace ``final`` (a file or a checkpoint folder, or nothing) by ``tmp``, keeping the
    previous one as ``<final>.old`` until the new one is in place.

    A crash at any point leaves a whole checkpoint at ``final`` or at ``<final>.old``: when
    ``final`` is missing (a crash between the renames), the existing ``.old`` is kept until
    ``tmp`` has replaced it. A ``<final>.old`` is removed only when it is the previous
    checkpoint moved there or :func:`is_topofl_checkpoint`.

    Raises
    ------
    FileExistsError
        When ``final`` must be moved to ``<final>.old`` and something that is not a topofl
        checkpoint is there (nothing is moved or removed then).
    """
    old = _old(final)
    moved = False
    if os.path.lexists(final):
        if os.path.lexists(old):
            if not is_topofl_checkpoint(old):
                raise FileExistsError(_old_in_the_way(final))
            _remove(old)
        os.replace(final, old)
        fsync_dir(final.parent)
        moved = True
    os.replace(tmp, final)
    fsync_dir(final.parent)
    if moved or is_topofl_checkpoint(old):
        _remove(old)


def save_sharded(path: str | os.PathLike[str], shard: Shard, state: State,
                 meta: dict[str, Any]) -> None:
    """Write this rank's rows of ``state`` (a collective: every rank calls it).

    Raises
    ------
    OSError
        On every rank, when any rank could not write its file (the message names it); the
        checkpoint at ``path`` is then left as it was.
    """
    final = Path(path)
    reserved = sorted(set(meta) & set(_RESERVED))
    if reserved:
        raise ValueError(f"checkpoint entries {reserved} are reserved for the manifest")

    def prepare() -> str | None:
        if shard.rank != 0:
            return None
        final.parent.mkdir(parents=True, exist_ok=True)
        return str(private_sibling(final, folder=True))  # this save's own folder

    made = _agree(shard, "checkpoint", prepare, OSError)
    name: list[Any] = [made]
    shard.call("checkpoint", lambda: dist.broadcast_object_list(name, src=0))
    tmp = Path(name[0])
    try:
        _write_sharded(tmp, final, shard, state, meta)
    except BaseException:
        if shard.rank == 0:  # every rank is past its writes (a failure is agreed on by all)
            _remove(tmp)
        raise


def _write_sharded(tmp: Path, final: Path, shard: Shard, state: State,
                   meta: dict[str, Any]) -> None:
    """:func:`save_sharded`'s writes into its folder ``tmp``, and their publication."""
    spans = runs(shard.clients)
    pos = {c: r for r, c in enumerate(shard.clients.tolist())}
    tensors = {k: v.detach().cpu() for k, v in state.tensors().items()}
    # per client: a leading dimension of this rank's client count on every rank (a shared
    # tensor may have it by chance on one rank; the ranks must agree on what they write)
    votes: list[Any] = [None] * shard.size
    mine_votes = {k: _per_client(v, shard.m) for k, v in tensors.items()}
    shard.call("checkpoint", lambda: dist.all_gather_object(votes, mine_votes))
    if any(set(vote) != set(tensors) for vote in votes):
        raise ValueError("the ranks' states hold different tensors: "
                         f"{sorted({k for vote in votes for k in vote})}")
    rows: dict[str, Tensor] = {}
    shared: dict[str, Tensor] = {}
    kinds: dict[str, str] = {}
    for name, v in tensors.items():
        if all(vote[name] for vote in votes):
            kinds[name] = "clients"
            for a, b in spans:
                rows[f"{name}/{a}:{b}"] = v[pos[a]:pos[a] + (b - a)].contiguous()
        else:
            kinds[name] = "shared"
            if shard.rank == 0:
                shared[f"{name}/all"] = v.contiguous()
    mine = {f"rank{shard.rank}.pt": rows, **({"shared.pt": shared} if shared else {})}

    def write() -> list[tuple[str, dict[str, Any]]]:
        out = []
        for name, sd in mine.items():
            f = tmp / name  # the folder is what is atomic: renamed once every file is in
            with open(f, "wb") as fh:
                torch.save({"tensors": sd}, fh)
                fh.flush()
                os.fsync(fh.fileno())
            out.append((name, {"sha256": _file_sha256(f), "bytes": f.stat().st_size,
                               "keys": sorted(sd)}))
        return out

    written = _agree(shard, "checkpoint", write, OSError)
    entries: list[Any] = [None] * shard.size
    shard.call("checkpoint", lambda: dist.all_gather_object(entries, written))

    def publish() -> None:
        if shard.rank != 0:
            return
        body = {**meta, "format": FORMAT, "n": shard.n, "kinds": kinds,
                "files": {name: e for part in entries for name, e in part}}
        body = json.loads(json.dumps(body))  # as it reads back: the checksum's input
        text = json.dumps({**body, "checksum": _digest(body)})
        with open(tmp / META, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        fsync_dir(tmp)
        if final.is_dir() and not final.is_symlink() and not (final / META).is_file():
            raise IsADirectoryError(f"checkpoint path {final} is a folder that is not a topofl "
                                    "checkpoint: it is not replaced")
        swap_into_place(tmp, final)

    _agree(shard, "checkpoint", publish, OSError)


def _assemble(folder: Path, meta: Mapping[str, Any], sd: Mapping[str, Tensor], ids: np.ndarray
              ) -> dict[str, Tensor]:
    """Rows ``ids`` of every client tensor (and the shared tensors) from the loaded runs."""
    out: dict[str, Tensor] = {}
    n = int(meta["n"])
    where = np.full(n, -1, dtype=np.int64)
    where[ids] = np.arange(ids.size)
    for name, kind in meta["kinds"].items():
        if kind == "shared":
            if f"{name}/all" not in sd:
                raise _fail(folder, f"lacks the tensor {name!r}")
            out[name] = sd[f"{name}/all"]
            continue
        parts = [(_key(k, meta["kinds"], n) or ("", 0, 0), v) for k, v in sd.items()
                 if k.rsplit("/", 1)[0] == name]  # the keys were checked: never the default
        if not parts:
            raise _fail(folder, f"lacks the tensor {name!r}")
        shape, dtype = tuple(parts[0][1].shape[1:]), parts[0][1].dtype
        if any(tuple(v.shape[1:]) != shape or v.dtype != dtype for _, v in parts):
            raise _fail(folder, f"holds parts of tensor {name!r} of different shapes or dtypes")
        t = torch.empty((ids.size, *shape), dtype=dtype)
        seen = np.zeros(ids.size, dtype=bool)
        for (_, a, b), v in parts:
            rows = where[a:b]
            mine = np.flatnonzero(rows >= 0)
            if mine.size:
                if seen[rows[mine]].any():
                    raise _fail(folder, f"holds rows of tensor {name!r} twice")
                seen[rows[mine]] = True
                t[torch.as_tensor(rows[mine])] = v[torch.as_tensor(mine)]
        if not seen.all():
            raise _fail(folder, f"lacks rows of some clients in tensor {name!r}")
        out[name] = t
    return out


def _load(path: str | os.PathLike[str], ids: np.ndarray | None, n: int | None, warn: bool
          ) -> tuple[dict[str, Any], dict[str, Tensor]]:
    """The checked manifest (its meta entries) and the rows ``ids`` (``None``: all)."""
    folder = resolve(path, warn=warn)
    man = read_manifest(folder)
    if n is not None and int(man["n"]) != n:
        raise CheckpointError(f"checkpoint {path} holds {man['n']} clients, the run {n}")
    rows = np.arange(int(man["n"])) if ids is None else ids
    mine = np.zeros(int(man["n"]), dtype=bool)
    mine[rows] = True
    sd: dict[str, Tensor] = {}
    for name, entry in man["files"].items():
        keys = []
        for k in entry["keys"]:
            _, a, b = _key(k, man["kinds"], int(man["n"])) or ("", -1, -1)
            if a < 0 or mine[a:b].any():
                keys.append(k)
        if keys:  # only the files holding these rows are read (each one checked first)
            tensors = _read_file(folder, name, entry, int(man["n"]), man["kinds"])
            sd.update({k: tensors[k] for k in keys})
    state = _assemble(folder, man, sd, rows)
    return {k: v for k, v in man.items() if k not in _RESERVED}, state


def load_rows(path: str | os.PathLike[str], shard: Shard, device: torch.device
              ) -> dict[str, Any]:
    """This rank's rows of a sharded checkpoint (a collective), in the payload format of
    :func:`topofl.engine.checkpoint.load_checkpoint` (``state`` holds ``[m, ...]`` rows).

    Raises
    ------
    CheckpointError
        On every rank, with the message of the lowest rank that found a problem (see
        :func:`read_manifest`; a rank file is checked by the ranks that read it).
    """
    meta, state = _agree(shard, "loading the checkpoint",
                         lambda: _load(path, shard.clients, shard.n, warn=shard.rank == 0),
                         CheckpointError)
    return {**meta, "state": {k: v.to(device) for k, v in state.items()}}


def load_full(path: str | os.PathLike[str], device: torch.device) -> dict[str, Any]:
    """A sharded checkpoint as one process sees it: every client's rows, in the payload format
    of :func:`topofl.engine.checkpoint.load_checkpoint` (no process group needed).

    Raises
    ------
    CheckpointError
        For a missing, incomplete, corrupted or foreign folder (see :func:`read_manifest`).
    """
    meta, state = _load(path, None, None, warn=True)
    return {**meta, "state": {k: v.to(device) for k, v in state.items()}}


def load_any(path: str | os.PathLike[str], device: torch.device | str = "cpu"
             ) -> dict[str, Any]:
    """A checkpoint of either kind as one process reads it: :func:`load_full` for a sharded
    checkpoint folder (or the ``.old`` copy a crash left), the engine's
    :func:`~topofl.engine.checkpoint.load_checkpoint` for a file (``topofl.run``'s reader in
    one process).

    Raises
    ------
    CheckpointError
        For a missing, damaged or foreign checkpoint of either kind.
    """
    if is_sharded(path):
        return load_full(path, torch.device(device))
    return load_checkpoint(path, device)


def save_any(path: str | os.PathLike[str], payload: dict[str, Any]) -> None:
    """Write a one-process checkpoint file at ``path``, atomically, replacing what a run
    wrote there before: a file, or the folder of a sharded checkpoint (and the ``.old`` copy
    an interrupted sharded save left, when it is a topofl checkpoint); ``topofl.run``'s
    writer in one process. Its temporary file is its own
    (:func:`~topofl.engine.checkpoint.save_checkpoint`): nothing else beside ``path`` is
    written over or removed.

    Raises
    ------
    IsADirectoryError
        When ``path`` is a folder that is not a topofl checkpoint (it is never replaced).
    FileExistsError
        When ``path`` is a sharded checkpoint and ``<path>.old`` holds something that is not
        a topofl checkpoint (see :func:`swap_into_place`).
    TypeError
        For a payload that is not plain data and tensors (nothing is written then).
    """
    p = Path(path)
    if p.is_dir() and not p.is_symlink():  # a sharded checkpoint (and only one)
        if not (p / META).is_file():
            raise IsADirectoryError(f"checkpoint path {p} is a folder that is not a topofl "
                                    "checkpoint: it is not replaced")
        if os.path.lexists(_old(p)) and not is_topofl_checkpoint(_old(p)):
            raise FileExistsError(_old_in_the_way(p))
        tmp = write_beside(p, payload)
        try:
            swap_into_place(tmp, p)
        except BaseException:
            tmp.unlink(missing_ok=True)  # this call's own file (gone once renamed)
            raise
        return
    save_checkpoint(p, payload)
    old = _old(p)  # an interrupted sharded save's copy: superseded
    if old.is_dir() and is_topofl_checkpoint(old):
        _remove(old)


def stored_run_hash(p: Path) -> str | None:
    """The run hash a topofl checkpoint at ``p`` carries, ``None`` when it is not a readable
    one (only its manifest or its plain entries are read, never unpickled objects)."""
    if p.is_dir():
        if not (p / META).is_file():
            return None
        try:
            h = read_manifest(p).get("run_hash")
        except CheckpointError:
            return None
        return h if isinstance(h, str) else None
    try:
        ck = torch.load(p, map_location="cpu", weights_only=True, mmap=True)
    except Exception:  # noqa: BLE001 - anything that is not a readable torch archive
        return None
    h = ck.get("run_hash") if isinstance(ck, dict) else None
    return h if isinstance(h, str) else None


def checkpoint_target_problem(path: str | os.PathLike[str], run_hash: str, *,
                              overwrite: bool, resume: Any = None) -> str | None:
    """Why a run of ``run_hash`` must not write its checkpoints to ``path``, or ``None``.

    Nothing there, or a topofl checkpoint of the same run (its ``run_hash``: a rerun or a
    resumed run replaces it) is fine, as is the checkpoint the run resumes from (``resume``
    naming the same file: the resume's own checks, which name the differing settings,
    apply). Another run's checkpoint, a damaged one, or any other file is replaced only with
    ``overwrite``; a folder that is not a topofl checkpoint never is, nor a ``<path>.old``
    that is not one when a sharded save would move the previous checkpoint there (a
    distributed run, or ``path`` a sharded checkpoint's folder).

    Examples
    --------
    >>> import pathlib, tempfile, torch
    >>> from topofl.distributed.checkpoint import checkpoint_target_problem, save_any
    >>> ck = str(pathlib.Path(tempfile.mkdtemp()) / "ck.pt")
    >>> checkpoint_target_problem(ck, "abc", overwrite=False) is None  # nothing there
    True
    >>> save_any(ck, {"run_hash": "abc", "x": torch.zeros(2)})
    >>> checkpoint_target_problem(ck, "abc", overwrite=False) is None  # this run's
    True
    >>> print(checkpoint_target_problem(ck, "def", overwrite=False))  # doctest: +ELLIPSIS
    checkpoint_path ...ck.pt holds the checkpoint of another run (run hash abc, this run's ...
    >>> checkpoint_target_problem(ck, "def", overwrite=True) is None
    True
    """
    p = Path(path)
    old = _old(p)
    if os.path.lexists(old) and (p.is_dir() or is_distributed()) \
            and not is_topofl_checkpoint(old):  # a sharded save moves the previous one there
        return f"checkpoint_path {p}: {_old_in_the_way(p)}"
    if not os.path.lexists(p):
        return None
    if isinstance(resume, (str, os.PathLike)) and \
            Path(resume).expanduser().resolve() == p.expanduser().resolve():
        return None
    stored = stored_run_hash(p)
    if stored == run_hash:
        return None
    if p.is_dir() and stored is None and not (p / "topofl.json").is_file():
        return (f"checkpoint_path {p} is a folder that is not a topofl checkpoint; it is never "
                "replaced: choose another checkpoint_path")
    if overwrite:
        return None
    what = ("is not a topofl checkpoint" if stored is None and not p.is_dir() else
            "is a damaged or unreadable topofl checkpoint" if stored is None else
            f"holds the checkpoint of another run (run hash {stored}, this run's {run_hash})")
    return (f"checkpoint_path {p} {what}; pass overwrite=True (topofl run --overwrite) to "
            "replace it, or choose another checkpoint_path")

