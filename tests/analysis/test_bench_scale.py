"""``analysis/bench_scale.py``: the exponent fit, the data part's floor and its table."""

from __future__ import annotations

import math

import pytest

from tests._analysis import load

bench = load("bench_scale")


def test_slope_recovers_a_power_law() -> None:
    ns = [10**3, 10**4, 10**5, 10**6]
    for e in (0.5, 1.0, 1.2):
        assert bench.slope(ns, [3e-6 * n**e for n in ns]) == pytest.approx(e, abs=1e-12)
    assert bench.slope([10**3], [1.0]) is None
    assert bench.slope(ns, [0.0] * 4) is None  # no positive time: no fit


def test_floor_case_times_the_floor_and_the_data_part_alone() -> None:
    got = bench.floor_case(200, threads=1, clock="cpu", repeats=2)
    assert got is not None and set(got) == {"floor", "permutation", "data"}
    assert all(v is not None and v >= 0.0 and math.isfinite(v) for v in got.values())
    assert bench.floor_case(200, threads=1, clock="cpu", repeats=1, data=False)["data"] is None


def test_floor_table_reports_the_ratio_and_its_exponent() -> None:
    ns = [10**3, 10**4, 10**5]
    # a data part at twice a floor that grows with exponent 1.2: the ratio's exponent is 0
    results = [{"model": "logistic", "rounds": 1, "n": n, "parts": {"data": 2 * 1e-6 * n**1.2}}
               for n in ns]
    floors = {n: 1e-6 * n**1.2 for n in ns}
    text = "\n".join(bench.floor_table(results, floors))
    assert text.count("| 2.00 |") == 3
    assert "data 1.20, floor 1.20, data / floor +0.00" in text
    assert bench.floor_table([{"model": "m", "rounds": 1, "n": 7, "error": "x"}], {7: 1.0}) == []


def test_floor_table_with_the_data_part_alone() -> None:
    ns = [10**3, 10**4, 10**5]
    # in the run the data part grows faster (noise), alone it is 3x a floor of exponent 1.1
    results = [{"model": "logistic", "rounds": 1, "n": n, "parts": {"data": 1e-6 * n**1.3}}
               for n in ns]
    floors = {n: {"floor": 1e-6 * n**1.1, "data": 3e-6 * n**1.1, "permutation": 1e-7 * n**1.2}
              for n in ns}
    text = "\n".join(bench.floor_table(results, floors))
    assert "| data alone |" in text and "| permutation |" in text
    assert text.count("| 3.00 |") == 3
    assert ("data 1.30, data alone 1.10, floor 1.10, permutation 1.20, data alone / floor "
            "+0.00") in text
    assert "uniformly random order" in text
