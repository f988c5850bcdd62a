r"""Ditto: a personal model per client, pulled towards a FedAvg global model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from topofl._utils.validation import check_real
from topofl.algorithms._common import ServerParams, check_lr, check_work
from topofl.algorithms._server import server_algorithm, server_factory
from topofl.algorithms.base import register_algorithm
from topofl.engine.pieces import SGD, Sampled, compose_init, restart_momentum
from topofl.engine.protocol import Algorithm, Phase, Round, Services, State

__all__ = ["ditto", "DittoState"]


@dataclass
class DittoState:
    """Ditto's state besides the global model copies (``State.x``).

    Attributes
    ----------
    personal : Tensor
        ``[n, P]`` the personal models $v_k$.
    personal_momentum : Tensor or None
        ``[n, P]`` their momentum buffers (with momentum).
    """

    personal: Tensor
    personal_momentum: Tensor | None = None


def _personal_momentum(state: State) -> Tensor | None:
    return state.own_as(DittoState).personal_momentum


@dataclass(frozen=True)
class _Personal:
    """Ditto's local piece: the ``"personal"`` phase steps the personal models (gradient plus
    ``lam * (v - w^t)``) with the same sampled SGD as the global model's own phase."""

    sgd: Sampled
    lam: float
    rowwise = False

    @property
    def skips_idle(self) -> bool:
        """As the inner piece (the pull towards ``w^t`` reads the client's own rows)."""
        return self.sgd.skips_idle

    def init_(self, state: State, env: Services) -> None:
        self.sgd.init_(state, env)
        state.own = DittoState(
            personal=state.x.clone(),
            personal_momentum=None if state.momentum is None else torch.zeros_like(state.x))

    def point(self, state: State, phase: Phase, env: Services) -> Tensor:
        return state.own_as(DittoState).personal if phase.name == "personal" else state.x

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        if phase.name != "personal":
            self.sgd.update(state, grads, phase, lr, rnd, env)
            return
        own = state.own_as(DittoState)
        v = own.personal
        if self.lam:
            # state.x is still w^t here: the personal phase runs before the global one
            grads.add_(v, alpha=self.lam).add_(state.x, alpha=-self.lam)
        personal = State(x=v, momentum=own.personal_momentum)
        self.sgd.update(personal, grads, phase, lr, rnd, env)

    def fused(self, executor: Any) -> None:
        return None


def _personal_models(state: State, rnd: Round, env: Services) -> Tensor:
    return state.own_as(DittoState).personal


@register_algorithm("ditto")
@server_factory
def ditto(
    hp: ServerParams,
    *,
    lam: float = 0.75,
    personal_lr: float | None = None,
    local_steps: int | None = None,
    local_epochs: float | tuple[float, ...] | None = None,
    personal_steps: int | None = None,
    personal_epochs: float | tuple[float, ...] | None = None,
) -> Algorithm:
    r"""Ditto: a personal model per client, pulled towards a FedAvg global model.

    Client $k$ keeps a personal model $v_k$ beside its copy of the global model $w$. Each round,
    from the global model $w^t$ it received, it (i) takes SGD steps on
    $h_k(v_k; w^t) = F_k(v_k) + \frac{\lambda}{2}\|v_k - w^t\|^2$,
    $v_k \leftarrow v_k - \eta_v(\nabla F_k(v_k) + \lambda (v_k - w^t))$, and (ii) takes local
    SGD steps on $F_k$ from $w^t$; the server averages the global models (FedAvg). The
    personal models are evaluated.

    Parameters
    ----------
    lr : float, default 0.1
        Learning rate of the global model (``lr * decay**t`` at round ``t``).
    lam : float, default 0.75
        $\lambda \ge 0$: 0 is local training, $\lambda \to \infty$ pins $v_k$ to $w$. The
        default is DPFL's setting for Ditto (Appendix F.6).
    personal_lr : float, optional
        $\eta_v$ (default ``lr``).
    momentum : float, default 0
        Heavy-ball momentum of both local optimisers (restarted every round).
    weight_decay : float, default 0
    local_steps, local_epochs
        Local work on the global model: steps (default 1) or epochs.
    personal_steps, personal_epochs
        Local work on the personal model (default: the same as the global model's).
    decay, participation, sample_seed, weighting
        As in :func:`~topofl.algorithms.fedavg` (same defaults).

    Returns
    -------
    Algorithm
        Phases ``"personal"`` then ``"global"`` (``point`` returns $v$, resp. $w$);
        ``shared="all"``, ``uses_topology=False``. ``state.x`` holds the global model copies
        and ``state.own`` (:class:`DittoState`) the personal models.

    Notes
    -----
    In Li et al.'s Algorithm 1 both local problems of a round start from the same $w^t$ and
    do not depend on each other, so their order is free; topofl runs the personal steps first,
    while ``state.x`` still holds $w^t$, which then needs no copy. The personal models start
    from the initial model ($v_k^0 = w^0$). The personal update is the plain gradient step of
    Algorithm 1 (plus momentum and weight decay on $v_k$ when asked for). Messages: ``2 m`` per
    round of ``P`` numbers each.

    References
    ----------
    .. [1] T. Li, S. Hu, A. Beirami, V. Smith, "Ditto: Fair and robust federated learning
       through personalization", ICML 2021.

    Examples
    --------
    Client $i$ minimises $(x - i)^2 / 2$: the global model reaches the mean 1.5 and the personal
    optimum is $v_i = (i + \lambda \cdot 1.5) / (1 + \lambda)$, here with $\lambda = 1$.

    >>> import torch
    >>> algo = tf.algorithms.ditto(lr=0.2, lam=1.0, personal_steps=20)
    >>> c = torch.arange(4.0, dtype=torch.float64).unsqueeze(1)
    >>> trace = tf.engine.run_rounds(algo, torch.zeros_like(c), None,
    ...                              lambda z, phase, rnd: z - c, rounds=200, lr=0.2)
    >>> [round(v, 4) for v in trace.state.x.flatten().tolist()]
    [1.5, 1.5, 1.5, 1.5]
    >>> [round(v, 4) for v in trace.evaluated().flatten().tolist()]
    [0.75, 1.25, 1.75, 2.25]
    """
    lam = check_real(lam, "lam", low=0)
    plr = hp.lr if personal_lr is None else check_lr(personal_lr, "personal_lr")
    gs, ge = check_work(local_steps, local_epochs)
    if personal_steps is None and personal_epochs is None:
        ps, pe = gs, ge
    else:
        ps, pe = check_work(personal_steps, personal_epochs, steps_name="personal_steps",
                            epochs_name="personal_epochs")
    local = _Personal(Sampled(SGD(hp.momentum, hp.weight_decay), hp.participation,
                              hp.sample_seed), lam)
    return server_algorithm(
        "ditto", hp,
        dict(lr=hp.lr, lam=lam, personal_lr=plr, momentum=hp.momentum,
             weight_decay=hp.weight_decay, local_steps=gs, local_epochs=ge,
             personal_steps=ps, personal_epochs=pe, decay=hp.decay),
        (Phase("all", ps, pe, plr, name="personal"), Phase("all", gs, ge, hp.lr, name="global")),
        shared="all",
        evaluate=_personal_models,
        local=local,
        init=compose_init(local),
        round_start=restart_momentum(_personal_momentum),
    )
