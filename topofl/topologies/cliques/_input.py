"""Shared constants and input checks of the D-Cliques constructions."""

from __future__ import annotations

import hashlib
import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np

from topofl._utils.rng import Seed
from topofl._utils.validation import check_int

#: The inter-clique topologies of Sec. III-C, in the order of increasing number of edges.
INTER_CLIQUE: tuple[str, ...] = (
    "ring",
    "fractal",
    "small_world_single",
    "small_world",
    "fully_connected",
)

Cliques = tuple[tuple[int, ...], ...]

# A swap must lower the summed skew of the two cliques by more than this to count: swapping two
# nodes with the same distribution changes the skew by rounding residue only.
_SWAP_TOL = 1e-12


def _label_matrix(label_distributions: Any, name: str = "label_distributions") -> np.ndarray:
    """Return the input as a new ``(n, L)`` float64 array after checking it (not normalised)."""
    try:
        import torch

        if isinstance(label_distributions, torch.Tensor):
            label_distributions = label_distributions.detach().cpu().double().numpy()
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    try:
        arr = np.array(label_distributions, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name} must be a rectangular numeric (n, L) array of per-node class counts or "
            f"proportions, got {type(label_distributions).__name__} ({exc})"
        ) from exc
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(
            f"{name} must be an (n, L) array (one row of class counts or proportions per node, "
            f"n >= 1, L >= 1), got shape {arr.shape}"
        )
    bad = ~np.isfinite(arr)
    if bad.any():
        i, y = (int(v) for v in np.argwhere(bad)[0])
        raise ValueError(f"{name} must be finite, found {arr[i, y]} at node {i}, class {y}")
    neg = arr < 0
    if neg.any():
        i, y = (int(v) for v in np.argwhere(neg)[0])
        raise ValueError(
            f"{name} must be non-negative (class counts or proportions), found {arr[i, y]:g} "
            f"at node {i}, class {y}"
        )
    sums = arr.sum(axis=1)
    zero = np.flatnonzero(sums <= 0)
    if zero.size:
        raise ValueError(
            f"{name} has a row of zeros at node {int(zero[0])}: every node needs a label "
            "distribution with a positive sum"
        )
    return arr


def _normalised(arr: np.ndarray) -> np.ndarray:
    out: np.ndarray = arr / arr.sum(axis=1, keepdims=True)
    return out


def _check_clique_size(clique_size: Any, n: int) -> int:
    if isinstance(clique_size, bool) or not isinstance(clique_size, numbers.Integral):
        raise TypeError(
            f"clique_size must be an int, got {type(clique_size).__name__} {clique_size!r}"
        )
    if n < 2:
        raise ValueError(f"D-Cliques needs at least 2 nodes (a clique has >= 2), got n={n}")
    m = int(clique_size)
    if not 2 <= m <= n:
        raise ValueError(f"clique_size must be in [2, n]=[2, {n}], got {m}")
    return m


def _clique_sizes(n: int, clique_size: int) -> list[int]:
    k = -(-n // clique_size)
    q, r = divmod(n, k)
    return [q + 1] * r + [q] * (k - r)


def _members(members: Any, n: int, name: str) -> np.ndarray:
    if isinstance(members, (str, bytes)) or not isinstance(members, Iterable):
        raise TypeError(f"{name} must be an iterable of node ids, got {type(members).__name__}")
    out: list[int] = []
    for v in members:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{name} must hold int node ids, found {type(v).__name__} {v!r}")
        if not 0 <= int(v) < n:
            raise ValueError(f"{name} must hold node ids in [0, {n - 1}], found {int(v)}")
        out.append(int(v))
    if not out:
        raise ValueError(f"{name} is empty; the skew of a set needs at least one node")
    arr = np.asarray(out, dtype=np.int64)
    if np.unique(arr).size != arr.size:
        raise ValueError(f"{name} lists a node twice: {out}")
    return arr


def _partition(cliques: Any) -> tuple[list[np.ndarray], int]:
    """Check that ``cliques`` partitions ``0..n-1``; return the parts (sorted) and ``n``."""
    if isinstance(cliques, (str, bytes)) or not isinstance(cliques, Iterable):
        raise TypeError(
            f"cliques must be an iterable of iterables of node ids, got {type(cliques).__name__}"
        )
    parts: list[list[int]] = []
    for k, c in enumerate(cliques):
        if isinstance(c, (str, bytes)) or not isinstance(c, Iterable):
            raise TypeError(f"cliques[{k}] must be an iterable of node ids, got {type(c).__name__}")
        part: list[int] = []
        for v in c:
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or int(v) < 0:
                raise ValueError(f"cliques[{k}] must hold non-negative int node ids, found {v!r}")
            part.append(int(v))
        if not part:
            raise ValueError(f"cliques[{k}] is empty; every clique needs at least one node")
        parts.append(part)
    if not parts:
        raise ValueError("cliques must hold at least one clique, got none")
    n = sum(len(p) for p in parts)
    seen = np.zeros(n, dtype=bool)
    for k, part in enumerate(parts):
        for v in part:
            if v >= n:
                raise ValueError(
                    f"cliques must partition the nodes 0..n-1 (n={n}, the number of ids given); "
                    f"cliques[{k}] holds {v}"
                )
            if seen[v]:
                raise ValueError(f"cliques must be disjoint: node {v} appears twice")
            seen[v] = True
    return [np.asarray(sorted(p), dtype=np.int64) for p in parts], n


def _max_removable(size: int) -> int:
    # A connected graph on s nodes keeps at least s - 1 of the s(s-1)/2 edges of the clique.
    return (size - 1) * (size - 2) // 2


def _check_removal(remove_intra_edges: Any, sizes: Iterable[int]) -> int:
    k = check_int(remove_intra_edges, "remove_intra_edges", low=0)
    if k == 0:
        return 0
    s = min(sizes)
    if k > _max_removable(s):
        raise ValueError(
            f"remove_intra_edges={k} is too large: the smallest clique has {s} nodes and "
            f"{s * (s - 1) // 2} edges, and removing more than (s-1)(s-2)/2 = {_max_removable(s)} "
            "of them always disconnects it"
        )
    return k


def _seed_param(seed: Seed) -> int | None:
    return int(seed) if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) else None


def _fingerprint(arr: np.ndarray) -> str:
    h = hashlib.sha1(np.ascontiguousarray(arr).tobytes())
    h.update(repr(arr.shape).encode())
    return h.hexdigest()[:12]
