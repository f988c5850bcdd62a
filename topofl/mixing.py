r"""Mixing-weight schemes: from a graph to a mixing matrix ``W``.

Convention (the same everywhere in topofl): one gossip step is ``x_{t+1} = W x_t``, so
``W[i, j]`` is the weight node ``i`` gives to the value it receives from node ``j`` and
``W[i, j] > 0`` iff the edge ``j -> i`` exists (or ``i == j``). The diagonal is the weight a node
keeps for itself. Self-loops of the input graph are ignored: every scheme sets the diagonal.

=======================  ===========================================  ==================
scheme                   off-diagonal weight of edge ``j -> i``       stochastic
=======================  ===========================================  ==================
``metropolis``           ``1 / (1 + max(d_i, d_j))``                  doubly, symmetric
``metropolis_hastings``  ``1 / max(d_i, d_j)``                        doubly, symmetric
``max_degree``           ``1 / (1 + d_max)``                          doubly, symmetric
``uniform``              ``1 / (1 + d_in(i))`` (pull)                 row
``push_sum``             ``1 / (1 + d_out(j))`` (push)                column
=======================  ===========================================  ==================

The first three need an undirected graph (or a symmetric digraph); ``uniform`` and ``push_sum``
take any digraph. All return a ``scipy.sparse.csr_array`` of float64 with sorted indices and no
explicit zeros.

A warning on names: the rule the D-Cliques paper (eq. 2) calls *Metropolis-Hastings*,
``1 / (max(d_i, d_j) + 1)``, is topofl's ``metropolis`` (the default everywhere). topofl's
``metropolis_hastings`` is another matrix, ``1 / max(d_i, d_j)``, whose diagonal can be zero (on
a ring every node keeps nothing, and an even ring does not mix).

References
----------
.. [1] L. Xiao, S. Boyd, "Fast linear iterations for distributed averaging", Systems & Control
   Letters, 2004 (Metropolis-Hastings and max-degree weights).
.. [2] A. Bellet, A.-M. Kermarrec, E. Lavoie, "D-Cliques", eq. (2) (the ``metropolis`` rule).
.. [3] D. Kempe, A. Dobra, J. Gehrke, "Gossip-based computation of aggregate information",
   FOCS 2003 (push-sum).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from fractions import Fraction
from typing import TypeGuard

import networkx as nx
import numpy as np
import scipy.sparse as sp

from topofl._utils.validation import check_choice, check_graph

__all__ = [
    "metropolis",
    "metropolis_hastings",
    "max_degree",
    "uniform",
    "push_sum",
    "SCHEMES",
    "get_scheme",
]


def arcs(G: nx.Graph) -> tuple[int, np.ndarray, np.ndarray]:
    """Return ``(n, src, dst)``: the arcs of ``G`` without self-loops, in ``G.edges()`` order.

    An undirected edge ``{u, v}`` gives both arcs ``u -> v`` and ``v -> u`` (all the forward
    arcs first, then all the reversed ones).
    """
    n = check_graph(G)
    m = G.number_of_edges()
    e = np.fromiter(itertools.chain.from_iterable(G.edges()), dtype=np.int64, count=2 * m)
    e = e.reshape(m, 2)
    e = e[e[:, 0] != e[:, 1]]
    if G.is_directed():
        return n, e[:, 0].copy(), e[:, 1].copy()
    return n, np.concatenate([e[:, 0], e[:, 1]]), np.concatenate([e[:, 1], e[:, 0]])


def _symmetric_arcs(G: nx.Graph, scheme: str) -> tuple[int, np.ndarray, np.ndarray]:
    n, src, dst = arcs(G)
    if G.is_directed():
        fwd = set(zip(src.tolist(), dst.tolist()))
        for u, v in fwd:
            if (v, u) not in fwd:
                raise ValueError(
                    f"{scheme} weights need an undirected graph, got a digraph with the arc "
                    f"{u} -> {v} but not {v} -> {u}; use 'uniform' (row-stochastic) or "
                    "'push_sum' (column-stochastic) for directed graphs"
                )
    return n, src, dst


def assemble(
    n: int, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, diag: np.ndarray
) -> sp.csr_array:
    """``(n, n)`` CSR ``W`` with ``W[rows[e], cols[e]] = vals[e]`` and the diagonal ``diag``
    (a diagonal entry under 1e-14 in magnitude, rounding residue, is dropped so that the
    sparsity is exactly the graph's); duplicates summed, zeros removed, indices sorted."""
    diag = np.where(np.abs(diag) < 1e-14, 0.0, diag)
    idx = np.arange(n, dtype=np.int64)
    W = sp.coo_array(
        (np.concatenate([vals, diag]), (np.concatenate([rows, idx]), np.concatenate([cols, idx]))),
        shape=(n, n),
    ).tocsr()
    W.sum_duplicates()
    W.eliminate_zeros()
    W.sort_indices()
    return W


def _exact_complement(n: int, rows: np.ndarray, denoms: np.ndarray) -> np.ndarray:
    """``1 - sum_j 1/denoms_ij`` per row, computed exactly and rounded once.

    The off-diagonal weights of the symmetric schemes are ``1/k`` for integers ``k``; summing
    their rounded values would leave a few ulps on the diagonal (the complete graph would not be
    exactly ``11^T/n``). Rows whose weights share one denominator ``k`` (all of a regular graph)
    get ``(k - c) / k`` with one rounding; the others are summed as fractions.
    """
    out = np.ones(n)
    if rows.size == 0:
        return out
    # The distinct (row, denominator) pairs in lexicographic order, as one sorted int64 key.
    base = int(denoms.max()) + 1
    keys, counts = np.unique(rows * base + denoms, return_counts=True)
    r, k = np.divmod(keys, base)
    first = np.ones(r.size, dtype=bool)
    first[1:] = r[1:] != r[:-1]
    n_denoms = np.bincount(r, minlength=n)
    single = first & (n_denoms[r] == 1)
    out[r[single]] = (k[single] - counts[single]) / k[single]
    for row in np.flatnonzero(n_denoms > 1):
        sel = r == row
        total = sum(Fraction(int(c), int(d)) for c, d in zip(counts[sel], k[sel]))
        out[row] = float(1 - total)
    return out


def _symmetric_W(
    n: int, src: np.ndarray, dst: np.ndarray,
    denominators: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> sp.csr_array:
    # W_ij = 1 / k_ij on every arc, k = denominators(deg[src], deg[dst]) (integers, one per
    # arc), the diagonal the exact complement of each row. Every step is elementwise or
    # order-free (bincount, unique, COO -> CSR without duplicates): the same arcs in any order
    # give the same bits.
    deg = np.bincount(src, minlength=n)
    k = denominators(deg[src], deg[dst])
    return assemble(n, dst, src, 1.0 / k, _exact_complement(n, dst, k))


def _one_sided_W(n: int, src: np.ndarray, dst: np.ndarray, side: str) -> sp.csr_array:
    # 1 / (1 + d) on every arc and on the diagonal, d the in-degree of the receiver
    # (side="in": rows sum to 1) or the out-degree of the sender ("out": columns do).
    node = dst if side == "in" else src
    deg = np.bincount(node, minlength=n)
    return assemble(n, dst, src, 1.0 / (1.0 + deg[node]), 1.0 / (1.0 + deg))


def _metropolis_k(d_src: np.ndarray, d_dst: np.ndarray) -> np.ndarray:
    k: np.ndarray = 1 + np.maximum(d_src, d_dst)
    return k


def _max_degree_k(d_src: np.ndarray, d_dst: np.ndarray) -> np.ndarray:
    # the largest degree of an arc's end is the graph's (isolated nodes have degree 0)
    return np.full(d_src.shape, 1 + int(d_src.max(initial=0)))


#: The denominators ``k_ij`` (``W_ij = 1 / k_ij``) of the symmetric schemes.
_DENOMINATORS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "metropolis": _metropolis_k,
    "metropolis_hastings": np.maximum,
    "max_degree": _max_degree_k,
}


def _symmetric(G: nx.Graph, scheme: str) -> sp.csr_array:
    """A symmetric scheme on the arcs of ``G`` (which must be undirected or symmetric)."""
    n, src, dst = _symmetric_arcs(G, scheme)
    return _symmetric_W(n, src, dst, _DENOMINATORS[scheme])


def _one_sided(G: nx.Graph, side: str) -> sp.csr_array:
    """A one-sided scheme (``side="in"``: ``uniform``, ``"out"``: ``push_sum``) on ``G``."""
    n, src, dst = arcs(G)
    return _one_sided_W(n, src, dst, side)


def from_arcs(weights: str, n: int, src: np.ndarray, dst: np.ndarray) -> sp.csr_array:
    """The ``W`` of the scheme named ``weights`` on the arcs ``src -> dst``, without networkx.

    The same matrix, bit for bit, as ``SCHEMES[weights](G)`` for a graph ``G`` on the nodes
    ``0..n-1`` whose arcs are exactly these, in any order: constructors that know their arcs
    use it to skip building a graph.

    Parameters
    ----------
    weights : str
        A name :func:`has_arc_form` accepts.
    n : int
        Number of nodes.
    src, dst : numpy.ndarray
        ``(m,)`` int64 arrays: the arcs ``src[e] -> dst[e]``, no self-loops and no arc twice
        (trusted, not checked). The symmetric schemes need every arc's reverse among them.

    Returns
    -------
    scipy.sparse.csr_array
        ``(n, n)`` float64, sorted indices, no explicit zeros.

    Examples
    --------
    >>> import networkx as nx
    >>> src, dst = np.array([0, 1, 1, 2]), np.array([1, 0, 2, 1])  # the path 0 - 1 - 2
    >>> W = tf.mixing.from_arcs("metropolis", 3, src, dst)
    >>> (W != tf.mixing.metropolis(nx.path_graph(3))).nnz
    0
    """
    if weights in _DENOMINATORS:
        return _symmetric_W(n, src, dst, _DENOMINATORS[weights])
    return _one_sided_W(n, src, dst, {"uniform": "in", "push_sum": "out"}[weights])


def metropolis(G: nx.Graph) -> sp.csr_array:
    r"""Metropolis weights ``W_ij = 1 / (1 + max(d_i, d_j))``, diagonal ``1 - sum_j W_ij``.

    This is the rule of eq. (2) of the D-Cliques paper, which calls it *Metropolis-Hastings*:
    to reproduce that paper use this scheme, not :func:`metropolis_hastings`. It gives a
    symmetric, doubly stochastic ``W`` with a positive diagonal for every undirected graph.

    Parameters
    ----------
    G : networkx.Graph
        Undirected graph (or symmetric digraph) on the nodes ``0..n-1``.

    Returns
    -------
    scipy.sparse.csr_array
        ``(n, n)`` float64 mixing matrix.

    Examples
    --------
    >>> import networkx as nx
    >>> tf.mixing.metropolis(nx.path_graph(3)).toarray()
    array([[0.6667, 0.3333, 0.    ],
           [0.3333, 0.3333, 0.3333],
           [0.    , 0.3333, 0.6667]])
    """
    return _symmetric(G, "metropolis")


def metropolis_hastings(G: nx.Graph) -> sp.csr_array:
    r"""Metropolis-Hastings weights ``W_ij = 1 / max(d_i, d_j)``, diagonal ``1 - sum_j W_ij``.

    Doubly stochastic and symmetric, but the diagonal can be zero (on a ring every node keeps
    nothing, and an even ring then has eigenvalue -1: it does not mix). Prefer
    :func:`metropolis` unless the comparison needs this exact rule.

    Not the D-Cliques paper's "Metropolis-Hastings" weights: those are
    ``1 / (max(d_i, d_j) + 1)``, topofl's :func:`metropolis`.

    Examples
    --------
    >>> import networkx as nx
    >>> tf.mixing.metropolis_hastings(nx.cycle_graph(4)).diagonal()  # a ring keeps nothing
    array([0., 0., 0., 0.])
    >>> tf.mixing.metropolis_hastings(nx.path_graph(3)).toarray()
    array([[0.5, 0.5, 0. ],
           [0.5, 0. , 0.5],
           [0. , 0.5, 0.5]])
    """
    return _symmetric(G, "metropolis_hastings")


def max_degree(G: nx.Graph) -> sp.csr_array:
    r"""Maximum-degree weights ``W_ij = 1 / (1 + d_max)``, diagonal ``1 - d_i / (1 + d_max)``.

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.cycle_graph(5)  # on a regular graph, the same as metropolis
    >>> (tf.mixing.max_degree(G) != tf.mixing.metropolis(G)).nnz
    0
    >>> tf.mixing.max_degree(nx.star_graph(2)).toarray()
    array([[0.3333, 0.3333, 0.3333],
           [0.3333, 0.6667, 0.    ],
           [0.3333, 0.    , 0.6667]])
    """
    return _symmetric(G, "max_degree")


def uniform(G: nx.Graph) -> sp.csr_array:
    r"""Row-stochastic "pull" weights: node ``i`` averages itself and its in-neighbours uniformly.

    ``W_ij = 1 / (1 + d_in(i))`` for every in-neighbour ``j`` of ``i`` and on the diagonal. On an
    undirected graph with unequal degrees ``W`` is row- but not column-stochastic, so D-SGD on it
    converges to a weighted (biased) average.

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.DiGraph([(0, 1), (2, 1)])
    >>> tf.mixing.uniform(G).toarray()
    array([[1.    , 0.    , 0.    ],
           [0.3333, 0.3333, 0.3333],
           [0.    , 0.    , 1.    ]])
    """
    return _one_sided(G, "in")


def push_sum(G: nx.Graph) -> sp.csr_array:
    r"""Column-stochastic push-sum weights: node ``j`` splits its mass over itself and successors.

    ``W_ij = 1 / (1 + d_out(j))`` for every arc ``j -> i`` and ``W_jj = 1 / (1 + d_out(j))``.
    Each column sums to one, so ``sum_i x_i`` is preserved; push-sum de-biases with the weights
    ``w_{t+1} = W w_t`` started at ``w_0 = 1``.

    Examples
    --------
    >>> import networkx as nx
    >>> W = tf.mixing.push_sum(nx.DiGraph([(0, 1), (0, 2)]))
    >>> W.toarray()
    array([[0.3333, 0.    , 0.    ],
           [0.3333, 1.    , 0.    ],
           [0.3333, 0.    , 1.    ]])
    >>> W.sum(axis=0)  # column-stochastic: the mass is preserved
    array([1., 1., 1.])
    """
    return _one_sided(G, "out")


SCHEMES: dict[str, Callable[[nx.Graph], sp.csr_array]] = {
    "metropolis": metropolis,
    "metropolis_hastings": metropolis_hastings,
    "max_degree": max_degree,
    "uniform": uniform,
    "push_sum": push_sum,
}

_BUILTIN: dict[str, Callable[[nx.Graph], sp.csr_array]] = dict(SCHEMES)


def has_arc_form(weights: object) -> TypeGuard[str]:
    """Whether :func:`from_arcs` computes the scheme ``weights`` (else it needs a graph).

    True for the name of a scheme of :data:`SCHEMES` still bound to topofl's own function;
    False for a callable, an unknown name, or a name rebound to another function.

    Examples
    --------
    >>> tf.mixing.has_arc_form("metropolis"), tf.mixing.has_arc_form(tf.mixing.metropolis)
    (True, False)
    """
    return isinstance(weights, str) and weights in _BUILTIN and SCHEMES.get(weights) is (
        _BUILTIN[weights])


#: The stochasticity each named scheme guarantees.
SCHEME_KIND: dict[str, str] = {
    "metropolis": "doubly",
    "metropolis_hastings": "doubly",
    "max_degree": "doubly",
    "uniform": "row",
    "push_sum": "column",
}


def get_scheme(weights: str | Callable[[nx.Graph], object]) -> Callable[[nx.Graph], object]:
    """Return the weight function for a scheme name (or a callable, unchanged).

    Examples
    --------
    >>> tf.mixing.get_scheme("metropolis").__name__
    'metropolis'
    >>> tf.mixing.get_scheme("Metropolis-Hastings")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: weights must be one of [...], got 'Metropolis-Hastings' (did you mean
    'metropolis_hastings'?); note: 'metropolis' is ...
    """
    if callable(weights):
        return weights
    try:
        check_choice(weights, "weights", SCHEMES)
    except ValueError as exc:
        raise ValueError(f"{exc}; note: {_NAMES_NOTE}") from None
    return SCHEMES[weights]


_NAMES_NOTE = (
    "'metropolis' is 1/(max(d_i, d_j) + 1), the rule the D-Cliques paper calls "
    "Metropolis-Hastings; 'metropolis_hastings' is 1/max(d_i, d_j), whose diagonal can be zero"
)
