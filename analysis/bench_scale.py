"""How every part of a run grows with the number of clients (issue 43, item 1); writes the Markdown.

For D-SGD on a ring with logistic regression (n = 10^3, 10^4, 10^5, and 10^6 with
``--max-n 1000000``) and a small MLP (up to ``--mlp-max-n``), each at 1 round and at a short
run (``--rounds``, default 3), one ``topofl.run`` per case **with default settings** (evaluation
every round, global test set, per-client records, the spectral summary, the ledger), in a child
process of its own. The child times each part of the run by wrapping, for that process only,
the functions the run calls (no hook in the library):

* *data*: ``topofl.data.federate`` (drawing the synthetic set and splitting it over clients);
* *graph*: building the topology from its spec; *model*: building the model;
* *set-up*: everything else before the first round (the call's checks, provenance, the
  engine's set-up: parameters, executor, header, ledger);
* *local*: the local steps (``LocalStepper``); *gossip*: the algorithm's ``communicate``;
* *evaluation*: ``evaluate`` (the clients' test splits and the global test set);
* *spectral*: the spectral summary of the graph (``spectral_row``);
* *records*: every call of the recorder (header, rows, per-client rows, flushes);
* *ledger*: counting the messages and bytes; *other*: the rest of the round loop.

Times are exclusive (a part called from inside another counts only in its own column) and are
seconds of one run each, by default the child's CPU time (``--clock cpu``: at one thread, the
work of the run, which a shared machine's load does not stretch; ``--clock wall`` for the
wall clock). The exponent of a part is the least-squares slope of log(seconds) against
log(n) over the sizes measured (1 = linear). Peak memory is the resident-set high-water mark of
the child above its size after importing torch and topofl (``topofl.workflow.plan.PEAK_METER``);
*bytes a client* is that peak over n, beside the sum of what a client needs: parameters,
optimizer and algorithm state, its share of the gossip buffers
(``topofl.tools.bench.bytes_per_client``)
and its data indices (the partitions' and splits' index arrays over n); the data's samples
(10 training samples a client and the test sets) are given apart.

*floor* (``--no-floor`` leaves it out): at each n, in a child of its own, the data part's
random-access floor in NumPy alone (a random permutation of the 10 n samples, a stable sort
of it by client, the gather of their rows), beside the data part: how much of that part's
growth is the machine's memory hierarchy.

Data: ``synthetic:n_samples=10n,dim=64,num_classes=10`` split iid over n clients; the global
test set has ``n_samples // 5 = 2n`` samples, so it grows with n as the stand-ins' do.

Usage::

    nice -n 5 python analysis/bench_scale.py                       # to 10^5, ~1 hour here
    python analysis/bench_scale.py --max-n 10000 --mlp-max-n 1000 --out /tmp/x.md   # quick
    # bytes a client of this checkout against another's, one report of two runs:
    python analysis/bench_scale.py --topofl-root ../base --ns 10000 100000 --models logistic \\
        --rounds 1 --json /tmp/b.json --out /tmp/b.md
    python analysis/bench_scale.py --ns 10000 100000 --models logistic --rounds 1 \\
        --json /tmp/a.json --out /tmp/a.md
    python analysis/bench_scale.py --from-json /tmp/a.json --bytes-before /tmp/b.json --out x.md
    # the evaluation and spectral parts of another checkout (before a change):
    python analysis/bench_scale.py --topofl-root ../base --ns 1000 3000 10000 --models logistic \\
        --rounds 1 --out /tmp/before.md
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PARTS = ("data", "graph", "model", "setup", "local", "gossip", "evaluation", "spectral",
         "records", "ledger", "other")
SAMPLES_PER_CLIENT = 10
DIM = 64
MLP_HIDDEN = [32]


# ============================================================================ the child
_CHILD = r"""
import json, sys, time, os
args = json.loads(sys.argv[1])
import torch
torch.set_num_threads(args["threads"])
import numpy as np
import topofl
import topofl.api as api
import topofl.data as data_mod
import topofl.engine.lane as lane
import topofl.engine.loop as loop
from topofl.workflow.plan import PEAK_METER
exec(PEAK_METER)
mark = start_peak()

now = time.process_time if args["clock"] == "cpu" else time.perf_counter
parts = {}
stack = []  # [name, start, time spent in children]

def enter(name):
    stack.append([name, now(), 0.0])

def leave():
    name, start, inner = stack.pop()
    took = now() - start
    parts[name] = parts.get(name, 0.0) + took - inner
    if stack:
        stack[-1][2] += took

def timed(name, fn):
    def wrapper(*a, **k):
        enter(name)
        try:
            return fn(*a, **k)
        finally:
            leave()
    return wrapper

data_mod.federate = timed("data", data_mod.federate)
api.build_checked = timed("graph", api.build_checked)
api.build_model = timed("model", api.build_model)
loop.evaluate = timed("evaluation", loop.evaluate)
loop.spectral_row = timed("spectral", loop.spectral_row)
loop._account = timed("ledger", loop._account)

class Stepper(loop.LocalStepper):
    def __call__(self, *a, **k):
        enter("local")
        try:
            return super().__call__(*a, **k)
        finally:
            leave()
loop.LocalStepper = Stepper

class Rec(loop.Recorder):
    pass
for m in ("log_config", "log", "log_many", "log_clients", "flush", "close", "sync",
          "records"):
    if hasattr(loop.Recorder, m):
        setattr(Rec, m, timed("records", getattr(loop.Recorder, m)))
loop.Recorder = Rec
lane.Recorder = Rec  # where the engine opens it (the lane's set-up)

run_loop = loop.run_loop

def run_loop_timed(setup, *a, **k):
    # the set-up ends here: its time since the call, less its timed parts (data, graph, model,
    # the records header)
    name, start, inner = stack.pop()
    parts["setup"] = parts.get("setup", 0.0) + now() - start - inner
    import dataclasses
    algo = setup.algorithm._replace(communicate=timed("gossip", setup.algorithm.communicate))
    return run_loop(dataclasses.replace(setup, algorithm=algo), *a, **k)

loop.run_loop = run_loop_timed

model = args["model"]
n = args["n"]
spec = (f"synthetic:n_samples={args['spc'] * n},dim={args['dim']},num_classes=10,seed=0")
kw = {"model_params": {"hidden": args["hidden"]}} if model == "mlp" else {}
t0 = now()
enter("setup")
res = topofl.run("dsgd", "ring", spec, model, args["rounds"], n_clients=n, partition="iid",
                 lr=0.1, batch_size=8, seed=0, progress=False, **kw)
total = now() - t0
peak = peak_since(mark)
parts["other"] = total - sum(parts.values())
# what a client needs
from topofl.tools.bench import bytes_per_client
from topofl.workflow.memory import state_parts
layout = res.layout
state = state_parts(res.algorithm, layout, torch.float32)
fed = res.services.data
topo_nnz = 3.0  # the ring: 2 neighbours and itself
need = bytes_per_client(layout.num_params, n, state=state, row_nnz=topo_nnz)
idx = 0
for p in fed.partitions.values():
    idx += p.index.nbytes + p.offsets.nbytes
for s in fed._segments.values():
    idx += np.asarray(s.offsets).nbytes + np.asarray(s.sizes).nbytes
samples = fed.x.numel() * fed.x.element_size() + fed.y.numel() * fed.y.element_size()
recs = res.records
glob = [r["value"] for r in recs.rows if r["metric"] == "global_samples"]
est = [r["value"] for r in recs.rows if r["metric"] == "graph.estimated"]
print(json.dumps({"topofl": topofl.__file__, "parts": parts, "total": total, "peak": peak,
                  "num_params": layout.num_params,
                  "need": need, "index_bytes": idx, "sample_bytes": samples,
                  "global_test": int(fed.global_test[0].shape[0]),
                  "global_samples": glob[-1] if glob else None,
                  "graph_estimated": est[-1] if est else None,
                  "rows": len(recs.rows)}))
"""


def run_case(model: str, n: int, rounds: int, *, threads: int, timeout: float,
             root: Path, clock: str = "cpu") -> dict[str, Any]:
    """One case in a child process: its parts' seconds (``clock``: ``"cpu"`` or ``"wall"``),
    peak and bytes (or why none)."""
    args = {"model": model, "n": n, "rounds": rounds, "threads": threads, "clock": clock,
            "spc": SAMPLES_PER_CLIENT, "dim": DIM, "hidden": MLP_HIDDEN}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)}
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(threads)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(args)],
                              capture_output=True, text=True, timeout=timeout, env=env,
                              check=False, cwd=str(root))  # "-c" imports from the cwd first
    except subprocess.TimeoutExpired:
        return {"model": model, "n": n, "rounds": rounds,
                "error": f"not finished in {timeout:.0f} s"}
    if proc.returncode:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"model": model, "n": n, "rounds": rounds,
                "error": f"exit {proc.returncode} after {time.perf_counter() - t0:.0f} s: "
                         f"{tail[:200]}"}
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    out.update(model=model, n=n, rounds=rounds)
    return out


_FLOOR = r"""
import json, sys, time
import numpy as np
args = json.loads(sys.argv[1])
now = time.process_time if args["clock"] == "cpu" else time.perf_counter
n, N, dim, reps = args["n"], args["spc"] * args["n"], args["dim"], args["repeats"]
src = np.ones((N, dim), dtype=np.float32)  # the samples, not timed
floor, draw = [], []
for r in range(reps):
    t0 = now()
    perm = np.random.default_rng(r).permutation(N)   # a uniformly random split ...
    t1 = now()
    rows = src[perm]                                 # ... its rows gathered into a new array
    floor.append(now() - t1)
    draw.append(t1 - t0)
    del rows
del src
data = []
if args["data"]:
    import torch
    torch.set_num_threads(args["threads"])
    import topofl.data as data_mod
    ds = data_mod.load(f"synthetic:n_samples={N},dim={dim},num_classes=10,seed=0")
    for r in range(reps):
        t0 = now()
        fed = data_mod.federate(ds, "iid", n, seed=0)  # the run's data part, alone
        data.append(now() - t0)
        del fed
print(json.dumps({"floor": min(floor), "permutation": min(draw),
                  "data": min(data) if data else None}))
"""


def floor_case(n: int, *, threads: int, clock: str = "cpu", repeats: int = 3,
               data: bool = True, root: Path = ROOT) -> dict[str, float | None] | None:
    """The data part's floor at ``n`` clients, and the data part alone (``None`` if it failed):
    ``{"floor": s, "permutation": s, "data": s}``, each the least of ``repeats`` timings in a
    child process (the ``clock`` of the cases). *floor*: the gather of the ``[10 n, 64]``
    float32 sample rows in a uniformly random order into a new array, in NumPy (the copy any
    client-ordered iid split makes); *permutation*: drawing that order (NumPy's
    ``Generator.permutation`` of the ``10 n`` samples, which an iid split cannot skip);
    *data*: ``topofl.data.federate`` of the cases' dataset over ``n`` clients (iid, seed 0;
    the dataset drawn untimed), as in a run but alone, so that its least timing is the part's
    cost without the other jobs' noise (``data=False``: not timed, ``None``)."""
    args = {"n": n, "spc": SAMPLES_PER_CLIENT, "dim": DIM, "clock": clock,
            "repeats": repeats, "data": data, "threads": threads}
    env = {**os.environ, **{v: str(threads) for v in ("OMP_NUM_THREADS",
                                                      "OPENBLAS_NUM_THREADS",
                                                      "MKL_NUM_THREADS")},
           "PYTHONPATH": os.pathsep.join(
               p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)}
    proc = subprocess.run([sys.executable, "-c", _FLOOR, json.dumps(args)], env=env,
                          capture_output=True, text=True, check=False, cwd=str(root))
    if proc.returncode:
        return None
    out: dict[str, float | None] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def floor_table(results: list[dict[str, Any]], floors: dict[int, Any]) -> list[str]:
    """The data part of each logistic case against the floor at its n (:func:`floor_case`'s
    dicts; a bare number is an earlier bench's floor: a permutation, a stable sort by client
    and the gather, timed once)."""
    rows = sorted((r for r in results if "error" not in r and r["n"] in floors),
                  key=lambda r: (r["model"], r["rounds"], r["n"]))
    if not rows:
        return []
    legacy = any(not isinstance(f, dict) for f in floors.values())
    fl = {n: {"floor": f, "data": None} if not isinstance(f, dict) else f
          for n, f in floors.items()}
    alone = not legacy and all(fl[r["n"]].get("data") for r in rows)
    if legacy:
        what = ("*floor*: at the same n, in NumPy alone, a random permutation of the 10 n "
                "samples, a stable sort of it by client and the gather of their rows "
                "(`[10 n, 64]` float32), timed once")
    else:
        what = ("*floor*: at the same n, in NumPy alone, the gather of the 10 n sample rows "
                "(`[10 n, 64]` float32) in a uniformly random order into a new array, the copy "
                "any client-ordered iid split makes (the permutation drawn untimed); "
                "*permutation*: drawing that order (`Generator.permutation` of the 10 n "
                "samples, which an iid split cannot skip); *data alone*: "
                "`topofl.data.federate` of the same dataset over n clients, as in the run but "
                "in a process of its own; each the least of a few timings (the machine's "
                "noise removed)")
    perm = alone and all(fl[r["n"]].get("permutation") for r in rows)
    ratio = "data alone / floor" if alone else "data / floor"
    out = ["## The data part against a random-access floor", "",
           what + ". Their per-sample cost grows with n on this machine as the arrays leave "
           f"the caches; *{ratio}* is what the library adds.", ""]
    head = ("| model | rounds | n | data | " + ("data alone | " if alone else "") + "floor | "
            + ("permutation | " if perm else "") + f"{ratio} |")
    out += [head, "|---|---:|---:|---:|" + ("---:|" if alone else "") + "---:|"
            + ("---:|" if perm else "") + "---:|"]
    for r in rows:
        d, f = r["parts"].get("data", 0.0), fl[r["n"]]["floor"]
        a = fl[r["n"]].get("data") if alone else None
        out.append(f"| {r['model']} | {r['rounds']} | {r['n']:,} | {_s(d)} | "
                   + (f"{_s(a)} | " if alone else "") + f"{_s(f)} | "
                   + (f"{_s(fl[r['n']]['permutation'])} | " if perm else "")
                   + f"{(a if alone else d) / f:.2f} |")
    for (model, rounds) in sorted({(r["model"], r["rounds"]) for r in rows}):
        g = [r for r in rows if (r["model"], r["rounds"]) == (model, rounds)]
        ns = [r["n"] for r in g]
        ed = slope(ns, [r["parts"].get("data", 0.0) for r in g])
        ef = slope(ns, [fl[r["n"]]["floor"] for r in g])
        num = [fl[r["n"]]["data"] if alone else r["parts"].get("data", 0.0) for r in g]
        ea = slope(ns, num) if alone else None
        er = slope(ns, [x / fl[r["n"]]["floor"] for x, r in zip(num, g)])
        ep = slope(ns, [fl[r["n"]]["permutation"] for r in g]) if perm else None
        if ed is not None and ef is not None and er is not None:
            out += ["", f"Exponents ({model}, {rounds} round(s), n = "
                    f"{', '.join(f'{k:,}' for k in ns)}): data {ed:.2f}, "
                    + (f"data alone {ea:.2f}, " if ea is not None else "")
                    + f"floor {ef:.2f}, "
                    + (f"permutation {ep:.2f}, " if ep is not None else "")
                    + f"{ratio} {er:+.2f}."]
    out.append("")
    return out


# ============================================================================ the fit
def slope(ns: list[int], ts: list[float]) -> float | None:
    """Least-squares slope of log(t) against log(n); ``None`` with fewer than 2 points."""
    pts = [(math.log(n), math.log(t)) for n, t in zip(ns, ts) if t > 0]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx if sxx else None


def _s(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    return f"{x:.3g}" if x < 100 else f"{x:,.0f}"


def _bytes(b: float) -> str:
    for unit, k in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if b >= k:
            return f"{b / k:.3g} {unit}"
    return f"{b:.0f} B"


def parts_sum(r: dict[str, Any]) -> float:
    """Bytes a client needs (a case's): parameters, optimizer and algorithm state, its share
    of the gossip buffers and its data indices (the data's samples apart)."""
    need = r["need"]
    return float(need["parameters"] + need["optimizer"] + need["algorithm"] + need["gossip"]
                 + r["index_bytes"] / r["n"])


def bytes_before_after(before: list[dict[str, Any]], after: list[dict[str, Any]],
                       label: str) -> list[str]:
    """Bytes a client (peak over n) before (``label`` says of what) and after, by case."""
    def key(r: dict[str, Any]) -> tuple[str, int, int]:
        return r["model"], r["n"], r["rounds"]

    now = {key(r): r for r in after if "error" not in r}
    out = ["## Bytes a client, before and after", "",
           f"Before: {label}. After: the tables above. *sum*: parameters, optimizer and "
           "algorithm state, gossip share and data indices; *samples*: the data's samples a "
           "client (training, local test and global test rows).", "",
           "| model | n | rounds | peak before | after | peak / n before | after | sum | "
           "peak / sum before | after | samples / n | peak / (sum + samples) before | after |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for b in before:
        a = now.get(key(b))
        if "error" in b or a is None:
            continue
        n = b["n"]
        tb, ta = parts_sum(b), parts_sum(a)
        sb, sa = b["sample_bytes"] / n, a["sample_bytes"] / n
        out.append(
            f"| {b['model']} | {n:,} | {b['rounds']} | {_bytes(b['peak'])} | "
            f"{_bytes(a['peak'])} | {b['peak'] / n:,.0f} | {a['peak'] / n:,.0f} | {ta:,.0f} | "
            f"{b['peak'] / n / tb:.2f}x | {a['peak'] / n / ta:.2f}x | {sa:,.0f} | "
            f"{b['peak'] / n / (tb + sb):.2f}x | {a['peak'] / n / (ta + sa):.2f}x |")
    out.append("")
    return out


def markdown(results: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    """The report: per (model, rounds) a table of the parts by n, the exponents, the bytes."""
    lines = ["# How each part of a run grows with n (`analysis/bench_scale.py`)", "",
             meta["header"], ""]
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault((r["model"], r["rounds"]), []).append(r)
    for (model, rounds), rows in groups.items():
        rows.sort(key=lambda r: r["n"])
        ok = [r for r in rows if "error" not in r]
        P = ok[0]["num_params"] if ok else "?"
        lines += [f"## {model} (P = {P} parameters a client), {rounds} round"
                  f"{'s' if rounds > 1 else ''}", ""]
        head = ["n", *PARTS, "total", "peak", "global samples", "rows"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "|".join("---:" for _ in head) + "|")
        for r in rows:
            if "error" in r:
                lines.append(f"| {r['n']:,} | {r['error']} |" + " |" * (len(head) - 2))
                continue
            gs = r.get("global_samples")
            g = f"{int(gs):,} of {r['global_test']:,}" if gs else f"all {r['global_test']:,}"
            lines.append("| " + " | ".join(
                [f"{r['n']:,}", *[_s(r["parts"].get(p, 0.0)) for p in PARTS], _s(r["total"]),
                 _bytes(r["peak"]), g, f"{r['rows']:,}"]) + " |")
        if len(ok) >= 2:
            ns = [r["n"] for r in ok]
            ex = [slope(ns, [r["parts"].get(p, 0.0) for r in ok]) for p in PARTS]
            tot = slope(ns, [r["total"] for r in ok])
            pk = slope(ns, [r["peak"] for r in ok])
            lines.append("| **exponent** | " + " | ".join(
                f"**{e:.2f}**" if e is not None else "-" for e in ex)
                + f" | **{tot:.2f}** | **{pk:.2f}** | | |" if tot is not None and pk is not None
                else "")
        lines.append("")
        if ok:
            lines += ["Bytes a client (peak over n) against what a client needs:", "",
                      "| n | peak / n | parameters | optimizer + algorithm | gossip share "
                      "| data indices | sum | peak / sum | data samples / n | peak / (sum + "
                      "samples) |",
                      "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
            for r in ok:
                need, n = r["need"], r["n"]
                total = parts_sum(r)
                samples = r["sample_bytes"] / n
                lines.append(
                    f"| {n:,} | {r['peak'] / n:,.0f} | {need['parameters']:,} | "
                    f"{need['optimizer'] + need['algorithm']:,} | {need['gossip']:,} | "
                    f"{r['index_bytes'] / n:,.0f} | {total:,.0f} | "
                    f"{r['peak'] / n / total:.2f}x | {samples:,.0f} | "
                    f"{r['peak'] / n / (total + samples):.2f}x |")
            lines.append("")
    if meta.get("floors"):
        lines += floor_table(results, meta["floors"])
    before = meta.get("before")
    if before:
        lines += _before_after(before, results, meta.get("before_label") or "")
    if meta.get("bytes_before"):
        lines += bytes_before_after(meta["bytes_before"], results,
                                    meta.get("bytes_before_label") or "")
    for note in meta.get("notes", []):
        lines += [note, ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _before_after(before: list[dict[str, Any]], after: list[dict[str, Any]],
                  label: str) -> list[str]:
    """The evaluation and spectral parts before (``label`` says of what) and after."""
    def key(r: dict[str, Any]) -> tuple[str, int, int]:
        return r["model"], r["n"], r["rounds"]

    now = {key(r): r for r in after if "error" not in r}
    done = [b for b in before if "error" not in b]
    if not done:
        return []
    out = ["## Before and after: evaluation and spectral summary", "",
           f"Before: {label}. After: the tables above (a dash where this bench did not run "
           "the case).", "",
           "| model | n | rounds | evaluation before | after | ratio | spectral before | "
           "after | ratio | total before | after |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for b in done:
        a = now.get(key(b))
        e0, s0 = b["parts"].get("evaluation", 0.0), b["parts"].get("spectral", 0.0)
        if a is None:
            out.append(f"| {b['model']} | {b['n']:,} | {b['rounds']} | {_s(e0)} | - | - | "
                       f"{_s(s0)} | - | - | {_s(b['total'])} | - |")
            continue
        e1, s1 = a["parts"].get("evaluation", 0.0), a["parts"].get("spectral", 0.0)
        sr = s0 / s1
        out.append(f"| {b['model']} | {b['n']:,} | {b['rounds']} | {_s(e0)} | {_s(e1)} | "
                   f"{e0 / e1:,.1f}x | {_s(s0)} | {_s(s1)} | {sr:,.{0 if sr >= 10 else 1}f}x | "
                   f"{_s(b['total'])} | {_s(a['total'])} |")
    groups = sorted({(b["model"], b["rounds"]) for b in done})
    for model, rounds in groups:
        bs = [b for b in done if (b["model"], b["rounds"]) == (model, rounds)]
        as_ = [a for a in now.values() if (a["model"], a["rounds"]) == (model, rounds)]
        for part in ("evaluation", "spectral"):
            e0 = slope([b["n"] for b in bs], [b["parts"].get(part, 0.0) for b in bs])
            e1 = slope([a["n"] for a in as_], [a["parts"].get(part, 0.0) for a in as_])
            nb = ", ".join(f"{b['n']:,}" for b in bs)
            na = ", ".join(f"{a['n']:,}" for a in as_)
            if e0 is not None:
                after_text = (f"{e1:.2f} after (n = {na})." if e1 is not None
                              else "not measured after.")
                out += ["", f"Exponent of *{part}* ({model}, {rounds} round(s)): "
                        f"{e0:.2f} before (n = {nb}), {after_text}"]
    out.append("")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-n", type=int, default=100_000,
                    help="largest n of the logistic runs (powers of 10 from 10^3)")
    ap.add_argument("--mlp-max-n", type=int, default=10_000, help="largest n of the MLP runs")
    ap.add_argument("--ns", type=int, nargs="*", help="these n instead of the powers of 10")
    ap.add_argument("--models", nargs="*", default=["logistic", "mlp"])
    ap.add_argument("--rounds", type=int, nargs="*", default=[1, 3])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                    help="time the parts by the child's CPU time (default) or the wall clock")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per case")
    ap.add_argument("--topofl-root", default=str(ROOT),
                    help="the checkout whose topofl the cases import (default: this one)")
    ap.add_argument("--out", default=str(ROOT / "analysis" / "bench_scale.md"))
    ap.add_argument("--json", help="also write the raw results here")
    ap.add_argument("--note", action="append", default=[],
                    help="a paragraph to add at the end of the report")
    ap.add_argument("--before", help="raw results (--json) of the code before, to compare")
    ap.add_argument("--before-label", default="", help="what --before ran (a sentence)")
    ap.add_argument("--from-json", nargs="*",
                    help="write the report of these raw results (concatenated), run nothing")
    ap.add_argument("--bytes-before", nargs="*",
                    help="raw results (--json) of the code before: bytes a client compared")
    ap.add_argument("--bytes-before-label", default="",
                    help="what --bytes-before ran (a sentence)")
    ap.add_argument("--no-floor", action="store_true",
                    help="do not time the data part's random-access floor at each n")
    ap.add_argument("--repeats", type=int, default=3,
                    help="timings of the floor and of the data part alone (the least kept)")
    a = ap.parse_args(argv)
    before = json.loads(Path(a.before).read_text()) if a.before else None
    if isinstance(before, dict):
        before = before["results"]
    bytes_before = [r for f in a.bytes_before or []
                    for r in json.loads(Path(f).read_text())["results"]]
    root = Path(a.topofl_root).resolve()
    from topofl.tools.bench import loadavg, machine_info
    info = machine_info()
    load0, t0 = loadavg(), time.perf_counter()
    # the commit the cases start from (read before them: one committed during a long run is
    # not theirs)
    rev = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True, check=False).stdout.strip()
    results: list[dict[str, Any]] = []
    if a.from_json:
        runs = [json.loads(Path(f).read_text()) for f in a.from_json]
        saved = runs[0]
        results, a.models = [r for run in runs for r in run["results"]], []
        info = saved["machine"]
        load0, load1 = runs[0]["load"][0], runs[-1]["load"][1]
        seconds = sum(run["seconds"] for run in runs)
        cmd = "` and `".join(run["command"] for run in runs)
        a.clock = saved.get("clock", "wall")  # raw results before --clock: the wall clock
        floors = {int(k): v for run in runs for k, v in run.get("floors", {}).items()}
    for model in a.models:
        top = a.max_n if model == "logistic" else a.mlp_max_n
        ns = a.ns or [10 ** k for k in range(3, 8) if 10 ** k <= top]
        for rounds in a.rounds:
            for n in ns:
                r = run_case(model, n, rounds, threads=a.threads, timeout=a.timeout, root=root,
                             clock=a.clock)
                results.append(r)
                msg = r.get("error") or (f"total {r['total']:.1f} s, peak "
                                         f"{_bytes(r['peak'])}: " + ", ".join(
                                             f"{p} {r['parts'].get(p, 0):.2f}" for p in PARTS))
                print(f"{model} n={n:,} rounds={rounds}: {msg}", flush=True)
                if a.json:
                    Path(a.json).write_text(json.dumps({"results": results}, indent=1))
    if not a.from_json:
        floors = {}
    for n in sorted({r["n"] for r in results if "error" not in r} - set(floors)):
        if a.no_floor or a.clock == "wall" and a.from_json:
            break
        f = floor_case(n, threads=a.threads, clock=a.clock, repeats=a.repeats, root=root)
        if f is not None:
            floors[n] = f
            print(f"floor n={n:,}: {f['floor']:.3g} s, data alone {_s(f['data'])} s",
                  flush=True)
    if a.from_json:
        rev = saved.get("commit", rev)
        if a.json:  # the runs merged into one file (which --from-json reads back)
            Path(a.json).write_text(json.dumps(
                {"results": results, "machine": info, "load": [load0, load1],
                 "seconds": seconds, "command": cmd, "commit": rev, "clock": a.clock,
                 "floors": floors}, indent=1))
    else:
        cmd = "python analysis/bench_scale.py " + " ".join(argv if argv is not None
                                                            else sys.argv[1:])
        load1, seconds = loadavg(), time.perf_counter() - t0
        if a.json:
            Path(a.json).write_text(json.dumps(
                {"results": results, "machine": info, "load": [load0, load1],
                 "seconds": seconds, "command": cmd, "commit": rev, "clock": a.clock,
                 "floors": floors},
                indent=1))
    clock_word = ("CPU seconds (the child's process time at one thread: its work, which the "
                  "other jobs' load does not stretch)" if a.clock == "cpu"
                  else "Wall-clock seconds")
    header = (
        f"`{cmd}` on {info['date']}, topofl from `{root.name}` (commit {rev or '?'}; "
        "uncommitted changes included). Machine: "
        f"{info['cpu']} (a 2-core VM shared with other jobs); Python {info['python']}, torch "
        f"{info['torch']}, {a.threads} thread(s) a run (torch, OpenMP and BLAS). 1-minute load "
        f"average {load0:.1f} at the start, {load1:.1f} at the end; whole bench "
        f"{seconds:,.0f} s. D-SGD (lr 0.1, batch 8) on a ring, "
        f"`synthetic:n_samples={SAMPLES_PER_CLIENT}n,dim={DIM},num_classes=10` split iid "
        "(global test set 2n samples), default settings (evaluation every round with the "
        "global test set and per-client rows, the spectral summary, the ledger); MLP hidden "
        f"layers {MLP_HIDDEN}. {clock_word} of one run each (exclusive: a part called inside "
        "another counts only in its own column); *exponent*: least-squares slope of log(s) "
        "against log(n) (1 = linear); a part of a few milliseconds is mostly noise.")
    Path(a.out).write_text(markdown(results, {"header": header, "notes": a.note,
                                              "before": before,
                                              "before_label": a.before_label,
                                              "bytes_before": bytes_before,
                                              "bytes_before_label": a.bytes_before_label,
                                              "floors": floors}))
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
