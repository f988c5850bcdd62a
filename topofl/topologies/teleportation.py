r"""Teleportation (Takezawa and Stich, ICLR 2025): ``k`` active nodes a round, the rest wait.

* :func:`teleportation` -- every round ``k`` of the ``n`` nodes, drawn uniformly without
  replacement, are active and gossip on a fresh graph among themselves (a ring in a random
  order, the complete graph, or a seeded random regular graph of degree about ``log2 k`` in a
  random order); every other node keeps its model (its row of ``W`` is ``e_i``). Pure in
  ``(seed, t)``.

How this differs from the paper
-------------------------------
In Teleportation [1]_ the *models* move: the ``k`` active nodes of round ``t`` fetch the ``k``
models of the active nodes of round ``t - 1`` (slot ``s`` of one sample hands its model to slot
``s`` of the next; the sacs-epfl ``decentralized-learning-simulator`` does exactly this), train
on their own data and gossip on a fixed topology over the ``k`` slots. Only ``k`` models exist.
A mixing matrix on the ``n`` nodes cannot say "fetch" and stay doubly stochastic with the
waiting nodes' rows ``e_i``, so this family is the node-level reading that topofl's engine can
run: models stay on their nodes, the active ones mix on a graph among themselves, the others
keep their last model. The fresh random ring order plays the role of the paper's random
assignment of models to the slots of a fixed graph.

The graph among the active nodes
--------------------------------
Which graph the paper's active nodes gossip on is not known here: its full text is not
reachable from this project (its abstract says only that they gossip on a small topology
among themselves). topofl offers three: ``"ring"`` (the default, which the committed results
use), ``"complete"``, and ``"random_regular"``, the sacs-epfl simulator's choice made
reproducible. The simulator draws one ``networkx.random_regular_graph(log2 k, k)`` over the
slots per run, unseeded, and requires ``k`` to be a power of 2; such a draw can be
disconnected (at ``k = 8``, degree 3, for at least one of 20 seeds), and then the slots never
reach consensus. Here the slot graph is drawn once from the run's seed and is connected by
construction (:func:`teleportation_slot_graph`).

The paper's algorithm itself is the registered algorithm ``teleport``
(:mod:`topofl.algorithms.teleport`): its ``k`` models live in the rows of the round's active
nodes, and its communication is a row-stochastic map (this family's round matrix, then the
fetch into the next round's active rows) that the engine's mixer applies; both draw the
active nodes with :func:`teleportation_active`.

References
----------
.. [1] Y. Takezawa, S. U. Stich, "Scalable decentralized learning with teleportation",
   ICLR 2025 (arXiv:2501.15259).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import scipy.sparse as sp

from topofl._utils.rng import Seed, as_seed_sequence, generator_at
from topofl._utils.validation import check_choice, check_int, check_memory
from topofl.graph import TimeVarying, Topology
from topofl.graph.checks import check_w_size
from topofl.topologies._registry import GraphFamily, Param, register

__all__ = ["teleportation", "teleportation_active", "teleportation_slot_graph",
           "teleportation_slot_degree"]

_GRAPHS = ("ring", "complete", "random_regular")
# The graphs the registry's example draws from: the snapshot of every family
# (topofl.figures.snapshot)
# builds its member from this draw, so it stays the one it was before "random_regular".
_EXAMPLE_GRAPHS = ("ring", "complete")


def teleportation_slot_degree(k: int) -> int:
    """The degree of ``graph="random_regular"`` over ``k`` slots: about ``log2 k``.

    ``d = max(2, floor(log2 k))``, plus one when ``k * d`` is odd (no ``d``-regular graph on
    ``k`` nodes exists then); ``k - 1`` (the complete graph) for ``k <= 3``. For ``k`` a power
    of 2 (the only sizes the sacs-epfl simulator accepts) it is ``log2 k``, the simulator's
    degree, from ``k = 4`` on.

    Examples
    --------
    >>> from topofl.topologies import teleportation_slot_degree
    >>> [teleportation_slot_degree(k) for k in (1, 2, 3, 4, 8, 9, 16, 64, 100, 256)]
    [0, 1, 2, 2, 3, 4, 4, 6, 6, 8]
    """
    k = check_int(k, "k", low=1)
    if k <= 3:
        return k - 1
    d = max(2, k.bit_length() - 1)
    return d + 1 if (k * d) % 2 else d


def slot_pairs(root: np.random.SeedSequence, k: int) -> np.ndarray:
    """``(2, m)`` int64: the edges ``s < r`` of the random regular slot graph drawn from
    ``root`` (:func:`teleportation_slot_graph`)."""
    d = teleportation_slot_degree(k)
    if k <= 3:  # the complete graph: nothing to draw
        s, r = np.triu_indices(k, 1)
        return np.stack([s, r]).astype(np.int64)
    from topofl.topologies.random import random_regular  # the family, connected by rejection

    W = random_regular(k, d, seed=generator_at(root, k, d)).W
    upper = sp.triu(W, k=1).tocoo()
    order = np.lexsort((upper.col, upper.row))
    return np.stack([upper.row[order], upper.col[order]]).astype(np.int64)


def teleportation_slot_graph(k: int, *, seed: Seed) -> np.ndarray:
    r"""The random regular graph over Teleportation's ``k`` slots (``graph="random_regular"``).

    Drawn once per schedule (or per run of the ``teleport`` algorithm, from its
    ``sample_seed``): ``topofl.topologies.random_regular(k, d, seed=generator_at(seed, k, d))``
    with ``d = teleportation_slot_degree(k)`` (about ``log2 k``), a uniformly random
    *connected* ``d``-regular graph -- connected by construction: for ``d = 2`` a random Hamiltonian
    cycle, for ``d >= 3`` a draw of networkx's ``random_regular_graph`` redrawn while it is
    disconnected (rejection, so the law is uniform over the connected ones; a disconnected
    draw is rare and the cap of 100 draws is never reached in the tests' thousands of
    graphs). For ``k <= 3`` it is the complete graph. The stream ``(seed, k, d)`` has two
    indices, so it is independent of every round's draw of the active nodes (one index,
    ``t``).

    Parameters
    ----------
    k : int
        Number of slots (active nodes per round), ``k >= 1``.
    seed : int or numpy.random.Generator
        Keyword-only: the schedule's ``seed`` (the ``teleport`` algorithm's ``sample_seed``).

    Returns
    -------
    ndarray of int64, shape (2, k * d / 2)
        The edges ``(s, r)`` with ``s < r``, sorted.

    Raises
    ------
    TypeError, ValueError
        If ``k < 1`` or ``seed`` is missing.

    Examples
    --------
    >>> e = tf.topologies.teleportation_slot_graph(8, seed=0)
    >>> e.shape, np.bincount(e.ravel(), minlength=8).tolist()  # 3-regular
    ((2, 12), [3, 3, 3, 3, 3, 3, 3, 3])
    >>> bool((e == tf.topologies.teleportation_slot_graph(8, seed=0)).all())
    True
    """
    k = check_int(k, "k", low=1)
    return slot_pairs(as_seed_sequence(seed), k)


def _active_weight(k: int, graph: str) -> float:
    """``W[i, j]`` between neighbouring active nodes, and an active node's self-weight:
    Metropolis on a ring (``1/3`` for ``k >= 3``, ``1/2`` for a pair, ``1`` alone), ``1/k`` on
    the complete graph, ``1/(d + 1)`` on the ``d``-regular slot graph (Metropolis = uniform)."""
    if graph == "random_regular":
        return 1.0 / (teleportation_slot_degree(k) + 1)
    return 1.0 / k if graph == "complete" else 1.0 / min(k, 3)


def active_round_matrix(n: int, active: np.ndarray, graph: str,
                  pairs: np.ndarray | None = None) -> sp.csr_array:
    """``W`` of one round: the active nodes (``active`` in slot order) mix, the others keep.

    ``pairs``: the slot graph's edges (:func:`slot_pairs`), needed for ``"random_regular"``.
    """
    k = active.size
    w = _active_weight(k, graph)
    idle = np.setdiff1d(np.arange(n), active, assume_unique=True)
    if graph == "random_regular" and k > 3:
        if pairs is None:
            raise ValueError("graph='random_regular' needs the slot graph's edges (pairs)")
        s, r = pairs
        rows = np.concatenate([active, active[s], active[r]])
        cols = np.concatenate([active, active[r], active[s]])
        vals = np.full(rows.size, w)
    elif graph in ("complete", "random_regular") or k <= 3:  # complete among the active
        # (a ring, or a regular graph, of <= 3 nodes is)
        rows = np.repeat(active, k)
        cols = np.tile(active, k)
        vals = np.full(rows.size, w)
    else:
        nxt = np.roll(active, -1)
        rows = np.concatenate([active, active, nxt])
        cols = np.concatenate([active, nxt, active])
        vals = np.full(rows.size, w)
    rows = np.concatenate([rows, idle])
    cols = np.concatenate([cols, idle])
    vals = np.concatenate([vals, np.ones(idle.size)])
    W = sp.coo_array((vals, (rows, cols)), shape=(n, n)).tocsr()
    W.sum_duplicates()
    W.sort_indices()
    return W


def draw_active(root: np.random.SeedSequence, n: int, k: int, t: int) -> np.ndarray:
    """Round ``t``'s ordered active nodes: ``choice(n, k, replace=False)`` of the round's
    stream (the one draw of the family and of the ``teleport`` algorithm)."""
    out: np.ndarray = generator_at(root, t).choice(n, size=k, replace=False)
    return out


def teleportation_active(n: int, k: int, t: int, *, seed: Seed) -> np.ndarray:
    """The ordered active nodes ``(a_0, ..., a_{k-1})`` of round ``t``: node ``a_s`` holds slot
    ``s`` (the same draw as ``teleportation(n, k, seed=seed).at(t).params["active"]``).

    Parameters
    ----------
    n, k : int
        Nodes and active nodes per round, ``1 <= k <= n``.
    t : int
        Round, ``t >= 0``.
    seed : int or numpy.random.Generator
        Keyword-only.

    Returns
    -------
    ndarray of int64, shape (k,)
        Distinct node ids, in slot order.

    Raises
    ------
    TypeError, ValueError
        If ``n`` is not in ``[1, 2^63 - 1]`` (node ids are int64), ``k`` not in ``[1, n]``
        or ``t < 0``.

    Examples
    --------
    >>> a = tf.topologies.teleportation_active(10, 4, 3, seed=0)
    >>> tuple(a.tolist()) == tf.topologies.teleportation(10, 4, seed=0).at(3).params["active"]
    True
    """
    n = check_int(n, "n", low=1, high=np.iinfo(np.int64).max)  # the ids are int64
    k = check_int(k, "k", low=1, high=n)
    t = check_int(t, "t", low=0)
    # numpy draws k of n without replacement by Floyd's algorithm (O(k)) or, for k > n / 50
    # of more than 10,000 nodes, by shuffling the tail of a full arange(n) (O(n))
    check_memory(8.0 * n if n > 10_000 and k > n // 50 else 24.0 * k,
                 f"teleportation_active(n={n}, k={k})")
    return draw_active(as_seed_sequence(seed), n, k, t).astype(np.int64)


def teleportation(n: int, k: int, *, seed: Seed, graph: str = "ring") -> TimeVarying:
    r"""Teleportation's schedule: ``k`` random active nodes per round gossip among themselves.

    Round ``t`` draws an ordered ``k``-subset ``a_0, ..., a_{k-1}`` of the nodes uniformly with
    ``generator_at(seed, t)`` (``choice(n, k, replace=False)``: a uniform subset in a uniform
    order). Then

    * ``graph="ring"``: ``a_s`` and ``a_{s+1 mod k}`` are neighbours, Metropolis weights:
      ``W[a_s, a_s] = W[a_s, a_{s±1}] = 1/3`` for ``k >= 3``; a pair averages with ``1/2``
      (``k = 2``); a single active node keeps its model (``k = 1``).
    * ``graph="complete"``: the active nodes average exactly, ``W[a_s, a_r] = 1/k``.
    * ``graph="random_regular"``: ``a_s`` and ``a_r`` are neighbours when slots ``s`` and ``r``
      are in the schedule's slot graph (:func:`teleportation_slot_graph`: one connected random
      ``d``-regular graph over the ``k`` slots, ``d = teleportation_slot_degree(k)``, about
      ``log2 k``, drawn once from ``seed``), weights ``1/(d + 1)`` (Metropolis on a regular
      graph). The slots' nodes are drawn afresh every round, so each round's graph among the
      active nodes is the slot graph relabelled at random.
    * every other node waits: ``W[i, i] = 1`` (row and column ``e_i``).

    Every ``W(t)`` is symmetric and doubly stochastic; exactly ``k`` rows differ from the
    identity's (for ``k >= 2``). The round's active nodes, in ring order, are
    ``at(t).params["active"]``. See the module docstring for how this node-level schedule
    relates to the paper's teleporting models.

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 2``.
    k : int
        Active nodes per round, ``1 <= k <= n``.
    seed : int or numpy.random.Generator
        Keyword-only.
    graph : {"ring", "complete", "random_regular"}, default "ring"
        The graph among the active nodes. Which one the paper uses is not known here (its
        full text is not reachable from this project); the sacs-epfl simulator draws an
        unseeded random ``log2(k)``-regular graph, which can be disconnected, and
        ``"random_regular"`` is that graph seeded and connected. The default stays
        ``"ring"``: committed results use it.

    Returns
    -------
    TimeVarying
        Not periodic; ``at(t)`` has ``name="teleportation"`` and ``weights="metropolis"``
        (which reproduces ``W`` from the round's graph).

    Raises
    ------
    TypeError, ValueError
        If ``n < 2``, ``k`` is not in ``[1, n]``, ``graph`` is unknown or ``seed`` is missing.

    Notes
    -----
    The law of ``W(t)`` is invariant under relabelling the nodes, and ``W`` is doubly
    stochastic, so its second moments are two numbers
    (:func:`~topofl.spectral.expected_mixing`): $c = \mathbb{E}\sum_j W_{ij}^2 =
    \frac{k}{n}\, w + (1 - \frac{k}{n})$ with ``w`` the active weight above (an active row
    has ``1/w`` entries ``w``; the slot graph of ``"random_regular"`` is regular, so this
    holds for it too, given the graph), and $\mathbb{E}\sum_m W_{im}W_{jm} = (1 - c)/(n - 1)$ for
    $i \ne j$. The expected one-round contraction of a disagreement vector is
    $c - (1-c)/(n-1)$.

    References
    ----------
    .. [1] Y. Takezawa, S. U. Stich, "Scalable decentralized learning with teleportation",
       ICLR 2025.

    Examples
    --------
    >>> tv = tf.topologies.teleportation(10, 4, seed=0)
    >>> g = tv.at(0)
    >>> len(g.params["active"]), g.num_edges, g.is_doubly_stochastic, g.is_undirected
    (4, 4, True, True)
    >>> waiting = sorted(set(range(10)) - set(g.params["active"]))
    >>> all(g.W[[i]].indices.tolist() == [i] for i in waiting)
    True
    >>> m = tf.spectral.expected_mixing(tv)
    >>> round(m.row_self, 12)  # 4/10 * 1/3 + 6/10
    0.733333333333
    """
    n = check_int(n, "n", low=2)
    k = check_int(k, "k", low=1, high=n)
    check_choice(graph, "graph", _GRAPHS)
    check_w_size(n, n + (k * (k - 1) if graph == "complete" else
                         k * teleportation_slot_degree(k) if graph == "random_regular" else 2 * k),
                 f"teleportation(n={n}, k={k}, graph={graph!r}) (one round)")
    root = as_seed_sequence(seed)
    pairs = slot_pairs(root, k) if graph == "random_regular" else None
    seed_param = int(seed) if isinstance(seed, numbers.Integral) else None
    params: dict[str, Any] = {"n": n, "k": k, "graph": graph, "seed": seed_param}

    def at(t: int) -> Topology:
        active = draw_active(root, n, k, t)
        W = active_round_matrix(n, active, graph, pairs)
        top = Topology.from_matrix(
            W, name="teleportation",
            params={**params, "round": t, "active": tuple(int(a) for a in active)},
        )
        return top.replace(weights="metropolis")

    return TimeVarying(n, at, name="teleportation", params=params)


def _example(n: int, rng: np.random.Generator) -> dict[str, Any] | None:
    # At least half the nodes active, so that the union of a few dozen rounds is connected
    # with overwhelming probability (the contract tests check it).
    if n < 2:
        return None
    return {"n": n, "k": int(rng.integers((n + 1) // 2, n + 1)) if n > 2 else 2,
            "graph": str(rng.choice(_EXAMPLE_GRAPHS))}


register(GraphFamily(
    "teleportation", teleportation,
    (Param("n", int, "number of nodes", low=2),
     Param("k", int, "active nodes per round", low=1, high="n"),
     Param("graph", str, "graph among the active nodes", choices=_GRAPHS)),
    _example,
    random=True, time_varying=True, stochastic="doubly", undirected=True,
    description="Teleportation (Takezawa & Stich 2025): k random active nodes per round gossip "
    "on a random ring (or complete graph, or seeded random ~log2(k)-regular graph) among "
    "them; the others keep their model"))
