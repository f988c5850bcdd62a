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
    M = _as_stochastic(topology, "row", "neighborhood_skew", name="topology")
    n = M.shape[0]
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
    mixed = np.asarray(M @ P)
    return _snap(float(np.abs(mixed - P.mean(axis=0)).sum(axis=1).mean()))
