r"""Every client's own samples as given: :func:`from_clients`, for regression targets or labels.

A researcher's problem often comes as per-client arrays rather than a dataset to partition:
decent-bench's regression problems (client $i$ holds $A_i$, $b_i$), a synthetic linear model
per client, features already split by owner. :func:`from_clients` lays them out as a
:class:`~topofl.data.FederatedData` (the layout, sampling and padded evaluation of
:mod:`topofl.data.federated`), so that :func:`topofl.run` trains on them:

* **floating targets** (``[m_i]`` one output, ``[m_i, K]`` several) make a regression task:
  the engine trains and scores with the squared error
  (:data:`~topofl.engine.objectives.SQUARED_ERROR`), ``num_classes`` is the number of outputs
  ``K`` (what :func:`topofl.models.build_model` sizes the last layer by), and the records hold
  losses, no accuracy; the data has no labels (:attr:`FederatedData.label_distributions`
  raises), so nothing that reads label counts runs on it silently;
* **integer targets** are class labels, ``num_classes`` their largest value plus one, as with
  :func:`~topofl.data.federate`.

Examples
--------
Four clients of a linear model with their own optima, scored on their training samples:

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> A = [rng.normal(size=(20, 3)) for _ in range(4)]
>>> b = [a @ rng.normal(size=3) for a in A]
>>> data = tf.data.from_clients(list(zip(A, b)), seed=0)
>>> data
FederatedData(dataset='clients', partition='clients', n_clients=4, train=80, val=0, test=80,
              global_test=0, device=cpu)
>>> data.objective, data.num_classes, data.input_shape
('squared_error', 1, (3,))
>>> x, y = data.sample(round=0, step=0, batch_size=5)
>>> tuple(x.shape), tuple(y.shape), y.dtype
((4, 5, 3), (4, 5), torch.float32)
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from topofl._utils.rng import Seed, as_seed_sequence
from topofl._utils.validation import check_device
from topofl.data.assembly import _json_seed, _sampling_root
from topofl.data.federated import FederatedData, Segments
from topofl.data.partition import Partition

__all__ = ["from_clients"]


def _as_array(value: Any, what: str) -> npt.NDArray[Any]:
    """``value`` (an array or a tensor) as a NumPy array."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (list, tuple)):
        return np.asarray(value)
    raise TypeError(f"{what} must be an array or a tensor, got {type(value).__name__}")


def _pairs(value: Any, what: str, n: int | None) -> list[tuple[npt.NDArray[Any], npt.NDArray[Any]]]:
    """The ``(x_i, y_i)`` pairs of ``value``, checked: a sequence of ``n`` pairs (any ``n``
    for ``None``), as many targets as samples, numbers only."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{what} must be a sequence of (x, y) pairs, one a client, got "
                        f"{type(value).__name__}")
    if n is not None and len(value) != n:
        raise ValueError(f"{what} must hold one (x, y) pair a client: {n} clients train, got "
                         f"{len(value)} pairs")
    if not len(value):
        raise ValueError(f"{what} must hold at least one client, got none")
    out = []
    for i, pair in enumerate(value):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"{what}[{i}] must be an (x, y) pair, got {type(pair).__name__}")
        x, y = _as_array(pair[0], f"{what}[{i}][0]"), _as_array(pair[1], f"{what}[{i}][1]")
        if x.ndim < 2 or y.ndim not in (1, 2) or x.shape[0] != y.shape[0]:
            raise ValueError(f"{what}[{i}] must be x [m, *input_shape] (m >= 0 samples, at "
                             f"least one feature dimension) and y [m] or [m, K], got "
                             f"x {x.shape} and y {y.shape}")
        for a, name in ((x, "x"), (y, "y")):
            if a.dtype.kind not in "biuf":
                raise TypeError(f"{what}[{i}]'s {name} must hold numbers, got {a.dtype}")
        out.append((x, y))
    return out


def _kind(pairs: Sequence[tuple[npt.NDArray[Any], npt.NDArray[Any]]], what: str
          ) -> tuple[bool, tuple[int, ...], tuple[int, ...]]:
    """``(regression, input_shape, target_shape)`` shared by every pair, else an error."""
    x0, y0 = pairs[0]
    regression = y0.dtype.kind == "f"
    for i, (x, y) in enumerate(pairs):
        if x.shape[1:] != x0.shape[1:] or y.shape[1:] != y0.shape[1:]:
            raise ValueError(f"every client's samples must share one shape: {what}[0] holds x "
                             f"{x0.shape[1:]} and y {y0.shape[1:]}, {what}[{i}] x "
                             f"{x.shape[1:]} and y {y.shape[1:]}")
        if (y.dtype.kind == "f") != regression:
            raise TypeError(f"targets must be all floating (regression) or all integer "
                            f"(labels): {what}[0] holds {y0.dtype}, {what}[{i}] {y.dtype}")
        if regression and not (np.isfinite(y).all() and np.isfinite(x).all()):
            raise ValueError(f"{what}[{i}] holds a non-finite value")
        if not regression and y.size and y.min() < 0:
            raise ValueError(f"labels must be >= 0, {what}[{i}] holds {int(y.min())}")
    return regression, tuple(int(s) for s in x0.shape[1:]), tuple(int(s) for s in y0.shape[1:])


def _digest(arrays: Sequence[npt.NDArray[Any]]) -> str:
    """16 hex digits of SHA-256 over the arrays' shapes, types and bytes: the run hash's name
    of the data (two problems of the same sizes are two datasets)."""
    h = hashlib.sha256()
    for a in arrays:
        c = np.ascontiguousarray(a)
        h.update(f"{c.dtype.str}{c.shape}".encode())
        h.update(c.tobytes())
    return h.hexdigest()[:16]


def from_clients(train: Sequence[Any], test: Sequence[Any] | str = "train", *, seed: Seed,
                 val: Sequence[Any] | None = None, global_test: tuple[Any, Any] | None = None,
                 device: Any = "cpu") -> FederatedData:
    """Every client's own samples, as given, in one :class:`FederatedData` (module docstring).

    Parameters
    ----------
    train : sequence of (x, y) pairs
        Client ``i`` trains on ``train[i] = (x_i [m_i, *input_shape], y_i)``: NumPy arrays or
        tensors, ``y_i`` floating targets ``[m_i]`` / ``[m_i, K]`` (regression) or integer
        labels ``[m_i]``. Every client shares one input shape and one target shape.
    test : sequence of (x, y) pairs or ``"train"``, default ``"train"``
        Each client's own test samples; ``"train"`` scores every client on its training
        samples (the objective value an optimisation benchmark such as decent-bench tracks).
    seed : int or numpy.random.Generator
        Root of the sampling stream (mini-batches drawn with replacement, as in
        :meth:`FederatedData.sample`).
    val : sequence of (x, y) pairs, optional
        Each client's own validation samples (one pair a client; a pair may be empty): what
        a method that chooses on held-out samples reads (DPFL's collaboration graph) and
        ``eval_val`` scores. ``None``: no validation samples.
    global_test : (x, y), optional
        A test set every client is scored on (the ``global_*`` rows).
    device : str or torch.device, default ``"cpu"``

    Returns
    -------
    FederatedData
        ``params`` names it ``"clients"`` with a digest of the arrays, the task, the sizes and
        the seed (what a run's hash reads).

    Raises
    ------
    TypeError
        Not a sequence of pairs; a non-numeric array; floating and integer targets mixed.
    ValueError
        Pairs of unequal lengths or shapes, as many test (or val) pairs as clients missing,
        non-finite regression data, negative labels.

    Examples
    --------
    >>> import numpy as np
    >>> two = [(np.ones((3, 2)), np.array([0, 1, 1])), (np.zeros((2, 2)), np.array([2, 0]))]
    >>> data = tf.data.from_clients(two, seed=0)
    >>> data.objective, data.num_classes, data.label_distributions.tolist()
    ('cross_entropy', 3, [[1, 2, 0], [1, 0, 1]])
    >>> tf.data.from_clients(two, test=two[:1], seed=0)
    Traceback (most recent call last):
    ...
    ValueError: test must hold one (x, y) pair a client: 2 clients train, got 1 pairs
    """
    import torch

    tr = _pairs(train, "train", None)
    if isinstance(test, str):
        if test != "train":
            raise ValueError(f"test must be a sequence of (x, y) pairs or 'train', got {test!r}")
        te = tr
    else:
        te = _pairs(test, "test", len(tr))
    va = [(x[:0], y[:0]) for x, y in tr] if val is None else _pairs(val, "val", len(tr))
    glob = [] if global_test is None else _pairs([global_test], "global_test", 1)
    regression, input_shape, target_shape = _kind(tr + va + te + glob, "train/val/test")
    sources = [tr, va, te]
    ys_all = [y for _, y in tr + va + te + glob]
    classes = (int(np.prod(target_shape)) if regression else
               int(max((int(y.max()) for y in ys_all if y.size), default=0)) + 1)
    xs: list[npt.NDArray[Any]] = []
    ys: list[npt.NDArray[Any]] = []
    segs: dict[str, Segments] = {}
    parts: dict[str, Partition] = {}
    start = 0
    for name, pairs in zip(("train", "val", "test"), sources):
        sizes = np.array([len(y) for _, y in pairs], dtype=np.int64)
        first = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
        offsets = start + first
        for a in (sizes, offsets):
            a.flags.writeable = False
        segs[name] = Segments(offsets, sizes)
        # the split's rows as a partition of its own labels (zeros for regression: a
        # container of rows, whose label counts FederatedData does not expose)
        labels = np.concatenate([np.zeros(0, np.int64)] + [
            np.zeros(len(y), np.int64) if regression else y.astype(np.int64) for _, y in pairs])
        if not labels.size:  # no samples (validation): no rows of the training labels
            labels = parts["train"].labels
        parts[name] = Partition.from_indices(
            [np.arange(a, a + m) for a, m in zip(first, sizes)], labels,
            num_classes=1 if regression else classes, name="clients")
        xs += [x for x, _ in pairs]
        ys += [y for _, y in pairs]
        start += int(sizes.sum())
    xs += [x for x, _ in glob]
    ys += [y for _, y in glob]
    x = torch.from_numpy(np.concatenate([a.astype(np.float32, copy=False) for a in xs]))
    y = torch.from_numpy(np.concatenate([a.astype(np.float32 if regression else np.int64,
                                                  copy=False) for a in ys]))
    root = as_seed_sequence(seed)
    params = {
        "dataset": "clients",
        "task": "regression" if regression else "classification",
        "digest": _digest(xs + ys),
        "sizes": {k: v.sizes.tolist() for k, v in segs.items()},
        "test": test if isinstance(test, str) else "given",
        "seed": _json_seed(seed, root),
        **({} if val is None else {"val": "given"}),
    }
    return FederatedData(
        x=x.to(check_device(device)), y=y.to(check_device(device)), num_classes=classes,
        input_shape=input_shape, partitions=MappingProxyType(parts),
        params=MappingProxyType(params), _segments=MappingProxyType(segs),
        _global=(start, start + sum(len(y) for _, y in glob)), _seed=_sampling_root(root))

