r"""The two graph objects of topofl: :class:`Topology` and :class:`TimeVarying`.

Convention: one gossip step is ``x_{t+1} = W x_t``. ``W[i, j]`` is the weight node ``i`` gives to
the message it receives from node ``j``, so ``W[i, j] > 0`` iff the edge ``j -> i`` exists (the
diagonal holds the weight a node keeps). ``graph`` is an ``nx.DiGraph`` with an arc ``j -> i`` for
every such edge and no self-loops; ``W`` therefore has the sparsity of the transposed adjacency
matrix plus (part of) the diagonal. In PyG terms ``edge_index[0]`` is the sender ``j`` and
``edge_index[1]`` the receiver ``i``.

A :class:`TimeVarying` is a sequence of topologies indexed by the round ``t``; ``at(t)`` is a pure
function of the seed and ``t``, never of the order of calls.

The package
-----------
- :mod:`~topofl.graph.topology`: :class:`Topology`, its constructors, conversions and
  properties (the arrays behind them in the private ``_convert``).
- :mod:`~topofl.graph.time_varying`: :class:`TimeVarying`, :data:`GraphLike` and
  :func:`as_time_varying`.
- :mod:`~topofl.graph.checks`: the checks of the inputs, and
  :func:`~topofl.graph.checks.check_w_size`, which refuses a ``W`` that would not fit in memory.
"""

from topofl.graph.checks import W_BYTES_PER_ARC as W_BYTES_PER_ARC
from topofl.graph.checks import W_BYTES_PER_NODE as W_BYTES_PER_NODE
from topofl.graph.checks import check_w_size as check_w_size  # (their path before the package)
from topofl.graph.checks import w_bytes as w_bytes
from topofl.graph.time_varying import GraphLike, TimeVarying, as_time_varying
from topofl.graph.topology import Topology

__all__ = ["Topology", "TimeVarying", "as_time_varying", "GraphLike"]
