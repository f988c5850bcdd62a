"""One rank's clients' data: their samples only, drawn exactly as the whole data draws them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from topofl._utils.rng import generator_at
from topofl._utils.validation import check_choice, check_int
from topofl.data.federated import SPLITS, EvalBatch, FederatedData, flipped_mask
from topofl.data.sampling import hash_uniform_index

__all__ = ["ShardData"]

IntArray = npt.NDArray[np.int64]


class ShardData:
    """The clients ``clients`` of a :class:`~topofl.data.FederatedData`, holding only their
    samples (and the global test set).

    Row ``r`` is client ``clients[r]``; its mini-batches are those the whole data draws for
    that client (the draw is a pure function of ``(seed, round, step, client id)``), so the
    clients of a rank train on the same samples as in a single-process run. The label
    distributions and ``params`` stay those of all clients (metadata the records need).

    Parameters
    ----------
    data : FederatedData
    clients : array of int
        Sorted global ids of the clients kept.

    Examples
    --------
    >>> from topofl.distributed.data import ShardData
    >>> data = tf.data.federate("digits", "dirichlet", 6, alpha=0.5, seed=0, val=0.1)
    >>> part = ShardData(data, [1, 4])
    >>> x, y = part.sample(2, 0, 5)
    >>> bool(torch.equal(x, data.sample(2, 0, 5)[0][[1, 4]]))
    True
    >>> part.num_clients, part.sizes("val").tolist() == data.sizes("val")[[1, 4]].tolist()
    (2, True)
    """

    def __init__(self, data: FederatedData, clients: Any) -> None:
        ids = np.asarray(clients, dtype=np.int64)
        if ids.ndim != 1 or ids.size == 0 or np.any(np.diff(ids) <= 0) or ids[0] < 0 or (
                ids[-1] >= data.num_clients):
            raise ValueError(
                f"clients must be increasing ids in [0, {data.num_clients - 1}], got {clients!r}"
            )
        self.clients = ids
        self.parent_clients = int(data.num_clients)
        self.num_classes = data.num_classes
        self.input_shape = data.input_shape
        self.params = data.params
        self.partitions = data.partitions
        self._seed = data._seed
        dev = data.device
        rows: list[np.ndarray] = []
        sizes: dict[str, IntArray] = {}
        offsets: dict[str, IntArray] = {}
        start = 0
        for split in SPLITS:
            seg = data.segments_of(split)
            sz = seg.sizes[ids].astype(np.int64)
            off = start + np.concatenate(([0], np.cumsum(sz)[:-1])).astype(np.int64)
            rows.extend(np.arange(int(o), int(o) + int(s)) for o, s in
                        zip(seg.offsets[ids], sz))
            sizes[split], offsets[split] = sz, off
            start += int(sz.sum())
        a, b = data._global
        rows.append(np.arange(a, b))
        index = torch.as_tensor(np.concatenate(rows) if rows else np.zeros(0, np.int64),
                                dtype=torch.int64, device=dev)
        self.x = data.x.index_select(0, index)
        self.y = data.y.index_select(0, index)
        self._global = (start, start + (b - a))
        self._sizes, self._offsets = sizes, offsets
        self._dev = {k: torch.as_tensor(v, device=dev) for k, v in
                     [*((f"{s}.sizes", sizes[s]) for s in SPLITS),
                      *((f"{s}.offsets", offsets[s]) for s in SPLITS)]}
        self._ids = torch.as_tensor(ids, device=dev)

    # ------------------------------------------------------------------ views
    @property
    def device(self) -> torch.device:
        """Device of every tensor."""
        return self.x.device

    @property
    def num_clients(self) -> int:
        """Clients held here."""
        return int(self.clients.size)

    def to(self, device: Any) -> ShardData:
        """These clients' data on ``device`` (``self`` when already there)."""
        if torch.device(device) == self.device:
            return self
        out = object.__new__(ShardData)
        out.__dict__.update(self.__dict__)
        out.x, out.y = self.x.to(device), self.y.to(device)
        out._dev = {k: v.to(device) for k, v in self._dev.items()}
        out._ids = self._ids.to(device)
        return out

    def sizes(self, split: str = "train") -> IntArray:
        """``(m,)`` samples of each held client in ``split``."""
        return self._sizes[check_choice(split, "split", SPLITS)]

    @property
    def objective(self) -> str:
        """The loss of the whole data (:attr:`FederatedData.objective`)."""
        return "squared_error" if self.y.is_floating_point() else "cross_entropy"

    @property
    def label_distributions(self) -> Any:
        """``(n, L)`` training label counts of *all* clients (metadata; regression data:
        ``ValueError``)."""
        if self.objective != "cross_entropy":
            raise ValueError("regression data (floating targets) has no labels to count: "
                             "label distributions need class labels")
        return self.partitions["train"].label_distributions

    @property
    def flipped(self) -> npt.NDArray[np.bool_]:
        """``(n,)`` bool: the label-flipping clients among *all* clients (metadata, as
        :attr:`FederatedData.flipped`)."""
        return flipped_mask(self.params, self.parent_clients)

    @property
    def global_test(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The dataset's whole test set."""
        a, b = self._global
        return self.x[a:b], self.y[a:b]

    # ------------------------------------------------------------------ sampling
    def sample_indices(self, round: int, step: int, batch_size: int) -> torch.Tensor:
        """``[m, b]`` rows of ``x``: the held clients' draws of ``(round, step)`` (their
        whole training sets, in order, for data of :func:`~topofl.data.full_batches`)."""
        b = check_int(batch_size, "batch_size", low=1)
        r = check_int(round, "round", low=0)
        s = check_int(step, "step", low=0)
        if self.params.get("sampling") == "full":  # every client's m rows (the whole data's)
            m = int(self._sizes["train"][0])
            if b != m:
                raise ValueError(f"full batches: a client's batch is its {m} training samples, "
                                 f"so batch_size must be {m}, got {b}")
            return self._dev["train.offsets"][:, None] + torch.arange(
                m, device=self.device, dtype=torch.int64)[None, :]
        k = generator_at(self._seed, r, s).integers(0, 2**32, size=2, dtype=np.uint64)
        if np.any(self._sizes["train"] == 0):
            raise ValueError("cannot sample: some client has no training sample")
        size = self._dev["train.sizes"][:, None]
        offset = self._dev["train.offsets"][:, None]
        slot = torch.arange(b, device=self.device, dtype=torch.int64)[None, :]
        return offset + hash_uniform_index(int(k[0]), int(k[1]), self._ids[:, None], slot, size)

    def sample(self, round: int, step: int, batch_size: int, *,
               out: tuple[torch.Tensor, torch.Tensor] | None = None
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """Mini-batches of the held clients: ``(x [m, b, ...], y [m, b])``."""
        return self.take(self.sample_indices(round, step, batch_size), out=out)

    def take(self, indices: torch.Tensor, *,
             out: tuple[torch.Tensor, torch.Tensor] | None = None
             ) -> tuple[torch.Tensor, torch.Tensor]:
        """Rows of ``x`` and ``y`` at ``[m, b]`` indices."""
        flat = indices.reshape(-1)
        shape = tuple(indices.shape) + tuple(self.input_shape)
        tail = tuple(self.y.shape[1:])  # regression targets [M, K]: [m, b, K]
        if out is None:
            return (self.x.index_select(0, flat).reshape(shape),
                    self.y.index_select(0, flat).reshape(*indices.shape, *tail))
        xo, yo = out
        torch.index_select(self.x, 0, flat, out=xo.view(-1, *self.input_shape))
        torch.index_select(self.y, 0, flat, out=yo.view(-1, *tail))
        return xo, yo

    def eval_batches(self, split: str = "test", batch_size: int | None = None
                     ) -> Iterator[EvalBatch]:
        """Padded evaluation batches of the held clients (as
        :meth:`FederatedData.eval_batches`)."""
        name = check_choice(split, "split", SPLITS)
        sizes = self._sizes[name]
        longest = int(sizes.max()) if sizes.size else 0
        b = max(longest, 1) if batch_size is None else check_int(batch_size, "batch_size", low=1)
        size = self._dev[f"{name}.sizes"][:, None]
        offset = self._dev[f"{name}.offsets"][:, None]
        last_row = max(int(self.x.shape[0]) - 1, 0)
        m = self.num_clients
        for start in range(0, max(longest, 1), b):
            pos = start + torch.arange(b, device=self.device, dtype=torch.int64)[None, :]
            mask = pos < size
            rows = torch.where(mask, offset + pos, offset + torch.clamp(size - 1, min=0))
            rows = torch.clamp(rows, 0, last_row).reshape(-1)
            x = self.x.index_select(0, rows).reshape((m, b) + tuple(self.input_shape))
            y = self.y.index_select(0, rows).reshape(m, b, *self.y.shape[1:])
            yield EvalBatch(x, y, mask, start)
