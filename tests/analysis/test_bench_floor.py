"""``analysis/bench_floor.py``: its Markdown is what its committed JSON says (no timing here),
and its measurement runs on a tiny workload."""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch

from tests._analysis import ROOT, load


def test_committed_markdown_is_computed_from_the_committed_json() -> None:
    bench = load("bench_floor")
    data = json.loads((ROOT / "analysis" / "bench_floor.json").read_text())
    md = (ROOT / "analysis" / "bench_floor.md").read_text()
    codes = {k: bench._median_runs(v) for k, v in data["runs"].items()}
    assert list(codes)[0].startswith("before (") and list(codes)[-1].startswith("after (")
    for code, rows in codes.items():
        assert set(rows) == set(bench.WORKLOADS)
        for name, r in rows.items():
            nb = f"{r.get('n', bench.N)} x {r.get('batch', bench.BATCH)}"
            assert (f"| {code} | {name} | {nb} | {r['P']:,} | {r['executor']} | "
                    f"{r['local_ms']:.2f} | {r['floor_ms']:.2f} | "
                    f"**{r['local_over_floor']:.2f}x** |") in md
    assert bench.reading(codes, data["profile"]) in md
    assert bench.profile_report(data["profile"]) in md
    assert codes[list(codes)[-1]]["mlp 40-64-10"]["P"] == 40 * 64 + 64 + 64 * 10 + 10


def test_median_over_runs() -> None:
    bench = load("bench_floor")
    runs: list[dict[str, Any]] = [{"w": {"P": 3, "executor": "E", "local_ms": v}}
                                  for v in (3.0, 1.0, 2.0)]
    assert bench._median_runs(runs) == {"w": {"P": 3, "executor": "E", "local_ms": 2.0}}


def test_measure_runs_on_a_tiny_workload(monkeypatch: pytest.MonkeyPatch) -> None:
    bench = load("bench_floor")
    monkeypatch.setattr(bench, "N", 3)
    monkeypatch.setattr(bench, "BATCH", 2)
    monkeypatch.setattr(bench, "WORKLOADS", {"mlp": ("mlp", (6,), {"hidden": (4,)}, 3, 2, 1)})
    threads = torch.get_num_threads()
    try:
        (row,) = bench.measure(1).values()  # on one thread, as it measures
    finally:
        torch.set_num_threads(threads)
    assert row["P"] == 6 * 4 + 4 + 4 * 10 + 10 and "fused update" in row["executor"]
    assert row["local_ms"] > 0 and row["local_over_floor"] > 0 and row["gossip_over_copy"] > 0
