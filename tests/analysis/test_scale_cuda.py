"""The GPU scale report's arithmetic and rendering, on the CPU (``analysis/scale_cuda.py``)."""

from __future__ import annotations

import json
import math

from tests._analysis import load

scale_cuda = load("scale_cuda")


def test_measured_splits_training_and_evaluation() -> None:
    # 10 rounds, evaluated every 4 (rounds 3, 7 and the last, 9): training rounds take 1 s,
    # the first (allocation) 5 s, evaluated ones 3 s more, the first evaluation 10 s more
    dur = [5.0, 1, 1, 1 + 3 + 10, 1, 1, 1, 1 + 3, 1, 1 + 3]
    stamps = [0.0]
    for d in dur:
        stamps.append(stamps[-1] + d)
    got = scale_cuda.measured(stamps, 4)
    assert got["train"] == 1.0 and got["eval"] == 3.0
    assert (got["rounds"], got["evaluations"]) == (10, 3)
    assert math.isclose(got["run"], sum(dur))
    assert math.isclose(got["eval_share"], (13 + 3 + 3) / sum(dur))


def test_gossip_and_render_on_the_cpu(tmp_path) -> None:
    scale_cuda.DEVICE = "cpu"
    rows = scale_cuda.gossip([64], [8], reps=2)
    assert [r["graph"] for r in rows] == ["ring", "circulant [1,2,3]", "random_regular(6)"]
    assert all(r["copy_ms"] > 0 and r["ratio"] == r["mix_ms"] / r["copy_ms"] for r in rows)
    run = dict(n=64, wall=2.0, peak=2**30, gpu="cpu", eval_every=4, train=0.01, eval=0.02,
               rounds=10, evaluations=3, eval_share=0.25, run=1.5, plan_train=0.012,
               plan_eval=0.015)
    data = dict(date="2026-11-26", gpu="cpu", host="h", torch="t", topofl="v", gossip=rows,
                runs=[run, dict(n=128, error=["over 1 s"])], reading="Reading.")
    text = scale_cuda.render(json.loads(json.dumps(data)))
    assert "| 64 | 10 | 4 | 2.0 | 1.5 | 0.01 | 0.02 | 25.0 % | 1.00 GiB | 0.012 | +20 % |" in text
    assert "-25 %" in text and "failed: over 1 s" in text and text.endswith("Reading.\n")
