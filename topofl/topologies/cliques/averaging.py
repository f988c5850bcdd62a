r"""The gradient-averaging matrix of Clique Averaging (Fig. 7 of D-Cliques, Sec. IV-F)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from topofl._utils.validation import arc_pattern
from topofl.graph import Topology


def clique_averaging_matrix(topology: Topology) -> sp.csr_array:
    r"""The ``(n, n)`` matrix $A$ with which Clique Averaging mixes gradients: $g \leftarrow A g$.

    Clique Averaging (Fig. 7) replaces the gradient of node $i$ by the plain mean of the
    gradients of the clique members it receives gradients from, itself included:

    $$g_i \leftarrow \frac{1}{|S_i|} \sum_{j \in S_i} \nabla F_j, \qquad
    S_i = \{i\} \cup \{j \in \mathrm{Clique}(i) : j \to i\},$$

    so $A_{ij} = 1 / |S_i|$ for $j \in S_i$ and 0 elsewhere. On complete cliques $S_i$ is the
    whole clique, the mean of Fig. 7. With intra-clique edges removed (Sec. IV-F, Fig. 15-16) a
    node only has the gradients of its remaining clique neighbours, which is what the authors'
    simulator does ("average gradients only with other clique nodes with actual edges"); the
    removed edges carry no gradient, and nodes of other cliques never contribute, whatever
    inter-clique edges there are.

    Parameters
    ----------
    topology : Topology
        A topology with ``groups`` (the cliques), e.g. from :func:`dcliques` or
        :func:`connect_cliques`. An arc ``j -> i`` is ``W[i, j] != 0``; on a directed topology
        $S_i$ holds the clique's in-neighbours of ``i``.

    Returns
    -------
    scipy.sparse.csr_array
        ``(n, n)`` float64, row-stochastic, with the sparsity of the intra-clique arcs plus the
        diagonal. Doubly stochastic only when every $|S_i|$ is the same within each
        component (e.g. complete cliques): after an edge removal the mean gradient of a clique
        is no longer preserved exactly.

    Raises
    ------
    TypeError
        If ``topology`` is not a :class:`~topofl.graph.Topology`.
    ValueError
        If it has no ``groups``.

    Examples
    --------
    A clique of four with the edge 0-1 removed, linked to a clique of two by the edge 3-4: nodes
    0 and 1 average three gradients, nodes 2 and 3 all four, and the inter-clique edge carries
    none.

    >>> import networkx as nx
    >>> G = nx.complete_graph(4)
    >>> G.remove_edge(0, 1)
    >>> G.add_edges_from([(3, 4), (4, 5)])
    >>> t = tf.Topology.from_networkx(G, groups=[[0, 1, 2, 3], [4, 5]])
    >>> (tf.topologies.clique_averaging_matrix(t).toarray() * 12).round(6).astype(int)
    array([[4, 0, 4, 4, 0, 0],
           [0, 4, 4, 4, 0, 0],
           [3, 3, 3, 3, 0, 0],
           [3, 3, 3, 3, 0, 0],
           [0, 0, 0, 0, 6, 6],
           [0, 0, 0, 0, 6, 6]])
    """
    if not isinstance(topology, Topology):
        raise TypeError(f"topology must be a topofl Topology, got {type(topology).__name__}")
    if topology.groups is None:
        raise ValueError(
            "Clique Averaging needs the cliques: the topology must have groups (as dcliques and "
            f"connect_cliques set them), {topology.name!r} has none"
        )
    g = topology.group_index
    P = arc_pattern(topology.W, diagonal=True).tocoo()
    keep = g[P.row] == g[P.col]  # arcs within a clique, and the diagonal
    rows, cols = P.row[keep], P.col[keep]
    size = np.bincount(rows, minlength=topology.n).astype(np.float64)
    A = sp.csr_array((1.0 / size[rows], (rows, cols)), shape=(topology.n, topology.n))
    A.sort_indices()
    return A
