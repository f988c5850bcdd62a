r"""Exact diffusion: adapt, correct, combine; D-SGD's bias removed by one correction term.

Exact diffusion (Yuan, Ying, Zhao & Sayed 2019) and D² (Tang, Lian, Yan, Zhang & Liu 2018)
are one recursion: with $\tilde W = I - \gamma (I - W)$ (exact diffusion's
$\bar A = (I + W)/2$ at $\gamma = 1/2$, D²'s $W$ itself at $\gamma = 1$),

$x_{t+1} = \tilde W \big(2 x_t - x_{t-1} - \alpha (g(x_t) - g(x_{t-1}))\big)$,

from $x_1 = \tilde W (x_0 - \alpha g(x_0))$. NIDS (Li, Shi & Yan 2019,
:func:`~topofl.algorithms.nids`) runs the same recursion from $x_1 = x_0 - \alpha g(x_0)$
(no mix in its first round). The pieces of both live here.

References
----------
.. [1] K. Yuan, B. Ying, X. Zhao, A. H. Sayed, "Exact diffusion for distributed optimization
   and learning -- Part I: Algorithm development", IEEE Trans. Signal Process. 67(3), 2019.
.. [2] H. Tang, X. Lian, M. Yan, C. Zhang, J. Liu, "D²: Decentralized training over
   decentralized data", ICML 2018.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from topofl._utils.validation.scalars import check_real
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.dsgt import standing
from topofl.algorithms.extra import require_symmetric
from topofl.algorithms.hparams import check_decay, check_lr, check_wd
from topofl.engine.ledger import Flow, dtype_bits, graph_arcs
from topofl.engine.pieces import compose_init, consensus_step_, graph_of, hold
from topofl.engine.protocol import Algorithm, LocalUpdate, Phase, Round, Sent, Services, State

__all__ = ["exact_diffusion", "DiffusionState"]


@dataclass
class DiffusionState:
    r"""The state exact diffusion and NIDS keep besides the models (``State.own``).

    Attributes
    ----------
    psi : Tensor
        ``[n, P]`` the latest adapted point $\psi_t = x_{t-1} - \alpha g(x_{t-1})$
        ($\psi_0 = x_0$), what the next round's correction subtracts.
    """

    psi: Tensor


def check_gamma(gamma: Any) -> float:
    r"""The weight $\gamma \in (0, 1]$ of $\tilde W = I - \gamma (I - W)$."""
    return check_real(gamma, "gamma", low=0, high=1, low_open=True)


@dataclass(frozen=True)
class Adapt(LocalUpdate):
    r"""The local piece of exact diffusion and NIDS: adapt and correct,
    $\psi_{t+1} = x_t - \alpha g(x_t)$ and $x \leftarrow x_t + \psi_{t+1} - \psi_t$ (the
    point the round combines); an absent client (rate 0) keeps its model and $\psi$."""

    weight_decay: float

    @property
    def rowwise(self) -> bool:
        return True

    def init_(self, state: State, env: Services) -> None:
        hold(state, DiffusionState(psi=state.x.clone()))

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        own = state.own_as(DiffusionState)
        x, psi = state.x, own.psi
        if self.weight_decay:
            grads.add_(x, alpha=self.weight_decay)
        adapted = grads.mul_(lr.unsqueeze(1)).neg_().add_(x)  # psi_{t+1} = x_t - a g(x_t)
        still = standing(lr)
        if still is None:
            x.add_(adapted).sub_(psi)  # x_t + psi_{t+1} - psi_t
            psi.copy_(adapted)
        else:
            x.copy_(torch.where(still, x, x + adapted - psi))
            psi.copy_(torch.where(still, psi, adapted))

    def fused(self, executor: Any) -> None:
        return None


def combine(gamma: float, first_round_mixes: bool) -> Callable[[State, Round, Services], Sent]:
    r"""The communicate piece: $x \leftarrow \tilde W x = x + \gamma (W x - x)$ (every round,
    or, for NIDS, from the second round on: its first round sends nothing)."""

    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        topo = graph_of(rnd)
        if rnd.t == 0 and not first_round_mixes:
            return Sent.of()
        consensus_step_(env, topo, state.x, state.x, gamma)
        return Sent.of(Flow("model", graph_arcs(topo), int(state.x.shape[1]),
                            dtype_bits(state.x.dtype)))

    return communicate


def diffusion_algorithm(name: str, lr: float, gamma: float, weight_decay: float,
                        decay: float, *, first_round_mixes: bool) -> Algorithm:
    """Exact diffusion (``first_round_mixes``) or NIDS, their settings checked."""
    lr = check_lr(lr)
    gamma = check_gamma(gamma)
    wd = check_wd(weight_decay)
    decay = check_decay(decay)
    local = Adapt(wd)
    return Algorithm(
        name=name,
        hparams=dict(lr=lr, gamma=gamma, weight_decay=wd, decay=decay),
        phases=(Phase("all", 1, None, lr),),
        init=compose_init(local),
        local=local,
        communicate=combine(gamma, first_round_mixes),
        round_start=require_symmetric(name),
        requires="doubly",
        decay=decay,
        stacks=True,
    )


@register_algorithm("exact_diffusion")
def exact_diffusion(
    lr: float = 0.1,
    *,
    gamma: float = 0.5,
    weight_decay: float = 0.0,
    decay: float = 1.0,
) -> Algorithm:
    r"""Exact diffusion (Yuan et al. 2019): adapt, correct, combine; exact with a constant step.

    With $g$ the clients' (stochastic) gradients, $\alpha$ the step, $W$ symmetric and doubly
    stochastic and $\tilde W = I - \gamma (I - W)$ (the paper's $\bar A = (I + W)/2$ at the
    default $\gamma = 1/2$), each round is the paper's three steps, from $\psi_0 = x_0$:

    * adapt: $\psi_{t+1} = x_t - \alpha\, g(x_t)$;
    * correct: $\phi_{t+1} = \psi_{t+1} + x_t - \psi_t$;
    * combine: $x_{t+1} = \tilde W \phi_{t+1}$.

    Eliminating $\psi$: $x_1 = \tilde W (x_0 - \alpha g(x_0))$ and
    $x_{t+1} = \tilde W (2 x_t - x_{t-1} - \alpha (g(x_t) - g(x_{t-1})))$, which at
    $\gamma = 1$ is D² (Tang et al. 2018, which asks $\lambda_{\min}(W) > -1/3$). Summed over
    clients $\sum_i (x_{t,i} - \psi_{t,i}) = 0$ at every round, so with full gradients and a
    constant step the fixed point is consensus at the exact optimum of $\sum_i f_i$.

    Parameters
    ----------
    lr : float, default 0.1
        The step $\alpha$ (``lr * decay**t`` at round ``t``, in $\psi_{t+1}$).
    gamma : float in (0, 1], default 0.5
        The combination $\tilde W = I - \gamma (I - W)$: 0.5 is exact diffusion's
        $(I + W)/2$ (positive semi-definite for every symmetric doubly stochastic $W$), 1 is
        D²'s $W$.
    weight_decay : float, default 0
        Added to the gradient ($g_i + \lambda x_i$).
    decay : float, default 1

    Returns
    -------
    Algorithm
        One local step per round; ``requires="doubly"`` and a symmetric ``W`` at every round
        (checked: a ``ValueError`` otherwise); ``state.own`` is a :class:`DiffusionState`.

    Notes
    -----
    Messages: the corrected point $\phi$ on every arc, one per arc and round, as D-SGD's
    model. decent-bench 0.3.0's ``ED`` (alias ``ExactDiffusion``, one method) combines with
    $(I + W)/2$: this function at ``gamma=0.5`` gives its iterates to 1e-10 on its regression
    problem (``tests/algorithms/test_decentbench.py``). The paper's analysis is for a fixed
    ``W``; a time-varying schedule of symmetric doubly stochastic matrices runs (the
    invariant above still holds) without that guarantee. A client absent from a round
    (``[availability]``) keeps its model and $\psi$.

    References
    ----------
    .. [1] K. Yuan, B. Ying, X. Zhao, A. H. Sayed, "Exact diffusion for distributed
       optimization and learning -- Part I: Algorithm development", IEEE Trans. Signal
       Process. 67(3), 2019.
    .. [2] H. Tang, X. Lian, M. Yan, C. Zhang, J. Liu, "D²: Decentralized training over
       decentralized data", ICML 2018 (``gamma=1``).

    Examples
    --------
    Client ``i`` minimises $a_i (x - b_i)^2 / 2$; the optimum of the sum is
    $\sum a_i b_i / \sum a_i = 2$, reached exactly with a constant step.

    >>> import torch
    >>> a = torch.tensor([[1.0], [2.0], [1.0], [4.0]], dtype=torch.float64)
    >>> b = torch.tensor([[0.0], [1.0], [2.0], [3.0]], dtype=torch.float64)
    >>> trace = tf.engine.run_rounds(tf.algorithms.exact_diffusion(lr=0.1),
    ...     torch.zeros_like(b), tf.topologies.ring(4), lambda z, phase, rnd: a * (z - b),
    ...     rounds=400)
    >>> [round(v, 8) for v in trace.evaluated().flatten().tolist()]
    [2.0, 2.0, 2.0, 2.0]
    """
    return diffusion_algorithm("exact_diffusion", lr, gamma, weight_decay, decay,
                               first_round_mixes=True)
