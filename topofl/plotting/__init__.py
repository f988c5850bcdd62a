"""Figures read from records and the study's tables; they draw, and never compute results or
re-run training.

The x axis of every curve is the number of rounds completed (a row's ``round`` + 1), and
legends sit outside the axes (or in a row of their own below them), so that they hide no data.
Every figure draws a condition in the same style (:func:`condition_styles`: colour, line
style and marker by position in the list of conditions).

The package
-----------
- :mod:`~topofl.plotting.curves`: :func:`convergence` (a run's curve, or its seeds' mean, with
  a band), :func:`seed_curves` (every condition of a study), :func:`spectrum`.
- :mod:`~topofl.plotting.charts`: :func:`histogram` (samples on shared bins),
  :func:`metric_scatter` (a convergence metric against topology metrics),
  :func:`accuracy_variance` (accuracy against the variance between clients, DPFL).
- :mod:`~topofl.plotting.graphs`: :func:`dcliques_drawing` and :func:`clique_colours`
  (D-Cliques), :func:`collaboration_graph` and :func:`adjacency_matrix` (the graph a run
  recorded: DPFL, PFedDST).
- :mod:`~topofl.plotting.style`: :func:`style` and :func:`condition_styles` (one
  :class:`Style` per condition), :func:`metric_label` (a recorded metric with its unit).
- :mod:`~topofl.plotting.heatmaps`: :func:`adjacency_heatmap` (a recorded graph over rounds),
  :func:`selection_heatmap` (DPFL's chosen collaborators against Omega).

The numbers some of these figures show are computed elsewhere: per-client accuracy statistics
in :mod:`topofl.algorithms.dpfl_analysis`, the study's tables in :mod:`topofl.study`.

Examples
--------
>>> import matplotlib
>>> matplotlib.use("Agg")
>>> rows = [{"run": "a", "round": t, "client": None, "metric": f"test_acc_{s}", "value": v}
...         for t in range(3) for s, v in (("mean", 0.5 + t / 10), ("min", 0.4), ("max", 0.9))]
>>> fig = tf.plotting.convergence({"ring": tf.records.Records(rows=rows)})
>>> len(fig.axes[0].lines)
1
"""

from __future__ import annotations

from topofl.plotting.charts import accuracy_variance, histogram, metric_scatter
from topofl.plotting.curves import convergence, seed_curves, spectrum
from topofl.plotting.graphs import (
    BENIGN_COLOR,
    MALICIOUS_COLOR,
    adjacency_matrix,
    clique_colours,
    collaboration_graph,
    dcliques_drawing,
)
from topofl.plotting.heatmaps import SELECTION_COLORS, adjacency_heatmap, selection_heatmap
from topofl.plotting.style import Style, condition_styles, metric_label, style

__all__ = [
    "convergence",
    "seed_curves",
    "spectrum",
    "histogram",
    "metric_scatter",
    "accuracy_variance",
    "dcliques_drawing",
    "clique_colours",
    "collaboration_graph",
    "adjacency_matrix",
    "adjacency_heatmap",
    "selection_heatmap",
    "SELECTION_COLORS",
    "BENIGN_COLOR",
    "MALICIOUS_COLOR",
    "Style",
    "style",
    "condition_styles",
    "metric_label",
]
