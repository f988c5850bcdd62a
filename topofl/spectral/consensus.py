"""Products of mixing matrices, measured consensus rate and finite-time consensus."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from topofl._utils.validation import check_int, check_memory, stochasticity
from topofl.graph import as_time_varying
from topofl.spectral._common import (
    _FLOOR,
    _check_round_memory,
    _check_time,
    _per_object,
    _rounds,
    _sample_columns,
)


def mixing_product(tv: Any, start: int, stop: int) -> np.ndarray:
    r"""The dense product $W(\mathrm{stop}-1) \cdots W(\mathrm{start})$ (the identity if empty).

    Parameters
    ----------
    tv : TimeVarying or Topology
    start, stop : int
        ``0 <= start <= stop``; the rounds ``start..stop-1`` are applied in that order.

    Returns
    -------
    numpy.ndarray
        ``(n, n)`` float64: ``x_stop = P x_start``.

    Raises
    ------
    InsufficientMemoryError
        If the dense ``(n, n)`` result (even the identity of an empty range) and its products
        would not fit in memory.
    ValueError
        If the rounds applied one by one (those of ``start..stop-1``, or one whole period)
        would take longer than ``TOPOFL_MAX_SECONDS`` (default 60 s, by a lower-bound
        estimate).

    Notes
    -----
    For a periodic sequence (a ``Topology`` has period 1) the product of whole periods is a
    power of the product of one period, computed by repeated squaring: $O(p + \log k)$ dense
    products for $k$ periods of length $p$, so a million rounds of a ring cost a few dozen
    products (to float64 rounding, the same matrix as one product per round). An aperiodic
    sequence is applied round by round, and refused at once (with the estimate) when that
    would take longer than ``TOPOFL_MAX_SECONDS`` (default 60 s).

    Examples
    --------
    >>> P = tf.spectral.mixing_product(tf.topologies.one_peer_exponential(4), 0, 2)
    >>> bool(np.allclose(P, 0.25))
    True
    >>> P = tf.spectral.mixing_product(tf.topologies.ring(5), 0, 10**7)  # 24 products
    >>> bool(np.allclose(P, 0.2))
    True
    """
    g = as_time_varying(tv)
    start = check_int(start, "start", low=0)
    stop = check_int(stop, "stop", low=start)
    n = g.n
    steps = stop - start
    p = g.period
    if p is None or steps <= 2 * p:
        _check_round_memory(steps, n, "stop - start")
        # the (n, n) result, and the product that replaces it each round
        check_memory(8.0 * n * n * (2 if steps else 1), f"the dense ({n}, {n}) product")
        _check_time(g, steps, "stop - start", cols=n)
        P = np.eye(n)
        for t in range(start, stop):
            P = np.asarray(g.at(t).W @ P)
        return P
    check_memory(8.0 * n * n * 4, f"the dense ({n}, {n}) products")
    _check_time(g, p, "period", cols=n)  # one whole period is applied round by round
    # P = R . Q^k . L: L the rounds up to a period boundary, Q one whole period from there,
    # R the rest; W(t) depends on t mod p only.
    head = (-start) % p
    k, tail = divmod(steps - head, p)
    L = np.eye(n)
    for t in range(start, start + head):
        L = np.asarray(g.at(t).W @ L)
    Q = np.eye(n)
    for t in range(start + head, start + head + p):
        Q = np.asarray(g.at(t).W @ Q)
    power = np.eye(n)
    while k:  # Q^k by repeated squaring
        if k & 1:
            power = Q @ power
        k >>= 1
        if k:
            Q = Q @ Q
    P = power @ L
    for t in range(stop - tail, stop):
        P = np.asarray(g.at(t).W @ P)
    return P

def finite_time_consensus(
    tv: Any, max_rounds: int, *, tol: float = 1e-12, start: int = 0
) -> int | None:
    r"""The first number of rounds after which the product of mixing matrices is exactly ``J``.

    Returns the smallest ``T <= max_rounds`` with
    $n \max_{ij} |[W(\mathrm{start}+T-1) \cdots W(\mathrm{start})]_{ij} - 1/n| \le$ ``tol``
    (every entry equals $1/n$ to relative precision ``tol``): from round ``start`` on, every
    node holds the exact average after ``T`` rounds, whatever the initial values.

    *Finite-time* means the product jumps to ``J``: one round earlier it was still at relative
    distance above ``1e-6``. Geometric (asymptotic) convergence also falls below ``tol`` in
    floating point eventually -- for a fast-mixing graph within a few dozen rounds -- but that
    is not finite-time consensus and gives ``None``.

    Parameters
    ----------
    tv : TimeVarying or Topology
    max_rounds : int
        ``>= 1``.
    tol : float, default 1e-12
        Relative tolerance on the entries of the product.
    start : int, default 0
        First round of the product.

    Returns
    -------
    int or None
        ``None`` if the product does not jump to ``J`` within ``max_rounds`` rounds (for a
        row- or column-stochastic but not doubly stochastic sequence the limit is not ``J`` at
        all). ``0`` for ``n = 1``.

    Notes
    -----
    For ``n > 64`` the product is tracked on 64 columns and verified in full only when they
    match, so a sequence that never averages exactly costs $O(\mathrm{max\_rounds} \cdot
    \mathrm{nnz} \cdot 64)$.

    Examples
    --------
    >>> tf.spectral.finite_time_consensus(tf.topologies.one_peer_exponential(16), 20)
    4
    >>> tf.spectral.finite_time_consensus(tf.topologies.one_peer_exponential(12), 40) is None
    True
    >>> tf.spectral.finite_time_consensus(tf.topologies.complete(7), 5)
    1
    >>> tf.spectral.finite_time_consensus(tf.topologies.random_regular(16, 8, seed=0), 200) is None
    True
    """
    g = as_time_varying(tv)
    T = check_int(max_rounds, "max_rounds", low=1)
    _check_round_memory(T, g.n, "max_rounds")
    _check_time(g, T, "max_rounds", cols=min(g.n, 64))
    start = check_int(start, "start", low=0)
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not 0 <= tol < 1e-6:
        raise ValueError(f"tol must be a number in [0, 1e-6), got {tol!r}")
    n = g.n
    if n == 1:
        return 0
    cols = _sample_columns(n, 64)
    X = np.zeros((n, cols.size))
    X[cols, np.arange(cols.size)] = 1.0
    prev = float(n - 1)  # relative distance of the identity from J
    for r in range(T):
        X = np.asarray(g.at(start + r).W @ X)
        dist = n * float(np.max(np.abs(X - 1.0 / n)))
        if dist <= tol:
            if prev <= 1e-6:
                return None  # asymptotic convergence that merely passed below tol
            if cols.size == n:
                return r + 1
            P = mixing_product(g, start, start + r + 1)
            if n * float(np.max(np.abs(P - 1.0 / n))) <= tol:
                return r + 1
        prev = dist
    return None


#: Nodes up to which :func:`period_consensus_error` forms the period's product densely (an SVD
#: of an ``n x n`` matrix); above, the largest singular value comes from ARPACK on the
#: product applied as a sequence of sparse rounds.
PERIOD_DENSE_MAX = 512


def period_consensus_error(tv: Any, rounds: int | None = None, *, start: int = 0) -> float:
    r"""How far one period of gossip is from exact averaging: $\|W(s+p-1) \cdots W(s) -
    J\|_2$, with $J = \mathbf{1}\mathbf{1}^\top / n$.

    The spectral norm of the product of one period's matrices less the averaging matrix: the
    largest factor by which a period can leave a disagreement vector. It is 0 (to rounding)
    where :func:`finite_time_consensus` finds exact averaging within the period (Base-(k+1),
    null-cascade, the one-peer exponential graph at a power of 2) and says by how much a
    period misses it where that returns ``None`` (the one-peer exponential graph at
    ``n = 12``); for a static ``W`` (period 1) it is $\|W - J\|_2$, one less the spectral
    gap for a symmetric doubly stochastic ``W``.

    Parameters
    ----------
    tv : TimeVarying or Topology
    rounds : int, optional
        The rounds ``p`` of the product, ``>= 1``; by default the sequence's period (1 for a
        ``Topology``). A random sequence (no period) needs it.
    start : int, default 0
        The first round ``s``.

    Returns
    -------
    float
        Computed densely (an SVD) up to :data:`PERIOD_DENSE_MAX` nodes, above by ARPACK
        (``scipy.sparse.linalg.svds``) on the product applied round by round.

    Raises
    ------
    ValueError
        If ``tv`` has no period and ``rounds`` is not given, or ``rounds`` or ``start`` is not
        a valid count.

    Examples
    --------
    >>> exact = tf.topologies.one_peer_exponential(16)  # period 4: exact averaging
    >>> round(tf.spectral.period_consensus_error(exact), 12)
    0.0
    >>> round(tf.spectral.period_consensus_error(tf.topologies.one_peer_exponential(12)), 4)
    0.2091
    >>> ring = tf.topologies.ring(8)  # a static symmetric W: one less its spectral gap
    >>> gap = tf.spectral.spectral_gap(ring)
    >>> abs(tf.spectral.period_consensus_error(ring) - (1 - gap)) < 1e-12
    True
    """
    g = as_time_varying(tv)
    if rounds is None:
        if g.period is None:
            raise ValueError(f"{g.name!r} is a random sequence with no period: pass rounds= "
                             "(how many rounds the product takes)")
        rounds = int(g.period)
    p = check_int(rounds, "rounds", low=1)
    start = check_int(start, "start", low=0)
    _check_round_memory(p, g.n, "rounds")
    n = g.n
    if n <= PERIOD_DENSE_MAX:
        _check_time(g, p, "rounds", cols=n)
        return float(np.linalg.norm(mixing_product(g, start, start + p) - 1.0 / n, 2))
    _check_time(g, p, "rounds", cols=64)
    from scipy.sparse.linalg import ArpackError, LinearOperator, svds

    Ws = [g.at(start + r).W for r in range(p)]
    Ts = [W.T.tocsr() for W in reversed(Ws)]

    def apply(mats: list[sp.csr_array], v: np.ndarray) -> np.ndarray:
        x = np.asarray(v, dtype=np.float64)
        mean = x.mean(axis=0)  # J x
        for M in mats:
            x = np.asarray(M @ x)
        out: np.ndarray = x - mean
        return out

    op = LinearOperator((n, n), matvec=lambda v: apply(Ws, v), rmatvec=lambda v: apply(Ts, v),
                        matmat=lambda v: apply(Ws, v), rmatmat=lambda v: apply(Ts, v),
                        dtype=np.float64)
    v0 = np.cos(np.arange(n, dtype=np.float64))  # fixed: the same answer every call
    try:
        return float(svds(op, k=1, v0=v0, return_singular_vectors=False)[0])
    except ArpackError as exc:
        if "-9" not in str(exc):  # not "ARPACK error -9: Starting vector is zero"
            raise
    # (P - J)^T (P - J) v0 vanished: the period averages exactly (to rounding); the largest
    # of its columns' norms over a fixed block of vectors says how exactly
    V = np.cos(np.outer(np.arange(n, dtype=np.float64), np.arange(1, 9)))
    return float(np.max(np.linalg.norm(apply(Ws, V), axis=0) / np.linalg.norm(V, axis=0)))


def _gossip_mode(Ws: Sequence[sp.csr_array]) -> str:
    kinds = _per_object(stochasticity, Ws)
    if any(k == "none" for k in kinds):
        t = kinds.index("none")
        raise ValueError(
            f"W({t}) is neither row- nor column-stochastic; gossip needs one or the other"
        )
    if all(k in ("column", "doubly") for k in kinds) and any(k == "column" for k in kinds):
        return "push_sum"
    return "plain"


def disagreement(
    tv: Any, rounds: int, *, num_vectors: int = 8, seed: int = 0
) -> np.ndarray:
    r"""Relative disagreement $e_t / e_0$ of gossip from random initial vectors, ``t = 0..rounds``.

    ``num_vectors`` standard normal vectors $x_0$ (from ``numpy.random.default_rng(seed)``)
    are gossiped with $x_{t+1} = W(t) x_t$. The disagreement is
    $e_t = \|x_t - \bar{x}_t \mathbf{1}\|_F$ (distance to the current average); for a
    column-stochastic (push-sum) sequence that is not row-stochastic it is the de-biased
    $e_t = \|x_t / w_t - \bar{x}_0 \mathbf{1}\|_F$ with push-sum weights
    $w_{t+1} = W(t) w_t$, $w_0 = \mathbf{1}$.

    Parameters
    ----------
    tv : TimeVarying or Topology
    rounds : int
        ``>= 1``.
    num_vectors : int, default 8
    seed : int, default 0
        Seed of the initial vectors (the result is deterministic).

    Returns
    -------
    numpy.ndarray
        ``(rounds + 1,)`` float64, starting at ``1.0`` (all zeros for ``n = 1``). Values below
        ``1e-15`` are float64 round-off and are returned as ``0.0``.

    Examples
    --------
    >>> np.round(tf.spectral.disagreement(tf.topologies.one_peer_exponential(4), 3), 6)
    array([1.      , 0.502629, 0.      , 0.      ])
    """
    g = as_time_varying(tv)
    T = check_int(rounds, "rounds", low=1)
    r = check_int(num_vectors, "num_vectors", low=1)
    _check_round_memory(T, g.n, "rounds")
    # x, its product with W and the error: three (n, num_vectors) float64 arrays.
    check_memory(24.0 * g.n * r, f"num_vectors={r} vectors of n={g.n} entries")
    _check_time(g, T, "rounds", cols=r)
    seed = check_int(seed, "seed", low=0)
    n = g.n
    X = np.random.default_rng(seed).standard_normal((n, r))
    Ws = _rounds(g, T)
    mode = _gossip_mode(Ws)
    target = X.mean(axis=0)
    w = np.ones(n)
    out = np.empty(T + 1)

    def err(Y: np.ndarray) -> float:
        if mode == "push_sum":
            return float(np.linalg.norm(Y / w[:, None] - target))
        return float(np.linalg.norm(Y - Y.mean(axis=0)))

    e0 = err(X)
    out[0] = e0
    for t, M in enumerate(Ws):
        X = np.asarray(M @ X)
        if mode == "push_sum":
            w = np.asarray(M @ w)
        out[t + 1] = err(X)
    if e0 == 0.0:
        return np.zeros(T + 1)
    out /= e0
    out[out < 1e-3 * _FLOOR] = 0.0
    return out


def consensus_rate(tv: Any, rounds: int, *, num_vectors: int = 8, seed: int = 0) -> float:
    r"""Measured per-round contraction of the disagreement of gossip.

    From the curve $r_t = e_t / e_0$ of :func:`disagreement`: with $\tau$ the first round where
    $r_\tau \le 10^{-12}$ (or ``rounds``), the rate is
    $(r_\tau / r_{\lfloor\tau/2\rfloor})^{1/(\tau - \lfloor\tau/2\rfloor)}$, the geometric-mean
    contraction per round over the second half of the run (the fast transient of the first
    rounds is left out, so for a fixed symmetric ``W`` it approaches
    $\max_{k\ge2}|\lambda_k|$ = 1 - spectral gap).

    Parameters
    ----------
    tv : TimeVarying or Topology
    rounds : int
        ``>= 1``.
    num_vectors, seed
        As in :func:`disagreement`.

    Returns
    -------
    float
        In ``[0, 1]`` for contracting gossip; ``0.0`` when the disagreement vanishes exactly
        (finite-time consensus) and for ``n = 1``.

    Examples
    --------
    >>> r = tf.spectral.consensus_rate(tf.topologies.ring(16), 200)
    >>> round(r, 3), round(1 - tf.spectral.spectral_gap(tf.topologies.ring(16)), 3)
    (0.949, 0.949)
    >>> tf.spectral.consensus_rate(tf.topologies.base_graph(10, k=2), 20)
    0.0
    """
    curve = disagreement(tv, rounds, num_vectors=num_vectors, seed=seed)
    T = curve.size - 1
    below = np.flatnonzero(curve[1:] <= _FLOOR)
    tau = int(below[0]) + 1 if below.size else T
    if curve[tau] == 0.0:
        return 0.0
    half = tau // 2
    return float((curve[tau] / curve[half]) ** (1.0 / (tau - half)))
