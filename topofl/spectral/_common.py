"""Shared internals of :mod:`topofl.spectral`: input checks, patterns, ARPACK wrappers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla

from topofl._utils.validation import (
    StochasticKind,
    check_choice,
    check_int,
    check_matrix,
    check_memory,
    check_stochastic,
    check_time,
)
from topofl.exceptions import ConvergenceError
from topofl.graph import TimeVarying, Topology

GapKind = Literal["modulus", "lambda2", "norm"]
Method = Literal["auto", "dense", "sparse"]

#: Largest ``n`` for which ``method="auto"`` uses dense LAPACK on a symmetric matrix (ARPACK
#: above); non-symmetric matrices switch to ARPACK above ``DENSE_MAX // 2``.
DENSE_MAX = 256
#: If ARPACK does not converge, dense LAPACK is used up to this ``n`` (else ConvergenceError).
DENSE_FALLBACK_MAX = 4096
_SYM_ATOL = 1e-12
# Relative disagreement / column spread below which a product counts as converged.
_FLOOR = 1e-12
# Bit-parallel all-pairs BFS is used when the diameter is at most about this (measured
# crossover with one BFS per node, analysis/bench_spectral.md).
_BITSET_MAX_LEVELS = 64

#: Lower bounds on the seconds one of the rounds :func:`~topofl.spectral.summary` examines
#: (one period, or ``spectral_rounds`` draws) costs, used to refuse at once (with the
#: estimate) a call whose per-round metrics would run longer than ``TOPOFL_MAX_SECONDS``:
#: every round is built (``tv.at(t)``), then each per-round metric asked for is computed on
#: it anew. Measured (process CPU time, this project's machine): ``at(t)`` of
#: ``periodic_averaging(ring(4))`` 2.7 us; the stochasticity test of a round (``stochastic``,
#: and before each gap) 47-50 us at n = 1, 2, 4; a round's gap, algebraic connectivity or
#: diameter below ``SUMMARY_EXACT_MAX`` at least 124 us (n = 1). The constants are 2.5-3x
#: under those.
_ROUND_BUILD_SECONDS = 1e-6
_ROUND_CHECK_SECONDS = 1.5e-5
_ROUND_SOLVE_SECONDS = 4e-5


def _check_rounds_time(g: TimeVarying, r: int, keys: Sequence[str], *, exact: bool,
                       measured: bool, labels: bool) -> None:
    """Refuse at once a :func:`~topofl.spectral.summary` whose ``r`` rounds examined (one
    period, or the ``spectral_rounds`` draws) would take too long to build and measure one by
    one: a lower bound (:data:`_ROUND_BUILD_SECONDS` and the per-round metrics ``keys`` need, which
    :meth:`_Summary.plan` runs) over :func:`~topofl._utils.validation.max_seconds`;
    ``exact``: its gaps, connectivity and diameter are computed exactly (not bounded)."""
    if r <= 1:
        return
    need = set(keys)

    def want(*names: str) -> bool:
        return not need.isdisjoint(names)

    checks = sum((
        want("stochastic") or (measured and want(
            "consensus_rate", "rounds_to_1e-6_measured", "finite_time_consensus")),
        want("spectral_gap", "rounds_to_1e-6_bound"),
        want("spectral_gap_norm"),
        labels and want("neighborhood_skew"),
        labels and want("neighborhood_heterogeneity"),
    ))
    solves = sum((exact and want("diameter"),
                  exact and g.n >= 2 and want("algebraic_connectivity")))
    per = _ROUND_BUILD_SECONDS + checks * _ROUND_CHECK_SECONDS + solves * _ROUND_SOLVE_SECONDS
    over = "its period" if g.period is not None else "spectral_rounds"
    check_time(r * per, f"summary of {g.name!r} (n={g.n}), whose per-round metrics are "
               f"computed on each of the {r:,} rounds of {over}")


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


def _check_horizon(horizon: Any, name: str = "horizon", n: int | None = None,
                   tv: TimeVarying | None = None, cols: int = 0) -> int:
    """``horizon`` as an int ``>= 1``; with ``n``, refused if the rounds cannot fit in memory;
    with ``tv``, refused if visiting its rounds would take too long (:func:`_check_time`)."""
    h = check_int(horizon, name, low=1)
    if n is not None:
        _check_round_memory(h, n, name)
    if tv is not None:
        _check_time(tv, h, name, cols)
    return h


#: Lower bounds on the time one round of a sequence costs, used to refuse (with the estimate)
#: a call that would run for longer than ``topofl._utils.validation.max_seconds()``: every round
#: applies a sparse ``W(t)`` (scipy's fixed cost, plus one multiply-add per stored entry and
#: column), and every round of an aperiodic sequence is built anew (``tv.at(t)``: a
#: ``Topology``). Measured (process CPU time, best of 3, this project's 2-core machine):
#: ``ring(5).W @ X`` with 8 columns 2.96 us, a round of ``disagreement(ring(5))`` 9.55 us;
#: ``random_directed(n, 3).at(t)`` 248 us (n=6, 18 entries), 665 us (n=64, 256 entries),
#: 6.5 ms (n=1000, 4000 entries), and ``b_connectivity`` 4-5x that a round. The constants
#: below are 1.5-3x under those: a call they refuse takes longer than the estimate says.
_SEQ_PRODUCT_SECONDS = 2e-6
_SEQ_FLOP_SECONDS = 1e-10
_SEQ_BUILD_SECONDS = 1e-4
_SEQ_BUILD_ARC_SECONDS = 5e-7


def _check_time(tv: TimeVarying, rounds: int, name: str, cols: int = 0) -> None:
    """Refuse visiting ``rounds`` rounds of ``tv`` (applying each to ``cols`` vectors) when
    the lower bound of the time it takes exceeds the limit."""
    if rounds <= 1:
        return
    arcs = tv.at(0).W.nnz
    per = _SEQ_PRODUCT_SECONDS + _SEQ_FLOP_SECONDS * arcs * max(cols, 1)
    if tv.period is None:
        per += _SEQ_BUILD_SECONDS + _SEQ_BUILD_ARC_SECONDS * arcs
    kind = "aperiodic sequence" if tv.period is None else "sequence"
    check_time(rounds * per, f"{name}={rounds} rounds of the {kind} {tv.name!r} "
               f"(n={tv.n}, {arcs} stored entries a round)")


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
    if n > DENSE_FALLBACK_MAX:
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
