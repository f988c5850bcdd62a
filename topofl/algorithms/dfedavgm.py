r"""DFedAvgM: local momentum SGD restarted every round, then one gossip step.

References
----------
.. [1] T. Sun, D. Li, B. Wang, "Decentralized Federated Averaging", IEEE TPAMI 2022.
"""

from __future__ import annotations

from topofl.algorithms._common import check_sgd
from topofl.algorithms.base import Algorithm, Phase, register_algorithm
from topofl.engine.pieces import SGD, compose_init, gossip, restart_momentum

__all__ = ["dfedavgm"]


@register_algorithm("dfedavgm")
def dfedavgm(
    lr: float = 0.1,
    *,
    momentum: float = 0.9,
    weight_decay: float = 0.0,
    local_steps: int | None = None,
    local_epochs: float | None = None,
    decay: float = 1.0,
) -> Algorithm:
    r"""DFedAvgM: ``K`` local SGD steps with heavy-ball momentum, then one gossip step.

    Following Sun et al. (Algorithm 1), the momentum restarts from zero at every round (the
    local iterates start at the gossiped model, ``y^{t,-1} = y^{t,0} = x^t``).

    Examples
    --------
    >>> algo = tf.algorithms.dfedavgm(lr=0.05, local_steps=3)
    >>> algo.phases[0].steps, algo.hparams["momentum"]
    (3, 0.9)
    """
    hp = check_sgd(lr, momentum, weight_decay, decay, local_steps, local_epochs, default_steps=5)
    sgd = SGD(hp.momentum, hp.weight_decay)
    return Algorithm(
        name="dfedavgm",
        hparams=hp.as_dict(),
        phases=(Phase("all", hp.steps, hp.epochs, hp.lr),),
        init=compose_init(sgd),
        local=sgd,
        communicate=gossip(),
        round_start=restart_momentum(),
        requires="doubly",
        decay=hp.decay,
    )
