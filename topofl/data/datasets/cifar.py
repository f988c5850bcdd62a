"""CIFAR-10 and CIFAR-100 from their binary distributions (parsed as bytes, never unpickled)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from topofl._utils.validation import check_choice
from topofl.data.datasets.base import Dataset, PathLike, _image_dataset
from topofl.data.datasets.files import _ensure_extracted, _folder

_CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse",
                    "ship", "truck")  # fmt: skip


def _cifar_records(
    path: Path, label_bytes: int
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8]]:
    rec = label_bytes + 3 * 32 * 32
    data = np.fromfile(path, dtype=np.uint8)
    if data.size == 0 or data.size % rec:
        raise ValueError(
            f"{path} is not a CIFAR binary file: {data.size} bytes is not a multiple of the "
            f"{rec}-byte record ({label_bytes} label byte(s) + 3072 pixels)"
        )
    data = data.reshape(-1, rec)
    return data[:, :label_bytes], data[:, label_bytes:].reshape(-1, 3, 32, 32)


def _names(path: Path, default: Sequence[str]) -> tuple[str, ...]:
    """The class names of a CIFAR ``*.txt`` meta file (one a line), or ``default`` when the
    file is absent; a file that is not such a list is an error naming it."""
    if not path.is_file():
        return tuple(default)
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{path} is not a text file of class names (byte {raw[exc.start]:#04x} at offset "
            f"{exc.start} is not UTF-8): restore it from the archive, or delete it to use the "
            "standard names") from None
    names = [s.strip() for s in text.splitlines() if s.strip()]
    if default and len(names) != len(default):
        raise ValueError(
            f"{path} names {len(names)} classes, expected {len(default)} (one name a line): "
            "restore it from the archive, or delete it to use the standard names")
    return tuple(names)


def cifar10(root: PathLike | None = None, *, download: bool = False) -> Dataset:
    """CIFAR-10 from its *binary* version (records of 1 label byte + 3072 pixel bytes).

    Reads ``root/cifar10/cifar-10-batches-bin/{data_batch_1..5,test_batch}.bin``, extracting
    ``cifar-10-binary.tar.gz`` first if only the archive is there. Parsed as bytes; the Python
    (pickle) version is never read.
    """
    folder = _folder("cifar10", root, download)
    sub = "cifar-10-batches-bin"
    train_files = [f"{sub}/data_batch_{i}.bin" for i in range(1, 6)]
    test_file = f"{sub}/test_batch.bin"
    _ensure_extracted("cifar10", folder, train_files + [test_file], download)
    xs, ys = [], []
    for f in train_files:
        lab, img = _cifar_records(folder / f, 1)
        xs.append(img)
        ys.append(lab[:, 0])
    lab_t, img_t = _cifar_records(folder / test_file, 1)
    return _image_dataset(
        "cifar10",
        np.concatenate(xs),
        np.concatenate(ys),
        img_t,
        lab_t[:, 0],
        10,
        _names(folder / sub / "batches.meta.txt", _CIFAR10_CLASSES),
        {"root": str(folder)},
    )


def cifar100(
    root: PathLike | None = None, *, download: bool = False, label_mode: str = "fine"
) -> Dataset:
    """CIFAR-100 from its *binary* version (coarse label byte, fine label byte, 3072 pixels).

    Reads ``root/cifar100/cifar-100-binary/{train,test}.bin``. ``label_mode="fine"`` gives the
    100 classes, ``"coarse"`` the 20 superclasses.
    """
    mode = check_choice(label_mode, "label_mode", ("fine", "coarse"))
    folder = _folder("cifar100", root, download)
    sub = "cifar-100-binary"
    files = [f"{sub}/train.bin", f"{sub}/test.bin"]
    _ensure_extracted("cifar100", folder, files, download)
    col = 1 if mode == "fine" else 0
    L = 100 if mode == "fine" else 20
    lab, img = _cifar_records(folder / files[0], 2)
    lab_t, img_t = _cifar_records(folder / files[1], 2)
    names = _names(folder / sub / f"{mode}_label_names.txt", [str(c) for c in range(L)])
    return _image_dataset(
        "cifar100", img, lab[:, col], img_t, lab_t[:, col], L, names,
        {"root": str(folder), "label_mode": mode},
    )  # fmt: skip
