"""``topofl plan``: how much memory and time a run needs, before it runs.

A plan is built from a config, checked by the one front door (:func:`topofl.config.resolve`,
i.e. :func:`topofl.api.prepare`), without training:

* **counted parts** (bytes, from the resolved config): ``parameters`` (``n x P x dtype
  bytes``, the flat ``[n, P]`` buffer :attr:`State.x <topofl.engine.State.x>`),
  ``optimizer`` (the momentum buffers, where the algorithm keeps them), ``algorithm`` (the
  algorithm's own record, :attr:`State.own <topofl.engine.State.own>`, and push-sum weights:
  the state ``algorithm.init`` builds for 2 clients, scaled per client), ``gossip`` (the
  mixer's scratch tile and the mixing matrix), ``gradients`` (the local step's gradient
  rows and mini-batch buffers: one streamed block of clients,
  :func:`topofl.engine.stream_rows`), ``data`` (every client's samples in one tensor,
  :class:`~topofl.data.FederatedData`, plus the dataset arrays it was built from) and
  ``evaluation`` (one padded ``[n, largest local test set]`` batch and its logits);
* **runtime** (bytes, measured): what the process needs besides them (code imported by the
  run, autograd and kernel workspaces, the records): in a fresh subprocess, the peak resident
  memory above the resident size after importing topofl and torch (:data:`PEAK_METER`) after
  one round of the config at
  ``n = 2`` and then at ``n = min(n, 64)`` clients, less the counted parts at those ``n``; a
  constant plus a per-client slope (over the clients of one streamed block) fitted to the two;
* **seconds per round**: the same subprocess runs the config itself for 1 and for 3 rounds
  and reports (time of 3 - time of 1) / 2, so that set-up and the final evaluation cancel.

``peak_bytes`` is the sum of the parts; ``max_clients`` the largest ``n`` whose predicted peak
fits in :func:`topofl._validation.available_memory`; a plan that does not fit is refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from topofl import config as config_mod
from topofl import topologies
from topofl._validation import _fmt_bytes, available_memory
from topofl.data import load
from topofl.data.federated import FederatedData, federate
from topofl.engine import ParamLayout, stream_rows, toy_services
from topofl.engine.gossip import Mixer
from topofl.models import build_model

__all__ = ["Plan", "counted_parts", "make_plan", "PlanError", "PARTS", "PROBE_N"]

#: The parts of a plan's peak, in the order they are reported.
PARTS = ("parameters", "optimizer", "algorithm", "gossip", "gradients", "data", "evaluation",
         "runtime")

#: The numbers of clients of the runtime probe (the second capped by the plan's ``n``).
PROBE_N = (2, 64)

#: The mixer's default scratch tile (its columns hold about this many bytes).
_TILE_BYTES: int = (Mixer.__init__.__kwdefaults__ or {}).get("tile_bytes", 1 << 20)

_STATE_N = 2  # clients of the state built to count the algorithm's per-client tensors


class PlanError(RuntimeError):
    """A plan that does not fit in the memory this machine has (``topofl plan`` exits 1)."""


@dataclass(frozen=True)
class Shapes:
    """What the counted parts depend on, read from the resolved config without training."""

    n: int
    num_params: int
    dtype_bytes: int
    sample_bytes: int
    num_classes: int
    batch_size: int
    input_shape: tuple[int, ...]  # of one sample (the local step's blocks depend on it)
    per_client_state: Mapping[str, int]  # bytes per client of State.tensors() by part
    dataset_bytes: int  # the source arrays of the dataset (numpy), held while data is built
    data_bytes: int  # FederatedData's x and y (every split, every client)
    longest_test: int  # the largest local test set (evaluation's padded batch)
    w_row_nnz: float  # non-zeros per row of the mixing matrix (0: no graph)


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
                 f"peak memory: {_fmt_bytes(self.peak_bytes)} ({self.peak_bytes:,} bytes)"]
        lines += [f"    {k}: {_fmt_bytes(v)}" for k, v in self.parts.items()]
        if self.seconds_per_round is not None:
            lines.append(f"seconds per round: {self.seconds_per_round:.4g}")
        avail = "unknown" if self.available_bytes is None else _fmt_bytes(self.available_bytes)
        lines.append(f"available memory: {avail}; largest n that fits: {self.max_clients}")
        return "\n".join(lines)


def _state_parts(algorithm: Any, layout: ParamLayout, dtype: torch.dtype) -> dict[str, int]:
    """Bytes per client of the state ``algorithm.init`` builds, by part."""
    n = _STATE_N
    ctx = toy_services(n, layout=layout, dtype=dtype)
    state = algorithm.init(torch.zeros(n, layout.num_params, dtype=dtype), ctx)
    out = {"parameters": 0, "optimizer": 0, "algorithm": 0}
    for name, t in state.tensors().items():
        part = ("parameters" if name == "x" else "optimizer" if name == "momentum"
                else "algorithm")
        per = t.numel() * t.element_size()
        out[part] += per // n if t.dim() and t.shape[0] == n else 0
    return out


def shapes(resolved: config_mod.Resolved, *, n: int | None = None) -> Shapes:
    """The sizes the counted parts need, from a resolved config (data built, nothing trained).

    With ``n``, the data is federated over ``n`` clients instead of the config's.
    """
    cfg, prepared = resolved.config, resolved.prepared
    n = int(cfg["n_clients"]) if n is None else n
    dtype = torch.float64 if prepared.run.dtype == "float64" else torch.float32
    ds = load(cfg["data"])
    dataset_bytes = sum(int(a.nbytes) for a in (ds.x_train, ds.y_train, ds.x_test, ds.y_test)
                        if a is not None)
    data = federate(ds, cfg["partition"], n, seed=cfg["seed"],
                    **dict(cfg["partition_params"] or {}))
    model = build_model(cfg["model"], tuple(data.input_shape), int(data.num_classes),
                        seed=cfg["seed"], **dict(cfg["model_params"] or {}))
    layout = ParamLayout.from_model(model)
    bsz = int(prepared.run.batch_size)
    return Shapes(n=n, num_params=layout.num_params, dtype_bytes=dtype.itemsize,
                  sample_bytes=4 * int(np.prod(data.input_shape)),
                  num_classes=int(data.num_classes), batch_size=bsz,
                  input_shape=tuple(data.input_shape), w_row_nnz=_row_nnz(cfg, data),
                  per_client_state=_state_parts(prepared.algorithm, layout, dtype),
                  dataset_bytes=dataset_bytes, data_bytes=_data_bytes(data),
                  longest_test=int(max(data.sizes("test").max(initial=0),
                                       data.sizes("val").max(initial=0))))


def _row_nnz(cfg: Mapping[str, Any], data: FederatedData) -> float:
    """Non-zeros per row of the config's mixing matrix, built for ``data``'s clients (a
    time-varying graph: its first round's)."""
    if not isinstance(cfg["topology"], str):
        return 0.0
    topo: Any = topologies.build(cfg["topology"], seed=cfg["seed"], n=data.num_clients,
                                 label_distributions=data.label_distributions)
    W = topo.W if hasattr(topo, "W") else topo.at(0).W
    nnz = W.nnz if hasattr(W, "nnz") else int(np.count_nonzero(np.asarray(W)))
    return float(nnz) / max(1, data.num_clients)


def _data_bytes(data: FederatedData) -> int:
    return int(data.x.numel() * data.x.element_size() + data.y.numel() * data.y.element_size())


def _rows(s: Shapes, n: int) -> int:
    """Clients of one streamed block of the local step at ``n`` clients (on the CPU)."""
    return stream_rows(n, s.batch_size, s.input_shape, torch.device("cpu"))


def counted_parts(s: Shapes, n: int | None = None) -> dict[str, int]:
    """The counted parts (bytes) for ``n`` clients (default ``s.n``); data as built for
    ``s.n`` (its size depends on the dataset and the partition, not on ``n``).

    Examples
    --------
    >>> s = Shapes(n=100, num_params=650, dtype_bytes=4, sample_bytes=256, num_classes=10,
    ...            batch_size=16, input_shape=(1, 8, 8), per_client_state={"parameters": 2600,
    ...            "optimizer": 0, "algorithm": 0}, dataset_bytes=0, data_bytes=0,
    ...            longest_test=4, w_row_nnz=3.0)
    >>> counted_parts(s)["parameters"] == 100 * 650 * 4
    True
    """
    n = s.n if n is None else n
    rows = _rows(s, n)
    st = s.per_client_state
    tile = max(32, _TILE_BYTES // max(1, n * s.dtype_bytes))  # the mixer scratch's columns
    nnz = min(float(n), s.w_row_nnz) * n  # W: dense for n <= 8, else CSR (value + column)
    w_bytes = n * n * s.dtype_bytes if n <= 8 else int(nnz * (s.dtype_bytes + 8) + 8 * (n + 1))
    gossip = (min(n * s.num_params, n * tile) * s.dtype_bytes + w_bytes) if s.w_row_nnz else 0
    grads = rows * (s.num_params * s.dtype_bytes + s.batch_size * (s.sample_bytes + 8))
    evaluation = n * s.longest_test * (s.sample_bytes + 4 * s.num_classes + 1)
    return {"parameters": n * st["parameters"], "optimizer": n * st["optimizer"],
            "algorithm": n * st["algorithm"], "gossip": gossip, "gradients": grads,
            "data": s.data_bytes + s.dataset_bytes, "evaluation": evaluation}


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
    ``n`` of ``ns`` (in order), and the time per round of the config itself."""
    run_cfg = {**cfg, "records_path": None, "checkpoint_every": 0, "progress": False}
    run_cfg.pop("checkpoint_path", None)
    threads = str(torch.get_num_threads())
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(run_cfg), threads, json.dumps(ns),
         "1" if timed else "0"],
        capture_output=True, text=True, env={**os.environ, "TOPOFL_TRACEBACK": "1"},
        check=False)
    if proc.returncode:
        tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"the plan's probe run failed: {tail[0]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _max_clients(s: Shapes, runtime: tuple[float, float], available: int | None) -> int | None:
    """Largest ``n`` whose predicted peak fits (bisection on the monotone prediction)."""
    if available is None:
        return None

    def peak(n: int) -> float:
        return sum(counted_parts(s, n).values()) + runtime[0] + runtime[1] * _rows(s, n)

    if peak(1) > available:
        return 0
    lo, hi = 1, 2
    while peak(hi) <= available and hi < 1 << 40:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if peak(mid) <= available else (lo, mid)
    return lo


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
        Measure the runtime part in a subprocess (else it is 0).
    available : int or None
        Bytes available (default: :func:`~topofl._validation.available_memory`).

    Raises
    ------
    PlanError
        When the counted parts alone, or the whole predicted peak, exceed the memory
        available: nothing is run (only the state of 2 clients is built) in the first case.
    """
    resolved = config_mod.resolve(cfg)
    n = int(resolved.config["n_clients"])
    avail = available_memory() if available == -1 else available
    small = min(n, PROBE_N[1])
    s_small = shapes(resolved, n=small)  # the data of a few clients: cheap at any n
    if avail is not None:  # refuse before federating the data over n clients
        state = sum(s_small.per_client_state.values()) * n
        if state > avail:
            raise PlanError(_refusal(n, state, avail, "the per-client state alone"))
    s = shapes(resolved) if n != small else s_small
    runtime = (0.0, 0.0)
    spr: float | None = None
    if probe or timed:
        ns = sorted({min(n, PROBE_N[0]), small})
        got = _probe(resolved.config, ns, timed)
        spr = got["seconds_per_round"]
        if probe:
            pts = [(m, grow - sum(counted_parts(shapes(resolved, n=m)).values()))
                   for m, grow in got["probe"]]
            (n1, r1), (n2, r2) = pts[0], pts[-1]
            slope = max(0.0, (r2 - r1) / (_rows(s, n2) - _rows(s, n1))) if n2 > n1 else 0.0
            runtime = (max(0.0, r1 - slope * _rows(s, n1)), slope)
    parts = counted_parts(s)
    parts["runtime"] = int(round(runtime[0] + runtime[1] * _rows(s, n)))
    plan = Plan(n_clients=n, num_params=s.num_params, parts=parts, seconds_per_round=spr,
                available_bytes=avail, max_clients=_max_clients(s, runtime, avail),
                runtime_fit={"constant_bytes": runtime[0], "bytes_per_client": runtime[1]})
    if avail is not None and plan.peak_bytes > avail:
        raise PlanError(_refusal(n, plan.peak_bytes, avail, "the run"))
    return plan


def _refusal(n: int, need: float, have: int, what: str) -> str:
    return (f"{n} clients do not fit: {what} needs {_fmt_bytes(need)} ({int(need):,} bytes), "
            f"{_fmt_bytes(have)} ({have:,} bytes) available")
