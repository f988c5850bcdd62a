r"""D-Cliques: clique skew, Greedy Swap, and the inter-clique topologies of Bellet et al.

D-Cliques [1]_ groups the ``n`` nodes into small *cliques* whose pooled label distribution is
close to the global one, links every clique internally (a complete graph), and connects the
cliques with a sparse *inter-clique* topology. Under label-distribution skew, D-SGD on such a
graph converges about as fast as on the complete graph with a fraction of its edges.

=================================  ===============================================================
function                           what
=================================  ===============================================================
:func:`skew`                       eq. (3): L1 distance between a set's mean label distribution
                                   and the global one
:func:`clique_skews`               the skew of every clique of a partition
:func:`random_cliques`             the random partition that Greedy Swap starts from (the baseline)
:func:`greedy_swap`                Fig. 4: random cliques improved by skew-reducing pair swaps
:func:`auto_steps`                 the default number of Greedy Swap steps for ``n`` nodes
:func:`connect_cliques`            a topology from given cliques: complete cliques plus one of the
                                   inter-clique topologies of Sec. III-C
:func:`dcliques`                   the whole construction: Greedy Swap then :func:`connect_cliques`
:func:`messages_per_node`          messages per node and round with or without Clique Averaging,
                                   counted the paper's way (37.8 at ``n = 1000``)
:func:`clique_averaging_matrix`    the matrix with which Clique Averaging mixes gradients (Fig. 7),
                                   intra-clique edges removed or not (Sec. IV-F)
=================================  ===============================================================

Conventions shared by the functions of this module
--------------------------------------------------
* **Label distributions** are an ``(n, L)`` array of per-node class counts or proportions. Rows
  are normalised internally; every entry must be finite and non-negative and every row must have
  a positive sum. The global distribution is the *mean of the normalised rows*,
  $p(y) = \frac{1}{n}\sum_i p_i(y)$, as in the paper (not the pooled counts).
* **Clique sizes.** With ``clique_size = M`` there are $K = \lceil n / M \rceil$ cliques, the
  fewest that hold at most ``M`` nodes each, and their sizes differ by at most one: with
  $n = Kq + r$ ($0 \le r < K$), cliques ``0..r-1`` have ``q + 1`` nodes and the others ``q``.
  (``n = 101, M = 10`` gives 11 cliques: 2 of 10 nodes and 9 of 9.) Greedy Swap keeps the sizes.
* **Inter-clique edges** (Sec. III-C) are decided at the level of cliques, then each is attached
  to the member of each clique with the fewest inter-clique edges so far, ties broken at random,
  so that degrees stay balanced (ring, small world, fully connected: in every clique the
  inter-clique edges attached differ by at most one per member; fractal: the member of the
  whole group with the fewest, at each level). Every inter-clique topology but the paper's
  ``"small_world"`` is a simple graph on the cliques (at most one edge per pair of cliques);
  ``"small_world"`` lets each clique add its own edges, so a pair of cliques may get several
  (see :func:`connect_cliques`). Two nodes are never linked twice.
* Randomness comes from the keyword-only ``seed`` alone; see :func:`dcliques` for the order in
  which one generator is used.

References
----------
.. [1] A. Bellet, A.-M. Kermarrec, E. Lavoie, "D-Cliques: Compensating for Data Heterogeneity
   with Topology in Decentralized Federated Learning", SRDS 2022 (arXiv:2104.07365).

Examples
--------
>>> labels = np.eye(10)[np.arange(100) % 10]          # 100 nodes, one class each
>>> t = tf.topologies.dcliques(labels, clique_size=10, inter="small_world", seed=0)
>>> t.n, len(t.groups), t.params["skew"]
(100, 10, 0.0)
"""

from __future__ import annotations

from topofl.topologies.cliques import _families  # noqa: F401  (registers the families)
from topofl.topologies.cliques._input import INTER_CLIQUE
from topofl.topologies.cliques.assembly import dcliques
from topofl.topologies.cliques.averaging import clique_averaging_matrix
from topofl.topologies.cliques.clique_skew import clique_skews, skew
from topofl.topologies.cliques.inter import connect_cliques
from topofl.topologies.cliques.messages import messages_per_node
from topofl.topologies.cliques.privacy import _private_histograms as _private_histograms
from topofl.topologies.cliques.swap import (
    GreedySwapResult,
    auto_steps,
    greedy_swap,
    random_cliques,
)
from topofl.topologies.cliques.swap import _pair_swap_skews as _pair_swap_skews

__all__ = [
    "INTER_CLIQUE",
    "GreedySwapResult",
    "skew",
    "clique_skews",
    "random_cliques",
    "greedy_swap",
    "auto_steps",
    "connect_cliques",
    "dcliques",
    "messages_per_node",
    "clique_averaging_matrix",
]

