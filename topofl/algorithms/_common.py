"""What the one-phase local-SGD algorithms share (:func:`sgd_algorithm`), and the checkers of
:mod:`topofl.algorithms.hparams` re-exported to the algorithm modules. The checked record they
build from is the group itself (:meth:`~topofl.algorithms.hparams.LocalSGD.resolved`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
from topofl.engine.pieces import SGD, compose_init
from topofl.engine.protocol import Algorithm, Phase


def sgd_algorithm(name: str, hp: LocalSGD, communicate: Any, *, local: Any = None,
                  init: tuple[Any, ...] = (), extra_hparams: Mapping[str, Any] | None = None,
                  **fields: Any) -> Algorithm:
    """One phase of local SGD on all the parameters (``local``, by default
    :class:`~topofl.engine.pieces.SGD` with ``hp``'s momentum and weight decay), then
    ``communicate``; ``hp`` is a :meth:`~topofl.algorithms.hparams.LocalSGD.resolved` group;
    ``init`` lists further pieces that add state (e.g. push-sum);
    ``extra_hparams``: the algorithm's own hyper-parameters, recorded after ``hp``'s."""
    local = SGD(hp.momentum, hp.weight_decay) if local is None else local
    return Algorithm(name=name, hparams=dict(hp.as_dict(), **(extra_hparams or {})),
                     phases=(Phase("all", hp.local_steps, hp.local_epochs, hp.lr),),
                     init=compose_init(local, *init), local=local, communicate=communicate,
                     decay=hp.decay, **fields)
