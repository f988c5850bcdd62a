"""The band kernel compiled with Numba: ``X <- W X`` in place, row by row, in one pass.

Row ``i`` of ``W X`` is ``sum_j w_ij X[(i + d_j) mod n]`` (:class:`~topofl.engine.gossip.
BandPlan`). Row by row, an element's ``k`` terms are added in a register, in the plan's order
of offsets, and the sum goes into a row of a small ring of ``lead + 1`` result rows that stays
in cache; result row ``i`` is written into ``X`` once row ``i + lead``, the last that reads
row ``i``, is done, and the rows after the wrap are read from a copy of the first ``trail``
rows. ``X`` is read from memory once and written once, the ``k`` reads of a row after the
first coming from cache: what torch's shifted adds (:meth:`~topofl.engine.gossip.Mixer._band_`)
do block by block in ``k`` passes over each block, in one compiled loop.

The loop over a row's columns is written out for each ``k`` (:func:`_source`, compiled once a
``k``, dtype and layout in each process, about a second): with the ``k`` source rows named,
LLVM vectorizes it along the columns. Products and sums may be fused (LLVM's ``contract``, no
other reassociation), so the kernel agrees with torch's shifted adds and with the CSR kernel
to rounding (``tests/engine/test_band_jit.py``), not bit for bit; bands of more than
:data:`MAX_K` offsets take the generic loop :func:`_band_rows`. :func:`available` says whether
Numba imports here (else the torch kernel runs).
"""

from __future__ import annotations

from typing import Any

import numpy as np

_KERNELS: dict[int, Any] = {}  # by k (MAX_K + 1: the generic loop)
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


def _kernel(k: int = 1) -> Any:
    """The compiled kernel for bands of ``k`` offsets, or ``None`` without Numba."""
    global _MISSING
    if _MISSING:
        return None
    key = min(k, MAX_K + 1)
    if key not in _KERNELS:
        try:
            import numba
        except ImportError:  # Numba missing (or broken against this NumPy): torch's kernel
            _MISSING = True
            return None
        if key > MAX_K:
            fn = _band_rows
        else:
            scope: dict[str, Any] = {}
            exec(_source(key), scope)  # noqa: S102 -- our own text, from _source alone
            fn = scope["band"]
        _KERNELS[key] = numba.njit(fastmath={"contract"}, boundscheck=False, nogil=True)(fn)
    return _KERNELS[key]


def _source(k: int) -> str:
    """The kernel's loop for ``k`` offsets, written out: each source row picked once a row
    (``X`` itself, or ``head`` after the wrap), then one loop over the columns adding the
    ``k`` terms in a register.

    Examples
    --------
    >>> from topofl.engine._band_jit import _source
    >>> print(_source(2).split("for p in range(P):")[1].split("o[p]")[0].strip())
    a = w0 * s0[p]
                a = a + w1 * s1[p]
    """
    pick = "".join(
        f"        r = i + deltas[{j}]\n"
        f"        s{j} = X[r + n] if r < 0 else (head[r - n] if r >= n else X[r])\n"
        f"        w{j} = weights[{j}, i]\n" for j in range(k))
    add = "".join(f"            a = a + w{j} * s{j}[p]\n" for j in range(1, k))
    return ("def band(X, deltas, weights, head, ring):\n"
            "    n, P = X.shape\n"
            "    lead = ring.shape[0] - 1\n"
            "    for i in range(n):\n"
            "        o = ring[i % (lead + 1)]\n"
            f"{pick}"
            "        for p in range(P):\n"
            "            a = w0 * s0[p]\n"
            f"{add}"
            "            o[p] = a\n"
            "        if i >= lead:\n"
            "            dst, done = X[i - lead], ring[(i - lead) % (lead + 1)]\n"
            "            for p in range(P):\n"
            "                dst[p] = done[p]\n"
            "    for i in range(max(0, n - lead), n):\n"
            "        dst, done = X[i], ring[i % (lead + 1)]\n"
            "        for p in range(P):\n"
            "            dst[p] = done[p]\n")


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
    along its row). Needs :func:`available`.

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
    kernel = _kernel(len(deltas))
    if kernel is None:
        raise RuntimeError("the compiled band kernel needs Numba (pip install numba)")
    n, P = X.shape
    head = np.array(X[:trail])
    ring = np.empty((lead + 1, P), dtype=X.dtype)
    kernel(X, np.asarray(deltas, dtype=np.int64), weights, head, ring)
