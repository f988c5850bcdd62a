"""paper_figures/fig_field_exact_diffusion.py (issue 84 item 4): its batched recursions are
topofl's ``dsgd`` and ``exact_diffusion``, exact diffusion removes the heterogeneity bias that
D-SGD keeps, the transient stage and the exponent are what their docstrings say, and the
quick scale writes a consistent page (opt in: ``pytest -m figures``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import topofl as tf
from tests._figures import run_quick, script, verdict

NAME = "field_exact_diffusion"
RESULTS = Path(__file__).resolve().parents[2] / "paper_figures" / "results"


@pytest.fixture(scope="module")
def mod() -> dict[str, Any]:
    return script(NAME)


def test_the_setting_is_the_declared_one(mod: dict[str, Any]) -> None:
    s = mod["SETTING"]
    assert (s["n"], s["d"], s["m"], s["sigma"], s["horizon"]) == (32, 10, 50, 3.0, 100_000)
    assert (s["realisations"], s["checkpoints"], s["within"]) == (64, 80, 1.25)
    assert s["seeds"] == (0, 1, 2, 3, 4)
    assert tf.figures.margin(NAME, "factor") == 1.0
    assert tf.figures.margin(NAME, "exponent") == 0.25
    claim = tf.figures.claim_of(NAME)["claim"]
    assert "100,000" in claim and "1.25 times" in claim and "64" in claim
    Ws, gaps = mod["mixing"](32)
    assert list(Ws) == list(mod["GRAPHS"])
    # the claim's range of 1 - beta: the ring of 32 at 0.013, the exponential graph at 0.4
    assert gaps["ring"] == pytest.approx(1 - (1 + 2 * np.cos(2 * np.pi / 32)) / 3, abs=1e-12)
    assert gaps["undirected exponential"] == pytest.approx(0.4, abs=1e-9)
    for W in Ws.values():  # symmetric and doubly stochastic: exact diffusion's condition
        torch.testing.assert_close(W, W.T, rtol=0, atol=0)
        torch.testing.assert_close(W.sum(1), torch.ones(32, dtype=W.dtype), rtol=0, atol=1e-14)


def test_the_problem_is_its_least_squares(mod: dict[str, Any]) -> None:
    s = mod["SETTING"]
    p = mod["problem"](3, s)
    # x* solves the mean normal equations, and the local optima differ (heterogeneous data)
    torch.testing.assert_close(p.H.mean(0) @ p.x_star, p.c.mean(0), rtol=0, atol=1e-12)
    local = torch.linalg.solve(p.H, p.c)
    assert float((local - p.x_star).norm(dim=1).min()) > 0.5
    assert 0 < p.mu < p.L
    K, rate = mod["step_size"](p, 2.0)
    assert rate(0) <= 1 / (2 * p.L) + 1e-15 and rate(10) < rate(0)
    assert rate(5) == pytest.approx(2.0 / (p.mu * (5 + K)))
    q = mod["problem"](3, s)  # the same seed, the same problem
    torch.testing.assert_close(q.H, p.H, rtol=0, atol=0)


def test_the_batched_recursions_are_topofls_algorithms(mod: dict[str, Any]) -> None:
    # dsgd and exact_diffusion through run_rounds on the same problem, step and noise, and
    # dsgd on the complete graph for centralized SGD; float64
    assert mod["replay_gap"](mod["SETTING"]) <= 1e-10


def _no_noise(shape: tuple[int, ...]) -> Any:
    zero = torch.zeros(shape, dtype=torch.float64)
    return lambda t: zero


def test_exact_diffusion_removes_the_bias_dsgd_keeps(mod: dict[str, Any]) -> None:
    # without gradient noise and at a constant step, exact diffusion's fixed point is x* at
    # every node (the correction removes the heterogeneity), D-SGD's is not: on the ring its
    # error stays away from zero; centralized SGD (W = J) converges to x* as well
    s = {**mod["SETTING"], "n": 16}
    p = mod["problem"](0, s)
    Ws, _ = mod["mixing"](16)
    ring = {"ring": Ws["ring"]}
    E = mod["trajectories"](p, ring, lambda t: 0.2, _no_noise((16, 1, s["d"])), 1, [3000])
    central, dsgd, ed = E[-1]
    assert central < 1e-20 and ed < 1e-20
    assert dsgd > 1e-3


def test_the_noise_is_shared_and_seeded(mod: dict[str, Any]) -> None:
    a = mod["noise_stream"](2, (4, 3, 2), 3.0)
    b = mod["noise_stream"](2, (4, 3, 2), 3.0)
    c = mod["noise_stream"](3, (4, 3, 2), 3.0)
    x, y, z = a(0), b(0), c(0)
    torch.testing.assert_close(x, y, rtol=0, atol=0)
    assert not torch.equal(x, z)
    big = mod["noise_stream"](0, (200, 50, 10), 3.0)(0)
    assert float(big.std()) == pytest.approx(3.0, rel=0.02)


def test_the_transient_stage_by_hand(mod: dict[str, Any]) -> None:
    cps = [10, 20, 40, 80, 160]
    transient = mod["transient"]
    assert transient(np.array([3.0, 1.0, 2.0, 1.1, 1.0]), cps, 1.25) == (80, False)
    assert transient(np.array([1.0, 1.2, 1.0, 1.1, 1.0]), cps, 1.25) == (10, False)
    # never within at the end: the last checkpoint, censored (a lower bound)
    assert transient(np.array([1.0, 1.0, 1.0, 1.0, 1.3]), cps, 1.25) == (160, True)


def test_the_exponent_is_the_log_log_slope(mod: dict[str, Any]) -> None:
    gaps = np.array([0.0128, 0.0342, 0.1172, 0.4])
    for power in (1.0, 2.0, 0.5):
        assert mod["exponent"](7.0 * (1 / gaps) ** power, gaps) == pytest.approx(power)


@pytest.mark.figures
def test_the_quick_page(tmp_path: Path) -> None:
    run_quick(NAME, tmp_path)
    md, v = verdict(NAME, tmp_path)
    assert v["seeds"] == [0, 1] and v["dataset"].startswith("synthetic least squares")
    assert "**Ran on:** synthetic least squares" in md
    heads = [c for c in v["checks"] if c["headline"]]
    assert len(heads) == 1 and "horizon" in heads[0] and len(heads[0]["values"]) == 2
    exact = [c for c in v["checks"] if c["rule"] == "exact"]
    assert len(exact) == 1 and exact[0]["outcome"] == "pass"


def test_the_committed_result_is_complete() -> None:
    path = RESULTS / f"{NAME}.json"
    if not path.is_file():
        pytest.skip("not committed yet")
    v = json.loads(path.read_text(encoding="utf-8"))
    assert v["scale"] == "default" and v["seeds"] == [0, 1, 2, 3, 4]
    assert v["rounds"]["paper"] == [100_000]
    heads = [c for c in v["checks"] if c["headline"]]
    assert len(heads) == 1 and heads[0]["seeds"] == [0, 1, 2, 3, 4]
    assert [c["outcome"] for c in v["checks"] if c["rule"] == "exact"] == ["pass"]
