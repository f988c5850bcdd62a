"""Distribution files: where to get them, their checksums, download, verification, extraction."""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import urllib.request
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from topofl._utils.validation import check_bool, check_path
from topofl.data.datasets.base import ChecksumError, PathLike


class Resource(NamedTuple):
    """A distribution file: its name, where to get it, and its published checksum."""

    filename: str
    urls: tuple[str, ...]
    sha256: str | None = None
    md5: str | None = None


_MNIST_MIRRORS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
    "http://yann.lecun.com/exdb/mnist/",
)
_FASHION = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"


def _idx_resources(mirrors: Sequence[str], sha: Mapping[str, str]) -> tuple[Resource, ...]:
    return tuple(Resource(f, tuple(m + f for m in mirrors), sha256=h) for f, h in sha.items())


#: The distribution files of every dataset. Checksums: SHA-256 as listed by TensorFlow Datasets
#: for MNIST, Fashion-MNIST, CIFAR; MD5 as published with CINIC-10 and Tiny-ImageNet.
SOURCES: dict[str, tuple[Resource, ...]] = {
    "mnist": _idx_resources(
        _MNIST_MIRRORS,
        {
            "train-images-idx3-ubyte.gz": "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",  # noqa: E501
            "train-labels-idx1-ubyte.gz": "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",  # noqa: E501
            "t10k-images-idx3-ubyte.gz": "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",  # noqa: E501
            "t10k-labels-idx1-ubyte.gz": "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",  # noqa: E501
        },
    ),
    "fashion_mnist": _idx_resources(
        (_FASHION,),
        {
            "train-images-idx3-ubyte.gz": "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",  # noqa: E501
            "train-labels-idx1-ubyte.gz": "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",  # noqa: E501
            "t10k-images-idx3-ubyte.gz": "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",  # noqa: E501
            "t10k-labels-idx1-ubyte.gz": "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",  # noqa: E501
        },
    ),
    "cifar10": (
        Resource(
            "cifar-10-binary.tar.gz",
            ("https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz",),
            sha256="c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd",  # noqa: E501
        ),
    ),
    "cifar100": (
        Resource(
            "cifar-100-binary.tar.gz",
            ("https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz",),
            sha256="58a81ae192c23a4be8b1804d68e518ed807d710a4eb253b1f2a199162a40d8ec",  # noqa: E501
        ),
    ),
    "cinic10": (
        Resource(
            "CINIC-10.tar.gz",
            (
                "https://datashare.ed.ac.uk/bitstream/handle/10283/3192/CINIC-10.tar.gz",
                "https://datashare.is.ed.ac.uk/bitstream/handle/10283/3192/CINIC-10.tar.gz",
            ),
            md5="6ee4d0c996905fe93221de577967a372",
        ),
    ),
    "tiny_imagenet": (
        Resource(
            "tiny-imagenet-200.zip",
            ("http://cs231n.stanford.edu/tiny-imagenet-200.zip",),
            md5="90528d7ca1a48142e341f4ef8d21d0de",
        ),
    ),
}


def default_root() -> Path:
    """The default data folder, ``~/.cache/topofl``."""
    return Path("~/.cache/topofl").expanduser()


def _folder(name: str, root: PathLike | None, download: Any = False) -> Path:
    """``root/name`` (``root`` defaults to :func:`default_root`), once ``root`` is a path and
    ``download`` a bool (a truthy ``"no"`` must not start a download)."""
    check_path(root, "root")
    check_bool(download, "download")
    base = default_root() if root is None else Path(root).expanduser()
    return base / name


def _digests(path: Path, algos: Sequence[str]) -> dict[str, str]:
    hs = {a: hashlib.new(a) for a in algos}
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            for h in hs.values():
                h.update(block)
    return {a: h.hexdigest() for a, h in hs.items()}


def _expected(res: Resource) -> dict[str, str]:
    exp = {}
    if res.sha256 is not None:
        exp["sha256"] = res.sha256.lower()
    if res.md5 is not None:
        exp["md5"] = res.md5.lower()
    return exp


def _verify(path: Path, res: Resource, *, downloaded: bool) -> None:
    exp = _expected(res)
    if not exp:
        return
    got = _digests(path, list(exp))
    for algo, want in exp.items():
        if got[algo] != want:
            what = (
                "the downloaded file was deleted; try again or download it by hand"
                if downloaded
                else "delete it (or replace it with the official file) and load again"
            )
            if downloaded:
                path.unlink(missing_ok=True)
            raise ChecksumError(
                f"{path} has the wrong {algo.upper()} checksum: expected {want}, found "
                f"{got[algo]}; {what}"
            )


def _download(res: Resource, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    dest = folder / res.filename
    part = folder / (res.filename + ".part")
    errors = []
    for url in res.urls:
        try:
            with urllib.request.urlopen(url, timeout=60) as r, open(part, "wb") as f:  # noqa: S310
                shutil.copyfileobj(r, f, length=1 << 20)
        except OSError as exc:  # URLError is an OSError
            part.unlink(missing_ok=True)
            errors.append(f"{url}: {exc}")
            continue
        _verify(part, res, downloaded=True)
        part.replace(dest)
        return dest
    raise OSError(f"could not download {res.filename} into {folder}: " + "; ".join(errors))


def _fetch(res: Resource, folder: Path, download: bool) -> Path | None:
    """The verified distribution file in ``folder`` (downloaded if allowed), or ``None``."""
    path = folder / res.filename
    if path.is_file():
        _verify(path, res, downloaded=False)
        return path
    if download:
        return _download(res, folder)
    return None


def _missing(name: str, folder: Path, files: Sequence[str], extra: str = "") -> FileNotFoundError:
    urls = [u for r in SOURCES.get(name, ()) for u in r.urls[:1]]
    where = f" Get them from {', '.join(urls)}" if urls else ""
    how = f" or call topofl.data.load({name!r}, root=..., download=True)" if name in SOURCES else ""
    listing = "\n  ".join(str(folder / f) for f in files)
    return FileNotFoundError(
        f"{name} not found. Expected these files:\n  {listing}\n"
        f"{where.strip()}{(' into ' + str(folder)) if where else ''}{how}.{extra}"
    )


def _inside(dest: Path, member: str) -> Path:
    target = (dest / member).resolve()
    if not target.is_relative_to(dest.resolve()):
        raise ValueError(f"refusing to extract {member!r}: it would be written outside {dest}")
    return target


def _extract(archive: Path, dest: Path) -> None:
    """Extract a verified ``.tar.gz`` or ``.zip`` into ``dest`` (regular files and folders only)."""
    dest.mkdir(parents=True, exist_ok=True)
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            for info in z.infolist():
                _inside(dest, info.filename)
            z.extractall(dest)
        return
    with tarfile.open(archive, "r:*") as t:
        members = t.getmembers()
        for m in members:
            _inside(dest, m.name)
            if not (m.isfile() or m.isdir()):
                raise ValueError(
                    f"refusing to extract {m.name!r} from {archive}: not a regular file"
                )
        if hasattr(tarfile, "data_filter"):
            t.extractall(dest, members=members, filter="data")
        else:  # pragma: no cover - Python without PEP 706
            t.extractall(dest, members=members)


def _ensure_extracted(
    name: str, folder: Path, needed: Sequence[str], download: bool, extra: str = ""
) -> None:
    """Extract the dataset's archive into ``folder`` unless every needed file is there."""
    if all((folder / f).exists() for f in needed):
        return
    (res,) = SOURCES[name]
    archive = _fetch(res, folder, download)
    if archive is None:
        raise _missing(
            name,
            folder,
            [res.filename],
            f" (or its extracted contents: {', '.join(needed)}).{extra}",
        )
    _extract(archive, folder)
    absent = [f for f in needed if not (folder / f).exists()]
    if absent:
        raise ValueError(f"{archive} did not contain the expected files {absent}")
