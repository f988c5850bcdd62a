r"""STL-FW: a sparse mixing matrix learned from the nodes' label distributions (Le Bars et al.).

Le Bars, Bellet, Tommasi, Lavoie and Kermarrec show that, under label skew, D-SGD is slowed by
the *neighbourhood heterogeneity* of ``W`` -- how far each node's mixed label distribution
$\sum_j W_{ij}\pi_j$ is from the global one -- rather than by the heterogeneity of single nodes.
Their Sparse Topology Learning with Frank-Wolfe (STL-FW) picks ``W`` in the set of doubly
stochastic matrices (the Birkhoff polytope) by minimising

.. math:: g(W) = \frac1n \|W\Pi - J\Pi\|_F^2 + \frac{\lambda}{n}\|W - J\|_F^2,
          \qquad J = \tfrac1n \mathbf 1\mathbf 1^\top,

with $\Pi$ the ``(n, K)`` matrix of label proportions: the first term is the neighbourhood
heterogeneity (:func:`topofl.spectral.neighborhood_heterogeneity`), the second pulls ``W``
toward the average so that the gradient noise is averaged too ($\lambda$ weighs variance
against heterogeneity). Frank-Wolfe starts from $W_0 = I$; each step's linear minimisation over
the polytope is attained at a permutation matrix (the Hungarian algorithm on the gradient),
and an exact line search sets the step. After ``t`` steps ``W`` is a convex combination of
``I`` and ``t`` permutations, so every node has at most ``t`` neighbours: Frank-Wolfe stops
before a node would get more than the degree budget.

References
----------
.. [1] B. Le Bars, A. Bellet, M. Tommasi, E. Lavoie, A.-M. Kermarrec, "Refined convergence and
   topology learning for decentralized SGD with heterogeneous data", AISTATS 2023 (code:
   ``BatisteLB/STL-FW``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

from topofl._utils.validation import check_int, check_matrix, check_real, check_stochastic
from topofl.graph import Topology
from topofl.topologies._registry import GraphFamily, Param, register
from topofl.topologies.cliques._input import _fingerprint, _label_matrix, _normalised

__all__ = ["stl_fw", "stl_fw_objective"]

#: How far from 1 a row sum of the ``W`` given to :func:`stl_fw_objective` may be (the
#: tolerance of :mod:`topofl.spectral`'s stochastic checks).
_ROW_ATOL = 1e-6


def stl_fw_objective(W: Any, label_distributions: Any, lam: float) -> float:
    r"""STL-FW's objective $g(W) = \frac1n\|W\Pi - J\Pi\|_F^2 + \frac{\lambda}{n}\|W - J\|_F^2$.

    Parameters
    ----------
    W : array_like, sparse matrix or Topology
        ``(n, n)`` row-stochastic mixing matrix: finite, non-negative entries and every row
        summing to 1 (to ``1e-6``), as the neighbourhood heterogeneity of its first term
        (:func:`topofl.spectral.neighborhood_heterogeneity`) needs; STL-FW itself evaluates it
        on doubly stochastic matrices.
    label_distributions : array_like
        ``(n, K)`` per-node class counts or proportions (rows normalised here).
    lam : float
        $\lambda \ge 0$.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``W`` is not a numeric matrix.
    ValueError
        If ``W`` is not ``(n, n)`` for the ``n`` label distributions, has a NaN, inf or
        negative entry or a row that does not sum to 1; for bad ``label_distributions`` or
        ``lam < 0``.

    Examples
    --------
    Two nodes holding one class each: alone the heterogeneity is 1/4 per class, the average
    ``J`` removes it and its distance to ``J``:

    >>> P = np.eye(2)
    >>> tf.topologies.stl_fw_objective(np.eye(2), P, 0.0)
    0.5
    >>> tf.topologies.stl_fw_objective(np.full((2, 2), 0.5), P, 1.0)
    0.0
    """
    # Checked first (a clear error rather than numpy's), then converted as it always was.
    M = W.W if isinstance(W, Topology) else check_matrix(W, "W")
    A = W.W.toarray() if isinstance(W, Topology) else (
        W.toarray() if sp.issparse(W) else np.asarray(W, dtype=np.float64))
    P = _normalised(_label_matrix(label_distributions))
    n = P.shape[0]
    if A.shape != (n, n):
        raise ValueError(f"W must be ({n}, {n}) for {n} label distributions, got {A.shape}")
    check_stochastic(M, "row", atol=_ROW_ATOL, name="W")
    lam = check_real(lam, "lam", low=0.0)
    return _objective(A, P, lam)


def _objective(W: np.ndarray, P: np.ndarray, lam: float) -> float:
    n = P.shape[0]
    het = W @ P - P.mean(axis=0)
    dev = W - 1.0 / n
    return float((np.sum(het * het) + lam * np.sum(dev * dev)) / n)


def _off_degrees(W: np.ndarray) -> int:
    off = W > 0
    np.fill_diagonal(off, False)
    return int(max(off.sum(axis=1).max(), off.sum(axis=0).max()))


def stl_fw(
    label_distributions: Any,
    budget: int,
    *,
    lam: float = 0.1,
    max_iter: int | None = None,
) -> Topology:
    r"""STL-FW's learned topology: Frank-Wolfe on neighbourhood heterogeneity under a degree budget.

    The family next to :func:`~topofl.topologies.dcliques`, from the same input (per-node
    label counts). Deterministic: the same input gives the same ``W``.

    Parameters
    ----------
    label_distributions : array_like, shape (n, K)
        Per-node class counts or proportions (rows normalised internally; not modified).
    budget : int
        Degree budget $d_{\max}$: no node receives from, or sends to, more than ``budget``
        others (``1 <= budget <= n - 1``). The authors' code bounds the receiving side (the
        rows); bounding both only stops earlier when a column would go over.
    lam : float, default 0.1
        $\lambda \ge 0$: weight of $\frac1n\|W - J\|_F^2$ (variance) against the neighbourhood
        heterogeneity. The authors' synthetic experiments set it to $\sigma^2 / (K B)$ from
        their data's noise $\sigma^2$ and heterogeneity bound $B$.
    max_iter : int, optional
        Cap on the Frank-Wolfe steps (default ``10 * budget + 10``); it stops earlier at the
        budget or when the line search makes no progress.

    Returns
    -------
    Topology
        Named ``"stl_fw"``; ``W`` doubly stochastic, in general not symmetric (a directed
        graph). ``params``: ``n``, ``num_classes``, ``labels_sha1``, ``budget``, ``lam``,
        ``iterations`` (steps taken), ``objective`` ($g(W)$), ``heterogeneity`` (its first
        term) and ``max_degree`` (the largest in- or out-degree).

    Raises
    ------
    ValueError
        For bad ``label_distributions``, ``budget`` outside ``[1, n - 1]``, ``lam < 0``.

    Notes
    -----
    Each step costs $O(n^2 K)$ for the gradient and $O(n^3)$ for the assignment problem. The
    learned graph is not always connected: when small groups of nodes already hold the global
    label distribution, nothing in $g$ but the $\lambda$ term links the groups (check with
    :func:`topofl.spectral.is_strongly_connected`).

    Examples
    --------
    Ten classes, one per node: with a budget of nine every node can see all classes, and the
    learned ``W`` removes almost all of the neighbourhood heterogeneity.

    >>> labels = np.eye(10)[np.arange(40) % 10]
    >>> t = tf.topologies.stl_fw(labels, budget=9)
    >>> t.is_doubly_stochastic, t.params["max_degree"] <= 9
    (True, True)
    >>> H = tf.spectral.neighborhood_heterogeneity
    >>> P = labels / labels.sum(axis=1, keepdims=True)
    >>> round(H(np.eye(40), P), 3), round(H(t, P), 3)
    (0.9, 0.0)
    """
    arr = _label_matrix(label_distributions)
    P = _normalised(arr)
    n = P.shape[0]
    if n < 2:
        raise ValueError(f"STL-FW needs at least 2 nodes, got n={n}")
    budget = check_int(budget, "budget", low=1, high=n - 1)
    lam = check_real(lam, "lam", low=0.0)
    max_iter = 10 * budget + 10 if max_iter is None else check_int(max_iter, "max_iter", low=0)
    mean = P.mean(axis=0)
    W = np.eye(n)
    steps = 0
    for _ in range(max_iter):
        R = W @ P - mean  # (n, K) residual of the mixed distributions
        grad = (2.0 / n) * (R @ P.T + lam * (W - 1.0 / n))
        rows, cols = linear_sum_assignment(grad)
        S = np.zeros((n, n))
        S[rows, cols] = 1.0
        D = S - W
        DP = D @ P
        den = np.sum(DP * DP) + lam * np.sum(D * D)
        if den <= 0.0:
            break
        num = -(np.sum(R * DP) + lam * np.sum((W - 1.0 / n) * D))
        step = min(1.0, num / den)
        if step <= 1e-12:
            break
        nxt = (1.0 - step) * W + step * S
        if _off_degrees(nxt) > budget:
            break
        W = nxt
        steps += 1
    W[np.abs(W) < 1e-15] = 0.0
    R = W @ P - mean
    params = {
        "n": n,
        "num_classes": int(arr.shape[1]),
        "labels_sha1": _fingerprint(arr),
        "budget": budget,
        "lam": lam,
        "iterations": steps,
        "objective": _objective(W, P, lam),
        "heterogeneity": float(np.sum(R * R) / n),
        "max_degree": _off_degrees(W),
    }
    return Topology.from_matrix(sp.csr_array(W), name="stl_fw", params=params)


# ---------------------------------------------------------------------------- registry
def _one_class_per_node(n: int, classes: int) -> np.ndarray:
    out = np.zeros((n, classes))
    out[np.arange(n), np.arange(n) % classes] = 1.0
    return out


def _stl_fw_spec(n: int, budget: int, *, classes: int = 10, **kwargs: Any) -> Topology:
    n = check_int(n, "n", low=2)
    classes = check_int(classes, "classes", low=1)
    return stl_fw(_one_class_per_node(n, classes), budget, **kwargs)


def _stl_fw_labels(label_distributions: Any, budget: int, *, lam: float = 0.1,
                   seed: Any = None) -> Topology:
    # A run's graph from its clients' label counts (STL-FW is deterministic: seed unused).
    return stl_fw(label_distributions, budget, lam=lam)


def _stl_fw_example(n: int, rng: np.random.Generator) -> dict[str, Any] | None:
    if n < 2:
        return None
    k = int(rng.integers(1, 11))
    labels = rng.integers(0, 4, size=(n, k)).astype(np.float64)
    labels[np.arange(n), rng.integers(k, size=n)] += 1.0
    return {
        "label_distributions": labels,
        "budget": int(rng.integers(1, min(n - 1, 10) + 1)),
        "lam": float(rng.choice([0.0, 0.1, 1.0])),
    }


register(GraphFamily(
    "stl_fw", stl_fw,
    (Param("n", int, "number of nodes (spec: node i holds only class i mod classes)", low=2),
     Param("classes", int, "spec only: number of classes K", low=1),
     Param("budget", int, "largest number of in- or out-neighbours", low=1, high="n-1"),
     Param("lam", float, "weight of ||W - J||^2 (variance) against heterogeneity", low=0)),
    _stl_fw_example, random=False, stochastic="doubly", undirected=False, connected=False,
    description="STL-FW: a sparse doubly stochastic W learned by Frank-Wolfe to remove "
    "neighbourhood heterogeneity under a degree budget",
    from_spec=_stl_fw_spec, from_labels=_stl_fw_labels))
