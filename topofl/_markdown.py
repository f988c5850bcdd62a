"""Markdown helpers shared by the study and the spectral report."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table; a ``|`` inside a cell is escaped so that it cannot split the cell.

    Examples
    --------
    >>> from topofl._markdown import table
    >>> print(table(["a", "b"], [["1", "x|y"]]))
    | a | b |
    |---|---|
    | 1 | x\\|y |
    """

    def cell(text: str) -> str:
        return str(text).replace("|", "\\|")

    lines = [
        "| " + " | ".join(cell(h) for h in header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
    ]
    lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def replace_block(path: str | os.PathLike[str], block: str, marker: str) -> None:
    """Write ``block`` between ``<!-- marker:begin -->`` and ``<!-- marker:end -->`` in the
    Markdown file ``path`` (the markers are appended at its end when absent), keeping the rest.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.md"
    >>> _ = p.write_text("# Title\\n", encoding="utf-8")
    >>> replace_block(p, "one", "results"); replace_block(p, "two", "results")
    >>> print(p.read_text(encoding="utf-8"))
    # Title
    <BLANKLINE>
    <!-- results:begin -->
    two
    <!-- results:end -->
    <BLANKLINE>
    """
    md = Path(path)
    begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    text = md.read_text(encoding="utf-8")
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        tail = rest.split(end, 1)[1]
    else:
        head, tail = text.rstrip("\n") + "\n\n", "\n"
    md.write_text(f"{head}{begin}\n{block}\n{end}{tail}", encoding="utf-8")
