"""Fashion-MNIST as Debian's ``dataset-fashion-mnist`` ships it: found in the system's datasets
folders, verified on the decompressed content (any gzip wrapper), and the real installed files."""

from __future__ import annotations

import gzip
import hashlib
import io
import struct
import time
from pathlib import Path

import numpy as np
import pytest

import topofl as tf
from topofl.data.datasets import ChecksumError, Resource
from topofl.data.datasets import files as F

NAMES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
         "t10k-labels-idx1-ubyte")  # fmt: skip
DEBIAN = Path("/usr/share/datasets/fashion-mnist")


def idx_bytes(a: np.ndarray) -> bytes:
    return struct.pack(">BBBB", 0, 0, 0x08, a.ndim) + struct.pack(f">{a.ndim}I", *a.shape) + (
        a.tobytes()
    )


def tiny_content(seed: int = 0) -> dict[str, bytes]:
    rng = np.random.default_rng(seed)
    arrays = {
        "train-images-idx3-ubyte": rng.integers(0, 256, (6, 28, 28), dtype=np.uint8),
        "train-labels-idx1-ubyte": np.array([0, 1, 2, 3, 9, 5], dtype=np.uint8),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (2, 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte": np.array([7, 8], dtype=np.uint8),
    }
    return {k: idx_bytes(a) for k, a in arrays.items()}


def debian_gz(data: bytes) -> bytes:
    """A gzip wrapper as Debian's: no file name in the header, another mtime."""
    return gzip.compress(data, mtime=0)


def upstream_gz(data: bytes, name: str) -> bytes:
    """A gzip wrapper as upstream's: the file name in the header, a real mtime."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename=name, mode="wb", fileobj=buf, mtime=1503000000) as f:
        f.write(data)
    return buf.getvalue()


def write(folder: Path, content: dict[str, bytes], how: str = "debian") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in content.items():
        if how == "raw":
            (folder / name).write_bytes(data)
        elif how == "debian":
            (folder / f"{name}.gz").write_bytes(debian_gz(data))
        else:
            (folder / f"{name}.gz").write_bytes(upstream_gz(data, name))
    return folder


@pytest.fixture
def content() -> dict[str, bytes]:
    return tiny_content()


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: dict[str, bytes]) -> Path:
    """An empty home cache, an XDG data dir (returned) and SOURCES pinned to the tiny files:
    upstream's wrapper SHA-256 recorded, the content SHA-256 verified; the URLs a local folder."""
    monkeypatch.setattr(F, "default_root", lambda: tmp_path / "home-cache")
    xdg = tmp_path / "share"
    monkeypatch.setenv("XDG_DATA_DIRS", f"{tmp_path / 'absent'}:{xdg}")
    server = write(tmp_path / "server", content, "upstream")
    monkeypatch.setitem(F.SOURCES, "fashion_mnist", tuple(
        Resource(f"{n}.gz", ((server / f"{n}.gz").as_uri(),),
                 sha256=hashlib.sha256((server / f"{n}.gz").read_bytes()).hexdigest(),
                 content_sha256=hashlib.sha256(content[n]).hexdigest())
        for n in NAMES
    ))  # fmt: skip
    return xdg


def check(ds: tf.data.Dataset, content: dict[str, bytes]) -> None:
    assert ds.x_train.shape == (6, 1, 28, 28) and ds.x_test.shape == (2, 1, 28, 28)
    assert ds.y_train.tolist() == [0, 1, 2, 3, 9, 5] and ds.y_test.tolist() == [7, 8]
    pixels = np.frombuffer(content["train-images-idx3-ubyte"], np.uint8, offset=16)
    assert np.array_equal((ds.x_train * 255).round().astype(np.uint8).ravel(), pixels)


def test_the_pinned_content_checksums() -> None:
    fashion = {r.filename: r.content_sha256 for r in F.SOURCES["fashion_mnist"]}
    assert fashion["train-images-idx3-ubyte.gz"] == (
        "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888"
    )
    assert all(r.sha256 is not None for r in F.SOURCES["fashion_mnist"])  # upstream's, kept
    assert all(r.content_sha256 is None for r in F.SOURCES["mnist"])  # none known: none made up


def test_found_in_the_system_folder_with_no_root(env: Path, content: dict[str, bytes]) -> None:
    folder = write(env / "datasets" / "fashion-mnist", content)
    ds = tf.data.load("fashion_mnist")
    check(ds, content)
    assert ds.params["root"] == str(folder)


def test_the_home_cache_comes_first_and_an_incomplete_folder_is_passed_over(
    tmp_path: Path, env: Path, content: dict[str, bytes]
) -> None:
    system = write(env / "datasets" / "fashion-mnist", content)
    cache = write(tmp_path / "home-cache" / "fashion_mnist", content, "raw")
    assert tf.data.fashion_mnist().params["root"] == str(cache)
    (cache / "t10k-labels-idx1-ubyte").unlink()
    assert tf.data.fashion_mnist().params["root"] == str(system)


def test_a_relative_xdg_entry_is_ignored(
    tmp_path: Path, env: Path, monkeypatch: pytest.MonkeyPatch, content: dict[str, bytes]
) -> None:
    write(tmp_path / "rel" / "datasets" / "fashion-mnist", content)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_DATA_DIRS", "rel")
    with pytest.raises(FileNotFoundError, match="fashion_mnist not found"):
        tf.data.load("fashion_mnist")


@pytest.mark.parametrize("sub", ["", "fashion-mnist", "fashion_mnist"])
def test_root_as_the_parent_or_the_folder_itself(
    tmp_path: Path, env: Path, content: dict[str, bytes], sub: str
) -> None:
    root = tmp_path / "datasets"
    folder = write(root / sub if sub else root, content)
    for given in (root, folder):
        ds = tf.data.load("fashion_mnist", root=given)
        check(ds, content)
        assert ds.params["root"] == str(folder)


def test_root_name_comes_before_the_other_folders(
    tmp_path: Path, env: Path, content: dict[str, bytes]
) -> None:
    write(tmp_path / "d" / "fashion-mnist", content)
    write(tmp_path / "d" / "fashion_mnist", content, "raw")
    ds = tf.data.fashion_mnist(tmp_path / "d")
    assert ds.params["root"] == str(tmp_path / "d" / "fashion_mnist")


def test_two_gzip_wrappers_of_one_content_are_both_accepted(
    tmp_path: Path, env: Path, content: dict[str, bytes]
) -> None:
    deb = write(tmp_path / "deb", content, "debian")
    up = write(tmp_path / "up", content, "upstream")
    for n in NAMES:
        assert (deb / f"{n}.gz").read_bytes() != (up / f"{n}.gz").read_bytes()
    a, b = tf.data.fashion_mnist(deb), tf.data.fashion_mnist(up)
    check(a, content)
    assert np.array_equal(a.x_train, b.x_train) and np.array_equal(a.y_test, b.y_test)


@pytest.mark.parametrize("how", ["debian", "raw"])
def test_wrong_content_is_refused_naming_file_expected_and_found(
    tmp_path: Path, env: Path, content: dict[str, bytes], how: str
) -> None:
    other = tiny_content(seed=1)  # valid IDX files of the same shapes, other pixels
    folder = write(env / "datasets" / "fashion-mnist", {**content, "t10k-images-idx3-ubyte":
                                                         other["t10k-images-idx3-ubyte"]}, how)
    bad = folder / ("t10k-images-idx3-ubyte" + (".gz" if how == "debian" else ""))
    want = hashlib.sha256(content["t10k-images-idx3-ubyte"]).hexdigest()
    found = hashlib.sha256(other["t10k-images-idx3-ubyte"]).hexdigest()
    with pytest.raises(ChecksumError) as info:
        tf.data.load("fashion_mnist")
    msg = str(info.value)
    assert str(bad) in msg and f"is {found}, expected {want}" in msg
    assert "the gzip wrapper does not matter" in msg
    assert bad.exists()  # a file placed by hand is left alone


def test_uncompressed_files_are_verified_and_read(
    tmp_path: Path, env: Path, content: dict[str, bytes]
) -> None:
    folder = write(tmp_path / "raw", content, "raw")
    check(tf.data.fashion_mnist(folder), content)


def test_a_gz_that_cannot_be_decompressed_is_a_checksum_error(
    env: Path, content: dict[str, bytes]
) -> None:
    folder = write(env / "datasets" / "fashion-mnist", content)
    gz = folder / "train-labels-idx1-ubyte.gz"
    gz.write_bytes(gz.read_bytes()[:-12])
    with pytest.raises(ChecksumError, match="train-labels-idx1-ubyte.gz cannot be decompressed"):
        tf.data.load("fashion_mnist")


def test_a_download_is_verified_on_its_content(
    tmp_path: Path, env: Path, monkeypatch: pytest.MonkeyPatch, content: dict[str, bytes]
) -> None:
    # the recorded SHA-256 is upstream's wrapper; a server serving another wrapper is accepted
    deb = write(tmp_path / "mirror", content, "debian")
    moved = tuple(r._replace(urls=((deb / r.filename).as_uri(),))
                  for r in F.SOURCES["fashion_mnist"])  # fmt: skip
    monkeypatch.setitem(F.SOURCES, "fashion_mnist", moved)
    ds = tf.data.fashion_mnist(tmp_path / "root", download=True)
    check(ds, content)
    assert ds.params["root"] == str(tmp_path / "root" / "fashion_mnist")
    # wrong content downloaded: refused and deleted
    (deb / "train-labels-idx1-ubyte.gz").write_bytes(debian_gz(b"\x00\x00\x08\x01\x00\x00\x00\x00"))
    with pytest.raises(ChecksumError, match="wrong content.*downloaded file was deleted"):
        tf.data.fashion_mnist(tmp_path / "again", download=True)
    assert not list((tmp_path / "again" / "fashion_mnist").glob("train-labels*"))


def test_missing_everywhere_names_apt_get_and_every_folder(env: Path) -> None:
    with pytest.raises(FileNotFoundError) as info:
        tf.data.load("fashion_mnist")
    msg = str(info.value)
    assert str(F.default_root() / "fashion_mnist" / "train-images-idx3-ubyte.gz") in msg
    assert str(env / "datasets" / "fashion-mnist") in msg
    assert "apt-get install dataset-fashion-mnist" in msg
    assert "installs them under /usr/share/datasets/fashion-mnist" in msg
    assert "download=True" in msg


def test_root_not_a_path_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="root must be a path"):
        tf.data.fashion_mnist(3)  # type: ignore[arg-type]


@pytest.mark.skipif(not DEBIAN.is_dir(), reason=f"{DEBIAN} absent: Debian's package "
                    "dataset-fashion-mnist is not installed (apt-get install "
                    "dataset-fashion-mnist)")
def test_the_real_debian_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(F, "default_root", lambda: tmp_path / "empty-cache")
    monkeypatch.delenv("XDG_DATA_DIRS", raising=False)
    start = time.perf_counter()
    ds = tf.data.load("fashion_mnist")
    seconds = time.perf_counter() - start
    assert ds.params["root"].endswith("/datasets/fashion-mnist")
    assert ds.x_train.shape == (60000, 1, 28, 28) and ds.x_test.shape == (10000, 1, 28, 28)
    assert ds.input_shape == (1, 28, 28) and ds.num_classes == 10
    assert np.bincount(ds.y_train).tolist() == [6000] * 10
    assert np.bincount(ds.y_test).tolist() == [1000] * 10
    assert ds.x_train.dtype == np.float32
    assert float(ds.x_train.min()) == 0.0 and float(ds.x_train.max()) == 1.0
    assert 0.0 <= float(ds.x_test.min()) and float(ds.x_test.max()) <= 1.0
    assert ds.classes[0] == "T-shirt/top" and ds.classes[9] == "Ankle boot"
    assert seconds < 30, f"loading took {seconds:.1f} s"  # about 1.6 s on a 2-core AMD EPYC
