"""The default 100-round run at 10^6 logistic clients, end to end, against its plan (issue 85,
item 4).

The run: the one ``analysis/bench_scale.py`` times, with every other setting at its default
(``eval_every="auto"``, the global test set, per-client records kept in memory, the spectral
summary, the ledger): ``topofl.run("dsgd", "ring",
"synthetic:n_samples=10n,dim=64,num_classes=10,seed=0", "logistic", 100, n_clients=n,
partition="iid", lr=0.1, batch_size=8, seed=0)``, in a fresh interpreter at one torch thread
(``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` and ``MKL_NUM_THREADS`` set to 1 too) under
``/usr/bin/time -v``, to its end. It writes a checkpoint every ``--checkpoint-every`` rounds
(default 30: rounds 30, 60 and 90) under ``--folder`` (default ``/tmp/million_default_<n>``),
and a run killed in the middle continues from its last checkpoint when the script is started
again; the checkpoints' CPU seconds are clocked apart (a wrapper of the checkpointer's
``save``, in the child only) and left out of the times held against the plan, which has
none.

Measured, from ``time -v``: the process's maximum resident set size, its user and system CPU
seconds, its elapsed wall time and its exit status; in the child: the resident size after
``import torch, topofl`` and the peak above it
(:data:`topofl.workflow.plan.PEAK_METER`, the meter of the plan's probe), the start of every
round and the end of the run on :data:`topofl.workflow.plan.ROUND_CLOCK`'s clock (CPU time at
one thread), the rounds completed and the final accuracies.

Planned: :func:`topofl.workflow.plan.make_plan` of the same config (one torch thread, no
memory limit applied), its parts (the memory model's breakdown of the peak, which sum to its
``peak_bytes``), the interpreter it measured, its seconds a training round, an evaluation and
the run. *Peak / sum of parts*: the run's peak above import over the plan's parts summed;
*plan / run*: the plan's process peak (parts and interpreter) over ``time -v``'s maximum
resident set size, and the plan's run seconds (the rounds: training and evaluations, set-up
left out) over the run's rounds, and over the whole process (``time -v``'s user + system),
the checkpoints left out of both.

``python analysis/million_default.py`` runs what is missing (the plan, then the run) and writes
``analysis/million_default.md`` and ``.json``; ``--render`` rewrites the Markdown from the
JSON; ``--n 10000 --out /tmp/m.md --json /tmp/m.json`` is a small trial.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ROUNDS = 100
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
TIME = "/usr/bin/time"


def config(n: int) -> dict[str, Any]:
    """The default run's keywords of ``topofl.run`` at ``n`` clients (the config of
    ``analysis/bench_scale.py``'s child, every other setting at its default).

    Examples
    --------
    >>> cfg = config(1000)
    >>> cfg["data"], cfg["rounds"], cfg["batch_size"]
    ('synthetic:n_samples=10000,dim=64,num_classes=10,seed=0', 100, 8)
    """
    return {"algorithm": "dsgd", "topology": "ring",
            "data": f"synthetic:n_samples={10 * n},dim=64,num_classes=10,seed=0",
            "model": "logistic", "rounds": ROUNDS, "n_clients": n, "partition": "iid",
            "lr": 0.1, "batch_size": 8, "seed": 0}


# ============================================================================ the child
_CHILD_RUN = r"""
import json, os, sys
import topofl
from topofl.engine import placement as _placement
args = json.loads(sys.argv[1])
_torch.set_num_threads(1)
baseline = _status("VmRSS")
mark = start_peak()
saves = []  # [round index of this attempt, CPU seconds] of each checkpoint written
_save = _placement.FileCheckpointer.save
def _timed_save(self, *a, **k):
    t0 = _clock()
    try:
        return _save(self, *a, **k)
    finally:
        saves.append([len(_stamps) - 1, _clock() - t0])
_placement.FileCheckpointer.save = _timed_save
ckpt = args["checkpoint_path"]
resumed = os.path.exists(ckpt)
_stamps.clear()
start = _clock()
res = topofl.run(**args["config"], progress=False, checkpoint_every=args["checkpoint_every"],
                 checkpoint_path=ckpt, resume=ckpt if resumed else None, overwrite=not resumed)
_stamps.append(_clock())
peak = peak_since(mark)
rec = res.records
def last(metric):
    pts = rec.points(metric)
    return [int(pts[-1][0]) + 1, float(pts[-1][1])] if pts else None
print(json.dumps({
    "resumed": resumed, "import_cpu_s": start, "start_cpu_s": start, "stamps": list(_stamps),
    "checkpoints": saves, "baseline_rss": baseline, "peak_above_import": peak,
    "hwm": _status("VmHWM"), "eval_every": int(res.config.eval_every),
    "rounds": int(res.config.rounds), "rows": len(rec.rows),
    "test_acc_mean": last("test_acc_mean"), "global_acc_mean": last("global_acc_mean"),
    "train_loss": last("train_loss"), "consensus_distance": last("consensus_distance"),
    "global_samples": last("global_samples"),
    "commit": str(rec.provenance.get("git_commit") or "unknown")}))
"""


def child_source() -> str:
    """The child's program: the plan's meter and clock, then the run (:data:`_CHILD_RUN`)."""
    from topofl.workflow.plan import PEAK_METER, ROUND_CLOCK

    return PEAK_METER + ROUND_CLOCK + _CHILD_RUN


def child_env() -> dict[str, str]:
    """This process's environment with one thread for torch's OpenMP and the BLAS, and this
    checkout first on ``PYTHONPATH``."""
    env = {**os.environ, **{v: "1" for v in THREAD_VARS}}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", ""))
                                        if p)
    return env


# ============================================================================ parsing
def parse_elapsed(text: str) -> float:
    """Seconds of ``time -v``'s elapsed time, ``"h:mm:ss"`` or ``"m:ss.ss"``.

    Examples
    --------
    >>> parse_elapsed("0:02.50"), parse_elapsed("12:03.25"), parse_elapsed("1:02:03")
    (2.5, 723.25, 3723.0)
    >>> parse_elapsed("abc")
    Traceback (most recent call last):
    ...
    ValueError: expected an elapsed time as h:mm:ss or m:ss(.ss), found 'abc'
    """
    parts = text.strip().split(":")
    try:
        if not 2 <= len(parts) <= 3:
            raise ValueError
        values = [float(p) for p in parts]
    except ValueError:
        raise ValueError(f"expected an elapsed time as h:mm:ss or m:ss(.ss), found "
                         f"{text.strip()!r}") from None
    seconds = 0.0
    for v in values:
        seconds = 60.0 * seconds + v
    return seconds


def parse_time_v(text: str) -> dict[str, Any]:
    """The numbers of GNU ``time -v``'s report: ``max_rss_bytes`` (its maximum resident set
    size, reported in kB of 1,024 bytes), ``user_s``, ``sys_s``, ``cpu_s`` (their sum),
    ``wall_s``, ``exit_status`` and ``signal`` (the signal that ended the command, else
    ``None``).

    Raises
    ------
    ValueError
        When a field is missing (what was expected is named).

    Examples
    --------
    >>> report = '''Command terminated by signal 9
    ... \\tCommand being timed: "python -c x"
    ... \\tUser time (seconds): 410.25
    ... \\tSystem time (seconds): 12.50
    ... \\tElapsed (wall clock) time (h:mm:ss or m:ss): 9:01.00
    ... \\tMaximum resident set size (kbytes): 10322264
    ... \\tExit status: 0'''
    >>> got = parse_time_v(report)
    >>> got["cpu_s"], got["wall_s"], got["max_rss_bytes"], got["signal"]
    (422.75, 541.0, 10569998336, 9)
    """
    fields: dict[str, str] = {}
    signal = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("Command terminated by signal"):
            signal = int(line.split()[-1])
            continue
        key, sep, value = line.rpartition(": ")
        if sep:
            fields[key] = value.strip()
    names = {"user_s": "User time (seconds)", "sys_s": "System time (seconds)",
             "wall_s": "Elapsed (wall clock) time (h:mm:ss or m:ss)",
             "max_rss_kb": "Maximum resident set size (kbytes)", "exit_status": "Exit status"}
    missing = [v for v in names.values() if v not in fields]
    if missing:
        raise ValueError(f"time -v report lacks {', '.join(repr(m) for m in missing)}; found "
                         f"{sorted(fields)!r}"[:400])
    user, sys_ = float(fields[names["user_s"]]), float(fields[names["sys_s"]])
    return {"max_rss_bytes": int(fields[names["max_rss_kb"]]) * 1024, "user_s": user,
            "sys_s": sys_, "cpu_s": round(user + sys_, 6),
            "wall_s": parse_elapsed(fields[names["wall_s"]]),
            "exit_status": int(fields[names["exit_status"]]), "signal": signal}


# ============================================================================ the numbers
def round_times(child: Mapping[str, Any], rounds: int) -> dict[str, Any]:
    """What the child's clock says about its rounds (``child``: the child's JSON).

    ``rounds_cpu_s``: from the first round's start to the run's end; ``checkpoints_cpu_s``:
    the checkpoints written in them; ``train_round_s``: the median round that neither
    evaluates nor writes a checkpoint, the first left out; ``evaluations``: ``[round,
    seconds]`` of each evaluated round less that median and its checkpoint (what the
    evaluation adds); ``setup_cpu_s``: the call's CPU seconds before its first round.

    Examples
    --------
    >>> child = {"stamps": [1.0, 2.5, 3.5, 4.5, 7.5, 8.5], "checkpoints": [[3, 1.0]],
    ...          "eval_every": 4, "start_cpu_s": 0.5}
    >>> got = round_times(child, 5)
    >>> got["rounds_cpu_s"], got["checkpoints_cpu_s"], got["train_round_s"]
    (7.5, 1.0, 1.0)
    >>> got["evaluations"], got["first_round"], got["setup_cpu_s"]
    ([[4, 1.0], [5, 0.0]], 1, 0.5)
    """
    stamps = [float(s) for s in child["stamps"]]
    dur = [b - a for a, b in zip(stamps, stamps[1:])]
    first = rounds - len(dur)  # the round index this attempt started at (0 unless resumed)
    every = int(child["eval_every"])
    ck = {int(i): float(s) for i, s in child["checkpoints"]}
    evaluated = [i for i in range(len(dur))
                 if (first + i + 1) % every == 0 or first + i == rounds - 1]
    plain = sorted(d for i, d in enumerate(dur) if i and i not in evaluated and i not in ck)
    train = statistics.median(plain) if plain else None
    return {"first_round": first + 1, "rounds_run": len(dur),
            "rounds_cpu_s": stamps[-1] - stamps[0] if dur else 0.0,
            "checkpoints_cpu_s": sum(ck.values()), "train_round_s": train,
            "evaluations": [[first + i + 1, dur[i] - (train or 0.0) - ck.get(i, 0.0)]
                            for i in evaluated],
            "setup_cpu_s": stamps[0] - float(child["start_cpu_s"]) if stamps else None}


def ratios(data: Mapping[str, Any]) -> dict[str, float | None]:
    """The ratios of the report, from the last attempt (the one that ran to the end) and the
    plan: ``peak_over_parts`` (peak above import / the plan's parts summed),
    ``rss_over_parts`` (``time -v``'s maximum RSS / the parts and the run's own import RSS),
    ``plan_peak_over_run`` (the plan's process peak / ``time -v``'s maximum RSS),
    ``plan_parts_over_run`` (the parts / the peak above import), ``plan_time_over_rounds``
    (the plan's run seconds / the rounds' CPU seconds less the checkpoints),
    ``plan_time_over_process`` (the same over ``time -v``'s CPU seconds less the
    checkpoints), ``plan_round_over_run`` (a training round: the run's median) and
    ``plan_eval_over_run`` (the plan's evaluations, the first one's extra included, over what
    the run's evaluated rounds took beyond a training round); ``None`` where a number is
    missing.

    Examples
    --------
    >>> data = {"rounds": 5, "plan": {"peak_bytes": 100, "process_peak_bytes": 150,
    ...         "run_seconds": 9.0, "seconds_per_round": 1.0, "eval_seconds": 1.25,
    ...         "evaluations": 2, "first_extra_s": 0.5},
    ...         "attempts": [{"time_v": {"max_rss_bytes": 160, "cpu_s": 10.0},
    ...                       "child": {"stamps": [0.0, 1, 2, 3, 4, 8], "checkpoints": [],
    ...                                 "eval_every": 4, "start_cpu_s": 0.0,
    ...                                 "peak_above_import": 110, "baseline_rss": 50}}]}
    >>> r = ratios(data)
    >>> r["peak_over_parts"], r["rss_over_parts"], r["plan_peak_over_run"]
    (1.1, 1.0666666666666667, 0.9375)
    >>> r["plan_time_over_rounds"], r["plan_time_over_process"], r["plan_eval_over_run"]
    (1.125, 0.9, 1.0)
    """
    plan = data.get("plan") or {}
    last = (data.get("attempts") or [{}])[-1]
    tv, child = last.get("time_v") or {}, last.get("child")

    def div(a: Any, b: Any) -> float | None:
        return None if a is None or not b else float(a) / float(b)

    out: dict[str, float | None] = dict.fromkeys(
        ("peak_over_parts", "rss_over_parts", "plan_peak_over_run", "plan_parts_over_run",
         "plan_time_over_rounds", "plan_time_over_process", "plan_round_over_run",
         "plan_eval_over_run"))
    parts = plan.get("peak_bytes")
    out["plan_peak_over_run"] = div(plan.get("process_peak_bytes"), tv.get("max_rss_bytes"))
    if not child:
        return out
    rt = round_times(child, int(data["rounds"]))
    out["peak_over_parts"] = div(child["peak_above_import"], parts)
    out["plan_parts_over_run"] = div(parts, child["peak_above_import"])
    if parts is not None:
        out["rss_over_parts"] = div(tv.get("max_rss_bytes"), parts + child["baseline_rss"])
    if rt["first_round"] == 1:  # the times of a whole run only
        ck = rt["checkpoints_cpu_s"]
        out["plan_time_over_rounds"] = div(plan.get("run_seconds"), rt["rounds_cpu_s"] - ck)
        if tv.get("cpu_s") is not None:
            out["plan_time_over_process"] = div(plan.get("run_seconds"), tv["cpu_s"] - ck)
    out["plan_round_over_run"] = div(plan.get("seconds_per_round"), rt["train_round_s"])
    evals = [s for _, s in rt["evaluations"]]
    if evals and rt["first_round"] == 1 and plan.get("eval_seconds") is not None:
        planned = (int(plan.get("evaluations") or 0) * float(plan["eval_seconds"])
                   + float(plan.get("first_extra_s") or 0.0))
        out["plan_eval_over_run"] = div(planned, sum(evals))
    return out


# ============================================================================ running
def machine() -> dict[str, Any]:
    """The machine, ``env``-style: CPU model, cores, memory, load, versions, date."""
    import torch

    from topofl._utils.cpu import cpu_model

    mem = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "mem_total_bytes": mem,
            "load": list(os.getloadavg()), "python": platform.python_version(),
            "torch": torch.__version__, "kernel": platform.release(),
            "date": datetime.datetime.now().isoformat(timespec="seconds")}


def code() -> dict[str, Any]:
    """The checkout's commit and its uncommitted changes to ``topofl/`` (files and a digest of
    the diff: two runs of one digest ran the same library)."""
    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True,
                              check=False).stdout

    diff = git("diff", "HEAD", "--", "topofl")
    files = [f for f in git("diff", "HEAD", "--name-only", "--", "topofl").split() if f]
    untracked = [f for f in git("ls-files", "--others", "--exclude-standard", "--",
                                "topofl").split() if f.endswith(".py")]
    return {"commit": git("rev-parse", "--short=12", "HEAD").strip(),
            "changed": files, "untracked": untracked,
            "diff_sha256": hashlib.sha256(diff.encode()).hexdigest()[:12] if diff else None}


def make_the_plan(n: int) -> dict[str, Any]:
    """The plan of the default run at ``n`` (``make_plan`` at one torch thread, no memory
    limit applied), with its own wall and CPU seconds."""
    for v in THREAD_VARS:
        os.environ[v] = "1"
    import torch

    from topofl.workflow.plan import make_plan

    torch.set_num_threads(1)
    t0, c0 = time.perf_counter(), time.process_time()
    plan = make_plan(config(n), available=None)
    out = plan.as_json()
    out.update(plan_wall_s=time.perf_counter() - t0, plan_cpu_s=time.process_time() - c0,
               summary=plan.summary(), first_extra_s=float(plan.eval_fit.get("first_extra_s",
                                                                               0.0)))
    return out


def mem_available() -> int | None:
    """``MemAvailable`` of ``/proc/meminfo`` in bytes (``None`` where it is not there)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def wait_for_memory(need: float, seconds: float, poll: float = 30.0) -> bool:
    """Wait up to ``seconds`` for ``need`` bytes to be available (the machine is shared: a run
    started without them would be refused, or end another process by the kernel's OOM
    killer); whether they are."""
    deadline = time.monotonic() + seconds
    while True:
        got = mem_available()
        if got is None or got >= need:
            return True
        if time.monotonic() >= deadline:
            return False
        print(f"waiting for memory: {got / 1e9:.1f} GB available, {need / 1e9:.1f} GB "
              "needed", flush=True)
        time.sleep(poll)


def run_attempt(n: int, folder: Path, every: int) -> dict[str, Any]:
    """One attempt of the run (a fresh one, or the continuation of the checkpoint in
    ``folder``) under ``time -v``: its report, the child's numbers, the load around it."""
    folder.mkdir(parents=True, exist_ok=True)
    args = {"config": config(n), "checkpoint_every": every,
            "checkpoint_path": str(folder / "run.ckpt")}
    report = folder / "time.txt"
    report.unlink(missing_ok=True)
    load0, t0 = os.getloadavg(), time.perf_counter()
    with open(folder / "stdout.txt", "w") as out, open(folder / "stderr.txt", "w") as err:
        proc = subprocess.run([TIME, "-v", "-o", str(report), sys.executable, "-c",
                               child_source(), json.dumps(args)], stdout=out, stderr=err,
                              env=child_env(), cwd=str(folder), check=False)
    attempt: dict[str, Any] = {"load": [list(load0), list(os.getloadavg())],
                               "outer_wall_s": time.perf_counter() - t0,
                               "time_returncode": proc.returncode,
                               "resumed_from_checkpoint": None}
    attempt["time_v"] = parse_time_v(report.read_text()) if report.exists() else None
    lines = (folder / "stdout.txt").read_text().strip().splitlines()
    try:
        attempt["child"] = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        attempt["child"] = None
    if attempt["child"] is not None:
        attempt["resumed_from_checkpoint"] = attempt["child"]["resumed"]
    else:
        tail = (folder / "stderr.txt").read_text().strip().splitlines()[-1:]
        attempt["error"] = tail[0][:300] if tail else "no output"
    return attempt


def finished(data: Mapping[str, Any]) -> bool:
    """Whether the last attempt ran to the run's last round and exited 0."""
    att = data.get("attempts") or []
    if not att or not att[-1].get("child") or not att[-1].get("time_v"):
        return False
    last = att[-1]
    return bool(last["time_v"]["exit_status"] == 0 and last["time_v"]["signal"] is None
                and last["child"]["test_acc_mean"] is not None
                and last["child"]["test_acc_mean"][0] == data["rounds"])


def measure(a: argparse.Namespace) -> dict[str, Any]:
    """Plan and run what ``a.json`` does not hold yet, saving after each step."""
    path = Path(a.json)
    data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    folder = Path(a.folder or f"/tmp/million_default_{a.n}")
    if data.get("n") != a.n or a.fresh:
        data = {"n": a.n, "rounds": ROUNDS, "config": config(a.n), "attempts": []}
        if a.fresh and folder.exists():
            shutil.rmtree(folder)
    data.update(checkpoint_every=a.checkpoint_every, folder=str(folder),
                command=" ".join(["python analysis/million_default.py", *sys.argv[1:]]),
                child_command=(" ".join(f"{v}=1" for v in THREAD_VARS) + f" {TIME} -v -o "
                               "TIME_REPORT python -c CHILD_SOURCE CONFIG_JSON"))

    def save() -> None:
        data["ratios"] = ratios(data)
        path.write_text(json.dumps(data, indent=1) + "\n")

    if "plan" not in data:
        data["plan_machine"], data["plan_code"] = machine(), code()
        data["plan"] = make_the_plan(a.n)
        print(data["plan"]["summary"], flush=True)
        save()
    while not finished(data):
        if len(data["attempts"]) >= a.max_attempts:
            print(f"not finished after {len(data['attempts'])} attempts", flush=True)
            break
        need = 1.15 * float(data["plan"].get("process_peak_bytes") or 0)
        if not wait_for_memory(need, a.wait_memory):
            print("not enough memory available: nothing run", flush=True)
            break
        data["machine"], data["code"] = machine(), code()
        att = run_attempt(a.n, folder, a.checkpoint_every)
        data["attempts"].append(att)
        data["machine"]["load_end"] = list(os.getloadavg())
        save()
        tv = att["time_v"] or {}
        print(f"attempt {len(data['attempts'])}: exit {tv.get('exit_status')}, signal "
              f"{tv.get('signal')}, {tv.get('cpu_s')} CPU s, max RSS "
              f"{tv.get('max_rss_bytes', 0) / 1e9:.2f} GB", flush=True)
        if att.get("child") is None and not (folder / "run.ckpt").exists():
            break  # failed before its first checkpoint: another try would do the same
    if finished(data) and not a.keep_checkpoint:
        (folder / "run.ckpt").unlink(missing_ok=True)
    save()
    return data


# ============================================================================ the report
def _gb(b: float | None) -> str:
    return "-" if b is None else f"{b / 1e9:.2f} GB"


def _s(x: float | None, fmt: str = ".1f") -> str:
    return "-" if x is None else format(x, fmt)


def _x(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _code_text(c: Mapping[str, Any]) -> str:
    changed = c.get("changed") or []
    return (f"commit `{c.get('commit', '?')}`"
            + (f" with uncommitted changes to {', '.join(f'`{f}`' for f in changed)} "
               f"(diff digest `{c.get('diff_sha256')}`)" if changed else ""))


def render(data: Mapping[str, Any]) -> str:
    """The Markdown report of ``data`` (the JSON this script writes)."""
    from topofl._utils.markdown import Document

    n, rounds = int(data["n"]), int(data["rounds"])
    m, c, plan = data.get("machine") or {}, data.get("code") or {}, data.get("plan") or {}
    r = ratios(data)
    cfg = data["config"]
    doc = Document().heading(f"The default {rounds}-round run at {n:,} logistic clients, end "
                             "to end, against its plan")
    code_text = _code_text(c)
    doc.paragraph(
        f"`{data['command']}` on {m.get('date', '?')}; topofl at {code_text}. Machine: "
        f"{m.get('cpu', '?')}, {m.get('cores', '?')} logical CPUs, "
        f"{_gb(m.get('mem_total_bytes'))} of memory, a VM shared with a background job at "
        f"nice 19; Linux {m.get('kernel', '?')}, Python {m.get('python', '?')}, torch "
        f"{m.get('torch', '?')}. Load average (1, 5, 15 min) "
        f"{', '.join(f'{x:.2f}' for x in m.get('load', []))} before the last attempt, "
        f"{', '.join(f'{x:.2f}' for x in m.get('load_end', []))} after it. "
        + " ".join(__doc__.split("\n\n")[1].split()).replace("``", "`"))
    doc.paragraph(
        "The config (keywords of `topofl.run`; `progress=False`, and the checkpoint's "
        f"`checkpoint_every={data['checkpoint_every']}` and `checkpoint_path`): "
        + ", ".join(f"`{k}={v!r}`" for k, v in cfg.items())
        + f". The child: `{data['child_command']}` (the child's source is "
        "`child_source()` of this script).")
    rows = []
    for k, att in enumerate(data.get("attempts") or [], 1):
        tv, ch = att.get("time_v") or {}, att.get("child")
        if ch is not None:
            rt = round_times(ch, rounds)
            span = f"{rt['first_round']}-{rt['first_round'] + rt['rounds_run'] - 1}"
        else:
            rt, span = None, "- (" + att.get("error", "no result") + ")"
        sig = tv.get("signal")
        rows.append([str(k), "yes" if att.get("resumed_from_checkpoint") else "no", span,
                     str(tv.get("exit_status", "-")) + (f", signal {sig}" if sig else ""),
                     _gb(tv.get("max_rss_bytes")),
                     _gb(ch["baseline_rss"]) if ch else "-",
                     _gb(ch["peak_above_import"]) if ch else "-",
                     _s(tv.get("user_s")), _s(tv.get("sys_s")), _s(tv.get("cpu_s")),
                     _s(tv.get("wall_s")),
                     _s(rt["checkpoints_cpu_s"]) if rt else "-",
                     "-" if not att.get("load") else
                     f"{att['load'][0][0]:.2f} / {att['load'][1][0]:.2f}"])
    doc.heading("Measured", 2).table(
        ["attempt", "resumed", "rounds", "exit status", "max RSS (time -v)", "RSS after import",
         "peak above import", "user CPU s", "system CPU s", "CPU s", "wall s",
         "checkpoints CPU s", "1-min load before / after"], rows)
    last = (data.get("attempts") or [{}])[-1]
    ch = last.get("child")
    if ch:
        rt = round_times(ch, rounds)
        evals = ", ".join(f"round {k}: {s:.1f}" for k, s in rt["evaluations"])
        scored = ("all the" if ch["global_samples"] is None
                  else f"{ch['global_samples'][1]:,.0f}")
        doc.paragraph(
            f"The last attempt's rounds (the child's clock, CPU s): set-up before the first "
            f"round {_s(rt['setup_cpu_s'])} (the imports before it {_s(ch['import_cpu_s'])}); "
            f"rounds {rt['first_round']}-{rounds} {_s(rt['rounds_cpu_s'])}, of which "
            f"checkpoints {_s(rt['checkpoints_cpu_s'])}; a training round (median) "
            f"{_s(rt['train_round_s'], '.3f')}; what each evaluation adds: {evals} "
            f"(`eval_every` resolved to {ch['eval_every']}; each client scores {scored} "
            f"global test samples). Records: {ch['rows']:,} rows in memory.")
        acc = [["test_acc_mean", ch["test_acc_mean"]], ["global_acc_mean",
                                                        ch["global_acc_mean"]],
               ["train_loss", ch["train_loss"]],
               ["consensus_distance", ch["consensus_distance"]]]
        doc.table(["final metric", "round", "value"],
                  [[name, str(v[0]), f"{v[1]:.4g}"] for name, v in acc if v is not None])
    parts = plan.get("parts") or {}
    doc.heading("The plan", 2).paragraph(
        f"`make_plan` of the same config (one torch thread; {_s(plan.get('plan_cpu_s'))} CPU s "
        f"in this process, its probe apart, and {_s(plan.get('plan_wall_s'))} s wall; made on "
        f"{(data.get('plan_machine') or {}).get('date', '?')} with topofl at "
        f"{_code_text(data.get('plan_code') or {})}), the memory model's parts of the peak "
        "(above import) and its times:")
    doc.table(["part", "bytes", "GB"],
              [[k, f"{v:,}", f"{v / 1e9:.3f}"] for k, v in parts.items()]
              + [["**sum of parts** (`peak_bytes`)", f"{plan.get('peak_bytes', 0):,}",
                  f"{plan.get('peak_bytes', 0) / 1e9:.3f}"],
                 ["interpreter (measured by the probe)",
                  f"{plan.get('interpreter_bytes') or 0:,}",
                  f"{(plan.get('interpreter_bytes') or 0) / 1e9:.3f}"],
                 ["**process peak**", f"{plan.get('process_peak_bytes') or 0:,}",
                  f"{(plan.get('process_peak_bytes') or 0) / 1e9:.3f}"]])
    doc.paragraph(
        f"Seconds: a training round {_s(plan.get('seconds_per_round'), '.3f')}, an evaluation "
        f"{_s(plan.get('eval_seconds'), '.1f')} ({plan.get('evaluations')} in the run; the "
        f"first {_s(plan.get('first_extra_s'), '.2f')} s more), the run "
        f"{_s(plan.get('run_seconds'))}.")
    doc.heading("Ratios", 2).table(["ratio", "value"], [
        ["peak above import / sum of the plan's parts", _x(r["peak_over_parts"])],
        ["max RSS (time -v) / (sum of parts + the run's RSS after import)",
         _x(r["rss_over_parts"])],
        ["plan's process peak / max RSS (time -v)", _x(r["plan_peak_over_run"])],
        ["plan's sum of parts / peak above import", _x(r["plan_parts_over_run"])],
        ["plan's run seconds / the rounds' CPU s (checkpoints left out)",
         _x(r["plan_time_over_rounds"])],
        ["plan's run seconds / the process's CPU s (time -v, checkpoints left out)",
         _x(r["plan_time_over_process"])],
        ["plan's training round / the run's median", _x(r["plan_round_over_run"])],
        ["plan's evaluations (the first one's extra included) / what the run's evaluated "
         "rounds took beyond a training round", _x(r["plan_eval_over_run"])]])
    doc.heading("Reading", 2).paragraph(reading(data))
    return doc.text()


def reading(data: Mapping[str, Any]) -> str:
    """The Reading paragraph: the measured numbers and the ratios, nothing else."""
    att = data.get("attempts") or []
    if not att or not att[-1].get("child"):
        return "The run has not finished: no measured numbers yet."
    n, rounds = int(data["n"]), int(data["rounds"])
    tv, ch, plan, r = att[-1]["time_v"], att[-1]["child"], data["plan"], ratios(data)
    rt = round_times(ch, rounds)
    whole = rt["first_round"] == 1
    text = (f"The default run at {n:,} clients ran rounds {rt['first_round']}-{rounds} in "
            f"{'one process' if whole else 'its last attempt (resumed)'} and exited "
            f"{tv['exit_status']}: {tv['cpu_s']:.0f} CPU s ({tv['user_s']:.0f} user, "
            f"{tv['sys_s']:.0f} system; {rt['checkpoints_cpu_s']:.0f} of them writing "
            f"checkpoints) in {tv['wall_s']:.0f} s of wall time at a 1-minute load average "
            f"of {att[-1]['load'][0][0]:.2f} before and {att[-1]['load'][1][0]:.2f} after, "
            f"with a maximum resident set size of {tv['max_rss_bytes'] / 1e9:.2f} GB "
            f"({ch['peak_above_import'] / 1e9:.2f} GB above the {ch['baseline_rss'] / 1e9:.2f}"
            f" GB after import); final mean test accuracy {ch['test_acc_mean'][1]:.4f}, "
            f"global accuracy {ch['global_acc_mean'][1]:.4f}. The plan's parts sum to "
            f"{plan['peak_bytes'] / 1e9:.2f} GB: the peak above import is "
            f"{_x(r['peak_over_parts'])}x that sum; the plan's process peak, "
            f"{(plan.get('process_peak_bytes') or 0) / 1e9:.2f} GB, is "
            f"{_x(r['plan_peak_over_run'])}x the measured maximum RSS.")
    if whole:
        text += (f" The plan's {plan['run_seconds']:.0f} s for the run is "
                 f"{_x(r['plan_time_over_rounds'])}x the "
                 f"{rt['rounds_cpu_s'] - rt['checkpoints_cpu_s']:.0f} CPU s of its rounds and "
                 f"{_x(r['plan_time_over_process'])}x the process's "
                 f"{tv['cpu_s'] - rt['checkpoints_cpu_s']:.0f} CPU s (checkpoints left out of "
                 "both).")
    return text


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=10**6, help="clients (default 10^6)")
    p.add_argument("--checkpoint-every", type=int, default=30)
    p.add_argument("--folder", help="checkpoint and the child's output (default "
                                    "/tmp/million_default_<n>)")
    p.add_argument("--json", default=str(HERE / "million_default.json"))
    p.add_argument("--out", default=str(HERE / "million_default.md"))
    p.add_argument("--render", action="store_true", help="rewrite the Markdown from the JSON")
    p.add_argument("--fresh", action="store_true",
                   help="forget earlier attempts and checkpoints of this n")
    p.add_argument("--max-attempts", type=int, default=3)
    p.add_argument("--keep-checkpoint", action="store_true")
    p.add_argument("--wait-memory", type=float, default=7200.0,
                   help="seconds to wait for 1.15x the plan's process peak to be available")
    a = p.parse_args(argv)
    if a.render:
        data = json.loads(Path(a.json).read_text())
    else:
        data = measure(a)
    Path(a.out).write_text(render(data), encoding="utf-8")
    print(a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
