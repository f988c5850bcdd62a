r"""EXTRA: decentralized gradient descent with a correction that removes D-SGD's bias.

References
----------
.. [1] W. Shi, Q. Ling, G. Wu, W. Yin, "EXTRA: An exact first-order algorithm for
   decentralized consensus optimization", SIAM J. Optim. 25(2), 2015.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from topofl.algorithms.base import register_algorithm
from topofl.algorithms.dsgt import standing
from topofl.algorithms.hparams import check_decay, check_lr, check_wd
from topofl.engine.ledger import Flow, dtype_bits, graph_arcs
from topofl.engine.pieces import compose_init, graph_of, hold
from topofl.engine.protocol import Algorithm, LocalUpdate, Phase, Round, Sent, Services, State
from topofl.graph import Topology

__all__ = ["extra", "ExtraState", "require_symmetric"]


@dataclass
class ExtraState:
    r"""The state EXTRA keeps besides the models (``State.own``).

    Attributes
    ----------
    correction : Tensor
        ``[n, P]`` $q_t = \tilde W x_{t-1} - \gamma g(x_{t-1})$ ($q_0 = x_0$), what round
        ``t`` subtracts: $x_{t+1} = x_t + W x_t - q_t - \gamma g(x_t)$.
    delta : Tensor
        ``[n, P]`` within a round, $x_t - q_t - \gamma g(x_t)$, added to $W x_t$ after the
        mix.
    lr : Tensor
        ``[n]`` each client's step size in the round (0: an absent client, which stands still).
    """

    correction: Tensor
    delta: Tensor
    lr: Tensor


#: Topologies already checked to be symmetric (a static graph is checked once).
_SYMMETRIC: weakref.WeakKeyDictionary[Topology, bool] = weakref.WeakKeyDictionary()


def require_symmetric(name: str) -> Callable[[State, Round, Services], None]:
    """The ``round_start`` hook of algorithm ``name`` that refuses a round whose ``W`` is not
    symmetric (EXTRA, exact diffusion, NIDS, LED, ProxSkip)."""

    def round_start(state: State, rnd: Round, env: Services) -> None:
        topo = graph_of(rnd)
        ok = _SYMMETRIC.get(topo)
        if ok is None:
            ok = _SYMMETRIC[topo] = topo.is_symmetric
        if not ok:
            raise ValueError(
                f"{name} needs a symmetric doubly stochastic W (W = W^T), but the topology "
                f"{topo.name!r} at round {rnd.t} is not symmetric; use an undirected graph "
                "with symmetric weights (weights='metropolis'), or algorithm='dsgt' "
                "(gradient tracking) for a doubly stochastic W that is not symmetric")

    return round_start


@dataclass(frozen=True)
class _Extra(LocalUpdate):
    """The local piece: the gradient at ``x`` makes the round's correction."""

    weight_decay: float

    @property
    def rowwise(self) -> bool:
        return True

    def init_(self, state: State, env: Services) -> None:
        x = state.x
        hold(state, ExtraState(correction=x.clone(), delta=torch.zeros_like(x),
                               lr=torch.zeros(x.shape[0], dtype=x.dtype, device=x.device)))

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        own = state.own_as(ExtraState)
        x, q = state.x, own.correction
        if self.weight_decay:
            grads.add_(x, alpha=self.weight_decay)
        step = grads.mul_(lr.unsqueeze(1))  # gamma g(x_t)
        torch.sub(x, q, out=own.delta).sub_(step)  # x_t - q_t - gamma g(x_t)
        still = standing(lr)
        if still is None:
            torch.sub(x, step, out=q).sub_(step)  # x_t - 2 gamma g(x_t), halved after the mix
        else:  # an absent client keeps its correction and adds nothing to its model
            own.delta.masked_fill_(still, 0.0)
            q.copy_(torch.where(still, q, x - step - step))
        own.lr.copy_(lr)

    def fused(self, executor: Any) -> None:
        return None


def _communicate(state: State, rnd: Round, env: Services) -> Sent:
    topo = graph_of(rnd)
    own = state.own_as(ExtraState)
    q = own.correction
    env.mixer.mix_(topo, state.x)  # W x_t
    still = standing(own.lr)
    if still is None:
        q.add_(state.x).mul_(0.5)  # q_{t+1} = (x_t + W x_t) / 2 - gamma g(x_t)
    else:
        q.copy_(torch.where(still, q, (q + state.x) * 0.5))
    state.x.add_(own.delta)  # x_{t+1} = W x_t + x_t - q_t - gamma g(x_t)
    return Sent.of(Flow("model", graph_arcs(topo), int(state.x.shape[1]),
                        dtype_bits(state.x.dtype)))


@register_algorithm("extra")
def extra(
    lr: float = 0.1,
    *,
    weight_decay: float = 0.0,
    decay: float = 1.0,
) -> Algorithm:
    r"""EXTRA (Shi, Ling, Wu & Yin 2015): exact consensus optimization with a constant step.

    With $g$ the clients' (stochastic) gradients, $W$ symmetric and doubly stochastic and
    $\tilde W = (I + W)/2$ (the paper's recommended choice), EXTRA is

    $x_1 = W x_0 - \gamma\, g(x_0)$,
    $\;x_{t+2} = (I + W) x_{t+1} - \tilde W x_t - \gamma\,(g(x_{t+1}) - g(x_t))$.

    It is computed as $x_{t+1} = x_t + W x_t - q_t - \gamma g(x_t)$ with
    $q_{t+1} = \tilde W x_t - \gamma g(x_t)$ and $q_0 = x_0$ (the same numbers; a step that
    decays uses round ``t``'s $\gamma_t$ in both terms of round ``t``). Summed over clients
    $\sum_i (x_{t,i} - q_{t,i}) = 0$ at every round, so the average moves by the average
    gradient and, with full gradients and a constant step, the fixed point is consensus at the
    exact optimum of $\sum_i f_i$.

    Parameters
    ----------
    lr : float, default 0.1
        The step $\gamma$ (``lr * decay**t`` at round ``t``); the paper's convergence
        condition is $\gamma < 2 \lambda_{\min}(\tilde W) / L$.
    weight_decay : float, default 0
        Added to the gradient ($g_i + \lambda x_i$).
    decay : float, default 1

    Returns
    -------
    Algorithm
        One local step per round; ``requires="doubly"`` and a symmetric ``W`` at every round
        (checked: a ``ValueError`` otherwise); ``state.own`` is an :class:`ExtraState`.

    Notes
    -----
    Messages: the model on every arc, one per arc and round, as D-SGD ($\tilde W x_t$ is
    computed from $W x_t$, received in round ``t``). The paper's analysis is for a fixed
    ``W``; a time-varying schedule of symmetric doubly stochastic matrices runs (the
    average still follows the average gradient) without that guarantee. A client absent from
    a round (``[availability]``) keeps its model and its correction.

    Examples
    --------
    Client ``i`` minimises $a_i (x - b_i)^2 / 2$; the optimum of the sum is
    $\sum a_i b_i / \sum a_i = 2$, reached exactly with a constant step.

    >>> import torch
    >>> a = torch.tensor([[1.0], [2.0], [1.0], [4.0]], dtype=torch.float64)
    >>> b = torch.tensor([[0.0], [1.0], [2.0], [3.0]], dtype=torch.float64)
    >>> trace = tf.engine.run_rounds(tf.algorithms.extra(lr=0.1), torch.zeros_like(b),
    ...     tf.topologies.ring(4), lambda z, phase, rnd: a * (z - b), rounds=400)
    >>> [round(v, 8) for v in trace.evaluated().flatten().tolist()]
    [2.0, 2.0, 2.0, 2.0]
    """
    lr = check_lr(lr)
    wd = check_wd(weight_decay)
    decay = check_decay(decay)
    local = _Extra(wd)
    return Algorithm(
        name="extra",
        hparams=dict(lr=lr, weight_decay=wd, decay=decay),
        phases=(Phase("all", 1, None, lr),),
        init=compose_init(local),
        local=local,
        communicate=_communicate,
        round_start=require_symmetric("extra"),
        requires="doubly",
        decay=decay,
        stacks=True,
    )
