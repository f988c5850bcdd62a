"""Distribution files: where to get them, their checksums, download, verification, extraction."""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tarfile
import urllib.request
import zipfile
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from topofl._utils.validation import check_bool, check_path
from topofl.data.datasets.base import ChecksumError, PathLike


class Resource(NamedTuple):
    """A distribution file: its name, where to get it, and its checksums.

    ``sha256`` and ``md5`` are those of the file as published (for a ``.gz``: the gzip wrapper,
    whose header holds a file name and a time that repackagers change). ``content_sha256``, where
    known, is the SHA-256 of the decompressed content (the bytes actually parsed); a resource that
    has one is verified on its content only, so any gzip wrapper of that content, or the
    uncompressed file, is accepted.
    """

    filename: str
    urls: tuple[str, ...]
    sha256: str | None = None
    md5: str | None = None
    content_sha256: str | None = None


_MNIST_MIRRORS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
    "http://yann.lecun.com/exdb/mnist/",
)
_FASHION = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"


def _idx_resources(
    mirrors: Sequence[str], sha: Mapping[str, str], content: Mapping[str, str] | None = None
) -> tuple[Resource, ...]:
    return tuple(
        Resource(f, tuple(m + f for m in mirrors), sha256=h,
                 content_sha256=None if content is None else content[f])
        for f, h in sha.items()
    )  # fmt: skip


#: The distribution files of every dataset. Checksums: SHA-256 as listed by TensorFlow Datasets
#: for MNIST, Fashion-MNIST, CIFAR; MD5 as published with CINIC-10 and Tiny-ImageNet. The content
#: SHA-256 of Fashion-MNIST (``zcat f | sha256sum``) was measured on the files of Debian's package
#: ``dataset-fashion-mnist``, whose ``.gz`` wrap the same content in another gzip header.
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
        {  # decompressed: 47,040,016, 60,008, 7,840,016 and 10,008 bytes
            "train-images-idx3-ubyte.gz": "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",  # noqa: E501
            "train-labels-idx1-ubyte.gz": "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",  # noqa: E501
            "t10k-images-idx3-ubyte.gz": "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",  # noqa: E501
            "t10k-labels-idx1-ubyte.gz": "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",  # noqa: E501
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


class Places(NamedTuple):
    """Where a dataset's files may be besides ``root/<name>``.

    ``names``: other folders tried under a given ``root`` (``"."`` is ``root`` itself).
    ``system``: folders tried, with ``root=None``, under each ``$XDG_DATA_DIRS`` entry (default
    ``/usr/local/share:/usr/share``), where a distribution's package installs them.
    ``package``: that distribution package (Debian's), named in the missing-files message.
    """

    names: tuple[str, ...] = ()
    system: tuple[str, ...] = ()
    package: str | None = None


#: The datasets whose files may also be elsewhere than ``root/<name>``.
PLACES: dict[str, Places] = {
    "fashion_mnist": Places(
        names=("fashion-mnist", "."),
        system=("datasets/fashion-mnist",),
        package="dataset-fashion-mnist",
    ),
}


def _data_dirs() -> list[Path]:
    """The ``$XDG_DATA_DIRS`` entries (absolute ones only, as the XDG spec says), by default
    ``/usr/local/share`` and ``/usr/share``."""
    dirs = os.environ.get("XDG_DATA_DIRS", "") or "/usr/local/share:/usr/share"
    return [Path(d) for d in dirs.split(":") if d and os.path.isabs(d)]


def _candidates(name: str, root: PathLike | None, download: Any = False) -> list[Path]:
    """The folders where ``name``'s files may be, in the order tried: with ``root=None``,
    ``default_root()/name`` then the system folders of :data:`PLACES`; with a ``root``,
    ``root/name`` then ``root/<each other name>``. The first is where files are put."""
    first = _folder(name, root, download)
    places = PLACES.get(name, Places())
    if root is None:
        more = [d / s for d in _data_dirs() for s in places.system]
    else:
        more = [first.parent / n for n in places.names]
    out: list[Path] = []
    for f in [first, *more]:
        if f not in out:
            out.append(f)
    return out


def _locate(
    name: str, root: PathLike | None, download: Any, holds: Callable[[Path], bool]
) -> tuple[Path, list[Path]]:
    """The first candidate folder that ``holds`` the dataset's files (else the first candidate,
    where files are put or downloaded), and every candidate tried."""
    tried = _candidates(name, root, download)
    return next((f for f in tried if holds(f)), tried[0]), tried


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


def _remedy(path: Path, downloaded: bool) -> str:
    """What to do about a file that failed verification (a downloaded one is deleted)."""
    if downloaded:
        path.unlink(missing_ok=True)
        return "the downloaded file was deleted; try again or download it by hand"
    return "delete it (or replace it with the official file) and load again"


def _content(path: Path, *, gz: bool) -> bytes:
    """The bytes ``path`` holds once decompressed (``gz``) or as they are; a ``.gz`` that cannot
    be decompressed (truncated, not gzip, damaged) is a :class:`ChecksumError`."""
    if not gz:
        return path.read_bytes()
    with open(path, "rb") as fh:  # a file that cannot be opened stays an OSError
        try:
            with gzip.GzipFile(fileobj=fh, mode="rb") as f:
                return f.read()
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise ChecksumError(
                f"{path} cannot be decompressed ({type(exc).__name__}: {exc}): truncated, "
                "damaged or not gzip; replace it with the official file"
            ) from None


def _verify_content(data: bytes, path: Path, res: Resource, *, downloaded: bool = False) -> None:
    """``data`` (the bytes read from ``path``, decompressed) against ``res.content_sha256``."""
    if res.content_sha256 is None:
        return
    want = res.content_sha256.lower()
    found = hashlib.sha256(data).hexdigest()
    if found != want:
        raise ChecksumError(
            f"{path} has the wrong content: the SHA-256 of its decompressed bytes is {found}, "
            f"expected {want} (the gzip wrapper does not matter: any .gz of the right content, "
            f"or the uncompressed file, is accepted); {_remedy(path, downloaded)}"
        )


def _verify(path: Path, res: Resource, *, downloaded: bool) -> None:
    """``path`` (holding ``res``) against its content checksum where ``res`` has one, else
    against the checksums of the file as published."""
    if res.content_sha256 is not None:
        data = _content(path, gz=res.filename.endswith(".gz"))
        _verify_content(data, path, res, downloaded=downloaded)
        return
    exp = _expected(res)
    if not exp:
        return
    got = _digests(path, list(exp))
    for algo, want in exp.items():
        if got[algo] != want:
            what = _remedy(path, downloaded)
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


def _missing(
    name: str, folder: Path, files: Sequence[str], extra: str = "", tried: Sequence[Path] = ()
) -> FileNotFoundError:
    urls = [u for r in SOURCES.get(name, ()) for u in r.urls[:1]]
    where = f" Get them from {', '.join(urls)}" if urls else ""
    how = f" or call topofl.data.load({name!r}, root=..., download=True)" if name in SOURCES else ""
    listing = "\n  ".join(str(folder / f) for f in files)
    also = [str(f) for f in tried if f != folder]
    looked = f"\nAlso looked in: {', '.join(also)}." if also else ""
    package = PLACES[name].package if name in PLACES else None
    apt = ""
    if package is not None:
        system = PLACES[name].system[0]
        apt = (
            f"\nOn Debian/Ubuntu, `apt-get install {package}` installs them under "
            f"/usr/share/{system}, where topofl.data.load({name!r}) finds them with no further "
            f"step (or root='/usr/share/{system}'); otherwise put the files in {folder}, or "
            "pass download=True."
        )
    return FileNotFoundError(
        f"{name} not found. Expected these files:\n  {listing}\n"
        f"{where.strip()}{(' into ' + str(folder)) if where else ''}{how}.{extra}{looked}{apt}"
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
