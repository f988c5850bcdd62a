"""The global evaluation's reduction against its matrix product (issue 58, item 2).

At scale a default run's evaluation is the global test subsample scored by every client:
:func:`topofl.engine.evaluation.shared_sums`, one block of clients x samples at a time, each
block a batched forward pass (the *product*: ``executor.logits``) and a reduction of its
``[rows, cols, classes]`` logits to each client's loss and correct predictions. The
reduction was ``torch.logsumexp`` and ``argmax``, a pass each over the last dimension (ten
classes, the slow axis of both); it is now :func:`~topofl.engine.evaluation.logsumexp_argmax`,
one ``torch.max`` pass giving the largest logit and its index, and the log-sum-exp's own
steps after it (the same bits: the script checks them).

For each model it times, on one block of the size ``shared_block`` picks, in thread CPU time
at one torch thread: the product, the reduction before (``logsumexp`` + ``argmax`` + the
label's logit), the reduction after (the fused pass + the label's logit), interleaved
repetitions, medians. ``python analysis/bench_eval_reduction.py`` writes
``analysis/bench_eval_reduction.md``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import subprocess
import time
from collections.abc import Callable

import torch

from topofl._utils.cpu import cpu_model
from topofl.engine.evaluation import logsumexp_argmax, shared_block
from topofl.engine.executors import make_executor
from topofl.engine.layout import ParamLayout
from topofl.models import build_model

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = (("logistic", (64,), {}), ("mlp", (64,), {"hidden": [32]}))


def _before(logits: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    at = torch.arange(int(y.shape[0]))
    loss = torch.logsumexp(logits, dim=-1) - logits[:, at, y]
    return (logits.argmax(dim=-1) == y).sum(dim=1).double(), loss.double().sum(dim=1)


def _after(logits: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    at = torch.arange(int(y.shape[0]))
    lse, pred = logsumexp_argmax(logits)
    return (pred == y).sum(dim=1).double(), (lse - logits[:, at, y]).double().sum(dim=1)


def _cpu_ms(fn: Callable[[], object]) -> float:
    t0 = time.thread_time()
    fn()
    return 1e3 * (time.thread_time() - t0)


def measure(name: str, shape: tuple[int, ...], params: dict, samples: int,
            reps: int) -> dict[str, float]:
    """Median thread-CPU milliseconds of the product and of both reductions on one block."""
    torch.manual_seed(0)  # the bench's own numbers
    model = build_model(name, shape, 10, seed=0, **params)
    layout = ParamLayout.from_model(model)
    executor = make_executor("batched", model, layout, torch.device("cpu"))
    rows, cols = shared_block(samples, 10)
    x_eval = 0.1 * torch.randn(rows, layout.num_params)
    x, y = torch.randn(cols, *shape), torch.arange(cols) % 10
    logits = executor.logits(x_eval, x, shared_input=True)
    a, b = _before(logits, y), _after(logits, y)
    same = all(torch.equal(u, v) for u, v in zip(a, b, strict=True))
    times: dict[str, list[float]] = {"product": [], "before": [], "after": []}
    for _ in range(reps):
        times["product"].append(_cpu_ms(lambda: executor.logits(x_eval, x, shared_input=True)))
        times["before"].append(_cpu_ms(lambda: _before(logits, y)))
        times["after"].append(_cpu_ms(lambda: _after(logits, y)))
    out = {k: statistics.median(v) for k, v in times.items()}
    out.update(rows=rows, cols=cols, params=layout.num_params, same=same)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--out", default=os.path.join(HERE, "bench_eval_reduction.md"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    load0, t0 = os.getloadavg()[0], time.time()
    rows = [(name, measure(name, shape, params, args.samples, args.reps))
            for name, shape, params in CASES]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=HERE).stdout.strip()
    lines = [
        "# The global evaluation's reduction against its matrix product",
        "",
        f"`python analysis/bench_eval_reduction.py --samples {args.samples} --reps "
        f"{args.reps}`, {datetime.date.today()}, topofl at `{commit}` (uncommitted changes "
        f"included). Machine: {cpu_model()}, "
        f"{os.cpu_count()} logical CPUs; torch {torch.__version__}, 1 thread. 1-minute load "
        f"average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; "
        f"{time.time() - t0:.0f} s. One block of `shared_sums` on {args.samples} shared "
        "samples of 10 classes; thread CPU ms, medians of interleaved repetitions.",
        "",
        "| model | parameters | block (clients x samples) | product ms | reduction before ms "
        "| x product | after ms | x product | after / before | same bits |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, r in rows:
        lines.append(
            f"| {name} | {r['params']:,} | {r['rows']:,} x {r['cols']} | {r['product']:.1f} "
            f"| {r['before']:.1f} | {r['before'] / r['product']:.2f}x | {r['after']:.1f} "
            f"| {r['after'] / r['product']:.2f}x | {r['after'] / r['before']:.2f} "
            f"| {'yes' if r['same'] else 'NO'} |")
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
