"""What a D-SGD round costs on the real Fashion-MNIST here, by model and number of clients.

For ``field_all_eigenvalues_fmnist`` (issue "Real data offline", item 2): Takezawa, Koloskova &
Stich's Fig. 3 trains LeNet on Fashion-MNIST; this measures, on this machine, what one round
of D-SGD (one local step of batch ``--batch`` and one gossip step on a 5 x 5 torus, or a ring
at 100 clients; Dirichlet(0.1) label split) and one evaluation (every client's model on the
global test set, the ``global_acc`` rows the figure reads) cost in CPU seconds, for the models
``logistic``, ``mlp`` (200-200) and ``gn_lenet``, at 25 and 100 clients, one torch thread.

Each case runs in a fresh interpreter (``topofl.config.execute``: the path a figure's run
takes, stacking aside) for ``--rounds`` rounds with an evaluation at the middle round and at
the last; the CPU time (``time.process_time``) at the start of every round is stamped, as
``analysis/columns_cost.py`` does. A round's cost is the median of the rounds without an
evaluation (round 0 left out: its set-up); an evaluation's, the interval of the middle
evaluating round minus that median. An evaluation also scores each client on its own data
(its test split: the ``test_acc`` rows, and the losses the run records), so its cost is not
proportional to the global samples scored:
where the global test set is subsampled (the CNN, whose full evaluation takes minutes), each
case runs twice, scoring ``--eval-samples`` and three times as many global test images, and
the evaluation of the whole 10,000-image set is extrapolated along the line through those two
(the table says so).
The data set's load time (``topofl.data.load("fashion_mnist")``, the Debian package's IDX
files) is clocked once in the parent.

    nice -n 5 python analysis/fmnist_cost.py [--rounds 8] [--batch 32]  # -> fmnist_cost.md
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
import torch
torch.set_num_threads(1)
import topofl.engine.loop as _loop
from topofl import config as _config
stamps = []
_round_of = _loop._round
def _clocked(loop, t):
    stamps.append(time.process_time())
    return _round_of(loop, t)
_loop._round = _clocked
cfg = json.loads(sys.stdin.read())
t0 = time.process_time()
_config.execute(cfg)
print(json.dumps({"start": t0, "stamps": stamps, "end": time.process_time()}))
"""

CASES = [("logistic", 25), ("logistic", 100), ("mlp", 25), ("mlp", 100),
         ("gn_lenet", 25), ("gn_lenet", 100)]
TEST = 10_000


def costs(stamps: list[float], end: float, rounds: int) -> dict[str, float]:
    """``train`` (median CPU s of a round without an evaluation, round 0 and the evaluating
    rounds left out) and ``eval`` (the middle evaluating round's interval minus ``train``)
    from the stamps at the start of each round; evaluations after rounds ``rounds // 2 - 1``
    and ``rounds - 1``.

    Examples
    --------
    >>> costs([0.0, 5.0, 6.0, 9.0, 10.0, 11.0], 12.5, 6)
    {'train': 1.0, 'eval': 2.0}
    """
    d = [b - a for a, b in zip(stamps, [*stamps[1:], end])]
    mid = rounds // 2 - 1
    plain = [x for t, x in enumerate(d) if t not in (0, mid, rounds - 1)]
    train = statistics.median(plain)
    return {"train": train, "eval": d[mid] - train}


def run_case(model: str, n: int, rounds: int, batch: int, samples: int) -> dict[str, Any]:
    topology = "torus:rows=5,cols=5" if n == 25 else "ring"
    cfg = {"algorithm": "dsgd", "data": "fashion_mnist", "n_clients": n,
           "partition": "dirichlet", "partition_params": {"alpha": 0.1}, "model": model,
           "topology": topology, "lr": 0.05, "batch_size": batch, "rounds": rounds,
           "eval_every": rounds // 2, "seed": 0, "record_clients": False, "spectral": False,
           "eval_global_samples": samples if samples < TEST else "all"}
    out = subprocess.run([sys.executable, "-c", CHILD], input=json.dumps(cfg), text=True,
                         capture_output=True, check=True, cwd=ROOT)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    c = costs(got["stamps"], got["end"], rounds)
    return {"model": model, "n": n, "topology": topology, "samples": samples,
            "setup": got["stamps"][0] - got["start"], **c,
            "eval_full": c["eval"] * TEST / samples}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--eval-samples", type=int, default=1000,
                    help="global test samples scored for gn_lenet (the others: all 10,000)")
    ap.add_argument("--out", type=Path, default=ROOT / "analysis" / "fmnist_cost.md")
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    import topofl as tf

    t0, w0 = time.process_time(), time.perf_counter()
    data = tf.data.load("fashion_mnist")
    load_cpu, load_wall = time.process_time() - t0, time.perf_counter() - w0
    rows = []
    for model, n in CASES:
        samples = args.eval_samples if model == "gn_lenet" else TEST
        row = run_case(model, n, args.rounds, args.batch, samples)
        if samples < TEST:  # a second point, 3 x the samples: the line to the whole set
            more = run_case(model, n, args.rounds, args.batch, 3 * samples)
            slope = (more["eval"] - row["eval"]) / (2 * samples)
            row["eval_3x"] = more["eval"]
            row["train"] = statistics.median([row["train"], more["train"]])
            row["eval_full"] = row["eval"] + slope * (TEST - samples)
        rows.append(row)
        print(json.dumps(row), flush=True)
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    lines = [
        "# D-SGD on Fashion-MNIST: CPU seconds a round and an evaluation, by model and clients",
        "",
        f"Written by `analysis/fmnist_cost.py` ({time.strftime('%Y-%m-%d', time.gmtime())}) on "
        f"{cpu}, {_cores()} cores shared with other jobs, one torch thread (torch "
        f"{torch.__version__}, Python {platform.python_version()}). D-SGD, one local step of "
        f"batch {args.batch} and one gossip step a round; Dirichlet(0.1) label split; the "
        "5 x 5 torus at 25 clients, the ring at 100. CPU seconds (`time.process_time`): a "
        f"training round is the median of the {args.rounds - 3} rounds without an evaluation "
        "(round 0 left out); an evaluation scores every client's model on the global test "
        "set. Measured while another job may have shared the cores: CPU seconds, not wall.",
        "",
        f"Loading the data set (`topofl.data.load(\"fashion_mnist\")`, {len(data.y_train):,} "
        f"train / {len(data.y_test):,} test, from the Debian package's IDX files): "
        f"{load_cpu:.2f} CPU s ({load_wall:.2f} s wall).",
        "",
        "| model | clients | set-up (CPU s) | training round (CPU s) | evaluation (CPU s, "
        "global samples scored) | evaluation of all 10,000 (CPU s) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        full = (f"{r['eval_full']:.1f}" if r["samples"] == TEST
                else f"{r['eval_full']:.0f} (extrapolated from {r['samples']:,} and "
                f"{3 * r['samples']:,})")
        scored = (f"{r['eval']:.2f} ({r['samples']:,})" if r["samples"] == TEST else
                  f"{r['eval']:.2f} ({r['samples']:,}); {r['eval_3x']:.2f} "
                  f"({3 * r['samples']:,})")
        lines.append(f"| {r['model']} | {r['n']} | {r['setup']:.1f} | {r['train']:.4f} | "
                     f"{scored} | {full} |")
    lines += ["", "Raw rows:", "", "```", *(json.dumps(r) for r in rows), "```", ""]
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


def _cores() -> int:
    import os

    return os.cpu_count() or 0


if __name__ == "__main__":
    raise SystemExit(main())
