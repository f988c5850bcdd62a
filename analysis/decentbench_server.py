"""decent-bench's own iterates of its plain decentralized gradient descent (``DGD``), its two
other gradient-tracking methods (``SimpleGT``, ``AugDGM``) and its federated ``FedAvg``,
``FedProx``, ``Scaffold``, ``FedAdam``, ``FedYogi`` and ``FedAdagrad``, written for
``tests/algorithms/test_decentbench_server.py`` to compare topofl's with (issue 84 item 1).

Runs under decent-bench's Python (>= 3.13) as ``analysis/decentbench_reference.py`` does and
imports nothing of topofl. Made with decent-bench 0.3.0 (decent-array 0.2.7, numpy backend,
float64)::

    ~/.pyenv/versions/3.13.0/bin/python -m venv /tmp/dbenv
    /tmp/dbenv/bin/pip install decent-bench==0.3.0
    /tmp/dbenv/bin/python analysis/decentbench_server.py

It writes ``tests/algorithms/data/decentbench_server.json``:

- ``problems``: ``regression``, ``regression3`` and ``regression3_unequal`` (4 agents,
  ``LinearRegressionCost``, ``f_i(x) = |A_i x - b_i|^2 / (2 m_i)``), each agent's ``A`` and
  ``b``, read from ``tests/algorithms/data/decentbench_reference.json`` (the data
  ``decentbench_reference.py`` made, decent-bench's own regression problem among them) and
  given to decent-bench's costs as written there, so that both sides start from the same
  numbers bit for bit.
- ``graphs``: the Metropolis ``W`` decent-bench's ``P2PNetwork`` computes on the complete
  graph, the 4-cycle and the 4-path.
- ``p2p_runs``: ``DGD``, ``SimpleGT`` and ``AugDGM``, every agent's ``x_1 .. x_K``
  ``[K][agent][d]`` after each ``step``, 15 iterations, step size 0.1 (its test suite's) and
  0.05.
- ``federated_runs``: the server's model ``x_1 .. x_K`` ``[K][d]`` after each ``step``, 12
  rounds, local step size 0.1, on a ``FedNetwork`` of the same agents: full participation
  (the methods' default ``UniformSelection`` with fraction 1, every client) and a fixed
  replayed selection (``selection``: the agents of round ``k`` are
  ``selection[k % len(selection)]``, ``decentbench_reference.py``'s scheme). Each method at
  decent-bench's defaults (``options`` empty) and with its own hyper-parameters changed.
  decent-bench's ``FedAvg``, ``FedProx``, ``Scaffold`` and ``FedOpt`` take one local step
  count for every client (an int; ``FedNova``'s per-client mapping is refused:
  ``refused_per_client_steps`` records what each raises), so every case has equal counts.

Numbers are written to 15 significant digits (the inputs are the reference file's numbers
as written, so only the iterates are rounded: 1e-15 relative).
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
from _decentbench import short as _short
from _decentbench import x0 as _x0
from decent_array import interoperability as iop
from decent_bench.agents import Agent
from decent_bench.algorithms.federated import (
    FedAdagrad,
    FedAdam,
    FedAvg,
    FedProx,
    FedYogi,
    Scaffold,
)
from decent_bench.algorithms.p2p import DGD, AugDGM, SimpleGT
from decent_bench.costs import LinearRegressionCost
from decent_bench.networks import FedNetwork, P2PNetwork
from decent_bench.schemes import ClientSelectionScheme

DATA = Path(__file__).resolve().parents[1] / "tests" / "algorithms" / "data"
SOURCE = DATA / "decentbench_reference.json"
OUT = DATA / "decentbench_server.json"
P2P_ITERATIONS = 15
FED_ROUNDS = 12
STEP = 0.1
P2P = {"DGD": DGD, "SimpleGT": SimpleGT, "AugDGM": AugDGM}
FEDERATED = {"FedAvg": FedAvg, "FedProx": FedProx, "Scaffold": Scaffold, "FedAdam": FedAdam,
             "FedYogi": FedYogi, "FedAdagrad": FedAdagrad}
#: (algorithm, problem, graph, x0 kind, step size)
P2P_CASES = ([(a, "regression", "complete", "zeros", STEP) for a in P2P]
             + [(a, "regression3", g, "spread", STEP) for a in P2P for g in ("ring", "path")]
             + [(a, "regression3", "complete", "spread", STEP) for a in P2P]
             + [(a, "regression3", "path", "zeros", 0.05) for a in P2P])
#: the rounds' selections of the partial cases (agent positions), cycled
SELECTION = [[0, 2], [1, 2, 3], [3], [0, 1]]
_ADAPTIVE = {"server_step_size": 0.1, "beta_1": 0.5, "epsilon": 1e-3}
#: (algorithm, problem, keyword arguments, local steps, selection or None, x0 kind)
FED_CASES: list[tuple[str, str, dict[str, Any], int, list[list[int]] | None, str]] = [
    ("FedAvg", "regression", {}, 1, None, "zeros"),
    ("FedAvg", "regression3_unequal", {}, 3, None, "spread"),
    ("FedAvg", "regression3_unequal", {}, 3, SELECTION, "spread"),
    ("FedProx", "regression", {}, 3, None, "zeros"),
    ("FedProx", "regression3_unequal", {}, 3, None, "spread"),
    ("FedProx", "regression3_unequal", {"penalty": 0.5}, 3, SELECTION, "spread"),
    ("FedProx", "regression3_unequal", {"penalty": 0.0}, 3, SELECTION, "spread"),
    ("Scaffold", "regression", {}, 1, None, "zeros"),
    ("Scaffold", "regression3_unequal", {}, 1, None, "spread"),
    ("Scaffold", "regression3_unequal", {}, 3, None, "spread"),
    ("Scaffold", "regression3_unequal", {}, 3, SELECTION, "spread"),
    ("Scaffold", "regression3_unequal", {"server_step_size": 0.5}, 3, SELECTION, "spread"),
    ("FedAdam", "regression3_unequal", {}, 3, None, "spread"),
    ("FedAdam", "regression3_unequal", {**_ADAPTIVE, "beta_2": 0.9}, 3, SELECTION, "spread"),
    ("FedAdam", "regression3_unequal", {"server_step_size": 0.1}, 3, None, "spread"),
    ("FedAdam", "regression3_unequal", {"server_step_size": 0.1, "beta_1": 0.0,
                                        "beta_2": 0.0}, 3, None, "spread"),
    ("FedYogi", "regression3_unequal", {}, 3, None, "spread"),
    ("FedYogi", "regression3_unequal", {**_ADAPTIVE, "beta_2": 0.9}, 3, SELECTION, "spread"),
    ("FedYogi", "regression3_unequal", {"server_step_size": 0.1}, 3, None, "spread"),
    ("FedAdagrad", "regression3_unequal", {}, 3, None, "spread"),
    ("FedAdagrad", "regression3_unequal", _ADAPTIVE, 3, SELECTION, "spread"),
    ("FedAdagrad", "regression", {"server_step_size": 0.1, "beta_1": 0.0}, 2, None, "zeros"),
]


class _Fixed(ClientSelectionScheme):
    """The agents at ``rounds[k % len(rounds)]`` of ``agents`` in round ``k``."""

    def __init__(self, agents: list[Agent], rounds: list[list[int]]) -> None:
        self.agents, self.rounds = agents, rounds

    def select(self, clients: Any, iteration: int) -> list[Agent]:
        chosen = [self.agents[i] for i in self.rounds[iteration % len(self.rounds)]]
        return [c for c in clients if c in chosen]


def _costs(p: dict[str, Any]) -> list[LinearRegressionCost]:
    """decent-bench's costs on the data ``p`` (``A`` ``[agent][m][d]``, ``b`` ``[agent][m]``)."""
    return [LinearRegressionCost(dataset=[
        (iop.from_numpy(np.array(row, dtype=np.float64)),
         iop.from_numpy(np.array([y], dtype=np.float64))) for row, y in zip(A, b, strict=True)])
        for A, b in zip(p["A"], p["b"], strict=True)]


def _free(agents: list[Agent]) -> None:
    for a in agents:  # a cost belongs to one network's agent at a time
        a.index = -1


def _p2p_run(algorithm: str, costs: list[LinearRegressionCost], graph: str, x0: np.ndarray,
             step: float) -> tuple[np.ndarray, list[list[list[float]]]]:
    agents = [Agent(c) for c in costs]
    net = P2PNetwork(graph=GRAPHS[graph], agents=agents)
    W = _np(net.weights)
    start = {a: iop.from_numpy(x0[k].copy()) for k, a in enumerate(net.agents())}
    algo = P2P[algorithm](step_size=step, x0=start)
    iterates: list[list[list[float]]] = []
    algo.run(net, P2P_ITERATIONS, progress_callback=lambda k: iterates.append(
        [_np(a.x).tolist() for a in net.agents()]))
    _free(agents)
    return W, iterates


def _fed_x0(kind: str, d: int) -> np.ndarray:
    return np.zeros(d) if kind == "zeros" else np.linspace(1.0, -2.0, d)


def _fed_run(algorithm: str, costs: list[LinearRegressionCost], kw: dict[str, Any],
             steps: int, selection: list[list[int]] | None, x0: np.ndarray
             ) -> list[list[float]]:
    agents = [Agent(c) for c in costs]
    net = FedNetwork(clients=agents)
    start: dict[Agent, Any] = {a: iop.from_numpy(x0.copy()) for a in agents}
    start[net.server()] = iop.from_numpy(x0.copy())
    if selection is not None:  # else the method's default: UniformSelection, fraction 1
        kw = {**kw, "selection_scheme": _Fixed(agents, selection)}
    algo = FEDERATED[algorithm](step_size=STEP, x0=start, num_local_steps=steps, **kw)
    iterates: list[list[float]] = []
    algo.run(net, FED_ROUNDS, progress_callback=lambda k: iterates.append(
        _np(net.server().x).reshape(-1).tolist()))
    _free(agents)
    return iterates


def _refusals(costs: list[LinearRegressionCost]) -> dict[str, str]:
    """What each method says to a per-client mapping of local step counts."""
    agents = [Agent(c) for c in costs]
    out = {}
    for name, cls in FEDERATED.items():
        try:
            cls(step_size=STEP, num_local_steps=dict.fromkeys(agents, 2))
        except (TypeError, ValueError) as err:
            out[name] = f"{type(err).__name__}: {err}"
        else:
            out[name] = "accepted"
    _free(agents)
    return out


def main() -> None:
    iop.set_backend("numpy")
    iop.set_seed(0)  # nothing here draws: the data are read, the selections fixed
    source = json.loads(SOURCE.read_text())
    problems = {k: {"A": v["A"], "b": v["b"]} for k, v in source["problems"].items()}
    built = {k: _costs(v) for k, v in problems.items()}
    graphs: dict[str, Any] = {}
    p2p = []
    for algorithm, problem, graph, start, step in P2P_CASES:
        x0 = _x0(start, len(problems[problem]["A"][0][0]))
        W, iterates = _p2p_run(algorithm, built[problem], graph, x0, step)
        graphs.setdefault(graph, W.tolist())
        assert graphs[graph] == W.tolist()
        p2p.append({"algorithm": algorithm, "problem": problem, "graph": graph,
                    "step_size": step, "x0": x0.tolist(), "iterates": iterates})
    fed = []
    for algorithm, problem, kw, steps, selection, start in FED_CASES:
        x0 = _fed_x0(start, len(problems[problem]["A"][0][0]))
        fed.append({"algorithm": algorithm, "problem": problem, "options": kw,
                    "local_steps": steps, "selection": selection, "x0": x0.tolist(),
                    "iterates": _fed_run(algorithm, built[problem], kw, steps, selection, x0)})
    out = {"decent_bench": version("decent-bench"), "decent_array": version("decent-array"),
           "python": platform.python_version(), "numpy": np.__version__,
           "command": "python analysis/decentbench_server.py",
           "problems_from": "tests/algorithms/data/decentbench_reference.json",
           "n_agents": N_AGENTS, "gradient": "(A_i^T A_i x - A_i^T b_i) / m_i",
           "p2p_iterations": P2P_ITERATIONS, "federated_rounds": FED_ROUNDS,
           "federated_step_size": STEP,
           "refused_per_client_steps": _refusals(built["regression"]),
           "problems": problems, "graphs": _short(graphs), "p2p_runs": _short(p2p),
           "federated_runs": _short(fed)}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(p2p)} p2p runs, {len(fed)} "
          "federated runs)", file=sys.stderr)


if __name__ == "__main__":
    main()
