"""Graphs and mixing matrices: a networkx graph on the nodes ``0..n-1``, a matrix in the
canonical form (float64 ``csr_array``, non-negative, finite, square), its stochasticity and
its pattern of arcs.
"""

from __future__ import annotations

from typing import Any, Literal

import networkx as nx
import numpy as np
import scipy.sparse as sp

from topofl._utils.validation.scalars import _type_name, check_choice

__all__ = ["check_graph", "check_matrix", "check_stochastic", "stochasticity", "arc_pattern",
           "StochasticKind"]

StochasticKind = Literal["row", "column", "doubly", "any"]


def check_graph(G: Any, name: str = "G") -> int:
    """Check that ``G`` is a networkx graph on the nodes ``0..n-1``; return ``n``.

    Multigraphs are refused (a mixing matrix has one weight per pair).

    Examples
    --------
    >>> import networkx as nx
    >>> from topofl._utils.validation.matrices import check_graph
    >>> check_graph(nx.path_graph(4))
    4
    >>> check_graph(nx.relabel_nodes(nx.path_graph(2), {0: "a", 1: "b"}))
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: G must have the nodes 0..n-1 (n=2); found nodes that are not, e.g. 'a' ...
    """
    if not isinstance(G, nx.Graph):
        raise TypeError(f"{name} must be a networkx Graph or DiGraph, got {_type_name(G)}")
    if G.is_multigraph():
        raise TypeError(
            f"{name} must be a simple Graph or DiGraph, got a multigraph ({_type_name(G)}); "
            "convert it with networkx.Graph(G) or networkx.DiGraph(G)"
        )
    n = G.number_of_nodes()
    expected = set(range(n))
    bad = [v for v in G.nodes if isinstance(v, bool) or v not in expected]
    if bad:
        raise ValueError(
            f"{name} must have the nodes 0..n-1 (n={n}); found nodes that are not, "
            f"e.g. {bad[0]!r} (use networkx.convert_node_labels_to_integers)"
        )
    return int(n)


def _check_real(values: Any, name: str) -> None:
    """Refuse complex values with a non-zero imaginary part (casting would drop it)."""
    arr = np.asarray(values)
    if np.iscomplexobj(arr):
        imag = np.abs(arr.imag)
        if imag.size and float(imag.max()) > 0:
            k = np.unravel_index(int(np.argmax(imag)), imag.shape)
            where = f" at {tuple(int(i) for i in k)}" if arr.ndim == 2 else ""
            raise ValueError(f"{name} must be real, found the complex entry "
                             f"{complex(arr[k])}{where} (its imaginary part would be dropped)")


def check_matrix(W: Any, name: str = "W") -> sp.csr_array:
    """Return ``W`` as a canonical float64 ``csr_array`` with non-negative finite entries.

    Accepts numpy arrays, scipy sparse arrays or matrices, and torch tensors (dense or sparse).
    Explicit zeros are removed, indices are sorted.

    Raises
    ------
    TypeError
        If ``W`` is not array-like.
    ValueError
        If ``W`` is not square, is empty, has NaN/inf or negative entries.

    Examples
    --------
    >>> from topofl._utils.validation.matrices import check_matrix
    >>> check_matrix([[0.5, 0.5], [0.5, 0.5]]).nnz
    4
    >>> check_matrix([[1.0, 0.0, 0.0]])
    Traceback (most recent call last):
    ...
    ValueError: W must be a square (n, n) matrix, got shape (1, 3)
    """
    try:
        import torch

        if isinstance(W, torch.Tensor):
            W = W.to_dense().detach().cpu()
            W = W.numpy() if W.is_complex() else W.double().numpy()
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    if sp.issparse(W):
        _check_real(W.data if hasattr(W, "data") else W, name)
        M = sp.csr_array(W.real if np.iscomplexobj(W.data) else W, dtype=np.float64)
    else:
        try:
            raw = np.asarray(W)
            if raw.dtype.kind == "O":  # lists of Python numbers with a complex among them
                raw = np.asarray(W, dtype=np.complex128)
            _check_real(raw, name)
            arr = np.asarray(raw.real if np.iscomplexobj(raw) else raw, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            if str(exc).startswith(f"{name} must be real"):  # ours, not numpy's
                raise
            raise TypeError(
                f"{name} must be a numeric (n, n) array or sparse matrix, got {_type_name(W)}"
            ) from exc
        if arr.ndim != 2:
            raise ValueError(f"{name} must be a square (n, n) matrix, got shape {arr.shape}")
        M = sp.csr_array(arr)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"{name} must be a square (n, n) matrix, got shape {M.shape}")
    if M.shape[0] == 0:
        raise ValueError(f"{name} must have at least one row, got shape {M.shape}")
    M = M.copy()
    M.sum_duplicates()
    if not np.all(np.isfinite(M.data)):
        k = int(np.flatnonzero(~np.isfinite(M.data))[0])
        row = int(np.searchsorted(M.indptr, k, side="right") - 1)
        raise ValueError(
            f"{name} must have finite entries, found {M.data[k]} at ({row}, {M.indices[k]})"
        )
    if np.any(M.data < 0):
        k = int(np.flatnonzero(M.data < 0)[0])
        row = int(np.searchsorted(M.indptr, k, side="right") - 1)
        raise ValueError(
            f"{name} must have non-negative entries, found {M.data[k]:.6g} at "
            f"({row}, {M.indices[k]})"
        )
    M.eliminate_zeros()
    M.sort_indices()
    return M


def _sums(M: sp.csr_array, axis: int) -> np.ndarray:
    return np.asarray(M.sum(axis=axis)).ravel()


def stochasticity(W: sp.csr_array, *, atol: float = 1e-10) -> str:
    """Which sums of the canonical ``W`` are 1 (to ``atol``): ``"doubly"``, ``"row"``,
    ``"column"`` or ``"none"``.

    The one test of stochasticity that :class:`~topofl.Topology`, :mod:`topofl.spectral` and
    :func:`check_stochastic` share.

    Examples
    --------
    >>> import numpy as np
    >>> from topofl._utils.validation.matrices import check_matrix, stochasticity
    >>> stochasticity(check_matrix(np.array([[0.5, 0.5], [0.2, 0.8]])))
    'row'
    >>> stochasticity(check_matrix(np.full((3, 3), 1 / 3)))
    'doubly'
    """
    r = bool(np.all(np.abs(_sums(W, 1) - 1.0) <= atol))
    c = bool(np.all(np.abs(_sums(W, 0) - 1.0) <= atol))
    return "doubly" if r and c else "row" if r else "column" if c else "none"


def arc_pattern(W: sp.csr_array, *, diagonal: bool = False) -> sp.csr_array:
    """The 0/1 float pattern of ``W``: ``P[i, j] = 1`` iff the arc ``j -> i`` (``W[i, j] > 0``).

    The diagonal is dropped, or with ``diagonal=True`` set to 1 everywhere. Canonical CSR
    (sorted indices, no explicit zeros); ``W`` is not modified.

    Examples
    --------
    >>> from topofl._utils.validation.matrices import arc_pattern, check_matrix
    >>> W = check_matrix([[0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.25, 0.75]])
    >>> arc_pattern(W).toarray()
    array([[0., 1., 0.],
           [0., 0., 0.],
           [0., 1., 0.]])
    >>> int(arc_pattern(W, diagonal=True).nnz)
    5
    """
    P = sp.csr_array(W, copy=True)
    P.eliminate_zeros()
    P.data[:] = 1.0
    P = (P - sp.diags_array(P.diagonal())).tocsr()
    if diagonal:
        P = (P + sp.eye_array(P.shape[0], format="csr")).tocsr()
    P.eliminate_zeros()
    P.sort_indices()
    return P


def check_stochastic(
    W: sp.csr_array, kind: StochasticKind, *, atol: float = 1e-10, name: str = "W"
) -> sp.csr_array:
    """Raise unless the canonical ``W`` is stochastic in the sense ``kind``.

    ``"row"``: every row sums to 1 (``x_{t+1} = W x_t`` is a weighted average at each node);
    ``"column"``: every column sums to 1 (mass is preserved, as push-sum needs);
    ``"doubly"``: both; ``"any"``: rows or columns (either kind of gossip matrix).

    The message names the first row (and, for ``"any"``, column) whose sum is off.

    Examples
    --------
    >>> import numpy as np
    >>> from topofl._utils.validation.matrices import check_matrix, check_stochastic
    >>> W = check_matrix(np.array([[0.5, 0.5], [0.2, 0.8]]))
    >>> _ = check_stochastic(W, "row")
    >>> check_stochastic(W, "column")
    Traceback (most recent call last):
    ...
    ValueError: W must be column-stochastic: column 0 sums to 0.7 (atol=1e-10)
    >>> check_stochastic(check_matrix(np.zeros((3, 3))), "any")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: W must be row- or column-stochastic: row 0 sums to 0 and column 0 sums to 0 ...
    """
    check_choice(kind, "kind", ("row", "column", "doubly", "any"))
    if kind == "any":
        if stochasticity(W, atol=atol) != "none":
            return W
        r, c = _sums(W, 1), _sums(W, 0)
        i = int(np.argmax(np.abs(r - 1.0)))
        j = int(np.argmax(np.abs(c - 1.0)))
        raise ValueError(
            f"{name} must be row- or column-stochastic: row {i} sums to {r[i]:.6g} and "
            f"column {j} sums to {c[j]:.6g} (atol={atol:g})"
        )
    for axis, what in ((1, "row"), (0, "column")):
        if kind not in (what, "doubly"):
            continue
        s = _sums(W, axis)
        bad = np.flatnonzero(np.abs(s - 1.0) > atol)
        if bad.size:
            i = int(bad[0])
            raise ValueError(
                f"{name} must be {what}-stochastic: {what} {i} sums to {s[i]:.6g} (atol={atol:g})"
            )
    return W
