r"""Random time-varying graphs: the directed and undirected graphs of DFedPGP, random matchings.

Every constructor returns a :class:`~topofl.TimeVarying` whose round ``t`` is drawn from the
generator ``topofl._utils.rng.generator_at(seed, t)``: it depends only on ``(seed, t)``, never on
which rounds were asked for before, so a resumed run sees the same graphs as an uninterrupted one.

* :func:`random_directed` -- each round every client independently picks ``k`` distinct random
  in-neighbours (``mode="pull"``, row-stochastic uniform weights: the rule of DFedPGP's
  experiments, Appendix B) or out-neighbours (``mode="push"``, column-stochastic push-sum
  weights, the setting of its Algorithm 1 and of SGP).
* :func:`random_undirected` -- each round a uniformly random ``k``-regular undirected graph with
  weights ``1/(k+1)`` (symmetric, doubly stochastic): the time-varying undirected graph of
  DFedPGP's DFedAvgM / DFedAvgM-P baselines, at the same ``k`` messages per client as
  :func:`random_directed`.
* :func:`random_matching` -- each round a uniformly random (near-)perfect matching, every pair
  averaging with weights 1/2 (doubly stochastic, symmetric).

References
----------
.. [1] Y. Liu et al., "Decentralized directed collaboration for personalized federated learning"
   (DFedPGP), CVPR 2024: Algorithm 1, Assumption 1 and Appendix B.
.. [2] M. Assran, N. Loizou, N. Ballas, M. Rabbat, "Stochastic gradient push for distributed deep
   learning", ICML 2019.
"""

from __future__ import annotations

import numbers
from typing import Any

import networkx as nx
import numpy as np
import scipy.sparse as sp

from topofl._utils.rng import Seed, as_seed_sequence, generator_at
from topofl._utils.validation import check_choice, check_graph_size, check_int
from topofl.graph import TimeVarying, Topology
from topofl.graph.checks import check_w_size
from topofl.topologies._registry import GraphFamily, Param, register

__all__ = ["random_directed", "random_directed_push", "random_matching", "random_undirected"]

# Rows of at most this many candidates are drawn with one vectorised argpartition.
_DENSE_DRAW_MAX = 1 << 22


def _seed_param(seed: Seed) -> int | None:
    return int(seed) if isinstance(seed, numbers.Integral) else None


def _distinct_others(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """``(n, k)`` int array: row ``i`` holds ``k`` distinct uniform picks from ``[0, n) - {i}``.

    Every row is a uniform ``k``-subset, drawn by one of three exact methods: row-wise rejection
    (``k`` iid picks, redrawn until distinct; ``O(n k)`` expected when ``k^2 <= n``), the ``k``
    smallest of ``n - 1`` uniform keys (``O(n^2)``, for ``n <= 2048``), or numpy's
    ``choice(replace=False)`` per row.
    """
    if k * k <= n - 1:
        picks = rng.integers(0, n - 1, size=(n, k))
        while True:
            srt = np.sort(picks, axis=1)
            dup = np.flatnonzero(np.any(srt[:, 1:] == srt[:, :-1], axis=1))
            if dup.size == 0:
                break
            picks[dup] = rng.integers(0, n - 1, size=(dup.size, k))
    elif n * (n - 1) <= _DENSE_DRAW_MAX:
        # The k smallest of n - 1 iid uniform keys form a uniform k-subset.
        picks = np.argpartition(rng.random((n, n - 1)), k - 1, axis=1)[:, :k]
    else:
        picks = np.stack([rng.choice(n - 1, size=k, replace=False) for _ in range(n)])
    # Values in [0, n-1) skip the row's own index.
    picks = picks + (picks >= np.arange(n)[:, None])
    return picks.astype(np.int64)


def _round_topology(W: sp.csr_array, name: str, params: dict[str, Any], t: int,
                    weights: str) -> Topology:
    """Round ``t`` of a random schedule: ``W`` as a topology whose params add the round,
    recording the scheme of :mod:`topofl.mixing` that reproduces ``W`` from its graph."""
    top = Topology.from_matrix(W, name=name, params={**params, "round": t})
    return top.replace(weights=weights)


def random_directed(n: int, k: int, *, seed: Seed, mode: str = "pull") -> TimeVarying:
    r"""The time-varying directed graph of DFedPGP: ``k`` random neighbours per client and round.

    At every round ``t`` each client independently draws ``k`` distinct other clients:

    * ``mode="pull"``: they are its *in*-neighbours; it averages its own model and the ``k``
      pulled ones uniformly, ``W[i, j] = 1/(k+1)`` for ``j`` in ``N_in(i)`` and ``j = i``.
      Every row sums to 1 (row-stochastic, :func:`topofl.mixing.uniform`); columns do not, so
      plain gossip reaches a weighted consensus, not the average.
    * ``mode="push"``: they are its *out*-neighbours; it splits its mass (and push-sum weight)
      equally over itself and them, ``W[i, j] = 1/(k+1)`` for ``i`` in ``N_out(j)`` and ``i = j``.
      Every column sums to 1 (column-stochastic, :func:`topofl.mixing.push_sum`), as push-sum
      needs; de-biasing by the push-sum weights recovers the exact average.

    Parameters
    ----------
    n : int
        Number of clients, ``n >= 2``.
    k : int
        Neighbours drawn per client and round, ``1 <= k <= n - 1``.
    seed : int or numpy.random.Generator
        Keyword-only. Round ``t`` is drawn from ``generator_at(seed, t)``. A Generator is
        consumed once, here, to fix the root of the streams.
    mode : {"pull", "push"}, default "pull"

    Returns
    -------
    TimeVarying
        Not periodic (``period=None``); ``at(t).weights`` is ``"uniform"`` (pull) or
        ``"push_sum"`` (push).

    Raises
    ------
    TypeError, ValueError
        If ``n < 2``, ``k`` is not in ``[1, n - 1]`` or ``mode`` is unknown.

    Notes
    -----
    In a single round the graph need not be strongly connected (with ``k = 1`` it never is for
    ``n > 2``), but the union of a few rounds is with high probability: the sequence is
    ``B``-bounded strongly connected (Assumption 1 of DFedPGP) with a small ``B``, see
    :func:`topofl.spectral.b_connectivity`. Drawing a round costs ``O(n k)`` when
    ``k^2 <= n`` (``O(n^2)`` otherwise, for ``n <= 2048``).

    Examples
    --------
    >>> tv = tf.topologies.random_directed(6, 2, seed=0)
    >>> g = tv.at(3)
    >>> g.in_degree.tolist(), g.is_row_stochastic, g.weights
    ([2, 2, 2, 2, 2, 2], True, 'uniform')
    >>> bool((tv.at(3).W != tf.topologies.random_directed(6, 2, seed=0).at(3).W).nnz == 0)
    True
    >>> push = tf.topologies.random_directed(6, 2, seed=0, mode="push").at(0)
    >>> push.out_degree.tolist(), push.is_column_stochastic
    ([2, 2, 2, 2, 2, 2], True)
    """
    n = check_int(n, "n", low=2)
    k = check_int(k, "k", low=1, high=n - 1)
    check_choice(mode, "mode", ("pull", "push"))
    check_w_size(n, n * k, f"random_directed(n={n}, k={k}) (one round)")
    root = as_seed_sequence(seed)
    params: dict[str, Any] = {"n": n, "k": k, "mode": mode, "seed": _seed_param(seed)}
    weights = "uniform" if mode == "pull" else "push_sum"

    def at(t: int) -> Topology:
        picks = _distinct_others(generator_at(root, t), n, k)
        me = np.repeat(np.arange(n, dtype=np.int64), k)
        other = picks.ravel()
        # pull: W[i, pick] (i receives from its picks); push: W[pick, j] (j sends to its picks).
        rows, cols = (me, other) if mode == "pull" else (other, me)
        idx = np.arange(n, dtype=np.int64)
        W = sp.csr_array(
            (
                np.full(n * (k + 1), 1.0 / (k + 1)),
                (np.concatenate([rows, idx]), np.concatenate([cols, idx])),
            ),
            shape=(n, n),
        )
        return _round_topology(W, "random_directed", params, t, weights)

    return TimeVarying(n, at, name="random_directed", params=params)


def random_matching(n: int, *, seed: Seed) -> TimeVarying:
    r"""A uniformly random matching per round; matched pairs average with weights 1/2.

    Round ``t`` shuffles the nodes with ``generator_at(seed, t)`` and pairs consecutive ones;
    ``W(t)`` has ``W[i, i] = W[i, j] = W[j, j] = W[j, i] = 1/2`` on every pair. For odd ``n``
    the matching is maximum rather than perfect: one random node sits the round out
    (``W[i, i] = 1``). Every ``W(t)`` is symmetric and doubly stochastic and every node sends
    at most one message per round.

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 2``.
    seed : int or numpy.random.Generator
        Keyword-only.

    Returns
    -------
    TimeVarying
        Not periodic; ``at(t).weights == "metropolis"`` (on a matching the Metropolis weights
        are exactly 1/2).

    Notes
    -----
    A single round is disconnected for ``n > 2``; the union of ``O(log n)`` rounds is connected
    with high probability. Expected contraction per round: $\mathbb{E}[W^\top W] = W_{avg}$
    averages each pair with probability ``1/(n-1)``.

    Examples
    --------
    >>> tv = tf.topologies.random_matching(6, seed=1)
    >>> g = tv.at(0)
    >>> g.num_edges, g.is_doubly_stochastic, g.is_undirected
    (3, True, True)
    >>> tf.topologies.random_matching(5, seed=1).at(0).num_edges
    2
    """
    n = check_int(n, "n", low=2)
    check_w_size(n, n, f"random_matching(n={n}) (one round)")
    root = as_seed_sequence(seed)
    params: dict[str, Any] = {"n": n, "seed": _seed_param(seed)}

    def at(t: int) -> Topology:
        perm = generator_at(root, t).permutation(n)
        m = n // 2
        a, b = perm[0 : 2 * m : 2], perm[1 : 2 * m : 2]
        idle = perm[2 * m :]  # empty for even n, the one left-out node for odd n
        rows = np.concatenate([a, b, a, b, idle])
        cols = np.concatenate([b, a, a, b, idle])
        vals = np.concatenate([np.full(4 * m, 0.5), np.ones(idle.size)])
        W = sp.csr_array((vals, (rows, cols)), shape=(n, n))
        return _round_topology(W, "random_matching", params, t, "metropolis")

    return TimeVarying(n, at, name="random_matching", params=params)


def random_undirected(n: int, k: int, *, seed: Seed) -> TimeVarying:
    r"""A random ``k``-regular undirected graph per round, every weight ``1/(k+1)``.

    The undirected counterpart of :func:`random_directed` (DFedPGP's DFedAvgM and DFedAvgM-P
    baselines, whose clients exchange models with ``k`` neighbours per round both ways): round
    ``t`` is a ``k``-regular graph drawn with :func:`networkx.random_regular_graph` from
    ``generator_at(seed, t)``, and every client averages itself and its ``k`` neighbours
    uniformly, ``W[i, j] = 1/(k+1)`` for ``j`` in ``N(i) \cup \{i\}``. On a regular graph these
    are exactly the Metropolis weights, so ``W(t)`` is symmetric and doubly stochastic and plain
    gossip preserves the average. Each client sends ``k`` messages per round, as with
    :func:`random_directed` at the same ``k``.

    Parameters
    ----------
    n : int
        Number of clients, ``n >= 2``.
    k : int
        Neighbours of every client in every round, ``1 <= k <= n - 1`` with ``n * k`` even
        (a ``k``-regular graph on ``n`` nodes exists only then).
    seed : int or numpy.random.Generator
        Keyword-only. Round ``t`` is drawn from ``generator_at(seed, t)``.

    Returns
    -------
    TimeVarying
        Not periodic; ``at(t).weights == "metropolis"``.

    Raises
    ------
    TypeError, ValueError
        If ``n < 2``, ``k`` is not in ``[1, n - 1]`` or ``n * k`` is odd.

    Notes
    -----
    A single round need not be connected (``k = 1`` is a perfect matching, as in
    :func:`random_matching` for even ``n``); the union of a few rounds is connected with high
    probability. networkx's pairing algorithm draws a round in about ``O(n k^2)`` time.

    Examples
    --------
    >>> tv = tf.topologies.random_undirected(6, 2, seed=0)
    >>> g = tv.at(3)
    >>> g.in_degree.tolist(), g.is_doubly_stochastic, g.is_symmetric
    ([2, 2, 2, 2, 2, 2], True, True)
    >>> float(g.W[0, 0])
    0.3333333333333333
    >>> bool((tv.at(3).W != tf.topologies.random_undirected(6, 2, seed=0).at(3).W).nnz == 0)
    True
    """
    n = check_int(n, "n", low=2)
    k = check_int(k, "k", low=1, high=n - 1)
    if (n * k) % 2:
        raise ValueError(
            f"n * k must be even for a k-regular undirected graph, got n={n}, k={k}; "
            "use an even k or an even n"
        )
    check_graph_size(n, n * k, f"random_undirected(n={n}, k={k}) (one round)")
    root = as_seed_sequence(seed)
    params: dict[str, Any] = {"n": n, "k": k, "seed": _seed_param(seed)}

    def at(t: int) -> Topology:
        G = nx.random_regular_graph(k, n, seed=generator_at(root, t))
        e = np.asarray(list(G.edges()), dtype=np.int64).reshape(-1, 2)
        idx = np.arange(n, dtype=np.int64)
        rows = np.concatenate([e[:, 0], e[:, 1], idx])
        cols = np.concatenate([e[:, 1], e[:, 0], idx])
        W = sp.csr_array((np.full(rows.size, 1.0 / (k + 1)), (rows, cols)), shape=(n, n))
        return _round_topology(W, "random_undirected", params, t, "metropolis")

    return TimeVarying(n, at, name="random_undirected", params=params)


# ---------------------------------------------------------------------------- registry
def _rd_example(n: int, rng: np.random.Generator) -> dict[str, Any] | None:
    if n < 2:
        return None
    return {"n": n, "k": int(rng.integers(1, min(n - 1, 4) + 1))}


def random_directed_push(n: int, k: int, *, seed: Seed) -> TimeVarying:
    """The push-sum graph of DFedPGP: ``random_directed(n, k, seed=seed, mode="push")``.

    Each round every client pushes to ``k`` distinct random out-neighbours; ``W(t)`` is
    column-stochastic. A separate name so that the registry's ``random_directed_push`` family
    (column-stochastic) and ``random_directed`` family (pull, row-stochastic) each have one
    stochasticity.

    Examples
    --------
    >>> tv = tf.topologies.random_directed_push(5, 2, seed=3)
    >>> tv.at(0).is_column_stochastic, tv.params["mode"]
    (True, 'push')
    """
    return random_directed(n, k, seed=seed, mode="push")


def _random_directed_pull(n: int, k: int, *, seed: Seed, mode: str = "pull") -> TimeVarying:
    # Spec builder of the "random_directed" family, whose flags say row-stochastic.
    if mode != "pull":
        raise ValueError(
            f"the registry family 'random_directed' is the pull (row-stochastic) graph, got "
            f"mode={mode!r}; write 'random_directed_push:n=...,k=...' for the push-sum "
            "(column-stochastic) graph"
        )
    return random_directed(n, k, seed=seed, mode="pull")


_RD_PARAMS = (
    Param("n", int, "number of clients", low=2),
    Param("k", int, "random neighbours per client and round", low=1, high="n-1"),
)

register(GraphFamily(
    "random_directed", random_directed, _RD_PARAMS, _rd_example,
    random=True, time_varying=True, stochastic="row", undirected=False,
    description="each client pulls from k random in-neighbours per round (row-stochastic: "
    "DFedPGP's Appendix B pull form; the push-sum algorithms take random_directed_push)",
    from_spec=_random_directed_pull))
register(GraphFamily(
    "random_directed_push", random_directed_push, _RD_PARAMS, _rd_example,
    random=True, time_varying=True, stochastic="column", undirected=False,
    description="each client pushes to k random out-neighbours per round (column-stochastic: "
    "push-sum, the graph of DFedPGP's experiments, SGP and OSGP)"))
register(GraphFamily(
    "random_matching", random_matching, (Param("n", int, "number of nodes", low=2),),
    lambda n, rng: None if n < 2 else {"n": n},
    random=True, time_varying=True, stochastic="doubly", undirected=True,
    description="a random (near-)perfect matching per round, pairs average with weights 1/2"))


def _ru_example(n: int, rng: np.random.Generator) -> dict[str, Any] | None:
    if n < 2:
        return None
    ks = [k for k in range(1, min(n - 1, 4) + 1) if (n * k) % 2 == 0]
    return {"n": n, "k": int(rng.choice(ks))}


register(GraphFamily(
    "random_undirected", random_undirected,
    (Param("n", int, "number of clients", low=2),
     Param("k", int, "neighbours of every client per round (n*k even)", low=1, high="n-1")),
    _ru_example,
    random=True, time_varying=True, stochastic="doubly", undirected=True,
    description="DFedAvgM's graph: a random k-regular undirected graph per round, weights "
    "1/(k+1) (symmetric, doubly stochastic)"))
