r"""The pieces algorithms are composed of: local updates, communication, round hooks.

One module per kind: :mod:`~topofl.engine.pieces.local` (local SGD and the updates wrapping
it), :mod:`~topofl.engine.pieces.cliques` (Clique Averaging),
:mod:`~topofl.engine.pieces.participation` (who takes part in a round),
:mod:`~topofl.engine.pieces.communication` (gossip, push-sum),
:mod:`~topofl.engine.pieces.compression` (compressors and compressed gossip),
:mod:`~topofl.engine.pieces.server` (server averages) and :mod:`~topofl.engine.pieces.state`
(what pieces keep in a state, building and resetting it); every name is importable from
``topofl.engine.pieces``.

Local-update pieces (the ``local`` of an :class:`~topofl.engine.Algorithm`):

* :class:`SGD`: local SGD with heavy-ball/Nesterov momentum and weight decay, with the gradient
  taken at the parameters or, for push-sum, at the de-biased point $z = x / w$ and applied to
  the numerators $x$. Plain SGD (no momentum, no weight decay, gradient at $x$) also offers a
  fused kernel (:meth:`SGD.fused`): gradient and step in one executor pass.
* :class:`CliqueAveraged`: an :class:`SGD` whose gradients are first averaged over each clique
  of the round's topology (D-Cliques' Clique Averaging).
* :class:`Sampled`: an :class:`SGD` that only moves the round's sampled participants.

Communication pieces (``communicate(state, rnd, env) -> Sent``): :func:`gossip` (``X <- W_t X``
on the shared columns), :class:`PushSum` (numerators and weights, optionally one round of
overlap, with its de-biased ``evaluate``), :class:`FromStart` (another piece run on the models
the round started from, the local update added after: D-PSGD's order), :func:`exact_average`
(FedAvg's mean), :func:`server_average` (sampled, optionally data-size weighted mean of a part),
:func:`robust_gossip` (each node's clipped, trimmed-mean or median aggregate of its
neighbourhood, :mod:`~topofl.engine.pieces.robust`; every client in one process),
:class:`CompressedGossip` (CHOCO-Gossip: compressed differences of public copies, error
feedback, :mod:`~topofl.engine.pieces.compression`), :func:`no_communication`. Round hooks:
:func:`restart_momentum`.

The buffers hold the rows of the clients this process owns (``env.clients``; every client in
one process, a rank's in a distributed run): pieces reach other clients' rows only through
``env.mixer`` (gossip) and ``env.clients`` (the averages, Clique Averaging, client sampling),
so every piece runs in every placement.

Examples
--------
D-SGD is local SGD composed with gossip; one round by hand on a 3-ring (every Metropolis weight
is 1/3, so one gossip step averages):

>>> import torch
>>> env = tf.engine.toy_services(3)
>>> local, comm = tf.engine.pieces.SGD(), tf.engine.pieces.gossip()
>>> state = tf.engine.State(x=torch.tensor([[0.0], [3.0], [6.0]], dtype=torch.float64))
>>> rnd = tf.engine.Round(0, tf.topologies.ring(3))
>>> local.update(state, torch.ones(3, 1, dtype=torch.float64), tf.engine.Phase(),
...              torch.full((3,), 0.5, dtype=torch.float64), rnd, env)
>>> comm(state, rnd, env).messages, state.x.flatten().tolist()
(6, [2.5, 2.5, 2.5])
"""

from topofl.engine.pieces.cliques import (
    CliqueAveraged,
    clique_average_,
    clique_index,
    clique_messages,
    group_mean_,
)
from topofl.engine.pieces.communication import (
    FromStart,
    MessageNoise,
    PushSum,
    gossip,
    graph_of,
    neighbourhood_sum_,
    no_communication,
)
from topofl.engine.pieces.compression import (
    ChocoState,
    CompressedGossip,
    CompressedMessages,
    Compression,
    consensus_step_,
)
from topofl.engine.pieces.local import SGD, Proximal, sgd_step
from topofl.engine.pieces.participation import (
    Sampled,
    online_rows,
    participants,
    round_active,
    with_participation,
)
from topofl.engine.pieces.privacy import NoisyState, NoisyUpdates
from topofl.engine.pieces.robust import AGGREGATORS, robust_gossip
from topofl.engine.pieces.server import data_sizes, exact_average, server_average, server_flows
from topofl.engine.pieces.state import (
    ProximalState,
    PushSumState,
    compose_init,
    debias_,
    hold,
    no_round_start,
    require_split,
    restart_momentum,
)
from topofl.topologies.derived import active_topology, neighbourhood

__all__ = [
    # local updates
    "SGD",
    "sgd_step",
    "Proximal",
    "CliqueAveraged",
    "clique_average_",
    "group_mean_",
    "clique_index",
    "clique_messages",
    "Sampled",
    # participation
    "participants",
    "round_active",
    "online_rows",
    "with_participation",
    "active_topology",
    # communication
    "graph_of",
    "gossip",
    "PushSum",
    "FromStart",
    "MessageNoise",
    "neighbourhood",
    "neighbourhood_sum_",
    "no_communication",
    "robust_gossip",
    "AGGREGATORS",
    # privacy
    "NoisyUpdates",
    "NoisyState",
    "Compression",
    "CompressedGossip",
    "CompressedMessages",
    "consensus_step_",
    "exact_average",
    "server_average",
    "server_flows",
    "data_sizes",
    # state and round hooks
    "PushSumState",
    "ProximalState",
    "ChocoState",
    "hold",
    "debias_",
    "compose_init",
    "require_split",
    "restart_momentum",
    "no_round_start",
]
