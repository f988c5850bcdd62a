"""Datasets that need no files: scikit-learn's digits (also resized, as an image stand-in) and a
seeded synthetic mixture."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from topofl._utils.rng import Seed, as_generator
from topofl._utils.validation import check_int, check_memory, check_real
from topofl.data.datasets.base import F32, I64, Dataset


def digits() -> Dataset:
    """The 1797 handwritten 8x8 digits shipped with scikit-learn; offline, fixed split.

    Features are the 0..16 pixel intensities divided by 16 (so in ``[0, 1]``), shaped
    ``(N, 1, 8, 8)`` (one channel, like MNIST, so image models apply). The split is fixed and
    stratified without any randomness: within each class, in the order scikit-learn lists the
    samples, every fifth sample (ranks 4, 9, 14, ...) is a test sample. That gives 1442 training
    and 355 test samples.

    Examples
    --------
    >>> ds = tf.data.digits()
    >>> np.bincount(ds.y_test).tolist()
    [35, 36, 35, 36, 36, 36, 36, 35, 34, 36]
    """
    from sklearn.datasets import load_digits

    bunch = load_digits()
    x = (np.asarray(bunch.images, dtype=np.float32) / np.float32(16.0)).reshape(-1, 1, 8, 8)
    y = np.asarray(bunch.target, dtype=np.int64)
    rank = np.empty(y.size, dtype=np.int64)
    for c in range(10):
        members = np.flatnonzero(y == c)
        rank[members] = np.arange(members.size)
    test = rank % 5 == 4
    return Dataset(
        name="digits",
        x_train=np.ascontiguousarray(x[~test]),
        y_train=y[~test],
        x_test=np.ascontiguousarray(x[test]),
        y_test=y[test],
        num_classes=10,
        input_shape=(1, 8, 8),
        classes=tuple(str(c) for c in range(10)),
        params={},
    )


def _resize_bilinear(x: F32, size: int) -> F32:
    # Bilinear, align_corners=False (pixel centres), no antialiasing; float32 on the CPU, so
    # the result is the same on every run and machine.
    import torch
    import torch.nn.functional as F

    with torch.no_grad():
        out = F.interpolate(
            torch.from_numpy(np.array(x, dtype=np.float32)),  # a writable copy
            size=(size, size),
            mode="bilinear",
            align_corners=False,
        )
    return np.ascontiguousarray(out.numpy(), dtype=np.float32)


def digits_resized(size: int = 28, *, channels: int = 1) -> Dataset:
    r"""The :func:`digits` images resized to ``size x size`` pixels: an offline image stand-in.

    The papers' image models need larger inputs than the 8x8 digits (GN-LeNet at least 15x15,
    the DPFL CNN at least 16x16). This dataset gives them the same 1797 digits, the same
    labels and the same fixed train/test split as :func:`digits`, upsampled by bilinear
    interpolation so that MNIST-shaped (``1x28x28``) and CIFAR-shaped (``3x32x32``) models run
    offline and in CI. It is a *stand-in*: digits stay easy 8x8 images however large, and
    results on it say nothing about MNIST or CIFAR-10 accuracy; use ``"mnist"`` and
    ``"cifar10"`` whenever their files are present.

    Parameters
    ----------
    size : int, default 28
        Height and width of the output, ``>= 8``.
    channels : int, default 1
        ``1`` or ``3``; with 3 the grey image is repeated in every channel (a grey RGB image).

    Returns
    -------
    Dataset
        Named ``"digits<size>"`` (``"digits<size>rgb"`` with 3 channels), ``input_shape``
        ``(channels, size, size)``, ``params`` ``{"size", "channels", "interpolation",
        "stand_in": True}``.

    Raises
    ------
    TypeError, ValueError
        If ``size`` is not an int ``>= 8`` or ``channels`` not 1 or 3.

    Notes
    -----
    Pixel $(r, c)$ of the output samples the input at $u = \max(0, (r + \tfrac12) \cdot 8 /
    \text{size} - \tfrac12)$ (rows; likewise columns) and interpolates linearly between the
    two nearest input pixels (``torch.nn.functional.interpolate``, ``mode="bilinear"``,
    ``align_corners=False``). Every output pixel is thus a convex combination of input pixels:
    values stay in ``[0, 1]`` and a constant image stays constant.

    Examples
    --------
    >>> ds = tf.data.digits_resized(28)
    >>> ds
    Dataset(name='digits28', train=1442, test=355, input_shape=(1, 28, 28), num_classes=10)
    >>> tf.data.load("digits32rgb").input_shape
    (3, 32, 32)
    """
    size = check_int(size, "size", low=8)
    channels = check_int(channels, "channels", low=1)
    if channels not in (1, 3):
        raise ValueError(f"channels must be 1 (grey) or 3 (grey RGB), got {channels}")
    base = digits()
    m = len(base.y_train) + len(base.y_test)
    # float32 images, with the interpolation's temporaries (about 3 copies at the new size)
    check_memory(4.0 * 4 * m * channels * size**2,
                 f"digits_resized(size={size}, channels={channels})")
    parts = {}
    for part in ("train", "test"):
        x = _resize_bilinear(getattr(base, f"x_{part}"), size)
        if channels == 3:
            x = np.ascontiguousarray(np.repeat(x, 3, axis=1))
        parts[part] = x
    return Dataset(
        name=f"digits{size}" + ("rgb" if channels == 3 else ""),
        x_train=parts["train"],
        y_train=np.array(base.y_train),
        x_test=parts["test"],
        y_test=np.array(base.y_test),
        num_classes=10,
        input_shape=(channels, size, size),
        classes=base.classes,
        params={"size": size, "channels": channels, "interpolation": "bilinear",
                "stand_in": True},
    )


def digits16() -> Dataset:
    """Stand-in: the digits at 1x16x16, the smallest input of the DPFL CNN.

    See :func:`digits_resized` (``size=16``).

    Examples
    --------
    >>> tf.data.load("digits16").input_shape
    (1, 16, 16)
    """
    return digits_resized(16)


def digits28() -> Dataset:
    """Stand-in for MNIST: the digits at 1x28x28 (see :func:`digits_resized`).

    Examples
    --------
    >>> tf.data.load("digits28").x_train.shape
    (1442, 1, 28, 28)
    """
    return digits_resized(28)


def digits32rgb() -> Dataset:
    """Stand-in for CIFAR-10: the digits at 3x32x32, grey in every channel.

    For GN-LeNet and the DPFL CNN offline; see :func:`digits_resized`.

    Examples
    --------
    >>> tf.data.load("digits32rgb").x_test.shape
    (355, 3, 32, 32)
    """
    return digits_resized(32, channels=3)


def synthetic(
    n_samples: int = 1000,
    dim: int = 16,
    num_classes: int = 10,
    *,
    seed: Seed,
    n_test: int | None = None,
    separation: float = 3.0,
    noise: float = 1.0,
    shape: str | Sequence[int] | None = None,
) -> Dataset:
    r"""A seeded Gaussian-mixture classification set.

    Class ``c`` has mean ``mu_c = separation * g_c / ||g_c||`` with ``g_c ~ N(0, I_dim)``; a
    sample of class ``c`` is ``mu_c + noise * N(0, I_dim)``. Classes are balanced (sizes differ
    by at most one, the first classes getting the extra samples) and the samples are in random
    order.

    Parameters
    ----------
    n_samples : int, default 1000
        Training samples.
    dim : int, default 16
        Feature dimension; ``input_shape`` is ``(dim,)``.
    num_classes : int, default 10
    seed : int or numpy.random.Generator
    n_test : int, optional
        Test samples, default ``n_samples // 5``.
    separation, noise : float
        Distance of the class means from the origin, and the noise scale.
    shape : sequence of int or str, optional
        Give every sample this shape, e.g. ``(3, 32, 32)`` or ``"3x32x32"`` (the spec-string
        form), so that image models (GN-LeNet, the CNNs) take the mixture: an image-shaped
        stand-in with as many samples as wanted. The mixture is then drawn in
        ``dim = prod(shape)`` dimensions (``dim`` must be left at its default or equal it)
        and each sample reshaped; ``input_shape`` is ``shape``. The pixels have no spatial
        structure: a stand-in for size and shape, not for natural images.

    Raises
    ------
    TypeError, ValueError
        For a non-integer or non-positive size, or a ``shape`` whose product differs from an
        explicit ``dim``.

    Examples
    --------
    >>> ds = tf.data.synthetic(200, dim=2, num_classes=2, seed=0)
    >>> ds.x_train.shape, ds.y_test.shape
    ((200, 2), (40,))
    >>> img = tf.data.load("synthetic:n_samples=20,shape=3x4x4,seed=0")
    >>> img.x_train.shape, img.input_shape
    ((20, 3, 4, 4), (3, 4, 4))
    """
    n = check_int(n_samples, "n_samples", low=1)
    dims = synthetic_shape(shape)
    if dims is not None:
        d = int(np.prod(dims))
        if dim != 16 and dim != d:
            raise ValueError(f"synthetic: dim={dim!r} differs from prod(shape={dims}) = {d}; "
                             f"give one of them")
    else:
        d = check_int(dim, "dim", low=1)
    L = check_int(num_classes, "num_classes", low=1)
    nt = n // 5 if n_test is None else check_int(n_test, "n_test", low=0)
    sep = check_real(separation, "separation", low=0.0)
    sd = check_real(noise, "noise", low=0.0)
    # float32 features kept (4 bytes a value), int64 labels and their permutation's
    # temporaries (32 bytes a sample), and one block of float64 means and noise while drawing
    check_memory(synthetic_bytes(n + nt, d, L),
                 f"synthetic(n_samples={n}, dim={d}, num_classes={L})")
    rng = as_generator(seed)
    g = rng.standard_normal((L, d))
    mu = sep * g / np.maximum(np.linalg.norm(g, axis=1, keepdims=True), 1e-12)

    def draw(m: int) -> tuple[F32, I64]:
        y = rng.permutation(np.arange(m) % L).astype(np.int64)
        # block of rows by block: the generator fills its normals in order, and the sum and
        # the cast are elementwise, so the blocks give the numbers of one (m, d) draw
        x = np.empty((m, d), dtype=np.float32)
        rows = _draw_rows(d)
        for a in range(0, m, rows):
            b = min(m, a + rows)
            x[a:b] = mu[y[a:b]] + sd * rng.standard_normal((b - a, d))
        return (x if dims is None else x.reshape((m, *dims))), y

    x_tr, y_tr = draw(n)
    x_te, y_te = draw(nt)
    return Dataset(
        name="synthetic",
        x_train=x_tr,
        y_train=y_tr,
        x_test=x_te,
        y_test=y_te,
        num_classes=L,
        input_shape=(d,) if dims is None else dims,
        params={
            "n_samples": n,
            "dim": d,
            "num_classes": L,
            "n_test": nt,
            "separation": sep,
            "noise": sd,
            "seed": int(seed) if isinstance(seed, (int, np.integer)) else None,
            **({} if dims is None else {"shape": list(dims)}),
        },
    )


#: Float64 values of one block of :func:`synthetic`'s draw (the means and the noise of a block
#: of samples: 2 MiB each; small, so that the heap they leave when freed is small).
SYNTHETIC_BLOCK_VALUES = 1 << 18


def _draw_rows(d: int) -> int:
    return max(1, SYNTHETIC_BLOCK_VALUES // d)


def synthetic_bytes(samples: int, d: int, classes: int = 0) -> int:
    """Bytes :func:`synthetic` holds at its peak for ``samples`` samples (training and test)
    of ``d`` values: the float32 features, the int64 labels and their permutation's
    temporaries, one block of float64 means and noise (two arrays), and the ``classes``
    class means (float64: the draw, its scaled copy and the means, three arrays).

    Examples
    --------
    >>> from topofl.data.datasets.bundled import synthetic_bytes
    >>> synthetic_bytes(1000, 64) == 1000 * (4 * 64 + 32) + 2 * 8 * 1000 * 64
    True
    """
    return samples * (4 * d + 32) + 2 * 8 * min(samples, _draw_rows(d)) * d + 3 * 8 * classes * d


def synthetic_shape(shape: str | Sequence[int] | None) -> tuple[int, ...] | None:
    """``shape`` of :func:`synthetic` as a tuple of positive ints (``"3x32x32"`` accepted)."""
    if shape is None:
        return None
    if isinstance(shape, str):
        parts = shape.lower().split("x")
        if not all(p.strip().isdigit() for p in parts):
            raise ValueError(f"synthetic: shape must look like '3x32x32', got {shape!r}")
        return tuple(check_int(int(p), "shape", low=1) for p in parts)
    if isinstance(shape, (int, np.integer)):
        return (check_int(shape, "shape", low=1),)
    if not isinstance(shape, Sequence) or len(shape) == 0:
        raise TypeError(f"synthetic: shape must be a non-empty sequence of ints or a string "
                        f"like '3x32x32', got {shape!r}")
    return tuple(check_int(v, "shape", low=1) for v in shape)
