"""The keys of :func:`~topofl.spectral.summary`, the check of the ones a call asks for, and
the arithmetic of its row: the rounds to ``1e-6`` from the gap or the measured rate, a mean
over rounds that is ``None`` when a round's value is, a finite value or ``None``.
:mod:`topofl.spectral.summarize` imports them back; its docstring tells what each key means.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from topofl._utils.validation import did_you_mean_each

_SUMMARY_KEYS = (
    "name", "n", "time_varying", "period", "horizon", "directed", "stochastic",
    "edges_per_node", "messages_per_round",
    "spectral_gap", "spectral_gap_lambda2", "spectral_gap_norm", "algebraic_connectivity",
    "spectrum_mean_sq", "spectrum_relaxation",
    "diameter", "strongly_connected", "b_connectivity",
    "pushsum_a", "pushsum_diameter", "pushsum_B", "pushsum_q", "pushsum_one_minus_q",
    "pushsum_C", "pushsum_log10_C", "pushsum_delta", "pushsum_q_measured", "pushsum_C_measured",
    "consensus_rate", "finite_time_consensus", "rounds_to_1e-6_bound", "rounds_to_1e-6_measured",
    "effective_neighbors", "effective_neighbors_method",
    "neighborhood_skew", "neighborhood_heterogeneity",
)
#: Keys computed only when ``metrics`` names them: the default row (``metrics=None``) keeps
#: the keys it had, which training records (``graph.*``) and the behaviour snapshot hold.
_OPT_IN_KEYS = ("all_eigenvalues_metric", "period_consensus_error")
#: Every valid key, in the order summary() returns them.
_ALL_KEYS = (*_SUMMARY_KEYS[:_SUMMARY_KEYS.index("spectrum_relaxation") + 1], *_OPT_IN_KEYS[:1],
             *_SUMMARY_KEYS[_SUMMARY_KEYS.index("spectrum_relaxation") + 1:
                            _SUMMARY_KEYS.index("finite_time_consensus") + 1],
             *_OPT_IN_KEYS[1:],
             *_SUMMARY_KEYS[_SUMMARY_KEYS.index("finite_time_consensus") + 1:])
_PUSHSUM_KEYS = tuple(k for k in _SUMMARY_KEYS if k.startswith("pushsum_"))
_PUSHSUM_MEASURED_KEYS = ("pushsum_q_measured", "pushsum_C_measured")
_SPECTRUM_KEYS = ("spectrum_mean_sq", "spectrum_relaxation")
_NEFF_KEYS = ("effective_neighbors", "effective_neighbors_method")
# A measured consensus rate this close to 1 is 1 (no contraction) up to rounding.
_RATE_ONE = 1e-9


def _check_metrics(metrics: Any) -> tuple[str, ...]:
    """The requested keys in the order of :data:`_ALL_KEYS` (:data:`_SUMMARY_KEYS` for
    ``None``)."""
    if metrics is None:
        return _SUMMARY_KEYS
    if isinstance(metrics, str):
        names = [m.strip() for m in metrics.split(",") if m.strip()]
    else:
        try:
            names = list(metrics)
        except TypeError:
            raise TypeError(
                "metrics must be None, a comma-separated str or an iterable of metric names, "
                f"got {type(metrics).__name__}"
            ) from None
        for m in names:
            if not isinstance(m, str):
                raise TypeError(f"metrics must hold str names, found {type(m).__name__} {m!r}")
    if not names:
        raise ValueError(
            f"metrics must name at least one metric, got none; valid: {', '.join(_ALL_KEYS)}"
        )
    unknown = [m for m in names if m not in _ALL_KEYS]
    if unknown:
        raise ValueError(
            f"unknown metric{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}"
            f"{did_you_mean_each(unknown, _ALL_KEYS)}; valid: {', '.join(_ALL_KEYS)}"
        )
    wanted = set(names)
    return tuple(k for k in _ALL_KEYS if k in wanted)


def _rounds_bound(gap: float | None) -> int | None:
    """``ceil(ln(1e6) / -ln(1 - gap))``: rounds for ``(1 - gap)^t`` to reach ``1e-6``."""
    if gap is None or gap <= 0:
        return None
    if gap >= 1:
        return 1
    return math.ceil(math.log(1e6) / -math.log(1 - gap))


def _rounds_measured(rate: float | None, finite_time: int | None) -> int | None:
    """The finite-time consensus round, else ``ceil(ln(1e-6) / ln(rate))``.

    ``None`` when the rate is 1 up to rounding (``1 - rate < 1e-9``: a disconnected graph's
    disagreement does not shrink; float noise would otherwise give 10^13 rounds).
    """
    if finite_time is not None:
        return finite_time
    if rate is None or rate >= 1 - _RATE_ONE:
        return None
    if rate == 0:
        return 1
    return math.ceil(math.log(1e-6) / math.log(rate))


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
