"""The :class:`~topofl.engine.Algorithm` of the one-phase algorithms that train and share the
whole model (DPFL, Dis-PFL, pFedGraph)."""

from __future__ import annotations

import functools
from typing import Any

from topofl.engine.protocol import Algorithm, Phase


def whole_model_algorithm(name: str, hp: Any, *, init: Any, local: Any, communicate: Any,
                          round_start: Any, **fields: Any) -> Algorithm:
    """One phase ``"local"`` of training on all the parameters (``hp.work`` steps or epochs at
    ``hp.lr``, ``hp.decay``), every parameter shared, no requirement on ``W``; ``init`` and
    ``communicate`` are called with ``hp`` as a keyword; ``fields``: the other
    :class:`~topofl.engine.Algorithm` fields."""
    steps, epochs = hp.work
    return Algorithm(name=name, hparams=hp.as_dict(),
                     phases=(Phase("all", steps, epochs, hp.lr, name="local"),),
                     init=functools.partial(init, hp=hp), local=local,
                     communicate=functools.partial(communicate, hp=hp), round_start=round_start,
                     requires=None, shared="all", decay=hp.decay, **fields)
