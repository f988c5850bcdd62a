r"""APFL: each client mixes a personal model with its copy of the global model, the mixing
weight learned.

References
----------
.. [1] Y. Deng, M. M. Kamani, M. Mahdavi, "Adaptive personalized federated learning",
   arXiv:2003.13461, 2020 (APFL: Algorithm 1, the adaptive $\alpha$ of Section 3).
.. [2] A. Kharrat, M. Canini, S. Horvath, "Decentralized personalized federated learning"
   (DPFL), Table 1 and Appendix F.6 (APFL synchronised every round).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

import torch
from torch import Tensor

from topofl._utils.validation import check_bool, check_int, check_memory, check_real
from topofl.algorithms._server import server_params
from topofl.algorithms._server_personal import PersonalStep, personal_algorithm
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.hparams import (
    Group,
    Keywords,
    Optimizer,
    OptimizerKeywords,
    Sampling,
    SamplingKeywords,
    check_lr,
)
from topofl.engine.pieces import SGD
from topofl.engine.protocol import Algorithm, Phase, Round, Services, State

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["apfl", "APFLState", "APFLMixing", "APFLKeywords"]


@dataclass
class APFLState:
    """APFL's state besides the copies of the global model (``State.x``, the $w_i$).

    Attributes
    ----------
    personal : Tensor
        ``[n, P]`` the personal models $v_i$.
    alpha : Tensor
        ``[n]`` the mixing weights $\alpha_i$.
    mix : Tensor
        ``[n, P]`` the buffer of the mixed models $\bar v_i$ of the personal steps.
    personal_momentum : Tensor or None
        ``[n, P]`` the personal models' momentum buffers (with momentum).
    """

    personal: Tensor
    alpha: Tensor
    mix: Tensor
    personal_momentum: Tensor | None = None


def _mix(state: State, out: Tensor | None = None) -> Tensor:
    """$\bar v = \alpha v + (1 - \alpha) w$ row by row (exactly $v$ at $\alpha = 1$, $w$ at 0)."""
    own = state.own_as(APFLState)
    a = own.alpha.unsqueeze(1)
    w = state.x
    res = torch.mul(own.personal, a, out=out)
    return res.addcmul_(w, 1.0 - a)


@dataclass(frozen=True)
class _APFL(PersonalStep):
    """APFL's local piece: ``"global"`` phases step $w$ (``state.x``) with plain local SGD;
    ``"personal"`` phases take the gradient at $\\bar v$ and step $v$ and $\\alpha$."""

    alpha0: float
    alpha_scale: float  # alpha's rate = alpha_scale * the step's learning rate
    adapt: bool

    rowwise = True  # each client's step reads its own rows

    def record(self, x: Tensor, momentum: Tensor | None) -> APFLState:
        return APFLState(
            personal=x,
            alpha=torch.full((x.shape[0],), self.alpha0, dtype=x.dtype, device=x.device),
            mix=torch.empty_like(x), personal_momentum=momentum)

    def own(self, state: State) -> APFLState:
        return state.own_as(APFLState)

    def personal_point(self, state: State) -> Tensor:
        return _mix(state, out=self.own(state).mix)

    def personal_gradient(self, state: State, grads: Tensor, lr: Tensor) -> None:
        own = self.own(state)
        v, alpha = own.personal, own.alpha
        if self.adapt:  # d/d alpha of F(alpha v + (1 - alpha) w) = <v - w, grad F(v_bar)>
            d_alpha = ((v - state.x) * grads).sum(dim=1)
            new_alpha = (alpha - self.alpha_scale * lr * d_alpha).clamp_(0.0, 1.0)
        grads.mul_(alpha.unsqueeze(1))  # grad_v F(alpha v + (1 - alpha) w) = alpha grad F
        if self.adapt:  # alpha is read no more in this step
            alpha.copy_(torch.where(lr > 0, new_alpha, alpha))

    def evaluate(self, state: State, rnd: Round, env: Services) -> Tensor:
        return _mix(state)


@dataclass(frozen=True)
class APFLMixing(Group):
    r"""APFL's mixing weight $\alpha$ of the personal and the global model.

    Attributes
    ----------
    alpha : float in [0, 1], default 0.5
        Initial mixing weight of every client.
    adapt_alpha : bool, default True
        Learn $\alpha_i$ (APFL's adaptive variant) or keep it fixed.
    alpha_lr : float, optional
        $\eta_\alpha$ (default: the local ``lr``).
    """

    alpha: float = 0.5
    adapt_alpha: bool = True
    alpha_lr: float | None = None

    def __post_init__(self) -> None:
        self.checked(1.0)  # the checks (the default rate filled in does not matter)

    def checked(self, lr: float) -> tuple[float, bool, float]:
        """``(alpha, adapt_alpha, alpha_lr)`` checked (no ``alpha_lr``: ``lr``)."""
        return (check_real(self.alpha, "alpha", low=0, high=1),
                check_bool(self.adapt_alpha, "adapt_alpha"),
                lr if self.alpha_lr is None else check_lr(self.alpha_lr, "alpha_lr"))


class APFLMixingKeywords(TypedDict, total=False):
    """:class:`APFLMixing`'s fields as flat keywords."""

    alpha: float
    adapt_alpha: bool
    alpha_lr: float | None


class APFLKeywords(OptimizerKeywords, SamplingKeywords, APFLMixingKeywords, total=False):
    """APFL's flat keywords: the fields of its groups."""


_SGD, _EVERY_CLIENT, _MIXING = Optimizer(), Sampling(), APFLMixing()


@register_algorithm("apfl")
def apfl(sgd: Optimizer | float = _SGD, sampling: Sampling = _EVERY_CLIENT,
         mixing: APFLMixing = _MIXING, *, weighting: str = "uniform", local_steps: int = 1,
         **keywords: Unpack[APFLKeywords]) -> Algorithm:
    r"""APFL: each client mixes a personal model with the global one, the mixing weight learned.

    Client $i$ holds its copy $w_i$ of the global model, a personal model $v_i$ and
    $\alpha_i \in [0, 1]$, and is evaluated with
    $\bar v_i = \alpha_i v_i + (1 - \alpha_i) w_i$. Each local step (Algorithm 1 of Deng et
    al.), from the iterates of the previous step:

    1. $v_i \leftarrow v_i - \eta\, \alpha_i \nabla F_i(\bar v_i)$ and, when ``adapt_alpha``,
       $\alpha_i \leftarrow \Pi_{[0,1]}(\alpha_i - \eta_\alpha \langle v_i - w_i,
       \nabla F_i(\bar v_i) \rangle)$ (the gradient of $F_i(\bar v_i)$ in $\alpha_i$);
    2. $w_i \leftarrow w_i - \eta \nabla F_i(w_i)$.

    After ``local_steps`` steps the server averages the $w_i$ of the round's participants
    (FedAvg; DPFL runs APFL with synchronisation every round) and sends the average to every
    client. Each client is evaluated with its mixed model $\bar v_i$, with the new $w$.

    Parameters
    ----------
    sgd : Optimizer or float, default Optimizer()
        The local optimiser of $w$ and $v$ (a number: its ``lr``): ``lr``, ``momentum``,
        ``weight_decay``, ``decay`` below.
    sampling : Sampling, default Sampling()
        The round's participants: ``participation``, ``sample_seed``.
    mixing : APFLMixing, default APFLMixing()
        The mixing weight: ``alpha``, ``adapt_alpha``, ``alpha_lr`` below.
    lr : float, default 0.1
        $\eta$, for $w$ and $v$ (``lr * decay**t`` at round ``t``).
    alpha : float in [0, 1], default 0.5
        Initial mixing weight of every client (the paper treats it as a hyper-parameter; 0.5,
        an even mix, is our choice). ``alpha=1, adapt_alpha=False`` is local training,
        ``alpha=0, adapt_alpha=False`` is FedAvg (both tested).
    adapt_alpha : bool, default True
        Learn $\alpha_i$ (APFL's adaptive variant) or keep it fixed.
    alpha_lr : float, optional
        $\eta_\alpha$ (default ``lr``; decayed with it).
    local_steps : int, default 1
        Local steps $K$ per round. Only steps: each step alternates a personal and a global
        step (the phases are $K$ pairs), which a count of epochs cannot express.
    momentum, weight_decay, decay, participation, sample_seed, weighting
        As :func:`~topofl.algorithms.fedper` (momentum on $w$ and $v$ separately, restarted
        every round).

    Returns
    -------
    Algorithm
        ``shared="all"``, ``uses_topology=False``; ``state.x`` holds the $w_i$,
        ``state.own`` (:class:`APFLState`) the $v_i$ and the $\alpha_i$.

    Notes
    -----
    Deng et al. update $v$, $w$ and $\alpha$ with the gradients of one mini-batch; here the
    personal and the global step of a local step draw separate mini-batches (the engine draws
    one per phase step), as Ditto's two problems do. The personal models start at the initial
    model. Messages: ``2 m`` per round of ``P`` numbers.

    With a large $\eta_\alpha$, $\alpha_i$ can reach 0 early (the global copy $w_i$ runs
    ahead of $v_i$ in the first steps) and stay there: at $\alpha_i = 0$ the personal model
    no longer moves, and the client is evaluated with the global model.

    Examples
    --------
    Client $i$ minimises $(x - c_i)^2 / 2$ with $c = (-2, 2)$: the global model goes to the
    mean 0, and each client's $\alpha_i$ rises from 0.5 towards 1, its mixed model towards its
    own $c_i$ (the global model does not help it).

    >>> import torch
    >>> c = torch.tensor([[-2.0], [2.0]], dtype=torch.float64)
    >>> trace = tf.engine.run_rounds(tf.algorithms.apfl(lr=0.1, local_steps=5, alpha_lr=0.02),
    ...     torch.zeros_like(c), None, lambda z, phase, rnd: z - c, rounds=1000)
    >>> [round(v, 3) for v in trace.state.x.flatten().tolist()]
    [0.0, 0.0]
    >>> [round(v, 3) for v in trace.evaluated().flatten().tolist()]
    [-1.999, 1.999]
    >>> [round(v, 3) for v in trace.state.own.alpha.tolist()]
    [0.999, 0.999]
    """
    kw = Keywords("apfl", keywords)
    opt, active, mix = kw.take(sgd, _SGD), kw.take(sampling), kw.take(mixing)
    kw.done()
    hp = server_params(opt, active, weighting)
    o = hp.sgd
    a0, adapt, alr = mix.checked(o.lr)
    k = check_int(local_steps, "local_steps", low=1)
    check_memory(16.0 * k, f"apfl(local_steps={k}): two phases a step")
    piece = _APFL(SGD(o.momentum, o.weight_decay), a0, alr / o.lr, adapt)
    local = hp.sampled(piece) if hp.sampling.participation < 1 else piece
    pair = (Phase("all", 1, None, o.lr, name="personal"), Phase("all", 1, None, o.lr,
                                                                name="global"))
    return personal_algorithm(
        "apfl", hp,
        dict(lr=o.lr, alpha=a0, adapt_alpha=adapt, alpha_lr=alr, momentum=o.momentum,
             weight_decay=o.weight_decay, local_steps=k, decay=o.decay),
        pair * k, piece, local,
    )
