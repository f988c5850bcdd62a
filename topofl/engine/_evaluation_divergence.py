"""The divergence guard of a run and the errors it raises (:mod:`topofl.engine.evaluation`
imports them back: they are importable from there).

A local step's loss that is not finite or above the guard's limit (:class:`Divergence`), or a
client's parameters that are not finite at an evaluation
(:func:`~topofl.engine.evaluation.check_finite`), end the run with one
:class:`~topofl.exceptions.ConvergenceError`, raised on every process.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from topofl.engine.clients import Clients, first_bad
from topofl.exceptions import ConvergenceError
from topofl.records import Recorder


def nonfinite_loss_error(t: int, step: int, client: int, value: float) -> ConvergenceError:
    """The error of a NaN or infinite training loss (one message for every loop)."""
    return ConvergenceError(
        f"training diverged at round {t}, local step {step}: the loss of client {client} is "
        f"{value} (lower the learning rate?); records up to the previous evaluation are saved"
    )


def nonfinite_parameters_error(t: int, client: int) -> ConvergenceError:
    """The error of NaN or infinite parameters at an evaluation (one message for every loop)."""
    return ConvergenceError(
        f"training diverged at round {t}: the parameters of client {client} are not finite")


class Divergence:
    """The divergence guard of a run (:attr:`RunConfig.divergence`).

    A local step's loss is bad when it is NaN or infinite, or, once the first local step's
    mean loss ``L0`` is known, above ``factor * max(L0, 1)``. The local stepper reports each
    block's losses (:meth:`watch`); after the step, :meth:`settle` reduces the mean over all
    clients and raises the run's error on every process.

    Parameters
    ----------
    factor : float or None
        ``config.divergence_factor`` (``None``: only NaN/inf are bad).
    loss_ref : float or None
        ``L0`` when it is known (a resumed run), else ``None`` until :meth:`first_loss`.

    Examples
    --------
    >>> import torch
    >>> from topofl.engine.evaluation import Divergence
    >>> guard = Divergence(10.0)
    >>> guard.bad(torch.tensor([1e9, float("nan")])).tolist()  # no L0 yet: NaN only
    [False, True]
    >>> guard.first_loss(2.0)
    >>> guard.limit, guard.bad(torch.tensor([19.0, 21.0])).tolist()
    (20.0, [False, True])
    """

    def __init__(self, factor: float | None, loss_ref: float | None = None) -> None:
        self.factor = factor
        self.loss_ref = loss_ref
        self.limit: float | None = None
        # this step's first bad row of this process and its loss: not finite, above the limit
        self._nonfinite: tuple[int, float] | None = None
        self._above: tuple[int, float] | None = None
        if factor is not None and loss_ref is not None:
            self.limit = factor * max(loss_ref, 1.0)

    def first_loss(self, mean_loss: float) -> None:
        """Take ``L0`` from the run's first local step (later calls change nothing)."""
        if self.loss_ref is None:
            self.loss_ref = mean_loss
            if self.factor is not None:
                self.limit = self.factor * max(mean_loss, 1.0)

    def bad(self, loss: Tensor) -> Tensor:
        """``[m]`` bool: the losses that are not finite or above the limit."""
        bad = ~torch.isfinite(loss)
        if self.limit is not None:
            bad |= loss > self.limit
        return bad

    def watch(self, loss: Tensor, first: int = 0) -> None:
        """Remember the first row of this process whose loss is bad in the local step under
        way: not finite, or above the limit (``loss`` holds the rows ``first ...`` of one
        block; the local stepper's ``check``). :meth:`settle` raises the run's error."""
        bad = self.bad(loss)
        if not bool(bad.any()):  # one sync per block
            return
        ok = torch.isfinite(loss)
        if self._nonfinite is None and not bool(ok.all()):
            i = int(torch.nonzero(~ok)[0, 0])
            self._nonfinite = (first + i, float(loss[i]))
        if self._above is None and bool((bad & ok).any()):
            i = int(torch.nonzero(bad & ok)[0, 0])
            self._above = (first + i, float(loss[i]))

    def settle(self, clients: Clients, loss: Tensor, t: int, step: int, recorder: Recorder
               ) -> float:
        """The mean over all clients of local step ``step``'s losses (``loss``: this
        process's rows); every process raises the run's :class:`ConvergenceError` when a
        client's loss was bad (:meth:`watch`): the lowest client with a non-finite loss, else
        the lowest above the limit."""
        if self._nonfinite is not None or self._above is not None:
            loss = torch.full_like(loss, math.nan)  # tells every process
        mean = float(clients.mean(loss.detach(), "the training loss"))
        if not math.isfinite(mean):
            found = first_bad(clients, self._nonfinite, "the divergence check")
            if found is not None:
                recorder.flush()
                raise nonfinite_loss_error(t, step, *found)
            found = first_bad(clients, self._above, "the divergence check")
            if found is not None:
                recorder.flush()
                raise self.error(t, step, *found)
        self._nonfinite = self._above = None  # the next step's
        return mean

    def error(self, t: int, step: int, client: int, value: float) -> ConvergenceError:
        """The error of client ``client``'s finite loss ``value`` above the limit."""
        return ConvergenceError(
            f"training diverged at round {t}, local step {step}: the loss of client {client} "
            f"is {value:.4g}, above divergence={self.factor:g} times the first round's loss "
            f"{self.loss_ref:.4g} (lower the learning rate, or raise or turn off the "
            "divergence setting); records up to the previous evaluation are saved"
        )
