"""Evaluation of clients' own padded test splits, scoring in each batch only the clients with a
sample in it (``topofl.engine.scoring.live_rows``): this code against another checkout's
(``--before DIR``), in one run: the seconds of a few rounds and whether the records are the
same, bit for bit.

The DPFL Patho(3) results split 320,000 test signals over 200 clients unevenly (1,600 on
average, 8,192 for the largest), so a client's test split is padded to 8,192 and scored in
chunks of 1,398: before, every client's rows of every chunk were scored, padding included;
kNN-Per also searched its neighbours for every padded query. Each case runs ``--rounds``
rounds of a committed config at its default scale (the first value of its sweep, records to a
file) in a fresh interpreter, one torch thread, alternating the two checkouts, best of
``--repeat``, and reads the run's own ``wall_time`` record (training and evaluation: what a
result's time to regenerate adds up). Writes ``analysis/bench_live_rows.md``.

Usage: ``python analysis/bench_live_rows.py --before /tmp/wt_before [--rounds 3]
[--repeat 2]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

from _checkouts import TIMED_CHILD, alternate, ratio_table  # beside this script

ROOT = Path(__file__).resolve().parents[1]

#: committed configs (paper_figures/configs): uneven test splits (Patho(3)) and an even-ish one
CASES = ["dpfl_fig6_patho_knn_per", "dpfl_fig6_patho_fedavg", "dpfl_fig6_patho_dpfl",
         "dpfl_fig6_dir_knn_per"]


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
        "# Evaluation of padded splits: only the clients with a sample in a batch",
        "",
        f"`python analysis/bench_live_rows.py --before DIR --rounds {args.rounds} --repeat "
        f"{args.repeat}` on {platform.processor() or 'x86_64'} ({os.cpu_count()} cores, one "
        f"torch thread), {time.strftime('%Y-%m-%d')}, {time.time() - t0:.0f} s in all. Code "
        f"after: `{best[('after', first)]['code']}`; before: "
        f"`{best[('before', first)]['code']}`. Each case: {args.rounds} rounds of the "
        "committed config at its default scale (its stand-in data: MNIST-1D, an MLP of 3,274 "
        "parameters; the first value of its sweep), best of "
        f"{args.repeat}, the two checkouts alternating. Seconds are the run's `wall_time` "
        "record (training and evaluation at every round, `eval_val` included); DPFL's "
        "include its pre-processing, so its time is not a steady round's. *Records equal*: "
        "every record of the two runs but the wall times, bit for bit.",
        "",
    ] + ratio_table(best, same, CASES)
    (ROOT / "analysis" / "bench_live_rows.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
