r"""The pairwise privacy matrix every accountant of :mod:`topofl.privacy` returns, its summaries,
and the input checks they share.

``epsilon[u, v]`` is the privacy of node ``u``'s data from node ``v``'s view (pairwise network
DP, Cyffers et al. 2022): how well ``v``, seeing only the messages that reach it, can tell two
datasets of ``u`` apart, as ``(epsilon, delta)``-DP. The diagonal is ``0`` by convention (a
node's own data is not private from itself).

Examples
--------
>>> import numpy as np
>>> from topofl.privacy import muffliato
>>> from topofl.topologies import ring
>>> p = muffliato(ring(8), sigma=2.0, rounds=10)
>>> p.epsilon.shape, p.accountant
((8, 8), 'muffliato')
>>> s = p.by_distance()
>>> s[1]["mean"] > s[4]["mean"]                    # privacy loss decays with graph distance
True
>>> p.neighbours()["neighbours"] > p.neighbours()["others"]
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph

from topofl._utils.validation import check_int, check_matrix, check_real, check_stochastic
from topofl.graph import TimeVarying, Topology

__all__ = ["PairwisePrivacy", "by_distance", "check_sigma", "hop_distances", "mixing_matrices"]

#: Tolerance on the row sums of a mixing matrix an accountant reads (float32-friendly).
STOCHASTIC_ATOL = 1e-6
#: The accountants are dense (``n x n`` matrices, one per round): the largest graph and the
#: largest ``rounds * n^2`` they accept
MAX_NODES, MAX_ENTRIES = 2_000, 250_000_000
#: The largest graph an accountant that keeps no per-round matrix accepts (:func:`muffliato
#: <topofl.privacy.muffliato>`: a few ``n x n`` float64 matrices at a time, 134 MB each here)
STREAM_MAX_NODES = 4_096


@dataclass(frozen=True)
class PairwisePrivacy:
    r"""A pairwise privacy matrix and what it was computed from.

    Attributes
    ----------
    epsilon : numpy.ndarray
        ``(n, n)``: ``epsilon[u, v]``, the privacy of ``u``'s data from ``v``'s view at
        ``delta``; diagonal ``0``.
    delta : float
    accountant : str
        ``"muffliato"``, ``"gossip_linear"``, ``"random_walk_rdp"`` or ``"random_walk_fdp"``.
    params : dict
        The accountant's settings (``sigma``, ``rounds``, ...).
    adjacency : numpy.ndarray
        ``(n, n)`` bool: ``adjacency[u, v]`` iff ``u`` and ``v`` are neighbours (an edge
        either way, in any round read).
    curve : numpy.ndarray, optional
        The accountant's own quantity before the conversion to ``epsilon``: ``rho`` of
        ``rho``-zCDP (Muffliato, random-walk RDP) or ``mu`` of ``mu``-GDP (linear systems).
    curve_kind : str, optional
        ``"rho"`` or ``"mu"``.
    """

    epsilon: np.ndarray
    delta: float
    accountant: str
    params: dict[str, Any]
    adjacency: np.ndarray
    curve: np.ndarray | None = None
    curve_kind: str | None = None
    _distance: list[np.ndarray] = field(default_factory=list, repr=False, compare=False)

    @property
    def n(self) -> int:
        """The number of nodes."""
        return int(self.epsilon.shape[0])

    @property
    def distance(self) -> np.ndarray:
        """``(n, n)`` hop distances on the (undirected) neighbour graph; ``inf`` if none."""
        if not self._distance:
            self._distance.append(hop_distances(self.adjacency))
        return self._distance[0]

    def _off(self) -> np.ndarray:
        values: np.ndarray = self.epsilon[~np.eye(self.n, dtype=bool)]
        return values

    def max(self) -> float:
        """The largest pairwise ``epsilon`` (``u != v``)."""
        return float(np.nanmax(self._off())) if self.n > 1 else 0.0

    def mean(self) -> float:
        """The mean pairwise ``epsilon`` over ``u != v``."""
        return float(np.nanmean(self._off())) if self.n > 1 else 0.0

    def neighbours(self) -> dict[str, float]:
        """Mean ``epsilon`` between neighbours and between the other pairs (``nan`` if none)."""
        off = ~np.eye(self.n, dtype=bool)
        near, far = self.adjacency & off, ~self.adjacency & off
        return {"neighbours": _mean(self.epsilon[near]), "others": _mean(self.epsilon[far])}

    def by_distance(self) -> dict[int, dict[str, float]]:
        """``{d: {"mean", "min", "max", "pairs"}}`` over the pairs at hop distance ``d >= 1``
        (unreachable pairs under ``-1``)."""
        return by_distance(self.epsilon, self.distance)

    def summary(self) -> dict[str, float]:
        """The numbers a report prints: max, mean, neighbours, others, and the mean at the
        largest distance."""
        by_d = self.by_distance()
        far = max((d for d in by_d if d > 0), default=None)
        nb = self.neighbours()
        return {"max": self.max(), "mean": self.mean(), "neighbours": nb["neighbours"],
                "others": nb["others"],
                "farthest": by_d[far]["mean"] if far is not None else math.nan}


def hop_distances(adjacency: np.ndarray) -> np.ndarray:
    """``(n, n)`` hop distances on the undirected graph of ``adjacency``; ``inf`` if none."""
    g = sp.csr_array(np.asarray(adjacency, dtype=float))
    out: np.ndarray = csgraph.shortest_path(g, directed=False, unweighted=True)
    return out


def by_distance(values: np.ndarray, distance: np.ndarray) -> dict[int, dict[str, float]]:
    """``{d: {"mean", "min", "max", "pairs"}}`` of the off-diagonal ``values`` (``nan`` left
    out) grouped by ``distance`` (``d >= 1``; unreachable pairs under ``-1``)."""
    off = ~np.eye(values.shape[0], dtype=bool)
    out: dict[int, dict[str, float]] = {}
    for d in sorted(set(distance[off].tolist())):
        vals = values[(distance == d) & off]
        vals = vals[~np.isnan(vals)]
        if vals.size:
            out[-1 if math.isinf(d) else int(d)] = {
                "mean": float(vals.mean()), "min": float(vals.min()),
                "max": float(vals.max()), "pairs": int(vals.size)}
    return out


def _mean(values: np.ndarray) -> float:
    values = values[~np.isnan(values)]
    return float(values.mean()) if values.size else math.nan


def check_sigma(sigma: Any) -> float:
    """The noise multiplier (noise standard deviation over the l2 sensitivity), ``> 0``."""
    return check_real(sigma, "sigma", low=0, low_open=True)


def mixing_matrices(topology: Any, rounds: Any, *, static: bool = False,
                    what: str = "this accountant", streamed: bool = False
                    ) -> tuple[list[np.ndarray], int]:
    """The dense float64 mixing matrices of rounds ``1..rounds`` (one if static) and ``rounds``.

    ``topology`` is a :class:`~topofl.graph.Topology`, a :class:`~topofl.graph.TimeVarying`
    (refused when ``static``) or a square array. Each matrix must be row-stochastic. An
    accountant that keeps an ``n x n`` matrix per round is bounded by :data:`MAX_NODES` and
    ``rounds * n^2 <= MAX_ENTRIES``; one that is ``streamed`` (keeps none) by
    :data:`STREAM_MAX_NODES` and the matrices it reads (one static, one per round of a
    period) times ``n^2 <= MAX_ENTRIES``.
    """
    T = check_int(rounds, "rounds", low=1)
    n = int(topology.n) if isinstance(topology, TimeVarying | Topology) else None
    if n is not None:
        top = STREAM_MAX_NODES if streamed else MAX_NODES
        kept = T
        if streamed:
            period = topology.period if isinstance(topology, TimeVarying) else 1
            kept = T if period is None else min(T, period)
        if n > top or kept * n * n > MAX_ENTRIES:
            limit = "the matrices it reads" if streamed else "rounds"
            raise ValueError(f"{what} is dense: it needs n <= {top} and {limit} * n^2 <= "
                             f"{MAX_ENTRIES:,} (2 GB of float64), got n = {n} and rounds = "
                             f"{T}")
    if isinstance(topology, TimeVarying):
        if static:
            raise TypeError(f"{what} is stated for one fixed mixing matrix, got a TimeVarying "
                            f"({topology.name}); pass one round's graph (tv.at(t))")
        count = T if topology.period is None else min(T, topology.period)
        return [_dense(topology.at(t), what) for t in range(count)], T
    return [_dense(topology, what)], T


def _dense(W: Any, what: str) -> np.ndarray:
    M = W.W if isinstance(W, Topology) else check_matrix(W, name="topology")
    try:
        check_stochastic(M, "row", atol=STOCHASTIC_ATOL, name="topology")
    except ValueError as exc:
        raise ValueError(f"{what} needs a row-stochastic mixing matrix: {exc}") from None
    if M.shape[0] < 2:
        raise ValueError(f"{what} needs at least 2 nodes, got {M.shape[0]}")
    return np.asarray(M.toarray(), dtype=np.float64)


def adjacency_of(mats: Sequence[np.ndarray]) -> np.ndarray:
    """``(n, n)`` bool: an edge either way in any of ``mats``, no self-loops."""
    A = np.zeros(mats[0].shape, dtype=bool)
    for M in mats:
        A |= (M != 0) | (M.T != 0)
    np.fill_diagonal(A, False)
    return A


def at_round(mats: Sequence[np.ndarray], t: int) -> np.ndarray:
    """The matrix of round ``t`` (0-based) of a static (one matrix) or periodic list."""
    return mats[t % len(mats)]
