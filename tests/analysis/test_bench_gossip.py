"""The gossip benchmark's pieces on small inputs (``analysis/bench_gossip.py``)."""

from __future__ import annotations

import topofl as tf
from tests._analysis import load

bench_gossip = load("bench_gossip")


def test_spans() -> None:
    assert bench_gossip.spans([2, 3, 4, 8, 12, 13]) == "2-4, 8, 12-13"
    assert bench_gossip.spans([]) == "none"


def test_case_and_report_on_a_small_ring() -> None:
    row = bench_gossip.case(tf.topologies.ring(3000), 12, 1) | {"graph": "ring"}
    assert (row["kernel"], row["default"], row["k"]) == ("band", "band", 3)
    assert row["rel"] < 1e-6 and row["copy"] > 0 and row["csr"] > 0 and row["band"] > 0
    small = bench_gossip.case(tf.topologies.ring(1000), 12, 1) | {"graph": "ring"}
    assert small["default"] == "csr"
    bits = [{"graph": "ring", "dtype": "float32", "fma": [4, 8], "band": [2, 3]}]
    text = bench_gossip.report([row, small], {"date": "d", "cpu": "c", "cpu_kind": "k",
                                              "python": "p", "torch": "t", "numpy": "n"},
                               1.0, (0.0, 0.0), bits)
    assert "| ring | 3,000 | 12 | 3 | band |" in text
    assert "| ring | float32 | 4, 8 | 2-3 |" in text
