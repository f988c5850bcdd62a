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
- ``federated_runs`` (appended for issue 84 item 2; the cases above are unchanged): its
  server methods ``FedNova`` and ``FedDyn`` on a ``FedNetwork`` of the same 4 agents (its
  default server), the server's model ``x_1 .. x_K`` ``[K][d]`` after each ``step``, from
  the server's ``x0``, local step size ``0.1``, 12 rounds: full participation and a fixed
  selection per round (``selection``: the agents selected in round ``k`` are
  ``selection[k % len(selection)]``, a ``ClientSelectionScheme`` of this script's), equal and
  unequal local step counts (``local_steps``, one per agent), FedNova's local momentum,
  proximal term and server momentum, FedDyn's ``penalty`` (alpha). Besides the two problems
  above, ``regression3_unequal``: the same kind of synthetic data (40 new samples, 3
  features) split into 4, 8, 12 and 16 samples with agent ``i``'s targets shifted by
  ``5 i``, so that the agents' sizes differ (FedNova weighs by them) and their minimisers
  differ.

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

import numpy as np
from _decentbench import GRAPHS, N_AGENTS  # beside this script
from _decentbench import as_numpy as _np
from _decentbench import data as _data
from _decentbench import problem as _regression_problem
from _decentbench import short as _short
from _decentbench import x0 as _x0
from decent_array import interoperability as iop
from decent_bench.agents import Agent
from decent_bench.algorithms.federated import FedDyn, FedNova
from decent_bench.algorithms.p2p import ATC, ED, EXTRA, NIDS, ATC_Tracking
from decent_bench.costs import LinearRegressionCost
from decent_bench.datasets import SyntheticRegressionDatasetHandler
from decent_bench.networks import FedNetwork, P2PNetwork
from decent_bench.schemes import ClientSelectionScheme

OUT = Path(__file__).resolve().parents[1] / "tests" / "algorithms" / "data" / (
    "decentbench_reference.json")
STEP = 0.1
ITERATIONS = 15
ALGORITHMS = {"ED": ED, "NIDS": NIDS, "ATC": ATC, "EXTRA": EXTRA,
              "ATC_Tracking": ATC_Tracking}
#: (algorithm, problem, graph, x0): every algorithm on the test suite's complete graph, exact
#: diffusion and NIDS on every graph, and from distinct starting points (x0 "spread")
CASES = ([(a, "regression", "complete", "zeros") for a in ALGORITHMS]
         + [(a, "regression", g, "zeros") for a in ("ED", "NIDS") for g in ("ring", "path")]
         + [(a, "regression3", "path", "zeros") for a in ALGORITHMS]
         + [(a, "regression3", "path", "spread") for a in ("ED", "NIDS")])












_problem = _regression_problem


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


# ---------------------------------------------------------------- issue 84 item 2: FedNova, FedDyn

FED_ROUNDS = 12
#: the rounds' selections of the partial cases (agent positions), cycled
SELECTION = [[0, 2], [1, 2, 3], [3], [0, 1]]
UNEQUAL = [1, 2, 3, 4]
#: (algorithm, problem, keyword arguments, local steps per agent, selection or None, x0 kind)
FED_CASES: list[tuple[str, str, dict[str, Any], list[int], list[list[int]] | None, str]] = [
    ("FedNova", "regression", {}, [3] * N_AGENTS, None, "zeros"),
    ("FedNova", "regression3", {}, UNEQUAL, None, "spread"),
    ("FedNova", "regression3_unequal", {}, UNEQUAL, None, "spread"),
    ("FedNova", "regression3_unequal", {}, UNEQUAL, SELECTION, "spread"),
    ("FedNova", "regression3_unequal", {"use_momentum": True, "momentum": 0.5},
     UNEQUAL, None, "spread"),
    ("FedNova", "regression3_unequal", {"use_prox": True, "penalty": 0.5}, UNEQUAL, SELECTION,
     "spread"),
    ("FedNova", "regression3_unequal", {"use_momentum": True, "momentum": 0.5,
                                        "use_prox": True, "penalty": 0.5,
                                        "use_server_momentum": True, "server_momentum": 0.5},
     UNEQUAL, SELECTION, "spread"),
    ("FedDyn", "regression", {"penalty": 0.1}, [3] * N_AGENTS, None, "zeros"),
    ("FedDyn", "regression3", {"penalty": 0.01}, [5] * N_AGENTS, None, "spread"),
    ("FedDyn", "regression3_unequal", {"penalty": 0.1}, [5] * N_AGENTS, None, "spread"),
    ("FedDyn", "regression3_unequal", {"penalty": 0.5}, [2] * N_AGENTS, SELECTION, "spread"),
]


class _Fixed(ClientSelectionScheme):
    """The agents at ``rounds[k % len(rounds)]`` of ``agents`` in round ``k``."""

    def __init__(self, agents: list[Agent], rounds: list[list[int]]) -> None:
        self.agents, self.rounds = agents, rounds

    def select(self, clients: Any, iteration: int) -> list[Agent]:
        chosen = [self.agents[i] for i in self.rounds[iteration % len(self.rounds)]]
        return [c for c in clients if c in chosen]


def _unequal_problem() -> list[LinearRegressionCost]:
    data = SyntheticRegressionDatasetHandler(n_targets=1, n_features=3, n_samples=40)
    rows = list(data.split(partitions=[list(range(40))])[0])
    costs, start = [], 0
    for i, m in enumerate((4, 8, 12, 16)):
        shifted = [(x, y + 5.0 * i) for x, y in rows[start:start + m]]
        costs.append(LinearRegressionCost(dataset=shifted))
        start += m
    return costs


def _fed_x0(kind: str, d: int) -> np.ndarray:
    return np.zeros(d) if kind == "zeros" else np.linspace(1.0, -2.0, d)


def _fed_run(algorithm: str, costs: list[LinearRegressionCost], kw: dict[str, Any],
             steps: list[int], selection: list[list[int]] | None, x0: np.ndarray
             ) -> list[list[float]]:
    agents = [Agent(c) for c in costs]
    net = FedNetwork(clients=agents)
    scheme = None if selection is None else _Fixed(agents, selection)
    start: dict[Agent, Any] = {a: iop.from_numpy(x0.copy()) for a in agents}
    start[net.server()] = iop.from_numpy(x0.copy())
    if algorithm == "FedNova":
        algo: Any = FedNova(step_size=STEP, x0=start, selection_scheme=scheme,
                            num_local_steps=dict(zip(agents, steps, strict=True)), **kw)
    else:
        assert len(set(steps)) == 1  # decent-bench's FedDyn takes one count for all
        algo = FedDyn(step_size=STEP, x0=start, selection_scheme=scheme,
                      num_local_steps=steps[0], **kw)
    iterates: list[list[float]] = []
    algo.run(net, FED_ROUNDS, progress_callback=lambda k: iterates.append(
        _np(net.server().x).reshape(-1).tolist()))
    for a in agents:
        a.index = -1
    return iterates


def _federated(problems: dict[str, Any], built: dict[str, list[LinearRegressionCost]]
               ) -> list[dict[str, Any]]:
    costs = _unequal_problem()
    built["regression3_unequal"] = costs
    A = np.concatenate([_data(c)[0] for c in costs])
    b = np.concatenate([_data(c)[1] for c in costs])
    H = sum(a.T @ a / len(a) for a, _ in map(_data, costs))
    c = sum(a.T @ y / len(a) for a, y in map(_data, costs))
    problems["regression3_unequal"] = {
        "A": [_data(c)[0].tolist() for c in costs], "b": [_data(c)[1].tolist() for c in costs],
        # the minimiser of sum_i f_i (FedDyn's), and of sum_i m_i f_i: least squares on all
        "x_optimal": np.linalg.solve(H, c).reshape(-1).tolist(),
        "x_optimal_data_size": np.linalg.lstsq(A, b, rcond=None)[0].reshape(-1).tolist()}
    out = []
    for algorithm, problem, kw, steps, selection, start in FED_CASES:
        x0 = _fed_x0(start, len(problems[problem]["x_optimal"]))
        out.append({"algorithm": algorithm, "problem": problem, "options": kw,
                    "local_steps": steps, "selection": selection, "x0": x0.tolist(),
                    "iterates": _fed_run(algorithm, built[problem], kw, steps, selection, x0)})
    return out


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
    fed_runs = _federated(problems, built)
    out = {"decent_bench": version("decent-bench"), "decent_array": version("decent-array"),
           "python": platform.python_version(), "numpy": np.__version__, "seed": 0,
           "command": "python analysis/decentbench_reference.py",
           "step_size": STEP, "iterations": ITERATIONS, "n_agents": N_AGENTS,
           "gradient": "(A_i^T A_i x - A_i^T b_i) / m_i",
           "problems": _short(problems), "graphs": _short(graphs),
           "runs": _short(runs), "federated_rounds": FED_ROUNDS,
           "federated_runs": _short(fed_runs)}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(runs)} runs, {len(fed_runs)} "
          "federated runs)", file=sys.stderr)


if __name__ == "__main__":
    main()
