"""What the exponential families share: circulant mixing matrices, ``ceil(log2 n)``, the
fewest factors of a number."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np
import scipy.sparse as sp

from topofl.graph import Topology


def _ceil_log2(n: int) -> int:
    return (n - 1).bit_length()


def _circulant(n: int, offsets: Sequence[int], weights: Sequence[float]) -> sp.csr_array:
    """The circulant ``W = sum_d w_d P^d`` (``P_{i, i-1 mod n} = 1``): ``W[i, (i - d) mod n]
    = weights[e]`` for ``d = offsets[e]``, i.e. node ``i`` hears ``i - d``; offsets that coincide
    modulo ``n`` add their weights (in the order given). Canonical CSR, float64."""
    idx = np.arange(n, dtype=np.int64)
    rows = np.tile(idx, len(offsets))
    cols = np.concatenate([(idx - d) % n for d in offsets])
    vals = np.repeat(np.asarray(weights, dtype=np.float64), n)
    W = sp.coo_array((vals, (rows, cols)), shape=(n, n)).tocsr()
    W.sum_duplicates()
    W.sort_indices()
    return W


def _with_weights(top: Topology, weights: str) -> Topology:
    # Same graph and W; records which scheme of topofl.mixing reproduces W from the graph.
    return top.replace(weights=weights)


def _smallest_factorization(m: int, b: int) -> list[int] | None:
    """Fewest factors in ``[2, b]`` whose product is ``m`` (None if ``m`` has a prime > b)."""

    @cache
    def best(r: int) -> tuple[int, ...] | None:
        if r == 1:
            return ()
        out: tuple[int, ...] | None = None
        for f in range(min(b, r), 1, -1):
            if r % f == 0:
                sub = best(r // f)
                if sub is not None and (out is None or len(sub) + 1 < len(out)):
                    out = (f, *sub)
        return out

    res = best(m)
    return None if res is None else list(res)
