"""Image-folder datasets: CINIC-10 and Tiny-ImageNet."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from topofl.data.datasets.base import I64, Dataset, PathLike, _image_dataset
from topofl.data.datasets.cifar import _CIFAR10_CLASSES
from topofl.data.datasets.files import SOURCES, _ensure_extracted, _folder

_IMG_EXT = (".png", ".jpg", ".jpeg", ".bmp")
#: The folders ``CINIC-10.tar.gz`` extracts into ``root/cinic10``.
_CINIC_SPLITS = ("train", "valid", "test")


def _damaged_image(path: Path, exc: OSError, name: str, folder: Path,
                   extracted: Sequence[str]) -> ValueError:
    """The error for an image PIL cannot decode: the file, the dataset's folder, and how to get
    the file back (from the archive the loader extracts when its folders are absent)."""
    from PIL import UnidentifiedImageError

    (res,) = SOURCES[name]
    what = ("not an image format PIL recognises" if isinstance(exc, UnidentifiedImageError)
            else str(exc))
    return ValueError(
        f"{path} is not a readable image ({what}): dataset {name!r} in {folder} holds a "
        f"damaged file; replace it with the one in {res.filename}, or delete the "
        f"folder{'s' if len(extracted) > 1 else ''} {', '.join(extracted)} there and load again "
        f"to extract {res.filename} anew (download=True fetches the archive if it is absent)"
    )


def _read_images(paths: Sequence[Path], size: tuple[int, int], name: str, folder: Path,
                 extracted: Sequence[str]) -> npt.NDArray[np.uint8]:
    """The images ``uint8 (len(paths), 3, *size)``; one PIL cannot decode is a ``ValueError``
    naming it and ``name``'s ``folder`` (``extracted``: the folders its archive fills)."""
    from PIL import Image

    out = np.empty((len(paths), 3, size[0], size[1]), dtype=np.uint8)
    for k, p in enumerate(paths):
        try:
            with Image.open(p) as im:
                a = np.asarray(im.convert("RGB"))
        except OSError as exc:
            if exc.errno is not None or str(exc).startswith(("decoder ", "encoder ")):
                raise  # the file system's error (permissions, a disk), PIL built without a codec
            # PIL's: UnidentifiedImageError, "image file is truncated", a broken data stream
            raise _damaged_image(p, exc, name, folder, extracted) from None
        if a.shape[:2] != size:
            raise ValueError(
                f"{p} is {a.shape[1]}x{a.shape[0]} pixels, expected {size[1]}x{size[0]}"
            )
        out[k] = a.transpose(2, 0, 1)
    return out


def _images_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in _IMG_EXT)


def cinic10(
    root: PathLike | None = None, *, download: bool = False, include_valid: bool = False
) -> Dataset:
    """CINIC-10 from its image folders (``train``, ``valid``, ``test``; 90,000 PNGs each).

    Reads ``root/cinic10/{train,valid,test}/<class>/*.png`` (the layout of ``CINIC-10.tar.gz``,
    extracted first if only the archive is there). ``include_valid=True`` appends the validation
    images to the training set, as DPFL does (Appendix F.5.1). Decoding 270,000 PNGs takes a
    minute or two. An image that cannot be decoded (damaged, truncated) is a ``ValueError``
    naming it, the folder and how to restore it from the archive.
    """
    if not isinstance(include_valid, bool):
        raise TypeError(f"include_valid must be a bool, got {type(include_valid).__name__}")
    folder = _folder("cinic10", root, download)
    needed = [f"{s}/{c}" for s in _CINIC_SPLITS for c in _CIFAR10_CLASSES]
    _ensure_extracted("cinic10", folder, needed, download)
    parts: dict[str, tuple[npt.NDArray[np.uint8], I64]] = {}
    for split in _CINIC_SPLITS:
        paths: list[Path] = []
        labels: list[int] = []
        for c, cls in enumerate(_CIFAR10_CLASSES):
            imgs = _images_in(folder / split / cls)
            paths += imgs
            labels += [c] * len(imgs)
        parts[split] = (_read_images(paths, (32, 32), "cinic10", folder, _CINIC_SPLITS),
                        np.asarray(labels, dtype=np.int64))
    x, y = parts["train"]
    if include_valid:
        x = np.concatenate([x, parts["valid"][0]])
        y = np.concatenate([y, parts["valid"][1]])
    return _image_dataset(
        "cinic10", x, y, parts["test"][0], parts["test"][1], 10, _CIFAR10_CLASSES,
        {"root": str(folder), "include_valid": include_valid},
    )  # fmt: skip


def tiny_imagenet(root: PathLike | None = None, *, download: bool = False) -> Dataset:
    """Tiny-ImageNet-200 (64x64 colour, 200 classes) from its image folders.

    Reads ``root/tiny_imagenet/tiny-imagenet-200/``: the classes are the WordNet ids of
    ``wnids.txt`` in sorted order; training images are ``train/<wnid>/images/*.JPEG`` (500 per
    class) and the test set is the labelled ``val/images/*.JPEG`` (labels from
    ``val/val_annotations.txt``; the official ``test/`` folder has no labels). Greyscale JPEGs
    are converted to RGB. ``tiny-imagenet-200.zip`` is extracted first if only it is there. An
    image that cannot be decoded is a ``ValueError`` naming it, the folder and how to restore
    it from the archive.
    """
    folder = _folder("tiny_imagenet", root, download)
    base = "tiny-imagenet-200"
    _ensure_extracted(
        "tiny_imagenet",
        folder,
        [f"{base}/wnids.txt", f"{base}/train", f"{base}/val/val_annotations.txt"],
        download,
    )
    top = folder / base
    wnids = sorted({s.strip() for s in (top / "wnids.txt").read_text().splitlines() if s.strip()})
    cid = {w: i for i, w in enumerate(wnids)}
    paths: list[Path] = []
    labels: list[int] = []
    for w in wnids:
        imgs = _images_in(top / "train" / w / "images")
        paths += imgs
        labels += [cid[w]] * len(imgs)
    val_paths: list[Path] = []
    val_labels: list[int] = []
    for line in (top / "val" / "val_annotations.txt").read_text().splitlines():
        cols = line.split("\t")
        if len(cols) < 2:
            continue
        if cols[1] not in cid:
            raise ValueError(f"val_annotations.txt names class {cols[1]!r}, absent from wnids.txt")
        val_paths.append(top / "val" / "images" / cols[0])
        val_labels.append(cid[cols[1]])
    order = np.argsort([p.name for p in val_paths], kind="stable")
    words: dict[str, str] = {}
    if (top / "words.txt").is_file():
        for line in (top / "words.txt").read_text().splitlines():
            k, _, v = line.partition("\t")
            words[k] = v
    return _image_dataset(
        "tiny_imagenet",
        _read_images(paths, (64, 64), "tiny_imagenet", folder, [base]),
        np.asarray(labels, dtype=np.int64),
        _read_images([val_paths[k] for k in order], (64, 64), "tiny_imagenet", folder, [base]),
        np.asarray(val_labels, dtype=np.int64)[order],
        len(wnids),
        [words.get(w, w) for w in wnids],
        {"root": str(folder)},
    )
