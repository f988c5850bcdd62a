"""The one Markdown builder of topofl: the study, the spectral report and the figure writer.

A :class:`Document` is built block by block (a heading, a paragraph, a list, a table, an
image, a code block) and :meth:`Document.text` joins the blocks with one blank line between
two of them and ends the text with one newline. Each method returns the document, so calls
chain. Two functions serve code that needs a single piece: :func:`table` (a table as text)
and :func:`replace_block` (rewrite a marked block of a committed Markdown file).

Examples
--------
>>> from topofl._utils.markdown import Document
>>> doc = (Document().heading("Toy").paragraph("Two rows.")
...        .table(["a", "b"], [["1", "x|y"], ["2", "z"]]).bullets(["one", "two"])
...        .image("toy.png", "toy", caption="The toy."))
>>> print(doc.text(), end="")
# Toy
<BLANKLINE>
Two rows.
<BLANKLINE>
| a | b |
|---|---|
| 1 | x\\|y |
| 2 | z |
<BLANKLINE>
- one
- two
<BLANKLINE>
![toy](toy.png)
<BLANKLINE>
*The toy.*
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["Document", "table", "replace_block"]


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table; a ``|`` inside a cell is escaped so that it cannot split the cell.

    Examples
    --------
    >>> from topofl._utils.markdown import table
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


class Document:
    """A Markdown document built block by block; :meth:`text` is the file's content.

    Blocks are separated by one blank line; the text ends with exactly one newline (an empty
    document is ``""``). Every method appends one block (:meth:`bullets` of no item and
    :meth:`extend` of an empty document append none) and returns the document.

    ========================================  =============================================
    method                                    block
    ========================================  =============================================
    ``heading(text, level=1)``                ``# text`` (``level`` hashes, 1 to 6)
    ``paragraph(text)``                       ``text`` as given (it may hold line breaks,
                                              or be pre-built Markdown)
    ``caption(text)``                         ``*text*``: the italic line under a figure
    ``bullets(items)``                        ``- item`` per item (none: no block)
    ``table(header, rows, cell=str)``         a table of ``rows`` (cells through ``cell``)
    ``table(frame, cell=str)``                a table of a pandas DataFrame: its columns,
                                              then one row per row (index left out)
    ``image(path, alt="", caption=None)``     ``![alt](path)``, then ``caption(caption)``
    ``code(text, language="")``               a fenced code block
    ``blank()``                               one more blank line after the last block
    ``extend(other)``                         the blocks of another document
    ========================================  =============================================

    Notes
    -----
    :meth:`blank` exists for layouts that have two blank lines somewhere (the study's
    ``study.md`` before its definitions); Markdown renders them as one.

    Examples
    --------
    >>> from topofl._utils.markdown import Document
    >>> import pandas as pd
    >>> df = pd.DataFrame({"graph": ["ring", "complete"], "gap": [0.19531, 1.0]})
    >>> doc = Document().heading("Numbers", 2).table(df, cell=lambda v: (
    ...     format(v, ".2f") if isinstance(v, float) else str(v)))
    >>> print(doc.code("topofl report ring:n=8", "sh").text(), end="")
    ## Numbers
    <BLANKLINE>
    | graph | gap |
    |---|---|
    | ring | 0.20 |
    | complete | 1.00 |
    <BLANKLINE>
    ```sh
    topofl report ring:n=8
    ```
    >>> Document().paragraph("a").blank().paragraph("b").text()
    'a\\n\\n\\nb\\n'
    """

    def __init__(self) -> None:
        self._blocks: list[str] = []

    def _add(self, block: str) -> Document:
        self._blocks.append(block)
        return self

    def heading(self, text: str, level: int = 1) -> Document:
        """``# text``, with ``level`` hashes (1 to 6)."""
        if not isinstance(level, int) or isinstance(level, bool) or not 1 <= level <= 6:
            raise ValueError(f"level must be an integer in [1, 6], got {level!r}")
        return self._add("#" * level + " " + text)

    def paragraph(self, text: str) -> Document:
        """A paragraph (or any pre-built Markdown block), as given."""
        return self._add(str(text))

    def caption(self, text: str) -> Document:
        """``*text*``: the italic line that explains a figure or a table."""
        return self._add(f"*{text}*")

    def bullets(self, items: Iterable[str]) -> Document:
        """A list, one ``- item`` line per item; nothing for no item."""
        lines = [f"- {item}" for item in items]
        return self._add("\n".join(lines)) if lines else self

    def table(self, header: Any, rows: Sequence[Sequence[Any]] | None = None, *,
              cell: Callable[[Any], str] = str) -> Document:
        """A table (:func:`table`): ``header`` and ``rows``, or a DataFrame alone.

        Parameters
        ----------
        header : sequence of str, or pandas.DataFrame
            The column names; a DataFrame (``rows`` omitted) gives its columns as the header
            and its rows (without the index) as the rows.
        rows : sequence of sequence, optional
            One sequence of cells per row.
        cell : callable, default str
            Turns each cell (not the header) into its text, e.g. a number format.
        """
        if rows is None:
            if not (hasattr(header, "columns") and hasattr(header, "itertuples")):
                raise TypeError("table needs rows, or a pandas DataFrame as its only argument; "
                                f"got {type(header).__name__} without rows")
            names = [str(c) for c in header.columns]
            body = [[cell(v) for v in rec] for rec in header.itertuples(index=False)]
        else:
            names = [str(h) for h in header]
            body = [[cell(v) for v in r] for r in rows]
        return self._add(table(names, body))

    def image(self, path: str, alt: str = "", caption: str | None = None) -> Document:
        """``![alt](path)``, then its :meth:`caption` when one is given."""
        self._add(f"![{alt}]({path})")
        return self if caption is None else self.caption(caption)

    def code(self, text: str, language: str = "") -> Document:
        """A fenced code block (``language`` after the opening fence)."""
        return self._add(f"```{language}\n{text.rstrip(chr(10))}\n```")

    def blank(self) -> Document:
        """One more blank line after the last block (no effect on an empty document)."""
        if self._blocks:
            self._blocks[-1] += "\n"
        return self

    def extend(self, other: Document) -> Document:
        """Append the blocks of ``other`` (a section built apart)."""
        self._blocks.extend(other._blocks)
        return self

    def text(self) -> str:
        """The Markdown: the blocks, one blank line apart, ending with one newline."""
        if not self._blocks:
            return ""
        return "\n\n".join(self._blocks).rstrip("\n") + "\n"

    def __str__(self) -> str:
        return self.text()


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
