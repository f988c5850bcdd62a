"""``analysis/standins_gates.py``: it checks the gates the figure scripts recorded against the
committed tables and never rewrites a result (its former apply mode wrote percents as
fractions and replaced DFedPGP Table 2's own gate with Table 1's)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests._analysis import load

RESULTS = Path(__file__).resolve().parents[2] / "paper_figures" / "results"


@pytest.fixture(scope="module")
def gates():  # type: ignore[no-untyped-def]
    return load("standins_gates")


def test_every_recorded_kendall_gate_agrees_with_its_tables(gates) -> None:  # type: ignore[no-untyped-def]
    for name in gates.GATED:
        got = gates.checked(name)
        assert got, name
        recorded = json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))["gates"]
        # the gates reported are the recorded ones, values as recorded (percents stay percents)
        assert [g.name for g in got] == [d["name"] for d in recorded if d.get("kind") != "ordinal"]
        for g in got:
            assert max(g.standin) > 1.0, (name, g.name)  # accuracies in %, rounds: never fractions


def test_a_recorded_gate_that_its_tables_contradict_stops_the_script(gates, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    real = gates.recorded

    def flipped(name: str):  # type: ignore[no-untyped-def]
        out = []
        for g in real(name):
            d = g.as_dict()
            d["passed"], d["tau"] = not d["passed"], -d["tau"]  # a gate its tables deny
            out.append(gates.figures.gate.gate_from_dict(d))
        return out

    monkeypatch.setattr(gates, "recorded", flipped)
    with pytest.raises(SystemExit, match="dpfl_table1: the gate its script recorded"):
        gates.checked("dpfl_table1")


def test_the_script_leaves_every_result_as_it_was(gates, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in RESULTS.glob("*.json")}
    monkeypatch.setattr(gates, "ROOT", tmp_path)  # its report goes to tmp_path/analysis
    (tmp_path / "analysis").mkdir()
    assert gates.main([]) == 0
    report = (tmp_path / "analysis" / "standins_gates.md").read_text(encoding="utf-8")
    assert "| dfedpgp_table2 | CIFAR-10 Dir-0.3 | 8 |" in report  # its own gate, not Table 1's
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in RESULTS.glob("*.json")}
    assert after == before
