"""Every committed result carries what a referee asks beyond its data and model: a reproduction
summary, where each hyperparameter came from, and the paper's number beside the reproduced one
(``topofl.figures.referee``, written by ``topofl figure facts``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from topofl.figures import referee

ROOT = Path(__file__).resolve().parents[2] / "paper_figures"
RESULTS = ROOT / "results"
NAMES = sorted(p.stem for p in RESULTS.glob("*.md"))  # the result pages

MD = ("# toy\n\n## Setting\n\n### a\n\n| setting | value |\n|---|---|\n| lr | 0.1 |\n"
      "| rounds | 100 |\n| momentum | - |\n\n### b\n\n| setting | value |\n|---|---|\n"
      "| lr | 0.05 |\n| rounds | 100 |\n| momentum | - |\n\n## Numbers\n")
CHECKS = [{"name": "A more accurate than B", "measured": "0.02 ± 0.01", "outcome": "pass",
           "headline": True},
          {"name": "A more accurate than C", "measured": "0.01 ± 0.01", "outcome": "fail",
           "headline": False}]
ENTRY = {"scope": "s", "easy": "e", "hard": "h", "differs": "d",
         "hyperparameters": [{"setting": "lr", "source": "tuned", "detail": "grid on seed 100"},
                             {"setting": "rounds", "source": "paper", "detail": "Sec. 4"}],
         "paper_numbers": [{"check": "than B", "paper": "+0.03", "where": "Table 1"}]}


def test_every_committed_result_has_an_entry_and_no_entry_names_another_result() -> None:
    given = referee.entries(ROOT / "referee")
    assert sorted(set(NAMES) - set(given)) == []
    assert sorted(set(given) - set(NAMES)) == []


@pytest.mark.parametrize("name", NAMES)
def test_the_page_carries_its_checked_entry(name: str) -> None:
    md = (RESULTS / f"{name}.md").read_text(encoding="utf-8")
    v = json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))
    checked = referee.check_entry(name, referee.entries(ROOT / "referee")[name], md,
                                  v["checks"])
    assert v["referee"] == checked
    assert referee.section(checked) in md
    if v["checks"]:  # the headline's parts each stand beside the paper's number
        quoted = {p["check"] for p in checked["paper_numbers"]}
        assert {c["name"] for c in v["checks"] if c.get("headline")} <= quoted
    for h in checked["hyperparameters"]:  # the value shown is the page's own
        assert f"| {h['setting']} | " in md


def test_values_and_measured_numbers_are_read_from_the_page_and_checks() -> None:
    r = referee.check_entry("toy", ENTRY, MD, CHECKS)
    assert [h["value"] for h in r["hyperparameters"]] == ["0.1 / 0.05", "100"]
    (p,) = r["paper_numbers"]
    assert (p["check"], p["measured"], p["outcome"]) == ("A more accurate than B",
                                                         "0.02 ± 0.01", "pass")
    page = referee.section(r)
    assert "| lr | 0.1 / 0.05 | tuned | grid on seed 100 |" in page
    assert "| A more accurate than B | +0.03 | Table 1 | 0.02 ± 0.01 | pass |" in page
    assert "No entry" in referee.section(None)


def test_a_setting_of_several_words_is_read_as_a_row() -> None:
    """Before: only one-word rows (``\\w+``) were read, so an entry naming the page's row
    ``gradient noise`` was refused as not on the page."""
    md = MD.replace("| momentum | - |\n\n### b", "| momentum | - |\n| gradient noise | N(0, 9 I) |"
                    "\n\n### b")
    entry = {**ENTRY, "hyperparameters": [
        *ENTRY["hyperparameters"],
        {"setting": "gradient noise", "source": "chosen", "detail": "as the paper's noise"}]}
    r = referee.check_entry("toy", entry, md, CHECKS)
    assert r["hyperparameters"][-1]["value"] == "N(0, 9 I)"


@pytest.mark.parametrize(("change", "message"), [
    ({"hard": " "}, "'hard' must be a non-empty string"),
    ({"extra": "x"}, "unknown field(s) ['extra']"),
    ({"hyperparameters": [{"setting": "lr", "source": "tuned", "detail": "x"}]},
     "no source for the page's setting(s) ['rounds']"),
    ({"hyperparameters": [*ENTRY["hyperparameters"],
                          {"setting": "beta", "source": "paper", "detail": "x"}]},
     "setting 'beta' is not a row of the page's ## Setting"),
    ({"hyperparameters": [{"setting": "lr", "source": "guessed", "detail": "x"},
                          ENTRY["hyperparameters"][1]]}, "source must be one of"),
    ({"paper_numbers": [{"check": "more accurate", "paper": "1", "where": "-"}]},
     "must name exactly one check, found 2"),
    ({"paper_numbers": [{"check": "than D", "paper": "1", "where": "-"}]},
     "must name exactly one check, found 0"),
    ({"paper_numbers": [{"check": "than C", "paper": "1", "where": "-"}]},
     "no paper number for the headline check(s) ['A more accurate than B']"),
])
def test_an_entry_that_does_not_match_its_page_is_refused(change: dict, message: str) -> None:
    with pytest.raises(ValueError, match="toy") as e:
        referee.check_entry("toy", {**ENTRY, **change}, MD, CHECKS)
    assert message in str(e.value)


def test_a_result_given_in_two_files_or_bad_toml_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text('[x]\nscope = "s"\n', encoding="utf-8")
    (tmp_path / "b.toml").write_text('[x]\nscope = "t"\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"\[x\]: given twice \(again in b.toml\)"):
        referee.entries(tmp_path)
    bad = tmp_path / "c"
    bad.mkdir()
    (bad / "c.toml").write_text("[x\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not valid TOML"):
        referee.entries(bad)


@pytest.mark.parametrize("scale", ["quick", "full", "default"])
def test_a_page_of_another_scale_says_the_entry_is_the_committed_pages(
        tmp_path: Path, scale: str) -> None:
    """An entry describes the committed default-scale page: a ``--quick`` or ``--full`` page
    whose checks differ is written with a line saying so (the run is not lost to a
    ValueError); a default-scale page that does not match its entry is refused."""
    from topofl.figures import facts

    name = "dfedpgp_table4"
    js, md = tmp_path / f"{name}.json", tmp_path / f"{name}.md"
    v = json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))
    v["scale"] = scale
    v["checks"] = [c for c in v["checks"] if "Dir-0.3: DFedPGP above" not in c["name"]]
    js.write_text(json.dumps(v), encoding="utf-8")
    md.write_text((RESULTS / f"{name}.md").read_text(encoding="utf-8"), encoding="utf-8")
    if scale == "default":
        with pytest.raises(ValueError, match="must name exactly one check, found 0"):
            facts.apply(js, md)
        return
    facts.apply(js, md)
    page = md.read_text(encoding="utf-8")
    assert ("The entry in `paper_figures/referee/` describes the committed result (the "
            "default scale); it does not match this page's checks") in page
    assert "### Reproduction summary" not in page
    assert json.loads(js.read_text(encoding="utf-8"))["referee"] is None


def test_an_entry_names_a_check_with_wildcards_and_alternatives() -> None:
    # "*" stands for the method a run found best, "|" for a column run or not
    checks = [{"name": "C: X converges fastest", "measured": "-", "outcome": "inconclusive",
               "headline": True},
              {"name": "D: X above the best other (Y), mean accuracy", "measured": "0.1",
               "outcome": "pass", "headline": True},
              {"name": "D: X above the best other (Y), final accuracy", "measured": "0.2",
               "outcome": "pass", "headline": False}]
    for part, found in [("C: X converges fastest|C: X above the best other*mean", 0),
                        ("D: X converges fastest|D: X above the best other*mean", 1),
                        ("D: X above*final", 2)]:
        assert referee._named(part, checks) == [checks[found]]
    assert len(referee._named("D: X above", checks)) == 2  # an ambiguous part: both
