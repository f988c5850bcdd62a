"""Regenerating paper results stacked (the default) against one by one (``--stack off``).

Each named result's script runs from an empty run cache twice, as a user regenerates it
(``python paper_figures/fig_<name>.py --jobs J --stack on|off --out TMP --runs TMP/runs``, a
fresh process each), at the default scale; the two modes alternate which goes first from one
result to the next, so that a change of the machine's load over the benchmark weighs on both.
The wall time of each, the runs that ran in stacked passes, and the machine's load average
before and after are written to ``analysis/bench_figures.md`` (``--md``). A result whose
verdict differs between the two modes is an error (stacking must not decide a verdict).

Usage: ``python analysis/bench_figures.py [NAME ...] [--jobs 2] [--md PATH]`` (default: a
D-Cliques result of logistic regression and one of an MLP).
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

import topofl as tf
from topofl.tools.bench import loadavg

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ("dcliques_01", "dcliques_15")


def regenerate(name: str, stack: bool, jobs: int) -> tuple[float, int, int, str]:
    """Seconds to regenerate ``name`` from an empty cache, the runs that ran stacked, the runs
    in all, and the verdict."""
    with tempfile.TemporaryDirectory() as d:
        cmd = [sys.executable, str(ROOT / "paper_figures" / f"fig_{name}.py"), "--jobs",
               str(jobs), "--stack", "on" if stack else "off", "--out", d, "--runs",
               str(Path(d) / "runs")]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
        took = time.perf_counter() - t0
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n"
                               f"{done.stderr[-2000:]}")
        lines = done.stderr.splitlines() + done.stdout.splitlines()
        stacked = sum(1 for line in lines if "(stacked with" in line)
        total = sum(1 for line in lines if re.match(r"\[\d+/\d+\] ", line))
        verdict = str(json.loads((Path(d) / f"{name}.json").read_text())["verdict"])
    return took, stacked, total, verdict


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=list(DEFAULT))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--md", type=Path, default=Path(__file__).with_suffix(".md"))
    args = ap.parse_args(argv)
    known = tf.figures.results.available()
    unknown = [n for n in args.names if n not in known]
    if unknown:
        raise SystemExit(f"unknown results {unknown}; `topofl figure list` names them")
    load0 = loadavg()
    rows, sums = [], {True: 0.0, False: 0.0}
    for i, name in enumerate(args.names):
        got = {}
        for stack in ((True, False) if i % 2 == 0 else (False, True)):
            got[stack] = regenerate(name, stack, args.jobs)
            sums[stack] += got[stack][0]
            print(f"{name} stack={'on' if stack else 'off'}: {got[stack][0]:.1f} s",
                  file=sys.stderr)
        (on, k, n, v_on), (off, _, _, v_off) = got[True], got[False]
        if v_on != v_off:
            raise SystemExit(f"{name}: verdict {v_on!r} stacked but {v_off!r} one by one")
        rows.append(f"| {name} | {n} | {k} | {off:.0f} | {on:.0f} | {on / off:.2f} | {v_on} |")
    load1 = loadavg()
    total = (f"| all | | | {sums[False]:.0f} | {sums[True]:.0f} | "
             f"{sums[True] / sums[False]:.2f} | |")
    text = "\n".join([
        "# Regenerating paper results: stacked vs one by one", "",
        f"`python analysis/bench_figures.py {' '.join(args.names)} --jobs {args.jobs}` "
        f"(topofl {tf.__version__}, code `{tf.figures.code_fingerprint()}`, torch "
        f"{torch.__version__}, {platform.machine()}, one torch thread a run). Each result "
        "regenerated from an empty run cache at the default scale, once stacked and once "
        "one by one, in a fresh process each; the order alternates from one result to the "
        "next. Same verdict both ways for every result.", "",
        f"Machine load average (1 min) before: {load0}, after: {load1} (a shared machine: "
        "other jobs ran beside this one; the ratio compares two runs under the same load).",
        "",
        "| result | runs | runs stacked | one by one (s) | stacked (s) | stacked / one by one "
        "| verdict |",
        "|---|---|---|---|---|---|---|", *rows, total, ""])
    args.md.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
