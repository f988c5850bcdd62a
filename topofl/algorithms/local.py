"""Local training only: every client trains on its own data and never communicates."""

from __future__ import annotations

from topofl.algorithms._common import check_sgd
from topofl.algorithms.base import Algorithm, Phase, register_algorithm
from topofl.engine.pieces import SGD, compose_init, no_communication

__all__ = ["local"]


@register_algorithm("local")
def local(
    lr: float = 0.1,
    *,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    local_steps: int | None = None,
    local_epochs: float | None = None,
    decay: float = 1.0,
) -> Algorithm:
    """Local training only: every client trains on its own data and never communicates.

    Examples
    --------
    >>> tf.algorithms.local(lr=0.1).uses_topology
    False
    """
    hp = check_sgd(lr, momentum, weight_decay, decay, local_steps, local_epochs)
    sgd = SGD(hp.momentum, hp.weight_decay)
    return Algorithm(
        name="local",
        hparams=hp.as_dict(),
        phases=(Phase("all", hp.steps, hp.epochs, hp.lr),),
        init=compose_init(sgd),
        local=sgd,
        communicate=no_communication,
        requires=None,
        decay=hp.decay,
        uses_topology=False,
    )
