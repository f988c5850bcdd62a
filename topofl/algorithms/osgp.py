r"""Overlap SGP (OSGP): push-sum whose messages arrive one round late.

References
----------
.. [1] M. Assran, N. Loizou, N. Ballas, M. Rabbat, "Stochastic Gradient Push for Distributed Deep
   Learning", ICML 2019 (OSGP, Algorithm 2 with one round of overlap).
"""

from __future__ import annotations

from topofl.algorithms._common import SGDParams, sgd_factory
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.sgp import push_sum_sgd
from topofl.engine.protocol import Algorithm

__all__ = ["osgp"]


@register_algorithm("osgp")
@sgd_factory(participation=True)
def osgp(hp: SGDParams) -> Algorithm:
    r"""Overlap SGP: messages sent at round ``t`` are received at round ``t + 1``.

    A node never waits for its in-neighbours: it keeps $W_{jj} x_j$ at once and adds what it
    received from the previous round's sends. The total mass $\sum_i x_i$ plus the mass in
    flight is preserved, and so is $\sum_i w_i$ plus the weights in flight (which sum to ``n``).
    Takes the local-SGD keywords of :func:`~topofl.algorithms.dsgd`.
    ``participation`` < 1 makes a sampled fraction of the clients active per round (the
    others neither train nor communicate: :func:`~topofl.engine.pieces.with_participation`).

    Examples
    --------
    >>> tf.algorithms.osgp(lr=0.1).requires
    'column'
    """
    return push_sum_sgd("osgp", True, hp)
