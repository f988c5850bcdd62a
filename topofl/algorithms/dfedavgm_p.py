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

from topofl.algorithms._partial import PartialParams, partial_algorithm, partial_factory
from topofl.algorithms.base import register_algorithm
from topofl.engine.pieces import SGD, gossip
from topofl.engine.protocol import Algorithm

__all__ = ["dfedavgm_p"]


@register_algorithm("dfedavgm_p")
@partial_factory
def dfedavgm_p(hp: PartialParams) -> Algorithm:
    r"""DFedAvgM-P: DFedAvgM with a personal head and undirected gossip of the body only.

    The "partial personalization, undirected communication" cell of Table 4 of [1]_: DFedPGP
    without the directed push-sum. Each round: $K_v$ momentum-SGD steps on the head $v_i$,
    then $K_u$ on the body $u_i$ (the same alternation as :func:`dfedpgp`), then one gossip
    step of the bodies with a doubly stochastic $W_t$, $u \leftarrow W_t u$; the heads stay.

    Parameters
    ----------
    lr_u, lr_v, momentum, weight_decay, decay, local_epochs_u, local_steps_u, local_epochs_v,
    local_steps_v, lr, local_steps, local_epochs
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
    sgd = SGD(hp.momentum, hp.weight_decay)
    return partial_algorithm("dfedavgm_p", hp, sgd, gossip("body"), requires="doubly",
                             lost="renormalise", stacks=True)
