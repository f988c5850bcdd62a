"""The frozen :class:`Partition` every scheme returns, and its train/val/test split."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np

from topofl._utils.rng import Seed, as_generator
from topofl._utils.validation import check_int, check_real
from topofl.data.partition._apportion import (
    _apportion_capped,
    _apportion_int,
    _deal,
    grouped_lexsort,
    sort_within_groups,
    stable_order,
)
from topofl.data.partition._input import (
    IntArray,
    _as_int_array,
    _check_labels,
    _json_seed,
    _readonly,
)


class PartitionSplit(NamedTuple):
    """The train / validation / test parts of every client (see :meth:`Partition.split`)."""

    train: Partition
    val: Partition
    test: Partition


@dataclass(frozen=True, eq=False, repr=False)
class Partition:
    r"""Disjoint per-client index sets over a labelled set; immutable.

    Build one with a scheme (:func:`shards`, :func:`dirichlet`, ...) or
    :meth:`from_indices`, not by calling the class.

    Attributes
    ----------
    labels : numpy.ndarray
        ``(N,)`` int64 labels of the partitioned set, read-only.
    index : numpy.ndarray
        ``(M,)`` int64: the clients' sample indices concatenated, client by client, ascending
        within a client; ``M <= N`` (a scheme may leave samples unassigned, see
        :attr:`num_assigned`). Read-only.
    offsets : numpy.ndarray
        ``(n_clients + 1,)`` int64: client ``i`` holds ``index[offsets[i]:offsets[i + 1]]``.
    num_classes : int
        ``L``, the number of label values (columns of :attr:`label_distributions`).
    name : str
        The scheme, e.g. ``"dirichlet"``.
    params : Mapping[str, Any]
        The scheme's JSON-able arguments (``seed`` is ``None`` when it was a Generator).
    info : Mapping[str, Any]
        JSON-able facts about the draw (e.g. how many samples the ``min_size`` repair moved).

    Examples
    --------
    >>> y = tf.data.load("digits").y_train
    >>> p = tf.data.dirichlet(y, 10, alpha=0.5, seed=0)
    >>> p.num_clients, int(p.sizes.sum()), p.label_distributions.shape
    (10, 1442, (10, 10))
    >>> p[3][:5]
    array([13, 18, 22, 26, 42])
    """

    labels: IntArray
    index: IntArray
    offsets: IntArray
    num_classes: int
    name: str = "custom"
    params: Mapping[str, Any] = field(default_factory=dict)
    info: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        object.__setattr__(self, "info", MappingProxyType(dict(self.info)))

    # ------------------------------------------------------------------ constructors
    @classmethod
    def _from_client_of(
        cls,
        labels: IntArray,
        client_of: IntArray,
        n_clients: int,
        num_classes: int,
        name: str,
        params: Mapping[str, Any],
        info: Mapping[str, Any] | None = None,
    ) -> Partition:
        """Canonical form from ``client_of[j]`` (client of sample ``j``, ``-1`` if none; the
        array is not kept: :attr:`client_of` rebuilds it from the index when asked, so that a
        partition holds 8 bytes a sample fewer)."""
        assigned = np.flatnonzero(client_of >= 0)
        owner = client_of[assigned]
        index = assigned[stable_order(owner, n_clients)]  # ascending within each client
        sizes = np.bincount(owner, minlength=n_clients)
        return cls._from_grouped(labels, index, sizes, num_classes, name, params, info)

    @classmethod
    def _from_grouped(
        cls,
        labels: IntArray,
        index: IntArray,
        sizes: IntArray,
        num_classes: int,
        name: str,
        params: Mapping[str, Any],
        info: Mapping[str, Any] | None = None,
    ) -> Partition:
        """Canonical form from ``index``, the samples of client 0, then client 1, ... (``sizes``
        of each), each client's in ascending order."""
        offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        return cls(
            labels=labels if not labels.flags.writeable else _readonly(labels.copy()),
            index=_readonly(index.astype(np.int64)),
            offsets=_readonly(offsets),
            num_classes=num_classes,
            name=name,
            params=params,
            info={} if info is None else info,
        )

    @classmethod
    def from_indices(
        cls,
        indices: Sequence[Any],
        labels: Any,
        *,
        num_classes: int | None = None,
        name: str = "custom",
        params: Mapping[str, Any] | None = None,
    ) -> Partition:
        """Build a partition from explicit per-client index arrays.

        Parameters
        ----------
        indices : sequence of array_like of int
            ``indices[i]`` are the samples of client ``i`` (any order; empty allowed). They must
            be disjoint and lie in ``[0, len(labels))``.
        labels : array_like of int, shape (N,)
            Labels in ``[0, num_classes)``.
        num_classes : int, optional
            ``L``; defaults to ``max(labels) + 1``.
        name, params
            Stored on the result.

        Raises
        ------
        ValueError
            If an index is out of range or held by two clients.

        Examples
        --------
        >>> p = tf.data.Partition.from_indices([[0, 2], [1]], [0, 1, 1])
        >>> p.label_distributions
        array([[1, 1],
               [0, 1]])
        >>> tf.data.Partition.from_indices([[0, 1], [1]], [0, 1, 1])
        Traceback (most recent call last):
        ...
        ValueError: indices must be disjoint: sample 1 is held by clients 0 and 1
        """
        y, L = _check_labels(labels, num_classes)
        if isinstance(indices, (str, bytes)) or not isinstance(indices, Sequence):
            raise TypeError(
                f"indices must be a sequence of index arrays, got {type(indices).__name__}"
            )
        n = len(indices)
        if n == 0:
            raise ValueError("indices must hold at least one client, got none")
        client_of = np.full(y.size, -1, dtype=np.int64)
        for i, idx in enumerate(indices):
            a = _as_int_array(np.asarray(idx).reshape(-1), f"indices[{i}]")
            if a.size and (a.min() < 0 or a.max() >= y.size):
                bad = int(a.min()) if a.min() < 0 else int(a.max())
                raise ValueError(f"indices[{i}] must lie in [0, {y.size}), found {bad}")
            held = client_of[a]
            if np.any(held >= 0) or np.unique(a).size != a.size:
                if np.any(held >= 0):
                    j = int(a[np.flatnonzero(held >= 0)[0]])
                    raise ValueError(
                        f"indices must be disjoint: sample {j} is held by clients "
                        f"{int(client_of[j])} and {i}"
                    )
                raise ValueError(f"indices[{i}] holds a sample twice")
            client_of[a] = i
        return cls._from_client_of(y, client_of, n, L, name, {} if params is None else params)

    # ------------------------------------------------------------------ basic views
    @property
    def num_clients(self) -> int:
        """Number of clients ``n``."""
        return int(self.offsets.size - 1)

    @property
    def num_samples(self) -> int:
        """Size ``N`` of the partitioned set (assigned or not)."""
        return int(self.labels.size)

    @property
    def num_assigned(self) -> int:
        """Number of samples held by some client (``N`` for a covering partition)."""
        return int(self.index.size)

    @property
    def sizes(self) -> IntArray:
        """``(n,)`` int64: number of samples of every client."""
        out: IntArray = np.diff(self.offsets)
        return out

    @cached_property
    def client_of(self) -> IntArray:
        """``(N,)`` int64: the client holding each sample, ``-1`` where none does."""
        c = np.full(self.num_samples, -1, dtype=np.int64)
        c[self.index] = np.repeat(np.arange(self.num_clients), self.sizes)
        return _readonly(c)

    @cached_property
    def label_distributions(self) -> IntArray:
        """``(n, L)`` int64 label counts: ``[i, c]`` samples of class ``c`` at client ``i``.

        The input of :func:`topofl.topologies.dcliques`.
        """
        n, L = self.num_clients, self.num_classes
        owner = np.repeat(np.arange(n), self.sizes)
        counts = np.bincount(owner * L + self.labels[self.index], minlength=n * L)
        return _readonly(counts.reshape(n, L).astype(np.int64))

    def __len__(self) -> int:
        return self.num_clients

    def __getitem__(self, i: int) -> IntArray:
        """Sample indices of client ``i`` (a read-only view, ascending)."""
        k = check_int(i, "client", low=-self.num_clients, high=self.num_clients - 1)
        k %= self.num_clients
        out: IntArray = self.index[self.offsets[k] : self.offsets[k + 1]]
        return out

    def __iter__(self) -> Iterator[IntArray]:
        for k in range(self.num_clients):
            yield self.index[self.offsets[k] : self.offsets[k + 1]]

    @property
    def indices(self) -> tuple[IntArray, ...]:
        """Per-client index arrays (read-only views)."""
        return tuple(self)

    def unassigned(self) -> IntArray:
        """Indices of the samples that no client holds (ascending)."""
        out: IntArray = np.flatnonzero(self.client_of < 0).astype(np.int64)
        return out

    def to_dict(self, *, include_indices: bool = False) -> dict[str, Any]:
        """A JSON-able description (scheme, parameters, sizes; optionally the indices).

        Examples
        --------
        >>> y = tf.data.load("digits").y_train
        >>> tf.data.iid(y, 4, seed=0).to_dict()
        {'name': 'iid', 'params': {'n_clients': 4, 'seed': 0}, 'num_clients': 4, 'num_classes': 10,
         'num_samples': 1442, 'num_assigned': 1442, 'info': {}}
        """
        d: dict[str, Any] = {
            "name": self.name,
            "params": dict(self.params),
            "num_clients": self.num_clients,
            "num_classes": self.num_classes,
            "num_samples": self.num_samples,
            "num_assigned": self.num_assigned,
            "info": dict(self.info),
        }
        if include_indices:
            d["indices"] = [a.tolist() for a in self]
        return d

    def __repr__(self) -> str:
        s = self.sizes
        return (
            f"Partition(name={self.name!r}, n_clients={self.num_clients}, "
            f"samples={self.num_assigned}/{self.num_samples}, classes={self.num_classes}, "
            f"sizes={int(s.min())}..{int(s.max())})"
        )

    # ------------------------------------------------------------------ derived partitions
    def split(self, val: float = 0.0, test: float = 0.2, *, seed: Seed) -> PartitionSplit:
        r"""Split every client's samples into train / validation / test, stratified by label.

        Parameters
        ----------
        val, test : float
            Fractions of each client's samples held out, ``val + test < 1``.
        seed : int or numpy.random.Generator
            Which samples of a (client, class) cell are held out, and how ties are broken.

        Returns
        -------
        PartitionSplit
            Three partitions over the same labels with the same clients; together they hold
            exactly the samples of ``self``.

        Notes
        -----
        Client ``i`` with ``n_i`` samples of ``K_i`` classes (``m_{ic}`` of class ``c``) holds
        out ``T_i = round(test n_i)`` test and ``V_i = round(val n_i)`` validation samples
        (round half up). The held-out ``H_i = T_i + V_i`` samples are apportioned over its
        classes in proportion to ``m_{ic}`` (largest remainder, so ``h_{ic}`` is within one of
        ``H_i m_{ic}/n_i``), with one rule on top: the last sample of a class at a client is
        never held out. Hence every class a client is tested (or validated) on is also one it
        trains on, and ``H_i <= n_i - K_i`` (when that binds, validation is reduced first;
        e.g. a client with one sample of each of its classes keeps them all for training). The
        test part is then apportioned within the held-out counts the same way. Each client's
        test (and validation) label distribution therefore follows its own training
        distribution, the personalized evaluation of DFedPGP and DPFL. Which samples of a
        cell are held out is uniformly random. Cost ``O(N log N + n L log L)``.

        Examples
        --------
        >>> y = tf.data.load("digits").y_train
        >>> parts = tf.data.shards(y, 10, seed=0).split(val=0.1, test=0.2, seed=0)
        >>> [int(p.sizes[0]) for p in parts]
        [101, 14, 29]
        >>> parts.train.label_distributions[0]
        array([ 0, 50,  1,  0,  0,  0,  3, 47,  0,  0])
        >>> parts.test.label_distributions[0]
        array([ 0, 14,  0,  0,  0,  0,  1, 14,  0,  0])
        """
        v = check_real(val, "val", low=0.0, high=1.0, high_open=True)
        t = check_real(test, "test", low=0.0, high=1.0, high_open=True)
        if v + t >= 1.0:
            raise ValueError(f"val + test must be < 1, got {v:g} + {t:g} = {v + t:g}")
        rng = as_generator(seed)
        n, L = self.num_clients, self.num_classes
        m = np.asarray(self.label_distributions)
        sizes = self.sizes
        T = np.floor(t * sizes + 0.5).astype(np.int64)
        V = np.floor(v * sizes + 0.5).astype(np.int64)
        caps = np.maximum(m - 1, 0)
        H = np.minimum(T + V, caps.sum(axis=1))
        T = np.minimum(T, H)
        h = _apportion_capped(H, m, caps, rng)
        tc = _apportion_int(T, h, rng)
        vc = h - tc
        # Sort every client's samples by (label, random) so each (client, class) cell is a run.
        idx = self.index
        owner = np.repeat(np.arange(n), sizes)
        order = grouped_lexsort((rng.random(idx.size), self.labels[idx]), sizes, (2.0, L))
        idx, owner = idx[order], owner[order]
        cell = owner * L + self.labels[idx]
        cell_start = np.concatenate(([0], np.cumsum(m.ravel())[:-1]))
        r = np.arange(idx.size) - cell_start[cell]
        t_flat, v_flat = tc.ravel()[cell], vc.ravel()[cell]
        is_test = r < t_flat
        is_val = ~is_test & (r < t_flat + v_flat)
        is_train = ~(is_test | is_val)
        info = {"val": v, "test": t}
        out = []
        for part, mask in (("train", is_train), ("val", is_val), ("test", is_test)):
            # the part's samples are grouped by client already: sorted within each client,
            # they are the canonical index (what a stable sort of its client_of by client gives)
            part_sizes = np.bincount(owner[mask], minlength=n)
            out.append(
                Partition._from_grouped(
                    self.labels,
                    sort_within_groups(idx[mask], part_sizes),
                    part_sizes,
                    L,
                    self.name,
                    self.params,
                    {**self.info, "split": part, **info, "split_seed": _json_seed(seed)},
                )
            )
        return PartitionSplit(*out)

    def distribute(self, labels: Any, *, seed: Seed) -> Partition:
        r"""Distribute another labelled set (e.g. the official test set) over the same clients.

        Each class ``c`` of ``labels`` (``T_c`` samples) is apportioned over the clients in
        proportion to their counts ``m_{ic}`` in ``self`` (largest remainder), so that client
        ``i`` receives about ``T_c m_{ic} / \sum_j m_{jc}`` samples of class ``c``: when the
        other set has the class proportions of this one (as a test set has), every client's
        share follows its own label distribution. Samples of a class that no client holds stay
        unassigned (``info["unassigned"]`` counts them). This is how DPFL (Appendix F.3.1) and
        DFedPGP give each client a local test set.

        Parameters
        ----------
        labels : array_like of int, shape (N',)
            Labels in ``[0, num_classes)``.
        seed : int or numpy.random.Generator
            Which samples go where, and tie-breaks.

        Returns
        -------
        Partition
            Over ``labels``, with the same number of clients and classes.

        Examples
        --------
        >>> ds = tf.data.load("digits")
        >>> p = tf.data.shards(ds.y_train, 10, seed=0)
        >>> q = p.distribute(ds.y_test, seed=0)
        >>> p.label_distributions[0]
        array([ 0, 71,  1,  0,  0,  0,  4, 68,  0,  0])
        >>> q.label_distributions[0]
        array([ 0, 17,  0,  0,  0,  0,  1, 17,  0,  0])
        """
        y, L = _check_labels(labels, self.num_classes)
        rng = as_generator(seed)
        m = np.asarray(self.label_distributions)
        held = m.sum(axis=0)
        totals = np.bincount(y, minlength=L).astype(np.int64)
        lost = int(totals[held == 0].sum())
        totals = np.where(held == 0, 0, totals)
        counts = _apportion_int(totals, m.T.copy(), rng)
        client_of = _deal(y, counts, rng)
        return Partition._from_client_of(
            y,
            client_of,
            self.num_clients,
            L,
            self.name,
            self.params,
            {
                **self.info,
                "distributed": True,
                "unassigned": lost,
                "distribute_seed": _json_seed(seed),
            },
        )
