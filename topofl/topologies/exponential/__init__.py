r"""Exponential graphs and finite-time-consensus sequences, one family a module.

* :func:`exponential` (:mod:`~topofl.topologies.exponential.static`) -- the static exponential
  graph of Ying et al. (2021): node ``i`` sends to ``i + 2^k mod n`` for ``k = 0..tau-1``,
  ``tau = ceil(log2 n)``.
* :func:`undirected_exponential` (:mod:`~topofl.topologies.exponential.undirected`) -- the same
  graph with every arc made an undirected edge: ``i`` and ``i ± 2^k mod n`` are neighbours (14
  edges per node at ``n = 100``, the exponential graph that D-Cliques compares with, Fig. 12).
* :func:`one_peer_exponential` (:mod:`~topofl.topologies.exponential.one_peer`) -- its one-peer
  time-varying version: at round ``t`` node ``i`` sends only to ``i + 2^(t mod tau)``; the
  product of ``tau`` rounds is exactly $\mathbf{1}\mathbf{1}^\top/n$ when ``n`` is a power of two.
* :func:`k_peer_exponential` (:mod:`~topofl.topologies.exponential.k_peer`) -- its ``k``-peer
  version (Niwa, Zhang, Takezawa, Kleijn, 2025): at round ``t`` node ``i`` sends to
  ``i + j (k+1)^(t mod tau)``, ``j = 1..k``; commuting circulants whose product over a period is
  $\mathbf{1}\mathbf{1}^\top/n$ iff ``n`` divides ``(k+1)^tau``: with the paper's
  ``tau = floor(log_{k+1} n)`` iff ``n`` is a power of ``k + 1``.
* :func:`null_cascade` (:mod:`~topofl.topologies.exponential.cascade`) -- the same paper's
  null-cascade graph: commuting circulant filters (moving averages and steerable nulling
  filters) whose product over a period is $\mathbf{1}\mathbf{1}^\top/n$ for *every* ``n``
  (``k >= 2``); :func:`null_cascade_schedule` lists its filters and the frequencies each one
  nulls.
* :func:`base_graph` (:mod:`~topofl.topologies.exponential.base`) -- the Base-(k+1) graph of
  Takezawa et al. (2023): a periodic sequence of undirected graphs of maximum degree ``k`` whose
  product over one period is exactly $\mathbf{1}\mathbf{1}^\top/n$, for *every* ``n`` and ``k``.

All are deterministic and doubly stochastic. Node ``i`` receives from ``j`` iff ``W[i, j] > 0``
(the convention of :mod:`topofl.topologies`). What the families share (circulant matrices,
``ceil(log2 n)``) is in the private ``_common``, the registry's entries in ``_families``.

References
----------
.. [1] B. Ying, K. Yuan, Y. Chen, H. Hu, P. Pan, W. Yin, "Exponential graph is provably efficient
   for decentralized deep training", NeurIPS 2021.
.. [2] Y. Takezawa, R. Sato, H. Bao, K. Niwa, M. Yamada, "Beyond exponential graph:
   communication-efficient topologies for decentralized learning via finite-time convergence",
   NeurIPS 2023.
.. [3] K. Niwa, G. Zhang, Y. Takezawa, W. B. Kleijn, "Revisiting 1-peer exponential graph for
   enhancing decentralized learning efficiency", NeurIPS 2025.
"""

from topofl.topologies.exponential import _families  # noqa: F401  (registers the families)
from topofl.topologies.exponential.base import base_graph, base_graph_schedule
from topofl.topologies.exponential.cascade import (
    CascadeFilter,
    null_cascade,
    null_cascade_schedule,
)
from topofl.topologies.exponential.k_peer import K_PEER_PERIODS as K_PEER_PERIODS
from topofl.topologies.exponential.k_peer import k_peer_exponential
from topofl.topologies.exponential.one_peer import one_peer_exponential
from topofl.topologies.exponential.static import exponential
from topofl.topologies.exponential.undirected import undirected_exponential

__all__ = [
    "exponential",
    "undirected_exponential",
    "one_peer_exponential",
    "k_peer_exponential",
    "base_graph",
    "base_graph_schedule",
    "null_cascade",
    "null_cascade_schedule",
    "CascadeFilter",
]
