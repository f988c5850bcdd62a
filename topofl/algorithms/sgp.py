r"""Stochastic Gradient Push (SGP).

Push-sum handles directed, time-varying graphs whose mixing matrices are only *column*
stochastic: every node keeps a scalar weight $w_i$ (initially 1) mixed with the same matrix as the
parameters, and evaluates gradients at the de-biased parameters $z_i = x_i / w_i$. The sum of the
weights stays $n$ and $z_i$ converges to the true average, which row-stochastic mixing misses.

References
----------
.. [1] M. Assran, N. Loizou, N. Ballas, M. Rabbat, "Stochastic Gradient Push for Distributed Deep
   Learning", ICML 2019 (SGP, Algorithm 1; OSGP, Algorithm 2 with one round of overlap).
.. [2] D. Kempe, A. Dobra, J. Gehrke, "Gossip-based computation of aggregate information",
   FOCS 2003 (push-sum).
"""

from __future__ import annotations

from topofl.algorithms._common import SGDParams, sgd_algorithm, sgd_factory
from topofl.algorithms.base import register_algorithm
from topofl.engine.pieces import SGD, PushSum
from topofl.engine.protocol import Algorithm

__all__ = ["sgp"]


def push_sum_sgd(name: str, overlap: bool, hp: SGDParams) -> Algorithm:
    """Local SGD at the de-biased point composed with push-sum (SGP, and OSGP with overlap)."""
    # the gradient is taken at z = x / w and applied to the numerator x (Assran et al., l. 5)
    sgd = SGD(hp.momentum, hp.weight_decay, debias="all")
    push = PushSum("all", overlap=overlap)
    return sgd_algorithm(name, hp, push, local=sgd, init=(push,), evaluate=push.evaluate,
                         requires="column", lost="mass", stacks=True)


@register_algorithm("sgp")
@sgd_factory(participation=True)
def sgp(hp: SGDParams) -> Algorithm:
    r"""Stochastic Gradient Push over column-stochastic, possibly directed time-varying ``W_t``.

    Per round: gradient at $z_i = x_i / w_i$, step on $x_i$, then $x \leftarrow W_t x$,
    $w \leftarrow W_t w$. Takes the local-SGD keywords of :func:`~topofl.algorithms.dsgd`.
    ``participation`` < 1 makes a sampled fraction of the clients active per round (the
    others neither train nor communicate: :func:`~topofl.engine.pieces.with_participation`).

    Examples
    --------
    Push-sum reaches the exact average over a directed graph where row-stochastic mixing is
    biased. Client ``i`` minimises ``(x - c_i)^2 / 2`` with ``c = (0, 4, 8)``; the optimum of the
    sum is 4.

    >>> import networkx as nx, torch
    >>> G = nx.DiGraph([(0, 1), (1, 2), (2, 0), (0, 2)])
    >>> push = tf.Topology.from_networkx(G, weights="push_sum")
    >>> c = torch.tensor([[0.0], [4.0], [8.0]], dtype=torch.float64)
    >>> trace = tf.engine.run_rounds(tf.algorithms.sgp(lr=0.1), torch.zeros_like(c), push,
    ...     lambda z, phase, rnd: z - c, rounds=400, lr=lambda rnd, phase: 0.1 * 0.98**rnd.t)
    >>> [round(v, 3) for v in trace.evaluated().flatten().tolist()]
    [4.0, 4.0, 4.0]
    >>> round(float(trace.state.weight.sum()), 12)
    3.0
    """
    return push_sum_sgd("sgp", False, hp)
