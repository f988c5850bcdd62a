"""Push-sum (SGP) constants: the paper bounds and their measured counterparts."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from topofl._utils.validation import arc_pattern, check_int, stochasticity
from topofl.exceptions import NotConnectedError
from topofl.graph import as_time_varying
from topofl.spectral._common import (
    _FLOOR,
    _check_horizon,
    _check_time,
    _per_object,
    _rounds,
    _sample_columns,
    _spread,
)
from topofl.spectral.connectivity import (
    _all_windows_connected,
    _diameter_of_pattern,
    _n_strong_components,
    _union_pattern,
    _window_unions,
    b_connectivity,
)


@dataclass(frozen=True)
class PushSumConstants:
    r"""Constants of the push-sum (SGP) analysis for a time-varying graph, bounds and measured.

    The SGP analysis (Assran et al. 2019, Lemma 3, following Nedić & Olshevsky), which
    DFedPGP's Theorem 1 uses, states that for a ``B``-bounded strongly connected sequence of
    column-stochastic matrices with positive diagonals there are stochastic vectors
    $\phi(t)$ with

    .. math:: |[W(t{:}s)]_{ij} - \phi_i(t)| \le C q^{t-s} \quad (t \ge s \ge 0).

    The attributes ``a`` to ``delta`` are the bounds (worst case over every sequence with the
    same ``a``, ``diameter``, ``B``; loose by design, often by many orders of magnitude);
    ``spread`` to ``kind`` are measured (on this sequence, over this horizon; descriptive, not
    guaranteed beyond it).

    Attributes
    ----------
    a : float
        Smallest positive mixing weight over the horizon.
    diameter : int
        $\Delta$: the largest diameter of the union graph of ``B`` consecutive rounds.
    B : int
        Window of B-bounded strong connectivity (:func:`b_connectivity` unless given).
    q : float
        Bound $(1 - a^{\Delta B})^{1/(\Delta B + 1)}$ (Remark 2 of DFedPGP); often ``1.0`` in
        float64 -- see ``one_minus_q``.
    one_minus_q : float
        $1 - q$ computed without cancellation (it can underflow to 0.0 for huge $\Delta B$).
    C : float
        Bound $2 (1 + a^{-\Delta B}) / (1 - a^{\Delta B})$; ``inf`` if it overflows float64.
    log10_C : float
        $\log_{10} C$, always finite.
    delta : float
        $\delta = \min_{t < \mathrm{horizon}} \min_i [W(t{:}0)\mathbf{1}]_i$, the smallest push-sum
        weight (Taheri et al. 2020, Prop. 2.1; the $\delta$ of DFedPGP's Theorem 1). Computed
        exactly over the horizon (it is ``1.0`` for row-stochastic sequences).
    spread : tuple of float
        ``spread[m-1]`` $= D(m)$: the largest difference between two columns (``kind="column"``)
        or two rows (``kind="row"``) of a product of ``m`` consecutive rounds, maximised over
        the start rounds examined. $D(m)/2 = \min_\phi \max_{ij} |W(t{:}s)_{ij} - \phi_i|$ is
        the left-hand side of the bound with the best $\phi$.
    q_measured : float
        $e^{\text{slope}}$ of the least-squares line through $\log D(m)$ over the second half of
        the rounds where $D(m) > 10^{-12}$ (the asymptotic per-round contraction; the
        transient of the first rounds is left out). ``0.0`` if the products are exact after one
        round.
    C_measured : float
        The smallest constant with $D(m) \le 2 C q_{\mathrm{measured}}^{m-1}$ for every measured
        ``m`` above the floor, so the measured envelope holds on the horizon by construction.
    horizon : int
        Rounds examined.
    kind : str
        ``"column"`` for column-stochastic (push-sum) sequences; ``"row"`` for row-stochastic
        ones, where the same bounds hold for rows (products converge to $\mathbf{1}\pi^\top$).
    """

    a: float
    diameter: int
    B: int
    q: float
    one_minus_q: float
    C: float
    log10_C: float
    delta: float
    q_measured: float
    C_measured: float
    horizon: int
    kind: str
    spread: tuple[float, ...]

    def bound(self, steps: int) -> float:
        r"""$C q^{s}$, the bound on $|[W(t{:}u)]_{ij} - \phi_i(t)|$ for ``steps`` $= s = t - u$."""
        steps = check_int(steps, "steps", low=0)
        if steps == 0:
            return self.C
        log_q = math.log1p(-self.one_minus_q) if self.one_minus_q < 1 else -math.inf
        val = self.log10_C * math.log(10) + steps * log_q
        return math.exp(val) if val < 709 else math.inf

    def measured_bound(self, steps: int) -> float:
        r"""$C_{\mathrm{measured}} q_{\mathrm{measured}}^{\mathrm{steps}}$."""
        steps = check_int(steps, "steps", low=0)
        return float(self.C_measured * self.q_measured**steps)

    def as_dict(self) -> dict[str, Any]:
        """The fields as a JSON-serialisable dict (``inf`` becomes ``None``; ``spread`` a list)."""
        out = asdict(self)
        out["spread"] = list(self.spread)
        return {
            k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in out.items()
        }


def _check_pushsum_rounds(Ws: Sequence[sp.csr_array]) -> str:
    kinds = _per_object(stochasticity, Ws)
    if all(k in ("column", "doubly") for k in kinds):
        kind = "column"
    elif all(k in ("row", "doubly") for k in kinds):
        kind = "row"
    else:
        bad = [t for t, k in enumerate(kinds) if k == "none"]
        detail = (
            f"W({bad[0]}) is neither row- nor column-stochastic" if bad
            else "the rounds mix row-stochastic and column-stochastic matrices"
        )
        raise ValueError(
            "pushsum_constants needs every W(t) column-stochastic (push-sum) or every W(t) "
            f"row-stochastic; {detail}"
        )
    for t, M in enumerate(Ws):
        zero = np.flatnonzero(M.diagonal() <= 0)
        if zero.size:
            raise ValueError(
                f"the push-sum bounds assume every node keeps a positive self-weight; "
                f"W({t})[{int(zero[0])}, {int(zero[0])}] = 0"
            )
    return kind


def _fit_rate(spread: Sequence[float]) -> tuple[float, float]:
    D = np.asarray(spread, dtype=np.float64)
    above = np.flatnonzero(D > _FLOOR)
    if above.size == 0:
        return 0.0, 0.0
    m = above + 1  # number of factors
    if above.size == 1:
        return 0.0, float(D[above[0]] / 2.0)
    half = m >= (m[0] + m[-1]) / 2.0
    if np.count_nonzero(half) < 2:
        half = np.ones_like(half)
    slope = float(np.polyfit(m[half], np.log(D[above][half]), 1)[0])
    q = float(math.exp(slope))
    logC = np.log(D[above] / 2.0) - (m - 1) * slope
    return q, float(math.exp(float(logC.max())))


def pushsum_constants(
    tv: Any,
    *,
    horizon: int,
    B: int | None = None,
    starts: int = 4,
    max_columns: int = 128,
) -> PushSumConstants:
    r"""Push-sum constants ``a``, ``Delta``, ``B``, ``q``, ``C``, ``delta``: bounds and measured.

    See :class:`PushSumConstants` for the definitions; which fields are worst-case *bounds*
    (``q``, ``C``, from ``a``, ``Delta``, ``B``) and which are *measured* on this sequence
    (``q_measured``, ``C_measured``, ``spread``; ``delta`` is exact over the horizon).

    Parameters
    ----------
    tv : TimeVarying or Topology
        Every ``W(t)`` column-stochastic (push-sum) -- or every one row-stochastic -- with a
        positive diagonal; ``n >= 2``.
    horizon : int
        Rounds ``0..horizon-1`` are examined (keyword-only, ``>= 1``).
    B : int, optional
        Connectivity window; by default :func:`b_connectivity` over the horizon. A given ``B``
        is checked.
    starts : int, default 4
        Number of start rounds ``s`` (evenly spaced over the horizon, or over one period) whose
        products $W(t{:}s)$ are measured.
    max_columns : int, default 128
        Products are tracked on at most this many columns (evenly spaced); above it the
        measured spread is a lower estimate. Cost $O(\mathrm{starts} \cdot \mathrm{horizon}
        \cdot \mathrm{nnz} \cdot \min(n, \mathrm{max\_columns}))$.

    Returns
    -------
    PushSumConstants

    Raises
    ------
    NotConnectedError
        If no window ``B <= horizon`` makes the sequence B-connected (or the given ``B`` does
        not): the constants are then undefined (the bound would be infinite).
    ValueError
        If ``n < 2``, ``horizon < 1``, a round is not column- (or row-) stochastic, or a node
        keeps zero self-weight.

    References
    ----------
    .. [1] M. Assran, N. Loizou, N. Ballas, M. Rabbat, "Stochastic gradient push for
       distributed deep learning", ICML 2019, Lemma 3.
    .. [2] A. Nedić, A. Olshevsky, "Distributed optimization over time-varying directed
       graphs", IEEE TAC 2015.
    .. [3] H. Taheri, A. Mokhtari, H. Hassani, R. Pedarsani, "Quantized decentralized stochastic
       learning over directed graphs", ICML 2020, Proposition 2.1.

    Examples
    --------
    >>> tv = tf.topologies.random_directed(16, 3, seed=0, mode="push")
    >>> c = tf.spectral.pushsum_constants(tv, horizon=20)
    >>> c.B, c.diameter, c.a
    (3, 3, 0.25)
    >>> float(f"{c.one_minus_q:.3g}"), round(c.log10_C, 1)  # the bounds: 1 - q, log10 C
    (3.81e-07, 5.7)
    >>> round(c.q_measured, 2), round(c.C_measured, 2)  # what the products actually do
    (0.44, 0.41)
    >>> all(c.spread[m] <= 2 * c.bound(m) for m in range(len(c.spread)))
    True
    """
    return _constants(tv, horizon=horizon, B=B, starts=starts, max_columns=max_columns)


def _constants(tv: Any, *, horizon: int, B: int | None = None, starts: int = 4,
               max_columns: int = 128,
               diameter_of: Callable[[sp.csr_array], int | None] = _diameter_of_pattern
               ) -> PushSumConstants:
    """:func:`pushsum_constants`, the diameter of each window's union by ``diameter_of``
    (:func:`~topofl.spectral.summary` passes a linear-cost one for large graphs)."""
    g = as_time_varying(tv)
    h = _check_horizon(horizon, n=g.n)
    starts = check_int(starts, "starts", low=1)
    max_columns = check_int(max_columns, "max_columns", low=1)
    _check_time(g, h, "horizon", cols=min(g.n, max_columns) * starts)
    n = g.n
    if n < 2:
        raise ValueError(f"push-sum constants need n >= 2 nodes, got n={n}")
    Ws = _rounds(g, h)
    kind = _check_pushsum_rounds(Ws)
    pats = _per_object(lambda M: arc_pattern(M, diagonal=False), Ws)
    if B is None:
        found = b_connectivity(g, h)
        if found is None:
            comps = _n_strong_components(_union_pattern(Ws))
            raise NotConnectedError(
                f"{g.name!r} is not B-bounded strongly connected for any B <= horizon={h}: even "
                f"the union of all {h} rounds has {comps} strongly connected components; q and "
                "C need B-bounded strong connectivity (Assumption 1 of DFedPGP)"
            )
        B = found
    else:
        B = check_int(B, "B", low=1, high=h)
        if not _all_windows_connected(pats, B, g.period):
            best = b_connectivity(g, h)
            raise NotConnectedError(
                f"{g.name!r} is not {B}-bounded strongly connected over {h} rounds (the "
                f"smallest window that works is B={best})"
            )
    a = min(_per_object(lambda M: float(M.data[M.data > 0].min()), Ws))
    Delta = 0
    for _, U in _window_unions(pats, B, g.period):
        d = diameter_of(U)
        if d is None:  # cannot happen: every window was checked strongly connected above
            raise NotConnectedError(f"{g.name!r}: a window of {B} rounds is not connected")
        Delta = max(Delta, d)
    # Bounds, in logs: x = a^(Delta B).
    e = Delta * B
    log_x = e * math.log(a)
    x = math.exp(log_x)
    log1m_x = math.log1p(-x) if x < 1 else -math.inf
    q = math.exp(log1m_x / (e + 1))
    one_minus_q = -math.expm1(log1m_x / (e + 1))
    ln_C = math.log(2.0) + float(np.logaddexp(0.0, -log_x)) - log1m_x
    C = math.exp(ln_C) if ln_C < 709 else math.inf
    # delta: smallest row sum of W(t:0), i.e. smallest push-sum weight.
    mu = np.ones(n)
    delta = math.inf
    for M in Ws:
        mu = np.asarray(M @ mu)
        delta = min(delta, float(mu.min()))
    # Measured spread D(m) of products of m consecutive rounds.
    candidates = min(h, g.period) if g.period is not None else h
    start_rounds = np.unique(np.linspace(0, candidates - 1, min(starts, candidates)).round())
    cols = _sample_columns(n, max_columns)
    spread = np.zeros(h)
    for s in start_rounds.astype(int).tolist():
        X = np.zeros((n, cols.size))
        X[cols, np.arange(cols.size)] = 1.0
        for t in range(s, h):
            X = np.asarray(Ws[t] @ X)
            width = _spread(X, kind)
            m = t - s + 1
            spread[m - 1] = max(spread[m - 1], width)
            if width < 1e-3 * _FLOOR:
                break
    q_m, C_m = _fit_rate(spread.tolist())
    return PushSumConstants(
        a=a, diameter=int(Delta), B=int(B), q=float(q), one_minus_q=float(one_minus_q),
        C=float(C), log10_C=float(ln_C / math.log(10)), delta=float(delta),
        q_measured=q_m, C_measured=C_m, horizon=h, kind=kind,
        spread=tuple(float(v) for v in spread),
    )
