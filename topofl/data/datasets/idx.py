"""MNIST and Fashion-MNIST from their IDX files."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from topofl.data.datasets.base import Dataset, PathLike, as_labels
from topofl.data.datasets.files import (
    SOURCES,
    Resource,
    _content,
    _download,
    _locate,
    _missing,
    _verify,
    _verify_content,
)

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


def _holds_all(name: str) -> Callable[[Path], bool]:
    """Whether a folder holds every IDX file of ``name`` (each ``.gz`` or uncompressed)."""

    def holds(folder: Path) -> bool:
        return all(
            (folder / r.filename).is_file() or (folder / r.filename[: -len(".gz")]).is_file()
            for r in SOURCES[name]
        )

    return holds


def _read_one(res: Resource, folder: Path, download: bool) -> npt.NDArray[Any] | None:
    """The parsed IDX array of ``res`` in ``folder`` (downloaded if allowed), or ``None``.

    The uncompressed file is preferred. With a content checksum, the bytes parsed are verified
    (whatever the gzip wrapper); without, the ``.gz`` is verified as published and an
    uncompressed file is read as it is."""
    raw = folder / res.filename[: -len(".gz")]
    path, gz = folder / res.filename, True
    if raw.is_file():
        path, gz = raw, False
    elif path.is_file():
        if res.content_sha256 is None:
            _verify(path, res, downloaded=False)
    elif download:
        path = _download(res, folder)  # verified (on its content where it has a checksum)
    else:
        return None
    data = _content(path, gz=gz)
    _verify_content(data, path, res)
    return _parse_idx(data, str(path))


def _read_idx_pair(
    name: str, root: PathLike | None, download: bool
) -> tuple[Path, dict[str, npt.NDArray[Any]]]:
    folder, tried = _locate(name, root, download, _holds_all(name))
    out: dict[str, npt.NDArray[Any]] = {}
    missing = []
    for res in SOURCES[name]:
        a = _read_one(res, folder, download)
        if a is None:
            missing.append(res.filename)
        else:
            out[res.filename] = a
    if missing:
        raise _missing(
            name,
            folder,
            missing,
            " Uncompressed files (without .gz) are accepted as well.",
            tried,
        )
    return folder, out


def _idx_dataset(
    name: str, root: PathLike | None, download: bool, classes: Sequence[str]
) -> Dataset:
    folder, a = _read_idx_pair(name, root, download)
    parts = {}
    for split, prefix in (("train", "train"), ("test", "t10k")):
        img = a[f"{prefix}-images-idx3-ubyte.gz"]
        lab = a[f"{prefix}-labels-idx1-ubyte.gz"]
        if img.ndim != 3 or lab.ndim != 1 or img.shape[0] != lab.shape[0]:
            raise ValueError(
                f"{name} {split}: images {img.shape} and labels {lab.shape} do not match "
                "(expected (N, 28, 28) and (N,))"
            )
        x = img.astype(np.float32)
        x /= np.float32(255.0)  # in place: one float32 copy of the images at a time
        parts[split] = (x[:, None], as_labels(lab, f"{name} {split} labels"))
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
    """Fashion-MNIST from its four IDX files (60,000 train and 10,000 test 28x28 images of
    10 kinds of clothing, 6,000 and 1,000 a class), as upstream or Debian ships them.

    Parameters
    ----------
    root : str or os.PathLike, optional
        Where the files ``{train,t10k}-{images-idx3,labels-idx1}-ubyte`` (``.gz`` or not) are.
        ``None`` (the default): ``~/.cache/topofl/fashion_mnist/``, then
        ``<d>/datasets/fashion-mnist/`` for each ``d`` in ``$XDG_DATA_DIRS`` (default
        ``/usr/local/share:/usr/share``), where Debian's package ``dataset-fashion-mnist``
        installs them: after ``apt-get install dataset-fashion-mnist`` this loads with no
        further step. A path: ``root/fashion_mnist/``, ``root/fashion-mnist/``, then ``root``
        itself (so ``root="/usr/share/datasets"`` and
        ``root="/usr/share/datasets/fashion-mnist"`` both work). The first folder holding all
        four files is read; ``params["root"]`` records it.
    download : bool, default False
        Download the missing files from upstream's server into the first folder
        (``root/fashion_mnist/``).

    Returns
    -------
    Dataset
        Pixels ``float32`` in ``[0, 1]`` of shape ``(N, 1, 28, 28)``; labels ``int64``.

    Raises
    ------
    TypeError
        ``root`` is not a path or ``download`` not a bool.
    FileNotFoundError
        No folder holds the four files and ``download=False``: the message lists the files
        expected, the folders looked in and how to get them (Debian's package, the files put in
        place, or ``download=True``).
    ChecksumError
        A file's decompressed content does not have its SHA-256 (the gzip wrapper itself does
        not matter: Debian's ``.gz`` differ from upstream's in their header only), or a ``.gz``
        cannot be decompressed.

    Examples
    --------
    >>> tf.data.fashion_mnist(root="/nonexistent")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    FileNotFoundError: fashion_mnist not found. Expected these files:
      /nonexistent/fashion_mnist/train-images-idx3-ubyte.gz
    ...
    On Debian/Ubuntu, `apt-get install dataset-fashion-mnist` installs them under ...
    """
    classes = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
               "Sneaker", "Bag", "Ankle boot")  # fmt: skip
    return _idx_dataset("fashion_mnist", root, download, classes)
