"""Runs of two checkouts side by side, for the benchmarks that time this code against
another's (``bench_teleport.py``, ``bench_idle_rows.py``, ``bench_live_rows.py``,
``bench_ggc_rows.py``, ``bench_rerun_split.py``, ``bench_participation_rows.py``): a child
interpreter on a checkout, one torch thread, and what its records file says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

#: The start of a child script (``run_child``) that runs a committed config: ``argv`` is
#: ``CASE ROUNDS RECORDS``; ``CASE`` names ``paper_figures/configs/NAME``, a grid config's cell
#: as ``NAME:LABEL+LABEL`` (one label an axis), and may end with ``?KEY=NUMBER`` (that value in
#: place of the key's sweep). It loads the config at its default scale with the first value of
#: each of its sweep's keys, one torch thread, ``ROUNDS`` rounds, records to ``RECORDS``, and
#: leaves the keywords in ``cfg`` (``topofl.config.execute(cfg)`` runs them).
CONFIG_CHILD = r"""
import json, sys, time, torch
torch.set_num_threads(1)
import topofl
from topofl import figures
case, rounds, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
case, _, setting = case.partition("?")
name, _, cell = case.partition(":")
cfg = dict(figures.load_config(name, "default"))
if cell:
    cfg = dict(figures.grid(cfg)[tuple(cell.split("+"))])
for k, v in (cfg.pop("sweep", None) or {}).items():
    cfg[k] = v[0]
for k in list(cfg):
    if k.startswith("_") or k in ("figure", "out", "seeds", "grid", "grid_keep"):
        cfg.pop(k)
cfg.pop("checkpoint_every", None)
if setting:
    key, value = setting.split("=")
    cfg[key] = float(value)
cfg.update(rounds=rounds, records_path=out, progress=False)
"""

#: :data:`CONFIG_CHILD` that runs the config and prints its CPU seconds and code fingerprint
TIMED_CHILD = CONFIG_CHILD + r"""
c = time.process_time()
topofl.config.execute(cfg)
print(json.dumps({"cpu": time.process_time() - c, "code": topofl.figures.code_fingerprint()}))
"""


def record_rows(path: Path) -> list[tuple[Any, ...]]:
    """``(round, client, metric, value)`` of every record of ``path`` but its header and
    its ``wall_time`` rows: what two runs of the same numbers share, bit for bit."""
    out = []
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if r.get("header") or r["metric"] == "wall_time":
            continue
        out.append((r["round"], r["client"], r["metric"], r["value"]))
    return out


def last_wall(path: Path) -> float:
    """The run's last ``wall_time`` record: its training rounds and evaluations, seconds."""
    walls = [json.loads(x)["value"] for x in path.read_text().splitlines()
             if '"wall_time"' in x]
    return float(walls[-1])


def run_child(code: Path, child: str, args: list[str], out: Path) -> dict[str, Any]:
    """Run the script ``child`` with ``args`` on the checkout ``code`` (its own directory
    and ``PYTHONPATH``, one thread); the JSON object it prints last, with the
    ``wall_time`` of the records it wrote to ``out``."""
    env = dict(os.environ, PYTHONPATH=str(code), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", child, *args], cwd=code, env=env,
                          check=True, capture_output=True, text=True)
    res: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    res["wall_time"] = last_wall(out)
    return res


def alternate(codes: list[tuple[str, Path]], cases: list[str], child: str, rounds: int,
              repeat: int) -> tuple[dict[tuple[str, str], dict[str, Any]], dict[str, bool]]:
    """Run ``child`` (a :data:`CONFIG_CHILD` script) for every config of ``cases`` on every
    checkout of ``codes`` (``[(who, path)]``), ``repeat`` times, the checkouts' order reversed
    every other time: ``(best, same)``, the run of least ``wall_time`` by ``(who, case)`` and,
    with two checkouts, whether every repetition's records were equal (:func:`record_rows`)."""
    best: dict[tuple[str, str], dict[str, Any]] = {}
    same: dict[str, bool] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in cases:
            for rep in range(repeat):
                paths = {}
                for who, code in (codes if rep % 2 == 0 else codes[::-1]):
                    out = Path(tmp) / f"{who}-{name}-{rep}.jsonl"
                    r = run_child(code, child, [name, str(rounds), str(out)], out)
                    paths[who] = out
                    if (who, name) not in best or r["wall_time"] < best[(who, name)]["wall_time"]:
                        best[(who, name)] = r
                    print(who, name, rep, r, flush=True)
                if len(paths) == 2:
                    a, b = (record_rows(p) for p in paths.values())
                    same[name] = same.get(name, True) and a == b
    return best, same


def ratio_table(best: dict[tuple[str, str], dict[str, Any]], same: dict[str, bool],
                cases: list[str], first: str = "config") -> list[str]:
    """The markdown table of :func:`alternate`'s ``(best, same)``: a row a case (its name in
    the column ``first``, a ``?`` shown as a comma), its seconds before and after, their ratio,
    and whether the records were equal."""
    lines = [f"| {first} | s before | s after | after / before | records equal, bit for bit |",
             "|---|---:|---:|---:|---|"]
    for c in cases:
        b, a = best[("before", c)]["wall_time"], best[("after", c)]["wall_time"]
        lines.append(f"| {c.replace('?', ', ')} | {b:.2f} | {a:.2f} | {a / b:.2f} | "
                     f"{'yes' if same[c] else 'NO'} |")
    return lines
