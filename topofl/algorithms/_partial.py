"""Hyper-parameters shared by DFedPGP and its ablation DFedAvgM-P (defaults of DFedPGP, 5.1)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from topofl.algorithms._common import (
    Epochs,
    check_decay,
    check_lr,
    check_momentum,
    check_participation,
    check_wd,
    check_work,
)
from topofl.algorithms.base import keywords
from topofl.engine.pieces import (
    SGD,
    compose_init,
    require_split,
    restart_momentum,
    with_participation,
)
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
    """Checked hyper-parameters of a head-then-body algorithm."""

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
class PartialKeywords:
    """The hyper-parameters of :func:`~topofl.algorithms.dfedpgp` and
    :func:`~topofl.algorithms.dfedavgm_p` as a call gives them (documented there)."""

    lr_u: float | None = None
    lr_v: float | None = None
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
    participation: float = 1.0
    sample_seed: int = 0


def check_partial(kw: PartialKeywords) -> PartialParams:
    """Validate the hyper-parameters of :func:`~topofl.algorithms.dfedpgp` (and DFedAvgM-P)."""
    eta_u, eta_v = _resolve_lrs(kw.lr_u, kw.lr_v, kw.lr)
    momentum = check_momentum(kw.momentum)
    weight_decay = check_wd(kw.weight_decay)
    decay = check_decay(kw.decay)
    steps_u, epochs_u = _body_work(kw.local_steps_u, kw.local_epochs_u, kw.local_steps,
                                   kw.local_epochs)
    steps_v, epochs_v = check_work(kw.local_steps_v, kw.local_epochs_v,
                                   steps_name="local_steps_v", epochs_name="local_epochs_v",
                                   default_steps=None, default_epochs=EPOCHS_V)
    return PartialParams(eta_u, eta_v, momentum, weight_decay, decay, steps_u, epochs_u,
                         steps_v, epochs_v)


def partial_factory(build: Callable[[PartialParams], Algorithm]) -> Callable[..., Algorithm]:
    """Turn ``build(hp: PartialParams)`` into a factory taking DFedPGP's keywords
    (:class:`PartialKeywords`, see :func:`~topofl.algorithms.dfedpgp`; ``lr_u`` and ``lr_v``
    also by position) and ``participation``/``sample_seed``
    (:func:`~topofl.engine.pieces.with_participation`), with ``build``'s name and docstring."""

    def checked(kw: PartialKeywords) -> Algorithm:
        frac, seed = check_participation(kw.participation, kw.sample_seed)
        return with_participation(build(check_partial(kw)), frac, seed)

    checked.__name__ = checked.__qualname__ = build.__name__
    checked.__doc__, checked.__module__ = build.__doc__, build.__module__
    return keywords(PartialKeywords, positional=2)(checked)


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


__all__ = ["PartialParams", "check_partial", "partial_factory", "partial_algorithm",
           "split_check", "State"]
