"""The planner's state count under ``_ShapesOnly`` (plain-Python shapes for the few operations
an ``init`` uses on the ``meta`` device) equals torch's own meta kernels' count, for every
registered algorithm: the mode only avoids their imports (sympy, ``torch._dynamo``)."""

from __future__ import annotations

import contextlib

import pytest
import torch

import topofl as tf
from topofl.workflow.memory import shapes


def _counts(model: str, shape: tuple[int, ...], dtype: torch.dtype, n: int) -> dict:
    layout = tf.engine.ParamLayout.from_model(tf.models.build_model(model, shape, 10, seed=0))
    out = {}
    for name in sorted(tf.algorithms.ALGORITHMS):
        try:
            out[name] = shapes.state_bytes(tf.algorithms.get_algorithm(name), layout, dtype, n)
        except Exception as exc:  # noqa: BLE001 - the same refusal both ways is equal too
            out[name] = type(exc).__name__
    return out


@pytest.mark.parametrize("model,shape,dtype,n", [
    ("mlp", (64,), torch.float32, 100), ("logistic", (1, 8, 8), torch.float64, 3)])
def test_the_shapes_only_count_is_the_meta_kernels_count(monkeypatch, model, shape, dtype, n):
    shapes._FITS.clear()
    fast = _counts(model, shape, dtype, n)
    shapes._FITS.clear()
    monkeypatch.setattr(shapes, "_ShapesOnly", contextlib.nullcontext)
    reference = _counts(model, shape, dtype, n)
    shapes._FITS.clear()
    assert fast == reference
    assert len(fast) == len(tf.algorithms.ALGORITHMS) >= 30


def test_the_mode_refuses_what_the_cpu_refuses():
    x = torch.zeros(3, 4, device="meta")
    with shapes._ShapesOnly():
        with pytest.raises(RuntimeError):
            x.add_(torch.zeros(5, device="meta"))          # does not broadcast to self
        with pytest.raises(RuntimeError):
            torch.zeros(3, dtype=torch.int64, device="meta").mul_(
                torch.ones(3, device="meta"))               # float into int64: no cast
        y = x + torch.ones(4, 1, 1, device="meta")          # broadcast out of place
    assert tuple(y.shape) == (4, 3, 4)
