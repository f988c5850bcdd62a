r"""D-SGD and its family: D-SGD (+ Clique Averaging, + momentum), DFedAvgM, Local, FedAvg.

References
----------
.. [1] X. Lian et al., "Can decentralized algorithms outperform centralized algorithms?",
   NeurIPS 2017 (D-SGD).
.. [2] A. Bellet, A.-M. Kermarrec, E. Lavoie, "D-Cliques", Fig. 2 (D-SGD), Fig. 7 (Clique
   Averaging), eq. (4)-(5) (momentum with Clique Averaging).
.. [3] T. Sun, D. Li, B. Wang, "Decentralized Federated Averaging", IEEE TPAMI 2022 (DFedAvgM).
.. [4] B. McMahan et al., "Communication-efficient learning of deep networks from decentralized
   data", AISTATS 2017 (FedAvg).
"""

from __future__ import annotations

import torch
from torch import Tensor

from topofl.algorithms._common import check_sgd
from topofl.algorithms.base import (
    Algorithm,
    Context,
    Phase,
    State,
    clique_average_,
    register_algorithm,
    sgd_step,
)
from topofl.graph import Topology

__all__ = ["dsgd", "dfedavgm", "local", "fedavg"]


def _init(momentum: float) -> object:
    def init(x0: Tensor, ctx: Context) -> State:
        return State(x=x0, momentum=torch.zeros_like(x0) if momentum else None)

    return init


def _point(state: State, ctx: Context, phase: Phase | None = None) -> Tensor:
    return state.x


def _make_update(momentum: float, weight_decay: float, nesterov: bool, clique_averaging: bool):  # type: ignore[no-untyped-def]
    def update(state: State, grads: Tensor, phase: Phase, lr: Tensor, ctx: Context) -> None:
        cols = ctx.layout.cols(phase.part)
        g = grads[:, cols]
        if clique_averaging:
            gi, gs = ctx.extra["clique_index"], ctx.extra["clique_sizes"]
            if weight_decay:  # decay each node's own model, then average the gradients
                g.add_(state.x[:, cols], alpha=weight_decay)
            clique_average_(g, gi, gs)
            wd = 0.0
        else:
            wd = weight_decay
        sgd_step(
            state.x[:, cols], g, lr,
            momentum_buf=None if state.momentum is None else state.momentum[:, cols],
            momentum=momentum, weight_decay=wd, nesterov=nesterov,
        )

    return update


def _gossip(clique_averaging: bool):  # type: ignore[no-untyped-def]
    def communicate(state: State, topology: Topology, t: int, ctx: Context) -> int:
        ctx.mixer.mix_(topology, state.x)
        msgs = topology.messages_per_round
        if clique_averaging:
            msgs += int(ctx.extra["clique_messages"])
        return msgs

    return communicate


def _eval(state: State, ctx: Context) -> Tensor:
    return state.x


def _clique_start(state: State, t: int, ctx: Context) -> None:
    topo = ctx.topology
    if topo is None or topo.groups is None:
        raise ValueError(
            "clique_averaging=True needs a topology with groups (cliques), e.g. "
            "topofl.topologies.dcliques(...); this topology has none"
        )
    key = ("cliques", id(topo))
    if ctx.extra.get("clique_key") != key:
        idx = torch.as_tensor(topo.group_index, device=state.x.device)
        sizes = torch.bincount(idx).to(state.x.dtype)
        ctx.extra["clique_index"] = idx
        ctx.extra["clique_sizes"] = sizes
        ctx.extra["clique_messages"] = int(sum(len(g) * (len(g) - 1) for g in topo.groups))
        ctx.extra["clique_key"] = key


@register_algorithm("dsgd")
def dsgd(
    lr: float = 0.1,
    *,
    momentum: float = 0.0,
    nesterov: bool = False,
    weight_decay: float = 0.0,
    clique_averaging: bool = False,
    local_steps: int | None = None,
    local_epochs: float | None = None,
    decay: float = 1.0,
) -> Algorithm:
    r"""Decentralized SGD: local SGD step(s), then one gossip step ``X <- W_t X``.

    With ``clique_averaging=True`` (D-Cliques, Fig. 7) each node replaces its gradient by the
    average gradient of its clique (the topology's ``groups``) before stepping, and models are
    still averaged with ``W`` over all neighbours; with ``momentum > 0`` the momentum then acts on
    the clique-averaged gradient (eq. 4-5): $v \leftarrow m v + g$, $\theta \leftarrow \theta -
    \gamma v$. Clique Averaging sends gradients over intra-clique edges too, so it counts those
    messages (twice the edges in total, as the paper notes).

    Parameters
    ----------
    lr : float, default 0.1
        Learning rate $\gamma$ (``lr * decay**t`` at round ``t``).
    momentum : float, default 0
        Heavy-ball momentum (kept across rounds).
    nesterov : bool, default False
    weight_decay : float, default 0
    clique_averaging : bool, default False
    local_steps, local_epochs
        Local work per round: a number of steps (default 1: D-SGD proper), or local epochs
        (``ceil(epochs * m_i / batch_size)`` steps for client ``i``).
    decay : float, default 1

    Returns
    -------
    Algorithm

    Examples
    --------
    D-SGD on a toy consensus problem: client ``i`` minimises ``(x - i)^2 / 2`` and gossips on a
    ring; every model approaches the global optimum, the mean of ``0..3`` = 1.5.

    >>> import torch
    >>> algo = tf.algorithms.dsgd(lr=0.1)
    >>> ctx = tf.algorithms.toy_context(4)
    >>> state = algo.init(torch.zeros(4, 1, dtype=torch.float64), ctx)
    >>> ring = tf.topologies.ring(4)
    >>> for t in range(300):
    ...     grads = state.x - torch.arange(4.0, dtype=torch.float64).unsqueeze(1)
    ...     algo.update(state, grads, algo.phases[0], torch.full((4,), 0.1 * 0.98**t,
    ...                 dtype=torch.float64), ctx)
    ...     _ = algo.communicate(state, ring, t, ctx)
    >>> [round(v, 3) for v in state.x.flatten().tolist()]
    [1.5, 1.5, 1.5, 1.5]
    """
    hp = check_sgd(lr, momentum, weight_decay, decay, local_steps, local_epochs)
    lr, momentum, weight_decay, decay, steps, epochs = hp
    return Algorithm(
        name="dsgd",
        hparams=dict(hp.as_dict(), nesterov=bool(nesterov),
                     clique_averaging=bool(clique_averaging)),
        phases=(Phase("all", steps, epochs, lr),),
        init=_init(momentum),  # type: ignore[arg-type]
        point=_point,
        update=_make_update(momentum, weight_decay, bool(nesterov), bool(clique_averaging)),
        communicate=_gossip(bool(clique_averaging)),
        evaluate=_eval,
        round_start=_clique_start if clique_averaging else (lambda s, t, c: None),
        requires="doubly",
        decay=decay,
        rowwise=not clique_averaging,
        plain_sgd=not (clique_averaging or momentum or weight_decay),
    )


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
    lr, momentum, weight_decay, decay, steps, epochs = hp

    def round_start(state: State, t: int, ctx: Context) -> None:
        if state.momentum is not None:
            state.momentum.zero_()

    return Algorithm(
        name="dfedavgm",
        hparams=hp.as_dict(),
        phases=(Phase("all", steps, epochs, lr),),
        init=_init(momentum),  # type: ignore[arg-type]
        point=_point,
        update=_make_update(momentum, weight_decay, False, False),
        communicate=_gossip(False),
        evaluate=_eval,
        round_start=round_start,
        requires="doubly",
        decay=decay,
        rowwise=True,
        plain_sgd=not (momentum or weight_decay),
    )


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
    lr, momentum, weight_decay, decay, steps, epochs = hp
    return Algorithm(
        name="local",
        hparams=hp.as_dict(),
        phases=(Phase("all", steps, epochs, lr),),
        init=_init(momentum),  # type: ignore[arg-type]
        point=_point,
        update=_make_update(momentum, weight_decay, False, False),
        communicate=lambda state, topology, t, ctx: 0,
        evaluate=_eval,
        requires=None,
        decay=decay,
        uses_topology=False,
        rowwise=True,
        plain_sgd=not (momentum or weight_decay),
    )


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
    lr, momentum, weight_decay, decay, steps, epochs = hp

    def communicate(state: State, topology: Topology, t: int, ctx: Context) -> int:
        state.x.copy_(state.x.mean(dim=0, keepdim=True).expand_as(state.x))
        return 2 * state.x.shape[0]

    return Algorithm(
        name="fedavg",
        hparams=hp.as_dict(),
        phases=(Phase("all", steps, epochs, lr),),
        init=_init(momentum),  # type: ignore[arg-type]
        point=_point,
        update=_make_update(momentum, weight_decay, False, False),
        communicate=communicate,
        evaluate=_eval,
        requires=None,
        decay=decay,
        uses_topology=False,
        rowwise=True,
        plain_sgd=not (momentum or weight_decay),
    )
