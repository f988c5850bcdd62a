"""DPFL's hyper-parameter groups (:func:`~topofl.algorithms.dpfl`): its local training
(:class:`DPFLTraining`) and how it learns its collaboration graph (:class:`GraphLearning`),
each checking itself, and the budget they resolve (:func:`resolve_budget`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

from topofl._utils.validation import check_choice, check_int, check_real
from topofl.algorithms._one_phase import local_training
from topofl.algorithms.ggc import check_budget
from topofl.algorithms.hparams import Group

__all__ = ["DPFLTraining", "DPFLTrainingKeywords", "GraphLearning", "GraphLearningKeywords",
           "resolve_budget", "EPOCHS"]


def _check_budget_spec(budget: Any) -> int | float | None:
    """DPFL's ``budget``: an int ``>= 1``, a fraction of ``N`` in ``(0, 1]`` or no budget."""
    if isinstance(budget, float) and not math.isinf(budget):
        if not 0.0 < budget <= 1.0:
            raise ValueError(
                f"budget (B_c) as a float is a fraction of the number of clients N and must be "
                f"in (0, 1] (the paper's 0.2N, 0.1N, 0.05N are 0.2, 0.1, 0.05), got {budget!r}"
            )
        return float(budget)
    return check_budget(budget)


def resolve_budget(budget: int | float | None, n: int) -> int | None:
    r"""The budget $B_c$ for ``n`` clients: an int as it is, a fraction ``f`` as
    ``max(1, round(f n))`` (halves up), ``None``/``inf`` as no budget.

    Examples
    --------
    >>> from topofl.algorithms._dpfl_hparams import resolve_budget
    >>> [resolve_budget(f, 100) for f in (0.2, 0.1, 0.05)], resolve_budget(0.05, 10)
    ([20, 10, 5], 1)
    >>> resolve_budget(7, 100), resolve_budget(None, 100), resolve_budget(0.25, 10)
    (7, None, 3)
    """
    spec = _check_budget_spec(budget)
    if isinstance(spec, float):
        return max(1, math.floor(spec * int(n) + 0.5))
    return spec


def _check_no_greedy(no_greedy: Any) -> str | tuple[int, ...] | None:
    if no_greedy is None:
        return None
    if isinstance(no_greedy, str):
        return check_choice(no_greedy, "no_greedy", ("flipped",))
    if not isinstance(no_greedy, (list, tuple, np.ndarray)):
        raise TypeError(
            f"no_greedy must be None, 'flipped' or a sequence of client ids, got "
            f"{type(no_greedy).__name__} {no_greedy!r}"
        )
    return tuple(sorted({check_int(i, "no_greedy[i]", low=0) for i in no_greedy}))


#: tau_train of Appendix F.3.3: the local epochs of a round when neither work is given
EPOCHS = 5.0


@dataclass(frozen=True)
class DPFLTraining(Group):
    """DPFL's local training, ``LocalOpt`` (Appendix F.3.3; the fields are documented at
    :func:`~topofl.algorithms.dpfl`): :class:`~topofl.algorithms.hparams.LocalSGD`'s fields
    and checks, with DPFL's defaults (5 local epochs when neither ``local_steps`` nor
    ``local_epochs``) and ``local_epochs`` any sequence, one per client.

    Examples
    --------
    >>> from topofl.algorithms._dpfl_hparams import DPFLTraining
    >>> DPFLTraining(local_epochs=[1, 2]).local_epochs
    [1, 2]
    >>> DPFLTraining(momentum=1.0)
    Traceback (most recent call last):
    ...
    ValueError: momentum must be in [0, 1), got 1
    """

    lr: float = 0.01
    momentum: float = 0.9
    weight_decay: float = 1e-3
    local_steps: int | None = None
    local_epochs: float | Sequence[float] | None = None
    decay: float = 1.0

    def __post_init__(self) -> None:
        local_training(self, default_epochs=EPOCHS)


@dataclass(frozen=True)
class GraphLearning(Group):
    """How DPFL learns its collaboration graph: BGGC's pre-processing, GGC's refresh, the
    weights of eq. (4) and the clients left out (the fields are documented at
    :func:`~topofl.algorithms.dpfl`).

    Examples
    --------
    >>> from topofl.algorithms._dpfl_hparams import GraphLearning
    >>> GraphLearning(budget=0.1, no_greedy=[3, 1]).checked()["no_greedy"]
    (1, 3)
    >>> GraphLearning(refresh_every=0)
    Traceback (most recent call last):
    ...
    ValueError: refresh_every must be >= 1, got 0
    """

    budget: int | float | None = 10
    tau_init: float = 10
    refresh_every: int = 1
    weighting: str = "size"
    graph: str = "greedy"
    graph_seed: int = 0
    no_greedy: str | Sequence[int] | None = None

    def __post_init__(self) -> None:
        self.checked()

    def checked(self) -> dict[str, Any]:
        """The checked fields, as :class:`~topofl.algorithms.dpfl.DPFLParams` takes them."""
        return dict(tau_init=check_real(self.tau_init, "tau_init", low=0),
                    refresh_every=check_int(self.refresh_every, "refresh_every", low=1),
                    weighting=check_choice(self.weighting, "weighting", ("size", "uniform")),
                    graph_seed=check_int(self.graph_seed, "graph_seed", low=0),
                    graph=check_choice(self.graph, "graph", ("greedy", "random")),
                    budget=_check_budget_spec(self.budget),
                    no_greedy=_check_no_greedy(self.no_greedy))


class DPFLTrainingKeywords(TypedDict, total=False):
    """:class:`DPFLTraining`'s fields as flat keywords."""

    lr: float
    momentum: float
    weight_decay: float
    local_steps: int | None
    local_epochs: float | Sequence[float] | None
    decay: float


class GraphLearningKeywords(TypedDict, total=False):
    """:class:`GraphLearning`'s fields as flat keywords."""

    budget: int | float | None
    tau_init: float
    refresh_every: int
    weighting: str
    graph: str
    graph_seed: int
    no_greedy: str | Sequence[int] | None
