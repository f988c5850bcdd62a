"""The checks of hyper-parameter values the groups of :mod:`topofl.algorithms.hparams` and
the factories share (re-exported there): single values, and a compressed gossip's settings."""

from __future__ import annotations

import numbers
from typing import Any, NamedTuple

import numpy as np

from topofl._utils.validation import check_bool, check_choice, check_int, check_real
from topofl.engine.pieces import Compression
from topofl.engine.pieces.compression import COMPRESSORS

__all__ = ["Epochs", "check_lr", "check_momentum", "check_decay", "check_wd", "check_work",
           "CompressionParams", "COMPRESSION_DEFAULTS", "check_compression",
           "check_optional_compression", "with_feedback"]

Epochs = float | tuple[float, ...] | None


def check_lr(lr: Any, name: str = "lr") -> float:
    return check_real(lr, name, low=0, low_open=True)


def check_momentum(m: Any) -> float:
    return check_real(m, "momentum", low=0, high=1, high_open=True)


def check_decay(d: Any) -> float:
    return check_real(d, "decay", low=0, high=1, low_open=True)


def check_wd(wd: Any) -> float:
    return check_real(wd, "weight_decay", low=0)


def check_work(steps: Any, epochs: Any, *, steps_name: str = "local_steps",
               epochs_name: str = "local_epochs", default_steps: int | None = 1,
               default_epochs: float | None = None,
               allow_zero: bool = False) -> tuple[int | None, Epochs]:
    """The local work of one phase: ``(steps, None)`` or ``(None, epochs)``.

    ``epochs`` is a positive number, or a sequence of them (one per client). Neither given:
    ``(default_steps, None)``, or ``(None, default_epochs)`` when ``default_steps`` is None.
    ``allow_zero`` accepts 0 (no work).

    Examples
    --------
    >>> check_work(None, [1, 2])
    (None, (1.0, 2.0))
    >>> check_work(3, 1)
    Traceback (most recent call last):
    ...
    ValueError: give either local_steps or local_epochs, not both
    """
    if steps is not None and epochs is not None:
        raise ValueError(f"give either {steps_name} or {epochs_name}, not both")
    if epochs is not None:
        if not isinstance(epochs, numbers.Real) and (
                isinstance(epochs, (list, tuple)) or np.ndim(epochs) == 1):
            items = epochs.tolist() if hasattr(epochs, "tolist") else list(epochs)
            vals = tuple(check_real(e, f"{epochs_name}[{i}]", low=0, low_open=not allow_zero)
                         for i, e in enumerate(items))
            if not vals:
                raise ValueError(f"{epochs_name} must not be an empty sequence")
            return None, vals
        return None, check_real(epochs, epochs_name, low=0, low_open=not allow_zero)
    if steps is not None:
        return check_int(steps, steps_name, low=0 if allow_zero else 1), None
    if default_steps is not None:
        return default_steps, None
    return None, default_epochs


class CompressionParams(NamedTuple):
    """Checked settings of a compressed gossip (CHOCO's, D-SGD's and DSGT's ``compressor``):
    the compressor, the consensus step size ``gamma`` and whether the gossip has error
    feedback (``False``: the compressed models themselves are mixed, and ``gamma`` is not
    used)."""

    compression: Compression
    gamma: float
    feedback: bool = True

    def as_dict(self) -> dict[str, Any]:
        """The settings as recorded in the run config."""
        c = self.compression
        out = dict(compressor=c.compressor, ratio=c.ratio, levels=c.levels, gamma=self.gamma,
                   compress_seed=c.seed)
        if not c.rescale:  # recorded only away from its default: earlier runs keep their hash
            out["rescale"] = False
        if not self.feedback:  # no consensus step: no gamma
            del out["gamma"]
            out["feedback"] = False
        return out


#: The settings of a compressed gossip and their defaults (:func:`choco`'s).
COMPRESSION_DEFAULTS: dict[str, Any] = dict(ratio=0.1, levels=16, gamma=0.2, compress_seed=0,
                                            rescale=True, feedback=True)


def check_compression(compressor: Any, ratio: Any, levels: Any, gamma: Any,
                      compress_seed: Any, rescale: Any = True,
                      feedback: Any = True) -> CompressionParams:
    """Validate a compressor (one of ``COMPRESSORS``) and its settings: ``ratio`` in (0, 1],
    ``levels >= 1``, ``gamma`` in (0, 1], ``compress_seed >= 0``, ``rescale`` a bool (``False``
    only with ``"qsgd"``), ``feedback`` a bool."""
    comp = check_choice(compressor, "compressor", COMPRESSORS)
    feedback = check_bool(feedback, "feedback")
    rescale = check_bool(rescale, "rescale")
    if not rescale and comp != "qsgd":
        raise ValueError(f"rescale=False leaves out QSGD's 1/tau: it needs compressor='qsgd', "
                         f"got compressor={comp!r}")
    return CompressionParams(
        Compression(comp, check_real(ratio, "ratio", low=0, high=1, low_open=True),
                    check_int(levels, "levels", low=1),
                    check_int(compress_seed, "compress_seed", low=0), rescale=rescale),
        check_real(gamma, "gamma", low=0, high=1, low_open=True), feedback)


def check_optional_compression(compressor: Any, ratio: Any, levels: Any, gamma: Any,
                               compress_seed: Any, rescale: Any = None, feedback: Any = None
                               ) -> CompressionParams | None:
    """:func:`check_compression` for a factory whose ``compressor`` defaults to ``None`` (no
    compression), its settings to ``None`` (then :data:`COMPRESSION_DEFAULTS`): ``None``
    without a compressor, and a ``ValueError`` for a setting given without one."""
    given = dict(ratio=ratio, levels=levels, gamma=gamma, compress_seed=compress_seed,
                 rescale=rescale, feedback=feedback)
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
    if gamma is not None and feedback is not None and not check_bool(feedback, "feedback"):
        raise ValueError(f"gamma is the consensus step of the gossip with error feedback; "
                         f"feedback=False mixes the compressed models themselves, without one "
                         f"(dsgd only: choco and dsgt always feed the error back): leave "
                         f"gamma out, got gamma={gamma!r}")
    full = {k: COMPRESSION_DEFAULTS[k] if v is None else v for k, v in given.items()}
    return check_compression(compressor, **full)


def with_feedback(params: CompressionParams | None, name: str) -> CompressionParams | None:
    """``params``, or a ``ValueError`` when they leave out the error feedback (``feedback=False``)
    that algorithm ``name``'s compressed gossip is built on."""
    if params is not None and not params.feedback:
        raise ValueError(f"{name} compresses with error feedback through public copies: "
                         "feedback=False (the compressed models mixed as they arrive) is "
                         "dsgd(compressor=..., feedback=False)")
    return params
