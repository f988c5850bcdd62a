"""What writing and holding a run's per-client records costs: rows against columns (issue 58).

One evaluation of a default run records three per-client metrics: ``test_acc`` (float) and the
ledger's ``bytes_sent`` and ``bytes_received`` (integers). This script writes ``--evals``
evaluations of them for ``n`` clients to a records file in two ways, each in a fresh process:

* *rows*: the format before issue 58, one JSON row a client (``Recorder.log(metric, v, t, i)``
  for every client, which is what ``Recorder.log_clients`` did), the rows also kept in memory;
* *columns*: ``Recorder.log_clients`` now, one array a metric an evaluation appended to the
  client file beside the records (:mod:`topofl.records.columns`), nothing kept.

It reports the CPU seconds an evaluation's writing takes (``time.process_time``, flushes
included), the memory the recorder holds after the evaluations (``tracemalloc``: Python's
allocations, the file's buffers included) and the peak resident memory of the process
(``ru_maxrss``), and the seconds to load the file back and read one round's values.

``python analysis/bench_records.py`` writes ``analysis/bench_records.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import json, os, resource, sys, time, tracemalloc
import numpy as np
from topofl.records import Recorder, load
n, evals, way, folder = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
rng = np.random.default_rng(0)
acc = rng.random(n)
sent = rng.integers(0, 2**30, n)
got = rng.integers(0, 2**30, n)
path = os.path.join(folder, way + ".jsonl")
tracemalloc.start()
rec = Recorder(path, run="r")
rec.log_config({"rounds": evals})
cpu = []
for t in range(evals):
    if t == 1:  # after the first evaluation (its imports, the file's buffers)
        base = tracemalloc.get_traced_memory()[0]
    t0 = time.process_time()
    for metric, values in (("test_acc", acc), ("bytes_sent", sent), ("bytes_received", got)):
        if way == "rows":
            for i, v in enumerate(values.tolist()):
                rec.log(metric, v, t, i)
        else:
            rec.log_clients(metric, values, t)
    rec.log("test_acc_mean", float(acc.mean()), t)
    rec.flush(sync=False)
    cpu.append(time.process_time() - t0)
held = (tracemalloc.get_traced_memory()[0] - base) / (evals - 1)
tracemalloc.stop()
rec.close()
size = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)
           if f.startswith(way + "."))
t0 = time.process_time()
back = load(path)
one = back.per_client("test_acc", evals - 1)
read = time.process_time() - t0
assert np.array_equal(one, acc)
print(json.dumps({"cpu": cpu, "held": held, "bytes": size, "read": read,
                  "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def measure(n: int, evals: int, way: str) -> dict[str, Any]:
    """One fresh process writing ``evals`` evaluations of ``n`` clients ``way``."""
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        out = subprocess.run([sys.executable, "-c", CHILD, str(n), str(evals), way, folder],
                             capture_output=True, text=True, check=True, env=env)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return {"n": n, "evals": evals, "way": way, **got}


def _fmt_bytes(b: float) -> str:
    for unit, k in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(b) >= k:
            return f"{b / k:.3g} {unit}"
    return f"{b:.0f} B"


def markdown(results: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        "# Writing and holding per-client records: rows against columns "
        "(`analysis/bench_records.py`)", "",
        f"`{meta['command']}` on {meta['date']}, topofl {meta['version']} (commit "
        f"{meta['commit']}; `+`: uncommitted changes). Machine: "
        f"{meta['cpu']}, {meta['cores']} logical CPUs, Python {meta['python']}; one process "
        "a case, one thread. Each evaluation writes three per-client metrics (`test_acc`, "
        "`bytes_sent`, `bytes_received`: what a default run records) and one aggregate row, "
        "then flushes. *CPU s an evaluation*: the median over the evaluations (process time); "
        "*held*: what the recorder's holdings grow by an evaluation, after the first (tracemalloc; "
        "0: flat in the evaluations); *peak*: the "
        "process's peak resident memory; *file*: the records on disk (the `.jsonl` and, for "
        "columns, the client file); *read*: loading the records and reading one round's "
        "values back.", "",
        "| n | evaluations | way | CPU s an evaluation | held an evaluation | peak | file | "
        "read (s) |",
        "|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        cpu = sorted(r["cpu"])[len(r["cpu"]) // 2]
        lines.append(f"| {r['n']:,} | {r['evals']} | {r['way']} | {cpu:.3g} | "
                     f"{_fmt_bytes(max(0.0, r['held']))} | {_fmt_bytes(r['peak'])} | "
                     f"{_fmt_bytes(r['bytes'])} | {r['read']:.3g} |")
    lines += ["", "Columns against rows at the same n (ratio of the medians):", "",
              "| n | CPU an evaluation, columns / rows | held an evaluation, columns / rows |",
              "|---:|---:|---:|"]
    by = {(r["n"], r["way"]): r for r in results}
    for n in sorted({r["n"] for r in results}):
        if (n, "rows") in by and (n, "columns") in by:
            a, b = by[(n, "columns")], by[(n, "rows")]
            ca, cb = (sorted(x["cpu"])[len(x["cpu"]) // 2] for x in (a, b))
            lines.append(f"| {n:,} | {ca / cb:.3g} | "
                         f"{max(0.0, a['held']) / max(1.0, b['held']):.2g} |")
    return "\n".join(lines) + "\n"


def _commit() -> str:
    """The checkout's commit, with ``+`` when files differ from it."""
    def git(*a: str) -> str:
        return subprocess.run(["git", *a], capture_output=True, text=True, cwd=HERE).stdout
    return git("rev-parse", "--short=12", "HEAD").strip() + ("+" if git("status", "--porcelain",
                                                                        "topofl") else "")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ns", default="10000,100000,1000000")
    p.add_argument("--evals", type=int, default=5)
    p.add_argument("--rows-max-n", type=int, default=1_000_000,
                   help="largest n the rows are written at")
    p.add_argument("--out", default=os.path.join(HERE, "bench_records.md"))
    p.add_argument("--json", default=os.path.join(HERE, "bench_records.json"))
    args = p.parse_args(argv)
    import topofl

    results = []
    t0 = time.time()
    for n in (int(x) for x in args.ns.split(",")):
        for way in ("rows", "columns"):
            if way == "rows" and n > args.rows_max_n:
                continue
            evals = args.evals if way == "columns" or n < 10**6 else 3
            results.append(measure(n, evals, way))
            print(f"n={n:,} {way}: {results[-1]['cpu']}", file=sys.stderr)
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            cpu = next(line.split(":", 1)[1].strip() for line in fh if "model name" in line)
    except (OSError, StopIteration):
        pass
    meta = {"command": "python analysis/bench_records.py" + (" " + " ".join(argv or sys.argv[1:])
                                                             if (argv or sys.argv[1:]) else ""),
            "date": datetime.date.today().isoformat(), "version": topofl.__version__,
            "cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "commit": _commit(), "seconds": round(time.time() - t0, 1)}
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump({"meta": meta, "results": results}, fh, indent=1)
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(markdown(results, meta))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
