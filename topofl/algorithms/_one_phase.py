"""The :class:`~topofl.engine.Algorithm` of the one-phase algorithms that train and share the
whole model (DPFL, Dis-PFL, pFedGraph)."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

from topofl.engine.pieces import restart_momentum
from topofl.engine.protocol import Algorithm, Phase

#: The default ``round_start``: a fresh local optimizer every round (the momentum restarts).
RESTART = restart_momentum()


def whole_model_algorithm(name: str, hp: Any, *, init: Any, local: Any, communicate: Any,
                          round_start: Any = RESTART, **fields: Any) -> Algorithm:
    """One phase ``"local"`` of training on all the parameters (``hp.work`` steps or epochs at
    ``hp.lr``, ``hp.decay``), every parameter shared, no requirement on ``W``; ``init`` and
    ``communicate`` are called with ``hp`` as a keyword; ``round_start`` restarts the
    momentum by default; ``fields``: the other :class:`~topofl.engine.Algorithm` fields."""
    steps, epochs = hp.work
    return Algorithm(name=name, hparams=hp.as_dict(),
                     phases=(Phase("all", steps, epochs, hp.lr, name="local"),),
                     init=functools.partial(init, hp=hp), local=local,
                     communicate=functools.partial(communicate, hp=hp), round_start=round_start,
                     requires=None, shared="all", decay=hp.decay, **fields)


@dataclass(frozen=True)
class WholeModelParams:
    """The local-training hyper-parameters of a whole-model algorithm, the base of its checked
    hyper-parameters (a frozen dataclass adding the algorithm's own fields).

    Attributes
    ----------
    lr : float
        The learning rate, ``lr * decay**t`` at round ``t``.
    momentum, weight_decay : float
        Of the local SGD.
    decay : float
    work : tuple
        The ``(local_steps, local_epochs)`` of the local training.
    """

    lr: float
    momentum: float
    weight_decay: float
    decay: float
    work: tuple[int | None, Any]

    def as_dict(self) -> dict[str, Any]:
        """The hyper-parameters as recorded in the run config: ``lr``, the algorithm's own
        fields in their order, then ``momentum``, ``weight_decay``, ``decay``,
        ``local_steps`` and ``local_epochs``."""
        shared = {f.name for f in dataclasses.fields(WholeModelParams)}
        out: dict[str, Any] = {"lr": self.lr}
        out.update((f.name, getattr(self, f.name)) for f in dataclasses.fields(self)
                   if f.name not in shared)
        out.update(momentum=self.momentum, weight_decay=self.weight_decay, decay=self.decay)
        out["local_steps"], out["local_epochs"] = self.work
        return out
