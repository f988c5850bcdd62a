"""Eigenvalues, spectral gaps and algebraic connectivity of one mixing matrix."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
import scipy.sparse.linalg as sla

from topofl._utils.validation import (
    arc_pattern,
    check_bool,
    check_choice,
    check_int,
    stochasticity,
)
from topofl.spectral._common import (
    GapKind,
    Method,
    _as_csr,
    _as_stochastic,
    _check_method,
    _deflated,
    _eigs,
    _eigsh,
    _fallback,
    _is_symmetric,
    _NoConvergence,
    _snap,
    _use_sparse,
)


def _sort_full(ev: np.ndarray, symmetric: bool) -> np.ndarray:
    if symmetric:
        return np.sort(ev.real)[::-1].copy()
    order = np.lexsort((-ev.real, -np.abs(ev)))
    return ev[order]


def eigenvalues(W: Any, k: int | None = None, *, method: Method = "auto") -> np.ndarray:
    r"""Eigenvalues of ``W``: all of them, or the ``k`` of largest modulus.

    Parameters
    ----------
    W : array_like, sparse matrix or Topology
        ``(n, n)`` matrix.
    k : int, optional
        If given (``1 <= k <= n``), only the ``k`` eigenvalues of largest modulus, computed with
        ARPACK when the sparse path is used. ``None`` (default) computes all ``n`` with LAPACK.
    method : {"auto", "dense", "sparse"}, default "auto"
        ``"auto"`` is dense for ``n <= DENSE_MAX`` and sparse above (sparse needs ``k``).

    Returns
    -------
    numpy.ndarray
        ``(n,)`` or ``(k,)``. Real (float64) and sorted by decreasing value when ``W`` is
        symmetric; otherwise complex128 sorted by decreasing modulus (ties by decreasing real
        part). With ``k`` the same order applies to the ``k`` selected values.

    Raises
    ------
    ValueError
        If ``W`` is not square, or ``method="sparse"`` without ``k``.
    ConvergenceError
        If ARPACK fails on a matrix too large for the dense fallback.

    Notes
    -----
    Dense: $O(n^3)$. Sparse: $O(\mathrm{nnz} \cdot k)$ per ARPACK iteration.

    Examples
    --------
    >>> np.round(tf.spectral.eigenvalues(tf.topologies.ring(4)), 4)
    array([ 1.    ,  0.3333,  0.3333, -0.3333])
    >>> np.round(tf.spectral.eigenvalues(tf.topologies.ring(6), k=2), 4)
    array([1.    , 0.6667])
    """
    _check_method(method)
    M = _as_csr(W)
    n = M.shape[0]
    symmetric = n == 1 or _is_symmetric(M)
    if k is not None:
        k = check_int(k, "k", low=1, high=n)
    elif method == "sparse":
        raise ValueError(
            "method='sparse' computes only some eigenvalues: pass k (the number of eigenvalues "
            "of largest modulus), or use method='dense' for all of them"
        )
    if k is not None and _use_sparse(n, method, symmetric) and k < (n - 1 if not symmetric else n):
        try:
            if symmetric:
                ev = _eigsh(M, n, k, "LM")
            else:
                ev = _eigs(M, n, k)
            return _sort_full(ev, symmetric)
        except _NoConvergence as exc:
            _fallback(n, "eigenvalues", exc)
    A = M.toarray()
    if symmetric:
        ev = np.linalg.eigvalsh((A + A.T) / 2)
    else:
        ev = np.linalg.eigvals(A)
    full = _sort_full(ev, symmetric)
    if k is None:
        return full
    top = np.argsort(-np.abs(full), kind="stable")[:k]
    return full[np.sort(top)]


def _second_modulus(M: sp.csr_array, method: str) -> float:
    """``max_{k >= 2} |lambda_k(M)|`` (for stochastic ``M``: the spectral radius of ``M - J``)."""
    n = M.shape[0]
    stoch = stochasticity(M) != "none"
    symmetric = _is_symmetric(M)
    if _use_sparse(n, method, symmetric) and n >= 4:
        try:
            if symmetric:
                op = _deflated(M, 1.0) if stoch else M
                ev = _eigsh(op, n, 1 if stoch else 2, "LM")
            else:
                op = _deflated(M, 1.0) if stoch else M
                ev = _eigs(op, n, min(n - 2, 3 if stoch else 4))
            mod = np.sort(np.abs(ev))[::-1]
            return float(mod[0] if stoch else mod[1])
        except _NoConvergence as exc:
            _fallback(n, "the second largest eigenvalue modulus", exc)
    ev = eigenvalues(M, method="dense")
    mod = np.sort(np.abs(ev))[::-1]
    return float(mod[1])


def _lambda2(M: sp.csr_array, method: str) -> float:
    n = M.shape[0]
    if _use_sparse(n, method) and n >= 3:
        try:
            if stochasticity(M) != "none":
                # W - 2J maps the Perron root 1 to -1, below every other eigenvalue.
                return float(_eigsh(_deflated(M, 2.0), n, 1, "LA")[0])
            return float(np.sort(_eigsh(M, n, 2, "LA"))[0])
        except _NoConvergence as exc:
            _fallback(n, "lambda_2", exc)
    return float(eigenvalues(M, method="dense")[1])


def _norm_minus_J(M: sp.csr_array, method: str) -> float:
    n = M.shape[0]
    symmetric = _is_symmetric(M)
    if _use_sparse(n, method, symmetric) and n >= 3:
        try:
            if symmetric and stochasticity(M) != "none":
                return _second_modulus(M, method)
            D = _deflated(M, 1.0)
            gram = sla.LinearOperator(
                (n, n), matvec=lambda x: D.rmatvec(D.matvec(x)), dtype=np.float64
            )
            return float(math.sqrt(max(0.0, float(_eigsh(gram, n, 1, "LA")[0]))))
        except _NoConvergence as exc:
            _fallback(n, "||W - J||_2", exc)
    return float(np.linalg.norm(M.toarray() - 1.0 / n, 2))


def spectral_gap(W: Any, kind: GapKind = "modulus", *, method: Method = "auto") -> float:
    r"""Spectral gap of a mixing matrix.

    Parameters
    ----------
    W : array_like, sparse matrix, torch tensor or Topology
        ``(n, n)`` mixing matrix, row- or column-stochastic (sums within 1e-6 of 1): the gap
        of any other matrix -- the zero matrix, ``2 * W`` -- means nothing and is refused.
    kind : {"modulus", "lambda2", "norm"}, default "modulus"
        ``"modulus"``: $1 - \max_{k \ge 2} |\lambda_k(W)|$, the asymptotic per-round contraction
        of gossip with a fixed ``W`` (the usual definition in D-SGD analyses).
        ``"lambda2"``: $1 - \lambda_2(W)$, second largest *real* eigenvalue; needs a symmetric
        ``W`` (ignores a slow negative eigenvalue, unlike ``"modulus"``).
        ``"norm"``: $1 - \|W - \mathbf{1}\mathbf{1}^\top/n\|_2$, the worst one-round contraction
        of the disagreement; meaningful for non-symmetric ``W`` too (it can be negative when a
        round may increase the disagreement). Equal to ``"modulus"`` for symmetric
        doubly stochastic ``W``.
    method : {"auto", "dense", "sparse"}, default "auto"
        Dense LAPACK for ``n <= DENSE_MAX``, ARPACK on the deflated operator ``W - J`` above.

    Returns
    -------
    float
        ``1.0`` for ``n = 1``. Values within 1e-13 of 0 are returned as ``0.0``.

    Raises
    ------
    ValueError
        If ``W`` is neither row- nor column-stochastic (the message names the row and the
        column whose sums are furthest from 1), ``kind="lambda2"`` and ``W`` is not symmetric,
        or ``W`` is not square.

    Examples
    --------
    >>> round(tf.spectral.spectral_gap(tf.topologies.ring(8)), 4)
    0.1953
    >>> tf.spectral.spectral_gap(tf.topologies.complete(5))
    1.0
    >>> round(tf.spectral.spectral_gap(tf.topologies.exponential(16), "norm"), 4)  # 2/(1+4)
    0.4
    >>> tf.spectral.spectral_gap(np.zeros((3, 3)))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: spectral_gap needs a stochastic mixing matrix: W must be row- or ...
    """
    check_choice(kind, "kind", ("modulus", "lambda2", "norm"))
    _check_method(method)
    M = _as_stochastic(W, "any", "spectral_gap")
    n = M.shape[0]
    if n == 1:
        return 1.0
    if kind == "norm":
        return _snap(1.0 - _norm_minus_J(M, method))
    if kind == "lambda2":
        if not _is_symmetric(M):
            raise ValueError(
                "kind='lambda2' needs a symmetric W (its eigenvalues are then real); this W is "
                "not symmetric: use kind='modulus' or kind='norm'"
            )
        return _snap(1.0 - _lambda2(M, method))
    return _snap(1.0 - _second_modulus(M, method))


def _laplacian(A: sp.csr_array) -> sp.csr_array:
    """``diag(A 1) - A`` of a symmetric ``A`` with zero diagonal, as a canonical CSR array."""
    L = sp.csr_array(csgraph.laplacian(A, use_out_degree=True))
    L.eliminate_zeros()
    L.sort_indices()
    return L


def algebraic_connectivity(
    topology: Any, *, weighted: bool = False, method: Method = "auto"
) -> float:
    r"""Algebraic connectivity: the second smallest eigenvalue $\mu_2$ of the graph Laplacian.

    The Laplacian $L = D - A$ is that of the *undirected* graph underlying the topology (an arc
    in either direction is an edge).

    Parameters
    ----------
    topology : Topology, array_like or sparse matrix
        ``(n, n)`` mixing matrix or topology, ``n >= 2``.
    weighted : bool, default False
        ``False``: unit edge weights (combinatorial Laplacian). ``True``: edge weights
        $(W_{ij} + W_{ji})/2$, so that $L = I - W$ for a symmetric stochastic ``W`` and
        $\mu_2 = 1 - \lambda_2(W)$.
    method : {"auto", "dense", "sparse"}, default "auto"

    Returns
    -------
    float
        ``0.0`` iff the graph is disconnected.

    Raises
    ------
    TypeError
        If ``weighted`` is not a bool.
    ValueError
        If ``n < 2``.

    Notes
    -----
    The sparse path finds the largest eigenvalue of $cI - L - cJ$ with $c = 2 d_{max}$ (the
    constant vector deflated), i.e. $c - \mu_2$, with ARPACK.

    Examples
    --------
    >>> x = tf.spectral.algebraic_connectivity(tf.topologies.ring(8))  # 2 - 2 cos(2 pi / 8)
    >>> round(x, 6), round(2 - 2 * float(np.cos(2 * np.pi / 8)), 6)
    (0.585786, 0.585786)
    >>> tf.spectral.algebraic_connectivity(tf.topologies.complete(5))
    5.0
    """
    _check_method(method)
    weighted = check_bool(weighted, "weighted")
    M = _as_csr(topology, name="topology")
    n = M.shape[0]
    if n < 2:
        raise ValueError(f"algebraic connectivity needs n >= 2 nodes, got n={n}")
    if weighted:
        A = ((M + M.T) / 2.0).tocsr()
        A = (A - sp.diags_array(A.diagonal())).tocsr()
        A.eliminate_zeros()
    else:
        P = arc_pattern(M, diagonal=False)
        A = ((P + P.T) > 0).astype(np.float64).tocsr()
    deg = np.asarray(A.sum(axis=1)).ravel()
    c = 2.0 * float(deg.max()) if n else 0.0
    if c == 0.0:
        return 0.0
    L = _laplacian(A)
    if _use_sparse(n, method) and n >= 3:
        try:
            shifted = (sp.diags_array(np.full(n, c)) - L).tocsr()
            lam = float(_eigsh(_deflated(shifted, c), n, 1, "LA")[0])
            return max(0.0, _snap(c - lam, c))
        except _NoConvergence as exc:
            _fallback(n, "the algebraic connectivity", exc)
    mu = np.linalg.eigvalsh(L.toarray())
    return max(0.0, _snap(float(mu[1]), c))
