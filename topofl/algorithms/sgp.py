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

from typing import TYPE_CHECKING

from topofl.algorithms._common import sgd_algorithm
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.hparams import (
    Keywords,
    LocalSGD,
    LocalSGDKeywords,
    Sampling,
    SamplingKeywords,
)
from topofl.engine.pieces import SGD, PushSum, with_participation
from topofl.engine.protocol import Algorithm

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["sgp", "SGPKeywords"]

_SGD, _EVERY_CLIENT = LocalSGD(), Sampling()


class SGPKeywords(LocalSGDKeywords, SamplingKeywords, total=False):
    """SGP's flat keywords: the fields of its groups."""


def push_sum_sgd(name: str, overlap: bool, hp: LocalSGD) -> Algorithm:
    """Local SGD at the de-biased point composed with push-sum (SGP, and OSGP with overlap)."""
    # the gradient is taken at z = x / w and applied to the numerator x (Assran et al., l. 5)
    sgd = SGD(hp.momentum, hp.weight_decay, debias="all")
    push = PushSum("all", overlap=overlap)
    return sgd_algorithm(name, hp, push, local=sgd, init=(push,), evaluate=push.evaluate,
                         requires="column", lost="mass", stacks=True)


@register_algorithm("sgp")
def sgp(sgd: LocalSGD | float = _SGD, sampling: Sampling = _EVERY_CLIENT,
        **keywords: Unpack[SGPKeywords]) -> Algorithm:
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
    kw = Keywords("sgp", keywords)
    hp, active = kw.take(sgd, _SGD).resolved(), kw.take(sampling)
    kw.done()
    return with_participation(push_sum_sgd("sgp", False, hp), *active.checked())
