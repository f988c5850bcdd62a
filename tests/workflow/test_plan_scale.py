"""``topofl plan`` at scale: the probe's scaled data, the robust fits, the extrapolation."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topofl.engine.config import global_samples
from topofl.workflow.plan import (
    PROBE_N,
    RUNTIME_SLOPE_MAX,
    TIME_EXPONENTS,
    PlanError,
    fit_runtime,
    fit_time,
    make_plan,
    scaled_data,
)

SYNTH = {"algorithm": "dsgd", "topology": "ring", "model": "logistic", "rounds": 3,
         "lr": 0.1, "batch_size": 16, "partition": "shards",
         "partition_params": {"shards_per_client": 2}, "record_clients": False}


def _synth(n: int) -> dict[str, object]:
    return {**SYNTH, "n_clients": n, "data": f"synthetic:n_samples={50 * n},dim=40,seed=0"}


def test_scaled_data_keeps_samples_a_client() -> None:
    assert scaled_data("synthetic:n_samples=50000,dim=40,seed=0", 64, 1000) == (
        "synthetic:n_samples=3200,dim=40,seed=0")
    # n_test scales with it; the default n_samples (1000) is written out
    assert scaled_data("synthetic:n_samples=1000,n_test=300", 1, 3) == (
        "synthetic:n_samples=334,n_test=100")
    assert scaled_data("synthetic:dim=8", 10, 100) == "synthetic:dim=8,n_samples=100"
    assert scaled_data("synthetic:n_samples=500", 64, 64) == "synthetic:n_samples=500"
    assert scaled_data("digits", 64, 10**6) == "digits"


def test_fit_runtime_ignores_one_outlier_and_clips() -> None:
    pts = [(m, 90e6 + 300.0 * m) for m in (2, 64, 256, 1024, 4096)]
    pts[3] = (1024, pts[3][1] + 40e6)  # one probe 40 MB high (allocator noise)
    const, slope = fit_runtime(pts)
    assert abs(slope - 300.0) < 1e-6 and abs(const - 90e6) < 1.0
    assert fit_runtime([(2, 100e6), (64, 90e6)])[1] == 0.0  # never a negative slope
    assert fit_runtime([(2, 0.0), (64, 1e9)])[1] == RUNTIME_SLOPE_MAX
    assert fit_runtime([(2, -5e6), (64, -5e6)]) == (0.0, 0.0)  # never a negative constant


def test_fit_time_recovers_a_power_law() -> None:
    ns = [64, 256, 1024, 4096]
    for a, b, e in [(1e-3, 2e-6, 1.0), (5e-4, 1e-7, 1.2), (0.0, 3e-5, 0.8)]:
        got = fit_time([(m, a + b * m ** e) for m in ns])
        pred = got[0] + got[1] * 10**5 ** got[2]
        assert abs(pred / (a + b * 10**5 ** e) - 1) < 0.02, (a, b, e, got)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(1e-6, 10.0), min_size=1, max_size=4), st.integers(1, 10**7))
def test_fit_time_is_never_negative(times: list[float], n: int) -> None:
    a, b, e = fit_time(list(zip(PROBE_N, times, strict=False)))
    assert a >= 0 and b >= 0 and min(TIME_EXPONENTS) - 1e-9 <= e <= max(TIME_EXPONENTS) + 1e-9
    assert a + b * n ** e >= 0
    assert np.isfinite(a + b * n ** e)


def test_plan_at_a_million_clients_draws_little_data() -> None:
    t0 = time.perf_counter()
    big = make_plan(_synth(10**6), timed=False, probe=False, available=None)
    assert time.perf_counter() - t0 < 60
    small = make_plan(_synth(10**4), timed=False, probe=False, available=None)
    # the data of 50 samples of 40 float32 values a client: about in proportion to n (the
    # peak of splitting it, the dataset's float64 arrays beside the clients' samples, is
    # above the other parts at 10**6 and counted in "data": 1.6x the proportion there)
    assert 100 * 0.9 <= big.parts["data"] / small.parts["data"] <= 100 * 1.8
    assert big.parts["parameters"] == 10**6 * 41 * 10 * 4
    assert big.parts["data"] >= 10**6 * 50 * 40 * 4  # at least the clients' features
    # a plan at 4096 clients or fewer is built from the data itself
    exact = make_plan(_synth(4096), timed=False, probe=False, available=None)
    assert exact.parts["data"] > 0


def test_max_clients_grows_the_data_with_n() -> None:
    with pytest.raises(PlanError, match="the largest n that fits is") as info:
        make_plan(_synth(10**5), timed=False, probe=False, available=2 * 10**9)
    fits = int(str(info.value).rpartition(" ")[2].replace(",", ""))
    assert 10**4 < fits < 10**5  # not 0: the data of fewer clients is smaller
    at = make_plan(_synth(fits), timed=False, probe=False, available=None)
    assert 0.9 * 2 * 10**9 <= at.peak_bytes <= 1.02 * 2 * 10**9


def test_teleport_plan_probes_at_its_k() -> None:
    cfg = {"algorithm": "teleport", "topology": None, "data": "digits", "n_clients": 40,
           "model": "logistic", "rounds": 3, "lr": 0.1, "batch_size": 16, "k": 8}
    plan = make_plan(cfg, timed=True, probe=True, available=None)
    assert plan.n_clients == 40 and plan.seconds_per_round is not None
    assert plan.seconds_per_round > 0 and plan.parts["runtime"] > 0
    assert [m for m, _ in plan.time_fit["probe"]] == [40]
    assert plan.runtime_fit["probe"][0][0] == 8  # its fewest clients: k


def test_plan_time_is_the_line_through_the_large_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    import topofl.workflow.plan as plan_mod

    seen: list[list[int]] = []

    def fake_probe(cfg: object, ns: list[tuple[int, object, int]],
                   timeout: float | None = None) -> dict[str, object]:
        # a round: 1 ms of fixed cost, 3 us a client, and a cache step below 1024 clients
        # that a power law through every probe would extrapolate
        seen.append([m for m, _, _ in ns])
        return {"probe": [[m, 10**8, (1e-3 + 3e-6 * m) * (0.6 if m < 1024 else 1.0)]
                          for m, _, r in ns]}

    monkeypatch.setattr(plan_mod, "_probe", fake_probe)
    plan = make_plan(_synth(10**5), timed=True, probe=True, available=None)
    assert seen[-1][-1] == plan_mod.LARGE_PROBE_N  # logistic: cheap enough to time at 16384
    assert plan.time_fit["exponent"] == 1.0
    assert plan.seconds_per_round == pytest.approx(1e-3 + 3e-6 * 10**5, rel=1e-6)
    # at a probe's own size the probe is the answer
    exact = make_plan(_synth(4096), timed=True, probe=True, available=None)
    assert seen[-1][-1] == 4096
    assert exact.seconds_per_round == pytest.approx(1e-3 + 3e-6 * 4096, rel=1e-9)
    # a model whose state at 16384 clients exceeds the budget is not probed there
    monkeypatch.setattr(plan_mod, "LARGE_PROBE_BYTES", 1)
    make_plan(_synth(10**5), timed=True, probe=True, available=None)
    assert seen[-1][-1] == 4096


def test_fit_time_refuses_bad_exponents() -> None:
    with pytest.raises(ValueError, match="exponents must be"):
        fit_time([(64, 1.0), (256, 2.0)], exponents=())
    with pytest.raises(ValueError, match="exponents must be"):
        fit_time([(64, 1.0), (256, 2.0)], exponents=(-1.0,))


def test_plan_times_an_evaluation_apart_in_the_samples_it_scores(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Training rounds and evaluations are timed and said apart: a warm evaluation is a line
    in the samples it scores (eval_samples: its global test set subsampled beyond 2 x 10^7
    pairs), the first one's extra counted once, the run's seconds their sum."""
    import topofl.workflow.plan as plan_mod
    from topofl import config as config_mod

    cfg = {**_synth(20_000), "rounds": 50, "eval_every": 10}
    resolved = config_mod.resolve(cfg)
    seen: dict[str, Any] = {}

    def scored(probe_cfg: dict[str, Any], m: int, data: object) -> float:
        # what the probe's own run of m clients scores (its config and data, as run)
        at = config_mod.resolve({**probe_cfg, "n_clients": m, "data": data})
        return plan_mod.eval_samples(plan_mod.shapes(at))

    def fake_probe(cfg: Any, ns: list[tuple[int, object, int]],
                   timeout: float | None = None) -> dict[str, object]:
        seen.update(cfg=cfg, ns=ns)
        return {"probe": [[m, 10**8, 1e-3 + 3e-6 * m, 0.05 + 2e-8 * scored(cfg, m, data),
                           1e-4 * m] if r else [m, 10**8, None, None, None]
                          for m, data, r in ns]}

    monkeypatch.setattr(plan_mod, "_probe", fake_probe)
    plan = make_plan(cfg, timed=True, probe=True, available=None)
    top = plan_mod._probe_shapes(resolved, plan_mod.LARGE_PROBE_N)[1]
    samples = plan_mod.eval_samples(plan_mod._extrapolated(resolved, top, 20_000))
    assert plan.eval_fit["samples"] == samples
    # every probe client is scored on as many global test samples as a client of the run
    g = global_samples("auto", 20_000, 200_000)  # 1,000 of the run's 200,000
    assert seen["cfg"]["eval_global_samples"] == g == 1000
    assert samples == 20_000 * (g + 10)  # and its 10 local test samples
    for m, data, _ in seen["ns"]:
        sh = plan_mod.shapes(config_mod.resolve({**seen["cfg"], "n_clients": m, "data": data}))
        assert global_samples(sh.eval_global_samples, m, sh.global_test) == g, (m, data)
        assert sh.global_test > g  # a subsample, as the run scores: the same pass
    assert plan.eval_seconds == pytest.approx(0.05 + 2e-8 * samples, rel=1e-6)
    assert plan.eval_fit["first_extra_s"] == pytest.approx(1e-4 * 20_000, rel=1e-6)
    assert plan.rounds == 50 and plan.evaluations == 5
    assert plan.run_seconds == pytest.approx(
        50 * plan.seconds_per_round + 5 * plan.eval_seconds + 2.0, rel=1e-9)
    text, js = plan.summary(), plan.as_json()
    assert "evaluations left out" in text and "seconds an evaluation" in text
    assert "% of it evaluating" in text
    assert js["eval_seconds"] == plan.eval_seconds and js["run_seconds"] == plan.run_seconds
    assert "evaluations left out" in js["seconds_per_round_means"]
    # untimed: nothing said about time
    untimed = make_plan(cfg, timed=False, probe=False, available=None)
    assert untimed.eval_seconds is None and untimed.run_seconds is None
    assert "seconds" not in untimed.summary()


def test_plan_reports_the_process_peak_the_interpreter_added(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 58, item 3: beside the run's parts, the process's peak (what top shows): the
    parts and the interpreter with its imports, the probe's resident memory before its run."""
    import topofl.workflow.plan as plan_mod

    def fake_probe(cfg: object, ns: list[tuple[int, object, int]],
                   timeout: float | None = None) -> dict[str, object]:
        return {"probe": [[m, 10**8, None, None, None] for m, _, _ in ns],
                "baseline": 300 * 2**20}

    monkeypatch.setattr(plan_mod, "_probe", fake_probe)
    plan = make_plan(_synth(5000), timed=False, probe=True, available=None)
    assert plan.interpreter_bytes == 300 * 2**20
    assert plan.process_peak_bytes == plan.peak_bytes + 300 * 2**20
    js = plan.as_json()
    assert js["process_peak_bytes"] == plan.process_peak_bytes
    assert js["interpreter_bytes"] == 300 * 2**20
    assert "peak memory of the process (what top shows" in plan.summary()
    assert "300 MiB measured" in plan.summary()
    bare = make_plan(_synth(5000), timed=False, probe=False, available=None)
    assert bare.process_peak_bytes is None and "of the process" not in bare.summary()


def test_the_probe_measures_the_interpreter_it_runs_in() -> None:
    import topofl.workflow.plan as plan_mod

    got = plan_mod._probe(_synth(64), [(64, _synth(64)["data"], 0)])
    assert isinstance(got["baseline"], int)
    assert 50 * 2**20 < got["baseline"] < 4 * 2**30  # torch and topofl imported
