"""Integer apportionment (largest remainder), Dirichlet draws and dealing samples to clients."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from topofl.data.partition._input import FloatArray, IntArray


def stable_order(keys: IntArray, bound: int) -> IntArray:
    """``np.argsort(keys, kind="stable")`` for integers in ``[0, bound)``, in linear time: a
    least-significant-digit radix sort over 16-bit digits (NumPy's stable sort of ``uint16``
    is a radix sort; its sort of wider integers is a merge sort). The same permutation.

    Examples
    --------
    >>> keys = np.array([70000, 3, 70000, 0, 3])
    >>> stable_order(keys, 70001).tolist(), np.argsort(keys, kind="stable").tolist()
    ([3, 1, 4, 0, 2], [3, 1, 4, 0, 2])
    """
    keys = np.asarray(keys)
    order: IntArray = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
    shift = 16
    while (bound - 1) >> shift > 0:
        digit = ((keys[order] >> shift) & 0xFFFF).astype(np.uint16)
        order = order[np.argsort(digit, kind="stable")]
        shift += 16
    return order


def grouped_lexsort(keys: tuple[npt.NDArray[Any], ...], sizes: IntArray,
                    pad: tuple[Any, ...]) -> IntArray:
    """``np.lexsort((*keys, owner))`` where ``owner = np.repeat(np.arange(n), sizes)`` (the
    elements already grouped by client, in order): each client's few elements sorted apart,
    in rows of ``max(sizes)`` padded with ``pad`` (one value a key, above every key's values,
    so that padding sorts last), where that padding costs at most 2x the elements; else the
    global lexsort. The same permutation (both sorts are stable).

    Examples
    --------
    >>> label, noise = np.array([1, 0, 0, 2, 1]), np.array([0.5, 0.9, 0.1, 0.3, 0.2])
    >>> sizes = np.array([3, 2])
    >>> grouped_lexsort((noise, label), sizes, (2.0, 3)).tolist()
    [2, 1, 0, 4, 3]
    >>> np.lexsort((noise, label, np.repeat(np.arange(2), sizes))).tolist()
    [2, 1, 0, 4, 3]
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    n, total = sizes.size, int(sizes.sum())
    width = int(sizes.max()) if n else 0
    if n == 0 or total == 0 or n * width > 2 * total:
        owner = np.repeat(np.arange(n), sizes)
        out: IntArray = np.lexsort((*keys, owner)) if total else np.zeros(0, np.int64)
        return out
    filled = np.arange(width)[None, :] < sizes[:, None]  # [n, width]: an element, not padding
    rows = []
    for key, value in zip(keys, pad, strict=True):
        row = np.full((n, width), value, dtype=np.result_type(key, np.asarray(value)))
        row[filled] = key
        rows.append(row)
    within = np.lexsort(tuple(rows), axis=-1)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    out = (starts[:, None] + within)[filled]
    return out


def sort_within_groups(values: IntArray, sizes: IntArray) -> IntArray:
    """``values`` (distinct non-negative integers, grouped: ``sizes[0]`` of the first group,
    then the next, ...) with each group sorted ascending, the groups kept in order: in padded
    rows of ``max(sizes)`` where that padding costs at most 2x the values, else by one global
    lexsort by (group, value). The same array either way.

    Examples
    --------
    >>> sort_within_groups(np.array([7, 2, 9, 5, 0, 4]), np.array([3, 0, 2, 1])).tolist()
    [2, 7, 9, 0, 5, 4]
    """
    values = np.asarray(values, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    n, total = sizes.size, int(sizes.sum())
    if total != values.size:
        raise ValueError(f"sizes sum to {total}, but there are {values.size} values")
    width = int(sizes.max()) if n else 0
    if total == 0:
        return values.copy()
    if n * width > 2 * total:
        owner = np.repeat(np.arange(n), sizes)
        out: IntArray = values[np.lexsort((values, owner))]
        return out
    filled = np.arange(width)[None, :] < sizes[:, None]  # [n, width]: a value, not padding
    rows = np.full((n, width), np.iinfo(np.int64).max, dtype=np.int64)
    rows[filled] = values
    rows.sort(axis=1)  # the padding sorts last
    out = rows[filled]
    return out


#: Rows at least this wide take :func:`_top_k_row`'s selection (linear in the row) instead of
#: a sort of the whole row (the same mask).
TOP_K_SELECT_WIDTH = 512


def _top_k_per_row(
    keys: FloatArray, k: IntArray, rng: np.random.Generator
) -> npt.NDArray[np.bool_]:
    """Boolean mask of the ``k[g]`` largest ``keys[g, :]`` of every row; ties broken at random.

    The order is ``np.lexsort((rng.random((G, K)), -keys), axis=-1)`` (larger key first, then
    the smaller random draw, then the lower index); rows of ``TOP_K_SELECT_WIDTH`` entries or
    more select the same entries in linear time (:func:`_top_k_row`) instead of sorting.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> _top_k_per_row(np.array([[0.5, 0.9, 0.5, 0.1]]), np.array([2]), rng).tolist()
    [[False, True, True, False]]
    """
    G, K = keys.shape
    if K == 0:
        return np.zeros((G, 0), dtype=bool)
    draws = rng.random((G, K))
    if K >= TOP_K_SELECT_WIDTH:
        mask = np.zeros((G, K), dtype=bool)
        for g in range(G):
            mask[g] = _top_k_row(keys[g], int(k[g]), draws[g])
        return mask
    order = np.lexsort((draws, -keys), axis=-1)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(K), (G, K)), axis=-1)
    result: npt.NDArray[np.bool_] = rank < k[:, None]
    return result


def _top_k_row(key: FloatArray, k: int, draw: FloatArray) -> npt.NDArray[np.bool_]:
    """The first ``k`` entries of one row in the order (``key`` descending, ``draw`` ascending,
    index ascending), by selection: the ``k``-th largest key ``t`` (``np.partition``), every
    entry above it, and among the entries equal to ``t`` the ones of the smallest draws (equal
    draws by index). Linear in the row, the same mask as a stable sort of it.

    Examples
    --------
    >>> key, draw = np.array([1.0, 3.0, 1.0, 1.0]), np.array([0.7, 0.5, 0.2, 0.7])
    >>> _top_k_row(key, 3, draw).tolist()  # 3.0, then the two ties of the smaller draws
    [True, True, True, False]
    """
    K = key.size
    if k <= 0:
        return np.zeros(K, dtype=bool)
    if k >= K:
        return np.ones(K, dtype=bool)
    t = np.partition(key, K - k)[K - k]  # the k-th largest key
    out: npt.NDArray[np.bool_] = np.greater(key, t)
    need = k - int(np.count_nonzero(out))
    tie = np.flatnonzero(key == t)
    if tie.size > need:
        d = draw[tie]
        cut = np.partition(d, need - 1)[need - 1]  # the need-th smallest draw of the ties
        below = d < cut
        at = np.flatnonzero(d == cut)[:need - int(np.count_nonzero(below))]
        below[at] = True
        tie = tie[below]
    out[tie] = True
    return out


def _apportion_int(totals: IntArray, weights: IntArray, rng: np.random.Generator) -> IntArray:
    """Largest-remainder apportionment with integer weights, in exact integer arithmetic.

    ``counts[g]`` sums to ``totals[g]`` and ``|counts[g, k] - totals[g] w[g, k] / sum(w[g])| < 1``;
    in particular ``counts <= w`` wherever ``totals <= sum(w)``. Rows with zero total weight must
    have a zero total.
    """
    S = weights.sum(axis=1)
    S_safe = np.where(S == 0, 1, S)
    num = totals[:, None] * weights
    base = num // S_safe[:, None]
    rem = (num % S_safe[:, None]).astype(np.float64)
    k = totals - base.sum(axis=1)
    out: IntArray = base + _top_k_per_row(rem, k, rng)
    return out


def _apportion_capped(
    totals: IntArray, weights: IntArray, caps: IntArray, rng: np.random.Generator
) -> IntArray:
    """Largest-remainder apportionment (integer weights) that never exceeds ``caps``.

    Seats a capped entry cannot take go to the next largest remainders of the row; requires
    ``totals <= caps.sum(axis=1)``. At most ``K`` rounds of one vectorised pass.
    """
    S = weights.sum(axis=1)
    S_safe = np.where(S == 0, 1, S)
    num = totals[:, None] * weights
    counts = np.minimum(num // S_safe[:, None], caps)
    rem = (num - counts * S_safe[:, None]).astype(np.float64) / S_safe[:, None]
    k = totals - counts.sum(axis=1)
    while np.any(k > 0):
        eligible = counts < caps
        give = np.minimum(k, eligible.sum(axis=1))
        if np.any(give[k > 0] == 0):  # pragma: no cover - guarded by the callers
            raise RuntimeError("apportionment: totals exceed the caps")
        seats = _top_k_per_row(np.where(eligible, rem, -np.inf), give, rng)
        counts = counts + seats
        rem = rem - seats
        k = k - give
    out: IntArray = counts
    return out


def _apportion_float(totals: IntArray, probs: FloatArray, rng: np.random.Generator) -> IntArray:
    """Largest-remainder apportionment of ``totals[g]`` in the proportions ``probs[g]``."""
    q = totals[:, None] * probs
    base = np.floor(q).astype(np.int64)
    k = totals - base.sum(axis=1)
    rem = np.where(probs > 0, q - base, -1.0)  # zero-probability entries never get a remainder seat
    out: IntArray = base + _top_k_per_row(rem, k, rng)
    return out


def _log_gamma(alpha: float, shape: tuple[int, ...], rng: np.random.Generator) -> FloatArray:
    """``log G`` with ``G ~ Gamma(alpha, 1)``, without underflow for tiny ``alpha``.

    Uses ``G_a = G_{a+1} U^{1/a}`` (Marsaglia & Tsang), i.e. ``log G_a = log G_{a+1} + log(U)/a``,
    which stays finite where ``G_a`` itself underflows to 0 for ``alpha`` around 0.01.
    """
    g = rng.standard_gamma(alpha + 1.0, size=shape)
    u = 1.0 - rng.random(shape)  # in (0, 1]
    out: FloatArray = np.log(g) + np.log(u) / alpha
    return out


def _dirichlet_rows(
    alpha: float, mask: npt.NDArray[np.bool_], rng: np.random.Generator
) -> FloatArray:
    """One ``Dir(alpha)`` vector per row over the entries where ``mask`` holds (0 elsewhere)."""
    lg = np.where(mask, _log_gamma(alpha, mask.shape, rng), -np.inf)
    mx = lg.max(axis=1, keepdims=True)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    e = np.exp(lg - mx)
    s = e.sum(axis=1, keepdims=True)
    out: FloatArray = e / np.where(s == 0, 1.0, s)
    return out


def _class_sorted_order(labels: IntArray, rng: np.random.Generator) -> IntArray:
    """A random permutation of the samples, then stably sorted by label."""
    perm = rng.permutation(labels.size)
    shuffled = labels[perm]
    out: IntArray = perm[stable_order(shuffled, int(shuffled.max()) + 1 if shuffled.size else 1)]
    return out


def _deal(labels: IntArray, counts: IntArray, rng: np.random.Generator) -> IntArray:
    """``client_of`` giving ``counts[c, i]`` random samples of class ``c`` to client ``i``.

    Samples of class ``c`` beyond ``counts[c].sum()`` are left unassigned (``-1``).
    """
    L, n = counts.shape
    order = _class_sorted_order(labels, rng)
    per_class = np.bincount(labels, minlength=L)
    start = np.concatenate(([0], np.cumsum(per_class)[:-1]))
    sorted_labels = labels[order]
    rank = np.arange(labels.size) - start[sorted_labels]
    take = rank < counts.sum(axis=1)[sorted_labels]
    client_of = np.full(labels.size, -1, dtype=np.int64)
    client_of[order[take]] = np.repeat(np.tile(np.arange(n), L), counts.ravel())
    return client_of


def _assign_classes(
    n: int, classes: IntArray, c: int, rng: np.random.Generator
) -> npt.NDArray[np.bool_]:
    """``holds[k, i]``: client ``i`` holds ``classes[k]``; ``c`` distinct classes per client.

    Clients pick, one after the other, the ``c`` least used classes (ties at random), so that
    class usage never differs by more than one: with ``n c >= len(classes)`` every class is used.
    """
    K = classes.size
    holds = np.zeros((K, n), dtype=bool)
    usage = np.zeros(K, dtype=np.float64)
    noise = rng.random((n, K))
    for i in range(n):
        chosen = np.argpartition(usage + noise[i], c - 1)[:c] if c < K else np.arange(K)
        holds[chosen, i] = True
        usage[chosen] += 1.0
    return holds
