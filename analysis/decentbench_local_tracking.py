"""decent-bench's own iterates of K-GT and LED (local steps with a tracking or dual
correction) on its regression problem, written for ``tests/algorithms/test_local_tracking.py``
to compare topofl's ``kgt`` and ``led`` with.

decent-bench needs Python >= 3.13 (topofl's environment here is 3.11), so this script runs in an
environment of its own and writes what the test reads (a small JSON file); it imports nothing
of topofl. Made with decent-bench 0.3.0 (decent-array 0.2.7, numpy backend, float64)::

    ~/.pyenv/versions/3.13.0/bin/python -m venv /tmp/dbenv
    /tmp/dbenv/bin/pip install decent-bench==0.3.0
    /tmp/dbenv/bin/python analysis/decentbench_local_tracking.py

It writes ``tests/algorithms/data/decentbench_local_tracking.json``:

- ``problems``: decent-bench's regression problem as its test suite builds it
  (``create_regression_problem(n_agents=4)``: 10 samples of 1 feature per agent) and the same
  synthetic data with 3 features (``SyntheticRegressionDatasetHandler``, 40 samples split
  i.i.d. over 4 agents); each agent's cost is ``LinearRegressionCost``,
  ``f_i(x) = |A_i x - b_i|^2 / (2 m_i)``, gradient ``(A_i^T A_i x - A_i^T b_i) / m_i``; every
  agent's ``A`` and ``b``.
- ``graphs``: the mixing matrix ``W`` decent-bench's ``P2PNetwork`` computes (its Metropolis
  weights ``1/(1 + max(d_i, d_j))``) on the complete graph, the 4-cycle and the 4-path.
- ``runs``: for each case (algorithm, problem, graph, x0, number of local steps, its two step
  sizes) the iterates ``x_1 .. x_R`` of every agent, ``[R][agent][d]``, read after each of
  decent-bench's ``step`` calls (one round: the local steps and one communication), no
  impairment, 12 rounds. ``KGT``'s ``step_size`` is the paper's local step
  :math:`\\eta_c` and ``aux_step_size`` its :math:`\\eta_s`; ``LED``'s are :math:`\\alpha` and
  :math:`\\beta`.

Numbers are written to 15 significant digits. decent-bench's ``KGT`` adds its neighbours'
messages in the order of a Python ``set`` of agents (hashed by identity), so a rerun may differ
from the committed file in the last bits (up to 1e-13 seen between two runs); the comparison's
1e-10 is untouched.

Seeded with ``iop.set_seed(0)`` (the data are written out, so the test does not depend on it).
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
from decent_bench.algorithms.p2p import KGT, LED
from decent_bench.costs import LinearRegressionCost
from decent_bench.networks import P2PNetwork

OUT = Path(__file__).resolve().parents[1] / "tests" / "algorithms" / "data" / (
    "decentbench_local_tracking.json")
ROUNDS = 12
ALGORITHMS = {"KGT": KGT, "LED": LED}
#: (algorithm, problem, graph, x0, local steps, step_size, aux_step_size): each algorithm
#: with one and with several local steps, its second step size at 1 and below, on the three
#: graphs, and from distinct starting points (x0 "spread")
CASES = [
    ("KGT", "regression", "complete", "zeros", 3, 0.1, 1.0),
    ("KGT", "regression", "ring", "zeros", 1, 0.1, 1.0),
    ("KGT", "regression", "path", "zeros", 4, 0.05, 0.5),
    ("KGT", "regression3", "path", "zeros", 3, 0.1, 1.0),
    ("KGT", "regression3", "ring", "spread", 5, 0.05, 0.7),
    ("KGT", "regression3", "path", "spread", 1, 0.1, 0.5),
    ("LED", "regression", "complete", "zeros", 3, 0.1, 0.3),
    ("LED", "regression", "ring", "zeros", 1, 0.1, 1.0),
    ("LED", "regression", "path", "zeros", 4, 0.05, 0.2),
    ("LED", "regression3", "path", "zeros", 3, 0.1, 0.3),
    ("LED", "regression3", "ring", "spread", 5, 0.05, 0.1),
    ("LED", "regression3", "path", "spread", 1, 0.1, 1.0),
]












def _problem(name: str) -> list[Any]:
    return _regression_problem(name)[0]


def _run(algorithm: str, costs: list[LinearRegressionCost], graph: str, x0: np.ndarray,
         steps: int, step: float, aux: float) -> tuple[np.ndarray, list[list[list[float]]]]:
    agents = [Agent(c) for c in costs]
    net = P2PNetwork(graph=GRAPHS[graph], agents=agents)
    W = _np(net.weights)
    start = {a: iop.from_numpy(x0[k].copy()) for k, a in enumerate(net.agents())}
    algo = ALGORITHMS[algorithm](num_local_steps=steps, step_size=step, aux_step_size=aux,
                                 x0=start)
    iterates: list[list[list[float]]] = []
    algo.run(net, ROUNDS, progress_callback=lambda k: iterates.append(
        [_np(a.x).tolist() for a in net.agents()]))
    for a in agents:  # a cost belongs to one network's agent at a time: free them
        a.index = -1
    return W, iterates


def main() -> None:
    iop.set_backend("numpy")
    iop.set_seed(0)
    problems: dict[str, Any] = {}
    built: dict[str, list[LinearRegressionCost]] = {}
    for name in ("regression", "regression3"):
        built[name] = costs = _problem(name)
        problems[name] = {"A": [_data(c)[0].tolist() for c in costs],
                          "b": [_data(c)[1].tolist() for c in costs]}
    graphs: dict[str, Any] = {}
    runs = []
    for algorithm, problem, graph, start, steps, step, aux in CASES:
        d = len(problems[problem]["A"][0][0])
        x0 = _x0(start, d)
        W, iterates = _run(algorithm, built[problem], graph, x0, steps, step, aux)
        graphs.setdefault(graph, W.tolist())
        if graphs[graph] != W.tolist():
            raise RuntimeError(f"decent-bench's W on {graph} changed between runs")
        runs.append({"algorithm": algorithm, "problem": problem, "graph": graph,
                     "local_steps": steps, "step_size": step, "aux_step_size": aux,
                     "x0": x0.tolist(), "iterates": iterates})
    out = {"decent_bench": version("decent-bench"), "decent_array": version("decent-array"),
           "python": platform.python_version(), "numpy": np.__version__, "seed": 0,
           "command": "python analysis/decentbench_local_tracking.py",
           "rounds": ROUNDS, "n_agents": N_AGENTS,
           "gradient": "(A_i^T A_i x - A_i^T b_i) / m_i",
           "problems": _short(problems), "graphs": _short(graphs), "runs": _short(runs)}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(runs)} runs)", file=sys.stderr)


if __name__ == "__main__":
    main()
