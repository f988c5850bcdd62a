"""The checks of a graph's inputs: its parameters, its groups, its arcs, and whether its ``W``
fits in memory.

:func:`check_w_size` is what the constructors of :mod:`topofl.topologies` that build no
networkx graph call before they allocate; the others are the boundary checks of
:class:`~topofl.Topology` and :class:`~topofl.TimeVarying`.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from topofl._utils.validation import arc_pattern, check_memory

__all__ = ["W_BYTES_PER_NODE", "W_BYTES_PER_ARC", "w_bytes", "check_w_size"]

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
    >>> tf.graph.checks.check_w_size(10**10, 2 * 10**10, "ring(n=10**10)")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topofl.exceptions.InsufficientMemoryError: ring(n=10**10) needs about 2.91 TiB ...
    """
    check_memory(w_bytes(n, arcs), what)


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
    >>> from topofl.graph.checks import _params_dict
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


def _same_arcs(n: int, src: np.ndarray, dst: np.ndarray, W: sp.csr_array) -> bool:
    """Whether the arcs ``src -> dst`` are exactly the off-diagonal nonzeros ``W[dst, src]``."""
    A = sp.coo_array((np.ones(src.size), (dst, src)), shape=(n, n)).tocsr()
    A.sum_duplicates()
    A.sort_indices()
    P = arc_pattern(W)
    return bool(np.array_equal(A.indptr, P.indptr) and np.array_equal(A.indices, P.indices))
