"""Other clients' rows for the data-driven algorithms, in one process or on a rank's rows.

In one process ``state.x`` holds every client's row and these helpers index it. In a
distributed run (``env.shard``, :class:`topofl.distributed.Shard`) it holds this rank's ``m``
clients; the helpers then go through the shard's exchange: :meth:`~topofl.distributed.Shard.
fetch` for the rows of chosen peers, :meth:`~topofl.distributed.Shard.all_rows` where every
row is needed. Every rank must call them in the same order (they are collectives there).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from topofl.engine.protocol import Services

__all__ = ["client_ids", "all_rows", "fetch", "owned", "total"]


def _shard(env: Services) -> Any:
    return getattr(env, "shard", None)


def client_ids(env: Services, m: int) -> np.ndarray:
    """``(m,)`` int64: the global id of each row of this process's ``[m, ...]`` buffers."""
    shard = _shard(env)
    if shard is None:
        return np.arange(m, dtype=np.int64)
    ids: np.ndarray = shard.clients
    return ids


def all_rows(env: Services, local: Tensor) -> Tensor:
    """``[n, ...]``: every client's row of the per-client tensor ``local`` (``[m, ...]``)."""
    shard = _shard(env)
    if shard is None:
        return local
    out: Tensor = shard.all_rows(local)
    return out


def fetch(env: Services, ids: Any, *local: Tensor) -> tuple[Tensor, ...]:
    """``[len(ids), ...]`` per tensor: the rows of the clients ``ids`` (global ids) of each
    per-client tensor in ``local``."""
    shard = _shard(env)
    want = np.asarray(ids, dtype=np.int64).reshape(-1)
    if shard is None:
        return tuple(v.index_select(0, torch.as_tensor(want, device=v.device)) for v in local)
    out: tuple[Tensor, ...] = shard.fetch(want, *local)
    return out


def owned(env: Services, full: Tensor) -> Tensor:
    """This process's rows of an ``[n, ...]`` tensor that every process knows whole."""
    shard = _shard(env)
    if shard is None:
        return full
    out: Tensor = shard.local(full)
    return out


def total(env: Services, local: Tensor) -> float:
    """The sum of ``local``'s entries over every process (exact for counts below 2**53)."""
    shard = _shard(env)
    v = local.detach().to(torch.float64).sum().reshape(1)
    if shard is not None:
        shard.all_reduce_(v, "a sum over the clients")
    return float(v.item())
