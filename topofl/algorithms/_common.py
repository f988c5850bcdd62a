"""Validation shared by the algorithm factories: one checker per kind of hyper-parameter."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from topofl._utils.validation import check_choice, check_int, check_real
from topofl.algorithms.hparams import (  # noqa: F401  (re-exported to the algorithm modules)
    WEIGHTINGS,
    Epochs,
    LocalSGD,
    check_decay,
    check_lr,
    check_momentum,
    check_wd,
    check_work,
)
from topofl.engine.event_time import EventTime, check_durations, check_window
from topofl.engine.pieces import SGD, Compression, compose_init, with_participation
from topofl.engine.pieces.compression import COMPRESSORS
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


class CompressionParams(NamedTuple):
    """Checked settings of a compressed gossip (CHOCO's, D-SGD's and DSGT's ``compressor``):
    the compressor and the consensus step size ``gamma``."""

    compression: Compression
    gamma: float

    def as_dict(self) -> dict[str, Any]:
        """The settings as recorded in the run config."""
        c = self.compression
        return dict(compressor=c.compressor, ratio=c.ratio, levels=c.levels, gamma=self.gamma,
                    compress_seed=c.seed)


#: The settings of a compressed gossip and their defaults (:func:`choco`'s).
COMPRESSION_DEFAULTS: dict[str, Any] = dict(ratio=0.1, levels=16, gamma=0.2, compress_seed=0)


def check_compression(compressor: Any, ratio: Any, levels: Any, gamma: Any,
                      compress_seed: Any) -> CompressionParams:
    """Validate a compressor (one of ``COMPRESSORS``) and its settings: ``ratio`` in (0, 1],
    ``levels >= 1``, ``gamma`` in (0, 1], ``compress_seed >= 0``."""
    return CompressionParams(
        Compression(check_choice(compressor, "compressor", COMPRESSORS),
                    check_real(ratio, "ratio", low=0, high=1, low_open=True),
                    check_int(levels, "levels", low=1),
                    check_int(compress_seed, "compress_seed", low=0)),
        check_real(gamma, "gamma", low=0, high=1, low_open=True))


def check_optional_compression(compressor: Any, ratio: Any, levels: Any, gamma: Any,
                               compress_seed: Any) -> CompressionParams | None:
    """:func:`check_compression` for a factory whose ``compressor`` defaults to ``None`` (no
    compression), its settings to ``None`` (then :data:`COMPRESSION_DEFAULTS`): ``None``
    without a compressor, and a ``ValueError`` for a setting given without one."""
    given = dict(ratio=ratio, levels=levels, gamma=gamma, compress_seed=compress_seed)
    if compressor is None:
        for name, value in given.items():
            if value is not None:
                raise ValueError(f"{name} is a setting of the compressed gossip: it needs "
                                 f"compressor= one of {list(COMPRESSORS)}, got {name}={value!r} "
                                 "with compressor=None")
        return None
    if not isinstance(compressor, str):
        raise TypeError(f"compressor must be None or a str (one of {list(COMPRESSORS)}), got "
                        f"{type(compressor).__name__} {compressor!r}")
    full = {k: COMPRESSION_DEFAULTS[k] if v is None else v for k, v in given.items()}
    return check_compression(compressor, **full)


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


def sgd_factory(*, default_momentum: float = 0.0, default_steps: int = 1,
                participation: bool = False
                ) -> Callable[[Callable[[SGDParams], Algorithm]], Callable[..., Algorithm]]:
    """Turn ``build(hp: SGDParams) -> Algorithm`` into a factory taking the local-SGD keywords.

    The factory is ``(lr=0.1, *, momentum, weight_decay=0, local_steps=None,
    local_epochs=None, decay=1)``, checked with :func:`check_sgd`; it has ``build``'s name
    and docstring, and an ordinary signature (``inspect.signature`` lists the keywords). With
    ``participation=True`` (gossip and push-sum algorithms) it also takes ``participation=1``
    and ``sample_seed=0``: a fraction of the clients active per round
    (:func:`~topofl.engine.pieces.with_participation`).
    """

    def deco(build: Callable[[SGDParams], Algorithm]) -> Callable[..., Algorithm]:
        def plain(lr: float = 0.1, *, momentum: float = default_momentum,
                  weight_decay: float = 0.0, local_steps: int | None = None,
                  local_epochs: float | tuple[float, ...] | None = None,
                  decay: float = 1.0) -> Algorithm:
            return build(check_sgd(lr, momentum, weight_decay, decay, local_steps,
                                   local_epochs, default_steps=default_steps))

        def sampled(lr: float = 0.1, *, momentum: float = default_momentum,
                    weight_decay: float = 0.0, local_steps: int | None = None,
                    local_epochs: float | tuple[float, ...] | None = None,
                    decay: float = 1.0, participation: float = 1.0,
                    sample_seed: int = 0) -> Algorithm:
            frac, seed = check_participation(participation, sample_seed)
            algo = build(check_sgd(lr, momentum, weight_decay, decay, local_steps,
                                   local_epochs, default_steps=default_steps))
            return with_participation(algo, frac, seed)

        factory = sampled if participation else plain

        factory.__name__ = factory.__qualname__ = build.__name__
        factory.__doc__, factory.__module__ = build.__doc__, build.__module__
        return factory

    return deco


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
