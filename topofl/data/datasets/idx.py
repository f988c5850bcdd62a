"""MNIST and Fashion-MNIST from their IDX files."""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from topofl.data.datasets.base import Dataset, PathLike, as_labels
from topofl.data.datasets.files import SOURCES, _fetch, _folder, _missing

_IDX_TYPES: dict[int, Any] = {
    0x08: np.uint8,
    0x09: np.int8,
    0x0B: ">i2",
    0x0C: ">i4",
    0x0D: ">f4",
    0x0E: ">f8",
}


def _parse_idx(data: bytes, source: str) -> npt.NDArray[Any]:
    """Parse an IDX file (magic ``00 00 type ndim``, big-endian uint32 dims, then the data)."""
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_TYPES:
        raise ValueError(f"{source} is not an IDX file (bad magic number {data[:4]!r})")
    ndim = data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(f"{source} is truncated: {len(data)} bytes, header needs {header}")
    dims = tuple(int(v) for v in np.frombuffer(data, dtype=">u4", count=ndim, offset=4))
    dt = np.dtype(_IDX_TYPES[data[2]])
    expected = header + int(np.prod(dims, dtype=np.int64)) * dt.itemsize
    if len(data) != expected:
        raise ValueError(
            f"{source} has {len(data)} bytes but its header {dims} announces {expected}"
        )
    return np.frombuffer(data, dtype=dt, offset=header).reshape(dims)


def _read_idx_pair(name: str, folder: Path, download: bool) -> dict[str, npt.NDArray[Any]]:
    out: dict[str, npt.NDArray[Any]] = {}
    missing = []
    for res in SOURCES[name]:
        raw = folder / res.filename[: -len(".gz")]
        if raw.is_file():
            out[res.filename] = _parse_idx(raw.read_bytes(), str(raw))
            continue
        path = _fetch(res, folder, download)
        if path is None:
            missing.append(res.filename)
            continue
        with gzip.open(path, "rb") as f:
            out[res.filename] = _parse_idx(f.read(), str(path))
    if missing:
        raise _missing(
            name, folder, missing, " Uncompressed files (without .gz) are accepted as well."
        )
    return out


def _idx_dataset(
    name: str, root: PathLike | None, download: bool, classes: Sequence[str]
) -> Dataset:
    folder = _folder(name, root, download)
    a = _read_idx_pair(name, folder, download)
    parts = {}
    for split, prefix in (("train", "train"), ("test", "t10k")):
        img = a[f"{prefix}-images-idx3-ubyte.gz"]
        lab = a[f"{prefix}-labels-idx1-ubyte.gz"]
        if img.ndim != 3 or lab.ndim != 1 or img.shape[0] != lab.shape[0]:
            raise ValueError(
                f"{name} {split}: images {img.shape} and labels {lab.shape} do not match "
                "(expected (N, 28, 28) and (N,))"
            )
        parts[split] = (
            (img.astype(np.float32) / np.float32(255.0))[:, None],
            as_labels(lab, f"{name} {split} labels"),
        )
    return Dataset(
        name=name,
        x_train=parts["train"][0],
        y_train=parts["train"][1],
        x_test=parts["test"][0],
        y_test=parts["test"][1],
        num_classes=10,
        input_shape=(1,) + tuple(parts["train"][0].shape[2:]),
        classes=tuple(classes),
        params={"root": str(folder)},
    )


def mnist(root: PathLike | None = None, *, download: bool = False) -> Dataset:
    """MNIST from its four IDX files (60,000 train and 10,000 test 28x28 digits).

    Reads ``root/mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte`` (``.gz`` or not).

    Examples
    --------
    >>> tf.data.mnist(root="/nonexistent")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    FileNotFoundError: mnist not found. Expected these files:
      /nonexistent/mnist/train-images-idx3-ubyte.gz
    ...
    """
    return _idx_dataset("mnist", root, download, [str(c) for c in range(10)])


def fashion_mnist(root: PathLike | None = None, *, download: bool = False) -> Dataset:
    """Fashion-MNIST from its four IDX files, read from ``root/fashion_mnist/``."""
    classes = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
               "Sneaker", "Bag", "Ankle boot")  # fmt: skip
    return _idx_dataset("fashion_mnist", root, download, classes)
