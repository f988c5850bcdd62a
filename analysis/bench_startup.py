"""What a training process pays once before its first local step (issue 85, item 2).

:func:`topofl.models.check_model_input`, which the engine's executors run before their first
forward pass, ran the model on the ``meta`` device. The first meta pass of a process imports
sympy, ``torch._dynamo`` and ``torch._inductor`` through torch's Python meta kernels (some 800
modules), 1.3-2.2 CPU s on two loaded cores, about what ``import torch, topofl`` itself costs,
so a process's first local step cost 1.5-2.3 CPU s against 0.02-0.18 s for the next ones. The
check now runs the model for real on two zero samples (its own parameters, cloned buffers, no
gradient, the random states restored): the first step should cost what the second does,
within 0.1 CPU s. The memory planner's count of the state on the ``meta`` device
(:func:`topofl.workflow.memory.state_bytes`, which every run's checks call) stays clear of
those kernels too: the push-sum row (``sgp``) has the most ``meta`` operations in its
``init``.

Timed, each case in its own fresh process (``sys.executable -c``), in process CPU time
(``time.process_time``: all threads): ``import torch, topofl``, then a default
:func:`topofl.run` (``dsgd`` on a ``ring`` of 100 clients, ``digits``, 3 rounds, the
model ``logistic`` or ``mlp``), whose local steps are timed one by one by wrapping
:class:`topofl.engine.local.LocalStepper`'s ``__call__`` (the step the round loop takes:
batches, the executor's gradient and the update; the input check runs inside the first).
*before* is the same process with the old rule (:func:`old_rule`, a verbatim copy of the
meta-device check) put in place of the executors' ``check_model_input``; *after* is the
library as it is. A third case times the check alone, its first call in a fresh process,
on ``nn.Sequential(nn.Flatten(), nn.Linear(64, 10))``. The modules column counts what
``sys.modules`` gained during the first step (or the check); *sympy / dynamo* whether the
process imported them by the end of the run; *peak MB* the run's peak resident memory above
the resident size after ``import torch, topofl`` (``VmHWM`` after ``clear_refs``,
:data:`topofl.workflow.plan.PEAK_METER`). Medians over ``--reps`` fresh processes per case,
the cases interleaved.

``python analysis/bench_startup.py`` writes ``analysis/bench_startup.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODELS = ("logistic", "mlp")
#: The runs: (row, algorithm, model)
RUNS = (("logistic", "dsgd", "logistic"), ("mlp", "dsgd", "mlp"), ("sgp", "sgp", "logistic"))

CHILD = r"""
import json, sys, time
t0 = time.process_time()
import torch, topofl as tf
t_import = time.process_time() - t0
rule, what = sys.argv[1], sys.argv[2]
if rule == "before":
    sys.path.insert(0, sys.argv[3])
    from bench_startup import old_rule
    import topofl.engine.executors as executors
    import topofl.api as api
    executors.check_model_input = old_rule
    api.check_model_input = old_rule
check = tf.models.check_model_input if rule == "after" else old_rule
out = {"import": t_import}
if what == "check":
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
    n0 = len(sys.modules)
    t0 = time.process_time()
    check(model, (1, 8, 8), 10)
    out["first"] = time.process_time() - t0
    out["modules"] = len(sys.modules) - n0
    t0 = time.process_time()
    check(model, (1, 8, 8), 10)
    out["second"] = time.process_time() - t0
else:
    from topofl.engine.local import LocalStepper
    steps, mods = [], []
    call = LocalStepper.__call__
    def timed(self, *args, **kwargs):
        n0 = len(sys.modules)
        t0 = time.process_time()
        loss = call(self, *args, **kwargs)
        steps.append(time.process_time() - t0)
        mods.append(len(sys.modules) - n0)
        return loss
    LocalStepper.__call__ = timed
    algorithm, model = what.split(":")
    mark = start_peak()
    t0 = time.process_time()
    tf.run(algorithm, "ring", model=model, rounds=3)
    out["run"] = time.process_time() - t0
    out["peak"] = peak_since(mark)
    out["sympy"] = "sympy" in sys.modules
    out["dynamo"] = "torch._dynamo" in sys.modules
    out["steps"] = steps
    out["first"], out["second"], out["modules"] = steps[0], steps[1], mods[0]
print("RESULT " + json.dumps(out))
"""


def old_rule(model: Any, input_shape: Any, num_classes: int | None = None,
             *, dtype: Any = None) -> None:
    """``check_model_input`` as it was before issue 85: the model run on the ``meta`` device
    (a copy run on zeros only when that fails); the same messages."""
    import torch
    from torch import Tensor, nn
    from torch.func import functional_call

    from topofl.models.inputs import check_shape

    shape = check_shape(input_shape, "input_shape")
    if dtype is None:
        dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()),
                     torch.float32)

    def meta(t: Tensor) -> Tensor:
        return torch.empty(t.shape, dtype=dtype if t.is_floating_point() else t.dtype,
                           device="meta")

    tensors = {k: meta(v) for k, v in (*model.named_parameters(), *model.named_buffers())}
    x = torch.empty((2, *shape), dtype=dtype, device="meta")
    first = next((m for m in model.modules() if any(True for _ in m.parameters(recurse=False))),
                 None)
    hint = ""
    if isinstance(first, nn.Linear) and first.in_features != math.prod(shape):
        hint = (f"; its first layer is an nn.Linear that takes {first.in_features} input "
                f"features, and a sample has {math.prod(shape)} values")
    elif isinstance(first, nn.Linear) and len(shape) > 1:
        hint = ("; its first layer is an nn.Linear, which takes flat samples: wrap it as "
                "nn.Sequential(nn.Flatten(), model)")
    try:
        out = functional_call(model, tensors, (x,))
    except Exception:  # noqa: BLE001 - as before
        try:
            p0 = next(iter(model.parameters()), None)
            dt = p0.dtype if p0 is not None and p0.is_floating_point() else torch.float32
            device = p0.device if p0 is not None else torch.device("cpu")
            with torch.no_grad():
                out = copy.deepcopy(model)(torch.zeros((2, *shape), dtype=dt, device=device))
        except Exception as exc:  # noqa: BLE001 - as before
            msg = " ".join(str(exc).split()).rstrip(".")
            raise ValueError(
                f"the model does not take samples of input_shape={shape} (batches "
                f"[B, {', '.join(map(str, shape))}]): {type(exc).__name__}: {msg}{hint}"
            ) from None
    if not isinstance(out, Tensor) or out.dim() != 2 or out.shape[0] != 2:
        found = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
        raise ValueError(
            f"the model must map a batch [B, *input_shape] to logits [B, num_classes]; for "
            f"input_shape={shape} and B=2 it returns {found}{hint}"
        )
    if num_classes is not None and out.shape[1] < num_classes:
        raise ValueError(
            f"the model returns {out.shape[1]} logits per sample, but the data has "
            f"{num_classes} classes (num_classes={num_classes})"
        )


def child(rule: str, what: str) -> dict[str, Any]:
    """One fresh process: its CPU seconds (``rule``: "before" or "after"; ``what``: a model
    name or "check")."""
    from topofl.workflow.probe import PEAK_METER  # functions only: defined before the clock

    proc = subprocess.run([sys.executable, "-c", PEAK_METER + CHILD, rule, what, HERE],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if proc.returncode or line is None:
        raise RuntimeError(f"{rule} {what} failed:\n{proc.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(line[len("RESULT "):])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(HERE, "bench_startup.md"))
    args = ap.parse_args()
    import torch

    from topofl._utils.cpu import cpu_model

    load0, t0 = os.getloadavg()[0], time.time()
    child_of = {row: f"{algorithm}:{model}" for row, algorithm, model in RUNS}
    child_of["check"] = "check"
    cases = [(what, rule) for what in (*child_of,) for rule in ("before", "after")]
    runs: dict[str, list[dict[str, Any]]] = {f"{w} {r}": [] for w, r in cases}
    for _ in range(args.reps):
        for what, rule in cases:
            runs[f"{what} {rule}"].append(child(rule, child_of[what]))
    med = {k: {f: statistics.median(float(r[f]) for r in v)
               for f in ("import", "first", "second", "modules",
                         *(("run", "peak", "sympy", "dynamo") if "run" in v[0] else ()))}
           for k, v in runs.items()}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=HERE, check=False).stdout.strip()
    lines = [
        "# The first local step of a process: the input check without the meta device",
        "",
        f"`python analysis/bench_startup.py --reps {args.reps}`, {datetime.date.today()}, "
        f"topofl at `{commit}` (uncommitted changes included). Machine: {cpu_model()}, "
        f"{os.cpu_count()} logical CPUs; torch {torch.__version__}, its default threads. "
        f"1-minute load average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the "
        f"end; {time.time() - t0:.0f} s. Process CPU seconds (all threads), medians of "
        f"{args.reps} fresh processes per row. A run: `topofl.run(algorithm, \"ring\", "
        "model=..., rounds=3)` (digits, 100 clients; `dsgd` with `logistic` or `mlp`, "
        "`sgp` with `logistic`), each `LocalStepper` call timed; "
        "*before*: the old meta-device check put in the executors' place, *after*: the "
        "library as it is. *check*: `check_model_input` alone on `Flatten + Linear(64, 10)`, "
        "its first and second calls.",
        "",
        "| case | rule | import torch, topofl s | first step s | second step s "
        "| first - second s | modules imported by the first | whole run s "
        "| sympy / dynamo imported | run's peak above import MB |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for what, rule in cases:
        m = med[f"{what} {rule}"]
        run = f"{m['run']:.2f}" if "run" in m else "-"
        imported = (f"{'yes' if m['sympy'] else 'no'} / {'yes' if m['dynamo'] else 'no'}"
                    if "run" in m else "-")
        peak = f"{m['peak'] / 1e6:.1f}" if "run" in m else "-"
        lines.append(
            f"| {what} | {rule} | {m['import']:.2f} | {m['first']:.3f} | {m['second']:.3f} "
            f"| {m['first'] - m['second']:+.3f} | {m['modules']:.0f} | {run} | {imported} "
            f"| {peak} |")
    ok = all(med[f"{w} after"]["first"] - med[f"{w} after"]["second"] <= 0.1 for w in MODELS)
    ok_imports = all(not med[f"{w} after"]["sympy"] and not med[f"{w} after"]["dynamo"]
                     for w, _, _ in RUNS)
    lines += ["", f"Target (first step within 0.1 CPU s of the second, after): "
                  f"{'met' if ok else 'NOT met'}. No run imports sympy or torch._dynamo "
                  f"(after): {'met' if ok_imports else 'NOT met'}."]
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
        json.dump({"reps": args.reps, "median": med, "runs": runs}, f, indent=1)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
