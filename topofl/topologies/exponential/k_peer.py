r"""The k-peer exponential graph of Niwa, Zhang, Takezawa and Kleijn (2025): at round ``t`` node
``i`` sends to ``i + j (k+1)^(t mod tau)``, ``j = 1..k``; commuting circulants whose product over
a period is $\mathbf{1}\mathbf{1}^\top/n$ iff ``n`` divides ``(k+1)^tau``: with the paper's
``tau = floor(log_{k+1} n)`` iff ``n`` is a power of ``k + 1``.
"""

from __future__ import annotations

import scipy.sparse as sp

from topofl._utils.validation import check_choice, check_int
from topofl.graph import TimeVarying, Topology
from topofl.graph.checks import check_w_size
from topofl.topologies.exponential._common import _circulant, _with_weights

__all__ = ["k_peer_exponential", "K_PEER_PERIODS"]

#: The periods of :func:`k_peer_exponential`: the paper's ``floor(log_{k+1} n)`` and the
#: ``ceil(log_{k+1} n)`` of the one-peer exponential graph.
K_PEER_PERIODS = ("paper", "exact")


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


def _k_peer_round(n: int, k: int, r: int) -> sp.csr_array:
    # W = (1/(k+1)) sum_{j=0..k} P^{j s}, s = (k+1)^r: node i receives from i - j s (mod n);
    # shifts that coincide mod n add their weights (every entry a multiple of 1/(k+1)).
    s = (k + 1) ** r
    return _circulant(n, [j * s for j in range(k + 1)], [1.0 / (k + 1)] * (k + 1))


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
