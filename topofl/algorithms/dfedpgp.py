r"""Partially personalized decentralized learning: DFedPGP and its ablation DFedAvgM-P.

Every client keeps a personal *head* $v_i$ (the model's last linear layers, columns
``ctx.layout.cols("head")``) and learns a shared *body* $u$ (columns ``cols("body")``) with its
neighbours. Each round trains the two parts alternately, head first (Algorithm 1 of [1]_,
lines 5-12), then communicates the body only: the heads never leave their clients.

Table 4 of [1]_ ablates the two ingredients of DFedPGP; the four cells are four topofl
algorithms:

==========  =======================  ======================  ==================================
Table 4     partial personalization  directed communication  topofl
==========  =======================  ======================  ==================================
DFedAvgM    no                       no (doubly stochastic)  :func:`~topofl.algorithms.dfedavgm`
DFedAvgM-P  yes (head/body split)    no (doubly stochastic)  :func:`dfedavgm_p`
OSGP        no                       yes (push-sum)          :func:`~topofl.algorithms.osgp`
DFedPGP     yes (head/body split)    yes (push-sum)          :func:`dfedpgp`
==========  =======================  ======================  ==================================

:func:`dfedpgp` and :func:`dfedavgm_p` share their defaults (those of Section 5.1 of [1]_),
so the two differ only in the communication. ``dfedavgm`` and ``osgp`` have library-wide
defaults: for Table 4, give them ``momentum=0.9, weight_decay=5e-3, decay=0.99,
local_epochs=5`` too.

Notes
-----
Where Section 5.1 of [1]_ is silent, DFedPGP reads it so:

* $\eta_v$ is not given separately ("a learning rate $\eta_u = 0.1$ to update the model
  parameters"): it defaults to $\eta_u$.
* Momentum is "local": each client restarts it every round, as a fresh SGD optimizer per
  round would (and as DFedAvgM does); head and body have separate buffers (different
  columns), as with one optimizer per phase.
* Weight decay is part of the gradient of $F_i$, which Algorithm 1 evaluates at $z_i$, so
  the decay term is $\lambda z_i$, applied to $u_i$ like the rest of the gradient (as in
  :func:`~topofl.algorithms.sgp`); on the head it is $\lambda v_i$.
* The experiments' graph (Section 5.1, Appendix B): every client exchanges with 10 random
  peers per round. Push-sum needs the column-stochastic push form of Algorithm 1
  ($p_{j,i}^t = 1 / |\mathcal{N}^{out}_{i,t}|$, the sender splitting its mass over itself
  and its out-neighbours): ``topofl.topologies.random_directed(n, 10, seed=s,
  mode="push")``. Appendix B's pull form with uniform in-weights is row stochastic and would
  make push-sum biased; it is not accepted (``requires="column"``).

Runs stack (``stacks=True``, :mod:`topofl.engine.stack`: a sweep's seeds and learning rates as
one batched pass, each run recording what it records alone): every piece changes a client's
row from that row alone (the head, the local steps, the de-biasing) or through the mixer (the
push-sum of the body and the weights). With ``participation < 1`` they run alone (the sample
is drawn among every row of the pass).

References
----------
.. [1] Y. Liu, Y. Shi, Q. Li, B. Wu, X. Wang, L. Shen, "Decentralized Directed Collaboration
   for Personalized Federated Learning", CVPR 2024 (DFedPGP: Algorithm 1; Section 5.1;
   Tables 3-4; Appendix B).
.. [2] M. Assran, N. Loizou, N. Ballas, M. Rabbat, "Stochastic Gradient Push for Distributed
   Deep Learning", ICML 2019 (SGP/OSGP: gradients at the de-biased parameters).
.. [3] T. Sun, D. Li, B. Wang, "Decentralized Federated Averaging", IEEE TPAMI 2022
   (DFedAvgM: local momentum SGD, then gossip with a doubly stochastic matrix).
.. [4] D. Kempe, A. Dobra, J. Gehrke, "Gossip-based computation of aggregate information",
   FOCS 2003 (push-sum).
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
from topofl.engine.pieces import SGD, PushSum, with_participation
from topofl.engine.protocol import Algorithm

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["dfedpgp", "DFedPGPKeywords"]


class DFedPGPKeywords(PartialTrainingKeywords, SamplingKeywords, total=False):
    """DFedPGP's flat keywords: the fields of its groups (documented at :func:`dfedpgp`)."""


@register_algorithm("dfedpgp")
def dfedpgp(training: PartialTraining | float = TRAINING, lr_v: float | None = None, *,
            sampling: Sampling = EVERY_CLIENT, **keywords: Unpack[DFedPGPKeywords]
            ) -> Algorithm:
    r"""DFedPGP: partial personalization with push-sum over directed time-varying graphs.

    Algorithm 1 of Liu et al. [1]_. Client $i$ holds the biased shared body $u_i$, its push-sum
    weight $\mu_i$ (initially 1), the de-biased body $z_i = u_i / \mu_i$ and its personal head
    $v_i$. Each round $t$:

    1. $K_v$ steps on the head at the de-biased body of the round's start:
       $v_i \leftarrow v_i - \eta_v \nabla_v F_i(z_i^{t,0}, v_i)$;
    2. $K_u$ steps on the body with the new head, the gradient taken at
       $z_i^{t,k} = u_i^{t,k} / \mu_i^t$ and applied to the numerator:
       $u_i \leftarrow u_i - \eta_u \nabla_u F_i(z_i^{t,k}, v_i^{t+1})$;
    3. push $p_{ji}^t u_i$ and $p_{ji}^t \mu_i^t$ to the out-neighbours and sum what arrives:
       $u \leftarrow P^t u$, $\mu \leftarrow P^t \mu$ with $P^t$ column stochastic, then
       de-bias $z_i = u_i / \mu_i$.

    The heads never leave their clients; the evaluated model of client $i$ is $(z_i, v_i)$.

    Parameters
    ----------
    training : PartialTraining or float, optional
        The head-then-body training (:class:`~topofl.algorithms._partial.PartialTraining`:
        the keywords ``lr_u`` to ``local_epochs`` below); a number is ``lr_u``.
    lr_v : float, optional
        Learning rate $\eta_v$ of the personal head (default ``lr_u``), second by position.
    sampling : Sampling, optional
        ``participation`` and ``sample_seed`` below (:class:`~topofl.algorithms.hparams.Sampling`).
    **keywords
        The groups' fields as flat keywords:
    lr_u : float, default 0.1
        Learning rate $\eta_u$ of the shared body (``lr_u * decay**t`` at round ``t``).
    momentum : float, default 0.9
        Local heavy-ball momentum, restarted every round.
    weight_decay : float, default 5e-3
        L2 coefficient ("a decay rate of 0.005", Section 5.1), added to the gradient at the
        de-biased point.
    decay : float, default 0.99
        Learning-rate factor per round.
    local_epochs_u, local_steps_u
        Local work on the body, $K_u$: epochs (default 5), one value for all clients or one
        per client (computation heterogeneity, Table 3: see
        :func:`~topofl.algorithms.heterogeneous_epochs`), or a number of steps.
    local_epochs_v, local_steps_v
        Local work on the head, $K_v$: epochs (default 1) or steps.
    lr, local_steps, local_epochs
        Library-wide aliases, so that every algorithm runs with the same keywords: ``lr`` sets
        ``lr_u`` (and ``lr_v`` unless given); ``local_steps``/``local_epochs`` set the body's
        local work (the work Table 3 varies).
    participation : float in (0, 1], default 1
        Fraction of the clients active per round, sampled from ``(sample_seed, t)``; the
        others neither train nor send nor receive (they keep their models and push-sum
        weights), and each active sender splits its mass over itself and its *active*
        out-neighbours (:func:`~topofl.engine.pieces.with_participation`).
    sample_seed : int, default 0

    Returns
    -------
    Algorithm
        ``requires="column"`` (push-sum; doubly stochastic matrices are column stochastic too),
        ``shared="body"``: the engine refuses a model without a head/body split.

    Raises
    ------
    ValueError
        Non-positive learning rates, momentum outside ``[0, 1)``, negative weight decay, decay
        outside ``(0, 1]``, non-positive local work, or the same quantity given twice (``lr``
        with ``lr_u``, steps with epochs).

    Notes
    -----
    Section 5.1 fixes $\eta_u = 0.1$, 5 local epochs on the shared part and 1 on the personal
    part, SGD with momentum 0.9, weight decay 0.005 and a learning rate decayed by 0.99 per
    round; these are the defaults. Where the paper is silent ($\eta_v$, the momentum, the
    weight decay, the experiments' graph), the module docstring says how it is read. With a
    doubly stochastic ``W`` the weights stay 1 and DFedPGP is exactly :func:`dfedavgm_p`
    (tested). Cost per round: one ``[n, P_body]`` gossip and one ``[n]`` weight gossip, plus an
    ``O(n P)`` de-biasing before each local step (negligible next to the gradients).

    References
    ----------
    .. [1] Y. Liu, Y. Shi, Q. Li, B. Wu, X. Wang, L. Shen, "Decentralized Directed
       Collaboration for Personalized Federated Learning", CVPR 2024.

    Examples
    --------
    A toy problem with a one-number body and a one-number head: client ``i`` minimises
    ``(u - a_i)^2 / 2 + (v - b_i)^2 / 2``. Over a directed graph (push-sum weights) the
    de-biased bodies reach the average of ``a`` (= 4), each head its own ``b_i``.

    >>> import networkx as nx, torch
    >>> push = tf.Topology.from_networkx(nx.DiGraph([(0, 1), (1, 2), (2, 0), (0, 2)]),
    ...                                  weights="push_sum")
    >>> algo = tf.algorithms.dfedpgp(0.1, momentum=0.0, weight_decay=0.0, local_steps_u=1,
    ...                              local_steps_v=1)
    >>> env = tf.engine.toy_services(
    ...     3, layout=tf.engine.ParamLayout.from_model(torch.nn.Linear(1, 1), head=["bias"]))
    >>> target = torch.tensor([[0.0, -1.0], [4.0, 0.0], [8.0, 1.0]], dtype=torch.float64)
    >>> trace = tf.engine.run_rounds(algo, torch.zeros(3, 2, dtype=torch.float64), push,
    ...     lambda z, phase, rnd: z - target, rounds=400, env=env,
    ...     lr=lambda rnd, phase: 0.1 * 0.98**rnd.t)  # head, then body, then push-sum
    >>> [[round(v, 3) for v in row] for row in trace.evaluated().tolist()]
    [[4.0, -1.0], [4.0, 0.0], [4.0, 1.0]]
    >>> round(float(trace.state.weight.sum()), 12)
    3.0
    """
    hp, active = partial_hparams("dfedpgp", training, lr_v, sampling, keywords)
    # head phase: grad_v F_i(z_i^{t,0}, v_i^{t,k}) (line 6); body phase: grad_u F_i(z_i^{t,k},
    # v_i^{t+1}) with z_i^{t,k} = u_i^{t,k} / mu_i^t (lines 10-11): both at (u / mu, v); the
    # gradient (weight decay included) is applied to the biased numerator u (line 10)
    sgd = SGD(hp.momentum, hp.weight_decay, debias="body")
    # lines 14-17: push p_ji u_i and p_ji mu_i, sum what arrives, de-bias z_i = u_i / mu_i
    push = PushSum("body")
    algo = partial_algorithm(
        "dfedpgp", hp, sgd, push, init=(push,),
        evaluate=push.evaluate,  # output of Algorithm 1: the personalized model (z_i, v_i)
        requires="column", lost="mass",
        stacks=True)  # a row changes from itself or through the mixer (module docstring)
    return with_participation(algo, *active)
