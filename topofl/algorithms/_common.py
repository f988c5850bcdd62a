"""Validation shared by the algorithm factories: one checker per kind of hyper-parameter."""

from __future__ import annotations

from typing import Any, NamedTuple

from topofl._validation import check_choice, check_int, check_real

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
    """
    if steps is not None and epochs is not None:
        raise ValueError(f"give either {steps_name} or {epochs_name}, not both")
    if epochs is not None:
        if isinstance(epochs, (list, tuple)) or hasattr(epochs, "__array__"):
            vals = tuple(check_real(e, f"{epochs_name}[i]", low=0, low_open=not allow_zero)
                         for e in list(epochs))
            if not vals:
                raise ValueError(f"{epochs_name} must not be an empty sequence")
            return None, vals
        return None, check_real(epochs, epochs_name, low=0, low_open=not allow_zero)
    if steps is not None:
        return check_int(steps, steps_name, low=0 if allow_zero else 1), None
    if default_steps is not None:
        return default_steps, None
    return None, default_epochs


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


WEIGHTINGS = ("uniform", "data_size")


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
