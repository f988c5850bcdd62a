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

**The band kernel** (CPU, from ``band_min_n = 2048`` clients). Where every row of ``W`` holds
its entries at the same offsets from the diagonal, as on a ring, a circulant of small offsets
or a one-peer round (:func:`band_plan`), row ``i`` of ``W X`` is ``sum_j w_ij X[i + d_j]`` and
a block of rows is ``k`` shifted slices of ``X`` added into a buffer that stays in cache (one
fused multiply-add an element and term), written back once no later block reads those rows:
no tile copy, no index, ``X`` read once and written once. MKL's CSR product on a ring instead
streams the tiles' copies and runs a row loop of three entries. Measured by
``analysis/bench_gossip.py`` (2-core shared Xeon VM, float32, each ratio against a copy of
``X`` into a preallocated buffer timed just before it; see ``analysis/bench_gossip.md``):

==========  =====  ===========  ============  ============  ============  ============
ring: n     P      copy         1 thread:     1 thread:     2 threads:    2 threads:
                   (1 thread)   csr           band          csr           band
==========  =====  ===========  ============  ============  ============  ============
10,000      650    3.4 ms       2.77x         1.50x         58.57x (*)    1.13x
10,000      7,850  48.9 ms      4.19x         1.59x         65.43x (*)    1.82x
100,000     650    40.3 ms      4.49x         1.66x         7.80x         1.55x
100,000     7,850  468 ms       4.83x         1.62x         4.81x         3.69x (**)
1,000,000   10     6.1 ms       2.42x         1.38x         2.44x         3.15x (**)
1,000,000   650    386 ms       6.72x         1.67x         6.33x         3.58x (**)
==========  =====  ===========  ============  ============  ============  ============

(*) other jobs held a core: a two-thread parallel region (the CSR kernel's, the copy's) waits
for both, so at more than one thread the band kernel keeps each operation under torch's
intra-op grain, on one thread. (**) the machine was quiet (the two-thread copy took 203 ms
against 386 ms at one thread): there the band kernel, on one core, is up to 3.7x a copy on two.
At P = 10 and n <= 100,000 (``X`` in cache, under 2 ms) it is no faster than CSR.

**Wide bands** (from 5 offsets a row, on rows of 64 columns or more: a circulant of offsets 1,
2, 3 has 7) take the band kernel's matrix form (issue 58): each run of 8 rows of ``W X`` is one
product of an ``[8, 8 + lead + trail]`` matrix holding the weights with the window of ``X`` the
rows read, and a block of rows one batched product over its overlapping windows (a strided view
of ``X``, no copy), so that an element's ``k`` terms are added in registers instead of in ``k``
passes over the block. It multiplies ``8 + lead + trail`` terms an element, zeros included, and
on a shared 2-core AMD EPYC, where a copy streams about twice as fast as on the Xeon above,
took circulant [1, 2, 3] from 3.1-4.3x to 2.7-3.6x a copy at 10,000 to 1,000,000 clients and
P = 650 and 7,850 (the same at n = 10,000, P = 650; ``analysis/bench_gossip.md``):
short of 2x, as every pure-torch form measured there (a strided-view sum, depthwise
convolutions, MKL's CSR product on blocks of rows) was. Rings and one-peer rounds (2-3 terms)
keep the shifted adds.

**Compiled** (issue 58): on buffers of 1 GiB or more (Numba and LLVM take about 0.4 GB of
memory once a process), where Numba imports (a dependency of the package) and rows have at
least 16 columns, the band kernel runs as one compiled pass (:mod:`topofl.engine._band_jit`):
an element's ``k`` terms added in a register, the result row held in a small ring of rows in
cache until the last row that reads it is done; rows that fit in L1 prefetch the rows ahead,
wider rows go in blocks of rows that share each source row's cache lines (every form the same
bits). On the shared 2-core AMD EPYC above, one thread, 10,000 to 1,000,000 clients and P =
650 and 7,850: rings and one-peer rounds at 0.67-1.28x a copy and circulant [1, 2, 3] at
1.11-1.45x (torch's forms: 3.27-4.59x; ``analysis/bench_gossip.md``). At P = 10 (under 16 columns)
torch's forms run. ``Mixer(..., jit=False)`` keeps torch's forms.

Its sums are those of the CSR kernel in another order, so the two agree to rounding (at most
9.2e-08 relative in float32 there), not bit for bit: MKL's CSR product is a chain of fused
multiply-adds in ``W``'s CSR order except on tiles 4, 8, ..., 24 columns wide (another order,
float32 and float64; on the Xeon above: on an AMD EPYC it differs from that chain at every width
from 1 to 40, ``analysis/bench_gossip.md``), and the band kernel adds a row's terms by offset
(at the rows that wrap around, another order than CSR's). Hence its threshold: every committed
result has at most 1,000 clients, and below ``band_min_n`` every product is the CSR kernel's,
bit for bit as before. Graphs without a band plan (random regular, the exponential graph, the
torus, whose offsets change at the ends of its rows) keep the CSR kernel: a gather of ``k``
neighbours a row from a copy of a column tile (``index_select``, or ``embedding_bag`` with
weights) measured slower than MKL's CSR product on random regular graphs, and so did a torus cut
into phases.

**One thread for the CSR kernel** (issue 85, from ``serial_min_n = 2048`` clients). MKL's CSR
product runs each column tile in a parallel region of torch's threads; where another process
holds a core, every region waits for it: a round of ``P / tile`` regions (21 at 10^4 x 650) took
31-42x a copy at 10^4 clients and 11-12x at 10^5 on the shared 2-core Xeon of
``analysis/bench_gather_floor.md`` (random 6-regular and Erdős–Rényi graphs, float32, P = 650,
two threads, CPU time: 0.32 s where the same tiles on one thread took 29 ms). On one thread the
tiles are what they were (each source tile copied once into a buffer that stays in cache, the
product written straight back into ``X``) and cost what a gather of the ``k + 1`` rows costs:
1.09-1.32x the fastest gather measured there (NumPy ``take`` and reduce, torch
``index_select`` and add, a compiled row loop serial or parallel, on rows renumbered by reverse
Cuthill-McKee or not; 3.4-6.7x a copy), in place and with no buffer of ``X``'s size. Rows
renumbered by reverse Cuthill-McKee gathered in 0.87-0.97x the time, but ``X``'s rows are the
clients' and a random graph has no narrow band to use in place, so the kernel keeps their
order. On an idle machine two threads can halve the product's time
(``analysis/bench_gossip.md``, 10^6 x 650), and with more threads than
:data:`SERIAL_MAX_THREADS` (the two measured) the kernel keeps torch's threads, since one
thread was not measured against many there; ``Mixer(..., serial_min_n=None)`` keeps torch's
threads at every size. The rows are split between threads, not a row's sum: the same bits
either way (the tests). Below ``serial_min_n`` (every committed result) nothing changes.
"""

from __future__ import annotations

import warnings
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor

from topofl.engine import _band_jit
from topofl.graph import Topology

__all__ = ["BandPlan", "Mixer", "band_plan"]


def _csr_int32(topology: Topology | sp.csr_array, device: torch.device,
               dtype: torch.dtype) -> Tensor:
    """``W`` (a topology's, or a canonical scipy CSR matrix) as a torch CSR tensor with int32
    indices (MKL's fast path on CPU)."""
    A = topology.W if isinstance(topology, Topology) else topology
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


@dataclass(frozen=True, eq=False)
class BandPlan:
    """How the band kernel applies a ``W`` whose every row ``i`` holds ``k`` entries at the
    same offsets: row ``i`` of ``W X`` is ``sum_j w_ij X[(i + d_j) mod n]`` (a ring, any
    circulant, a one-peer round; the weights may differ between rows). Built by
    :func:`band_plan`.

    ``deltas`` are the offsets, sorted (``-n/2 <= d < n/2``); ``lead`` and ``trail`` how far
    back and forward they reach; ``weights`` slot ``j``'s weight when it is the same on every
    row, else ``None`` and ``row_weights[j, i]`` (``[k, n]``) holds them.
    """

    n: int
    k: int
    deltas: tuple[int, ...]
    lead: int
    trail: int
    weights: tuple[float | None, ...]
    row_weights: Tensor | None


def band_plan(W: sp.csr_array, *, device: torch.device | str = "cpu",
              dtype: torch.dtype = torch.float64,
              max_band: int | None = None) -> BandPlan | None:
    """The band kernel's plan for ``W``, or ``None`` where it does not apply: rows whose
    entries (explicit zeros included) are not at the same offsets from the diagonal, or an
    offset farther than ``max_band``.

    Parameters
    ----------
    W : scipy.sparse.csr_array, shape (n, n)
    device, dtype
        Where the plan's tensors live.
    max_band : int, optional
        Farthest offset allowed, cyclically (default ``n // 16``: the kernel's buffers then
        hold at most about a fifth of ``X``, and a few blocks of rows otherwise).

    Notes
    -----
    $O(nk)$ time and memory ($k$ entries a row).

    Examples
    --------
    >>> plan = tf.engine.gossip.band_plan(tf.topologies.ring(40).W)
    >>> plan.deltas, plan.lead, plan.trail, [round(w, 4) for w in plan.weights]
    ((-1, 0, 1), 1, 1, [0.3333, 0.3333, 0.3333])
    >>> tf.engine.gossip.band_plan(tf.topologies.torus(40, 10).W) is None  # the wrap within a row
    True
    >>> tf.engine.gossip.band_plan(tf.topologies.random_regular(64, 4, seed=0).W) is None
    True
    """
    n = int(W.shape[0])
    deg = np.diff(W.indptr)
    if n == 0 or deg[0] == 0 or not bool(np.all(deg == deg[0])):
        return None
    k = int(deg[0])
    limit = n // 16 if max_band is None else int(max_band)
    d = np.asarray(W.indices, dtype=np.int64).reshape(n, k) - np.arange(n)[:, None]
    d += n // 2
    d %= n
    d -= n // 2
    for f in (np.min, np.max, np.sum):  # cheap tests first (a random graph fails them)
        v = f(d, axis=1)
        if not bool((v == v[0]).all()):
            return None
    order = np.argsort(d, axis=1, kind="stable")
    d = np.take_along_axis(d, order, axis=1)
    if not bool((d == d[0]).all()) or int(np.abs(d[0]).max()) > limit:
        return None
    data = np.take_along_axis(np.asarray(W.data).reshape(n, k), order, axis=1)
    del order
    deltas = tuple(int(x) for x in d[0])
    weights = tuple(float(data[0, j]) if bool((data[:, j] == data[0, j]).all()) else None
                    for j in range(k))
    rows = (None if all(w is not None for w in weights) else
            torch.as_tensor(np.ascontiguousarray(data.T), dtype=dtype, device=device))
    return BandPlan(n, k, deltas, max(0, -deltas[0]), max(0, deltas[-1]), weights, rows)


_BLOCK_BYTES = 1 << 18  # the band kernel's block of rows at one thread
_PANEL = 8  # rows of one product of the band kernel's matrix form (wide bands)
_PANEL_MIN_K = 5  # from this many offsets a row, wide enough rows take the matrix form
_PANEL_MIN_P = 64
_JIT_MIN_P = 16  # rows narrower than this keep torch's blocks (a row's loop is too short)
#: by default the compiled band kernel runs on buffers of this many bytes or more: loading
#: Numba and LLVM and compiling take about 0.4 GB of resident memory and a second, once a
#: process (measured: 109 MB imported, 286 MB more at the first compile)
JIT_MIN_BYTES = 1 << 30
#: The most torch threads at which the CSR kernel runs on one thread from ``serial_min_n``
#: clients (:class:`Mixer`): the two threads of the shared machine where it was measured.
SERIAL_MAX_THREADS = 2
_GRAIN = 32768  # torch's intra-op grain (at::internal::GRAIN_SIZE): smaller ops run serially


def _term(out: Tensor, src: Tensor, w: float | None, wcol: Tensor | None, first: bool) -> None:
    """``out (+)= w src``, one fused multiply-add an element (``w`` a scalar, else the rows'
    own weights ``wcol``, broadcast along the columns)."""
    if w is None:
        assert wcol is not None  # the plan keeps them when a slot's weights differ
        if first:
            torch.mul(src, wcol, out=out)
        else:
            out.addcmul_(wcol, src)
    elif first:
        torch.mul(src, w, out=out)
    else:
        out.add_(src, alpha=w)


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
    band_min_n : int or None, default 2048
        On CPU, a sparse ``W`` that :func:`band_plan` accepts (a ring, a circulant of small
        offsets, a one-peer round: every row the same offsets) is applied by the band kernel from
        this many clients up (``0``: at every size; ``None``: never); other graphs, and
        smaller ones, by the CSR kernel. Every committed result (at most 1,000 clients) was
        computed with the CSR kernel, and the two agree to rounding, not bit for bit (they
        add a row's terms in other orders).
    serial_min_n : int or None, default 2048
        On CPU, from this many clients the CSR kernel (a sparse ``W`` without a band plan)
        runs on one thread when torch has at most :data:`SERIAL_MAX_THREADS` (2) threads,
        torch's thread count restored after: robust to a shared machine,
        where each of its parallel regions waits for the busiest core (``None``: torch's
        threads at every size; ``0``: one thread at every size). The same sums either way.
    block_bytes : int or None, default None
        Target size of the block of rows the band kernel finishes before the next, so that
        it stays in cache while its ``k`` terms are added. ``None``: 256 KiB at one thread;
        at more, blocks under torch's intra-op grain (32,768 elements), so that each of the
        kernel's many small operations runs on one thread: measured on a shared 2-core
        machine, parallel regions of two threads made it 10-40x slower (every operation
        waits for the busier core).
    jit : bool or None, default None
        Whether the band kernel runs compiled with Numba (:mod:`topofl.engine._band_jit`: one
        pass, row by row, on rows of at least 16 columns; equal to torch's forms to
        rounding). ``None``: on buffers of at least 1 GiB (Numba, LLVM and the compiled
        code take about 0.4 GB once a process), when Numba imports here; ``False``: torch's
        shifted adds and matrix form; ``True``: at every size, Numba or a
        ``RuntimeError``.

    Examples
    --------
    >>> import torch
    >>> mixer = tf.engine.gossip.Mixer(torch.device("cpu"), torch.float64)
    >>> X = torch.tensor([[3.0], [0.0], [0.0], [1.0]], dtype=torch.float64)
    >>> mixer.mix_(tf.topologies.complete(4), X)
    >>> X.flatten().tolist()
    [1.0, 1.0, 1.0, 1.0]

    A sparse ring takes the band kernel's shifted adds (the kernel is picked per topology):

    >>> ring = tf.topologies.ring(40)
    >>> fast = tf.engine.gossip.Mixer(torch.device("cpu"), torch.float64, band_min_n=0)
    >>> X = torch.zeros(40, 2, dtype=torch.float64)
    >>> X[0] = 3.0
    >>> fast.mix_(ring, X)
    >>> fast.kernel(ring), X[:, 0].nonzero().flatten().tolist(), X[0].tolist()
    ('band', [0, 1, 39], [1.0, 1.0])
    """

    def __init__(
        self,
        device: torch.device,
        dtype: torch.dtype,
        *,
        dense_max: int | None = None,
        dense_fill: float = 0.2,
        tile_bytes: int = 1 << 20,
        band_min_n: int | None = 2048,
        serial_min_n: int | None = 2048,
        block_bytes: int | None = None,
        jit: bool | None = None,
    ) -> None:
        super().__init__()
        if jit is not None and not isinstance(jit, bool):
            raise TypeError(f"jit must be True, False or None, got {type(jit).__name__}")
        if jit and not _band_jit.available():
            raise RuntimeError("jit=True needs Numba, which does not import here "
                               "(pip install numba, or jit=None to fall back to torch)")
        self.jit = jit
        if band_min_n is not None and int(band_min_n) < 0:
            raise ValueError(f"band_min_n must be >= 0 or None, got {band_min_n}")
        if serial_min_n is not None and int(serial_min_n) < 0:
            raise ValueError(f"serial_min_n must be >= 0 or None, got {serial_min_n}")
        if block_bytes is not None and int(block_bytes) < 1:
            raise ValueError(f"block_bytes must be >= 1 or None, got {block_bytes}")
        self.device = torch.device(device)
        self.dtype = dtype
        self.dense_max = None if dense_max is None else int(dense_max)
        self.dense_fill = float(dense_fill)
        self.tile_bytes = int(tile_bytes)
        self.band_min_n = None if band_min_n is None else int(band_min_n)
        self.serial_min_n = None if serial_min_n is None else int(serial_min_n)
        self.block_bytes = None if block_bytes is None else int(block_bytes)
        self._buffers: dict[tuple[int, torch.dtype], Tensor] = {}

    def _is_dense(self, topology: Topology) -> bool:
        return self.takes_dense(topology.n, topology.W.nnz)

    def takes_dense(self, n: int, nnz: int) -> bool:
        """Whether :meth:`mix_` applies a ``W`` of ``n`` rows and ``nnz`` non-zeros with the
        dense product here (else a sparse kernel: CSR, or the band kernel for a band)."""
        if self.dense_max is not None:
            return n <= self.dense_max
        return n <= 8 or nnz >= self.dense_fill * n * n

    def _build(self, topology: Topology) -> dict[str, Any]:
        dense = self._is_dense(topology)
        band = None
        if (not dense and self.device.type == "cpu" and self.band_min_n is not None
                and topology.n >= self.band_min_n):
            band = band_plan(topology.W, device=self.device, dtype=self.dtype)
        diag = torch.as_tensor(topology.W.diagonal().copy(), dtype=self.dtype,
                               device=self.device)
        # the torch W is built on first use when the band kernel does the mixing
        W = None if band is not None else self._torch_matrix(topology, dense)
        return {"W": W, "diag": diag, "dense": dense, "band": band}

    def _torch_matrix(self, topology: Topology, dense: bool) -> Tensor:
        if dense:
            return torch.as_tensor(topology.to_dense(), dtype=self.dtype, device=self.device)
        if self.device.type == "cpu":
            return _csr_int32(topology, self.device, self.dtype)
        return topology.to_torch(device=self.device, dtype=self.dtype)

    def matrix(self, topology: Topology) -> Tensor:
        """The torch ``W`` of ``topology`` (dense or CSR)."""
        e = self._entry(topology)
        if e["W"] is None:
            e["W"] = self._torch_matrix(topology, e["dense"])
        W: Tensor = e["W"]
        return W

    def kernel(self, topology: Topology) -> str:
        """Which kernel :meth:`mix_` applies ``topology`` with on this mixer's device:
        ``"dense"``, ``"csr"`` or ``"band"`` (:class:`BandPlan`)."""
        e = self._entry(topology)
        if e["dense"]:
            return "dense"
        return "csr" if e["band"] is None else "band"

    def _tile(self, n: int, itemsize: int) -> int:
        return max(32, self.tile_bytes // max(1, n * itemsize))

    def _scratch(self, numel: int, like: Tensor) -> Tensor:
        """A flat buffer of at least ``numel`` elements, kept between calls (one at a time,
        replaced by a larger one when a call needs more)."""
        key = (numel, like.dtype)
        buf = next((b for (m, d), b in self._buffers.items() if d == like.dtype and m >= numel),
                   None)
        if buf is None or buf.device != like.device:
            buf = torch.empty(numel, dtype=like.dtype, device=like.device)
            self._buffers = {key: buf}
        return buf

    def mix_(self, topology: Topology, X: Tensor, cols: slice | None = None) -> None:
        """In place: ``X[:, cols] <- W X[:, cols]`` (all columns by default)."""
        e = self._entry(topology)
        Xc = X if cols is None else X[:, cols]
        n, p = Xc.shape
        if n != topology.n:
            raise ValueError(f"X has {n} rows but the topology has n={topology.n}")
        if p == 0:
            return
        if X.device.type != "cpu":
            Xc.copy_(self.matrix(topology) @ Xc)
            return
        band: BandPlan | None = e["band"]
        if band is not None:
            self._band_(band, Xc)
            return
        dense = e["dense"]
        threads = torch.get_num_threads()
        if (dense or threads == 1 or threads > SERIAL_MAX_THREADS or self.serial_min_n is None
                or n < self.serial_min_n):
            self._tiles_(e["W"], Xc, dense)
            return
        torch.set_num_threads(1)  # the CSR kernel on one thread (see the module's docstring)
        try:
            self._tiles_(e["W"], Xc, dense)
        finally:
            torch.set_num_threads(threads)

    def _tiles_(self, W: Tensor, Xc: Tensor, dense: bool) -> None:
        """``Xc <- W Xc`` on CPU, column tile by column tile (the dense or CSR kernel)."""
        n, p = Xc.shape
        tile = min(p, self._tile(n, Xc.element_size()))
        buf = self._scratch(n * tile, Xc)
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

    def mix_rows_(self, W: sp.csr_array, dst: np.ndarray, X: Tensor) -> None:
        """In place: ``X[dst] <- W X``, the other rows unchanged (every row is read before
        any is written), for a map that moves only the ``m = len(dst)`` rows ``dst`` of
        ``X`` (``n`` rows) and reads only a few: ``O(m)`` rows of work where :meth:`mix_` of
        the full ``n x n`` map (rows ``dst`` of it ``W``, every other row ``e_i``) takes
        ``O(n)``.

        ``W`` (``m x n``, canonical CSR) is the full map's rows ``dst``. On the CPU the rows
        ``W`` reads are copied into the tile buffer :meth:`mix_` uses, each at its own row,
        and the CSR kernel takes them on the same column tiles: so each row of ``dst``
        gets the bits :meth:`mix_` of the full map gives it where that map takes the CSR
        kernel (:meth:`takes_dense` false, not a band). A source row at another position
        of the buffer (another address modulo the vector width) gets other bits from MKL's
        kernel, measured; ``tests/algorithms/test_teleport.py`` checks the equality on
        Teleportation's maps. On another device, a dense product of the rows read: equal to
        :meth:`mix_` to rounding.

        Examples
        --------
        Rows 0 and 3 of five receive the mean of rows 1 and 2; the other rows keep theirs.

        >>> import numpy as np, scipy.sparse as sp, torch
        >>> mixer = tf.engine.gossip.Mixer(torch.device("cpu"), torch.float64)
        >>> X = torch.arange(5.0, dtype=torch.float64).unsqueeze(1)
        >>> W = sp.csr_array(np.array([[0, 0.5, 0.5, 0, 0], [0, 0.5, 0.5, 0, 0]]))
        >>> mixer.mix_rows_(W, np.array([0, 3]), X)
        >>> X.flatten().tolist()
        [1.5, 1.0, 2.0, 1.5, 4.0]
        """
        dst = np.array(dst, dtype=np.int64)
        n, p = X.shape
        if W.shape != (dst.size, n):
            raise ValueError(f"W must be (len(dst), n) = ({dst.size}, {n}), got {W.shape}")
        if dst.size != np.unique(dst).size:
            raise ValueError("dst must not repeat a row")
        if dst.size == 0 or p == 0:
            return
        dev = X.device
        di = torch.as_tensor(dst, device=dev)
        cols = np.unique(W.indices).astype(np.int64)
        read = torch.as_tensor(cols, device=dev)
        if dev.type != "cpu":  # a dense (m, read) product of the rows read (to rounding)
            Wt = torch.as_tensor(sp.csr_array(W)[:, cols].toarray(), dtype=X.dtype, device=dev)
            X.index_copy_(0, di, Wt @ X.index_select(0, read))
            return
        Wc = _csr_int32(sp.csr_array(W), dev, X.dtype)
        tile = min(p, self._tile(n, X.element_size()))
        buf = self._scratch(n * tile, X)
        out = torch.empty(dst.size, p, dtype=X.dtype, device=dev)
        for a in range(0, p, tile):
            b = min(p, a + tile)
            src = buf[: n * (b - a)].view(n, b - a)  # mix_'s tile buffer; the rows W reads
            src.index_copy_(0, read, X[:, a:b].index_select(0, read))
            o = out[:, a:b]
            torch.addmm(o, Wc, src, beta=0, out=o)
        X.index_copy_(0, di, out)

    def _band_(self, plan: BandPlan, Xc: Tensor) -> None:
        """Shifted adds, in place, block of rows by block of rows: a block's ``k`` terms are
        added into a buffer that stays in cache, each term a shifted slice of ``Xc``; the
        buffer is written into the block's rows only once the blocks that read them are done
        (the next one, or the next ``ceil(lead / rows)``), so that every row a block reads
        is still as it was (the rows after the wrap come from a copy of the first ``trail``
        rows). ``X`` is read once and written once."""
        n, p = Xc.shape
        lead, trail = plan.lead, plan.trail
        if (p >= _JIT_MIN_P and not Xc.requires_grad and self.jit is not False
                and Xc.dtype in (torch.float32, torch.float64)  # what Numba compiles here
                and (self.jit or n * p * Xc.element_size() >= JIT_MIN_BYTES)
                and _band_jit.available()):
            x = Xc.numpy()
            slots = (plan.row_weights.numpy() if plan.row_weights is not None else
                     np.broadcast_to(np.asarray(plan.weights, dtype=x.dtype)[:, None],
                                     (plan.k, n)))
            _band_jit.band_(x, plan.deltas, slots, lead, trail)
            return
        item = Xc.element_size()
        block = self.block_bytes
        if block is None:
            block = _BLOCK_BYTES if torch.get_num_threads() == 1 else (_GRAIN - 1) * item
        R = min(n, max(1, block // (p * item)))
        panel = self._panel(plan, p, R, Xc)
        if panel is not None:
            R -= R % _PANEL
        held = -(-lead // R)  # blocks computed but not yet written
        buf = self._scratch(((held + 1) * R + trail) * p, Xc)
        accs = [buf[i * R * p: (i + 1) * R * p].view(R, p) for i in range(held + 1)]
        head = buf[(held + 1) * R * p: ((held + 1) * R + trail) * p].view(trail, p)
        head.copy_(Xc[:trail])  # rows 0..trail-1 as they were: the rows after the wrap
        rw = plan.row_weights
        terms = list(zip(plan.deltas, plan.weights))
        pending: deque[tuple[int, int, Tensor]] = deque()
        for i, r0 in enumerate(range(0, n, R)):
            r1 = min(n, r0 + R)
            o = accs[i % (held + 1)][: r1 - r0]
            if (panel is not None and r0 >= lead and r1 + trail <= n
                    and (r1 - r0) % _PANEL == 0):  # X alone, the matrix form
                m = (r1 - r0) // _PANEL
                s0, s1 = Xc.stride()
                windows = Xc.as_strided((m, _PANEL + lead + trail, p), (_PANEL * s0, s0, s1),
                                        Xc.storage_offset() + (r0 - lead) * s0)
                torch.bmm(panel.expand(m, -1, -1), windows, out=o.view(m, _PANEL, p))
            elif rw is None and r0 >= lead and r1 + trail <= n:  # X alone: one slice a term
                for j, (d, w) in enumerate(terms):
                    _term(o, Xc[r0 + d: r1 + d], w, None, j == 0)
            else:
                for j, (d, w) in enumerate(terms):
                    # the source rows r0+d..r1+d-1 piece by piece: before row 0 (the first
                    # blocks), rows 0..n-1, after the wrap
                    for a, b, src, base in ((r0 + d, min(r1 + d, 0), Xc, -n),
                                            (max(r0 + d, 0), min(r1 + d, n), Xc, 0),
                                            (max(r0 + d, n), r1 + d, head, n)):
                        if a < b:
                            _term(o[a - d - r0: b - d - r0], src[a - base: b - base], w,
                                  None if rw is None else rw[j, a - d: b - d, None], j == 0)
            pending.append((r0, r1, o))
            if len(pending) > held:
                a0, a1, done = pending.popleft()
                Xc[a0:a1].copy_(done)
        while pending:
            a0, a1, done = pending.popleft()
            Xc[a0:a1].copy_(done)

    @staticmethod
    def _panel(plan: BandPlan, p: int, R: int, like: Tensor) -> Tensor | None:
        """The band kernel's matrix form for wide bands, or ``None``: ``[8, 8 + lead +
        trail]``, row ``i`` holding the weights at columns ``i + lead + d``, so that 8 rows of
        ``W X`` are one product with the window of ``X`` they read, and a block of rows one
        batched product over its overlapping windows (a view: ``X`` read once, all ``k``
        terms of an element added in registers, against ``k`` passes over the block for the
        shifted adds). It adds ``8 + lead + trail`` products an element, zeros included, so
        it is used from ``_PANEL_MIN_K = 5`` offsets a row (e.g. a circulant of offsets 1, 2,
        3: 7 terms, 14 products) on rows of at least 64 columns, with the same weight for
        every row of a slot. A non-finite entry of ``X`` then also turns the other rows of
        its 8-row panel to NaN (``0 * inf``), as a diverged run has no finite rows left to
        keep."""
        if (plan.row_weights is not None or plan.k < _PANEL_MIN_K or p < _PANEL_MIN_P
                or R < _PANEL):
            return None
        B = torch.zeros(_PANEL, _PANEL + plan.lead + plan.trail, dtype=like.dtype,
                        device=like.device)
        for d, w in zip(plan.deltas, plan.weights):
            assert w is not None  # every slot's weight is shared when row_weights is None
            for i in range(_PANEL):
                B[i, i + plan.lead + d] = w
        return B

    def mix_vector_(self, topology: Topology, w: Tensor) -> None:
        """In place ``w <- W w`` for a ``[n]`` vector (push-sum weights)."""
        if w.device.type == "cpu" and self._entry(topology)["band"] is not None:
            Mixer.mix_(self, topology, w.unsqueeze(1))  # this graph as it is (not a subclass')
            return
        W = self.matrix(topology)
        w.copy_((W @ w.unsqueeze(1)).squeeze(1))
