r"""DFedAvgM-P: DFedAvgM with a personal head and undirected gossip of the body only.

The "partial personalization, undirected communication" cell of Table 4 of DFedPGP (see
:mod:`topofl.algorithms.dfedpgp`).

References
----------
.. [1] Y. Liu, Y. Shi, Q. Li, B. Wu, X. Wang, L. Shen, "Decentralized Directed Collaboration
   for Personalized Federated Learning", CVPR 2024, Table 4.
.. [3] T. Sun, D. Li, B. Wang, "Decentralized Federated Averaging", IEEE TPAMI 2022
   (DFedAvgM: local momentum SGD, then gossip with a doubly stochastic matrix).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from topofl.algorithms._partial import (
    EVERY_CLIENT,
    TRAINING,
    PartialTraining,
    PartialTrainingKeywords,
    partial_algorithm,
    partial_hparams,
)
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.hparams import Sampling, SamplingKeywords
from topofl.engine.pieces import SGD, gossip, with_participation
from topofl.engine.protocol import Algorithm

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["dfedavgm_p", "DFedAvgMPKeywords"]


class DFedAvgMPKeywords(PartialTrainingKeywords, SamplingKeywords, total=False):
    """DFedAvgM-P's flat keywords: :func:`~topofl.algorithms.dfedpgp`'s."""


@register_algorithm("dfedavgm_p")
def dfedavgm_p(training: PartialTraining | float = TRAINING, lr_v: float | None = None, *,
               sampling: Sampling = EVERY_CLIENT, **keywords: Unpack[DFedAvgMPKeywords]
               ) -> Algorithm:
    r"""DFedAvgM-P: DFedAvgM with a personal head and undirected gossip of the body only.

    The "partial personalization, undirected communication" cell of Table 4 of [1]_: DFedPGP
    without the directed push-sum. Each round: $K_v$ momentum-SGD steps on the head $v_i$,
    then $K_u$ on the body $u_i$ (the same alternation as :func:`dfedpgp`), then one gossip
    step of the bodies with a doubly stochastic $W_t$, $u \leftarrow W_t u$; the heads stay.

    Parameters
    ----------
    training : PartialTraining or float, optional
        The two-phase partial training, as in :func:`dfedpgp` (a number is ``lr_u``).
    lr_v : float, optional
        The head's learning rate, also by position, as in :func:`dfedpgp`.
    sampling : Sampling, optional
        The clients active per round, as in :func:`dfedpgp`.
    **keywords
        The groups' fields as flat keywords:
    lr_u, momentum, weight_decay, decay, local_epochs_u, local_steps_u, local_epochs_v,
    local_steps_v, lr, local_steps, local_epochs, participation, sample_seed
        As in :func:`dfedpgp`, with the same defaults (Section 5.1 of [1]_), so that the
        ablation changes the communication only.

    Returns
    -------
    Algorithm
        ``requires="doubly"``, ``shared="body"``.

    Raises
    ------
    ValueError
        As :func:`dfedpgp`.

    Notes
    -----
    [1]_ names the ablation but does not spell it out. Removing the directed communication
    from DFedPGP leaves the alternating head-then-body local updates and a symmetric gossip of
    the shared part; DFedAvgM's own ingredients (local momentum SGD restarted every round, one
    gossip step with a doubly stochastic matrix, Sun et al. [3]_) are what that gossip is.
    Weight decay is evaluated at $u_i$ (no push-sum weights here). On a doubly stochastic
    graph :func:`dfedpgp` computes exactly this.

    References
    ----------
    .. [1] Y. Liu et al., "Decentralized Directed Collaboration for Personalized Federated
       Learning", CVPR 2024, Table 4.
    .. [3] T. Sun, D. Li, B. Wang, "Decentralized Federated Averaging", IEEE TPAMI 2022.

    Examples
    --------
    The toy problem of :func:`dfedpgp` on an undirected ring: the bodies reach the average of
    ``a``, each head its own ``b_i``.

    >>> import torch
    >>> algo = tf.algorithms.dfedavgm_p(0.1, momentum=0.0, weight_decay=0.0, local_steps_u=1,
    ...                                 local_steps_v=1)
    >>> env = tf.engine.toy_services(
    ...     3, layout=tf.engine.ParamLayout.from_model(torch.nn.Linear(1, 1), head=["bias"]))
    >>> target = torch.tensor([[0.0, -1.0], [4.0, 0.0], [8.0, 1.0]], dtype=torch.float64)
    >>> trace = tf.engine.run_rounds(algo, torch.zeros(3, 2, dtype=torch.float64),
    ...     tf.topologies.ring(3), lambda z, phase, rnd: z - target, rounds=400, env=env,
    ...     lr=lambda rnd, phase: 0.1 * 0.98**rnd.t)
    >>> [[round(v, 3) for v in row] for row in trace.evaluated().tolist()]
    [[4.0, -1.0], [4.0, 0.0], [4.0, 1.0]]
    >>> [p.part for p in algo.phases], algo.shared, algo.requires
    (['head', 'body'], 'body', 'doubly')
    """
    hp, active = partial_hparams("dfedavgm_p", training, lr_v, sampling, keywords)
    sgd = SGD(hp.momentum, hp.weight_decay)
    return with_participation(
        partial_algorithm("dfedavgm_p", hp, sgd, gossip("body"), requires="doubly",
                          lost="renormalise", stacks=True), *active)
