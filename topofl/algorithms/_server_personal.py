r"""A personal model beside each client's copy of the global model: what APFL and Ditto share.

Both keep, in ``state.own``, a personal model ``personal`` (``[n, P]``, starting at the
initial model) with its own momentum buffer ``personal_momentum`` (with momentum), and run
two kinds of phases with the same local SGD: a ``"personal"`` phase steps the personal models
on a gradient of the algorithm's making (:meth:`PersonalStep.personal_gradient`, at the point
:meth:`PersonalStep.personal_point`), every other phase steps ``state.x`` (the global model's
copies) as plain SGD. The server averages ``state.x`` (``shared="all"``), the personal momentum
restarts every round with the global one, and the clients are evaluated with a model made
from the personal one (:meth:`PersonalStep.evaluate`). :func:`personal_algorithm` assembles
the baseline (:func:`~topofl.algorithms._server.server_algorithm`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import Tensor

from topofl.algorithms._server import ServerParams, server_algorithm
from topofl.engine.pieces import SGD, Sampled, compose_init, restart_momentum
from topofl.engine.protocol import Algorithm, Phase, Round, Services, State

__all__ = ["PersonalRecord", "PersonalStep", "personal_algorithm"]


class PersonalRecord(Protocol):
    """What :class:`PersonalStep` reads from an algorithm's record (``state.own``)."""

    personal: Tensor
    personal_momentum: Tensor | None


@dataclass(frozen=True)
class PersonalStep(ABC):
    """A local piece with a personal model: ``"personal"`` phases step
    ``state.own.personal`` (with ``state.own.personal_momentum``) with ``sgd``, the other
    phases step ``state.x`` with ``sgd``.

    A subclass says how its record is made (:meth:`record`) and read (:meth:`own`), and what
    a personal step's gradient is (:meth:`personal_gradient`, at :meth:`personal_point`).
    """

    sgd: SGD | Sampled

    @property
    def skips_idle(self) -> bool:
        """As the inner piece."""
        return self.sgd.skips_idle

    @abstractmethod
    def record(self, x: Tensor, momentum: Tensor | None) -> PersonalRecord:
        """A fresh record with the personal models ``x`` (a copy of the initial models) and
        their momentum buffers ``momentum``."""

    @abstractmethod
    def own(self, state: State) -> PersonalRecord:
        """The record of ``state`` (checked to be this algorithm's)."""

    def personal_point(self, state: State) -> Tensor:
        """Where a personal step's gradients are taken (default: the personal models)."""
        return self.own(state).personal

    @abstractmethod
    def personal_gradient(self, state: State, grads: Tensor, lr: Tensor) -> None:
        """Make ``grads`` (taken at :meth:`personal_point`) the personal models' gradient,
        in place, before the step (``state.x`` still holds the global model)."""

    def personal_momentum(self, state: State) -> Tensor | None:
        """The personal models' momentum buffers (restarted every round)."""
        return self.own(state).personal_momentum

    def evaluate(self, state: State, rnd: Round, env: Services) -> Tensor:
        """The models the clients are evaluated with (default: the personal ones)."""
        return self.own(state).personal

    def init_(self, state: State, env: Services) -> None:
        self.sgd.init_(state, env)
        x = state.x
        state.own = self.record(x.clone(), None if state.momentum is None
                                else torch.zeros_like(x))

    def point(self, state: State, phase: Phase, env: Services) -> Tensor:
        return self.personal_point(state) if phase.name == "personal" else state.x

    def rates(self, state: State, lr: Tensor, rnd: Round, env: Services) -> Tensor:
        """The rates :meth:`update` steps with, in either phase: the inner piece's
        (``LocalUpdate.rates``; the non-participants' 0 when it is ``Sampled``)."""
        rates = getattr(self.sgd, "rates", None)
        return lr if rates is None else rates(state, lr, rnd, env)

    def update(self, state: State, grads: Tensor, phase: Phase, lr: Tensor, rnd: Round,
               env: Services) -> None:
        if phase.name != "personal":
            self.sgd.update(state, grads, phase, lr, rnd, env)
            return
        own = self.own(state)
        self.personal_gradient(state, grads, lr)
        personal = State(x=own.personal, momentum=own.personal_momentum)
        self.sgd.update(personal, grads, phase, lr, rnd, env)

    def fused(self, executor: Any) -> None:
        return None


def personal_algorithm(name: str, hp: ServerParams[Any], hparams: dict[str, Any],
                       phases: tuple[Phase, ...], piece: PersonalStep,
                       local: Any = None) -> Algorithm:
    """The server baseline of ``piece`` (``local``: the piece as the algorithm runs it, by
    default ``piece`` itself): ``state.x`` averaged by the server, the personal momentum
    restarted every round with the global one, the clients evaluated with
    :meth:`PersonalStep.evaluate`."""
    local = piece if local is None else local
    return server_algorithm(name, hp, hparams, phases, shared="all", evaluate=piece.evaluate,
                            local=local, init=compose_init(local),
                            round_start=restart_momentum(piece.personal_momentum))
