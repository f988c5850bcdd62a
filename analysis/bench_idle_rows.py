"""Local SGD where most clients are done with their round's steps: this code against another
checkout's (``--before DIR``), in one run: the seconds a round and whether the records are the
same, bit for bit.

In the DPFL and PFedDST results, clients hold different numbers of samples and run epochs,
so a round lasts as many local steps as its largest client needs; from then on the others
take their steps at rate 0 (and non-participants of the server baselines always do). Each
case runs ``--rounds`` rounds of a committed config at its default scale (the first value of
its sweep, records to a file) in a fresh interpreter, one torch thread, alternating the two
checkouts, best of ``--repeat``, and reads the run's own ``wall_time`` record (training and
evaluation: what a result's time to regenerate adds up). Writes
``analysis/bench_idle_rows.md``.

Usage: ``python analysis/bench_idle_rows.py --before /tmp/wt_before [--rounds 3]
[--repeat 2]``; without ``--before`` only this checkout is timed.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

from _checkouts import CONFIG_CHILD, alternate  # beside this script

ROOT = Path(__file__).resolve().parents[1]

#: committed configs (paper_figures/configs) whose clients take unequal numbers of steps
CASES = ["dpfl_fig6_dir_ditto", "dpfl_fig6_dir_dpfl", "dpfl_fig6_dir_apfl",
         "dpfl_fig6_dir_fedavg_ft", "dpfl_fig6_dir_local", "dpfl_fig6_patho_ditto",
         "pfeddst_cifar10_pfeddst", "pfeddst_cifar10_dfedpgp"]

CHILD = CONFIG_CHILD + r"""
from topofl.engine import local
steps = {"all": 0, "moving": 0}
inner, moving = local.LocalStepper._step, getattr(local.LocalStepper, "_step_moving", None)
def step(self, *a, **k):
    steps["all"] += 1
    return inner(self, *a, **k)
def few(self, *a, **k):
    out = moving(self, *a, **k)
    steps["moving"] += out is not None
    return out
local.LocalStepper._step = step
if moving is not None:
    local.LocalStepper._step_moving = few
c = time.process_time()
topofl.config.execute(cfg)
print(json.dumps({"cpu": time.process_time() - c, "code": topofl.figures.code_fingerprint(),
                  "steps": steps["all"], "moving": steps["moving"]}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, default=None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    codes = [("after", ROOT)] + ([("before", args.before.resolve())] if args.before else [])
    t0 = time.time()
    best, same = alternate(codes, CASES, CHILD, args.rounds, args.repeat)
    lines = [
        "# Local SGD with idle clients: the step of the moving rows alone",
        "",
        f"`python analysis/bench_idle_rows.py --rounds {args.rounds} --repeat {args.repeat}"
        + (" --before DIR`" if args.before else "`") + f" on {platform.processor() or 'x86_64'}"
        f" ({os.cpu_count()} cores, one torch thread), {time.strftime('%Y-%m-%d')}, "
        f"{time.time() - t0:.0f} s in all. Each case: {args.rounds} rounds of the committed "
        "config at its default scale (its stand-in data: MNIST-1D, an MLP of 3,274 "
        "parameters; the first value of its sweep), best of "
        f"{args.repeat}, the two checkouts alternating. Seconds are the run's `wall_time` "
        "record (training and evaluation); the first rounds include DPFL's pre-processing, "
        "so a case's time is not a steady round's.",
        "",
    ]
    first = CASES[0]
    if args.before:
        lines += [
            f"Code after: `{best[('after', first)]['code']}`; before: "
            f"`{best[('before', first)]['code']}`.",
            "",
            "*Steps on the copy*: the local steps (after) that took the moving rows' "
            "gradients on a copy (`LocalStepper._step_moving`); the element-wise step of the "
            "moving rows alone (`sgd_step`) is taken wherever a rate is 0, in these steps and "
            "others. A case where no client is ever idle (APFL's and PFedDST's fixed number of "
            "local steps) takes neither: its ratio is the run-to-run spread of this machine.",
            "",
            "| config | s before | s after | after / before | steps on the copy | records "
            "equal, bit for bit |",
            "|---|---:|---:|---:|---:|---|",
        ]
        for name in CASES:
            b, a = best[("before", name)], best[("after", name)]
            lines.append(f"| {name} | {b['wall_time']:.2f} | {a['wall_time']:.2f} | "
                         f"{a['wall_time'] / b['wall_time']:.2f} | "
                         f"{a['moving']:,} of {a['steps']:,} | "
                         f"{'yes' if same[name] else 'NO'} |")
    else:
        lines += ["| config | s |", "|---|---:|"]
        lines += [f"| {n} | {best[('after', n)]['wall_time']:.2f} |" for n in CASES]
    (ROOT / "analysis" / "bench_idle_rows.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
