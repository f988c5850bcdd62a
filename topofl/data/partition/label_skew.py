"""Label-skew schemes: :func:`dirichlet`, :func:`pathological`, :func:`dpfl_pathological`."""

from __future__ import annotations

from typing import Any

import numpy as np

from topofl._utils.rng import Seed, as_generator
from topofl._utils.validation import check_int, check_real
from topofl.data.partition._apportion import (
    _apportion_float,
    _apportion_int,
    _assign_classes,
    _deal,
    _dirichlet_rows,
)
from topofl.data.partition._input import (
    IntArray,
    _check_cells,
    _check_labels,
    _check_n_clients,
    _json_seed,
)
from topofl.data.partition.base import Partition


def dirichlet(
    labels: Any,
    n_clients: int,
    alpha: float,
    *,
    min_size: int = 1,
    seed: Seed,
    num_classes: int | None = None,
) -> Partition:
    r"""Split every class over the clients in ``Dir(alpha)`` proportions.

    Parameters
    ----------
    labels : array_like of int, shape (N,)
    n_clients : int
    alpha : float
        Concentration ``> 0``; small values give very skewed clients (``0.1`` and ``0.3`` in
        DFedPGP, ``0.1`` in DPFL).
    min_size : int, default 1
        Every client ends with at least ``min_size`` samples; ``0`` allows empty clients.
        Requires ``n_clients * min_size <= N``.
    seed : int or numpy.random.Generator
    num_classes : int, optional

    Returns
    -------
    Partition
        Covering. ``info["moved"]`` counts the samples moved by the ``min_size`` repair and
        ``info["topped_up"]`` the clients that received them.

    Raises
    ------
    ValueError
        If ``alpha <= 0`` or ``n_clients * min_size > N`` (then no assignment can meet
        ``min_size``; the message says so instead of retrying).
    topofl.exceptions.InsufficientMemoryError
        A ``ValueError``, before anything is drawn, if the ``(L, n_clients)`` tables of the
        split (about 40 bytes a cell) cannot fit in the memory available (possible with
        ``min_size=0``, which lets ``n_clients`` exceed ``N``); the message names the estimate
        and the largest ``n_clients`` that fits.

    Notes
    -----
    1. For every class ``c`` draw ``q_c ~ Dir(alpha 1_n)`` (computed in log space, so that even
       ``alpha = 0.01`` never gives ``0/0``) and give client ``i`` the largest-remainder share of
       ``q_{c,i} N_c`` of the class's samples, chosen at random.
    2. Clients left with ``s_i < min_size`` samples need ``d_i = min_size - s_i`` more. They get
       them in one pass, never by redrawing: the largest clients are lowered to a common level
       ``h >= min_size`` (water-filling: the largest ``h`` with ``\sum_j (s_j - h)^+ >= \sum_i
       d_i``; ties at the level broken at random), the samples each donor gives up are chosen
       uniformly among its own, then pooled, sorted by label and dealt in contiguous blocks to the
       deficient clients in random order, so that a topped-up client receives as few distinct
       classes as possible. Donors keep at least ``h`` samples, so nobody drops below
       ``min_size``.

    The whole call costs ``O(L n log n + N log N)``: 50,000 labels over 1000 clients take a few
    milliseconds for any ``alpha``.

    References
    ----------
    Hsu, Qi, Brown, *Measuring the Effects of Non-Identical Data Distribution for Federated
    Visual Classification*, 2019. Liu et al., *DFedPGP*, Section 5.1.

    Examples
    --------
    >>> y = tf.data.load("digits").y_train
    >>> p = tf.data.dirichlet(y, 100, alpha=0.1, min_size=2, seed=0)
    >>> int(p.sizes.min()), p.info["topped_up"], p.info["moved"]
    (2, 9, 15)
    """
    y, L = _check_labels(labels, num_classes)
    n = _check_n_clients(n_clients)
    a = check_real(alpha, "alpha", low=0.0, low_open=True)
    ms = check_int(min_size, "min_size", low=0)
    if n * ms > y.size:
        raise ValueError(
            f"min_size cannot be met: n_clients * min_size = {n} * {ms} = {n * ms} > N={y.size} "
            "samples; lower min_size or n_clients"
        )
    rng = as_generator(seed)
    _check_cells(L, n, "dirichlet")  # before the tables: with min_size=0, n has no bound
    q = _dirichlet_rows(a, np.ones((L, n), dtype=bool), rng)
    Nc = np.bincount(y, minlength=L).astype(np.int64)
    counts = _apportion_float(Nc, q, rng)
    client_of = _deal(y, counts, rng)
    moved, topped = _top_up(y, client_of, n, ms, rng)
    params = {"n_clients": n, "alpha": a, "min_size": ms, "seed": _json_seed(seed)}
    return Partition._from_client_of(y, client_of, n, L, "dirichlet", params,
                                     {"moved": moved, "topped_up": topped})


def _top_up(
    y: IntArray, client_of: IntArray, n: int, min_size: int, rng: np.random.Generator
) -> tuple[int, int]:
    """Water-filling repair so that every client holds ``>= min_size`` samples (in place)."""
    s = np.bincount(client_of[client_of >= 0], minlength=n).astype(np.int64)
    need = np.maximum(min_size - s, 0)
    D = int(need.sum())
    if D == 0:
        return 0, 0

    def excess(h: int) -> int:
        return int(np.maximum(s - h, 0).sum())

    lo, hi = min_size, int(s.max())  # excess(lo) >= D (checked by caller), excess(hi) = 0 < D
    while hi - lo > 1:  # largest h with excess(h) >= D
        mid = (lo + hi) // 2
        if excess(mid) >= D:
            lo = mid
        else:
            hi = mid
    h = lo
    give = np.maximum(s - (h + 1), 0)
    extra = D - int(give.sum())
    at_level = np.flatnonzero(s >= h + 1)
    give[rng.choice(at_level, size=extra, replace=False)] += 1
    # Each donor gives a uniformly random subset of its samples.
    owned = np.flatnonzero(client_of >= 0)
    order = owned[np.lexsort((rng.random(owned.size), client_of[owned]))]
    owner = client_of[order]
    start = np.concatenate(([0], np.cumsum(s)[:-1]))
    rank = np.arange(order.size) - start[owner]
    donated = order[rank < give[owner]]
    donated = donated[np.lexsort((rng.random(donated.size), y[donated]))]
    receivers = rng.permutation(np.flatnonzero(need > 0))
    client_of[donated] = np.repeat(receivers, need[receivers])
    return D, int(receivers.size)


def _check_pathological(
    labels: Any, num_classes: int | None, n_clients: Any, classes_per_client: Any
) -> tuple[IntArray, int, int, int, IntArray, IntArray]:
    """The checks of the pathological schemes: labels ``y``, classes ``L``, clients ``n``,
    classes per client ``c``, the class sizes ``Nc`` and the classes ``present``."""
    y, L = _check_labels(labels, num_classes)
    n = _check_n_clients(n_clients)
    c = check_int(classes_per_client, "classes_per_client", low=1)
    Nc = np.bincount(y, minlength=L).astype(np.int64)
    present = np.flatnonzero(Nc > 0)
    if c > present.size:
        raise ValueError(
            f"classes_per_client must be <= the number of classes present ({present.size}), got {c}"
        )
    if n * c < present.size:
        raise ValueError(
            f"every class must be used: n_clients * classes_per_client = {n} * {c} = {n * c} < "
            f"{present.size} classes present; raise n_clients or classes_per_client"
        )
    if n * c > y.size:
        # Every (client, class) holding needs a sample of its own: refuse before allocating.
        raise ValueError(
            f"n_clients * classes_per_client = {n} * {c} = {n * c} holdings need at least one "
            f"sample each, but there are only {y.size} samples; use fewer clients or classes"
        )
    return y, L, n, c, Nc, present


def _check_holders(Nc: IntArray, classes: IntArray, holders: IntArray) -> None:
    short = np.flatnonzero(Nc[classes] < holders)
    if short.size:
        k = int(short[0])
        raise ValueError(
            f"class {int(classes[k])} has {int(Nc[classes[k]])} samples but {int(holders[k])} "
            "clients hold it (each needs at least one); use fewer clients or classes_per_client"
        )


def pathological(
    labels: Any,
    n_clients: int,
    classes_per_client: int,
    *,
    seed: Seed,
    num_classes: int | None = None,
) -> Partition:
    r"""Every client holds ``c`` classes; every class is split evenly over its holders.

    Parameters
    ----------
    labels : array_like of int, shape (N,)
    n_clients : int
    classes_per_client : int
        ``c``, at most the number of classes present; ``n_clients * c`` must reach it so that
        every class is used.
    seed : int or numpy.random.Generator
    num_classes : int, optional

    Returns
    -------
    Partition
        Covering; client ``i`` holds exactly ``c`` classes, each with at least one sample.

    Notes
    -----
    Clients draw their classes one after the other, each taking the ``c`` least used classes
    (ties at random). So classes are used ``floor(nc/K)`` or ``ceil(nc/K)`` times (``K`` the
    classes present) and every class is used. The samples of class ``k`` are shuffled and cut
    into as many parts as it has holders, with sizes that differ by at most one. Requires every
    class to have at least as many samples as holders. Cost ``O(n K + N log N)``.

    References
    ----------
    McMahan et al. 2017; the ``Pathological(c)`` setting of Liu et al., *DFedPGP*, Section 5.1.

    Examples
    --------
    >>> y = tf.data.load("digits").y_train
    >>> p = tf.data.pathological(y, 5, classes_per_client=2, seed=0)
    >>> p.label_distributions
    array([[  0,   0, 142, 147,   0,   0,   0,   0,   0,   0],
           [  0, 146,   0,   0,   0, 146,   0,   0,   0,   0],
           [143,   0,   0,   0, 145,   0,   0,   0,   0,   0],
           [  0,   0,   0,   0,   0,   0, 145,   0,   0, 144],
           [  0,   0,   0,   0,   0,   0,   0, 144, 140,   0]])
    """
    y, L, n, c, Nc, present = _check_pathological(labels, num_classes, n_clients,
                                                  classes_per_client)
    rng = as_generator(seed)
    _check_cells(L, n, "pathological")
    holds = _assign_classes(n, present, c, rng)
    _check_holders(Nc, present, holds.sum(axis=1))
    counts = np.zeros((L, n), dtype=np.int64)
    counts[present] = _apportion_int(Nc[present], holds.astype(np.int64), rng)
    client_of = _deal(y, counts, rng)
    params = {"n_clients": n, "classes_per_client": c, "seed": _json_seed(seed)}
    return Partition._from_client_of(y, client_of, n, L, "pathological", params)


def dpfl_pathological(
    labels: Any,
    n_clients: int,
    classes_per_client: int = 3,
    alpha: float = 0.5,
    *,
    seed: Seed,
    num_classes: int | None = None,
) -> Partition:
    r"""DPFL's Patho(c) + Dir(alpha): ``c`` classes per client, each class split by ``Dir(alpha)``.

    Parameters
    ----------
    labels : array_like of int, shape (N,)
    n_clients : int
    classes_per_client : int, default 3
    alpha : float, default 0.5
        Concentration of the split of a class over its holders.
    seed : int or numpy.random.Generator
    num_classes : int, optional

    Returns
    -------
    Partition
        Covering; every client holds exactly ``c`` classes, with at least one sample of each.

    Notes
    -----
    The classes are assigned as in :func:`pathological`. Then, for every class ``k`` held by
    ``h_k`` clients, each holder first gets one sample and the other ``N_k - h_k`` samples are
    apportioned in proportions ``q_k ~ Dir(alpha 1_{h_k})`` (largest remainder). "After assigning to
    each client which classes it will get, we distribute the class data points among clients
    that share the same class, following a Dir(0.5) distribution" (DPFL, Appendix F.5.1).

    References
    ----------
    Kharrat, Canini, Horvath, *Decentralized Personalized Federated Learning*, Appendix F.5.1.

    Examples
    --------
    >>> y = tf.data.load("digits").y_train
    >>> p = tf.data.dpfl_pathological(y, 4, seed=0)
    >>> p.label_distributions
    array([[  0, 146,   7, 147,   0,   0,   0,   0,   0,   0],
           [  0,   0,   0,   0,   0,  17,   0,   0, 140, 144],
           [143,   0,   0,   0, 145,   0,   0, 144,   0,   0],
           [  0,   0, 135,   0,   0, 129, 145,   0,   0,   0]])
    """
    y, L, n, c, Nc, present = _check_pathological(labels, num_classes, n_clients,
                                                  classes_per_client)
    a = check_real(alpha, "alpha", low=0.0, low_open=True)
    rng = as_generator(seed)
    _check_cells(L, n, "dpfl_pathological")
    holds = _assign_classes(n, present, c, rng)
    h = holds.sum(axis=1).astype(np.int64)
    _check_holders(Nc, present, h)
    q = _dirichlet_rows(a, holds, rng)
    counts = np.zeros((L, n), dtype=np.int64)
    counts[present] = holds.astype(np.int64) + _apportion_float(Nc[present] - h, q, rng)
    client_of = _deal(y, counts, rng)
    params = {"n_clients": n, "classes_per_client": c, "alpha": a, "seed": _json_seed(seed)}
    return Partition._from_client_of(y, client_of, n, L, "dpfl_pathological", params)
