r"""DECOR's pairwise-correlated noise and what it spends: :func:`correlated_noise_spend`.

The defence (Allouah, Koloskova, El Firdoussi, Jaggi and Guerraoui, "The Privacy Power of
Correlated Noise in Decentralized Learning", ICML 2024, DECOR): each round ``t``, on top of its
independent noise ``sigma C z_i``, node ``i`` adds ``sigma_cor C sum_{j ~ i} s_ij z_ij``, where
every pair of neighbours ``{i, j}`` of the round's graph shares one Gaussian draw ``z_ij``
(``s_ij = +1`` for ``i < j``, ``-1`` otherwise): the pair terms cancel in the sum over the
nodes, so the average the gossip converges to carries the independent noise only. Per
coordinate, in units of ``C^2``, the round's noise has the covariance

.. math:: \Sigma_t = \sigma^2 I + \sigma_{cor}^2 L_t,

``L_t`` the Laplacian of the round's graph (unweighted; an edge either way counted once:
:func:`pair_edges`, :func:`noise_covariance`). The piece that adds it is
:class:`topofl.engine.pieces.privacy.NoisyUpdates` (``correlated``).

Examples
--------
>>> from topofl.privacy import correlated_noise_spend, noisy_updates_spend
>>> from topofl.topologies import ring
>>> mu, eps = correlated_noise_spend(ring(8), noise=8.0, correlated=0.0, rounds=16)
>>> float(mu[0]) == noisy_updates_spend(8.0, 16)[0]      # no pair noise: the local bound
True
>>> mu, eps = correlated_noise_spend(ring(8), noise=8.0, correlated=16.0, rounds=16)
>>> round(float(mu.max()), 4), round(float(eps.max()), 3)   # towards the mean's 1 / sqrt(8)
(0.502, 2.002)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from topofl._utils.validation import check_int, check_matrix, check_real
from topofl.graph import TimeVarying, Topology
from topofl.privacy.conversions import check_delta, gdp_epsilon
from topofl.privacy.pairwise import MAX_NODES, check_sigma

__all__ = ["CorrelatedSpend", "correlated_noise_spend", "inverse_diagonal", "noise_covariance",
           "pair_edges"]


class CorrelatedSpend(NamedTuple):
    """What :func:`correlated_noise_spend` returns.

    Attributes
    ----------
    mu : numpy.ndarray
        ``(n,)``: node ``u``'s data is ``mu[u]``-GDP against the adversary (``nan`` for a
        colluder: its data is the adversary's).
    epsilon : numpy.ndarray
        ``(n,)``: the same at ``delta`` (:func:`~topofl.privacy.gdp_epsilon`), ``nan`` for a
        colluder.
    """

    mu: np.ndarray
    epsilon: np.ndarray


def pair_edges(topology: Any) -> np.ndarray:
    """``(E, 2)`` int64: the pairs ``i < j`` linked either way in ``topology`` (a
    :class:`~topofl.graph.Topology` or a square matrix, its non-zero off-diagonal entries), in
    increasing order: the pairs that share a draw of DECOR's noise.

    Examples
    --------
    >>> from topofl.topologies import ring
    >>> pair_edges(ring(4)).tolist()
    [[0, 1], [0, 3], [1, 2], [2, 3]]
    """
    M = topology.W if isinstance(topology, Topology) else check_matrix(topology, name="topology")
    A = sp.coo_array(M)
    i, j = np.asarray(A.row, dtype=np.int64), np.asarray(A.col, dtype=np.int64)
    keep = (i != j) & (np.asarray(A.data) != 0)
    lo, hi = np.minimum(i[keep], j[keep]), np.maximum(i[keep], j[keep])
    n = int(M.shape[0])
    codes = np.unique(lo * n + hi)
    return np.stack([codes // n, codes % n], axis=1) if codes.size else np.zeros((0, 2),
                                                                                  np.int64)


def _laplacian(edges: np.ndarray, n: int) -> np.ndarray:
    L = np.zeros((n, n))
    if len(edges):
        i, j = edges[:, 0], edges[:, 1]
        L[i, j] = L[j, i] = -1.0
        np.add.at(L, (i, i), 1.0)
        np.add.at(L, (j, j), 1.0)
    return L


def noise_covariance(topology: Any, noise: Any, correlated: Any) -> np.ndarray:
    r"""``(n, n)``: the covariance per coordinate of a round's noise over the nodes, in units of
    ``C^2``, :math:`\sigma^2 I + \sigma_{cor}^2 L` (``L`` the Laplacian of :func:`pair_edges`).

    Examples
    --------
    >>> from topofl.topologies import ring
    >>> noise_covariance(ring(4), 1.0, 2.0)[0].tolist()
    [9.0, -4.0, 0.0, -4.0]
    """
    s = check_sigma(noise)
    c = check_real(correlated, "correlated", low=0)
    n = int(topology.n) if isinstance(topology, Topology) else \
        int(check_matrix(topology, name="topology").shape[0])
    return s * s * np.eye(n) + c * c * _laplacian(pair_edges(topology), n)


def inverse_diagonal(edges: np.ndarray, n: int, noise: float, correlated: float,
                     honest: np.ndarray | None = None) -> np.ndarray:
    r"""``(n,)``: the diagonal of :math:`\Sigma'^{-1}`, ``Sigma'`` the covariance of the honest
    nodes' noise once the pair draws of the colluders' edges are known (removed): that of the
    graph of the edges between honest nodes, :math:`\sigma^2 I + \sigma_{cor}^2 L_H`;
    ``nan`` at the colluders (``honest`` False). Computed from the Cholesky factor
    :math:`\Sigma' = R R^T`: :math:`(\Sigma'^{-1})_{uu} = \sum_k (R^{-1})_{ku}^2`.

    Examples
    --------
    >>> import numpy as np
    >>> edges = np.array([[0, 1]])                    # two nodes, one edge: Sigma = [[5, -4],
    >>> inverse_diagonal(edges, 2, 1.0, 2.0).round(12).tolist()  # [-4, 5]]: inverse 5 / 9
    [0.555555555556, 0.555555555556]
    """
    h = np.ones(n, dtype=bool) if honest is None else honest
    keep = h[edges[:, 0]] & h[edges[:, 1]] if len(edges) else np.zeros(0, dtype=bool)
    idx = np.flatnonzero(h)
    where = np.full(n, -1, dtype=np.int64)
    where[idx] = np.arange(idx.size)
    sub = where[edges[keep]] if len(edges) else np.zeros((0, 2), np.int64)
    cov = noise * noise * np.eye(idx.size) + correlated * correlated * _laplacian(sub, idx.size)
    R = scipy.linalg.cholesky(cov, lower=True)
    Rinv = scipy.linalg.solve_triangular(R, np.eye(idx.size), lower=True)
    out = np.full(n, math.nan)
    out[idx] = np.einsum("ku,ku->u", Rinv, Rinv)
    return out


def _colluders(colluders: Iterable[Any], n: int) -> np.ndarray:
    honest = np.ones(n, dtype=bool)
    for c in colluders:
        k = check_int(c, "a colluder", low=0, high=n - 1)
        if not honest[k]:
            raise ValueError(f"colluders must be distinct nodes, got {k} twice")
        honest[k] = False
    if not honest.any():
        raise ValueError(f"colluders must leave at least one victim, got all {n} nodes")
    return honest


def correlated_noise_spend(topology: Any, noise: Any, correlated: Any, rounds: Any, *,
                           delta: Any = 1e-5, colluders: Iterable[Any] = ()
                           ) -> CorrelatedSpend:
    r"""Each node's privacy after ``rounds`` rounds of DECOR's noise, against an eavesdropper
    who sees every message and knows the colluders' pair draws.

    The threat model of DECOR's SecLDP (Allouah et al., ICML 2024): the adversary sees every
    message of every round and, with the colluding (curious) nodes, their own noise and the pair
    draws of their edges. Replacing the dataset of a victim ``u`` moves its clipped update, and
    so its message, by at most ``2 C``; one round is then a Gaussian mechanism with correlated
    noise, of

    .. math:: \mu_t(u)^2 = 4 \, (\Sigma_t'^{-1})_{uu},

    :math:`\Sigma_t' = \sigma^2 I + \sigma_{cor}^2 L_{t,H}` the covariance of the honest
    nodes' noise once the known draws are removed (``L_{t,H}``: the Laplacian of the round's
    edges between honest nodes; :func:`inverse_diagonal`). This is the per-round quantity of
    the paper's SecLDP analysis and of its companion accountant (its authors'
    ``utils/dp_account.py``, ``elfirdoussilab1/DECOR``: Rényi
    ``epsilon(alpha) = alpha * mu_t^2 / 2`` per round, the same Gaussian mechanism). The
    rounds compose adaptively as Gaussian DP,
    :math:`\mu(u) = \sqrt{\sum_t \mu_t(u)^2}` (Dong, Roth and Su 2022, Corollary 2), converted
    exactly (:func:`~topofl.privacy.gdp_epsilon`) where the paper's code converts the Rényi
    curve with the looser ``rho + 2 sqrt(rho log(1/delta))``.

    Checks: ``correlated = 0`` is :func:`~topofl.privacy.noisy_updates_spend` exactly; on the
    complete graph of ``m`` honest nodes
    :math:`(\Sigma'^{-1})_{uu} = \frac{1}{m \sigma^2} + \frac{m - 1}{m (\sigma^2 + m
    \sigma_{cor}^2)}` (the mean direction keeps ``sigma^2``, every other one gains
    ``m sigma_cor^2``); as ``correlated`` grows on a connected graph without colluders it
    tends to ``1 / (n sigma^2)``, the central-DP level of the mean.

    Parameters
    ----------
    topology : Topology, TimeVarying or array_like
        The graphs of the rounds (a static one every round; a matrix's non-zero pattern).
    noise : float
        ``sigma > 0``: the independent noise's multiplier.
    correlated : float
        ``sigma_cor >= 0``: the pair noise's multiplier.
    rounds : int
        ``>= 0``.
    delta : float, default 1e-5
    colluders : iterable of int, default ()
        The curious nodes (distinct, at least one node left out).

    Returns
    -------
    CorrelatedSpend
        ``(mu, epsilon)``, each ``(n,)``, ``nan`` at the colluders.

    Raises
    ------
    ValueError
        ``noise <= 0`` (the pair noise alone leaves the mean unmasked: no bound),
        ``correlated < 0``, ``rounds < 0``, a colluder out of range or repeated, every node a
        colluder, more than :data:`~topofl.privacy.pairwise.MAX_NODES` nodes.

    Examples
    --------
    >>> from topofl.topologies import complete
    >>> mu, _ = correlated_noise_spend(complete(4), 1.0, 1.0, 1, colluders=[3])
    >>> [round(float(x), 4) for x in mu]         # m = 3: 4 (1/3 + 2 / (3 * 4)) = 2
    [1.4142, 1.4142, 1.4142, nan]
    """
    s = check_sigma(noise)
    c = check_real(correlated, "correlated", low=0)
    T = check_int(rounds, "rounds", low=0)
    d = check_delta(delta)
    if isinstance(topology, TimeVarying):
        n = int(topology.n)
        count = T if topology.period is None else min(T, topology.period)
        graphs = [topology.at(t) for t in range(count)]
        period = len(graphs)
    else:
        n = int(topology.n) if isinstance(topology, Topology) else \
            int(check_matrix(topology, name="topology").shape[0])
        graphs, period = [topology], 1
    if n > MAX_NODES:
        raise ValueError(f"correlated_noise_spend is dense: it needs n <= {MAX_NODES}, got {n}")
    honest = _colluders(colluders, n)
    if c == 0.0 or T == 0:  # the local bound, the same float as noisy_updates_spend's
        mu = np.where(honest, 2.0 * math.sqrt(T) / s, math.nan)
    else:
        total = np.zeros(n)
        for k, g in enumerate(graphs):
            times = len(range(k, T, period))  # the rounds t < T with t % period == k
            total += times * inverse_diagonal(pair_edges(g), n, s, c, honest)
        mu = 2.0 * np.sqrt(total)
    eps = np.full(n, math.nan)
    eps[honest] = gdp_epsilon(mu[honest], d)
    return CorrelatedSpend(mu, eps)
