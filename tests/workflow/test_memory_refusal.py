"""Refusing, before it allocates, a run that cannot fit (issue 43, item 3): the limit, the
estimate against measured peaks, the refusals of ``topofl.run``, stacks and ``topofl bench``,
and the one-line errors of ``topofl plan`` and ``topofl bench``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import topofl as tf
from topofl import cli
from topofl import config as config_mod
from topofl._utils.validation import memory as V
from topofl.exceptions import InsufficientMemoryError
from topofl.tools import bench
from topofl.workflow import memory as memory_mod
from topofl.workflow import plan as plan_mod
from topofl.workflow.plan import PEAK_METER, make_plan

ENV = V.MEMORY_LIMIT_ENV
SMALL = {"algorithm": "dsgd", "topology": "ring", "data": "digits", "model": "logistic",
         "n_clients": 20, "rounds": 2, "partition": "iid", "lr": 0.1, "batch_size": 8}


# ----------------------------------------------------------------------------- the limit
def test_override_sets_the_limit_and_a_bad_one_is_refused(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setenv(ENV, "1234567")
    assert V.memory_limit() == (1234567, ENV)
    assert V.available_memory() == 1234567
    monkeypatch.setenv(ENV, "2.5e9")
    assert V.memory_limit("cpu")[0] == 2_500_000_000
    for bad in ("-1", "nan", "1GB"):
        monkeypatch.setenv(ENV, bad)
        with pytest.raises(ValueError, match=f"{ENV} must be a number of bytes"):
            V.memory_limit()
    monkeypatch.delenv(ENV)
    got, source = V.memory_limit()
    assert got is None or got > 0 and source != ENV


def test_cgroup_limits_v2_then_v1(monkeypatch: pytest.MonkeyPatch) -> None:
    files: dict[str, int | None] = {}
    monkeypatch.setattr(V, "_read_int", lambda path: files.get(path))
    assert V._cgroup_available() is None  # neither
    files.update({"/sys/fs/cgroup/memory/memory.limit_in_bytes": 8 << 30,
                  "/sys/fs/cgroup/memory/memory.usage_in_bytes": 3 << 30})
    assert V._cgroup_available() == 5 << 30  # v1
    files["/sys/fs/cgroup/memory/memory.limit_in_bytes"] = 9223372036854771712  # no limit
    assert V._cgroup_available() is None
    files.update({"/sys/fs/cgroup/memory.max": 4 << 30,
                  "/sys/fs/cgroup/memory.current": 1 << 30})
    assert V._cgroup_available() == 3 << 30  # v2 first
    monkeypatch.setattr(V, "_meminfo_available", lambda: 10 << 30)
    monkeypatch.setattr(V, "_rlimit_available", lambda: None)
    assert V.memory_limit() == (3 << 30, "the cgroup memory limit")


def test_rlimit_as_is_a_limit() -> None:
    code = ("import resource\n"
            "from topofl._utils.validation import memory as V\n"
            "size = V._status_bytes('VmSize')\n"
            "resource.setrlimit(resource.RLIMIT_AS, (size + (300 << 20), resource.RLIM_INFINITY))\n"
            "got, source = V.memory_limit()\n"
            "print(source, got <= 300 << 20)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={k: v for k, v in os.environ.items() if k != ENV})
    assert out.stdout.split() == ["RLIMIT_AS", "True"]


# ----------------------------------------------------------------------------- topofl.run
def test_a_tiny_run_is_refused_under_a_1_mb_limit(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    monkeypatch.setenv(ENV, "1000000")
    out = tmp_path / "r.jsonl"
    with pytest.raises(InsufficientMemoryError) as info:
        tf.run(**{**SMALL, "records_path": str(out)})
    msg = str(info.value)
    assert isinstance(info.value, ValueError)
    assert msg.startswith("20 clients do not fit: the run needs at least about ")
    assert f"but {ENV} leaves 977 KiB (1,000,000 bytes); not even one client fits" in msg
    assert info.value.limit == 1_000_000 and info.value.need > 1_000_000
    assert info.value.max_clients == 0
    assert not out.exists()  # refused before anything was written


def test_a_run_within_its_estimate_runs_and_one_byte_less_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    p = tf.api.prepare(**{k: v for k, v in SMALL.items()})
    ds = tf.data.load("digits")
    model = tf.models.build_model("logistic", ds.input_shape, ds.num_classes, seed=0)
    data = tf.data.federate(ds, "iid", 20, seed=0)
    topo = tf.topologies.ring(20)
    need = sum(plan_mod.estimate(p, model=model, data=data, topology=topo)[1].values())
    monkeypatch.setenv(ENV, str(need))
    res = tf.run(**SMALL)  # the estimate fits: the run is the run without a limit
    monkeypatch.delenv(ENV)
    plain = tf.run(**SMALL)
    assert res.records.final("test_acc_mean") == plain.records.final("test_acc_mean")
    monkeypatch.setenv(ENV, str(need - 1))  # refused once the data is split
    with pytest.raises(InsufficientMemoryError, match=r"20 clients do not fit: the run needs "
                       r"about .* \(topofl.workflow.plan\), but .* the largest n that fits is "
                       r"1[0-9]\b"):
        tf.run(**SMALL)


def test_a_refusal_names_the_settings_that_fit_and_each_one_fits(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue 58, item 3: where the per-client rows of the records are what does not fit, the
    refusal names a records_path, record_clients=False, the smallest eval_every and the most
    rounds that fit, and a run with any one of them passes the same limit."""
    cfg = {**SMALL, "n_clients": 200, "rounds": 13_000, "eval_every": 1, "spectral": False}
    p = tf.api.prepare(**cfg)
    ds = tf.data.load("digits")
    model = tf.models.build_model("logistic", ds.input_shape, ds.num_classes, seed=0)
    parts = plan_mod.estimate(p, model=model, dataset=ds)[1]
    records = parts["records"]
    assert records > 0.3 * sum(parts.values())  # the rows: a third of the estimate
    limit = sum(parts.values()) - records // 2  # half the rows' bytes too many
    monkeypatch.setenv(ENV, str(limit))
    with pytest.raises(InsufficientMemoryError) as info:
        tf.run(**cfg)
    msg = str(info.value)
    assert "; it fits with a records_path (the per-client rows of the records" in msg
    assert "with record_clients=False (they are not recorded)" in msg
    every = int(msg.split("with eval_every=")[1].split(" ")[0].replace(",", ""))
    rounds = int(msg.split("or with rounds=")[1].split(" ")[0].replace(",", ""))
    assert 1 < every <= 4 and 5_000 <= rounds < 13_000
    for fix in ({"records_path": str(tmp_path / "r.jsonl")}, {"record_clients": False},
                {"eval_every": every}, {"rounds": rounds}):
        pp = tf.api.prepare(**{**cfg, **fix})
        assert sum(plan_mod.estimate(pp, model=model, dataset=ds)[1].values()) <= limit, fix
    if every > 2:  # the smallest: one less does not fit
        less = tf.api.prepare(**{**cfg, "eval_every": every - 1})
        assert sum(plan_mod.estimate(less, model=model, dataset=ds)[1].values()) > limit


def test_ten_million_mlp_clients_are_refused_in_seconds_without_allocating() -> None:
    """The issue's run: 10^7 MLP clients, one sample each; refused before the data is drawn
    (the synthetic set's shapes are in its name), in a fresh interpreter, with the peak
    resident memory barely above the interpreter's own."""
    code = PEAK_METER + (
        "import time, json, warnings\n"
        "import torch\n"
        "import topofl as tf\n"
        "import topofl.api, topofl.workflow.plan\n"
        "mark = start_peak()\n"
        "t0 = time.perf_counter()\n"
        "try:\n"
        "    tf.run('dsgd', 'ring', data='synthetic:n_samples=10000000,dim=64,seed=0',\n"
        "           model='mlp', n_clients=10**7, partition='iid', rounds=1)\n"
        "except ValueError as exc:\n"
        "    print(json.dumps({'s': time.perf_counter() - t0, 'grew': peak_since(mark),\n"
        "                      'type': type(exc).__name__, 'msg': str(exc)}))\n")
    env = {**os.environ, ENV: str(16 << 30)}  # the same answer on any machine
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["type"] == "InsufficientMemoryError"
    assert got["msg"].startswith("10,000,000 clients do not fit: the run needs at least about ")
    assert "before its dataset is loaded" in got["msg"]
    assert "the largest n that fits is " in got["msg"]
    assert got["s"] < 5.0
    assert got["grew"] < 100e6  # the 10^7 x 55,210 parameters alone are 2.2 TB


def test_the_same_run_from_a_dataset_name_is_refused_before_the_split() -> None:
    start = time.perf_counter()
    with pytest.raises(InsufficientMemoryError, match="before its data is split"):
        tf.run("dsgd", "ring", data="digits", model="mlp", n_clients=10**7, partition="iid",
               rounds=1)
    assert time.perf_counter() - start < 5.0


def test_a_stack_that_cannot_fit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = [tf.api.prepare("dsgd", "ring", rounds=2, n_clients=8, seed=s, lr=0.1,
                            spectral=False) for s in (0, 1, 2)]
    one = tf.api.build(calls[0])
    p_shapes = plan_mod.run_shapes(calls[0], model=one[4], data=one[3], topology=one[1])
    alone = sum(plan_mod.counted_parts(p_shapes).values())
    monkeypatch.setenv(ENV, str(alone + 1))  # each run fits alone, not the three at once
    with pytest.raises(InsufficientMemoryError, match="a stack of 3 runs .* does not fit"):
        tf.api.launch_stacked(calls)
    monkeypatch.delenv(ENV)
    assert len(tf.api.launch_stacked(calls)) == 3


def test_the_compiled_band_kernel_is_counted_where_it_runs() -> None:
    """A graph with a band plan (a ring) is marked in the shapes, and its gossip part gains
    ``JIT_BYTES`` on the CPU from ``band_min_n`` clients and a 1 GiB buffer; a random graph
    never does."""
    from dataclasses import replace

    from topofl.workflow.memory.parts import JIT_BYTES

    for topology, band in (("ring", True), ("random_regular:d=4", False)):
        call = tf.api.prepare("dsgd", topology, rounds=2, n_clients=64, seed=0,
                              spectral=False)
        one = tf.api.build(call)
        s = plan_mod.run_shapes(call, model=one[4], data=one[3], topology=one[1])
        assert s.band is band
        big = replace(s, n=10**6, num_params=650)  # a 2.6 GB float32 buffer
        small = replace(big, num_params=65)  # 260 MB
        extra = (plan_mod.counted_parts(big)["gossip"]
                 - plan_mod.counted_parts(replace(big, band=False))["gossip"])
        assert extra == (JIT_BYTES if band else 0)
        assert (plan_mod.counted_parts(small)["gossip"]
                == plan_mod.counted_parts(replace(small, band=False))["gossip"])


# ----------------------------------------------------------------------------- the model
_MEASURE = PEAK_METER + r"""
import json, sys, warnings
warnings.simplefilter("ignore")
import torch
import topofl
from topofl import config
torch.set_num_threads(1)
mark = start_peak()
config.execute({**json.loads(sys.argv[1]), "records_path": None, "progress": False})
print(peak_since(mark))
"""


def measured_peak(cfg: dict[str, Any]) -> int:
    """Peak resident memory of a run above the size after ``import torch, topofl``, in a
    fresh interpreter (:data:`topofl.workflow.plan.PEAK_METER`)."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, json.dumps(cfg)],
                         capture_output=True, text=True, check=True,
                         env={k: v for k, v in os.environ.items() if k != ENV})
    return int(out.stdout.strip().splitlines()[-1])


def estimated_peak(cfg: dict[str, Any]) -> int:
    s = plan_mod.shapes(config_mod.resolve(cfg))
    return sum(plan_mod.counted_parts(s).values())


def _config(algorithm: str, model: str, n: int) -> dict[str, Any]:
    return {"algorithm": algorithm, "topology": "ring", "model": model, "rounds": 2,
            "data": f"synthetic:n_samples={20 * n},dim=64,seed=0,n_test=1000",
            "partition": "iid", "n_clients": n, "spectral": False}


@pytest.mark.parametrize("algorithm,model,n", [("dsgd", "logistic", 100), ("sgp", "mlp", 100)])
def test_estimate_is_within_0_8_and_2_of_the_measured_peak(algorithm: str, model: str,
                                                           n: int) -> None:
    cfg = _config(algorithm, model, n)
    ratio = estimated_peak(cfg) / measured_peak(cfg)
    assert 0.8 <= ratio <= 2.0, ratio


@pytest.mark.slow
@pytest.mark.parametrize("algorithm,model,n", [
    (a, m, n) for m, ns in (("logistic", (1000, 10_000)), ("mlp", (1000, 3000)))
    for a in ("dsgd", "dfedpgp", "ditto", "sgp", "teleport") for n in ns
    if not (a == "dfedpgp" and m == "logistic")])  # dfedpgp needs a body and a head
def test_estimate_within_bounds_at_scale(algorithm: str, model: str, n: int) -> None:
    """``analysis/memory_model.md``'s table, re-measured (minutes: up to 4 GB a run). The
    measured peak of one config varies from run to run on a loaded machine (one MLP config:
    918 and 1,092 MB; one logistic config read 0.79 of its estimate once while another test
    suite ran beside it, 0.83-1.29 otherwise): a ratio under the bound is measured once more
    and the smaller peak (the run's own) kept."""
    cfg = _config(algorithm, model, n)
    estimate = estimated_peak(cfg)
    ratio = estimate / measured_peak(cfg)
    if ratio < 0.8:
        ratio = max(ratio, estimate / measured_peak(cfg))
    assert 0.75 <= ratio <= 2.0, ratio  # the planner target: within 25 % below


def test_state_is_counted_on_the_meta_device_at_any_n() -> None:
    model = tf.models.build_model("mlp", (64,), 10, seed=0)
    layout = tf.engine.ParamLayout.from_model(model)
    P = layout.num_params
    import torch

    for name, x_copies in (("dsgd", 1), ("ditto", 2), ("dfedpgp", 3)):
        algo = tf.algorithms.get_algorithm(name)
        got = memory_mod.state_bytes(algo, layout, torch.float32, 10**7)
        assert got["parameters"] == 10**7 * P * 4
        assert sum(got.values()) >= x_copies * 10**7 * P * 4
    # teleport needs n >= k: its state is counted at the run's n, not at 2 clients
    got = memory_mod.state_bytes(tf.algorithms.get_algorithm("teleport"), layout,
                                torch.float32, 20)
    assert got == {"parameters": 20 * P * 4, "optimizer": 0, "algorithm": 0}


# ----------------------------------------------------------------------------- bench
def test_bench_refuses_a_huge_batch_before_building_anything() -> None:
    start = time.perf_counter()
    with pytest.raises(InsufficientMemoryError, match=r"topofl bench's logistic row \(batch "
                       r"10,000,000,000\) needs about .* not even one client fits"):
        bench.run_bench(["logistic"], [10], batch=10**10, memory=False)
    assert time.perf_counter() - start < 5.0


def test_bench_refuses_three_million_mlp_clients_naming_the_largest_n(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, str(16 << 30))
    with pytest.raises(InsufficientMemoryError, match=r"3,000,000 clients do not fit: topofl "
                       r"bench's mlp row .* the largest n that fits is [0-9,]+ "):
        bench.run_bench(["mlp"], [3 * 10**6], memory=False)


def test_bench_estimate_bounds_the_child_peak() -> None:
    """The measured peak of the bench's child (data, state, one local step and gossip: no
    floor, no copy) within the estimate of those parts."""
    shape = bench.MODEL_INPUTS["logistic"]
    _, parts = bench.case_parts("logistic", 200, 16, shape=shape)
    child = sum(v for k, v in parts.items() if k not in ("floor", "copy"))
    peak = bench._peak_bytes("logistic", 200, 16, bench.torch.device("cpu"), shape)
    assert peak is not None and 0.8 <= child / peak <= 2.0


# ----------------------------------------------------------------------------- CLI
def _config_file(tmp_path: Path, **over: Any) -> str:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({**SMALL, **over}))
    return str(path)


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("setting,expect", [
    ("device=cuda", "topofl plan: error: device='cuda' needs CUDA"),
    ("batch_size=100000000", "topofl plan: error: batch_size=100000000 (samples of shape "
                             "(1, 8, 8)) needs about "),
    ("eval_val=true", "topofl plan: error: eval_val=True scores every client on its "
                      "validation split, but no client of the data has one"),
])
def test_plan_refuses_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  setting: str, expect: str) -> None:
    import torch

    if setting == "device=cuda" and torch.cuda.is_available():
        pytest.skip("CUDA is here")
    assert cli.main(["plan", _config_file(tmp_path), "--no-time", "--set", setting]) == 2
    assert _one_line(capsys).startswith(expect)


def test_plan_of_teleport_reports_the_run_not_its_probe(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    cfg = _config_file(tmp_path, algorithm="teleport", topology=None, n_clients=20)
    assert cli.main(["plan", cfg, "--no-time", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["n_clients"] == 20 and got["parts"]["parameters"] == 20 * 650 * 4
    plan = make_plan(json.loads(Path(cfg).read_text()), timed=False, probe=False)
    assert plan.n_clients == 20


def test_bench_refuses_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["bench", "--batch", "10000000000", "--n", "10", "--no-memory"]) == 2
    line = _one_line(capsys)
    assert line.startswith("topofl bench: error: 10 clients do not fit: ")
    assert "not even one client fits" in line
    out = tmp_path / "bench.md"
    out.write_text("kept\n")
    assert cli.main(["bench", "--out", str(out), "--n", "2", "--rounds", "1",
                     "--no-memory"]) == 2
    assert _one_line(capsys) == (f"topofl bench: error: {out} exists; pass --force to replace "
                                 "it (or another --out)")
    assert out.read_text() == "kept\n"
    assert cli.main(["bench", "--out", str(out), "--n", "2", "--rounds", "1", "--no-memory",
                     "--model", "logistic", "--force"]) == 0
    assert out.read_text().startswith("# topofl bench")


def test_run_refusal_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "1000000")
    assert cli.main(["run", _config_file(tmp_path), "--out", str(tmp_path / "r.jsonl")]) == 2
    line = _one_line(capsys)
    assert line.startswith("topofl run: error: 20 clients do not fit: the run needs ")


def test_a_sweep_runs_one_by_one_a_stack_that_cannot_fit(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    cfg = {"algorithm": "dsgd", "data": "digits", "n_clients": 8, "rounds": 2, "batch_size": 8,
           "topology": "ring", "spectral": False, "sweep": {"seed": [0, 1, 2]}}
    one = tf.api.build(tf.api.prepare("dsgd", "ring", n_clients=8, rounds=2, batch_size=8,
                                      spectral=False))
    p = tf.api.prepare("dsgd", "ring", n_clients=8, rounds=2, batch_size=8, spectral=False)
    alone = sum(plan_mod.counted_parts(plan_mod.run_shapes(p, model=one[4], data=one[3],
                                                           topology=one[1])).values())
    monkeypatch.setenv(ENV, str(alone + 1))
    got = tf.sweep.run_sweep(cfg, tmp_path, progress=False, echo=lambda s: None)
    assert [o.status for o in got] == ["complete"] * 3
    assert all("ran alone: a stack of 3 runs (24 clients) does not fit" in o.message
               for o in got)


def test_the_analysis_script_writes_its_table(tmp_path: Path) -> None:
    from tests._analysis import load

    mm = load("memory_model")
    labels = [label for label, _ in mm.configs(quick=True)]
    assert "teleport, mlp, 1,000" in labels and "dfedpgp, logistic, 100" not in labels
    cfg = dict(mm.configs(quick=True))["dsgd, logistic, 100"]
    row = {"label": "dsgd, logistic, 100", "config": cfg, "measured": 2e8, "seconds": 1.0,
           "estimate": 2.2e8, "parts": {"runtime": 1e8, "data": 1e6}, "ratio": 1.1}
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps([row]))
    out = tmp_path / "m.md"
    assert mm.main(["--rows", str(rows), "--out", str(out)]) == 0
    text = out.read_text()
    assert "Ratio estimate / measured: 1.10 to 1.10 over 1 runs." in text
    assert "| dsgd, logistic, 100 | 650 | 220.0 | 200.0 | 1.10 | runtime 100.0, data 1.0 |" in text
