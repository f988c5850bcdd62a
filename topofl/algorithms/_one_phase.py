"""The :class:`~topofl.engine.Algorithm` of the one-phase algorithms that train and share the
whole model (DPFL, Dis-PFL, pFedGraph), and their checked local training."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, Protocol

from topofl.algorithms.hparams import check_decay, check_lr, check_momentum, check_wd, check_work
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


class LocalTraining(Protocol):
    """A group of the local training's fields: :class:`~topofl.algorithms.hparams.LocalSGD`,
    or an algorithm's own with the same fields (DPFL's)."""

    @property
    def lr(self) -> float: ...
    @property
    def momentum(self) -> float: ...
    @property
    def weight_decay(self) -> float: ...
    @property
    def decay(self) -> float: ...
    @property
    def local_steps(self) -> int | None: ...
    @property
    def local_epochs(self) -> Any: ...


def local_training(sgd: LocalTraining, *, default_steps: int | None = None,
                   default_epochs: float | None = None) -> dict[str, Any]:
    """The checked fields of :class:`WholeModelParams` (``lr``, ``momentum``,
    ``weight_decay``, ``decay`` and ``work``) from a group of the local training's fields;
    neither ``local_steps`` nor ``local_epochs``: ``default_steps`` steps, or
    ``default_epochs`` epochs when ``default_steps`` is ``None``.

    Examples
    --------
    >>> from topofl.algorithms._one_phase import local_training
    >>> from topofl.algorithms.hparams import LocalSGD
    >>> local_training(LocalSGD(lr=1, local_steps=3))
    {'lr': 1.0, 'momentum': 0.0, 'weight_decay': 0.0, 'decay': 1.0, 'work': (3, None)}
    >>> local_training(LocalSGD(), default_epochs=5.0)["work"]
    (None, 5.0)
    """
    return dict(lr=check_lr(sgd.lr), momentum=check_momentum(sgd.momentum),
                weight_decay=check_wd(sgd.weight_decay), decay=check_decay(sgd.decay),
                work=check_work(sgd.local_steps, sgd.local_epochs, default_steps=default_steps,
                                default_epochs=default_epochs))
