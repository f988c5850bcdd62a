"""topofl._utils.markdown: the one Markdown builder (Document) and its table and block helpers."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topofl._utils.markdown import Document, replace_block, table

# text without a newline at either end (a block's content)
_BLOCK = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1,
                 max_size=30).map(lambda s: s.strip("\n") or "x")


@settings(max_examples=60, deadline=None)
@given(st.lists(_BLOCK, min_size=1, max_size=8))
def test_blocks_are_the_hand_joined_lines(blocks: list[str]) -> None:
    # the layout the study, the report and the figure writer built by hand: every block
    # followed by an empty line, joined by newlines, the file ending with one newline
    lines: list[str] = []
    for b in blocks:
        lines += [b, ""]
    doc = Document()
    for b in blocks:
        doc.paragraph(b)
    assert doc.text() == "\n".join(lines[:-1]) + "\n"
    assert str(doc) == doc.text()


def test_each_block_kind() -> None:
    doc = (Document().heading("T").heading("S", 3).paragraph("p\nq").caption("c")
           .bullets(["a", "b"]).bullets([]).image("f.png", "alt").image("g.png", caption="G")
           .code("x = 1\n", "python"))
    assert doc.text() == ("# T\n\n### S\n\np\nq\n\n*c*\n\n- a\n- b\n\n![alt](f.png)\n\n"
                          "![](g.png)\n\n*G*\n\n```python\nx = 1\n```\n")
    assert Document().text() == "" and Document().blank().text() == ""
    for bad in (0, 7, True, 1.0):
        with pytest.raises(ValueError, match="level must be an integer in"):
            Document().heading("x", bad)  # type: ignore[arg-type]


def test_blank_adds_one_blank_line_and_none_at_the_end() -> None:
    doc = Document().paragraph("a").blank().heading("B", 2).blank().blank()
    assert doc.text() == "a\n\n\n## B\n"


def test_extend_appends_a_section_built_apart() -> None:
    section = Document().paragraph("rho").table(["x"], [["1"]])
    doc = Document().heading("Study").extend(section).paragraph("end")
    assert doc.text() == "# Study\n\nrho\n\n| x |\n|---|\n| 1 |\n\nend\n"
    assert section.text() == "rho\n\n| x |\n|---|\n| 1 |\n"  # not consumed


def test_table_of_a_frame_equals_the_table_of_its_rows() -> None:
    df = pd.DataFrame({"graph": ["ring", "a|b"], "gap": [0.195312, 1.0], "n": [8, 16]},
                      index=[5, 9])

    def cell(v: object) -> str:
        return format(v, ".4f") if isinstance(v, float) else str(v)

    rows = [["ring", "0.1953", "8"], ["a|b", "1.0000", "16"]]
    assert Document().table(df, cell=cell).text() == table(["graph", "gap", "n"], rows) + "\n"
    assert Document().table(["graph", "gap", "n"], [["ring", 0.195312, 8], ["a|b", 1.0, 16]],
                            cell=cell).text() == table(["graph", "gap", "n"], rows) + "\n"
    assert "| a\\|b |" in table(["graph", "gap", "n"], rows)  # a pipe cannot split its cell
    with pytest.raises(TypeError, match="pandas DataFrame"):
        Document().table(["graph"])


def test_replace_block_keeps_the_rest(tmp_path: Path) -> None:
    p = tmp_path / "r.md"
    p.write_text("# R\n\nintro\n", encoding="utf-8")
    replace_block(p, Document().table(["a"], [["1"]]).text().rstrip("\n"), "numbers")
    first = p.read_text(encoding="utf-8")
    replace_block(p, "two", "numbers")
    assert first == ("# R\n\nintro\n\n<!-- numbers:begin -->\n| a |\n|---|\n| 1 |\n"
                     "<!-- numbers:end -->\n")
    assert p.read_text(encoding="utf-8") == (
        "# R\n\nintro\n\n<!-- numbers:begin -->\ntwo\n<!-- numbers:end -->\n")
