r"""Exponential graphs and finite-time-consensus sequences.

* :func:`exponential` -- the static exponential graph of Ying et al. (2021): node ``i`` sends to
  ``i + 2^k mod n`` for ``k = 0..tau-1``, ``tau = ceil(log2 n)``.
* :func:`undirected_exponential` -- the same graph with every arc made an undirected edge:
  ``i`` and ``i ± 2^k mod n`` are neighbours (14 edges per node at ``n = 100``, the exponential
  graph that D-Cliques compares with, Fig. 12).
* :func:`one_peer_exponential` -- its one-peer time-varying version: at round ``t`` node ``i``
  sends only to ``i + 2^(t mod tau)``; the product of ``tau`` rounds is exactly
  $\mathbf{1}\mathbf{1}^\top/n$ when ``n`` is a power of two.
* :func:`k_peer_exponential` -- its ``k``-peer version (Niwa, Zhang, Takezawa, Kleijn, 2025):
  at round ``t`` node ``i`` sends to ``i + j (k+1)^(t mod tau)``, ``j = 1..k``; commuting
  circulants whose product over a period is $\mathbf{1}\mathbf{1}^\top/n$ iff ``n`` divides
  ``(k+1)^tau``: with the paper's ``tau = floor(log_{k+1} n)`` iff ``n`` is a power of ``k + 1``.
* :func:`null_cascade` -- the same paper's null-cascade graph: commuting circulant filters
  (moving averages and steerable nulling filters) whose product over a period is
  $\mathbf{1}\mathbf{1}^\top/n$ for *every* ``n`` (``k >= 2``); :func:`null_cascade_schedule`
  lists its filters and the frequencies each one nulls.
* :func:`base_graph` -- the Base-(k+1) graph of Takezawa et al. (2023): a periodic sequence of
  undirected graphs of maximum degree ``k`` whose product over one period is exactly
  $\mathbf{1}\mathbf{1}^\top/n$, for *every* ``n`` and ``k``.

All are deterministic and doubly stochastic. Node ``i`` receives from ``j`` iff ``W[i, j] > 0``
(the convention of :mod:`topofl.topologies`).

References
----------
.. [1] B. Ying, K. Yuan, Y. Chen, H. Hu, P. Pan, W. Yin, "Exponential graph is provably efficient
   for decentralized deep training", NeurIPS 2021.
.. [2] Y. Takezawa, R. Sato, H. Bao, K. Niwa, M. Yamada, "Beyond exponential graph:
   communication-efficient topologies for decentralized learning via finite-time convergence",
   NeurIPS 2023.
.. [3] K. Niwa, G. Zhang, Y. Takezawa, W. B. Kleijn, "Revisiting 1-peer exponential graph for
   enhancing decentralized learning efficiency", NeurIPS 2025.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
import scipy.sparse as sp

from topofl._utils.validation import check_choice, check_graph_size, check_int, check_time
from topofl.graph import TimeVarying, Topology
from topofl.graph.checks import check_w_size
from topofl.mixing import assemble
from topofl.topologies._registry import GraphFamily, Param, register
from topofl.topologies.classic import _circulant_edges

__all__ = [
    "exponential",
    "undirected_exponential",
    "one_peer_exponential",
    "k_peer_exponential",
    "base_graph",
    "base_graph_schedule",
    "null_cascade",
    "null_cascade_schedule",
    "CascadeFilter",
]


def _ceil_log2(n: int) -> int:
    return (n - 1).bit_length()


def _circulant_matrix(n: int, shifts: Sequence[int], weight: float) -> sp.csr_array:
    # W[i, (i - s) mod n] = weight for every shift s (node i receives from i - s), diagonal
    # 1 - len(shifts) * weight.
    rows = np.tile(np.arange(n), len(shifts))
    cols = np.concatenate([(np.arange(n) - s) % n for s in shifts])
    vals = np.full(rows.shape, weight)
    diag = np.arange(n)
    W = sp.coo_array(
        (
            np.concatenate([vals, np.full(n, 1.0 - len(shifts) * weight)]),
            (np.concatenate([rows, diag]), np.concatenate([cols, diag])),
        ),
        shape=(n, n),
    ).tocsr()
    W.sum_duplicates()
    return W


def exponential(n: int) -> Topology:
    r"""Static exponential graph: node ``i`` sends to ``i + 2^k mod n``, ``k = 0..tau-1``.

    With ``tau = ceil(log2 n)`` out-neighbours per node, every weight (the self-weight included)
    is ``1 / (tau + 1)``, so ``W`` is a circulant, doubly stochastic, non-symmetric matrix
    (the graph is directed for ``n >= 4``: ``i -> i + 1`` has no reverse arc).

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 2``.

    Returns
    -------
    Topology
        ``name="exponential"``, ``weights="uniform"`` (each node averages itself and its ``tau``
        in-neighbours uniformly; in- and out-degrees are all ``tau``).

    Raises
    ------
    TypeError, ValueError
        If ``n`` is not an int ``>= 2``.

    Notes
    -----
    The eigenvalues of a circulant matrix are $\lambda_\ell = (1 + \sum_k \omega^{\ell 2^k})
    / (\tau + 1)$ with $\omega = e^{-2\pi i / n}$. For even ``n`` the largest modulus after
    $\lambda_0 = 1$ is attained at $\ell = n/2$, $\lambda_{n/2} = (\tau - 1)/(\tau + 1)$, so the
    spectral gap is $2 / (1 + \lceil\log_2 n\rceil)$ [1]_: it decays only logarithmically with
    ``n`` for ``O(log n)`` messages per node and round.

    References
    ----------
    .. [1] B. Ying et al., "Exponential graph is provably efficient for decentralized deep
       training", NeurIPS 2021, Lemma 1.

    Examples
    --------
    >>> t = tf.topologies.exponential(8)
    >>> t.in_degree.tolist(), float(t.W[0, 7]), t.is_doubly_stochastic
    ([3, 3, 3, 3, 3, 3, 3, 3], 0.25, True)
    >>> tf.spectral.spectral_gap(t)  # 2 / (1 + log2 8)
    0.5
    """
    n = check_int(n, "n", low=2)
    tau = _ceil_log2(n)
    check_w_size(n, n * tau, f"exponential(n={n})")
    W = _circulant_matrix(n, [1 << k for k in range(tau)], 1.0 / (tau + 1))
    top = Topology.from_matrix(W, name="exponential", params={"n": n})
    return _with_weights(top, "uniform")


def _exponential_offsets(n: int) -> list[int]:
    # The distinct neighbour offsets d in [1, n-1] of i: d = 2^k or d = n - 2^k mod n, k < tau.
    tau = _ceil_log2(n)
    return sorted({(1 << k) % n for k in range(tau)} | {(-(1 << k)) % n for k in range(tau)})


def undirected_exponential(n: int) -> Topology:
    r"""Undirected exponential graph: ``i`` and ``i ± 2^k mod n`` are neighbours, ``k < tau``.

    The static :func:`exponential` graph with each arc ``i -> i + 2^k`` made an undirected
    edge (``tau = ceil(log2 n)``), as in the D-Cliques paper's comparison with the exponential
    graphs of Ying et al. (Fig. 12: 14 edges per node at ``n = 100``). The graph is a circulant
    on the offsets $S = \{\pm 2^k \bmod n : k < \tau\}$, so every node has $|S|$ neighbours.
    Two offsets coincide exactly when $2^a + 2^b = n$, so $|S| = 2\tau$ when ``n`` has three
    or more 1-bits, $2\tau - 1$ for a power of two ($2^{\tau-1} = -2^{\tau-1}$), and
    $2\tau - 2$ for a sum of two distinct powers of two (``n = 9``: offsets 1, 2, 4, 8 are
    $\pm 1, \pm 2, \pm 4$, 6 neighbours). The weights are Metropolis (eq. (2)
    of D-Cliques); on this regular graph every weight, the self-weight included, is
    $1/(|S| + 1)$, so ``W`` is symmetric and doubly stochastic.

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 2``.

    Returns
    -------
    Topology
        ``name="undirected_exponential"``, ``weights="metropolis"``, ``params={"n": n}``.

    Raises
    ------
    TypeError, ValueError
        If ``n`` is not an int ``>= 2``.

    Notes
    -----
    ``W`` is a symmetric circulant, so its eigenvalues are
    $\lambda_\ell = \bigl(1 + \sum_{s \in S} \cos(2\pi \ell s / n)\bigr) / (|S| + 1)$,
    $\ell = 0..n-1$. For $n = 2^\tau$, $\tau \ge 2$: $\lambda_{n/2} = (\tau - 2)/\tau$
    (the offsets $\pm 1$ are odd, the $2\tau - 3$ others even), and it is the largest
    modulus after $\lambda_0 = 1$ (checked for every $\tau \le 10$), so the spectral gap is
    $2/\tau$. Building costs $O(n \log n)$.

    Examples
    --------
    >>> t = tf.topologies.undirected_exponential(100)
    >>> t.edges_per_node, t.is_doubly_stochastic, float(t.W[0, 64])
    (14.0, True, 0.06666666666666667)
    >>> sorted(int(j) for j in t.graph.successors(0))
    [1, 2, 4, 8, 16, 32, 36, 64, 68, 84, 92, 96, 98, 99]
    >>> tf.spectral.spectral_gap(tf.topologies.undirected_exponential(16))  # 2 / log2 16
    0.5
    """
    n = check_int(n, "n", low=2)
    check_w_size(n, 2 * n * _ceil_log2(n), f"undirected_exponential(n={n})")
    u, v = _circulant_edges(n, [d for d in _exponential_offsets(n) if d <= n // 2])
    return Topology._from_edges(n, u, v, "metropolis", name="undirected_exponential",
                                params={"n": n})


def _with_weights(top: Topology, weights: str) -> Topology:
    # Same graph and W; records which scheme of topofl.mixing reproduces W from the graph.
    return top.replace(weights=weights)


def one_peer_exponential(n: int) -> TimeVarying:
    r"""One-peer exponential graph: at round ``t`` node ``i`` sends to ``i + 2^(t mod tau)``.

    ``tau = ceil(log2 n)`` and the period of the sequence is ``tau``. Each round every node
    averages itself and its single in-neighbour ``i - 2^(t mod tau)`` with weights 1/2, so each
    ``W(t) = (I + P_t)/2`` is doubly stochastic (``P_t`` a cyclic shift) and each node sends
    and receives exactly one message per round.

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 2``.

    Returns
    -------
    TimeVarying
        Period ``tau``; ``at(t)`` has ``name="one_peer_exponential"``.

    Notes
    -----
    When ``n = 2^tau``, the product $W(\tau-1) \cdots W(0) = \prod_k (I + P^{2^k})/2 =
    \frac{1}{n}\sum_{m=0}^{n-1} P^m = \mathbf{1}\mathbf{1}^\top / n$: exact averaging after
    ``tau`` rounds [1]_ (and after any ``tau`` consecutive rounds, since the factors commute).
    For other ``n`` the entries of every product are dyadic rationals, so the average ``1/n`` is
    never reached exactly (only geometrically).

    References
    ----------
    .. [1] B. Ying et al., NeurIPS 2021, Lemma 2.

    Examples
    --------
    >>> tv = tf.topologies.one_peer_exponential(8)
    >>> tv.period, [float(tv.at(t).W[0, (0 - 2**t) % 8]) for t in range(3)]  # 0 hears -2^t
    (3, [0.5, 0.5, 0.5])
    >>> tf.spectral.finite_time_consensus(tv, 10)
    3
    """
    n = check_int(n, "n", low=2)
    tau = _ceil_log2(n)

    def at(t: int) -> Topology:
        k = t % tau
        W = _circulant_matrix(n, [1 << k], 0.5)
        top = Topology.from_matrix(W, name="one_peer_exponential", params={"n": n, "round": t})
        return _with_weights(top, "uniform")

    return TimeVarying(n, at, name="one_peer_exponential", params={"n": n}, period=tau)


def _ceil_log(n: int, b: int) -> int:
    """Smallest ``tau >= 0`` with ``b**tau >= n`` (exact integer arithmetic)."""
    tau, p = 0, 1
    while p < n:
        p *= b
        tau += 1
    return tau


def _floor_log(n: int, b: int) -> int:
    """Largest ``tau >= 0`` with ``b**tau <= n`` (exact integer arithmetic; ``n >= 1``)."""
    tau, p = 0, b
    while p <= n:
        p *= b
        tau += 1
    return tau


#: The periods of :func:`k_peer_exponential`: the paper's ``floor(log_{k+1} n)`` and the
#: ``ceil(log_{k+1} n)`` of the one-peer exponential graph.
K_PEER_PERIODS = ("paper", "exact")


def _k_peer_round(n: int, k: int, r: int) -> sp.csr_array:
    # W = (1/(k+1)) sum_{j=0..k} P^{j s}, s = (k+1)^r: node i receives from i - j s (mod n);
    # shifts that coincide mod n add their weights (every entry a multiple of 1/(k+1)).
    s = (k + 1) ** r
    idx = np.arange(n, dtype=np.int64)
    rows = np.tile(idx, k + 1)
    cols = np.concatenate([(idx - j * s) % n for j in range(k + 1)])
    vals = np.full(rows.shape, 1.0 / (k + 1))
    W = sp.coo_array((vals, (rows, cols)), shape=(n, n)).tocsr()
    W.sum_duplicates()
    W.sort_indices()
    return W


def k_peer_exponential(n: int, k: int = 1, *, period: str = "paper") -> TimeVarying:
    r"""k-peer exponential graph: at round ``t`` node ``i`` hears ``i - j (k+1)^r``, ``j <= k``.

    The graph of Niwa, Zhang, Takezawa and Kleijn [1]_ (Definition 5): with
    ``r = t mod tau``, round ``t`` is the circulant moving-average filter of length ``k + 1``
    expanded by $(k+1)^r$,

    .. math:: W(t) = \frac{1}{k+1} \sum_{j=0}^{k} P^{\,j (k+1)^{r}},
              \qquad P_{i, i-1 \bmod n} = 1,

    i.e. ``W[i, (i - j (k+1)^r) mod n] = 1/(k+1)`` for ``j = 0..k`` (weights of shifts that
    coincide modulo ``n`` add up). The period ``tau`` is chosen by ``period``:

    * ``"paper"`` (default): $\tau = \lfloor \log_{k+1} n \rfloor$, the paper's Definition 5
      and Theorem 2 (its footnote 1 chooses the floor on purpose; its Appendix A.2 writes the
      ceiling, and its tables use the floor at (n, k) = (15, 2), (17, 2), (30, 2), (17, 3),
      (30, 4), (31, 4) but the ceiling at (15, 3), (30, 3), (69, 2)). All ``k`` shifts of a round
      are distinct and nonzero, so every node sends and receives exactly ``k`` messages. The
      product over a period is exactly $\mathbf 1 \mathbf 1^\top / n$ **iff ``n`` is a power
      of ``k + 1``** (then after ``tau`` rounds); elsewhere the average is only approached
      geometrically, with the expected spectral gap of Theorem 2 (Notes).
    * ``"exact"``: $\tau = \lceil \log_{k+1} n \rceil$, the smallest ``tau`` with
      $(k+1)^\tau \ge n$ (the one-peer exponential graph's choice, Ying et al. [2]_; ``k = 1``
      is then :func:`one_peer_exponential`, the same matrices). The product over a period is
      exactly $\mathbf 1 \mathbf 1^\top / n$ **iff ``n`` divides** $(k+1)^\tau$: every power of
      ``k + 1`` and more (``(n, k) = (8, 3)``, ``(12, 5)``); in the last round of a period some
      shifts may coincide (fewer than ``k`` messages).

    The two agree (the same ``tau`` and matrices) exactly when ``n`` is a power of ``k + 1``; for
    other ``n`` the ``"exact"`` sequence is the paper's with one more round. At ``k = 1`` the
    default ``"paper"`` differs from :func:`one_peer_exponential` unless ``n`` is a power of 2.

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 2``.
    k : int, default 1
        Peers per node and round, ``1 <= k <= n - 1``.
    period : {"paper", "exact"}, default "paper"
        $\lfloor \log_{k+1} n \rfloor$ (the paper's definition) or
        $\lceil \log_{k+1} n \rceil$ rounds per period.

    Returns
    -------
    TimeVarying
        Period ``tau``, ``params`` ``{"n", "k", "period"}``; every ``W(t)`` is a doubly
        stochastic circulant (directed for ``n > 2``) and all of them commute.

    Raises
    ------
    TypeError, ValueError
        If ``n < 2``, ``k`` is not in ``[1, n - 1]`` or ``period`` is not one of the two.

    See Also
    --------
    null_cascade : the same paper's graph that averages exactly for every ``n`` (``k >= 2``).
    base_graph : Base-(k+1), exact for every ``n`` and ``k`` (not circulant, not commuting).

    Notes
    -----
    Circulant matrices commute, and by the mixed-radix expansion
    $m = \sum_r j_r (k+1)^r$ the product over one period is

    .. math:: W(\tau-1) \cdots W(0) = (k+1)^{-\tau} \sum_{m=0}^{(k+1)^\tau - 1} P^m,

    in which node ``i`` holds each residue ``m mod n`` with weight (number of
    $m < (k+1)^\tau$ in that residue class) $/ (k+1)^\tau$: exactly $1/n$ everywhere iff ``n``
    divides $(k+1)^\tau$, and then after ``tau`` rounds from any start. Otherwise the same
    Fourier modes stay un-annihilated in every period and
    :func:`~topofl.spectral.finite_time_consensus` returns ``None``. The moduli of the
    product's eigenvalues are $|\sin(\pi i (k+1)^\tau / n) / ((k+1)^\tau
    \sin(\pi i / n))|$, $i = 1..n-1$, so the expected spectral gap over one period (Assumption 4
    and Theorem 2 of [1]_, read as $1 - \|W(\tau-1)\cdots W(0) - J\|_2$) is

    .. math:: p = 1 - \max_{1 \le i \le n-1} \left| \frac{\sin(\pi i (k+1)^\tau / n)}
              {(k+1)^\tau \sin(\pi i / n)} \right|.

    Building a round costs $O(n k)$.

    References
    ----------
    .. [1] K. Niwa, G. Zhang, Y. Takezawa, W. B. Kleijn, "Revisiting 1-peer exponential graph
       for enhancing decentralized learning efficiency", NeurIPS 2025 (Definition 5, Theorem 2).
    .. [2] B. Ying et al., "Exponential graph is provably efficient for decentralized deep
       training", NeurIPS 2021 (the 1-peer case).

    Examples
    --------
    >>> tv = tf.topologies.k_peer_exponential(9, k=2)
    >>> tv.period, sorted(int(j) for j in tv.at(1).W[[0]].indices)  # 0 hears 0 - 3j mod 9
    (2, [0, 3, 6])
    >>> tf.spectral.finite_time_consensus(tv, 10)
    2

    Away from the powers of ``k + 1`` the paper's graph is one round shorter and never exact;
    the ceiling variant is exact where ``n`` divides $(k+1)^\tau$:

    >>> paper = tf.topologies.k_peer_exponential(8, k=3)
    >>> exact = tf.topologies.k_peer_exponential(8, k=3, period="exact")
    >>> paper.period, exact.period
    (1, 2)
    >>> tf.spectral.finite_time_consensus(paper, 10), tf.spectral.finite_time_consensus(exact, 10)
    (None, 2)
    """
    n = check_int(n, "n", low=2)
    k = check_int(k, "k", low=1, high=n - 1)
    period = check_choice(period, "period", K_PEER_PERIODS)
    check_w_size(n, n * k, f"k_peer_exponential(n={n}, k={k})")
    tau = _floor_log(n, k + 1) if period == "paper" else _ceil_log(n, k + 1)
    params = {"n": n, "k": k, "period": period}

    def at(t: int) -> Topology:
        top = Topology.from_matrix(_k_peer_round(n, k, t), name="k_peer_exponential",
                                   params={**params, "round": t})
        # uniform (1/(in-degree + 1)) reproduces W when the k shifts are distinct and nonzero
        shifts = {j * (k + 1) ** t % n for j in range(1, k + 1)}  # t < tau: TimeVarying reduces it
        return _with_weights(top, "uniform") if len(shifts - {0}) == k else top

    return TimeVarying(n, at, name="k_peer_exponential", params=params, period=tau)


# ---------------------------------------------------------------------------- Base-(k+1)
# A schedule: one list per round of undirected edges (i, j, w), i and j giving each other weight w.
_Schedule = list[list[tuple[int, int, float]]]


def _smallest_factorization(m: int, b: int) -> list[int] | None:
    """Fewest factors in ``[2, b]`` whose product is ``m`` (None if ``m`` has a prime > b)."""

    @cache
    def best(r: int) -> tuple[int, ...] | None:
        if r == 1:
            return ()
        out: tuple[int, ...] | None = None
        for f in range(min(b, r), 1, -1):
            if r % f == 0:
                sub = best(r // f)
                if sub is not None and (out is None or len(sub) + 1 < len(out)):
                    out = (f, *sub)
        return out

    res = best(m)
    return None if res is None else list(res)


def _clique_rounds(nodes: Sequence[int], factors: Sequence[int]) -> _Schedule:
    """k-peer hyper-hypercube on ``nodes`` (``len(nodes) == prod(factors)``).

    Node ``nodes[x]`` has the mixed-radix digits of ``x`` (radices ``factors``). In round ``l``
    every node averages uniformly with the ``factors[l]`` nodes that differ from it only in
    digit ``l`` (a clique of size ``factors[l] <= k + 1``, degree ``factors[l] - 1 <= k``); after
    all rounds every node holds the average over ``nodes``.
    """
    m = len(nodes)
    out: _Schedule = []
    stride = 1
    for f in factors:
        edges: list[tuple[int, int, float]] = []
        for x in range(m):
            digit = (x // stride) % f
            for d in range(digit + 1, f):
                y = x + (d - digit) * stride
                edges.append((nodes[x], nodes[y], 1.0 / f))
        out.append(edges)
        stride *= f
    return out


def _base_digits(n: int, b: int) -> list[tuple[int, int]]:
    """Base-``b`` representation of ``n`` as ``[(a_l, p_l)]``, ``p`` decreasing, ``a_l >= 1``."""
    out: list[tuple[int, int]] = []
    p = 0
    while b ** (p + 1) <= n:
        p += 1
    rest = n
    while rest:
        a, rest = divmod(rest, b**p)
        if a:
            out.append((a, p))
        p -= 1
    return out


def _simple_base_rounds(nodes: Sequence[int], k: int) -> _Schedule:
    r"""Simple Base-(k+1) graph on ``nodes``: exact average over ``nodes``, degree <= ``k``.

    Write ``m = len(nodes) = sum_l a_l (k+1)^{p_l}`` in base ``k+1`` and split the nodes into
    consecutive groups ``V_l`` of sizes ``a_l (k+1)^{p_l}``.

    1. Every group averages internally with a k-peer hyper-hypercube (in parallel).
    2. For ``s = 0..L-2``: every node of the later groups ``V_{s+1} u ... u V_{L-1}`` links to
       ``a_s`` distinct nodes of ``V_s`` (one in each of its ``a_s`` blocks of
       ``(k+1)^{p_s}`` nodes; the later groups hold fewer than ``(k+1)^{p_s}`` nodes, so the
       blocks never run out) and moves a fraction ``|V_s| / |V_s u ... u V_{L-1}|`` of its
       value towards them. Afterwards the last group holds the global average and every block
       of ``V_s`` has it as its mean.
    3. Every block of every ``V_s`` averages internally with a hyper-hypercube (blocks of
       ``V_s`` start right after step ``s`` of phase 2, in parallel with later steps).

    The length is ``len(phase 1) + 1 + p_0 <= 2 p_0 + 2 <= 2 log_{k+1}(m) + 2``.
    """
    b = k + 1
    m = len(nodes)
    if m == 1:
        return []
    fac = _smallest_factorization(m, b)
    if fac is not None:
        return _clique_rounds(nodes, fac)
    digits = _base_digits(m, b)
    sizes = [a * b**p for a, p in digits]
    starts = np.cumsum([0, *sizes]).tolist()
    groups = [list(nodes[starts[i] : starts[i + 1]]) for i in range(len(sizes))]
    L = len(groups)
    # Phase 1: hyper-hypercube inside each group (groups are (k+1)-smooth: a_l <= k).
    phase1 = [_clique_rounds(g, _smallest_factorization(len(g), b) or []) for g in groups]
    len1 = max(len(r) for r in phase1)
    rounds: _Schedule = [[] for _ in range(len1)]
    for grp_rounds in phase1:
        for r, edges in enumerate(grp_rounds):
            rounds[r].extend(edges)
    # Phase 2 (step s at round len1 + s) and phase 3 (blocks of V_s from round len1 + s + 1).
    tail = [sum(sizes[s:]) for s in range(L)]
    for s in range(L - 1):
        a_s, p_s = digits[s]
        block = b**p_s
        blocks = [groups[s][j * block : (j + 1) * block] for j in range(a_s)]
        later = [v for g in groups[s + 1 :] for v in g]
        frac = sizes[s] / tail[s]
        step: list[tuple[int, int, float]] = []
        for idx, i in enumerate(later):
            for blk in blocks:
                step.append((i, blk[idx], frac / a_s))
        r0 = len1 + s
        while len(rounds) <= r0:
            rounds.append([])
        rounds[r0].extend(step)
        fac_block = _smallest_factorization(block, b) or []
        for blk in blocks:
            for r, edges in enumerate(_clique_rounds(blk, fac_block)):
                while len(rounds) <= r0 + 1 + r:
                    rounds.append([])
                rounds[r0 + 1 + r].extend(edges)
    return rounds


def _smooth_part(n: int, b: int) -> int:
    """Largest divisor of ``n`` whose prime factors are all ``<= b``."""
    p, rest = 1, n
    for f in range(2, b + 1):
        while rest % f == 0:
            rest //= f
            p *= f
    return p


def base_graph_schedule(n: int, k: int) -> _Schedule:
    r"""The rounds of the Base-(k+1) graph as lists of weighted undirected edges.

    Round ``r`` is a list of ``(i, j, w)``: nodes ``i`` and ``j`` exchange and each gives weight
    ``w`` to the other's value (self-weights complete every row to 1). :func:`base_graph` turns
    the schedule into a :class:`~topofl.TimeVarying`.

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 2``.
    k : int
        Maximum degree, ``1 <= k <= n - 1``.

    Returns
    -------
    list of list of tuple
        One list per round; its length is the period of the graph.

    Examples
    --------
    >>> tf.topologies.base_graph_schedule(4, 1)  # the 1-peer hypercube
    [[(0, 1, 0.5), (2, 3, 0.5)], [(0, 2, 0.5), (1, 3, 0.5)]]
    >>> len(tf.topologies.base_graph_schedule(6, 1))
    4
    """
    n = check_int(n, "n", low=2)
    k = check_int(k, "k", low=1, high=n - 1)
    check_graph_size(n, n * (k + 1), f"base_graph_schedule(n={n}, k={k})")
    nodes = list(range(n))
    simple = _simple_base_rounds(nodes, k)
    p = _smooth_part(n, k + 1)
    r = n // p
    if p == 1 or r == 1:
        return simple
    # n = p * r with p (k+1)-smooth: Simple Base-(k+1) inside p groups of r nodes (in
    # parallel), then a hyper-hypercube across the p nodes holding the same position.
    groups = [nodes[g * r : (g + 1) * r] for g in range(p)]
    inner: _Schedule = []
    for grp in groups:
        for t, edges in enumerate(_simple_base_rounds(grp, k)):
            while len(inner) <= t:
                inner.append([])
            inner[t].extend(edges)
    fac = _smallest_factorization(p, k + 1) or []
    across: _Schedule = [[] for _ in fac]
    for j in range(r):
        column = [g * r + j for g in range(p)]
        for t, edges in enumerate(_clique_rounds(column, fac)):
            across[t].extend(edges)
    combined = inner + across
    return combined if len(combined) < len(simple) else simple


def _round_matrix(n: int, edges: Sequence[tuple[int, int, float]]) -> sp.csr_array:
    if edges:
        e = np.asarray([(i, j) for i, j, _ in edges], dtype=np.int64)
        w = np.asarray([x for _, _, x in edges], dtype=np.float64)
        rows = np.concatenate([e[:, 0], e[:, 1]])
        cols = np.concatenate([e[:, 1], e[:, 0]])
        vals = np.concatenate([w, w])
    else:
        rows = cols = np.zeros(0, dtype=np.int64)
        vals = np.zeros(0)
    return assemble(n, rows, cols, vals, 1.0 - np.bincount(rows, weights=vals, minlength=n))


def base_graph(n: int, k: int = 1) -> TimeVarying:
    r"""Base-(k+1) graph: finite-time exact averaging for any ``n`` with at most ``k`` peers.

    A periodic sequence of undirected graphs in which every node talks to at most ``k`` others
    per round, and whose mixing matrices multiply to exactly $\mathbf{1}\mathbf{1}^\top / n$
    over one period, for every ``n`` (Takezawa et al., 2023).

    Construction (each round is a set of disjoint averaging groups):

    * *k-peer hyper-hypercube* when every prime factor of ``n`` is at most ``k + 1``: write
      ``n = f_1 f_2 ... f_L`` with the fewest factors ``f_l <= k + 1``, index nodes in that
      mixed radix, and in round ``l`` average uniformly over the cliques of ``f_l`` nodes that
      differ only in digit ``l``. Length ``L``.
    * *Simple Base-(k+1)* otherwise: split ``n`` by its base-``(k+1)`` digits
      ``n = sum_l a_l (k+1)^{p_l}``, average inside each part with hyper-hypercubes, let the
      smaller parts absorb the larger parts' averages with the right weights one part at a
      time, and finish with hyper-hypercubes inside the blocks of every part. Length at most
      ``2 p_1 + 2 <= 2 log_{k+1}(n) + 2``.
    * *Base-(k+1)*: with ``n = p r``, ``p`` the largest divisor of ``n`` whose prime factors are
      at most ``k + 1``, run Simple Base-(k+1) inside ``p`` groups of ``r`` nodes and then a
      hyper-hypercube across the groups, if that is shorter than Simple Base-(k+1) on all ``n``.

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 2``.
    k : int, default 1
        Maximum number of peers per node and round, ``1 <= k <= n - 1``.

    Returns
    -------
    TimeVarying
        Period = number of rounds to exact consensus (at most ``2 log_{k+1}(n) + 2``; exactly
        ``log_{k+1} n`` when ``n`` is a power of ``k + 1``). Every ``W(t)`` is symmetric and
        doubly stochastic; a single round is usually disconnected, the union of a period is
        connected.

    Raises
    ------
    TypeError, ValueError
        If ``n < 2`` or ``k`` is not in ``[1, n - 1]``.

    See Also
    --------
    base_graph_schedule : the same rounds as lists of weighted edges.
    one_peer_exponential : exact only when ``n`` is a power of two.

    References
    ----------
    .. [1] Y. Takezawa, R. Sato, H. Bao, K. Niwa, M. Yamada, "Beyond exponential graph:
       communication-efficient topologies for decentralized learning via finite-time
       convergence", NeurIPS 2023.

    Examples
    --------
    >>> tv = tf.topologies.base_graph(6, k=1)
    >>> tv.period, max(int(tv.at(t).in_degree.max()) for t in range(tv.period))
    (4, 1)
    >>> tf.spectral.finite_time_consensus(tv, 10)
    4
    >>> tf.topologies.base_graph(9, k=2).period  # 9 = 3 * 3: a 2-peer hyper-hypercube
    2
    """
    n = check_int(n, "n", low=2)
    k = check_int(k, "k", low=1, high=n - 1)
    schedule = base_graph_schedule(n, k)
    matrices = [_round_matrix(n, edges) for edges in schedule]

    def at(t: int) -> Topology:
        top = Topology.from_matrix(
            matrices[t], name="base_graph", params={"n": n, "k": k, "round": t}
        )
        return top

    return TimeVarying(
        n, at, name="base_graph", params={"n": n, "k": k}, period=len(matrices)
    )


# ---------------------------------------------------------------------------- null-cascade
#: Smallest weight of a steerable nulling filter relative to its largest: a common multiplier
#: whose filter has a weight below this is passed over (the paper asks for positive weights).
_SNF_MIN_RELATIVE_WEIGHT = 1e-9


@dataclass(frozen=True)
class CascadeFilter:
    r"""One round of the null-cascade graph: a circulant filter and the frequencies it nulls.

    Round ``W = sum_d w_d P^d`` (``P_{i, i-1} = 1``: node ``i`` hears ``i - d`` with weight
    ``w_d``, ``d = 0`` itself) has the frequency response $H(i) = \sum_d w_d e^{-2\pi j i d / n}$
    at index ``i``; it is zero at every ``0 < i < n`` with ``i % base == 0`` and
    ``(i // base) % factor`` in ``residues`` (and possibly elsewhere).

    Attributes
    ----------
    kind : str
        ``"maf"`` (moving-average filter, equal weights) or ``"snf"`` (steerable nulling
        filter, non-uniform positive weights).
    factor : int
        The factor $\nu + 1$ of ``n`` whose frequencies this round nulls.
    base : int
        The product $b$ of the factors nulled by the rounds before it (Alg. 1's ``b``).
    residues : tuple of int
        The residues ``s`` modulo ``factor`` it nulls: all of ``1..factor-1`` for a MAF, one or
        more conjugate pairs ``{s, factor - s}`` for an SNF.
    multiplier : int
        Alg. 4's ``m_tmp`` (``1`` for a MAF): the SNF's roots sit at ``multiplier * s``.
    expansion : int
        Alg. 1's expansion order $m_\ell$: the taps are ``expansion`` apart.
    offsets : tuple of int
        The shifts ``d`` in ``[0, n)``, after the circulant shift that puts the largest weight on
        ``d = 0`` (Alg. 2).
    weights : tuple of float
        ``w_d``, summing to 1.
    """

    kind: str
    factor: int
    base: int
    residues: tuple[int, ...]
    multiplier: int
    expansion: int
    offsets: tuple[int, ...]
    weights: tuple[float, ...]


def _prime_factors(n: int) -> list[int]:
    """The prime factors of ``n >= 1`` with multiplicity, ascending (trial division)."""
    out: list[int] = []
    f = 2
    while f * f <= n:
        while n % f == 0:
            out.append(f)
            n //= f
        f += 1
    if n > 1:
        out.append(n)
    return out


def _snf_coefficients(angles: np.ndarray) -> np.ndarray:
    """Coefficients of ``prod_psi (x^2 - 2 cos(theta_psi) x + 1)``, one row per row of
    ``angles`` (shape ``(candidates, pairs)``): real, palindromic, of length ``2 pairs + 1``."""
    poly = np.ones((angles.shape[0], 1))
    for col in range(angles.shape[1]):
        a = -2.0 * np.cos(angles[:, col : col + 1])
        nxt = np.zeros((poly.shape[0], poly.shape[1] + 2))
        nxt[:, :-2] += poly
        nxt[:, 1:-1] += a * poly
        nxt[:, 2:] += poly
        poly = nxt
    return poly


def _snf_multiplier(p: int, pairs: Sequence[int]) -> tuple[int, np.ndarray] | None:
    """Alg. 4's search: the smallest ``m_tmp >= 1`` whose filter with roots at the angles
    ``2 pi m_tmp s / p`` (``s`` in ``pairs`` and their conjugates) has positive coefficients,
    with the normalised coefficients; ``None`` if no ``m_tmp < p`` gives one."""
    s = np.asarray(pairs, dtype=np.int64)
    top = (p - 1) // 2  # m_tmp and p - m_tmp give the same filter
    start, chunk = 1, 8
    while start <= top:
        u = np.arange(start, min(start + chunk, top + 1), dtype=np.int64)
        angles = 2.0 * np.pi * ((u[:, None] * s[None, :]) % p) / p
        co = _snf_coefficients(angles)
        ok = np.all(co > _SNF_MIN_RELATIVE_WEIGHT * co.max(axis=1, keepdims=True), axis=1)
        if ok.any():
            i = int(np.argmax(ok))
            return int(u[i]), co[i] / co[i].sum()
        start += u.size
        chunk = min(2 * chunk, 4096)
    return None


def _cascade_round(kind: str, n: int, factor: int, base: int, residues: Sequence[int],
                   multiplier: int, expansion: int, coefficients: np.ndarray) -> CascadeFilter:
    """The filter with taps ``t * expansion`` (``t = 0..c``) shifted so that its largest weight
    (the first, on ties) sits on the node itself (Alg. 2, ``CirculantShifting``)."""
    t_max = int(np.argmax(coefficients))
    offsets = tuple(int(((t - t_max) * expansion) % n) for t in range(coefficients.size))
    return CascadeFilter(kind, factor, base, tuple(int(r) for r in residues), multiplier,
                         expansion, offsets, tuple(float(w) for w in coefficients))


def null_cascade_schedule(n: int, k: int) -> list[CascadeFilter]:
    r"""The rounds of the null-cascade graph as filters: which frequencies each one nulls.

    :func:`null_cascade` builds its mixing matrices from these (see it for the graph and the
    readings of the paper's text).

    Construction (Alg. 1): factor ``n`` into primes; pack those up to ``k + 1`` into the fewest
    factors $f \le k + 1$ and keep each prime $p > k + 1$ on its own, so that
    $n = \prod_i (\nu_i + 1)$ with $\nu_1 \le \dots \le \nu_\kappa \le k < \nu_{\kappa+1}
    \le \dots \le \nu_\lambda$. With ``b = 1``:

    1. for each factor $f \le k + 1$, largest first: the moving-average filter of length ``f``
       (weights ``1/f``) expanded by ``m = n / (f b)`` nulls the multiples of ``b`` that are not
       multiples of ``f b`` (Lemma 2); then ``b *= f``;
    2. for each prime $p > k + 1$, largest first: steerable nulling filters (Definition 8,
       Alg. 3-4) with ``c = 2 floor(k/2)`` taps besides the node null the multiples of ``b`` that
       are not multiples of ``p b``. Their residues ``s`` modulo ``p`` come in conjugate pairs
       ``{s, p - s}``; each filter takes ``c/2`` pairs, the highest remaining first, and the
       smallest multiplier $m_{tmp} \ge 1$ for which the polynomial
       $\prod (x - e^{j 2\pi m_{tmp} s/p})(x - e^{-j 2\pi m_{tmp} s/p})$ has positive
       coefficients; normalised to sum 1 they are the weights, ``n / (p b) * m_tmp`` apart; then
       ``b *= p``.

    Each filter is circularly shifted so that its largest weight is the node's own (Alg. 2).
    The period is the paper's Table 1 formula

    .. math:: \tau = \kappa + \sum_{i = \kappa+1}^{\lambda}
              \left\lceil \frac{\nu_i}{2 \lfloor k/2 \rfloor} \right\rceil,

    e.g. 3, 8, 4 rounds at (n, k) = (15, 2), (17, 2), (30, 2) (the paper's Table 2).

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 2``.
    k : int
        Maximum number of peers per node and round, ``k >= 2``.

    Returns
    -------
    list of CascadeFilter
        One per round of a period, in the paper's order (the moving-average filters for the
        factors up to ``k + 1``, largest first, then the steerable nulling filters for the
        primes above ``k + 1``, largest prime first).

    Raises
    ------
    TypeError, ValueError
        If ``n < 2`` or ``k < 2``.

    Examples
    --------
    >>> for f in tf.topologies.null_cascade_schedule(15, 2):  # Fig. 1(b): n = 3 x 5
    ...     print(f.kind, f.factor, f.residues, f.offsets, [round(w, 4) for w in f.weights])
    maf 3 (1, 2) (0, 5, 10) [0.3333, 0.3333, 0.3333]
    snf 5 (2, 3) (14, 0, 1) [0.2764, 0.4472, 0.2764]
    snf 5 (1, 4) (13, 0, 2) [0.2764, 0.4472, 0.2764]
    """
    n = check_int(n, "n", low=2)
    k = check_int(k, "k", low=2)
    check_w_size(n, n * min(k, n - 1), f"null_cascade_schedule(n={n}, k={k})")
    primes = _prime_factors(n)
    small = math.prod(p for p in primes if p <= k + 1)
    large = sorted((p for p in primes if p > k + 1), reverse=True)
    factors = sorted(_smallest_factorization(small, k + 1) or [], reverse=True)
    c = 2 * (k // 2)  # Definition 8: an even number of taps beyond the node itself
    # a lower bound: an SNF round took 9e-5 s to choose (n = 100003, k = 2 and 5; 2-core VM)
    check_time(2e-5 * sum((p - 1) // c + 1 for p in large), f"null_cascade(n={n}, k={k})")
    rounds: list[CascadeFilter] = []
    b = 1
    for f in factors:  # Step 1: an expanded MAF per factor f <= k + 1 (lines 4-11)
        m = n // (f * b)
        rounds.append(_cascade_round("maf", n, f, b, range(1, f), 1, m, np.full(f, 1.0 / f)))
        b *= f
    for p in large:  # Step 2: expanded SNFs per prime p > k + 1 (lines 13-20, Alg. 3 and 4)
        m_base = n // (p * b)
        beta = list(range(1, (p - 1) // 2 + 1))  # one residue of each conjugate pair
        while beta:
            size = min(c // 2, len(beta))
            found = None
            while found is None:  # size 1 always succeeds: m_tmp = s^-1 (p - 1)/2 mod p
                group = beta[-size:]  # the highest remaining frequencies first
                found = _snf_multiplier(p, group)
                size -= 1
            u, coef = found
            residues = sorted({*group, *(p - s for s in group)})
            rounds.append(_cascade_round("snf", n, p, b, residues, u, m_base * u, coef))
            beta = beta[: len(beta) - len(group)]
        b *= p
    return rounds


def null_cascade(n: int, k: int = 2) -> TimeVarying:
    r"""Null-cascade graph: commuting circulants that average exactly for every ``n``, ``k >= 2``.

    The graph of Niwa, Zhang, Takezawa and Kleijn [1]_ (Sec. 4, Alg. 1-4), built here from the
    paper's text (its code repository could not be read). Every round is a circulant
    ``W = sum_d w_d P^d`` (node ``i`` hears ``i - d``, as in :func:`k_peer_exponential`), so
    every node sends and receives the same number of messages (at most ``k``) and all rounds
    commute. Its frequency response is zero at a set of frequencies, and the rounds of one period
    together null every frequency ``1..n-1`` (the paper's eq. 6), so their product is exactly
    $\mathbf 1 \mathbf 1^\top / n$, whatever their order.

    The construction (Alg. 1-4: moving-average filters for the prime factors up to
    ``k + 1``, steerable nulling filters for the larger ones) and the period (the paper's
    Table 1 formula): :func:`null_cascade_schedule`.

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 2``.
    k : int, default 2
        Maximum number of peers per node and round, ``k >= 2`` (two are needed to place a
        conjugate pair of nulls); a round uses ``f - 1 <= k`` peers (a MAF) or at most
        ``2 floor(k/2)`` (an SNF). ``k >= n - 1`` gives the complete graph in one round.

    Returns
    -------
    TimeVarying
        Period ``tau`` (see :func:`null_cascade_schedule`), ``params`` ``{"n", "k"}``; every
        ``W(t)`` is a doubly stochastic circulant with positive weights (symmetric where the
        SNF's largest weight is its middle one); MAF rounds have ``weights="uniform"``.

    Raises
    ------
    TypeError, ValueError
        If ``n < 2`` or ``k < 2``.

    See Also
    --------
    null_cascade_schedule : the rounds as filters, with the frequencies each one nulls.
    k_peer_exponential : the same paper's graph with equal weights (exact only at powers of
        ``k + 1``).
    base_graph : Base-(k+1), exact for every ``n`` and ``k`` (not circulant, not commuting).

    Notes
    -----
    What the paper's text leaves open, and how it is read here:

    * **The factorisation** (Alg. 1, line 2) is not unique, and the period depends on it. Its
      examples use the one that minimises Table 1's formula ((60, 3) as 5 x 4 x 3, (60, 2) as
      5 x 3 x 2 x 2); so is this one: splitting a factor above ``k + 1`` never lengthens the
      period, and the primes up to ``k + 1`` are packed into the fewest factors ``<= k + 1``
      (the same packing as :func:`base_graph`'s hyper-hypercube).
    * **Alg. 4's search** multiplies the roots by ``m_tmp = 1, 2, ...`` until the coefficients
      are positive; its lines 31-41 (further filters for the factors of ``m_tmp``) are garbled in
      the text and would add rounds beyond Table 1's formula (at (17, 2) the paper's own period
      is the formula's 8), so they are left out: each filter takes its pairs out of the set to
      null, and a multiplier below ``p`` is coprime to ``p``, so it nulls exactly those pairs.
      A group of ``c/2`` pairs got positive weights for every prime below 3000 with ``k <= 11``
      and every prime below 300 with ``k <= 39`` (measured); if none did, the group would be
      split (one pair always works), and the period would exceed the formula.
    * **The last filter of a prime** may have fewer than ``c/2`` pairs left; Alg. 4 then fills it
      with frequencies "that interpolate" the others, which the text does not define: here it is
      a shorter filter (``2 x pairs`` taps), which averages exactly as well with fewer messages.
    * **Lemma 3's expansion**: an SNF expanded by ``m`` nulls ``(q + phi n) / m``; the text
      writes ``q + phi n / m``. The reading here is the one under which Alg. 4's ``m_tmp`` works.
    * **Alg. 2's shift** is written both as ``h((i - u) mod n)`` and as the sequence starting
      at ``h(u)``; the second puts the largest weight on the node itself, as its comment says,
      and is used. On a tie (an SNF whose two outer weights are its largest) the first is kept.
    * **The paper's own numbers disagree in places**: Example 4 writes tau = 4 at (15, 2) but
      lists three rounds (Table 2 and Sec. 4 say 3, as here); Table 5 gives 3 at (30, 3), where
      the formula and this construction give 2 + ceil(4/2) = 4 (``30 = 2 x 3 x 5``; with
      ``k = 3`` an SNF has two taps besides the node, one conjugate pair of nulls, and the prime
      5 has two pairs). The other 11 (n, k) of its Tables 2, 5, 6 and Examples 5-9 match.

    The schedule has one filter per round; choosing them took 4.6 s for the prime
    ``n = 100003`` at ``k = 2`` (50001 filters, on a shared 2-core VM), and a round's matrix
    costs $O(n k)$.

    References
    ----------
    .. [1] K. Niwa, G. Zhang, Y. Takezawa, W. B. Kleijn, "Revisiting 1-peer exponential graph
       for enhancing decentralized learning efficiency", NeurIPS 2025 (Sec. 4, Alg. 1-4,
       Table 1, Appendix B).

    Examples
    --------
    The paper's Fig. 1(b): 15 nodes, 2 peers; a MAF for the factor 3 and two SNFs for 5:

    >>> tv = tf.topologies.null_cascade(15, k=2)
    >>> tv.period, [int(tv.at(t).in_degree.max()) for t in range(tv.period)]
    (3, [2, 2, 2])
    >>> tf.spectral.finite_time_consensus(tv, 10)
    3
    >>> P = tf.spectral.mixing_product(tv, 0, 3)
    >>> bool(np.abs(P - 1 / 15).max() < 1e-15)
    True

    A prime number of nodes costs more rounds (Table 2: 8 at n = 17):

    >>> tf.topologies.null_cascade(17, k=2).period, tf.topologies.null_cascade(17, k=4).period
    (8, 4)
    """
    n = check_int(n, "n", low=2)
    k = check_int(k, "k", low=2)
    filters = null_cascade_schedule(n, k)
    idx = np.arange(n, dtype=np.int64)
    params = {"n": n, "k": k}

    def at(t: int) -> Topology:
        f = filters[t]
        rows = np.tile(idx, len(f.offsets))
        cols = np.concatenate([(idx - d) % n for d in f.offsets])
        vals = np.repeat(np.asarray(f.weights), n)
        W = sp.coo_array((vals, (rows, cols)), shape=(n, n)).tocsr()
        W.sum_duplicates()
        W.sort_indices()
        top = Topology.from_matrix(W, name="null_cascade", params={**params, "round": t})
        return _with_weights(top, "uniform") if f.kind == "maf" else top

    return TimeVarying(n, at, name="null_cascade", params=params, period=len(filters))


# ---------------------------------------------------------------------------- registry
_N2 = Param("n", int, "number of nodes", low=2)

register(GraphFamily(
    "exponential", exponential, (_N2,),
    lambda n, rng: None if n < 2 else {"n": n},
    stochastic="doubly", undirected=False,
    description="static: i sends to i+2^k, k < ceil(log2 n); gap 2/(1+ceil(log2 n)) for even n"))
register(GraphFamily(
    "undirected_exponential", undirected_exponential, (_N2,),
    lambda n, rng: None if n < 2 else {"n": n},
    stochastic="doubly", undirected=True,
    description="i and i +- 2^k, k < ceil(log2 n), as undirected edges; 14 edges/node at n=100"))
register(GraphFamily(
    "one_peer_exponential", one_peer_exponential, (_N2,),
    lambda n, rng: None if n < 2 else {"n": n},
    time_varying=True, stochastic="doubly", undirected=False,
    description="one peer 2^(t mod tau) per round; exact average after log2 n rounds if n = 2^tau"))
register(GraphFamily(
    "k_peer_exponential", k_peer_exponential,
    (_N2, Param("k", int, "peers per node and round", low=1, high="n-1"),
     Param("period", str, "tau = floor (the paper's) or ceil of log_{k+1} n",
           choices=K_PEER_PERIODS)),
    lambda n, rng: None if n < 2 else {"n": n, "k": int(rng.integers(1, min(4, n - 1) + 1))},
    time_varying=True, stochastic="doubly", undirected=False,
    description="k peers i + j(k+1)^(t mod tau) per round (Niwa et al. 2025); commuting; "
    "tau = floor(log_{k+1} n), exact iff n = (k+1)^tau (period='exact': ceil, iff n | (k+1)^tau)"))
register(GraphFamily(
    "base_graph", base_graph,
    (_N2, Param("k", int, "maximum peers per node and round", low=1, high="n-1")),
    lambda n, rng: None if n < 2 else {"n": n, "k": int(rng.integers(1, min(4, n - 1) + 1))},
    time_varying=True, stochastic="doubly", undirected=True,
    description="Base-(k+1) graph: exact average after a period <= 2 log_{k+1} n + 2 rounds"))
register(GraphFamily(
    "null_cascade", null_cascade,
    (_N2, Param("k", int, "maximum peers per node and round", low=2)),
    lambda n, rng: None if n < 2 else {"n": n, "k": int(rng.integers(2, 6))},
    time_varying=True, stochastic="doubly", undirected=False,
    description="commuting circulant MAF and nulling filters (Niwa et al. 2025): exact average "
    "after tau = kappa + sum ceil(nu_i / (2 floor(k/2))) rounds for every n, k >= 2"))
