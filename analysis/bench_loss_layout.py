"""The training loss's softmax on few classes: torch's last-dimension kernel against the same
log-softmax with the classes along dimension 1 (issue 58, the regeneration time).

:meth:`topofl.engine.executors.BatchedExecutor._autograd` takes the mean cross-entropy of each
client's batch from logits ``[m * b, C]`` (``F.cross_entropy``, the classes along the last
dimension). On the CPU torch's log-softmax along a last dimension of 10 classes runs about a
row at a time; along dimension 1 of ``[m, C, b]`` it runs along the samples, vectorized. This
script times, in one process, one thread:

1. the log-softmax alone, forward, on ``[m * b, C]`` (last dimension) and on ``[m, C, b]``
   (dimension 1), for the class counts of the committed results (10, 62, 100);
2. the cross-entropy, forward and backward, both layouts;
3. a whole local step (``BatchedExecutor.sgd_``) of the DFedPGP and DPFL figure runs'
   stand-in MLP (40-64-10 on MNIST-1D: 100 clients x 50 samples, 200 x 16) with
   ``F.cross_entropy`` as it is and with the loss taken in the ``[m, C, b]`` layout;

and says whether the two layouts give the same bits (they do not: another order of the same
sums), which is why the faster layout is not the default: every committed result trained
through autograd would move in its last bits and have to be rerun to stay current.

Usage: ``python analysis/bench_loss_layout.py [--reps 200]``; writes
``analysis/bench_loss_layout.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

import topofl as tf
from topofl._utils.cpu import cpu_model
from topofl.engine import executors
from topofl.engine.layout import ParamLayout


def _best_ms(f: Callable[[], Any], reps: int) -> float:
    """The least over 5 batches of ``reps // 5`` calls, ms a call (after 10 warm-up calls)."""
    for _ in range(10):
        f()
    k = max(1, reps // 5)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(k):
            f()
        best = min(best, (time.perf_counter() - t0) / k)
    return best * 1e3


def _ce_rows(logits: torch.Tensor, y: torch.Tensor, m: int) -> torch.Tensor:
    """Per-sample cross-entropy of ``[m * b, C]`` logits with the classes along dimension 1
    of ``[m, C, b]`` (the faster layout; other bits)."""
    n, c = logits.shape
    b = n // m
    lsm = torch.log_softmax(logits.view(m, b, c).transpose(1, 2), 1)
    return lsm.gather(1, y.view(m, 1, b)).neg().view(n)


def _kernel_row(m: int, b: int, c: int, reps: int, gen: torch.Generator) -> dict[str, Any]:
    """One row of the kernels' table: ``m`` clients x ``b`` samples, ``c`` classes."""
    x = torch.randn(m * b, c, generator=gen)
    y = torch.randint(0, c, (m * b,), generator=gen)
    xt = x.view(m, b, c).transpose(1, 2).contiguous()
    last = _best_ms(lambda: torch.log_softmax(x, 1), reps)
    dim1 = _best_ms(lambda: torch.log_softmax(xt, 1), reps)
    xg = x.clone().requires_grad_(True)

    def ce_last() -> None:
        xg.grad = None
        F.cross_entropy(xg, y, reduction="none").view(m, b).mean(1).sum().backward()  # type: ignore[no-untyped-call]

    def ce_dim1() -> None:
        xg.grad = None
        _ce_rows(xg, y, m).view(m, b).mean(1).sum().backward()  # type: ignore[no-untyped-call]

    # the same loss to rounding, whichever layout
    torch.testing.assert_close(_ce_rows(x, y, m), F.cross_entropy(x, y, reduction="none"))
    a = torch.log_softmax(x, 1)
    t = torch.log_softmax(xt, 1).transpose(1, 2).reshape(m * b, c)
    return {"m": m, "b": b, "C": c, "last": last, "dim1": dim1,
            "ce_last": _best_ms(ce_last, reps), "ce_dim1": _best_ms(ce_dim1, reps),
            "same": torch.equal(a, t),
            "rel": float(((a - t).abs() / a.abs().clamp_min(1e-30)).max())}


def kernels(reps: int) -> list[dict[str, Any]]:
    """Rows of the kernels' table: log-softmax and cross-entropy, both layouts."""
    gen = torch.Generator().manual_seed(0)
    return [_kernel_row(m, b, c, reps, gen)
            for m, b, c in ((100, 50, 10), (200, 16, 10), (100, 50, 62), (100, 50, 100))]


def _step_row(m: int, b: int, who: str, reps: int, gen: torch.Generator) -> dict[str, Any]:
    """One row of the local steps' table: ``m`` clients x ``b`` samples of the MLP."""
    model = tf.models.build_model("mlp", (40,), 10, hidden=(64,), seed=0)
    layout = ParamLayout.from_model(model)
    size = sum(p.numel() for p in model.parameters())
    flat = torch.randn(m, size, generator=gen) * 0.1
    x = torch.randn(m, b, 40, generator=gen)
    y = torch.randint(0, 10, (m, b), generator=gen)
    lr = torch.full((m,), 0.01)
    ex = executors.BatchedExecutor(model, layout)

    def step() -> None:
        ex.sgd_(flat, x, y, "all", lr)

    def transposed(logits: torch.Tensor, target: torch.Tensor,
                   reduction: str = "none") -> torch.Tensor:
        assert reduction == "none"
        return _ce_rows(logits, target, m)

    as_is = _best_ms(step, reps)
    original = F.cross_entropy  # the function executors.py calls, as F.cross_entropy
    F.cross_entropy = transposed  # type: ignore[assignment]
    try:
        fast = _best_ms(step, reps)
    finally:
        F.cross_entropy = original
    return {"who": who, "params": size, "as_is": as_is, "fast": fast}


def steps(reps: int) -> list[dict[str, Any]]:
    """Rows of the local steps' table: the figure runs' stand-in MLP, both losses."""
    gen = torch.Generator().manual_seed(0)
    return [_step_row(100, 50, "DFedPGP (100 clients, batch 50)", reps, gen),
            _step_row(200, 16, "DPFL (200 clients, batch 16)", reps, gen)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--out", default=str(Path(__file__).with_suffix(".md")))
    args = ap.parse_args()
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    load0 = os.getloadavg()[0]
    k, s = kernels(args.reps), steps(args.reps)
    lines = [
        "# The training loss's softmax on few classes: last dimension against dimension 1",
        "",
        f"`python analysis/bench_loss_layout.py --reps {args.reps}`, "
        f"{time.strftime('%Y-%m-%d')}, topofl {tf.__version__}. Machine: "
        f"{cpu_model()}, {os.cpu_count()} logical CPUs, "
        f"{platform.machine()}; torch {torch.__version__}, 1 thread; 1-minute load average "
        f"{load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; "
        f"{time.perf_counter() - t0:.0f} s. Each time is the least of 5 batches of calls "
        "(ms a call). See the script's docstring for what each column measures.",
        "",
        "## The kernels",
        "",
        "| clients x samples | classes | log-softmax, last dim (ms) | dim 1 of [m, C, b] (ms) "
        "| ratio | cross-entropy fwd + bwd, last dim (ms) | dim 1 (ms) | ratio | same bits "
        "| largest relative difference |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|",
        *[f"| {r['m']} x {r['b']} | {r['C']} | {r['last']:.3f} | {r['dim1']:.3f} | "
          f"{r['dim1'] / r['last']:.2f} | {r['ce_last']:.3f} | {r['ce_dim1']:.3f} | "
          f"{r['ce_dim1'] / r['ce_last']:.2f} | {'yes' if r['same'] else 'no'} | "
          f"{r['rel']:.1e} |" for r in k],
        "",
        "## A whole local step of the figure runs' stand-in MLP",
        "",
        "`BatchedExecutor.sgd_` (forward, cross-entropy, backward, update) of the MLP "
        "40-64-10 the DFedPGP and DPFL results train on MNIST-1D, float32:",
        "",
        "| runs | parameters a client | as it is (ms) | loss in [m, C, b] (ms) | ratio |",
        "|---|---:|---:|---:|---:|",
        *[f"| {r['who']} | {r['params']:,} | {r['as_is']:.2f} | {r['fast']:.2f} | "
          f"{r['fast'] / r['as_is']:.2f} |" for r in s],
        "",
        "## Reading",
        "",
        "- torch's log-softmax along a last dimension of 10 classes is the slow part of the "
        f"loss: along dimension 1 it takes {k[0]['dim1'] / k[0]['last']:.2f}x the time at "
        f"{k[0]['m']} x {k[0]['b']} samples, the cross-entropy forward and backward "
        f"{k[0]['ce_dim1'] / k[0]['ce_last']:.2f}x. At 62 and 100 classes the last "
        "dimension is the faster one (the cross-entropy "
        f"{k[2]['ce_dim1'] / k[2]['ce_last']:.2f}x and {k[3]['ce_dim1'] / k[3]['ce_last']:.2f}x"
        " along dimension 1): a switch would take the other layout only for few classes. "
        "A local step of the figure runs' MLP takes "
        f"{s[0]['fast'] / s[0]['as_is']:.2f}x (DFedPGP) and {s[1]['fast'] / s[1]['as_is']:.2f}x "
        "(DPFL) of its time with the loss in the other layout.",
        "- The two layouts do not give the same bits (the sums of a row's exponentials in "
        "another order; on some draws, as the 200 x 16 row's, they happen to). "
        "The default stays as it is: switching would move every committed "
        "result trained through autograd in its last bits, so each would have to be rerun "
        "(and its verdict re-read) to stay current. This change and that rerun are one step "
        "toward the regeneration time issue 58 asks for, on its MLP and CNN results only: "
        "softmax regression already takes the classes along dimension 1 in its closed form.",
        "",
    ]
    Path(args.out).write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
