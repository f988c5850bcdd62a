r"""Gossip: ``X <- W_t X`` on the flat parameter buffer.

``W`` is turned into a torch matrix once per topology (cached). On CPU the product is computed in
column tiles of ``X`` (all ``n`` rows, about 1 MiB per tile): each tile is copied once into a
preallocated contiguous buffer that stays in cache, and the kernel writes the product straight
back into ``X`` (both kernels take a row stride for their output). The update is in place,
allocates nothing, and streams ``X`` through memory once for reading and once for writing. A
plain ``W @ X`` instead reads each row of ``X`` once per neighbour (when ``X`` does not fit in
cache) and allocates a fresh ``[n, P]`` result every round (page faults on every new buffer).

Two kernels compute a tile:

* **sparse**: CSR with int32 indices (MKL's fast path; about 15% faster than int64),
  ``nnz(W)`` multiply-adds per column;
* **dense**: BLAS GEMM, ``n^2`` multiply-adds per column at GEMM speed. It wins only for dense
  enough ``W``: on CPU the measured crossover is a fill of 15-25% (e.g. 0.9x the sparse time at
  n = 64, degree 20; equal at n = 256, degree 60; 1.6x slower at n = 100, degree 10), hence
  ``dense_fill = 0.2``.

Measured by ``analysis/bench_engine.py`` on a 2-core AVX-512 VM with 2 threads, 10-regular
graphs, float32 (time / time to copy ``X`` once; see ``analysis/bench_engine.md``):

============  ==========  ==============  ==================  ======================
n             P           this module     before (dense for   plain CSR ``W @ X``
                                          n <= 256, else      (separate run)
                                          tiled CSR)
============  ==========  ==============  ==================  ======================
100           7,850       0.9 ms, 4.1x    1.1 ms, 3.8x
1000          7,850       8.1 ms, 3.1x    12.7 ms, 5.4x       6.5x
100           62,006      6.2 ms, 2.5x    10.7 ms, 5.3x       4.6x
1000          62,006      64 ms, 2.0x     125 ms, 4.8x        9.7x
============  ==========  ==============  ==================  ======================

The sparse kernel runs at about 10-11 GFMA/s on two cores (11 multiply-adds per element of
``X``), so when ``X`` fits in cache (n = 100) its arithmetic, not memory traffic, sets the time.
On other devices the product is one ``W @ X`` (dense, or CSR through the vendor library) copied
back into ``X``.
"""

from __future__ import annotations

import warnings
import weakref
from typing import Any

import numpy as np
import torch
from torch import Tensor

from topofl.graph import Topology

__all__ = ["Mixer"]


def _csr_int32(topology: Topology, device: torch.device, dtype: torch.dtype) -> Tensor:
    """``W`` as a torch CSR tensor with int32 indices (MKL's fast path on CPU)."""
    A = topology.W
    idx_dtype = torch.int32 if A.nnz < 2**31 else torch.int64
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return torch.sparse_csr_tensor(
            torch.tensor(np.asarray(A.indptr), dtype=idx_dtype, device=device),
            torch.tensor(np.asarray(A.indices), dtype=idx_dtype, device=device),
            torch.tensor(np.asarray(A.data), dtype=dtype, device=device),
            size=A.shape,
            check_invariants=False,  # built from a canonical scipy CSR: sorted, in range
        )


class TopologyCache:
    """The torch entries of each topology a mixer has seen (``diag`` among them), built once
    by :meth:`_build` and weakly keyed: a topology nobody holds frees its entries."""

    def __init__(self) -> None:
        self._cache: weakref.WeakKeyDictionary[Topology, dict[str, Any]] = (
            weakref.WeakKeyDictionary()
        )

    def _build(self, topology: Topology) -> dict[str, Any]:
        raise NotImplementedError

    def _entry(self, topology: Topology) -> dict[str, Any]:
        e = self._cache.get(topology)
        if e is None:
            e = self._build(topology)
            self._cache[topology] = e
        return e

    def diagonal(self, topology: Topology) -> Tensor:
        """``diag(W)`` as a tensor over the clients this mixer holds."""
        d: Tensor = self._entry(topology)["diag"]
        return d


class Mixer(TopologyCache):
    """Applies mixing matrices to ``[n, P]`` buffers on one device and dtype.

    Parameters
    ----------
    device, dtype
        Where the buffers live.
    dense_max : int or None, default None
        ``None`` chooses per topology: a dense ``W`` when it has at least ``dense_fill * n^2``
        non-zeros (or ``n <= 8``), CSR otherwise. An int forces the dense product for
        ``n <= dense_max`` clients and CSR above (``0``: always CSR).
    dense_fill : float, default 0.2
        Fill ratio from which the automatic choice uses the dense product (measured crossover
        between 0.15 and 0.25 on CPU).
    tile_bytes : int, default 1 MiB
        Target size of one column tile of ``X`` (``n * tile * itemsize``) on CPU; at least 32
        columns.

    Examples
    --------
    >>> import torch
    >>> mixer = tf.engine.Mixer(torch.device("cpu"), torch.float64)
    >>> X = torch.tensor([[3.0], [0.0], [0.0], [1.0]], dtype=torch.float64)
    >>> mixer.mix_(tf.topologies.complete(4), X)
    >>> X.flatten().tolist()
    [1.0, 1.0, 1.0, 1.0]
    """

    def __init__(
        self,
        device: torch.device,
        dtype: torch.dtype,
        *,
        dense_max: int | None = None,
        dense_fill: float = 0.2,
        tile_bytes: int = 1 << 20,
    ) -> None:
        super().__init__()
        self.device = torch.device(device)
        self.dtype = dtype
        self.dense_max = None if dense_max is None else int(dense_max)
        self.dense_fill = float(dense_fill)
        self.tile_bytes = int(tile_bytes)
        self._buffers: dict[tuple[int, torch.dtype], Tensor] = {}

    def _is_dense(self, topology: Topology) -> bool:
        n = topology.n
        if self.dense_max is not None:
            return n <= self.dense_max
        return n <= 8 or topology.W.nnz >= self.dense_fill * n * n

    def _build(self, topology: Topology) -> dict[str, Any]:
        dense = self._is_dense(topology)
        if dense:
            W = torch.as_tensor(topology.to_dense(), dtype=self.dtype, device=self.device)
        elif self.device.type == "cpu":
            W = _csr_int32(topology, self.device, self.dtype)
        else:
            W = topology.to_torch(device=self.device, dtype=self.dtype)
        diag = torch.as_tensor(topology.W.diagonal().copy(), dtype=self.dtype,
                               device=self.device)
        return {"W": W, "diag": diag, "dense": dense}

    def matrix(self, topology: Topology) -> Tensor:
        """The torch ``W`` of ``topology`` (dense or CSR)."""
        W: Tensor = self._entry(topology)["W"]
        return W

    def _tile(self, n: int, itemsize: int) -> int:
        return max(32, self.tile_bytes // max(1, n * itemsize))

    def _scratch(self, numel: int, like: Tensor) -> Tensor:
        """A flat buffer of ``numel`` elements, kept between calls (one size at a time)."""
        key = (numel, like.dtype)
        buf = self._buffers.get(key)
        if buf is None or buf.device != like.device:
            buf = torch.empty(numel, dtype=like.dtype, device=like.device)
            self._buffers = {key: buf}
        return buf

    def mix_(self, topology: Topology, X: Tensor, cols: slice | None = None) -> None:
        """In place: ``X[:, cols] <- W X[:, cols]`` (all columns by default)."""
        e = self._entry(topology)
        W = e["W"]
        Xc = X if cols is None else X[:, cols]
        n, p = Xc.shape
        if n != topology.n:
            raise ValueError(f"X has {n} rows but the topology has n={topology.n}")
        if p == 0:
            return
        if X.device.type != "cpu":
            Xc.copy_(W @ Xc)
            return
        tile = min(p, self._tile(n, Xc.element_size()))
        buf = self._scratch(n * tile, Xc)
        dense = e["dense"]
        for a in range(0, p, tile):
            b = min(p, a + tile)
            tile_x = Xc[:, a:b]
            # stream the tile once into a contiguous buffer that stays in cache, then write the
            # product straight into X (both kernels take a row stride for the output)
            src = buf[: n * (b - a)].view(n, b - a).copy_(tile_x)
            if dense:
                torch.mm(W, src, out=tile_x)
            else:
                torch.addmm(tile_x, W, src, beta=0, out=tile_x)

    def mix_vector_(self, topology: Topology, w: Tensor) -> None:
        """In place ``w <- W w`` for a ``[n]`` vector (push-sum weights)."""
        W = self._entry(topology)["W"]
        w.copy_((W @ w.unsqueeze(1)).squeeze(1))
