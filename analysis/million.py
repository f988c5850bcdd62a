"""A million clients on one machine: D-SGD with logistic regression over three graphs (issue 43).

D-SGD (``topofl.run`` with its defaults but the ones named here) trains a logistic regression
on ``n = 10**6`` clients of a synthetic Gaussian mixture (10 classes, 40 features, 10 training
samples a client in 2 label shards: label skew), over a ring, the exponential graph and a
random 10-regular graph, for ``--rounds`` rounds (default 200), evaluated every ``--every``
rounds: each client's accuracy on its own test split, the global accuracy on the engine's
seeded subsample of the global test set, and the consensus distance (the mean squared
distance of the models to their average). Each graph runs in a fresh interpreter (one torch
thread), so that its peak resident memory (``ru_maxrss``) is its own; wall and CPU time are
measured around the run, set-up included. Runs checkpoint every ``--every`` rounds under
``analysis/out/million_<n>/`` and a run killed in the middle continues from its last checkpoint
when the script is started again (finished runs are not rerun).

``python analysis/million.py`` runs what is missing and writes ``analysis/million.md`` and
``analysis/million.json``; ``python analysis/million.py --render`` rewrites the Markdown from
the JSON; ``--n`` and ``--rounds`` make a smaller trial (its outputs go to ``--out``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
GRAPHS = {"ring": "ring", "exponential": "exponential", "random 10-regular": "random_regular:d=10"}


def config(n: int, rounds: int, every: int, graph: str, folder: str) -> dict[str, Any]:
    """The keywords of ``topofl.run`` for one graph (records and checkpoint in ``folder``)."""
    slug = graph.replace(":", "_").replace("=", "")
    return dict(
        algorithm="dsgd", topology=graph, n_clients=n, rounds=rounds, seed=0,
        data=f"synthetic:n_samples={10 * n},n_test=10000,dim=40,num_classes=10,seed=0",
        partition="shards", partition_params={"shards_per_client": 2}, model="logistic",
        lr=0.1, batch_size=8, eval_every=every, record_clients=False,
        records_path=os.path.join(folder, f"{slug}.jsonl"),
        checkpoint_every=every, checkpoint_path=os.path.join(folder, f"{slug}.ckpt"))


def run_one(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Run (or continue) one config in this process; its wall, CPU and peak memory."""
    import torch

    import topofl as tf

    torch.set_num_threads(1)
    ckpt = kwargs["checkpoint_path"]
    resumed = os.path.exists(ckpt)
    t0, c0 = time.perf_counter(), time.process_time()
    res = tf.run(**kwargs, resume=ckpt if resumed else None, overwrite=not resumed)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    rec = res.records
    return dict(
        wall_s=wall, cpu_s=cpu, resumed=resumed,
        peak_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        rounds=[int(r) for r, _ in rec.points("consensus_distance")],
        consensus=[float(v) for _, v in rec.points("consensus_distance")],
        test_acc=[float(v) for _, v in rec.points("test_acc_mean")],
        global_acc=[float(v) for _, v in rec.points("global_acc_mean")],
        spectral_gap=rec.final("graph.spectral_gap"),
        commit=str(rec.provenance.get("git_commit") or "unknown")[:12],
        edges_per_node=rec.final("graph.edges_per_node"))


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Run every graph not yet in ``args.json`` in a fresh interpreter, saving after each."""
    folder = os.path.join(HERE, "out", f"million_{args.n}")
    os.makedirs(folder, exist_ok=True)
    data: dict[str, Any] = {}
    if os.path.exists(args.json):
        with open(args.json) as f:
            data = json.load(f)
    if data.get("n") != args.n or data.get("rounds") != args.rounds:
        data = dict(n=args.n, rounds=args.rounds, every=args.every, runs={})
    for name, graph in GRAPHS.items():
        if name in data["runs"]:
            continue
        kwargs = config(args.n, args.rounds, args.every, graph, folder)
        out = subprocess.run(
            [sys.executable, __file__, "--child", json.dumps(kwargs)], check=True,
            env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True, text=True)
        data["runs"][name] = dict(json.loads(out.stdout.strip().splitlines()[-1]), graph=graph)
        data.update(
            date=datetime.date.today().isoformat(), machine=platform.processor() or
            platform.machine(), cpu_model=_cpu_model(), cpus=os.cpu_count())
        with open(args.json, "w") as f:
            json.dump(data, f, indent=1)
        print(f"{name}: {data['runs'][name]['wall_s']:.0f} s", flush=True)
    return data


def _cpu_model() -> str:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()



def render(data: dict[str, Any]) -> str:
    """The Markdown report of ``data`` (the JSON this script writes)."""
    n, rounds, every = data["n"], data["rounds"], data["every"]
    lines = [
        f"# {n:,} clients on one machine: D-SGD, logistic regression, three graphs",
        "",
        f"`python analysis/million.py` on {data['date']} (each run's code: its commit in the "
        "table). "
        f"Machine: {data['cpu_model']}, {data['cpus']} logical CPUs (a VM shared with other "
        "jobs), one torch thread a run, CPU. " + __doc__.split("\n\n")[1].replace("\n", " "),
        "",
        "| graph | edges a node | spectral gap | rounds | wall (s) | CPU (s) | s a round "
        "(wall / rounds, set-up and evaluations included) | CPU s a round | peak memory | "
        "bytes a client | commit |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for name, r in data["runs"].items():
        resumed = " (resumed: the times are the last part's)" if r["resumed"] else ""
        lines.append(
            f"| {name}{resumed} | {r['edges_per_node']:.1f} | {r['spectral_gap']:.3g} | {rounds} "
            f"| {r['wall_s']:.0f} | {r['cpu_s']:.0f} | {r['wall_s'] / rounds:.2f} | "
            f"{r['cpu_s'] / rounds:.2f} | {r['peak_bytes'] / 1e9:.2f} GB | "
            f"{r['peak_bytes'] / n:,.0f} | {r.get('commit', data.get('commit', '?'))} |")
    lines += ["", f"Against rounds (evaluated every {every}):", "",
              "| graph | round | consensus distance | mean local test accuracy | "
              "global accuracy (mean over clients) |", "|---|---:|---:|---:|---:|"]
    for name, r in data["runs"].items():
        for k, rnd in enumerate(r["rounds"]):
            lines.append(f"| {name} | {rnd + 1} | {r['consensus'][k]:.4g} | "
                         f"{r['test_acc'][k]:.4f} | {r['global_acc'][k]:.4f} |")
    missing = [g for g in GRAPHS if g not in data["runs"]]
    if missing:
        lines += ["", f"Not run yet: {', '.join(missing)} (the script continues them)."]
    notes = os.path.join(HERE, "million_notes.txt")
    if os.path.exists(notes):
        with open(notes) as f:
            lines += ["", f.read().strip()]
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=10**6)
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--every", type=int, default=25)
    p.add_argument("--json", default=os.path.join(HERE, "million.json"))
    p.add_argument("--out", default=os.path.join(HERE, "million.md"))
    p.add_argument("--render", action="store_true")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(run_one(json.loads(args.child))))
        return
    if args.render:
        with open(args.json) as f:
            data = json.load(f)
    else:
        data = measure(args)
    with open(args.out, "w") as f:
        f.write(render(data))


if __name__ == "__main__":
    main()
