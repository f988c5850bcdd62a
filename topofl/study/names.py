"""The names of the study's metrics: words with units, in one table (:data:`METRIC_NAMES`)
that the figures' titles and axes and ``study.md`` all read, the rule that puts a recorded
metric into words (``global_acc_mean`` -> "global accuracy (mean over clients)"), the unit
bytes are shown in (kB, MB or GB, by the values: never a "1e8" on an axis) and the names a
user gives (``labels={"global_acc_mean": "accuracy"}``, ``--label global_acc_mean=accuracy``).

The CSV files keep the metrics' own names (``bytes_to_target``, ``spectral_gap``), in bytes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["METRIC_NAMES", "MetricNames", "default_name", "byte_unit"]

#: Metric -> (name in words, unit). ``{metric}`` in a convergence metric's name is the name
#: of the curve it reads, ``{target}`` its target, and a unit ``{unit}`` that curve's unit; the
#: unit ``"bytes"`` is shown as kB, MB or GB (:func:`byte_unit`).
METRIC_NAMES: dict[str, tuple[str, str]] = {
    # topology metrics: the graph.* rows of topofl.spectral.summary
    "spectral_gap": ("spectral gap 1 − max|λ_k|", "unitless"),
    "spectral_gap_lambda2": ("1 − λ_2", "unitless"),
    "spectral_gap_norm": ("1 − ‖W − J‖₂", "unitless"),
    "algebraic_connectivity": ("algebraic connectivity", "Laplacian λ_2"),
    "spectrum_mean_sq": ("mean λ_k² over modes k ≥ 2", "per round"),
    "spectrum_relaxation": ("mean 1/(1 − λ_k²) over modes", "rounds"),
    "effective_neighbors": ("effective number of neighbours", "nodes"),
    "edges_per_node": ("edges per node", "mean degree"),
    "diameter": ("diameter", "hops"),
    "clique_skew": ("clique skew", "L1 distance, 0–2"),
    "neighborhood_skew": ("neighbourhood skew", "L1 distance, 0–2"),
    "neighborhood_heterogeneity": ("neighbourhood heterogeneity", "squared L2"),
    "consensus_rate": ("consensus rate", "contraction per round"),
    "pushsum_q_measured": ("push-sum q, measured", "per round"),
    "pushsum_C_measured": ("push-sum C, measured", "unitless"),
    "b_connectivity": ("B-connectivity", "rounds"),
    "n": ("nodes n", "nodes"),
    "messages_per_round": ("messages a round", "messages"),
    "pushsum_q": ("push-sum q bound", "per round"),
    "pushsum_C": ("push-sum C bound", "unitless"),
    "pushsum_delta": ("push-sum δ, smallest weight", "unitless"),
    "finite_time_consensus": ("finite-time consensus", "rounds"),
    "period": ("period", "rounds"),
    # convergence metrics: the columns of the run table
    "rounds_to_target": ("rounds to {metric} ≥ {target}", "rounds"),
    "messages_to_target": ("messages to {metric} ≥ {target}", "messages"),
    "bytes_to_target": ("bytes to {metric} ≥ {target}", "bytes"),
    "time_to_target": ("simulated time to {metric} ≥ {target}", "s"),
    "final": ("final {metric}", "{unit}"),
    "best": ("best {metric}", "{unit}"),
    "auc": ("{metric}: area under the curve / rounds", "{unit}"),
    "final_consensus_distance": ("final consensus distance", "mean squared distance"),
    # recorded metrics (the curve a study reads; the rest as the engine records them)
    "bytes": ("bytes sent", "bytes"),
    "round_bytes": ("bytes a round", "bytes"),
    "bytes_dropped": ("bytes dropped", "bytes"),
    "round_bytes_dropped": ("bytes dropped a round", "bytes"),
    "messages": ("messages sent", "messages"),
    "round_messages": ("messages a round", "messages"),
    "sim_time": ("simulated time", "s"),
    "wall_time": ("wall-clock time", "s"),
    "consensus_distance": ("consensus distance", "mean squared distance"),
    "online_clients": ("clients online", "clients"),
}

#: Names whose prefix names a family of keys (``clique_skew_max``: a clique skew).
_PREFIXES = ("clique_skew", "neighborhood_skew")
#: ``<split>_<quantity>[_<statistic>]`` of the evaluation's records, in words.
_SPLITS = {"test": "test", "global": "global", "val": "validation", "train": "training",
           "honest_test": "honest clients' test", "honest_global": "honest clients' global"}
_QUANTITIES = {"acc": ("accuracy", "fraction correct"), "loss": ("loss", "")}
_STATISTICS = {"mean": "mean over clients", "min": "lowest client", "max": "highest client",
               "std": "std over clients"}
#: Byte units, decimal: the largest whose value the values reach (kB below 1 MB).
_BYTE_UNITS = ((1e9, "GB"), (1e6, "MB"), (1e3, "kB"))


def default_name(metric: str) -> tuple[str, str]:
    """``(name in words, unit)`` of ``metric`` without a name given for it.

    From :data:`METRIC_NAMES`; else a recorded ``<split>_<quantity>[_<statistic>]``
    (``global_acc_mean``, ``val_loss``) put into words; else the metric without underscores,
    ``"as recorded"``.

    Examples
    --------
    >>> from topofl.study.names import default_name
    >>> default_name("global_acc_mean"), default_name("round_bytes")
    (('global accuracy (mean over clients)', 'fraction correct'), ('bytes a round', 'bytes'))
    >>> default_name("clique_skew_max"), default_name("something_new")
    (('clique skew [clique_skew_max]', 'L1 distance, 0–2'), ('something new', 'as recorded'))
    """
    if metric in METRIC_NAMES:
        return METRIC_NAMES[metric]
    for prefix in _PREFIXES:
        if metric.startswith(prefix):
            words, unit = METRIC_NAMES[prefix]
            return f"{words} [{metric}]", unit
    for split in sorted(_SPLITS, key=len, reverse=True):
        rest = metric.removeprefix(split + "_")
        if rest == metric:
            continue
        quantity, _, stat = rest.partition("_")
        if quantity in _QUANTITIES and (not stat or stat in _STATISTICS):
            words, unit = _QUANTITIES[quantity]
            name = f"{_SPLITS[split]} {words}"
            return (f"{name} ({_STATISTICS[stat]})" if stat else name), unit
    return metric.replace("_", " "), "as recorded"


def byte_unit(values: Sequence[float] | np.ndarray) -> tuple[float, str]:
    """``(bytes in one unit, unit)`` to show byte counts ``values`` in: GB from 10⁹ bytes,
    MB from 10⁶ (and when no value is finite), kB below; decimal units.

    Examples
    --------
    >>> from topofl.study.names import byte_unit
    >>> byte_unit([2.6e8, 5.2e8, float("inf")]), byte_unit([3e9]), byte_unit([4e4])
    ((1000000.0, 'MB'), (1000000000.0, 'GB'), (1000.0, 'kB'))
    """
    a = np.abs(np.asarray(values, dtype=np.float64))
    a = a[np.isfinite(a)]
    top = float(a.max()) if a.size else math.nan
    if math.isnan(top) or top == 0:
        return 1e6, "MB"
    for size, unit in _BYTE_UNITS:
        if top >= size:
            return size, unit
    return 1e3, "kB"


def _with_unit(name: str, unit: str) -> str:
    """``name (unit)``; inside ``name``'s closing parenthesis when it ends with one; ``name``
    alone without a unit or when it already says it."""
    if not unit or f"({unit})" in name or f", {unit})" in name:
        return name
    if name.endswith(")"):
        return f"{name[:-1]}, {unit})"
    return f"{name} ({unit})"


@dataclass(frozen=True)
class MetricNames:
    """The names one study shows for its metrics.

    Attributes
    ----------
    curve : str
        The recorded curve the convergence metrics read (``test_acc_mean``).
    target : float
        The target of the ``*_to_target`` metrics.
    given : dict
        Metric -> the name given for it (``labels``): it replaces the default words; its
        unit is added unless the name already says it.
    scales : dict
        Metric -> ``(divisor, unit)`` of the metrics shown scaled (bytes: kB, MB, GB).

    Examples
    --------
    >>> from topofl.study.names import MetricNames
    >>> m = MetricNames("global_acc_mean", 0.8, scales={"bytes_to_target": (1e6, "MB")})
    >>> m.label("final")
    'final global accuracy (mean over clients, fraction correct)'
    >>> m.label("bytes_to_target")
    'bytes to global accuracy (mean over clients) ≥ 0.8 (MB)'
    >>> MetricNames("test_acc_mean", 0.8, given={"test_acc_mean": "accuracy"}).label("best")
    'best accuracy (fraction correct)'
    """

    curve: str
    target: float
    given: Mapping[str, str] = field(default_factory=dict)
    scales: Mapping[str, tuple[float, str]] = field(default_factory=dict)

    def name(self, metric: str) -> str:
        """The metric in words, without its unit."""
        if metric in self.given:
            return self.given[metric]
        words, _ = default_name(metric)
        if metric == self.curve or "{" not in words:  # a curve named like a column: as is
            return words if "{" not in words else metric.replace("_", " ")
        return words.format(metric=self.name(self.curve), target=format(self.target, ".3g"))

    def unit(self, metric: str) -> str:
        """The unit values of ``metric`` are shown in (``""``: none)."""
        if metric in self.scales:
            return self.scales[metric][1]
        _, unit = default_name(metric)
        if unit == "{unit}":
            return self.unit(self.curve)
        return "B" if unit == "bytes" else unit

    def scale(self, metric: str) -> float:
        """What a value of ``metric`` is divided by to be in :meth:`unit` (1 unless scaled)."""
        return self.scales[metric][0] if metric in self.scales else 1.0

    def label(self, metric: str) -> str:
        """The name with its unit: an axis label, a column of ``study.md``."""
        return _with_unit(self.name(metric), self.unit(metric))

    @classmethod
    def for_values(cls, curve: str, target: float, given: Mapping[str, str],
                   values: Mapping[str, Sequence[float] | np.ndarray]) -> MetricNames:
        """The names of a study whose metrics take ``values`` (metric -> its values): each
        metric in bytes is shown in the unit its values call for (:func:`byte_unit`)."""
        scales = {}
        for metric, vals in values.items():
            unit = "{unit}" if metric in ("final", "best", "auc") else default_name(metric)[1]
            if (default_name(curve)[1] if unit == "{unit}" else unit) == "bytes":
                scales[metric] = byte_unit(vals)
        return cls(curve, target, dict(given), scales)
