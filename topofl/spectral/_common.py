"""Shared internals of :mod:`topofl.spectral`: input checks, patterns, ARPACK wrappers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla

from topofl._validation import (
    StochasticKind,
    check_choice,
    check_int,
    check_matrix,
    check_memory,
    check_stochastic,
)
from topofl.exceptions import ConvergenceError
from topofl.graph import TimeVarying, Topology

GapKind = Literal["modulus", "lambda2", "norm"]
Method = Literal["auto", "dense", "sparse"]

#: Largest ``n`` for which ``method="auto"`` uses dense LAPACK on a symmetric matrix (ARPACK
#: above); non-symmetric matrices switch to ARPACK above ``DENSE_MAX // 2``.
DENSE_MAX = 256
#: If ARPACK does not converge, dense LAPACK is used up to this ``n`` (else ConvergenceError).
_DENSE_FALLBACK_MAX = 4096
_SYM_ATOL = 1e-12
# Relative disagreement / column spread below which a product counts as converged.
_FLOOR = 1e-12
# Bit-parallel all-pairs BFS is used when the diameter is at most about this (measured
# crossover with one BFS per node, analysis/bench_spectral.md).
_BITSET_MAX_LEVELS = 64

# ============================================================================ input helpers
def _as_csr(W: Any, name: str = "W") -> sp.csr_array:
    if isinstance(W, Topology):
        return W.W
    if isinstance(W, TimeVarying):
        raise TypeError(
            f"{name} must be a matrix or a Topology, got a TimeVarying; pass one round "
            "(tv.at(t)) or use a function of sequences (b_connectivity, pushsum_constants, "
            "consensus_rate, summary)"
        )
    return check_matrix(W, name=name)


#: Tolerance on the row/column sums of a matrix that a function needs stochastic (loose
#: enough for a float32 matrix, whose sums are off by about 1e-7).
STOCHASTIC_ATOL = 1e-6


def _as_stochastic(W: Any, kind: StochasticKind, what: str, name: str = "W") -> sp.csr_array:
    """``_as_csr`` that refuses a matrix whose sums make ``what`` meaningless."""
    M = _as_csr(W, name=name)
    try:
        return check_stochastic(M, kind, atol=STOCHASTIC_ATOL, name=name)
    except ValueError as exc:
        raise ValueError(f"{what} needs a stochastic mixing matrix: {exc}") from None


def _check_method(method: str) -> str:
    return check_choice(method, "method", ("auto", "dense", "sparse"))


def _use_sparse(n: int, method: str, symmetric: bool = True) -> bool:
    limit = DENSE_MAX if symmetric else DENSE_MAX // 2
    return method == "sparse" or (method == "auto" and n > limit)


def _is_symmetric(M: sp.csr_array) -> bool:
    D = (M - M.T).tocsr()
    return bool(D.nnz == 0 or np.max(np.abs(D.data)) <= _SYM_ATOL)


def _check_horizon(horizon: Any, name: str = "horizon", n: int | None = None) -> int:
    """``horizon`` as an int ``>= 1``; with ``n``, refused if the rounds cannot fit in memory."""
    h = check_int(horizon, name, low=1)
    if n is not None:
        _check_round_memory(h, n, name)
    return h


#: A lower bound on the bytes one round of a sequence costs: its ``W(t)`` (a CSR array with an
#: ``(n + 1)``-entry index pointer and Python object overhead) and a few per-node vectors.
_ROUND_BYTES_FIXED = 512
_ROUND_BYTES_PER_NODE = 24


def _check_round_memory(rounds: int, n: int, name: str) -> None:
    check_memory(
        float(rounds) * (_ROUND_BYTES_FIXED + _ROUND_BYTES_PER_NODE * n),
        f"{name}={rounds} rounds of an n={n} graph",
    )


def _rounds(tv: TimeVarying, stop: int, start: int = 0) -> list[sp.csr_array]:
    """``W(t)`` for ``t`` in ``[start, stop)``; a periodic sequence repeats the same objects."""
    if tv.period is not None:
        distinct: dict[int, sp.csr_array] = {}
        out = []
        for t in range(start, stop):
            key = t % tv.period
            if key not in distinct:
                distinct[key] = tv.at(t).W
            out.append(distinct[key])
        return out
    return [tv.at(t).W for t in range(start, stop)]


def _per_object(fn: Callable[[sp.csr_array], Any], Ws: Sequence[sp.csr_array]) -> list[Any]:
    """``[fn(M) for M in Ws]``, evaluated once per distinct object (periodic sequences)."""
    memo: dict[int, Any] = {}
    out = []
    for M in Ws:
        if id(M) not in memo:
            memo[id(M)] = fn(M)
        out.append(memo[id(M)])
    return out


# ============================================================================ ARPACK
class _NoConvergence(Exception):
    pass


def _v0(n: int) -> np.ndarray:
    # A fixed start vector (local generator, never the global one) makes ARPACK deterministic.
    return np.random.default_rng(20230511).standard_normal(n)


def _eigsh(op: Any, n: int, k: int, which: str) -> np.ndarray:
    try:
        return np.asarray(
            sla.eigsh(
                op, k=k, which=which, v0=_v0(n), ncv=min(n, max(2 * k + 1, 24)),
                maxiter=max(2000, 20 * n), return_eigenvectors=False,
            )
        )
    except sla.ArpackNoConvergence as exc:
        raise _NoConvergence(str(exc)) from exc


def _eigs(op: Any, n: int, k: int) -> np.ndarray:
    try:
        return np.asarray(
            sla.eigs(
                op, k=k, which="LM", v0=_v0(n), ncv=min(n, max(2 * k + 1, 24)),
                maxiter=max(2000, 20 * n), return_eigenvectors=False,
            )
        )
    except sla.ArpackNoConvergence as exc:
        raise _NoConvergence(str(exc)) from exc


def _fallback(n: int, what: str, exc: Exception) -> None:
    if n > _DENSE_FALLBACK_MAX:
        raise ConvergenceError(
            f"ARPACK did not converge while computing {what} of an n={n} matrix ({exc}); "
            "its spectrum is probably tightly clustered; pass method='dense' to use LAPACK "
            "(O(n^3) time, O(n^2) memory)"
        ) from exc


def _deflated(M: sp.csr_array, shift: float) -> sla.LinearOperator:
    """The operator ``x -> M x - shift * J x`` (``J = 11^T/n``) without forming ``J``."""
    n = M.shape[0]

    def mv(x: np.ndarray) -> np.ndarray:
        out: np.ndarray = np.asarray(M @ x) - shift * np.mean(x, axis=0, keepdims=x.ndim > 1)
        return out

    def rmv(x: np.ndarray) -> np.ndarray:
        out: np.ndarray = np.asarray(M.T @ x) - shift * np.mean(x, axis=0, keepdims=x.ndim > 1)
        return out

    return sla.LinearOperator((n, n), matvec=mv, rmatvec=rmv, matmat=mv, dtype=np.float64)

def _snap(x: float, scale: float = 1.0) -> float:
    return 0.0 if abs(x) < 1e-13 * max(1.0, scale) else float(x)

def _sample_columns(n: int, max_columns: int) -> np.ndarray:
    if n <= max_columns:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, max_columns).round().astype(np.int64))


def _spread(X: np.ndarray, kind: str) -> float:
    """Largest difference between two columns (kind "column") or two rows (kind "row") of ``X``."""
    axis = 1 if kind == "column" else 0
    return float(np.max(X.max(axis=axis) - X.min(axis=axis)))
