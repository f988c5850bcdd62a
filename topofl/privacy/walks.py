r"""Pairwise privacy of random-walk (token) algorithms: privacy amplification by decentralization.

A token (the model) walks the graph with transition matrix ``W`` (symmetric, doubly stochastic:
from node ``i`` it moves to ``j`` with probability ``W[i, j]``); each visited node takes a noisy
local step on its data with noise multiplier ``sigma`` and passes the token on. Node ``v`` sees
the token whenever it visits ``v``; what it learns about ``u``'s data depends on how long the
token travelled from ``u`` to ``v``. ``rounds`` is ``T``, the walk's total steps.

- :func:`random_walk_rdp`: Cyffers, Bellet and Basu, "Differentially private decentralized
  learning with random walks" (arXiv 2402.07471), Theorem 3: an ``(alpha, alpha rho)``-RDP bound
  for every ``alpha`` with ``rho[u, v] = T / (sigma^2 n) sum_{t=1..T} (W^t)_{uv} / t``; or the
  closed form PN-f-DP's code (``lx10077/PN-f-DP``, ``syhthetic_graph/main.py``,
  ``priv_global``) evaluates, ``T H_T / (sigma^2 n^2) + T / (sigma^2 n)
  [-log(I - W + 11^T/n)]_{uv}`` (``H_T`` the harmonic number), the same sum with its mixing
  part carried to infinitely many steps.
- :func:`random_walk_fdp`: Li, Su, Wang, Long and Su, "Mitigating privacy-utility trade-off in
  decentralized federated learning via f-differential privacy" (NeurIPS 2025), pairwise network
  f-DP: one visit is a mixture of Gaussian mechanisms weighted by the first-hitting time ``t`` of
  ``v`` from ``u`` (``mu_t = sqrt(K) / (sigma sqrt(t + 1))`` for ``K`` local steps, the
  non-convex case ``c = 1``; no mechanism at all if the walk has not reached ``v`` within ``T``
  steps), composed ``floor(T / n)`` times (the expected visits of ``u``) with the PRV accountant
  of Gopi, Lee and Wutschitz (2021), package ``prv-accountant``, at PN-f-DP's settings
  (``eps_error=0.1``, ``delta_error=1e-10``, ``eps_max=30``).

Examples
--------
>>> import numpy as np
>>> from topofl.privacy import first_hitting, random_walk_rdp
>>> from topofl.topologies import complete
>>> p = random_walk_rdp(complete(5), sigma=1.0, rounds=10, delta=1e-4)
>>> bool(np.allclose(p.curve[~np.eye(5, dtype=bool)], p.curve[0, 1]))   # one value off the diagonal
True
>>> first_hitting(complete(3), rounds=3)[0, 1].round(4).tolist()  # W = J/3: (1/3)(2/3)^(t-1)
[0.3333, 0.2222, 0.1481]
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from typing import Any

import numpy as np
from prv_accountant import PrivacyRandomVariable, PRVAccountant
from scipy.special import ndtr

from topofl._utils.validation import check_choice, check_int, check_real
from topofl.privacy.conversions import Conversion, check_delta, zcdp_epsilon
from topofl.privacy.pairwise import PairwisePrivacy, adjacency_of, check_sigma, mixing_matrices

__all__ = ["first_hitting", "random_walk_fdp", "random_walk_rdp"]

#: the asymmetry a walk's matrix may have (its eigenvectors must be orthogonal)
_SYM_ATOL = 1e-10


def _walk_matrix(topology: Any, rounds: Any, what: str) -> tuple[np.ndarray, int]:
    mats, T = mixing_matrices(topology, rounds, static=True, what=what)
    W = mats[0]
    if np.abs(W - W.T).max() > _SYM_ATOL:
        raise ValueError(f"{what} needs a symmetric (hence doubly stochastic) transition "
                         f"matrix, got one off by {np.abs(W - W.T).max():.3g}; reweight the "
                         "graph (e.g. weights='metropolis')")
    return W, T


def random_walk_rdp(topology: Any, sigma: Any, rounds: Any, *, delta: Any = 1e-5,
                    method: Conversion = "balle2020", form: str = "finite") -> PairwisePrivacy:
    r"""Pairwise network RDP of a random walk of ``rounds`` steps (2402.07471, Theorem 3).

    Parameters
    ----------
    topology : Topology or array_like
        A symmetric, connected transition matrix (a TimeVarying is refused: the theorem is for a
        fixed chain).
    sigma : float
        The noise multiplier of each local step.
    rounds : int
        ``T``, the walk's steps.
    delta : float, default 1e-5
    method : {"balle2020", "zcdp"}, default "balle2020"
    form : {"finite", "pnfdp"}, default "finite"
        ``"finite"``: the sum over the walk's steps,
        ``rho = T / (sigma^2 n) sum_{t=1..T} W^t / t`` (never negative). ``"pnfdp"``: the
        closed form PN-f-DP's code evaluates, ``T H_T / (sigma^2 n^2) + T / (sigma^2 n) L``
        with ``L = sum_{t >= 1} (W^t - 11^T/n) / t = -log(I - W + 11^T/n)``: the same sum with
        its mixing part carried to infinitely many steps. The two agree once ``W^T`` has
        mixed; before, the closed form can fall below zero for distant pairs, and is refused.

    Returns
    -------
    PairwisePrivacy
        ``curve`` is ``rho``; symmetric.

    Raises
    ------
    ValueError
        An asymmetric or disconnected (reducible) walk; ``form="pnfdp"`` below zero for a
        pair; besides the bad numbers.

    Examples
    --------
    >>> from topofl.topologies import ring
    >>> p = random_walk_rdp(ring(8), sigma=1.0, rounds=100)
    >>> p.by_distance()[1]["mean"] > p.by_distance()[4]["mean"]
    True
    """
    s = check_sigma(sigma)
    d = check_delta(delta)
    W, T = _walk_matrix(topology, rounds, "random_walk_rdp")
    n = W.shape[0]
    lam, V = np.linalg.eigh(W)                     # ascending: the last is the eigenvalue 1
    if lam[-2] > 1 - 1e-10:
        raise ValueError("random_walk_rdp needs a connected walk (eigenvalue 1 simple), got "
                         f"a second eigenvalue {lam[-2]:.12g}")
    form = check_choice(form, "form", ("finite", "pnfdp"))
    harmonic = float(np.sum(1.0 / np.arange(1, T + 1)))
    if form == "pnfdp":
        weights = -np.log(1.0 - lam[:-1])
    else:  # sum_{t <= T} lambda^t / t per eigenvalue, by its recursion
        weights, power = np.zeros(n - 1), np.ones(n - 1)
        for t in range(1, T + 1):
            power = power * lam[:-1]
            weights += power / t
    L = (V[:, :-1] * weights) @ V[:, :-1].T
    rho = T * harmonic / (s * s * n * n) + T * L / (s * s * n)
    np.fill_diagonal(rho, 0.0)
    if form == "pnfdp" and rho.min() < 0:
        u, v = np.unravel_index(int(np.argmin(rho)), rho.shape)
        raise ValueError(f"random_walk_rdp's pnfdp closed form is below zero for the pair "
                         f"({u}, {v}) (rho = {rho[u, v]:.4g}): {T} steps have not mixed the "
                         "walk; use form='finite'")
    rho = np.maximum(rho, 0.0)  # the finite sum is >= 0; round-off below it
    return PairwisePrivacy(zcdp_epsilon(rho, d, method=method), d, "random_walk_rdp",
                           {"sigma": s, "rounds": T, "method": method, "form": form},
                           adjacency_of([W]),
                           rho, "rho")


def first_hitting(topology: Any, rounds: Any) -> np.ndarray:
    r"""First-hitting probabilities of the walk: ``F[u, v, t-1]``, the probability that a walk
    from ``u`` first reaches ``v`` at step ``t = 1..T`` (for ``u == v``: first return).

    The recursion ``f_1 = W e_v``, ``f_t = W_{-v} f_{t-1}`` (``W`` with column ``v`` zeroed),
    for all starts at once.

    Returns
    -------
    numpy.ndarray
        ``(n, n, T)``; each ``F[u, v].sum() <= 1``.
    """
    W, T = _walk_matrix(topology, rounds, "first_hitting")
    return _first_hitting(W, T)


def _first_hitting(W: np.ndarray, T: int) -> np.ndarray:
    n = W.shape[0]
    F = np.zeros((n, n, T))
    for v in range(n):
        M = W.copy()
        M[:, v] = 0.0
        f = W[:, v].copy()
        for t in range(T):
            if t:
                f = M @ f
            F[:, v, t] = f
    return F


class _MixturePRV(PrivacyRandomVariable):  # type: ignore[misc]  # untyped package
    """The privacy random variable of a mixture of Gaussian mechanisms: with weight ``w[t]``
    the ``mu[t]``-GDP one, with the rest no mechanism (loss 0). ``cdf`` is the loss's CDF under
    the first hypothesis, ``sum_t w_t Phi(y / mu_t - mu_t / 2) + w_none 1[y >= 0]``."""

    def __init__(self, weights: np.ndarray, mus: np.ndarray) -> None:
        rest = max(0.0, 1.0 - float(np.sum(weights, dtype=np.longdouble)))
        self.w = np.append(np.asarray(weights, dtype=np.longdouble), np.longdouble(rest))
        self.mu = np.asarray(mus, dtype=np.float64)

    def cdf(self, y: Any) -> Any:
        arr = np.asarray(y, dtype=np.float64)
        flat = arr.reshape(-1)
        out = np.empty(flat.shape, dtype=np.longdouble)
        for s in range(0, flat.size, 2048):
            blk = flat[s:s + 2048]
            P = ndtr(blk[:, None] / self.mu[None, :] - self.mu[None, :] / 2)
            P = np.concatenate([P, (blk >= 0)[:, None].astype(np.float64)], axis=1)
            out[s:s + 2048] = P.astype(np.longdouble) @ self.w
        return out.reshape(arr.shape) if arr.ndim else out[0]

    def probability(self, a: Any, b: Any) -> Any:
        return self.cdf(b) - self.cdf(a)

    @property
    def pm_inf(self) -> float:
        return 0.0


def random_walk_fdp(topology: Any, sigma: Any, rounds: Any, *, delta: Any = 1e-5,
                    local_steps: Any = 1, pairs: Iterable[tuple[int, int]] | None = None,
                    eps_error: Any = 0.1) -> PairwisePrivacy:
    r"""Pairwise network f-DP of a random walk (PN-f-DP), as ``epsilon[u, v]`` at ``delta``.

    Parameters
    ----------
    topology, sigma, rounds, delta
        As :func:`random_walk_rdp`.
    local_steps : int, default 1
        ``K``, the local steps of a visit (``mu_t`` grows as ``sqrt(K)``).
    pairs : iterable of (u, v), optional
        Only these pairs (the others are ``nan``); all ``u != v`` by default.
    eps_error : float, default 0.1
        The PRV accountant's accuracy on ``epsilon`` (PN-f-DP's setting); the estimate is
        returned, and a pair whose ``epsilon`` reaches ``eps_max = 30`` is ``inf``.

    Returns
    -------
    PairwisePrivacy
        No ``curve``.

    Notes
    -----
    Cost: one PRV accountant per distinct first-hitting distribution (pairs whose
    distributions agree to 1e-14 share it, as the symmetric pairs of a symmetric graph do: 5
    for the 496 pairs of the 5-cube), about 1 s at ``T = 275`` and 7 s at ``T = 1300`` each
    on one core of a 2-core Xeon.

    Examples
    --------
    >>> from topofl.topologies import complete
    >>> p = random_walk_fdp(complete(4), sigma=1.0, rounds=8, pairs=[(0, 1)])
    >>> bool(p.epsilon[0, 1] > 0), bool(np.isnan(p.epsilon[0, 2]))
    (True, True)
    """
    s = check_sigma(sigma)
    d = check_delta(delta)
    K = check_int(local_steps, "local_steps", low=1)
    err = check_real(eps_error, "eps_error", low=0, low_open=True, high=1)
    W, T = _walk_matrix(topology, rounds, "random_walk_fdp")
    n = W.shape[0]
    todo = _pairs(pairs, n)
    F = _first_hitting(W, T)
    mus = math.sqrt(K) / (s * np.sqrt(np.arange(2, T + 2, dtype=np.float64)))
    compositions = max(1, T // n)
    eps = np.full((n, n), np.nan)
    np.fill_diagonal(eps, 0.0)
    eps_max = 30.0
    # pairs whose hitting-time distributions agree to 1e-14 share their epsilon (it moves by
    # orders of magnitude less than eps_error): the symmetric pairs of a symmetric graph
    done: dict[bytes, float] = {}
    for u, v in todo:
        key = np.round(F[u, v], 14).tobytes()
        if key not in done:
            prv = _MixturePRV(F[u, v], mus)
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Assuming that true epsilon")
                acc = PRVAccountant(prvs=[prv], max_self_compositions=[T], eps_error=err,
                                    delta_error=1e-10, eps_max=eps_max)
                e = acc.compute_epsilon(delta=d, num_self_compositions=[compositions])[1]
            done[key] = math.inf if e >= eps_max else e
        eps[u, v] = done[key]
    return PairwisePrivacy(eps, d, "random_walk_fdp",
                           {"sigma": s, "rounds": T, "local_steps": K, "eps_error": err,
                            "compositions": compositions}, adjacency_of([W]))


def _pairs(pairs: Iterable[tuple[int, int]] | None, n: int) -> list[tuple[int, int]]:
    if pairs is None:
        return [(u, v) for u in range(n) for v in range(n) if u != v]
    out = []
    for p in pairs:
        if (not isinstance(p, tuple | list) or len(p) != 2
                or not all(isinstance(x, int | np.integer) and not isinstance(x, bool)
                           for x in p)):
            raise TypeError(f"pairs must hold (u, v) pairs of ints, got {p!r}")
        u, v = int(p[0]), int(p[1])
        if not (0 <= u < n and 0 <= v < n) or u == v:
            raise ValueError(f"pairs must hold two different nodes in [0, {n}), got {p!r}")
        out.append((u, v))
    return out
