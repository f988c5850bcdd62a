r"""The undirected exponential graph: ``i`` and ``i ± 2^k mod n`` are neighbours, ``k < tau``
(14 edges per node at ``n = 100``, the exponential graph that D-Cliques compares with, Fig. 12).
"""

from __future__ import annotations

from topofl._utils.validation import check_int
from topofl.graph import Topology
from topofl.graph.checks import check_w_size
from topofl.topologies.classic import _circulant_edges
from topofl.topologies.exponential._common import _ceil_log2

__all__ = ["undirected_exponential"]


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
        Number of nodes, ``n >= 2``; its 1-bits decide the degree ``|S|`` (above).

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
