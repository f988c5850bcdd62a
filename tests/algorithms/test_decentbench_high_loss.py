"""topofl's ``selection="loss", loss_at="trained"`` against decent-bench 0.3.0's
``HighLossSelection`` (issue 84 item 2), on its regression problems.

The reference (``data/decentbench_high_loss.json``, written by
``analysis/decentbench_high_loss.py`` under decent-bench's Python) holds, for FedAvg, FedProx,
Scaffold and FedAdam with 1-3 of 4 clients selected a round, the server's model after each of
12 rounds, the clients each round chose and the losses it ranked them by (every client's
``|A_i x_i - b_i|^2 / (2 m_i)`` at its current local state: the model it last trained). topofl
runs the same methods in the engine's round order, its losses from the same cost
(:class:`topofl.engine.LeastSquares`' services); both sides must choose the same clients,
rank the same losses and move the server's model alike to 1e-10 (float64). The default
``loss_at="server"`` (the server's model, power-of-choice) chooses other clients on these
cases, which the last test shows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import topofl as tf
from topofl.engine.availability import local_rates, round_view

D = torch.float64
DATA = Path(__file__).parent / "data"
FILE = json.loads((DATA / "decentbench_high_loss.json").read_text())
PROBLEMS = json.loads((DATA / "decentbench_server.json").read_text())["problems"]
TOL = 1e-10
RUNS = FILE["runs"]


def _regression(problem: str) -> tf.engine.LeastSquares:
    """decent-bench's regression costs per client, ``|A_i x_i - b_i|^2 / (2 m_i)``."""
    p = PROBLEMS[problem]
    return tf.engine.LeastSquares.of([torch.tensor(a, dtype=D) for a in p["A"]],
                                     [torch.tensor(b, dtype=D) for b in p["b"]])


def _algorithm(run: dict[str, Any], loss_at: str = "trained") -> tf.engine.Algorithm:
    n = len(PROBLEMS[run["problem"]]["A"])
    common = dict(lr=FILE["federated_step_size"], local_steps=run["local_steps"],
                  participation=run["selected_per_round"] / n, selection="loss",
                  loss_at=loss_at)
    o, name = run["options"], run["algorithm"]
    if name == "FedAvg":
        return tf.algorithms.fedavg(**common)
    if name == "FedProx":
        return tf.algorithms.fedprox(**common, mu=o["penalty"])
    if name == "Scaffold":
        return tf.algorithms.scaffold(**common, server_lr=o.get("server_step_size", 1.0))
    assert name == "FedAdam"
    return tf.algorithms.fedopt(**common, optimizer="adam", server_lr=o["server_step_size"],
                                beta1=o["beta_1"], beta2=o["beta_2"], tau=o["epsilon"],
                                variant="fl_bench")


def _trajectory(algo: tf.engine.Algorithm, run: dict[str, Any]
                ) -> tuple[np.ndarray, list[list[int]], list[list[float]]]:
    """Every client's model after each round ``[K, n, d]``, each round's chosen clients and
    the losses logged, in the engine's round order (``round_start``, the local steps,
    ``communicate``)."""
    problem = _regression(run["problem"])
    env = problem.services()
    n, d = env.n, len(run["x0"])
    state = algo.init(torch.tensor(run["x0"], dtype=D).expand(n, d).clone(), env)
    phase = algo.phases[0]
    models, chosen, losses = [], [], []
    for t in range(FILE["federated_rounds"]):
        rnd = round_view(algo, t, None, None)
        algo.round_start(state, rnd, env)
        for _ in range(run["local_steps"]):
            g = problem.grad(algo.local.point(state, phase, env))
            rate = local_rates(torch.full((n,), FILE["federated_step_size"], dtype=D), None)
            algo.local.update(state, g, phase, rate, rnd, env)
        sent = algo.communicate(state, rnd, env)
        losses.append(sent.records["selection_loss"])
        selector = algo.local.chooser  # the run's LossSelection (Sampled holds it)
        chosen.append(selector.chosen(rnd))
        models.append(state.x.numpy().copy())
    return np.array(models), chosen, losses


def _id(run: dict[str, Any]) -> str:
    opts = "-".join(f"{k}={v}" for k, v in run["options"].items())
    return (f"{run['algorithm']}-{run['problem']}-steps{run['local_steps']}-"
            f"m{run['selected_per_round']}{'-' + opts if opts else ''}")


@pytest.mark.parametrize("run", RUNS, ids=_id)
def test_high_loss_selection_follows_decentbench(run: dict[str, Any]) -> None:
    models, chosen, losses = _trajectory(_algorithm(run), run)
    assert chosen == [sorted(s) for s in run["selected"]]
    ref = np.array(run["losses"])  # up to 1.4e4, written to 15 significant digits
    assert (np.abs(np.array(losses) - ref) <= 1e-13 * ref + TOL).all()  # measured: 4.2e-11
    server = models[:, 0]  # every row holds the server's model after the average
    assert np.abs(models - server[:, None]).max() == 0.0
    gap = np.abs(server - np.array(run["iterates"])).max()
    assert gap <= TOL, gap  # measured: <= 5.7e-14
    assert np.abs(np.array(run["iterates"][-1]) - np.array(run["x0"])).max() > 0.1


def test_the_cases_cover_the_methods_and_sizes() -> None:
    assert {r["algorithm"] for r in RUNS} == {"FedAvg", "FedProx", "Scaffold", "FedAdam"}
    assert {r["selected_per_round"] for r in RUNS} == {1, 2, 3}
    assert FILE["decent_bench"] == "0.3.0"


@pytest.mark.parametrize("run", RUNS[:3], ids=_id)
def test_the_server_model_scores_other_clients(run: dict[str, Any]) -> None:
    """``loss_at="server"`` (power-of-choice: every client scored at the server's model)
    chooses differently from decent-bench's scheme on these cases (the comparison tells the
    two apart), and its first round is the same (every client starts at the server's)."""
    _, chosen, _ = _trajectory(_algorithm(run, "server"), run)
    assert chosen[0] == sorted(run["selected"][0])
    assert chosen != [sorted(s) for s in run["selected"]]


def test_a_client_not_yet_chosen_is_scored_at_its_start() -> None:
    """Round 1's losses: the clients of round 0 at the models they trained, the others at
    the shared start, which the first round's losses already gave."""
    run = RUNS[0]
    _, chosen, losses = _trajectory(_algorithm(run), run)
    for i in set(range(4)) - set(chosen[0]):
        assert losses[1][i] == losses[0][i]
    for i in chosen[0]:
        assert losses[1][i] < losses[0][i]  # trained: lower loss on its own data
