r"""Paper figures: configs, cached runs over seeds, plots and verdicts against the seeds' spread.

A figure of ``paper_figures/`` is a thin script over this package:

* its settings are config files ``paper_figures/configs/<name>.toml`` read by
  :func:`load_config` at a scale, with absent datasets swapped for their offline stand-ins and
  the config's seeds; the paper's claim, the result's title and the notes that hold at every
  scale are in ``paper_figures/claims.toml`` (:func:`claim_of`) — :mod:`.config`, which says
  how seeds are chosen;
* :func:`panels` runs every config's sweep over its seeds, or reuses the cached runs
  (:func:`sweep`, :mod:`.runs`, which says when a cached run is reused), and groups the runs
  of a curve (one label, several seeds) into one :class:`Panel` (:mod:`.panel`);
* the script measures the claim's quantities seed by seed (:class:`OverSeeds`,
  :mod:`.measures`), reads whether the compared curves flattened (:func:`convergence`,
  :mod:`.flatness`), turns them into :class:`Check`\ s (:func:`above`, :func:`below`,
  :func:`within`, :func:`fact`) — :mod:`.checks`, which states the rule that decides a check
  and the verdict — and returns a :class:`Result`; :func:`script` (the preamble every script
  shares) writes ``<name>.png``, ``<name>.md`` and the verdict ``<name>.json`` (:func:`write`,
  :mod:`.writing`).

Every scale writes to ``paper_figures/out/<scale>/`` (``--out DIR`` elsewhere);
``--update-results`` writes the default scale to the committed ``paper_figures/results/`` (and
``--full`` to ``paper_figures/results/full/``), the only way those files change. A cached run
or a committed result counts as current only when it was computed by the current library code
(:func:`code_fingerprint`) or by code certified to compute the same (:func:`current_codes`).

``topofl figure list`` lists the scripts, ``topofl figure NAME [--quick|--full]`` runs one and
``topofl figure index [--check]`` rebuilds the index of ``paper_figures/README.md`` from the
verdicts (:mod:`.results`, :mod:`.cli`; these need a clone of the repository: the scripts are
not installed with the package).

Examples
--------
>>> cfg = {"algorithm": "dsgd", "data": "mnist", "model": "logistic", "rounds": 100,
...        "scale": {"quick": {"rounds": 3}}}
>>> out = tf.figures.config.apply_scale(cfg, "quick")
>>> out["rounds"], "scale" in out
(3, False)
>>> gain = tf.figures.OverSeeds((0.91, 0.93, 0.92), (0, 1, 2)) - 0.90
>>> check = tf.figures.above("beats 0.90", gain, horizon="a toy", headline=True)
>>> f"{gain:.3f}", check.outcome, check.reason.split(";")[0]
('0.020 ± 0.010', 'pass', '95 % lower bound 0.003 above 0.000 (p = 0.037)')
"""

from __future__ import annotations

from topofl._utils.fingerprint import code_fingerprint
from topofl.figures import facts as facts  # the module (topofl figure facts)
from topofl.figures import price as price  # the module (a page's price)
from topofl.figures import redecide as redecide  # the module (topofl figure redecide)
from topofl.figures import replication as replication  # the module (close calls)
from topofl.figures.checks import Check, above, below, fact, verdict, within
from topofl.figures.config import claim_of, grid, load_config, margin
from topofl.figures.flatness import Convergence, convergence, mean_curve
from topofl.figures.gate import Gate, fidelity_gate, gate_bars, gated, kendall_permutation_p
from topofl.figures.measures import (
    OverSeeds,
    final,
    final_spread,
    mean_over_rounds,
    per_seed,
    reach,
    samples_per_client,
    seedwise,
)
from topofl.figures.panel import Panel, curves, merged_setting, panels
from topofl.figures.runs import THREADS, FigureArgs
from topofl.figures.writing import Result, script

__all__ = [
    "FigureArgs",
    "OverSeeds",
    "Check",
    "Panel",
    "Result",
    "load_config",
    "claim_of",
    "code_fingerprint",
    "panels",
    "curves",
    "per_seed",
    "seedwise",
    "final",
    "mean_over_rounds",
    "final_spread",
    "reach",
    "samples_per_client",
    "above",
    "below",
    "within",
    "fact",
    "verdict",
    "merged_setting",
    "script",
    "grid",
    "mean_curve",
    "THREADS",
    "Convergence",
    "convergence",
    "margin",
    "Gate",
    "fidelity_gate",
    "gate_bars",
    "gated",
    "kendall_permutation_p",
]
