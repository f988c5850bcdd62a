"""Checkpoints: a dict of tensors and plain values, checksummed and written atomically.

:func:`save_checkpoint` adds a SHA-256 checksum of the payload's content (every value, and
every tensor's dtype, shape and bytes, in a canonical order) under the key ``"checksum"``,
writes the file with ``torch.save`` to a temporary name of its own (created beside the
target for this write, ``.<name>.topofl-tmp-<pid>-<machine>-<random>``: nothing of the user's is
written over or removed), fsyncs it, renames it over the target and fsyncs the directory: a
crash at any point leaves either the old checkpoint or the new one, never a mix.
:func:`load_checkpoint` reads it with ``weights_only=True`` (never
unpickling arbitrary objects) and refuses, with a :class:`~topofl.exceptions.CheckpointError`
naming the file, anything that is missing, cut short, unreadable or whose content no longer
matches its checksum (a flipped byte).

The file stays a plain ``torch.save`` archive of a dict: ``torch.load(path,
weights_only=True)["round"]`` reads it too, without the checks.

Examples
--------
>>> import os, tempfile, torch
>>> from topofl.engine.checkpoint import load_checkpoint, save_checkpoint
>>> path = os.path.join(tempfile.mkdtemp(), "ck.pt")
>>> save_checkpoint(path, {"round": 3, "state": {"x": torch.arange(4.0)}})
>>> ck = load_checkpoint(path, torch.device("cpu"))
>>> ck["round"], ck["state"]["x"].tolist()
(3, [0.0, 1.0, 2.0, 3.0])
>>> raw = bytearray(open(path, "rb").read())
>>> i = raw.index(torch.arange(4.0).numpy().tobytes())  # the tensor's bytes in the archive
>>> raw[i + 5] ^= 0x01  # one flipped bit
>>> _ = open(path, "wb").write(bytes(raw))
>>> load_checkpoint(path, torch.device("cpu"))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
topofl.exceptions.CheckpointError: checkpoint ...ck.pt is corrupted: its content does not ...
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from topofl._utils.files import fsync_dir, private_sibling
from topofl.exceptions import CheckpointError

__all__ = ["save_checkpoint", "load_checkpoint", "write_payload", "write_beside", "payload_digest",
           "CHECKSUM_KEY", "check_output_paths", "fsync_dir"]

CHECKSUM_KEY = "checksum"
_ALGO = "sha256"
_CHUNK = 1 << 24


def _feed(h: Any, value: Any, where: str) -> None:
    """Feed one value to the hash ``h`` in a canonical, type-tagged encoding."""
    if isinstance(value, torch.Tensor):
        t = value.detach().to("cpu").contiguous()
        head = {"tensor": str(t.dtype), "shape": list(t.shape)}
        h.update(json.dumps(head, sort_keys=True).encode())
        flat = t.reshape(-1).view(torch.uint8).numpy()
        for a in range(0, flat.size, _CHUNK):  # in slices: no second copy of a large state
            h.update(flat[a:a + _CHUNK].tobytes())
    elif isinstance(value, Mapping):
        keys = list(value)
        if not all(isinstance(k, str) for k in keys):
            raise TypeError(f"checkpoint payload {where or 'root'}: keys must be str, got "
                            f"{sorted(type(k).__name__ for k in keys)}")
        h.update(b"{%d" % len(keys))
        for k in sorted(keys):
            h.update(json.dumps(k).encode())
            _feed(h, value[k], f"{where}.{k}" if where else k)
        h.update(b"}")
    elif isinstance(value, (list, tuple)):
        h.update(b"[%d" % len(value) if isinstance(value, list) else b"(%d" % len(value))
        for i, v in enumerate(value):
            _feed(h, v, f"{where}[{i}]")
        h.update(b"]")
    elif value is None or isinstance(value, (bool, int, float, str)):
        # repr keeps the type (1 vs 1.0 vs True) and every float bit (nan, inf, -0.0)
        h.update(f"{type(value).__name__}:{value!r};".encode())
    else:
        raise TypeError(f"checkpoint payload {where or 'root'}: cannot store a "
                        f"{type(value).__name__} (tensors, dicts, lists, tuples, str, int, "
                        "float, bool and None only)")


def payload_digest(payload: Mapping[str, Any]) -> str:
    """``"sha256:<hex>"`` of a payload's content, its ``"checksum"`` entry left out.

    Two payloads have the same digest when they hold the same keys, the same plain values
    (with their types) and tensors with the same dtypes, shapes and bytes, wherever the
    tensors live.

    Examples
    --------
    >>> import torch
    >>> from topofl.engine.checkpoint import payload_digest
    >>> a = payload_digest({"round": 1, "x": torch.zeros(2)})
    >>> a == payload_digest({"x": torch.zeros(2), "round": 1}), a.startswith("sha256:")
    (True, True)
    >>> a == payload_digest({"round": 1, "x": torch.zeros(2, dtype=torch.float64)})
    False
    """
    h = hashlib.sha256()
    _feed(h, {k: v for k, v in payload.items() if k != CHECKSUM_KEY}, "")
    return f"{_ALGO}:{h.hexdigest()}"


def write_payload(path: str | os.PathLike[str], payload: Mapping[str, Any]) -> None:
    """Write ``payload`` with its checksum to ``path`` and fsync it (no rename: the writers
    that replace a checkpoint atomically write their temporary file with it).

    Raises
    ------
    TypeError
        If the payload holds anything but plain data and tensors (nothing is written then).
    """
    _write(path, _checksummed(payload))


def _checksummed(payload: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(payload, Mapping):
        raise TypeError(f"payload must be a dict, got {type(payload).__name__}")
    body = {k: v for k, v in payload.items() if k != CHECKSUM_KEY}
    body[CHECKSUM_KEY] = payload_digest(body)
    return body


def _write(path: str | os.PathLike[str], body: Mapping[str, Any]) -> None:
    with open(path, "wb") as fh:
        torch.save(dict(body), fh)
        fh.flush()
        os.fsync(fh.fileno())


def save_checkpoint(path: str | os.PathLike[str], payload: dict[str, Any]) -> None:
    """Write ``payload`` with its checksum to ``path``, atomically and durably.

    Parameters
    ----------
    path : str or path
        The checkpoint file; its folder is created if needed. The payload is written to a
        temporary file this call creates beside ``path``
        (:func:`~topofl._utils.files.private_sibling`, removed again if the write fails), renamed
        over ``path``, and the folder is fsynced; a write killed midway leaves that
        ``.<name>.topofl-tmp-<pid>-...`` file, which the next save to ``path`` (and a run
        that checkpoints to ``path``, when it starts or resumes) removes: at once when its
        writer ran on this machine and is gone, after a minute untouched for a writer that
        may have run on another machine sharing the folder
        (:func:`~topofl._utils.files.remove_orphans`). A folder at ``path`` is an
        ``IsADirectoryError`` (never replaced here;
        ``topofl.run``'s checkpointer replaces the folder of a sharded checkpoint,
        :func:`topofl.distributed.checkpoint.save_any`).
    payload : dict
        String keys; values are tensors, dicts, lists, tuples, str, int, float, bool or None
        (what ``torch.load(weights_only=True)`` reads back). A ``"checksum"`` entry is
        (re)computed. ``payload`` itself is not modified.

    Raises
    ------
    TypeError
        If the payload holds anything else (nothing is written then).
    """
    path = Path(path)
    body = _checksummed(payload)
    if path.is_dir() and not path.is_symlink():
        raise IsADirectoryError(f"checkpoint path {path} is a folder, not a checkpoint file: "
                                "it is not replaced")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _write_beside(path, body)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def _write_beside(path: Path, body: Mapping[str, Any]) -> Path:
    tmp = private_sibling(path)
    try:
        _write(tmp, body)
    except BaseException:  # this call's own file, and only it
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def write_beside(path: str | os.PathLike[str], payload: Mapping[str, Any]) -> Path:
    """Write ``payload`` with its checksum to a new temporary file beside ``path`` (created
    by this call, :func:`~topofl._utils.files.private_sibling`), fsync it and return it, for the
    caller to rename into place; if the write fails, that file is removed and nothing else.

    Raises
    ------
    TypeError
        If the payload holds anything but plain data and tensors (nothing is written then).

    Examples
    --------
    >>> import os, tempfile, torch
    >>> from topofl.engine.checkpoint import load_checkpoint, write_beside
    >>> folder = tempfile.mkdtemp()
    >>> tmp = write_beside(os.path.join(folder, "ck.pt"), {"round": 1})
    >>> tmp.name.startswith(".ck.pt.topofl-tmp-"), load_checkpoint(tmp)["round"]
    (True, 1)
    """
    return _write_beside(Path(path), _checksummed(payload))


def _to(value: Any, device: torch.device) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return {k: _to(v, device) for k, v in value.items()}
    if isinstance(value, list):
        return [_to(v, device) for v in value]
    if isinstance(value, tuple):
        return tuple(_to(v, device) for v in value)
    return value


def load_checkpoint(path: str | os.PathLike[str], device: torch.device | str = "cpu",
                    ) -> dict[str, Any]:
    """The payload :func:`save_checkpoint` wrote to ``path``, checked, tensors on ``device``.

    The file is read with ``torch.load(weights_only=True)`` onto the CPU, its checksum is
    verified, and the tensors are then moved to ``device``. The ``"checksum"`` entry is not
    part of the returned dict.

    Raises
    ------
    CheckpointError
        A ``ValueError`` naming the file when it does not exist, is a folder, cannot be read
        as a checkpoint (truncated, not a ``torch.save`` archive, holding objects that are
        not plain data), has no checksum (not written by :func:`save_checkpoint`) or its
        content does not match the checksum (corrupted).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    p = Path(path)
    if not p.exists():
        raise CheckpointError(f"checkpoint {p} does not exist (a run writes its first one "
                              "after checkpoint_every rounds: one stopped before has none; start "
                              "it anew, with overwrite)")
    if p.is_dir():
        raise CheckpointError(f"checkpoint {p} is a folder, expected a checkpoint file (a "
                              "sharded checkpoint is read by topofl.run, or "
                              "topofl.distributed.checkpoint.load_any)")
    try:
        ck = torch.load(p, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - every way a damaged archive fails, one message
        size = p.stat().st_size
        raise CheckpointError(
            f"checkpoint {p} cannot be read ({size} bytes; truncated, corrupted or not a "
            f"topofl checkpoint: {type(exc).__name__}); it was not loaded"
        ) from None
    if not isinstance(ck, dict):
        raise CheckpointError(
            f"checkpoint {p} holds a {type(ck).__name__}, expected a dict written by "
            "topofl's save_checkpoint")
    stored = ck.pop(CHECKSUM_KEY, None)
    if not isinstance(stored, str):
        raise CheckpointError(
            f"checkpoint {p} has no checksum: it is corrupted, or was not written by topofl's "
            "save_checkpoint (or by a version before checksums); start the run again")
    try:
        found = payload_digest(ck)
    except TypeError as exc:
        raise CheckpointError(f"checkpoint {p} is corrupted: {exc}") from None
    if found != stored:
        raise CheckpointError(
            f"checkpoint {p} is corrupted: its content does not match its checksum "
            f"(stored {stored[:23]}..., computed {found[:23]}...)")
    out: dict[str, Any] = _to(ck, torch.device(device))
    return out


def _written_by(path: str | os.PathLike[str], suffixes: tuple[str, ...]) -> list[Path]:
    """``path`` and its siblings with ``suffixes``, links and relative parts resolved."""
    p = Path(path).expanduser().resolve()
    return [p, *(p.with_name(p.name + s) for s in suffixes)]


def check_output_paths(records_path: Any, checkpoint_path: Any) -> None:
    """Refuse a ``records_path`` that a checkpoint write at ``checkpoint_path`` would replace
    or remove (or the other way round).

    A checkpoint write replaces ``checkpoint_path`` and, for a sharded checkpoint, moves the
    previous one to ``checkpoint_path + ".old"`` while it does (its temporary files have
    names of their own, :func:`~topofl._utils.files.private_sibling`, as the records writer's have).
    The paths are compared after resolving links, ``~``
    and relative parts. Values that are not paths are left to the type checks.

    Raises
    ------
    ValueError
        When the two paths name the same file, or one of them lies in the other's way.

    Examples
    --------
    >>> from topofl.engine.checkpoint import check_output_paths
    >>> check_output_paths("runs/r.jsonl", "runs/r.pt")
    >>> check_output_paths("runs/r.jsonl", "runs/../runs/r.jsonl")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: records_path and checkpoint_path name the same file ...r.jsonl ...
    """
    if not all(isinstance(v, (str, os.PathLike)) for v in (records_path, checkpoint_path)):
        return
    rec = _written_by(records_path, ())
    ck = _written_by(checkpoint_path, (".old",))
    if rec[0] == ck[0]:
        raise ValueError(
            f"records_path and checkpoint_path name the same file {rec[0]} (after resolving "
            f"links and relative paths: {records_path!r} and {checkpoint_path!r}); each "
            "checkpoint would replace the records: give them different paths")
    for r in rec:
        for c in ck:
            if r == c or c in r.parents or r in c.parents:
                raise ValueError(
                    f"records_path {records_path!r} and checkpoint_path {checkpoint_path!r} "
                    f"are in each other's way ({r} and {c}, after resolving links and relative "
                    "paths): a checkpoint write would replace or remove the records; give "
                    "them paths apart")
