"""The :class:`Topology`: a frozen communication graph with its mixing matrix ``W``.

Its constructors check their inputs here and leave the arrays to :mod:`topofl.graph._convert`;
its networkx graph is built from ``W`` only when asked for (:class:`_LazyGraph`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from threading import Lock
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import networkx as nx
import numpy as np
import scipy.sparse as sp

from topofl._utils.validation import arc_pattern, check_matrix, stochasticity
from topofl.graph._convert import (
    _adjacency_graph,
    _edges_matrix,
    _freeze_csr,
    _graph_from_W,
    _networkx_parts,
    _pyg_adjacency,
    _pyg_edges,
    _pyg_weight_matrix,
    _to_networkx,
    _to_pyg,
    _to_torch,
)
from topofl.graph.checks import _canonical_groups, _params_dict

if TYPE_CHECKING:
    import torch
    from torch_geometric.data import Data

__all__ = ["Topology"]

_ATOL = 1e-10


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
        graph, W, scheme_name = _networkx_parts(G, weights, keep_graph)
        p = _params_dict(params)
        return cls(
            graph=graph,
            W=W,
            name=name,
            params=p,
            groups=_canonical_groups(groups, W.shape[0]),
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
        return cls(graph=None, W=_edges_matrix(n, u, v, weights), name=name,
                   params=dict(params), weights=weights)

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
        return cls.from_networkx(_adjacency_graph(A), weights, keep_graph=False, name=name,
                                 params=params, groups=groups)

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
        n, ei = _pyg_edges(data, num_nodes)
        ew = getattr(data, "edge_weight", None) if weights is None else None
        if ew is not None:
            return cls(
                graph=None,  # built from W when asked for
                W=_pyg_weight_matrix(ei, ew, n),
                name=name,
                params=_params_dict(params),
                groups=_canonical_groups(groups, n),
            )
        return cls.from_adjacency(
            _pyg_adjacency(ei, n), "metropolis" if weights is None else weights, name=name,
            params=params, groups=groups,
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
        return _to_networkx(self.W)

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
        return _to_pyg(self.W)

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
        return _to_torch(self.W, device, dtype)

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


