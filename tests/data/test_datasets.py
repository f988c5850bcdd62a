"""Datasets: digits, synthetic, and every real-format loader on tiny files written here."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import struct
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

import topofl as tf
from topofl.data import datasets as D
from topofl.data.datasets import ChecksumError, Resource

RNG = np.random.default_rng(0)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------ digits, synthetic
def test_digits_split_is_fixed_stratified_and_scaled() -> None:
    ds = tf.data.load("digits")
    from sklearn.datasets import load_digits

    raw = load_digits()
    assert ds.x_train.shape == (1442, 1, 8, 8) and ds.x_test.shape == (355, 1, 8, 8)
    assert ds.input_shape == (1, 8, 8) and ds.num_classes == 10
    assert ds.x_train.min() == 0.0 and ds.x_train.max() == 1.0
    # Train and test together are the whole set; class ratios are preserved (stratified).
    both = np.concatenate([ds.x_train, ds.x_test]).reshape(-1, 64) * 16
    assert sorted(map(bytes, both.astype(np.uint8))) == sorted(
        map(bytes, raw.data.astype(np.uint8))
    )
    ratio = np.bincount(ds.y_test) / np.bincount(raw.target)
    assert np.all(np.abs(ratio - 0.2) < 0.01)
    again = tf.data.digits()
    assert np.array_equal(again.x_test, ds.x_test) and np.array_equal(again.y_train, ds.y_train)
    with pytest.raises(ValueError, match="read-only"):
        ds.x_train[0, 0, 0, 0] = 1.0


def test_synthetic_is_seeded() -> None:
    a = tf.data.load("synthetic", n_samples=300, dim=4, num_classes=3, seed=7)
    b = tf.data.synthetic(300, 4, 3, seed=7)
    c = tf.data.synthetic(300, 4, 3, seed=8)
    assert np.array_equal(a.x_train, b.x_train) and np.array_equal(a.y_test, b.y_test)
    assert not np.array_equal(a.x_train, c.x_train)
    assert a.x_train.shape == (300, 4) and a.x_test.shape == (60, 4) and a.input_shape == (4,)
    assert np.bincount(a.y_train).tolist() == [100, 100, 100]
    # Well separated classes: nearest class mean classifies nearly everything.
    means = np.stack([a.x_train[a.y_train == c].mean(0) for c in range(3)])
    pred = np.argmin(((a.x_test[:, None] - means[None]) ** 2).sum(-1), axis=1)
    assert (pred == a.y_test).mean() > 0.8
    with pytest.raises(TypeError, match="seed"):
        tf.data.load("synthetic")


def test_synthetic_shape_reshapes_the_same_mixture() -> None:
    flat = tf.data.synthetic(60, 48, 4, seed=3, n_test=12)
    img = tf.data.synthetic(60, num_classes=4, seed=3, n_test=12, shape=(3, 4, 4))
    spec = tf.data.load("synthetic:n_samples=60,num_classes=4,seed=3,n_test=12,shape=3x4x4")
    assert img.input_shape == (3, 4, 4) and img.x_train.shape == (60, 3, 4, 4)
    assert img.x_test.shape == (12, 3, 4, 4) and img.params["shape"] == [3, 4, 4]
    # the same draws as the flat mixture in prod(shape) = 48 dimensions, row-major reshaped
    assert np.array_equal(img.x_train.reshape(60, 48), flat.x_train)
    assert np.array_equal(img.x_test[5].ravel(), flat.x_test[5])
    assert np.array_equal(img.y_train, flat.y_train)
    assert np.array_equal(spec.x_train, img.x_train)
    assert "shape" not in flat.params  # flat mixtures keep their params (and run hashes)
    assert tf.data.synthetic(10, 48, 2, seed=0, shape=[48]).x_train.shape == (10, 48)


@pytest.mark.parametrize(("kwargs", "err", "match"), [
    ({"shape": "3x4y4"}, ValueError, "like '3x32x32'"),
    ({"shape": (3, 0, 4)}, ValueError, "shape"),
    ({"shape": ()}, TypeError, "non-empty sequence"),
    ({"shape": (3, 4, 4), "dim": 40}, ValueError, "differs from prod"),
])
def test_synthetic_shape_bad_input(kwargs: dict, err: type, match: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(err, match=match):
        tf.data.synthetic(20, seed=0, **kwargs)


def test_standardized() -> None:
    ds = tf.data.synthetic(200, 3, 2, seed=0).standardized()
    assert np.allclose(ds.x_train.mean(0), 0, atol=1e-5) and np.allclose(
        ds.x_train.std(0), 1, atol=1e-4
    )
    assert ds.params["standardized"] is True


def test_load_errors() -> None:
    with pytest.raises(ValueError, match="unknown dataset 'svhn'; known: cifar10, cifar100"):
        tf.data.load("svhn")
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['bogus'\] for dataset 'digits'"):
        tf.data.load("digits", bogus=1)
    with pytest.raises(TypeError):
        tf.data.load(3)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["mnist", "fashion_mnist", "cifar10", "cifar100", "femnist",
                                  "cinic10", "tiny_imagenet"])  # fmt: skip
def test_missing_root_says_what_to_put_where(tmp_path: Path, name: str) -> None:
    with pytest.raises(FileNotFoundError) as info:
        tf.data.load(name, root=tmp_path / "nowhere")
    msg = str(info.value)
    assert str(tmp_path / "nowhere" / name) in msg
    if name == "femnist":
        assert "preprocess.sh" in msg
    else:
        assert "download=True" in msg and "http" in msg


def test_aliases(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="fashion_mnist not found"):
        tf.data.load("Fashion-MNIST", root=tmp_path)
    with pytest.raises(FileNotFoundError, match="tiny_imagenet not found"):
        tf.data.load("tiny-imagenet", root=tmp_path)


# ---------------------------------------------------------------------------------- IDX
def idx_bytes(a: np.ndarray) -> bytes:
    return (
        struct.pack(">BBBB", 0, 0, 0x08, a.ndim)
        + struct.pack(f">{a.ndim}I", *a.shape)
        + a.tobytes()
    )


def write_idx_set(folder: Path, *, gz: bool) -> dict[str, np.ndarray]:
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {
        "train-images-idx3-ubyte": RNG.integers(0, 256, (7, 28, 28), dtype=np.uint8),
        "train-labels-idx1-ubyte": np.array([0, 1, 2, 3, 4, 9, 5], dtype=np.uint8),
        "t10k-images-idx3-ubyte": RNG.integers(0, 256, (3, 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte": np.array([7, 8, 9], dtype=np.uint8),
    }
    for name, a in arrays.items():
        if gz:
            (folder / f"{name}.gz").write_bytes(gzip.compress(idx_bytes(a)))
        else:
            (folder / name).write_bytes(idx_bytes(a))
    return arrays


def patch_sources(
    monkeypatch: pytest.MonkeyPatch, name: str, folder: Path, *, bad: str = ""
) -> None:
    """Point SOURCES[name] at the files in ``folder`` with their true (or a wrong) checksum."""
    new = []
    for r in D.SOURCES[name]:
        path = folder / r.filename
        digest = sha256(path) if path.exists() else None
        if bad == r.filename:
            digest = "0" * 64
        new.append(Resource(r.filename, (path.as_uri(),), sha256=digest))
    monkeypatch.setitem(D.SOURCES, name, tuple(new))


@pytest.mark.parametrize("name", ["mnist", "fashion_mnist"])
def test_idx_gz_with_checksums(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    arrays = write_idx_set(tmp_path / name, gz=True)
    # The published checksums do not match these tiny files: refused, files left in place
    # (MNIST's on the .gz as published, Fashion-MNIST's on the decompressed content).
    with pytest.raises(
        ChecksumError,
        match="wrong SHA256 checksum: expected 440fcabf|wrong content: .* expected c59f468a",
    ):
        tf.data.load(name, root=tmp_path)
    assert (tmp_path / name / "train-images-idx3-ubyte.gz").exists()
    patch_sources(monkeypatch, name, tmp_path / name)
    ds = tf.data.load(name, root=tmp_path)
    assert ds.x_train.shape == (7, 1, 28, 28) and ds.input_shape == (1, 28, 28)
    assert np.array_equal(
        ds.x_train[:, 0] * 255, arrays["train-images-idx3-ubyte"].astype(np.float32)
    )
    assert ds.y_train.tolist() == [0, 1, 2, 3, 4, 9, 5] and ds.y_test.tolist() == [7, 8, 9]
    assert ds.x_train.dtype == np.float32 and ds.x_train.max() <= 1.0


def test_idx_uncompressed_is_read_without_checksum(tmp_path: Path) -> None:
    arrays = write_idx_set(tmp_path / "mnist", gz=False)
    ds = tf.data.mnist(tmp_path)
    assert np.array_equal(
        (ds.x_test[:, 0] * 255).round().astype(np.uint8), arrays["t10k-images-idx3-ubyte"]
    )


def test_idx_bad_files(tmp_path: Path) -> None:
    folder = tmp_path / "mnist"
    write_idx_set(folder, gz=False)
    (folder / "t10k-labels-idx1-ubyte").write_bytes(b"\x00\x00\x08\x01\x00\x00\x00\x05\x01")
    with pytest.raises(ValueError, match="has 9 bytes but its header"):
        tf.data.mnist(tmp_path)
    (folder / "t10k-labels-idx1-ubyte").write_bytes(b"PK\x03\x04")
    with pytest.raises(ValueError, match="is not an IDX file"):
        tf.data.mnist(tmp_path)
    (folder / "t10k-labels-idx1-ubyte").write_bytes(idx_bytes(np.zeros(4, np.uint8)))
    with pytest.raises(ValueError, match="do not match"):
        tf.data.mnist(tmp_path)


def test_download_verifies_and_deletes_bad_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "server"
    write_idx_set(src, gz=True)
    patch_sources(monkeypatch, "mnist", src, bad="t10k-labels-idx1-ubyte.gz")
    root = tmp_path / "root"
    with pytest.raises(ChecksumError, match="downloaded file was deleted"):
        tf.data.load("mnist", root=root, download=True)
    assert not (root / "mnist" / "t10k-labels-idx1-ubyte.gz").exists()
    assert not list((root / "mnist").glob("*.part"))
    patch_sources(monkeypatch, "mnist", src)
    ds = tf.data.load("mnist", root=root, download=True)
    assert ds.y_test.tolist() == [7, 8, 9]
    assert (root / "mnist" / "train-images-idx3-ubyte.gz").exists()


def test_download_failure_lists_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    res = Resource(
        "cifar-10-binary.tar.gz", ((tmp_path / "absent.tar.gz").as_uri(),), sha256="0" * 64
    )
    monkeypatch.setitem(D.SOURCES, "cifar10", (res,))
    with pytest.raises(OSError, match="could not download cifar-10-binary.tar.gz"):
        tf.data.cifar10(tmp_path, download=True)


# ---------------------------------------------------------------------------------- CIFAR
def cifar_records(n: int, label_bytes: int, L: int) -> tuple[bytes, np.ndarray, np.ndarray]:
    labels = RNG.integers(0, L, (n, label_bytes), dtype=np.uint8)
    pixels = RNG.integers(0, 256, (n, 3072), dtype=np.uint8)
    return np.concatenate([labels, pixels], axis=1).tobytes(), labels, pixels


def make_tar(path: Path, files: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))


def test_cifar10_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "cifar10"
    folder.mkdir()
    files, train_px, train_y = {}, [], []
    for i in range(1, 6):
        data, lab, px = cifar_records(2, 1, 10)
        files[f"cifar-10-batches-bin/data_batch_{i}.bin"] = data
        train_px.append(px)
        train_y.append(lab[:, 0])
    test_data, test_lab, test_px = cifar_records(3, 1, 10)
    files["cifar-10-batches-bin/test_batch.bin"] = test_data
    files["cifar-10-batches-bin/batches.meta.txt"] = (
        b"\n".join(b"c%d" % i for i in range(10)) + b"\n"
    )
    make_tar(folder / "cifar-10-binary.tar.gz", files)
    with pytest.raises(ChecksumError, match="expected c4a38c50"):
        tf.data.cifar10(tmp_path)
    assert not (folder / "cifar-10-batches-bin").exists()  # nothing extracted from a bad archive
    patch_sources(monkeypatch, "cifar10", folder)
    ds = tf.data.load("cifar10", root=tmp_path)
    assert ds.x_train.shape == (10, 3, 32, 32) and ds.x_test.shape == (3, 3, 32, 32)
    assert np.array_equal(ds.y_train, np.concatenate(train_y))
    assert np.array_equal(
        (ds.x_train * 255).round().astype(np.uint8).reshape(10, -1), np.concatenate(train_px)
    )
    assert np.array_equal(ds.y_test, test_lab[:, 0])
    assert ds.classes[3] == "c3"
    # Channel-first layout: the first 1024 bytes are the red plane.
    assert np.array_equal(
        (ds.x_test[0, 0] * 255).round().astype(np.uint8).ravel(), test_px[0, :1024]
    )


def test_cifar100_extracted_and_bad_size(tmp_path: Path) -> None:
    sub = tmp_path / "cifar100" / "cifar-100-binary"
    sub.mkdir(parents=True)
    data, lab, _ = cifar_records(4, 2, 20)
    (sub / "train.bin").write_bytes(data)
    data_t, lab_t, _ = cifar_records(2, 2, 20)
    (sub / "test.bin").write_bytes(data_t)
    fine = tf.data.cifar100(tmp_path)
    coarse = tf.data.load("cifar100", root=tmp_path, label_mode="coarse")
    assert fine.num_classes == 100 and coarse.num_classes == 20
    assert np.array_equal(fine.y_train, lab[:, 1]) and np.array_equal(coarse.y_test, lab_t[:, 0])
    (sub / "test.bin").write_bytes(data_t[:-1])
    with pytest.raises(ValueError, match="not a multiple of the 3074-byte record"):
        tf.data.cifar100(tmp_path)
    with pytest.raises(ValueError, match="label_mode must be one of"):
        tf.data.cifar100(tmp_path, label_mode="medium")


def test_archive_path_traversal_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "cifar10"
    folder.mkdir()
    make_tar(folder / "cifar-10-binary.tar.gz", {"../evil.bin": b"x"})
    patch_sources(monkeypatch, "cifar10", folder)
    with pytest.raises(ValueError, match="outside"):
        tf.data.cifar10(tmp_path)
    assert not (tmp_path / "evil.bin").exists()


# ---------------------------------------------------------------------------------- FEMNIST
def test_femnist_leaf_json(tmp_path: Path) -> None:
    folder = tmp_path / "femnist"
    (folder / "train").mkdir(parents=True)
    (folder / "test").mkdir()

    def user(n: int) -> dict[str, list]:
        return {"x": RNG.random((n, 784)).round(3).tolist(), "y": RNG.integers(0, 62, n).tolist()}

    tr = {"f0001_00": user(3), "f0000_12": user(2)}
    te = {"f0001_00": user(1), "f0000_12": user(1)}
    for split, users in (("train", tr), ("test", te)):
        doc = {"users": list(users), "num_samples": [len(u["y"]) for u in users.values()],
               "user_data": users}  # fmt: skip
        (folder / split / f"all_data_0_niid_{split}.json").write_text(json.dumps(doc))
    ds = tf.data.load("femnist", root=tmp_path)
    assert ds.num_classes == 62 and ds.input_shape == (1, 28, 28)
    assert ds.x_train.shape == (5, 1, 28, 28) and ds.group_names == ("f0000_12", "f0001_00")
    assert ds.groups_train.tolist() == [1, 1, 1, 0, 0] and ds.groups_test.tolist() == [1, 0]
    assert ds.y_train.tolist() == tr["f0001_00"]["y"] + tr["f0000_12"]["y"]
    assert np.allclose(ds.x_train[0].ravel(), tr["f0001_00"]["x"][0])
    # Natural split: each client is one writer, its local test set that writer's test samples.
    data = tf.data.federate(ds, "natural", None, seed=0)
    assert data.num_clients == 2
    for i, gid in enumerate(data.partitions["train"].params["group_ids"]):
        assert data.sizes("test")[i] == int((ds.groups_test == gid).sum())
    (folder / "test" / "broken.json").write_text("{")
    with pytest.raises(ValueError, match="is not a LEAF JSON file"):
        tf.data.femnist(tmp_path)


def test_femnist_no_download(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="download=True is not available for FEMNIST"):
        tf.data.load("femnist", root=tmp_path, download=True)


# ---------------------------------------------------------------------------------- image folders
def write_png(path: Path, rgb: np.ndarray) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(rgb).save(path)


def test_cinic10_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stage = tmp_path / "stage"
    written: dict[str, list[tuple[int, np.ndarray]]] = {"train": [], "valid": [], "test": []}
    for split, per in (("train", 2), ("valid", 1), ("test", 1)):
        for c, cls in enumerate(D._CIFAR10_CLASSES):
            for k in range(per):
                img = RNG.integers(0, 256, (32, 32, 3), dtype=np.uint8)
                write_png(stage / split / cls / f"{cls}_{k}.png", img)
                written[split].append((c, img))
    folder = tmp_path / "cinic10"
    folder.mkdir()
    with tarfile.open(folder / "CINIC-10.tar.gz", "w:gz") as t:
        for split in ("train", "valid", "test"):
            t.add(stage / split, arcname=split)
    res = D.SOURCES["cinic10"][0]
    with pytest.raises(ChecksumError, match="wrong MD5 checksum: expected 6ee4d0c9"):
        tf.data.cinic10(tmp_path)
    monkeypatch.setitem(D.SOURCES, "cinic10", (res._replace(md5=md5(folder / "CINIC-10.tar.gz")),))
    ds = tf.data.load("CINIC-10", root=tmp_path)
    assert ds.x_train.shape == (20, 3, 32, 32) and ds.x_test.shape == (10, 3, 32, 32)
    assert ds.y_train.tolist() == [c for c in range(10) for _ in range(2)]
    got = (ds.x_train[0] * 255).round().astype(np.uint8).transpose(1, 2, 0)
    assert np.array_equal(got, written["train"][0][1])
    both = tf.data.cinic10(tmp_path, include_valid=True)
    assert both.x_train.shape[0] == 30 and both.params["include_valid"] is True


def test_tiny_imagenet_zip_with_grey_jpeg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from PIL import Image

    wnids = ["n02", "n01"]
    z = io.BytesIO()
    jpeg: dict[str, bytes] = {}

    def enc(img: Image.Image) -> bytes:
        b = io.BytesIO()
        img.save(b, format="JPEG")
        return b.getvalue()

    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("tiny-imagenet-200/wnids.txt", "\n".join(wnids) + "\n")
        zf.writestr("tiny-imagenet-200/words.txt", "n01\tgoldfish\nn02\tshark\n")
        for w in wnids:
            for k in range(2):
                arr = RNG.integers(0, 256, (64, 64, 3), dtype=np.uint8)
                name = f"tiny-imagenet-200/train/{w}/images/{w}_{k}.JPEG"
                jpeg[name] = enc(Image.fromarray(arr))
                zf.writestr(name, jpeg[name])
        grey = enc(Image.fromarray(RNG.integers(0, 256, (64, 64), dtype=np.uint8), mode="L"))
        zf.writestr("tiny-imagenet-200/val/images/val_1.JPEG", grey)
        zf.writestr(
            "tiny-imagenet-200/val/images/val_0.JPEG",
            jpeg["tiny-imagenet-200/train/n01/images/n01_0.JPEG"],
        )
        zf.writestr(
            "tiny-imagenet-200/val/val_annotations.txt",
            "val_1.JPEG\tn02\t0\t0\t63\t63\nval_0.JPEG\tn01\t0\t0\t63\t63\n",
        )
    folder = tmp_path / "tiny_imagenet"
    folder.mkdir()
    (folder / "tiny-imagenet-200.zip").write_bytes(z.getvalue())
    with pytest.raises(ChecksumError, match="expected 90528d7c"):
        tf.data.tiny_imagenet(tmp_path)
    res = D.SOURCES["tiny_imagenet"][0]
    monkeypatch.setitem(
        D.SOURCES, "tiny_imagenet", (res._replace(md5=md5(folder / "tiny-imagenet-200.zip")),)
    )
    ds = tf.data.load("tiny_imagenet", root=tmp_path)
    assert ds.num_classes == 2 and ds.classes == ("goldfish", "shark")  # sorted wnids
    assert ds.x_train.shape == (4, 3, 64, 64) and ds.y_train.tolist() == [0, 0, 1, 1]
    assert ds.y_test.tolist() == [0, 1]  # sorted by file name: val_0 (n01), val_1 (n02)
    ref = np.asarray(
        Image.open(io.BytesIO(jpeg["tiny-imagenet-200/train/n01/images/n01_0.JPEG"])).convert("RGB")
    )
    assert np.array_equal((ds.x_train[0] * 255).round().astype(np.uint8).transpose(1, 2, 0), ref)
    grey_rgb = ds.x_test[1]
    assert np.array_equal(grey_rgb[0], grey_rgb[1]) and np.array_equal(grey_rgb[1], grey_rgb[2])


def test_wrong_image_size(tmp_path: Path) -> None:
    for split in ("train", "valid", "test"):
        for cls in D._CIFAR10_CLASSES:
            (tmp_path / "cinic10" / split / cls).mkdir(parents=True)
    write_png(tmp_path / "cinic10" / "test" / "cat" / "a.png", np.zeros((16, 16, 3), np.uint8))
    with pytest.raises(ValueError, match="is 16x16 pixels, expected 32x32"):
        tf.data.cinic10(tmp_path)


def _cinic_folders(root: Path) -> Path:
    """Empty CINIC-10 class folders under ``root/cinic10`` (extracted: no archive needed)."""
    for split in ("train", "valid", "test"):
        for cls in D._CIFAR10_CLASSES:
            (root / "cinic10" / split / cls).mkdir(parents=True)
    return root / "cinic10"


def _png(rgb: np.ndarray) -> bytes:
    from PIL import Image

    b = io.BytesIO()
    Image.fromarray(rgb).save(b, format="PNG")
    return b.getvalue()


@pytest.mark.parametrize(("content", "reason"), [
    (b"not a png", "not an image format PIL recognises"),  # before: UnidentifiedImageError
    (b"", "not an image format PIL recognises"),
    (_png(RNG.integers(0, 256, (32, 32, 3), dtype=np.uint8))[:300],
     "image file is truncated"),  # before: OSError: image file is truncated (no file named)
])
def test_a_corrupt_cinic10_image_names_the_file_and_the_folder(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    folder = _cinic_folders(tmp_path)
    write_png(folder / "train" / "cat" / "a.png", np.zeros((32, 32, 3), np.uint8))
    bad = folder / "test" / "dog" / "b.png"
    bad.write_bytes(content)
    msg = (f"{bad} is not a readable image ({reason}): dataset 'cinic10' in {folder} holds a "
           "damaged file; replace it with the one in CINIC-10.tar.gz, or delete the folders "
           "train, valid, test there and load again to extract CINIC-10.tar.gz anew "
           "(download=True fetches the archive if it is absent)")
    with pytest.raises(ValueError) as info:
        tf.data.load("cinic10", root=tmp_path)
    assert str(info.value) == msg
    assert not isinstance(info.value, OSError) and info.value.__suppress_context__


def test_a_corrupt_tiny_imagenet_image_names_the_file_and_the_folder(tmp_path: Path) -> None:
    top = tmp_path / "tiny_imagenet" / "tiny-imagenet-200"
    (top / "val" / "images").mkdir(parents=True)
    (top / "wnids.txt").write_text("n01\n")
    write_png(top / "train" / "n01" / "images" / "n01_0.png",
              RNG.integers(0, 256, (64, 64, 3), dtype=np.uint8))
    (top / "val" / "val_annotations.txt").write_text("val_0.JPEG\tn01\t0\t0\t63\t63\n")
    bad = top / "val" / "images" / "val_0.JPEG"
    bad.write_bytes(b"\xff\xd8\xff\xe0 cut short")
    with pytest.raises(ValueError, match=(
            rf"^{re.escape(str(bad))} is not a readable image \(.*\): dataset 'tiny_imagenet' "
            rf"in {re.escape(str(tmp_path / 'tiny_imagenet'))} holds a damaged file; replace it "
            r"with the one in tiny-imagenet-200\.zip, or delete the folder tiny-imagenet-200 "
            r"there and load again to extract tiny-imagenet-200\.zip anew")):
        tf.data.tiny_imagenet(tmp_path)


def test_an_image_that_cannot_be_opened_stays_an_os_error(tmp_path: Path) -> None:
    # the file system's errors (here a folder named like an image) are not "damaged images"
    folder = _cinic_folders(tmp_path)
    (folder / "train" / "cat" / "a.png").mkdir()
    with pytest.raises(IsADirectoryError):
        tf.data.cinic10(tmp_path)


def test_dataset_validation_and_no_mutation() -> None:
    x = np.zeros((4, 2), np.float32)
    y = np.array([0, 1, 0, 1])
    ds = tf.data.Dataset("toy", x, y, x[:2], y[:2], 2, (2,))
    assert x.flags.writeable and not ds.x_train.flags.writeable  # caller's array untouched
    assert repr(ds) == "Dataset(name='toy', train=4, test=2, input_shape=(2,), num_classes=2)"
    with pytest.raises(TypeError, match="must be float32"):
        tf.data.Dataset("toy", x.astype(np.float64), y, x, y, 2, (2,))
    with pytest.raises(ValueError, match=r"must have shape \(N, \*\(3,\)\)"):
        tf.data.Dataset("toy", x, y, x, y, 2, (3,))
    with pytest.raises(ValueError, match=r"y_test must lie in \[0, 2\)"):
        tf.data.Dataset("toy", x, y, x, y + 1, 2, (2,))


# ---------------------------------------------------------------------------------- bad values
def _write_leaf(tmp_path: Path, x: list, y: list) -> None:
    folder = tmp_path / "femnist"
    for split in ("train", "test"):
        (folder / split).mkdir(parents=True, exist_ok=True)
        doc = {"users": ["u7"], "num_samples": [len(y)], "user_data": {"u7": {"x": x, "y": y}}}
        (folder / split / "all.json").write_text(json.dumps(doc))


def test_femnist_fractional_label_is_refused_not_truncated(tmp_path: Path) -> None:
    _write_leaf(tmp_path, [[0.5] * 784] * 2, [0, 1.5])
    with pytest.raises(ValueError, match="femnist train labels of user u7 must be whole "
                                         "numbers, found 1.5 at index 1"):
        tf.data.femnist(tmp_path)
    # A whole float label is converted exactly.
    _write_leaf(tmp_path, [[0.5] * 784] * 2, [0, 3.0])
    assert tf.data.femnist(tmp_path).y_train.tolist() == [0, 3]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_femnist_non_finite_pixel_is_refused(tmp_path: Path, bad: float) -> None:
    x = [[0.5] * 784, [0.5] * 300 + [bad] + [0.5] * 483]
    # json.dumps writes NaN/Infinity, which Python's json (and LEAF's writer) accept.
    _write_leaf(tmp_path, x, [0, 1])
    with pytest.raises(ValueError, match=r"femnist x_train must be finite, found .* at index "
                                         r"\(1, 0, 10, 20\)"):
        tf.data.femnist(tmp_path)


def test_femnist_ragged_or_text_pixels(tmp_path: Path) -> None:
    _write_leaf(tmp_path, [[0.5] * 784, [0.5] * 10], [0, 1])
    with pytest.raises(ValueError, match="'x' must be a list of 784 numbers per image"):
        tf.data.femnist(tmp_path)
    _write_leaf(tmp_path, [[0.5] * 784], ["a"])
    with pytest.raises(ValueError, match="must be integers, found <U1 values"):
        tf.data.femnist(tmp_path)


def test_idx_float_labels_checked(tmp_path: Path) -> None:
    folder = tmp_path / "mnist"
    write_idx_set(folder, gz=False)

    def float_idx(a: np.ndarray) -> bytes:
        return (struct.pack(">BBBB", 0, 0, 0x0D, a.ndim) + struct.pack(f">{a.ndim}I", *a.shape)
                + a.astype(">f4").tobytes())

    (folder / "t10k-labels-idx1-ubyte").write_bytes(float_idx(np.array([7.0, 8.0, 9.0])))
    assert tf.data.mnist(tmp_path).y_test.tolist() == [7, 8, 9]
    (folder / "t10k-labels-idx1-ubyte").write_bytes(float_idx(np.array([7.0, 8.5, 9.0])))
    with pytest.raises(ValueError, match="mnist test labels must be whole numbers, found"):
        tf.data.mnist(tmp_path)


def test_dataset_refuses_non_finite_features() -> None:
    x = np.zeros((3, 2), np.float32)
    x[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"toy x_test must be finite, found nan at index \(2, 1\)"):
        D.Dataset("toy", np.zeros((1, 2), np.float32), np.zeros(1, np.int64), x,
                  np.zeros(3, np.int64), num_classes=1, input_shape=(2,))
