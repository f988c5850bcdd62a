"""The topology-vs-convergence study: which property of the graph predicts learning?

From a folder of records (one file per run, e.g. a sweep of topologies x seeds), the study
builds

* a **run table**, one row per run: the topology metrics the run recorded as ``graph.<key>``
  rows (the keys of :func:`topofl.spectral.summary`: spectral gap modulus and ``1 - λ_2``,
  algebraic connectivity, edges per node, diameter, clique and neighbourhood skew, measured
  consensus rate, push-sum ``q`` and ``C`` ... whatever is present; the mean over the run's
  rows, i.e. over rounds for a time-varying graph) and the convergence metrics of one
  accuracy-like ``metric``: rounds to a target (:func:`topofl.records.rounds_to`), the
  messages, bytes and simulated seconds spent to reach it when recorded
  (:func:`topofl.records.cost_to`: the bytes ledger, the virtual clock of runs with a
  ``network``), final and best value, area under the curve
  (:func:`topofl.records.area_under_curve`), and the final consensus distance when recorded;
* a **condition table**: runs whose configs differ only in ``seed`` (and in their run id,
  records and checkpoint paths) form a condition; mean and sample standard deviation over its
  seeds;
* a **correlation table**: the Spearman rank correlation, over conditions, of the condition
  means of every topology metric with those of every convergence metric, with its number of
  conditions ``n`` and two-sided p-value (exact permutation p up to 9 conditions, scipy's
  approximation above; not corrected for the number of pairs), a bootstrap interval over seeds
  (seeds resampled within each condition; only with at least 3 seeds per condition) and a
  conclusion that says when the sample is too small to conclude anything (with 4 conditions
  even rho = +-1 has p = 0.083). A metric that does not apply to a condition (NaN there) leaves
  that condition out of its correlations;
* a **pairwise table** (:func:`~topofl.study.pairs.pairwise_table`): for every pair of
  conditions and convergence metric, the seed-paired difference A - B over the seeds both ran,
  its Student-t interval, one-sided p-values in the metric's good direction (a sign test when
  a run never reached the target) and whether one is ahead in every seed; ``study.md`` opens
  with one verdict per pair, and with too few conditions to correlate its correlation section
  is one line. Both sections say whether they correct for the number of tests: not by
  default, Holm-Bonferroni with ``correction="holm"`` (:func:`~topofl.study.statistics.holm`;
  the tables' ``p_adjusted``);
* figures (seed-averaged curves with bands; one scatter figure per convergence metric with the
  correlation in every panel's title; one style per condition, PNG and/or PDF/SVG) and
  ``study.md`` tying them together: metrics named in words with their units
  (:mod:`~topofl.study.names`: bytes in kB, MB or GB, no offset above an axis), conditions and
  metrics renamed with ``labels``, one name per condition throughout.

The package: :mod:`~topofl.study.tables` (conditions, the run and condition tables, selecting
runs), :mod:`~topofl.study.statistics` (Spearman's rho, its exact p-value, the bootstrap over
seeds, the correlation table, Holm's correction), :mod:`~topofl.study.pairs` (seed-paired
comparisons of conditions), :mod:`~topofl.study.names` (the metrics' names and units),
:mod:`~topofl.study.rendering` (figures and ``study.md``),
:mod:`~topofl.study.core` (:func:`study`), :mod:`~topofl.study.options` (the records of its
settings: which runs, the bootstrap, the output) and :mod:`~topofl.study.cli` (``topofl
study``).

A run that never reaches the target has ``rounds_to_target = inf``: it ranks after every run
that reaches it.

Examples
--------
Three conditions (graphs) x two seeds, written with :class:`~topofl.records.Recorder`: the
larger the spectral gap, the higher the accuracy.

>>> import tempfile, os
>>> from topofl import study
>>> d = tempfile.mkdtemp()
>>> for topo, gap, acc in (("ring", 0.01, 0.6), ("torus", 0.1, 0.7), ("complete", 1.0, 0.9)):
...     for seed in (0, 1):
...         run = f"{topo}-{seed}"
...         with tf.records.Recorder(os.path.join(d, run + ".jsonl"), run=run) as rec:
...             rec.log_config({"topology": topo, "seed": seed, "lr": 0.1})
...             rec.log("graph.spectral_gap", gap, 9)
...             for t in (9, 19):
...                 rec.log("test_acc_mean", acc * (t + 1) / 20 + 0.01 * seed, t)
>>> res = study.study(d, target=0.4, bootstrap=study.Bootstrap(n_boot=200, seed=0))
>>> res.conditions[["condition", "n_seeds", "final_mean", "rounds_to_target_mean"]]
           condition  n_seeds  final_mean  rounds_to_target_mean
0  topology=complete        2       0.905                   10.0
1      topology=ring        2       0.605                   20.0
2     topology=torus        2       0.705                   20.0
>>> c = res.correlations.set_index(["topology_metric", "convergence_metric"])
>>> r = c.loc[("spectral_gap", "final")]
>>> float(r.spearman), round(float(r.p_value), 4), int(r.n_conditions), r.conclusion
(1.0, 0.3333, 3, 'too few conditions')
>>> round(float(c.loc[("spectral_gap", "rounds_to_target"), "spearman"]), 4)  # ties: 20, 20
-0.866

With two seeds there is no bootstrap interval (it needs three per condition):

>>> float(r.ci_low), float(r.ci_high), int(r.min_seeds)
(nan, nan, 2)
"""

from __future__ import annotations

from topofl.study import cli  # noqa: F401  (loaded with the package: topofl.study.cli.main)
from topofl.study.core import study
from topofl.study.options import Bootstrap, Output, Selection
from topofl.study.pairs import paired_difference, pairwise_table
from topofl.study.result import IncompleteRunsError, StudyResult
from topofl.study.statistics import correlation_table, spearman
from topofl.study.tables import condition_table, run_table

__all__ = [
    "StudyResult",
    "IncompleteRunsError",
    "study",
    "Selection",
    "Bootstrap",
    "Output",
    "run_table",
    "condition_table",
    "correlation_table",
    "spearman",
    "pairwise_table",
    "paired_difference",
]
