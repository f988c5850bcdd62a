"""Local training only: every client trains on its own data and never communicates."""

from __future__ import annotations

from topofl.algorithms._common import SGDParams, sgd_algorithm, sgd_factory
from topofl.algorithms.base import register_algorithm
from topofl.engine.pieces import no_communication
from topofl.engine.protocol import Algorithm

__all__ = ["local"]


@register_algorithm("local")
@sgd_factory()
def local(hp: SGDParams) -> Algorithm:
    """Local training only: every client trains on its own data and never communicates.

    Takes the local-SGD keywords of :func:`~topofl.algorithms.dsgd` (``lr``, ``momentum``,
    ``weight_decay``, ``local_steps``, ``local_epochs``, ``decay``).

    Examples
    --------
    >>> tf.algorithms.local(lr=0.1).uses_topology
    False
    """
    return sgd_algorithm("local", hp, no_communication, requires=None, uses_topology=False,
                         stacks=True)
