r"""Label-flipping clients: a chosen fraction of clients whose labels are permuted.

DPFL's experiment with malicious clients (Section 4.5, Fig. 4, Appendix G.3) selects 40 of its
100 clients and flips their labels "using the same permutation"; the other 60 keep the true
labels. :func:`label_flip_plan` draws which clients and which permutation from a seed, and
:func:`flip_labels` applies it to labels grouped by client. :func:`topofl.data.federate` and
:meth:`topofl.data.FederatedData.from_partition` take ``flip_labels=<fraction>`` and record the
plan in ``FederatedData.params["label_flip"]`` (hence in every run's records header).

Choices where DPFL is silent:

* the permutation is a uniformly random *derangement* of the classes (no class is mapped to
  itself), so every label of a flipped client is wrong under the true labelling;
* ``round(fraction * n)`` clients are flipped (halves rounded up), drawn uniformly without
  replacement;
* a flipped client's *train, validation and local test* labels are all permuted: the paper
  makes "two distinct groups of clients" with two tasks, and each client is scored on its own
  task. The dataset's global test set is never flipped.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from topofl._utils.rng import Seed, as_generator
from topofl._utils.validation import check_int, check_memory, check_real

__all__ = ["LabelFlip", "label_flip_plan", "flip_labels", "random_derangement"]


class LabelFlip(NamedTuple):
    """Which clients flip their labels, and how.

    Attributes
    ----------
    clients : numpy.ndarray
        ``(m,)`` sorted int64 ids of the flipped clients.
    permutation : numpy.ndarray
        ``(L,)`` int64: a flipped client's label ``y`` becomes ``permutation[y]``.
    """

    clients: npt.NDArray[np.int64]
    permutation: npt.NDArray[np.int64]

    def mask(self, n_clients: int) -> npt.NDArray[np.bool_]:
        """``(n_clients,)`` bool: ``True`` for the flipped clients."""
        out = np.zeros(int(n_clients), dtype=bool)
        out[self.clients] = True
        return out

    def to_dict(self, fraction: float) -> dict[str, Any]:
        """JSON-able record: the fraction asked for, the clients and the permutation."""
        return {"fraction": float(fraction), "clients": self.clients.tolist(),
                "permutation": self.permutation.tolist()}


def random_derangement(num_classes: int, *, seed: Seed) -> npt.NDArray[np.int64]:
    """A uniformly random permutation of ``range(num_classes)`` without fixed points.

    Drawn by rejection (uniform permutations until one has no fixed point; about ``e`` draws
    on average).

    Examples
    --------
    >>> from topofl.data.corrupt import random_derangement
    >>> p = random_derangement(5, seed=0)
    >>> sorted(p.tolist()), bool((p != range(5)).all())
    ([0, 1, 2, 3, 4], True)
    """
    L = check_int(num_classes, "num_classes", low=2)
    rng = as_generator(seed)
    idx = np.arange(L)
    while True:
        p = rng.permutation(L).astype(np.int64)
        if not np.any(p == idx):
            return p


def label_flip_plan(n_clients: int, num_classes: int, fraction: float, *,
                    seed: Seed) -> LabelFlip:
    """Draw the flipped clients (``round(fraction * n_clients)``) and one shared derangement.

    Parameters
    ----------
    n_clients : int
    num_classes : int
        ``L >= 2`` when anything is flipped.
    fraction : float
        In ``[0, 1]``; DPFL flips 0.4.
    seed : int or numpy.random.Generator
        Keyword-only: the clients are drawn first, then the permutation.

    Returns
    -------
    LabelFlip
        No clients and the identity permutation when ``fraction * n_clients`` rounds to 0.

    Examples
    --------
    >>> from topofl.data.corrupt import label_flip_plan
    >>> plan = label_flip_plan(10, 4, 0.4, seed=0)
    >>> plan.clients.size, sorted(plan.permutation.tolist())
    (4, [0, 1, 2, 3])
    >>> label_flip_plan(10, 4, 0.0, seed=0).permutation.tolist()
    [0, 1, 2, 3]
    """
    n = check_int(n_clients, "n_clients", low=1)
    L = check_int(num_classes, "num_classes", low=1)
    f = check_real(fraction, "flip_labels (fraction of clients)", low=0.0, high=1.0)
    m = math.floor(f * n + 0.5)
    if m == 0:
        return LabelFlip(np.zeros(0, dtype=np.int64), np.arange(L, dtype=np.int64))
    if L < 2:
        raise ValueError(f"flipping labels needs at least 2 classes, got num_classes={L}")
    check_memory(24.0 * (n + L), f"label_flip_plan(n_clients={n}, num_classes={L})")
    rng = as_generator(seed)
    clients = np.sort(rng.choice(n, size=m, replace=False)).astype(np.int64)
    return LabelFlip(clients, random_derangement(L, seed=rng))


def flip_labels(y: npt.NDArray[Any], sizes: npt.NDArray[Any],
                plan: LabelFlip) -> npt.NDArray[np.int64]:
    """Labels grouped by client (``sizes[i]`` rows of client ``i``, in client order), flipped.

    Returns a new int64 array: ``plan.permutation[y]`` on the rows of the flipped clients, ``y``
    elsewhere.

    Examples
    --------
    >>> import numpy as np
    >>> from topofl.data.corrupt import LabelFlip, flip_labels
    >>> plan = LabelFlip(np.array([1]), np.array([1, 2, 0]))
    >>> flip_labels(np.array([0, 1, 0, 1, 2, 2]), np.array([2, 3, 1]), plan).tolist()
    [0, 1, 1, 2, 0, 2]
    """
    if not isinstance(plan, LabelFlip):
        raise TypeError(f"plan must be a LabelFlip (from label_flip_plan), got "
                        f"{type(plan).__name__}")
    y = _int_vector(y, "y")
    sizes = _int_vector(sizes, "sizes")
    if sizes.size and int(sizes.min()) < 0:
        raise ValueError(f"sizes must be >= 0, got {int(sizes.min())}")
    if int(sizes.sum()) != y.size:
        raise ValueError(f"sizes must sum to the number of labels {y.size}, got {int(sizes.sum())}")
    L = int(plan.permutation.size)
    if plan.clients.size and y.size and (int(y.min()) < 0 or int(y.max()) >= L):
        raise ValueError(f"labels must lie in [0, {L}) for the plan's permutation, got "
                         f"{int(y.min())}..{int(y.max())}")
    if plan.clients.size and int(plan.clients.max()) >= sizes.size:
        raise ValueError(f"the plan flips client {int(plan.clients.max())}, but sizes has only "
                         f"{sizes.size} clients")
    owner = np.repeat(np.arange(sizes.size), sizes)
    out = y.copy()
    rows = plan.mask(sizes.size)[owner]
    out[rows] = plan.permutation[y[rows]]
    return out


def _int_vector(a: Any, name: str) -> npt.NDArray[np.int64]:
    """``a`` as a 1-d int64 array of whole numbers, else a ValueError/TypeError naming it."""
    try:
        arr = np.asarray(a)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a 1-d array of ints, got {type(a).__name__}") from exc
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-d array of ints, got shape {arr.shape}")
    if arr.size == 0:
        return arr.astype(np.int64)
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer)
                                 or np.issubdtype(arr.dtype, np.floating)):
        raise TypeError(f"{name} must be a 1-d array of ints, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating) and not (
            np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))):
        raise ValueError(f"{name} must hold whole numbers, got non-integer or non-finite values")
    return arr.astype(np.int64)
