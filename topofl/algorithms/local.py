"""Local training only: every client trains on its own data and never communicates."""

from __future__ import annotations

from typing import TYPE_CHECKING

from topofl.algorithms._common import sgd_algorithm
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.hparams import Keywords, LocalSGD, LocalSGDKeywords
from topofl.engine.pieces import no_communication
from topofl.engine.protocol import Algorithm

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["local"]

_SGD = LocalSGD()


@register_algorithm("local")
def local(sgd: LocalSGD | float = _SGD, **keywords: Unpack[LocalSGDKeywords]) -> Algorithm:
    """Local training only: every client trains on its own data and never communicates.

    Takes the local-SGD keywords of :func:`~topofl.algorithms.dsgd` (``lr``, ``momentum``,
    ``weight_decay``, ``local_steps``, ``local_epochs``, ``decay``).

    Examples
    --------
    >>> tf.algorithms.local(lr=0.1).uses_topology
    False
    """
    kw = Keywords("local", keywords)
    hp = kw.take(sgd, _SGD).resolved()
    kw.done()
    return sgd_algorithm("local", hp, no_communication, requires=None, uses_topology=False,
                         stacks=True)
