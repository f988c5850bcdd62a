"""The per-sample cross-entropy through the leading-dimension ``log_softmax`` on AVX-512
(``topofl.engine.crossentropy.cross_entropy_rows``): its kernel against
``F.cross_entropy(..., reduction="none")``, and this code against another checkout's
(``--before DIR``) on the committed configs, in one run: seconds and whether the records are
the same, bit for bit.

The kernel rows time, on one torch thread, a forward pass and a forward and backward pass of
``[N, 10]`` logits (a local step of 100 clients x 50 samples: N = 5,000; an evaluation batch:
N = 20,000), the two functions alternating, best of ``--repeat`` blocks of 200 calls; they
check that values and gradients are equal, bit for bit. Each config case runs ``--rounds``
rounds of a committed config at its default scale (a grid cell as ``NAME:LABEL+LABEL``, or
with a value in place of its sweep's first as ``NAME?KEY=VALUE``) in a fresh interpreter,
one torch thread, the two checkouts alternating, best of ``--repeat``, and reads the run's
own ``wall_time`` record. Writes ``analysis/bench_crossentropy.md``.

Usage: ``python analysis/bench_crossentropy.py --before DIR [--rounds 10] [--repeat 2]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from _checkouts import TIMED_CHILD, alternate, ratio_table  # beside this script

from topofl.engine.crossentropy import cross_entropy_rows, takes_transposed

ROOT = Path(__file__).resolve().parents[1]

#: committed configs behind the largest recorded regeneration times (MLP, ten classes) and
#: one cnn1d config (its batched convolutions end in the same loss)
CASES = ["dfedpgp_table1:DFedPGP+CIFAR-10 Dir-0.3", "dfedpgp_table1:Ditto+CIFAR-10 Dir-0.3",
         "pfeddst_cifar10_pfeddst", "dpfl_fig2", "dcliques_14_dcliques",
         "dpfl_table1_dir_dpfl?budget=0.2"]


def _reference(z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(z, y, reduction="none")


def _time(fn: object, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(200):
            fn()  # type: ignore[operator]
        best = min(best, (time.perf_counter() - t) / 200)
    return best * 1e3


def _call(f: Any, z: torch.Tensor, y: torch.Tensor, backward: bool) -> Any:
    if backward:
        return lambda: torch.autograd.grad(f(z, y).sum(), z)
    return lambda: f(z.detach(), y)


def kernel_rows(repeat: int) -> list[str]:
    """The kernel table: ms a call, F.cross_entropy against cross_entropy_rows."""
    torch.set_num_threads(1)
    rows = ["| logits | pass | F.cross_entropy (ms) | cross_entropy_rows (ms) | ratio | "
            "equal, bit for bit |", "|---|---|---:|---:|---:|---|"]
    g = torch.Generator().manual_seed(0)
    for dtype in (torch.float32, torch.float64):
        for n in (5000, 20000):
            z = (torch.randn(n, 10, generator=g) * 5).to(dtype).requires_grad_(True)
            y = torch.randint(0, 10, (n,), generator=g)
            outs = [(f(z, y), torch.autograd.grad(f(z, y).sum(), z)[0])
                    for f in (_reference, cross_entropy_rows)]
            equal = torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])
            for label, backward in (("forward", False), ("forward + backward", True)):
                ms = {}
                for _ in range(2):  # the two alternate: each one's best of `repeat`
                    for f in (_reference, cross_entropy_rows):
                        call = _call(f, z, y, backward)
                        ms[f] = min(ms.get(f, float("inf")), _time(call, repeat))
                a, b = ms[_reference], ms[cross_entropy_rows]
                path = "transposed" if takes_transposed(z) else "torch's"
                rows.append(f"| [{n}, 10] {str(dtype)[6:]} ({path}) | {label} | {a:.3f} | "
                            f"{b:.3f} | {b / a:.2f} | {'yes' if equal else 'NO'} |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    t0 = time.time()
    kernels = kernel_rows(max(3, args.repeat))
    codes = [("after", ROOT), ("before", args.before.resolve())]
    best, same = alternate(codes, CASES, TIMED_CHILD, args.rounds, args.repeat)
    first = CASES[0]
    lines = [
        "# The per-sample cross-entropy through the leading-dimension log_softmax (AVX-512)",
        "",
        f"`python analysis/bench_crossentropy.py --before DIR --rounds {args.rounds} --repeat "
        f"{args.repeat}` on {platform.processor() or 'x86_64'} ({os.cpu_count()} cores, one "
        f"torch thread, torch {torch.__version__}, capability "
        f"{torch.backends.cpu.get_cpu_capability()}), {time.strftime('%Y-%m-%d')}, "
        f"{time.time() - t0:.0f} s in all. Code after: `{best[('after', first)]['code']}`; "
        f"before: `{best[('before', first)]['code']}`.",
        "",
        "## The kernel",
        "",
        "Best of the blocks of 200 calls, the two functions alternating; *equal*: the losses "
        "and the gradients of their sum.",
        "",
    ] + kernels + [
        "",
        "## Committed configs",
        "",
        f"Each case: {args.rounds} rounds of the committed config at its default scale (its "
        "stand-in data: MNIST-1D; an MLP of 3,274 parameters but the last case, cnn1d), best "
        f"of {args.repeat}, the two checkouts alternating. Seconds are the run's `wall_time` "
        "record (training and evaluation; DPFL's first round also holds its pre-processing). "
        "*Records equal*: every record of the two runs but the wall times, bit for bit.",
        "",
    ] + ratio_table(best, same, CASES)
    (ROOT / "analysis" / "bench_crossentropy.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
