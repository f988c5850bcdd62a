"""The engine sharded over ``torch.distributed`` ranks: one run over processes, GPUs, machines.

Launch a config with ``torchrun --nproc-per-node K -m topofl run CONFIG.toml`` (or call
``topofl.run`` in every process of an initialised process group): :func:`topofl.run` sees the
distributed environment (:func:`is_distributed`) and gives :func:`topofl.engine.run` the
:class:`Sharded` placement; the set-up, the round loop and the evaluation are the engine's.
Each rank holds the clients a :class:`Placement` gives it (a graph partition that cuts few
edges), their rows of the ``[n, P]`` state and only their data (:class:`ShardData`); gossip
exchanges only the rows other ranks need (:class:`ShardMixer`, one ``all_to_all_single`` per
step), averages go through ``all_reduce`` (:class:`Shard`), and the data-driven algorithms
fetch the rows of the peers they score or average with (:meth:`Shard.fetch`:
``all_to_all_single`` with counts from who needs what; :meth:`Shard.all_rows` where every row
is needed). The records equal those of the single-process run; rank 0 writes them. Checkpoints
are sharded (one checksummed file per rank and a JSON manifest, read without unpickling:
:mod:`topofl.distributed.checkpoint`) and resume on any number of ranks.
"""

# loaded with the package, as before; their names are reached by module path
from topofl.distributed import checkpoint, comm, data, mixer, placement, sharded  # noqa: F401
from topofl.distributed.world import DistributedError, World, is_distributed, join, leave

__all__ = [
    "DistributedError",
    "World",
    "is_distributed",
    "join",
    "leave",
    "checkpoint",
]
