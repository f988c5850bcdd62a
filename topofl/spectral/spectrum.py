r"""The whole spectrum of a symmetric mixing matrix, not only its gap.

The spectral gap is one eigenvalue: the slowest mode of $W - J$. Gossip on a disagreement
vector $x \perp \mathbf 1$ decays mode by mode, $\|W^t x\|^2 = \sum_{k \ge 2} \lambda_k^{2t}
\langle q_k, x\rangle^2$, so every eigenvalue enters: a ring and a dense graph can share most of
their spectral mass near 0 while their gaps differ by orders of magnitude. :func:`spectrum`
returns all eigenvalues with two averages over the $n - 1$ non-trivial modes ($k \ge 2$):

* ``mean_sq`` $= \frac{1}{n-1}\sum_{k\ge2}\lambda_k^2 = \frac{\|W\|_F^2 - 1}{n - 1}$: the
  expected one-round contraction $\mathbb{E}\|(W - J)x\|^2 / \mathbb{E}\|x\|^2$ of an isotropic
  random disagreement (the worst case, over all $x$, is $(1 - \text{gap})^2$);
* ``relaxation`` $= \frac{1}{n-1}\sum_{k\ge2}\frac{1}{1-\lambda_k^2}$: the mean over modes of
  $\sum_{t\ge0}\lambda_k^{2t}$, the total squared disagreement a unit isotropic disagreement
  leaves behind over all rounds (``None`` if a mode never decays, $|\lambda_k| = 1$: a
  disconnected or bipartite-periodic graph).

:func:`all_eigenvalues_metric` is the topology term of Takezawa, Koloskova and Stich's analysis
of D-SGD [1]_, $\frac{1}{n}\sum_{k\ge2}\frac{\lambda_k^2}{1-\lambda_k^2} = \frac{n-1}{n}
(\text{relaxation} - 1)$: the same modes as ``relaxation``, each counted by what gossip still
owes after its first round.

Defined for a **symmetric** doubly stochastic ``W`` (undirected graphs with symmetric weights),
whose eigenvalues are real in $[-1, 1]$ with orthogonal eigenvectors; a non-symmetric ``W`` is
refused (its eigenvalues do not give norms: use singular values, or
:func:`~topofl.spectral.consensus_rate` on the products). Dense: $O(n^3)$, ``n <= 4096``
(:func:`all_eigenvalues_metric` of a circulant ``W`` in closed form, any ``n``).

References
----------
.. [1] Y. Takezawa, A. Koloskova, S. U. Stich, "Improved convergence analysis of topology
   dependence in decentralized SGD", ICML 2026 (arXiv:2606.09154).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse.csgraph as csgraph

from topofl._utils.validation import arc_pattern
from topofl.spectral._common import _as_stochastic, _is_symmetric
from topofl.spectral.large import _dft_parts, _is_symmetric_row, circulant_row
from topofl.spectral.neighbors import _check_dense

__all__ = ["Spectrum", "spectrum", "all_eigenvalues_metric"]

# Eigenvalues smaller than this in modulus are zeros up to rounding (LAPACK leaves ~1e-16).
_ZERO = 1e-13
# A mode with 1 - |lambda| at most this never decays (as Spectrum.relaxation decides).
_UNIT = 1e-12


@dataclass(frozen=True)
class Spectrum:
    r"""All eigenvalues of a symmetric doubly stochastic ``W`` and summaries over them.

    Attributes
    ----------
    n : int
    eigenvalues : tuple of float
        All ``n``, decreasing ($\lambda_1 = 1$ first).
    lambda_2 : float or None
        Second largest ($\lambda_2$; ``None`` for ``n = 1``).
    lambda_min : float
        Smallest ($\lambda_n$; close to $-1$ for nearly bipartite graphs).
    gap : float
        $1 - \max_{k \ge 2} |\lambda_k|$ (:func:`~topofl.spectral.spectral_gap`, ``"modulus"``).
    mean_sq : float or None
        $\frac{1}{n-1}\sum_{k\ge2}\lambda_k^2$ (``None`` for ``n = 1``).
    relaxation : float or None
        $\frac{1}{n-1}\sum_{k\ge2} 1/(1-\lambda_k^2)$; ``None`` if some $|\lambda_k| = 1$
        ($k \ge 2$) or ``n = 1``.
    """

    n: int
    eigenvalues: tuple[float, ...]
    lambda_2: float | None
    lambda_min: float
    gap: float
    mean_sq: float | None
    relaxation: float | None

    def as_dict(self) -> dict[str, Any]:
        """The fields as a JSON-serialisable dict (``eigenvalues`` a list)."""
        return {"n": self.n, "eigenvalues": list(self.eigenvalues), "lambda_2": self.lambda_2,
                "lambda_min": self.lambda_min, "gap": self.gap, "mean_sq": self.mean_sq,
                "relaxation": self.relaxation}


def _from_eigenvalues(ev: np.ndarray) -> Spectrum:
    """The summary of the eigenvalues ``ev`` of a symmetric doubly stochastic matrix."""
    ev = np.sort(np.clip(ev, -1.0, 1.0))[::-1]
    ev = np.where(np.abs(ev) < _ZERO, 0.0, ev)  # rounding residue of exact zeros (W = J)
    n = ev.size
    rest = ev[1:]
    if n == 1:
        return Spectrum(n=1, eigenvalues=(float(ev[0]),), lambda_2=None,
                        lambda_min=float(ev[0]), gap=1.0, mean_sq=None, relaxation=None)
    # Eigenvalues equal to +-1 within rounding are modes that never decay.
    tol = 1e-12
    sq = rest * rest
    relax = None if np.any(np.abs(rest) > 1.0 - tol) else float(np.mean(1.0 / (1.0 - sq)))
    gap = 1.0 - float(np.max(np.abs(rest)))
    return Spectrum(
        n=n, eigenvalues=tuple(float(v) for v in ev), lambda_2=float(rest[0]),
        lambda_min=float(ev[-1]), gap=0.0 if abs(gap) < tol else gap,
        mean_sq=float(np.mean(sq)), relaxation=relax,
    )


def _symmetric_doubly(W: Any, who: str, why: str = "") -> Any:
    """``W`` as a doubly stochastic sparse matrix, refused unless it is symmetric."""
    M = _as_stochastic(W, "doubly", who)
    if not _is_symmetric(M):
        raise ValueError(f"{who} needs a symmetric W (real eigenvalues with orthogonal "
                         f"eigenvectors); this W is not symmetric{why}")
    return M


def spectrum(W: Any) -> Spectrum:
    r"""All eigenvalues of a symmetric doubly stochastic ``W`` and the full-spectrum summaries.

    See :mod:`topofl.spectral.spectrum` for the definitions and for which graphs they hold.

    Parameters
    ----------
    W : Topology, array_like or sparse matrix
        ``(n, n)`` symmetric doubly stochastic (sums within 1e-6), ``n <= 4096``.

    Returns
    -------
    Spectrum

    Raises
    ------
    ValueError
        If ``W`` is not doubly stochastic or not symmetric, or ``n > 4096``.

    Examples
    --------
    The ring of 4 (Metropolis weights 1/3): eigenvalues $1, 1/3, 1/3, -1/3$, so
    ``mean_sq`` $= (1/9) \cdot 3 / 3$ and ``relaxation`` $= 1/(1 - 1/9) = 9/8$:

    >>> s = tf.spectral.spectrum(tf.topologies.ring(4))
    >>> [round(v, 4) for v in s.eigenvalues]
    [1.0, 0.3333, 0.3333, -0.3333]
    >>> round(s.gap, 4), round(s.mean_sq, 4), round(s.relaxation, 4)
    (0.6667, 0.1111, 1.125)

    The ring of 64 has a tiny gap, yet one round still removes two thirds of an isotropic
    disagreement (for every ring, $\|W\|_F^2 = n/3$): only its few slow modes are slow.

    >>> ring = tf.spectral.spectrum(tf.topologies.ring(64))
    >>> round(ring.gap, 4), round(ring.mean_sq, 4)
    (0.0032, 0.3228)
    """
    M = _symmetric_doubly(W, "spectrum", ": its eigenvalues do not give the norms of gossip "
                          "rounds")
    n = M.shape[0]
    _check_dense(n, "spectrum")
    A = M.toarray()
    return _from_eigenvalues(np.linalg.eigvalsh((A + A.T) / 2.0))


def _metric_of_eigenvalues(ev: np.ndarray) -> float | None:
    """:func:`all_eigenvalues_metric` from all ``n`` eigenvalues of a symmetric doubly
    stochastic matrix (any order): ``None`` if a mode besides the Perron root has modulus 1."""
    n = ev.size
    rest = np.sort(np.clip(ev, -1.0, 1.0))[::-1][1:]
    rest = np.where(np.abs(rest) < _ZERO, 0.0, rest)
    if np.any(np.abs(rest) > 1.0 - _UNIT):
        return None
    sq = rest * rest
    return float(np.sum(sq / (1.0 - sq)) / n)


def _metric_of_circulant(n: int, offsets: np.ndarray, weights: np.ndarray) -> float | None:
    """The same for a symmetric circulant ``W`` from its first row, in closed form: the modes
    ``k >= 1`` of the DFT, with ``1 - lambda_k`` computed without cancellation."""
    if n == 1:
        return 0.0
    a, _ = _dft_parts(n, offsets, weights)
    one_minus = a[1:]  # 1 - lambda_k (the row sums are 1), k = 1..n-1
    one_plus = 2.0 - one_minus
    if np.any(one_minus < _UNIT) or np.any(one_plus < _UNIT):
        return None
    lam = 1.0 - one_minus
    lam = np.where(np.abs(lam) < _ZERO, 0.0, lam)
    return float(np.sum(lam * lam / (one_minus * one_plus)) / n)


def _never_decays(M: Any, n: int) -> str:
    """Why a ``W`` has a mode of modulus 1 besides the Perron root, in words."""
    parts = int(csgraph.connected_components(arc_pattern(M, diagonal=False),
                                             directed=False)[0])
    if parts > 1:
        return (f"W has the eigenvalue 1 with multiplicity {parts} (its graph has {parts} "
                "connected components, whose disagreement never decays)")
    return ("W has the eigenvalue -1 (a bipartite graph without self-weights: gossip "
            "oscillates with period 2 and never converges)")


def all_eigenvalues_metric(W: Any) -> float:
    r"""The all-eigenvalues metric of Takezawa, Koloskova and Stich [1]_ of a symmetric ``W``.

    .. math:: \frac{1}{n} \sum_{k = 2}^{n} \frac{\lambda_k^2}{1 - \lambda_k^2}
              = \frac{n - 1}{n} \left(\text{relaxation} - 1\right)

    over the eigenvalues $1 = \lambda_1 \ge \lambda_2 \ge \dots \ge \lambda_n$ of a symmetric
    doubly stochastic ``W`` (``relaxation`` of :func:`spectrum`). Their analysis of D-SGD
    replaces the spectral gap by this sum over every eigenvalue: a graph whose spectral mass
    is near 0 scores low even when its gap is tiny (the ring of ``n`` nodes: gap $O(1/n^2)$,
    metric $O(n)$). The name is this library's: the paper's text is not reachable from this
    project (only its abstract and introduction), so the formula is the one issue 45 gives,
    and what the paper calls the quantity is not known here.

    Parameters
    ----------
    W : Topology, array_like or sparse matrix
        ``(n, n)`` symmetric doubly stochastic (sums within 1e-6).

    Returns
    -------
    float
        ``>= 0``; ``0.0`` exactly for ``W = J`` (the complete graph) and for ``n = 1``.

    Raises
    ------
    TypeError
        If ``W`` is a time-varying graph (one-peer exponential, Base-(k+1), a sequence of
        matrices): the metric is defined for one symmetric ``W``; pass one round's
        (``tv.at(t)``).
    ValueError
        If ``W`` is not doubly stochastic or not symmetric: a directed graph (topofl's
        ``exponential``, whose ``W`` is not symmetric, is refused: its undirected version
        ``undirected_exponential`` is defined), or any ``W`` whose eigenvalues do not
        give the norms the analysis uses; if a mode other than the consensus one never
        decays, $|\lambda_k| = 1$ for some $k \ge 2$ -- the eigenvalue 1 with multiplicity
        above 1 (a disconnected graph) or the eigenvalue $-1$ (bipartite, no self-weights):
        the sum is then infinite, and an error says which instead of returning ``inf``
        (:func:`~topofl.spectral.summary` gives ``None``); if ``W`` is not circulant and
        ``n > 4096``.

    Notes
    -----
    A circulant ``W`` (ring, circulant, complete, static undirected exponential graphs;
    :func:`~topofl.spectral.large.circulant_row`) takes the closed form of its eigenvalues,
    the DFT of its first row, in $O(n \cdot \mathrm{offsets})$ for any ``n``, with
    $1 - \lambda_k$ computed without cancellation; any other ``W`` the dense symmetric
    eigenvalues (LAPACK, $O(n^3)$, ``n <= 4096``). A mode counts as never decaying when
    $1 - |\lambda_k| \le 10^{-12}$, the threshold of ``Spectrum.relaxation``.

    References
    ----------
    .. [1] Y. Takezawa, A. Koloskova, S. U. Stich, "Improved convergence analysis of
       topology dependence in decentralized SGD", ICML 2026 (arXiv:2606.09154).

    Examples
    --------
    The ring of 4 (eigenvalues $1, 1/3, 1/3, -1/3$): each mode gives $(1/9)/(8/9) = 1/8$, so
    $3/8$ over 4 nodes $= 3/32$; the ring of 6 ($2/3, 0, -1/3, 0, 2/3$):
    $(2 \cdot 4/5 + 1/8)/6 = 0.2875$; the complete graph: 0.

    >>> tf.spectral.all_eigenvalues_metric(tf.topologies.ring(4)) == 3 / 32
    True
    >>> round(tf.spectral.all_eigenvalues_metric(tf.topologies.ring(6)), 12)
    0.2875
    >>> tf.spectral.all_eigenvalues_metric(tf.topologies.complete(8))
    0.0
    >>> tf.spectral.all_eigenvalues_metric(tf.topologies.exponential(8))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: all_eigenvalues_metric needs a symmetric W ... this W is not symmetric
    >>> round(tf.spectral.all_eigenvalues_metric(tf.topologies.undirected_exponential(8)), 6)
    0.045037

    A ring of a million nodes (closed form; about $n/8$, from the slow modes
    $\lambda_k^2/(1-\lambda_k^2) \approx 3n^2/(8\pi^2k^2)$ at both ends of the spectrum), and
    the identity with ``relaxation``:

    >>> round(tf.spectral.all_eigenvalues_metric(tf.topologies.ring(10**6)), 1)
    124999.4
    >>> s = tf.spectral.spectrum(tf.topologies.torus(4, 5))
    >>> m = tf.spectral.all_eigenvalues_metric(tf.topologies.torus(4, 5))
    >>> abs(m - (s.n - 1) / s.n * (s.relaxation - 1)) < 1e-14
    True
    """
    M = _symmetric_doubly(W, "all_eigenvalues_metric")
    n = M.shape[0]
    row = circulant_row(M)
    if row is not None and _is_symmetric_row(n, *row):
        value = _metric_of_circulant(n, *row)
    else:
        _check_dense(n, "all_eigenvalues_metric")
        A = M.toarray()
        value = _metric_of_eigenvalues(np.linalg.eigvalsh((A + A.T) / 2.0))
    if value is None:
        raise ValueError(
            f"all_eigenvalues_metric is infinite for this W: {_never_decays(M, n)}; it is "
            "defined for a connected graph whose W has no eigenvalue -1"
        )
    return value
