"""Benchmark: the CPU floor of the local step and of gossip (issue 32, item 2).

The workload of the issue: 100 clients, batch 50, one torch thread, float32, D-SGD (lr 0.05)
on synthetic data (:func:`topofl.tools.bench.synthetic_data`: 50 samples per client, 10 classes, an
iid split) with MNIST-1D's input size, 40 features:

* ``mlp 40-64-10``: the MLP of the issue (one hidden layer of 64), the batched executor;
* ``logistic``: softmax regression on the 40 features (the closed-form executor path);
* ``cnn1d``: the MNIST-1D CNN on ``(1, 40)`` signals (on the CPU, ``executor="auto"`` ran it
  with the per-client loop until issue 58, and runs it batched since);
* ``gn_lenet``: GN-LeNet on CIFAR-sized ``(3, 32, 32)`` images, 20 clients x 16 samples (a
  quarter of the repetitions: one step of 100 x 50 images would take seconds), which
  ``executor="auto"`` runs with the per-client loop on the CPU.

For each, side by side in one process, repetitions interleaved:

* *local*: the engine's local step as :class:`topofl.engine.local.LocalStepper` takes it in a round
  (drawing every client's batch included), the executor that ``executor="auto"`` picks, fused
  and streamed as the round loop does it;
* *floor*: :class:`topofl.tools.bench.SharedWeightFloor`, ONE ``nn.Module`` of the same model doing
  ``zero_grad``, forward, backward and ``torch.optim.SGD.step`` on the same ``100 x 50``
  samples (drawn once, beforehand): the same arithmetic without per-client weights;
* *gossip*: ``X <- W X`` on the ``[100, P]`` buffer (:class:`topofl.engine.gossip.Mixer`, a random
  10-regular graph with Metropolis weights, :func:`topofl.tools.bench.gossip_topology`), and *copy*:
  ``Y.copy_(X)`` for a buffer the size of ``X`` (its memory bound).

Times are the CPU time of the timing thread (``time.thread_time``): on a shared machine a
wall-clock timer also counts the time the process waits for a core; with one torch thread the
two agree on an idle machine. The wall-clock medians are recorded in the JSON too. Ratios are
medians of the per-repetition ratios.

**Before and after.** ``--baseline DIR`` also measures the code in ``DIR`` (a checkout of the
commit before a change, e.g. ``git worktree add /tmp/base <commit>``): this script runs its
measurement in child processes, ``--runs`` times for each code, alternating (baseline,
current, baseline, ...), and reports for each quantity the median over the runs. The load
average (:func:`topofl.tools.bench.loadavg`) is recorded at the start and the end.

**Where the time goes** (the current code only, in its last child process): a
``torch.profiler`` profile of 20 local steps and 20 floor steps of the MLP (self CPU time per
step of the largest operations), the parts of the local step timed alone (drawing the batches,
the gradient with the fused update), the parts of gossip (the CSR product alone, into a
contiguous buffer, and the copy of ``X`` into the mixer's tiles), two variants that are *not*
used because they change the numbers (each timed side by side with what the engine does, and
checked bit for bit): the log-softmax of the cross-entropy along the classes of ``[m, C, b]``
logits instead of the ``[m b, C]`` rows, and gossip in one tile of the whole width instead of
1 MiB tiles; and both executors on both CNNs (the one ``auto`` picks against the other, with
the largest gradient difference between them).

Run ``python analysis/bench_floor.py --baseline /tmp/base`` (a few minutes; writes
``analysis/bench_floor.md``), ``--quick`` for a short check that writes nothing unless
``--out`` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

N = 100
BATCH = 50
LR = 0.05
INPUT = 40
#: name -> (model, input shape, model keywords, clients, batch, share of the repetitions)
WORKLOADS: dict[str, tuple[str, tuple[int, ...], dict[str, Any], int, int, int]] = {
    "mlp 40-64-10": ("mlp", (INPUT,), {"hidden": (64,)}, N, BATCH, 1),
    "logistic 40-10": ("logistic", (INPUT,), {}, N, BATCH, 1),
    "cnn1d 1x40": ("cnn1d", (1, INPUT), {}, N, BATCH, 1),
    "gn_lenet 3x32x32": ("gn_lenet", (3, 32, 32), {}, 20, 16, 4),
}


# ----------------------------------------------------------------------------- one process
def _case(model_name: str, shape: tuple[int, ...], kw: dict[str, Any], n: int = N,
          batch: int = BATCH) -> dict[str, Any]:
    """The parts of one workload, built from topofl's public API only (so that a checkout of
    older code can run it as well)."""
    import torch

    from topofl import algorithms
    from topofl.engine import ParamLayout, Round, toy_services
    from topofl.engine.executors import make_executor
    from topofl.engine.layout import init_parameters
    from topofl.engine.local import LocalStepper
    from topofl.models import build_model
    from topofl.tools.bench import SharedWeightFloor, gossip_topology, synthetic_data

    cpu = torch.device("cpu")
    data = synthetic_data(n, shape, device=cpu)
    model = build_model(model_name, shape, 10, seed=0, device=cpu, **kw)
    layout = ParamLayout.from_model(model)
    algo = algorithms.dsgd(lr=LR)
    env = toy_services(n, layout=layout, dtype=torch.float32)
    x0 = init_parameters(model, layout, n, seed=0, same=True, device=cpu, dtype=torch.float32)
    state = algo.init(x0, env)
    executor = make_executor("auto", model, layout, cpu)
    stepper = LocalStepper(executor, algo, data, batch, layout.num_params, torch.float32)
    lr = torch.full((n,), LR)
    phase = algo.phases[0]
    topo = gossip_topology(n)
    xb, yb = data.sample(10**6, 0, batch)  # another round's batches, drawn once
    floor = SharedWeightFloor(model, xb, yb, lr=LR)
    y = torch.empty_like(state.x)
    t = [0]

    def local() -> None:
        stepper(state, Round(t[0]), env, phase, 0, lr)
        t[0] += 1

    def gossip() -> None:
        algo.communicate(state, Round(t[0], topo), env)

    label = type(executor).__name__
    if getattr(executor, "linear", None) is not None:
        label += ", closed form"
    if getattr(stepper, "fused", False):
        label += ", fused update"
    return {"P": layout.num_params, "executor": label,
            "parts": {"local": local, "floor": floor.step, "gossip": gossip,
                      "copy": lambda: y.copy_(state.x)},
            "data": data, "stepper": stepper, "state": state, "lr": lr, "topo": topo,
            "model": model, "layout": layout, "algo": algo, "env": env, "phase": phase,
            "round": Round, "n": n, "batch": batch}


def measure(reps: int) -> dict[str, Any]:
    """Every workload's median times (ms, thread CPU time and wall clock) and ratios."""
    import torch

    torch.set_num_threads(1)
    out: dict[str, Any] = {}
    for name, (model_name, shape, kw, n, batch, share) in WORKLOADS.items():
        case = _case(model_name, shape, kw, n, batch)
        parts: dict[str, Callable[[], object]] = case["parts"]
        cpu: dict[str, list[float]] = {k: [] for k in parts}
        wall: dict[str, list[float]] = {k: [] for k in parts}
        for rep in range(max(3, reps // share) + 2):  # two untimed
            for k, fn in parts.items():
                t0, w0 = time.thread_time(), time.perf_counter()
                fn()
                t1, w1 = time.thread_time(), time.perf_counter()
                if rep >= 2:
                    cpu[k].append(t1 - t0)
                    wall[k].append(w1 - w0)
        row: dict[str, Any] = {"P": case["P"], "executor": case["executor"], "n": n,
                               "batch": batch}
        for k in parts:
            row[f"{k}_ms"] = 1e3 * statistics.median(cpu[k])
            row[f"{k}_wall_ms"] = 1e3 * statistics.median(wall[k])
        row["local_over_floor"] = statistics.median(
            a / b for a, b in zip(cpu["local"], cpu["floor"]))
        row["gossip_over_copy"] = statistics.median(
            a / b for a, b in zip(cpu["gossip"], cpu["copy"]))
        out[name] = row
    return out


# ----------------------------------------------------------------------------- profile
def _median_ms(fns: dict[str, Callable[[], object]], reps: int) -> dict[str, float]:
    """Median thread CPU time (ms) of each function, repetitions interleaved."""
    t: dict[str, list[float]] = {k: [] for k in fns}
    for rep in range(reps + 2):
        for k, fn in fns.items():
            t0 = time.thread_time()
            fn()
            if rep >= 2:
                t[k].append(time.thread_time() - t0)
    return {k: 1e3 * statistics.median(v) for k, v in t.items()}


def profile(reps: int) -> dict[str, Any]:
    """Where the MLP's local step and gossip spend their time, and the variants that would
    change the numbers (see the module docstring). Uses the current code's internals."""
    import torch
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    from topofl.engine.executors import BatchedExecutor, make_executor
    from topofl.engine.gossip import Mixer
    from topofl.engine.local import LocalStepper

    torch.set_num_threads(1)
    out: dict[str, Any] = {}
    model_name, shape, kw = WORKLOADS["mlp 40-64-10"][:3]
    case = _case(model_name, shape, kw)
    parts = case["parts"]
    ops: dict[str, dict[str, float]] = {}
    for k in ("local", "floor"):
        for _ in range(3):
            parts[k]()
        with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(20):
                parts[k]()
        ops[k] = {e.key: e.self_cpu_time_total / 20 / 1e3 for e in prof.key_averages()}
    out["ops"] = ops
    d = case["data"]
    stepper, state, lr = case["stepper"], case["state"], case["lr"]
    idx = d.sample_indices(5, 0, BATCH)
    x, y = d.take(idx)
    ex = stepper.executor
    out["local_parts"] = _median_ms({
        "draw: hash the indices": lambda: d.sample_indices(5, 0, BATCH),
        "draw: gather the rows": lambda: d.take(idx, out=stepper.batch),
        "gradient + fused SGD update": lambda: ex.sgd_(state.x, x, y, "all", lr * 0),
        "floor step": parts["floor"]}, reps)
    # gossip: the product alone and the tile copies alone
    topo, X = case["topo"], state.x
    mixer = Mixer(torch.device("cpu"), torch.float32)
    W = mixer.matrix(topo)
    Z = torch.empty_like(X)
    tile = min(X.shape[1], mixer._tile(X.shape[0], X.element_size()))
    buf = torch.empty(X.shape[0] * tile)

    def tiles_copy() -> None:
        for a in range(0, X.shape[1], tile):
            b = min(X.shape[1], a + tile)
            buf[: X.shape[0] * (b - a)].view(X.shape[0], b - a).copy_(X[:, a:b])

    one_tile = Mixer(torch.device("cpu"), torch.float32, tile_bytes=X.numel() * 4)
    Xa, Xb = X.clone(), X.clone()
    mixer.mix_(topo, Xa)
    one_tile.mix_(topo, Xb)
    out["gossip_parts"] = _median_ms({
        "gossip (1 MiB tiles)": lambda: mixer.mix_(topo, X),
        "the tiles' copies alone": tiles_copy,
        "the CSR product alone (contiguous out)": lambda: torch.addmm(Z, W, X, beta=0, out=Z),
        "copy of X": lambda: Z.copy_(X),
        "variant: one tile of the whole width": lambda: one_tile.mix_(topo, X)}, reps)
    out["one_tile_same_bits"] = bool(torch.equal(Xa, Xb))
    # variant: log-softmax along the classes of [m, C, b] (a non-last dimension)
    m, C = N, 10
    z = torch.randn(m, C, BATCH, generator=torch.Generator().manual_seed(0))
    rows = z.transpose(1, 2).reshape(m * BATCH, C)  # what the cross-entropy takes today
    yy = y.reshape(-1)
    out["softmax_parts"] = _median_ms({
        "cross-entropy on [m b, C] rows (today)": lambda: F.cross_entropy(
            rows, yy, reduction="none"),
        "variant: log_softmax(dim=1) of [m, C, b] + gather": lambda: torch.log_softmax(
            z, 1).gather(1, yy.view(m, 1, BATCH))}, reps)
    ref = torch.log_softmax(rows, 1).view(m, BATCH, C).transpose(1, 2)
    out["softmax_same_bits"] = bool(torch.equal(ref, torch.log_softmax(z, 1)))
    g = torch.randn(m, C, BATCH, generator=torch.Generator().manual_seed(1))
    gref = torch._log_softmax_backward_data(g.transpose(1, 2).reshape(m * BATCH, C),
                                            ref.transpose(1, 2).reshape(m * BATCH, C), 1,
                                            torch.float32)
    out["softmax_backward_same_bits"] = bool(torch.equal(
        gref.view(m, BATCH, C).transpose(1, 2),
        torch._log_softmax_backward_data(g, torch.log_softmax(z, 1), 1, torch.float32)))
    # both executors on both CNNs: the one executor="auto" picks against the other
    for key, label in (("cnn1d 1x40", "cnn1d"), ("gn_lenet 3x32x32", "gn_lenet")):
        model_name, shape, kw, n, batch, share = WORKLOADS[key]
        cnn = _case(model_name, shape, kw, n, batch)
        auto_ex = cnn["stepper"].executor
        other_kind = "loop" if type(auto_ex).__name__ == "BatchedExecutor" else "batched"
        other = make_executor(other_kind, cnn["model"], cnn["layout"], torch.device("cpu"))
        ostep = LocalStepper(other, cnn["algo"], cnn["data"], batch, cnn["P"], torch.float32)
        rnd = cnn["round"]
        st2 = cnn["algo"].init(cnn["state"].x.clone(), cnn["env"])
        fns = {f"{type(auto_ex).__name__} (auto)": cnn["parts"]["local"],
               f"variant: {type(other).__name__}": lambda ostep=ostep, st2=st2, rnd=rnd, cnn=cnn:
                   ostep(st2, rnd(0), cnn["env"], cnn["phase"], 0, cnn["lr"])}
        if getattr(auto_ex, "stack", None) is not None:  # 1-d convolutions as batched products
            grouped = BatchedExecutor(cnn["model"], cnn["layout"])
            grouped.stack = None  # vmap's grouped convolutions
            gstep = LocalStepper(grouped, cnn["algo"], cnn["data"], batch, cnn["P"],
                                 torch.float32)
            st3 = cnn["algo"].init(cnn["state"].x.clone(), cnn["env"])
            fns["variant: BatchedExecutor, vmap's grouped convolutions"] = (
                lambda gstep=gstep, st3=st3, rnd=rnd, cnn=cnn:
                gstep(st3, rnd(0), cnn["env"], cnn["phase"], 0, cnn["lr"]))
        fns["floor step"] = cnn["parts"]["floor"]
        out[f"{label}_parts"] = _median_ms(fns, max(3, reps // (6 * share)))
        cx, cy = cnn["data"].sample(3, 0, batch)
        ga, gb = torch.zeros_like(st2.x), torch.zeros_like(st2.x)
        auto_ex.grad(st2.x, cx, cy, "all", ga)
        other.grad(st2.x, cx, cy, "all", gb)
        out[f"{label}_same_bits"] = bool(torch.equal(ga, gb))
        out[f"{label}_max_diff"] = float((ga - gb).abs().max())
        out[f"{label}_rel_diff"] = float((ga - gb).abs().max() / gb.abs().max())
    return out


# ----------------------------------------------------------------------------- driver
def _child(root: str, reps: int, prof: bool = False) -> dict[str, Any]:
    """:func:`measure` (and :func:`profile` with ``prof``) in a child process that imports
    topofl from ``root``."""
    env = {**os.environ, "PYTHONPATH": root, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, __file__, "--child", str(reps),
                           *(["--profile"] if prof else [])], cwd=root, env=env,
                          capture_output=True, text=True, check=False)
    if proc.returncode:
        raise RuntimeError(f"the measurement under {root} failed:\n{proc.stderr[-2000:]}")
    res: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return res


def _commit(root: str) -> str:
    proc = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False)
    dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "topofl"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return (proc.stdout.strip() or "?") + (" + working-tree changes" if dirty else "")


def _median_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The per-quantity median over the runs (the executor label of the first)."""
    out: dict[str, Any] = {}
    for name in runs[0]:
        row = dict(runs[0][name])
        for k, v in row.items():
            if isinstance(v, float):
                row[k] = statistics.median(r[name][k] for r in runs)
        out[name] = row
    return out


def report(codes: dict[str, dict[str, Any]], info: dict[str, str], load: tuple[float, float],
           runs: int, reps: int, seconds: float, command: str) -> str:
    """The Markdown report: local / floor and gossip / copy of every code measured."""
    L = ["# The CPU floor: local step vs a shared-weight model, gossip vs a copy", ""]
    L.append(
        f"`{command}`, {info['date']}. Machine: {info['cpu']}; Python {info['python']}, "
        f"torch {info['torch']}, numpy {info['numpy']}; torch threads: 1. 1-minute load "
        f"average at the start and the end: {load[0]:.1f}, {load[1]:.1f} on "
        f"{os.cpu_count()} CPUs (other processes included: the machine was shared, which is "
        f"why times are thread CPU time, see the script's docstring). Whole run: "
        f"{seconds:.0f} s.")
    L.append("")
    L.append(
        f"{N} clients, batch {BATCH} (GN-LeNet: 20 clients x 16 CIFAR-sized images, a "
        "quarter of the repetitions), float32, D-SGD (lr "
        f"{LR}), synthetic data with {INPUT} features (MNIST-1D's size), a random "
        "10-regular graph. Each code measured "
        f"in {runs} child processes, alternating; each process: {reps} interleaved "
        "repetitions after two untimed; a number is the median over the processes of each "
        "process's median (ratios: of the per-repetition ratios). *local*: the engine's "
        "local step (drawing the batches included); *floor*: one shared-weight `nn.Module`, "
        "forward + backward + `torch.optim.SGD` step on the same samples (all clients' "
        "batches as one); *gossip*: `X <- W X` on the `[n, P]` buffer; *copy*: "
        "`Y.copy_(X)`.")
    L.append("")
    L.append("| code | workload | clients x batch | P | executor | local ms | floor ms "
             "| **local / floor** | gossip ms | copy ms | **gossip / copy** |")
    L.append("|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for code, rows in codes.items():
        for name, r in rows.items():
            nb = f"{r.get('n', N)} x {r.get('batch', BATCH)}"
            L.append(f"| {code} | {name} | {nb} | {r['P']:,} | {r['executor']} | "
                     f"{r['local_ms']:.2f} | {r['floor_ms']:.2f} | "
                     f"**{r['local_over_floor']:.2f}x** | {r['gossip_ms']:.3f} | "
                     f"{r['copy_ms']:.3f} | **{r['gossip_over_copy']:.2f}x** |")
    return "\n".join(L) + "\n"


def profile_report(p: dict[str, Any], top: int = 12) -> str:
    """The Markdown of :func:`profile`: operation profiles side by side, the parts, the
    variants that would change the numbers."""
    L = ["", "## Where the time goes (the current code, mlp 40-64-10)", "",
         f"`torch.profiler`, self CPU time per step (ms) of the {top} largest operations of "
         "the local step and of the floor (20 steps each, after 3; the profiler's own work "
         "inflates small operations):", "",
         "| operation | local step | floor |", "|---|---:|---:|"]
    local, floor = p["ops"]["local"], p["ops"]["floor"]
    keys = sorted(set(local) | set(floor), key=lambda k: -max(local.get(k, 0.0),
                                                               floor.get(k, 0.0)))[:top]
    for k in keys:
        L.append(f"| `{k}` | {local.get(k, 0.0):.3f} | {floor.get(k, 0.0):.3f} |")
    L.append(f"| all operations | {sum(local.values()):.3f} | {sum(floor.values()):.3f} |")
    for title, key in (("The local step's parts, timed alone (ms)", "local_parts"),
                       ("Gossip's parts (ms)", "gossip_parts"),
                       ("The cross-entropy's log-softmax (ms)", "softmax_parts"),
                       ("cnn1d, 100 clients x 50 samples (ms)", "cnn1d_parts"),
                       ("GN-LeNet, 20 clients x 16 images (ms)", "gn_lenet_parts")):
        L += ["", f"{title}:", "", "| part | ms |", "|---|---:|"]
        L += [f"| {k} | {v:.3f} |" for k, v in p[key].items()]
    L += ["", "Bit for bit against what the engine does: one gossip tile of the whole width "
          f"{p['one_tile_same_bits']}; log-softmax along dim 1 of `[m, C, b]`: forward "
          f"{p['softmax_same_bits']}, backward {p['softmax_backward_same_bits']}; "
          "gradients of the batched executor vs the loop: cnn1d "
          f"{p['cnn1d_same_bits']} (largest difference {p['cnn1d_max_diff']:.2g}, "
          f"{p['cnn1d_rel_diff']:.2g} of the largest gradient), GN-LeNet "
          f"{p['gn_lenet_same_bits']} (largest difference {p['gn_lenet_max_diff']:.2g}, "
          f"{p['gn_lenet_rel_diff']:.2g} of the largest gradient)."]
    return "\n".join(L) + "\n"


def reading(codes: dict[str, dict[str, Any]], p: dict[str, Any]) -> str:
    """What the numbers say, computed from them: the MLP against the issue's 1.5x, what the
    remaining gap is made of, and what the variants that change the numbers would give."""
    names = list(codes)
    after = codes[names[-1]]
    mlp, cnn = after["mlp 40-64-10"], after["cnn1d 1x40"]
    lp, gp, sp, cp = (p["local_parts"], p["gossip_parts"], p["softmax_parts"],
                      p["cnn1d_parts"])
    draw = lp["draw: hash the indices"] + lp["draw: gather the rows"]
    ce_today = sp["cross-entropy on [m b, C] rows (today)"]
    ce_dim1 = sp["variant: log_softmax(dim=1) of [m, C, b] + gather"]
    ops = p["ops"]["local"]
    L = ["", "## Reading", ""]
    if len(names) > 1:
        before = codes[names[0]]["mlp 40-64-10"]
        L.append(f"- **mlp 40-64-10: {before['local_over_floor']:.2f}x -> "
                 f"{mlp['local_over_floor']:.2f}x** the floor (issue 32 asks <= 1.5x), "
                 f"{before['local_ms']:.2f} -> {mlp['local_ms']:.2f} ms a step: the same "
                 "code path in both (issue 58 changed only 1-d convolutions and gossip's wide "
                 "bands), so the difference is the shared machine's.")
    L.append(
        f"- What is left of the MLP's gap ({mlp['local_ms'] - mlp['floor_ms']:.2f} ms a "
        f"step): drawing the batches, which the floor does not do ({draw:.2f} ms: hashing "
        "the indices, with the key's NumPy generator, and gathering the rows); 100 small "
        f"batched products instead of one large one (`bmm` {ops.get('aten::bmm', 0.0):.2f} "
        "ms a step under the profiler against the floor's `mm` + `addmm`); the bias adds "
        "and sums of strided `[m, b, out]` activations. Both pay the same slow last-dim "
        f"log-softmax kernel on `[5000, 10]` rows ({ce_today:.2f} ms forward): computed "
        f"along the classes of `[m, C, b]` logits it takes {ce_dim1:.3f} ms (about "
        f"{ce_today - ce_dim1:.2f} ms less in the local step's forward alone, while the "
        "floor would keep paying it), but its bits differ from the last-dim kernel's, "
        "forward and backward, so it is not used.")
    prod, copy_x = gp["the CSR product alone (contiguous out)"], gp["copy of X"]
    tiles, one = gp["the tiles' copies alone"], gp["variant: one tile of the whole width"]
    L.append(
        f"- **Gossip / copy stays at {mlp['gossip_over_copy']:.1f}x** (issue asks <= 2x; "
        "in the table each part runs after a local step and a floor step, colder in cache "
        "than the parts here, timed back to back): the CSR product alone "
        f"({prod:.3f} ms, 11 multiply-adds per element) is "
        f"{prod / copy_x:.1f} copies of `X` ({copy_x:.3f} ms) by itself, and the in-place "
        f"update adds the copy of each tile ({tiles:.3f} ms, strided reads). One tile of "
        f"the whole width saves a call ({one:.3f} vs {gp['gossip (1 MiB tiles)']:.3f} ms); "
        "its bits are the same here, but not in general: a last tile narrower than a few "
        "dozen columns takes another MKL path (seen with 64 KiB tiles at P = 199,210), so "
        "the tiling is left as it is. With `X` in cache the product, summed in the order "
        "that gives today's bits, already costs more than 2 copies.")
    gn = after["gn_lenet 3x32x32"]
    gp_ = p["gn_lenet_parts"]
    batched_ms = next(v for k, v in cp.items() if "BatchedExecutor" in k)
    loop_ms = next(v for k, v in cp.items() if "LoopExecutor" in k)
    gn_loop = next(v for k, v in gp_.items() if "LoopExecutor" in k)
    gn_batched = next(v for k, v in gp_.items() if "BatchedExecutor" in k)
    grouped_ms = cp.get("variant: BatchedExecutor, vmap's grouped convolutions")
    was = ""
    if len(names) > 1:
        b = codes[names[0]]["cnn1d 1x40"]
        was = f"{b['local_over_floor']:.2f}x ({b['executor']}) -> "
    L.append(
        f"- **cnn1d: {was}{cnn['local_over_floor']:.2f}x** the floor (issue 58 asks <= "
        "1.5x): `executor=\"auto\"` now runs a model whose convolutions are all 1-d "
        "batched on the CPU, each convolution as one batched product over the clients "
        "(the windows of channels-last activations cut out, times the clients' weights, "
        "one `baddbmm`; the windows' backward as strided adds): "
        f"{batched_ms:.1f} ms a step against {loop_ms:.1f} ms for the per-client loop's "
        "100 x 3 small oneDNN convolutions forward and backward"
        + ("" if grouped_ms is None else
           f" and {grouped_ms:.1f} ms for `vmap`'s grouped convolutions")
        + f", {batched_ms / cp['floor step']:.2f}x, {loop_ms / cp['floor step']:.2f}x"
        + ("" if grouped_ms is None else f" and {grouped_ms / cp['floor step']:.2f}x")
        + " the floor timed side by side. The batched products and the loop differ in "
        f"float32 rounding (gradients up to {p['cnn1d_max_diff']:.1g}, "
        f"{p['cnn1d_rel_diff']:.1g} of the largest; `tests/engine/test_conv_executors.py` "
        "holds the parameters within 1e-6 of the largest after 10 steps), so cnn1d runs "
        "with `executor=\"auto\"` on the CPU change in their last bits; no committed "
        "result uses cnn1d.")
    L.append(
        f"- **GN-LeNet: {gn['local_over_floor']:.2f}x** the floor with the per-client loop "
        f"that `auto` keeps for 2-d convolutions ({gn_loop:.1f} ms a step; batched, "
        f"{gn_batched:.1f} ms, {gn_batched / gp_['floor step']:.2f}x the floor): the "
        "loop feeds channels-last images to oneDNN's per-client convolutions, while "
        "grouped 2-d convolutions (the batched executor) and the floor's one large "
        "convolution in the default layout are slower; its default does not change.")
    L.append(
        f"- **logistic: {after['logistic 40-10']['local_over_floor']:.2f}x** the floor "
        "(the closed form beats autograd's floor); its gossip ratio is large because "
        f"`X` is tiny (P = {after['logistic 40-10']['P']}): a few microseconds of copy "
        "against the fixed cost of a sparse product call.")
    return "\n".join(L) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--profile", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--baseline", default=None,
                    help="a checkout of the code before the change, measured as well")
    ap.add_argument("--baseline-label", default=None,
                    help="what the baseline is (default: its git commit)")
    ap.add_argument("--runs", type=int, default=3, help="child processes per code")
    ap.add_argument("--reps", type=int, default=60, help="repetitions per process")
    ap.add_argument("--quick", action="store_true", help="1 run of 20 repetitions, no file")
    ap.add_argument("--out", default=None, help="Markdown file (default analysis/bench_floor.md)")
    args = ap.parse_args(argv)
    if args.child is not None:
        res = measure(args.child)
        if args.profile:
            res = {"rows": res, "profile": profile(args.child)}
        print(json.dumps(res))
        return 0
    runs, reps = (1, 20) if args.quick else (args.runs, args.reps)
    here = str(Path(__file__).resolve().parent.parent)
    roots = {}
    if args.baseline:
        label = args.baseline_label or _commit(args.baseline)
        roots[f"before ({label})"] = str(Path(args.baseline).resolve())
    roots[f"after ({_commit(here)})"] = here
    from topofl.tools.bench import loadavg, machine_info

    load0, t0 = loadavg(), time.perf_counter()
    results: dict[str, list[dict[str, Any]]] = {k: [] for k in roots}
    prof: dict[str, Any] = {}
    for i in range(runs):
        for code, root in roots.items():
            last = i == runs - 1 and root == here
            res = _child(root, reps, prof=last)
            if last:
                res, prof = res["rows"], res["profile"]
            results[code].append(res)
            print(f"run {i + 1}/{runs}, {code}: " + ", ".join(
                f"{n} {r['local_over_floor']:.2f}x / {r['gossip_over_copy']:.2f}x"
                for n, r in results[code][-1].items()), file=sys.stderr)
    codes = {k: _median_runs(v) for k, v in results.items()}
    command = "python analysis/bench_floor.py" + "".join(
        f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
    text = report(codes, machine_info(), (load0, loadavg()), runs, reps,
                  time.perf_counter() - t0, command) + reading(codes, prof) + profile_report(prof)
    print(text)
    out = args.out or (None if args.quick else str(Path(__file__).with_name("bench_floor.md")))
    if out:
        Path(out).write_text(text)
        Path(out).with_suffix(".json").write_text(json.dumps(
            {"runs": results, "profile": prof, "load": [load0, loadavg()]}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
