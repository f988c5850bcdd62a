"""One client per pre-existing group: :func:`natural`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from topofl._utils.rng import Seed, as_generator
from topofl._utils.validation import check_int
from topofl.data.partition._input import _as_int_array, _check_labels, _json_seed
from topofl.data.partition.base import Partition


def natural(
    labels: Any,
    groups: Any,
    n_clients: int | None = None,
    *,
    seed: Seed | None = None,
    group_ids: Sequence[int] | None = None,
    num_classes: int | None = None,
) -> Partition:
    """One client per group (e.g. per FEMNIST writer): the natural non-IID split.

    Parameters
    ----------
    labels : array_like of int, shape (N,)
    groups : array_like of int, shape (N,)
        Group id of every sample (e.g. :attr:`Dataset.groups_train`).
    n_clients : int, optional
        Use this many groups, chosen uniformly at random (needs ``seed``); default all groups.
    seed : int or numpy.random.Generator, optional
        Required when ``n_clients`` is given and smaller than the number of groups.
    group_ids : sequence of int, optional
        Explicit groups, client ``i`` being ``group_ids[i]`` (groups absent from ``groups`` give
        empty clients). Overrides ``n_clients``; use it to give the test set the clients of a
        training partition: ``natural(y_test, g_test, group_ids=p.params["group_ids"])``.
    num_classes : int, optional

    Returns
    -------
    Partition
        ``params["group_ids"]`` lists the group of every client (ascending unless given).

    Examples
    --------
    >>> p = tf.data.natural([0, 1, 1, 2, 0], groups=[7, 7, 9, 9, 9])
    >>> p.indices, p.params["group_ids"]
    ((array([0, 1]), array([2, 3, 4])), [7, 9])
    """
    y, L = _check_labels(labels, num_classes)
    g = _as_int_array(groups, "groups")
    if g.size != y.size:
        raise ValueError(f"groups must have one entry per label ({y.size}), got {g.size}")
    uniq = np.unique(g)
    if group_ids is not None:
        ids = _as_int_array(list(group_ids), "group_ids")
        if ids.size == 0:
            raise ValueError("group_ids must name at least one group")
        if np.unique(ids).size != ids.size:
            raise ValueError("group_ids must not repeat a group")
    elif n_clients is None or check_int(n_clients, "n_clients", low=1) >= uniq.size:
        if n_clients is not None and int(n_clients) > uniq.size:
            raise ValueError(
                f"more clients than groups: n_clients={n_clients} > {uniq.size} groups"
            )
        ids = uniq
    else:
        if seed is None:
            raise TypeError("seed is required to choose n_clients groups at random; pass seed=0")
        ids = np.sort(as_generator(seed).choice(uniq, size=int(n_clients), replace=False))
    lookup = np.argsort(ids, kind="stable")
    sorted_ids = ids[lookup]
    pos = np.searchsorted(sorted_ids, g)
    pos_c = np.minimum(pos, sorted_ids.size - 1)
    hit = sorted_ids[pos_c] == g
    client_of = np.where(hit, lookup[pos_c], -1).astype(np.int64)
    return Partition._from_client_of(
        y,
        client_of,
        int(ids.size),
        L,
        "natural",
        {"n_clients": int(ids.size), "group_ids": [int(v) for v in ids], "seed": _json_seed(seed)},
    )
