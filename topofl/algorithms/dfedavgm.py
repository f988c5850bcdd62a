r"""DFedAvgM: local momentum SGD restarted every round, then one gossip step.

References
----------
.. [1] T. Sun, D. Li, B. Wang, "Decentralized Federated Averaging", IEEE TPAMI 2022.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from topofl.algorithms._common import sgd_algorithm
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.hparams import (
    Keywords,
    LocalSGD,
    LocalSGDKeywords,
    Sampling,
    SamplingKeywords,
)
from topofl.engine.pieces import gossip, restart_momentum, with_participation
from topofl.engine.protocol import Algorithm

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["dfedavgm", "DFedAvgMKeywords"]

#: DFedAvgM's default groups: heavy-ball momentum 0.9 (5 local steps when neither
#: ``local_steps`` nor ``local_epochs`` is given), every client active
_SGD, _EVERY_CLIENT = LocalSGD(momentum=0.9), Sampling()

#: The local steps of a round when neither ``local_steps`` nor ``local_epochs`` is given
_DEFAULT_STEPS = 5


class DFedAvgMKeywords(LocalSGDKeywords, SamplingKeywords, total=False):
    """DFedAvgM's flat keywords: the fields of its groups (documented at :func:`dfedavgm`)."""


@register_algorithm("dfedavgm")
def dfedavgm(sgd: LocalSGD | float = _SGD, sampling: Sampling = _EVERY_CLIENT,
             **keywords: Unpack[DFedAvgMKeywords]) -> Algorithm:
    r"""DFedAvgM: ``K`` local SGD steps with heavy-ball momentum, then one gossip step.

    Following Sun et al. (Algorithm 1), the momentum restarts from zero at every round (the
    local iterates start at the gossiped model, ``y^{t,-1} = y^{t,0} = x^t``).
    ``participation`` < 1 makes a sampled fraction of the clients active per round (the
    others neither train nor communicate: :func:`~topofl.engine.pieces.with_participation`).

    Parameters
    ----------
    sgd : LocalSGD or float, default ``LocalSGD(momentum=0.9)``
        The local SGD of a round (a number: its learning rate, ``dfedavgm(0.05)``); its
        fields are also taken flat, as below.
    sampling : Sampling, default ``Sampling()``
        The clients active per round (default: all); its fields are also taken flat.
    lr, momentum, weight_decay, local_steps, local_epochs, decay
        The local-SGD keywords of :func:`~topofl.algorithms.dsgd`, with ``momentum=0.9`` and
        5 local steps by default (when neither ``local_steps`` nor ``local_epochs`` is given).
    participation, sample_seed
        The fraction of clients active per round and the seed of its draws (default: all).

    Examples
    --------
    >>> algo = tf.algorithms.dfedavgm(lr=0.05, local_steps=3)
    >>> algo.phases[0].steps, algo.hparams["momentum"]
    (3, 0.9)
    """
    kw = Keywords("dfedavgm", keywords)
    active = kw.take(sampling)  # checked first, as before the groups
    hp = kw.take(sgd, _SGD).resolved(default_steps=_DEFAULT_STEPS)
    kw.done()
    algo = sgd_algorithm("dfedavgm", hp, gossip(), round_start=restart_momentum(),
                         lost="renormalise", stacks=True)
    return with_participation(algo, *active.checked())
