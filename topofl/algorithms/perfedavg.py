r"""Per-FedAvg: FedAvg on the MAML objective, first-order version.

References
----------
.. [1] A. Fallah, A. Mokhtari, A. Ozdaglar, "Personalized federated learning with theoretical
   guarantees: a model-agnostic meta-learning approach", NeurIPS 2020 (Per-FedAvg,
   Algorithm 1 and its first-order approximation, FO).
.. [2] A. Kharrat, M. Canini, S. Horvath, "Decentralized personalized federated learning"
   (DPFL), Table 1 and Appendix F.6 ($\alpha = 0.01$ for all runs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

from torch import Tensor

from topofl._utils.validation import check_int, check_memory
from topofl.algorithms._server import server_algorithm, server_params
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
from topofl.engine.pieces import SGD, compose_init
from topofl.engine.protocol import Algorithm, Phase, Round, Services, State

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["perfedavg", "PerFedAvgState", "PerFedAvgAdaptation", "PerFedAvgKeywords"]

ALPHA = 0.01  # DPFL, Appendix F.6: "we use the hyperparameter alpha = 0.01"
_ADAPT_STREAM = 12  # local_train stream of the evaluation-time adaptation step(s)


@dataclass
class PerFedAvgState:
    """Per-FedAvg's state besides the models (``State.x``).

    Attributes
    ----------
    temp : Tensor
        ``[n, P]`` the adapted points $\\tilde w = w - \\alpha \\nabla F(w)$ of the inner
        steps.
    """

    temp: Tensor


@dataclass(frozen=True)
class _MetaStep:
    """Per-FedAvg (FO)'s local piece: an ``"inner"`` phase step writes the adapted point
    $\\tilde w = w - \\alpha \\nabla F(w)$ into :attr:`PerFedAvgState.temp` (``w``
    unchanged); the ``"outer"`` phase step takes the gradient at $\\tilde w$ and applies it
    to $w$."""

    sgd: SGD

    rowwise = True  # each client's step reads its own rows

    def init_(self, state: State, env: Services) -> None:
        self.sgd.init_(state, env)
        state.own = PerFedAvgState(temp=state.x.clone())

    def point(self, state: State, phase: Phase, env: Services) -> Tensor:
        return state.own_as(PerFedAvgState).temp if phase.name == "outer" else state.x

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        if phase.name == "outer":
            self.sgd.update(state, grads, phase, lr, rnd, env)
            return
        temp = state.own_as(PerFedAvgState).temp
        temp.copy_(state.x).addcmul_(grads, lr.unsqueeze(1), value=-1.0)

    def fused(self, executor: Any) -> None:
        return None


@dataclass(frozen=True)
class PerFedAvgAdaptation(Group):
    r"""Per-FedAvg's adaptation step: its size, and how many a client takes to evaluate.

    Attributes
    ----------
    alpha : float, default 0.01
        $\alpha$, the inner step size (decayed with ``lr``).
    adapt_steps : int, default 1
        The adaptation steps of size $\alpha$ before each evaluation (0: none).
    """

    alpha: float = ALPHA
    adapt_steps: int = 1

    def __post_init__(self) -> None:
        self.checked()

    def checked(self) -> tuple[float, int]:
        """``(alpha, adapt_steps)`` checked."""
        return check_lr(self.alpha, "alpha"), check_int(self.adapt_steps, "adapt_steps", low=0)


class PerFedAvgAdaptationKeywords(TypedDict, total=False):
    """:class:`PerFedAvgAdaptation`'s fields as flat keywords."""

    alpha: float
    adapt_steps: int


class PerFedAvgKeywords(OptimizerKeywords, SamplingKeywords, PerFedAvgAdaptationKeywords,
                        total=False):
    """Per-FedAvg's flat keywords: the fields of its groups."""


_SGD, _EVERY_CLIENT, _ADAPTATION = Optimizer(), Sampling(), PerFedAvgAdaptation()


@register_algorithm("perfedavg")
def perfedavg(sgd: Optimizer | float = _SGD, sampling: Sampling = _EVERY_CLIENT,
              adaptation: PerFedAvgAdaptation = _ADAPTATION, *, weighting: str = "uniform",
              local_steps: int = 1, **keywords: Unpack[PerFedAvgKeywords]) -> Algorithm:
    r"""Per-FedAvg (first-order): FedAvg on the MAML objective $F_i(w - \alpha \nabla F_i(w))$.

    Each client is evaluated after adapting the global model with a gradient step on its own
    data.

    Each local step of client $i$ (Algorithm 1 of Fallah et al., FO version), from its model
    $w$: draw a batch $\mathcal{D}$ and set $\tilde w = w - \alpha \nabla F_i(w; \mathcal{D})$;
    draw an independent batch $\mathcal{D}'$ and step
    $w \leftarrow w - \beta \nabla F_i(\tilde w; \mathcal{D}')$. After ``local_steps`` steps the
    server averages the participants' models (FedAvg) and sends the average to every client.

    The first-order version (FO) is implemented: it drops the Hessian term
    $(I - \alpha \nabla^2 F_i(w))$ of the MAML gradient; the Hessian-free version (HF) is not.

    Parameters
    ----------
    sgd : Optimizer or float, default Optimizer()
        The local (outer) optimiser (a number: its ``lr``): ``lr``, ``momentum``,
        ``weight_decay``, ``decay`` below.
    sampling : Sampling, default Sampling()
        The round's participants: ``participation``, ``sample_seed`` below.
    adaptation : PerFedAvgAdaptation, default PerFedAvgAdaptation()
        The inner and evaluation steps: ``alpha``, ``adapt_steps`` below.
    lr : float, default 0.1
        $\beta$, the outer (meta) step size (``lr * decay**t`` at round ``t``).
    alpha : float, default 0.01
        $\alpha$, the inner step size (DPFL's setting, Appendix F.6; decayed with ``lr``).
    local_steps : int, default 1
        Local (meta) steps per round; each is an inner and an outer phase step (two
        mini-batches), which a count of epochs cannot express.
    adapt_steps : int, default 1
        Evaluation: each client adapts a copy of the global model with this many plain SGD
        steps of size $\alpha$ on its own training batches (Fallah et al.'s personalized model
        is one such step); 0 evaluates the global model.
    momentum, weight_decay, decay, participation, sample_seed, weighting
        As :func:`~topofl.algorithms.fedper` (momentum on the outer steps, restarted every
        round).

    Returns
    -------
    Algorithm
        ``shared="all"``, ``uses_topology=False``; ``state.own.temp`` holds
        $\tilde w$ between the two phases of a step.

    Notes
    -----
    On $F_i(w) = \frac{a_i}{2}\|w - c_i\|^2$ a meta step is
    $w \leftarrow w - \beta a_i (1 - \alpha a_i)(w - c_i)$: FO weighs client $i$ by
    $a_i (1 - \alpha a_i)$ where the exact MAML gradient has $a_i (1 - \alpha a_i)^2$ (tested).

    Examples
    --------
    >>> algo = tf.algorithms.perfedavg(lr=0.05, local_steps=3)
    >>> [p.name for p in algo.phases], algo.hparams["alpha"]
    (['inner', 'outer', 'inner', 'outer', 'inner', 'outer'], 0.01)
    """
    kw = Keywords("perfedavg", keywords)
    opt, active, inner = kw.take(sgd, _SGD), kw.take(sampling), kw.take(adaptation)
    kw.done()
    hp = server_params(opt, active, weighting)
    a, adapt = inner.checked()
    k = check_int(local_steps, "local_steps", low=1)
    check_memory(16.0 * k, f"perfedavg(local_steps={k}): two phases a step")
    o = hp.sgd
    piece = _MetaStep(SGD(o.momentum, o.weight_decay))
    local = hp.sampled(piece) if hp.sampling.participation < 1 else piece

    def evaluate(state: State, rnd: Round, env: Services) -> Tensor:
        x = state.x.clone()
        if adapt:
            env.local_train(x, "all", a, t=rnd.t, steps=adapt, stream=_ADAPT_STREAM)
        return x

    pair = (Phase("all", 1, None, a, name="inner"), Phase("all", 1, None, o.lr, name="outer"))
    return server_algorithm(
        "perfedavg", hp,
        dict(lr=o.lr, alpha=a, local_steps=k, adapt_steps=adapt, momentum=o.momentum,
             weight_decay=o.weight_decay, decay=o.decay),
        pair * k,
        shared="all",
        evaluate=evaluate,
        local=local,
        init=compose_init(local),
    )
