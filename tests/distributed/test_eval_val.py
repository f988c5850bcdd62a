"""Validation scores (``RunConfig(eval_val=True)``) on 2 gloo ranks equal the single-process run,
and so does the best-validation selection read from them."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

import topofl as tf
from tests.distributed._launch import launch

N = 6


def _run(rank: int) -> dict[str, Any]:
    data = tf.data.federate("digits", "dirichlet", N, alpha=1.0, seed=0, val=0.2)
    res = tf.run(tf.algorithms.ditto(lr=0.1), None, data, "logistic", 3, seed=0,
                 dtype="float64", batch_size=8, eval_val=True, progress=False, eval_every=1)
    rec = res.records
    return {"val_loss": [rec.per_client("val_loss", t).tolist() for t in range(3)],
            "val_acc": [rec.per_client("val_acc", t).tolist() for t in range(3)],
            "selected": rec.selected().tolist(), "held": int(res.state.x.shape[0])}


def test_val_rows_and_selection_equal_one_process() -> None:
    torch.set_num_threads(1)
    one = _run(0)
    out = launch(2, _run, timeout=60.0, wait=300.0)
    assert all(s == "ok" for s, _ in out.values()), out
    held = [out[r][1]["held"] for r in range(2)]
    assert sum(held) == N and max(held) < N, held  # the clients were split, not copied
    for r in range(2):
        got = out[r][1]
        for key in ("val_loss", "val_acc", "selected"):
            np.testing.assert_allclose(got[key], one[key], rtol=1e-10, atol=1e-12)
