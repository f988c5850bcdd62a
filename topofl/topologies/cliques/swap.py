"""Random cliques and Greedy Swap (Fig. 4 of D-Cliques)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from topofl._utils.rng import Seed, as_generator
from topofl._utils.validation import check_int, check_memory
from topofl.topologies.cliques._input import (
    _SWAP_TOL,
    Cliques,
    _check_clique_size,
    _clique_sizes,
    _label_matrix,
    _normalised,
)


def _initial_cliques(n: int, clique_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    perm = rng.permutation(n)
    bounds = np.cumsum([0, *_clique_sizes(n, clique_size)])
    return [perm[a:b].copy() for a, b in zip(bounds[:-1], bounds[1:])]


def random_cliques(n: int, clique_size: int, *, seed: Seed) -> Cliques:
    """Random cliques: a uniformly random partition of ``0..n-1`` into cliques of balanced sizes.

    The baseline of D-Cliques ("Random Cliques", Greedy Swap with 0 steps) and the starting point
    of :func:`greedy_swap`, which returns the same partition for the same seed and
    ``steps=0``.

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 2``.
    clique_size : int
        Largest clique size ``M`` in ``[2, n]``. There are ``ceil(n / M)`` cliques whose sizes
        differ by at most one (see the module notes).
    seed : int or numpy.random.Generator
        Keyword-only.

    Returns
    -------
    tuple of tuple of int
        The cliques, each sorted, the larger ones first.

    Examples
    --------
    >>> c = tf.topologies.random_cliques(11, 4, seed=0)
    >>> [len(x) for x in c]
    [4, 4, 3]
    >>> sorted(v for x in c for v in x) == list(range(11))
    True
    """
    n = check_int(n, "n", low=1)
    m = _check_clique_size(clique_size, n)
    # a permutation (8 bytes a node) and the cliques as Python ints (~40 bytes a node)
    check_memory(48.0 * n, f"random_cliques(n={n})")
    rng = as_generator(seed)
    return tuple(tuple(sorted(c.tolist())) for c in _initial_cliques(n, m, rng))


def _freeze(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


@dataclass(frozen=True, eq=False)
class GreedySwapResult:
    """What :func:`greedy_swap` returns: the cliques and the history of the construction.

    Attributes
    ----------
    cliques : tuple of tuple of int
        The ``K`` final cliques, each sorted; clique ``k`` keeps the size it started with.
    skews : numpy.ndarray
        ``(K,)`` skew of each final clique.
    trace : numpy.ndarray
        ``(steps + 1, 3)``: the minimum, mean and maximum clique skew before the first step (row
        0, the random cliques) and after each step, to draw Fig. 18 of the paper.
    pairs : numpy.ndarray
        ``(steps, 2)`` int: the two cliques drawn at each step (``-1`` when there is a single
        clique).
    swaps : numpy.ndarray
        ``(steps, 2)`` int: the nodes exchanged at each step, ``(i, j)`` with ``i`` moving out of
        ``pairs[t, 0]`` and ``j`` out of ``pairs[t, 1]``, or ``(-1, -1)`` when no swap lowered the
        skew.
    pair_skew : numpy.ndarray
        ``(steps, 2)``: the summed skew of the two drawn cliques before and after the step
        (``NaN`` when there is a single clique). The second column never exceeds the first.
    """

    cliques: Cliques
    skews: np.ndarray
    trace: np.ndarray
    pairs: np.ndarray
    swaps: np.ndarray
    pair_skew: np.ndarray

    @property
    def skew(self) -> float:
        """Mean skew of the final cliques (``trace[-1, 1]``)."""
        return float(self.skews.mean())

    @property
    def num_swaps(self) -> int:
        """Number of steps that swapped two nodes."""
        return int((self.swaps[:, 0] >= 0).sum())

    def __repr__(self) -> str:
        return (
            f"GreedySwapResult(cliques={len(self.cliques)}, steps={self.pairs.shape[0]}, "
            f"swaps={self.num_swaps}, skew={self.skew:.4g}, max_skew={float(self.skews.max()):.4g})"
        )


def _pair_swap_skews(
    P: np.ndarray, ra: np.ndarray, rb: np.ndarray, ma: np.ndarray, mb: np.ndarray
) -> np.ndarray:
    r"""Summed skew of cliques ``a`` and ``b`` after each swap, as an ``(|a|, |b|)`` array.

    ``ra = p_a - p`` and ``rb = p_b - p`` are the cliques' residuals. Swapping ``ma[i]`` and
    ``mb[j]`` moves $D_{ij} = P_{mb[j]} - P_{ma[i]}$ into ``a`` and out of ``b``, so the new
    residuals are ``ra + D/|a|`` and ``rb - D/|b|``; all pairs are evaluated at once.
    """
    D = P[mb][None, :, :] - P[ma][:, None, :]
    out: np.ndarray = np.abs(ra + D / ma.size).sum(axis=-1) + np.abs(rb - D / mb.size).sum(axis=-1)
    return out


def _greedy_swap(
    P: np.ndarray, clique_size: int, steps: int, rng: np.random.Generator
) -> GreedySwapResult:
    n = P.shape[0]
    members = _initial_cliques(n, clique_size, rng)
    k = len(members)
    p = P.mean(axis=0)
    R = np.stack([P[m].sum(axis=0) / m.size for m in members]) - p
    sk = np.abs(R).sum(axis=1)
    trace = np.empty((steps + 1, 3))
    trace[0] = sk.min(), sk.mean(), sk.max()
    pairs = np.full((steps, 2), -1, dtype=np.int64)
    swaps = np.full((steps, 2), -1, dtype=np.int64)
    pair_skew = np.full((steps, 2), np.nan)
    if k >= 2 and steps > 0:
        # All draws up front: which cliques meet at each step, and a uniform number that picks
        # one of the improving swaps. The stream used does not depend on the data.
        first = rng.integers(k, size=steps)
        second = rng.integers(k - 1, size=steps)
        second += second >= first
        pick = rng.random(steps)
        pairs[:, 0], pairs[:, 1] = first, second
        for t in range(steps):
            if 2.0 * sk.max() <= _SWAP_TOL:
                # No pair of cliques can improve (a swap must bring their summed skew below
                # 0): every later step would leave everything as it is, so write those steps
                # out at once. Same result as running them.
                rest = sk[first[t:]] + sk[second[t:]]
                pair_skew[t:, 0] = rest
                pair_skew[t:, 1] = rest
                trace[t + 1 :] = sk.min(), sk.mean(), sk.max()
                break
            a, b = int(first[t]), int(second[t])
            ma, mb = members[a], members[b]
            before = sk[a] + sk[b]
            new = _pair_swap_skews(P, R[a], R[b], ma, mb)
            better = np.flatnonzero(new.ravel() < before - _SWAP_TOL)
            if better.size:
                choice = int(better[min(int(pick[t] * better.size), better.size - 1)])
                i, j = divmod(choice, mb.size)
                x, y = int(ma[i]), int(mb[j])
                ma[i], mb[j] = y, x
                swaps[t] = x, y
                # Recompute the two residuals from the members: no drift over many steps.
                R[a] = P[ma].sum(axis=0) / ma.size - p
                R[b] = P[mb].sum(axis=0) / mb.size - p
                sk[a], sk[b] = np.abs(R[a]).sum(), np.abs(R[b]).sum()
            pair_skew[t] = before, sk[a] + sk[b]
            trace[t + 1] = sk.min(), sk.mean(), sk.max()
    else:
        trace[1:] = trace[0]
    return GreedySwapResult(
        cliques=tuple(tuple(sorted(m.tolist())) for m in members),
        skews=_freeze(sk.copy()),
        trace=_freeze(trace),
        pairs=_freeze(pairs),
        swaps=_freeze(swaps),
        pair_skew=_freeze(pair_skew),
    )


def auto_steps(n: int, clique_size: int) -> int:
    r"""The default number of Greedy Swap steps: ``max(1000, 10 * K * (K - 1) // 2)``.

    ``K = ceil(n / clique_size)`` cliques. A step draws one of the $K(K-1)/2$ pairs of cliques,
    so this draws every pair ten times on average; the paper's 1000 steps (enough for its 10
    cliques) are the floor, so ``n <= 140`` with cliques of 10 keeps exactly the paper's
    setting.

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 2``.
    clique_size : int
        Largest clique size ``M`` in ``[2, n]``.

    Returns
    -------
    int
        The number of steps.

    Notes
    -----
    Measured on one class per node (10 classes, cliques of 10, seed 0), the mean clique skew
    first reaches 0 after 209 steps at ``n = 100``, 1104 at ``n = 300``, 15 061 at
    ``n = 1000`` and 114 876 at ``n = 3000``, i.e. after 4.6, 2.5, 3.0 and 2.6 times the
    number of pairs: ten times leaves a margin. Greedy Swap stops by itself once no swap can
    lower any skew (every clique at skew 0), so the large default costs time only where
    improvement is still possible (at ``n = 1000``, about 5 s for the full 49 500 steps).

    Examples
    --------
    >>> tf.topologies.auto_steps(100, 10), tf.topologies.auto_steps(1000, 10)
    (1000, 49500)
    """
    n = check_int(n, "n", low=1)
    m = _check_clique_size(clique_size, n)
    k = -(-n // m)
    return max(1000, 10 * (k * (k - 1) // 2))


def _resolve_steps(steps: Any, n: int, clique_size: int) -> int:
    if steps is None:
        return auto_steps(n, clique_size)
    k = check_int(steps, "steps", low=0)
    # the trace arrays (24 + 3 * 16 bytes a step) and the step's random draws (24 bytes)
    check_memory(96.0 * k, f"greedy_swap(steps={k})")
    return k


def greedy_swap(
    label_distributions: Any, clique_size: int, *, steps: int | None = None, seed: Seed
) -> GreedySwapResult:
    r"""Greedy Swap (Fig. 4 of D-Cliques): cliques whose label distributions match the global one.

    Start from :func:`random_cliques`; then, ``steps`` times, draw two distinct cliques
    $C_1, C_2$ uniformly at random, list every pair $(i, j) \in C_1 \times C_2$ whose exchange
    lowers $\mathrm{skew}(C_1) + \mathrm{skew}(C_2)$, and apply one of them chosen uniformly at
    random (nothing happens if none does).

    Parameters
    ----------
    label_distributions : array_like, shape (n, L)
        Per-node class counts or proportions (rows normalised internally; not modified).
    clique_size : int
        Largest clique size ``M`` in ``[2, n]``; ``ceil(n / M)`` cliques whose sizes differ by at
        most one (the module notes give the rule).
    steps : int, optional
        Number of steps (the paper's $K$; ``0`` gives :func:`random_cliques`). By default
        :func:`auto_steps`: ``max(1000, 10 K (K-1) / 2)`` for ``K`` cliques, i.e. the paper's
        1000 up to ``n = 140`` with cliques of 10 and every pair of cliques drawn ten times on
        average beyond (49 500 steps at ``n = 1000``).
    seed : int or numpy.random.Generator
        Keyword-only; the same seed gives the same cliques.

    Returns
    -------
    GreedySwapResult
        ``cliques``, their ``skews``, and the ``trace`` of (min, mean, max) skew per step, with
        the pairs drawn and swaps made.

    Raises
    ------
    ValueError
        For a bad ``label_distributions`` (see :func:`skew`), ``clique_size`` outside
        ``[2, n]`` or a negative ``steps``.

    Notes
    -----
    A step evaluates the $|C_1| |C_2|$ swaps at once with numpy in $O(|C_1| |C_2| L)$ (the new
    skews follow from the two cliques' residuals $p_C - p$ and the differences of the swapped
    rows), then recomputes the two residuals from their members; the whole run costs
    $O(n L + \text{steps} \cdot (M^2 L + n/M))$. A swap counts as improving when it lowers the
    sum by more than $10^{-12}$, so that exchanging two nodes with the same distribution never
    does.

    A given pair of the $K$ cliques is drawn once every $K(K-1)/2$ steps on average: the
    paper's 1000 steps suffice for ``n = 100`` (10 cliques), while ``n = 1000`` (100 cliques)
    needs tens of thousands (with one class per node, the mean skew is about 0.12 after 1000
    steps, 0.01 after 10 000 and 0 after 30 000; ``analysis/bench_cliques.md``), hence the
    default of :func:`auto_steps`.

    Stopping rule: the paper swaps "for a predefined number of steps or until the topology
    stabilizes". Here the run ends early once no swap can help any more, i.e. when twice the
    largest clique skew is at most $10^{-12}$ (every clique at skew 0 up to rounding). That
    leaves the result unchanged: the later steps are still drawn and recorded in ``pairs``,
    ``pair_skew`` and ``trace`` exactly as running them would, with no swaps, and the same
    numbers are drawn from the generator. So ``steps`` is an upper bound, reached only while
    some clique can still improve (e.g. under a global class imbalance that no partition
    removes).

    Examples
    --------
    Twenty nodes with one class each (ten classes, twice): two cliques of ten can each hold all
    ten classes, i.e. have skew 0.

    >>> labels = np.eye(10)[np.arange(20) % 10]
    >>> res = tf.topologies.greedy_swap(labels, 10, steps=100, seed=0)
    >>> bool(res.trace[0, 1] > 0), res.skew, res.trace.shape
    (True, 0.0, (101, 3))
    >>> sorted(int(v) % 10 for v in res.cliques[0])
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    """
    P = _normalised(_label_matrix(label_distributions))
    m = _check_clique_size(clique_size, P.shape[0])
    steps = _resolve_steps(steps, P.shape[0], m)
    rng = as_generator(seed)
    return _greedy_swap(P, m, steps, rng)
