"""Strong connectivity, diameter and B-connectivity of graphs and sequences."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph

from topofl._utils.validation import arc_pattern, check_int
from topofl.exceptions import NotConnectedError
from topofl.graph import TimeVarying, as_time_varying
from topofl.spectral._common import (
    _BITSET_MAX_LEVELS,
    _as_csr,
    _check_horizon,
    _per_object,
    _rounds,
)


def _n_strong_components(P: sp.csr_array) -> int:
    return int(csgraph.connected_components(P, directed=True, connection="strong")[0])


def _union_pattern(Ws: Sequence[sp.csr_array]) -> sp.csr_array:
    unique = list({id(M): M for M in Ws}.values())
    U = arc_pattern(unique[0], diagonal=False)
    for M in unique[1:]:
        U = U + arc_pattern(M, diagonal=False)
    U = U.tocsr()
    U.data[:] = 1.0
    return U


def is_strongly_connected(graph: Any, *, horizon: int | None = None) -> bool:
    r"""Whether the graph (or the union of a sequence's first rounds) is strongly connected.

    Parameters
    ----------
    graph : Topology, array_like, sparse matrix or TimeVarying
        For a ``TimeVarying``: the union of the graphs of rounds ``0..horizon-1`` ("jointly
        strongly connected"). That every round alone is strongly connected is
        ``is_b_connected(tv, 1, horizon)``.
    horizon : int, optional
        Only for a ``TimeVarying``; defaults to its period (required if it has none).

    Returns
    -------
    bool

    Examples
    --------
    >>> tf.spectral.is_strongly_connected(tf.topologies.ring(5))
    True
    >>> tf.spectral.is_strongly_connected([[1.0, 0.0], [0.5, 0.5]])  # only 0 -> 1
    False
    >>> tv = tf.topologies.base_graph(6, k=1)
    >>> tf.spectral.is_strongly_connected(tv.at(0)), tf.spectral.is_strongly_connected(tv)
    (False, True)
    """
    if isinstance(graph, TimeVarying):
        if horizon is None:
            if graph.period is None:
                raise ValueError(
                    f"horizon is required for the aperiodic sequence {graph.name!r}: the union "
                    "of rounds 0..horizon-1 is checked"
                )
            horizon = graph.period
        h = check_int(horizon, "horizon", low=1)
        if graph.period is not None:  # the union of a period holds every round's graph
            h = min(h, graph.period)
        h = _check_horizon(h, n=graph.n, tv=graph)
        return _n_strong_components(_union_pattern(_rounds(graph, h))) == 1
    if horizon is not None:
        raise TypeError("horizon is only meaningful for a TimeVarying")
    M = _as_csr(graph, name="graph")
    return _n_strong_components(arc_pattern(M, diagonal=False)) == 1


def _eccentricity_bound(P: sp.csr_array) -> int | None:
    """``max(ecc_out(0), ecc_in(0))``: a lower bound on the diameter, None if not connected."""
    G = P.T.tocsr()  # csgraph reads G[u, v] as the arc u -> v
    out = csgraph.shortest_path(G, method="D", unweighted=True, indices=0)
    inn = csgraph.shortest_path(P, method="D", unweighted=True, indices=0)
    if not (np.all(np.isfinite(out)) and np.all(np.isfinite(inn))):
        return None
    return int(max(out.max(), inn.max()))


def _diameter_bitset(P: sp.csr_array) -> int | None:
    """Exact diameter by bit-parallel BFS from all nodes at once (``P`` has the diagonal).

    ``R[i]`` is the bitset of the nodes that reach ``i`` in at most ``level`` hops; a level ORs the
    bitsets of the in-neighbours. Cost ``O(diameter * nnz * n / 64)`` word operations.
    """
    n = P.shape[0]
    words = (n + 63) // 64
    R = np.zeros((n, words), dtype=np.uint64)
    idx = np.arange(n)
    R[idx, idx // 64] = np.left_shift(np.uint64(1), (idx % 64).astype(np.uint64))
    full = np.full(words, np.iinfo(np.uint64).max, dtype=np.uint64)
    if n % 64:
        full[-1] = np.uint64((1 << (n % 64)) - 1)
    starts = P.indptr[:-1]
    chunk = max(1, (1 << 22) // max(1, P.nnz))
    level = 0
    while not np.all(R == full):
        new = np.empty_like(R)
        for c0 in range(0, words, chunk):
            new[:, c0 : c0 + chunk] = np.bitwise_or.reduceat(
                R[P.indices, c0 : c0 + chunk], starts, axis=0
            )
        if np.array_equal(new, R):
            return None
        R = new
        level += 1
    return level


def _diameter_bfs(P: sp.csr_array) -> int | None:
    G = P.T.tocsr()
    n = G.shape[0]
    best = 0
    for c0 in range(0, n, 256):
        d = csgraph.shortest_path(
            G, method="D", unweighted=True, indices=np.arange(c0, min(n, c0 + 256))
        )
        if not np.all(np.isfinite(d)):
            return None
        best = max(best, int(d.max()))
    return best


def _diameter_of_pattern(P: sp.csr_array) -> int | None:
    n = P.shape[0]
    if n == 1:
        return 0
    lb = _eccentricity_bound(P)
    if lb is None:
        return None
    if lb <= _BITSET_MAX_LEVELS:
        Pd = (P + sp.eye_array(n, format="csr")).tocsr()  # P has no diagonal
        Pd.sort_indices()
        return _diameter_bitset(Pd)
    return _diameter_bfs(P)


def diameter(topology: Any) -> int:
    r"""Directed diameter: the largest number of hops from any node to any other.

    Parameters
    ----------
    topology : Topology, array_like or sparse matrix
        ``(n, n)``; arcs are the off-diagonal nonzeros (``W[i, j] > 0`` is ``j -> i``).

    Returns
    -------
    int
        ``0`` for a single node.

    Raises
    ------
    NotConnectedError
        If the graph is not strongly connected (the diameter would be infinite).

    Notes
    -----
    Exact. Graphs of small diameter use a bit-parallel BFS from all nodes at once,
    $O(\mathrm{diam} \cdot \mathrm{nnz} \cdot n / 64)$ word operations (a 10,000-node expander
    in about a second); graphs of diameter above about 64 run one BFS per node,
    $O(n \cdot \mathrm{nnz})$.

    Examples
    --------
    >>> tf.spectral.diameter(tf.topologies.ring(9))
    4
    >>> tf.spectral.diameter(tf.topologies.exponential(16))
    4
    """
    M = _as_csr(topology, name="topology")
    P = arc_pattern(M, diagonal=False)
    d = _diameter_of_pattern(P)
    if d is None:
        k = _n_strong_components(P)
        raise NotConnectedError(
            f"the graph (n={M.shape[0]}) is not strongly connected: it has {k} strongly "
            "connected components, so its diameter is infinite"
        )
    return d


def _window_unions(
    patterns: Sequence[sp.csr_array], B: int, period: int | None = None
) -> Iterator[tuple[int, sp.csr_array]]:
    """Yield ``(l, union of patterns[l:l+B])`` for every distinct full window (sliding count).

    With a period ``p`` the windows starting at ``l`` and ``l + p`` are equal, so only
    ``l < p`` are visited.
    """
    count = patterns[0].copy()
    for t in range(1, B):
        count = count + patterns[t]
    count = count.tocsr()
    last = len(patterns) - B + 1
    if period is not None:
        last = min(last, period)
    for start in range(last):
        if start:
            count = (count - patterns[start - 1] + patterns[start + B - 1]).tocsr()
            count.eliminate_zeros()
        yield start, count


def _all_windows_connected(
    patterns: Sequence[sp.csr_array], B: int, period: int | None = None
) -> bool:
    return all(_n_strong_components(U) == 1 for _, U in _window_unions(patterns, B, period))


def _patterns(tv: TimeVarying, horizon: int) -> list[sp.csr_array]:
    return _per_object(lambda M: arc_pattern(M, diagonal=False), _rounds(tv, horizon))


def b_connectivity(tv: Any, horizon: int) -> int | None:
    r"""The smallest ``B`` such that every ``B`` consecutive rounds form a strongly connected union.

    Over the rounds ``0..horizon-1``: the smallest ``B`` for which the union of the graphs of
    rounds ``l, ..., l+B-1`` is strongly connected for every ``l`` in ``[0, horizon - B]``
    (Assumption 1 of DFedPGP, the B-bounded strong connectivity of SGP).

    Parameters
    ----------
    tv : TimeVarying or Topology
        A ``Topology`` is the constant sequence (``B = 1`` iff strongly connected).
    horizon : int
        Number of rounds examined, ``>= 1``.

    Returns
    -------
    int or None
        ``None`` if even the union of all ``horizon`` rounds is not strongly connected.

    Raises
    ------
    ValueError
        If ``horizon < 1``.

    Notes
    -----
    "Every window of length ``B`` is connected" is monotone in ``B``, so ``B`` is found by
    binary search; each test slides a window count over the rounds,
    $O(\mathrm{horizon} \cdot \log(\mathrm{horizon}) \cdot (n + \mathrm{nnz}))$. A periodic
    sequence needs only two periods (any longer horizon gives the same answer); an aperiodic
    one whose rounds would take longer to build than ``TOPOFL_MAX_SECONDS`` (default 60 s,
    estimated) is refused with the estimate.

    Examples
    --------
    Two graphs, each disconnected, connected together:

    >>> h = 0.5
    >>> a = tf.Topology.from_matrix([[h, h, 0, 0], [h, h, 0, 0], [0, 0, h, h], [0, 0, h, h]])
    >>> b = tf.Topology.from_matrix([[1, 0, 0, 0], [0, h, h, 0], [0, h, h, 0], [0, 0, 0, 1]])
    >>> tf.spectral.b_connectivity(tf.TimeVarying.cycle([a, b]), horizon=10)
    2
    >>> tf.spectral.b_connectivity(tf.topologies.random_directed(20, 1, seed=0), horizon=30)
    7
    """
    g = as_time_varying(tv)
    h = check_int(horizon, "horizon", low=1)
    if g.period is not None:
        # Every window repeats with the period: a horizon of two periods answers for any
        # longer one (the union of a period is strongly connected or no window is; if it is,
        # B <= period, and windows of length <= period start at every phase within 2 periods)
        h = min(h, 2 * g.period)
    h = _check_horizon(h, n=g.n, tv=g)
    pats = _patterns(g, h)
    if not _all_windows_connected(pats, h, g.period):
        return None
    lo, hi = 1, h  # invariant: hi works
    while lo < hi:
        mid = (lo + hi) // 2
        if _all_windows_connected(pats, mid, g.period):
            hi = mid
        else:
            lo = mid + 1
    return hi


def is_b_connected(tv: Any, B: int, horizon: int) -> bool:
    r"""Whether every ``B`` consecutive rounds of ``0..horizon-1`` form a strongly connected union.

    Parameters
    ----------
    tv : TimeVarying or Topology
    B : int
        Window length, ``1 <= B <= horizon``.
    horizon : int
        Number of rounds examined.

    Examples
    --------
    >>> tv = tf.topologies.one_peer_exponential(8)
    >>> tf.spectral.is_b_connected(tv, 1, 6), tf.spectral.is_b_connected(tv, 3, 6)
    (False, True)
    """
    g = as_time_varying(tv)
    h = check_int(horizon, "horizon", low=1)
    B = check_int(B, "B", low=1, high=h)
    if g.period is not None:  # windows starting at every phase of the period: all of them
        h = min(h, B + g.period - 1)
    h = _check_horizon(h, n=g.n, tv=g)
    return _all_windows_connected(_patterns(g, h), B, g.period)
