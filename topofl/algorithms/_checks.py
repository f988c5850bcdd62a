"""The checks of single hyper-parameter values the groups of
:mod:`topofl.algorithms.hparams` and the factories share (re-exported there)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from topofl._utils.validation import check_int, check_real

__all__ = ["Epochs", "check_lr", "check_momentum", "check_decay", "check_wd", "check_work"]

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
