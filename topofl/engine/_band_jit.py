"""The band kernel compiled with Numba: ``X <- W X`` in place, row by row, in one pass.

Row ``i`` of ``W X`` is ``sum_j w_ij X[(i + d_j) mod n]`` (:class:`~topofl.engine.gossip.
BandPlan`). An element's ``k`` terms are added in a register, in the plan's order of offsets
(``a = w0 * s0[p]``, then ``a = a + w1 * s1[p]``, ...), and the sum goes into a row of a small
ring of result rows that stays in cache; result row ``i`` is written into ``X`` once row
``i + lead``, the last that reads row ``i``, is done, and the rows after the wrap are read from
a copy of the first ``trail`` rows. ``X`` is read from memory once and written once, the ``k``
reads of a row after the first coming from cache: what torch's shifted adds
(:meth:`~topofl.engine.gossip.Mixer._band_`) do block by block in ``k`` passes over each block,
in one compiled loop.

The loop over a row's columns is written out for each ``k`` (:func:`_source`, compiled once a
``k``, form, dtype and layout in each process, about a second): with the ``k`` source rows
named, LLVM vectorizes it along the columns. :func:`band_` picks one of three forms from the
size of a row (measured on the shared 2-core AMD EPYC of ``analysis/bench_gossip.md``, one
thread, against a copy of the buffer timed just before):

- rows of under :data:`PREFETCH_MIN_BYTES`: the **one-row loop**, as it was first written.
- wider rows, while ``k + 2`` of them (the ``k`` source rows, the result row, the row written
  back) about fit in L1 (:data:`L1_BYTES`, :func:`_form`): the same loop, and before each row
  ``i`` the row :data:`AHEAD_BYTES` past row ``i + d_k``, the farthest one it reads,
  **prefetched** into L2 (LLVM's ``llvm.prefetch``, one a cache line). With the hardware's
  prefetcher alone the loop took about a copy's time plus its time in cache, as if the two
  never overlapped; with it they do (circulant ``[1, 2, 3]``, float32, ``P = 650``, ``n =
  10^5`` and ``10^6``: from 1.80-1.96x a copy to 1.11-1.19x; rings and one-peer rounds from
  1.07-1.39x to 0.56-0.69x, under a copy, which reads ``X`` and writes another buffer).
- wider still (the ``k`` rows in L2, not L1; ``X`` C-contiguous): **blocks of**
  :func:`block_rows` **rows** in one loop over the columns, each of the block's rows adding its
  own sum in its own register: a cache line of a source row brought from L2 serves, from L1,
  every row of the block that reads it (circulant ``[1, 2, 3]``, float32, ``P = 7,850``: from
  1.89-2.04x a copy to 1.29-1.40x).

Each output's terms are added in the same order in every form, so all three give the same bits
(``tests/engine/test_band_jit.py``). Products and sums may be fused (LLVM's ``contract``, no
other reassociation), so the kernel agrees with torch's shifted adds and with the CSR kernel to
rounding (the tests), not bit for bit; bands of more than :data:`MAX_K` offsets take the
generic loop :func:`_band_rows`. :func:`available` says whether Numba imports here (else the
torch kernel runs).
"""

from __future__ import annotations

from typing import Any

import numpy as np

_KERNELS: dict[tuple[int, int, bool], Any] = {}  # by (k, rows, prefetch); MAX_K + 1: generic
_MISSING = False


def available() -> bool:
    """Whether Numba imports here (the compiled band kernel can run).

    Examples
    --------
    >>> from topofl.engine import _band_jit
    >>> isinstance(_band_jit.available(), bool)
    True
    """
    return _kernel(1) is not None


#: Bands of up to this many offsets a row get a loop written out for their ``k``.
MAX_K = 16

#: Rows whose ``k + 2`` copies fit in this many bytes times ``5 - block_rows(k)`` take the
#: one-row loop, wider rows blocks of rows (:func:`_form`; an L1 cache of 32 KiB here).
L1_BYTES = 36 << 10

#: How far past the farthest row it reads the one-row loop prefetches (at least a row).
AHEAD_BYTES = 8 << 10

#: Rows of fewer bytes are not prefetched (from 512 bytes prefetching measured faster on
#: circulant ``[1, 2, 3]``; on shorter rows it measured slower, the hardware's prefetcher
#: keeping up).
PREFETCH_MIN_BYTES = 512


def block_rows(k: int) -> int:
    """Rows a block of the blocked loop for ``k`` offsets: the most, up to 4, whose column loop
    LLVM still vectorizes. The ``rows`` result rows and ``rows * k`` source rows of a block may
    overlap as far as LLVM knows, so it tests them at run time, pair by pair, and gives up past
    128 pairs (``rows * (rows - 1) / 2 + rows * rows * k``; seen in the assembly here: 4 rows up
    to ``k = 7``, 3 up to 13, 2 up to 16).

    Examples
    --------
    >>> from topofl.engine._band_jit import block_rows
    >>> [block_rows(k) for k in (1, 3, 7, 8, 13, 14, 16)]
    [4, 4, 4, 3, 3, 2, 2]
    """
    return max(r for r in range(1, 5) if r * (r - 1) // 2 + r * r * k <= 128)


def _form(k: int, row: int, contiguous: bool) -> tuple[int, bool]:
    """The form of the loop for ``k`` offsets on rows of ``row`` bytes: ``(rows a block,
    prefetching)``. Blocks of :func:`block_rows` rows where ``(k + 2) * row`` passes
    ``L1_BYTES * (5 - rows)`` (the fewer rows a block, the less a block saves: the crossovers
    measured, float32, at rows of 4,000-6,000 bytes for ``k = 7`` and 4 rows a block, 6,000-8,000
    for ``k = 3``; 4,000-6,000 for ``k = 11`` and 13, 3 rows; 6,000-8,000 for ``k = 15``, 2
    rows) and ``X`` is C-contiguous (on a column slice LLVM does not vectorize the blocked loop:
    there, the one-row loop without prefetching, as before); else the one-row loop, prefetching
    on rows of :data:`PREFETCH_MIN_BYTES` or more. Bands of more than :data:`MAX_K` offsets:
    the generic loop, ``(1, False)``.

    Examples
    --------
    >>> from topofl.engine._band_jit import _form
    >>> [_form(7, 4 * p, True) for p in (10, 650, 7850)]  # float32
    [(1, False), (1, True), (4, False)]
    >>> _form(7, 4 * 7850, False), _form(17, 4 * 650, True)
    ((1, False), (1, False))
    """
    if k > MAX_K:
        return 1, False
    rows = block_rows(k)
    if (k + 2) * row > L1_BYTES * (5 - rows):
        return (rows, False) if contiguous else (1, False)
    return 1, row >= PREFETCH_MIN_BYTES


def _kernel(k: int = 1, rows: int = 1, prefetch: bool = False) -> Any:
    """The compiled kernel for bands of ``k`` offsets in blocks of ``rows`` rows, prefetching
    or not (the one-row loop only, see :func:`_source`), or ``None`` without Numba."""
    global _MISSING
    if _MISSING:
        return None
    key = (MAX_K + 1, 1, False) if k > MAX_K else (k, rows, prefetch and rows == 1)
    if key not in _KERNELS:
        try:
            import numba
        except ImportError:  # Numba missing (or broken against this NumPy): torch's kernel
            _MISSING = True
            return None
        if k > MAX_K:
            fn = _band_rows
        else:
            scope: dict[str, Any] = {"prefetch": _prefetch()} if key[2] else {}
            exec(_source(k, rows, key[2]), scope)  # noqa: S102 -- our own text, from _source
            fn = scope["band"]
        _KERNELS[key] = numba.njit(fastmath={"contract"}, boundscheck=False, nogil=True)(fn)
    return _KERNELS[key]


def _prefetch() -> Any:
    """``prefetch(X, q, p)`` for compiled code: LLVM's ``llvm.prefetch`` of the cache line of
    ``X[q, p]`` (``X`` 2-d, unit column stride), for reading, into L2 (locality 2:
    ``prefetcht1`` on x86; into L1, ``prefetcht0``, it measured no faster than none). A
    prefetch never faults. Indexing ``X`` itself, not a row of it, keeps the row's view (and
    its reference counting) out of the loop: with a view the one-row loop took up to 1.2x as
    long on rows of 10 columns."""
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    i32 = ir.IntType(32)
    i8p = ir.IntType(8).as_pointer()

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        kind = signature.args[0]
        X = context.make_array(kind)(context, builder, args[0])
        stride = builder.extract_value(X.strides, 0)  # bytes from a row to the next
        size = context.get_abi_sizeof(context.get_data_type(kind.dtype))
        offset = builder.add(builder.mul(args[1], stride),
                             builder.mul(args[2], context.get_constant(types.intp, size)))
        where = builder.gep(builder.bitcast(X.data, i8p), [offset])
        fn = builder.module.declare_intrinsic(
            "llvm.prefetch", [i8p], ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]))
        builder.call(fn, [where, i32(0), i32(2), i32(1)])  # read, locality 2, data cache
        return context.get_dummy_value()

    def prefetch(typingctx: Any, X: Any, q: Any, p: Any) -> Any:
        return types.void(X, q, p), codegen

    return intrinsic(prefetch)


def _source(k: int, rows: int = 1, prefetch: bool = False) -> str:
    """The kernel's loop for ``k`` offsets, written out.

    ``rows = 1``: row by row, ``band(X, deltas, weights, head, ring)``: each source row picked
    once a row (``X`` itself, or ``head`` after the wrap), then one loop over the columns adding
    the ``k`` terms in a register; ``ring`` has ``lead + 1`` rows. The loop as it was before
    the other forms, and their reference in the tests. With ``prefetch``, ``band(X, deltas,
    weights, head, ring, ahead)``: the same, and before each row ``i`` one prefetch a cache line
    of row ``i + ahead`` (``ahead = 0``: none).

    ``rows > 1``: ``band(X, deltas, weights, head, ring)`` in blocks of ``rows`` rows, the
    ``rows * k`` source rows picked once a block and one loop over the columns adding each of
    the block's ``rows`` sums in its own register, in the same order as the one-row loop; the
    last ``n % rows`` rows one at a time; ``ring`` has ``lead + rows`` rows.

    Examples
    --------
    >>> from topofl.engine._band_jit import _source
    >>> print(_source(2).split("for p in range(P):")[1].split("o[p]")[0].strip())
    a = w0 * s0[p]
                a = a + w1 * s1[p]
    >>> print(_source(2, rows=2).split("for p in range(P):")[1].split("o0[p]")[0].strip())
    a0 = w0_0 * s0_0[p]
                a0 = a0 + w0_1 * s0_1[p]
                a1 = w1_0 * s1_0[p]
                a1 = a1 + w1_1 * s1_1[p]
    """
    def pick(name: str, row: str) -> str:
        return (f"        r = {row}\n"
                f"        {name} = X[r + n] if r < 0 else (head[r - n] if r >= n else X[r])\n")

    one_row = ("        o = ring[i % L]\n"
               + "".join(pick(f"s{j}", f"i + deltas[{j}]") + f"        w{j} = weights[{j}, i]\n"
                         for j in range(k))
               + "        for p in range(P):\n"
               "            a = w0 * s0[p]\n"
               + "".join(f"            a = a + w{j} * s{j}[p]\n" for j in range(1, k))
               + "            o[p] = a\n"
               "        if i >= lead:\n"
               "            dst, done = X[i - lead], ring[(i - lead) % L]\n"
               "            for p in range(P):\n"
               "                dst[p] = done[p]\n")
    tail = ("    for i in range(max(0, n - lead), n):\n"
            "        dst, done = X[i], ring[i % L]\n"
            "        for p in range(P):\n"
            "            dst[p] = done[p]\n")
    if rows == 1 and not prefetch:
        return ("def band(X, deltas, weights, head, ring):\n"
                "    n, P = X.shape\n"
                "    L = ring.shape[0]\n"
                "    lead = L - 1\n"
                "    for i in range(n):\n"
                f"{one_row}{tail}")
    if rows == 1:
        return ("def band(X, deltas, weights, head, ring, ahead):\n"
                "    n, P = X.shape\n"
                "    L = ring.shape[0]\n"
                "    lead = L - 1\n"
                "    line = max(1, 64 // X.itemsize)\n"
                "    for i in range(n):\n"
                "        if ahead > 0 and i + ahead < n:\n"
                "            for p in range(0, P, line):\n"
                "                prefetch(X, i + ahead, p)\n"
                f"{one_row}{tail}")
    block = "".join(pick(f"s{r}_{j}", f"i + {r} + deltas[{j}]")
                    + f"        w{r}_{j} = weights[{j}, i + {r}]\n"
                    for r in range(rows) for j in range(k))
    block += "".join(f"        o{r} = ring[(i + {r}) % L]\n" for r in range(rows))
    block += "        for p in range(P):\n"
    for r in range(rows):
        block += f"            a{r} = w{r}_0 * s{r}_0[p]\n"
        block += "".join(f"            a{r} = a{r} + w{r}_{j} * s{r}_{j}[p]\n"
                         for j in range(1, k))
    block += "".join(f"            o{r}[p] = a{r}\n" for r in range(rows))
    return ("def band(X, deltas, weights, head, ring):\n"
            "    n, P = X.shape\n"
            "    L = ring.shape[0]\n"
            f"    lead = L - {rows}\n"
            f"    for i in range(0, n - {rows} + 1, {rows}):\n"
            f"{block}"
            f"        for q in range(max(0, i - lead), i + {rows} - lead):\n"
            "            dst, done = X[q], ring[q % L]\n"
            "            for p in range(P):\n"
            "                dst[p] = done[p]\n"
            f"    for i in range(n - n % {rows}, n):\n"
            f"{one_row}{tail}")


def _band_rows(X: Any, deltas: Any, weights: Any, head: Any, ring: Any) -> None:
    """The generic loop, compiled for bands of more than :data:`MAX_K` offsets (and the slow
    reference of the tests, as plain Python): ``X`` ``[n, P]``
    in place, ``deltas`` ``[k]`` sorted int64 offsets, ``weights`` ``[k, n]`` (row ``i``'s
    weight of slot ``j``), ``head`` a copy of ``X``'s first ``trail`` rows, ``ring``
    ``[lead + 1, P]`` scratch."""
    n, P = X.shape
    k = deltas.shape[0]
    lead = ring.shape[0] - 1
    for i in range(n):
        o = ring[i % (lead + 1)]
        for j in range(k):
            r = i + deltas[j]
            if r < 0:
                src = X[r + n]  # written back last: still as it was
            elif r >= n:
                src = head[r - n]
            else:
                src = X[r]
            w = weights[j, i]
            if j == 0:
                for p in range(P):
                    o[p] = w * src[p]
            else:
                for p in range(P):
                    o[p] = o[p] + w * src[p]
        if i >= lead:  # a loop: Numba's slice assignment made the kernel about 1.5x slower
            dst, done = X[i - lead], ring[(i - lead) % (lead + 1)]
            for p in range(P):
                dst[p] = done[p]
    for i in range(max(0, n - lead), n):
        dst, done = X[i], ring[i % (lead + 1)]
        for p in range(P):
            dst[p] = done[p]


def band_(X: np.ndarray, deltas: tuple[int, ...], weights: np.ndarray, lead: int,
          trail: int) -> None:
    """``X <- W X`` in place for a band plan: ``X`` ``[n, P]`` (any row stride, unit column
    stride), ``deltas`` sorted offsets with ``lead = max(0, -deltas[0])`` and ``trail =
    max(0, deltas[-1])``, ``weights`` ``[k, n]`` of ``X``'s dtype (a shared weight broadcast
    along its row). Needs :func:`available`. The loop's form is :func:`_form`'s (blocks of
    rows, the one-row loop prefetching or not, the generic loop): all give the same bits.

    Examples
    --------
    A ring of 5 with weights 1/3, in float64: row ``i`` becomes the mean of rows ``i - 1``,
    ``i`` and ``i + 1`` (mod 5):

    >>> import numpy as np
    >>> from topofl.engine import _band_jit
    >>> X = np.arange(5.0).reshape(5, 1)
    >>> _band_jit.band_(X, (-1, 0, 1), np.full((3, 5), 1 / 3), 1, 1)
    >>> np.round(X.ravel(), 4).tolist()
    [1.6667, 1.0, 2.0, 3.0, 2.3333]
    """
    k = len(deltas)
    n, P = X.shape
    row = P * X.itemsize
    rows, fetch = _form(k, row, bool(X.flags.c_contiguous))
    kernel = _kernel(k, rows, fetch)
    if kernel is None:
        raise RuntimeError("the compiled band kernel needs Numba (pip install numba)")
    head = np.array(X[:trail])
    ring = np.empty((lead + rows, P), dtype=X.dtype)
    d = np.asarray(deltas, dtype=np.int64)
    if fetch:
        kernel(X, d, weights, head, ring, max(1, deltas[-1] + -(-AHEAD_BYTES // row)))
    else:
        kernel(X, d, weights, head, ring)
