"""The plan's probe: the config run in a fresh interpreter at a few sizes, its peak memory
and its round and evaluation seconds measured (:func:`topofl.workflow.plan.make_plan`).

The meter (:data:`PEAK_METER`) and the clock (:data:`ROUND_CLOCK`) are source text, run in the
probe's child and shared by the analysis scripts that hold the plan against a run.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from typing import Any

import torch

from topofl._utils.processes import child_command
from topofl.exceptions import ConfigError

__all__ = ["PEAK_METER", "ROUND_CLOCK", "ProbeError", "probe_rounds"]


class ProbeError(RuntimeError):
    """The plan's probe run (a subprocess running the config) failed for a reason that is not
    the config's (``topofl plan`` exits 1 with its last line)."""


#: Peak resident memory of this process from here on, in bytes: on Linux the kernel's
#: high-water mark is reset (``/proc/self/clear_refs``) and ``VmHWM`` read against the resident
#: size at the reset, so a transient peak of the imports does not hide the run's; elsewhere
#: ``ru_maxrss`` growth (a lower bound). Shared by the probe and analysis/plan_accuracy.py.
PEAK_METER = r"""
import resource
def _status(key):
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None
def start_peak():
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        base = _status("VmRSS")
    except OSError:
        base = None
    if base is None:
        return ("maxrss", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    return ("hwm", base)
def peak_since(mark):
    kind, base = mark
    if kind == "hwm":
        return _status("VmHWM") - base
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base
"""

#: Seconds of a training round and of an evaluation: ``timed_rounds(cfg)`` runs ``cfg`` with
#: the start of each round and the end of the run clocked (a wrapper of the loop's round
#: function), evaluated every ``rounds // 3`` rounds (and at the last) where it runs 9 rounds
#: or more, else at its last round only, and returns ``(train, evaluation, first)``: the
#: median duration of its rounds but the first (allocation) and the evaluated ones; the
#: second evaluation's round less that (a warm evaluation: the scoring and the records it
#: writes); what the first evaluation's round takes beyond a warm one (a static graph's
#: spectral summary, the first allocations); ``None`` for what the run cannot tell.
#: ``round_seconds(cfg)`` is ``train``. At one torch thread the clock is the process's CPU
#: time (what a round takes on an idle core: a shared machine's load, which stretches the
#: wall time by whatever the other processes take, is left out), else the wall time; on a
#: GPU, the wall time after ``torch.cuda.synchronize()`` (its kernels run asynchronously). Shared
#: by the probe and analysis/plan_scale.py.
ROUND_CLOCK = r"""
import time
import torch as _torch
import topofl.engine.loop as _loop
from topofl import config as _config
_stamps = []
_round_of = _loop._round
def _clock():
    if _torch.cuda.is_initialized():  # a GPU's work is asynchronous: wait for it, wall clock
        _torch.cuda.synchronize()
        return time.perf_counter()
    return time.process_time() if _torch.get_num_threads() == 1 else time.perf_counter()
def _clocked(loop, t):
    _stamps.append(_clock())
    return _round_of(loop, t)
_loop._round = _clocked
def timed_rounds(run_cfg):
    rounds = int(run_cfg["rounds"])
    every = rounds // 3 if rounds >= 9 else rounds
    _stamps.clear()
    _config.execute({**run_cfg, "eval_every": every})
    _stamps.append(_clock())
    dur = [b - a for a, b in zip(_stamps, _stamps[1:])]
    evaluated = [t for t in range(rounds) if (t + 1) % every == 0 or t == rounds - 1]
    d = sorted(dur[t] for t in range(1, rounds) if t not in evaluated)
    if len(dur) != rounds or not d:
        return None, None, None
    train = d[len(d) // 2]
    if len(evaluated) < 3:
        return train, None, None
    warm = max(0.0, dur[evaluated[1]] - train)
    return train, warm, max(0.0, dur[evaluated[0]] - train - warm)
def round_seconds(run_cfg):
    return timed_rounds(run_cfg)[0]
"""


def probe_rounds(n: int) -> int:
    """Rounds of a timed run at ``n`` clients: about 8,192 client-rounds, 10 at least."""
    return 2 + max(8, 8192 // n)


_PROBE = PEAK_METER + ROUND_CLOCK + r"""
import json, sys
import torch
import topofl
torch.set_num_threads(int(sys.argv[2]))
cfg = json.loads(sys.argv[1])
from topofl._utils.userimports import load_imports
load_imports(cfg.get("imports"))  # the user's modules, before the meter starts
out = {"probe": [], "baseline": _status("VmRSS")}  # the interpreter and its imports
mark = start_peak()
for n, data, rounds in json.loads(sys.argv[3]):
    run = {**cfg, "n_clients": n, "data": data}
    if rounds:
        spr, ev, first = timed_rounds({**run, "rounds": rounds})
    else:
        _config.execute({**run, "rounds": 1})
        spr = ev = first = None
    out["probe"].append([n, peak_since(mark), spr, ev, first])
print(json.dumps(out))
"""


def _probe(cfg: Mapping[str, Any], ns: list[tuple[int, Any, int]],
           timeout: float | None = None) -> dict[str, Any]:
    """Run the config in a fresh interpreter at each ``(n, data, rounds)`` of ``ns`` (in
    order): the peak memory growth after its run at that ``n`` and, with ``rounds``, its
    seconds a training round over that many rounds (else one round, untimed). The child ends
    with this process and imports nothing from the current directory but the config's own
    ``imports`` (:func:`topofl._utils.processes.child_command`): a plan stopped by a timeout or a
    SIGKILL leaves no probe running, and a ``json.py`` beside the config is not imported.

    Raises
    ------
    topofl.exceptions.ConfigError
        When the run refused the config (its ``ValueError`` or ``TypeError``, in one line).
    ProbeError
        When it failed otherwise (its last line), or did not end within ``timeout`` seconds
        (then it is stopped).
    """
    run_cfg = {**cfg, "records_path": None, "checkpoint_every": 0, "progress": False}
    run_cfg.pop("checkpoint_path", None)
    threads = str(torch.get_num_threads())
    sizes = [m for m, _, _ in ns]
    try:
        proc = subprocess.run(  # a child that ends with this process, however it is stopped
            child_command(_PROBE, json.dumps(run_cfg), threads, json.dumps(ns)),
            capture_output=True, text=True, env={**os.environ, "TOPOFL_TRACEBACK": "1"},
            check=False, timeout=timeout)
    except subprocess.TimeoutExpired:  # the child is killed and waited for by run()
        timed = [m for m, _, r in ns if r]
        what = "one round at each size" + (f", then a few timed rounds at n = {timed}"
                                            if timed else "")
        raise ProbeError(
            f"the plan's probe run of n = {sizes} clients ({what}) did not end within "
            f"{timeout:g} s, so it was stopped: a round of this config is that slow here (its "
            "local_steps or local_epochs, its model or data); plan a smaller setting, or give "
            "the probe more time (topofl plan --probe-timeout SECONDS, "
            "make_plan(probe_timeout=...))") from None
    if proc.returncode:
        tail = (proc.stderr.strip().splitlines()[-1:] or ["no output"])[0]
        name, _, msg = tail.partition(": ")
        if name.rpartition(".")[2] in _CONFIG_ERRORS:
            raise ConfigError(f"{msg} (the plan's probe run of n = {sizes} clients)")
        raise ProbeError(f"the plan's probe run of n = {sizes} clients failed: {tail}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


#: Exceptions of a probe run that mean the config was refused (reported as a ConfigError).
_CONFIG_ERRORS = frozenset({"ValueError", "TypeError", "ConfigError", "ConfigTypeError",
                            "InsufficientMemoryError", "NotConnectedError", "KeyError"})


