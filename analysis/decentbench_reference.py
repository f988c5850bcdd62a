"""decent-bench's own iterates of exact diffusion, NIDS, ATC, EXTRA and ATC-tracking on its
regression problem, written for ``tests/algorithms/test_decentbench.py`` to compare topofl's
with.

decent-bench needs Python >= 3.13 (topofl's environment here is 3.11), so this script runs in an
environment of its own and writes what the test reads (a small JSON file); it imports nothing
of topofl. Made with decent-bench 0.3.0 (decent-array 0.2.7, numpy backend, float64)::

    ~/.pyenv/versions/3.13.0/bin/python -m venv /tmp/dbenv
    /tmp/dbenv/bin/pip install decent-bench==0.3.0
    /tmp/dbenv/bin/python analysis/decentbench_reference.py

It writes ``tests/algorithms/data/decentbench_reference.json``:

- ``problems``: decent-bench's regression problem as its test suite builds it
  (``create_regression_problem(n_agents=4)``: 10 samples of 1 feature per agent) and the same
  synthetic data with 3 features (``SyntheticRegressionDatasetHandler``, 40 samples split
  i.i.d. over 4 agents); each agent's cost is ``LinearRegressionCost``,
  ``f_i(x) = |A_i x - b_i|^2 / (2 m_i)``, gradient ``(A_i^T A_i x - A_i^T b_i) / m_i``. Each
  problem gives every agent's ``A`` and ``b`` and ``x_optimal`` (decent-bench's own for
  the first, numpy's least squares on all 40 samples for the second).
- ``graphs``: the mixing matrix ``W`` decent-bench's ``P2PNetwork`` computes (its Metropolis
  weights ``1/(1 + max(d_i, d_j))``) on the complete graph of its test suite, the 4-cycle and
  the 4-path (unequal degrees, so unequal weights).
- ``runs``: for each (algorithm, problem, graph, x0) the iterates ``x_1 .. x_K`` of every
  agent, ``[K][agent][d]``, read after each of decent-bench's ``step`` calls (``run``'s
  progress callback), step size ``0.1`` (its test suite's), no impairment, 15 iterations.

Numbers are written to 15 significant digits.

Seeded with ``iop.set_seed(0)`` (the data are written out, so the test does not depend on it).
"""

from __future__ import annotations

import json
import platform
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
from decent_array import interoperability as iop
from decent_bench.agents import Agent
from decent_bench.algorithms.p2p import ATC, ED, EXTRA, NIDS, ATC_Tracking
from decent_bench.benchmark import create_regression_problem
from decent_bench.costs import LinearRegressionCost
from decent_bench.datasets import SyntheticRegressionDatasetHandler
from decent_bench.datasets.utils import split_iid
from decent_bench.networks import P2PNetwork

OUT = Path(__file__).resolve().parents[1] / "tests" / "algorithms" / "data" / (
    "decentbench_reference.json")
N_AGENTS = 4
STEP = 0.1
ITERATIONS = 15
ALGORITHMS = {"ED": ED, "NIDS": NIDS, "ATC": ATC, "EXTRA": EXTRA,
              "ATC_Tracking": ATC_Tracking}
GRAPHS = {"complete": nx.complete_graph(N_AGENTS), "ring": nx.cycle_graph(N_AGENTS),
          "path": nx.path_graph(N_AGENTS)}
#: (algorithm, problem, graph, x0): every algorithm on the test suite's complete graph, exact
#: diffusion and NIDS on every graph, and from distinct starting points (x0 "spread")
CASES = ([(a, "regression", "complete", "zeros") for a in ALGORITHMS]
         + [(a, "regression", g, "zeros") for a in ("ED", "NIDS") for g in ("ring", "path")]
         + [(a, "regression3", "path", "zeros") for a in ALGORITHMS]
         + [(a, "regression3", "path", "spread") for a in ("ED", "NIDS")])


def _short(v: Any) -> Any:
    """Nested lists of floats to 15 significant digits (1e-15 relative: the file stays small,
    the comparison's 1e-10 is untouched)."""
    if isinstance(v, dict):
        return {k: _short(u) for k, u in v.items()}
    if isinstance(v, list):
        return [_short(u) for u in v]
    return float(f"{v:.15g}") if isinstance(v, float) else v


def _np(a: Any) -> np.ndarray:
    return np.asarray(iop.to_numpy(a), dtype=np.float64)


def _problem(name: str) -> tuple[list[LinearRegressionCost], np.ndarray]:
    if name == "regression":
        costs, x_opt, _ = create_regression_problem(n_agents=N_AGENTS)
        return list(costs), _np(x_opt)  # type: ignore[arg-type]
    data = SyntheticRegressionDatasetHandler(n_targets=1, n_features=3, n_samples=40)
    parts = data.split(partitions=split_iid(data, n_partitions=N_AGENTS))
    costs3 = [LinearRegressionCost(dataset=p) for p in parts]
    A = np.concatenate([_data(c)[0] for c in costs3])
    b = np.concatenate([_data(c)[1] for c in costs3])
    # the minimiser of sum_i |A_i x - b_i|^2 / (2 m_i) with equal m_i: least squares on all
    return costs3, np.linalg.lstsq(A, b, rcond=None)[0]


def _data(cost: LinearRegressionCost) -> tuple[np.ndarray, np.ndarray]:
    A = np.stack([_np(x) for x, _ in cost.dataset])
    b = np.array([float(_np(y).reshape(-1)[0]) for _, y in cost.dataset])
    return A, b


def _x0(kind: str, d: int) -> np.ndarray:
    if kind == "zeros":
        return np.zeros((N_AGENTS, d))
    return np.arange(N_AGENTS * d, dtype=np.float64).reshape(N_AGENTS, d) - 2.0


def _run(algorithm: str, costs: list[LinearRegressionCost], graph: str,
         x0: np.ndarray) -> tuple[np.ndarray, list[list[list[float]]]]:
    agents = [Agent(c) for c in costs]
    net = P2PNetwork(graph=GRAPHS[graph], agents=agents)
    W = _np(net.weights)
    start = {a: iop.from_numpy(x0[k].copy()) for k, a in enumerate(net.agents())}
    algo = ALGORITHMS[algorithm](step_size=STEP, x0=start)
    iterates: list[list[list[float]]] = []
    algo.run(net, ITERATIONS, progress_callback=lambda k: iterates.append(
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
        costs, x_opt = _problem(name)
        built[name] = costs
        problems[name] = {"A": [_data(c)[0].tolist() for c in costs],
                          "b": [_data(c)[1].tolist() for c in costs],
                          "x_optimal": x_opt.reshape(-1).tolist()}
    graphs: dict[str, Any] = {}
    runs = []
    for algorithm, problem, graph, start in CASES:
        d = len(problems[problem]["x_optimal"])
        x0 = _x0(start, d)
        W, iterates = _run(algorithm, built[problem], graph, x0)
        graphs.setdefault(graph, W.tolist())
        assert graphs[graph] == W.tolist()
        runs.append({"algorithm": algorithm, "problem": problem, "graph": graph,
                     "x0": x0.tolist(), "iterates": iterates})
    out = {"decent_bench": version("decent-bench"), "decent_array": version("decent-array"),
           "python": platform.python_version(), "numpy": np.__version__, "seed": 0,
           "command": "python analysis/decentbench_reference.py",
           "step_size": STEP, "iterations": ITERATIONS, "n_agents": N_AGENTS,
           "gradient": "(A_i^T A_i x - A_i^T b_i) / m_i",
           "problems": _short(problems), "graphs": _short(graphs),
           "runs": _short(runs)}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(runs)} runs)", file=sys.stderr)


if __name__ == "__main__":
    main()
