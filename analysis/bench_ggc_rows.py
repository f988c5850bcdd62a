"""DPFL's GGC and BGGC scoring, at each step, only the clients still deciding
(``topofl.algorithms.ggc.greedy_rows`` with ``env.losses(z, "val", rows=...)``): this code
against another checkout's (``--before DIR``), in one run: the seconds of a few rounds and
whether the records are the same, bit for bit.

A client stops deciding when its candidates run out or its budget $B_c$ is reached; before,
every step still scored every client's two candidate averages on its validation split. Each
case runs ``--rounds`` rounds of a committed config at its default scale (the first value of
its sweep, or the value a case names: ``config?key=value``), records to a file, in a fresh
interpreter, one torch thread, the two checkouts alternating, best of ``--repeat``, and reads
the run's own ``wall_time`` record (the first round holds DPFL's pre-processing, BGGC over
every other client). Writes ``analysis/bench_ggc_rows.md``.

Usage: ``python analysis/bench_ggc_rows.py --before DIR [--rounds 3] [--repeat 2]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

from _checkouts import TIMED_CHILD, alternate, ratio_table  # beside this script

ROOT = Path(__file__).resolve().parents[1]

#: committed configs: no budget (the sweep's first value, 1.0 N) and B_c = 0.2 N
CASES = ["dpfl_fig6_dir_dpfl", "dpfl_fig6_dir_dpfl?budget=0.2", "dpfl_fig5_dpfl",
         "dpfl_fig5_dpfl?budget=0.2", "dpfl_table1_dir_dpfl?budget=0.2"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    codes = [("after", ROOT), ("before", args.before.resolve())]
    t0 = time.time()
    best, same = alternate(codes, CASES, TIMED_CHILD, args.rounds, args.repeat)
    first = CASES[0]
    lines = [
        "# DPFL's greedy selection: only the clients still deciding are scored",
        "",
        f"`python analysis/bench_ggc_rows.py --before DIR --rounds {args.rounds} --repeat "
        f"{args.repeat}` on {platform.processor() or 'x86_64'} ({os.cpu_count()} cores, one "
        f"torch thread), {time.strftime('%Y-%m-%d')}, {time.time() - t0:.0f} s in all. Code "
        f"after: `{best[('after', first)]['code']}`; before: "
        f"`{best[('before', first)]['code']}`. Each case: {args.rounds} rounds of the "
        "committed config at its default scale (its stand-in data: MNIST-1D, an MLP of 3,274 "
        "parameters; the first value of its sweep, or the budget it names), best of "
        f"{args.repeat}, the two checkouts alternating. Seconds are the run's `wall_time` "
        "record: training, evaluation, and DPFL's pre-processing in the first round (BGGC "
        "over every other client), so a case's time is not a steady round's. *Records "
        "equal*: every record of the two runs but the wall times, bit for bit.",
        "",
    ] + ratio_table(best, same, CASES)
    (ROOT / "analysis" / "bench_ggc_rows.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
