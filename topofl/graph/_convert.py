"""The work behind :class:`~topofl.Topology`'s constructors and conversions: from a networkx
graph, arcs, an adjacency matrix or a PyG ``Data`` to a checked, read-only ``W`` (and back to
networkx, PyG and torch).

The orientation is the one of :mod:`topofl.graph`: ``W[i, j] > 0`` iff the arc ``j -> i``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import networkx as nx
import numpy as np
import scipy.sparse as sp

from topofl import mixing
from topofl._utils.validation import (
    arc_pattern,
    check_device,
    check_graph,
    check_graph_size,
    check_int,
    check_matrix,
)
from topofl.graph.checks import _same_arcs

if TYPE_CHECKING:
    import torch
    from torch_geometric.data import Data


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


# ---------------------------------------------------------------------------- into W
def _networkx_parts(
    G: nx.Graph, weights: str | Callable[[nx.Graph], Any], keep_graph: bool
) -> tuple[nx.DiGraph | None, sp.csr_array, str]:
    """:meth:`Topology.from_networkx`'s graph (``None`` unless ``keep_graph``: frozen, ``G``'s
    arcs in ``G``'s order), read-only ``W`` and the name of its weight scheme."""
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
    return graph, _freeze_csr(W), scheme_name


def _edges_matrix(n: int, u: np.ndarray, v: np.ndarray, weights: str) -> sp.csr_array:
    """The read-only ``W`` of the scheme ``weights`` (one of :func:`topofl.mixing.has_arc_form`)
    on the undirected graph with the edges ``{u[e], v[e]}``: :meth:`Topology._from_edges`."""
    src, dst = _undirected_arcs(n, u, v)
    W = check_matrix(mixing.from_arcs(weights, n, src, dst),
                     name="W returned by the weight scheme")
    return _freeze_csr(W)


def _adjacency_graph(A: Any) -> nx.Graph:
    """The graph of the adjacency matrix ``A`` (``A[u, v] != 0``: the arc ``u -> v``): a
    ``networkx.Graph`` when ``A`` is symmetric, else a ``networkx.DiGraph``."""
    M = check_matrix(A, name="A")
    P = arc_pattern(M)  # P[i, j] = 1 iff A[i, j] != 0, i != j
    n = M.shape[0]
    coo = P.tocoo()
    symmetric = (P != P.T).nnz == 0
    G: nx.Graph = nx.Graph() if symmetric else nx.DiGraph()
    G.add_nodes_from(range(n))
    G.add_edges_from(zip(coo.row.tolist(), coo.col.tolist()))
    return G


def _pyg_edges(data: Any, num_nodes: int | None) -> tuple[int, torch.Tensor]:
    """``(n, edge_index)`` of a PyG ``Data``, checked: ``[2, E]`` int64 on the CPU, node ids in
    ``[0, n)``, no edge twice."""
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
    from torch_geometric.utils import coalesce

    if coalesce(ei, num_nodes=n).shape[1] != ei.shape[1]:
        raise ValueError("edge_index holds an edge more than once; coalesce it first")
    return n, ei


def _pyg_weight_matrix(ei: torch.Tensor, ew: Any, n: int) -> sp.csr_array:
    """The read-only ``W`` whose ``W[i, j]`` is the ``edge_weight`` ``ew`` of the edge ``j -> i``
    of ``ei``; warns (at the caller of :meth:`Topology.from_pyg`) when nodes keep nothing."""
    import torch
    from torch_geometric.utils import to_scipy_sparse_matrix

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
            "(weights='metropolis') to have them set", UserWarning, stacklevel=3)
    return _freeze_csr(M)


def _pyg_adjacency(ei: torch.Tensor, n: int) -> Any:
    """The 0/1 adjacency (``A[j, i] = 1`` for the edge ``j -> i``) of a checked ``edge_index``."""
    from torch_geometric.utils import to_scipy_sparse_matrix

    return to_scipy_sparse_matrix(ei, None, num_nodes=n)


# ---------------------------------------------------------------------------- out of W
def _to_networkx(W: sp.csr_array) -> nx.DiGraph:
    """A mutable digraph with ``weight = W[i, j]`` on the arc ``j -> i`` and ``self_weight =
    W[i, i]`` on node ``i``."""
    off = sp.csr_array(W, copy=True)
    off.setdiag(0)
    off.eliminate_zeros()
    # Column j of W.T (CSC) lists the receivers i of j: the arcs j -> i with W[i, j].
    G = nx.from_scipy_sparse_array(off.T, create_using=nx.DiGraph)
    nx.set_node_attributes(G, dict(enumerate(W.diagonal().tolist())), "self_weight")
    return G


def _to_pyg(W: sp.csr_array) -> Data:
    """A PyG ``Data``: ``edge_index = [j; i]`` and ``edge_weight = W[i, j]`` for every nonzero,
    in the row order of ``W``."""
    from torch_geometric.data import Data
    from torch_geometric.utils import from_scipy_sparse_matrix

    # Rows of W.T are the senders j: edge_index = [j; i], in the row order of W.
    edge_index, edge_weight = from_scipy_sparse_matrix(W.T.tocoo(copy=True))
    return Data(edge_index=edge_index, edge_weight=edge_weight, num_nodes=int(W.shape[0]))


def _to_torch(
    W: sp.csr_array, device: torch.device | str | None, dtype: torch.dtype | None
) -> torch.Tensor:
    """``W`` as a sparse CSR ``torch.Tensor`` (float64 unless ``dtype`` is given).

    ``device`` is None (torch's default device) or a device that exists here (see
    :func:`~topofl._utils.validation.check_device`); ``dtype`` is None or a ``torch.dtype``.

    Raises
    ------
    TypeError
        If ``device`` is not a str, int or ``torch.device``, or ``dtype`` is not a
        ``torch.dtype``.
    ValueError
        If ``device`` names no device torch knows, one not available here, or one topofl does
        not compute on (``"meta"`` ...).
    """
    import torch

    if device is not None:
        device = check_device(device)
    if dtype is not None and not isinstance(dtype, torch.dtype):
        raise TypeError(
            f"dtype must be a torch.dtype (such as torch.float32) or None, got "
            f"{type(dtype).__name__} {dtype!r}"
        )
    dt = torch.float64 if dtype is None else dtype
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return torch.sparse_csr_tensor(
            torch.as_tensor(W.indptr.astype(np.int64)),
            torch.as_tensor(W.indices.astype(np.int64)),
            torch.as_tensor(W.data.copy(), dtype=dt),
            size=W.shape,
            device=device,
            check_invariants=False,  # built from a canonical scipy CSR: sorted, in range
        )
