"""``figures.runs.sweep_all``: a figure's sweeps in one pool of ``--jobs`` workers. Every run
is done once, with the numbers ``sweep`` gives it alone; a run another process holds is left
to it (``sweep`` neither sets its files aside nor stamps it); and the pool keeps out of what it
must not change (one job, ``--rerun``, stacking)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from topofl._utils.processes import lock
from topofl.figures.config import FigureError
from topofl.figures.runs import FigureArgs, sweep, sweep_all
from topofl.records import load


def _cells(tag: str = "toy") -> list[dict]:
    return [{"algorithm": "dsgd", "topology": t, "data": "digits", "n_clients": 4,
             "rounds": 2, "spectral": False, "sweep": {"seed": [0, 1]},
             "_name": f"{tag}/{t}"} for t in ("ring", "complete", "star")]


def _args(d: Path, **kw) -> FigureArgs:
    kw.setdefault("stack", False)
    return FigureArgs("toy", "quick", d / "out", d / "runs", **kw)


def _values(path: Path) -> list[tuple]:
    rec = load(path)
    return [(r["round"], r["metric"], r["value"]) for r in rec.rows
            if r["metric"] != "wall_time"]


@pytest.mark.slow  # two interpreters, twelve runs: ~40 s here
def test_every_run_once_with_the_numbers_of_sweep_alone(tmp_path):
    pooled, alone = tmp_path / "pooled", tmp_path / "alone"
    sweep_all(_cells(), _args(pooled, jobs=2))
    done = sorted(p.relative_to(pooled / "runs").as_posix()
                  for p in (pooled / "runs").rglob("*.done"))
    assert done == [f"toy/{t}/seed={s}.done" for t in ("complete", "ring", "star")
                    for s in (0, 1)]
    assert all(json.loads(p.read_text())["status"] == "complete"
               for p in (pooled / "runs").rglob("*.done"))
    for cfg in _cells():  # the figure's own pass reads them, running nothing
        rec = sweep(cfg, _args(pooled))
        ref = sweep(cfg, _args(alone))  # one by one, in this process
        assert rec.runs == ref.runs
        for run in rec.runs:
            a = _values(pooled / "runs" / cfg["_name"] / f"{run}.jsonl")
            b = _values(alone / "runs" / cfg["_name"] / f"{run}.jsonl")
            assert [x[:2] for x in a] == [x[:2] for x in b]
            num = [(x[2], y[2]) for x, y in zip(a, b) if isinstance(x[2], float)]
            np.testing.assert_allclose(*np.array(num).T, rtol=1e-6, atol=1e-7)


@pytest.mark.slow
def test_a_run_another_process_holds_is_left_to_it(tmp_path):
    held = tmp_path / "runs" / "toy" / "ring"
    held.mkdir(parents=True)
    with lock(held / "seed=1.lock") as mine:
        assert mine
        sweep_all(_cells(), _args(tmp_path, jobs=2))
    names = sorted(p.relative_to(tmp_path / "runs").as_posix()
                   for p in (tmp_path / "runs").rglob("*.done"))
    assert "toy/ring/seed=1.done" not in names and len(names) == 5


@pytest.mark.parametrize("kw", [dict(jobs=1), dict(jobs=2, stack=True),
                                dict(jobs=2, rerun=True)], ids=["one-job", "stack", "rerun"])
def test_the_pool_keeps_out_where_it_would_change_what_runs(tmp_path, kw):
    sweep_all(_cells(), _args(tmp_path, **kw))
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").rglob("*.done"))
    sweep_all(_cells()[:1], _args(tmp_path, jobs=2))  # a single sweep: its own workers
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").rglob("*.done"))


def test_a_held_run_of_other_code_is_left_to_its_process(tmp_path):
    """A run whose stamp names other code is set aside and run again, but not while another
    process holds its lock: that process is appending to its records (moving them would split
    them), and its stamp is its own."""
    cfg, args = _cells()[0], _args(tmp_path)
    sweep(cfg, args)
    out = tmp_path / "runs" / "toy" / "ring"
    other = "0.1.0+000000000000"
    (out / "seed=0.code").write_text(other + "\n")
    (out / "seed=0.done").unlink()  # still running in that process
    before = (out / "seed=0.jsonl").read_bytes()
    with lock(out / "seed=0.lock") as mine:
        assert mine
        with pytest.raises(FigureError, match="running elsewhere"):
            sweep(cfg, args)
        assert (out / "seed=0.jsonl").read_bytes() == before
        assert not (out / "superseded").exists()
        assert (out / "seed=0.code").read_text().strip() == other
    sweep(cfg, args)  # released: set aside, kept, and run again by this code
    assert (out / "superseded" / other / "seed=0.jsonl").read_bytes() == before
    assert (out / "seed=0.code").read_text().strip() != other
