"""Assembling a :class:`~topofl.data.FederatedData`: the checks of its inputs, the clients'
shares of the official test set, every split's rows gathered into one float32 array block by
block, the flipped labels, and the seed's streams.

:meth:`FederatedData.from_partition <topofl.data.FederatedData.from_partition>` calls these
in order; the layout they build is described in :mod:`topofl.data.federated`.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from topofl._utils.rng import Seed, generator_at
from topofl.data.corrupt import LabelFlip, flip_labels
from topofl.data.datasets import Dataset
from topofl.data.partition import Partition, natural

__all__ = ["GATHER_BLOCK_VALUES"]

IntArray = npt.NDArray[np.int64]


def _check_partition_of(dataset: Any, partition: Any) -> None:
    """Refuse a ``dataset`` that is not a :class:`Dataset`, a ``partition`` that is not a
    :class:`Partition`, or one that does not partition ``dataset.y_train``."""
    if not isinstance(dataset, Dataset):
        raise TypeError(f"dataset must be a topofl.data.Dataset, got {type(dataset).__name__}")
    if not isinstance(partition, Partition):
        raise TypeError(f"partition must be a Partition, got {type(partition).__name__}")
    if partition.num_samples != dataset.y_train.size or not np.array_equal(
        partition.labels, dataset.y_train
    ):
        raise ValueError(
            "partition must partition dataset.y_train: it covers "
            f"{partition.num_samples} labels, the dataset has {dataset.y_train.size} "
            "training samples (or different labels)"
        )


def _distributed_test(dataset: Dataset, partition: Partition,
                      root: np.random.SeedSequence) -> Partition:
    """The clients' shares of the official test set (``test="distribute"``): each client's
    group's samples for a :func:`~topofl.data.natural` partition of a dataset with groups,
    else following each client's label distribution (stream 2 of ``root``)."""
    if partition.name == "natural" and dataset.groups_test is not None:
        return natural(
            dataset.y_test,
            dataset.groups_test,
            group_ids=partition.params["group_ids"],
            num_classes=dataset.num_classes,
        )
    return partition.distribute(dataset.y_test, seed=generator_at(root, 2))


#: Values of one block :func:`_gathered` copies at a time (the source rows gathered before
#: their cast into the output: 2 MiB of float32).
GATHER_BLOCK_VALUES = 1 << 19


def _gathered(parts: Sequence[tuple[npt.NDArray[Any], IntArray | None]],
              shape: tuple[int, ...]) -> npt.NDArray[np.float32]:
    """``[M, *shape]`` float32: the rows ``index`` of each source (every row for ``None``)
    one after the other, as ``np.concatenate`` of the gathers cast to float32, written into
    one array block of rows by block (the copy and the cast are elementwise: the same numbers,
    without a second copy of every sample; float32 rows are taken straight into it).

    Examples
    --------
    >>> import numpy as np
    >>> from topofl.data.assembly import _gathered
    >>> a = np.arange(12, dtype=np.float64).reshape(6, 2)
    >>> _gathered([(a, np.array([4, 0])), (a[:1], None)], (2,)).tolist()
    [[8.0, 9.0], [0.0, 1.0], [0.0, 1.0]]
    """
    total = sum(int(src.shape[0]) if idx is None else int(idx.size) for src, idx in parts)
    out = np.empty((total, *shape), dtype=np.float32)
    rows = max(1, GATHER_BLOCK_VALUES // max(1, int(np.prod(shape))))
    at = 0
    for src, idx in parts:
        m = int(src.shape[0]) if idx is None else int(idx.size)
        for a in range(0, m, rows):
            b = min(m, a + rows)
            if idx is not None and src.dtype == np.float32 and src.ndim == out.ndim:
                np.take(src, idx[a:b], axis=0, out=out[at + a:at + b])  # no copy in between
            else:
                out[at + a:at + b] = src[a:b] if idx is None else src[idx[a:b]]
        at += m
    return out


def _flip(y: npt.NDArray[Any], sizes: IntArray, plan: LabelFlip) -> npt.NDArray[Any]:
    return y if not plan.clients.size else flip_labels(y, sizes, plan)


def _sampling_root(root: np.random.SeedSequence) -> np.random.SeedSequence:
    """The sampling stream's root: child ``3`` of the seed (0 partition, 1 split, 2 test)."""
    return np.random.SeedSequence(
        entropy=root.entropy, spawn_key=tuple(root.spawn_key) + (3,), pool_size=root.pool_size
    )


def _json_seed(seed: Seed, root: np.random.SeedSequence) -> int | None:
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        return int(seed)
    if not tuple(root.spawn_key) and isinstance(root.entropy, int):
        return int(root.entropy)
    return None
