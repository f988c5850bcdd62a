"""A committed result re-run on this machine records other seconds for two reasons: the code
changed since it last ran, and the machine did (another CPU, or the same CPU under another
load). This script measures the first alone: a few rounds of each of the result's configs on
the code it last ran on (a checkout of the commit its certificate chain names for that code)
and on this code, in one run on this machine, alternating, best of ``--repeat``; what is left
of the recorded change is the machine's.

Each case runs ``--rounds`` rounds of one committed config at its default scale (a grid
config's cell, or a plain config's first value of its sweep), records to a file, in a fresh
interpreter with one torch thread, and reads the run's own ``wall_time`` record (training and
evaluation: what a result's recorded seconds add up, building the run and the plotting aside).
*Records equal*: every record of the two runs but the wall times, bit for bit (the same code's
numbers where the code between the two checkouts computes the same).

Usage: ``python analysis/bench_rerun_split.py --result dfedpgp_table3 --before DIR
[--rounds 20] [--repeat 2]``, ``DIR`` a checkout of the commit :data:`RESULTS` names (e.g.
``git worktree add DIR COMMIT``). Writes ``analysis/bench_rerun_split_<result>.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

from _checkouts import TIMED_CHILD, alternate, ratio_table  # beside this script

ROOT = Path(__file__).resolve().parents[1]

#: result -> (the code its record before this session's re-run names, a commit of that code
#: (its certificate's ``from_commit`` in paper_figures/results/equivalence.json), the cases:
#: ``config`` or ``config:cell`` with the cell's labels joined by ``+``)
RESULTS = {
    "dfedpgp_table3": ("0.1.0+8704bf36c0c2", "71b37ed8477b2c26f8c55e9d865b3ec4282b3bc8", [
        f"dfedpgp_table3:{m}+Dir" for m in ("FedAvg", "FedPer", "FedRep", "FedBABU", "Ditto",
                                            "DFedAvgM", "Dis-PFL", "OSGP", "DFedPGP")]),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--result", choices=sorted(RESULTS), required=True)
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    old_code, commit, cases = RESULTS[args.result]
    codes = [("after", ROOT), ("before", args.before.resolve())]
    t0 = time.time()
    best, same = alternate(codes, cases, TIMED_CHILD, args.rounds, args.repeat)
    found = best[("before", cases[0])]["code"]
    if found != old_code:
        raise SystemExit(f"--before computes {found}, not {old_code}: check out {commit}")
    record = json.loads((ROOT / "paper_figures" / "results" / f"{args.result}.json").read_text())
    ratios = [best[("after", c)]["wall_time"] / best[("before", c)]["wall_time"] for c in cases]
    before = sum(best[("before", c)]["wall_time"] for c in cases)
    after = sum(best[("after", c)]["wall_time"] for c in cases)
    lines = [
        f"# {args.result}: what the code changed in its seconds, apart from the machine",
        "",
        f"`python analysis/bench_rerun_split.py --result {args.result} --before DIR --rounds "
        f"{args.rounds} --repeat {args.repeat}` on {platform.processor() or 'x86_64'} "
        f"({os.cpu_count()} cores, one torch thread), {time.strftime('%Y-%m-%d')}, "
        f"{time.time() - t0:.0f} s in all. Before: `{old_code}` (commit `{commit[:12]}`), the "
        "code of the result's record before it was re-run; after: "
        f"`{best[('after', cases[0])]['code']}`. The result now records "
        f"{record['seconds']:,.0f} s on `{record['code'].split('+')[-1]}`. Each case: "
        f"{args.rounds} rounds of a committed config at its default scale, best of "
        f"{args.repeat}, the two checkouts alternating; seconds are the run's `wall_time` "
        "record.",
        "",
    ] + ratio_table(best, same, cases, first="case")
    lines += ["", f"All cases: {before:.2f} s before, {after:.2f} s after, **{after / before:.2f}"
              f"x** (the cases' median ratio {statistics.median(ratios):.2f}). The result's runs "
              "weigh its configs by their rounds and seeds, so the sum is a guide, not the "
              "result's own ratio."]
    out = ROOT / "analysis" / f"bench_rerun_split_{args.result}.md"
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
