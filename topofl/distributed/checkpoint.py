"""Sharded checkpoints with ``torch.distributed.checkpoint``: each rank writes its clients' rows.

A checkpoint is a directory: the ``torch.distributed.checkpoint`` files, whose keys are
``"<state tensor>/<a>:<b>"`` for each contiguous run ``[a, b)`` of client ids a rank held (and
``"<tensor>/all"`` for a tensor without a client dimension, written by rank 0), and
``topofl.json`` with the round, the counters and the run's description. Because the keys name
client ids, not ranks, a checkpoint written on ``K`` ranks loads on ``K'`` ranks (each reads
the runs that hold its clients) or in one process (:func:`load_full`). It is written into
``<path>.tmp`` and renamed over ``<path>`` once every rank has written, so a crash leaves the
previous checkpoint whole.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor
from torch.distributed.checkpoint.filesystem import FileSystemReader
from torch.distributed.checkpoint.metadata import TensorStorageMetadata
from torch.distributed.checkpoint.state_dict_loader import load as dcp_load
from torch.distributed.checkpoint.state_dict_saver import save as dcp_save

from topofl.distributed.comm import Shard
from topofl.engine.protocol import State

__all__ = ["save_sharded", "load_rows", "load_full", "load_any", "is_sharded", "runs"]

META = "topofl.json"


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


def is_sharded(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a sharded checkpoint directory."""
    return (Path(path) / META).is_file()


def _per_client(v: Tensor, m: int) -> bool:
    return v.dim() > 0 and v.shape[0] == m


def save_sharded(path: str | os.PathLike[str], shard: Shard, state: State,
                 meta: dict[str, Any]) -> None:
    """Write this rank's rows of ``state`` (a collective: every rank calls it)."""
    final = Path(path)
    tmp = final.with_name(final.name + ".tmp")
    if shard.rank == 0:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    shard.call("checkpoint", lambda: dist.barrier())
    spans = runs(shard.clients)
    pos = {c: r for r, c in enumerate(shard.clients.tolist())}
    sd: dict[str, Any] = {}
    kinds: dict[str, str] = {}
    for name, v in state.tensors().items():
        v = v.detach().cpu()
        if _per_client(v, shard.m):
            kinds[name] = "clients"
            for a, b in spans:
                sd[f"{name}/{a}:{b}"] = v[pos[a]:pos[a] + (b - a)].contiguous()
        else:
            kinds[name] = "shared"
            if shard.rank == 0:
                sd[f"{name}/all"] = v.contiguous()
    shard.call("checkpoint", lambda: dcp_save(sd, checkpoint_id=tmp))
    if shard.rank == 0:
        (tmp / META).write_text(json.dumps({**meta, "n": shard.n, "kinds": kinds}))
        old = final.with_name(final.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if final.exists():
            os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    shard.call("checkpoint", lambda: dist.barrier())


def _plan(path: Path, want: Any) -> tuple[dict[str, Any], dict[str, Tensor]]:
    """The checkpoint's ``topofl.json`` and empty tensors for its keys that ``want(name, a,
    b)`` accepts (``a = b = -1`` for a tensor without clients)."""
    meta = json.loads((path / META).read_text())
    md = FileSystemReader(str(path)).read_metadata().state_dict_metadata
    sd: dict[str, Tensor] = {}
    for key, item in md.items():
        if not isinstance(item, TensorStorageMetadata):
            continue
        name, span = key.rsplit("/", 1)
        a, b = (-1, -1) if span == "all" else map(int, span.split(":"))
        if want(name, a, b):
            sd[key] = torch.empty(tuple(item.size), dtype=item.properties.dtype)
    return meta, sd


def _assemble(meta: dict[str, Any], sd: dict[str, Tensor], ids: np.ndarray
              ) -> dict[str, Tensor]:
    """Rows ``ids`` of every client tensor (and the shared tensors) from the loaded runs."""
    out: dict[str, Tensor] = {}
    where = {int(c): r for r, c in enumerate(ids.tolist())}
    for name, kind in meta["kinds"].items():
        if kind == "shared":
            out[name] = sd[f"{name}/all"]
            continue
        parts = [(k, v) for k, v in sd.items() if k.rsplit("/", 1)[0] == name]
        shape = tuple(parts[0][1].shape[1:]) if parts else ()
        t = torch.empty((ids.size, *shape), dtype=parts[0][1].dtype if parts else torch.float32)
        filled = 0
        for key, v in parts:
            a, b = map(int, key.rsplit("/", 1)[1].split(":"))
            mine = [c for c in range(a, b) if c in where]
            if mine:
                t[[where[c] for c in mine]] = v[[c - a for c in mine]]
                filled += len(mine)
        if filled != ids.size:
            raise ValueError(f"sharded checkpoint: tensor {name!r} lacks rows of some clients")
        out[name] = t
    return out


def load_rows(path: str | os.PathLike[str], shard: Shard, device: torch.device
              ) -> dict[str, Any]:
    """This rank's rows of a sharded checkpoint (a collective), in the payload format of
    :func:`topofl.engine.checkpoint.load_checkpoint` (``state`` holds ``[m, ...]`` rows)."""
    p = Path(path)
    lo, hi = int(shard.clients[0]), int(shard.clients[-1]) + 1
    ids = set(shard.clients.tolist())
    meta, sd = _plan(p, lambda name, a, b: a < 0 or (
        a < hi and b > lo and any(c in ids for c in range(a, b))))
    if int(meta["n"]) != shard.n:
        raise ValueError(f"checkpoint {path} holds {meta['n']} clients, the run {shard.n}")
    shard.call("loading the checkpoint", lambda: dcp_load(sd, checkpoint_id=str(p)))
    state = {k: v.to(device) for k, v in _assemble(meta, sd, shard.clients).items()}
    return {**{k: v for k, v in meta.items() if k not in ("n", "kinds")}, "state": state}


def load_full(path: str | os.PathLike[str], device: torch.device) -> dict[str, Any]:
    """A sharded checkpoint as one process sees it: every client's rows, in the payload format
    of :func:`topofl.engine.checkpoint.load_checkpoint` (no process group needed)."""
    p = Path(path)
    meta, sd = _plan(p, lambda name, a, b: True)
    with warnings.catch_warnings():  # DCP notes that it loads in a single process
        warnings.simplefilter("ignore", UserWarning)
        dcp_load(sd, checkpoint_id=str(p), no_dist=True)
    ids = np.arange(int(meta["n"]))
    state = {k: v.to(device) for k, v in _assemble(meta, sd, ids).items()}
    return {**{k: v for k, v in meta.items() if k not in ("n", "kinds")}, "state": state}


def load_any(path: str | os.PathLike[str], device: torch.device) -> dict[str, Any]:
    """:func:`load_full` for a sharded checkpoint directory, the engine's own loader for a
    file (what ``topofl.engine.checkpoint.load_checkpoint`` would do to resume a sharded
    checkpoint in one process)."""
    if is_sharded(path):
        return load_full(path, device)
    from topofl.engine.checkpoint import load_checkpoint

    return load_checkpoint(path, device)
