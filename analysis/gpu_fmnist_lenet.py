"""10^4 GN-LeNet clients on Fashion-MNIST on one GPU: time to 80 % test accuracy, and where the
batched CNN step's time goes (issue 85, item 5).

Three parts, each written to the JSON as soon as it is measured (so a run stopped at its wall
limit keeps what it measured):

1. **The step's profile** (``profile``): one batched local step of D-SGD's executor (the
   engine's ``BatchedExecutor``: ``vmap`` of the model over the clients' stacked parameters,
   so every convolution is one grouped convolution of ``n`` groups) for ``n`` GN-LeNet
   clients, batch ``b``, on ``[n, b, 1, 28, 28]`` inputs, timed with CUDA events (median of
   5 after 2 warm-ups), its FLOP/s (``flops_per_sample(model, backward=True) * n * b`` over
   the time) against the measured fp32 peak (an 8192^3 ``torch.mm`` with TF32 off), and
   ``torch.profiler``'s CUDA kernels of one step grouped by name (the top 15 by time).
2. **One convolution, three ways** (``conv``): GN-LeNet's second convolution (32 -> 32
   channels, 5x5, padding 2, 13x13 inputs) for ``n`` clients of ``b`` samples, forward and
   backward: as ``vmap`` makes it (one grouped convolution, ``groups=n``), and as ``n``
   batched matrix products of the unfolded input (``torch.nn.functional.unfold`` then
   ``torch.bmm``), with TF32 off and on. This says whether a batched-product convolution
   would move the step's share of the peak.
3. **Time to accuracy** (``run``): ``topofl.run("dsgd")`` on the exponential graph of ``n``
   clients (``topology="exponential"``), Fashion-MNIST split IID (``60,000 / n`` training
   samples a client), GN-LeNet, ``batch_size`` = a client's training set, ``lr`` (``--lr``),
   evaluated every ``--eval-every`` rounds on the clients' own test splits (``eval_global=False``:
   the IID split deals the 10,000 test images to the clients, one a client at ``n = 10^4``, so
   ``test_acc_mean`` is every client's model scored on its share of the whole test set; the
   global test set scored by every client would cost ``n`` times the test set's forward
   passes an evaluation, far more than the training rounds). The wall
   clock of every round start (after ``torch.cuda.synchronize()``) is recorded; the run stops
   at the first evaluation at or above ``--target`` (the loop's round function raises a
   private exception there, caught here) or at ``--max-seconds``. *Time to accuracy* is the
   wall seconds from the first round's start to the end of that evaluation, evaluations
   included.

``python analysis/gpu_fmnist_lenet.py --root DIR [--n 10000] [--lr 0.1] [--json FILE]
[--out FILE]``; ``--render`` writes the Markdown from the JSON alone. ``--root``: the folder
of the four Fashion-MNIST IDX files (Debian's ``/usr/share/datasets/fashion-mnist``). Needs a
CUDA device (``--device cpu`` runs it small, to check the script).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).resolve().parent


class _Reached(Exception):
    """Raised by the clocked round function to stop the run once the target is met."""


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _timed(fn: Any, device: str, reps: int = 5, warm: int = 2) -> float:
    """Median seconds of ``fn()`` (CUDA events on a GPU, the wall clock on the CPU)."""
    for _ in range(warm):
        fn()
    out = []
    for _ in range(reps):
        _sync(device)
        t0 = time.perf_counter()
        fn()
        _sync(device)
        out.append(time.perf_counter() - t0)
    return sorted(out)[len(out) // 2]


def fp32_peak(device: str) -> float:
    """FLOP/s of an 8192^3 (1024^3 on the CPU) float32 product, TF32 off: best of 5."""
    size = 8192 if device == "cuda" else 1024
    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)
    best = min(_timed(lambda: torch.mm(a, b), device, reps=1, warm=0) for _ in range(5))
    return 2 * size**3 / best


def profile_step(n: int, b: int, device: str, peak: float) -> dict[str, Any]:
    """Part 1: one batched local step of the engine's executor, timed and profiled."""
    from topofl.engine.executors import BatchedExecutor
    from topofl.engine.layout import ParamLayout
    from topofl.models import flops_per_sample, gn_lenet

    model = gn_lenet((1, 28, 28), 10).to(device)
    layout = ParamLayout.from_model(model)
    ex = BatchedExecutor(model, layout)
    p = sum(q.numel() for q in model.parameters())
    x = torch.randn(n, p, device=device) * 0.01
    grads = torch.empty_like(x)
    xb = torch.randn(n, b, 1, 28, 28, device=device)
    yb = torch.randint(0, 10, (n, b), device=device)

    def step() -> None:
        ex.grad(x, xb, yb, "all", grads)

    sec = _timed(step, device)
    flops = flops_per_sample(model, (1, 28, 28), backward=True) * n * b
    kernels: list[dict[str, Any]] = []
    if device == "cuda":
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            step()
            torch.cuda.synchronize()
        rows = [e for e in prof.key_averages() if e.device_time_total > 0]
        total = sum(e.self_device_time_total for e in rows)
        for e in sorted(rows, key=lambda e: -e.self_device_time_total)[:15]:
            kernels.append(dict(name=e.key[:90], calls=e.count,
                                ms=e.self_device_time_total / 1e3,
                                share=e.self_device_time_total / max(total, 1)))
    return dict(n=n, b=b, params=p, step_ms=sec * 1e3, gflops=flops / sec / 1e9,
                share_of_peak=flops / sec / peak, kernels=kernels)


def conv_three_ways(n: int, b: int, device: str, peak: float) -> list[dict[str, Any]]:
    """Part 2: GN-LeNet's conv2 for ``n`` clients, grouped against unfold + bmm."""
    cin, cout, k, hw = 32, 32, 5, 13
    x = torch.randn(n, b, cin, hw, hw, device=device, requires_grad=True)
    w = torch.randn(n, cout, cin, k, k, device=device, requires_grad=True)
    flops = 3 * 2 * n * b * cout * cin * k * k * hw * hw  # forward + two backward products

    def grouped() -> None:
        xi = x.transpose(0, 1).reshape(b, n * cin, hw, hw)
        out = torch.nn.functional.conv2d(xi, w.reshape(n * cout, cin, k, k), padding=2,
                                         groups=n)
        out.sum().backward()

    def unfold_bmm() -> None:
        cols = torch.nn.functional.unfold(x.reshape(n * b, cin, hw, hw), k, padding=2)
        cols = cols.reshape(n, b, cin * k * k, hw * hw).transpose(2, 3)
        cols = cols.reshape(n, b * hw * hw, cin * k * k)
        out = torch.bmm(cols, w.reshape(n, cout, cin * k * k).transpose(1, 2))
        out.sum().backward()

    rows = []
    for name, fn, tf32 in (("grouped conv2d (vmap's)", grouped, False),
                           ("unfold + bmm, TF32 off", unfold_bmm, False),
                           ("unfold + bmm, TF32 on", unfold_bmm, True)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        try:
            sec = _timed(fn, device)
            rows.append(dict(way=name, ms=sec * 1e3, gflops=flops / sec / 1e9,
                             share_of_peak=flops / sec / peak))
        except torch.OutOfMemoryError:
            rows.append(dict(way=name, ms=None, gflops=None, share_of_peak=None))
        x.grad = w.grad = None
    torch.backends.cuda.matmul.allow_tf32 = False
    return rows


def time_to_accuracy(args: argparse.Namespace, sink: dict[str, Any]) -> dict[str, Any]:
    """Part 3: D-SGD until ``global_acc_mean >= target`` or ``max_seconds``."""
    import topofl as tf
    import topofl.engine.loop as loop

    stamps: list[float] = []
    accs: list[tuple[int, float, float]] = []
    round_of = loop._round

    def clocked(lp: Any, t: int) -> Any:
        _sync(args.device)
        now = time.perf_counter()
        stamps.append(now)
        if accs and accs[-1][1] >= args.target:
            raise _Reached
        if stamps and now - stamps[0] > args.max_seconds:
            raise _Reached
        return round_of(lp, t)

    data = tf.data.federate(f"fashion_mnist:root={args.root}", "iid", args.n, seed=0)
    per = int(min(data.sizes("train")))
    per = min(per, args.batch) if args.batch else per
    rec = Path(tempfile.mkdtemp()) / "run.jsonl"
    out: dict[str, Any] = dict(n=args.n, lr=args.lr, batch_size=per, target=args.target,
                               eval_every=args.eval_every, topology="exponential")
    sink["run"] = out
    loop._round = clocked
    import topofl.records as records
    log = records.Recorder.log

    def watched(self: Any, metric: str, value: Any, round: int, client: Any = None) -> None:
        log(self, metric, value, round, client)
        if metric == "test_acc_mean" and client is None:
            _sync(args.device)
            accs.append((int(round), float(value), time.perf_counter()))

    records.Recorder.log = watched  # type: ignore[method-assign]
    try:
        tf.run("dsgd", "exponential", data=data, model="gn_lenet", rounds=args.rounds,
               seed=0, batch_size=per, lr=args.lr, device=args.device,
               eval_every=args.eval_every, eval_global=False, records_path=str(rec),
               progress=False)
    except _Reached:
        pass
    finally:
        loop._round = round_of
        records.Recorder.log = log  # type: ignore[method-assign]
    t0 = stamps[0] if stamps else time.perf_counter()
    out["curve"] = [dict(round=r, acc=a, seconds=s - t0) for r, a, s in accs]
    hit = next((c for c in out["curve"] if c["acc"] >= args.target), None)
    out["rounds_run"] = len(stamps)
    out["round_seconds_median"] = (sorted(b - a for a, b in zip(stamps, stamps[1:]))[
        max(0, (len(stamps) - 1) // 2)] if len(stamps) > 1 else None)
    out["reached"] = hit
    return out


def render(res: dict[str, Any]) -> str:
    """The Markdown page of the JSON."""
    lines = ["# 10^4 GN-LeNet clients on Fashion-MNIST on one GPU", "",
             f"`python analysis/gpu_fmnist_lenet.py` on {res['date']}, {res['gpu']}, torch "
             f"{res['torch']}; fp32 peak measured {res['peak'] / 1e12:.1f} TFLOP/s "
             "(8192^3 `torch.mm`, TF32 off, best of 5). See the script's docstring for what "
             "each part measures.", ""]
    p = res.get("profile")
    if p:
        lines += ["## The batched local step", "",
                  f"n = {p['n']:,} clients, batch {p['b']}, {p['params']:,} parameters: "
                  f"**{p['step_ms']:.1f} ms** a step, {p['gflops']:.0f} GFLOP/s, "
                  f"**{100 * p['share_of_peak']:.2f} %** of the fp32 peak.", "",
                  "The CUDA kernels of one step under `torch.profiler` (its own overhead makes "
                  "the profiled step longer than the timed one), the top 15 of the profile "
                  "less the `aten::` operators that hold them; *share* is of these kernels' "
                  "time.", "",
                  "| kernel | calls | ms | share |", "|---|---:|---:|---:|"]
        kern = [k for k in p["kernels"] if not k["name"].startswith("aten::")]
        total = sum(k["ms"] for k in kern) or 1.0
        lines += [f"| `{k['name']}` | {k['calls']} | {k['ms']:.2f} | "
                  f"{100 * k['ms'] / total:.1f} % |" for k in kern]
        lines.append("")
    if res.get("conv"):
        lines += ["## GN-LeNet's conv2 for every client, three ways", "",
                  "| way | ms | GFLOP/s | share of fp32 peak |", "|---|---:|---:|---:|"]
        for r in res["conv"]:
            if r["ms"] is None:
                lines.append(f"| {r['way']} | out of memory | | |")
            else:
                lines.append(f"| {r['way']} | {r['ms']:.2f} | {r['gflops']:.0f} | "
                             f"{100 * r['share_of_peak']:.2f} % |")
        lines.append("")
    r = res.get("run")
    if r:
        hit = r.get("reached")
        lines += ["## Time to accuracy", "",
                  f"D-SGD, exponential graph, n = {r['n']:,}, IID, batch {r['batch_size']}, lr "
                  f"{r['lr']}, evaluated every {r['eval_every']} rounds; {r.get('rounds_run')} "
                  f"rounds run, a round {1e3 * (r.get('round_seconds_median') or math.nan):.0f}"
                  " ms (median).", "",
                  (f"**{r['target']:.0%} test accuracy (`test_acc_mean`) at round {hit['round']}, "
                   f"{hit['seconds']:.1f} s** (evaluations included)." if hit else
                   f"**{r['target']:.0%} not reached** in the run's wall limit."), "",
                  "| round | test accuracy | seconds |", "|---:|---:|---:|"]
        lines += [f"| {c['round']} | {c['acc']:.4f} | {c['seconds']:.1f} |"
                  for c in r.get("curve", [])]
        lines.append("")
    if res.get("reading"):
        lines += ["## Reading", "", res["reading"], ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--eval-every", type=int, default=5)
    ap.add_argument("--target", type=float, default=0.8)
    ap.add_argument("--max-seconds", type=float, default=240.0)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batch", type=int, default=0,
                    help="a batch smaller than a client's training set (0: all of it)")
    ap.add_argument("--parts", default="profile,conv,run")
    ap.add_argument("--json", default=str(HERE / "gpu_fmnist_lenet.json"))
    ap.add_argument("--out", default=str(HERE / "gpu_fmnist_lenet.md"))
    ap.add_argument("--render", action="store_true")
    args = ap.parse_args()
    if args.render:
        Path(args.out).write_text(render(json.loads(Path(args.json).read_text())))
        return
    res: dict[str, Any] = dict(
        date=datetime.date.today().isoformat(), torch=torch.__version__,
        gpu=torch.cuda.get_device_name(0) if args.device == "cuda" else platform.processor())

    def save() -> None:
        Path(args.json).write_text(json.dumps(res, indent=1) + "\n")
        Path(args.out).write_text(render(res))

    res["peak"] = fp32_peak(args.device)
    save()
    parts = args.parts.split(",")
    per = min(60_000 // args.n, args.batch) if args.batch else 60_000 // args.n
    if "profile" in parts:
        res["profile"] = profile_step(args.n, per, args.device, res["peak"])
        save()
    if "conv" in parts:
        res["conv"] = conv_three_ways(args.n, per, args.device, res["peak"])
        save()
    if "run" in parts:
        try:
            time_to_accuracy(args, res)
        finally:
            save()
    print(render(res))


if __name__ == "__main__":
    main()
