r"""The Base-(k+1) graph of Takezawa et al. (2023): a periodic sequence of undirected graphs of
maximum degree ``k`` whose product over one period is exactly $\mathbf{1}\mathbf{1}^\top/n$,
for *every* ``n`` and ``k``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from topofl._utils.validation import check_graph_size, check_int
from topofl.graph import TimeVarying, Topology
from topofl.mixing import assemble
from topofl.topologies.exponential._common import _smallest_factorization

__all__ = ["base_graph", "base_graph_schedule"]

# A schedule: one list per round of undirected edges (i, j, w), i and j giving each other weight w.
_Schedule = list[list[tuple[int, int, float]]]


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
