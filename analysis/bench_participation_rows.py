"""Server baselines with partial participation: this code against another checkout's
(``--before DIR``), in one run: the seconds a round and whether the records are the same,
bit for bit.

A server method's round trains ``participation * n`` clients; the others' learning rate is 0
(``Sampled``), and a local step that left out the gradients of rows at rate 0
(``LocalStepper._step_moving``) read the rates before that mask, so it took every client's
gradient until the participants' own steps ran out. ``LocalUpdate.rates`` gives the step the
masked rates. Each case runs ``--rounds`` rounds of a cell of the DFedPGP Fashion-MNIST gate
(``paper_figures/configs/dfedpgp_gate_fmnist.toml``: 100 clients, 10 a round, the 784-200-200-10
MLP, batch 128, 5 local epochs, Dir(0.3)) in a fresh interpreter, one torch thread,
alternating the two checkouts, best of ``--repeat``, and reads the run's own ``wall_time``
record. Writes ``analysis/bench_participation_rows.md``.

Usage: ``python analysis/bench_participation_rows.py --before /tmp/wt_before [--rounds 2]
[--repeat 1]``; it needs Debian's ``dataset-fashion-mnist``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

from _checkouts import TIMED_CHILD, alternate, ratio_table  # beside this script

ROOT = Path(__file__).resolve().parents[1]

#: the gate's server methods (their 10 % participation), as ``config:method+split`` cells
CASES = [f"dfedpgp_gate_fmnist:{m}+Fashion-MNIST Dir-0.3"
         for m in ("FedAvg", "FedPer", "FedRep", "FedBABU", "Ditto")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    codes = [("after", ROOT), ("before", args.before.resolve())]
    t0 = time.time()
    best, same = alternate(codes, CASES, TIMED_CHILD, args.rounds, args.repeat)
    first = CASES[0]
    lines = [
        "# Partial participation: the participants' gradients alone",
        "",
        f"`python analysis/bench_participation_rows.py --before DIR --rounds {args.rounds} "
        f"--repeat {args.repeat}` on {platform.processor() or 'x86_64'} ({os.cpu_count()} "
        f"cores shared with two training runs, one torch thread), {time.strftime('%Y-%m-%d')}, "
        f"{time.time() - t0:.0f} s in all. Each case: {args.rounds} rounds of a cell of the "
        "DFedPGP Fashion-MNIST gate (100 clients, 10 a round, the 784-200-200-10 MLP, batch "
        "128, 5 local epochs, Dir(0.3), seed 0), best of "
        f"{args.repeat}, the two checkouts alternating. Seconds are the run's `wall_time` "
        "record (training and evaluation).",
        "",
        f"Code after: `{best[('after', first)]['code']}`; before: "
        f"`{best[('before', first)]['code']}`.",
        "",
        *ratio_table(best, same, CASES, first="cell"),
    ]
    (ROOT / "analysis" / "bench_participation_rows.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
