"""Data skew seen through the gossip neighbourhoods."""

from __future__ import annotations

from typing import Any

import numpy as np

from topofl.spectral._common import _as_stochastic, _snap


def neighborhood_skew(topology: Any, label_distributions: Any) -> float:
    r"""Mean L1 distance of the mixed neighbourhood label distributions from the global one.

    $\frac{1}{n} \sum_i \big\| \sum_j W_{ij} p_j - \bar{p} \big\|_1$ with $p_j$ node ``j``'s label
    distribution and $\bar{p} = \frac1n \sum_j p_j$. It is 0 when every node's gossip
    neighbourhood (itself included, with its mixing weights) sees the global class balance --
    the design goal of D-Cliques -- and at most 2.

    Parameters
    ----------
    topology : Topology, array_like or sparse matrix
        ``(n, n)`` row-stochastic mixing matrix (rows within 1e-6 of 1), so that row ``i`` of
        ``W @ P`` is again a distribution; any other matrix is refused.
    label_distributions : array_like
        ``(n, c)``: row ``i`` is node ``i``'s distribution over ``c`` classes (non-negative,
        summing to 1). Not modified.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If ``W`` is not row-stochastic, the shape does not match ``n`` or a row of
        ``label_distributions`` is not a distribution.

    References
    ----------
    .. [1] A. Bellet, A.-M. Kermarrec, E. Lavoie, "D-Cliques: compensating for data
       heterogeneity with topology in decentralized federated learning", SRDS 2022.
    .. [2] B. Le Bars, A. Bellet, M. Tommasi, E. Lavoie, A.-M. Kermarrec, "Refined convergence
       and topology learning for decentralized SGD with heterogeneous data", AISTATS 2023.

    Examples
    --------
    Two classes, each node holds one; a ring mixes them only partially, the complete graph fully:

    >>> p = np.eye(2)[[0, 1, 0, 1, 0, 1]]
    >>> round(tf.spectral.neighborhood_skew(tf.topologies.ring(6), p), 4)
    0.3333
    >>> tf.spectral.neighborhood_skew(tf.topologies.complete(6), p)
    0.0
    """
    M, P = _checked(topology, label_distributions, "neighborhood_skew")
    mixed = np.asarray(M @ P)
    return _snap(float(np.abs(mixed - P.mean(axis=0)).sum(axis=1).mean()))


def _checked(topology: Any, label_distributions: Any, what: str) -> tuple[Any, np.ndarray]:
    """The row-stochastic ``W`` of ``topology`` and the label distributions, checked."""
    M = _as_stochastic(topology, "row", what, name="topology")
    return M, _distributions(label_distributions, M.shape[0])


def _distributions(label_distributions: Any, n: int) -> np.ndarray:
    """``label_distributions`` as a new ``(n, c)`` float64 array of distributions, or raise."""
    try:
        P = np.array(label_distributions, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            "label_distributions must be a numeric (n, c) array, got "
            f"{type(label_distributions).__name__}"
        ) from exc
    if P.ndim != 2 or P.shape[0] != n:
        raise ValueError(
            f"label_distributions must have shape (n, c) = ({n}, c), got {P.shape}"
        )
    if not np.all(np.isfinite(P)) or np.any(P < 0):
        raise ValueError("label_distributions must be finite and non-negative")
    sums = P.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > 1e-8)
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"label_distributions must have rows summing to 1: row {i} sums to {sums[i]:.6g} "
            "(normalise label counts with counts / counts.sum(axis=1, keepdims=True))"
        )
    return P


def neighborhood_heterogeneity(topology: Any, label_distributions: Any) -> float:
    r"""STL-FW's neighbourhood heterogeneity: mean squared distance of mixed label distributions.

    $\frac1n \|W\Pi - J\Pi\|_F^2 = \frac1n \sum_i \big\| \sum_j W_{ij} \pi_j - \bar\pi
    \big\|_2^2$, with $\pi_j$ node ``j``'s label distribution (row ``j`` of $\Pi$) and
    $\bar\pi = \frac1n\sum_j \pi_j$. Under label skew it bounds, up to a constant of the
    data (the $B$ of Le Bars et al.), the neighbourhood heterogeneity of the gradients that
    slows D-SGD; it is the first term of STL-FW's objective
    (:func:`~topofl.topologies.stl_fw_objective`). :func:`neighborhood_skew` is its L1 analogue.

    Defined for a row-stochastic ``W`` (each mixed row is again a distribution). It is 0 when
    every node's neighbourhood, weighted by ``W``, holds the global class balance, and at most 2
    (a squared L2 distance between two distributions). For a random schedule, its expectation
    over one round is the ``consensus_contraction`` of
    :func:`~topofl.spectral.expected_mixing` times its value for ``W = I``
    (:func:`~topofl.spectral.summary` reports the mean over the rounds it examines).

    Parameters
    ----------
    topology, label_distributions
        As in :func:`neighborhood_skew`: an ``(n, n)`` row-stochastic mixing matrix and the
        ``(n, c)`` label distributions of the nodes (not modified).

    Returns
    -------
    float
        In ``[0, 2]``.

    Raises
    ------
    ValueError
        As :func:`neighborhood_skew`: ``W`` not row-stochastic, a shape that does not match
        or a row of ``label_distributions`` that is not a distribution.

    References
    ----------
    .. [1] B. Le Bars, A. Bellet, M. Tommasi, E. Lavoie, A.-M. Kermarrec, "Refined convergence
       and topology learning for decentralized SGD with heterogeneous data", AISTATS 2023.

    Examples
    --------
    Two classes, each node holds one. Alone, every node is 1/2 away from the balance in each
    class: $1/4 + 1/4 = 1/2$. On a ring of 6 a node mixes itself with two nodes of the other
    class, $(1/3, 2/3)$, a third of the distance away, $2 (1/6)^2 = 1/18$; the complete graph
    mixes everything:

    >>> p = np.eye(2)[[0, 1, 0, 1, 0, 1]]
    >>> tf.spectral.neighborhood_heterogeneity(np.eye(6), p)
    0.5
    >>> round(tf.spectral.neighborhood_heterogeneity(tf.topologies.ring(6), p), 6)
    0.055556
    >>> tf.spectral.neighborhood_heterogeneity(tf.topologies.complete(6), p)
    0.0
    """
    M, P = _checked(topology, label_distributions, "neighborhood_heterogeneity")
    R = np.asarray(M @ P) - P.mean(axis=0)
    return _snap(float(np.sum(R * R) / M.shape[0]))
