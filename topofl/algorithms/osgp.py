r"""Overlap SGP (OSGP): push-sum whose messages arrive one round late.

References
----------
.. [1] M. Assran, N. Loizou, N. Ballas, M. Rabbat, "Stochastic Gradient Push for Distributed Deep
   Learning", ICML 2019 (OSGP, Algorithm 2 with one round of overlap).
"""

from __future__ import annotations

from topofl.algorithms.base import Algorithm, register_algorithm
from topofl.algorithms.sgp import push_sum_sgd

__all__ = ["osgp"]


@register_algorithm("osgp")
def osgp(
    lr: float = 0.1,
    *,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    local_steps: int | None = None,
    local_epochs: float | None = None,
    decay: float = 1.0,
) -> Algorithm:
    r"""Overlap SGP: messages sent at round ``t`` are received at round ``t + 1``.

    A node never waits for its in-neighbours: it keeps $W_{jj} x_j$ at once and adds what it
    received from the previous round's sends. The total mass $\sum_i x_i$ plus the mass in
    flight is preserved, and so is $\sum_i w_i$ plus the weights in flight (which sum to ``n``).

    Examples
    --------
    >>> tf.algorithms.osgp(lr=0.1).requires
    'column'
    """
    return push_sum_sgd("osgp", True, lr, momentum, weight_decay, local_steps, local_epochs,
                        decay)
