"""Array types and input checks shared by the partition schemes."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import numpy.typing as npt

from topofl._utils.rng import Seed
from topofl._utils.validation import check_int, check_memory

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def _readonly(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    a.flags.writeable = False
    return a


def _as_int_array(values: Any, name: str) -> IntArray:
    """``values`` as a 1-D int64 array (copied); torch tensors and lists are accepted."""
    try:
        import torch

        if isinstance(values, torch.Tensor):
            values = values.detach().cpu().numpy()
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype == np.bool_ or not (
        np.issubdtype(arr.dtype, np.integer) or (arr.size == 0 and arr.dtype == np.float64)
    ):
        raise TypeError(
            f"{name} must hold integers, got dtype {arr.dtype}"
            + (" (convert class labels with .astype(int))" if arr.dtype.kind == "f" else "")
        )
    return np.array(arr, dtype=np.int64)


def _check_labels(labels: Any, num_classes: int | None) -> tuple[IntArray, int]:
    """Validate ``labels`` (integers in ``[0, L)``); return a read-only int64 copy and ``L``."""
    y = _as_int_array(labels, "labels")
    if y.size == 0:
        raise ValueError("labels must hold at least one sample, got an empty array")
    lo, hi = int(y.min()), int(y.max())
    if num_classes is None:
        if lo < 0:
            raise ValueError(f"labels must be integers in [0, L), found {lo}")
        L = hi + 1
    else:
        L = check_int(num_classes, "num_classes", low=1)
        check_memory(16.0 * L, f"num_classes={L}")  # the partitions keep arrays of L entries
        if lo < 0 or hi >= L:
            bad = lo if lo < 0 else hi
            raise ValueError(f"labels must be integers in [0, num_classes)=[0, {L}), found {bad}")
    return _readonly(y), L


def _json_seed(seed: Seed | None) -> int | None:
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        return int(seed)
    return None


def _check_n_clients(n_clients: Any) -> int:
    return check_int(n_clients, "n_clients", low=1)


#: Bytes a label-skew scheme holds at its peak for each (class, client) cell of its tables
#: (the Dirichlet draws and proportions, the counts, the remainders and the random keys of the
#: largest-remainder rule, the class assignment). Measured with ``tracemalloc`` at 10^5-10^6
#: clients and 10-100 classes: 41-43 (dirichlet), 50-52 (pathological), 58-60
#: (dpfl_pathological). Below all three, so that a split that fits is never refused.
CELL_BYTES = 40


def _check_cells(num_classes: int, n_clients: int, scheme: str) -> None:
    """Refuse, before anything is drawn, a label-skew split whose ``(num_classes, n_clients)``
    tables cannot fit in memory (:data:`CELL_BYTES` a cell): the error
    (:class:`~topofl.exceptions.InsufficientMemoryError`, a ``ValueError``) names the estimate,
    the memory available and the largest number of clients that fits."""
    check_memory(float(CELL_BYTES) * num_classes * n_clients,
                 f"a {scheme} split of {num_classes:,} classes over {n_clients:,} clients",
                 per_client=float(CELL_BYTES) * num_classes)
