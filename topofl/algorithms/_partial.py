"""Hyper-parameters shared by DFedPGP and its ablation DFedAvgM-P (defaults of DFedPGP, 5.1):
the two-phase partial training (:class:`PartialTraining`), the factories' keywords routed to
it (:func:`partial_hparams`) and the algorithm they build (:func:`partial_algorithm`)."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, TypedDict

from topofl.algorithms.hparams import (
    Epochs,
    Group,
    Keywords,
    Sampling,
    check_decay,
    check_lr,
    check_momentum,
    check_wd,
    check_work,
)
from topofl.engine.pieces import SGD, compose_init, require_split, restart_momentum
from topofl.engine.protocol import Algorithm, Phase, Services, State

# Section 5.1 of DFedPGP: "train the shared part for 5 epochs per round [...] and train 1 epoch
# for the personal part", "learning rate eta_u = 0.1", "decreasing by 0.99x exponentially",
# "a decay rate of 0.005 and a local momentum of 0.9".
LR = 0.1
EPOCHS_U = 5.0
EPOCHS_V = 1.0
DECAY = 0.99
WEIGHT_DECAY = 5e-3
MOMENTUM = 0.9


def _resolve_lrs(lr_u: Any, lr_v: Any, lr: Any) -> tuple[float, float]:
    """``(eta_u, eta_v)``: ``lr`` is the library-wide alias of ``lr_u`` that also sets ``lr_v``."""
    if lr is not None and lr_u is not None:
        raise ValueError(f"give lr_u or its alias lr, not both (got lr_u={lr_u!r}, lr={lr!r})")
    if lr_u is not None:
        eta_u = check_lr(lr_u, "lr_u")
    elif lr is not None:
        eta_u = check_lr(lr, "lr")
    else:
        eta_u = LR
    eta_v = eta_u if lr_v is None else check_lr(lr_v, "lr_v")
    return eta_u, eta_v


def _body_work(steps: Any, epochs: Any, steps_alias: Any, epochs_alias: Any
               ) -> tuple[int | None, Epochs]:
    """The body's local work, given as ``local_*_u`` or as the aliases ``local_*``."""
    sname, ename = "local_steps_u", "local_epochs_u"
    if steps_alias is not None or epochs_alias is not None:
        if steps is not None or epochs is not None:
            raise ValueError(
                f"give the shared part's local work as {sname} or {ename} or as their aliases "
                "local_steps or local_epochs, not both"
            )
        steps, epochs = steps_alias, epochs_alias
        sname, ename = f"{sname} (alias local_steps)", f"{ename} (alias local_epochs)"
    return check_work(steps, epochs, steps_name=sname, epochs_name=ename, default_steps=None,
                      default_epochs=EPOCHS_U)


class PartialParams(NamedTuple):
    """:meth:`PartialTraining.checked`'s output, not a group: it holds what the group derives
    (``lr_v``, a factory parameter; the aliases folded in; the two :attr:`phases`)."""

    eta_u: float
    eta_v: float
    momentum: float
    weight_decay: float
    decay: float
    steps_u: int | None
    epochs_u: Epochs
    steps_v: int | None
    epochs_v: Epochs

    @property
    def phases(self) -> tuple[Phase, Phase]:
        """Algorithm 1: K_v steps on the personal part v (lines 5-8), then K_u on u (9-12)."""
        return (Phase("head", self.steps_v, self.epochs_v, self.eta_v, name="v"),
                Phase("body", self.steps_u, self.epochs_u, self.eta_u, name="u"))

    def as_dict(self) -> dict[str, Any]:
        """The hyper-parameters as recorded in the run config."""
        return dict(lr_u=self.eta_u, lr_v=self.eta_v, momentum=self.momentum,
                    weight_decay=self.weight_decay, decay=self.decay,
                    local_steps_u=self.steps_u, local_epochs_u=self.epochs_u,
                    local_steps_v=self.steps_v, local_epochs_v=self.epochs_v)


@dataclass(frozen=True)
class PartialTraining(Group):
    """The two-phase partial training of DFedPGP and DFedAvgM-P: local momentum SGD on the
    personal head $v$, then on the shared body $u$ (the fields are documented at
    :func:`~topofl.algorithms.dfedpgp`; the defaults are Section 5.1's).

    The head's learning rate ``lr_v`` is not a field: the factories take it as their second
    parameter (by position too, ``dfedpgp(0.1, 0.05)``), and :meth:`checked` reads it.

    Attributes
    ----------
    lr_u : float, optional
        The body's learning rate (default 0.1).
    momentum, weight_decay, decay : float
        0.9, 5e-3 and 0.99.
    local_epochs_u, local_steps_u, local_epochs_v, local_steps_v
        The local work on the body (default 5 epochs) and on the head (default 1 epoch).
    lr, local_steps, local_epochs : optional
        The library-wide aliases of ``lr_u`` (which also sets ``lr_v``) and of the body's
        local work.

    Examples
    --------
    >>> from topofl.algorithms._partial import PartialTraining
    >>> PartialTraining(lr=0.3, local_steps=2).checked().phases[1].steps
    2
    >>> PartialTraining(lr_u=0.1, lr=0.2)
    Traceback (most recent call last):
    ...
    ValueError: give lr_u or its alias lr, not both (got lr_u=0.1, lr=0.2)
    """

    lr_u: float | None = None
    momentum: float = MOMENTUM
    weight_decay: float = WEIGHT_DECAY
    decay: float = DECAY
    local_epochs_u: float | tuple[float, ...] | None = None
    local_steps_u: int | None = None
    local_epochs_v: float | tuple[float, ...] | None = None
    local_steps_v: int | None = None
    lr: float | None = None
    local_steps: int | None = None
    local_epochs: float | tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        self.checked()

    def checked(self, lr_v: float | None = None) -> PartialParams:
        """The checked hyper-parameters with the head's learning rate ``lr_v`` (default: the
        body's), the learning rates and the local work resolved."""
        eta_u, eta_v = _resolve_lrs(self.lr_u, lr_v, self.lr)
        momentum = check_momentum(self.momentum)
        weight_decay = check_wd(self.weight_decay)
        decay = check_decay(self.decay)
        steps_u, epochs_u = _body_work(self.local_steps_u, self.local_epochs_u,
                                       self.local_steps, self.local_epochs)
        steps_v, epochs_v = check_work(self.local_steps_v, self.local_epochs_v,
                                       steps_name="local_steps_v", epochs_name="local_epochs_v",
                                       default_steps=None, default_epochs=EPOCHS_V)
        return PartialParams(eta_u, eta_v, momentum, weight_decay, decay, steps_u, epochs_u,
                             steps_v, epochs_v)


class PartialTrainingKeywords(TypedDict, total=False):
    """:class:`PartialTraining`'s fields as flat keywords."""

    lr_u: float | None
    momentum: float
    weight_decay: float
    decay: float
    local_epochs_u: float | tuple[float, ...] | None
    local_steps_u: int | None
    local_epochs_v: float | tuple[float, ...] | None
    local_steps_v: int | None
    lr: float | None
    local_steps: int | None
    local_epochs: float | tuple[float, ...] | None


#: the default groups of DFedPGP and DFedAvgM-P: Section 5.1's training, every client active
TRAINING, EVERY_CLIENT = PartialTraining(), Sampling()


def partial_hparams(name: str, training: PartialTraining | float, lr_v: float | None,
                    sampling: Sampling, keywords: Mapping[str, Any]
                    ) -> tuple[PartialParams, tuple[float, int]]:
    """The checked hyper-parameters of the factory ``name`` (``dfedpgp`` or ``dfedavgm_p``)
    and its ``(participation, sample_seed)``: the flat ``keywords`` routed to ``training``
    and ``sampling``. A number for ``training`` is ``lr_u`` (``dfedpgp(0.1)``), ``lr_v`` the
    factory's second parameter (``dfedpgp(0.1, 0.05)``)."""
    given = dict(keywords)
    if isinstance(training, numbers.Real) and not isinstance(training, bool):
        if "lr_u" in given:
            raise TypeError(f"{name}() got multiple values for argument 'lr_u'")
        given["lr_u"], training = training, TRAINING
    kw = Keywords(name, given)
    kw.seen.add("lr_v")  # a keyword too (the second parameter): for the misspelling hint
    hp, active = kw.take(training, TRAINING).checked(lr_v), kw.take(sampling)
    kw.done()
    return hp, active.checked()


def split_check(name: str) -> Any:
    """An ``init`` check: the model must split into a body and a head."""

    def check(x0: Any, env: Services) -> None:
        require_split(name, env)

    return check


def partial_algorithm(name: str, hp: PartialParams, sgd: SGD, communicate: Any, *,
                      init: tuple[Any, ...] = (), **fields: Any) -> Algorithm:
    """The head-then-body algorithm ``name``: ``sgd`` on the head, then on the body
    (:attr:`PartialParams.phases`, the momentum restarted every round), then ``communicate``
    of the body; the model must split (:func:`split_check`). ``init`` lists further pieces
    that add state, ``fields`` the other :class:`~topofl.engine.Algorithm` fields
    (``requires``, ``lost``, ...)."""
    return Algorithm(name=name, hparams=hp.as_dict(), phases=hp.phases,
                     init=compose_init(sgd, *init, check=split_check(name)), local=sgd,
                     communicate=communicate, round_start=restart_momentum(), shared="body",
                     decay=hp.decay, **fields)


__all__ = ["PartialParams", "PartialTraining", "PartialTrainingKeywords", "partial_hparams",
           "partial_algorithm", "split_check", "State"]
