r"""Epidemic Learning's randomized topologies: EL-Oracle and EL-Local (de Vos et al., NeurIPS 2023).

Every round each node sends its model to ``s`` other nodes and averages what it holds with
what it received, uniformly (the authors' ``decentralizepy`` runs EL with its
``PlainAverageSharing``: weight ``1/(received + 1)`` on itself and on every model received).

* :func:`el_oracle` -- an oracle draws a uniformly random ``s``-regular undirected graph each
  round: every node sends ``s`` models and receives ``s``, ``W[i, j] = 1/(s+1)`` on its
  neighbours and itself (symmetric, doubly stochastic). It is the graph of
  :func:`~topofl.topologies.random_undirected` with ``k = s`` (the same graphs for the same
  seed), under the paper's name.
* :func:`el_local` -- each node draws ``s`` distinct other nodes itself, without coordination
  (an ``s``-out graph); node ``i`` receives from a random number $K_i$ of nodes and
  ``W[i, j] = 1/(K_i + 1)`` on them and itself. Rows sum to 1 (every node outputs an average);
  columns do not, so the average of the models is preserved only in expectation.

Both send ``n s`` messages a round. Their exact expected mixing quantities (the second moments
of ``W`` over the schedule's distribution, the expected one-round consensus contraction
$\beta = \mathbb{E}\|Wx\|^2 / \|x\|^2$ for $x \perp \mathbf 1$ and the effective number of
neighbours) are given by :func:`topofl.spectral.expected_mixing`: for EL-Oracle
$\beta = (n - s - 1)/((s+1)(n-1))$; for EL-Local $\beta$ is slightly larger (a node that
receives few models averages fewer).

Round ``t`` is drawn from ``topofl._utils.rng.generator_at(seed, t)``: it depends only on
``(seed, t)``.

References
----------
.. [1] M. de Vos, S. Farhadkhani, R. Guerraoui, A.-M. Kermarrec, R. Pires, R. Sharma,
   "Epidemic learning: boosting decentralized learning with randomized communication",
   NeurIPS 2023.
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
from topofl.topologies.directed import _distinct_others, _round_topology, random_undirected

__all__ = ["el_local", "el_oracle"]


def _seed_param(seed: Seed) -> int | None:
    return int(seed) if isinstance(seed, numbers.Integral) else None


def _check_ns(n: Any, s: Any) -> tuple[int, int]:
    n = check_int(n, "n", low=2)
    s = check_int(s, "s", low=1, high=n - 1)
    return n, s


def el_oracle(n: int, s: int, *, seed: Seed) -> TimeVarying:
    r"""EL-Oracle: a uniformly random ``s``-regular graph every round, weights ``1/(s+1)``.

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 2``.
    s : int
        Models each node sends (and receives) per round, ``1 <= s <= n - 1`` with ``n * s``
        even (an ``s``-regular graph on ``n`` nodes exists only then).
    seed : int or numpy.random.Generator
        Keyword-only. Round ``t`` is drawn from ``generator_at(seed, t)``.

    Returns
    -------
    TimeVarying
        Named ``"el_oracle"``, not periodic; every round symmetric and doubly stochastic.

    Raises
    ------
    TypeError, ValueError
        If ``n < 2``, ``s`` is not in ``[1, n - 1]`` or ``n * s`` is odd.

    Notes
    -----
    Exact expected quantities (:func:`topofl.spectral.expected_mixing`):
    $\mathbb{E}\sum_j W_{ij}^2 = 1/(s+1)$, consensus contraction
    $\beta = (n-s-1)/((s+1)(n-1))$. A single round need not be connected (``s = 1`` is a
    perfect matching); the union of a few rounds is connected with high probability. At
    ``s <= 2``, where a round is often disconnected, decentralizepy (its ``Regular`` graph:
    ``connect_graph`` when ``nx.is_connected`` fails) adds a ring to a disconnected round,
    which mixes faster than the paper's definition; topofl follows the paper (the random
    ``s``-regular graph alone). Train it with ``algorithm="el"`` (EL's own averaging) or
    ``"dsgd"`` (the same weights here).

    Examples
    --------
    >>> tv = tf.topologies.el_oracle(8, 3, seed=0)
    >>> g = tv.at(5)
    >>> g.in_degree.tolist(), g.is_doubly_stochastic, g.is_symmetric, g.name
    ([3, 3, 3, 3, 3, 3, 3, 3], True, True, 'el_oracle')
    >>> float(g.W[0, 0]), g.messages_per_round
    (0.25, 24)
    """
    n, s = _check_ns(n, s)
    if (n * s) % 2:
        raise ValueError(
            f"n * s must be even for an s-regular graph (EL-Oracle), got n={n}, s={s}; use an "
            "even s or an even n"
        )
    base = random_undirected(n, s, seed=seed)
    params: dict[str, Any] = {"n": n, "s": s, "seed": _seed_param(seed)}

    def at(t: int) -> Topology:
        return base.at(t).replace(name="el_oracle", params={**params, "round": t})

    return TimeVarying(n, at, name="el_oracle", params=params)


def el_local(n: int, s: int, *, seed: Seed) -> TimeVarying:
    r"""EL-Local: each node sends to ``s`` random others; each averages what it received.

    At round ``t`` every node ``j`` draws ``s`` distinct nodes other than itself, uniformly and
    independently of the others, and sends them its model. Node ``i``, having received from the
    set $R_i$ ($|R_i| = K_i$), sets $W_{ij} = 1/(K_i + 1)$ for $j \in R_i \cup \{i\}$.

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 2``.
    s : int
        Models each node sends per round (its out-degree; how many it receives varies),
        ``1 <= s <= n - 1``.
    seed : int or numpy.random.Generator
        Keyword-only. Round ``t`` is drawn from ``generator_at(seed, t)``.

    Returns
    -------
    TimeVarying
        Named ``"el_local"``, not periodic; every round row-stochastic (columns sum to 1 only in
        expectation), out-degree ``s`` for every node.

    Raises
    ------
    TypeError, ValueError
        If ``n < 2`` or ``s`` is not in ``[1, n - 1]``.

    Notes
    -----
    $K_i \sim \mathrm{Bin}(n - 1, s/(n-1))$ and $\mathbb{E}\sum_j W_{ij}^2 =
    \mathbb{E}[1/(K_i+1)] = (1 - (1 - \frac{s}{n-1})^n) \frac{n-1}{n s}$; the other moments
    are in :func:`topofl.spectral.expected_mixing`. Drawing a round costs ``O(n s)`` when
    ``s^2 <= n``.

    Examples
    --------
    >>> tv = tf.topologies.el_local(6, 2, seed=0)
    >>> g = tv.at(1)
    >>> g.out_degree.tolist(), g.is_row_stochastic, g.name, g.messages_per_round
    ([2, 2, 2, 2, 2, 2], True, 'el_local', 12)
    >>> k = g.in_degree
    >>> bool(np.allclose(g.W.diagonal(), 1 / (k + 1)))
    True
    """
    n, s = _check_ns(n, s)
    check_w_size(n, n * s, f"el_local(n={n}, s={s}) (one round)")
    root = as_seed_sequence(seed)
    params: dict[str, Any] = {"n": n, "s": s, "seed": _seed_param(seed)}
    idx = np.arange(n, dtype=np.int64)

    def at(t: int) -> Topology:
        picks = _distinct_others(generator_at(root, t), n, s)  # row j: j's receivers
        receivers = picks.ravel()
        senders = np.repeat(idx, s)
        k = np.bincount(receivers, minlength=n)
        rows = np.concatenate([receivers, idx])
        cols = np.concatenate([senders, idx])
        vals = 1.0 / (k[rows] + 1.0)
        W = sp.csr_array((vals, (rows, cols)), shape=(n, n))
        return _round_topology(W, "el_local", params, t, "uniform")

    return TimeVarying(n, at, name="el_local", params=params)


# ---------------------------------------------------------------------------- registry
def _oracle_example(n: int, rng: np.random.Generator) -> dict[str, Any] | None:
    if n < 2:
        return None
    ss = [s for s in range(1, min(n - 1, 6) + 1) if (n * s) % 2 == 0]
    return {"n": n, "s": int(rng.choice(ss))}


def _local_example(n: int, rng: np.random.Generator) -> dict[str, Any] | None:
    if n < 2:
        return None
    return {"n": n, "s": int(rng.integers(1, min(n - 1, 6) + 1))}


register(GraphFamily(
    "el_oracle", el_oracle,
    (Param("n", int, "number of nodes", low=2),
     Param("s", int, "models sent and received per node and round (n*s even)", low=1,
           high="n-1")),
    _oracle_example, random=True, time_varying=True, stochastic="doubly", undirected=True,
    description="Epidemic Learning, EL-Oracle: a random s-regular graph per round, weights "
    "1/(s+1)"))
register(GraphFamily(
    "el_local", el_local,
    (Param("n", int, "number of nodes", low=2),
     Param("s", int, "models each node sends per round", low=1, high="n-1")),
    _local_example, random=True, time_varying=True, stochastic="row", undirected=False,
    description="Epidemic Learning, EL-Local: each node sends to s random others, receivers "
    "average uniformly (row-stochastic)"))
