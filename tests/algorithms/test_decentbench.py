"""topofl's algorithms against decent-bench 0.3.0's own implementations, on its own problem.

``data/decentbench_reference.json`` holds decent-bench's regression problem (4 agents, its
``LinearRegressionCost``: ``f_i(x) = |A_i x - b_i|^2 / (2 m_i)``), the Metropolis ``W`` its
``P2PNetwork`` computes on three graphs, and the iterates of its ``ED``, ``NIDS``, ``ATC``,
``EXTRA`` and ``ATC_Tracking`` (step 0.1, no impairment), written by
``analysis/decentbench_reference.py`` under Python 3.13 (decent-bench needs it). Here topofl's
counterparts run through ``tf.engine.run_rounds`` on the same data, ``W`` and starting points
in float64, and every iterate of every agent must agree to 1e-10.

The file's ``federated_runs`` hold its server methods ``FedNova`` and ``FedDyn`` (issue 84
item 2): the server's model after each round, with full participation and a fixed selection,
equal and unequal local step counts; topofl's ``fednova`` and ``feddyn`` are driven here in the
engine's round order (``round_start``, each client's local steps at rate 0 once it is done or
when it is not selected, ``communicate``) and must agree to 1e-10 as well.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import topofl as tf
from topofl.engine import run_rounds

D = torch.float64
REFERENCE = json.loads((Path(__file__).parent / "data" /
                        "decentbench_reference.json").read_text())
TOL = 1e-10

#: decent-bench's class -> topofl's algorithm with the same update (module docstrings):
#: ATC (adapt, then combine) is topofl's D-SGD, ATC_Tracking is DSGT (Pu & Nedic's form of
#: gradient tracking), ED combines with (I + W)/2, as NIDS does after its first step
TOPOFL = {
    "ED": lambda lr: tf.algorithms.exact_diffusion(lr=lr, gamma=0.5),
    "NIDS": lambda lr: tf.algorithms.nids(lr=lr, gamma=0.5),
    "ATC": lambda lr: tf.algorithms.dsgd(lr=lr),
    "EXTRA": lambda lr: tf.algorithms.extra(lr=lr),
    "ATC_Tracking": lambda lr: tf.algorithms.dsgt(lr=lr, variant="dsgt"),
}


def _problem(name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Per agent ``A_i^T A_i / m_i`` ``[n, d, d]`` and ``A_i^T b_i / m_i`` ``[n, d]``."""
    p = REFERENCE["problems"][name]
    A = torch.tensor(p["A"], dtype=D)  # [n, m, d]
    b = torch.tensor(p["b"], dtype=D)  # [n, m]
    m = A.shape[1]
    return A.transpose(1, 2) @ A / m, torch.einsum("nmd,nm->nd", A, b) / m



def _grad(name: str) -> Any:
    H, c = _problem(name)
    return lambda z, phase, rnd: torch.einsum("nde,ne->nd", H, z) - c


def _topology(graph: str) -> tf.Topology:
    return tf.Topology.from_matrix(np.array(REFERENCE["graphs"][graph]), name=graph)


def _case_id(run: dict[str, Any]) -> str:
    return f"{run['algorithm']}-{run['problem']}-{run['graph']}-x0{len(run['x0'][0])}" + (
        "" if not np.any(run["x0"]) else "-spread")


def _trajectory(algo: tf.engine.Algorithm, run: dict[str, Any], rounds: int) -> np.ndarray:
    """``[rounds, n, d]``: topofl's models after each round."""
    x0 = torch.tensor(run["x0"], dtype=D)
    env = tf.engine.toy_services(*x0.shape)
    state = algo.init(x0.clone(), env)
    topo, grad = _topology(run["graph"]), _grad(run["problem"])
    out = []
    for t in range(rounds):
        run_rounds(algo, state.x, topo, grad, rounds=1, env=env, state=state, start=t)
        out.append(state.x.numpy().copy())
    return np.array(out)


def test_the_reference_file_says_what_made_it() -> None:
    assert REFERENCE["decent_bench"] == "0.3.0"
    assert REFERENCE["n_agents"] == 4 and REFERENCE["step_size"] == 0.1
    assert {r["algorithm"] for r in REFERENCE["runs"]} == set(TOPOFL)
    for W in REFERENCE["graphs"].values():  # symmetric doubly stochastic, as decent-bench says
        M = np.array(W)
        np.testing.assert_allclose(M, M.T, atol=1e-15)
        np.testing.assert_allclose(M.sum(1), 1.0, atol=1e-14)
    # decent-bench's Metropolis weights are topofl's "metropolis" scheme
    for graph, topo in (("ring", tf.topologies.ring(4)), ("complete", tf.topologies.complete(4))):
        np.testing.assert_allclose(np.array(REFERENCE["graphs"][graph]), topo.to_dense(),
                                   atol=1e-14)


@pytest.mark.parametrize("run", REFERENCE["runs"], ids=_case_id)
def test_topofl_follows_decentbench_iterate_by_iterate(run: dict[str, Any]) -> None:
    ref = np.array(run["iterates"])  # [K, n, d]
    got = _trajectory(TOPOFL[run["algorithm"]](REFERENCE["step_size"]), run, len(ref))
    gap = np.abs(got - ref).max(axis=(1, 2))
    assert gap.max() <= TOL, (run["algorithm"], gap.tolist())
    # the iterates move (a comparison of two runs standing still would prove nothing)
    assert np.abs(ref[-1] - np.array(run["x0"])).max() > 1.0
    other = {"ED": "NIDS", "NIDS": "ED"}.get(run["algorithm"])
    if other is not None:  # and the comparison tells the two first steps apart
        wrong = _trajectory(TOPOFL[other](REFERENCE["step_size"]), run, len(ref))
        assert np.abs(wrong - ref).max() > 1e-3


@pytest.mark.parametrize("name", ["ED", "NIDS"])
@pytest.mark.parametrize("problem,graph", [("regression", "ring"), ("regression3", "path")])
@pytest.mark.parametrize("shift", [0.0, 5.0])
def test_the_fixed_point_is_the_exact_least_squares_minimiser(name: str, problem: str,
                                                              graph: str, shift: float) -> None:
    # closed form: sum_i A_i^T A_i x / m_i = sum_i A_i^T b_i / m_i. decent-bench's data are
    # noise-free (make_regression, noise 0): every agent's own minimiser is x* and D-SGD has
    # no bias there; shift = 5 adds 5 i to agent i's targets, so that the agents disagree
    H, c = _problem(problem)
    A = torch.tensor(REFERENCE["problems"][problem]["A"], dtype=D)
    c = c + shift * torch.arange(4, dtype=D).unsqueeze(1) * A.mean(1)  # A_i^T (b_i + 5i) / m
    x_star = torch.linalg.solve(H.sum(0), c.sum(0)).numpy()
    if shift == 0.0:  # decent-bench's own x_optimal (least squares on all its data)
        np.testing.assert_allclose(x_star, REFERENCE["problems"][problem]["x_optimal"],
                                   rtol=1e-9)
    grad = lambda z, phase, rnd: torch.einsum("nde,ne->nd", H, z) - c  # noqa: E731
    x0 = torch.zeros(4, H.shape[1], dtype=D)
    x = run_rounds(TOPOFL[name](0.1), x0, _topology(graph), grad,
                   rounds=1500).evaluated().numpy()
    assert np.abs(x - x[0]).max() < 1e-10  # consensus
    np.testing.assert_allclose(x, np.broadcast_to(x_star, x.shape), rtol=1e-11, atol=1e-9)
    d = run_rounds(tf.algorithms.dsgd(lr=0.1), x0, _topology(graph), grad,
                   rounds=1500).evaluated().numpy()
    if shift:  # with the same constant step D-SGD (decent-bench's ATC) stays off x*
        assert np.abs(d - x_star).max() > 1e-3


# ---------------------------------------------------------------- server methods (issue 84 item 2)

FEDERATED = REFERENCE["federated_runs"]


def _fed_problem(name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`_problem` for agents with unequal sample counts (one agent at a time)."""
    p = REFERENCE["problems"][name]
    As = [torch.tensor(a, dtype=D) for a in p["A"]]
    bs = [torch.tensor(b, dtype=D) for b in p["b"]]
    return (torch.stack([A.T @ A / len(A) for A in As]),
            torch.stack([A.T @ b / len(A) for A, b in zip(As, bs)]))


def _fed_algorithm(run: dict[str, Any], weighting: str | None = None) -> tf.engine.Algorithm:
    """topofl's counterpart of a federated case: decent-bench's FedNova always weighs its
    clients by their sample counts (``weighting="data_size"``), its FedDyn uniformly."""
    o, lr = run["options"], REFERENCE["step_size"]
    if run["algorithm"] == "FedNova":
        return tf.algorithms.fednova(
            lr=lr, weighting=weighting or "data_size",
            momentum=o.get("momentum", 0.9) if o.get("use_momentum") else 0.0,
            mu=o.get("penalty", 0.01) if o.get("use_prox") else 0.0,
            server_momentum=(o.get("server_momentum", 0.9) if o.get("use_server_momentum")
                             else 0.0))
    return tf.algorithms.feddyn(lr=lr, alpha=o["penalty"], weighting=weighting or "uniform")


def _fed_trajectory(algo: tf.engine.Algorithm, run: dict[str, Any]) -> np.ndarray:
    """``[rounds, n, d]``: every client's model after each round, the rounds driven as the
    engine drives them (:func:`topofl.engine.loop`: per-client step counts, the clients not
    selected offline under the ``"server"`` rule)."""
    from topofl.engine.availability import local_rates, round_view

    H, c = _fed_problem(run["problem"])
    n, d = c.shape
    sizes = torch.tensor([len(a) for a in REFERENCE["problems"][run["problem"]]["A"]])
    env = tf.engine.toy_services(n, d, train_sizes=sizes)
    state = algo.init(torch.tensor(run["x0"], dtype=D).expand(n, d).clone(), env)
    steps = torch.tensor(run["local_steps"])
    phase = algo.phases[0]
    out = []
    for t in range(REFERENCE["federated_rounds"]):
        online = None
        if run["selection"] is not None:
            online = np.zeros(n, dtype=bool)
            online[run["selection"][t % len(run["selection"])]] = True
        rnd = round_view(algo, t, None, online)
        on = None if rnd.online is None else torch.as_tensor(rnd.online)
        algo.round_start(state, rnd, env)
        for k in range(int(steps.max())):
            z = algo.local.point(state, phase, env)
            g = torch.einsum("nde,ne->nd", H, z) - c
            lr = local_rates(REFERENCE["step_size"] * (steps > k).to(D), on)
            algo.local.update(state, g, phase, lr, rnd, env)
        algo.communicate(state, rnd, env)
        out.append(state.x.numpy().copy())
    return np.array(out)


def _fed_id(run: dict[str, Any]) -> str:
    opts = "-".join(f"{k}={v}" for k, v in run["options"].items() if not k.startswith("use_"))
    steps = "x".join(map(str, run["local_steps"]))
    return (f"{run['algorithm']}-{run['problem']}-steps{steps}"
            f"{'-selected' if run['selection'] else ''}{'-' + opts if opts else ''}")


def test_the_federated_cases_cover_what_was_asked() -> None:
    cases = {(r["algorithm"], len(set(r["local_steps"])) > 1, r["selection"] is not None)
             for r in FEDERATED}
    assert {("FedNova", True, True), ("FedNova", True, False), ("FedNova", False, False),
            ("FedDyn", False, True), ("FedDyn", False, False)} <= cases
    sizes = {len(a) for a in REFERENCE["problems"]["regression3_unequal"]["A"]}
    assert sizes == {4, 8, 12, 16}  # FedNova's data-size weights matter


@pytest.mark.parametrize("run", FEDERATED, ids=_fed_id)
def test_server_methods_follow_decentbench_round_by_round(run: dict[str, Any]) -> None:
    ref = np.array(run["iterates"])  # [K, d]: decent-bench's server model
    got = _fed_trajectory(_fed_algorithm(run), run)  # [K, n, d]
    assert np.abs(got - got[:, :1]).max() == 0.0  # every client holds the server's model
    gap = np.abs(got[:, 0] - ref).max(axis=1)
    assert gap.max() <= TOL, (run["algorithm"], gap.tolist())  # measured: <= 5.2e-13
    assert np.abs(ref[-1] - np.array(run["x0"])).max() > 1.0  # the iterates move
    # and the comparison tells the method from FedAvg with the same local work
    fedavg = tf.algorithms.fedavg(lr=0.1, weighting=_fed_algorithm(run).hparams["weighting"])
    if run["algorithm"] == "FedDyn" or len(set(run["local_steps"])) > 1 or run["options"]:
        assert np.abs(_fed_trajectory(fedavg, run)[:, 0] - ref).max() > 1e-3
    if run["algorithm"] == "FedNova" and run["problem"] == "regression3_unequal":
        # decent-bench weighs by the sample counts: topofl's uniform weights would differ
        uniform = _fed_trajectory(_fed_algorithm(run, "uniform"), run)
        assert np.abs(uniform[:, 0] - ref).max() > 1e-3
