"""decent-bench's own iterates of ProxSkip (communication skipped by a coin) and DLM (the
decentralized linearized ADMM) on its regression problem, written for
``tests/algorithms/test_proxskip_dlm.py`` to compare topofl's ``proxskip`` and ``dlm`` with.

decent-bench needs Python >= 3.13 (topofl's environment here is 3.11), so this script runs in an
environment of its own and writes what the test reads (a small JSON file); it imports nothing
of topofl. Made with decent-bench 0.3.0 (decent-array 0.2.7, numpy backend, float64)::

    ~/.pyenv/versions/3.13.0/bin/python -m venv /tmp/dbenv
    /tmp/dbenv/bin/pip install decent-bench==0.3.0
    /tmp/dbenv/bin/python analysis/decentbench_proxskip_dlm.py

It writes ``tests/algorithms/data/decentbench_proxskip_dlm.json``:

- ``problems``: decent-bench's regression problem as its test suite builds it
  (``create_regression_problem(n_agents=4)``: 10 samples of 1 feature per agent) and the same
  synthetic data with 3 features (``SyntheticRegressionDatasetHandler``, 40 samples split
  i.i.d. over 4 agents); each agent's cost is ``LinearRegressionCost``,
  ``f_i(x) = |A_i x - b_i|^2 / (2 m_i)``, gradient ``(A_i^T A_i x - A_i^T b_i) / m_i``.
- ``graphs``: the mixing matrix ``W`` decent-bench's ``P2PNetwork`` computes (Metropolis
  weights ``1/(1 + max(d_i, d_j))``, what ProxSkip combines with) and its 0/1 ``adjacency``
  (what DLM's neighbour sums use) on the complete graph, the 4-cycle and the 4-path.
- ``runs``: for each case the iterates ``x_1 .. x_R`` of every agent, ``[R][agent][d]``, read
  after each of decent-bench's ``step`` calls, no impairment, and the messages the agents
  sent in each step (decent-bench's own counters, ``Agent._n_sent_messages``). ProxSkip's
  ``step_size`` is alpha, ``aux_step_size`` beta, ``comm_probability`` p, ``chi`` chi; DLM's
  ``step_size`` is mu and ``penalty`` rho.

The coin. decent-bench's ``ProxSkip.step`` draws one coin a step for all agents,
``random.random() < comm_probability``, from Python's global ``random`` module. Here the module
``random`` that decent-bench's ``_prox_skip`` module reads is replaced, for the run, by a
recorder: a ``random.Random(seed)`` of its own whose every draw is kept. The JSON holds the
draws (``draws``) and the coins they made (``coins``: the step communicated or not), so the
test feeds topofl's ``proxskip`` the same sequence (topofl's own coin is a pure function of
``(coin_seed, t)``, which cannot replay Python's Mersenne Twister). Cases at ``p = 1`` need
no coin (``random.random() < 1`` always holds): they check the rest of the step alone.

DLM. decent-bench's ``DLM.step`` at iteration 0 only communicates (each agent stores
``s_i = sum_j (x_i - x_j)`` over its neighbours, ``x`` unchanged); each later step is one
primal step with the stored ``s``, one communication and one dual step. Its iterate after
step ``k >= 1`` is topofl's after round ``k - 1`` (topofl's ``dlm`` keeps ``s`` in its state;
the test starts it at ``L x_0``).

decent-bench 0.3.0's DLM as shipped does not compute its own update on every graph: its
``_sum_messages`` starts the neighbour sum from the first message received (``s = val``) and
adds the others into it in place (``s += val``, decent-array's ``__iadd__``), while
``P2PNetwork.send`` hands the same array object to every receiver of a sender (it copies a
message once, and per receiver only when it adds noise). The first neighbour's message is then
changed for that neighbour's other receivers that read it later: on the complete graph and the
4-cycle the iterates leave the documented update within the first three steps (on
``regression``: by 1.9 at step 2 on the complete graph, by 0.05 at step 1 on the 4-cycle from
distinct starts) and are off by 59 to 2.8e4 at step 15 (the run diverges on the complete
graph); on the 4-path they keep to it (to 1e-13: in this agent order each shared message is
summed into only after its other receivers have read it). So every DLM case is run twice:
as shipped (``iterates``) and with that one line changed to start the sum from a copy
(``iterates_copied``: the subclass ``_CopiedDLM`` below, the update of decent-bench's own
docstring). ProxSkip's sums start from a fresh product (``W_a[i, i] * z_i``) and are not
affected.

Numbers are written to 15 significant digits. decent-bench adds its neighbours' messages in
the order of a Python ``set`` of agents (hashed by identity), so a rerun may differ from the
committed file in the last bits; the comparison's 1e-10 is untouched.

Seeded with ``iop.set_seed(0)`` (the data are written out, so the test does not depend on it)
and ``random.Random(1000 + case index)`` for each ProxSkip case's coins.
"""

from __future__ import annotations

import json
import platform
import random
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import decent_bench.algorithms.p2p._prox_skip as prox_skip_module
import numpy as np
from _decentbench import GRAPHS, N_AGENTS  # beside this script
from _decentbench import as_numpy as _np
from _decentbench import data as _data
from _decentbench import problem as _regression_problem
from _decentbench import short as _short
from _decentbench import x0 as _x0
from decent_array import interoperability as iop
from decent_bench.agents import Agent
from decent_bench.algorithms.p2p import DLM, ProxSkip
from decent_bench.costs import LinearRegressionCost
from decent_bench.networks import P2PNetwork

OUT = Path(__file__).resolve().parents[1] / "tests" / "algorithms" / "data" / (
    "decentbench_proxskip_dlm.json")
ROUNDS = 15
#: ProxSkip: (problem, graph, x0, alpha, beta, p, chi); DLM: (problem, graph, x0, mu, rho).
#: ProxSkip with p < 1 (recorded coins) and p = 1, beta = p (the paper's dual step) and
#: beta != p, chi at decent-bench's 1 and above; DLM with the penalty below and above 1; both on
#: the three graphs, from the same and from distinct starting points ("spread").
PROXSKIP = [
    ("regression", "complete", "zeros", 0.1, 0.5, 0.5, 1.0),
    ("regression", "ring", "zeros", 0.1, 1.0, 1.0, 1.0),
    ("regression", "path", "spread", 0.05, 0.3, 0.3, 2.0),
    ("regression3", "ring", "spread", 0.1, 0.7, 0.6, 1.5),
    ("regression3", "path", "zeros", 0.1, 0.4, 0.4, 1.0),
    ("regression3", "complete", "spread", 0.05, 0.8, 1.0, 3.0),
]
DLMS = [
    ("regression", "complete", "zeros", 0.05, 1.0),
    ("regression", "ring", "spread", 0.1, 0.5),
    ("regression", "path", "zeros", 0.1, 2.0),
    ("regression3", "path", "spread", 0.05, 1.0),
    ("regression3", "ring", "zeros", 0.1, 0.3),
    ("regression3", "complete", "spread", 0.02, 3.0),
]


class _CopiedDLM(DLM):
    """decent-bench's ``DLM`` with its neighbour sum started from a copy of the first message
    (as shipped it adds into the message object, which other receivers share)."""

    def _sum_messages(self, i: Agent) -> Any:
        s = None
        for val in i.messages().values():
            s = iop.copy(val) if s is None else s + val
        return s


class _Coins:
    """Stands for the module ``random`` in decent-bench's ``_prox_skip``: its ``random()``
    draws from a seeded generator of its own and keeps every draw."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self.draws: list[float] = []

    def random(self) -> float:
        u = self._rng.random()
        self.draws.append(u)
        return u












def _problem(name: str) -> list[Any]:
    return _regression_problem(name)[0]


def _run(cls: Any, settings: dict[str, float], costs: list[LinearRegressionCost], graph: str,
         x0: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[list[list[float]]], list[float]]:
    agents = [Agent(c) for c in costs]
    net = P2PNetwork(graph=GRAPHS[graph], agents=agents)
    W, A = _np(net.weights), _np(net.adjacency)
    start = {a: iop.from_numpy(x0[k].copy()) for k, a in enumerate(net.agents())}
    algo = cls(**settings, x0=start)
    iterates: list[list[list[float]]] = []
    sent: list[float] = []

    def seen(k: int) -> None:
        iterates.append([_np(a.x).tolist() for a in net.agents()])
        sent.append(float(sum(a._n_sent_messages for a in net.agents())))  # noqa: SLF001

    algo.run(net, ROUNDS, progress_callback=seen)
    for a in agents:  # a cost belongs to one network's agent at a time: free them
        a.index = -1
    per_step = np.diff(np.concatenate([[0.0], sent])).tolist()
    return W, A, iterates, per_step


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
    cases = ([("ProxSkip", *c) for c in PROXSKIP] + [("DLM", *c) for c in DLMS])
    for index, (algorithm, problem, graph, start, *hp) in enumerate(cases):
        d = len(problems[problem]["A"][0][0])
        x0 = _x0(start, d)
        coins = _Coins(1000 + index)
        if algorithm == "ProxSkip":
            alpha, beta, p, chi = hp
            settings = {"step_size": alpha, "aux_step_size": beta, "comm_probability": p,
                        "chi": chi}
            prox_skip_module.random = coins  # type: ignore[assignment]
            try:
                W, A, iterates, sent = _run(ProxSkip, settings, built[problem], graph, x0)
            finally:
                prox_skip_module.random = random
        else:
            mu, rho = hp
            settings = {"step_size": mu, "penalty": rho}
            W, A, iterates, sent = _run(DLM, settings, built[problem], graph, x0)
            _, _, copied, _ = _run(_CopiedDLM, settings, built[problem], graph, x0)
        graphs.setdefault(graph, {"W": W.tolist(), "adjacency": A.tolist()})
        if graphs[graph] != {"W": W.tolist(), "adjacency": A.tolist()}:
            raise RuntimeError(f"decent-bench's W on {graph} changed between runs")
        run: dict[str, Any] = {"algorithm": algorithm, "problem": problem, "graph": graph,
                               **settings, "x0": x0.tolist(), "iterates": iterates,
                               "messages": sent}
        if algorithm == "DLM":
            run["iterates_copied"] = copied
        if algorithm == "ProxSkip":
            if len(coins.draws) != ROUNDS:
                raise RuntimeError(f"ProxSkip drew {len(coins.draws)} coins in {ROUNDS} steps")
            run["draws"] = coins.draws
            run["coins"] = [u < settings["comm_probability"] for u in coins.draws]
        runs.append(run)
    out = {"decent_bench": version("decent-bench"), "decent_array": version("decent-array"),
           "python": platform.python_version(), "numpy": np.__version__, "seed": 0,
           "command": "python analysis/decentbench_proxskip_dlm.py",
           "rounds": ROUNDS, "n_agents": N_AGENTS,
           "gradient": "(A_i^T A_i x - A_i^T b_i) / m_i",
           "problems": _short(problems), "graphs": _short(graphs), "runs": _short(runs)}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(runs)} runs)", file=sys.stderr)


if __name__ == "__main__":
    main()
