r"""LED: local exact diffusion, several local steps per round corrected by a dual variable.

Local Exact-Diffusion (Alghunaim 2024) takes $\tau$ local gradient steps per round, each
shifted by a local dual variable $y_i$, combines the results once and updates $y_i$ with what
the combination moved; with one local step and $\beta = 1$ it is exact diffusion
(:func:`~topofl.algorithms.exact_diffusion`, the combination matrix the same).

References
----------
.. [1] S. A. Alghunaim, "Local exact-diffusion for decentralized optimization and learning",
   IEEE Trans. Automat. Control, 2024 (arXiv:2302.00620).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from topofl._utils.validation import check_int, check_real
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.dsgt import standing
from topofl.algorithms.exact_diffusion import check_gamma
from topofl.algorithms.extra import require_symmetric
from topofl.algorithms.hparams import check_decay, check_lr, check_wd
from topofl.engine.ledger import Flow, dtype_bits, graph_arcs
from topofl.engine.pieces import compose_init, graph_of, hold
from topofl.engine.protocol import Algorithm, LocalUpdate, Phase, Round, Sent, Services, State

__all__ = ["led", "LEDState"]


@dataclass
class LEDState:
    r"""The state LED keeps besides the models (``State.own``).

    Attributes
    ----------
    y : Tensor
        ``[n, P]`` the dual variables $y_i^r$ ($y^0 = 0$; their rows sum to 0 at every
        round).
    """

    y: Tensor


@dataclass(frozen=True)
class _Primal(LocalUpdate):
    r"""The local piece: $\phi \leftarrow \phi - \alpha g(\phi) - \beta y$ (in ``state.x``);
    an absent client (rate 0) stands still."""

    beta: float
    weight_decay: float

    @property
    def rowwise(self) -> bool:
        return True

    def init_(self, state: State, env: Services) -> None:
        hold(state, LEDState(y=torch.zeros_like(state.x)))

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        y, x = state.own_as(LEDState).y, state.x
        if self.weight_decay:
            grads.add_(x, alpha=self.weight_decay)
        step = grads.mul_(lr.unsqueeze(1)).add_(y, alpha=self.beta)  # alpha g + beta y
        still = standing(lr)
        if still is None:
            x.sub_(step)
        else:
            x.copy_(torch.where(still, x, x - step))

    def fused(self, executor: Any) -> None:
        return None


def _communicate(gamma: float) -> Callable[[State, Round, Services], Sent]:
    def communicate(state: State, rnd: Round, env: Services) -> Sent:
        r"""$x \leftarrow \tilde W \phi$ and $y \leftarrow y + \phi - \tilde W \phi$, with
        $\tilde W \phi = \phi + \gamma (W \phi - \phi)$."""
        topo = graph_of(rnd)
        x, y = state.x, state.own_as(LEDState).y
        moved = x.clone()
        env.mixer.mix_(topo, moved)
        moved.sub_(x)  # W phi - phi
        x.add_(moved, alpha=gamma)
        y.sub_(moved, alpha=gamma)
        return Sent.of(Flow("model", graph_arcs(topo), int(x.shape[1]), dtype_bits(x.dtype)))

    return communicate


@register_algorithm("led")
def led(
    lr: float = 0.1,
    *,
    beta: float = 0.1,
    local_steps: int = 5,
    gamma: float = 1.0,
    weight_decay: float = 0.0,
    decay: float = 1.0,
) -> Algorithm:
    r"""LED, local exact diffusion (Alghunaim 2024): $\tau$ local steps, one combination a
    round, a dual correction.

    With $\nabla Q_i$ client $i$'s (stochastic) gradient, $\alpha$ the step, $\beta$ the dual
    step, $\bar W = (\bar w_{ij}) = I - \gamma (I - W)$ the combination ($W$ itself at the
    default $\gamma = 1$) and $y_i^0 = 0$, round $r$ is, on every client $i$:

    * local primal steps from $\phi_{i,0}^r = x_i^r$, $t = 0, \dots, \tau - 1$:
      $\phi_{i,t+1}^r = \phi_{i,t}^r - \alpha \nabla Q_i(\phi_{i,t}^r) - \beta y_i^r$;
    * diffusion (one communication, of $\phi_{i,\tau}^r$):
      $x_i^{r+1} = \sum_j \bar w_{ij} \phi_{j,\tau}^r$;
    * local dual step: $y_i^{r+1} = y_i^r + \phi_{i,\tau}^r - x_i^{r+1}$.

    With a column-stochastic $\bar W$, $\sum_i y_i^r = 0$ at every round; at a fixed point
    (full gradients, constant steps) $\phi$ stands still, so
    $\alpha \nabla Q_i(x^\star) + \beta y_i = 0$ and $\sum_i \nabla Q_i(x^\star) = 0$: the
    clients agree on the exact minimiser of $\sum_i Q_i$, whatever $\tau$. With $\tau = 1$ and
    $\beta = 1$, eliminating $y$ gives $x^1 = \bar W (x^0 - \alpha \nabla Q(x^0))$ and
    $x^{r+1} = \bar W \big(2 x^r - x^{r-1} - \alpha (\nabla Q(x^r) - \nabla Q(x^{r-1}))\big)$:
    exact diffusion with $\tilde W = \bar W$ (:func:`~topofl.algorithms.exact_diffusion`
    with the same ``gamma``).

    Parameters
    ----------
    lr : float, default 0.1
        The step $\alpha$ of the local steps (``lr * decay**t`` at round ``t``).
    beta : float, default 0.1
        The dual step $\beta > 0$, applied at every local step (constant over rounds):
        $\tau \beta$ of it a round.
    local_steps : int, default 5
        $\tau \ge 1$.
    gamma : float in (0, 1], default 1
        The combination $\bar W = I - \gamma (I - W)$: 1 combines with the round's $W$ (as
        decent-bench's ``LED``), 0.5 with $(I + W)/2$ (exact diffusion's default).
    weight_decay : float, default 0
        Added to the gradient ($\nabla Q_i + \lambda \phi$).
    decay : float, default 1

    Returns
    -------
    Algorithm
        ``local_steps`` steps per round; ``requires="doubly"`` and a symmetric ``W`` at every
        round, as exact diffusion (checked: a ``ValueError`` otherwise); ``state.own`` is an
        :class:`LEDState`.

    Notes
    -----
    Messages: $\phi_{i,\tau}^r$ on every arc, one per arc and round, as D-SGD's model.
    The dual variables start at 0 (as decent-bench 0.3.0's ``LED``); any start whose rows sum
    to 0 keeps the invariant above. $\tau \beta$ is what a round applies of $y$ (1 in exact
    diffusion), so $\beta$ must shrink as $\tau$ grows: on the example below ($L = 4$,
    $\alpha = 0.05$, $\tau = 5$) $\beta$ from 0.05 to 0.2 converges, 0.3 and above
    diverge. decent-bench's ``LED`` (``num_local_steps`` $\tau$, ``step_size`` $\alpha$,
    ``aux_step_size`` $\beta$, combining with $W$) gives this function's iterates at
    ``gamma=1`` to 1e-10 on its regression problem
    (``tests/algorithms/test_local_tracking.py``). A client absent from a round
    (``[availability]``) takes no step and keeps its model and $y_i$.

    References
    ----------
    .. [1] S. A. Alghunaim, "Local exact-diffusion for decentralized optimization and
       learning", IEEE Trans. Automat. Control, 2024 (arXiv:2302.00620).

    Examples
    --------
    Client ``i`` minimises $a_i (x - b_i)^2 / 2$; the optimum of the sum is
    $\sum a_i b_i / \sum a_i = 2$, reached exactly with 5 local steps a round.

    >>> import torch
    >>> a = torch.tensor([[1.0], [2.0], [1.0], [4.0]], dtype=torch.float64)
    >>> b = torch.tensor([[0.0], [1.0], [2.0], [3.0]], dtype=torch.float64)
    >>> algo = tf.algorithms.get_algorithm("led", lr=0.05, local_steps=5)
    >>> trace = tf.engine.run_rounds(algo, torch.zeros_like(b), tf.topologies.ring(4),
    ...                              lambda z, phase, rnd: a * (z - b), rounds=300)
    >>> [round(v, 8) for v in trace.evaluated().flatten().tolist()]
    [2.0, 2.0, 2.0, 2.0]
    """
    lr = check_lr(lr)
    b = check_real(beta, "beta", low=0, low_open=True)
    steps = check_int(local_steps, "local_steps", low=1)
    gamma = check_gamma(gamma)
    wd = check_wd(weight_decay)
    decay = check_decay(decay)
    local = _Primal(b, wd)
    return Algorithm(
        name="led",
        hparams=dict(lr=lr, beta=b, local_steps=steps, gamma=gamma, weight_decay=wd,
                     decay=decay),
        phases=(Phase("all", steps, None, lr),),
        init=compose_init(local),
        local=local,
        communicate=_communicate(gamma),
        round_start=require_symmetric("led"),
        requires="doubly",
        decay=decay,
        stacks=True,
    )
