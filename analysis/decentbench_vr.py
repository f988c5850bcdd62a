"""decent-bench's own iterates of GT-SAGA and GT-SARAH (variance-reduced gradient tracking) on
its regression problems, with every index it drew, written for ``tests/algorithms/test_gt_vr.py``
to compare topofl's ``gt_saga`` and ``gt_sarah`` with.

decent-bench needs Python >= 3.13 (topofl's environment here is 3.11), so this script runs in an
environment of its own and writes what the test reads (a small JSON file); it imports nothing
of topofl. Made with decent-bench 0.3.0 (decent-array 0.2.7, numpy backend, float64)::

    ~/.pyenv/versions/3.13.0/bin/python -m venv /tmp/dbenv
    /tmp/dbenv/bin/pip install decent-bench==0.3.0
    /tmp/dbenv/bin/python analysis/decentbench_vr.py

It writes ``tests/algorithms/data/decentbench_vr.json``:

- ``problems``: decent-bench's regression problem as its test suite builds it
  (``create_regression_problem(n_agents=4)``: 10 samples of 1 feature per agent) and the same
  synthetic data with 3 features (``SyntheticRegressionDatasetHandler``, 40 samples split
  i.i.d. over 4 agents, 10 each), as ``analysis/_decentbench.py`` builds them; every agent's
  ``A`` and ``b``. Each agent's cost is ``LinearRegressionCost``,
  ``f_i(x) = |A_i x - b_i|^2 / (2 m_i)``, rebuilt on the same data with a ``batch_size`` below
  ``m_i = 10`` (decent-bench's default, ``"all"``, would make every estimate a full gradient).
- ``graphs``: the mixing matrix ``W`` decent-bench's ``P2PNetwork`` computes (its Metropolis
  weights ``1/(1 + max(d_i, d_j))``) on the complete graph, the 4-cycle and the 4-path.
- ``runs``: for each case (algorithm, problem, graph, x0, batch size, step size and, for
  GT-SARAH, ``num_local_steps``) the iterates ``x_1 .. x_R`` of every agent,
  ``[R][agent][d]``, read after each of decent-bench's ``step`` calls, no impairment,
  ``R = 15``; and ``drawn``, ``[R][agent][call][B]``: the indices of every batch the agent's
  cost drew (``indices="batch"``), in order. ``GT_SAGA`` draws twice an iteration: the
  estimator's batch (call 0) and, after the mixing step, a second batch whose table entries
  it recomputes at the new iterate (call 1). ``GT_SARAH`` draws once per inner step (calls
  ``0 .. K-1``, ``K = num_local_steps``); its outer step takes the full gradient.

Its costs draw batches epoch by epoch without replacement from one generator shared by all
agents (``iop.get_numpy_rng()``, seeded ``iop.set_seed(0)``); the draws are recorded, so the
test replays them and depends on no generator. Numbers are written to 15 significant digits.
"""

from __future__ import annotations

import json
import platform
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
from _decentbench import GRAPHS, N_AGENTS  # beside this script
from _decentbench import as_numpy as _np
from _decentbench import data as _data
from _decentbench import problem as _regression_problem
from _decentbench import short as _short
from _decentbench import x0 as _x0
from decent_array import interoperability as iop
from decent_bench.agents import Agent
from decent_bench.algorithms.p2p import GT_SAGA, GT_SARAH
from decent_bench.costs import LinearRegressionCost
from decent_bench.networks import P2PNetwork

OUT = Path(__file__).resolve().parents[1] / "tests" / "algorithms" / "data" / (
    "decentbench_vr.json")
ITERATIONS = 15
#: (algorithm, problem, graph, x0, batch size, step size, num_local_steps): batches of 2, 3
#: and 4 (3 and 4 do not divide 10: a batch then spans two epochs), on the three graphs, from
#: equal and from distinct starting points. Not 1 (GT-SAGA's paper samples one index): with
#: ``batch_size=1`` decent-bench 0.3.0's ``LinearRegressionCost.gradient`` fails
#: (``matmul: Input operand 1 does not have enough dimensions``: its batch's targets come out
#: 0-dimensional)
CASES = [
    ("GT_SAGA", "regression", "complete", "zeros", 4, 0.1, 0),
    ("GT_SAGA", "regression", "ring", "spread", 3, 0.05, 0),
    ("GT_SAGA", "regression", "path", "zeros", 2, 0.1, 0),
    ("GT_SAGA", "regression3", "ring", "zeros", 4, 0.05, 0),
    ("GT_SAGA", "regression3", "path", "spread", 3, 0.1, 0),
    ("GT_SAGA", "regression3", "complete", "spread", 2, 0.05, 0),
    ("GT_SARAH", "regression", "complete", "zeros", 4, 0.1, 3),
    ("GT_SARAH", "regression", "ring", "spread", 3, 0.05, 1),
    ("GT_SARAH", "regression", "path", "zeros", 2, 0.1, 4),
    ("GT_SARAH", "regression3", "ring", "zeros", 4, 0.05, 3),
    ("GT_SARAH", "regression3", "path", "spread", 3, 0.1, 2),
    ("GT_SARAH", "regression3", "complete", "spread", 2, 0.05, 1),
]


class RecordedCost(LinearRegressionCost):
    """decent-bench's least-squares cost, its batch draws kept in ``drawn`` in order."""

    def __init__(self, dataset: Any, batch_size: int) -> None:  # noqa: ANN401
        super().__init__(dataset=dataset, batch_size=batch_size)
        self.drawn: list[list[int]] = []

    def _sample_batch_indices(self, indices: Any = "batch") -> list[int]:  # noqa: ANN401
        out = super()._sample_batch_indices(indices)
        if isinstance(indices, str) and indices == "batch":
            self.drawn.append([int(i) for i in out])
        return out


def _run(algorithm: str, costs: list[LinearRegressionCost], graph: str, x0: np.ndarray,
         batch: int, step: float, inner: int) -> tuple[np.ndarray, list[Any], list[Any]]:
    mine = [RecordedCost(c.dataset, batch) for c in costs]
    agents = [Agent(c) for c in mine]
    net = P2PNetwork(graph=GRAPHS[graph], agents=agents)
    if [a.cost for a in net.agents()] != mine:
        raise RuntimeError("decent-bench's agents are not in the order of their costs")
    W = _np(net.weights)
    start = {a: iop.from_numpy(x0[k].copy()) for k, a in enumerate(net.agents())}
    algo = (GT_SAGA(step_size=step, x0=start) if algorithm == "GT_SAGA" else
            GT_SARAH(num_local_steps=inner, step_size=step, x0=start))
    iterates: list[Any] = []
    algo.run(net, ITERATIONS, progress_callback=lambda k: iterates.append(
        [_np(a.x).tolist() for a in net.agents()]))
    calls = 2 if algorithm == "GT_SAGA" else inner
    drawn = [[c.drawn[k * calls: (k + 1) * calls] for c in mine] for k in range(ITERATIONS)]
    if any(len(c.drawn) != ITERATIONS * calls for c in mine):
        raise RuntimeError(f"{algorithm} drew {[len(c.drawn) for c in mine]} batches, "
                           f"expected {ITERATIONS * calls} per agent")
    return W, iterates, drawn


def main() -> None:
    iop.set_backend("numpy")
    iop.set_seed(0)
    problems: dict[str, Any] = {}
    built: dict[str, list[LinearRegressionCost]] = {}
    for name in ("regression", "regression3"):
        built[name] = costs = _regression_problem(name)[0]
        problems[name] = {"A": [_data(c)[0].tolist() for c in costs],
                          "b": [_data(c)[1].tolist() for c in costs]}
    graphs: dict[str, Any] = {}
    runs = []
    for algorithm, problem, graph, start, batch, step, inner in CASES:
        d = len(problems[problem]["A"][0][0])
        x0 = _x0(start, d)
        W, iterates, drawn = _run(algorithm, built[problem], graph, x0, batch, step, inner)
        graphs.setdefault(graph, W.tolist())
        if graphs[graph] != W.tolist():
            raise RuntimeError(f"decent-bench's W on {graph} changed between runs")
        runs.append({"algorithm": algorithm, "problem": problem, "graph": graph,
                     "batch_size": batch, "step_size": step, "num_local_steps": inner,
                     "x0": x0.tolist(), "iterates": iterates, "drawn": drawn})
    out = {"decent_bench": version("decent-bench"), "decent_array": version("decent-array"),
           "python": platform.python_version(), "numpy": np.__version__, "seed": 0,
           "command": "python analysis/decentbench_vr.py",
           "iterations": ITERATIONS, "n_agents": N_AGENTS,
           "gradient": "(A_i^T A_i x - A_i^T b_i) / m_i; per sample (a_ij^T x - b_ij) a_ij",
           "problems": _short(problems), "graphs": _short(graphs), "runs": _short(runs)}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(runs)} runs)", file=sys.stderr)


if __name__ == "__main__":
    main()
