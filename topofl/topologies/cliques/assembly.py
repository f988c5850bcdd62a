"""The whole D-Cliques construction: Greedy Swap, then the inter-clique topology."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import networkx as nx
import numpy as np

from topofl._utils.rng import Seed, as_generator
from topofl._utils.validation import check_choice, check_int, check_real
from topofl.graph import Topology
from topofl.topologies.cliques._input import (
    INTER_CLIQUE,
    _check_clique_size,
    _check_removal,
    _clique_sizes,
    _fingerprint,
    _label_matrix,
    _normalised,
    _seed_param,
)
from topofl.topologies.cliques.clique_skew import _skews
from topofl.topologies.cliques.inter import _INTER_DOC, _build, _check_small_world
from topofl.topologies.cliques.privacy import _private_histograms
from topofl.topologies.cliques.swap import _greedy_swap, _resolve_steps


def _check_epsilon(epsilon: float | None, arr: np.ndarray) -> float | None:
    """``epsilon`` checked (``> 0``, or ``None``); with one, the ``(n, L)`` label matrix ``arr``
    must hold counts (the noise's scale reads each node's sample count)."""
    eps = None if epsilon is None else check_real(epsilon, "epsilon", low=0, low_open=True)
    if eps is not None:
        frac = np.flatnonzero(np.any(arr != np.round(arr), axis=1))
        if frac.size:
            raise ValueError(
                "epsilon needs per-node class counts (m_i, the sample count, is a row's sum), "
                f"found non-integer values at node {int(frac[0])}; pass counts, not proportions"
            )
    return eps


def dcliques(
    label_distributions: Any,
    clique_size: int = 10,
    *,
    inter: str = "fully_connected",
    c: int = 2,
    steps: int | None = None,
    remove_intra_edges: int = 0,
    epsilon: float | None = None,
    seed: Seed,
    weights: str | Callable[[nx.Graph], Any] = "metropolis",
) -> Topology:
    r"""D-Cliques: Greedy Swap cliques, complete inside, joined by a sparse inter-clique topology.

    Parameters
    ----------
    label_distributions : array_like, shape (n, L)
        Per-node class counts or proportions (rows normalised internally; not modified). With
        ``epsilon`` they must be counts.
    clique_size : int, default 10
        Largest clique size ``M`` in ``[2, n]``: ``ceil(n / M)`` cliques whose sizes differ by at
        most one (cliques ``0..r-1`` get one node more, ``r = n mod ceil(n / M)``).
{inter}
    steps : int, optional
        Greedy Swap steps (``0``: random cliques, the paper's baseline). By default
        :func:`~topofl.topologies.cliques.auto_steps`: the paper's 1000 for up to 14 cliques,
        ten draws of every pair of cliques on average beyond; Greedy Swap stops early, with
        the same result, once every clique has skew 0 (see :func:`greedy_swap`).
    epsilon : float, optional
        Differential privacy level $\varepsilon > 0$ (Remark 2): Greedy Swap then sees, for each
        node ``i``, its normalised histogram plus independent centred Laplace noise of standard
        deviation $\sigma = 1 / (m_i \varepsilon)$ on every entry, $m_i$ its sample count (the
        row sum). The noisy histograms serve the construction only; ``params["skew"]`` is the
        true skew of the cliques.
    seed : int or numpy.random.Generator
        Keyword-only; the same seed gives the same topology.
    weights : str or callable, default ``"metropolis"``
        Weight scheme (:mod:`topofl.mixing`); ``"metropolis"`` is eq. (2) of the paper.

    Returns
    -------
    Topology
        Named ``"dcliques"``, with ``groups`` the cliques and JSON-serialisable ``params``:
        ``n``, ``num_classes``, ``labels_sha1`` (a fingerprint of ``label_distributions``),
        ``clique_size``, ``num_cliques``, ``inter``, ``c``, ``steps``, ``remove_intra_edges``,
        ``epsilon``, ``seed`` (``None`` for a Generator), and the final mean and maximum clique
        skew ``skew`` and ``max_skew``.

    Raises
    ------
    ValueError
        For a bad ``label_distributions`` (non-2-D, negative, non-finite, a zero row),
        ``clique_size`` outside ``[2, n]``, an unknown ``inter``, ``c < 1`` (or a small-world
        ``c`` whose links overrun ``TOPOFL_MAX_SECONDS`` or the memory), negative ``steps``,
        ``epsilon <= 0`` or non-integer counts with ``epsilon``, and a ``remove_intra_edges``
        that is negative or too large for the smallest clique.
    NotConnectedError
        If no connected way to remove the intra-clique edges was found.

    Notes
    -----
    One generator, made from ``seed``, is used in this order: the Laplace noise (only with
    ``epsilon``), Greedy Swap (so that without ``epsilon`` the cliques are exactly
    ``greedy_swap(label_distributions, clique_size, steps=steps, seed=seed).cliques``), the
    inter-clique tie-breaks, the removed edges.

    Privacy caveat: the noise follows the paper's Remark 2. Changing one example of node ``i``
    moves $1/m_i$ of mass between two bins (L1 sensitivity $2/m_i$), so the textbook Laplace
    mechanism for $\varepsilon$-DP would use scale $2/(m_i\varepsilon)$, i.e. a standard
    deviation $2\sqrt{2}$ times larger than the paper's.

    Examples
    --------
    >>> labels = np.eye(10)[np.arange(100) % 10]          # 100 nodes, one class each
    >>> t = tf.topologies.dcliques(labels, clique_size=10, inter="small_world", seed=0)
    >>> t.n, len(t.groups), t.params["skew"], t.is_doubly_stochastic
    (100, 10, 0.0, True)
    >>> [t.params[k] for k in ("inter", "num_cliques", "steps", "seed")]
    ['small_world', 10, 1000, 0]

    Fig. 6 of the paper: two cliques of ten nodes, one class per node, one inter-clique edge. A
    node of an inter-clique edge has degree 10, so all its weights are 1/11:

    >>> t = tf.topologies.dcliques(np.eye(10)[np.arange(20) % 10], inter="ring", seed=0)
    >>> t.num_edges, sorted(set(t.in_degree.tolist()))
    (91, [9, 10])
    >>> b = int(np.flatnonzero(t.in_degree == 10)[0])
    >>> sorted(set(np.round(t.W[[b], :].data * 11, 12).tolist()))
    [1.0]
    """
    arr = _label_matrix(label_distributions)
    n = arr.shape[0]
    m = _check_clique_size(clique_size, n)
    inter = check_choice(inter, "inter", INTER_CLIQUE)
    c = check_int(c, "c", low=1)
    _check_small_world(inter, len(_clique_sizes(n, m)), c, "dcliques")
    steps = _resolve_steps(steps, n, m)
    remove = _check_removal(remove_intra_edges, _clique_sizes(n, m))
    eps = _check_epsilon(epsilon, arr)
    rng = as_generator(seed)
    P = _normalised(arr)
    seen = P if eps is None else _private_histograms(arr, eps, rng)
    res = _greedy_swap(seen, m, steps, rng)
    parts = [np.asarray(cl, dtype=np.int64) for cl in res.cliques]
    true_skews = _skews(P, P.mean(axis=0), parts)
    G = _build(parts, n, inter, c, remove, rng)
    params = {
        "n": n, "num_classes": int(arr.shape[1]),
        "labels_sha1": _fingerprint(arr),
        "clique_size": m,
        "num_cliques": len(parts),
        "inter": inter, "c": c,
        "steps": steps,
        "remove_intra_edges": remove,
        "epsilon": eps,
        "seed": _seed_param(seed),
        "skew": float(true_skews.mean()),
        "max_skew": float(true_skews.max()),
    }
    return Topology.from_networkx(G, weights, name="dcliques", params=params, groups=res.cliques)


dcliques.__doc__ = (dcliques.__doc__ or "").replace("{inter}", _INTER_DOC)
