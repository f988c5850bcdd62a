r"""Epidemic Learning (EL): local SGD, then each node averages uniformly what it received.

References
----------
.. [1] M. de Vos, S. Farhadkhani, R. Guerraoui, A.-M. Kermarrec, R. Pires, R. Sharma,
   "Epidemic learning: boosting decentralized learning with randomized communication",
   NeurIPS 2023 (Algorithm 1).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from topofl._utils.validation import arc_pattern
from topofl.algorithms._common import sgd_algorithm
from topofl.algorithms.base import register_algorithm
from topofl.algorithms.hparams import Keywords, LocalSGD, LocalSGDKeywords
from topofl.engine.drops import lossy
from topofl.engine.ledger import Flow, dtype_bits
from topofl.engine.pieces import gossip, graph_of
from topofl.engine.protocol import Algorithm, Round, Sent, Services, State
from topofl.graph import Topology

if TYPE_CHECKING:  # Unpack is typing's from Python 3.11; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["el", "arrival_average"]

_UNIFORM: weakref.WeakKeyDictionary[Topology, Topology] = weakref.WeakKeyDictionary()


def arrival_average(topology: Topology) -> Topology:
    r"""The topology with EL's weights: node ``i`` averages itself and what it receives.

    $W_{ij} = 1/(K_i + 1)$ for every in-neighbour ``j`` of ``i`` (an arc ``j -> i``) and for
    ``j = i``, with $K_i$ its number of in-neighbours: row-stochastic, the arcs unchanged, the
    given weights ignored. A topology that already has these weights (EL-Local's and
    EL-Oracle's rounds, any graph built with ``weights="uniform"``) is returned as it is.
    Cached per topology.

    Examples
    --------
    The star's centre averages all four nodes, a leaf itself and the centre:

    >>> from topofl.algorithms.el import arrival_average
    >>> u = arrival_average(tf.topologies.star(4))
    >>> u.to_dense()[:2].round(3).tolist()
    [[0.25, 0.25, 0.25, 0.25], [0.5, 0.5, 0.0, 0.0]]
    >>> t = tf.topologies.el_local(6, 2, seed=0).at(3)
    >>> arrival_average(t) is t
    True
    """
    out = _UNIFORM.get(topology)
    if out is not None:
        return out
    P = arc_pattern(topology.W, diagonal=True)  # arcs and every node to itself
    k = np.diff(P.indptr)  # K_i + 1
    rows = np.repeat(np.arange(topology.n, dtype=np.int64), k)
    U = sp.csr_array((1.0 / k[rows].astype(np.float64), P.indices, P.indptr), shape=P.shape)
    D = topology.W - U
    if D.nnz == 0 or not np.any(D.data):
        out = topology
    else:
        out = Topology.from_matrix(U, name=topology.name, params=topology.params,
                                   groups=topology.groups)
    _UNIFORM[topology] = out
    return out


_GOSSIP = gossip()


def _average_arrivals(state: State, rnd: Round, env: Services) -> Sent:
    uniform = arrival_average(graph_of(rnd))
    if rnd.drop is None:
        return _GOSSIP(state, Round(rnd.t, uniform, rnd.online), env)
    # lost messages: each receiver averages uniformly itself and what arrived, 1/(k_i + 1)
    # on each (the "renormalise" rule on EL's uniform weights, the weights then recomputed
    # from the delivered arcs so that they are exactly 1/(k_i + 1))
    lo = lossy(uniform, rnd.drop, "renormalise")
    env.mixer.mix_(arrival_average(lo.topology), state.x)
    size, bits = int(state.x.shape[1]), dtype_bits(state.x.dtype)
    return Sent.of(Flow("model", lo.delivered, size, bits),
                   dropped=(Flow("model", lo.dropped, size, bits),))


#: EL's default local SGD (one step a round)
_SGD = LocalSGD()


@register_algorithm("el")
def el(sgd: LocalSGD | float = _SGD, **keywords: Unpack[LocalSGDKeywords]) -> Algorithm:
    r"""Epidemic Learning: local SGD, then $x_i \leftarrow$ the mean of $x_i$ and the models
    ``i`` received.

    Each round every node takes its local steps, sends its model along its out-arcs of the
    round's graph (EL-Local: to ``s`` random nodes; EL-Oracle: on a random ``s``-regular
    graph) and replaces its model by the uniform average of its own and the $K_i$ it received
    (de Vos et al., Algorithm 1): $x_i \leftarrow \frac{1}{K_i + 1}(x_i +
    \sum_{j \to i} x_j)$, the weights of :func:`arrival_average`, whatever weights the graph
    carries. Row-stochastic, not doubly: this is how ``el_local``, whose ``W`` D-SGD refuses,
    trains.

    Parameters
    ----------
    sgd : LocalSGD or float, default ``LocalSGD()``
        The local SGD of a round (a number: its learning rate, ``el(0.5)``); its fields are
        also taken flat, as below.
    lr, momentum, weight_decay, local_steps, local_epochs, decay
        The local-SGD keywords of :func:`~topofl.algorithms.dsgd` (default: one local step,
        no momentum), overriding ``sgd``'s fields.

    Returns
    -------
    Algorithm
        :class:`~topofl.engine.pieces.SGD` composed with gossip on :func:`arrival_average`;
        ``requires=None`` (any graph: only its arcs count); ``lost="renormalise"``. A client
        absent from a round neither sends nor receives; the others average what did arrive.

    Notes
    -----
    On ``el_oracle`` (every round ``s``-regular, ``W = 1/(s+1)`` on every arc) the weights are
    the graph's own and EL is D-SGD; on ``el_local`` each node's weight is ``1/(K_i+1)``, the
    row-stochastic ``W`` of the family. Messages: one model per arc, ``n s`` a round.

    Lost messages (``[network] drop = p``, :mod:`topofl.engine.drops`): a node averages
    uniformly what did arrive and its own model, $x_i \leftarrow \frac{1}{k_i + 1}(x_i +
    \sum_{j \to i \text{ delivered}} x_j)$ with $k_i$ the messages it received: the
    ``"renormalise"`` rule on EL's uniform weights (exactly ``1/(k_i + 1)`` each). At
    ``drop = 1`` no model moves (no mixing); at ``drop = 0`` the run is the run without drops.

    Examples
    --------
    EL-Local on a toy consensus problem: client ``i`` minimises ``(x - i)^2 / 2``; the models
    agree, near (not exactly at: row-stochastic averaging weighs clients unequally) the optimum
    of the sum, 3.5.

    >>> import torch
    >>> c = torch.arange(8.0, dtype=torch.float64).unsqueeze(1)
    >>> trace = tf.engine.run_rounds(tf.algorithms.el(lr=0.1), torch.zeros_like(c),
    ...     tf.topologies.el_local(8, 2, seed=0), lambda z, phase, rnd: z - c, rounds=300,
    ...     lr=lambda rnd, phase: 0.1 * 0.98**rnd.t)
    >>> x = trace.evaluated().flatten()
    >>> round(float(x.max() - x.min()), 3), round(float(x.mean()), 1)
    (0.0, 3.5)
    """
    kw = Keywords("el", keywords)
    hp = kw.take(sgd, _SGD).resolved()
    kw.done()
    return sgd_algorithm("el", hp, _average_arrivals, requires=None, lost="renormalise",
                         stacks=True)
