r"""The null-cascade graph of Niwa, Zhang, Takezawa and Kleijn (2025): commuting circulant filters
(moving averages and steerable nulling filters) whose product over a period is
$\mathbf{1}\mathbf{1}^\top/n$ for *every* ``n`` (``k >= 2``); :func:`null_cascade_schedule`
lists its filters and the frequencies each one nulls.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from topofl._utils.validation import check_int, check_time
from topofl.graph import TimeVarying, Topology
from topofl.graph.checks import check_w_size
from topofl.topologies.exponential._common import _circulant, _with_weights

__all__ = ["null_cascade", "null_cascade_schedule", "CascadeFilter"]

#: Smallest weight of a steerable nulling filter relative to its largest: a common multiplier
#: whose filter has a weight below this is passed over (the paper asks for positive weights).
_SNF_MIN_RELATIVE_WEIGHT = 1e-9


@dataclass(frozen=True)
class CascadeFilter:
    r"""One round of the null-cascade graph: a circulant filter and the frequencies it nulls.

    Round ``W = sum_d w_d P^d`` (``P_{i, i-1} = 1``: node ``i`` hears ``i - d`` with weight
    ``w_d``, ``d = 0`` itself) has the frequency response $H(i) = \sum_d w_d e^{-2\pi j i d / n}$
    at index ``i``; it is zero at every ``0 < i < n`` with ``i % base == 0`` and
    ``(i // base) % factor`` in ``residues`` (and possibly elsewhere).

    Attributes
    ----------
    kind : str
        ``"maf"`` (moving-average filter, equal weights) or ``"snf"`` (steerable nulling
        filter, non-uniform positive weights).
    factor : int
        The factor $\nu + 1$ of ``n`` whose frequencies this round nulls.
    base : int
        The product $b$ of the factors nulled by the rounds before it (Alg. 1's ``b``).
    residues : tuple of int
        The residues ``s`` modulo ``factor`` it nulls: all of ``1..factor-1`` for a MAF, one or
        more conjugate pairs ``{s, factor - s}`` for an SNF.
    multiplier : int
        Alg. 4's ``m_tmp`` (``1`` for a MAF): the SNF's roots sit at ``multiplier * s``.
    expansion : int
        Alg. 1's expansion order $m_\ell$: the taps are ``expansion`` apart.
    offsets : tuple of int
        The shifts ``d`` in ``[0, n)``, after the circulant shift that puts the largest weight on
        ``d = 0`` (Alg. 2).
    weights : tuple of float
        ``w_d``, summing to 1.
    """

    kind: str
    factor: int
    base: int
    residues: tuple[int, ...]
    multiplier: int
    expansion: int
    offsets: tuple[int, ...]
    weights: tuple[float, ...]


def _prime_factors(n: int) -> list[int]:
    """The prime factors of ``n >= 1`` with multiplicity, ascending (trial division)."""
    out: list[int] = []
    f = 2
    while f * f <= n:
        while n % f == 0:
            out.append(f)
            n //= f
        f += 1
    if n > 1:
        out.append(n)
    return out


def _snf_coefficients(angles: np.ndarray) -> np.ndarray:
    """Coefficients of ``prod_psi (x^2 - 2 cos(theta_psi) x + 1)``, one row per row of
    ``angles`` (shape ``(candidates, pairs)``): real, palindromic, of length ``2 pairs + 1``."""
    poly = np.ones((angles.shape[0], 1))
    for col in range(angles.shape[1]):
        a = -2.0 * np.cos(angles[:, col : col + 1])
        nxt = np.zeros((poly.shape[0], poly.shape[1] + 2))
        nxt[:, :-2] += poly
        nxt[:, 1:-1] += a * poly
        nxt[:, 2:] += poly
        poly = nxt
    return poly


def _snf_multiplier(p: int, pairs: Sequence[int]) -> tuple[int, np.ndarray] | None:
    """Alg. 4's search: the smallest ``m_tmp >= 1`` whose filter with roots at the angles
    ``2 pi m_tmp s / p`` (``s`` in ``pairs`` and their conjugates) has positive coefficients,
    with the normalised coefficients; ``None`` if no ``m_tmp < p`` gives one."""
    s = np.asarray(pairs, dtype=np.int64)
    top = (p - 1) // 2  # m_tmp and p - m_tmp give the same filter
    start, chunk = 1, 8
    while start <= top:
        u = np.arange(start, min(start + chunk, top + 1), dtype=np.int64)
        angles = 2.0 * np.pi * ((u[:, None] * s[None, :]) % p) / p
        co = _snf_coefficients(angles)
        ok = np.all(co > _SNF_MIN_RELATIVE_WEIGHT * co.max(axis=1, keepdims=True), axis=1)
        if ok.any():
            i = int(np.argmax(ok))
            return int(u[i]), co[i] / co[i].sum()
        start += u.size
        chunk = min(2 * chunk, 4096)
    return None


#: Relative difference below which two weights of a filter count as equal for the tie of
#: :func:`_cascade_round` (an SNF's coefficients are palindromic; rounding leaves its two
#: mirrored largest weights a few ulps apart, which ``argmax`` alone would read as a winner).
TIE_RTOL = 1e-12


def _fewest_messages(m: int, b: int) -> list[int] | None:
    """The factors in ``[2, b]`` whose product is ``m``: the fewest (rounds), and among as
    few the smallest sum (a factor ``f`` costs a node ``f - 1`` messages), descending; None if
    ``m`` has a prime above ``b``.

    Examples
    --------
    >>> _fewest_messages(12, 6), _fewest_messages(60, 6), _fewest_messages(7, 4)
    ([4, 3], [5, 4, 3], None)
    """
    @functools.cache
    def best(r: int) -> tuple[int, int, tuple[int, ...]] | None:
        if r == 1:
            return (0, 0, ())
        out: tuple[int, int, tuple[int, ...]] | None = None
        for f in range(min(b, r), 1, -1):
            if r % f == 0 and (sub := best(r // f)) is not None:
                cand = (sub[0] + 1, sub[1] + f, tuple(sorted((f, *sub[2]), reverse=True)))
                if out is None or cand[:2] < out[:2]:
                    out = cand
        return out

    res = best(m)
    return None if res is None else list(res[2])


def _cascade_round(kind: str, n: int, factor: int, base: int, residues: Sequence[int],
                   multiplier: int, expansion: int, coefficients: np.ndarray) -> CascadeFilter:
    """The filter with taps ``t * expansion`` (``t = 0..c``) shifted so that its largest weight
    (the first, on ties within :data:`TIE_RTOL`) sits on the node itself (Alg. 2,
    ``CirculantShifting``)."""
    top = float(coefficients.max())
    t_max = int(np.flatnonzero(coefficients >= top - TIE_RTOL * abs(top))[0])
    offsets = tuple(int(((t - t_max) * expansion) % n) for t in range(coefficients.size))
    return CascadeFilter(kind, factor, base, tuple(int(r) for r in residues), multiplier,
                         expansion, offsets, tuple(float(w) for w in coefficients))


def null_cascade_schedule(n: int, k: int) -> list[CascadeFilter]:
    r"""The rounds of the null-cascade graph as filters: which frequencies each one nulls.

    :func:`null_cascade` builds its mixing matrices from these (see it for the graph and the
    readings of the paper's text).

    Construction (Alg. 1): factor ``n`` into primes; pack those up to ``k + 1`` into the fewest
    factors $f \le k + 1$ and keep each prime $p > k + 1$ on its own, so that
    $n = \prod_i (\nu_i + 1)$ with $\nu_1 \le \dots \le \nu_\kappa \le k < \nu_{\kappa+1}
    \le \dots \le \nu_\lambda$. With ``b = 1``:

    1. for each factor $f \le k + 1$, largest first: the moving-average filter of length ``f``
       (weights ``1/f``) expanded by ``m = n / (f b)`` nulls the multiples of ``b`` that are not
       multiples of ``f b`` (Lemma 2); then ``b *= f``;
    2. for each prime $p > k + 1$, largest first: steerable nulling filters (Definition 8,
       Alg. 3-4) with ``c = 2 floor(k/2)`` taps besides the node null the multiples of ``b`` that
       are not multiples of ``p b``. Their residues ``s`` modulo ``p`` come in conjugate pairs
       ``{s, p - s}``; each filter takes ``c/2`` pairs, the highest remaining first, and the
       smallest multiplier $m_{tmp} \ge 1$ for which the polynomial
       $\prod (x - e^{j 2\pi m_{tmp} s/p})(x - e^{-j 2\pi m_{tmp} s/p})$ has positive
       coefficients; normalised to sum 1 they are the weights, ``n / (p b) * m_tmp`` apart; then
       ``b *= p``.

    Each filter is circularly shifted so that its largest weight is the node's own (Alg. 2).
    The period is the paper's Table 1 formula

    .. math:: \tau = \kappa + \sum_{i = \kappa+1}^{\lambda}
              \left\lceil \frac{\nu_i}{2 \lfloor k/2 \rfloor} \right\rceil,

    e.g. 3, 8, 4 rounds at (n, k) = (15, 2), (17, 2), (30, 2) (the paper's Table 2).

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 2``.
    k : int
        Maximum number of peers per node and round, ``k >= 2``.

    Returns
    -------
    list of CascadeFilter
        One per round of a period, in the paper's order (the moving-average filters for the
        factors up to ``k + 1``, largest first, then the steerable nulling filters for the
        primes above ``k + 1``, largest prime first).

    Raises
    ------
    TypeError, ValueError
        If ``n < 2`` or ``k < 2``.

    Examples
    --------
    >>> for f in tf.topologies.null_cascade_schedule(15, 2):  # Fig. 1(b): n = 3 x 5
    ...     print(f.kind, f.factor, f.residues, f.offsets, [round(w, 4) for w in f.weights])
    maf 3 (1, 2) (0, 5, 10) [0.3333, 0.3333, 0.3333]
    snf 5 (2, 3) (14, 0, 1) [0.2764, 0.4472, 0.2764]
    snf 5 (1, 4) (13, 0, 2) [0.2764, 0.4472, 0.2764]
    """
    n = check_int(n, "n", low=2)
    k = check_int(k, "k", low=2)
    check_w_size(n, n * min(k, n - 1), f"null_cascade_schedule(n={n}, k={k})")
    primes = _prime_factors(n)
    small = math.prod(p for p in primes if p <= k + 1)
    large = sorted((p for p in primes if p > k + 1), reverse=True)
    factors = _fewest_messages(small, k + 1) or []
    c = 2 * (k // 2)  # Definition 8: an even number of taps beyond the node itself
    # a lower bound: an SNF round took 9e-5 s to choose (n = 100003, k = 2 and 5; 2-core VM)
    check_time(2e-5 * sum((p - 1) // c + 1 for p in large), f"null_cascade(n={n}, k={k})")
    rounds: list[CascadeFilter] = []
    b = 1
    for f in factors:  # Step 1: an expanded MAF per factor f <= k + 1 (lines 4-11)
        m = n // (f * b)
        rounds.append(_cascade_round("maf", n, f, b, range(1, f), 1, m, np.full(f, 1.0 / f)))
        b *= f
    for p in large:  # Step 2: expanded SNFs per prime p > k + 1 (lines 13-20, Alg. 3 and 4)
        m_base = n // (p * b)
        beta = list(range(1, (p - 1) // 2 + 1))  # one residue of each conjugate pair
        while beta:
            size = min(c // 2, len(beta))
            found = None
            while found is None:  # size 1 always succeeds: m_tmp = s^-1 (p - 1)/2 mod p
                group = beta[-size:]  # the highest remaining frequencies first
                found = _snf_multiplier(p, group)
                size -= 1
            u, coef = found
            residues = sorted({*group, *(p - s for s in group)})
            rounds.append(_cascade_round("snf", n, p, b, residues, u, m_base * u, coef))
            beta = beta[: len(beta) - len(group)]
        b *= p
    return rounds


def null_cascade(n: int, k: int = 2) -> TimeVarying:
    r"""Null-cascade graph: commuting circulants that average exactly for every ``n``, ``k >= 2``.

    The graph of Niwa, Zhang, Takezawa and Kleijn [1]_ (Sec. 4, Alg. 1-4), built here from the
    paper's text (its code repository could not be read). Every round is a circulant
    ``W = sum_d w_d P^d`` (node ``i`` hears ``i - d``, as in :func:`k_peer_exponential`), so
    every node sends and receives the same number of messages (at most ``k``) and all rounds
    commute. Its frequency response is zero at a set of frequencies, and the rounds of one period
    together null every frequency ``1..n-1`` (the paper's eq. 6), so their product is exactly
    $\mathbf 1 \mathbf 1^\top / n$, whatever their order.

    The construction (Alg. 1-4: moving-average filters for the prime factors up to
    ``k + 1``, steerable nulling filters for the larger ones) and the period (the paper's
    Table 1 formula): :func:`null_cascade_schedule`.

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 2``.
    k : int, default 2
        Maximum number of peers per node and round, ``k >= 2`` (two are needed to place a
        conjugate pair of nulls); a round uses ``f - 1 <= k`` peers (a MAF) or at most
        ``2 floor(k/2)`` (an SNF). ``k >= n - 1`` gives the complete graph in one round.

    Returns
    -------
    TimeVarying
        Period ``tau`` (see :func:`null_cascade_schedule`), ``params`` ``{"n", "k"}``; every
        ``W(t)`` is a doubly stochastic circulant with positive weights (symmetric where the
        SNF's largest weight is its middle one); MAF rounds have ``weights="uniform"``.

    Raises
    ------
    TypeError, ValueError
        If ``n < 2`` or ``k < 2``.

    See Also
    --------
    null_cascade_schedule : the rounds as filters, with the frequencies each one nulls.
    k_peer_exponential : the same paper's graph with equal weights (exact only at powers of
        ``k + 1``).
    base_graph : Base-(k+1), exact for every ``n`` and ``k`` (not circulant, not commuting).

    Notes
    -----
    What the paper's text leaves open, and how it is read here:

    * **The factorisation** (Alg. 1, line 2) is not unique, and the period depends on it. Its
      examples use the one that minimises Table 1's formula ((60, 3) as 5 x 4 x 3, (60, 2) as
      5 x 3 x 2 x 2); so is this one: splitting a factor above ``k + 1`` never lengthens the
      period, and the primes up to ``k + 1`` are packed into the fewest factors ``<= k + 1``.
      Where several packings are as short (33 of the 1188 (n, k) with ``n < 200``,
      ``2 <= k <= 7``), the one with the fewest messages is taken: a factor ``f`` costs each
      node ``f - 1`` messages, so (12, 5) is 4 x 3 (5 messages a period), not 6 x 2 (6)
      (:func:`base_graph`'s hyper-hypercube packs as few factors, the largest first).
    * **Alg. 4's search** multiplies the roots by ``m_tmp = 1, 2, ...`` until the coefficients
      are positive; its lines 31-41 (further filters for the factors of ``m_tmp``) are garbled in
      the text and would add rounds beyond Table 1's formula (at (17, 2) the paper's own period
      is the formula's 8), so they are left out: each filter takes its pairs out of the set to
      null, and a multiplier below ``p`` is coprime to ``p``, so it nulls exactly those pairs.
      A group of ``c/2`` pairs got positive weights for every prime below 3000 with ``k <= 11``
      and every prime below 300 with ``k <= 39`` (measured); if none did, the group would be
      split (one pair always works), and the period would exceed the formula.
    * **The last filter of a prime** may have fewer than ``c/2`` pairs left; Alg. 4 then fills it
      with frequencies "that interpolate" the others, which the text does not define: here it is
      a shorter filter (``2 x pairs`` taps), which averages exactly as well with fewer messages.
    * **Lemma 3's expansion**: an SNF expanded by ``m`` nulls ``(q + phi n) / m``; the text
      writes ``q + phi n / m``. The reading here is the one under which Alg. 4's ``m_tmp`` works.
    * **Alg. 2's shift** is written both as ``h((i - u) mod n)`` and as the sequence starting
      at ``h(u)``; the second puts the largest weight on the node itself, as its comment says,
      and is used. On a tie (an SNF whose two mirrored weights are its largest) the first is
      kept, within a relative ``1e-12`` (:data:`TIE_RTOL`: rounding leaves an SNF's mirrored
      weights ulps apart, and ``argmax`` alone kept the second in 30 of 1548 (n, k)).
    * **The paper's own numbers disagree in places**: Example 4 writes tau = 4 at (15, 2) but
      lists three rounds (Table 2 and Sec. 4 say 3, as here); Table 5 gives 3 at (30, 3), where
      the formula and this construction give 2 + ceil(4/2) = 4 (``30 = 2 x 3 x 5``; with
      ``k = 3`` an SNF has two taps besides the node, one conjugate pair of nulls, and the prime
      5 has two pairs). The other 11 (n, k) of its Tables 2, 5, 6 and Examples 5-9 match.

    The schedule has one filter per round; choosing them took 4.6 s for the prime
    ``n = 100003`` at ``k = 2`` (50001 filters, on a shared 2-core VM), and a round's matrix
    costs $O(n k)$.

    References
    ----------
    .. [1] K. Niwa, G. Zhang, Y. Takezawa, W. B. Kleijn, "Revisiting 1-peer exponential graph
       for enhancing decentralized learning efficiency", NeurIPS 2025 (Sec. 4, Alg. 1-4,
       Table 1, Appendix B).

    Examples
    --------
    The paper's Fig. 1(b): 15 nodes, 2 peers; a MAF for the factor 3 and two SNFs for 5:

    >>> tv = tf.topologies.null_cascade(15, k=2)
    >>> tv.period, [int(tv.at(t).in_degree.max()) for t in range(tv.period)]
    (3, [2, 2, 2])
    >>> tf.spectral.finite_time_consensus(tv, 10)
    3
    >>> P = tf.spectral.mixing_product(tv, 0, 3)
    >>> bool(np.abs(P - 1 / 15).max() < 1e-15)
    True

    A prime number of nodes costs more rounds (Table 2: 8 at n = 17):

    >>> tf.topologies.null_cascade(17, k=2).period, tf.topologies.null_cascade(17, k=4).period
    (8, 4)
    """
    n = check_int(n, "n", low=2)
    k = check_int(k, "k", low=2)
    filters = null_cascade_schedule(n, k)
    params = {"n": n, "k": k}

    def at(t: int) -> Topology:
        f = filters[t]
        top = Topology.from_matrix(_circulant(n, f.offsets, f.weights), name="null_cascade",
                                   params={**params, "round": t})
        return _with_weights(top, "uniform") if f.kind == "maf" else top

    return TimeVarying(n, at, name="null_cascade", params=params, period=len(filters))
