r"""``FederatedData``: every client's samples in one device tensor, sampled for all clients at once.

Layout
------
All samples live in one tensor ``x`` (``float32``, ``[M, *input_shape]``) and ``y`` (``int64``,
``[M]``) on one device. The rows are grouped by split, then by client::

    [ train: client 0 | client 1 | ... ][ val: client 0 | ... ][ test: client 0 | ... ][ global ]

so the samples of client ``i`` in split ``s`` are the rows ``offsets(s)[i] : offsets(s)[i] +
sizes(s)[i]``, and a whole split is one contiguous slice. (When the local test sets are drawn
from the official test set, their rows are copies of global test rows.)

Sampling
--------
:meth:`FederatedData.sample` draws each client's mini-batch i.i.d. uniformly *with replacement*
from its own training rows, counter based: client ``i``'s batch depends only on ``(seed,
round, step, i, b)`` and its own rows, on any device, whatever was sampled before, so a
resumed run draws the same batches (the hash and its properties: :mod:`topofl.data.sampling`).
One *local epoch* of client ``i`` is ``steps_per_epoch(b)[i] = ceil(n_i / b)`` such steps.

Evaluation
----------
:meth:`FederatedData.eval_batches` yields padded ``[n_clients, b, ...]`` inputs with a boolean
mask so that one batched forward pass scores every client on its own local test (or validation)
set; :meth:`FederatedData.segments` gives the flat rows with a client id per row instead, and
:attr:`FederatedData.global_test` the shared test set.

Examples
--------
>>> data = tf.data.federate("digits", "shards", 100, shards_per_client=2, seed=0)
>>> data
FederatedData(dataset='digits', partition='shards', n_clients=100, train=1442, val=0, test=355,
              global_test=355, device=cpu)
>>> x, y = data.sample(round=0, step=0, batch_size=4)
>>> tuple(x.shape), tuple(y.shape)
((100, 4, 1, 8, 8), (100, 4))
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt

from topofl._utils.rng import Seed, as_seed_sequence, generator_at
from topofl._utils.validation import (
    check_choice,
    check_device,
    check_int,
    check_real,
    did_you_mean_each,
    unknown_name,
)
from topofl.data.assembly import (
    _check_partition_of,
    _distributed_test,
    _flip,
    _gathered,
    _json_seed,
    _sampling_root,
)
from topofl.data.corrupt import label_flip_plan
from topofl.data.datasets import Dataset, load
from topofl.data.partition import PARTITIONS, Partition
from topofl.data.sampling import _hash_np, hash_uniform_index

if TYPE_CHECKING:
    import torch

__all__ = ["FederatedData", "EvalBatch", "Segments", "federate", "SPLITS"]

#: The per-client splits of a :class:`FederatedData`.
SPLITS = ("train", "val", "test")
IntArray = npt.NDArray[np.int64]


# ---------------------------------------------------------------------------------- small types
class EvalBatch(NamedTuple):
    """Padded evaluation inputs of every client: positions ``start .. start + b - 1``.

    ``x``: ``[n_clients, b, *input_shape]``; ``y``: ``[n_clients, b]``; ``mask``:
    ``[n_clients, b]`` bool, ``True`` where the row is a real sample of that client (padding
    repeats a valid row so that the model sees finite inputs).
    """

    x: torch.Tensor
    y: torch.Tensor
    mask: torch.Tensor
    start: int


class Segments(NamedTuple):
    """Where each client's rows of one split lie: ``offsets[i] : offsets[i] + sizes[i]``."""

    offsets: IntArray
    sizes: IntArray


def _device_of(device: Any) -> torch.device:
    d: torch.device = check_device(device)
    return d


def flipped_mask(params: Mapping[str, Any], n: int) -> npt.NDArray[np.bool_]:
    """``(n,)`` bool: the clients a federation's ``params["label_flip"]`` names."""
    out = np.zeros(n, dtype=bool)
    info = params.get("label_flip")
    if info:
        out[np.asarray(info["clients"], dtype=np.int64)] = True
    return out


# ---------------------------------------------------------------------------------- FederatedData
@dataclass(frozen=True, eq=False, repr=False)
class FederatedData:
    """All clients' data in one device tensor; batched sampling and evaluation.

    Build one with :func:`federate` or :meth:`from_partition`, not by calling the class.

    Attributes
    ----------
    x : torch.Tensor
        ``[M, *input_shape]`` float32, every row of every split (see the module notes).
    y : torch.Tensor
        ``[M]`` int64 labels.
    num_classes : int
    input_shape : tuple of int
    partitions : Mapping[str, Partition]
        The ``"train"``, ``"val"`` and ``"test"`` partitions the rows were taken from.
    params : Mapping[str, Any]
        JSON-able description: dataset, partition, splits, seed.
    """

    x: torch.Tensor
    y: torch.Tensor
    num_classes: int
    input_shape: tuple[int, ...]
    partitions: Mapping[str, Partition]
    params: Mapping[str, Any]
    _segments: Mapping[str, Segments]
    _global: tuple[int, int]
    _seed: np.random.SeedSequence
    _dev: dict[str, torch.Tensor] = field(default_factory=dict)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_partition(
        cls,
        dataset: Dataset,
        partition: Partition,
        *,
        seed: Seed,
        val: float = 0.0,
        test: float | str = "distribute",
        device: Any = "cpu",
        flip_labels: float = 0.0,
    ) -> FederatedData:
        r"""Place a dataset partitioned over clients on ``device``.

        Parameters
        ----------
        dataset : Dataset
        partition : Partition
            A partition of ``dataset.y_train`` (e.g. ``tf.data.shards(ds.y_train, 100, seed=0)``).
        seed : int or numpy.random.Generator
            Root of the split and of the sampling streams.
        val : float, default 0.0
            Fraction of every client's samples held out for validation (stratified by label,
            see :meth:`Partition.split`).
        test : float or ``"distribute"``, default ``"distribute"``
            A float holds out that fraction of every client's samples as its local test set
            (stratified by label). ``"distribute"`` instead gives each client a share of the
            dataset's official test set following its own label distribution
            (:meth:`Partition.distribute`); for a :func:`~topofl.data.natural` partition of a
            dataset with groups (FEMNIST), each client gets the test samples of its own group.
        device : str or torch.device, default ``"cpu"``
        flip_labels : float, default 0.0
            Fraction of clients whose labels are permuted (DPFL's malicious clients, 0.4 in its
            Fig. 4): ``round(flip_labels * n)`` clients drawn from the seed's stream 4 share one
            random derangement of the classes, applied to their train, validation and local
            test labels (not to the global test set); see :mod:`topofl.data.corrupt`. The plan
            is recorded in ``params["label_flip"]`` and read back by :attr:`flipped`.

        Returns
        -------
        FederatedData

        Examples
        --------
        >>> ds = tf.data.load("digits")
        >>> p = tf.data.dirichlet(ds.y_train, 20, alpha=0.5, seed=0)
        >>> data = tf.data.FederatedData.from_partition(ds, p, seed=0, val=0.1, test=0.2)
        >>> data.sizes("train")[:5], data.sizes("val")[:5], data.sizes("test")[:5]
        (array([52, 49, 73, 41, 76]), array([ 8,  7, 11,  6, 11]), array([15, 14, 21, 12, 22]))
        """
        import torch

        _check_partition_of(dataset, partition)
        v = check_real(val, "val", low=0.0, high=1.0, high_open=True)
        if isinstance(test, str):
            check_choice(test, "test", ("distribute",))
            t = 0.0
        else:
            t = check_real(test, "test", low=0.0, high=1.0, high_open=True)
        root = as_seed_sequence(seed)
        flip = check_real(flip_labels, "flip_labels", low=0.0, high=1.0)
        plan = label_flip_plan(partition.num_clients, dataset.num_classes, flip,
                               seed=generator_at(root, 4))
        parts = partition.split(val=v, test=t, seed=generator_at(root, 1))
        if isinstance(test, str):
            test_part, test_x = _distributed_test(dataset, partition, root), dataset.x_test
        else:
            test_part, test_x = parts.test, dataset.x_train
        sources = {
            "train": (dataset.x_train, parts.train),
            "val": (dataset.x_train, parts.val),
            "test": (test_x, test_part),
        }
        xs: list[tuple[npt.NDArray[Any], IntArray | None]] = []
        ys, segs, start = [], {}, 0
        for name, (xsrc, part) in sources.items():
            xs.append((xsrc, part.index))
            sizes = part.sizes.astype(np.int64)
            ys.append(_flip(part.labels[part.index], sizes, plan))
            offsets = (start + np.concatenate(([0], np.cumsum(sizes)[:-1]))).astype(np.int64)
            for a in (sizes, offsets):
                a.flags.writeable = False
            segs[name] = Segments(offsets, sizes)
            start += int(part.index.size)
        xs.append((dataset.x_test, None))
        ys.append(dataset.y_test)
        glob = (start, start + int(dataset.y_test.size))
        dev = _device_of(device)
        x = torch.from_numpy(_gathered(xs, dataset.x_train.shape[1:])).to(dev)
        y = torch.from_numpy(np.concatenate(ys).astype(np.int64)).to(dev)
        params = {
            "dataset": dataset.name,
            "dataset_params": dict(dataset.params),
            "partition": partition.to_dict(),
            "val": v,
            "test": test if isinstance(test, str) else t,
            "seed": _json_seed(seed, root),
        }
        if plan.clients.size:
            params["label_flip"] = plan.to_dict(flip)
        return cls(
            x=x,
            y=y,
            num_classes=dataset.num_classes,
            input_shape=tuple(int(s) for s in dataset.input_shape),
            partitions=MappingProxyType(
                {"train": parts.train, "val": parts.val, "test": test_part}
            ),
            params=MappingProxyType(params),
            _segments=MappingProxyType(segs),
            _global=glob,
            _seed=_sampling_root(root),
        )

    def to(self, device: Any) -> FederatedData:
        """The same data on ``device`` (a new object; ``self`` is unchanged).

        Examples
        --------
        >>> data = tf.data.federate("digits", "iid", 4, seed=0)
        >>> data.to("cpu").device
        device(type='cpu')
        """
        dev = _device_of(device)
        # a fresh _dev: the cache of device tensors belongs to one device
        return replace(self, x=self.x.to(dev), y=self.y.to(dev), _dev={})

    # ------------------------------------------------------------------ basic views
    @property
    def device(self) -> torch.device:
        """Device of every tensor."""
        return self.x.device

    @property
    def num_clients(self) -> int:
        """Number of clients ``n``."""
        return int(self._segments["train"].sizes.size)

    @property
    def name(self) -> str:
        """Dataset name."""
        return str(self.params["dataset"])

    def _split(self, split: str) -> str:
        return check_choice(split, "split", SPLITS)

    def segments_of(self, split: str = "train") -> Segments:
        """Row offsets and sizes of every client in ``split`` (numpy, read-only)."""
        return self._segments[self._split(split)]

    def sizes(self, split: str = "train") -> IntArray:
        """``(n,)`` int64 numpy array: samples of every client in ``split``.

        Examples
        --------
        >>> tf.data.federate("digits", "iid", 3, seed=0).sizes()
        array([480, 481, 481])
        """
        return self._segments[self._split(split)].sizes

    def steps_per_epoch(self, batch_size: int) -> IntArray:
        """``(n,)`` int64: ``ceil(n_i / batch_size)``, the steps of one local epoch per client.

        Examples
        --------
        >>> tf.data.federate("digits", "iid", 3, seed=0).steps_per_epoch(32)
        array([15, 16, 16])
        """
        b = check_int(batch_size, "batch_size", low=1)
        out: IntArray = -(-self.sizes("train") // b)
        return out

    @property
    def flipped(self) -> npt.NDArray[np.bool_]:
        """``(n,)`` bool: the clients whose labels are permuted (``flip_labels``).

        Examples
        --------
        >>> data = tf.data.federate("digits", "iid", 10, seed=0, flip_labels=0.3)
        >>> int(data.flipped.sum()), data.params["label_flip"]["fraction"]
        (3, 0.3)
        """
        return flipped_mask(self.params, self.num_clients)

    @property
    def objective(self) -> str:
        """The loss a run trains with (:mod:`topofl.engine.objectives`): ``"cross_entropy"``
        for integer labels, ``"squared_error"`` for floating (regression) targets
        (:func:`~topofl.data.from_clients`).

        Examples
        --------
        >>> tf.data.federate("digits", "iid", 3, seed=0).objective
        'cross_entropy'
        """
        return "squared_error" if self.y.is_floating_point() else "cross_entropy"

    @property
    def label_distributions(self) -> IntArray:
        """``(n, L)`` int64 training label counts (the input of ``topologies.dcliques``).

        Counts of the dataset's labels as partitioned, before any ``flip_labels``.

        Raises
        ------
        ValueError
            Regression data (floating targets): it has no labels.
        """
        return self.label_distributions_of("train")

    def label_distributions_of(self, split: str) -> IntArray:
        """``(n, L)`` int64 label counts of ``split`` (regression data: ``ValueError``)."""
        if self.objective != "cross_entropy":
            raise ValueError("regression data (floating targets) has no labels to count: "
                             "label distributions need class labels")
        return self.partitions[self._split(split)].label_distributions

    @property
    def global_test(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(x [N_test, ...], y [N_test])``: the dataset's whole test set (views of ``x``)."""
        a, b = self._global
        return self.x[a:b], self.y[a:b]

    def client(self, i: int, split: str = "train") -> tuple[torch.Tensor, torch.Tensor]:
        """``(x, y)`` of client ``i`` in ``split`` (views; the slow per-client path)."""
        seg = self._segments[self._split(split)]
        k = check_int(i, "client", low=0, high=self.num_clients - 1)
        a = int(seg.offsets[k])
        b = a + int(seg.sizes[k])
        return self.x[a:b], self.y[a:b]

    def __repr__(self) -> str:
        s = {k: int(v.sizes.sum()) for k, v in self._segments.items()}
        dev = str(self.device)
        return (
            f"FederatedData(dataset={self.name!r}, partition={self.partitions['train'].name!r}, "
            f"n_clients={self.num_clients}, train={s['train']}, val={s['val']}, test={s['test']}, "
            f"global_test={self._global[1] - self._global[0]}, device={dev})"
        )

    # ------------------------------------------------------------------ device-side metadata
    def _tensor(self, key: str) -> torch.Tensor:
        """Device copy of a metadata array, cached per object."""
        import torch

        t = self._dev.get(key)
        if t is None:
            split, what = key.split(".")
            arr = getattr(self._segments[split], what)
            t = torch.tensor(np.array(arr), dtype=torch.int64, device=self.device)
            self._dev[key] = t
        return t

    # ------------------------------------------------------------------ sampling
    def _key(self, round: int, step: int) -> tuple[int, int]:
        r = check_int(round, "round", low=0)
        s = check_int(step, "step", low=0)
        k = generator_at(self._seed, r, s).integers(0, 2**32, size=2, dtype=np.uint64)
        return int(k[0]), int(k[1])

    def sample_indices(self, round: int, step: int, batch_size: int) -> torch.Tensor:
        """``[n_clients, b]`` int64 rows of ``x`` that :meth:`sample` returns.

        Examples
        --------
        >>> data = tf.data.federate("digits", "iid", 3, seed=0)
        >>> idx = data.sample_indices(0, 0, 4)
        >>> bool(((idx >= 0) & (idx < 481)).all(dim=1)[0])
        True
        """
        import torch

        b = check_int(batch_size, "batch_size", low=1)
        k0, k1 = self._key(round, step)
        seg = self._segments["train"]
        sizes = seg.sizes
        if not sizes.all():
            empty = np.flatnonzero(sizes == 0)
            raise ValueError(
                f"cannot sample: {empty.size} client(s) have no training sample (e.g. client "
                f"{int(empty[0])}); use a partition with min_size >= 1 or a smaller val/test"
            )
        dev = self.device
        if dev.type == "cpu":  # the same integers in NumPy, without small torch operations
            n = sizes.size
            idx = _hash_np(k0, k1, np.arange(n, dtype=np.int64)[:, None],
                           np.arange(b, dtype=np.int64)[None, :], sizes[:, None])
            idx += seg.offsets[:, None]
            return torch.from_numpy(idx)
        size = self._tensor("train.sizes")[:, None]
        offset = self._tensor("train.offsets")[:, None]
        client = torch.arange(self.num_clients, device=dev, dtype=torch.int64)[:, None]
        slot = torch.arange(b, device=dev, dtype=torch.int64)[None, :]
        return offset + hash_uniform_index(k0, k1, client, slot, size)

    def sample(
        self,
        round: int,
        step: int,
        batch_size: int,
        *,
        out: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        r"""Mini-batches of every client: ``(x [n, b, *input_shape], y [n, b])``.

        Client ``i``'s ``b`` samples are drawn uniformly with replacement from its own training
        rows, as a pure function of ``(seed, round, step, i)`` (:mod:`topofl.data.sampling`):
        the same arguments give the same batch, on any device, whatever else was sampled before.

        Parameters
        ----------
        round, step : int
            Non-negative counters (e.g. communication round and local step).
        batch_size : int
            ``b >= 1`` (may exceed a client's size: draws are with replacement).
        out : (torch.Tensor, torch.Tensor), optional
            Preallocated ``x`` (``[n, b, *input_shape]`` float32) and ``y`` (``[n, b]`` int64)
            on this device to write into; saves the allocation on every step (on CPU the
            gather is memory bound and an allocation roughly doubles its cost).

        Returns
        -------
        x : torch.Tensor
            ``[n_clients, b, *input_shape]`` float32 (``out[0]`` if given).
        y : torch.Tensor
            ``[n_clients, b]`` int64.

        Examples
        --------
        >>> data = tf.data.federate("digits", "shards", 100, shards_per_client=2, seed=0)
        >>> x, y = data.sample(round=3, step=1, batch_size=8)
        >>> y[0].tolist(), sorted(set(data.client(0)[1].tolist()))
        ([7, 5, 7, 7, 7, 7, 5, 7], [5, 7])
        >>> bool((data.sample(3, 1, 8)[0] == x).all())
        True
        """
        return self.take(self.sample_indices(round, step, batch_size), out=out)

    def take(
        self,
        indices: torch.Tensor,
        *,
        out: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Rows of ``x`` and ``y`` at ``[m, b]`` indices (e.g. some clients' rows of
        :meth:`sample_indices`): ``(x [m, b, *input_shape], y [m, b])``.

        ``sample(r, s, b)`` is ``take(sample_indices(r, s, b))``; the engine takes blocks of
        clients at a time when it streams the local step.

        Examples
        --------
        >>> data = tf.data.federate("digits", "iid", 4, seed=0)
        >>> idx = data.sample_indices(0, 0, 3)
        >>> x, y = data.take(idx[1:3])
        >>> tuple(x.shape), bool((x == data.sample(0, 0, 3)[0][1:3]).all())
        ((2, 3, 1, 8, 8), True)
        """
        import torch

        if not isinstance(indices, torch.Tensor) or indices.dim() != 2:
            raise TypeError(f"indices must be a 2-d torch.Tensor [m, b], got {indices!r:.80}")
        flat = indices.reshape(-1)
        shape = tuple(indices.shape) + tuple(self.input_shape)
        yshape = tuple(indices.shape) + tuple(self.y.shape[1:])  # [m, b] (or [m, b, K])
        if out is None:
            x = self.x.index_select(0, flat).reshape(shape)
            return x, self.y.index_select(0, flat).reshape(yshape)
        xo, yo = out
        if tuple(xo.shape) != shape or tuple(yo.shape) != yshape:
            raise ValueError(
                f"out must have shapes {shape} and {yshape}, got "
                f"{tuple(xo.shape)} and {tuple(yo.shape)}"
            )
        torch.index_select(self.x, 0, flat, out=xo.view(-1, *self.input_shape))
        torch.index_select(self.y, 0, flat, out=yo.view(-1, *self.y.shape[1:]))
        return xo, yo

    # ------------------------------------------------------------------ evaluation
    def eval_batches(
        self, split: str = "test", batch_size: int | None = None
    ) -> Iterator[EvalBatch]:
        """Padded evaluation batches of every client's ``split`` (``"test"`` or ``"val"``).

        Batch ``k`` holds the positions ``k b .. (k+1) b - 1`` of every client (``b`` defaults to
        the largest client, i.e. one batch); ``mask`` marks real samples. Summing a per-sample
        metric times ``mask`` over the batches and dividing by :meth:`sizes` gives each client's
        score from ``ceil(max n_i / b)`` batched forward passes.

        Examples
        --------
        >>> data = tf.data.federate("digits", "shards", 10, seed=0)
        >>> batches = list(data.eval_batches("test", batch_size=16))
        >>> len(batches), tuple(batches[0].x.shape), batches[0].mask.sum(dim=1)[:4].tolist()
        (3, (10, 16, 1, 8, 8), [16, 16, 16, 16])
        >>> sum(b.mask.sum(dim=1) for b in batches)[:4].tolist(), data.sizes("test")[:4].tolist()
        ([35, 35, 35, 36], [35, 35, 35, 36])
        """
        import torch

        name = self._split(split)
        sizes = self._segments[name].sizes
        longest = int(sizes.max()) if sizes.size else 0
        b = max(longest, 1) if batch_size is None else check_int(batch_size, "batch_size", low=1)
        size = self._tensor(f"{name}.sizes")[:, None]
        offset = self._tensor(f"{name}.offsets")[:, None]
        last_row = max(int(self.x.shape[0]) - 1, 0)
        for start in range(0, max(longest, 1), b):
            pos = start + torch.arange(b, device=self.device, dtype=torch.int64)[None, :]
            mask = pos < size
            rows = torch.where(mask, offset + pos, offset + torch.clamp(size - 1, min=0))
            rows = torch.clamp(rows, 0, last_row).reshape(-1)
            x = self.x.index_select(0, rows).reshape((self.num_clients, b) + self.input_shape)
            y = self.y.index_select(0, rows).reshape(self.num_clients, b, *self.y.shape[1:])
            yield EvalBatch(x, y, mask, start)

    def padded(self, split: str = "test") -> EvalBatch:
        """All of ``split`` as one padded batch (``b`` = the largest client's size)."""
        return next(self.eval_batches(split, None))

    def segments(self, split: str = "test") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(x [M_s, ...], y [M_s], client [M_s])``: the rows of ``split`` with their client.

        ``x`` and ``y`` are views (no copy); ``client`` is sorted (rows are grouped by client).

        Examples
        --------
        >>> data = tf.data.federate("digits", "iid", 3, seed=0, test=0.2)
        >>> x, y, c = data.segments("test")
        >>> tuple(x.shape), c.bincount().tolist()
        ((288, 1, 8, 8), [96, 96, 96])
        """
        import torch

        name = self._split(split)
        seg = self._segments[name]
        a = int(seg.offsets[0]) if seg.offsets.size else 0
        b = a + int(seg.sizes.sum())
        client = torch.repeat_interleave(
            torch.arange(self.num_clients, device=self.device), self._tensor(f"{name}.sizes")
        )
        return self.x[a:b], self.y[a:b], client


# ---------------------------------------------------------------------------------- federate
def as_dataset(dataset: Any, test: Any) -> Dataset:
    """``dataset`` as a :class:`Dataset`: a name is loaded, torch datasets are read."""
    if isinstance(dataset, str):
        return load(dataset)
    if isinstance(dataset, Dataset):
        return dataset
    from torch.utils.data import Dataset as TorchDataset

    if isinstance(dataset, TorchDataset):
        if test == "distribute":
            raise ValueError(
                "a single torch Dataset has no test split to distribute: pass test=<fraction> "
                "(e.g. test=0.2) or dataset=(train_dataset, test_dataset)"
            )
        return Dataset.from_torch(dataset)
    if (
        isinstance(dataset, tuple)
        and len(dataset) == 2
        and all(isinstance(d, TorchDataset) for d in dataset)
    ):
        return Dataset.from_torch(dataset[0], dataset[1])
    raise TypeError(
        "dataset must be a topofl Dataset, a dataset name, a torch.utils.data.Dataset or a "
        f"(train, test) pair of them, got {type(dataset).__name__}"
    )


def federate(
    dataset: Any,
    scheme: str = "iid",
    n_clients: int | None = 10,
    *,
    seed: Seed,
    val: float = 0.0,
    test: float | str = "distribute",
    device: Any = "cpu",
    flip_labels: float = 0.0,
    **params: Any,
) -> FederatedData:
    """Load, partition and place a dataset in one call.

    Parameters
    ----------
    dataset : Dataset, str, torch.utils.data.Dataset or a pair of them
        A dataset, a name for :func:`topofl.data.load` (with default options), or the
        researcher's own torch dataset(s) of ``(x, y)`` samples -- one (then pass a ``test``
        fraction) or a ``(train, test)`` pair -- read with :meth:`Dataset.from_torch`.
    scheme : str, default ``"iid"``
        A partition scheme of :data:`topofl.data.PARTITIONS`: ``"iid"``, ``"shards"``,
        ``"dirichlet"``, ``"pathological"``, ``"dpfl_pathological"``, ``"natural"``.
    n_clients : int, default 10
        ``None`` is accepted by ``"natural"`` only (one client per group).
    seed : int or numpy.random.Generator
        With an int, the partition is exactly ``scheme(dataset.y_train, n_clients, **params,
        seed=seed)``; the split and the sampling use independent streams of the same seed.
    val, test, device, flip_labels
        As in :meth:`FederatedData.from_partition` (``flip_labels``: fraction of clients whose
        labels are permuted, DPFL's malicious clients).
    **params
        The scheme's parameters (``shards_per_client``, ``alpha``, ``min_size``,
        ``classes_per_client``).

    Returns
    -------
    FederatedData

    Raises
    ------
    ValueError
        Unknown scheme (the known ones are listed) or parameter.

    Examples
    --------
    >>> data = tf.data.federate("digits", "dirichlet", 10, alpha=0.3, seed=1, val=0.1)
    >>> data.num_clients, data.num_classes, data.input_shape, data.label_distributions.shape
    (10, 10, (1, 8, 8), (10, 10))
    """
    import inspect

    ds = as_dataset(dataset, test)
    if not isinstance(scheme, str) or scheme not in PARTITIONS:
        raise ValueError(unknown_name("partition scheme", scheme, PARTITIONS, sort=False))
    fn = PARTITIONS[scheme]
    accepted = [
        p
        for p in inspect.signature(fn).parameters
        if p not in ("labels", "groups", "n_clients", "seed", "num_classes")
    ]
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(f"unknown parameter(s) {unknown} for {scheme!r}"
                         f"{did_you_mean_each(unknown, accepted)}; accepted: {accepted}")
    root = as_seed_sequence(seed)
    pseed: Seed = (
        int(seed)
        if isinstance(seed, numbers.Integral) and not isinstance(seed, bool)
        else generator_at(root, 0)
    )
    if scheme == "natural":
        if ds.groups_train is None:
            raise ValueError(
                f"the 'natural' scheme needs a dataset with groups; {ds.name!r} has none"
            )
        part = fn(
            ds.y_train, ds.groups_train, n_clients, seed=pseed, num_classes=ds.num_classes, **params
        )
    else:
        part = fn(ds.y_train, n_clients, seed=pseed, num_classes=ds.num_classes, **params)
    return FederatedData.from_partition(ds, part, seed=root, val=val, test=test, device=device,
                                        flip_labels=flip_labels)
