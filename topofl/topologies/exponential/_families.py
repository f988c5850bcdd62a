"""Registry entries of the exponential families, in the registry's order, with their examples."""

from __future__ import annotations

from typing import Any

import numpy as np

from topofl.topologies._registry import GraphFamily, Param, register
from topofl.topologies.exponential.base import base_graph
from topofl.topologies.exponential.cascade import null_cascade
from topofl.topologies.exponential.k_peer import K_PEER_PERIODS, k_peer_exponential
from topofl.topologies.exponential.one_peer import one_peer_exponential
from topofl.topologies.exponential.static import exponential
from topofl.topologies.exponential.undirected import undirected_exponential

_N2 = Param("n", int, "number of nodes", low=2)


def _n_example(n: int, rng: np.random.Generator) -> dict[str, Any] | None:
    """The example of a family whose one parameter is ``n >= 2``."""
    return None if n < 2 else {"n": n}


def _n_k_example(n: int, rng: np.random.Generator) -> dict[str, Any] | None:
    """The example of a family of ``n >= 2`` nodes and ``1 <= k <= n - 1`` peers: ``k`` drawn
    in ``[1, min(4, n - 1)]``."""
    return None if n < 2 else {"n": n, "k": int(rng.integers(1, min(4, n - 1) + 1))}


register(GraphFamily(
    "exponential", exponential, (_N2,), _n_example,
    stochastic="doubly", undirected=False,
    description="static: i sends to i+2^k, k < ceil(log2 n); gap 2/(1+ceil(log2 n)) for even n"))
register(GraphFamily(
    "undirected_exponential", undirected_exponential, (_N2,), _n_example,
    stochastic="doubly", undirected=True,
    description="i and i +- 2^k, k < ceil(log2 n), as undirected edges; 14 edges/node at n=100"))
register(GraphFamily(
    "one_peer_exponential", one_peer_exponential, (_N2,), _n_example,
    time_varying=True, stochastic="doubly", undirected=False,
    description="one peer 2^(t mod tau) per round; exact average after log2 n rounds if n = 2^tau"))
register(GraphFamily(
    "k_peer_exponential", k_peer_exponential,
    (_N2, Param("k", int, "peers per node and round", low=1, high="n-1"),
     Param("period", str, "tau = floor (the paper's) or ceil of log_{k+1} n",
           choices=K_PEER_PERIODS)),
    _n_k_example,
    time_varying=True, stochastic="doubly", undirected=False,
    description="k peers i + j(k+1)^(t mod tau) per round (Niwa et al. 2025); commuting; "
    "tau = floor(log_{k+1} n), exact iff n = (k+1)^tau (period='exact': ceil, iff n | (k+1)^tau)"))
register(GraphFamily(
    "base_graph", base_graph,
    (_N2, Param("k", int, "maximum peers per node and round", low=1, high="n-1")),
    _n_k_example,
    time_varying=True, stochastic="doubly", undirected=True,
    description="Base-(k+1) graph: exact average after a period <= 2 log_{k+1} n + 2 rounds"))
register(GraphFamily(
    "null_cascade", null_cascade,
    (_N2, Param("k", int, "maximum peers per node and round", low=2)),
    lambda n, rng: None if n < 2 else {"n": n, "k": int(rng.integers(2, 6))},
    time_varying=True, stochastic="doubly", undirected=False,
    description="commuting circulant MAF and nulling filters (Niwa et al. 2025): exact average "
    "after tau = kappa + sum ceil(nu_i / (2 floor(k/2))) rounds for every n, k >= 2"))
