"""How close ``topofl plan``'s training round, evaluation and whole-run seconds are to a
measured run with the same evaluations (issue 58, item 3).

The config: ``analysis/configs/dsgd_ring.toml`` (D-SGD, logistic regression, a ring, 2 label
shards a client) with ``n_clients = n``, ``data = "synthetic:n_samples=50n,n_test=10000,dim=40,
seed=0"``, ``rounds`` and ``eval_every`` as given (default 60 and 10: 6 evaluations). For each
``n``: the plan (``topofl.workflow.plan.make_plan``, one torch thread) and the config run in a
fresh interpreter with the start of every round and the end of the run clocked
(:data:`topofl.workflow.plan.ROUND_CLOCK`'s clock: CPU time at one torch thread):

- *training round*: the median duration of the rounds that do not evaluate, but the first;
- *evaluation*: the median over the evaluated rounds but the first of their duration less
  that (what a warm evaluation adds to its round);
- *first evaluation's extra*: the first evaluated round less a training round and a warm
  evaluation;
- *run*: from the start of the first round to the end of the run (setup and data building
  before the first round are left out, as the plan leaves them out).

Writes ``analysis/plan_eval.md``. ``python analysis/plan_eval.py [--n 1000 10000]
[--rounds 60] [--eval-every 10]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import topofl as tf
from topofl._utils.configfiles import read_config
from topofl._utils.cpu import cpu_model
from topofl._utils.markdown import Document
from topofl.workflow.plan import ROUND_CLOCK, make_plan

HERE = Path(__file__).resolve().parent

_MEASURE = ROUND_CLOCK + r"""
import json, sys
import torch
torch.set_num_threads(1)
cfg = json.loads(sys.argv[1])
_stamps.clear()
_config.execute({**cfg, "records_path": None, "progress": False})
_stamps.append(_clock())
print(json.dumps(_stamps))
"""


def config(n: int, rounds: int, every: int) -> dict[str, Any]:
    """The benchmark's config at ``n`` clients."""
    cfg = dict(read_config(HERE / "configs" / "dsgd_ring.toml"))
    cfg.pop("partition_params", None)
    return {**cfg, "n_clients": n, "rounds": rounds, "eval_every": every,
            "partition_params": {"shards_per_client": 2},
            "data": f"synthetic:n_samples={50 * n},n_test=10000,dim=40,seed=0"}


def measure(cfg: dict[str, Any]) -> dict[str, float]:
    """The measured training round, warm evaluation, first evaluation's extra and run."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, json.dumps(cfg)], check=True,
                         capture_output=True, text=True)
    stamps = json.loads(out.stdout.strip().splitlines()[-1])
    rounds, every = int(cfg["rounds"]), int(cfg["eval_every"])
    dur = [b - a for a, b in zip(stamps, stamps[1:])]
    evaluated = [t for t in range(rounds) if (t + 1) % every == 0 or t == rounds - 1]
    train = sorted(dur[t] for t in range(1, rounds) if t not in evaluated)
    med = train[len(train) // 2]
    warm = sorted(dur[t] - med for t in evaluated[1:-1])
    ev = warm[len(warm) // 2]
    return {"train": med, "eval": ev, "first": dur[evaluated[0]] - med - ev,
            "run": stamps[-1] - stamps[0]}


def _pct(p: float, m: float) -> str:
    return f"{100 * (p - m) / m:+.0f} %"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--eval-every", type=int, default=10)
    ap.add_argument("--out", default=str(HERE / "plan_eval.md"))
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    rows = []
    for n in args.n:
        cfg = config(n, args.rounds, args.eval_every)
        plan = make_plan(cfg, available=None)
        got = measure(cfg)
        first = float(plan.eval_fit.get("first_extra_s", 0.0))
        rows.append([f"{n:,}",
                     f"{plan.seconds_per_round:.4g}", f"{got['train']:.4g}",
                     _pct(plan.seconds_per_round or 0.0, got["train"]),
                     f"{plan.eval_seconds:.4g}", f"{got['eval']:.4g}",
                     _pct(plan.eval_seconds or 0.0, got["eval"]),
                     f"{first:.3g}", f"{got['first']:.3g}",
                     f"{plan.run_seconds:.4g}", f"{got['run']:.4g}",
                     _pct(plan.run_seconds or 0.0, got["run"])])
        print(rows[-1], flush=True)
    doc = Document().heading("How close the plan's training, evaluation and run seconds are "
                             "to a run")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    doc.paragraph(f"Measured {datetime.date.today()} on {cpu_model()} ({os.cpu_count()} cores, "
             f"load average at the end {load}), topofl "
             f"{tf.__version__}, one torch thread, CPU seconds; `python analysis/plan_eval.py "
             f"--n {' '.join(map(str, args.n))} --rounds {args.rounds} --eval-every "
             f"{args.eval_every}` (see its docstring for what each column measures).")
    doc.table(["n", "plan: training round", "run: training round", "error",
               "plan: evaluation", "run: evaluation", "error",
               "plan: first evaluation's extra", "run: first evaluation's extra",
               "plan: run", "run: run", "error"], rows)
    Path(args.out).write_text(doc.text(), encoding="utf-8")
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
