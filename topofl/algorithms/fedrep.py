"""FedRep: many local updates of the head, then a few of the shared representation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from topofl.algorithms._server import Work, server_algorithm, server_params
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.hparams import (
    Group,
    Keywords,
    Optimizer,
    OptimizerKeywords,
    Sampling,
    SamplingKeywords,
    check_lr,
    check_work,
)
from topofl.engine.protocol import Algorithm, Phase

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["fedrep", "FedRepPhases", "FedRepKeywords"]


@dataclass(frozen=True)
class FedRepPhases(Group):
    """FedRep's two phases: the head's learning rate and the local work of each phase.

    Attributes
    ----------
    head_lr : float, optional
        Learning rate of the head (default: the body's ``lr``).
    head_steps, head_epochs
        Head updates per round: steps (default 10) or epochs.
    body_steps, body_epochs
        Body updates per round: steps (default 1) or epochs.
    """

    head_lr: float | None = None
    head_steps: int | None = None
    head_epochs: float | tuple[float, ...] | None = None
    body_steps: int | None = None
    body_epochs: float | tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        self.checked(1.0)  # the checks (the default rate filled in does not matter)

    def checked(self, lr: float) -> tuple[float, Work, Work]:
        """``(head_lr, head work, body work)`` checked, the defaults filled in (no
        ``head_lr``: ``lr``)."""
        hlr = lr if self.head_lr is None else check_lr(self.head_lr, "head_lr")
        head = check_work(self.head_steps, self.head_epochs, steps_name="head_steps",
                          epochs_name="head_epochs", default_steps=10)
        body = check_work(self.body_steps, self.body_epochs, steps_name="body_steps",
                          epochs_name="body_epochs")
        return hlr, head, body


class FedRepPhasesKeywords(TypedDict, total=False):
    """:class:`FedRepPhases`' fields as flat keywords."""

    head_lr: float | None
    head_steps: int | None
    head_epochs: float | tuple[float, ...] | None
    body_steps: int | None
    body_epochs: float | tuple[float, ...] | None


class FedRepKeywords(OptimizerKeywords, SamplingKeywords, FedRepPhasesKeywords, total=False):
    """FedRep's flat keywords: the fields of its groups."""


_SGD, _EVERY_CLIENT, _PHASES = Optimizer(), Sampling(), FedRepPhases()


@register_algorithm("fedrep")
def fedrep(sgd: Optimizer | float = _SGD, sampling: Sampling = _EVERY_CLIENT,
           phases: FedRepPhases = _PHASES, *, weighting: str = "uniform",
           **keywords: Unpack[FedRepKeywords]) -> Algorithm:
    r"""FedRep: many local updates of the head, then a few of the shared representation.

    Each round a participating client first trains its head $h_i$ with the body frozen at the
    server's representation $\phi^t$, then trains the body with its new head frozen; the server
    averages the bodies (Collins et al., Algorithm 1).

    Parameters
    ----------
    sgd : Optimizer or float, default Optimizer()
        The local optimiser (a number: its ``lr``): ``lr``, ``momentum``, ``weight_decay``,
        ``decay`` below.
    sampling : Sampling, default Sampling()
        The round's participants: ``participation``, ``sample_seed`` below.
    phases : FedRepPhases, default FedRepPhases()
        The head's rate and each phase's work: ``head_lr``, ``head_steps``,
        ``head_epochs``, ``body_steps``, ``body_epochs`` below.
    lr : float, default 0.1
        Learning rate of the body (``lr * decay**t`` at round ``t``).
    head_lr : float, optional
        Learning rate of the head (default ``lr``: Algorithm 1 uses one step size $\alpha$).
    momentum : float, default 0
        Heavy-ball momentum of the local SGD (restarted every round).
    weight_decay : float, default 0
    head_steps, head_epochs
        Head updates per round $\tau_h$: steps (default 10) or epochs.
    body_steps, body_epochs
        Body updates per round: steps (default 1) or epochs.
    decay : float, default 1
    participation : float in (0, 1], default 1
        Fraction of clients sampled each round (Algorithm 1's participation rate $r$).
    sample_seed : int, default 0
    weighting : {"uniform", "data_size"}, default "uniform"
        Algorithm 1 averages uniformly, $\phi^{t+1} = \frac{1}{rn}\sum_i \phi_i^{t}$.

    Returns
    -------
    Algorithm
        Two phases, ``"head"`` then ``"body"``; ``shared="body"``, ``uses_topology=False``.

    Notes
    -----
    In their experiments Collins et al. run ten local epochs of SGD with momentum on the head,
    then one or five epochs on the representation; ``head_epochs=10, body_epochs=1`` gives that
    setting. The defaults keep the same 10 : 1 ratio in *steps*, the unit of every other topofl
    algorithm's default. The head keeps its value across rounds (it starts round ``t`` where
    round ``t - 1`` left it); messages: ``2 m`` per round of ``P_body`` numbers each.

    References
    ----------
    .. [1] L. Collins, H. Hassani, A. Mokhtari, S. Shakkottai, "Exploiting shared
       representations for personalized federated learning", ICML 2021.

    Examples
    --------
    >>> algo = tf.algorithms.fedrep(lr=0.05)
    >>> [(p.name, p.part, p.steps) for p in algo.phases]
    [('head', 'head', 10), ('body', 'body', 1)]
    >>> algo.shared, algo.uses_topology
    ('body', False)
    """
    kw = Keywords("fedrep", keywords)
    opt, active, work = kw.take(sgd, _SGD), kw.take(sampling), kw.take(phases)
    kw.done()
    hp = server_params(opt, active, weighting)
    o = hp.sgd
    hlr, (hs, he), (bs, be) = work.checked(o.lr)
    return server_algorithm(
        "fedrep", hp,
        dict(lr=o.lr, head_lr=hlr, momentum=o.momentum, weight_decay=o.weight_decay,
             head_steps=hs, head_epochs=he, body_steps=bs, body_epochs=be, decay=o.decay),
        (Phase("head", hs, he, hlr, name="head"), Phase("body", bs, be, o.lr, name="body")),
    )
