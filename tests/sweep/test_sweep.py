"""Sweeps: the plan (product, names, shards), skip / resume after a crash, jobs, the CLI."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topofl as tf
from tests.engine._crash import CrashingData
from topofl.cli import main
from topofl.config import ConfigError
from topofl.sweep import SweepRun, plan, select

BASE: dict[str, Any] = {"algorithm": "dsgd", "data": "digits", "n_clients": 10, "rounds": 4,
                        "lr": 0.3, "batch_size": 8, "eval_every": 2, "checkpoint_every": 1,
                        "record_clients": False}
SWEEP = {"topology": ["ring", "complete"], "seed": [0, 1]}
NAMES = ["topology=ring__seed=0", "topology=ring__seed=1", "topology=complete__seed=0",
         "topology=complete__seed=1"]


def _toml(path: Path, base: dict[str, Any], sweep: dict[str, list[Any]]) -> Path:
    def v(x: Any) -> str:
        return json.dumps(x)  # TOML and JSON agree on strings, numbers, booleans and arrays

    lines = [f"{k} = {v(x)}" for k, x in base.items()] + ["[sweep]"]
    lines += [f"{k} = {v(x)}" for k, x in sweep.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def _strip(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["metric"] not in tf.config.WALL_CLOCK_METRICS]


# ------------------------------------------------------------------------------ the plan


def test_plan_is_the_cartesian_product_in_table_order() -> None:
    runs = plan({**BASE, "sweep": {**SWEEP, "momentum": [0.5]}})
    assert [r.name for r in runs] == NAMES
    assert [r.index for r in runs] == [0, 1, 2, 3]
    want = list(itertools.product(SWEEP["topology"], SWEEP["seed"]))
    assert [(r.config["topology"], r.config["seed"]) for r in runs] == want
    assert all(r.config["momentum"] == 0.5 and r.config["lr"] == 0.3 for r in runs)
    assert [r.name for r in plan({**BASE, "topology": "ring"})] == ["run"]


def test_names_are_safe_and_unique() -> None:
    runs = plan({**BASE, "sweep": {
        "topology": ["dcliques:clique_size=5,inter=ring", "ring"],
        "model_params": [{"hidden": [8]}, {}], "model": ["mlp"], "device": ["a:b", "a,b"]}})
    names = [r.name for r in runs]
    assert len(set(names)) == len(names) == 8
    assert all(re.fullmatch(r"[A-Za-z0-9._=+~-]+", n) for n in names)
    assert names[0].startswith("topology=dcliques-clique_size=5-inter=ring__model_params=")
    # ':' and ',' both become '-': the two device names collide, so every colliding name
    # gets a digest of its exact values
    assert sum("~" in n for n in names) == 8
    long = plan({**BASE, "sweep": {"topology": ["ring:n=10"] * 1 + ["complete"],
                                   "device": ["x" * 200, "y" * 200]}})
    assert all(len(r.name) <= 120 for r in long) and len({r.name for r in long}) == 4


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 40), st.integers(1, 9))
def test_shards_cover_every_run_exactly_once(n: int, k: int) -> None:
    runs = [SweepRun(i, f"r{i}", {}, {}) for i in range(n)]
    got = [r.index for i in range(1, k + 1) for r in select(runs, (i, k))]
    assert sorted(got) == list(range(n))
    sizes = [len(select(runs, (i, k))) for i in range(1, k + 1)]
    assert max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("sweep, match", [
    ({"nonsense": [1]}, r"unknown key\(s\) \['nonsense'\]"),
    ({"lr": 0.1}, r"sweep.lr must be a list of values, got float 0.1"),
    ({"lr": []}, r"sweep.lr is an empty list"),
    ({"rounds": [1, 2]}, r"'rounds' is both a key of the config and of \[sweep\]"),
    ({"momentum": [0.1, "x"], "topology": ["ring"]},
     r"momentum must be a real number, got str 'x' \(in the sweep run momentum=x\)"),
    ({"topology": ["ring", "nosuch"]}, r"unknown graph family 'nosuch'"),
    ({"topology": [None, "ring"]},
     r"dsgd communicates over a graph: set topology .* \(in the sweep run topology=null\)"),
    ({"records_path": ["a", "b"]}, r"'records_path' is set by the sweep for each run"),
])
def test_invalid_sweeps(sweep: dict[str, Any], match: str, tmp_path: Path,
                        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ConfigError, match=match):
        plan({**BASE, "sweep": sweep})
    cfg = tmp_path / "s.json"
    cfg.write_text(json.dumps({**BASE, "sweep": sweep}))
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("topofl sweep: error: ")
    assert not list((tmp_path / "out").glob("*.jsonl"))  # nothing ran


# ------------------------------------------------------------------------------ running


def test_killed_sweep_resumes_without_redoing_complete_runs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cfg = {**BASE, "sweep": SWEEP}
    real = tf.data.federate

    def crash_seed_1(*a: Any, **k: Any) -> Any:  # every seed-1 run crashes in round 3
        d = real(*a, **k)
        return CrashingData(d, at=3) if k["seed"] == 1 else d

    lines: list[str] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tf.data, "federate", crash_seed_1)
        # one by one: a stacked pass reruns its members alone after a crash
        # (tests/engine/test_stack.py)
        first = tf.sweep.run_sweep(cfg, out, progress=False, echo=lines.append, stack=False)
    status = {o.name: o.status for o in first}
    assert status == dict(zip(NAMES, ["complete", "failed", "complete", "failed"]))
    assert "Crash: simulated crash in round 3" in lines[1]
    acc = r"final 0\.\d{4} best 0\.\d{4}"
    assert re.match(rf"\[1/4\] topology=ring__seed=0  complete  test_acc_mean {acc}  "
                    rf"global_acc_mean {acc}  \d+\.\d s$", lines[0])
    rec = tf.records.load(out / f"{NAMES[0]}.jsonl")
    assert f"global_acc_mean final {rec.final('global_acc_mean'):.4f}" in lines[0]
    done = {n: (out / f"{n}.jsonl").stat().st_mtime_ns for n in NAMES[::2]}
    assert not (out / f"{NAMES[1]}.done").exists() and (out / f"{NAMES[1]}.ckpt").exists()

    second = tf.sweep.run_sweep(cfg, out, progress=False, echo=lines.append)
    by = {o.name: o for o in second}
    assert [by[n].status for n in NAMES] == ["skipped", "complete", "skipped", "complete"]
    assert by[NAMES[1]].resumed_from == 3 and by[NAMES[3]].resumed_from == 3
    assert {n: (out / f"{n}.jsonl").stat().st_mtime_ns for n in NAMES[::2]} == done
    assert by[NAMES[0]].summary == json.loads((out / f"{NAMES[0]}.done").read_text())["summary"]
    # the resumed runs equal uninterrupted ones
    for name, topo in ((NAMES[1], "ring"), (NAMES[3], "complete")):
        whole = tf.config.execute({**BASE, "topology": topo, "seed": 1, "run_id": name,
                                   "checkpoint_every": 0})
        assert _strip(tf.records.load(out / f"{name}.jsonl").rows) == _strip(whole.records.rows)
        assert tf.records.load(out / f"{name}.jsonl").config["run_id"] == name
    third = tf.sweep.run_sweep(cfg, out, progress=False, echo=lines.append)
    assert {o.status for o in third} == {"skipped"}


def test_rerun_with_another_config_is_refused(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    cfg = {**BASE, "rounds": 1, "sweep": {"topology": ["ring"]}}
    tf.sweep.run_sweep(cfg, out, progress=False, echo=lambda s: None)
    path = _toml(tmp_path / "s.toml", {**BASE, "rounds": 1, "lr": 0.1}, {"topology": ["ring"]})
    assert main(["sweep", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "holds a run with another config (lr: 0.3 there, 0.1 now)" in err
    assert main(["sweep", str(path), "--out", str(out), "--overwrite"]) == 0
    assert tf.records.load(out / "run.jsonl").config["lr"] == 0.1


def test_a_file_the_sweep_did_not_write_is_neither_replaced_nor_removed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    cfg = {**BASE, "rounds": 1, "sweep": {"topology": ["ring"]}}
    mine = out / "run.jsonl"
    mine.write_text("my notes\n")
    with pytest.raises(ConfigError, match=r"run\.jsonl is not the records of a sweep run"):
        tf.sweep.run_sweep(cfg, out, progress=False, echo=lambda s: None)
    assert mine.read_text() == "my notes\n"
    mine.unlink()
    stray = out / "run.ckpt"
    stray.write_bytes(b"my own checkpoint")
    with pytest.raises(ConfigError, match=r"run\.ckpt is in the way .* not a topofl checkpoint"):
        tf.sweep.run_sweep(cfg, out, progress=False, echo=lambda s: None)
    assert stray.read_bytes() == b"my own checkpoint"
    stray.unlink()
    (out / "run.done").write_text("not json")
    with pytest.raises(ConfigError, match=r"run\.done is in the way"):
        tf.sweep.run_sweep(cfg, out, progress=False, echo=lambda s: None)
    (out / "run.done").unlink()
    mine.write_text('{"header": tr')  # a run killed while writing its header: run afresh
    tf.sweep.run_sweep(cfg, out, progress=False, echo=lambda s: None)
    assert tf.records.load(mine).config["topology"]


def test_an_edited_trace_is_refused_by_a_sweep_rerun(tmp_path: Path) -> None:
    trace = tmp_path / "speed.csv"
    trace.write_text(",".join(["1e6"] * 10) + "\n")
    cfg = {**BASE, "rounds": 1, "network": {"speed": {"trace": str(trace)}},
           "sweep": {"topology": ["ring"]}}
    tf.sweep.run_sweep(cfg, tmp_path / "out", progress=False, echo=lambda s: None)
    trace.write_text(",".join(["2e6"] * 10) + "\n")
    with pytest.raises(ConfigError, match=r"holds a run with another config.*speed\.csv"):
        tf.sweep.run_sweep(cfg, tmp_path / "out", progress=False, echo=lambda s: None)


def test_shards_and_dry_run_from_the_command_line(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = _toml(tmp_path / "s.toml", {**BASE, "rounds": 1}, SWEEP)
    out = tmp_path / "out"
    listed = []
    for shard in ("1/2", "2/2"):
        assert main(["sweep", str(path), "--out", str(out), "--shard", shard, "--dry-run"]) == 0
        listed.append(capsys.readouterr().out.split())
    assert listed == [NAMES[0::2], NAMES[1::2]]
    assert not out.exists()
    ran = []
    for shard in ("1/2", "2/2"):
        assert main(["sweep", str(path), "--out", str(out), "--shard", shard]) == 0
        text = capsys.readouterr().out
        ran += re.findall(r"^\[\d/2\] (\S+)  complete", text, flags=re.M)
        assert "sweep: 2 runs (2 complete)" in text
    assert sorted(ran) == sorted(NAMES)
    assert sorted(p.stem for p in out.glob("*.jsonl")) == sorted(NAMES)
    assert main(["sweep", str(path), "--out", str(out), "--shard", "3/2"]) == 2
    assert "a shard is i/k with 1 <= i <= k" in capsys.readouterr().err
    rec = tf.records.load(out / f"{NAMES[0]}.jsonl")
    assert rec.provenance["command"] == f"topofl sweep {path} --out {out} --shard 1/2"


def test_every_run_uses_the_sweeps_thread_count_and_the_process_keeps_its_own(
        tmp_path: Path) -> None:
    import torch

    cfg = {**BASE, "rounds": 1, "sweep": {"topology": ["ring"]}}
    before = torch.get_num_threads()
    tf.sweep.run_sweep(cfg, tmp_path / "a", progress=False, echo=lambda s: None)
    tf.sweep.run_sweep(cfg, tmp_path / "b", progress=False, echo=lambda s: None, threads=None)
    assert torch.get_num_threads() == before
    one = tf.records.load(next((tmp_path / "a").glob("*.jsonl")))
    own = tf.records.load(next((tmp_path / "b").glob("*.jsonl")))
    assert one.provenance["torch_threads"] == 1 and own.provenance["torch_threads"] == before


@pytest.mark.slow  # spawns two workers that import torch
def test_jobs_run_in_worker_processes_with_the_same_results(tmp_path: Path) -> None:
    import torch

    cfg = {**BASE, "rounds": 2, "sweep": {"topology": ["ring", "complete"]}}
    before = torch.get_num_threads()
    a = tf.sweep.run_sweep(cfg, tmp_path / "a", jobs=2, progress=False, echo=lambda s: None)
    b = tf.sweep.run_sweep(cfg, tmp_path / "b", jobs=1, progress=False, echo=lambda s: None)
    assert torch.get_num_threads() == before  # the in-process runs restore the count
    assert {o.status for o in a + b} == {"complete"}
    for name in ("topology=ring", "topology=complete"):
        la = tf.records.load(tmp_path / "a" / f"{name}.jsonl")
        lb = tf.records.load(tmp_path / "b" / f"{name}.jsonl")
        # one torch thread a run whatever --jobs is: the same numbers to the bit
        assert la.provenance["torch_threads"] == lb.provenance["torch_threads"] == 1
        ra, rb = _strip(la.rows), _strip(lb.rows)
        assert len(ra) == len(rb) > 30
        assert [(r["round"], r["metric"], r["value"]) for r in ra] == \
            [(r["round"], r["metric"], r["value"]) for r in rb]
    with pytest.raises(tf.config.ConfigError, match="threads must be an int >= 1"):
        tf.sweep.run_sweep(cfg, tmp_path / "c", threads=0, progress=False)


def test_guards_and_where_settings_do_not_make_a_run_differ() -> None:
    from topofl.sweep._resumption import _differs

    stored = {"lr": 0.1, "rounds": 5, "records_path": "a.jsonl"}
    assert _differs(stored, {**stored, "divergence": 1e3, "stream_rows": 64,
                             "records_path": "b.jsonl"}) is None
    # the device a run computed on is where it ran, as its threads are: a run finished on a
    # GPU is the same run on the CPU (its provenance names the device)
    assert _differs({**stored, "device": "cuda"}, {**stored, "device": "cpu"}) is None
    assert _differs({**stored, "device": "cuda:0"}, stored) is None
    assert "lr" in (_differs(stored, {**stored, "lr": 0.2}) or "")
    assert "rounds" in (_differs(stored, {**stored, "rounds": 6}) or "")


def test_a_hyper_parameter_added_later_ran_at_its_default() -> None:
    """A stored run's config without a hyper-parameter its algorithm took later (fedavg's
    ``selection``, fedopt's ``variant``) ran at that parameter's default: the same run, while
    another value, or a key no algorithm of that name takes, is another config."""
    from topofl.sweep._resumption import _differs

    base = tf.config.validate({"algorithm": "fedavg", "n_clients": 4, "rounds": 2,
                               "participation": 0.5})
    stored = {k: v for k, v in base.items() if k != "selection"}
    assert base["selection"] == "uniform" and _differs(stored, base) is None
    assert "selection" in (_differs(stored, {**base, "selection": "fair"}) or "")
    opt = tf.config.validate({"algorithm": "fedopt", "n_clients": 4, "rounds": 2})
    assert _differs({k: v for k, v in opt.items() if k != "variant"}, opt) is None
    assert "variant" in (_differs({k: v for k, v in opt.items() if k != "variant"},
                                  {**opt, "variant": "flower"}) or "")
    # dsgt's own variant defaults to "digging": fedopt's default is not borrowed for it
    dsgt = tf.config.validate({"algorithm": "dsgt", "topology": "ring", "n_clients": 4,
                               "rounds": 2})
    assert _differs({k: v for k, v in dsgt.items() if k != "variant"}, dsgt) is None
    assert "variant" in (_differs({k: v for k, v in dsgt.items() if k != "variant"},
                                  {**dsgt, "variant": "dsgt"}) or "")


def test_a_run_another_process_holds_is_left_alone(tmp_path: Path) -> None:
    """Two sweeps over one folder: a run whose lock another process holds is reported busy and
    its files are not touched; once released it runs; a run finished meanwhile by the other
    sweep is skipped, not redone."""
    import multiprocessing

    from topofl.sweep._execution import _execute
    from topofl.sweep._resumption import _run_config

    cfg = {**BASE, "sweep": {"topology": ["ring", "complete"]}}
    lock = tmp_path / "topology=ring.lock"
    ctx = multiprocessing.get_context("spawn")
    holding, release = ctx.Event(), ctx.Event()
    other = ctx.Process(target=_hold_lock, args=(str(lock), holding, release))
    other.start()
    try:
        assert holding.wait(60)
        out = {o.name: o for o in tf.sweep.run_sweep(cfg, tmp_path, progress=False,
                                                     echo=lambda _: None)}
        assert out["topology=ring"].status == "busy"
        assert "another process is running it" in out["topology=ring"].message
        assert out["topology=complete"].status == "complete"
        assert not (tmp_path / "topology=ring.jsonl").exists()
    finally:
        release.set()
        other.join(60)
    again = {o.name: o.status for o in tf.sweep.run_sweep(cfg, tmp_path, progress=False,
                                                          echo=lambda _: None)}
    assert again == {"topology=ring": "complete", "topology=complete": "skipped"}
    # planned as fresh by a sweep that started earlier, but finished since: skipped under the lock
    run = plan(cfg)[0]
    o = _execute(_run_config(run, tmp_path), run.name, "fresh", str(tmp_path), None)
    assert o.status == "skipped"
    assert (tmp_path / "topology=ring.done").exists()


def test_a_worker_pool_left_by_an_error_ends_its_workers_at_once() -> None:
    """An error inside :func:`worker_pool` does not wait for the running task (a minute
    here): the workers are killed, and the error propagates."""
    import time

    from topofl._utils.processes import worker_pool

    with pytest.raises(RuntimeError, match="boom"):
        with worker_pool(1) as pool:
            pool.submit(time.sleep, 60)
            wait = time.monotonic() + 30  # the worker starts (slowly on a loaded machine)
            while not pool._processes and time.monotonic() < wait:
                time.sleep(0.05)
            procs = list(pool._processes.values())
            t0 = time.monotonic()
            raise RuntimeError("boom")
    assert procs and time.monotonic() - t0 < 30
    assert not any(p.is_alive() for p in procs)


def _hold_lock(path: str, holding: Any, release: Any) -> None:
    from topofl._utils.processes import lock

    with lock(Path(path)) as mine:
        assert mine
        holding.set()
        release.wait(60)


def test_an_infinite_setting_reaches_the_run_and_its_finished_run_is_reused(
        tmp_path: Path) -> None:
    """``budget = inf`` (TOML) reaches DPFL as math.inf; the header stores it as "inf", and a
    second invocation of the sweep reuses the finished run instead of calling it another
    config; a replay from the header gets inf back."""
    import math

    cfg = {"algorithm": "dpfl", "data": "digits", "n_clients": 6, "rounds": 2,
           "budget": math.inf, "partition_params": {"val": 0.2}, "local_steps": 1,
           "batch_size": 8, "model": "logistic", "record_clients": False,
           "sweep": {"seed": [0]}}
    first = tf.sweep.run_sweep(cfg, tmp_path, progress=False, echo=lambda _: None)
    assert [o.status for o in first] == ["complete"]
    path = tmp_path / f"{first[0].name}.jsonl"
    header = tf.config.read_header(path)
    assert header["config"]["budget"] == "inf"
    again = tf.sweep.run_sweep(cfg, tmp_path, progress=False, echo=lambda _: None)
    assert [o.status for o in again] == ["skipped"]
    assert tf.config._replayable_config(path)["budget"] == math.inf
    assert tf.config.validate({"algorithm": "dpfl", "budget": math.inf})["budget"] == math.inf


# ------------------------------------------------------------------ issue 23, item 5
def test_a_run_set_aside_keeps_every_file_and_runs_again(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cfg = {**BASE, "sweep": SWEEP, "record_clients": True}
    tf.sweep.run_sweep(cfg, out, progress=False, stack=False)
    name = NAMES[0]
    files = sorted(p.name for p in out.iterdir() if p.name.startswith(name + "."))
    assert f"{name}.clients.arrows" in files and f"{name}.done" in files
    before = tf.records.load(out / f"{name}.jsonl").final("test_acc_mean")
    dest = tf.sweep.set_aside(out, name, out / "old")
    moved = sorted(p.name for p in dest.iterdir())
    assert moved == [f for f in files if not f.endswith((".lock", ".code"))]
    assert not (out / f"{name}.jsonl").exists()
    assert tf.records.load(dest / f"{name}.jsonl").final("test_acc_mean") == before
    again = {o.name: o.status for o in tf.sweep.run_sweep(cfg, out, progress=False)}
    assert again[name] == "complete" and again[NAMES[1]] == "skipped"
    assert tf.records.load(out / f"{name}.jsonl").final("test_acc_mean") == before


def test_ctrl_c_says_what_finished_and_how_to_resume(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # before: Ctrl-C (or SIGTERM) ended a sweep without a word
    from topofl.sweep import _stacking  # where a unit of work executes its run

    out = tmp_path / "out"
    real = _stacking._execute
    calls: list[str] = []

    def interrupted_at_the_third(cfg: Any, name: str, *a: Any) -> Any:
        calls.append(name)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(cfg, name, *a)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_stacking, "_execute", interrupted_at_the_third)
        with pytest.raises(tf.sweep.SweepInterrupted) as info:
            tf.sweep.run_sweep({**BASE, "rounds": 1, "sweep": SWEEP}, out, progress=False,
                               echo=lambda line: None, command="topofl sweep s.toml --out o",
                               stack=False)  # one run at a time: the third is interrupted
    assert info.value.signum == 2 and isinstance(info.value, KeyboardInterrupt)
    err = capsys.readouterr().err
    assert (f"sweep interrupted (SIGINT): 2 of 4 runs finished ({NAMES[0]}, {NAMES[1]}); "
            f"2 not finished ({NAMES[2]}, {NAMES[3]}).") in err
    assert "To resume, run the same command again: topofl sweep s.toml --out o" in err
    again = tf.sweep.run_sweep({**BASE, "rounds": 1, "sweep": SWEEP}, out, progress=False,
                               echo=lambda line: None)
    assert [o.status for o in again] == ["skipped", "skipped", "complete", "complete"]


def _children(pid: int) -> list[int]:
    kids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(d.name))
    return kids


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _start_sweep(tmp_path: Path) -> tuple[Any, list[int]]:
    """``topofl sweep --jobs 2`` of long runs in a subprocess, once its two workers train."""
    import os
    import subprocess
    import sys
    import time

    cfg = _toml(tmp_path / "s.toml", {**BASE, "topology": "ring", "rounds": 10**6,
                                      "eval_every": 10**5, "checkpoint_every": 10**5},
                {"seed": [0, 1, 2]})
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "topofl", "sweep", str(cfg), "--out", str(tmp_path / "out"),
         "--jobs", "2", "--no-progress", "--stack", "off"],  # two workers, one run each
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env, start_new_session=True)
    t0 = time.monotonic()
    kids: list[int] = []
    while time.monotonic() - t0 < 120 and proc.poll() is None:
        kids = _children(proc.pid)
        if len(kids) >= 3 and len(list((tmp_path / "out").glob("*.jsonl"))) >= 2:
            break  # two workers and the resource tracker; both runs started
        time.sleep(0.2)
    else:  # pragma: no cover
        proc.kill()
        pytest.fail(f"the sweep's workers did not start: {proc.stderr.read()!r}")
    return proc, kids


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_sigkill_of_a_sweep_leaves_no_process_behind(tmp_path: Path) -> None:
    # before: 2 pool workers and the resource tracker went on, holding the output pipe open
    import os
    import signal
    import time

    proc, kids = _start_sweep(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    t0 = time.monotonic()
    proc.stdout.read()  # EOF: no process holds the pipe any more
    assert time.monotonic() - t0 < 10 and proc.wait() == -signal.SIGKILL
    time.sleep(0.5)
    left = [k for k in kids if _running(k)]
    for k in left:  # pragma: no cover - clean up what the failure left
        os.kill(k, signal.SIGKILL)
    assert not left


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_sigterm_of_a_sweep_ends_its_workers_and_says_how_to_resume(tmp_path: Path) -> None:
    import os
    import signal
    import time

    proc, kids = _start_sweep(tmp_path)
    os.kill(proc.pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM
    text = err.decode()
    assert "sweep interrupted (SIGTERM): 0 of 3 runs finished; 3 not finished" in text
    assert "To resume, run the same command again: topofl sweep " in text
    assert "Traceback" not in text
    time.sleep(0.5)
    assert not [k for k in kids if _running(k)]


# ------------------------------------------------------------------ issue 23, item 7
def test_a_sweep_too_large_to_plan_is_refused_at_once(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # before: a [sweep] of 1000 x 1000 values did not finish --dry-run in 30 s
    import time

    cfg = _toml(tmp_path / "big.toml", {"topology": "ring", "rounds": 5},
                {"lr": [0.001 * (i + 1) for i in range(1000)], "seed": list(range(1000))})
    t0 = time.perf_counter()
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "o"), "--dry-run"]) == 2
    assert time.perf_counter() - t0 < 5
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a [sweep] of 1000 x 1000 = 1,000,000 runs" in err
    assert "needs at least" in err and "(estimated)" in err and "TOPOFL_MAX_SECONDS" in err
    # a large sweep that fits is planned
    ok = {"topology": "ring", "rounds": 5, "sweep": {"seed": list(range(300)), "lr": [0.1, 0.2]}}
    assert len(plan(ok)) == 600


def test_stacks_are_cut_so_every_worker_has_a_share(tmp_path: Path) -> None:
    """With two workers, six runs of one group run as two stacks of three, and their records
    are those of the runs one by one."""
    from tests.engine.test_stack import assert_same_records

    cfg = {"algorithm": "dsgd", "data": "digits", "n_clients": 4, "rounds": 2,
           "batch_size": 8, "dtype": "float64",
           "sweep": {"topology": ["ring", "complete"], "seed": [0, 1, 2]}}
    said: list[str] = []
    two = tf.sweep.run_sweep(cfg, tmp_path / "two", jobs=2, progress=False, echo=said.append)
    assert [line.split(" (")[0] for line in said if line.startswith("stacked")] == \
        ["stacked: 3 runs as one pass"] * 2
    assert sorted(o.status for o in two) == ["complete"] * 6
    off = tf.sweep.run_sweep(cfg, tmp_path / "off", stack=False, progress=False,
                             echo=said.append)
    assert all(o.status == "complete" for o in off)
    for r in tf.sweep.plan(cfg):
        assert_same_records(tf.records.load(tmp_path / "two" / f"{r.name}.jsonl"),
                            tf.records.load(tmp_path / "off" / f"{r.name}.jsonl"), 1e-10)


@pytest.mark.parametrize(("size", "cap"), [(1, 1), (5, 5), (6, 3), (7, 3), (10, 4), (3, 1)])
def test_cut_keeps_the_order_and_balances_the_parts(size: int, cap: int) -> None:
    from topofl.sweep._stacking import _cut

    parts = _cut(list(range(size)), cap)  # type: ignore[arg-type]
    assert [x for p in parts for x in p] == list(range(size))
    assert max(map(len, parts)) <= cap
    assert max(map(len, parts)) - min(map(len, parts)) <= 1
    assert len(parts) == -(-size // cap)


def test_cut_balances_the_work_of_runs_of_several_sizes() -> None:
    """field_teleportation_fmnist's 15 ring runs (5 seeds of 20, 80 and 320 clients) for two
    workers: by count they were cut 8 | 7 (340 | 1,760 clients); by work 12 | 3."""
    from topofl.sweep._stacking import _cut, _work

    cfgs = [{"n_clients": n, "rounds": 24000} for n in (20, 80, 320) for _ in range(5)]
    work = [_work(c) for c in cfgs]
    parts = _cut(list(range(15)), 8, work)  # type: ignore[arg-type]
    assert [len(p) for p in parts] == [12, 3]
    sums = [sum(work[i] for i in p) / 24000 for p in parts]
    assert sums == [1140.0, 960.0]
    assert _work({"n_clients": 10}) == 1000.0 and _work({"data": object()}) == 100 * 100.0
    assert _work({"n_clients": True, "rounds": 5}) == 1.0


@pytest.mark.parametrize("seed", range(20))
def test_cut_by_work_keeps_the_order_and_the_number_of_parts(seed: int) -> None:
    from topofl.sweep._stacking import _cut

    gen = np.random.default_rng(seed)
    size, cap = int(gen.integers(1, 30)), int(gen.integers(1, 10))
    work = gen.integers(1, 1000, size).astype(float).tolist()
    parts = _cut(list(range(size)), cap, work)  # type: ignore[arg-type]
    assert [x for p in parts for x in p] == list(range(size))
    assert len(parts) == -(-size // cap) and all(parts)
    # each cut lies where the work before it comes nearest its share (among the allowed)
    done = np.concatenate([[0.0], np.cumsum(work)])
    b = np.cumsum([len(p) for p in parts])[:-1]
    for i, cut in enumerate(b, start=1):
        share = done[-1] * i / len(parts)
        lo, hi = (b[i - 2] + 1 if i > 1 else 1), size - (len(parts) - i)
        assert abs(done[cut] - share) == min(abs(done[c] - share) for c in range(lo, hi + 1))


def test_overwrite_reruns_finished_runs_that_stack(tmp_path: Path) -> None:
    """``overwrite=True`` runs every run again, stacked ones too (not "skipped")."""
    cfg = {"algorithm": "dsgd", "data": "digits", "n_clients": 4, "rounds": 2,
           "batch_size": 8, "topology": "ring", "sweep": {"seed": [0, 1]}}
    first = tf.sweep.run_sweep(cfg, tmp_path, progress=False, echo=lambda s: None)
    assert {o.status for o in first} == {"complete"}
    stamps = {p.name: p.stat().st_mtime_ns for p in tmp_path.glob("*.jsonl")}
    again = tf.sweep.run_sweep(cfg, tmp_path, overwrite=True, progress=False,
                               echo=lambda s: None)
    assert {o.status for o in again} == {"complete"}
    assert all("stacked with 1 other" in o.message for o in again)
    assert all(p.stat().st_mtime_ns != stamps[p.name] for p in tmp_path.glob("*.jsonl"))


def test_a_byzantine_runs_line_shows_its_honest_nodes() -> None:
    """A ``[byzantine]`` run's summary holds its honest nodes' statistics, and its line shows
    them (named ``honest_*``), not those that mix the attackers in."""
    from topofl.sweep import Outcome

    stat = {"final": 0.5, "best": 0.6}
    mixed = {"test_acc_mean": stat, "global_acc_mean": stat}
    honest = {**mixed, "honest_test_acc_mean": {"final": 0.7, "best": 0.8},
              "honest_global_acc_mean": {"final": 0.25, "best": 0.3}}
    assert Outcome("r", "complete", summary=honest).line() == (
        "r  complete  honest_test_acc_mean final 0.7000 best 0.8000  "
        "honest_global_acc_mean final 0.2500 best 0.3000")
    assert Outcome("r", "complete", summary=mixed).line() == (
        "r  complete  test_acc_mean final 0.5000 best 0.6000  "
        "global_acc_mean final 0.5000 best 0.6000")


def test_a_byzantine_sweep_run_records_its_honest_summary(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    (tmp_path / "s.toml").write_text(
        'topology = "ring"\nn_clients = 10\npartition = "iid"\nrounds = 1\nbatch_size = 8\n'
        'spectral = false\n[byzantine]\nattack = "sign_flip"\nshare = 0.2\n'
        "[sweep]\nseed = [0]\n")
    assert main(["sweep", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o")]) == 0
    rec = tf.records.load(tmp_path / "o" / "run.jsonl")  # one run: "run"
    done = json.loads((tmp_path / "o" / "run.done").read_text())["summary"]
    assert done["honest_test_acc_mean"]["final"] == rec.final("honest_test_acc_mean")
    out = capsys.readouterr().out
    assert f"honest_test_acc_mean final {rec.final('honest_test_acc_mean'):.4f}" in out
