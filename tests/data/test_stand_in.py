"""The resized digits: the offline image stand-in for MNIST- and CIFAR-shaped models."""

from __future__ import annotations

import math

import numpy as np
import pytest

import topofl as tf
from topofl.data.datasets.bundled import _resize_bilinear


def bilinear_reference(img: np.ndarray, size: int) -> np.ndarray:
    """Loops only: pixel (r, c) samples the input at ((r + 1/2) * h / size - 1/2), clamped at
    0, and interpolates linearly between the two nearest pixels in each direction."""
    h, w = img.shape

    def coords(i: int, n_in: int) -> tuple[int, int, float]:
        u = max(0.0, (i + 0.5) * n_in / size - 0.5)
        i0 = min(int(math.floor(u)), n_in - 1)
        i1 = min(i0 + 1, n_in - 1)
        return i0, i1, u - i0

    out = np.zeros((size, size))
    for r in range(size):
        r0, r1, a = coords(r, h)
        for c in range(size):
            c0, c1, b = coords(c, w)
            top = (1 - b) * img[r0, c0] + b * img[r0, c1]
            bottom = (1 - b) * img[r1, c0] + b * img[r1, c1]
            out[r, c] = (1 - a) * top + a * bottom
    return out


@pytest.mark.parametrize(
    ("name", "shape"),
    [("digits16", (1, 16, 16)), ("digits28", (1, 28, 28)), ("digits32rgb", (3, 32, 32))],
)
def test_named_stand_ins_shapes_labels_and_split(name: str, shape: tuple[int, ...]) -> None:
    base = tf.data.load("digits")
    ds = tf.data.load(name)
    assert ds.name == name and ds.input_shape == shape and ds.num_classes == 10
    assert ds.x_train.shape == (1442, *shape) and ds.x_test.shape == (355, *shape)
    assert ds.x_train.dtype == np.float32
    # the same samples in the same order: labels (and so every partition) unchanged
    assert np.array_equal(ds.y_train, base.y_train) and np.array_equal(ds.y_test, base.y_test)
    assert ds.params["stand_in"] is True and ds.params["size"] == shape[1]
    # bilinear interpolation is a convex combination of pixels
    assert ds.x_train.min() >= 0.0 and ds.x_train.max() <= 1.0
    if shape[0] == 3:  # grey RGB: every channel the same image
        assert np.array_equal(ds.x_train[:, 0], ds.x_train[:, 1])
        assert np.array_equal(ds.x_train[:, 0], ds.x_train[:, 2])


@pytest.mark.parametrize("size", [8, 16, 28, 32])
def test_resize_matches_loop_reference(size: int) -> None:
    base = tf.data.digits()
    ds = tf.data.digits_resized(size)
    for i in (0, 1, 500, 1441):
        np.testing.assert_allclose(
            ds.x_train[i, 0], bilinear_reference(base.x_train[i, 0], size), atol=1e-6
        )
    if size == 8:  # the identity
        assert np.array_equal(ds.x_train, base.x_train)


def test_resize_is_linear_and_keeps_constants() -> None:
    rng = np.random.default_rng(0)
    x = rng.random((3, 1, 8, 8)).astype(np.float32)
    y = rng.random((3, 1, 8, 8)).astype(np.float32)
    lhs = _resize_bilinear(2 * x - 0.5 * y, 28)
    rhs = 2 * _resize_bilinear(x, 28) - 0.5 * _resize_bilinear(y, 28)
    np.testing.assert_allclose(lhs, rhs, atol=1e-6)
    const = np.full((1, 1, 8, 8), 0.375, dtype=np.float32)
    assert np.all(_resize_bilinear(const, 32) == np.float32(0.375))


def test_deterministic_and_load_options() -> None:
    a, b = tf.data.load("digits28"), tf.data.load("Digits-28")
    assert np.array_equal(a.x_train, b.x_train) and np.array_equal(a.x_test, b.x_test)
    c = tf.data.load("digits_resized", size=28)
    assert np.array_equal(a.x_train, c.x_train) and c.name == "digits28"
    d = tf.data.load("digits_resized", size=20, channels=3)
    assert d.name == "digits20rgb" and d.input_shape == (3, 20, 20)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"size": 7}, ValueError, "size"),
        ({"size": 28.0}, TypeError, "size"),
        ({"size": 28, "channels": 2}, ValueError, r"channels must be 1 \(grey\) or 3"),
    ],
)
def test_bad_arguments(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        tf.data.digits_resized(**kwargs)


@pytest.mark.parametrize(("data", "model"), [
    pytest.param("digits28", "gn_lenet", marks=pytest.mark.slow),  # issue 23: several s
    ("digits32rgb", "cnn"),
])
def test_cnns_train_on_the_stand_in(data: str, model: str) -> None:
    # the 8x8 digits are refused by both models; the stand-ins run them end to end
    with pytest.raises(ValueError, match="at least"):
        tf.models.build_model(model, (1, 8, 8), 10, seed=0)
    res = tf.run("dsgd", topology="ring", data=data, n_clients=4, partition="shards",
                 model=model, rounds=3, lr=0.05, batch_size=8, seed=0, eval_every=1,
                 record_clients=False, spectral=False)
    rounds, loss = res.records.series("train_loss")
    assert rounds.size == 3 and np.all(np.isfinite(loss))
    _, acc = res.records.series("global_acc_mean")
    assert np.all((acc >= 0) & (acc <= 1))
    assert res.records.config["data"] == data and res.records.config["model"] == model
    cfg = res.records.engine  # the engine's description of what it ran
    assert cfg["data"]["dataset"] == data and cfg["data"]["dataset_params"]["stand_in"] is True
    shape = tf.data.load(data).input_shape
    size = tf.models.count_parameters(tf.models.build_model(model, shape, 10, seed=0))["total"]
    assert cfg["model"] == f"SplitModel[{size}]"  # the model built for the stand-in's shape
