"""A malformed committed result (or figure script) is reported in one line naming the file, by
the functions (they take a folder) and by ``topofl figure index [--check]`` / ``list``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from topofl.figures import cli as figure_cli
from topofl.figures import results as figure_results
from topofl.figures import results as results_mod
from topofl.figures.config import FigureError, _root

GOOD = {"name": "good", "verdict": "holds", "seeds": [0], "seconds": 3.0}

BAD: list[tuple[bytes, str]] = [
    (b'{"name": "x", "holds": }', r" is not valid JSON \(Expecting value: line 1 column 24"),
    (b"", r" is not valid JSON \(Expecting value: line 1 column 1"),
    (b"\xff\xfe{}", r" is not UTF-8 text"),
    (b"[1, 2]", r" must hold a JSON object, found list"),
    (b"null", r" must hold a JSON object, found NoneType"),
    (b'{"verdict": "holds"}', r" must have a 'name' \(the figure's, a str\), found None"),
    (b'{"name": 3}', r" must have a 'name' .*found 3"),
    (b'{"name": ""}', r" must have a 'name' .*found ''"),
    (b'{"name": "x", "code": ["a"]}', r": 'code' must be a code fingerprint \(a str\), found "
                                      r"list"),
    (b'{"name": "x", "seconds": "3 s"}', r": 'seconds' must be a number, found str '3 s'"),
    (b'{"name": "x", "seconds": true}', r": 'seconds' must be a number, found bool True"),
    (b"[" * 100_000, r" is not a result JSON \(nested too deeply\)"),
]


def _folder(tmp_path: Path, raw: bytes) -> Path:
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "good.json").write_text(json.dumps(GOOD))
    (folder / "broken.json").write_bytes(raw)
    return folder


@pytest.mark.parametrize("raw, message", BAD)
def test_a_malformed_result_is_named_by_stale_and_index(raw: bytes, message: str,
                                                        tmp_path: Path) -> None:
    folder = _folder(tmp_path, raw)
    for fn in (figure_results.stale, figure_results.index):
        with pytest.raises(FigureError, match=rf"^result \S*results/broken\.json{message}"
                           ) as exc:
            fn(folder)
        assert "\n" not in str(exc.value)
    (folder / "broken.json").unlink()  # the rest of the folder reads
    assert figure_results.stale(folder) == {
        "good": "no code fingerprint (computed before results recorded one)"}
    assert figure_results.index(folder).startswith("1 result: 1 holds, 0 partly")


def _figure(argv: list[str], capsys: pytest.CaptureFixture[str]
            ) -> tuple[int, list[str], str]:
    code = figure_cli.main(argv)
    out, err = capsys.readouterr()
    return code, [ln for ln in err.splitlines() if ln.strip()], out


def test_the_figure_commands_name_the_malformed_file(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path
    folder = _folder(root, b'{"name": "x", "holds": }')
    (root / "fig_demo.py").write_text('"""Demo: a figure."""\n')
    for mod in ("topofl.figures.cli", "topofl.figures.results"):
        monkeypatch.setattr(f"{mod}._root", lambda: root)
    for argv in (["index"], ["index", "--check"]):
        code, lines, _ = _figure(argv, capsys)
        assert code == 2 and len(lines) == 1, lines
        assert lines[0].startswith("topofl figure: error: result ") and \
            f"{folder / 'broken.json'} is not valid JSON (Expecting value: line 1 column 24" \
            in lines[0], lines
    assert not (root / "README.md").exists()  # nothing written from a broken folder
    code, _, out = _figure(["list"], capsys)  # list reads the scripts only
    assert code == 0 and out.split() == ["demo", "Demo:", "a", "figure."]
    (root / "fig_broken.py").write_text('"""Broken.\n')
    code, lines, _ = _figure(["list"], capsys)
    assert code == 2 and len(lines) == 1, lines
    assert f"{root / 'fig_broken.py'}: not a readable figure script (SyntaxError" in lines[0]


def test_the_committed_results_read() -> None:
    found = results_mod._results(_root() / "results")
    names = [p.stem for p in sorted((_root() / "results").glob("*.json"))
             if p.name != "equivalence.json"]
    assert [v["name"] for v in found] == names  # each committed file is its figure's result
