"""``torchrun -m topofl run CONFIG.toml`` gives the records of ``topofl run CONFIG.toml``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import topofl as tf

CONFIG = """\
algorithm = "dsgd"
topology = "ring"
data = "digits"
n_clients = 8
model = "logistic"
rounds = 3
batch_size = 8
dtype = "float64"
momentum = 0.5
"""


def _cli(args: list[str], cwd: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
    env.pop("WORLD_SIZE", None)
    proc = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.distributed
def test_torchrun_runs_the_same_config(tmp_path: Path) -> None:
    (tmp_path / "run.toml").write_text(CONFIG)
    _cli(["-m", "topofl", "run", "run.toml", "--out", "one.jsonl"], tmp_path)
    _cli(["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m",
          "topofl", "run", "run.toml", "--out", "two.jsonl"], tmp_path)
    a, b = (tf.records.load(tmp_path / f) for f in ("one.jsonl", "two.jsonl"))
    ta = {(r["round"], r["client"], r["metric"]): r["value"] for r in a.rows
          if r["metric"] != "wall_time"}
    tb = {(r["round"], r["client"], r["metric"]): r["value"] for r in b.rows
          if r["metric"] != "wall_time"}
    assert set(ta) == set(tb)
    assert all(abs(ta[k] - tb[k]) <= 1e-10 for k in ta if isinstance(ta[k], float))
    head = json.loads((tmp_path / "two.jsonl").read_text().splitlines()[0])
    d = head["engine"]["distributed"]
    assert d["world_size"] == 2 and d["backend"] == "gloo"
    assert d["placement"]["owner"] == [0, 0, 0, 0, 1, 1, 1, 1] and d["cut_arcs"] == 4
