"""What the event-time algorithms' engine tests share: one run on a ring of 8, resumable."""

from __future__ import annotations

from typing import Any

import topofl as tf
from topofl.engine import RunConfig


def run_on_ring(algo: Any, data: Any, rounds: int, **kw: Any) -> Any:
    """``algo`` on ``data`` over a ring of 8 for ``rounds`` rounds (float64, evaluated every 2
    rounds); ``resume`` and ``run_data`` (the data the run reads, e.g. one that crashes) apart,
    ``kw`` are :class:`~topofl.engine.RunConfig` fields."""
    cfg = dict(rounds=rounds, seed=0, batch_size=16, eval_every=2, dtype="float64",
               spectral=False)
    resume = kw.pop("resume", None)
    d = kw.pop("run_data", data)
    cfg.update(kw)
    model = tf.models.build_model("logistic", data.input_shape, data.num_classes, seed=0)
    return tf.engine.run(RunConfig(**cfg), tf.topologies.ring(8), algo, d, model,
                         resume=resume)
