r"""Messages per node and round of D-SGD with and without Clique Averaging (Sec. III-D, IV-E)."""

from __future__ import annotations

import numpy as np

from topofl._utils.validation import check_bool, check_choice
from topofl.graph import Topology

#: How gradient messages are counted under Clique Averaging (see :func:`messages_per_node`).
GRADIENT_COUNTS: tuple[str, ...] = ("paper", "clique")


def messages_per_node(
    topology: Topology, *, clique_averaging: bool = True, gradients: str = "paper"
) -> float:
    r"""Mean number of messages a node sends in one round of D-SGD, counted as in D-Cliques.

    A *message* is one vector, a model or a gradient, sent by one node to one neighbour in one
    round; a node receives as many as it sends on an undirected graph. D-SGD sends the model
    along every edge: $\deg(i)$ messages from node $i$ (999 per node on the complete graph of
    1000 nodes, the paper's figure). Clique Averaging (Fig. 7) sends gradients separately from
    models, and the paper counts it as two rounds of messages on every edge: "the number of
    messages exchanged between nodes is therefore twice their number of edges" (Sec. III-D),
    i.e. $2 \deg(i)$, its 37.8 messages per node per round for 18.9 edges per node at
    ``n = 1000`` (Sec. IV-E).

    Parameters
    ----------
    topology : Topology
        The communication graph; with ``gradients="clique"`` it must carry ``groups`` (the
        cliques, as :func:`dcliques` and :func:`connect_cliques` set them).
    clique_averaging : bool, default True
        Count the gradient messages of Clique Averaging on top of the models. A ``bool`` (or
        ``numpy.bool_``): other values, even truthy ones such as ``"no"`` or ``1``, are
        refused.
    gradients : {"paper", "clique"}, default "paper"
        How gradient messages are counted (only with ``clique_averaging``):

        * ``"paper"``: one gradient per edge, as the paper counts: $2\deg(i)$ in all.
        * ``"clique"``: only the gradients Fig. 7 uses, those sent to neighbours of the
          same clique: $\deg(i) + \deg_{\text{clique}}(i)$ (27.9 instead of 37.8 at
          ``n = 1000``: 18.9 models plus 9 gradients; what the engine records). With
          intra-clique edges removed (Sec. IV-F) a node only has the gradients of its
          remaining clique neighbours.

    Returns
    -------
    float
        $\frac{1}{n} \sum_i m_i$, the messages per node and round (for a directed topology,
        $\deg$ is the out-degree: the arcs a node sends on).

    Raises
    ------
    TypeError
        If ``topology`` is not a :class:`~topofl.graph.Topology`, or ``clique_averaging`` is
        not a bool.
    ValueError
        For an unknown ``gradients``, or ``gradients="clique"`` on a topology without groups.

    Notes
    -----
    With ``n`` nodes, cliques of ``M`` and a fully connected inter-clique topology of
    $K = n/M$ cliques, each node has $M - 1$ clique neighbours and, on average,
    $(K - 1)/M$ others, so the paper's count is $2 (M - 1 + (K - 1)/M)$: 19.8 at
    ``n = 100`` (the "$\approx 80\%$" fewer messages than the 99 of the complete graph,
    Sec. IV-C) and 37.8 at ``n = 1000`` ("96%" fewer than 999). Removing ``r`` edges from
    every clique (Sec. IV-F) lowers the mean degree by $2r/M$ and the paper's count by
    $4r/M$.

    The engine's bytes ledger (:mod:`topofl.engine.ledger`) counts what the algorithm sends:
    the ``messages`` of a run's records grow each round by the arcs the models travel on plus,
    under Clique Averaging, one gradient per arc within a clique and per local step, i.e. by
    ``n`` times ``messages_per_node(..., gradients="clique")`` with one local step. The
    paper's count (the default here) is the larger one.

    Examples
    --------
    >>> labels = np.eye(10)[np.arange(1000) % 10]      # 1000 nodes, one class each
    >>> t = tf.topologies.dcliques(labels, 10, inter="fully_connected", steps=0, seed=0)
    >>> t.edges_per_node
    18.9
    >>> tf.topologies.messages_per_node(t)             # the paper's 37.8
    37.8
    >>> tf.topologies.messages_per_node(t, gradients="clique")
    27.9
    >>> tf.topologies.messages_per_node(t, clique_averaging=False)
    18.9
    """
    if not isinstance(topology, Topology):
        raise TypeError(f"topology must be a topofl Topology, got {type(topology).__name__}")
    clique_averaging = check_bool(clique_averaging, "clique_averaging")
    gradients = check_choice(gradients, "gradients", GRADIENT_COUNTS)
    out = topology.out_degree
    models = int(out.sum())
    if not clique_averaging:
        grads = 0
    elif gradients == "paper":
        grads = models
    else:
        if topology.groups is None:
            raise ValueError(
                'gradients="clique" needs the cliques: the topology must have groups (as '
                f"dcliques and connect_cliques set them), {topology.name!r} has none"
            )
        g = topology.group_index
        P = topology.W.tocoo()
        # W[i, j] > 0 iff j sends to i: count the arcs j -> i within a clique, self-loops out
        grads = int(np.count_nonzero((P.row != P.col) & (g[P.row] == g[P.col]) & (P.data != 0)))
    return (models + grads) / topology.n
