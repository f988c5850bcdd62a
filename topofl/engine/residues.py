"""Copies of some clients' rows that give them the numbers of the full call.

MKL's matrix products may round a client's numbers otherwise when its parameters, its
samples or its activations sit at another address modulo the vector width: measured on an
AVX512 EPYC, the float32 gradients of a plain gathered copy (``index_select``) of some
clients' rows moved in the last bits in 66 of 288 cases (MLPs of 3,274 to 120,000
parameters, batches of 5 to 16), and in none of 432 once each row kept its index modulo 2,
4, 8 or 16 and the copy started at the address of the original modulo 64 bytes.

A copy keeps a client's every tensor at its own address modulo 64 bytes when row ``s`` of
the copy holds client ``i`` with ``s = i (mod q)``, ``q`` the least common multiple of
``64 / gcd(bytes, 64)`` over the sizes a client of those tensors (:func:`period`), and
:func:`residue_slots` lays such a copy out. The local step takes the gradients of the few
clients that still move on one (``topofl.engine.local.LocalStepper``, a piece that
``skips_idle``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from torch import Tensor

__all__ = ["period", "plain_mlp_period", "residue_slots"]


def period(sizes: Iterable[int], element_size: int) -> int:
    """The least ``q`` such that ``q`` rows of each size (in elements of ``element_size``
    bytes) span a multiple of 64 bytes, for every size at once.

    Examples
    --------
    >>> from topofl.engine.residues import period
    >>> period([3274], 4), period([3274, 16 * 40], 8), period([16], 4)
    (8, 4, 1)
    """
    q = 1
    for size in sizes:
        q = math.lcm(q, 64 // math.gcd(int(size) * int(element_size), 64))
    return q


def plain_mlp_period(layers: Sequence[tuple[str, Any, Any, Any]], shapes: dict[str, Any],
                     num_params: int, x: Tensor) -> int | None:
    """:func:`period` of a plain MLP's tensors a client (``layers`` as
    ``topofl.engine.executors._plain_stack`` gives them, without convolutions; ``shapes``
    each parameter's): the parameter row, each parameter, the samples ``x`` ``[m, b, ...]``
    and each layer's activations. ``None`` off the CPU.

    Examples
    --------
    A row of 3,274 float32 parameters is 13,096 bytes, 8 apart from a multiple of 64:

    >>> import torch
    >>> from topofl.engine.executors import BatchedExecutor
    >>> m = tf.models.build_model("mlp", (40,), 10, seed=0, hidden=[64])
    >>> ex = BatchedExecutor(m, tf.engine.ParamLayout.from_model(m))
    >>> ex.residue_period(torch.zeros(3, 16, 40)), ex.residue_period(torch.zeros(3, 5, 40))
    (8, 8)
    >>> ex.residue_period(torch.zeros(3, 16, 40, dtype=torch.float64))
    4
    """
    if x.device.type != "cpu" or x.dim() < 3:
        return None
    b = int(x.shape[1])
    sizes = [num_params, b * math.prod(x.shape[2:])]
    for _, w, bias, _ in layers:
        sizes += [math.prod(shapes[k]) for k in (w, bias) if k is not None]
        if w is not None:
            sizes.append(b * int(shapes[w][0]))  # this layer's activations
    return period(sizes, x.element_size())


def residue_slots(rows: np.ndarray, q: int) -> np.ndarray:
    """Where each of the sorted ``rows`` goes in a copy that keeps every row's index modulo
    ``q``: row ``i``, the ``j``-th of its class ``i mod q``, goes to slot ``j q + i mod q``.
    Returns the row of every slot (``-1``: a slot no row fills), ``q`` times the largest
    class long.

    Examples
    --------
    >>> import numpy as np
    >>> from topofl.engine.residues import residue_slots
    >>> residue_slots(np.array([1, 2, 5, 9, 10]), 4).tolist()
    [-1, 1, 2, -1, -1, 5, 10, -1, -1, 9, -1, -1]
    >>> residue_slots(np.array([3, 4]), 1).tolist()
    [3, 4]
    """
    rows = np.asarray(rows, dtype=np.int64)
    cls = rows % q
    rank = np.zeros_like(rows)
    for r in range(q):
        hit = cls == r
        rank[hit] = np.arange(int(hit.sum()))
    width = int(rank.max()) + 1 if rows.size else 0
    out = np.full(width * q, -1, dtype=np.int64)
    out[rank * q + cls] = rows
    return out
