"""The sharded placement: a run's clients split over the ``torch.distributed`` ranks.

:class:`Sharded` is what :func:`topofl.run` hands :func:`topofl.engine.run` when the process
is one of several ranks (``torchrun``, or a process group the caller initialised). The run
itself, its set-up, round loop, evaluation and records, is the engine's; this module only
joins the world, places the clients (:func:`~topofl.distributed.placement.place`, decided on
rank 0 and sent to every rank), and builds what the engine runs them with: the rank's
:class:`~topofl.distributed.comm.Shard` (the engine's ``Clients``), the rank's clients' data
(:class:`~topofl.distributed.data.ShardData`), the mixer that exchanges the rows other ranks
need (:class:`~topofl.distributed.mixer.ShardMixer`) and the sharded checkpointer. Every rank
computes the same evaluation rows; rank 0 writes the records file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from topofl.data.federated import FederatedData
from topofl.distributed.checkpoint import is_sharded, load_rows, save_sharded
from topofl.distributed.comm import Shard
from topofl.distributed.data import ShardData
from topofl.distributed.mixer import ShardMixer
from topofl.distributed.placement import Placement, place
from topofl.distributed.world import World, join
from topofl.engine.checkpoint import load_checkpoint
from topofl.engine.config import DTYPES, RunConfig
from topofl.engine.placement import Site
from topofl.engine.protocol import State
from topofl.graph import GraphLike, as_time_varying

__all__ = ["Sharded", "ShardedCheckpointer"]


@dataclass(frozen=True)
class ShardedCheckpointer:
    """Each rank saves its clients' rows (:mod:`topofl.distributed.checkpoint`) and loads
    them back from a sharded checkpoint written on any number of ranks, or from the single
    file of a one-process run.

    Parameters
    ----------
    shard : Shard
    """

    shard: Shard

    def save(self, path: str | os.PathLike[str], state: State, meta: Mapping[str, Any]
             ) -> None:
        """This rank's rows of ``state`` (a collective)."""
        save_sharded(str(path), self.shard, state, dict(meta))

    def load(self, path: str | os.PathLike[str], device: torch.device) -> dict[str, Any]:
        """This rank's rows of the checkpoint at ``path``."""
        shard = self.shard
        if is_sharded(path):
            return load_rows(path, shard, device)
        ck = load_checkpoint(path, device)
        ck["state"] = {k: shard.own(v) if v.dim() and v.shape[0] == shard.n else v
                       for k, v in ck["state"].items()}
        return ck


def _placement(world: World, topology: GraphLike | None, n: int, seed: int) -> Placement:
    """Rank 0's placement, sent to every rank (one source of truth)."""
    boot = Shard(world, Placement(np.zeros(n, dtype=np.int64), world.size, "boot"))
    obj: list[Any] = [place(topology, world.size, n=n, seed=seed) if world.rank == 0 else None]
    boot.call("sharing the placement", lambda: dist.broadcast_object_list(obj, src=0))
    p: Placement = obj[0]
    return p


@dataclass(frozen=True)
class Sharded:
    """The clients of a run split over the ranks of the default process group.

    Called by :func:`topofl.engine.run`'s set-up (``placement=Sharded()``; :func:`topofl.run`
    passes it when :func:`~topofl.distributed.is_distributed`). It joins the process group
    (initialising it from ``torchrun``'s environment when nobody did; NCCL for a CUDA device,
    ``cuda:LOCAL_RANK``), places the clients and returns the rank's
    :class:`~topofl.engine.placement.Site`. The records header gets the world size, the
    backend, the placement and, for a static graph, the arcs and rows it cuts.

    Raises
    ------
    TypeError
        When ``data`` is not a :class:`~topofl.data.FederatedData`.
    ValueError
        For more ranks than clients, or a ``torchrun`` environment without its variables.
    """

    def __call__(self, config: RunConfig, topology: GraphLike | None, data: Any) -> Site:
        """This rank's site of a run with ``config`` over ``topology`` and ``data``."""
        if not isinstance(data, FederatedData):
            raise TypeError(f"a distributed run needs a topofl.data.FederatedData, got "
                            f"{type(data).__name__}")
        world = join(config.device)
        n = int(data.num_clients)
        placement = _placement(world, topology, n, config.seed)
        shard = Shard(world, placement)
        about: dict[str, Any] = {"world_size": world.size, "backend": world.backend,
                                 "placement": placement.to_dict()}
        tv = None if topology is None else as_time_varying(topology)
        if tv is not None and tv.period == 1:
            about["cut_arcs"] = placement.cut_arcs(tv.at(0))
            about["cut_rows"] = placement.cut_rows(tv.at(0))
        return Site(shard, ShardData(data, shard.clients).to(world.device),
                    ShardMixer(shard, DTYPES[config.dtype]), ShardedCheckpointer(shard),
                    world.device, {"distributed": about})
