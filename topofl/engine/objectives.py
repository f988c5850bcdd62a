r"""The loss a model trains and is scored with: the cross-entropy of classification or the
squared error of regression.

An :class:`Objective` turns a model's outputs ``[..., K]`` and the targets of the same
samples into what the engine computes from them: every sample's loss
(:meth:`~Objective.per_sample`), a client's mean loss for the per-client reference
(:meth:`~Objective.mean`), the right predictions (:meth:`~Objective.correct`) and, for a
linear model, the loss and its gradient with respect to the outputs in closed form
(:meth:`~Objective.linear`). The executors hold one (``objective=``, the cross-entropy by
default) and the losses the services, the scoring and the evaluation compute read it from
them (:func:`objective_of`).

* :data:`CROSS_ENTROPY`: integer labels ``[...]`` in ``[0, K)``, the loss
  $\log \sum_k e^{z_k} - z_y$, a prediction right when the first largest output is the label.
  Its numbers are the engine's before objectives existed, bit for bit
  (:func:`~topofl.engine.crossentropy.cross_entropy_rows`).
* :data:`SQUARED_ERROR`: floating targets ``[...]`` (one output, ``K = 1``) or ``[..., K]``,
  the loss $\tfrac12 \|z - y\|^2$ of a sample, so that a client's mean loss on $m$ samples of
  a linear model $z = A x$ is decent-bench's ``LinearRegressionCost``
  $\|A x - b\|^2 / (2 m)$ (:class:`~topofl.engine.LeastSquares`). Regression has no right
  prediction: :meth:`SquaredError.correct` is NaN, never a count that reads as an accuracy.

Examples
--------
>>> import torch
>>> from topofl.engine.objectives import CROSS_ENTROPY, SQUARED_ERROR
>>> out = torch.tensor([[[0.0, 2.0], [1.0, 1.0]]])  # one client, two samples, K = 2
>>> CROSS_ENTROPY.per_sample(out, torch.tensor([[1, 0]])).shape
torch.Size([1, 2])
>>> SQUARED_ERROR.per_sample(out, torch.tensor([[[0.0, 0.0], [1.0, 3.0]]])).tolist()
[[2.0, 2.0]]
>>> SQUARED_ERROR.per_sample(torch.tensor([[[2.0]]]), torch.tensor([[-1.0]])).tolist()  # K = 1
[[4.5]]
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from topofl.engine.crossentropy import cross_entropy_rows

__all__ = ["Objective", "CrossEntropy", "SquaredError", "CROSS_ENTROPY", "SQUARED_ERROR",
           "OBJECTIVES", "objective_of", "check_objective"]


class Objective:
    """What the engine computes from a model's outputs and the samples' targets (module
    docstring). Subclasses: :class:`CrossEntropy`, :class:`SquaredError`."""

    #: the name recorded and accepted by :func:`check_objective`
    name: str = ""
    #: whether the targets are class labels (accuracy, per-class sums, label partitions)
    classifies: bool = False

    def check_targets(self, y: Tensor) -> None:
        """Raise ``TypeError`` when ``y`` is not of this objective's kind of targets."""
        raise NotImplementedError

    def per_sample(self, out: Tensor, y: Tensor) -> Tensor:
        """``[...]``: the loss of each sample, outputs ``out`` ``[..., K]``, targets ``y``."""
        raise NotImplementedError

    def mean(self, out: Tensor, y: Tensor) -> Tensor:
        """The mean loss of one client's batch, outputs ``[b, K]``: the per-client reference's
        (:class:`~topofl.engine.executors.LoopExecutor`) loss."""
        raise NotImplementedError

    def correct(self, out: Tensor, y: Tensor) -> Tensor:
        """``[...]`` float64: 1 where the prediction is right, else 0 (NaN where the
        objective has no right prediction)."""
        raise NotImplementedError

    def linear(self, z: Tensor, y: Tensor, scale: Tensor | float | None
               ) -> tuple[Tensor, Tensor | None]:
        """A linear model's outputs ``z`` ``[m, K, b]`` (outputs along dim 1) and targets ``y``:
        the clients' mean losses ``[m]`` and, unless ``scale`` is None, ``scale`` times the
        gradient of their sum with respect to ``z`` (``[m, K, b]``, possibly in ``z``'s own
        storage); ``scale`` is a float or one value a client, ``[m]``."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self).__name__)


def _scaled(p: Tensor, scale: Tensor | float, b: int) -> Tensor:
    """``p * scale / b`` in place, ``scale`` a float or one value a client (``[m]``)."""
    if isinstance(scale, Tensor):
        return p.mul_((scale / b).view(p.shape[0], 1, 1))
    return p.mul_(scale / b)


class CrossEntropy(Objective):
    """The cross-entropy of integer labels ``[...]`` in ``[0, K)`` (module docstring)."""

    name = "cross_entropy"
    classifies = True

    def check_targets(self, y: Tensor) -> None:
        if y.is_floating_point() or y.is_complex() or y.dtype == torch.bool:
            raise TypeError(f"the cross-entropy takes integer class labels, got {y.dtype} "
                            "targets (a regression task trains with objective='squared_error')")

    def per_sample(self, out: Tensor, y: Tensor) -> Tensor:
        return cross_entropy_rows(out.reshape(-1, out.shape[-1]), y.reshape(-1)).view(y.shape)

    def mean(self, out: Tensor, y: Tensor) -> Tensor:
        return F.cross_entropy(out, y)

    def correct(self, out: Tensor, y: Tensor) -> Tensor:
        return (out.argmax(dim=-1) == y).double()

    def linear(self, z: Tensor, y: Tensor, scale: Tensor | float | None
               ) -> tuple[Tensor, Tensor | None]:
        m, b = y.shape
        lsm = torch.log_softmax(z, dim=1)
        if bool(((y < 0) | (y >= lsm.shape[1])).any()):
            raise ValueError(f"labels must lie in [0, {lsm.shape[1]}), got {y.min()}..{y.max()}")
        yy = y.unsqueeze(1)
        loss = lsm.gather(1, yy).squeeze(1).mean(1).neg_()
        if scale is None:
            return loss, None
        # d loss / d logits = (softmax - onehot) / b
        p = lsm.exp_().scatter_add_(1, yy, torch.full((1, 1, 1), -1.0, dtype=lsm.dtype,
                                                       device=lsm.device).expand(m, 1, b))
        return loss, _scaled(p, scale, b)


class SquaredError(Objective):
    r"""Half the squared error $\tfrac12 \|z - y\|^2$ of floating targets ``[...]`` (one
    output) or ``[..., K]`` (module docstring)."""

    name = "squared_error"

    def check_targets(self, y: Tensor) -> None:
        if not y.is_floating_point():
            raise TypeError(f"the squared error takes floating-point targets, got {y.dtype} "
                            "(class labels train with objective='cross_entropy')")

    def _residual(self, out: Tensor, y: Tensor) -> Tensor:
        """``out - y`` as ``[..., K]``: ``y`` ``[...]`` is one output's targets."""
        self.check_targets(y)
        t = y.unsqueeze(-1) if y.dim() == out.dim() - 1 else y
        if tuple(t.shape) != tuple(out.shape):
            raise ValueError(f"targets of shape {tuple(y.shape)} do not fit outputs of shape "
                             f"{tuple(out.shape)}: expected {tuple(out.shape)} or, for one "
                             f"output, {tuple(out.shape[:-1])}")
        return out - t.to(out.dtype)

    def per_sample(self, out: Tensor, y: Tensor) -> Tensor:
        return self._residual(out, y).square().sum(dim=-1).mul(0.5)

    def mean(self, out: Tensor, y: Tensor) -> Tensor:
        return self.per_sample(out, y).mean()

    def correct(self, out: Tensor, y: Tensor) -> Tensor:
        return torch.full(out.shape[:-1], float("nan"), dtype=torch.float64, device=out.device)

    def linear(self, z: Tensor, y: Tensor, scale: Tensor | float | None
               ) -> tuple[Tensor, Tensor | None]:
        # z [m, K, b]; the residual laid out alike: targets [m, b] or [m, b, K]
        r = self._residual(z.transpose(1, 2), y).transpose(1, 2)
        b = r.shape[2]
        loss = r.square().sum(dim=1).mean(dim=1).mul_(0.5)
        if scale is None:
            return loss, None
        return loss, _scaled(r, scale, b)  # d loss / d z = (z - y) / b


CROSS_ENTROPY = CrossEntropy()
SQUARED_ERROR = SquaredError()

#: the objectives by name (:func:`check_objective`)
OBJECTIVES: dict[str, Objective] = {o.name: o for o in (CROSS_ENTROPY, SQUARED_ERROR)}


def check_objective(objective: Objective | str) -> Objective:
    """``objective`` as an :class:`Objective`: one of them, or its name in :data:`OBJECTIVES`.

    Raises
    ------
    ValueError
        An unknown name (the known ones are listed).
    TypeError
        Neither a name nor an :class:`Objective`.

    Examples
    --------
    >>> from topofl.engine.objectives import check_objective
    >>> check_objective("squared_error")
    SquaredError()
    >>> check_objective("mse")
    Traceback (most recent call last):
    ...
    ValueError: objective must be one of ['cross_entropy', 'squared_error'], got 'mse'
    """
    if isinstance(objective, Objective):
        return objective
    if isinstance(objective, str):
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {sorted(OBJECTIVES)}, got {objective!r}")
        return OBJECTIVES[objective]
    raise TypeError(f"objective must be an Objective or one of {sorted(OBJECTIVES)}, got "
                    f"{type(objective).__name__}")


def objective_of(executor: object) -> Objective:
    """The objective ``executor`` trains with: its ``objective`` attribute, the cross-entropy
    for an executor without one (an executor of one's own written before objectives).

    Examples
    --------
    >>> from topofl.engine.objectives import objective_of
    >>> objective_of(object())
    CrossEntropy()
    """
    found = getattr(executor, "objective", None)
    return found if isinstance(found, Objective) else CROSS_ENTROPY
