"""A whole default run on one GPU at 10^4-10^6 clients, beside ``topofl plan``'s answer for it,
and gossip against a copy on the GPU (issue 58 at GPU scale).

For each ``n`` (``--n``, default 10^4, 10^5, 10^6), in a fresh interpreter: D-SGD trains a
logistic regression on a ring of ``n`` clients of a synthetic Gaussian mixture (10 classes, 40
features, 10 training samples a client in 2 label shards), ``device="cuda"`` and **every other
setting at its default** (100 rounds, ``eval_every="auto"``, the global test set's
``eval_global_samples="auto"`` subsample, per-client records written to the run's client file).
The start of each round and the end of the run are clocked by
:data:`topofl.workflow.probe.ROUND_CLOCK` (a wrapper of the loop's round function; on a GPU,
the wall clock after ``torch.cuda.synchronize()``):

- *training round*: the median of the rounds that do not evaluate, but the first;
- *evaluation*: the median over the evaluated rounds but the first of their duration less a
  training round;
- *evaluation share*: evaluations' seconds over the rounds' (the issue's "evaluation <= 50 % of
  a default round" counts the evaluated rounds' extra over all rounds);
- *peak GPU memory*: ``torch.cuda.max_memory_allocated``;
- *wall*: the whole ``topofl.run`` call, data and set-up included.

Then the plan of the same config (``make_plan``, probes on the same GPU) and its error. Last,
gossip on the GPU: the mixer the engine picks (``Mixer("cuda", float32)``) on a ring, the
circulant [1,2,3] and a random 6-regular graph, against ``Y.copy_(X)`` of the same ``[n, P]``
buffer (medians of CUDA-event times).

Writes ``--json`` (and ``--out``, Markdown, from it): ``python analysis/scale_cuda.py
[--n 10000 100000 1000000] [--json analysis/scale_cuda.json] [--out analysis/scale_cuda.md]``;
``--render`` writes the Markdown from the JSON alone. Needs a CUDA device.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

from topofl.workflow.probe import ROUND_CLOCK

HERE = Path(__file__).resolve().parent

# the loop's rounds clocked by the planner's own clock, which waits for CUDA and reads the
# wall clock when CUDA is in use (topofl.workflow.probe.ROUND_CLOCK)
_CHILD = ROUND_CLOCK + r"""
import json, sys, time
import torch
_cuda = torch.cuda.is_available()
cfg = json.loads(sys.argv[1])
t0 = time.perf_counter()
res = _config.execute(cfg)
_stamps.append(_clock())
wall = time.perf_counter() - t0
print(json.dumps(dict(stamps=_stamps, wall=wall,
                      peak=torch.cuda.max_memory_allocated() if _cuda else 0,
                      eval_every=int(res.config.eval_every),
                      gpu=torch.cuda.get_device_name(0) if _cuda else "cpu")))
"""


DEVICE = "cuda"


def config(n: int, folder: str) -> dict[str, Any]:
    """The run: every setting at its default but the data, model, graph and device."""
    return dict(algorithm="dsgd", topology="ring", n_clients=n, seed=0, model="logistic",
                data=f"synthetic:n_samples={10 * n},n_test=10000,dim=40,num_classes=10,seed=0",
                partition="shards", partition_params={"shards_per_client": 2},
                device=DEVICE, progress=False,
                records_path=os.path.join(folder, f"run_{n}.jsonl"))


def measured(stamps: list[float], every: int | None) -> dict[str, float]:
    """Training round, warm evaluation and the evaluation share from the round stamps."""
    dur = [b - a for a, b in zip(stamps, stamps[1:])]
    rounds = len(dur)
    every = every or 1
    evaluated = [t for t in range(rounds) if (t + 1) % every == 0 or t == rounds - 1]
    train = sorted(dur[t] for t in range(1, rounds) if t not in evaluated)
    med = train[len(train) // 2] if train else float("nan")
    extra = [dur[t] - med for t in evaluated]
    warm = sorted(extra[1:]) or extra
    return dict(train=med, eval=warm[len(warm) // 2], rounds=rounds,
                evaluations=len(evaluated),
                eval_share=sum(max(0.0, e) for e in extra) / sum(dur),
                run=stamps[-1] - stamps[0])


def run_case(n: int, folder: str, timeout: float) -> dict[str, Any]:
    """One default run at ``n`` in a fresh interpreter, then its plan."""
    cfg = config(n, folder)
    out = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(cfg)], capture_output=True,
                         text=True, timeout=timeout)
    if out.returncode:
        return dict(n=n, error=out.stderr.strip().splitlines()[-5:])
    got = json.loads(out.stdout.strip().splitlines()[-1])
    row: dict[str, Any] = dict(n=n, wall=got["wall"], peak=got["peak"], gpu=got["gpu"],
                               eval_every=got["eval_every"],
                               **measured(got["stamps"], got["eval_every"]))
    from topofl.workflow.plan import make_plan

    t0 = time.perf_counter()
    try:
        plan = make_plan({k: v for k, v in cfg.items() if k != "records_path"},
                         available=None)
    except Exception as e:  # a failed plan is a finding of this report, not its end
        row["plan_error"] = f"{type(e).__name__}: {e}"
        return row
    row.update(plan_s=time.perf_counter() - t0, plan_train=plan.seconds_per_round,
               plan_eval=plan.eval_seconds, plan_run=plan.run_seconds,
               plan_peak=plan.peak_bytes)
    return row


def gossip(ns: list[int], widths: list[int], reps: int = 20) -> list[dict[str, Any]]:
    """The engine's mixer on the GPU against a copy of the buffer (CUDA-event medians)."""
    import torch

    import topofl as tf
    from topofl.engine.gossip import Mixer

    dev = torch.device(DEVICE)
    mixer = Mixer(dev, torch.float32)
    rows = []

    def timed(fn: Any) -> float:
        fn()
        times = []
        for _ in range(reps):
            if dev.type != "cuda":
                t0 = time.perf_counter()
                fn()
                times.append(1e3 * (time.perf_counter() - t0))
                continue
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b))
        return sorted(times)[len(times) // 2]

    for n in ns:
        graphs = {"ring": tf.topologies.ring(n),
                  "circulant [1,2,3]": tf.topologies.circulant(n, [1, 2, 3]),
                  "random_regular(6)": tf.topologies.random_regular(n, 6, seed=0)}
        for P in widths:
            X = torch.randn(n, P, device=dev)
            Y = torch.empty_like(X)
            copy_ms = timed(partial(Y.copy_, X))
            del Y  # the mixer's product needs a buffer of X's size on the GPU (cuSPARSE)
            if dev.type == "cuda":
                torch.cuda.empty_cache()
            for name, top in graphs.items():
                try:
                    ms = timed(partial(mixer.mix_, top, X))
                except torch.OutOfMemoryError:
                    rows.append(dict(graph=name, n=n, P=P, copy_ms=copy_ms, error="out of memory"))
                    print(rows[-1], flush=True)
                    break
                rows.append(dict(graph=name, n=n, P=P, copy_ms=copy_ms, mix_ms=ms,
                                 ratio=ms / copy_ms))
                print(rows[-1], flush=True)
            del X
            if dev.type == "cuda":
                torch.cuda.empty_cache()
    return rows


def render(data: dict[str, Any]) -> str:
    """The Markdown report of ``data`` (what ``--json`` holds)."""
    from topofl._utils.markdown import Document

    def pct(p: Any, m: Any) -> str:
        return f"{100 * (p - m) / m:+.0f} %" if p and m else ""

    doc = Document().heading("A whole default run on one GPU, and the plan's answer for it")
    doc.paragraph(f"`python analysis/scale_cuda.py` on {data['date']}, {data['gpu']} "
                  f"({data['host']}), torch {data['torch']}, topofl {data['topofl']}. "
                  "Wall-clock seconds after `torch.cuda.synchronize()` (see the script's "
                  "docstring for what each column measures).")
    rows = []
    for r in data["runs"]:
        if "error" in r:
            rows.append([f"{r['n']:,}", "failed: " + " / ".join(r["error"])] + [""] * 11)
            continue
        rows.append([f"{r['n']:,}", str(r["rounds"]), str(r["eval_every"]),
                     f"{r['wall']:.1f}", f"{r['run']:.1f}", f"{r['train']:.4g}",
                     f"{r['eval']:.4g}", f"{100 * r['eval_share']:.1f} %",
                     f"{r['peak'] / 2**30:.2f} GiB",
                     f"{r.get('plan_train') or 0:.4g}", pct(r.get("plan_train"), r["train"]),
                     f"{r.get('plan_eval') or 0:.4g}", pct(r.get("plan_eval"), r["eval"])])
    doc.table(["n", "rounds", "eval_every (auto)", "wall s (whole call)", "rounds' s",
               "training round s", "evaluation s", "evaluation share", "peak GPU memory",
               "plan: training round s", "error", "plan: evaluation s", "error"], rows)
    errs = [f"n = {r['n']:,}: {r['plan_error']}" for r in data["runs"] if "plan_error" in r]
    if errs:
        doc.paragraph("The plan failed: " + "; ".join(errs) + ".")
    doc.heading("Gossip on the GPU against a copy", level=2)
    doc.table(["graph", "n", "P", "copy ms", "mixer ms", "x copy"],
              [[g["graph"], f"{g['n']:,}", f"{g['P']:,}", f"{g['copy_ms']:.3f}",
                f"{g['mix_ms']:.3f}" if "error" not in g else g["error"],
                f"**{g['ratio']:.2f}**" if "error" not in g else ""] for g in data["gossip"]])
    if data.get("reading"):
        doc.paragraph(data["reading"])
    return doc.text()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[10**4, 10**5, 10**6])
    ap.add_argument("--gossip-n", type=int, nargs="*", default=[10**5, 10**6])
    ap.add_argument("--widths", type=int, nargs="*", default=[650, 7850])
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds a run")
    ap.add_argument("--json", default=str(HERE / "scale_cuda.json"))
    ap.add_argument("--out", default=str(HERE / "scale_cuda.md"))
    ap.add_argument("--render", action="store_true")
    ap.add_argument("--device", default="cuda", help="cpu: a dry run of the script here")
    args = ap.parse_args(argv)
    global DEVICE
    DEVICE = args.device
    if not args.render:
        import torch

        import topofl as tf

        data: dict[str, Any] = dict(date=datetime.date.today().isoformat(),
                                    gpu=torch.cuda.get_device_name(0) if DEVICE == "cuda"
                                    else "cpu", torch=torch.__version__,
                                    topofl=tf.__version__, host=os.uname().nodename,
                                    runs=[], gossip=[])
        with tempfile.TemporaryDirectory() as folder:
            for n in args.n:
                try:
                    data["runs"].append(run_case(n, folder, args.timeout))
                except subprocess.TimeoutExpired:
                    data["runs"].append(dict(n=n, error=[f"over {args.timeout:.0f} s"]))
                print(data["runs"][-1], flush=True)
                Path(args.json).write_text(json.dumps(data, indent=1), encoding="utf-8")
        data["gossip"] = gossip(args.gossip_n, args.widths)
        Path(args.json).write_text(json.dumps(data, indent=1), encoding="utf-8")
    data = json.loads(Path(args.json).read_text(encoding="utf-8"))
    Path(args.out).write_text(render(data), encoding="utf-8")
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
