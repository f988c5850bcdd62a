"""``topofl plan``: how much memory and time a run needs, before it runs; and the memory
model ``topofl.run``, sweeps, stacks and ``topofl bench`` refuse a run by.

A plan is built from a config, checked by the one front door (:func:`topofl.config.resolve`,
i.e. :func:`topofl.api.prepare`), without training:

* **counted parts** (bytes, :func:`counted_parts` of the run's :func:`run_shapes`): the state
  ``algorithm.init`` builds for the run's ``n`` clients, counted on the ``meta`` device
  (``parameters``: the flat ``[n, P]`` buffer :attr:`State.x <topofl.engine.State.x>`;
  ``optimizer``: the momentum buffers; ``algorithm``: the algorithm's own record and push-sum
  weights), ``gossip`` (the topology's ``W``, the mixer's copy and scratch tile),
  ``gradients`` (the local step's buffers and temporaries: one streamed block of clients,
  :func:`topofl.engine.local.stream_rows`), ``data`` (every client's samples in one tensor,
  :class:`~topofl.data.FederatedData`, their indices; the dataset's loading and splitting
  when that is the larger peak), ``evaluation`` (its largest pass, or the consensus
  distance's two ``[n, P]`` temporaries), ``spectral`` (the summary of a static graph) and
  ``records`` (the per-client rows kept in memory);
* **runtime** (bytes): what the process needs besides them (code imported by the run, the
  allocator's arenas, small per-client objects). Measured by a probe: in a fresh subprocess,
  the peak resident memory above the resident size after importing topofl and torch
  (:data:`PEAK_METER`) after one round of the config at the fewest clients its algorithm
  accepts (2, or Teleportation's ``k``) and then at ``n = min(n, 64)`` clients, less the
  counted parts at those ``n``; a constant plus a per-client slope fitted to the two. Without
  the probe (and in the checks of :func:`topofl.run`): :data:`RUNTIME_BYTES` and
  :data:`CLIENT_BYTES` a client;
* **seconds per round**: the same subprocess runs the config itself for 1 and for 3 rounds
  and reports (time of 3 - time of 1) / 2, so that set-up and the final evaluation cancel.

``peak_bytes`` is the sum of the parts; ``max_clients`` the largest ``n`` whose predicted peak
fits in :func:`topofl._validation.memory_limit`; a plan that does not fit is refused.
``analysis/memory_model.md`` compares the static estimate with measured peaks.

The refusal (:func:`check_run`, :func:`check_stack`, :func:`check_before_load`,
:func:`check_fits`) raises :class:`~topofl.exceptions.InsufficientMemoryError`, a
``ValueError`` naming the estimate, the limit and where it comes from, and the largest ``n``
that fits; the environment variable ``TOPOFL_MEMORY_LIMIT`` (bytes) replaces the limit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from topofl import config as config_mod
from topofl import topologies
from topofl._processes import orphan_guard
from topofl._validation import check_device, fmt_bytes, memory_limit
from topofl.data import load
from topofl.data.federated import federate
from topofl.engine import ParamLayout, toy_services
from topofl.engine.config import DTYPES
from topofl.engine.evaluation import check_eval_val
from topofl.exceptions import ConfigError, InsufficientMemoryError
from topofl.memory import (
    CLIENT_BYTES,
    PARTS,
    ROW_BYTES,
    RUNTIME_BYTES,
    Shapes,
    _check_batch_memory,
    _refusal,
    activation_bytes,
    check_before_load,
    check_fits,
    check_run,
    check_stack,
    counted_parts,
    estimate,
    largest_n,
    max_clients,
    run_shapes,
    transients,
)
from topofl.models import build_model

__all__ = ["Plan", "Shapes", "counted_parts", "make_plan", "max_clients", "run_shapes",
           "activation_bytes", "PlanError", "ProbeError", "PARTS", "PROBE_N", "RUNTIME_BYTES",
           "CLIENT_BYTES", "ROW_BYTES", "estimate", "largest_n", "check_fits", "check_run",
           "check_stack", "check_before_load", "transients", "InsufficientMemoryError"]

#: The numbers of clients of the runtime probe (the second capped by the plan's ``n``).
PROBE_N = (2, 64)



class PlanError(RuntimeError):
    """A plan that does not fit in the memory this machine has (``topofl plan`` exits 1)."""


class ProbeError(RuntimeError):
    """The plan's probe run (a subprocess running the config) failed for a reason that is not
    the config's (``topofl plan`` exits 1 with its last line)."""


@dataclass
class Plan:
    """A run's predicted memory (bytes by part), time per round and the clients that fit.

    Attributes
    ----------
    n_clients, num_params : int
        Clients and parameters per client ``P``.
    parts : dict
        Bytes by part (:data:`PARTS`); they add up to :attr:`peak_bytes`.
    seconds_per_round : float or None
        Measured over real rounds of the config (``None`` when not timed).
    available_bytes : int or None
        :func:`~topofl._validation.available_memory` when the plan was made.
    max_clients : int or None
        The largest ``n`` whose predicted peak fits in ``available_bytes`` (``None``: unknown).
    """

    n_clients: int
    num_params: int
    parts: dict[str, int]
    seconds_per_round: float | None
    available_bytes: int | None
    max_clients: int | None
    runtime_fit: dict[str, float] = field(default_factory=dict)

    @property
    def peak_bytes(self) -> int:
        """The predicted peak: the sum of the parts."""
        return sum(self.parts.values())

    def as_json(self) -> dict[str, Any]:
        """The plan as one JSON object (``peak_bytes``, its parts, ``seconds_per_round``,
        ``max_clients`` ...)."""
        return {"peak_bytes": self.peak_bytes, "parts": dict(self.parts),
                "n_clients": self.n_clients, "num_params": self.num_params,
                "seconds_per_round": self.seconds_per_round,
                "available_bytes": self.available_bytes, "max_clients": self.max_clients,
                "runtime_fit": dict(self.runtime_fit)}

    def summary(self) -> str:
        """The plan as a few lines of text."""
        lines = [f"plan: {self.n_clients} clients x {self.num_params:,} parameters",
                 f"peak memory: {fmt_bytes(self.peak_bytes)} ({self.peak_bytes:,} bytes)"]
        lines += [f"    {k}: {fmt_bytes(v)}" for k, v in self.parts.items()]
        if self.seconds_per_round is not None:
            lines.append(f"seconds per round: {self.seconds_per_round:.4g}")
        avail = "unknown" if self.available_bytes is None else fmt_bytes(self.available_bytes)
        lines.append(f"available memory: {avail}; largest n that fits: {self.max_clients}")
        return "\n".join(lines)


def shapes(resolved: config_mod.Resolved, *, n: int | None = None) -> Shapes:
    """The sizes the counted parts need, from a resolved config (data built, nothing trained).

    With ``n``, the data is federated over ``n`` clients instead of the config's.
    """
    cfg, prepared = resolved.config, resolved.prepared
    n = int(cfg["n_clients"]) if n is None else n
    ds = load(cfg["data"])
    data = federate(ds, cfg["partition"], n, seed=cfg["seed"],
                    **dict(cfg["partition_params"] or {}))
    check_eval_val(prepared.run, data)  # what a run of the config refuses, before it starts
    _check_batch_memory(prepared.run.batch_size, data)
    model = build_model(cfg["model"], tuple(data.input_shape), int(data.num_classes),
                        seed=cfg["seed"], **dict(cfg["model_params"] or {}))
    topo = None
    if isinstance(cfg["topology"], str) and prepared.algorithm.uses_topology:
        topo = topologies.build(cfg["topology"], seed=cfg["seed"], n=data.num_clients,
                                label_distributions=data.label_distributions)
    return run_shapes(prepared, model=model, data=data, dataset=ds, topology=topo)


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

_PROBE = PEAK_METER + r"""
import json, sys, time
import torch
import topofl
from topofl import config
torch.set_num_threads(int(sys.argv[2]))
cfg = json.loads(sys.argv[1])
from topofl._userimports import load_imports
load_imports(cfg.get("imports"))  # the user's modules, before the meter starts
mark = start_peak()
out = {"probe": []}
for n in json.loads(sys.argv[3]):
    config.execute({**cfg, "n_clients": n, "rounds": 1})
    out["probe"].append([n, peak_since(mark)])
out["seconds_per_round"] = None
if sys.argv[4] == "1":
    times = {1: [], 3: []}
    for rounds in (1, 3, 1, 3):  # the faster of two: a shared machine's load only slows
        t0 = time.perf_counter()
        config.execute({**cfg, "rounds": rounds})
        times[rounds].append(time.perf_counter() - t0)
    one, three = min(times[1]), min(times[3])
    # two rounds more, less the set-up; never below zero (on a loaded machine the 1-round run
    # can be the slower): then a third of the 3-round run, which bounds it from above
    out["seconds_per_round"] = (three - one) / 2 if three > one else three / 3
print(json.dumps(out))
"""


def _probe(cfg: Mapping[str, Any], ns: list[int], timed: bool) -> dict[str, Any]:
    """Run the config in a fresh interpreter: the peak memory growth after one round at each
    ``n`` of ``ns`` (in order), and the time per round of the config itself. The child ends
    with this process (:func:`topofl._processes.orphan_guard`): a plan stopped by a timeout
    or a SIGKILL leaves no probe running.

    Raises
    ------
    topofl.exceptions.ConfigError
        When the run refused the config (its ``ValueError`` or ``TypeError``, in one line).
    ProbeError
        When it failed otherwise (its last line).
    """
    run_cfg = {**cfg, "records_path": None, "checkpoint_every": 0, "progress": False}
    run_cfg.pop("checkpoint_path", None)
    threads = str(torch.get_num_threads())
    proc = subprocess.run(  # a child that ends with this process, however it is stopped
        [sys.executable, "-c", orphan_guard() + _PROBE, json.dumps(run_cfg), threads,
         json.dumps(ns), "1" if timed else "0"],
        capture_output=True, text=True, env={**os.environ, "TOPOFL_TRACEBACK": "1"},
        check=False)
    if proc.returncode:
        tail = (proc.stderr.strip().splitlines()[-1:] or ["no output"])[0]
        name, _, msg = tail.partition(": ")
        if name.rpartition(".")[2] in _CONFIG_ERRORS:
            raise ConfigError(f"{msg} (the plan's probe run of n = {ns} clients)")
        raise ProbeError(f"the plan's probe run of n = {ns} clients failed: {tail}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


#: Exceptions of a probe run that mean the config was refused (reported as a ConfigError).
_CONFIG_ERRORS = frozenset({"ValueError", "TypeError", "ConfigError", "ConfigTypeError",
                            "InsufficientMemoryError", "NotConnectedError", "KeyError"})


def _min_clients(prepared: Any, resolved: config_mod.Resolved) -> int:
    """The fewest clients (2, 4, ... up to 64) the algorithm's ``init`` accepts (Teleportation
    needs ``n >= k``): the size of the plan's smallest probe."""
    cfg = resolved.config
    ds = load(cfg["data"])
    model = build_model(cfg["model"], tuple(ds.input_shape), int(ds.num_classes),
                        seed=cfg["seed"], **dict(cfg["model_params"] or {}))
    layout = ParamLayout.from_model(model)
    dtype = DTYPES[prepared.run.dtype]
    n = int(cfg["n_clients"])
    m = min(n, 2)
    while m < min(n, 64):
        ctx = toy_services(m, layout=layout, dtype=dtype,
                           train_sizes=torch.ones(m, dtype=torch.int64))
        try:
            prepared.algorithm.init(torch.zeros(m, layout.num_params, dtype=dtype), ctx)
            return m
        except ValueError:
            m = min(n, 64, 2 * m)
    return m


def make_plan(cfg: Mapping[str, Any], *, timed: bool = True, probe: bool = True,
              available: int | None = -1) -> Plan:
    """Plan a config: predicted peak memory by part, seconds per round, the clients that fit.

    Parameters
    ----------
    cfg : mapping
        A run config (what ``topofl run`` reads).
    timed : bool, default True
        Time 1 and 3 rounds of the config itself (seconds per round).
    probe : bool, default True
        Measure the runtime part in a subprocess (else the static estimate's:
        :data:`RUNTIME_BYTES` and :data:`CLIENT_BYTES` a client).
    available : int or None
        Bytes available (default: :func:`~topofl._validation.memory_limit` on the config's
        device).

    Raises
    ------
    topofl.exceptions.ConfigError
        A ``ValueError``: what a run of the config would refuse before it starts (a device
        that is not here, ``eval_val`` without validation splits, a batch that cannot fit ...),
        found before anything is probed.
    PlanError
        When the counted parts alone, or the whole predicted peak, exceed the memory
        available: nothing is run (only the data of a few clients is built) in the first case.
    """
    resolved = config_mod.resolve(cfg)
    prepared = resolved.prepared
    n = int(resolved.config["n_clients"])
    if "device" in prepared.settings:  # as a run checks it, before probing anything
        try:
            check_device(prepared.settings["device"])
        except (TypeError, ValueError) as exc:
            raise ConfigError(str(exc)) from None
    avail = memory_limit(prepared.run.device)[0] if available == -1 else available
    first = _min_clients(prepared, resolved)
    small = max(first, min(n, PROBE_N[1]))
    s_small = shapes(resolved, n=small)  # the data of a few clients: cheap at any n
    if avail is not None:  # refuse before federating the data over n clients
        state = sum(s_small.per_client_state.values()) * n
        if state > avail:
            raise PlanError(_refusal(n, state, avail, "the per-client state alone",
                                     max_clients(s_small, avail, (0.0, 0.0))))
    s = shapes(resolved) if n != small else s_small
    runtime: tuple[float, float] | None = None
    spr: float | None = None
    if probe or timed:
        ns = sorted({first, small})
        got = _probe(resolved.config, ns, timed)
        spr = got["seconds_per_round"]
        if probe:
            pts = [(m, grow - sum(counted_parts(replace(shapes(resolved, n=m),
                                                        runtime=False)).values()))
                   for m, grow in got["probe"]]
            (n1, r1), (n2, r2) = pts[0], pts[-1]
            slope = max(0.0, (r2 - r1) / (n2 - n1)) if n2 > n1 else 0.0
            runtime = (max(0.0, r1 - slope * n1), slope)
    parts = counted_parts(replace(s, runtime=False))
    if runtime is None:
        parts["runtime"] = RUNTIME_BYTES + CLIENT_BYTES * n
        fit = {"constant_bytes": float(RUNTIME_BYTES), "bytes_per_client": float(CLIENT_BYTES)}
    else:
        parts["runtime"] = int(round(runtime[0] + runtime[1] * n))
        fit = {"constant_bytes": runtime[0], "bytes_per_client": runtime[1]}
    plan = Plan(n_clients=n, num_params=s.num_params, parts=parts, seconds_per_round=spr,
                available_bytes=avail, max_clients=max_clients(s, avail, runtime),
                runtime_fit=fit)
    if avail is not None and plan.peak_bytes > avail:
        raise PlanError(_refusal(n, plan.peak_bytes, avail, "the run", plan.max_clients))
    return plan
