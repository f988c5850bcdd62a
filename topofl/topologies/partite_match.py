r"""The (k+1)-partite random match graph: a fresh random partition into groups of ``k + 1``.

The time-varying baseline (C4) of Niwa, Zhang, Takezawa and Kleijn (NeurIPS 2025, Sec. 5.1 and
Appendix G) [1]_: it generalises the bipartite random match graph (a random perfect matching
per round, :func:`~topofl.topologies.random_matching`) to ``k``-peer communication. Each round
shuffles the nodes, cuts them into subgroups of ``k + 1`` consecutive nodes and every subgroup
averages exactly.

* :func:`partite_match` -- the family, registered as ``"partite_match"`` (a spec:
  ``"partite_match:n=15,k=2"``).

Its second moments are known exactly (:func:`topofl.spectral.expected_mixing`): every round
is the orthogonal projection onto the vectors that are constant on each group, so
$\mathbb{E}[W^\top W] = \mathbb{E}[W]$, and the expected one-round contraction of a
disagreement vector is $(\lceil n/(k+1) \rceil - 1)/(n - 1)$.

References
----------
.. [1] K. Niwa, G. Zhang, Y. Takezawa, W. B. Kleijn, "Revisiting 1-peer exponential graph for
   enhancing decentralized learning efficiency", NeurIPS 2025: Sec. 5.1 (Test 1), Table 2
   and Appendix G, graph (C4).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import scipy.sparse as sp

from topofl._utils.rng import Seed, as_seed_sequence, generator_at
from topofl._utils.validation import check_int
from topofl.graph import TimeVarying, Topology
from topofl.graph.checks import check_w_size
from topofl.topologies._registry import GraphFamily, Param, register

__all__ = ["partite_match"]


def _round_matrix(perm: np.ndarray, k: int) -> sp.csr_array:
    """``W`` of the round whose shuffled order is ``perm``: every group averaged exactly."""
    n, g = perm.size, k + 1
    m = n // g
    full = perm[: m * g].reshape(m, g)
    rest = perm[m * g:]
    rows = np.concatenate([np.repeat(full, g, axis=1).ravel(), np.repeat(rest, rest.size)])
    cols = np.concatenate([np.tile(full, (1, g)).ravel(), np.tile(rest, rest.size)])
    vals = np.concatenate([np.full(m * g * g, 1.0 / g),
                           np.full(rest.size * rest.size, 1.0 / max(rest.size, 1))])
    return sp.csr_array((vals, (rows, cols)), shape=(n, n))


def partite_match(n: int, k: int = 1, *, seed: Seed) -> TimeVarying:
    r"""The (k+1)-partite random match graph: random groups of ``k + 1`` average each round.

    The baseline (C4) of the null-cascade paper [1]_ (Appendix G): at round ``t``, i) the nodes
    are permuted uniformly at random (``generator_at(seed, t).permutation(n)``), ii) the
    permuted order is cut into as many subgroups of ``k + 1`` consecutive nodes as possible,
    and iii) every subgroup averages its members' parameters exactly:
    ``W[i, j] = 1/(k+1)`` for ``i, j`` in the same subgroup (``i = j`` included), 0 otherwise.

    **The remainder.** When ``k + 1`` does not divide ``n``, the paper says only that the
    subgroups "consisted of as many (k+1) nodes as possible"; here the ``r = n mod (k+1)``
    nodes left over form one smaller subgroup that averages among itself (weights ``1/r``;
    a single left-over node keeps its model, ``W[i, i] = 1``).

    **Relation to random_matching.** ``k = 1`` is :func:`random_matching` exactly: the same
    permutation draw, the same pairs of consecutive nodes and, for odd ``n``, the same node
    left out; ``partite_match(n, 1, seed=s).at(t).W`` equals
    ``random_matching(n, seed=s).at(t).W`` entry for entry.

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 2``.
    k : int, default 1
        Peers per node and round (subgroups of ``k + 1`` nodes), ``1 <= k <= n - 1``; the
        paper's Test 1 uses ``k = 2``. ``k = n - 1`` is one group: the exact average every
        round.
    seed : int or numpy.random.Generator
        Keyword-only. Round ``t`` is drawn from ``generator_at(seed, t)``: it depends on
        ``(seed, t)`` only. A Generator is consumed once, here.

    Returns
    -------
    TimeVarying
        Not periodic (the paper's "no consistent periodic interval"); ``params`` ``{"n", "k",
        "seed"}``; ``at(t).weights == "metropolis"`` (on disjoint cliques the Metropolis
        weights are exactly these).

    Raises
    ------
    TypeError
        If ``n`` or ``k`` is not an int (``bool`` included) or ``seed`` is missing.
    ValueError
        If ``n < 2`` or ``k`` is not in ``[1, n - 1]``.

    See Also
    --------
    random_matching : the case ``k = 1``.
    k_peer_exponential, null_cascade, base_graph : the paper's other graphs with ``k`` peers.

    Notes
    -----
    Every ``W(t)`` is symmetric, doubly stochastic and idempotent (the orthogonal projection
    onto vectors constant on each group), so $\mathbb{E}[W^\top W] = \mathbb{E}[W]$. Its law is
    invariant under relabelling the nodes, so $\mathbb{E}[W]$ has one value on the diagonal,
    $c = \mathbb{E}\sum_j W_{ij}^2 = G/n$ with $G = \lceil n/(k+1) \rceil$ groups, and one off
    it, $(1 - c)/(n - 1)$; when ``(k+1) | n`` these are $1/(k+1)$ and $k/((k+1)(n-1))$ (a node
    shares its group with a given other node with probability $k/(n-1)$). A disagreement
    vector $x \perp \mathbf 1$ contracts in expectation by
    $\beta = c - (1-c)/(n-1) = (G - 1)/(n - 1)$ per round, so the expected consensus error
    after ``t`` rounds is $\beta^t$ times the initial one
    (:func:`topofl.spectral.expected_mixing`). A single round is disconnected unless
    ``k = n - 1``; a window of ``O(log n)`` rounds is connected with high probability. Each
    node sends ``k`` messages a round (fewer in the remainder group); a round costs
    $O(n k)$.

    References
    ----------
    .. [1] K. Niwa, G. Zhang, Y. Takezawa, W. B. Kleijn, "Revisiting 1-peer exponential graph
       for enhancing decentralized learning efficiency", NeurIPS 2025: Sec. 5.1 (Test 1,
       graph (C4)), Table 2 and Appendix G ("(k+1)-partite random match graph").

    Examples
    --------
    >>> tv = tf.topologies.partite_match(7, 2, seed=0)
    >>> g = tv.at(0)
    >>> g.is_doubly_stochastic, g.is_symmetric, g.weights
    (True, True, 'metropolis')
    >>> sorted(np.unique(np.round(g.W.data, 4)).tolist())  # two groups of 3, one left over
    [0.3333, 1.0]
    >>> g.in_degree.tolist().count(2), g.in_degree.tolist().count(0)
    (6, 1)
    >>> m = tf.spectral.expected_mixing(tv)
    >>> round(m.consensus_contraction, 6)  # (ceil(7/3) - 1) / 6
    0.333333
    >>> same = tf.topologies.random_matching(9, seed=3).at(4).W
    >>> bool((tf.topologies.partite_match(9, 1, seed=3).at(4).W != same).nnz == 0)
    True
    """
    n = check_int(n, "n", low=2)
    k = check_int(k, "k", low=1, high=n - 1)
    check_w_size(n, n * k, f"partite_match(n={n}, k={k}) (one round)")
    root = as_seed_sequence(seed)
    seed_param = int(seed) if isinstance(seed, numbers.Integral) else None
    params: dict[str, Any] = {"n": n, "k": k, "seed": seed_param}

    def at(t: int) -> Topology:
        W = _round_matrix(generator_at(root, t).permutation(n), k)
        top = Topology.from_matrix(W, name="partite_match", params={**params, "round": t})
        return top.replace(weights="metropolis")

    return TimeVarying(n, at, name="partite_match", params=params)


def _example(n: int, rng: np.random.Generator) -> dict[str, Any] | None:
    """``n >= 2`` nodes and ``k`` drawn in ``[1, min(4, n - 1)]``."""
    return None if n < 2 else {"n": n, "k": int(rng.integers(1, min(4, n - 1) + 1))}


register(GraphFamily(
    "partite_match", partite_match,
    (Param("n", int, "number of nodes", low=2),
     Param("k", int, "peers per node and round (groups of k+1)", low=1, high="n-1")),
    _example,
    random=True, time_varying=True, stochastic="doubly", undirected=True,
    description="(k+1)-partite random match (Niwa et al. 2025, baseline C4): a fresh random "
    "partition into groups of k+1 per round (the n mod (k+1) left over form a smaller group), "
    "each group averaged exactly; k=1 is random_matching"))
