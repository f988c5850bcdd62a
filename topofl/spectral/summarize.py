"""Every scalar metric of :mod:`topofl.spectral` for one graph, as one dict."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from topofl._validation import arc_pattern, check_int, stochasticity
from topofl.graph import TimeVarying, Topology, as_time_varying
from topofl.spectral._common import (
    Method,
    _check_horizon,
    _check_method,
    _is_symmetric,
)
from topofl.spectral.connectivity import _diameter_of_pattern, b_connectivity, is_strongly_connected
from topofl.spectral.consensus import consensus_rate, finite_time_consensus
from topofl.spectral.gaps import algebraic_connectivity, spectral_gap
from topofl.spectral.pushsum import pushsum_constants
from topofl.spectral.skew import neighborhood_skew

_SUMMARY_KEYS = (
    "name", "n", "time_varying", "period", "horizon", "directed", "stochastic",
    "edges_per_node", "messages_per_round",
    "spectral_gap", "spectral_gap_lambda2", "spectral_gap_norm", "algebraic_connectivity",
    "diameter", "strongly_connected", "b_connectivity",
    "pushsum_a", "pushsum_diameter", "pushsum_B", "pushsum_q", "pushsum_one_minus_q",
    "pushsum_C", "pushsum_log10_C", "pushsum_delta", "pushsum_q_measured", "pushsum_C_measured",
    "consensus_rate", "finite_time_consensus", "neighborhood_skew",
)


def _mean_or_none(values: Sequence[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    if len(vals) != len(values) or not vals:
        return None
    return float(np.mean(vals))


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def _try(fn: Callable[[], Any], *errors: type[Exception]) -> Any:
    try:
        return fn()
    except errors:
        return None


def summary(
    graph: Any,
    *,
    horizon: int | None = None,
    label_distributions: Any = None,
    spectral_rounds: int = 10,
    seed: int = 0,
    method: Method = "auto",
    measured: bool = True,
) -> dict[str, Any]:
    r"""Every scalar metric of this module for one graph, as a JSON-serialisable dict.

    The row that training records and reports store: the same keys for a ``Topology`` and a
    ``TimeVarying`` (a metric that does not apply is ``None``).

    Parameters
    ----------
    graph : Topology or TimeVarying
    horizon : int, optional
        Rounds examined by the sequence metrics; default ``max(50, 2 * period)`` (``50`` for an
        aperiodic sequence).
    label_distributions : array_like, optional
        ``(n, c)`` per-node label distributions for ``neighborhood_skew``.
    spectral_rounds : int, default 10
        For a ``TimeVarying``, the per-round metrics are averaged over rounds
        ``0..r-1`` with ``r = min(horizon, period or spectral_rounds)``.
    seed : int, default 0
        Seed of the random initial vectors of ``consensus_rate``.
    method : {"auto", "dense", "sparse"}, default "auto"
        Eigensolver path.
    measured : bool, default True
        ``False`` skips the simulated quantities (``consensus_rate``,
        ``finite_time_consensus``, ``pushsum_q_measured``, ``pushsum_C_measured`` are then
        ``None``): the cheap row to log for every round of a training run.

    Returns
    -------
    dict
        ====================================  =================================================
        key                                   meaning
        ====================================  =================================================
        ``name``, ``n``                       family name, number of nodes
        ``time_varying``, ``period``          whether a sequence, its period (``1`` if static)
        ``horizon``                           rounds used by the sequence metrics
        ``directed``, ``stochastic``          any round directed; ``"doubly"``, ``"row"``,
                                              ``"column"`` or ``"none"`` for all rounds
        ``edges_per_node``,                   mean over rounds (:class:`~topofl.Topology`)
        ``messages_per_round``
        ``spectral_gap``,                     :func:`spectral_gap` kinds ``modulus``,
        ``spectral_gap_lambda2``,             ``lambda2`` (``None`` unless symmetric) and
        ``spectral_gap_norm``                 ``norm``; per-round mean for a sequence
        ``algebraic_connectivity``            :func:`algebraic_connectivity`, per-round mean
        ``diameter``                          :func:`diameter`, max over rounds (``None`` if a
                                              round is not strongly connected)
        ``strongly_connected``                :func:`is_strongly_connected` (the union over
                                              the horizon for a sequence)
        ``b_connectivity``                    :func:`b_connectivity` over the horizon
        ``pushsum_*``                         :func:`pushsum_constants`: bounds ``a``,
                                              ``diameter``, ``B``, ``q``, ``one_minus_q``,
                                              ``C`` (``None`` if it overflows), ``log10_C``,
                                              ``delta``; measured ``q_measured``,
                                              ``C_measured`` (all ``None`` if undefined)
        ``consensus_rate``                    :func:`consensus_rate` over the horizon
        ``finite_time_consensus``             :func:`finite_time_consensus` within the horizon
        ``neighborhood_skew``                 :func:`neighborhood_skew` (per-round mean), or
                                              ``None`` without ``label_distributions``
        ====================================  =================================================

    Notes
    -----
    Sparse eigensolvers and bit-parallel BFS keep it fast: a 10,000-node random regular graph
    of degree 10 takes a few seconds, as do the sequence metrics of a 1000-node time-varying
    graph over 100 rounds (see ``analysis/bench_spectral.py``).

    Examples
    --------
    >>> s = tf.spectral.summary(tf.topologies.ring(8))
    >>> round(s["spectral_gap"], 4), s["diameter"], s["b_connectivity"], s["stochastic"]
    (0.1953, 4, 1, 'doubly')
    >>> s = tf.spectral.summary(tf.topologies.base_graph(12, k=2))
    >>> s["period"], s["finite_time_consensus"], s["strongly_connected"], s["diameter"]
    (3, 3, True, None)
    >>> import json
    >>> len(json.dumps(s)) > 0
    True
    """
    _check_method(method)
    is_tv = isinstance(graph, TimeVarying)
    if not is_tv and not isinstance(graph, Topology):
        raise TypeError(f"graph must be a Topology or a TimeVarying, got {type(graph).__name__}")
    g = as_time_varying(graph)
    period = g.period
    if horizon is None:
        h = max(50, 2 * period) if period is not None else 50
    else:
        h = _check_horizon(horizon)
    spectral_rounds = check_int(spectral_rounds, "spectral_rounds", low=1)
    r = min(h, period if period is not None else spectral_rounds)
    tops = [g.at(t) for t in range(r)]
    Ws = [t.W for t in tops]
    kinds = {stochasticity(M) for M in Ws}
    stoch = kinds.pop() if len(kinds) == 1 else (
        "row" if kinds <= {"row", "doubly"} else "column" if kinds <= {"column", "doubly"}
        else "none"
    )
    sym = [_is_symmetric(M) for M in Ws]

    def per_round(fn: Callable[[sp.csr_array], float | None]) -> float | None:
        return _mean_or_none([fn(M) for M in Ws])

    def diam(M: sp.csr_array) -> int | None:
        return _diameter_of_pattern(arc_pattern(M, diagonal=False))

    diams = [diam(M) for M in Ws]
    out: dict[str, Any] = dict.fromkeys(_SUMMARY_KEYS)
    out.update(
        name=g.name if is_tv else graph.name,
        n=g.n,
        time_varying=is_tv,
        period=period,
        horizon=h,
        directed=any(t.is_directed for t in tops),
        stochastic=stoch,
        edges_per_node=float(np.mean([t.edges_per_node for t in tops])),
        messages_per_round=float(np.mean([t.messages_per_round for t in tops])),
        spectral_gap=per_round(lambda M: spectral_gap(M, "modulus", method=method)),
        spectral_gap_lambda2=per_round(lambda M: spectral_gap(M, "lambda2", method=method))
        if all(sym) else None,
        spectral_gap_norm=per_round(lambda M: spectral_gap(M, "norm", method=method)),
        algebraic_connectivity=per_round(
            lambda M: algebraic_connectivity(M, method=method) if g.n >= 2 else None
        ),
        diameter=None if any(d is None for d in diams)
        else int(max(d for d in diams if d is not None)),
    )
    if not is_tv:
        out["time_varying"] = False
    # Sequence metrics over the horizon.
    if is_tv:
        out["strongly_connected"] = is_strongly_connected(g, horizon=h)
        out["b_connectivity"] = b_connectivity(g, h)
    else:
        out["strongly_connected"] = diams[0] is not None
        out["b_connectivity"] = 1 if diams[0] is not None else None
    if g.n >= 2 and out["b_connectivity"] is not None:
        c = _try(
            lambda: pushsum_constants(
                g, horizon=h, B=out["b_connectivity"],
                **({} if measured else {"starts": 1, "max_columns": 1}),
            ),
            ValueError,
        )
        if c is not None:
            out.update(
                pushsum_a=c.a, pushsum_diameter=c.diameter, pushsum_B=c.B, pushsum_q=c.q,
                pushsum_one_minus_q=c.one_minus_q, pushsum_C=_finite(c.C),
                pushsum_log10_C=c.log10_C, pushsum_delta=c.delta,
                pushsum_q_measured=c.q_measured if measured else None,
                pushsum_C_measured=c.C_measured if measured else None,
            )
    if stoch != "none" and measured:
        out["consensus_rate"] = consensus_rate(g, h, seed=seed)
        out["finite_time_consensus"] = finite_time_consensus(g, h)
    if label_distributions is not None:
        out["neighborhood_skew"] = per_round(lambda M: neighborhood_skew(M, label_distributions))
    return out
