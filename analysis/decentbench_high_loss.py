"""decent-bench's federated methods under its ``HighLossSelection`` (issue 84 item 2): the
server's model and the clients each round chose, written for
``tests/algorithms/test_decentbench_high_loss.py`` to compare topofl's
``selection="loss", loss_at="trained"`` with.

decent-bench's ``HighLossSelection`` scores each client at its *current local state*: the model
it last trained (its starting model until it is first selected), since a ``FedNetwork`` client
keeps its local model between the rounds it takes part in and only the selected clients
receive the server's model. Power-of-choice (topofl's ``loss_at="server"``) scores the server's
model instead; the two differ from the second round on.

Runs under decent-bench's Python (>= 3.13), beside ``decentbench_server.py`` (whose problems,
costs and helpers it reuses) and imports nothing of topofl. Made with decent-bench 0.3.0
(decent-array 0.2.7, numpy backend, float64)::

    /tmp/dbenv/bin/python analysis/decentbench_high_loss.py

It writes ``tests/algorithms/data/decentbench_high_loss.json``: for every case, the method,
its problem (``decentbench_server.json``'s, read from ``decentbench_reference.json``; 4
agents), options, local steps, the number of clients selected a round, the start ``x0``
(every client and the server), the server's model ``x_1 .. x_K`` after each of 12 rounds,
and ``selected[t]``: round ``t``'s clients in the order ``select`` returned them (highest
loss first), with ``losses[t]`` the losses it ranked (every client's, in client order). No
tie occurs (the losses are distinct), so its random tie-break permutation decides nothing.
"""

from __future__ import annotations

import json
import platform
import sys
from importlib.metadata import version
from typing import Any

import numpy as np
from _decentbench import as_numpy as _np
from _decentbench import short as _short
from decent_array import interoperability as iop
from decent_bench.agents import Agent
from decent_bench.networks import FedNetwork
from decent_bench.schemes import HighLossSelection
from decentbench_server import DATA, FED_ROUNDS, FEDERATED, SOURCE, STEP, _costs, _free

OUT = DATA / "decentbench_high_loss.json"
_ADAPTIVE = {"server_step_size": 0.1, "beta_1": 0.5, "beta_2": 0.9, "epsilon": 1e-3}
#: (algorithm, problem, keyword arguments, local steps, clients selected a round, x0 kind)
CASES: list[tuple[str, str, dict[str, Any], int, int, str]] = [
    ("FedAvg", "regression3_unequal", {}, 3, 2, "spread"),
    ("FedAvg", "regression3_unequal", {}, 1, 1, "spread"),
    ("FedAvg", "regression", {}, 2, 2, "zeros"),
    ("FedProx", "regression3_unequal", {"penalty": 0.5}, 3, 2, "spread"),
    ("Scaffold", "regression3_unequal", {}, 3, 2, "spread"),
    ("Scaffold", "regression3_unequal", {"server_step_size": 0.5}, 2, 3, "spread"),
    ("FedAdam", "regression3_unequal", _ADAPTIVE, 3, 2, "spread"),
]


class _Recorded(HighLossSelection):
    """decent-bench's ``HighLossSelection``, its choices and the losses it ranked recorded."""

    def __init__(self, k: int, order: list[Agent]) -> None:
        super().__init__(num_selected_clients=k)
        self.order = order
        self.selected: list[list[int]] = []
        self.losses: list[list[float]] = []

    def select(self, clients: Any, iteration: int) -> list[Agent]:
        picked = super().select(clients, iteration)
        self.selected.append([self.order.index(c) for c in picked])
        self.losses.append([float(self._client_loss(c)) for c in self.order])
        return picked


def _x0(kind: str, d: int) -> np.ndarray:
    return np.zeros(d) if kind == "zeros" else np.linspace(1.0, -2.0, d)


def _run(algorithm: str, costs: list[Any], kw: dict[str, Any], steps: int, k: int,
         x0: np.ndarray) -> dict[str, Any]:
    agents = [Agent(c) for c in costs]
    net = FedNetwork(clients=agents)
    start: dict[Agent, Any] = {a: iop.from_numpy(x0.copy()) for a in agents}
    start[net.server()] = iop.from_numpy(x0.copy())
    scheme = _Recorded(k, agents)
    algo = FEDERATED[algorithm](step_size=STEP, x0=start, num_local_steps=steps,
                                selection_scheme=scheme, **kw)
    iterates: list[list[float]] = []
    algo.run(net, FED_ROUNDS, progress_callback=lambda _: iterates.append(
        _np(net.server().x).reshape(-1).tolist()))
    _free(agents)
    return {"iterates": iterates, "selected": scheme.selected, "losses": scheme.losses}


def main() -> None:
    iop.set_backend("numpy")
    iop.set_seed(0)  # the tie-break permutations draw from it; no tie occurs
    source = json.loads(SOURCE.read_text())
    problems = {k: {"A": v["A"], "b": v["b"]} for k, v in source["problems"].items()}
    built = {k: _costs(v) for k, v in problems.items()}
    runs = []
    for algorithm, problem, kw, steps, k, start in CASES:
        x0 = _x0(start, len(problems[problem]["A"][0][0]))
        got = _run(algorithm, built[problem], kw, steps, k, x0)
        flat = [v for row in got["losses"] for v in row]
        assert all(len(set(row)) == len(row) for row in got["losses"]), "a tie in the losses"
        assert min(flat) >= 0.0
        runs.append({"algorithm": algorithm, "problem": problem, "options": kw,
                     "local_steps": steps, "selected_per_round": k, "x0": x0.tolist(), **got})
    out = {"decent_bench": version("decent-bench"), "decent_array": version("decent-array"),
           "python": platform.python_version(), "numpy": np.__version__,
           "command": "python analysis/decentbench_high_loss.py",
           "problems_from": "tests/algorithms/data/decentbench_reference.json",
           "loss": "|A_i x - b_i|^2 / (2 m_i) at the client's current local state",
           "federated_rounds": FED_ROUNDS, "federated_step_size": STEP,
           "runs": _short(runs)}
    OUT.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(runs)} runs)", file=sys.stderr)


if __name__ == "__main__":
    main()
