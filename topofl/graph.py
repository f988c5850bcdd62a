r"""The two graph objects of topofl: :class:`Topology` and :class:`TimeVarying`.

Convention: one gossip step is ``x_{t+1} = W x_t``. ``W[i, j]`` is the weight node ``i`` gives to
the message it receives from node ``j``, so ``W[i, j] > 0`` iff the edge ``j -> i`` exists (the
diagonal holds the weight a node keeps). ``graph`` is an ``nx.DiGraph`` with an arc ``j -> i`` for
every such edge and no self-loops; ``W`` therefore has the sparsity of the transposed adjacency
matrix plus (part of) the diagonal. In PyG terms ``edge_index[0]`` is the sender ``j`` and
``edge_index[1]`` the receiver ``i``.

A :class:`TimeVarying` is a sequence of topologies indexed by the round ``t``; ``at(t)`` is a pure
function of the seed and ``t``, never of the order of calls.
"""

from __future__ import annotations

import numbers
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from threading import Lock
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeAlias, Union

import networkx as nx
import numpy as np
import scipy.sparse as sp

from topofl import mixing
from topofl._utils.validation import (
    arc_pattern,
    check_graph,
    check_graph_size,
    check_int,
    check_matrix,
    check_memory,
    stochasticity,
)

if TYPE_CHECKING:
    import torch
    from torch_geometric.data import Data

__all__ = ["Topology", "TimeVarying", "as_time_varying", "GraphLike"]

_ATOL = 1e-10


def _freeze_csr(W: sp.csr_array) -> sp.csr_array:
    for arr in (W.data, W.indices, W.indptr):
        arr.flags.writeable = False
    return W


def _graph_from_W(W: sp.csr_array) -> nx.DiGraph:
    n = W.shape[0]
    coo = W.tocoo()
    off = (coo.row != coo.col) & (coo.data > 0)
    G = nx.DiGraph()
    G.add_nodes_from(range(n))
    # W[i, j] > 0  <=>  arc j -> i
    G.add_edges_from(zip(coo.col[off].tolist(), coo.row[off].tolist()))
    return G


_GRAPH_LOCK = Lock()


class _LazyGraph:
    """The ``graph`` field of :class:`Topology`: the digraph given to the constructor, or, when
    it was given ``None``, the one built from ``W`` on first access and then kept.

    A data descriptor, so the field stays a dataclass field (``dataclasses.fields`` lists it,
    the generated ``__init__`` takes it) while its value lives in the instance's
    ``__dict__["_graph"]``. Training, spectra and records read ``W`` only: a topology of
    ``10**6`` nodes then costs its CSR arrays, not a networkx graph of about 2 KB a node.
    """

    def __get__(self, obj: Topology | None, owner: type | None = None) -> nx.DiGraph:
        if obj is None:
            # no class-level value: dataclasses then sees a field without a default
            raise AttributeError("graph is an attribute of a Topology, not of the class")
        G: nx.DiGraph | None = obj.__dict__.get("_graph")
        if G is None:
            with _GRAPH_LOCK:  # built once even if two threads ask at the same time
                G = obj.__dict__.get("_graph")
                if G is None:
                    G = nx.freeze(_graph_from_W(obj.W))
                    obj.__dict__["_graph"] = G
        return G

    def __set__(self, obj: Topology, value: nx.DiGraph | None) -> None:
        # Only the dataclass __init__ gets here (object.__setattr__); ``t.graph = ...`` is
        # refused by the frozen dataclass's own __setattr__ first.
        obj.__dict__["_graph"] = value


#: Peak bytes per node and per arc of building a topology's ``W`` from its arcs without a
#: networkx graph (:meth:`Topology._from_edges`, :meth:`Topology.from_matrix`): the arc
#: arrays, the COO triplets, the CSR and its checked copy. Measured with ``tracemalloc`` (see
#: ``tests/topologies/test_size.py``); an upper bound within a factor 4.
W_BYTES_PER_NODE = 80
W_BYTES_PER_ARC = 120


def w_bytes(n: int, arcs: float) -> float:
    """Estimated peak bytes of building a topology's ``W`` (``n`` nodes, ``arcs`` arcs) without
    a networkx graph: the ``W`` counterpart of :func:`topofl._utils.validation.graph_bytes`."""
    return float(W_BYTES_PER_NODE) * n + float(W_BYTES_PER_ARC) * arcs


def check_w_size(n: int, arcs: float, what: str) -> None:
    """Refuse, before anything is allocated, a topology whose ``W`` (``n`` nodes, ``arcs`` arcs,
    each direction counted) would not fit in memory; for constructors that build no graph.

    Examples
    --------
    >>> tf.graph.check_w_size(10**10, 2 * 10**10, "ring(n=10000000000)")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topofl.exceptions.InsufficientMemoryError: ring(n=10000000000) needs about 2.91 TiB ...
    """
    check_memory(w_bytes(n, arcs), what)


def _undirected_arcs(n: int, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both arcs of every distinct edge ``{u[e], v[e]}``, self-loops dropped: ``(src, dst)``,
    int64, the edges sorted, all ``a -> b`` (``a < b``) first, then all ``b -> a``."""
    a = np.minimum(u, v).astype(np.int64)
    b = np.maximum(u, v).astype(np.int64)
    keep = a != b
    key = np.sort(a[keep] * n + b[keep])
    key = key[np.concatenate([key[:1] == key[:1], key[1:] != key[:-1]])]  # np.unique, unhashed
    a, b = np.divmod(key, n)
    return np.concatenate([a, b]), np.concatenate([b, a])


def _canonical_groups(
    groups: Iterable[Iterable[int]] | None, n: int
) -> tuple[tuple[int, ...], ...] | None:
    if groups is None:
        return None
    if isinstance(groups, (str, bytes)) or not isinstance(groups, Iterable):
        raise TypeError(f"groups must be an iterable of groups of node ids (e.g. [[0, 1], "
                        f"[2, 3]]) or None, got {type(groups).__name__} {groups!r}"[:300])
    out: list[tuple[int, ...]] = []
    seen = np.zeros(n, dtype=bool)
    for gi, grp in enumerate(groups):
        if isinstance(grp, (str, bytes)) or not isinstance(grp, Iterable):
            raise TypeError(f"groups[{gi}] must be an iterable of node ids in [0, {n - 1}], "
                            f"got {type(grp).__name__} {grp!r}"[:300])
        members: list[int] = []
        for v in grp:
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not 0 <= int(v) < n:
                raise ValueError(f"groups[{gi}] must hold node ids in [0, {n - 1}], found {v!r}")
            if seen[int(v)]:
                raise ValueError(f"groups must be disjoint: node {int(v)} appears twice")
            seen[int(v)] = True
            members.append(int(v))
        if not members:
            raise ValueError(f"groups[{gi}] is empty; every group needs at least one node")
        out.append(tuple(sorted(members)))
    if not seen.all():
        missing = int(np.flatnonzero(~seen)[0])
        raise ValueError(f"groups must cover all n={n} nodes; node {missing} is in no group")
    return tuple(out)


def _params_dict(params: Any) -> dict[str, Any]:
    """``params`` (a mapping, or ``None`` for none) as a new dict, else a ``TypeError``.

    Examples
    --------
    >>> from topofl.graph import _params_dict
    >>> _params_dict(None), _params_dict({"n": 4})
    ({}, {'n': 4})
    >>> _params_dict(5)
    Traceback (most recent call last):
    ...
    TypeError: params must be a mapping (e.g. {'n': 8}) or None, got int 5
    """
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a mapping (e.g. {{'n': 8}}) or None, got "
                        f"{type(params).__name__} {params!r}"[:300])
    return dict(params)


@dataclass(frozen=True, eq=False, repr=False)
class Topology:
    r"""A communication graph with its mixing matrix; immutable.

    Build one with a constructor of :mod:`topofl.topologies` (``tf.topologies.ring(8)``),
    :meth:`from_networkx` or :meth:`from_matrix`, not by calling the class directly.

    Attributes
    ----------
    graph : networkx.DiGraph
        Frozen digraph on the nodes ``0..n-1`` with an arc ``j -> i`` iff ``W[i, j] > 0``
        (``i != j``); no self-loops. An undirected graph is stored with both arcs. Built from
        ``W`` on first access and then kept, unless one was given (:meth:`from_networkx`
        keeps its input's arcs in their order): training, spectra and records read ``W``
        only, so a topology costs ``W``'s CSR arrays, ``O(n + arcs)`` numbers, until someone
        asks for its networkx graph (about 2 KB a node). ``Topology(None, W, ...)`` leaves it
        to be built from ``W``.
    W : scipy.sparse.csr_array
        ``(n, n)`` float64 mixing matrix, read-only, ``x_{t+1} = W x_t``.
    name : str
        Family name, e.g. ``"ring"``.
    params : Mapping[str, Any]
        The constructor's arguments (read-only).
    groups : tuple of tuple of int or None
        Optional partition of the nodes (for example the cliques of D-Cliques).
    weights : str
        Name of the weight scheme that produced ``W`` (``"custom"`` for :meth:`from_matrix`).

    Examples
    --------
    >>> t = tf.topologies.ring(4)
    >>> t
    Topology(name='ring', n=4, edges=4, undirected, doubly stochastic, params={'n': 4})
    >>> t.W.toarray()
    array([[0.3333, 0.3333, 0.    , 0.3333],
           [0.3333, 0.3333, 0.3333, 0.    ],
           [0.    , 0.3333, 0.3333, 0.3333],
           [0.3333, 0.    , 0.3333, 0.3333]])
    >>> t.edges_per_node, t.messages_per_round
    (2.0, 8)
    """

    if TYPE_CHECKING:
        graph: nx.DiGraph
    else:
        graph: nx.DiGraph = _LazyGraph()  # required: the descriptor gives no default
    W: sp.csr_array
    name: str = "custom"
    params: Mapping[str, Any] = field(default_factory=dict)
    groups: tuple[tuple[int, ...], ...] | None = None
    weights: str = "custom"

    if TYPE_CHECKING:  # the __init__ dataclass writes, with the None that _LazyGraph takes
        def __init__(
            self,
            graph: nx.DiGraph | None,
            W: sp.csr_array,
            name: str = "custom",
            params: Mapping[str, Any] = ...,
            groups: tuple[tuple[int, ...], ...] | None = None,
            weights: str = "custom",
        ) -> None: ...

    def __post_init__(self) -> None:
        # Canonicalise once here; the public constructors pass already-checked inputs, so
        # only what a direct call could get wrong is checked (cheaply: every round of a
        # time-varying graph builds one).
        hint = ("build a Topology with Topology.from_matrix, from_networkx, from_adjacency "
                "or a constructor of topofl.topologies")
        graph = self.__dict__["_graph"]  # not self.graph: that would build it
        if graph is not None and not isinstance(graph, nx.DiGraph):
            raise TypeError(f"graph must be a networkx.DiGraph, got {type(graph).__name__} "
                            f"{graph!r} (or None: built from W when asked for; {hint})"[:300])
        if not isinstance(self.W, sp.csr_array):
            raise TypeError(f"W must be a scipy.sparse.csr_array, got {type(self.W).__name__} "
                            f"({hint})")
        if graph is not None:
            n = graph.number_of_nodes()
            if self.W.shape != (n, n):
                raise ValueError(f"W must have shape (n, n) = ({n}, {n}) for a graph of {n} "
                                 f"nodes, got {self.W.shape} ({hint})")
        elif self.W.ndim != 2 or self.W.shape[0] != self.W.shape[1]:
            raise ValueError(f"W must be a square (n, n) matrix, got shape {self.W.shape} "
                             f"({hint})")
        object.__setattr__(self, "params", MappingProxyType(_params_dict(self.params)))
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a str, got {type(self.name).__name__}")

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_networkx(
        cls,
        G: nx.Graph,
        weights: str | Callable[[nx.Graph], Any] = "metropolis",
        *,
        name: str = "custom",
        params: Mapping[str, Any] | None = None,
        groups: Iterable[Iterable[int]] | None = None,
        keep_graph: bool = True,
    ) -> Topology:
        """Build a topology from a networkx graph and a weight scheme.

        The topology's :attr:`graph` is built here, with ``G``'s arcs in ``G``'s order, and
        kept (the constructors of :mod:`topofl.topologies` keep only ``W``:
        ``keep_graph=False``).

        Parameters
        ----------
        G : networkx.Graph or networkx.DiGraph
            Nodes must be ``0..n-1``. An undirected graph becomes a symmetric digraph; an arc
            ``u -> v`` of a digraph means ``u`` sends to ``v``. Self-loops are ignored (every
            scheme sets the diagonal). ``G`` is not modified.
        weights : str or callable, default ``"metropolis"``
            A scheme of :mod:`topofl.mixing` (``"metropolis"``, ``"metropolis_hastings"``,
            ``"max_degree"``, ``"uniform"``, ``"push_sum"``) or a function ``G -> W``.
            ``"metropolis"`` is ``1/(max(d_i, d_j) + 1)``, the rule the D-Cliques paper calls
            Metropolis-Hastings; ``"metropolis_hastings"`` is ``1/max(d_i, d_j)`` (its
            diagonal can be zero).
        name, params, groups
            Stored on the result; see the class attributes.
        keep_graph : bool, default True
            ``False``: no graph is built now; :attr:`graph` is built from ``W`` when asked for
            (the same arcs: ``W`` has exactly ``G``'s, checked), in the order of ``W``.

        Returns
        -------
        Topology

        Raises
        ------
        TypeError, ValueError
            If ``G`` is not a simple graph on ``0..n-1``, or the scheme does not apply (a
            symmetric scheme on a directed graph), or ``params`` is not a mapping.

        Examples
        --------
        >>> import networkx as nx
        >>> t = tf.Topology.from_networkx(nx.path_graph(3), weights="max_degree", name="path")
        >>> t.is_doubly_stochastic, t.num_edges
        (True, 2)
        """
        n = check_graph(G)
        if n == 0:
            raise ValueError("G must have at least one node, got an empty graph")
        scheme = mixing.get_scheme(weights)
        W = check_matrix(scheme(G), name="W returned by the weight scheme")
        if W.shape[0] != n:
            raise ValueError(f"the weight scheme returned a {W.shape} matrix for a graph of n={n}")
        n_, src, dst = mixing.arcs(G)
        # Every arc of G must carry weight and W must not invent arcs.
        if not _same_arcs(n, src, dst, W):
            raise ValueError(
                "the weight scheme returned a W whose off-diagonal sparsity differs from the "
                "graph's arcs (W[i, j] > 0 must hold iff j -> i)"
            )
        graph = None
        if keep_graph:
            graph = nx.DiGraph()
            graph.add_nodes_from(range(n))
            graph.add_edges_from(zip(src.tolist(), dst.tolist()))
            graph = nx.freeze(graph)
        scheme_name = (
            weights if isinstance(weights, str) else getattr(weights, "__name__", "custom")
        )
        p = _params_dict(params)
        return cls(
            graph=graph,
            W=_freeze_csr(W),
            name=name,
            params=p,
            groups=_canonical_groups(groups, n),
            weights=scheme_name,
        )

    @classmethod
    def _from_edges(
        cls,
        n: int,
        u: np.ndarray,
        v: np.ndarray,
        weights: str,
        *,
        name: str,
        params: Mapping[str, Any],
    ) -> Topology:
        # The undirected graph on 0..n-1 with the edges {u[e], v[e]} (repeats and self-loops
        # dropped) and a scheme of mixing.has_arc_form, built from arrays: the same W, bit for
        # bit, as from_networkx on a networkx graph with these edges (tests/topologies check
        # it), and no graph until one is asked for. Inputs are trusted (constructors' own).
        src, dst = _undirected_arcs(n, u, v)
        W = check_matrix(mixing.from_arcs(weights, n, src, dst),
                         name="W returned by the weight scheme")
        return cls(graph=None, W=_freeze_csr(W), name=name, params=dict(params),
                   weights=weights)

    @classmethod
    def from_matrix(
        cls,
        W: Any,
        *,
        name: str = "custom",
        params: Mapping[str, Any] | None = None,
        groups: Iterable[Iterable[int]] | None = None,
    ) -> Topology:
        """Build a topology from a mixing matrix; the graph is its sparsity, built when asked for.

        Parameters
        ----------
        W : array_like, scipy sparse matrix or torch tensor, shape (n, n)
            Non-negative finite weights, ``W[i, j] > 0`` iff ``j -> i``. It is copied, never
            modified. Stochasticity is not required (check ``is_row_stochastic`` and friends).
        name : str, default ``"custom"``
        params : Mapping, optional
            Stored on the result (a new dict); see the class attributes.
        groups : iterable of iterables of int, optional
            A partition of the nodes (e.g. cliques); see the class attributes.

        Raises
        ------
        TypeError
            If ``W`` is a :class:`Topology` or a networkx graph, or not numbers, or
            ``params`` is not a mapping (``params=5``) or ``None``.
        ValueError
            If ``W`` is not a square non-negative finite matrix, or ``groups`` is not a
            partition of its nodes.

        Examples
        --------
        >>> t = tf.Topology.from_matrix([[0.5, 0.5], [0.0, 1.0]], name="leader")
        >>> list(t.graph.edges()), t.is_row_stochastic, t.is_column_stochastic
        ([(1, 0)], True, False)
        """
        if isinstance(W, Topology):
            raise TypeError("W must be a matrix of shape (n, n), got a Topology: it already is "
                            "one (pass it as it is, or its .W)")
        if isinstance(W, nx.Graph):
            raise TypeError(f"W must be a matrix of shape (n, n), got a networkx "
                            f"{type(W).__name__}: build it with Topology.from_networkx")
        M = check_matrix(W)
        return cls(
            graph=None,  # built from W when asked for
            W=_freeze_csr(M),
            name=name,
            params=_params_dict(params),
            groups=_canonical_groups(groups, M.shape[0]),
        )

    @classmethod
    def from_adjacency(
        cls,
        A: Any,
        weights: str | Callable[[nx.Graph], Any] = "metropolis",
        *,
        name: str = "custom",
        params: Mapping[str, Any] | None = None,
        groups: Iterable[Iterable[int]] | None = None,
    ) -> Topology:
        """Build a topology from an adjacency matrix and a weight scheme.

        Orientation: ``A[u, v] != 0`` is the arc ``u -> v`` (``u`` sends to ``v``), as in
        ``networkx.to_numpy_array`` and ``scipy.sparse.csgraph``; ``W`` then has the sparsity
        of ``A.T`` (``W[v, u] > 0``). A symmetric ``A`` is an undirected graph.

        Parameters
        ----------
        A : array_like, scipy sparse matrix or torch tensor, shape (n, n)
            0/1 or weighted adjacency: only *which* entries are nonzero matters (the scheme
            sets the weights; use :meth:`from_matrix` to give ``W`` yourself). Entries must be
            finite and non-negative; the diagonal is ignored. Not modified.
        weights : str or callable, default ``"metropolis"``
            A scheme of :mod:`topofl.mixing`. ``"metropolis"`` is ``1/(1 + max(d_i, d_j))``
            (what the D-Cliques paper calls Metropolis-Hastings); ``"metropolis_hastings"``
            is ``1/max(d_i, d_j)``. Both need a symmetric ``A``; for a directed graph use
            ``"uniform"`` (row-stochastic) or ``"push_sum"`` (column-stochastic).

        Raises
        ------
        TypeError, ValueError
            If ``A`` is not a square non-negative finite matrix, or the scheme does not apply,
            or ``params`` is not a mapping.

        Examples
        --------
        >>> A = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]])  # arcs 0 -> 1 and 1 -> 2
        >>> t = tf.Topology.from_adjacency(A, weights="uniform")
        >>> sorted(t.graph.edges()), t.W.toarray()
        ([(0, 1), (1, 2)], array([[1. , 0. , 0. ],
               [0.5, 0.5, 0. ],
               [0. , 0.5, 0.5]]))
        >>> tf.Topology.from_adjacency(nx.to_numpy_array(nx.cycle_graph(4))).is_doubly_stochastic
        True
        """
        M = check_matrix(A, name="A")
        P = arc_pattern(M)  # P[i, j] = 1 iff A[i, j] != 0, i != j
        n = M.shape[0]
        coo = P.tocoo()
        symmetric = (P != P.T).nnz == 0
        G: nx.Graph = nx.Graph() if symmetric else nx.DiGraph()
        G.add_nodes_from(range(n))
        G.add_edges_from(zip(coo.row.tolist(), coo.col.tolist()))
        return cls.from_networkx(G, weights, keep_graph=False, name=name, params=params,
                                 groups=groups)

    @classmethod
    def from_pyg(
        cls,
        data: Any,
        weights: str | Callable[[nx.Graph], Any] | None = None,
        *,
        num_nodes: int | None = None,
        name: str = "custom",
        params: Mapping[str, Any] | None = None,
        groups: Iterable[Iterable[int]] | None = None,
    ) -> Topology:
        """Build a topology from a ``torch_geometric.data.Data`` (the inverse of :meth:`to_pyg`).

        ``edge_index[0]`` is the sender ``j`` and ``edge_index[1]`` the receiver ``i``
        (``flow="source_to_target"``), the orientation of :meth:`to_pyg`.

        Parameters
        ----------
        data : torch_geometric.data.Data
            With ``edge_index`` (``[2, E]`` integer tensor) and optionally ``edge_weight``
            (``[E]``, finite, non-negative).
        weights : str, callable or None, default None
            ``None``: ``W[i, j]`` is the ``edge_weight`` of the edge ``j -> i`` (self-loops
            give the diagonal: a node without one gets ``W[i, i] = 0``, with a warning), so
            ``Topology.from_pyg(t.to_pyg())`` has ``t``'s ``W``; without ``edge_weight`` the
            ``"metropolis"`` scheme is used (it sets the diagonal). A scheme name (see
            :meth:`from_adjacency`) ignores ``edge_weight`` and self-loops and weights the
            edges of ``edge_index``.
        num_nodes : int, optional
            Number of nodes; default ``data.num_nodes``. Never inferred from the largest
            index: an index ``>= num_nodes`` is an error.

        Raises
        ------
        TypeError, ValueError
            If ``edge_index`` is missing, not ``[2, E]`` integers, out of range or holds an
            edge twice, or ``edge_weight`` does not match it, or ``params`` is not a mapping.

        Examples
        --------
        >>> t = tf.topologies.ring(5)
        >>> u = tf.Topology.from_pyg(t.to_pyg())
        >>> bool((u.W != t.W).nnz == 0), u.n
        (True, 5)
        >>> tf.Topology.from_pyg(t.to_pyg(), weights="max_degree").weights
        'max_degree'
        """
        import torch

        edge_index = getattr(data, "edge_index", None)
        if not isinstance(edge_index, torch.Tensor):
            raise TypeError(
                "data must have an edge_index tensor (a torch_geometric.data.Data), got "
                f"{type(data).__name__} with edge_index={type(edge_index).__name__}"
            )
        if edge_index.dim() != 2 or edge_index.shape[0] != 2:
            raise ValueError(f"edge_index must have shape [2, E], got {list(edge_index.shape)}")
        if edge_index.dtype.is_floating_point or edge_index.dtype.is_complex or (
            edge_index.dtype == torch.bool
        ):
            raise TypeError(f"edge_index must hold integers, got {edge_index.dtype}")
        if num_nodes is None:
            num_nodes = data.num_nodes
        n = check_int(num_nodes, "num_nodes", low=1)
        check_graph_size(n, edge_index.shape[1], f"a topology with num_nodes={n}")
        ei = edge_index.detach().cpu().to(torch.int64)
        if ei.numel() and (int(ei.min()) < 0 or int(ei.max()) >= n):
            raise ValueError(
                f"edge_index must hold node ids in [0, {n - 1}] (num_nodes={n}), found "
                f"{int(ei.min())}..{int(ei.max())}"
            )
        from torch_geometric.utils import coalesce, to_scipy_sparse_matrix

        if coalesce(ei, num_nodes=n).shape[1] != ei.shape[1]:
            raise ValueError("edge_index holds an edge more than once; coalesce it first")
        ew = getattr(data, "edge_weight", None) if weights is None else None
        if ew is not None:
            if not isinstance(ew, torch.Tensor) or ew.shape != (ei.shape[1],):
                raise ValueError(
                    f"edge_weight must be a tensor of shape [E] = [{ei.shape[1]}], got "
                    f"{getattr(ew, 'shape', type(ew).__name__)}"
                )
            # to_scipy_sparse_matrix gives A[j, i] = w for the edge j -> i; W is its transpose.
            A = to_scipy_sparse_matrix(ei, ew.detach().cpu().double(), num_nodes=n)
            M = check_matrix(sp.csr_array(A).T, name="W from edge_weight")
            loops = int((ei[0] == ei[1]).sum())
            if loops < n:
                warnings.warn(
                    f"from_pyg: edge_weight gives W, and edge_index has self-loops at "
                    f"{loops} of {n} nodes: W[i, i] = 0 at the other {n - loops} (those "
                    "nodes keep nothing of their own value). Add self-loops with their "
                    "weights (torch_geometric.utils.add_self_loops), or pass a weights scheme "
                    "(weights='metropolis') to have them set", UserWarning, stacklevel=2)
            return cls(
                graph=None,  # built from W when asked for
                W=_freeze_csr(M),
                name=name,
                params=_params_dict(params),
                groups=_canonical_groups(groups, n),
            )
        A = to_scipy_sparse_matrix(ei, None, num_nodes=n)
        return cls.from_adjacency(
            A, "metropolis" if weights is None else weights, name=name, params=params,
            groups=groups,
        )

    def reweight(self, weights: str | Callable[[nx.Graph], Any]) -> Topology:
        """The same graph with another weight scheme (a new object; ``self`` is unchanged).

        Examples
        --------
        >>> float(tf.topologies.ring(4).reweight("max_degree").W[0, 1])
        0.3333333333333333
        """
        return Topology.from_networkx(
            self.graph, weights, name=self.name, params=self.params, groups=self.groups
        )

    def replace(self, **changes: Any) -> Topology:
        """A copy with the fields ``changes`` names replaced (``dataclasses.replace``), without
        building the graph: one not built yet is left for the copy to build from its ``W``
        when asked for.

        Examples
        --------
        >>> t = tf.topologies.ring(4).replace(name="my_ring")
        >>> t.name, t.n, t.is_doubly_stochastic
        ('my_ring', 4, True)
        """
        kw: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)
                              if f.name != "graph"}
        kw["graph"] = self.__dict__["_graph"]
        kw.update(changes)
        return type(self)(**kw)

    # ------------------------------------------------------------------ conversions
    def to_networkx(self) -> nx.DiGraph:
        """A mutable copy of the graph with the mixing weights as attributes.

        The arc ``j -> i`` carries ``weight = W[i, j]``; node ``i`` carries
        ``self_weight = W[i, i]``.

        Examples
        --------
        >>> G = tf.topologies.ring(3).to_networkx()
        >>> round(G.edges[0, 1]["weight"], 4), round(G.nodes[0]["self_weight"], 4)
        (0.3333, 0.3333)
        """
        off = sp.csr_array(self.W, copy=True)
        off.setdiag(0)
        off.eliminate_zeros()
        # Column j of W.T (CSC) lists the receivers i of j: the arcs j -> i with W[i, j].
        G = nx.from_scipy_sparse_array(off.T, create_using=nx.DiGraph)
        nx.set_node_attributes(G, dict(enumerate(self.W.diagonal().tolist())), "self_weight")
        return G

    def to_pyg(self) -> Data:
        """A ``torch_geometric.data.Data`` with ``edge_index``, ``edge_weight``, ``num_nodes``.

        ``edge_index[0]`` is the sender ``j`` and ``edge_index[1]`` the receiver ``i`` of each
        nonzero ``W[i, j]`` (``flow="source_to_target"``); self-loops are included because they
        carry weight. ``edge_weight`` is float64.

        Examples
        --------
        >>> d = tf.topologies.ring(3).to_pyg()
        >>> d.num_nodes, tuple(d.edge_index.shape), d.edge_weight.dtype
        (3, (2, 9), torch.float64)
        """
        from torch_geometric.data import Data
        from torch_geometric.utils import from_scipy_sparse_matrix

        # Rows of W.T are the senders j: edge_index = [j; i], in the row order of W.
        edge_index, edge_weight = from_scipy_sparse_matrix(self.W.T.tocoo(copy=True))
        return Data(edge_index=edge_index, edge_weight=edge_weight, num_nodes=self.n)

    def to_torch(
        self, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> torch.Tensor:
        """``W`` as a sparse CSR ``torch.Tensor`` (float64 unless ``dtype`` is given).

        Examples
        --------
        >>> import torch
        >>> T = tf.topologies.ring(3).to_torch(dtype=torch.float32)
        >>> T.layout, T.dtype, tuple(T.shape)
        (torch.sparse_csr, torch.float32, (3, 3))
        """
        import torch

        dt = torch.float64 if dtype is None else dtype
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
            return torch.sparse_csr_tensor(
                torch.as_tensor(self.W.indptr.astype(np.int64)),
                torch.as_tensor(self.W.indices.astype(np.int64)),
                torch.as_tensor(self.W.data.copy(), dtype=dt),
                size=self.W.shape,
                device=device,
                check_invariants=False,  # built from a canonical scipy CSR: sorted, in range
            )

    def to_dense(self) -> np.ndarray:
        """``W`` as a dense ``(n, n)`` float64 array (a copy)."""
        return np.asarray(self.W.toarray())

    # ------------------------------------------------------------------ properties
    @property
    def n(self) -> int:
        """Number of nodes."""
        return int(self.W.shape[0])

    @property
    def is_undirected(self) -> bool:
        """True iff every arc ``j -> i`` has its reverse ``i -> j``."""
        A = self._pattern()
        return bool((A != A.T).nnz == 0)

    @property
    def is_directed(self) -> bool:
        """``not is_undirected``."""
        return not self.is_undirected

    @property
    def is_symmetric(self) -> bool:
        """True iff ``W == W.T`` (to 1e-10)."""
        D = self.W - self.W.T
        return bool(D.nnz == 0 or np.max(np.abs(D.data)) <= _ATOL)

    @property
    def is_row_stochastic(self) -> bool:
        """True iff every row of ``W`` sums to 1 (to 1e-10)."""
        return self.stochasticity in ("row", "doubly")

    @property
    def is_column_stochastic(self) -> bool:
        """True iff every column of ``W`` sums to 1 (to 1e-10)."""
        return self.stochasticity in ("column", "doubly")

    @property
    def is_doubly_stochastic(self) -> bool:
        """Row- and column-stochastic."""
        return self.stochasticity == "doubly"

    @property
    def stochasticity(self) -> str:
        """``"doubly"``, ``"row"``, ``"column"`` or ``"none"`` (sums equal to 1 within 1e-10)."""
        return stochasticity(self.W, atol=_ATOL)

    @property
    def in_degree(self) -> np.ndarray:
        """``(n,)`` int array: number of in-neighbours of each node (self-loops excluded)."""
        return np.asarray(self._pattern().sum(axis=1)).ravel().astype(np.int64)

    @property
    def out_degree(self) -> np.ndarray:
        """``(n,)`` int array: number of out-neighbours of each node (self-loops excluded)."""
        return np.asarray(self._pattern().sum(axis=0)).ravel().astype(np.int64)

    @property
    def messages_per_round(self) -> int:
        """Number of arcs, i.e. of models sent in one gossip round."""
        return int(self._pattern().nnz)

    @property
    def num_edges(self) -> int:
        """Edges of an undirected topology counted once; arcs of a directed one each once."""
        m = self.messages_per_round
        return m // 2 if self.is_undirected else m

    @property
    def edges_per_node(self) -> float:
        """Mean degree: ``2 E / n`` if undirected, mean out-degree ``arcs / n`` if directed."""
        return self.messages_per_round / self.n

    @property
    def group_index(self) -> np.ndarray:
        """``(n,)`` int array: the index of each node's group (``groups`` must be set)."""
        if self.groups is None:
            raise ValueError(f"topology {self.name!r} has no groups")
        out = np.empty(self.n, dtype=np.int64)
        for g, members in enumerate(self.groups):
            out[list(members)] = g
        return out

    def _pattern(self) -> sp.csr_array:
        # (n, n) 0/1 matrix P[i, j] = 1 iff arc j -> i (off-diagonal sparsity of W).
        return arc_pattern(self.W)

    def __repr__(self) -> str:
        kind = "undirected" if self.is_undirected else "directed"
        stoch = {
            "doubly": "doubly stochastic",
            "row": "row-stochastic",
            "column": "column-stochastic",
            "none": "not stochastic",
        }[self.stochasticity]
        extra = "" if self.groups is None else f", groups={len(self.groups)}"
        return (
            f"Topology(name={self.name!r}, n={self.n}, edges={self.num_edges}, {kind}, "
            f"{stoch}{extra}, params={dict(self.params)!r})"
        )


def _same_arcs(n: int, src: np.ndarray, dst: np.ndarray, W: sp.csr_array) -> bool:
    """Whether the arcs ``src -> dst`` are exactly the off-diagonal nonzeros ``W[dst, src]``."""
    A = sp.coo_array((np.ones(src.size), (dst, src)), shape=(n, n)).tocsr()
    A.sum_duplicates()
    A.sort_indices()
    P = arc_pattern(W)
    return bool(np.array_equal(A.indptr, P.indptr) and np.array_equal(A.indices, P.indices))


class TimeVarying:
    r"""A sequence of topologies ``t -> Topology`` on a fixed set of ``n`` nodes.

    ``at(t)`` must be a pure function of ``t`` (and of the seed the constructor captured): the
    graph of round ``t`` never depends on which rounds were asked for before, so a resumed run sees
    the same graphs as an uninterrupted one. Results are cached (a small LRU), which is safe
    because ``at`` is pure.

    Parameters
    ----------
    n : int
        Number of nodes of every graph.
    at : callable ``int -> Topology``
        The graph of round ``t``.
    name : str
        Family name.
    params : Mapping, optional
        The constructor's arguments (including the seed, for random sequences).
    period : int, optional
        If set, ``at(t) == at(t % period)``; ``at`` is then only called with ``t < period``.
    cache_size : int, default 128
        How many graphs to keep.

    Raises
    ------
    TypeError
        If ``n``, ``period`` or ``cache_size`` is not an int, ``at`` is not callable, or
        ``params`` is not a mapping or ``None``.
    ValueError
        If ``n`` or ``period`` is below 1 or ``cache_size`` below 0.

    Examples
    --------
    >>> tv = tf.TimeVarying.cycle([tf.topologies.ring(4), tf.topologies.complete(4)])
    >>> tv
    TimeVarying(name='cycle', n=4, period=2, params={'names': ['ring', 'complete']})
    >>> tv.at(3).name
    'complete'
    """

    def __init__(
        self,
        n: int,
        at: Callable[[int], Topology],
        *,
        name: str = "custom",
        params: Mapping[str, Any] | None = None,
        period: int | None = None,
        cache_size: int = 128,
    ) -> None:
        self._n = check_int(n, "n", low=1)
        if not callable(at):
            raise TypeError(f"at must be callable (t -> Topology), got {type(at).__name__}")
        self._at = at
        self._name = name
        self._params = MappingProxyType(_params_dict(params))
        self._period = None if period is None else check_int(period, "period", low=1)
        self._cache: OrderedDict[int, Topology] = OrderedDict()
        self._cache_size = check_int(cache_size, "cache_size", low=0)
        self._lock = Lock()

    # -- constructors --------------------------------------------------------------
    @classmethod
    def static(cls, topology: Topology) -> TimeVarying:
        """The constant sequence ``t -> topology`` (period 1).

        Examples
        --------
        >>> tf.TimeVarying.static(tf.topologies.ring(5)).at(10).name
        'ring'
        """
        if not isinstance(topology, Topology):
            raise TypeError(f"topology must be a Topology, got {type(topology).__name__}")
        return cls(
            topology.n,
            lambda t: topology,
            name=topology.name,
            params=topology.params,
            period=1,
        )

    @classmethod
    def cycle(cls, topologies: Sequence[Topology], *, name: str = "cycle") -> TimeVarying:
        """The periodic sequence ``t -> topologies[t % len(topologies)]``.

        Examples
        --------
        >>> tv = tf.TimeVarying.cycle([tf.topologies.ring(3), tf.topologies.star(3)])
        >>> [tv.at(t).name for t in range(3)]
        ['ring', 'star', 'ring']
        """
        tops = list(topologies)
        if not tops:
            raise ValueError("topologies must hold at least one Topology, got an empty sequence")
        for k, t in enumerate(tops):
            if not isinstance(t, Topology):
                raise TypeError(f"topologies[{k}] must be a Topology, got {type(t).__name__}")
            if t.n != tops[0].n:
                raise ValueError(
                    f"all topologies must have the same n; topologies[0] has n={tops[0].n}, "
                    f"topologies[{k}] has n={t.n}"
                )
        return cls(
            tops[0].n,
            lambda t: tops[t],
            name=name,
            params={"names": [t.name for t in tops]},
            period=len(tops),
        )

    # -- access --------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of nodes."""
        return self._n

    @property
    def name(self) -> str:
        """Family name."""
        return self._name

    @property
    def params(self) -> Mapping[str, Any]:
        """The constructor's arguments (read-only)."""
        return self._params

    @property
    def period(self) -> int | None:
        """Period of the sequence, or ``None`` if it is not periodic (e.g. random)."""
        return self._period

    @property
    def is_static(self) -> bool:
        """True for a period-1 sequence."""
        return self._period == 1

    def at(self, t: int) -> Topology:
        """The topology of round ``t`` (``t >= 0``).

        Raises
        ------
        TypeError, ValueError
            If ``t`` is not a non-negative int, or the sequence's function returns something
            that is not a ``Topology`` on ``n`` nodes.
        """
        t = check_int(t, "t", low=0)
        if self._period is not None:
            t = t % self._period
        with self._lock:
            hit = self._cache.get(t)
            if hit is not None:
                self._cache.move_to_end(t)
                return hit
        top = self._at(t)
        if not isinstance(top, Topology):
            raise TypeError(
                f"{self._name}.at({t}) must return a Topology, got {type(top).__name__}"
            )
        if top.n != self._n:
            raise ValueError(
                f"{self._name}.at({t}) returned a graph with n={top.n}, expected {self._n}"
            )
        with self._lock:
            if self._cache_size:
                self._cache[t] = top
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return top

    def __getitem__(self, t: int) -> Topology:
        return self.at(t)

    def window(self, start: int, stop: int) -> Iterator[Topology]:
        """Iterate over ``at(start), ..., at(stop - 1)``.

        Examples
        --------
        >>> tv = tf.TimeVarying.cycle([tf.topologies.ring(3), tf.topologies.star(3)])
        >>> [t.name for t in tv.window(1, 4)]
        ['star', 'ring', 'star']
        """
        start = check_int(start, "start", low=0)
        stop = check_int(stop, "stop", low=start)
        for t in range(start, stop):
            yield self.at(t)

    def __repr__(self) -> str:
        return (
            f"TimeVarying(name={self._name!r}, n={self._n}, period={self._period}, "
            f"params={dict(self._params)!r})"
        )


GraphLike: TypeAlias = Union[Topology, TimeVarying]  # noqa: UP007 (runtime alias on 3.10)


def as_time_varying(graph: GraphLike) -> TimeVarying:
    """Accept a ``Topology`` or a ``TimeVarying`` and return a ``TimeVarying``.

    Examples
    --------
    >>> tf.graph.as_time_varying(tf.topologies.ring(4)).period
    1
    """
    if isinstance(graph, TimeVarying):
        return graph
    if isinstance(graph, Topology):
        return TimeVarying.static(graph)
    raise TypeError(f"expected a Topology or a TimeVarying, got {type(graph).__name__}")
