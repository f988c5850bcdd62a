"""Clique skew, eq. (3) of D-Cliques: how far a set's label distribution is from the global one."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from topofl.topologies.cliques._input import _label_matrix, _members, _normalised


def _skews(P: np.ndarray, p: np.ndarray, parts: Iterable[np.ndarray]) -> np.ndarray:
    return np.asarray(
        [np.abs(P[m].sum(axis=0) / m.size - p).sum() for m in parts], dtype=np.float64
    )


def skew(label_distributions: Any, members: Iterable[int]) -> float:
    r"""Skew of a set of nodes: eq. (3) of D-Cliques, $\sum_l |p_C(l) - p(l)|$.

    Parameters
    ----------
    label_distributions : array_like, shape (n, L)
        Per-node class counts or proportions; each row is normalised to a distribution $p_i$.
    members : iterable of int
        The nodes of the set $C$ (distinct ids in ``[0, n-1]``, at least one).

    Returns
    -------
    float
        The L1 distance between $p_C = \frac{1}{|C|}\sum_{i \in C} p_i$ and the global
        $p = \frac{1}{n}\sum_i p_i$, in $[0, 2]$.

    Raises
    ------
    ValueError
        If ``label_distributions`` is not a non-negative finite ``(n, L)`` array without a zero
        row, or ``members`` is empty, repeats a node or holds an id out of range.
    TypeError
        If ``members`` is not an iterable of ints.

    Notes
    -----
    $O(|C| L + n L)$.

    Examples
    --------
    Four nodes, two classes; node 0 holds only class 0, node 1 only class 1, nodes 2 and 3 are
    balanced, so $p = (1/2, 1/2)$:

    >>> labels = [[5, 0], [0, 5], [1, 1], [3, 3]]
    >>> tf.topologies.skew(labels, [0]), tf.topologies.skew(labels, [0, 1])
    (1.0, 0.0)
    >>> tf.topologies.skew(labels, [0, 2])
    0.5
    """
    P = _normalised(_label_matrix(label_distributions))
    m = _members(members, P.shape[0], "members")
    return float(np.abs(P[m].mean(axis=0) - P.mean(axis=0)).sum())


def clique_skews(label_distributions: Any, cliques: Iterable[Iterable[int]]) -> np.ndarray:
    """The :func:`skew` of every clique, as a ``(K,)`` float64 array.

    Parameters
    ----------
    label_distributions : array_like, shape (n, L)
        Per-node class counts or proportions.
    cliques : iterable of iterables of int
        ``K`` sets of nodes (usually a partition, e.g. ``Topology.groups`` of :func:`dcliques`;
        overlapping sets are allowed here).

    Examples
    --------
    >>> labels = np.eye(2)[[0, 0, 1, 1]]
    >>> tf.topologies.clique_skews(labels, [[0, 1], [2, 3]]).tolist()
    [1.0, 1.0]
    >>> tf.topologies.clique_skews(labels, [[0, 2], [1, 3]]).tolist()
    [0.0, 0.0]
    """
    P = _normalised(_label_matrix(label_distributions))
    n = P.shape[0]
    if isinstance(cliques, (str, bytes)) or not isinstance(cliques, Iterable):
        raise TypeError(f"cliques must be an iterable of iterables, got {type(cliques).__name__}")
    parts = [_members(c, n, f"cliques[{k}]") for k, c in enumerate(cliques)]
    return _skews(P, P.mean(axis=0), parts)
