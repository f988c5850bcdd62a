r"""Graph constructors: pure functions ``(n, ...params) -> Topology`` (or ``TimeVarying``).

The matrix convention, stated once and tested everywhere
---------------------------------------------------------
One gossip step is $x_{t+1} = W x_t$. ``W[i, j]`` is the weight node ``i`` gives to the message
it receives from node ``j``, so ``W[i, j] > 0`` iff the edge ``j -> i`` exists. Since
``networkx.to_numpy_array`` gives ``A[src, dst]``, ``W`` has the sparsity of ``A.T`` (plus the
diagonal). In PyG terms ``edge_index[0]`` is the sender ``j`` and ``edge_index[1]`` the receiver
``i`` (``flow="source_to_target"``).

D-SGD needs a *doubly* stochastic ``W`` to reach the true average (row-stochastic alone gives a
weighted, biased consensus). Push-sum (SGP) only needs a *column*-stochastic ``W``: it corrects
the bias with the push-sum weights.

Conventions of the constructors
-------------------------------
* Undirected families use ``weights="metropolis"`` by default (eq. 2 of D-Cliques); any scheme of
  :mod:`topofl.mixing` or a callable can be passed.
* Random families take a keyword-only ``seed`` (``int`` or ``numpy.random.Generator``); the same
  seed gives the same graph, and the global RNG is never used.
* Every family is in :data:`REGISTRY` with its parameters, so tests, the CLI (``topofl list``) and
  reports can iterate over them; :func:`build` builds a graph from a spec such as
  ``"torus:rows=4,cols=8"``.
* Schedules combine built graphs: :func:`switch` (one graph until a round, then another) and
  :func:`periodic_averaging` (a graph with an exact global average every ``every`` rounds);
  they take graph objects, so they are not spec families.

Examples
--------
>>> W = tf.topologies.ring(5).W
>>> bool(W[0, 1] > 0 and W[0, 4] > 0 and W[0, 2] == 0)
True
>>> {'ring', 'dcliques', 'random_regular'} <= set(tf.topologies.REGISTRY)
True
"""

from topofl.topologies import classic as _classic
from topofl.topologies import cliques as _cliques
from topofl.topologies import directed as _directed
from topofl.topologies import epidemic as _epidemic
from topofl.topologies import exponential as _exponential
from topofl.topologies import learned as _learned
from topofl.topologies import partite_match as _partite_match
from topofl.topologies import random as _random
from topofl.topologies import schedules as _schedules
from topofl.topologies import teleportation as _teleportation
from topofl.topologies._registry import (
    REGISTRY,
    SCHEDULES,
    GraphFamily,
    Param,
    Registry,
    build,
    check_spec,
    parse_spec,
    register,
)
from topofl.topologies._registry import build_checked as build_checked  # (topofl.run)
from topofl.topologies.classic import *  # noqa: F403
from topofl.topologies.cliques import *  # noqa: F403
from topofl.topologies.directed import *  # noqa: F403
from topofl.topologies.epidemic import *  # noqa: F403
from topofl.topologies.exponential import *  # noqa: F403
from topofl.topologies.learned import *  # noqa: F403
from topofl.topologies.partite_match import *  # noqa: F403
from topofl.topologies.random import *  # noqa: F403
from topofl.topologies.schedules import *  # noqa: F403
from topofl.topologies.teleportation import *  # noqa: F403

__all__ = [
    "REGISTRY",
    "SCHEDULES",
    "GraphFamily",
    "Param",
    "Registry",
    "build",
    "parse_spec",
    "check_spec",
    "register",
    *_classic.__all__,
    *_random.__all__,
    *_cliques.__all__,
    *_exponential.__all__,
    *_directed.__all__,
    *_partite_match.__all__,
    *_epidemic.__all__,
    *_learned.__all__,
    *_teleportation.__all__,
    *_schedules.__all__,
]
