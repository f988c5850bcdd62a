"""``topofl bench``: how fast the engine trains, and in how much memory, in the field's units.

For each model and number of clients ``n`` this module times, on synthetic data of the model's
input shape (:func:`synthetic_data`: 50 samples per client, 10 classes, an iid split) and in
float32, the parts of a D-SGD round as :func:`topofl.run` takes them, side by side in one
process, the repetitions interleaved so that the ratios see the same machine:

* **local step**: the executor the engine chooses (``executor="auto"``,
  :func:`topofl.engine.executors.make_executor`) through
  :class:`topofl.engine.local.LocalStepper`, streamed and fused as the round loop does it:
  every client draws its mini-batch of ``batch`` samples, takes the gradient of its own
  weights and its SGD update;
* **shared-weight floor** (:class:`SharedWeightFloor`): ONE ordinary ``nn.Module`` of the same
  model doing forward, backward and ``torch.optim.SGD.step`` on the same ``n x batch`` samples
  (drawn once, beforehand): the same arithmetic without per-client weights. ``local / floor``
  is what per-client weights cost in time;
* **gossip**: one ``X <- W X`` on the flat ``[n, P]`` buffer (:class:`topofl.engine.gossip.Mixer`,
  a random ``10``-regular graph with Metropolis weights, the complete graph for ``n <= 11``),
  against copying a buffer the size of ``X`` (read once, written once: its memory bound).

Reported per row: client-steps per second (``n / local``), samples per second (``n x batch /
local``), the local step and the floor in milliseconds and their ratio, gossip and copy in
milliseconds and their ratio, the peak memory of building the clients and running one round,
and the bytes each client holds (:func:`bytes_per_client`: parameters, optimizer state, the
algorithm's own state and its share of the gossip buffers, counted as :mod:`topofl.workflow.plan`
counts them). On the CPU the peak is measured in a child process with
:data:`topofl.workflow.plan.PEAK_METER`
(the resident-memory high-water mark above the size after importing torch and topofl); on CUDA
it is ``torch.cuda.max_memory_allocated`` in this process.

Examples
--------
>>> out = run_bench(["logistic"], [4], batch=2, rounds=1, memory=False)
>>> row = out["rows"][0]
>>> row["model"], row["n"], row["num_params"], row["bytes_per_client"]["parameters"]
('logistic', 4, 7850, 31400)
>>> to_markdown(out).startswith("# topofl bench")
True
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from topofl import __version__, algorithms, topologies
from topofl._utils.cpu import cpu_kind, cpu_model
from topofl._utils.processes import child_command
from topofl._utils.validation import fmt_bytes, graph_bytes
from topofl.data import Dataset, federate
from topofl.engine import ParamLayout, Round, toy_services
from topofl.engine.executors import loop_on_cpu, make_executor
from topofl.engine.gossip import Mixer
from topofl.engine.layout import init_parameters
from topofl.engine.local import LocalStepper
from topofl.models import MODELS, build_model
from topofl.workflow.memory import (
    Shapes,
    activation_bytes,
    check_fits,
    counted_parts,
    state_bytes,
    state_parts,
)
from topofl.workflow.plan import PEAK_METER

__all__ = ["MODEL_INPUTS", "SharedWeightFloor", "bytes_per_client", "case_parts", "gossip_topology",
           "loadavg", "machine_info", "run_bench", "synthetic_data", "to_markdown", "ROW_KEYS"]

#: The input shape each built-in model is benchmarked on (its papers' data sets: MNIST for the
#: linear models, CIFAR-10 for the 2-D CNNs, MNIST-1D for ``cnn1d``).
MODEL_INPUTS: dict[str, tuple[int, ...]] = {
    "logistic": (784,), "mlp": (784,), "cnn": (3, 32, 32), "gn_lenet": (3, 32, 32),
    "resnet18_gn": (3, 32, 32), "cnn1d": (1, 40)}
SAMPLES_PER_CLIENT = 50
NUM_CLASSES = 10
DEGREE = 10
LR = 0.05

#: The keys of every row of :func:`run_bench`.
ROW_KEYS = ("model", "n", "input_shape", "num_params", "executor", "local_ms", "floor_ms",
            "local_over_floor", "client_steps_per_s", "samples_per_s", "floor_samples_per_s",
            "gossip_ms", "copy_ms", "gossip_over_copy", "peak_bytes", "bytes_per_client")


# ----------------------------------------------------------------------------- machine
def machine_info(device: torch.device | str = "cpu") -> dict[str, str]:
    """The machine a benchmark ran on: CPU model, count and kind (the kernels torch runs; and
    the GPU), versions, threads, date.

    Examples
    --------
    >>> sorted(machine_info())
    ['cpu', 'cpu_kind', 'date', 'numpy', 'python', 'threads', 'topofl', 'torch']
    """
    device = torch.device(device)
    cpu = cpu_model()
    if device.type == "cuda":
        cpu = (f"{torch.cuda.get_device_name(device)} (CUDA {torch.version.cuda}), host: "
               f"{cpu}")
    return {
        "cpu": f"{cpu}, {os.cpu_count()} logical CPUs",
        "cpu_kind": cpu_kind(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "topofl": __version__,
        "threads": str(torch.get_num_threads()),
        "date": datetime.date.today().isoformat(),
    }


def loadavg() -> float:
    """The 1-minute load average of the machine (``nan`` where ``/proc/loadavg`` is absent),
    recorded beside timings taken on a shared machine.

    Examples
    --------
    >>> from topofl.tools.bench import loadavg
    >>> import math
    >>> v = loadavg()
    >>> math.isnan(v) or v >= 0
    True
    """
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except OSError:
        return float("nan")


# ----------------------------------------------------------------------------- data
def synthetic_data(n: int, shape: Sequence[int], *, samples_per_client: int = SAMPLES_PER_CLIENT,
                   seed: int = 0, device: torch.device | str = "cpu") -> Any:
    """``samples_per_client * n`` Gaussian-mixture samples of ``shape``, 10 classes, iid split
    over ``n`` clients (a :class:`~topofl.data.FederatedData` on ``device``).

    Built in float32 by blocks (``tf.data.synthetic`` draws in float64, which for 50,000 images
    would double the data's memory while it is built).

    Examples
    --------
    >>> data = synthetic_data(3, (5,), samples_per_client=4)
    >>> data.num_clients, tuple(data.input_shape), int(data.num_classes)
    (3, (5,), 10)
    """
    rng = np.random.default_rng(seed)
    shape = tuple(int(s) for s in shape)
    d = int(np.prod(shape))
    mu = rng.standard_normal((NUM_CLASSES, d), dtype=np.float32)
    mu *= 3.0 / np.linalg.norm(mu, axis=1, keepdims=True)

    def draw(m: int) -> tuple[np.ndarray, np.ndarray]:
        y = rng.permutation(np.arange(m) % NUM_CLASSES).astype(np.int64)
        x = np.empty((m, d), dtype=np.float32)
        for a in range(0, m, 4096):
            b = min(m, a + 4096)
            x[a:b] = mu[y[a:b]] + rng.standard_normal((b - a, d), dtype=np.float32)
        return x.reshape(m, *shape), y

    x_tr, y_tr = draw(samples_per_client * n)
    x_te, y_te = draw(2000)
    ds = Dataset(name="synthetic", x_train=x_tr, y_train=y_tr, x_test=x_te, y_test=y_te,
                 num_classes=NUM_CLASSES, input_shape=shape)
    return federate(ds, "iid", n, seed=seed, device=device)


def gossip_topology(n: int, degree: int = DEGREE) -> Any:
    """The benchmark's graph: a random ``degree``-regular graph (seed 0, Metropolis weights),
    the complete graph when ``n <= degree + 1``.

    Examples
    --------
    >>> gossip_topology(5).n, gossip_topology(100).W.nnz  # 100 x (10 neighbours + itself)
    (5, 1100)
    """
    if n <= degree + 1:
        return topologies.complete(n)
    return topologies.random_regular(n, degree, seed=0)


# ----------------------------------------------------------------------------- memory
def bytes_per_client(num_params: int, n: int, *, state: dict[str, int], row_nnz: float,
                     dtype_bytes: int = 4, device: torch.device | str = "cpu"
                     ) -> dict[str, int]:
    """The bytes one client holds, by part, and their ``total``.

    ``parameters``, ``optimizer`` and ``algorithm`` are the per-client state (``state``: bytes
    per client by part, as :func:`topofl.workflow.memory.state_parts` counts ``algorithm.init``'s
    tensors); ``gossip`` is the mixer's buffers divided among the ``n`` clients, counted as
    :func:`topofl.workflow.memory.counted_parts` counts them (its scratch tile, the mixing matrix
    with ``row_nnz`` non-zeros per row); on CUDA the product ``W @ X`` is written into a new
    ``[n, P]`` buffer, counted instead of the tile.

    Examples
    --------
    Logistic regression on MNIST (``784 x 10 + 10`` float32 parameters), D-SGD without
    momentum, 100 clients on a 10-regular graph:

    >>> b = bytes_per_client(7850, 100, state={"parameters": 7850 * 4, "optimizer": 0,
    ...                      "algorithm": 0}, row_nnz=11.0)
    >>> b["parameters"], b["optimizer"], b["gossip"]
    (31400, 0, 10765)
    >>> b["total"] == b["parameters"] + b["gossip"]
    True
    """
    s = Shapes(n=n, num_params=num_params, dtype_bytes=dtype_bytes, sample_bytes=0,
               num_classes=NUM_CLASSES, batch_size=1, input_shape=(1,),
               per_client_state=state, dataset_bytes=0, data_bytes=0, longest_test=0,
               w_row_nnz=row_nnz)
    parts = counted_parts(s)
    gossip = parts["gossip"]
    if torch.device(device).type != "cpu" and row_nnz:  # W alone, and a new [n, P] product
        gossip = (counted_parts(dataclasses.replace(s, num_params=0))["gossip"]
                  + n * num_params * dtype_bytes)
    out = {"parameters": parts["parameters"] // n, "optimizer": parts["optimizer"] // n,
           "algorithm": parts["algorithm"] // n, "gossip": math.ceil(gossip / n)}
    out["total"] = sum(out.values())
    return out


def case_parts(model_name: str, n: int, batch: int, *, shape: Sequence[int],
               hidden: Sequence[int] | None = None, device: torch.device | str = "cpu"
               ) -> tuple[Shapes, dict[str, int]]:
    """The estimated peak memory of one row of :func:`run_bench`, by part, before anything is
    built: the D-SGD state, the local step and gossip as
    :func:`topofl.workflow.memory.counted_parts`
    counts them, the synthetic data and the dataset it is split from, building the random
    regular graph (:func:`topofl._utils.validation.graph_bytes`), the buffer the copy writes into
    (``copy``) and the shared-weight floor (``floor``: its ``n x batch`` samples, their
    activations and the model's gradients).

    Examples
    --------
    >>> s, parts = case_parts("logistic", 100, 16, shape=(784,))
    >>> parts["parameters"] == parts["copy"] == 100 * 7850 * 4
    True
    """
    shape = tuple(int(v) for v in shape)
    kw: dict[str, Any] = {} if hidden is None else {"hidden": tuple(hidden)}
    model = build_model(model_name, shape, NUM_CLASSES, seed=0, **kw)
    layout = ParamLayout.from_model(model)
    dev = torch.device(device)
    sample = 4 * int(np.prod(shape)) + 8
    train, test = SAMPLES_PER_CLIENT * n, 2000
    loop = dev.type == "cpu" and loop_on_cpu(model)
    state = state_bytes(algorithms.dsgd(lr=LR), layout, torch.float32, n)
    act = activation_bytes(model, shape)
    s = Shapes(n=n, num_params=layout.num_params, dtype_bytes=4, sample_bytes=sample - 8,
               num_classes=NUM_CLASSES, batch_size=batch, input_shape=shape,
               per_client_state={k: -(-v // n) for k, v in state.items()},
               dataset_bytes=(train + test) * sample, data_bytes=(train + 2 * test) * sample,
               longest_test=0, w_row_nnz=float(min(n, DEGREE + 1)), activation_bytes=act,
               fused=True, streams=not loop, loop_threads=torch.get_num_threads() if loop else 0,
               samples=train + 2 * test, shared_params=0, device=str(dev), runtime=True)
    parts = counted_parts(s)
    parts["evaluation"] = parts["spectral"] = parts["records"] = 0  # the bench has none
    parts["gossip"] += int(graph_bytes(n, n * min(n - 1, DEGREE)))  # building the graph
    parts["copy"] = n * layout.num_params * 4
    parts["floor"] = (n * batch * (sample + 7 * act // 5) + 2 * layout.num_params * 4)
    return s, parts


def _check_memory(models: Sequence[str], ns: Sequence[int], batch: int, device: torch.device,
                  shape: tuple[int, ...] | None, hidden: tuple[int, ...] | None) -> None:
    """Refuse, before anything is built, a row whose estimate (:func:`case_parts`) cannot fit
    in the memory this process may use (:func:`topofl.workflow.memory.check_fits`)."""
    for m in models:
        for n in ns:
            def peak(k: int, m: str = m) -> float:
                return float(sum(case_parts(m, k, batch, shape=shape or MODEL_INPUTS[m],
                                            hidden=hidden, device=device)[1].values()))

            s, parts = case_parts(m, n, batch, shape=shape or MODEL_INPUTS[m], hidden=hidden,
                                  device=device)
            check_fits(f"topofl bench's {m} row (batch {batch:,})", s, parts, peak=peak)


# ----------------------------------------------------------------------------- floor
class SharedWeightFloor:
    """ONE ordinary ``nn.Module`` trained on every client's samples at once: the FLOPs of a
    local step without per-client weights.

    A step is what any training loop does: ``optimizer.zero_grad()``, the mean cross-entropy
    of ``model(x)`` over all ``n x batch`` samples, ``loss.backward()``,
    ``torch.optim.SGD.step()``.

    Parameters
    ----------
    model : torch.nn.Module
        Copied (the original is left untouched).
    x, y : Tensor
        ``[n, batch, *input_shape]`` and ``[n, batch]``: every client's batch; the floor sees
        them as one batch of ``n x batch`` samples.
    lr : float

    Examples
    --------
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(3, 2))
    >>> floor = SharedWeightFloor(model, torch.ones(2, 4, 3), torch.zeros(2, 4, dtype=torch.long))
    >>> tuple(floor.x.shape), floor.step().shape
    ((8, 3), torch.Size([]))
    """

    def __init__(self, model: nn.Module, x: Tensor, y: Tensor, lr: float = LR) -> None:
        self.model = copy.deepcopy(model)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=lr)
        self.x = x.reshape(-1, *x.shape[2:])
        self.y = y.reshape(-1)

    def loss(self) -> Tensor:
        """The mean cross-entropy over all samples (with the autograd graph)."""
        return F.cross_entropy(self.model(self.x), self.y)

    def step(self) -> Tensor:
        """One forward, backward and SGD update; returns the loss before the update."""
        self.opt.zero_grad()
        loss = self.loss()
        loss.backward()  # type: ignore[no-untyped-call]
        self.opt.step()
        return loss.detach()


# ----------------------------------------------------------------------------- one case
class _Case:
    """Everything one (model, n) needs: data, D-SGD state, the engine's local stepper, the
    services with their mixer, the graph, and the floor."""

    def __init__(self, model_name: str, n: int, batch: int, device: torch.device,
                 input_shape: tuple[int, ...] | None = None, floor: bool = True,
                 hidden: tuple[int, ...] | None = None) -> None:
        shape = input_shape or MODEL_INPUTS[model_name]
        self.model_name, self.n, self.batch, self.device = model_name, n, batch, device
        self.shape = tuple(shape)
        self.data = synthetic_data(n, shape, device=device)
        kw: dict[str, Any] = {} if hidden is None else {"hidden": tuple(hidden)}
        model = build_model(model_name, shape, NUM_CLASSES, seed=0, device=device, **kw)
        self.layout = ParamLayout.from_model(model)
        self.algo = algorithms.dsgd(lr=LR)
        self.env = toy_services(n, layout=self.layout, dtype=torch.float32)
        if device.type != "cpu":  # the toy services' mixer works on the CPU
            self.env.mixer = Mixer(device, torch.float32)
        x0 = init_parameters(model, self.layout, n, seed=0, same=True, device=device,
                             dtype=torch.float32)
        self.state = self.algo.init(x0, self.env)
        self.executor = make_executor("auto", model, self.layout, device)
        self.stepper = LocalStepper(self.executor, self.algo, self.data, batch,
                                    self.layout.num_params, torch.float32, check=_finite)
        self.lr = torch.full((n,), LR, device=device)
        self.phase = self.algo.phases[0]
        self.topo = gossip_topology(n)
        self.t = 0
        self.floor = None
        if floor:
            xb, yb = self.data.sample(10**6, 0, batch)  # another round's batches, drawn once
            self.floor = SharedWeightFloor(model, xb, yb)

    def local(self) -> None:
        self.stepper(self.state, Round(self.t), self.env, self.phase, 0, self.lr)
        self.t += 1

    def gossip(self) -> None:
        self.algo.communicate(self.state, Round(self.t, self.topo), self.env)

    def describe(self) -> str:
        """The executor and how the local step runs it (streamed, fused)."""
        ex = self.executor
        label = type(ex).__name__
        if getattr(ex, "linear", None) is not None:
            label += ", closed form"
        threads = getattr(ex, "threads", 1)
        if threads != 1:
            label += f", {torch.get_num_threads() if threads is None else threads} threads"
        if self.stepper.rows < self.n:
            label += f", streamed in blocks of {self.stepper.rows}"
        return label + (", fused update" if self.stepper.fused else "")

    def bytes_per_client(self) -> dict[str, int]:
        state = state_parts(self.algo, self.layout, torch.float32)
        nnz = self.topo.W.nnz / self.n
        return bytes_per_client(self.layout.num_params, self.n, state=state, row_nnz=nnz,
                                device=self.device)


def _finite(loss: Tensor, first: int) -> None:
    """The round loop's check of every block's losses (one synchronisation per block)."""
    if not bool(torch.isfinite(loss).all()):
        raise FloatingPointError(f"a non-finite loss from client {first} on")


def _clock(device: torch.device) -> Callable[[], float]:
    """``time.perf_counter`` after the device's queued work (CUDA runs asynchronously)."""
    if device.type == "cuda":
        def now() -> float:
            torch.cuda.synchronize(device)
            return time.perf_counter()
        return now
    return time.perf_counter


def _time_case(case: _Case, rounds: int) -> dict[str, float]:
    """Median seconds of each part over ``rounds`` interleaved repetitions (after one that is
    not recorded), and the medians of the per-repetition ratios."""
    now = _clock(case.device)
    y = torch.empty_like(case.state.x)
    parts: dict[str, Callable[[], object]] = {
        "local": case.local, "gossip": case.gossip,
        "copy": lambda: y.copy_(case.state.x)}  # right after the gossip, as fresh in cache
    if case.floor is not None:
        parts["floor"] = case.floor.step
    times: dict[str, list[float]] = {k: [] for k in parts}
    for rep in range(rounds + 1):
        for k, fn in parts.items():
            t0 = now()
            fn()
            if rep:
                times[k].append(now() - t0)
    out = {k: statistics.median(v) for k, v in times.items()}
    out["local_over_floor"] = (statistics.median(a / b for a, b in zip(times["local"],
                                                                       times["floor"]))
                               if case.floor is not None else math.nan)
    out["gossip_over_copy"] = statistics.median(a / b for a, b in zip(times["gossip"],
                                                                      times["copy"]))
    return out


# ----------------------------------------------------------------------------- peak memory
_CHILD = r"""
import json, sys
import torch
import topofl.tools.bench as bench
args = json.loads(sys.argv[1])
torch.set_num_threads(args["threads"])  # before the mark: the imports are not the run's
mark = start_peak()
case = bench._Case(args["model"], args["n"], args["batch"], torch.device("cpu"),
                   tuple(args["input_shape"]), floor=False, hidden=args["hidden"])
case.local()
case.gossip()
print(json.dumps({"peak": peak_since(mark)}))
"""


def _peak_bytes(model: str, n: int, batch: int, device: torch.device,
                shape: tuple[int, ...], hidden: tuple[int, ...] | None = None) -> int | None:
    """Peak memory of building the case and running one local step and one gossip step: on
    the CPU in a child process (:data:`topofl.workflow.plan.PEAK_METER`), on CUDA in this one."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
        base = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        case = _Case(model, n, batch, device, shape, floor=False, hidden=hidden)
        case.local()
        case.gossip()
        peak = int(torch.cuda.max_memory_allocated(device)) - base
        del case
        torch.cuda.empty_cache()
        return peak
    args = {"model": model, "n": n, "batch": batch, "input_shape": list(shape),
            "threads": torch.get_num_threads(),
            "hidden": None if hidden is None else list(hidden)}
    # a child that ends with this process, imports this topofl and nothing from the cwd
    proc = subprocess.run(child_command(PEAK_METER + _CHILD, json.dumps(args)),
                          capture_output=True, text=True, check=False)
    if proc.returncode:
        tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"the peak-memory run of {model}, n = {n} failed: {tail[0]}")
    return int(json.loads(proc.stdout.strip().splitlines()[-1])["peak"])


# ----------------------------------------------------------------------------- driver
def _check(models: Sequence[str], ns: Sequence[int], batch: int, rounds: int,
           device: torch.device, hidden: Sequence[int] | None = None) -> None:
    for m in models:
        if m not in MODELS:
            raise ValueError(f"unknown model {m!r}; known: {', '.join(sorted(MODELS))}")
    if hidden is not None:
        if any(m != "mlp" for m in models):
            raise ValueError("hidden (the widths of the hidden layers) is a parameter of "
                             f"mlp only, got models {', '.join(models)}")
        if not len(hidden) or any(isinstance(h, bool) or not isinstance(h, int) or h < 1
                                  for h in hidden):
            raise ValueError(f"hidden must be one or more integers >= 1, got {list(hidden)!r}")
    for n in ns:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be an integer >= 1, got {n!r}")
    if batch < 1 or rounds < 1:
        raise ValueError(f"batch and rounds must be >= 1, got {batch} and {rounds}")
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be cpu or cuda, got {str(device)!r}")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device cuda: torch sees no CUDA device here "
                         "(torch.cuda.is_available() is False); use --device cpu")


def run_bench(models: Sequence[str], ns: Sequence[int], *, batch: int = 16,
              device: torch.device | str = "cpu", rounds: int = 10, memory: bool = True,
              input_shape: Sequence[int] | None = None,
              hidden: Sequence[int] | None = None,
              log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Benchmark every (model, n): one row each (:data:`ROW_KEYS`), with the machine.

    Parameters
    ----------
    models : sequence of str
        Names of :data:`topofl.models.MODELS` (input shapes from :data:`MODEL_INPUTS`).
    ns : sequence of int
        Numbers of clients, each ``>= 1``.
    batch : int, default 16
        Samples per client and local step.
    device : str, default "cpu"
        ``"cpu"`` or ``"cuda"``.
    rounds : int, default 10
        Timed repetitions (each: local step, floor, gossip, copy), after one untimed.
    memory : bool, default True
        Measure the peak memory (on the CPU a child process per row: a few seconds each).
    input_shape : sequence of int, optional
        One sample's shape for every model (default: :data:`MODEL_INPUTS`).
    hidden : sequence of int, optional
        The widths of the hidden layers of ``mlp`` (the only model it may be given with;
        default: the model's own, 200-200). Issue 32's workload is ``input_shape=(40,),
        hidden=(64,), batch=50``.
    log : callable, optional
        Called with a line of progress per row.

    Returns
    -------
    dict
        ``machine`` (:func:`machine_info`), ``settings``, ``load`` (the 1-minute load average
        at the start and the end), ``seconds`` (the whole run) and ``rows``.

    Raises
    ------
    ValueError
        For an unknown model, ``n < 1``, a device other than cpu and cuda, cuda where
        torch sees no GPU, or ``hidden`` with a model other than ``mlp``.
    topofl.exceptions.InsufficientMemoryError
        A ``ValueError``: a row whose estimated peak memory (:func:`case_parts`) exceeds
        what this process may use (:func:`topofl._utils.validation.memory_limit`), refused before
        any row is built; the message names the estimate, the limit and the largest ``n``
        that fits.
    """
    dev = torch.device(device)
    models, ns = list(models), list(ns)
    hid = None if hidden is None else tuple(hidden)
    _check(models, ns, batch, rounds, dev, hid)
    shape = None if input_shape is None else tuple(int(s) for s in input_shape)
    for m in models:
        if shape is None and m not in MODEL_INPUTS:
            raise ValueError(f"model {m!r} has no default input shape: pass input_shape")
    _check_memory(models, ns, batch, dev, shape, hid)  # before any row allocates
    load0, t0 = loadavg(), time.perf_counter()
    rows = []
    for m in models:
        for n in ns:
            case = _Case(m, n, batch, dev, shape, hidden=hid)
            t = _time_case(case, rounds)
            row: dict[str, Any] = {
                "model": m if hid is None else f"{m} {'-'.join(map(str, hid))}",
                "n": n, "input_shape": list(case.shape),
                "num_params": case.layout.num_params, "executor": case.describe(),
                "local_ms": 1e3 * t["local"], "floor_ms": 1e3 * t["floor"],
                "local_over_floor": t["local_over_floor"],
                "client_steps_per_s": n / t["local"],
                "samples_per_s": n * batch / t["local"],
                "floor_samples_per_s": n * batch / t["floor"],
                "gossip_ms": 1e3 * t["gossip"], "copy_ms": 1e3 * t["copy"],
                "gossip_over_copy": t["gossip_over_copy"],
                "peak_bytes": None, "bytes_per_client": case.bytes_per_client()}
            del case
            if memory:
                row["peak_bytes"] = _peak_bytes(m, n, batch, dev, tuple(row["input_shape"]),
                                                hid)
            rows.append(row)
            if log is not None:
                log(f"{m}, n = {n}: local {row['local_ms']:.3g} ms, floor "
                    f"{row['floor_ms']:.3g} ms ({row['local_over_floor']:.2f}x), gossip "
                    f"{row['gossip_ms']:.3g} ms ({row['gossip_over_copy']:.2f}x a copy)")
    return {"machine": machine_info(dev),
            "settings": {"device": str(dev), "batch": batch, "rounds": rounds,
                         "hidden": None if hid is None else list(hid),
                         "dtype": "float32", "samples_per_client": SAMPLES_PER_CLIENT,
                         "degree": DEGREE, "lr": LR, "algorithm": "dsgd"},
            "load": [load0, loadavg()], "seconds": time.perf_counter() - t0, "rows": rows}


# ----------------------------------------------------------------------------- report
def _num(x: float) -> str:
    """A rate or time with 3 significant digits and thousands separators."""
    if not math.isfinite(x):
        return "n/a"
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def to_markdown(result: dict[str, Any], command: str = "topofl bench") -> str:
    """The Markdown report of :func:`run_bench`'s result: a header on the machine, then a
    table of the rows."""
    info, s = result["machine"], result["settings"]
    load = ", ".join(f"{x:.1f}" for x in result["load"])
    lines = [
        "# topofl bench",
        "",
        f"`{command}`, {info['date']}. Machine: {info['cpu']}; Python {info['python']}, "
        f"torch {info['torch']}, numpy {info['numpy']}, topofl {info['topofl']}; "
        f"torch threads: {info['threads']}; device `{s['device']}`, {s['dtype']}. "
        f"1-minute load average at the start and the end: {load} on {os.cpu_count()} CPUs, "
        "other processes included: a load near or above the number of CPUs means the timings "
        f"competed with them. Whole run: {result['seconds']:.0f} s.",
        "",
        f"D-SGD (lr {s['lr']}), batch {s['batch']} per client, synthetic data "
        f"({s['samples_per_client']} samples per client, 10 classes), a random "
        f"{s['degree']}-regular graph (complete for n <= {s['degree'] + 1}). Medians over "
        f"{s['rounds']} interleaved repetitions after one untimed; ratios are medians of the "
        "per-repetition ratios. *local*: the engine's local step (the executor "
        "`executor=\"auto\"` picks, drawing the batches included); *floor*: one shared-weight "
        "`nn.Module` doing forward, backward and SGD step on the same n x batch samples; "
        "*gossip*: `X <- W X` on the `[n, P]` buffer, *copy*: copying a buffer the size of "
        "`X`. *peak*: memory of building the clients and one round (data included); "
        "*bytes/client*: parameters + optimizer state + the client's share of the gossip "
        "buffers.",
        "",
        "| model | n | input | P | executor | client-steps/s | samples/s | local ms | floor ms "
        "| local / floor | gossip ms | copy ms | gossip / copy | peak | bytes/client |",
        "|---|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        peak = "n/a" if r["peak_bytes"] is None else fmt_bytes(r["peak_bytes"])
        lines.append(
            f"| {r['model']} | {r['n']:,} | {'x'.join(map(str, r['input_shape']))} | "
            f"{r['num_params']:,} | {r['executor']} | "
            f"{_num(r['client_steps_per_s'])} | {_num(r['samples_per_s'])} | "
            f"{_num(r['local_ms'])} | {_num(r['floor_ms'])} | "
            f"**{r['local_over_floor']:.2f}x** | {_num(r['gossip_ms'])} | "
            f"{_num(r['copy_ms'])} | **{r['gossip_over_copy']:.2f}x** | {peak} | "
            f"{r['bytes_per_client']['total']:,} |")
    return "\n".join(lines) + "\n"
