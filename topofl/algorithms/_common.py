"""Validation shared by the algorithm factories: one checker per kind of hyper-parameter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from topofl._utils.validation import check_choice, check_int, check_real
from topofl.algorithms.hparams import (  # noqa: F401  (re-exported to the algorithm modules)
    COMPRESSION_DEFAULTS,
    WEIGHTINGS,
    CompressionParams,
    Epochs,
    LocalSGD,
    check_compression,
    check_decay,
    check_lr,
    check_momentum,
    check_optional_compression,
    check_wd,
    check_work,
)
from topofl.engine.event_time import EventTime, check_durations, check_window
from topofl.engine.pieces import SGD, compose_init
from topofl.engine.protocol import Algorithm, Phase


class SGDParams(NamedTuple):
    """Checked local-SGD hyper-parameters shared by the D-SGD and push-sum families."""

    lr: float
    momentum: float
    weight_decay: float
    decay: float
    steps: int | None
    epochs: Epochs

    def as_dict(self) -> dict[str, Any]:
        """The hyper-parameters as recorded in the run config."""
        return dict(lr=self.lr, momentum=self.momentum, weight_decay=self.weight_decay,
                    local_steps=self.steps, local_epochs=self.epochs, decay=self.decay)


def check_sgd(lr: Any, momentum: Any, weight_decay: Any, decay: Any, local_steps: Any,
              local_epochs: Any, *, default_steps: int = 1) -> SGDParams:
    """Validate the local-SGD hyper-parameters every simple algorithm takes."""
    steps, epochs = check_work(local_steps, local_epochs, default_steps=default_steps)
    return SGDParams(check_lr(lr), check_momentum(momentum), check_wd(weight_decay),
                     check_decay(decay), steps, epochs)


class EventParams(NamedTuple):
    """Checked hyper-parameters the event-time algorithms share (AD-PSGD, gossip learning):
    the step size, the clients' durations, the window of virtual time a round covers, the
    local steps of an event, the seed of the partner draws, the decay."""

    lr: float
    durations: float | tuple[float, ...]
    window: float
    local_steps: int
    pair_seed: int
    decay: float

    def clocks(self) -> EventTime:
        """The event clocks these settings give (:class:`topofl.engine.event_time.EventTime`)."""
        return EventTime(self.durations, self.window, self.pair_seed)

    def recorded_durations(self) -> float | list[float]:
        """``durations`` as the run config records it (a list where one per client)."""
        return self.durations if isinstance(self.durations, float) else list(self.durations)


def check_event(lr: Any, durations: Any, window: Any, local_steps: Any, pair_seed: Any,
                decay: Any) -> EventParams:
    """Validate the hyper-parameters every event-time algorithm takes."""
    return EventParams(check_lr(lr), check_durations(durations), check_window(window),
                       check_int(local_steps, "local_steps", low=1),
                       check_int(pair_seed, "pair_seed", low=0), check_decay(decay))


class ServerParams(NamedTuple):
    """Checked hyper-parameters of the server-based baselines (FedPer, FedRep, ...)."""

    lr: float
    momentum: float
    weight_decay: float
    decay: float
    participation: float
    sample_seed: int
    weighting: str

    def as_dict(self) -> dict[str, Any]:
        """The shared hyper-parameters as recorded in the run config."""
        return dict(lr=self.lr, momentum=self.momentum, weight_decay=self.weight_decay,
                    decay=self.decay, participation=self.participation,
                    sample_seed=self.sample_seed, weighting=self.weighting)


def check_server(lr: Any, momentum: Any, weight_decay: Any, decay: Any, participation: Any,
                 sample_seed: Any, weighting: Any) -> ServerParams:
    """Validate the hyper-parameters every server-based baseline takes."""
    return ServerParams(
        check_lr(lr),
        check_momentum(momentum),
        check_wd(weight_decay),
        check_decay(decay),
        check_real(participation, "participation", low=0, high=1, low_open=True),
        check_int(sample_seed, "sample_seed", low=0),
        check_choice(weighting, "weighting", WEIGHTINGS),
    )


def check_participation(participation: Any, sample_seed: Any) -> tuple[float, int]:
    """Validate the fraction of clients active per round and the seed of their sampling."""
    return (check_real(participation, "participation", low=0, high=1, low_open=True),
            check_int(sample_seed, "sample_seed", low=0))


def sgd_params(sgd: LocalSGD, *, default_steps: int = 1) -> SGDParams:
    """A :class:`~topofl.algorithms.hparams.LocalSGD` group as the checked record the
    algorithms build from (neither ``local_steps`` nor ``local_epochs``: ``default_steps``)."""
    return check_sgd(sgd.lr, sgd.momentum, sgd.weight_decay, sgd.decay, sgd.local_steps,
                     sgd.local_epochs, default_steps=default_steps)


def sgd_algorithm(name: str, hp: SGDParams, communicate: Any, *, local: Any = None,
                  init: tuple[Any, ...] = (), extra_hparams: Mapping[str, Any] | None = None,
                  **fields: Any) -> Algorithm:
    """One phase of local SGD on all the parameters (``local``, by default
    :class:`~topofl.engine.pieces.SGD` with ``hp``'s momentum and weight decay), then
    ``communicate``; ``init`` lists further pieces that add state (e.g. push-sum);
    ``extra_hparams``: the algorithm's own hyper-parameters, recorded after ``hp``'s."""
    local = SGD(hp.momentum, hp.weight_decay) if local is None else local
    return Algorithm(name=name, hparams=dict(hp.as_dict(), **(extra_hparams or {})),
                     phases=(Phase("all", hp.steps, hp.epochs, hp.lr),),
                     init=compose_init(local, *init), local=local, communicate=communicate,
                     decay=hp.decay, **fields)
