"""Pages a referee can check: every committed result names the data that ran (a stand-in as
such), the model's size and how the labels fall on the clients, recomputed from its own
setting tables (``topofl.figures.facts``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from topofl import figures
from topofl.figures import cli as figure_cli
from topofl.figures import facts

RESULTS = Path(__file__).resolve().parents[2] / "paper_figures" / "results"


def _pages() -> list[Path]:
    out = []
    for js in sorted(RESULTS.glob("*.json")):
        v = json.loads(js.read_text(encoding="utf-8"))
        if isinstance(v, dict) and "verdict" in v:
            out.append(js)
    return out


def test_every_page_names_what_ran_and_its_facts() -> None:
    pages = _pages()
    assert len(pages) >= 43
    for js in pages:
        v = json.loads(js.read_text(encoding="utf-8"))
        md = js.with_suffix(".md").read_text(encoding="utf-8")
        head = md.split("\n\n", 2)[1]
        assert head.startswith("**Ran on:** "), js.stem
        assert facts.SECTION in md and "facts" in v, js.stem
        for row in v["facts"]:
            if row.get("stand_in_for"):  # a stand-in is named as such in the header
                assert f"offline stand-in for {row['stand_in_for']}" in head, js.stem
            if "parameters" in row:
                assert f"{row['parameters']:,} parameters" in head, js.stem


@pytest.mark.parametrize("name", ["dcliques_09", "field_async", "dpfl_table1", "field_choco"])
def test_the_facts_recompute_from_the_page(name: str) -> None:
    v = json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))
    md = (RESULTS / f"{name}.md").read_text(encoding="utf-8")
    assert facts.facts(md, v.get("stand_in") or {}) == v["facts"]


def test_the_counts_are_the_closed_forms() -> None:
    v = json.loads((RESULTS / "dcliques_09.json").read_text(encoding="utf-8"))
    (row,) = v["facts"]  # logistic regression on 28x28 digits: 784 x 10 weights + 10 biases
    assert row["parameters"] == 784 * 10 + 10 and row["model"] == "logistic"
    assert row["stand_in_for"] == "mnist" and row["clients"] == 100
    # two shards of one class each: a client holds 1 or 2 classes
    lo, _, hi = (float(x) for x in row["classes_per_client"].split(" / "))
    assert 1 <= lo <= hi <= 2
    # the MLP of hidden=[64] on MNIST-1D's 40 samples: 40*64 + 64 + 64*10 + 10
    t1 = json.loads((RESULTS / "dpfl_table1.json").read_text(encoding="utf-8"))["facts"]
    assert {r["parameters"] for r in t1} == {40 * 64 + 64 + 64 * 10 + 10}
    assert {r["classes_per_client"] for r in t1} == {"3 / 3 / 3"}  # classes_per_client=3


def test_the_models_settings_come_from_the_configs_where_the_page_omits_them() -> None:
    """field_morph's setting table names no model_params; its configs give hidden=[32]:
    784*32 + 32 + 32*10 + 10 parameters, not the default MLP's 199,210."""
    (row,) = json.loads((RESULTS / "field_morph.json").read_text(encoding="utf-8"))["facts"]
    assert row["parameters"] == 784 * 32 + 32 + 32 * 10 + 10
    assert row["model_params_from"].startswith("configs/field_morph_")
    assert not row["model_params_from"].startswith("configs/field_morph_fmnist")
    # without the result's configs the page's own settings cannot count it: said, not guessed
    md = (RESULTS / "pfeddst_table1.md").read_text(encoding="utf-8")
    assert all("parameters" not in r and "not counted" in r["note"]
               for r in facts.facts(md, configs={}))


def test_apply_is_idempotent(tmp_path: Path) -> None:
    for ext in (".json", ".md"):
        shutil.copy(RESULTS / f"field_async{ext}", tmp_path / f"field_async{ext}")
    md = tmp_path / "field_async.md"
    before = md.read_text(encoding="utf-8")
    facts.apply(tmp_path / "field_async.json", md)
    assert md.read_text(encoding="utf-8") == before
    assert before.count(facts.SECTION) == 1 and before.count("**Ran on:**") == 1


def test_a_page_without_training_data_says_so() -> None:
    md = (RESULTS / "dcliques_05.md").read_text(encoding="utf-8")
    assert "**Ran on:** no training data" in md


def test_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    assert figure_cli.main(["facts", "--bogus"]) == 2
    assert "unknown option" in capsys.readouterr().err
    assert figure_cli.main(["facts", "no_such_result"]) == 2
    assert "no committed result" in capsys.readouterr().err
    assert figures.facts is facts


def test_a_setting_the_facts_cannot_rebuild_is_a_note_not_an_error() -> None:
    md = ("## Setting\n\n| setting | value |\n|---|---|\n| data | digits |\n"
          "| n_clients | 10 |\n| partition | pathological |\n"
          "| partition_params | classes_per_client=2 |\n| model | no_such_model |\n"
          "| model_params | - |\n| seeds | 0 |\n\n## Numbers\n")
    (row,) = facts.facts(md)
    assert "not recomputed from the page" in row["note"] and "no_such_model" in row["note"]


def test_configs_named_by_an_f_string_and_a_panels_own_stand_in_options_are_found() -> None:
    # pfeddst_fig3's configs are named f"pfeddst_{DATASETS[dataset]}_{m}" in _pfeddst.py
    (row,) = json.loads((RESULTS / "pfeddst_fig3.json").read_text(encoding="utf-8"))["facts"]
    assert row["parameters"] == 3274 and "note" not in row  # mnist1d's 40 -> 64 -> 10 MLP
    # dpfl_fig6's two panels run MNIST-1D with two test sizes; one is the recorded stand-in
    rows = json.loads((RESULTS / "dpfl_fig6.json").read_text(encoding="utf-8"))["facts"]
    assert [r["stand_in_for"] for r in rows] == ["cinic10", "cinic10"]
