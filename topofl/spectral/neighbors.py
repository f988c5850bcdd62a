r"""The effective number of neighbours (Vogels, Hendrikx, Jaggi, *Beyond spectral gap*).

A random walk on the nodes, with fresh unit-variance noise every round and a decay $\gamma$,

.. math:: x_{t+1} = W(t)\,\big(\sqrt{\gamma}\, x_t + \xi_t\big), \qquad \xi_t \sim N(0, I),

reaches a stationary covariance $\Sigma = \mathbb{E}[x x^\top]$. A node alone ($W = I$) has
variance $\sum_{t \ge 0} \gamma^t = 1/(1-\gamma)$; the **effective number of neighbours** is by
how much gossip reduces it,

.. math:: n_W(\gamma) = \frac{1/(1-\gamma)}{\frac1n \sum_i \Sigma_{ii}}
          \quad (\text{mode "mean"}), \qquad
          \frac{1/(1-\gamma)}{\max_i \Sigma_{ii}} \quad (\text{mode "worst"}),

the definition of the paper's code (``random_walks.py``: ``effective_number_of_neighbors``, noise
added before averaging). It is ``1`` for ``W = I``, ``n`` for ``W = J`` and, for $\gamma = 0$,
$1 / (\frac1n \sum_{ij} W_{ij}^2)$. The decay $\gamma \in [0, 1)$ stands for how long the
optimiser remembers past gradient noise (the paper fits $\gamma = 0.951$ to its Cifar-10 runs;
:data:`DEFAULT_GAMMA` is 0.95).

Where it is defined, and how it is computed
-------------------------------------------
It needs averaging matrices: every ``W(t)`` **row-stochastic** (``W 1 = 1``: each node outputs a
weighted average). Push-sum's column-stochastic matrices are refused (the walk above is not what
push-sum does: it de-biases by the push-sum weights).

====================================  =========================================================
graph                                 computation (``method``)
====================================  =========================================================
static, symmetric ``W``               exact from the eigen-decomposition
                                      $\Sigma = Q\,\mathrm{diag}(\lambda^2/(1-\gamma\lambda^2))
                                      Q^\top$ (``"eigenvalues"``; mode ``"mean"`` needs the
                                      eigenvalues only)
static, non-symmetric ``W``           exact: the discrete Lyapunov equation
                                      $\Sigma = \gamma W \Sigma W^\top + W W^\top$
                                      (``"lyapunov"``)
periodic ``TimeVarying``              exact: a Lyapunov equation for the product over one
                                      period, then the phases; the variance is averaged over
                                      the ``period`` phases (``"periodic"``)
random i.i.d. schedule with a         exact expected value over the schedule's distribution:
closed form (EL-Oracle, EL-Local,     ``"closed_form"``, from the two second moments of
random k-regular, random pull,        :class:`MixingMoments` (:func:`expected_mixing`)
random matching, (k+1)-partite
random match)
any other non-periodic                Monte-Carlo estimate (``"monte_carlo"``): the covariance
``TimeVarying``                       recursion $\Sigma_{t+1} = W(t)(\gamma\Sigma_t + I)W(t)^\top$
                                      run exactly (the noise is integrated out) along rounds
                                      ``burn_in .. burn_in + rounds - 1`` of the given sequence
                                      and averaged; its randomness is the sequence's own seed,
                                      its standard error comes from batch means
====================================  =========================================================

For a random schedule the value is $\frac{1/(1-\gamma)}{\frac1n\sum_i \mathbb{E}[\Sigma_{ii}]}$,
the expected stationary variance over both the noise and the graphs drawn (not the mean of
per-round effective numbers of neighbours).

Dense ``n x n`` work: $O(n^3)$ time (``n <= 4096``); the Monte-Carlo path costs
$O(\mathrm{rounds} \cdot \mathrm{nnz} \cdot n)$.

References
----------
.. [1] T. Vogels, H. Hendrikx, M. Jaggi, "Beyond spectral gap: the role of the topology in
   decentralized learning", NeurIPS 2022 (code: ``epfml/topology-in-decentralized-learning``).
.. [2] M. de Vos, S. Farhadkhani, R. Guerraoui, A.-M. Kermarrec, R. Pires, R. Sharma,
   "Epidemic learning: boosting decentralized learning with randomized communication",
   NeurIPS 2023.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.special import roots_legendre

from topofl._utils.validation import (
    check_bool,
    check_choice,
    check_int,
    check_memory,
    check_real,
    check_time,
    stochasticity,
)
from topofl.graph import TimeVarying
from topofl.spectral._common import STOCHASTIC_ATOL, _as_csr, _is_symmetric

#: The decay used when none is given: the paper fits 0.951 to its Cifar-10 experiments.
DEFAULT_GAMMA = 0.95
#: Largest ``n`` for the dense ``O(n^3)`` computations of this module.
FULL_SPECTRUM_MAX = 4096


# ============================================================================ random schedules
@dataclass(frozen=True)
class MixingMoments:
    r"""Second moments of a random mixing matrix drawn i.i.d. each round, exchangeable in the nodes.

    For a distribution of row-stochastic ``W`` that relabelling the nodes leaves unchanged,
    $\mathbb{E}[W W^\top]$ and $\mathbb{E}[W^\top W]$ have one value on the diagonal and one
    off it, and these four numbers carry every second-order quantity of the schedule.

    Attributes
    ----------
    n : int
    row_self : float
        $c = \mathbb{E}\sum_j W_{ij}^2$ (diagonal of $\mathbb{E}[WW^\top]$; it equals the diagonal
        of $\mathbb{E}[W^\top W]$, both being $\mathbb{E}\|W\|_F^2 / n$).
    row_cross : float
        $d = \mathbb{E}\sum_k W_{ik} W_{jk}$, $i \ne j$.
    col_cross : float
        $d' = \mathbb{E}\sum_k W_{ki} W_{kj}$, $i \ne j$; $d' = (1 - c)/(n - 1)$ since
        $\mathbf 1^\top W^\top W \mathbf 1 = n$.
    family : str
        The schedule these are the moments of.

    Examples
    --------
    >>> m = tf.spectral.expected_mixing(tf.topologies.el_oracle(16, 3, seed=0))
    >>> m.row_self, round(m.consensus_contraction, 6)
    (0.25, 0.2)
    """

    n: int
    row_self: float
    row_cross: float
    col_cross: float
    family: str

    @property
    def consensus_contraction(self) -> float:
        r"""$\beta = c - d'$: $\mathbb{E}\|W x\|^2 = \beta \|x\|^2$ for every $x \perp \mathbf 1$.

        The one-round expected contraction of a disagreement vector (the quantity Epidemic
        Learning's analysis bounds; $1 - \beta$ plays the role of a spectral gap). Also the
        factor by which one round scales the expected neighbourhood heterogeneity of every
        label distribution (:func:`~topofl.spectral.neighborhood_heterogeneity`).
        """
        return float(self.row_self - self.col_cross)

    def effective_neighbors(self, gamma: float = DEFAULT_GAMMA) -> float:
        r"""The exact expected effective number of neighbours at decay ``gamma``.

        With $x = c - d$: $n(\gamma) = (1 - \gamma x) / ((1 - \gamma) x + d)$, from the fixed
        point $\Sigma = \mathbb{E}[W(\gamma\Sigma + I)W^\top]$, which is exchangeable
        ($\Sigma = \alpha I + b\,\mathbf 1\mathbf 1^\top$) and uses $W\mathbf 1 = \mathbf 1$.

        Examples
        --------
        >>> m = tf.spectral.MixingMoments(n=8, row_self=1 / 8, row_cross=1 / 8,
        ...                               col_cross=1 / 8, family="complete")
        >>> round(m.effective_neighbors(0.9), 12)  # W = J every round: all n nodes
        8.0
        """
        g = _check_gamma(gamma)
        x = self.row_self - self.row_cross
        return float((1.0 - g * x) / ((1.0 - g) * x + self.row_cross))

    def as_dict(self) -> dict[str, Any]:
        """The fields and ``consensus_contraction`` as a JSON-serialisable dict."""
        return {"n": self.n, "row_self": self.row_self, "row_cross": self.row_cross,
                "col_cross": self.col_cross, "family": self.family,
                "consensus_contraction": self.consensus_contraction}


def _doubly(n: int, c: float, family: str) -> MixingMoments:
    # Doubly stochastic: W W^T and W^T W both have rows summing to 1.
    d = (1.0 - c) / (n - 1) if n > 1 else 0.0
    return MixingMoments(n=n, row_self=c, row_cross=d, col_cross=d, family=family)


def _regular_moments(n: int, k: int, family: str) -> MixingMoments:
    # Every row and column holds k + 1 entries 1/(k+1): sum_j W_ij^2 = 1/(k+1).
    return _doubly(n, 1.0 / (k + 1), family)


def _el_local_moments(n: int, s: int) -> MixingMoments:
    """EL-Local: every node sends to ``s`` distinct uniform others; receivers average uniformly.

    Node ``i`` receives from $K_i \\sim \\mathrm{Bin}(n-1, p)$ others, $p = s/(n-1)$, and
    $W_{ij} = 1/(K_i+1)$ on itself and its senders, so $c = \\mathbb{E}[1/(K_i+1)] =
    (1 - (1-p)^n)/(n p)$. For $i \\ne j$, $\\sum_k W_{ik}W_{jk} = (X_{ij} + X_{ji} + B) /
    ((K_i+1)(K_j+1))$ with $X_{ij}$ = "i sends to j" and $B$ the common senders. Writing
    $1/(K+1) = \\int_0^1 u^K du$, the expectation factorises over the independent senders into
    a polynomial of degree ``n - 1`` in ``u`` and in ``v``, integrated exactly by a
    Gauss-Legendre rule with ``n // 2 + 2`` nodes per axis.
    """
    p = s / (n - 1)
    c = (1.0 - (1.0 - p) ** n) / (n * p)
    m = n - 2
    x, w = roots_legendre(n // 2 + 2)
    x, w = (x + 1.0) / 2.0, w / 2.0
    U, V = np.meshgrid(x, x, indexing="ij")
    au, av = 1.0 - p + p * U, 1.0 - p + p * V  # E[u^X] of the two nodes' own sends
    if m == 0:
        F = au * (p * V) + (p * U) * av
    else:
        p11 = s * (s - 1) / ((n - 1) * (n - 2))  # a third node sends to both
        p10 = p - p11
        G = (1.0 - 2.0 * p + p11) + p10 * U + p10 * V + p11 * U * V
        Gm1 = G ** (m - 1)
        F = (au * (p * V) + (p * U) * av) * (G * Gm1) + au * av * m * p11 * U * V * Gm1
    d = float(np.sum(np.outer(w, w) * F))
    return MixingMoments(n=n, row_self=float(c), row_cross=d, col_cross=(1.0 - c) / (n - 1),
                         family="el_local")


def _pull_moments(n: int, k: int) -> MixingMoments:
    # Node i pulls from k distinct uniform others, W_ij = 1/(k+1) on them and itself.
    p = k / (n - 1)
    c = 1.0 / (k + 1)
    d = (2.0 * p + (n - 2) * p * p) / (k + 1) ** 2
    return MixingMoments(n=n, row_self=c, row_cross=d, col_cross=(1.0 - c) / (n - 1),
                         family="random_directed")


def _matching_moments(n: int) -> MixingMoments:
    # Pairs average with weights 1/2; for odd n one node sits out (its row is e_i).
    c = 0.5 if n % 2 == 0 else (n + 1) / (2.0 * n)
    return _doubly(n, c, "random_matching")


def _partite_moments(n: int, k: int) -> MixingMoments:
    # Random groups of k + 1 (the n mod (k+1) left over form one smaller group) average
    # exactly: a node's row holds 1/|group| entries 1/|group|, so sum_j W_ij^2 = 1/|group|,
    # and summed over the nodes it counts the groups: c = ceil(n / (k+1)) / n.
    return _doubly(n, (-(-n // (k + 1))) / n, "partite_match")


def _teleportation_moments(n: int, k: int, graph: str) -> MixingMoments:
    # k uniform active nodes mix (each active row: 1/w entries w), the others keep their model:
    # c = (k/n) w + (1 - k/n); exchangeable and doubly stochastic. The random regular slot
    # graph is d-regular with weights 1/(d + 1), so given it the same holds.
    if graph == "random_regular":
        from topofl.topologies.teleportation import (  # loads every graph family, networkx
            teleportation_slot_degree,
        )

        w = 1.0 / (teleportation_slot_degree(k) + 1)
    else:
        w = 1.0 / k if graph == "complete" else 1.0 / min(k, 3)
    return _doubly(n, (k / n) * w + (1.0 - k / n), "teleportation")


# name -> (parameter names besides "seed", builder from those parameters)
_CLOSED_FORMS: dict[str, tuple[tuple[str, ...], Callable[..., MixingMoments]]] = {
    "el_oracle": (("n", "s"), lambda n, s: _regular_moments(n, s, "el_oracle")),
    "random_undirected": (("n", "k"), lambda n, k: _regular_moments(n, k, "random_undirected")),
    "el_local": (("n", "s"), _el_local_moments),
    "random_directed": (("n", "k", "mode"), lambda n, k, mode: _pull_moments(n, k)),
    "random_matching": (("n",), _matching_moments),
    "partite_match": (("n", "k"), _partite_moments),
    "teleportation": (("n", "k", "graph"), _teleportation_moments),
}


def _closed_form(tv: TimeVarying) -> MixingMoments | None:
    entry = _CLOSED_FORMS.get(tv.name)
    if entry is None or tv.period is not None:
        return None
    keys, build = entry
    params = dict(tv.params)
    if set(params) != {*keys, "seed"} or params.get("n") != tv.n:
        return None
    if tv.name == "random_directed" and params["mode"] != "pull":
        return None
    return build(*(params[k] for k in keys))


def expected_mixing(graph: Any) -> MixingMoments:
    r"""The exact second moments of a random schedule topofl builds (one i.i.d. graph per round).

    Known in closed form for the schedules whose distribution is exchangeable in the nodes:
    :func:`~topofl.topologies.el_oracle` and :func:`~topofl.topologies.random_undirected`
    (a uniform random ``s``-regular graph, weights ``1/(s+1)``: $c = 1/(s+1)$),
    :func:`~topofl.topologies.el_local` (``s`` random out-neighbours, receivers average),
    :func:`~topofl.topologies.random_directed` in ``"pull"`` mode,
    :func:`~topofl.topologies.random_matching`, :func:`~topofl.topologies.partite_match`
    (random groups of ``k + 1`` average: $c = \lceil n/(k+1) \rceil / n$) and
    :func:`~topofl.topologies.teleportation` (``k`` uniform active nodes mix, the others keep
    their model).

    Parameters
    ----------
    graph : TimeVarying
        A schedule built by one of the constructors above (recognised by its ``name`` and
        ``params``).

    Returns
    -------
    MixingMoments

    Raises
    ------
    TypeError
        If ``graph`` is not a ``TimeVarying``.
    ValueError
        If no closed form is known for it (a static or periodic graph, another family,
        push-mode ``random_directed``).

    Examples
    --------
    EL-Oracle and EL-Local at the same ``s`` send the same number of messages; a node of
    EL-Local averages over a random number of models:

    >>> o = tf.spectral.expected_mixing(tf.topologies.el_oracle(96, 7, seed=0))
    >>> l = tf.spectral.expected_mixing(tf.topologies.el_local(96, 7, seed=0))
    >>> round(o.consensus_contraction, 4), round(l.consensus_contraction, 4)
    (0.1158, 0.1322)
    >>> round(o.effective_neighbors(0.95), 2), round(l.effective_neighbors(0.95), 2)
    (59.33, 55.34)
    """
    if not isinstance(graph, TimeVarying):
        raise TypeError(
            f"expected_mixing needs a random schedule (a TimeVarying), got {type(graph).__name__}"
        )
    m = _closed_form(graph)
    if m is None:
        raise ValueError(
            f"no closed form is known for the schedule {graph.name!r} (params "
            f"{dict(graph.params)}); known: {', '.join(sorted(_CLOSED_FORMS))} (random_directed "
            "in pull mode); use random_walk_variance for a Monte-Carlo estimate"
        )
    return m


# ============================================================================ the random walk
@dataclass(frozen=True)
class RandomWalkVariance:
    r"""Stationary variance of the decayed random walk of :mod:`topofl.spectral.neighbors`.

    Attributes
    ----------
    gamma : float
        The decay $\gamma$.
    mean_variance : float
        $\frac1n \sum_i \Sigma_{ii}$ (expected over the schedule for a random one; averaged over
        the phases of a periodic one).
    variance : tuple of float or None
        $\Sigma_{ii}$ per node (``None`` if not computed).
    method : str
        ``"eigenvalues"``, ``"lyapunov"``, ``"periodic"``, ``"closed_form"`` or
        ``"monte_carlo"`` (see the module docstring).
    exact : bool
        False only for ``"monte_carlo"``.
    stderr : float or None
        Monte-Carlo standard error of ``mean_variance`` (batch means), else ``None``.
    rounds : int or None
        Rounds averaged by the Monte-Carlo estimate (after ``burn_in`` rounds).
    burn_in : int or None
    """

    gamma: float
    mean_variance: float
    variance: tuple[float, ...] | None
    method: str
    exact: bool
    stderr: float | None = None
    rounds: int | None = None
    burn_in: int | None = None

    def effective_neighbors(self, mode: str = "mean") -> float | np.ndarray:
        """``1/(1-gamma)`` over the mean (``"mean"``), the largest (``"worst"``) or each
        (``"all"``, an ``(n,)`` array) stationary variance."""
        check_choice(mode, "mode", ("mean", "worst", "all"))
        alone = 1.0 / (1.0 - self.gamma)
        if mode == "mean":
            return float(alone / self.mean_variance)
        if self.variance is None:
            raise ValueError(f"mode={mode!r} needs the per-node variances (per_node=True)")
        v = np.asarray(self.variance)
        return float(alone / v.max()) if mode == "worst" else alone / v

    @property
    def effective_neighbors_stderr(self) -> float | None:
        """Standard error of the mean-mode value (delta method), ``None`` when exact."""
        if self.stderr is None:
            return None
        return float(self.stderr / (1.0 - self.gamma) / self.mean_variance**2)


def _check_gamma(gamma: Any) -> float:
    return check_real(gamma, "gamma", low=0.0, high=1.0, high_open=True)


#: Lower bounds on the seconds per ``n^3`` of the dense solves of the exact paths, under what
#: they took on this project's 2-core machine (process CPU time, one call, a ring's W):
#: eigenvalues of a symmetric W 1.3e-10 (n = 800), eigenvalues and eigenvectors (a per-node
#: variance) 1.6e-10 (n = 1600), the discrete Lyapunov solve of a non-symmetric W 3.3e-8
#: (n = 800).
_N3_SECONDS = {"eigenvalues": 4e-11, "eigenvectors": 8e-11, "lyapunov": 1.1e-8}


def _check_dense(n: int, what: str) -> None:
    if n > FULL_SPECTRUM_MAX:
        raise ValueError(
            f"{what} solves a dense n x n problem (O(n^3)); n={n} is above "
            f"FULL_SPECTRUM_MAX={FULL_SPECTRUM_MAX}"
        )
    check_memory(6.0 * 8.0 * n * n, f"{what} on n={n} nodes")


def _check_solve_time(n: int, solve: str, what: str, times: int = 1) -> None:
    """Refuse at once a dense solve (:data:`_N3_SECONDS`) whose lower bound is over the limit."""
    check_time(times * _N3_SECONDS[solve] * float(n) ** 3,
               f"{what} on n={n} nodes ({times} dense {solve} solve(s), O(n^3))")


#: A lower bound on the seconds one round of a period costs :func:`_periodic`, besides its
#: dense ``n x n`` passes: the round's ``W(t)`` built and tested for row-stochasticity
#: (47-50 us alone) and applied three times (110 us a round in all, measured at n = 4 over a
#: period of 3000 rounds).
_PERIOD_ROUND_SECONDS = 3e-5
#: A lower bound on the seconds per entry of a dense ``n x n`` pass (scipy's and NumPy's
#: multiply-adds); :func:`_periodic` makes at least 12 such passes a round.
_PERIOD_ENTRY_SECONDS = 1e-10


def _check_period_time(tv: TimeVarying, what: str) -> None:
    """Refuse at once the exact periodic path (:func:`_periodic`) when visiting every round of
    the period (its ``W(t)`` built, tested and applied to dense ``n x n`` matrices) would take
    longer than the limit (:func:`~topofl._utils.validation.check_time`)."""
    p = tv.period
    if p is None:  # not periodic: no period to visit
        return
    n = tv.n
    per = _PERIOD_ROUND_SECONDS + 12.0 * _PERIOD_ENTRY_SECONDS * float(n) * float(n)
    check_time(p * per, f"{what} on {tv.name!r} (n={n}), exact over the {p:,} rounds of its "
               "period")


def _static_solve(M: sp.csr_array, per_node: bool) -> str:
    """Which dense solve :func:`_static` does for ``M``."""
    if _is_symmetric(M):
        return "eigenvectors" if per_node else "eigenvalues"
    return "lyapunov"


def _row_stochastic(M: sp.csr_array, where: str) -> None:
    kind = stochasticity(M, atol=STOCHASTIC_ATOL)
    if kind in ("row", "doubly"):
        return
    if kind == "column":
        raise ValueError(
            f"the effective number of neighbours is defined for averaging (row-stochastic) "
            f"mixing matrices; {where} is column-stochastic only (push-sum), whose gossip "
            "de-biases by the push-sum weights instead"
        )
    sums = np.asarray(M.sum(axis=1)).ravel()
    i = int(np.argmax(np.abs(sums - 1.0)))
    raise ValueError(
        f"the effective number of neighbours needs row-stochastic mixing matrices; {where} has "
        f"row {i} summing to {sums[i]:.6g}"
    )


def _static(M: sp.csr_array, gamma: float, per_node: bool) -> tuple[float, np.ndarray | None, str]:
    A = M.toarray()
    if _is_symmetric(M):
        S = (A + A.T) / 2.0
        if per_node:
            lam, Q = np.linalg.eigh(S)
            f = lam * lam / (1.0 - gamma * lam * lam)
            var = (Q * Q) @ f
            return float(var.mean()), var, "eigenvalues"
        lam = np.linalg.eigvalsh(S)
        return float(np.mean(lam * lam / (1.0 - gamma * lam * lam))), None, "eigenvalues"
    Sigma = sla.solve_discrete_lyapunov(math.sqrt(gamma) * A, A @ A.T)
    var = np.diag(Sigma).copy()
    return float(var.mean()), var if per_node else None, "lyapunov"


def _step(M: sp.csr_array, S: np.ndarray, gamma: float) -> np.ndarray:
    """``W (gamma S + I) W^T`` for a symmetric ``S`` (``W`` sparse)."""
    T = gamma * S
    T[np.diag_indices_from(T)] += 1.0
    B = np.asarray(M @ T)  # W T
    out: np.ndarray = np.asarray(M @ B.T)  # W (W T)^T = W T W^T (T symmetric)
    sym: np.ndarray = (out + out.T) / 2.0
    return sym


def _periodic(tv: TimeVarying, gamma: float, per_node: bool
              ) -> tuple[float, np.ndarray | None, str]:
    p = tv.period
    assert p is not None
    n = tv.n
    Ws = [tv.at(t).W for t in range(p)]
    for t, M in enumerate(Ws):
        _row_stochastic(M, f"W({t})")
    # Sigma_p = gamma^p P Sigma_0 P^T + Q, with P = W(p-1)...W(0) and Q the recursion from 0.
    P = np.eye(n)
    Q = np.zeros((n, n))
    for M in Ws:
        P = np.asarray(M @ P)
        Q = _step(M, Q, gamma)
    S = sla.solve_discrete_lyapunov(gamma ** (p / 2.0) * P, Q)
    S = (S + S.T) / 2.0
    total = np.zeros(n)
    for M in Ws:  # the phases 1..p (phase p is phase 0)
        S = _step(M, S, gamma)
        total += np.diag(S)
    var = total / p
    return float(var.mean()), var if per_node else None, "periodic"


def _default_burn_in(gamma: float) -> int:
    # The recursion forgets its start like gamma^t: 1e-8 relative bias.
    return 1 if gamma == 0.0 else max(1, math.ceil(math.log(1e-8) / math.log(gamma)))


def _monte_carlo(tv: TimeVarying, gamma: float, rounds: int, burn_in: int, per_node: bool
                 ) -> RandomWalkVariance:
    n = tv.n
    S = np.zeros((n, n))
    means = np.empty(rounds)
    acc = np.zeros(n)
    for t in range(burn_in + rounds):
        M = tv.at(t).W
        _row_stochastic(M, f"W({t})")
        S = _step(M, S, gamma)
        if t >= burn_in:
            d = np.diag(S)
            means[t - burn_in] = d.mean()
            acc += d
    # Batches a few correlation times long (the recursion remembers ~1/(1-gamma) rounds).
    length = max(1, math.ceil(4.0 / (1.0 - gamma)))
    batches = rounds // length
    stderr = None
    if batches >= 2:
        bm = means[: batches * length].reshape(batches, length).mean(axis=1)
        stderr = float(bm.std(ddof=1) / math.sqrt(batches))
    var = acc / rounds
    return RandomWalkVariance(
        gamma=gamma, mean_variance=float(means.mean()),
        variance=tuple(float(v) for v in var) if per_node else None, method="monte_carlo",
        exact=False, stderr=stderr, rounds=rounds, burn_in=burn_in,
    )


def random_walk_variance(
    graph: Any,
    gamma: float = DEFAULT_GAMMA,
    *,
    rounds: int = 2000,
    burn_in: int | None = None,
    per_node: bool = True,
) -> RandomWalkVariance:
    r"""Stationary variance of the decayed random walk on ``graph`` (see the module docstring).

    Parameters
    ----------
    graph : Topology, array_like, sparse matrix or TimeVarying
        Every ``W(t)`` row-stochastic (within 1e-6), ``n <= 4096``.
    gamma : float, default 0.95
        Decay in ``[0, 1)``.
    rounds : int, default 2000
        Monte-Carlo path only: rounds averaged.
    burn_in : int, optional
        Monte-Carlo path only: rounds run before averaging; default
        $\lceil \ln 10^{-8} / \ln\gamma \rceil$ (the start is then forgotten to 1e-8).
    per_node : bool, default True
        Also return each node's variance (for a static symmetric ``W`` the mean alone needs
        only the eigenvalues).

    Returns
    -------
    RandomWalkVariance

    Raises
    ------
    TypeError
        If ``per_node`` is not a bool.
    ValueError
        If a ``W(t)`` is not row-stochastic (the message says if it is push-sum's
        column-stochastic kind), ``gamma`` is outside ``[0, 1)`` or ``n > 4096``; or when the
        exact computation would take longer than ``TOPOFL_MAX_SECONDS`` (default 60 s, by a
        lower-bound estimate): the dense solves, or the rounds of a long period (e.g.
        ``periodic_averaging`` with a huge ``every``).

    Examples
    --------
    >>> r = tf.spectral.random_walk_variance(tf.topologies.ring(8), 0.5)
    >>> r.method, r.exact, round(r.mean_variance, 4)
    ('eigenvalues', True, 0.5384)
    """
    g = _check_gamma(gamma)
    rounds = check_int(rounds, "rounds", low=1)
    if burn_in is not None:
        burn_in = check_int(burn_in, "burn_in", low=0)
    per_node = check_bool(per_node, "per_node")
    if not isinstance(graph, TimeVarying):
        M = _as_csr(graph)
        _row_stochastic(M, "W")
        _check_dense(M.shape[0], "random_walk_variance")
        _check_solve_time(M.shape[0], _static_solve(M, per_node), "random_walk_variance")
        mean, var, method = _static(M, g, per_node)
        return _result(g, mean, var, method)
    tv = graph
    _check_dense(tv.n, "random_walk_variance")
    if tv.period is not None:
        if tv.period == 1:
            M = tv.at(0).W
            _row_stochastic(M, "W")
            _check_solve_time(tv.n, _static_solve(M, per_node), "random_walk_variance")
            mean, var, method = _static(M, g, per_node)
        else:
            _check_period_time(tv, "random_walk_variance")
            _check_solve_time(tv.n, "lyapunov", "random_walk_variance")
            mean, var, method = _periodic(tv, g, per_node)
        return _result(g, mean, var, method)
    moments = _closed_form(tv)
    if moments is not None:
        _row_stochastic(tv.at(0).W, "W(0)")
        n_eff = moments.effective_neighbors(g)
        mean = 1.0 / ((1.0 - g) * n_eff)
        return _result(g, mean, np.full(tv.n, mean) if per_node else None, "closed_form")
    b = _default_burn_in(g) if burn_in is None else burn_in
    return _monte_carlo(tv, g, rounds, b, per_node)


def _result(gamma: float, mean: float, var: np.ndarray | None, method: str
            ) -> RandomWalkVariance:
    return RandomWalkVariance(
        gamma=gamma, mean_variance=float(mean),
        variance=None if var is None else tuple(float(v) for v in var), method=method,
        exact=True,
    )


def effective_neighbors(
    graph: Any,
    gamma: float = DEFAULT_GAMMA,
    *,
    mode: str = "mean",
    rounds: int = 2000,
    burn_in: int | None = None,
) -> float | np.ndarray:
    r"""The effective number of neighbours $n_W(\gamma)$ of Vogels et al.

    See the module docstring for the definition, where it is defined and how each kind of
    graph is computed (exactly, except for a random schedule without a closed form, which is a
    Monte-Carlo estimate: use :func:`random_walk_variance` to see its method and error).

    Parameters
    ----------
    graph : Topology, array_like, sparse matrix or TimeVarying
        Row-stochastic ``W(t)``.
    gamma : float, default 0.95
        Decay in ``[0, 1)``.
    mode : {"mean", "worst", "all"}, default "mean"
        ``1/(1-gamma)`` over the mean, the largest, or each node's stationary variance.
    rounds, burn_in
        Monte-Carlo path only, see :func:`random_walk_variance`.

    Returns
    -------
    float, or ``(n,)`` numpy.ndarray for ``mode="all"``

    Raises
    ------
    ValueError
        As :func:`random_walk_variance`.

    Examples
    --------
    The complete graph gives every node all ``n``, a node alone 1, at any decay:

    >>> tf.spectral.effective_neighbors(tf.topologies.complete(6), 0.9)
    6.0
    >>> tf.spectral.effective_neighbors(np.eye(4), 0.9)
    1.0

    A ring of 32 has three neighbours per round but many more effective ones when the decay is
    slow:

    >>> [round(tf.spectral.effective_neighbors(tf.topologies.ring(32), g), 2)
    ...  for g in (0.0, 0.5, 0.9, 0.99)]
    [3.0, 3.72, 6.63, 17.08]
    """
    check_choice(mode, "mode", ("mean", "worst", "all"))
    r = random_walk_variance(graph, gamma, rounds=rounds, burn_in=burn_in,
                             per_node=mode != "mean")
    return r.effective_neighbors(mode)
