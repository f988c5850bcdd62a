"""The frozen :class:`Dataset` every loader returns."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

PathLike = str | os.PathLike[str]
F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]


def as_labels(values: Any, what: str) -> I64:
    """``values`` as a 1-D ``int64`` array, exactly: the one label check every loader uses.

    Integers pass; floats pass only when every one is a whole number (``1.0`` -> ``1``): a
    label ``1.5`` is refused, never truncated to ``1``. NaN, booleans, strings and nested
    sequences are refused too.

    Examples
    --------
    >>> from topofl.data.datasets.base import as_labels
    >>> as_labels([0, 2.0, 1], "y").tolist()
    [0, 2, 1]
    >>> as_labels([0, 1.5], "femnist train labels of user u7")
    Traceback (most recent call last):
    ...
    ValueError: femnist train labels of user u7 must be whole numbers, found 1.5 at index 1
    """
    try:
        a = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be a flat sequence of integers ({exc})") from None
    a = a.reshape(-1) if a.ndim <= 1 else a
    if a.ndim != 1:
        raise ValueError(f"{what} must be a flat sequence of integers, got shape {a.shape}")
    if a.size == 0:
        return np.zeros(0, dtype=np.int64)
    if a.dtype.kind in "iu":
        return a.astype(np.int64)
    if a.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(a) | (a != np.round(a)))
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"{what} must be whole numbers, found {a[i].item()!r} at index {i}")
        if np.any(np.abs(a) > 2**53):
            raise ValueError(f"{what} must be integers below 2**53, found {a.max().item()!r}")
        return a.astype(np.int64)
    raise ValueError(f"{what} must be integers, found {a.dtype} values, e.g. {a[0].item()!r}")


def check_finite(x: npt.NDArray[Any], what: str) -> None:
    """Raise ``ValueError`` naming the first NaN or infinite value of ``x`` (any shape)."""
    if x.dtype.kind in "fc" and not np.all(np.isfinite(x)):
        idx = np.unravel_index(int(np.flatnonzero(~np.isfinite(x.reshape(-1)))[0]), x.shape)
        bad = x[idx].item()
        raise ValueError(
            f"{what} must be finite, found {bad!r} at index {tuple(int(i) for i in idx)}"
        )


class ChecksumError(ValueError):
    """A distribution file does not have its published checksum (corrupt or wrong file), or
    cannot be decompressed to the content its checksum covers (truncated, damaged)."""


@dataclass(frozen=True, eq=False, repr=False)
class Dataset:
    """A labelled train/test dataset held as numpy arrays; immutable.

    Attributes
    ----------
    name : str
    x_train, x_test : numpy.ndarray
        ``float32`` features of shape ``(N, *input_shape)`` (read-only), finite: every loader
        refuses NaN and infinite values here.
    y_train, y_test : numpy.ndarray
        ``int64`` labels in ``[0, num_classes)`` (read-only).
    num_classes : int
    input_shape : tuple of int
        Shape of one sample, channels first for images, e.g. ``(1, 8, 8)``.
    classes : tuple of str
        Class names (may be empty).
    groups_train, groups_test : numpy.ndarray or None
        ``int64`` natural group (e.g. FEMNIST writer) of every sample, for
        :func:`topofl.data.natural`; ``None`` for datasets without groups.
    group_names : tuple of str
        Name of every group id (e.g. the LEAF user names).
    params : Mapping[str, Any]
        JSON-able options the dataset was loaded with.

    Examples
    --------
    >>> ds = tf.data.load("synthetic", n_samples=100, dim=5, num_classes=3, seed=0)
    >>> ds.x_train.shape, ds.x_test.shape, ds.input_shape, np.bincount(ds.y_train).tolist()
    ((100, 5), (20, 5), (5,), [34, 33, 33])
    """

    name: str
    x_train: F32
    y_train: I64
    x_test: F32
    y_test: I64
    num_classes: int
    input_shape: tuple[int, ...]
    classes: tuple[str, ...] = ()
    groups_train: I64 | None = None
    groups_test: I64 | None = None
    group_names: tuple[str, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        L = self.num_classes
        for part in ("train", "test"):
            x = getattr(self, f"x_{part}")
            y = getattr(self, f"y_{part}")
            if x.dtype != np.float32 or y.dtype != np.int64:
                raise TypeError(
                    f"x_{part} must be float32 and y_{part} int64, got {x.dtype} and {y.dtype}"
                )
            check_finite(x, f"{self.name} x_{part}")
            if x.shape[0] != y.shape[0] or tuple(x.shape[1:]) != tuple(self.input_shape):
                raise ValueError(
                    f"x_{part} must have shape (N, *{tuple(self.input_shape)}) with N = "
                    f"len(y_{part}) = {y.shape[0]}, got {x.shape}"
                )
            if y.size and (int(y.min()) < 0 or int(y.max()) >= L):
                raise ValueError(
                    f"y_{part} must lie in [0, {L}), found {int(y.min())}..{int(y.max())}"
                )
            g = getattr(self, f"groups_{part}")
            if g is not None and g.shape != y.shape:
                raise ValueError(f"groups_{part} must have shape {y.shape}, got {g.shape}")
            # Read-only views: the caller's arrays keep their own flags.
            for attr in (f"x_{part}", f"y_{part}", f"groups_{part}"):
                a = getattr(self, attr)
                if a is not None:
                    v = a.view()
                    v.flags.writeable = False
                    object.__setattr__(self, attr, v)

    @classmethod
    def from_torch(
        cls,
        train: Any,
        test: Any = None,
        *,
        num_classes: int | None = None,
        name: str = "torch",
        classes: Sequence[str] = (),
    ) -> Dataset:
        """A :class:`Dataset` from ``torch.utils.data.Dataset`` objects of ``(x, y)`` pairs.

        Every sample is read once (``len`` and ``[i]``; a ``TensorDataset`` of two tensors is
        taken as a whole). ``x`` must be a tensor or array -- a torchvision dataset needs
        ``transform=torchvision.transforms.ToTensor()`` -- and is stored as float32 with its
        values unchanged; ``y`` must be a whole number.

        Parameters
        ----------
        train : torch.utils.data.Dataset
            The training samples.
        test : torch.utils.data.Dataset, optional
            The test samples; without it the test split is empty (partition with a ``test``
            fraction then).
        num_classes : int, optional
            Default: the largest label plus one.
        name, classes
            Stored on the result.

        Raises
        ------
        TypeError
            If a dataset is not a torch ``Dataset`` or a sample is not an ``(x, y)`` pair of
            numbers/tensors.
        ValueError
            If the datasets are empty, shapes differ between samples, a label is not a
            non-negative whole number below ``num_classes``, or ``x`` holds NaN/inf.

        Examples
        --------
        >>> import torch
        >>> from torch.utils.data import TensorDataset
        >>> tr = TensorDataset(torch.rand(6, 1, 4, 4), torch.tensor([0, 1, 2, 0, 1, 2]))
        >>> ds = tf.data.Dataset.from_torch(tr, TensorDataset(torch.rand(2, 1, 4, 4),
        ...                                                   torch.tensor([2, 0])))
        >>> ds
        Dataset(name='torch', train=6, test=2, input_shape=(1, 4, 4), num_classes=3)
        """
        xs_tr, ys_tr = _torch_samples(train, "train")
        if test is None:
            xs_te = np.zeros((0, *xs_tr.shape[1:]), dtype=np.float32)
            ys_te = np.zeros(0, dtype=np.int64)
        else:
            xs_te, ys_te = _torch_samples(test, "test")
            if xs_te.shape[1:] != xs_tr.shape[1:]:
                raise ValueError(
                    f"test samples have shape {xs_te.shape[1:]}, train samples {xs_tr.shape[1:]}"
                )
        for part, y in (("train", ys_tr), ("test", ys_te)):
            if y.size and int(y.min()) < 0:
                raise ValueError(f"{part} labels must be >= 0, found {int(y.min())}")
        top = int(max(ys_tr.max(initial=-1), ys_te.max(initial=-1))) + 1
        L = top if num_classes is None else num_classes
        if isinstance(L, bool) or not isinstance(L, int) or L < 1:
            raise ValueError(f"num_classes must be an int >= 1, got {num_classes!r}")
        return cls(
            name=name, x_train=xs_tr, y_train=ys_tr, x_test=xs_te, y_test=ys_te,
            num_classes=L, input_shape=tuple(int(d) for d in xs_tr.shape[1:]),
            classes=tuple(classes), params={"source": "torch"},
        )

    def __repr__(self) -> str:
        return (
            f"Dataset(name={self.name!r}, train={self.y_train.size}, test={self.y_test.size}, "
            f"input_shape={tuple(self.input_shape)}, num_classes={self.num_classes})"
        )

    def standardized(self) -> Dataset:
        """A copy with zero mean and unit variance per channel, using training statistics.

        Statistics are taken over every axis but the channel axis (axis 1 of ``(N, C, H, W)``;
        per feature for ``(N, d)``) of ``x_train`` and applied to both splits.

        Examples
        --------
        >>> ds = tf.data.load("digits").standardized()
        >>> round(float(ds.x_train.mean()), 4), round(float(ds.x_train.std()), 4)
        (0.0, 1.0)
        """
        axes = (0,) + tuple(range(2, self.x_train.ndim))
        mean = self.x_train.mean(axis=axes, keepdims=True, dtype=np.float64)
        std = self.x_train.std(axis=axes, keepdims=True, dtype=np.float64)
        std = np.where(std > 0, std, 1.0)
        return replace(
            self,
            x_train=((self.x_train - mean) / std).astype(np.float32),
            x_test=((self.x_test - mean) / std).astype(np.float32),
            params={**self.params, "standardized": True},
        )


def _image_dataset(
    name: str,
    x: npt.NDArray[np.uint8],
    y: npt.NDArray[Any],
    xt: npt.NDArray[np.uint8],
    yt: npt.NDArray[Any],
    L: int,
    classes: Sequence[str],
    params: Mapping[str, Any],
) -> Dataset:
    for part, lab in (("train", y), ("test", yt)):
        if lab.size and int(lab.max()) >= L:
            raise ValueError(f"{name} {part} labels must lie in [0, {L}), found {int(lab.max())}")
    scale = np.float32(1.0 / 255.0)
    return Dataset(
        name=name,
        x_train=x.astype(np.float32) * scale,
        y_train=as_labels(y, f"{name} train labels"),
        x_test=xt.astype(np.float32) * scale,
        y_test=as_labels(yt, f"{name} test labels"),
        num_classes=L,
        input_shape=tuple(int(s) for s in x.shape[1:]),
        classes=tuple(classes),
        params=params,
    )


def _torch_samples(ds: Any, part: str) -> tuple[F32, I64]:
    """All ``(x, y)`` of a torch ``Dataset`` as a float32 ``(N, ...)`` and an int64 ``(N,)``."""
    import torch
    from torch.utils.data import Dataset as TorchDataset
    from torch.utils.data import TensorDataset

    if not isinstance(ds, TorchDataset):
        raise TypeError(f"{part} must be a torch.utils.data.Dataset, got {type(ds).__name__}")
    if isinstance(ds, TensorDataset) and len(ds.tensors) == 2:
        x_t, y_t = ds.tensors
        x = x_t.detach().cpu().to(torch.float32).numpy()
        y = as_labels(y_t.detach().cpu().numpy(), f"{part} labels")
    else:
        try:
            n = len(ds)  # type: ignore[arg-type]
        except TypeError:
            raise TypeError(f"{part} dataset must have a length (a map-style Dataset)") from None
        xs: list[Any] = []
        ys: list[Any] = []
        for i in range(n):
            item = ds[i]
            if not isinstance(item, (tuple, list)) or len(item) != 2:
                raise TypeError(
                    f"{part} sample {i} must be an (x, y) pair, got {type(item).__name__}"
                )
            xi, yi = item
            if isinstance(xi, torch.Tensor):
                xi = xi.detach().cpu().to(torch.float32).numpy()
            elif not isinstance(xi, (np.ndarray, int, float)):
                raise TypeError(
                    f"{part} sample {i}: x must be a tensor or array, got {type(xi).__name__} "
                    "(for a torchvision dataset pass transform=torchvision.transforms.ToTensor())"
                )
            if isinstance(yi, torch.Tensor):
                if yi.numel() != 1:
                    raise ValueError(f"{part} sample {i}: y must be one label, got {yi.shape}")
                yi = yi.item()
            xs.append(np.asarray(xi, dtype=np.float32))
            ys.append(yi)
        if not xs:
            raise ValueError(f"{part} dataset is empty")
        shapes = {a.shape for a in xs}
        if len(shapes) > 1:
            raise ValueError(f"{part} samples must all have one shape, found {sorted(shapes)}")
        x = np.stack(xs)
        y = as_labels(ys, f"{part} labels")
    if x.shape[0] == 0:
        raise ValueError(f"{part} dataset is empty")
    if x.ndim == 1:
        x = x[:, None]
    return np.ascontiguousarray(x, dtype=np.float32), y
