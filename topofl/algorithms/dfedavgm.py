r"""DFedAvgM: local momentum SGD restarted every round, then one gossip step.

References
----------
.. [1] T. Sun, D. Li, B. Wang, "Decentralized Federated Averaging", IEEE TPAMI 2022.
"""

from __future__ import annotations

from topofl.algorithms._common import SGDParams, sgd_algorithm, sgd_factory
from topofl.algorithms.base import register_algorithm
from topofl.engine.pieces import gossip, restart_momentum
from topofl.engine.protocol import Algorithm

__all__ = ["dfedavgm"]


@register_algorithm("dfedavgm")
@sgd_factory(default_momentum=0.9, default_steps=5, participation=True)
def dfedavgm(hp: SGDParams) -> Algorithm:
    r"""DFedAvgM: ``K`` local SGD steps with heavy-ball momentum, then one gossip step.

    Following Sun et al. (Algorithm 1), the momentum restarts from zero at every round (the
    local iterates start at the gossiped model, ``y^{t,-1} = y^{t,0} = x^t``). Takes the
    local-SGD keywords of :func:`~topofl.algorithms.dsgd`, with ``momentum=0.9`` and 5 local
    steps by default.
    ``participation`` < 1 makes a sampled fraction of the clients active per round (the
    others neither train nor communicate: :func:`~topofl.engine.pieces.with_participation`).

    Examples
    --------
    >>> algo = tf.algorithms.dfedavgm(lr=0.05, local_steps=3)
    >>> algo.phases[0].steps, algo.hparams["momentum"]
    (3, 0.9)
    """
    return sgd_algorithm("dfedavgm", hp, gossip(), round_start=restart_momentum(),
                         lost="renormalise", stacks=True)
