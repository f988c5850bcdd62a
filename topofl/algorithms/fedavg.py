"""FedAvg with full participation: local SGD, then the exact average of all clients.

References
----------
.. [1] B. McMahan et al., "Communication-efficient learning of deep networks from decentralized
   data", AISTATS 2017.
"""

from __future__ import annotations

from topofl.algorithms._common import SGDParams, sgd_algorithm, sgd_factory
from topofl.algorithms.base import register_algorithm
from topofl.engine.pieces import exact_average
from topofl.engine.protocol import Algorithm

__all__ = ["fedavg"]


@register_algorithm("fedavg")
@sgd_factory()
def fedavg(hp: SGDParams) -> Algorithm:
    """FedAvg with full participation: local step(s), then the exact average of all clients.

    This is the fully-connected ideal of the D-Cliques paper (``W = 11^T/n`` every round),
    computed as a mean instead of a product. Messages: ``2 n`` (upload and download). Takes
    the local-SGD keywords of :func:`~topofl.algorithms.dsgd`.

    Examples
    --------
    >>> tf.algorithms.fedavg(lr=0.1, local_steps=2).phases[0].steps
    2
    """
    return sgd_algorithm("fedavg", hp, exact_average(), requires=None, uses_topology=False)
