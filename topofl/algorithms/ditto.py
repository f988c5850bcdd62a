r"""Ditto: a personal model per client, pulled towards a FedAvg global model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from torch import Tensor

from topofl._utils.validation import check_real
from topofl.algorithms._server import Work, server_params
from topofl.algorithms._server_personal import PersonalStep, personal_algorithm
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.hparams import (
    Group,
    Keywords,
    LocalSGD,
    LocalSGDKeywords,
    Sampling,
    SamplingKeywords,
    check_lr,
    check_work,
)
from topofl.engine.protocol import Algorithm, Phase, State

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["ditto", "DittoState", "DittoPersonal", "DittoKeywords"]


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


@dataclass(frozen=True)
class _Personal(PersonalStep):
    """Ditto's local piece: the ``"personal"`` phase steps the personal models (gradient plus
    ``lam * (v - w^t)``) with the same sampled SGD as the global model's own phase."""

    lam: float
    rowwise = False

    def record(self, x: Tensor, momentum: Tensor | None) -> DittoState:
        return DittoState(personal=x, personal_momentum=momentum)

    def own(self, state: State) -> DittoState:
        return state.own_as(DittoState)

    def personal_gradient(self, state: State, grads: Tensor, lr: Tensor) -> None:
        if self.lam:
            # state.x is still w^t here: the personal phase runs before the global one
            v = self.own(state).personal
            grads.add_(v, alpha=self.lam).add_(state.x, alpha=-self.lam)


@dataclass(frozen=True)
class DittoPersonal(Group):
    r"""Ditto's personal problem: its pull towards the global model and its local work.

    Attributes
    ----------
    lam : float, default 0.75
        $\lambda \ge 0$.
    personal_lr : float, optional
        $\eta_v$ (default: the global model's ``lr``).
    personal_steps, personal_epochs
        Local work on the personal model (default: the same as the global model's).
    """

    lam: float = 0.75
    personal_lr: float | None = None
    personal_steps: int | None = None
    personal_epochs: float | tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        self.checked(1.0, (1, None))  # the checks (the defaults filled in do not matter)

    def checked(self, lr: float, work: Work) -> tuple[float, float, Work]:
        """``(lam, personal_lr, (personal_steps, personal_epochs))`` checked, the defaults
        filled in: the global model's ``lr`` and local ``work``."""
        lam = check_real(self.lam, "lam", low=0)
        plr = lr if self.personal_lr is None else check_lr(self.personal_lr, "personal_lr")
        if self.personal_steps is None and self.personal_epochs is None:
            return lam, plr, work
        return lam, plr, check_work(self.personal_steps, self.personal_epochs,
                                    steps_name="personal_steps", epochs_name="personal_epochs")


class DittoPersonalKeywords(TypedDict, total=False):
    """:class:`DittoPersonal`'s fields as flat keywords."""

    lam: float
    personal_lr: float | None
    personal_steps: int | None
    personal_epochs: float | tuple[float, ...] | None


class DittoKeywords(LocalSGDKeywords, SamplingKeywords, DittoPersonalKeywords, total=False):
    """Ditto's flat keywords: the fields of its groups."""


_SGD, _EVERY_CLIENT, _PERSONAL = LocalSGD(), Sampling(), DittoPersonal()


@register_algorithm("ditto")
def ditto(sgd: LocalSGD | float = _SGD, sampling: Sampling = _EVERY_CLIENT,
          personal: DittoPersonal = _PERSONAL, *, weighting: str = "uniform",
          **keywords: Unpack[DittoKeywords]) -> Algorithm:
    r"""Ditto: a personal model per client, pulled towards a FedAvg global model.

    Client $k$ keeps a personal model $v_k$ beside its copy of the global model $w$. Each round,
    from the global model $w^t$ it received, it (i) takes SGD steps on
    $h_k(v_k; w^t) = F_k(v_k) + \frac{\lambda}{2}\|v_k - w^t\|^2$,
    $v_k \leftarrow v_k - \eta_v(\nabla F_k(v_k) + \lambda (v_k - w^t))$, and (ii) takes local
    SGD steps on $F_k$ from $w^t$; the server averages the global models (FedAvg). The
    personal models are evaluated.

    Parameters
    ----------
    sgd : LocalSGD or float, default LocalSGD()
        The global model's local SGD (a number: its ``lr``): ``lr``, ``momentum``,
        ``weight_decay``, ``local_steps``, ``local_epochs``, ``decay`` below.
    sampling : Sampling, default Sampling()
        The round's participants: ``participation``, ``sample_seed``.
    personal : DittoPersonal, default DittoPersonal()
        The personal problem: ``lam``, ``personal_lr``, ``personal_steps``,
        ``personal_epochs``.
    weighting : {"uniform", "data_size"}, default "uniform"
        As in :func:`~topofl.algorithms.fedavg`.
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
    decay, participation, sample_seed
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
    kw = Keywords("ditto", keywords)
    local, active, own = kw.take(sgd, _SGD), kw.take(sampling), kw.take(personal)
    kw.done()
    hp = server_params(local, active, weighting)
    o, gs, ge = hp.sgd, hp.sgd.local_steps, hp.sgd.local_epochs
    lam, plr, (ps, pe) = own.checked(o.lr, (gs, ge))
    piece = _Personal(hp.sampled(), lam)
    return personal_algorithm(
        "ditto", hp,
        dict(lr=o.lr, lam=lam, personal_lr=plr, momentum=o.momentum,
             weight_decay=o.weight_decay, local_steps=gs, local_epochs=ge,
             personal_steps=ps, personal_epochs=pe, decay=o.decay),
        (Phase("all", ps, pe, plr, name="personal"), Phase("all", gs, ge, o.lr, name="global")),
        piece,
    )
