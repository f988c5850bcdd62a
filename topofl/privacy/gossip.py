r"""Pairwise privacy of gossip averaging with local noise: Muffliato's bound and the exact
linear-systems one.

The protocol (Cyffers, Even, Bellet and Massoulié, "Muffliato", NeurIPS 2022, Algorithm 1 without
its Chebyshev acceleration): each node ``u`` holds ``x_u`` (changing ``u``'s data moves it by at
most the sensitivity), adds Gaussian noise once, ``x^0 = x + eta`` with
``eta ~ N(0, sigma^2)`` per node (``sigma``: the noise multiplier, in units of the sensitivity),
then gossips ``x^t = W_t x^{t-1}`` for ``t = 1..T``; at step ``t`` node ``v`` sees the values
``x^t_w`` of its neighbours ``w`` (those with ``W_t[v, w] > 0``, ``w != v``), and knows its own
``x_v`` and ``eta_v``. With ``P_t = W_t ... W_1``:

- :func:`muffliato` is the paper's pairwise network RDP (Theorem 1, as its code
  ``totilas/muffliato`` computes it in ``muffliato.simulation``): each message is a Gaussian
  mechanism, composed, ``rho[u, v] = 1/(2 sigma^2) sum_t sum_{w ~ v} P_t[w, u]^2 / ||P_t[w]||^2``,
  i.e. ``(alpha, alpha rho)``-RDP for every ``alpha``;
- :func:`gossip_linear` reads the whole view as one linear Gaussian system (in the manner of
  the linear-systems analysis of Koskela and Kulkarni, arXiv 2505.19969, whose main case adds
  noise at every round; here it is added once, as in Muffliato): the view is a linear image
  ``M (x + eta)`` of the noisy inputs, and once ``v``'s own column is removed it is a Gaussian
  mechanism on ``x_u`` with ``mu[u, v]^2 = h_u / sigma^2``, where ``h_u`` is the leverage of
  column ``u`` in ``M`` (the squared norm of ``e_u`` projected onto the row space of ``M``). This
  is exact for the view, never above the local level ``1/sigma`` (the view is post-processing of
  ``x + eta``). It is not always below Muffliato's bound: on a ring of 6 after 3 steps node 0
  recovers ``x_3 + eta_3`` exactly from its two neighbours' 6 messages (exact ``rho = 0.5``,
  the local level), where the per-message composition gives ``rho = 0.116``; for long runs
  Muffliato's sum grows without bound while the exact value stays at the local level.

Examples
--------
>>> from topofl.privacy import gossip_linear, muffliato
>>> from topofl.topologies import complete, ring
>>> m, g = muffliato(ring(6), sigma=1.0, rounds=3), gossip_linear(ring(6), sigma=1.0, rounds=3)
>>> round(float(m.curve[3, 0]), 3), round(float(g.curve[3, 0] ** 2 / 2), 3)  # rho; exact: mu^2/2
(0.116, 0.5)
>>> gossip_linear(complete(4), sigma=2.0, rounds=3).curve.round(4)[0].tolist()
[0.0, 0.2887, 0.2887, 0.2887]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from topofl._utils.validation import check_int, check_real
from topofl.graph import TimeVarying
from topofl.privacy.conversions import Conversion, check_delta, gdp_epsilon, zcdp_epsilon
from topofl.privacy.pairwise import (
    PairwisePrivacy,
    adjacency_of,
    at_round,
    check_sigma,
    mixing_matrices,
)

__all__ = ["muffliato", "muffliato_rounds", "chebyshev_gamma", "gossip_linear", "gossip_views",
           "noisy_updates_spend"]


def _products(mats: list[np.ndarray], T: int) -> list[np.ndarray]:
    """``P_t = W_t ... W_1`` for ``t = 1..T`` (0-based list)."""
    P = np.eye(mats[0].shape[0])
    out = []
    for t in range(T):
        P = at_round(mats, t) @ P
        out.append(P)
    return out


def muffliato(topology: Any, sigma: Any, rounds: Any, *, delta: Any = 1e-5,
              method: Conversion = "balle2020", accelerate: bool | float = False
              ) -> PairwisePrivacy:
    r"""Muffliato's pairwise network RDP of noisy gossip averaging, as ``epsilon[u, v]``.

    Parameters
    ----------
    topology : Topology, TimeVarying or array_like
        The gossip matrices ``W_t`` (row-stochastic); a static one is ``W`` every step.
    sigma : float
        The noise multiplier: the standard deviation of the noise each node adds once, over
        the sensitivity of its value.
    rounds : int
        The gossip steps ``T >= 1``.
    delta : float, default 1e-5
    method : {"balle2020", "zcdp"}, default "balle2020"
        The RDP-to-DP conversion (:func:`~topofl.privacy.conversions.zcdp_epsilon`).
    accelerate : bool or float, default False
        Chebyshev-accelerated gossip (Muffliato's Algorithm 1 as written, and as its code's
        ``gossip_vector`` runs it): ``x^1 = W x^0`` and
        ``x^{t+1} = gamma W x^t + (1 - gamma) x^{t-1}``, so node ``w``'s message at step ``t``
        is row ``w`` of the polynomial ``P_t = gamma W P_{t-1} + (1 - gamma) P_{t-2}``
        (``P_0 = I``, ``P_1 = W``) applied to the noisy inputs. ``True`` takes the paper's
        ``gamma = 2 (1 - sqrt(lambda (1 - lambda / 4))) / (1 - lambda / 2)^2`` with
        ``lambda`` the spectral gap ``1 - lambda_2(W)`` (:func:`chebyshev_gamma`); a number
        is ``gamma`` itself, in ``[1, 2)``. Needs one symmetric ``W``. The authors' figure
        script (``figa.py``) runs the accelerated iterates but counts the privacy loss on
        the plain powers ``W^t``: that is ``accelerate=False``.

    Returns
    -------
    PairwisePrivacy
        ``curve`` is ``rho`` (the bound is ``(alpha, alpha rho)``-RDP; Muffliato's code
        reports ``alpha rho`` at ``alpha = 2``).

    Raises
    ------
    ValueError
        ``sigma <= 0``, ``rounds < 1``, ``delta`` outside ``(0, 1)``, a matrix that is not
        row-stochastic or has fewer than 2 nodes, more than
        :data:`~topofl.privacy.pairwise.STREAM_MAX_NODES` nodes; with ``accelerate``, a ``W``
        that is not symmetric or not connected, or ``gamma`` outside ``[1, 2)``.
    TypeError
        ``accelerate`` with a :class:`~topofl.graph.TimeVarying`, or not a bool or a number.

    Notes
    -----
    Cost: ``T`` sparse-by-dense products and ``T`` dense ``n x n`` passes, ``O(T n (n +
    nnz))``; memory a few ``n x n`` float64 matrices (no matrix per round is kept).

    Examples
    --------
    >>> from topofl.topologies import ring
    >>> p = muffliato(ring(8), sigma=1.0, rounds=20)
    >>> bool(abs(p.curve - p.curve.T).max() < 1e-12)           # a ring: symmetric
    True
    >>> a = muffliato(ring(8), sigma=1.0, rounds=20, accelerate=True)
    >>> round(a.params["gamma"], 4)          # gap 1 - (1 + 2 cos(pi/4)) / 3 on ring(8)
    1.3977
    """
    s = check_sigma(sigma)
    d = check_delta(delta)
    mats, T = mixing_matrices(topology, rounds, what="muffliato", streamed=True)
    gamma = _gamma_of(accelerate, topology, mats)
    n = mats[0].shape[0]
    steps = [sp.csr_array(M) for M in mats]
    senders = []
    for S in steps:
        A = S.copy()
        A.setdiag(0.0)
        A.eliminate_zeros()
        A.data[:] = 1.0
        senders.append(A)                                           # A[v, w]: w sends to v
    rho_vu = np.zeros((n, n))  # [v, u] while summing
    before, P = np.eye(n), np.eye(n)
    for t in range(T):
        WP = steps[t % len(steps)] @ P
        before, P = P, (WP if t == 0 or gamma is None else gamma * WP + (1.0 - gamma) * before)
        norms = np.einsum("ij,ij->i", P, P)
        rho_vu += senders[t % len(steps)] @ (P**2 / np.where(norms > 0, norms, 1.0)[:, None])
    rho = rho_vu.T / (2.0 * s * s)
    np.fill_diagonal(rho, 0.0)
    params: dict[str, Any] = {"sigma": s, "rounds": T, "method": method}
    if gamma is not None:
        params["gamma"] = gamma
    return PairwisePrivacy(zcdp_epsilon(rho, d, method=method), d, "muffliato", params,
                           adjacency_of(mats), rho, "rho")


def _symmetric_gap(topology: Any, mats: list[np.ndarray], what: str) -> float:
    if isinstance(topology, TimeVarying):
        raise TypeError(f"{what} is stated for one fixed symmetric W, got a TimeVarying "
                        f"({topology.name}); pass one round's graph (tv.at(t))")
    W = mats[0]
    off = float(np.abs(W - W.T).max())
    if off > 1e-10:
        raise ValueError(f"{what} needs a symmetric W (its spectral gap), got one off by "
                         f"{off:.3g}; reweight the graph (e.g. weights='metropolis')")
    n = W.shape[0]
    lam2 = float(scipy.linalg.eigh(W, eigvals_only=True, subset_by_index=[n - 2, n - 2])[0])
    gap = 1.0 - lam2
    if not gap > 1e-12:
        raise ValueError(f"{what} needs a connected graph (spectral gap 1 - lambda_2(W) > 0), "
                         f"got a gap of {gap:.3g}")
    return gap


def chebyshev_gamma(gap: Any) -> float:
    r"""Muffliato's Chebyshev constant, ``2 (1 - sqrt(l (1 - l/4))) / (1 - l/2)^2``.

    ``l`` is the spectral gap ``1 - lambda_2(W)`` of the gossip matrix, in ``(0, 1]``
    (Cyffers et al. 2022, Algorithm 1; ``gamma_tcheb`` in ``totilas/muffliato``).

    Examples
    --------
    >>> round(chebyshev_gamma(1.0), 4), round(chebyshev_gamma(1e-6), 4)  # complete; a path
    (1.0718, 1.998)
    """
    g = check_real(gap, "gap", low=0, high=1, low_open=True)
    return 2.0 * (1.0 - math.sqrt(g * (1.0 - g / 4.0))) / (1.0 - g / 2.0) ** 2


def _gamma_of(accelerate: Any, topology: Any, mats: list[np.ndarray]) -> float | None:
    if isinstance(accelerate, bool | np.bool_):
        if not accelerate:
            return None
        return chebyshev_gamma(_symmetric_gap(topology, mats, "accelerated muffliato"))
    if not isinstance(accelerate, int | float | np.integer | np.floating):
        raise TypeError(f"accelerate must be a bool or the Chebyshev gamma (a number), got "
                        f"{type(accelerate).__name__}")
    _symmetric_gap(topology, mats, "accelerated muffliato")
    return check_real(accelerate, "accelerate (gamma)", low=1, high=2, high_open=True)


def muffliato_rounds(topology: Any, sigma: Any, *, accelerate: bool = True) -> int:
    r"""The gossip steps Muffliato runs: ``ceil(log(n max(1/4, sigma^2) / sigma^2) / r)``.

    ``r = sqrt(lambda)`` for the Chebyshev-accelerated gossip and ``r = lambda`` for the plain
    one, ``lambda = 1 - lambda_2(W)`` the spectral gap of a symmetric ``W``: the step at which
    the averaging error (inputs of variance ``1/4``) reaches the noise's (Cyffers et al. 2022;
    ``T_mix`` and ``T_mix_randomized`` in ``totilas/muffliato``'s ``graphutils.py``).

    Examples
    --------
    >>> from topofl.topologies import ring
    >>> muffliato_rounds(ring(8), 1.0), muffliato_rounds(ring(8), 1.0, accelerate=False)
    (5, 11)
    """
    s = check_sigma(sigma)
    mats, _ = mixing_matrices(topology, 1, what="muffliato_rounds", streamed=True)
    gap = _symmetric_gap(topology, mats, "muffliato_rounds")
    rate = math.sqrt(gap) if accelerate else gap
    n = mats[0].shape[0]
    return math.ceil(math.log(n * max(0.25, s * s) / (s * s)) / rate)


def gossip_views(topology: Any, rounds: Any, observer: int) -> np.ndarray:
    """The rows of ``observer``'s view: ``P_t[w]`` for each step ``t`` and each neighbour ``w``
    that sends to it at ``t``, stacked, ``(rows, n)`` (see the module's protocol).

    Examples
    --------
    >>> from topofl.topologies import ring
    >>> gossip_views(ring(5), 2, observer=0).shape
    (4, 5)
    """
    mats, T = mixing_matrices(topology, rounds, what="gossip_views")
    return _view(mats, T, observer, _products(mats, T))


def _view(mats: list[np.ndarray], T: int, v: int, products: list[np.ndarray]) -> np.ndarray:
    rows = []
    for t, P in enumerate(products):
        senders = np.flatnonzero(at_round(mats, t)[v] != 0)
        rows.append(P[senders[senders != v]])
    return np.concatenate(rows, axis=0) if rows else np.zeros((0, mats[0].shape[0]))


def _leverage(M: np.ndarray) -> np.ndarray:
    """Squared row norms of an orthonormal basis of ``M``'s row space, per column of ``M``;
    the rank is numpy's ``matrix_rank`` tolerance (``s_max * max(shape) * eps``)."""
    if M.shape[0] == 0:
        return np.zeros(M.shape[1])
    _, s, Vt = np.linalg.svd(M, full_matrices=False)
    tol = s[0] * max(M.shape) * np.finfo(float).eps if s.size else 0.0
    basis = Vt[s > tol]
    h: np.ndarray = np.clip(np.einsum("ij,ij->j", basis, basis), 0.0, 1.0)
    return h


def gossip_linear(topology: Any, sigma: Any, rounds: Any, *, delta: Any = 1e-5
                  ) -> PairwisePrivacy:
    r"""The exact pairwise privacy of noisy gossip averaging, from the view as a linear system.

    Same protocol and parameters as :func:`muffliato`; ``curve`` is ``mu`` (``mu[u, v]``-GDP,
    converted exactly by :func:`~topofl.privacy.conversions.gdp_epsilon`).

    Returns
    -------
    PairwisePrivacy

    Notes
    -----
    Per observer, one SVD of its view without its own column, ``O(T d n^2)`` for degree ``d``.
    Once the view's rows span all ``n - 1`` other nodes every ``mu`` is the local level
    ``1/sigma``. The rank is numpy's ``matrix_rank`` tolerance: a direction the view holds with
    a singular value below it is counted as unseen.

    Examples
    --------
    >>> from topofl.topologies import ring
    >>> p = gossip_linear(ring(8), sigma=1.0, rounds=100)      # enough steps to see everything
    >>> float(p.curve.max().round(12))
    1.0
    """
    s = check_sigma(sigma)
    d = check_delta(delta)
    mats, T = mixing_matrices(topology, rounds, what="gossip_linear")
    n = mats[0].shape[0]
    products = _products(mats, T)
    mu = np.zeros((n, n))
    for v in range(n):
        others = np.arange(n) != v
        mu[others, v] = np.sqrt(_leverage(_view(mats, T, v, products)[:, others])) / s
    return PairwisePrivacy(gdp_epsilon(mu, d), d, "gossip_linear", {"sigma": s, "rounds": T},
                           adjacency_of(mats), mu, "mu")


def noisy_updates_spend(noise: Any, rounds: Any, *, delta: Any = 1e-5) -> tuple[float, float]:
    r"""``(mu, epsilon)`` of ``rounds`` rounds of noisy updates, against any observer.

    Each round a node clips its update to l2 norm ``C`` and adds Gaussian noise of standard
    deviation ``noise * C`` before anything leaves it (:class:`topofl.engine.pieces.NoisyUpdates`);
    replacing the node's whole dataset moves the clipped update by at most ``2 C``: one round
    is a Gaussian mechanism of ``mu = 2 / noise``, and every message any node sends is
    post-processing of these. ``rounds`` adaptive rounds compose to
    ``mu = 2 sqrt(rounds) / noise``-GDP (Dong, Roth and Su, "Gaussian differential privacy",
    JRSS-B 2022, Corollary 2), converted exactly (:func:`~topofl.privacy.gdp_epsilon`). The
    bound holds for every observer and every graph: what the graph adds (the pairwise
    amplification of :func:`gossip_linear`) is not counted.

    Examples
    --------
    >>> mu, eps = noisy_updates_spend(8.0, 16, delta=1e-5)
    >>> mu, round(eps, 3)
    (1.0, 4.377)
    """
    s = check_sigma(noise)
    T = check_int(rounds, "rounds", low=0)
    mu = 2.0 * math.sqrt(T) / s
    return mu, float(gdp_epsilon(mu, check_delta(delta)))
