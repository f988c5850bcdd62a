r"""MNIST-1D: a seeded, offline generator of one-dimensional digit signals (Greydanus 2020).

Each of the ten classes is a hand-drawn 12-point curve (a *template*); a sample is its class's
template padded, stretched, scaled, shifted, overlaid with noise, sheared and resampled to 40
points. The task is small (40 numbers per sample) but hard enough that the usual models separate
clearly (the reference paper reports, on 4000 training samples, about 32 % for logistic
regression, 68 % for an MLP and 94 % for a small CNN), which is what a stand-in for CIFAR-like
experiments on a CPU needs: as many samples as wanted, and a spatial structure that a 1-D CNN
exploits and a linear model cannot.

This is topofl's own vectorised implementation of the generative process described in the
reference (same templates, same transformations, same default magnitudes). It is drawn from a
``numpy.random.Generator``, never the global RNG, so its samples are not bit-identical to the
pickled dataset the reference's package distributes; their distribution is the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from topofl._utils.rng import Seed, as_generator
from topofl._utils.validation import check_int, check_memory, check_real
from topofl.data.datasets.base import F32, I64, Dataset

__all__ = ["mnist1d", "mnist1d_templates"]

# The ten 12-point digit curves of MNIST-1D (Greydanus 2020, Fig. 2), one row per class 0..9.
_RAW_TEMPLATES = np.array(
    [
        [5, 6, 6.5, 6.75, 7, 7, 7, 7, 6.75, 6.5, 6, 5],
        [5, 3, 3, 3.4, 3.8, 4.2, 4.6, 5, 5.4, 5.8, 5, 5],
        [5, 6, 6.5, 6.5, 6, 5.25, 4.75, 4, 3.5, 3.5, 4, 5],
        [5, 6, 6.5, 6.5, 6, 5, 5, 6, 6.5, 6.5, 6, 5],
        [5, 4.4, 3.8, 3.2, 2.6, 2.6, 5, 5, 5, 5, 5, 5],
        [5, 3, 3, 3, 3, 5, 6, 6.5, 6.5, 6, 4.5, 5],
        [5, 4, 3.5, 3.25, 3, 3, 3, 3, 3.25, 3.5, 4, 5],
        [5, 7, 7, 6.6, 6.2, 5.8, 5.4, 5, 4.6, 4.2, 5, 5],
        [5, 4, 3.5, 3.5, 4, 5, 5, 4, 3.5, 3.5, 4, 5],
        [5, 4, 3.5, 3.5, 4, 5, 5, 5, 5, 4.7, 4.3, 5],
    ],
    dtype=np.float64,
)

_EPS = 1e-8  # added to the template so that its own zeros are not taken for padding


def mnist1d_templates() -> npt.NDArray[np.float64]:
    """The ten MNIST-1D templates, ``(10, 12)``: each curve standardised, shifted to start at
    0 and divided by 6 (so every template starts and ends at 0).

    Examples
    --------
    >>> t = tf.data.datasets.mnist1d_templates()
    >>> t.shape, bool(np.allclose(t[:, 0], 0)), bool(np.allclose(t[:, -1], 0))
    ((10, 12), True, True)
    """
    t = _RAW_TEMPLATES - _RAW_TEMPLATES.mean(axis=1, keepdims=True)
    t = t / t.std(axis=1, keepdims=True)
    t = t - t[:, :1]
    out: npt.NDArray[np.float64] = t / 6.0
    return out


def _lerp_rows(x: npt.NDArray[np.float64], pos: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Row-wise linear interpolation: ``out[i, j] = x[i]`` read at fractional index ``pos[i, j]``
    (``0 <= pos <= x.shape[1] - 1``)."""
    i0 = np.clip(np.floor(pos).astype(np.int64), 0, x.shape[1] - 2)
    w = pos - i0
    lo = np.take_along_axis(x, i0, axis=1)
    hi = np.take_along_axis(x, i0 + 1, axis=1)
    out: npt.NDArray[np.float64] = lo * (1.0 - w) + hi * w
    return out


def _draw(
    rng: np.random.Generator,
    y: I64,
    *,
    padding: tuple[int, int],
    scale: float,
    max_translation: int,
    corr_noise: float,
    iid_noise: float,
    shear: float,
    length: int,
) -> npt.NDArray[np.float64]:
    """Raw (unstandardised) signals ``(m, length)`` of the labels ``y``."""
    from scipy.ndimage import gaussian_filter1d

    templates = mnist1d_templates()
    m, k = y.size, templates.shape[1]
    width = k + padding[1]  # every padded template is stretched to this many points
    # 1. pad the template with p zeros at its end, p uniform in [padding[0], padding[1]]
    p = rng.integers(padding[0], padding[1] + 1, size=m)
    padded = np.zeros((m, width))
    padded[:, :k] = templates[y] + _EPS
    # 2. stretch the k + p points linearly over `width` points (a shorter padding dilates
    #    the digit more)
    pos = np.linspace(0.0, 1.0, width)[None, :] * (k + p - 1)[:, None]
    x = _lerp_rows(padded, pos)
    # 3. amplitude: a factor uniform in [1 - scale/2, 1 + scale/2]
    x *= 1.0 + scale * (rng.random(m) - 0.5)[:, None]
    # 4. circular shift to the right by a uniform integer in [0, max_translation)
    shift = rng.integers(0, max_translation, size=m) if max_translation > 0 else np.zeros(m, int)
    x = np.take_along_axis(x, (np.arange(width)[None, :] - shift[:, None]) % width, axis=1)
    # 5. the padding (exact zeros) becomes smooth correlated noise; then white noise everywhere
    smooth = gaussian_filter1d(corr_noise * rng.standard_normal((m, width)), 2.0, axis=1)
    x = np.where(x != 0.0, x, smooth)
    x += iid_noise * rng.standard_normal((m, width))
    # 6. shear: subtract a linear ramp of slope uniform in [-shear/2, shear/2]
    x -= (shear * (rng.random(m) - 0.5))[:, None] * np.linspace(-0.5, 0.5, width)[None, :]
    # 7. resample to `length` points
    pos = np.broadcast_to(np.linspace(0.0, width - 1.0, length), (m, length))
    return _lerp_rows(x, pos)


def _check_padding(padding: Any, max_translation: int, *, n: int, n_test: int,
                   length: int) -> tuple[int, int]:
    """``padding`` checked as a pair ``(low, high)`` of ints, ``0 <= low <= high``, with
    ``max_translation`` at most the padded width ``12 + high``, and the work arrays of
    :func:`mnist1d` within memory."""
    if isinstance(padding, (str, bytes)) or not hasattr(padding, "__len__") or len(padding) != 2:
        raise TypeError(f"padding must be a pair (low, high) of ints, got {padding!r}")
    lo = check_int(padding[0], "padding[0]", low=0)
    hi = check_int(padding[1], "padding[1]", low=lo)
    width = 12 + hi
    if max_translation > width:
        raise ValueError(f"max_translation must be <= 12 + padding[1] = {width}, "
                         f"got {max_translation}")
    # float64 work arrays of the padded width and of the output length (a few copies each)
    check_memory(8.0 * 6 * (n + n_test + 1) * max(width, length),
                 f"mnist1d(n_samples={n}, n_test={n_test}, length={length})")
    return lo, hi


def _standardised(x_tr: npt.NDArray[np.float64],
                  x_te: npt.NDArray[np.float64]) -> tuple[F32, F32]:
    """The training and test signals standardised with the training set's mean and standard
    deviation (one scalar each), as ``[m, 1, length]`` float32."""
    mean, std = float(x_tr.mean()), float(x_tr.std())
    std = std if std > 0 else 1.0

    def finish(x: npt.NDArray[np.float64]) -> F32:
        return np.ascontiguousarray(((x - mean) / std)[:, None, :], dtype=np.float32)

    return finish(x_tr), finish(x_te)


def mnist1d(
    n_samples: int = 4000,
    n_test: int | None = None,
    *,
    seed: Seed,
    corr_noise: float = 0.25,
    iid_noise: float = 0.02,
    shear: float = 0.75,
    scale: float = 0.4,
    max_translation: int = 48,
    padding: tuple[int, int] = (36, 60),
    length: int = 40,
) -> Dataset:
    r"""MNIST-1D: ten classes of 1-D digit signals, generated offline from a seed.

    A sample of class ``c`` is made from the 12-point template ``c``
    (:func:`mnist1d_templates`) by, in order: appending ``p ~ U{36..60}`` zeros; stretching
    the ``12 + p`` points linearly over ``12 + 60 = 72`` points; multiplying by a factor
    uniform in ``[1 - scale/2, 1 + scale/2]``; shifting circularly by ``U{0..47}`` points;
    replacing the padding (the exact zeros) by correlated noise (white noise of standard
    deviation ``corr_noise`` smoothed by a Gaussian filter of width 2 points); adding white
    noise of standard deviation ``iid_noise``; subtracting a linear ramp from ``-a/2`` to
    ``a/2`` with ``a ~ U(-shear/2, shear/2)``; and resampling linearly to ``length`` points.
    Finally every feature is standardised with the training set's mean and standard
    deviation (one scalar each, as the reference does over its whole dataset). The training set
    is drawn first, so it does not depend on ``n_test``: two specs that differ only in
    ``n_test`` share their training signals.

    Parameters
    ----------
    n_samples : int, default 4000
        Training samples (the reference's split has 4000).
    n_test : int, optional
        Test samples, default ``n_samples // 4`` (the reference's 4000 / 1000).
    seed : int or numpy.random.Generator
        Everything is drawn from it: the same seed gives the same arrays.
    corr_noise, iid_noise, shear, scale : float
        Magnitudes of the transformations (defaults: the reference's 0.25, 0.02, 0.75, 0.4).
        Raising ``corr_noise`` makes the task harder.
    max_translation : int, default 48
        Shifts are uniform in ``[0, max_translation)``; 0 disables them.
    padding : (int, int), default (36, 60)
        Range of the number of zeros appended before stretching.
    length : int, default 40
        Points per output signal.

    Returns
    -------
    Dataset
        ``input_shape`` ``(1, length)`` (one channel, for 1-D convolutions; flat models
        flatten it), 10 classes, balanced (sizes differ by at most one, the first classes
        getting the extra samples), samples in random order; ``params`` holds every option
        and ``"stand_in": True``.

    Raises
    ------
    TypeError, ValueError
        For non-integer or non-positive sizes, negative magnitudes, or a bad ``padding``.

    References
    ----------
    S. Greydanus, "Scaling Down Deep Learning" (2020), arXiv:2011.14439: the MNIST-1D dataset.

    Examples
    --------
    >>> ds = tf.data.mnist1d(200, n_test=50, seed=0)
    >>> ds
    Dataset(name='mnist1d', train=200, test=50, input_shape=(1, 40), num_classes=10)
    >>> np.bincount(ds.y_train).tolist()
    [20, 20, 20, 20, 20, 20, 20, 20, 20, 20]
    >>> tf.data.load("mnist1d:n_samples=100,seed=1").x_test.shape
    (25, 1, 40)
    """
    n = check_int(n_samples, "n_samples", low=1)
    nt = n // 4 if n_test is None else check_int(n_test, "n_test", low=0)
    cn = check_real(corr_noise, "corr_noise", low=0.0)
    wn = check_real(iid_noise, "iid_noise", low=0.0)
    sh = check_real(shear, "shear", low=0.0)
    sc = check_real(scale, "scale", low=0.0, high=2.0, high_open=True)
    mt = check_int(max_translation, "max_translation", low=0)
    ln = check_int(length, "length", low=2)
    lo, hi = _check_padding(padding, mt, n=n, n_test=nt, length=ln)
    rng = as_generator(seed)
    opts = dict(padding=(lo, hi), scale=sc, max_translation=mt, corr_noise=cn, iid_noise=wn,
                shear=sh, length=ln)

    def labels(m: int) -> I64:
        return rng.permutation(np.arange(m) % 10).astype(np.int64)

    y_tr = labels(n)
    x_tr = _draw(rng, y_tr, **opts)  # type: ignore[arg-type]
    y_te = labels(nt)
    x_te = _draw(rng, y_te, **opts) if nt else np.zeros((0, ln))  # type: ignore[arg-type]
    x_train, x_test = _standardised(x_tr, x_te)
    return Dataset(
        name="mnist1d",
        x_train=x_train,
        y_train=y_tr,
        x_test=x_test,
        y_test=y_te,
        num_classes=10,
        input_shape=(1, ln),
        classes=tuple(str(c) for c in range(10)),
        params={
            "n_samples": n,
            "n_test": nt,
            "seed": int(seed) if isinstance(seed, (int, np.integer)) else None,
            "corr_noise": cn,
            "iid_noise": wn,
            "shear": sh,
            "scale": sc,
            "max_translation": mt,
            "padding": [lo, hi],
            "length": ln,
            "stand_in": True,
        },
    )
