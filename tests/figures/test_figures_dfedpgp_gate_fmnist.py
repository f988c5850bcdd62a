"""DFedPGP Table 1's CIFAR-10 Dir-0.3 column on the real Fashion-MNIST (issue 80, item 2):
the gate declared in ``claims.toml`` before any run (its paper values against Table 1 as
transcribed here, so that a typo fails; its bars those of ``[gates]``), the config against
Table 1's, the refusal to decide on a stand-in, the gate read the declared way, and the script
at ``--quick`` (opt in: ``pytest -m figures``)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from scipy import stats

import topofl as tf
from tests._figures import (
    quick_out_fixture,  # noqa: F401  (the quick_out fixture)
    raw_config,
    run_quick,
    script,
    verdict,
)
from topofl import figures
from topofl.engine._evaluation_divergence import nonfinite_loss_error
from topofl.figures import config as figure_config
from topofl.figures import diverged

NAME = "dfedpgp_gate_fmnist"
FIGS = Path(__file__).resolve().parents[2] / "paper_figures"
#: DFedPGP (Liu et al., CVPR 2024), Table 1 ("Test accuracy (%) on CIFAR-10 & 100 in both
#: Dirichlet and Pathological distribution settings"), column CIFAR-10 Dirichlet alpha = 0.3,
#: transcribed from the paper's text row by row (the +- left out)
TABLE1_CIFAR10_DIR03 = {"Local": 63.20, "FedAvg": 79.66, "FedPer": 84.06, "FedRep": 84.50,
                        "FedBABU": 83.26, "Ditto": 73.51, "DFedAvgM": 82.49, "OSGP": 83.14,
                        "Dis-PFL": 82.71, "DFedPGP": 85.61}
#: the paper's text, where this machine has it (the test against it is skipped elsewhere)
PAPER_TEXT = Path("/work/shared/papers/000_7b088758ba32ee08.txt")


def _helpers() -> Any:
    import sys

    sys.path.insert(0, str(FIGS))
    try:
        import _dfedpgp
    finally:
        sys.path.remove(str(FIGS))
    return _dfedpgp


def test_the_declared_gate_is_table1s_column_with_the_bars_of_gates() -> None:
    h = _helpers()
    column, paper = h.declared_gate(NAME)
    assert column == "CIFAR-10 Dir-0.3"
    controls = {m: v for m, v in TABLE1_CIFAR10_DIR03.items() if m != "DFedPGP"}
    assert paper == controls  # every control, each value as the table prints it
    i = h.COLUMNS.index(column)  # and Table 1 as the other DFedPGP results read it
    assert paper == {m: h.PAPER[m][i] for m in h.ROWS if m != "DFedPGP"}
    assert h.PAPER["DFedPGP"][i] == TABLE1_CIFAR10_DIR03["DFedPGP"]
    own, shared = figures.gate_bars(NAME), figures.gate_bars()
    assert {k: own[k] for k in ("tau", "top_share", "p_max")} == \
        {k: shared[k] for k in ("tau", "top_share", "p_max")} == \
        {"tau": 0.4, "top_share": 1 / 3, "p_max": 0.10}
    assert own["declared"].startswith("2026-11-28, before any default-scale run")


@pytest.mark.skipif(not PAPER_TEXT.is_file(), reason="the paper's text is not on this machine")
def test_the_transcription_is_the_papers_table() -> None:
    text = PAPER_TEXT.read_text(encoding="utf-8")
    table = text[:text.index("Table 1. Test accuracy")].splitlines()[-16:]  # its rows
    for method, value in TABLE1_CIFAR10_DIR03.items():
        (row,) = [ln.split("\t") for ln in table if ln.split("\t")[0].strip() == method]
        assert len(row) == 9, (method, row)  # the name and 8 columns, CIFAR-10 Dir-0.3 the 2nd
        # a cell: '$63.20 \pm .28$', '86.94+.62', '88.85 ±.21' ...: its mean, the first number
        assert float(re.search(r"\d+\.\d+", row[2]).group()) == value, (method, row[2])


def test_the_config_is_table1s_setting_on_fashion_mnist() -> None:
    raw, table1 = raw_config(NAME), raw_config("dfedpgp_table1")
    shared = ("n_clients", "batch_size", "rounds", "lr", "decay", "weight_decay", "momentum",
              "eval_global", "seeds", "momentum_state", "divergence")
    assert {k: raw[k] for k in shared} == {k: table1[k] for k in shared}
    assert (raw["data"], raw["model"], raw["model_params"]) == (
        "fashion_mnist", "mlp", {"hidden": [200, 200]})
    methods = dict(table1["grid"]["method"])
    methods.pop("DFedAvgM-P")  # Table 4's cell, not a row of Table 1
    assert raw["grid"]["method"] == methods and list(methods) == _helpers().ROWS
    assert raw["grid"]["split"] == {"Fashion-MNIST Dir-0.3": {
        "partition": "dirichlet", "partition_params": {"alpha": 0.3}}}
    assert "stand_in" not in raw  # the default and full scales run Fashion-MNIST or nothing
    assert raw["scale"]["default"] == {"rounds": 80, "eval_every": 2}
    assert raw["scale"]["quick"] == {"rounds": 2, "eval_every": 1, "data": "digits"}
    notes = " ".join(figures.claim_of(NAME)["notes"])
    assert "the 80 rounds that keep it under 6 h" in " ".join(notes.split())


@pytest.mark.parametrize("scale", ["default", "full"])
def test_without_fashion_mnist_the_decisive_scales_refuse(
        scale: str, monkeypatch: pytest.MonkeyPatch) -> None:
    h = _helpers()
    real = figure_config._available
    monkeypatch.setattr(figure_config, "_available",
                        lambda d: False if d == "fashion_mnist" else real(d))
    with pytest.raises(figures.config.FigureError, match="runs only on its own data"):
        h.on_its_data(NAME, scale)
    h.on_its_data(NAME, "quick")  # a smoke run may
    monkeypatch.setattr(figure_config, "_available", lambda d: True)
    h.on_its_data(NAME, scale)


def test_a_declaration_without_the_papers_values_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = _helpers()
    for bad in ({"column": "CIFAR-10 Dir-0.5", "paper": {"Local": 1.0}},
                {"column": "CIFAR-10 Dir-0.3"},
                {"column": "CIFAR-10 Dir-0.3", "paper": {"DFedPGP": 85.61}}):
        monkeypatch.setattr(h.figures, "gate_bars", lambda result, bad=bad: dict(bad))
        with pytest.raises(figures.config.FigureError, match=r"\[x.gates\] must declare"):
            h.declared_gate("x")


def test_the_gate_reads_the_declared_values() -> None:
    h = _helpers()
    split = "Fashion-MNIST Dir-0.3"
    _, paper = h.declared_gate(NAME)

    def acc(values: dict[str, float]) -> dict[tuple[str, str], figures.OverSeeds]:
        return {(m, split): figures.OverSeeds((v, v + 0.001, v - 0.001), (0, 1, 2))
                for m, v in values.items()}

    ordered = {m: v / 100 - 0.1 for m, v in TABLE1_CIFAR10_DIR03.items()}  # the paper's order
    g = h.gate(acc(ordered), split, paper=paper, result=NAME)
    assert g.passed and len(g.controls) == 9 and "DFedPGP" not in g.controls
    assert g.controls[0] == "FedRep" and g.top == 3 and g.p_max == 0.10
    last = dict(ordered, FedRep=0.5)  # the paper's best control last here: tau still 0.5
    g = h.gate(acc(last), split, paper=paper, result=NAME)
    assert g.tau >= 0.4 and g.best_rank == 9 and not g.passed
    reversed_ = {m: 1.5 - v for m, v in ordered.items()}  # the paper's order upside down
    assert h.gate(acc(reversed_), split, paper=paper, result=NAME).tau == pytest.approx(-1.0)


# ------------------------------------------------------------------ the diverged-control rule
# (claims.toml [dfedpgp_gate_fmnist], its last note): read on a runs folder written here as a
# sweep writes it, each run's records <run>.jsonl and finished marker <run>.done beside it

SPLIT = "Fashion-MNIST Dir-0.3"


def _write_run(folder: Path, seed: int, curve: list[float], stop: int | None = None,
               done: bool = True) -> None:
    """One seed's run as a sweep leaves it: ``curve`` its evaluations (rounds 0, 1, ...);
    ``stop`` the round its training diverged at (the engine's message in its marker);
    ``done=False``: no marker (killed, or still running)."""
    name = f"seed={seed}"
    folder.mkdir(parents=True, exist_ok=True)
    with tf.records.Recorder(folder / f"{name}.jsonl", run=name) as rec:
        rec.log_config({"seed": seed, "rounds": 8})
        for t, v in enumerate(curve):
            rec.log("test_acc_mean", v, t)
    if not done:
        return
    if stop is None:
        marker = {"status": "complete", "summary": {}, "message": ""}
    else:
        msg = str(nonfinite_loss_error(stop, 2, 7, math.nan))  # the engine's own message
        marker = {"status": "diverged", "summary": {}, "message": msg}
    (folder / f"{name}.done").write_text(json.dumps(marker) + "\n", encoding="utf-8")


FLAT = [0.5, 0.6, 0.65, 0.7, 0.7, 0.7, 0.7, 0.7]


def _column(tmp: Path, stops: dict[str, dict[int, int]], *,
            before: dict[str, float] | None = None) -> dict[str, figures.Panel]:
    """The column's panel: every row of Table 1, each at its paper value less 20 points
    (the paper's order), 3 seeds; ``stops``: method -> seed -> round it diverged at (its
    curve cut at that round, at ``before[method]`` until then: the last evaluation before
    the stop, which must never count)."""
    runs = {}
    for m, v in TABLE1_CIFAR10_DIR03.items():
        folder = tmp / NAME / m / "fashion-mnist-dir-0.3"
        for seed, d in enumerate((0.0, 0.002, -0.002)):
            curve = [x - 0.7 + v / 100 - 0.2 + d for x in FLAT]
            stop = stops.get(m, {}).get(seed)
            if stop is not None:
                curve = [(before or {}).get(m, c) for c in curve[:stop]]
            _write_run(folder, seed, curve, stop)
        runs[m] = tf.records.load_many(folder)
    panel = figures.Panel(SPLIT, runs, epochs={k: 5.0 for k in runs},
                          configs={k: {"rounds": 8} for k in runs}, setting=[], notes=[],
                          seeds=[0, 1, 2])
    return {SPLIT: panel}


def test_a_run_is_diverged_only_when_its_marker_says_so(tmp_path: Path) -> None:
    """Read from the sweep's markers, not guessed from missing rows: a run killed before or
    after its first evaluation (no marker) and a complete one are not diverged; a diverged
    one gives the round the engine's message names, whether or not it has rows."""
    d = tmp_path / "runs"
    _write_run(d, 0, FLAT)                      # complete
    _write_run(d, 1, FLAT[:3], stop=3)          # diverged at round 3, rows up to round 2
    _write_run(d, 2, [], stop=0)                # diverged before its first evaluation
    _write_run(d, 3, FLAT[:4], done=False)      # killed (or running): rows, no marker
    _write_run(d, 4, [], done=False)            # killed before its first evaluation
    rec = tf.records.load_many(d)
    assert rec.runs == [f"seed={s}" for s in range(5)]
    got = diverged.stopped(rec)
    assert list(got) == ["seed=1", "seed=2"]
    assert [(x.seed, x.round) for x in got.values()] == [(1, 3), (2, 0)]
    assert "the loss of client 7 is nan" in got["seed=1"].message
    assert diverged.by_curve({"A": rec, "B": rec.subset(["seed=0", "seed=3"])}) == {
        "A": (got["seed=1"], got["seed=2"])}


@pytest.mark.parametrize(("text", "match"), [
    ("{not json", "not JSON"), ("[1, 2]", "expected a JSON object, found list"),
    ('{"status": "exploded"}', "unknown status 'exploded'")])
def test_a_marker_that_is_not_one_is_refused(tmp_path: Path, text: str, match: str) -> None:
    _write_run(tmp_path, 0, FLAT, done=False)
    (tmp_path / "seed=0.done").write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=match):
        diverged.stopped(tf.records.load_many(tmp_path))


def test_records_not_read_from_a_file_are_refused() -> None:
    rec = tf.records.Records(rows=[{"run": "a", "round": 0, "client": None,
                                    "metric": "test_acc_mean", "value": 0.5}],
                             configs={"a": {"seed": 0}})
    with pytest.raises(ValueError, match="not read from a records file"):
        diverged.stopped(rec)
    with pytest.raises(TypeError, match="a Panel or a mapping"):
        diverged.by_curve([rec])


def test_a_diverged_seed_scores_0_and_a_control_diverged_everywhere_ranks_last(
        tmp_path: Path) -> None:
    """OSGP diverged in every seed (seed 0 at round 5, after evaluations at 0.99: never its
    value), Local too (tied last with it), Ditto in seed 1 only: the gate still reads the nine
    controls, its tau that of scipy's tau-b on the values with those seeds at 0."""
    h = _helpers()
    found = _column(tmp_path, {"OSGP": {0: 5, 1: 0, 2: 0}, "Local": {0: 0, 1: 0, 2: 0},
                               "Ditto": {1: 2}}, before={"OSGP": 0.99})
    stops = diverged.by_curve(found[SPLIT])
    assert {m: [(x.seed, x.round) for x in v] for m, v in stops.items()} == {
        "Local": [(0, 0), (1, 0), (2, 0)], "Ditto": [(1, 2)],
        "OSGP": [(0, 5), (1, 0), (2, 0)]}
    acc = h.scored(found, {SPLIT: stops})
    assert acc[("OSGP", SPLIT)].values == (0.0, 0.0, 0.0)
    assert acc[("Local", SPLIT)].values == (0.0, 0.0, 0.0)
    ditto = acc[("Ditto", SPLIT)].values
    assert ditto[1] == 0.0 and ditto[0] == pytest.approx(0.7351 - 0.2)
    # OSGP's seed 0 has rows, its last evaluation before the stop at 0.99: never its value
    assert figures.final(found[SPLIT].runs["OSGP"].for_run("seed=0")).values == (0.99,)
    trained = {m for m in TABLE1_CIFAR10_DIR03 if m not in stops}
    for m in trained:  # a method with no diverged seed reads as accuracy() reads it
        assert acc[(m, SPLIT)] == h.accuracy({SPLIT: figures.Panel(
            SPLIT, {m: found[SPLIT].runs[m]}, {}, {}, [], [])})[(m, SPLIT)]
    _, paper = h.declared_gate(NAME)
    g = h.gate(acc, SPLIT, paper=paper, result=NAME)
    assert len(g.controls) == 9 and {"OSGP", "Local"} <= set(g.controls)
    here = dict(zip(g.controls, g.standin))
    assert here["OSGP"] == here["Local"] == 0.0 == min(here.values())
    assert sorted(here.values())[2] > 0  # the two all-diverged controls alone are last
    ref = stats.kendalltau([paper[c] for c in g.controls], [here[c] for c in g.controls])
    assert g.tau == pytest.approx(float(ref.statistic))


def test_the_rival_is_read_among_the_methods_that_did_not_diverge(tmp_path: Path) -> None:
    """FedRep (the best other row) diverged in one seed, OSGP in every seed at 0.99 before
    the stop: the rival is FedPer, the best of the rows that trained; the note names each
    diverged method, its seeds and rounds."""
    h = _helpers()
    found = _column(tmp_path, {"FedRep": {2: 6}, "OSGP": {0: 4, 1: 4, 2: 7}},
                    before={"OSGP": 0.99, "FedRep": 0.99})
    stops = diverged.by_curve(found[SPLIT])
    acc = h.scored(found, {SPLIT: stops})
    check, rival = h.best_trained(found, acc, SPLIT, "DFedPGP", stops, margin=0.01,
                                  headline=True)
    assert rival == "FedPer" and check.name == (
        f"{SPLIT}: DFedPGP above the best other (FedPer), final accuracy")
    assert check.outcome == "pass" and check.headline  # 85.61 - 84.06 = 1.55 points ahead
    ref, ref_rival = h.best(found, acc, SPLIT, "DFedPGP", among=["FedPer"], margin=0.01,
                            headline=True)
    assert ref_rival == "FedPer" and ref.detail == check.detail
    (note,) = h.diverged_note(stops, found[SPLIT])
    assert "FedRep in 1 of its 3 seed(s): seed 2 at round 6" in note
    assert "OSGP in 3 of its 3 seed(s): seeds 0 and 1 at round 4, seed 2 at round 7" in note
    assert "scores 0 for the gate" in note and h.diverged_note({}, found[SPLIT]) == []


def test_dfedpgp_diverging_leaves_the_headline_inconclusive(tmp_path: Path) -> None:
    h = _helpers()
    found = _column(tmp_path, {"DFedPGP": {1: 3}})
    stops = diverged.by_curve(found[SPLIT])
    acc = h.scored(found, {SPLIT: stops})
    assert acc[("DFedPGP", SPLIT)].values[1] == 0.0
    check, rival = h.best_trained(found, acc, SPLIT, "DFedPGP", stops, margin=0.01,
                                  headline=True)
    assert rival == "FedRep" and check.outcome == "inconclusive" and check.headline
    assert check.reason.startswith("DFedPGP diverged (seed 1 at round 3)")
    assert "does not say" in check.reason


def test_every_other_row_diverged_leaves_no_rival(tmp_path: Path) -> None:
    h = _helpers()
    found = _column(tmp_path, {m: {0: 1} for m in TABLE1_CIFAR10_DIR03 if m != "DFedPGP"})
    stops = diverged.by_curve(found[SPLIT])
    check, rival = h.best_trained(found, h.scored(found, {SPLIT: stops}), SPLIT, "DFedPGP",
                                  stops, margin=0.01)
    assert rival is None and check.outcome == "inconclusive" and "no rival" in check.reason


def test_a_panels_runs_carry_their_markers(tmp_path: Path) -> None:
    """Real sweeps (lr 1e6 diverges in round 0): the runs of a curve, of one config or of
    several configs' sweeps under one label, are found beside their markers."""
    args = figures.FigureArgs("toy", "quick", tmp_path / "out", tmp_path / "runs")
    base = {"algorithm": "dsgd", "data": "digits", "n_clients": 6, "model": "logistic",
            "rounds": 2, "eval_every": 1, "batch_size": 8, "record_clients": False,
            "spectral": False, "topology": "ring", "local_steps": 3}
    one = {**base, "sweep": {"lr": [0.1, 1e6]}, "_name": "one"}
    two = [{**base, "lr": 1e6, "sweep": {"seed": [s, s + 2]}, "_name": f"two{s}"}
           for s in (0, 1)]  # one label over two sweeps: their run ids differ
    found = figures.panels(args, {"one": one, "two": two},
                           lambda c: "diverging" if c["lr"] > 1 else "fine")
    a, b = diverged.by_curve(found["one"]), diverged.by_curve(found["two"])
    assert list(a) == ["diverging"] and [x.run for x in a["diverging"]] == ["lr=1000000.0"]
    assert list(b) == ["diverging"] and [(x.seed, x.round) for x in b["diverging"]] == [
        (0, 0), (1, 0), (2, 0), (3, 0)]
    assert set(found["two"].runs["diverging"].sources) == {f"seed={s}" for s in range(4)}
    assert all(x.message.startswith("training diverged at round 0") for x in b["diverging"])


def test_the_page_reads_the_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The script on the column written here (its runs read, none run): the gate's values
    with OSGP's diverged seeds at 0, the nine controls, the rival among the methods that
    trained, and the page naming each diverged method, its seeds and rounds."""
    h = _helpers()
    found = _column(tmp_path / "runs", {"OSGP": {0: 5, 1: 0, 2: 0}, "FedRep": {2: 6}},
                    before={"OSGP": 0.99, "FedRep": 0.99})
    monkeypatch.setattr(h, "grid_panels", lambda args, config: ({"rounds": 8}, found))
    mod = script(NAME)
    monkeypatch.syspath_prepend(str(FIGS))
    out = tmp_path / "out"
    assert mod["main"](["--quick", "--out", str(out)]) == 0
    md, v = verdict(NAME, out)
    (gate,) = v["gates"]
    assert len(gate["controls"]) == 9 and gate["controls"]["OSGP"]["standin"] == 0.0
    fedrep = gate["controls"]["FedRep"]["standin"]  # seeds 0 and 1 trained, seed 2 scored 0
    assert fedrep == pytest.approx(100 * (0.845 - 0.2 + 0.845 - 0.2 + 0.002) / 3)
    (check,) = v["checks"]
    assert check["name"] == f"{SPLIT}: DFedPGP above the best other (FedPer), final accuracy"
    text = " ".join(md.split())
    assert "OSGP in 3 of its 3 seed(s): seed 0 at round 5, seeds 1 and 2 at round 0" in text
    assert "FedRep in 1 of its 3 seed(s): seed 2 at round 6" in text
    assert "| diverged (scored 0) |" in md


@pytest.mark.figures
def test_quick_runs_every_row_and_gates_the_headline(quick_out: Path) -> None:
    run_quick(NAME, quick_out)
    md, v = verdict(NAME, quick_out)
    assert v["seeds"] == [0] and v["verdict"] == "inconclusive at this scale"
    (gate,) = v["gates"]
    assert set(gate["controls"]) == set(TABLE1_CIFAR10_DIR03) - {"DFedPGP"}
    assert {c: x["paper"] for c, x in gate["controls"].items()} == {
        m: x for m, x in TABLE1_CIFAR10_DIR03.items() if m != "DFedPGP"}
    (check,) = v["checks"]
    assert check["headline"] and check["name"].startswith("Fashion-MNIST Dir-0.3: DFedPGP above")
    assert "scikit-learn's 8x8 digits" in md and not (quick_out / f"{NAME}.png").exists()
