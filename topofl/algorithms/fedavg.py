"""FedAvg with full participation: local SGD, then the exact average of all clients.

References
----------
.. [1] B. McMahan et al., "Communication-efficient learning of deep networks from decentralized
   data", AISTATS 2017.
"""

from __future__ import annotations

from topofl.algorithms._common import check_sgd
from topofl.algorithms.base import Algorithm, Phase, register_algorithm
from topofl.engine.pieces import SGD, compose_init, exact_average

__all__ = ["fedavg"]


@register_algorithm("fedavg")
def fedavg(
    lr: float = 0.1,
    *,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    local_steps: int | None = None,
    local_epochs: float | None = None,
    decay: float = 1.0,
) -> Algorithm:
    """FedAvg with full participation: local step(s), then the exact average of all clients.

    This is the fully-connected ideal of the D-Cliques paper (``W = 11^T/n`` every round),
    computed as a mean instead of a product. Messages: ``2 n`` (upload and download).

    Examples
    --------
    >>> tf.algorithms.fedavg(lr=0.1, local_steps=2).phases[0].steps
    2
    """
    hp = check_sgd(lr, momentum, weight_decay, decay, local_steps, local_epochs)
    sgd = SGD(hp.momentum, hp.weight_decay)
    return Algorithm(
        name="fedavg",
        hparams=hp.as_dict(),
        phases=(Phase("all", hp.steps, hp.epochs, hp.lr),),
        init=compose_init(sgd),
        local=sgd,
        communicate=exact_average(),
        requires=None,
        decay=hp.decay,
        uses_topology=False,
    )
