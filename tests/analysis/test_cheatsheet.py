"""analysis/cheatsheet.py: the page names every registered family, its convergence numbers
are the records' (recomputed here by hand), a target no run reaches reads "not reached", its
graph metrics are topofl.spectral's, and its comparisons follow the seed-paired rule."""

from __future__ import annotations

import csv
import doctest
import math
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import topofl as tf
from tests._analysis import load
from topofl.topologies import REGISTRY, GraphFamily, Param

Quick = tuple[ModuleType, Path, Path]


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> Quick:
    """The quick scale, run once in a temporary folder: (module, records folder, page)."""
    C = load("cheatsheet")
    where = tmp_path_factory.mktemp("cheatsheet")
    page = where / "page.md"
    assert C.main(["--quick", "--out", str(where / "runs"), "--report", str(page)]) == 0
    return C, where / "runs", page


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _table_rows(page: str, heading: str) -> dict[str, list[str]]:
    """The rows of the first table after ``heading``, keyed by their first cell."""
    lines = page[page.index(heading):].splitlines()
    top = next(i for i, ln in enumerate(lines) if ln.startswith("| family |"))
    out: dict[str, list[str]] = {}
    for ln in lines[top + 2:]:
        if not ln.startswith("|"):
            break
        cells = [c.strip() for c in ln.strip("|").split(" | ")]
        out[cells[0].strip("`")] = cells
    return out


def test_the_page_names_every_registered_family_in_both_tables(quick: Quick) -> None:
    C, _, page_path = quick
    page = page_path.read_text(encoding="utf-8")
    n = C.SCALES["quick"].sizes[0]
    graphs = _table_rows(page, "## The graphs")
    conv = _table_rows(page, "## Convergence")
    assert set(graphs) == set(REGISTRY) == set(conv)
    assert f"{len(REGISTRY)} families" in page and f"at n = {n} clients" in page
    assert "python analysis/cheatsheet.py" in page and "--quick" in page
    assert tf.figures.code_fingerprint() in page
    for name, family in REGISTRY.items():
        assert graphs[name][3] == f"`{C.ALGORITHM_FOR[family.stochastic]}`", name
        assert conv[name][1] == graphs[name][3]
    runs = _rows(page_path.with_name("page_runs.csv"))
    seeds = C.SCALES["quick"].seeds
    assert len(runs) == len(REGISTRY) * len(C.LEVELS) * len(seeds)
    assert all(r["status"] == "complete" for r in runs)


def _by_hand(path: Path, target: float) -> tuple[int | None, float | None, float]:
    """Rounds and bytes to ``target`` and the final accuracy, read from the JSONL rows."""
    rows = tf.records.load(path).to_rows()
    acc = sorted((r["round"], r["value"]) for r in rows if r["metric"] == "global_acc_mean"
                 and r["client"] is None)
    bytes_at = {r["round"]: r["value"] for r in rows if r["metric"] == "bytes"}
    first = next((t for t, v in acc if v >= target), None)
    if first is None:
        return None, None, acc[-1][1]
    return first + 1, bytes_at[first], acc[-1][1]


def test_rounds_and_bytes_to_target_are_the_records(quick: Quick) -> None:
    C, _, page_path = quick
    runs = _rows(page_path.with_name("page_runs.csv"))
    base = page_path.parent
    for level in C.LEVELS:
        level_runs = [r for r in runs if r["level"] == level]
        finals = [_by_hand(base / r["records"], math.inf)[2] for r in level_runs
                  if r["family"] == C.REFERENCE]
        target = C.TARGET_FRACTION * float(np.mean(finals))
        assert all(float(r["target"]) == pytest.approx(target, rel=1e-12) for r in level_runs)
        checked_reached = checked_missed = 0
        for r in level_runs:
            rounds, spent, final = _by_hand(base / r["records"], target)
            assert float(r["final"]) == pytest.approx(final, rel=1e-12)
            if rounds is None:
                assert r["rounds_to_target"] == r["bytes_to_target"] == ""
                checked_missed += 1
            else:
                assert int(r["rounds_to_target"]) == rounds
                assert float(r["bytes_to_target"]) == pytest.approx(spent, rel=1e-12)
                checked_reached += 1
        assert checked_reached >= len(C.SCALES["quick"].seeds)  # the complete graph's
    page = page_path.read_text(encoding="utf-8")
    conv = _table_rows(page, "## Convergence")
    for family in ("complete", "ring"):
        skew = [r for r in runs if r["level"] == "skew" and r["family"] == family]
        reach = [int(r["rounds_to_target"]) if r["rounds_to_target"] else None for r in skew]
        kb = [float(r["bytes_to_target"]) if r["bytes_to_target"] else None for r in skew]
        col = 2 + 3 * list(C.LEVELS).index("skew")
        assert conv[family][col] == C.reach_text(reach, digits=2)
        assert conv[family][col + 1] == C.reach_text(kb, unit=1e3)


def test_an_unreachable_target_reads_not_reached(quick: Quick) -> None:
    C, runs_dir, page_path = quick
    stamps = {p: p.stat().st_mtime_ns for p in runs_dir.rglob("*.jsonl")}
    other = page_path.with_name("impossible.md")
    assert C.main(["--quick", "--out", str(runs_dir), "--report", str(other),
                   "--target-fraction", "2"]) == 0
    assert {p: p.stat().st_mtime_ns for p in runs_dir.rglob("*.jsonl")} == stamps  # reused
    page = other.read_text(encoding="utf-8")
    conv = _table_rows(page, "## Convergence")
    for cells in conv.values():
        for col in (2, 3, 5, 6):  # rounds and kB under both levels
            assert cells[col] == "not reached"
        assert re.fullmatch(r"[0-9.]+ ± [0-9.]+", cells[4])  # the final accuracy is a number
    assert page.count("no family reached the target in every seed") == 2 * len(C.LEVELS)


def test_graph_metrics_are_topofl_spectral(quick: Quick) -> None:
    C, _, page_path = quick
    n = C.SCALES["quick"].sizes[0]
    graphs = _table_rows(page_path.read_text(encoding="utf-8"), "## The graphs")
    ring = tf.topologies.ring(n)
    assert graphs["ring"][5] == f"{tf.spectral.spectral_gap(ring):.4f}"
    assert graphs["ring"][7] == f"{tf.spectral.effective_neighbors(ring, 0.95):.2f}"
    assert graphs["complete"][9] == "1"  # one round of the complete graph is the average
    rows = _rows(page_path.with_name("page_graphs.csv"))
    s = C.PARAMS["el_oracle"](n, 10)["s"]
    for r in (r for r in rows if r["family"] == "el_oracle"):
        m = tf.spectral.expected_mixing(tf.topologies.el_oracle(n, s, seed=int(r["seed"])))
        assert float(r["contraction"]) == pytest.approx(m.consensus_contraction, rel=1e-12)
        assert float(r["effective_neighbors"]) == pytest.approx(m.effective_neighbors(0.95),
                                                                rel=1e-9)
    # a family built from the labels: the graph of the run's own skewed data
    for r in (r for r in rows if r["family"] == "stl_fw"):
        seed = int(r["seed"])
        data = tf.data.federate("digits", "pathological", n, seed=seed, classes_per_client=1)
        counts = np.asarray(data.label_distributions, dtype=np.float64)
        g = tf.topologies.build(r["spec"], seed=seed, n=n, label_distributions=counts)
        shares = counts / counts.sum(axis=1, keepdims=True)
        assert float(r["spectral_gap"]) == pytest.approx(tf.spectral.spectral_gap(g), rel=1e-9)
        assert float(r["neighborhood_heterogeneity"]) == pytest.approx(
            tf.spectral.neighborhood_heterogeneity(g, shares), rel=1e-9, abs=1e-12)


def test_the_privacy_section_is_topofl_privacy(quick: Quick) -> None:
    C, _, page_path = quick
    page = page_path.read_text(encoding="utf-8")
    n = C.SCALES["quick"].privacy_n
    table = _table_rows(page, f"## What each graph leaks (n = {n})")
    assert set(table) == set(REGISTRY)
    # the ring's row: the accountants' means over the seeds (the ring is one graph)
    want = tf.privacy.privacy_summary(tf.topologies.ring(n), sigma=C.PRIVACY_SIGMA,
                                      rounds=C.PRIVACY_ROUNDS, delta=C.PRIVACY_DELTA)
    assert table["ring"][2:] == [f"{want[k]:.3f}" for k in tf.privacy.PRIVACY_KEYS]
    # push-sum's weights: no accountant
    assert table["random_directed_push"][2:] == ["–"] * len(tf.privacy.PRIVACY_KEYS)
    rows = _rows(page_path.with_name("page_privacy.csv"))
    for r in (r for r in rows if r["family"] == "erdos_renyi"):
        g = tf.topologies.build(r["spec"], seed=int(r["seed"]), n=n)
        got = tf.privacy.gossip_linear(g, C.PRIVACY_SIGMA, C.PRIVACY_ROUNDS).mean()
        assert float(r["gossip_eps_mean"]) == pytest.approx(got, rel=1e-12)


def test_the_docstring_examples_run() -> None:
    C = load("cheatsheet")
    assert doctest.testmod(C, verbose=False).failed == 0


@pytest.mark.parametrize(("args", "expect"), [
    (["--out", "{file}"], "--out {file} is a file, not a folder: --out names the folder of the "
                          "runs' records"),
    (["--out", "{file}/runs"], "--out {file}/runs is a file under the file {file}, not a "
                               "folder"),
    (["--out", "{tmp}/runs", "--report", "{tmp}"], "--report {tmp} is a folder: --report "
                                                   "names the page (a .md file)"),
    (["--out", "{tmp}/runs", "--report", "{file}/page.md"], "--report {file}/page.md lies "
                                                            "under the file {file}"),
])
def test_an_output_path_that_cannot_be_written_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
        expect: str) -> None:
    """Before: ``--quick --out EXISTING_FILE`` ended in a FileExistsError traceback."""
    C = load("cheatsheet")
    file = tmp_path / "existing.md"
    file.write_text("mine\n")
    fill = {"file": str(file), "tmp": str(tmp_path)}
    assert C.main(["--quick", *(a.format(**fill) for a in args)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [err[0]] and err[0].startswith("cheatsheet: error: " + expect.format(**fill))
    assert file.read_text() == "mine\n" and sorted(p.name for p in tmp_path.iterdir()) == [
        "existing.md"]


def _family(name: str, example: Any) -> GraphFamily:
    return GraphFamily(name, tf.topologies.ring, (Param("n", int, "nodes"),),
                       lambda n, rng: example(n))


def test_a_family_without_parameters_here_takes_its_example_or_says_why_not(
        monkeypatch: pytest.MonkeyPatch) -> None:
    C = load("cheatsheet")
    # a family registered later: its registry example, when it can be written as a spec
    later = _family("ring_later", lambda n: {"n": n})
    monkeypatch.setitem(REGISTRY._items, "ring_later", later)
    spec, note = C.spec_of(later, 12, 10)
    assert spec == "ring_later" and "example" in note
    spec, note = C.spec_of(_family("ring_later", lambda n: {"n": n, "w": [1, 2]}), 12, 10)
    assert spec is None and "PARAMS" in note
    spec, note = C.spec_of(_family("ring_later", lambda n: None), 12, 10)
    assert spec is None and "no example" in note
    registry = {**REGISTRY, "brand_new": _family("brand_new", lambda n: {"n": n, "w": [1]})}
    scale = C.SCALES["quick"]
    cells = C.plan_cells(scale, 10, registry=registry)
    assert [c.family for c in cells] == list(registry) * len(scale.sizes)
    new = cells[list(registry).index("brand_new")]
    assert new.spec is None and new.algorithm is None
    page = C.render(cells, [], {}, {}, scale, "quick", 0.9, 0.0, registry=registry)
    graphs = _table_rows(page, "## The graphs")
    assert "`brand_new`" in page and graphs["brand_new"][1].startswith("not run: ")


def test_rank_states_a_lead_only_when_the_paired_test_and_the_margin_decide() -> None:
    C = load("cheatsheet")
    per = {
        "fast": [100.0, 110.0, 105.0],
        "slow": [200.0, 215.0, 205.0],  # behind in every seed, by ~100 (t test decides)
        "close": [104.0, 113.0, 109.0],  # behind in every seed, but within the 10 % margin
        "noisy": [90.0, 300.0, 120.0],  # ahead in one seed: the spread covers the difference
        "partly": [150.0, None, 160.0],  # missed once: a sign test, 3 seeds never decide
        "never": [None, None, None],
    }
    r = C.rank(per, "bytes", lambda best: 0.1 * best)
    assert [f for f, _ in r.order] == ["fast", "close", "noisy", "slow"]
    assert r.order[0][1] == pytest.approx(105.0)
    assert r.ahead_of == ["slow"]
    assert r.undecided == ["close", "noisy", "partly"]
    assert r.never == ["never"] and r.partly == ["partly"]
    # without a margin the consistent small lead is decided too
    assert C.rank(per, "bytes", lambda best: 0.0).ahead_of == ["slow", "close"]
    text = "\n".join(C.ranking_text(r, "kB", 1.0))
    assert "Fewest bytes to target: `fast`** (105 kB" in text
    assert "than `slow` (seed-paired" in text
    assert ("Against `close`, `noisy`, `partly`: inconclusive at this scale (`close`: within "
            "the margin; `noisy`: the seeds' spread covers the difference; `partly`: a seed "
            "missed the target: a sign test over the seeds)") in text
    # the same difference in every seed: the helper's sign test, undecidable at 3 seeds
    same = C.rank({"a": [10.0, 10.0, 15.0], "b": [60.0, 60.0, 65.0]}, "rounds",
                  lambda best: 5.0)
    assert same.undecided == ["b"] and "3 seeds cannot pass" in same.why["b"]
    assert C.ranking_text(C.rank({"a": [None] * 3}, "rounds", lambda b: 1.0), "rounds", 1.0) \
        == ["- **rounds to target**: no family reached the target in every seed."]


def test_a_family_that_never_reaches_the_target_is_explained() -> None:
    """"Never reached" names the target, the rounds run, the best accuracy each family reached
    and, for a graph of cliques, the classes its cliques hold (D-Cliques at n = 16 under one
    class per client: two cliques of 8 clients, 8 of the 10 digits each)."""
    C = load("cheatsheet")
    r = C.rank({"fast": [10.0, 12.0], "dcliques": [None, None], "ring": [None, None]},
               "rounds", lambda best: 5.0)
    text = "\n".join(C.ranking_text(
        r, "rounds", 1.0, 2, target=0.853, rounds=200, best={"dcliques": 0.8412, "ring": 0.6},
        why={"dcliques": "cliques of 8, 8 clients"}))
    assert ("Never reached the target (0.853) within the 200 rounds run; the best accuracy "
            "each reached (mean over seeds of each seed's best evaluation): `dcliques` 0.841 "
            "(cliques of 8, 8 clients), `ring` 0.600.") in text
    # without the keywords: the sentence as before
    assert "Never reached the target within the rounds run: `dcliques`, `ring`." in \
        "\n".join(C.ranking_text(r, "rounds", 1.0))
    g = C.graph_metrics("dcliques:clique_size=10", 16, 0)
    counts = C._label_counts("skew", 16, 0)
    assert sum(g["clique_sizes"]) == 16 and g["classes"] == counts.shape[1] == 10
    assert g["clique_classes"] == [int((counts[list(c)].sum(axis=0) > 0).sum()) for c in
                                   tf.topologies.build("dcliques:clique_size=10", seed=0,
                                                       label_distributions=counts).groups]
    text = C.cliques_text([g])
    assert text is not None and text.startswith(f"cliques of {g['clique_sizes'][0]}")
    assert ("no clique holds every class" in text) == (max(g["clique_classes"]) < 10)
    assert C.cliques_text([C.graph_metrics("ring", 16, 0)]) is None
    assert "Clique Averaging" in C.PAPER_SETTING["dcliques"]


def test_the_page_defines_its_units(quick: Quick) -> None:
    C, _, page_path = quick
    page = page_path.read_text(encoding="utf-8")
    units = next(ln for ln in page.splitlines() if ln.startswith("**Units.**"))
    for word in ("*Accuracy*", "from 0 to 1", "*round*", "kB = 10³ bytes", "*messages*",
                 "*n_eff*", "*exact avg*"):
        assert word in units, word
    # the softmax regression on 8x8 digits: 64 x 10 + 10 float32 numbers, 4 bytes each
    assert f"{(64 * 10 + 10) * 4} bytes with `dsgd`" in units
    rows = _rows(page_path.with_name("page_runs.csv"))
    assert all(float(r["best"]) >= float(r["final"]) for r in rows if r["status"] == "complete")
