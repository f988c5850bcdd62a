"""What the paper-figure columns left out at the default scale would cost here (issue 42).

``fig_dfedpgp_table1.py`` runs one of its 8 columns at the default scale, ``fig_dfedpgp_table2.py``
one of its 4, ``fig_dfedpgp_table3.py`` one of its 2 rows, ``fig_dpfl_table1.py`` and
``fig_dpfl_fig7.py`` one of their two halves; the others read "not run at this scale". For
every such column this script builds each method's run config as the script would (its config
at the default scale, ``topofl.figures.load_config`` + ``grid``: the default-scale stand-in,
rounds, clients, seeds; ``topofl.sweep.plan`` for the runs of its sweep), runs the first run of
each method's sweep (seed 0; DPFL's first budget) for a few rounds in a fresh process at one
torch thread under ``nice``, and clocks each round in CPU seconds (``time.process_time``, the
way ``topofl.workflow.plan.ROUND_CLOCK`` does, but every round and the set-up before the first).

Measured, per method: the set-up before round 0 (data, partition, model, DPFL's pre-processing
if it runs there), round 0, and the seconds a round after it *with the config's own evaluation
schedule* (``eval_every``: rounds are grouped in blocks of ``eval_every`` and the median block
/ ``eval_every`` is taken, so an evaluation every other round is counted at its share; the
median of the rounds without an evaluation is reported beside it, the difference being the
evaluation). Extrapolated, not measured: every seed and every sweep value of a method costs
what its first run costs, and every round after the first costs the measured median. Hours here
= sum over runs of (set-up + round 0 + (rounds - 1) x s/round) / ``--jobs`` (the figure
scripts' parallel runs, 2 by default), on an otherwise idle machine; the figure runner stacks
runs that can stack (``--stack on``), which this does not model (each run is clocked alone, as
``--stack off`` runs it).

    nice -n 5 python analysis/columns_cost.py [--rounds 5] [--jobs 2] [--only RESULT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIGS = ROOT / "paper_figures"

# The child: one fresh interpreter per column, one torch thread, each run's rounds clocked.
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
out = []
for cfg in json.loads(sys.stdin.read()):
    stamps.clear()
    t0 = time.process_time()
    _config.execute(cfg)
    end = time.process_time()
    out.append({"start": t0, "stamps": list(stamps), "end": end})
print(json.dumps(out))
"""


def per_round(stamps: Sequence[float], eval_every: int) -> dict[str, float | None]:
    """Seconds a round from the CPU stamps at the start of each round: ``round0`` (the first
    round), ``per_round`` (the median over whole blocks of ``eval_every`` rounds after the
    first, divided by ``eval_every``: the evaluations at their share) and ``train`` (the
    median of those rounds without an evaluation; ``None`` when every round evaluates).

    A round ``t`` evaluates when ``(t + 1) % eval_every == 0`` (``topofl.engine.loop``); the
    interval between the stamps of rounds ``t`` and ``t + 1`` holds round ``t`` and its
    evaluation.

    Examples
    --------
    >>> per_round([0.0, 5.0, 8.0, 9.0, 12.0, 13.0], 2)  # 1 s a round, 2 s an evaluation
    {'round0': 5.0, 'per_round': 2.0, 'train': 1.0}
    >>> per_round([0.0, 4.0, 5.0, 6.5, 7.5], 1)
    {'round0': 4.0, 'per_round': 1.0, 'train': None}
    """
    if eval_every < 1:
        raise ValueError(f"eval_every must be >= 1, got {eval_every}")
    if len(stamps) < 2 + eval_every:
        raise ValueError(f"need at least {2 + eval_every} round stamps for eval_every="
                         f"{eval_every}, got {len(stamps)}")
    d = [b - a for a, b in zip(stamps, stamps[1:])]
    rest = list(enumerate(d))[1:]  # rounds 1, 2, ...
    # blocks of eval_every rounds that end on an evaluating round
    ends = [i for i, (t, _) in enumerate(rest) if (t + 1) % eval_every == 0
            and i + 1 >= eval_every]
    blocks = [sum(x for _, x in rest[i + 1 - eval_every:i + 1]) / eval_every for i in ends]
    plain = [x for t, x in rest if (t + 1) % eval_every != 0]
    return {"round0": d[0],
            "per_round": statistics.median(blocks) if blocks else None,
            "train": statistics.median(plain) if plain else None}


def hours(setup: float, round0: float, rounds: int, per_round_s: float, runs: int,
          jobs: int) -> float:
    """Wall hours of ``runs`` runs, each ``setup`` seconds, a first round of ``round0`` (DPFL's
    pre-processing runs there) and ``rounds - 1`` rounds of ``per_round_s`` CPU seconds,
    ``jobs`` at a time on an otherwise idle machine.

    Examples
    --------
    >>> hours(9.5, 0.5, 101, 0.5, 36, 2)
    0.3
    """
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    return runs * (setup + round0 + (rounds - 1) * per_round_s) / jobs / 3600


def _figures() -> Any:
    sys.path.insert(0, str(FIGS))
    from topofl import figures
    return figures


def columns() -> list[dict[str, Any]]:
    """Every column/half not run at the default scale: ``{"result", "column", "shares",
    "methods": {label: [run configs of its sweep]}}``, the configs as the script builds them
    at the default scale."""
    figures = _figures()
    import _dfedpgp
    import _dpfl_variance as dv
    import fig_dfedpgp_table2 as t2
    import fig_dfedpgp_table3 as t3
    import fig_dpfl_table1 as dt1

    from topofl import sweep as _sweep
    from topofl.figures.config import _clean

    def plan(cfg: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [dict(r.config) for r in _sweep.plan(_clean(cfg))]

    out: list[dict[str, Any]] = []
    cfg = figures.load_config(_dfedpgp.TABLE1, "default")
    kept = cfg.get("grid_keep", {}).get("split", _dfedpgp.COLUMNS)
    for s in _dfedpgp.COLUMNS:
        if s in kept:
            continue
        cells = figures.grid(cfg, keep={"split": [s]})
        out.append({"result": "dfedpgp_table1", "column": s, "shares": None,
                    "methods": {m: plan(c) for (m, _), c in cells.items()}})
    for s in t2.TARGETS:
        if s in _dfedpgp.kept("split", list(t2.TARGETS), "default"):
            continue
        cells = figures.grid(cfg, keep={"split": [s], "method": t2.METHODS})
        out.append({"result": "dfedpgp_table2", "column": s, "shares": "dfedpgp_table1",
                    "methods": {m: plan(c) for (m, _), c in cells.items()}})
    cfg3 = figures.load_config("dfedpgp_table3", "default")
    kept3 = cfg3.get("grid_keep", {}).get("split", list(t3.SPLIT_OF))
    for row in t3.SPLIT_OF:
        if row in kept3:
            continue
        cells = figures.grid(cfg3, keep={"split": [row]})
        out.append({"result": "dfedpgp_table3", "column": f"{row} ({t3.SPLIT_OF[row]})",
                    "shares": None, "methods": {m: plan(c) for (m, _), c in cells.items()}})
    for k, title in dt1.SPLITS.items():
        if k in dt1.DEFAULT_SPLITS:
            continue
        methods = {m: plan(figures.load_config(f"dpfl_table1_{k}_{m}", "default"))
                   for m in dv.METHODS}
        full = {m: int(figures.load_config(f"dpfl_table1_{k}_{m}", "full")["rounds"])
                for m in dv.METHODS}
        out.append({"result": "dpfl_table1", "column": f"CIFAR-10 {title}", "shares": None,
                    "methods": methods, "full_rounds": full})
        out.append({"result": "dpfl_fig7", "column": f"(b) CIFAR-10 {title}",
                    "shares": "dpfl_table1", "methods": methods, "full_rounds": full})
    return out


def describe(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The stand-in of a method's runs: data, model, clients, rounds, eval_every."""
    c = runs[0]
    model = c.get("model")
    if c.get("model_params"):
        model = f"{model} {json.dumps(c['model_params'], separators=(',', ':'))}"
    return {"data": c.get("data"), "model": model, "n_clients": c.get("n_clients"),
            "rounds": int(c["rounds"]), "eval_every": int(c.get("eval_every", 1)),
            "partition": c.get("partition"),
            "partition_params": c.get("partition_params")}


def measure(cfgs: Sequence[Mapping[str, Any]], nice: int) -> list[dict[str, Any]]:
    """Run ``cfgs`` one after the other in a fresh ``nice``'d interpreter; their CPU stamps."""
    cmd = ["nice", "-n", str(nice), sys.executable, "-c", CHILD]
    done = subprocess.run(cmd, input=json.dumps(list(cfgs)), capture_output=True, text=True,
                          check=False, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"child failed ({done.returncode}): {done.stderr[-2000:]}")
    result: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# One GPU: the measured CPU-vs-CUDA rounds of analysis/bench_engine.md (CPU: AMD EPYC, 2
# threads, torch 2.13) and analysis/bench_engine_cuda.md (H100, torch 2.11): `topofl.run` per
# round of D-SGD, batch 16, one local step, n = 100. Not these runs: a ratio of a comparable
# model (the tiny MLP ~ logistic regression, both launch-bound at n = 100; cnn1d ~ the 2-D
# CNN), taken across two machines.
GPU_BASIS = {
    "mlp": (8.55 / 3.24, "logistic n=100, `topofl.run` a round 8.55 ms CPU (bench_engine.md) "
                         "/ 3.24 ms H100 (bench_engine_cuda.md)"),
    "cnn1d": (396.0 / 14.6, "2-D cnn (62,006 params) n=100, `topofl.run` a round 396 ms CPU "
                            "(bench_engine.md) / 14.6 ms H100 (bench_engine_cuda.md)"),
}


def column_hours(methods: Mapping[str, Mapping[str, Any]], jobs: int,
                 rounds: Mapping[str, int] | None = None) -> float:
    """Hours of a column's runs (every method x its runs), ``rounds`` overriding each
    method's rounds (e.g. the full scale's)."""
    return sum(hours(v["setup"], v["round0"], (rounds or {}).get(m, v["rounds"]), v["per_round"],
                     v["runs"], jobs) for m, v in methods.items())


def render(data: Mapping[str, Any], command: str) -> str:
    """The Markdown report of the measured columns."""
    jobs = int(data["jobs"])
    lines = [
        "# What the columns left out at the default scale would cost",
        "",
        f"`{command}` (see the script's docstring for what is measured and what is "
        "extrapolated), 2026-11-24. Machine: Intel Xeon, 2-core shared VM (other workers "
        "and a background job running), torch 2.13 CPU; each method clocked in a fresh "
        f"process at one torch thread under `nice -n 5`, CPU seconds (`time.process_time`). "
        f"Rounds clocked a method: {data['rounds_clocked']} (6 where `eval_every` = 2); one "
        "seed (seed 0) and, for DPFL, its first budget (1.0N); every other seed and budget is "
        "assumed to cost the same, every round after the first the measured median "
        "(extrapolated). Hours here = sum over runs of (set-up + round 0 + (rounds - 1) x "
        "s/round) / "
        f"{jobs} (`--jobs {jobs}`), on an otherwise idle 2-core machine; the figure runner's "
        "stacked passes (`--stack on`, its default) are not modelled: each run is clocked "
        "alone.",
        "",
        "| result | column | stand-in (data, model, clients) | methods (DPFL: x 4 budgets) x "
        "seeds x rounds | "
        "CPU s a round (measured: median over methods, min-max) | hours here at --jobs "
        f"{jobs} | one GPU: estimate and its basis |",
        "|---|---|---|---|---|---:|---|",
    ]
    for col in data["columns"]:
        meths = col["methods"]
        first = next(iter(meths.values()))
        seeds = min(v["runs"] for v in meths.values())
        rounds = sorted({v["rounds"] for v in meths.values()})
        pr = [v["per_round"] for v in meths.values()]
        h = column_hours(meths, jobs)
        extra = ""
        if col.get("full_rounds"):
            hf = column_hours(meths, jobs, col["full_rounds"])
            fr = sorted(set(col["full_rounds"].values()))
            extra = (f"; {hf:.1f} h at the paper's "
                     f"{'/'.join(map(str, fr))} rounds (`--full`)")
        model = str(first["model"]).split(" ")[0]
        if model in GPU_BASIS:
            ratio, _ = GPU_BASIS[model]
            gpu = f"~{h / ratio:.2g} h (CPU hours / {ratio:.1f}, basis: {model})"
        else:
            gpu = ("not measured: no GPU here; the CPU hours and the GPU rows of "
                   "analysis/bench_engine_cuda.md are the basis a GPU session needs")
        shared = (f" (the runs of {col['shares']}'s column: 0 h more once it ran)"
                  if col["shares"] else "")
        n_runs = sum(v["runs"] for v in meths.values())
        lines.append(
            f"| {col['result']} | {col['column']} | {first['data']}, {first['model']}, "
            f"{first['n_clients']} clients | {n_runs // seeds} x {seeds} x "
            f"{'/'.join(map(str, rounds))} ({n_runs} runs) | {statistics.median(pr):.2f} "
            f"({min(pr):.2f}-{max(pr):.2f}) | {h:.1f}{extra}{shared} | {gpu} |")
    lines += ["", "## Notes", "",
              "- *Not measured here*: any GPU time (no GPU on this machine; the GPU column is a "
              "ratio of comparable models from two other machines' benchmarks, an estimate to "
              "be replaced by a GPU session's measurement); the paper's data and models "
              "(CIFAR-10/100 and ResNet-18-GN for DFedPGP, the 2-D CNN on CIFAR-10 for DPFL: "
              "`--full` runs them where the data is present, on the stand-ins above where it "
              "is absent); DFedPGP Table 1's calibrated Dir-0.1 stand-in (MNIST-1D with "
              "noisier signals + cnn1d, commented out in `configs/dfedpgp_table1.toml` \"for "
              "a GPU\"): the column is costed with the MLP stand-in the config runs; the "
              "stacked passes of `--stack on`.",
              "- *Extrapolated*: seeds 1-2 (and DPFL's budgets 0.2N/0.1N/0.05N) cost what "
              "seed 0 (budget 1.0N) costs; every round after the first costs the median of "
              "the few clocked; no final-evaluation or records overhead beyond the clocked "
              "rounds' own evaluations.",
              "- *Shared runs*: DFedPGP Table 2 reads Table 1's runs (its 9 methods of the 11, "
              "same cache), DPFL Fig. 7 reads DPFL Table 1's: once the owner's column has run "
              "they cost nothing more; their hours are those of their own methods alone.",
              "- A Dirichlet column of DFedPGP Table 1 costs more a round than a pathological "
              "one on the same stand-in data, model and batch (the table; the cause, e.g. the "
              "clients' unequal sizes under Dirichlet with `min_size`, is not investigated "
              "here).",
              "- *One GPU, basis* (an estimate, not a measurement of these runs: a ratio of "
              "a comparable model, measured on two other machines, AMD EPYC 2 threads for the "
              "CPU and an H100 for CUDA, `topofl.run` a round of D-SGD with one local step of "
              "batch 16 at n = 100, while these methods take 5-6 epochs a round): "
              + "; ".join(f"{m}: / {r:.1f} = {b}" for m, (r, b) in GPU_BASIS.items()) + ".",
              "", "## Per method (the first run of each column measured)", "",
              "| measured as | method | runs | rounds | eval_every | set-up s | round 0 s | "
              "s a round (with evaluation) | s a round without evaluation |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    seen = set()
    for col in data["columns"]:
        if col["measured_as"] in seen:
            continue
        seen.add(col["measured_as"])
        for m, v in col["methods"].items():
            train = "-" if v["train"] is None else f"{v['train']:.3f}"
            lines.append(f"| {col['measured_as']} | {m} | {v['runs']} | {v['rounds']} | "
                         f"{v['eval_every']} | {v['setup']:.2f} | {v['round0']:.2f} | "
                         f"{v['per_round']:.3f} | {train} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=5, help="rounds clocked a method (>= 4)")
    p.add_argument("--jobs", type=int, default=2, help="parallel runs assumed for the hours")
    p.add_argument("--nice", type=int, default=5)
    p.add_argument("--only", nargs="*", default=None, help="results to measure")
    p.add_argument("--methods", nargs="*", default=None,
                   help="measure only these methods (the column's hours then cover them only)")
    p.add_argument("--out", type=Path, default=ROOT / "analysis" / "columns_cost.json")
    p.add_argument("--render", nargs="*", type=Path, default=None,
                   help="merge these JSON files (in order) into --out and write its .md; "
                        "measure nothing")
    a = p.parse_args(argv)
    if a.render is not None:
        parts = [json.loads(f.read_text(encoding="utf-8")) for f in a.render]
        data = {**parts[0], "columns": [c for d in parts for c in d["columns"]]}
        a.out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        command = "; ".join([*(f"nice -n 5 python analysis/columns_cost.py {d.get('argv', '')}"
                                for d in parts),
                              "python analysis/columns_cost.py " + " ".join(sys.argv[1:])])
        a.out.with_suffix(".md").write_text(render(data, command), encoding="utf-8")
        return 0
    cols = [c for c in columns() if a.only is None or c["result"] in a.only]
    if a.methods is not None:
        cols = [{**c, "methods": {m: r for m, r in c["methods"].items() if m in a.methods}}
                for c in cols]
    measured: dict[str, dict[str, Any]] = {}  # column label -> method -> numbers
    rows: list[dict[str, Any]] = []
    for col in cols:
        # a shared column's runs are its owner's: measured once, under the owner's label
        owner = next((k for k in measured if k.endswith("|" + col["column"].split(") ", 1)[-1])
                      ), None) if col["shares"] else None
        if owner is None:
            cfgs = []
            for runs in col["methods"].values():
                c = dict(runs[0])
                every = int(c.get("eval_every", 1))
                n = max(a.rounds, 2 + 2 * every)
                cfgs.append({**c, "rounds": n, "eval_every": every})
            print(f"measuring {col['result']} {col['column']}: {len(cfgs)} methods",
                  file=sys.stderr, flush=True)
            got = measure(cfgs, a.nice)
            per: dict[str, dict[str, Any]] = {}
            for (m, runs), g in zip(col["methods"].items(), got):
                every = int(runs[0].get("eval_every", 1))
                r = per_round(g["stamps"], every)
                per[m] = {**r, "setup": g["stamps"][0] - g["start"], "runs": len(runs),
                          **describe(runs)}
            owner = f"{col['result']}|{col['column']}"
            measured[owner] = per
        kept = {m: v for m, v in measured[owner].items() if m in col["methods"]}
        rows.append({"result": col["result"], "column": col["column"],
                     "shares": col["shares"], "measured_as": owner,
                     "full_rounds": col.get("full_rounds"), "methods": kept})
    a.out.write_text(json.dumps({"jobs": a.jobs, "rounds_clocked": a.rounds, "columns": rows,
                                "argv": " ".join(sys.argv[1:])},
                                indent=1) + "\n", encoding="utf-8")
    for row in rows:
        meths = row["methods"]
        total = column_hours(meths, a.jobs)
        n_runs = sum(v["runs"] for v in meths.values())
        print(f"{row['result']:16s} {row['column']:28s} runs {n_runs}"
              f" s/round {statistics.median(v['per_round'] for v in meths.values()):.3f}"
              f" hours@{a.jobs} {total:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
