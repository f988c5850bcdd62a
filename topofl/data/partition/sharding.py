"""Label-agnostic and sort-and-deal schemes: :func:`iid` and :func:`shards`."""

from __future__ import annotations

from typing import Any

import numpy as np

from topofl._utils.rng import Seed, as_generator
from topofl._utils.validation import check_int
from topofl.data.partition._apportion import _apportion_int, _class_sorted_order
from topofl.data.partition._input import _check_labels, _check_n_clients, _json_seed
from topofl.data.partition.base import Partition


def iid(labels: Any, n_clients: int, *, seed: Seed, num_classes: int | None = None) -> Partition:
    """Uniformly random split into ``n_clients`` parts whose sizes differ by at most one.

    Parameters
    ----------
    labels : array_like of int, shape (N,)
        Class labels in ``[0, num_classes)``.
    n_clients : int
        Number of clients, ``1 <= n_clients <= N``.
    seed : int or numpy.random.Generator
    num_classes : int, optional
        ``L``; defaults to ``max(labels) + 1``.

    Returns
    -------
    Partition
        Covering; every client holds ``floor(N/n)`` or ``ceil(N/n)`` samples (which clients get
        the larger size is random).

    Examples
    --------
    >>> y = tf.data.load("digits").y_train
    >>> tf.data.iid(y, 3, seed=0).sizes
    array([480, 481, 481])
    """
    y, L = _check_labels(labels, num_classes)
    n = _check_n_clients(n_clients)
    if n > y.size:
        raise ValueError(f"more clients than samples: n_clients={n} > N={y.size}")
    rng = as_generator(seed)
    sizes = _apportion_int(np.array([y.size]), np.ones((1, n), dtype=np.int64), rng)[0]
    client_of = np.empty(y.size, dtype=np.int64)
    client_of[rng.permutation(y.size)] = np.repeat(np.arange(n), sizes)
    return Partition._from_client_of(
        y, client_of, n, L, "iid", {"n_clients": n, "seed": _json_seed(seed)}
    )


def shards(
    labels: Any,
    n_clients: int,
    shards_per_client: int = 2,
    *,
    seed: Seed,
    num_classes: int | None = None,
) -> Partition:
    r"""McMahan et al.'s shards: sort by label, cut into equal shards, deal them out.

    Parameters
    ----------
    labels : array_like of int, shape (N,)
    n_clients : int
    shards_per_client : int, default 2
        ``s``; there are ``S = n_clients * s <= N`` shards.
    seed : int or numpy.random.Generator
    num_classes : int, optional

    Returns
    -------
    Partition
        Covering. The samples, shuffled within each class and sorted by label, are cut into
        ``S`` contiguous shards of ``floor(N/S)`` or ``ceil(N/S)`` samples (every sample is used;
        nothing is piled on one client); each client receives ``s`` shards chosen uniformly at
        random without replacement.

    Notes
    -----
    When every class size is a multiple of ``N/S`` every shard holds one class, so a client holds
    at most ``s`` classes (2 for the D-Cliques setting). Otherwise a shard can straddle two
    classes (more if a class is smaller than a shard) and a client holds up to ``2s`` classes, as
    the D-Cliques paper notes for MNIST. Cost ``O(N log N)``.

    References
    ----------
    McMahan et al., *Communication-Efficient Learning of Deep Networks from Decentralized Data*,
    AISTATS 2017. Bellet, Kermarrec, Lavoie, *D-Cliques*, Section IV-A.

    Examples
    --------
    >>> y = tf.data.load("digits").y_train
    >>> p = tf.data.shards(y, 5, shards_per_client=2, seed=0)
    >>> p.label_distributions
    array([[  0, 144,   1, 144,   0,   0,   0,   0,   0,   0],
           [  0,   0, 141,   3,   0,   0,   0,   0,   0, 144],
           [  0,   0,   0,   0,   0,   0,   4, 144, 140,   0],
           [143,   2,   0,   0,   0,   3, 141,   0,   0,   0],
           [  0,   0,   0,   0, 145, 143,   0,   0,   0,   0]])
    """
    y, L = _check_labels(labels, num_classes)
    n = _check_n_clients(n_clients)
    s = check_int(shards_per_client, "shards_per_client", low=1)
    S = n * s
    if S > y.size:
        raise ValueError(
            f"more shards than samples: n_clients * shards_per_client = {n} * {s} = {S} > "
            f"N={y.size}"
        )
    rng = as_generator(seed)
    order = _class_sorted_order(y, rng)
    q, r = divmod(y.size, S)
    shard_len = np.full(S, q, dtype=np.int64)
    shard_len[:r] += 1
    shard_of_pos = np.repeat(np.arange(S), shard_len)
    client_of_shard = np.empty(S, dtype=np.int64)
    client_of_shard[rng.permutation(S)] = np.repeat(np.arange(n), s)
    client_of = np.empty(y.size, dtype=np.int64)
    client_of[order] = client_of_shard[shard_of_pos]
    params = {"n_clients": n, "shards_per_client": s, "seed": _json_seed(seed)}
    return Partition._from_client_of(y, client_of, n, L, "shards", params,
                                     {"shard_size": [int(q), int(q + (r > 0))]})
