r"""Spectral quantities of large graphs at a cost that grows linearly with the graph.

:func:`~topofl.spectral.summary` computes a graph's eigenvalue quantities with LAPACK or ARPACK
up to ``SUMMARY_EXACT_MAX`` (1024) nodes. ARPACK's cost is not bounded: on a ring its
iterations grow with the inverse of the spectral gap, about $n^2$ (33x the iterations for 10x
the nodes), so a summary of a 10,000-node ring took minutes. Above that size the summary uses
the methods of this module instead:

* **circulant** ``W`` (:func:`circulant_row` finds it from ``W`` in $O(\mathrm{nnz})$: every
  row the first one shifted, ``W[i, j] = c[(j - i) mod n]``, as ring, circulant, complete
  and the static exponential graphs are) -- its eigenvalues are the discrete Fourier
  transform of its first row, $\lambda_k = \sum_d c_d\, e^{2\pi i d k / n}$ (eigenvector
  $v_j = e^{2\pi i j k / n}$), and those of the Laplacian of its unweighted graph likewise:
  the gaps and the algebraic connectivity in closed form (exact to rounding, $O(n \cdot
  \mathrm{offsets})$; :func:`circulant_eigenvalues`); a circulant graph is vertex-transitive,
  so its diameter is the eccentricity of node 0 (one breadth-first search, exact);
* **any other** ``W`` -- the extreme eigenvalues by Lanczos on the complement of the constant
  vector, at most :data:`LANCZOS_STEPS` steps (each one product with ``W``) and stopped when
  both extreme Ritz pairs' residual bounds are within :data:`LANCZOS_TOL` (relative to the
  operator's scale): *estimates*, whose gap is an upper bound of the true one when the
  iteration stopped at the cap; the diameter is the largest eccentricity that
  :data:`DIAMETER_SWEEPS` breadth-first searches found (double sweeps from node 0, in and
  out): a lower bound, an *estimate*. Non-symmetric ``W`` that are not circulant get their
  second eigenvalue modulus from ARPACK with the same tolerance and a cap on its iterations
  (``None`` when it does not converge within them).

The summary says which: ``spectral_method`` (``"closed_form"`` when every round's ``W`` was
circulant, else ``"lanczos"``) and ``estimated`` (whether a value of the row is an estimate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg as sla_dense
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
import scipy.sparse.linalg as sla

from topofl._utils.validation import arc_pattern
from topofl.spectral._common import _as_csr, _is_symmetric, _snap, _v0

__all__ = ["circulant_row", "circulant_eigenvalues", "bounded_diameter", "LANCZOS_STEPS",
           "LANCZOS_TOL", "DIAMETER_SWEEPS", "LargeSpectra"]

#: Most Lanczos steps (products with ``W``) for one operator.
LANCZOS_STEPS = 300
#: Lanczos stops when the residual bound of both extreme Ritz pairs is at most this, relative
#: to the operator's scale (1 for a mixing matrix, twice the largest degree for a Laplacian).
LANCZOS_TOL = 1e-10
#: Breadth-first searches of the diameter estimate of a graph that is not circulant.
DIAMETER_SWEEPS = 4
# rows compared at once by circulant_row (bounds its memory at about 64 MB)
_BLOCK_ENTRIES = 1 << 21


def circulant_row(W: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """The offsets and weights of a circulant ``W``, or ``None`` when ``W`` is not circulant.

    ``W`` is circulant when ``W[i, j] = c[(j - i) mod n]`` for one vector ``c``: every row
    holds the same weights at the same offsets from the diagonal (compared exactly).

    Parameters
    ----------
    W : Topology, array_like or sparse matrix
        ``(n, n)``.

    Returns
    -------
    (offsets, weights) or None
        ``offsets`` (int64, increasing, in ``[0, n)``) and ``weights`` (float64): the stored
        entries of ``c``. O(nnz) time; memory bounded by blocks of rows.

    Examples
    --------
    >>> from topofl.spectral.large import circulant_row
    >>> off, w = circulant_row(tf.topologies.ring(6))
    >>> off.tolist(), [round(float(x), 4) for x in w]
    ([0, 1, 5], [0.3333, 0.3333, 0.3333])
    >>> circulant_row(tf.topologies.star(6)) is None
    True
    """
    M = _as_csr(W)
    n = M.shape[0]
    counts = np.diff(M.indptr)
    k = int(counts[0])
    if not np.all(counts == k):
        return None
    if k == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    ref_off: np.ndarray | None = None
    ref_val: np.ndarray | None = None
    rows = max(1, _BLOCK_ENTRIES // k)
    for a in range(0, n, rows):
        b = min(n, a + rows)
        idx = M.indices[a * k:b * k].astype(np.int64).reshape(b - a, k)
        val = M.data[a * k:b * k].reshape(b - a, k)
        off = (idx - np.arange(a, b, dtype=np.int64)[:, None]) % n
        order = np.argsort(off, axis=1, kind="stable")
        off = np.take_along_axis(off, order, axis=1)
        val = np.take_along_axis(val, order, axis=1)
        if ref_off is None or ref_val is None:
            ref_off, ref_val = off[0].copy(), val[0].copy()
        if not (np.array_equal(off, np.broadcast_to(ref_off, off.shape))
                and np.array_equal(val, np.broadcast_to(ref_val, val.shape))):
            return None
    assert ref_off is not None and ref_val is not None
    return ref_off, ref_val


def _phases(n: int, d: int, k: np.ndarray) -> np.ndarray:
    """``pi * ((d k) mod n) / n`` for every ``k``: the half angle, reduced exactly."""
    return np.pi * ((np.int64(d) * k) % n) / n


def _dft_parts(n: int, offsets: np.ndarray, weights: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """``(a, b)`` over ``k = 0..n-1``: ``a_k = sum_d c_d 2 sin^2(pi d k / n)`` (so that
    ``Re lambda_k = sum(c) - a_k`` without cancellation near 1) and
    ``b_k = Im lambda_k = sum_d c_d sin(2 pi d k / n)``."""
    k = np.arange(n, dtype=np.int64)
    a = np.zeros(n)
    b = np.zeros(n)
    for d, c in zip(offsets.tolist(), weights.tolist()):
        if d == 0:
            continue
        half = _phases(n, d, k)
        s = np.sin(half)
        a += c * 2.0 * s * s
        b += c * np.sin(2.0 * half)
    return a, b


def _is_symmetric_row(n: int, offsets: np.ndarray, weights: np.ndarray) -> bool:
    """Whether ``c_d == c_{n-d}`` for every offset (a symmetric circulant)."""
    table = dict(zip(offsets.tolist(), weights.tolist()))
    return all(table.get((n - d) % n) == c for d, c in table.items())


def circulant_eigenvalues(W: Any) -> np.ndarray:
    r"""All eigenvalues of a circulant ``W``, in closed form.

    ``W[i, j] = c[(j - i) mod n]`` has the eigenvalues $\lambda_k = \sum_d c_d\,
    e^{2 \pi i d k / n}$, ``k = 0..n-1`` (the discrete Fourier transform of its first row,
    eigenvector $v_j = e^{2 \pi i j k / n}$): $O(n \cdot \mathrm{offsets})$ instead of LAPACK's
    $O(n^3)$.

    Parameters
    ----------
    W : Topology, array_like or sparse matrix
        ``(n, n)`` circulant (:func:`circulant_row`).

    Returns
    -------
    numpy.ndarray
        ``(n,)`` in the order of ``k``: float64 when ``W`` is symmetric, else complex128.

    Raises
    ------
    ValueError
        If ``W`` is not circulant.

    Examples
    --------
    The ring of 4 (weights 1/3): $1/3 + (2/3)\cos(\pi k / 2)$:

    >>> from topofl.spectral.large import circulant_eigenvalues
    >>> np.round(circulant_eigenvalues(tf.topologies.ring(4)), 4)
    array([ 1.    ,  0.3333, -0.3333,  0.3333])
    """
    row = circulant_row(W)
    if row is None:
        raise ValueError("W is not circulant: its rows are not shifts of its first row "
                         "(W[i, j] = c[(j - i) mod n])")
    M = _as_csr(W)
    n = M.shape[0]
    offsets, weights = row
    a, b = _dft_parts(n, offsets, weights)
    re = math.fsum(weights.tolist()) - a
    if _is_symmetric_row(n, offsets, weights):
        return re
    return re + 1j * b


# ============================================================================ Lanczos
def _dot(x: np.ndarray, y: np.ndarray) -> float:
    # einsum, not BLAS: a threaded BLAS dot of 10^5 entries took 15 ms (vs 0.03 ms) on a
    # loaded 2-core machine, its threads waiting for cores
    return float(np.einsum("i,i->", x, y))


def _lanczos(matvec: Any, n: int, *, project: bool, scale: float,
             steps: int = LANCZOS_STEPS, tol: float = LANCZOS_TOL
             ) -> tuple[float, float, bool]:
    """The extreme eigenvalues ``(lowest, highest, converged)`` of a symmetric operator
    (restricted to the complement of the constant vector with ``project``), by at most
    ``steps`` Lanczos steps from a fixed start vector (deterministic), stopped when both
    extreme Ritz pairs' residual bounds ``|beta_j s_j|`` are at most ``tol * scale``.

    Without reorthogonalization: the extreme Ritz values converge to extreme eigenvalues
    (lost orthogonality only repeats converged values), and they are always inside the
    spectrum, so an unconverged run underestimates its spread.
    """
    v = _v0(n)
    if project:
        v = v - v.mean()
    v /= math.sqrt(_dot(v, v))
    prev = np.zeros(n)
    alphas: list[float] = []
    betas: list[float] = []
    beta = 0.0
    lo = hi = 0.0
    for j in range(min(steps, n)):
        w = np.asarray(matvec(v), dtype=np.float64)
        alpha = _dot(w, v)
        w -= alpha * v + beta * prev
        w -= _dot(w, v) * v  # one local reorthogonalisation against rounding
        if project:  # last: the recurrence would grow a rounding error along 1 (eigenvalue 0)
            w -= w.mean()
        beta = math.sqrt(_dot(w, w))
        alphas.append(alpha)
        betas.append(beta)
        last = j + 1 == min(steps, n)
        if (j + 1) % 10 == 0 or last or beta <= 1e-14 * scale:
            theta, s = sla_dense.eigh_tridiagonal(np.array(alphas), np.array(betas[:-1]))
            lo, hi = float(theta[0]), float(theta[-1])
            res = np.abs(beta * s[-1, [0, -1]])
            if beta <= 1e-14 * scale or bool(np.all(res <= tol * scale)):
                return lo, hi, True
        if beta <= 1e-14 * scale:
            break
        prev, v = v, w / beta
    return lo, hi, False


def _eigs_modulus(M: sp.csr_array) -> float | None:
    """``max_{k >= 2} |lambda_k|`` of a stochastic non-symmetric ``M`` by ARPACK with
    :data:`LANCZOS_TOL` and a cap on its iterations (``None`` if it does not converge)."""
    n = M.shape[0]
    D = M

    def mv(x: np.ndarray) -> np.ndarray:
        out: np.ndarray = np.asarray(D @ x) - np.mean(x, axis=0, keepdims=x.ndim > 1)
        return out

    op = sla.LinearOperator((n, n), matvec=mv, dtype=np.float64)
    try:
        ev = sla.eigs(op, k=3, which="LM", v0=_v0(n), ncv=24, tol=LANCZOS_TOL,
                      maxiter=max(1, LANCZOS_STEPS // 24), return_eigenvectors=False)
    except sla.ArpackNoConvergence:
        return None
    return float(np.max(np.abs(ev)))


# ============================================================================ diameter
def _bfs(G: sp.csr_array, source: int) -> np.ndarray:
    """Hops from ``source`` along ``G`` (``G[u, v]``: the arc ``u -> v``)."""
    return np.asarray(csgraph.shortest_path(G, method="D", unweighted=True, indices=source))


def bounded_diameter(P: sp.csr_array) -> tuple[int | None, bool]:
    """``(diameter, estimated)`` of the arc pattern ``P`` (``P[i, j] = 1``: the arc
    ``j -> i``, no diagonal; ``None``: not strongly connected) at a cost linear in the graph:
    a circulant pattern's exactly (vertex-transitive: the eccentricity of node 0), any other's
    as the lower bound of :data:`DIAMETER_SWEEPS` breadth-first searches (estimated)."""
    if P.shape[0] == 1:
        return 0, False
    if circulant_row(P) is not None:
        d = _bfs(P.T.tocsr(), 0)
        return (int(d.max()) if bool(np.all(np.isfinite(d))) else None), False
    return _diameter_estimate(P), True


def _diameter_estimate(P: sp.csr_array, sweeps: int = DIAMETER_SWEEPS) -> int | None:
    """The largest eccentricity found by double sweeps from node 0 (out and in): a lower
    bound of the directed diameter; ``None`` when the graph is not strongly connected."""
    n = P.shape[0]
    if n == 1:
        return 0
    if int(csgraph.connected_components(P, directed=True, connection="strong")[0]) > 1:
        return None
    out, inn = P.T.tocsr(), P  # csgraph reads G[u, v] as u -> v; P[i, j] is j -> i
    best, node = 0, 0
    for s in range(max(1, sweeps)):
        d = _bfs(out if s % 2 == 0 else inn, node)
        best = max(best, int(d.max()))
        node = int(np.argmax(d))
    return best


# ============================================================================ one matrix
@dataclass
class LargeSpectra:
    """The bounded-cost spectral quantities of one mixing matrix ``W`` (computed on demand,
    each once): its gaps, algebraic connectivity and diameter, in closed form when ``W`` is
    circulant, else estimated (:attr:`estimated` lists which).

    Examples
    --------
    >>> from topofl.spectral.large import LargeSpectra
    >>> s = LargeSpectra(tf.topologies.ring(2000).W)
    >>> s.circulant, s.diameter(), s.estimated
    (True, 1000, [])
    >>> gap = s.gap("lambda2")  # 1 - (1 + 2 cos(2 pi / n)) / 3 = (4 / 3) sin^2(pi / n)
    >>> exact = 4 / 3 * float(np.sin(np.pi / 2000)) ** 2
    >>> abs(gap - exact) < 1e-12 * exact
    True
    """

    W: sp.csr_array
    estimated: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.n = int(self.W.shape[0])
        self.row = circulant_row(self.W)
        self.symmetric = _is_symmetric(self.W)
        self._memo: dict[str, Any] = {}

    @property
    def circulant(self) -> bool:
        """Whether ``W`` is circulant (its quantities are then in closed form)."""
        return self.row is not None

    def _once(self, key: str, fn: Any) -> Any:
        if key not in self._memo:
            self._memo[key] = fn()
        return self._memo[key]

    # ------------------------------------------------------------------ eigenvalues
    def _circulant_moduli(self) -> tuple[float, float | None]:
        """``(1 - max_{k>=1} |lambda_k| (with |sum(c) - 1|), 1 - max_{k>=1} Re lambda_k)``."""
        assert self.row is not None
        offsets, weights = self.row
        n = self.n
        a, b = _dft_parts(n, offsets, weights)
        excess = 1.0 - math.fsum(weights.tolist())  # 0 for a stochastic W (to rounding)
        om = excess + a[1:]  # 1 - Re lambda_k, k >= 1
        if self.symmetric:
            one_minus = np.where(om <= 1.0, om, 2.0 - om)  # 1 - |lambda_k|
        else:
            mod_sq_gap = om * (2.0 - om) - b[1:] ** 2  # 1 - |lambda_k|^2
            one_minus = mod_sq_gap / (1.0 + np.hypot(1.0 - om, b[1:]))
        gap = min(float(one_minus.min()), 1.0 - abs(excess))
        lam2 = float(om.min()) if self.symmetric else None
        return gap, lam2

    def _lanczos_w(self) -> tuple[float, float, bool]:
        out: tuple[float, float, bool] = self._once("lanczos_w", lambda: _lanczos(
            lambda x: self.W @ x, self.n, project=True, scale=1.0))
        return out

    def gap(self, kind: str) -> float | None:
        """The spectral gap of :func:`~topofl.spectral.spectral_gap` ``kind`` of a
        stochastic ``W`` (``"lambda2"`` needs a symmetric ``W``)."""
        if self.n == 1:
            return 1.0
        if self.row is not None:
            gap, lam2 = self._once("circulant", self._circulant_moduli)
            # a circulant W is normal: ||W - J||_2 is its second eigenvalue modulus
            return _snap(lam2 if kind == "lambda2" else gap)
        self.estimated.append(f"spectral_gap_{kind}")
        if self.symmetric:
            lo, hi, _ = self._lanczos_w()
            return _snap(1.0 - hi if kind == "lambda2" else 1.0 - max(abs(lo), abs(hi)))
        if kind == "norm":
            D = self.W
            n = self.n

            def gram(x: np.ndarray) -> np.ndarray:
                y = np.asarray(D @ x) - x.mean()
                out: np.ndarray = np.asarray(D.T @ y) - y.mean()
                return out

            _, top, _ = self._once("lanczos_gram", lambda: _lanczos(
                gram, n, project=False, scale=1.0))
            return _snap(1.0 - math.sqrt(max(0.0, top)))
        mod = self._once("eigs", lambda: _eigs_modulus(self.W))
        return None if mod is None else _snap(1.0 - mod)

    def algebraic_connectivity(self) -> float:
        """:func:`~topofl.spectral.algebraic_connectivity` (unweighted) of ``W``'s graph."""
        P = arc_pattern(self.W, diagonal=False)
        A = ((P + P.T) > 0).astype(np.float64).tocsr()
        deg = np.asarray(A.sum(axis=1)).ravel()
        c = 2.0 * float(deg.max()) if self.n else 0.0
        if c == 0.0:
            return 0.0
        if self.row is not None:
            offsets = {int(d) for d, w in zip(*self.row) if d != 0 and w != 0}
            offsets |= {(self.n - d) % self.n for d in offsets}
            k = np.arange(1, self.n, dtype=np.int64)
            mu = np.zeros(self.n - 1)
            for d in sorted(offsets):
                s = np.sin(_phases(self.n, d, k))
                mu += 2.0 * s * s
            return max(0.0, _snap(float(mu.min()), c))
        self.estimated.append("algebraic_connectivity")
        L = (sp.diags_array(deg) - A).tocsr()
        lo, _, _ = _lanczos(lambda x: L @ x, self.n, project=True, scale=c)
        return max(0.0, _snap(lo, c))

    # ------------------------------------------------------------------ diameter
    def diameter(self) -> int | None:
        """The directed diameter (``None``: not strongly connected): exact for a circulant
        ``W`` (vertex-transitive: node 0's eccentricity), else a lower bound (estimated)."""
        d, estimated = bounded_diameter(arc_pattern(self.W, diagonal=False))
        if estimated:
            self.estimated.append("diameter")
        return d
