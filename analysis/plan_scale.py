"""How close ``topofl plan --json`` is to measured runs from 10^3 to 10^6 clients (issue 43).

The config: ``analysis/configs/dsgd_ring.toml`` (D-SGD, logistic regression, a ring, 2 label
shards a client) with ``n_clients = n``, ``data = "synthetic:n_samples=50n,dim=40,seed=0"``
and 3 rounds. For each ``n``: the wall time of ``python -m topofl plan CONFIG --json`` (a
fresh interpreter, as a user runs it), and, up to ``--max-measured``, the config run in two
fresh interpreters, for 1 and for 3 rounds: *measured peak*: the larger peak resident memory
above the resident size after ``import torch, topofl`` (:data:`topofl.plan.PEAK_METER`, the
meter of the plan's probe and of ``analysis/plan_accuracy.py``); *measured seconds a round*:
(time of 1 + k rounds - time of 1 round) / k (k from 100 at 10^3 clients to 5 at 10^5, both
runs evaluated at their end only), the training round the plan predicts. Writes
``analysis/plan_scale.md`` (and the raw numbers as JSON with ``--json``).
``python analysis/plan_scale.py`` (about 10 minutes on 2 shared cores).
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

import torch

import topofl as tf
from topofl._configfile import read_config
from topofl._markdown import Document
from topofl.plan import PEAK_METER, ROUND_CLOCK, probe_rounds

HERE = os.path.dirname(os.path.abspath(__file__))

_MEASURE = PEAK_METER + ROUND_CLOCK + r"""
import json, sys, time
import torch
import topofl
torch.set_num_threads(int(sys.argv[2]))
mark = start_peak()
t0 = time.perf_counter()
spr = round_seconds({**json.loads(sys.argv[1]), "records_path": None, "progress": False})
print(json.dumps([spr, peak_since(mark), time.perf_counter() - t0]))
"""


def config(n: int) -> dict[str, Any]:
    """The compared config at ``n`` clients (3 rounds)."""
    cfg: dict[str, Any] = read_config(os.path.join(HERE, "configs", "dsgd_ring.toml"))
    cfg.update(n_clients=n, data=f"synthetic:n_samples={50 * n},dim=40,seed=0", rounds=3)
    return cfg


#: The memory limit the plans are made under (``TOPOFL_MEMORY_LIMIT``): high enough that a
#: plan larger than this machine is answered with its numbers, not refused.
PLAN_LIMIT = 10**13


def _run(code: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *code], capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": os.path.dirname(HERE),
                               "OMP_NUM_THREADS": str(torch.get_num_threads()), **env})


def _child(code: list[str], **env: str) -> str:
    out = _run(code, **env)
    if out.returncode:
        raise RuntimeError(f"{code[:2]} failed: {out.stderr.strip()[-2000:]}")
    return out.stdout.strip().splitlines()[-1]


def measure(cfg: dict[str, Any]) -> dict[str, float]:
    """One run of ``cfg`` with :func:`topofl.plan.probe_rounds` rounds, evaluated at its end:
    its median training round (:data:`topofl.plan.ROUND_CLOCK`), its peak bytes and its
    wall time."""
    rounds = probe_rounds(int(cfg["n_clients"]))
    spr, peak, wall = json.loads(_child(["-c", _MEASURE, json.dumps({**cfg, "rounds": rounds}),
                                         str(torch.get_num_threads())]))
    return {"seconds_per_round": spr, "peak_bytes": peak, "wall_s": wall, "rounds": rounds}


def plan(cfg: dict[str, Any], limited: bool = True) -> dict[str, Any]:
    """``topofl plan CONFIG --json`` in a fresh interpreter: its answer and its wall time
    (``limited``: under ``TOPOFL_MEMORY_LIMIT=PLAN_LIMIT``; else with this machine's memory,
    where the answer may be the refusal: its exit status and last line)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(cfg, fh)
    try:
        t0 = time.perf_counter()
        env = {"TOPOFL_MEMORY_LIMIT": str(PLAN_LIMIT)} if limited else {}
        got = _run(["-m", "topofl", "plan", fh.name, "--json"], **env)
        wall = time.perf_counter() - t0
    finally:
        os.unlink(fh.name)
    if limited:
        if got.returncode:
            raise RuntimeError(f"plan failed: {got.stderr.strip()[-2000:]}")
        return {**json.loads(got.stdout.strip().splitlines()[-1]), "wall_s": wall}
    last = (got.stderr.strip() or got.stdout.strip()).splitlines()[-1]
    return {"rc": got.returncode, "last_line": last, "wall_s": wall}


def _pct(pred: float | None, meas: float | None) -> str:
    if pred is None or not meas:
        return "-"
    return f"{100 * (pred / meas - 1):+.1f} %"


def main(argv: list[str] | None = None) -> int:
    """Plan (and measure) each ``n``; write the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ns", type=int, nargs="+", default=[1000, 10000, 100000, 1000000])
    ap.add_argument("--max-measured", type=int, default=100000)
    ap.add_argument("--json", help="write the raw results here")
    ap.add_argument("--measured", help="read measured runs from this JSON (of --json)")
    ap.add_argument("--out", default=os.path.join(HERE, "plan_scale.md"))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    old = {}
    if args.measured:
        with open(args.measured) as fh:
            old = {int(r["n"]): r.get("measured") for r in json.load(fh)}
    results = []
    for n in args.ns:
        cfg = config(n)
        r: dict[str, Any] = {"n": n, "plan": plan(cfg)}
        if n == max(args.ns):  # with this machine's memory: fits, or the refusal
            r["here"] = plan(cfg, limited=False)
        r["measured"] = old.get(n) or (measure(cfg) if n <= args.max_measured else None)
        results.append(r)
        print(json.dumps(r), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)
    doc = Document()
    doc.heading("Plan at scale: `topofl plan --json` against measured runs", 1)
    doc.paragraph(
        f"`python {' '.join(['analysis/plan_scale.py', *(argv or sys.argv[1:])])}`, "
        f"{datetime.date.today().isoformat()}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} logical CPUs (a VM shared with other jobs), torch "
        f"{torch.__version__}, topofl {tf.__version__}, 1 torch thread, CPU. " + " ".join(
            (__doc__ or "").split("\n\n")[1].split()) + " MB = 10^6 bytes.")
    rows = []
    for r in results:
        p, m = r["plan"], r["measured"] or {}
        rows.append([f"{r['n']:,}", f"{p['wall_s']:.1f}", f"{p['peak_bytes'] / 1e6:.0f}",
                     f"{p['parts']['runtime'] / 1e6:.0f}",
                     f"{m['peak_bytes'] / 1e6:.0f}" if m else "-",
                     _pct(p["peak_bytes"], m.get("peak_bytes")),
                     f"{p['seconds_per_round']:.3g}",
                     f"{m['seconds_per_round']:.3g}" if m else "-",
                     _pct(p["seconds_per_round"], m.get("seconds_per_round"))])
    doc.table(["n", "plan wall s", "predicted MB", "of which runtime MB", "measured MB",
               "memory error", "predicted s/round", "measured s/round", "time error"], rows)
    big = results[-1]
    if "here" in big:
        h = big["here"]
        doc.paragraph(
            f"The plans above are made under `TOPOFL_MEMORY_LIMIT={PLAN_LIMIT}` (their numbers "
            f"even where a run does not fit here). With this machine's memory, "
            f"`topofl plan` at n = {big['n']:,} answered in {h['wall_s']:.1f} s with exit "
            f"status {h['rc']}: `{h['last_line'][:400]}`")
    with open(args.out, "w") as fh:
        fh.write(doc.text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
