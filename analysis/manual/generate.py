"""The manual's generated sources, written at every build into ``_generated/`` (ignored by git).

Nothing here is copied by hand, so nothing can go stale:

- ``api/``: one page per public module of ``topofl`` (no part of its path starting with
  ``_``), documenting the names of its ``__all__`` (a module without ``__all__``: the functions
  and classes it defines). A name that several modules export is documented once, in the
  shallowest one (``topofl.Topology``, not ``topofl.graph.Topology``); the others link to it.
- ``algorithms.md``: every algorithm of the registry ``topofl.algorithms.ALGORITHMS`` with its
  summary line and its papers, read from the References section of its factory's docstring,
  or else of its module's.
- ``architecture.md``: the layers of the package and what each owns, written from the one
  statement of them (``topofl._utils.layers.LAYERS``, which ``tests/test_import_rules.py``
  checks on the source).
- ``paper/`` and ``analysis/``: the committed paper results (``paper_figures/README.md``, the
  index, and ``paper_figures/results/*.md`` with their figures) and the ``analysis/*.md``
  reports with the figures they show, copied as they are so that MyST renders them.

Run by ``conf.py``; ``python analysis/manual/generate.py`` writes the same files alone.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OUT = HERE / "_generated"

#: Modules that are public by name but not an API: the command line's entry point and the
#: doctests' fixtures.
NOT_API = frozenset({"topofl.__main__", "topofl.conftest"})


# ------------------------------------------------------------------------------ helpers
def _write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` unless it holds it already (Sphinx then keeps its cache)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def _copy(src: Path, dst: Path) -> None:
    """Copy ``src`` to ``dst`` unless the bytes are there already."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    data = src.read_bytes()
    if not dst.exists() or dst.read_bytes() != data:
        dst.write_bytes(data)


def _heading(text: str, char: str = "=") -> str:
    return f"{text}\n{char * len(text)}\n"


# ------------------------------------------------------------------------ math and summaries
# The docstrings write math as $...$ (inline) and $$...$$ (display); reStructuredText reads a
# "|" inside them as a substitution. math_to_rst makes them the :math: role and the math
# directive (conf.py applies it to every docstring before numpydoc reads it).
_LITERAL = re.compile(r"``.+?``", re.S)
_DISPLAY = re.compile(r"^([ \t]*)\$\$(.+?)\$\$[ \t]*$", re.S | re.M)
_INLINE = re.compile(r"(?<![\\$\w])\$(?=\S)([^$]+?)(?<=\S)\$(?![\w$])")


def _display(m: re.Match[str]) -> str:
    indent, body = m.group(1), m.group(2).strip()
    lines = [line.strip() for line in body.splitlines()]
    return "\n".join(["", f"{indent}.. math::", "", *(f"{indent}   {line}" for line in lines),
                      ""])


def math_to_rst(text: str) -> str:
    """``text`` with its ``$$...$$`` and ``$...$`` outside literals made reST math."""
    out, last = [], 0
    for lit in _LITERAL.finditer(text):
        out.append(_convert(text[last:lit.start()]))
        out.append(lit.group(0))
        last = lit.end()
    out.append(_convert(text[last:]))
    return "".join(out)


def _convert(text: str) -> str:
    text = _DISPLAY.sub(_display, text)
    return _INLINE.sub(lambda m: ":math:`" + m.group(1) + "`", text)


_CITE = re.compile(r"^([ \t]*)\.\. \[([\w-]+)\][ \t]*", re.M)


def plain_references(text: str, *, module: bool = False) -> str:
    """``text`` with each citation ``.. [k] ...`` that no ``[k]_`` of ``text`` cites made a
    plain bullet ``- [k] ...`` (its continuation lines re-indented under it): a citation
    nothing cites is a warning to Sphinx. The cited ones stay citations; in a module's
    docstring (``module=True``) their labels get an ``m`` prefix, so that they differ from
    those of an attribute of the same dotted name (numpydoc labels by that name).
    """
    lines = text.split("\n")
    out: list[str] = []
    k = 0
    while k < len(lines):
        m = _CITE.match(lines[k])
        if m is None:
            out.append(lines[k])
            k += 1
            continue
        indent, label = m.group(1), m.group(2)
        if f"[{label}]_" in text:
            out.append(lines[k].replace(f"[{label}]", f"[m{label}]") if module else lines[k])
            k += 1
            continue
        if out and out[-1].strip():
            out.append("")  # a citation before it ends with a blank line
        out.append(f"{indent}- [{label}] {lines[k][m.end():]}")
        k += 1
        while k < len(lines) and lines[k].strip() and \
                len(lines[k]) - len(lines[k].lstrip()) > len(indent):
            out.append(f"{indent}  {lines[k].strip()}")
            k += 1
        out.append("")
    result = "\n".join(out)
    if module:
        for label in {m.group(2) for m in _CITE.finditer(text)}:
            result = result.replace(f"[{label}]_", f"[m{label}]_")
    return result


#: The sections numpydoc knows; it drops any other (with a UserWarning).
_NUMPYDOC_SECTIONS = frozenset({
    "Parameters", "Returns", "Yields", "Receives", "Raises", "Warns", "Other Parameters",
    "Attributes", "Methods", "See Also", "Notes", "Warnings", "References", "Examples"})


def own_sections_as_rubrics(text: str) -> str:
    """``text`` with every section heading numpydoc does not know (``Event time``,
    ``Members`` ...) made a rubric, so that its text stays in the page (as part of the section
    before it) instead of being dropped."""
    lines = text.split("\n")
    out: list[str] = []
    k = 0
    while k < len(lines):
        line = lines[k]
        under = lines[k + 1].strip() if k + 1 < len(lines) else ""
        title = line.strip()
        if (title and under and set(under) <= {"-"} and len(under) == len(title)
                and " ".join(w.capitalize() for w in title.split(" "))
                not in _NUMPYDOC_SECTIONS):
            indent = line[:len(line) - len(line.lstrip())]
            out += [f"{indent}.. rubric:: {title}", ""]
            k += 2
            continue
        out.append(line)
        k += 1
    return "\n".join(out)


_SENTENCE_END = re.compile(r"\.(?=\s)")


def summary_line(doc: str | None) -> str:
    """The first sentence of a docstring's first paragraph, cut only outside literals and
    roles (autosummary cuts inside ````...````), as one line of reST."""
    first = inspect.cleandoc(doc or "").split("\n\n", 1)[0]
    text = re.sub(r"\s*\[[\w-]+\]_", "", " ".join(line.strip() for line in first.splitlines()))
    spans = [m.span() for m in re.finditer(r"``.+?``|`[^`]+`|\$[^$]+\$", text)]
    for m in _SENTENCE_END.finditer(text):
        if not any(a <= m.start() < b for a, b in spans) and not re.search(
                r"(e\.g|i\.e|et al|etc|vs|cf|resp|Fig|Eq|Sec|Thm|Alg|No)$", text[:m.start()]):
            text = text[:m.end()]
            break
    return math_to_rst(text)


# ------------------------------------------------------------------------------ API pages
def public_modules() -> list[str]:
    """Every public module of ``topofl``, packages before what they hold, in name order."""
    import topofl

    names = ["topofl"]
    for info in pkgutil.walk_packages(topofl.__path__, "topofl."):
        if info.name in NOT_API or any(p.startswith("_") for p in info.name.split(".")):
            continue
        names.append(info.name)
    return sorted(names, key=lambda n: n.split("."))


@dataclass
class Page:
    """One module's page: the names documented on it and the names it links elsewhere."""

    module: str
    documented: list[tuple[str, str]] = field(default_factory=list)  # (name, directive)
    elsewhere: list[tuple[str, str]] = field(default_factory=list)  # (name, canonical path)
    submodules: list[str] = field(default_factory=list)
    shadowed: bool = False


def _kind(obj: Any) -> str:
    if isinstance(obj, type):
        return "exception" if issubclass(obj, BaseException) else "class"
    if callable(obj) and not isinstance(obj, types.ModuleType):
        return "function"
    return "data"


def _names(module: types.ModuleType) -> list[str]:
    """A module's public names: its ``__all__``, else the functions and classes it defines."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [n for n, o in vars(module).items()
            if not n.startswith("_") and (inspect.isfunction(o) or inspect.isclass(o))
            and getattr(o, "__module__", None) == module.__name__]


def api_pages() -> list[Page]:
    """The pages, each object documented at its first (shallowest) public home."""
    home: dict[tuple[str, int], str] = {}  # (kind, id) -> canonical dotted path
    pages = []
    modules = public_modules()
    for name in sorted(modules, key=lambda n: (n.count("."), n)):
        module = importlib.import_module(name)
        parent, _, leaf = name.rpartition(".")
        page = Page(name, shadowed=bool(parent) and not isinstance(
            getattr(importlib.import_module(parent), leaf, module), types.ModuleType))
        for attr in _names(module):
            obj = getattr(module, attr)
            if isinstance(obj, types.ModuleType):
                continue  # a submodule named in __all__: its own page
            kind = _kind(obj)
            # data are told apart by name too (two constants may be the same small int)
            key = (kind if kind != "data" else f"data:{attr}", id(obj))
            if key in home:
                page.elsewhere.append((attr, home[key]))
            else:
                home[key] = f"{name}.{attr}"
                page.documented.append((attr, kind))
        page.submodules = [m for m in modules
                           if m.startswith(name + ".") and m.count(".") == name.count(".") + 1]
        pages.append(page)
    return sorted(pages, key=lambda p: p.module.split("."))


def _documented_doc(module: str, name: str) -> bool:
    """Whether ``module.name`` has a docstring of its own (data show their type's)."""
    obj = getattr(importlib.import_module(module), name)
    return _kind(obj) != "data" and bool(getattr(obj, "__doc__", None))


_DIRECTIVE = {"class": "autoclass", "exception": "autoexception", "function": "autofunction",
              "data": "autodata"}


def _page_text(page: Page) -> str:
    m = page.module
    # a module that its package's attribute of the same name hides (the factory
    # topofl.algorithms.sgp, the module topofl.algorithms.sgp): documented, not indexed
    hidden = ["   :no-index:"] if page.shadowed else []
    out = [f".. _api-{m}:\n", _heading(m), f".. automodule:: {m}", "   :no-members:", *hidden,
           ""]
    if page.documented:
        out.append(".. rubric:: Summary\n")
        out.append(".. list-table::\n   :widths: 30 70\n")
        for n, _ in page.documented:
            doc = getattr(importlib.import_module(m), n).__doc__ if _documented_doc(m, n) else ""
            out.append(f"   * - :py:obj:`{n} <{m}.{n}>`")
            out.append(f"     - {summary_line(doc) or ' '}")
        out.append("")
    if page.elsewhere:
        out.append(".. rubric:: Also exported here\n")
        out += [f"- ``{n}``: :py:obj:`{target}`" for n, target in page.elsewhere]
        out.append("")
    if page.submodules:
        out.append(".. rubric:: Submodules\n")
        out.append(".. toctree::\n   :maxdepth: 1\n")
        out += [f"   {s}" for s in page.submodules]
        out.append("")
    if page.documented:
        out.append(".. rubric:: Reference\n")
        for n, kind in page.documented:
            options = ["   :members:", "   :show-inheritance:"] if kind == "class" else []
            if kind == "data":
                options = ["   :no-value:"]
            out.append(f".. {_DIRECTIVE[kind]}:: {m}.{n}")
            out += options
            out.append("")
    return "\n".join(out)


def write_api(out: Path) -> list[str]:
    """Write ``out/api/<module>.rst`` for every public module; return the module names."""
    pages = api_pages()
    keep = set()
    for page in pages:
        path = out / "api" / f"{page.module}.rst"
        _write(path, _page_text(page))
        keep.add(path.name)
    for stale in (out / "api").glob("*.rst"):
        if stale.name not in keep:
            stale.unlink()
    return [p.module for p in pages]


# ---------------------------------------------------------------------- algorithm catalogue
_CITATION = re.compile(r"^\.\. \[(\w+)\]\s*", re.M)


def _section(doc: str | None, title: str) -> str:
    """The body of a numpydoc section of ``doc`` (``""`` when absent)."""
    from numpydoc.docscrape import NumpyDocString

    if not doc:
        return ""
    return "\n".join(NumpyDocString(inspect.cleandoc(doc))[title]).strip()


def _summary(doc: str | None) -> str:
    from numpydoc.docscrape import NumpyDocString

    return " ".join(NumpyDocString(inspect.cleandoc(doc or ""))["Summary"]).strip()


def _references(text: str) -> list[str]:
    """``.. [1] A. B, "Title", venue`` entries as one line each, without the labels."""
    entries: list[str] = []
    for line in text.splitlines():
        if _CITATION.match(line):
            entries.append(_CITATION.sub("", line).strip())
        elif line.strip() and entries:
            entries[-1] += " " + line.strip()
        elif line.strip():
            entries.append(line.strip())
    return entries


@dataclass(frozen=True)
class Entry:
    """One registered algorithm as the catalogue shows it."""

    name: str
    factory: str  # the dotted path of its factory
    summary: str
    references: tuple[str, ...]
    source: str  # where the references were read: "factory" or "module" (or "" for none)


def catalogue() -> list[Entry]:
    """Every registered algorithm, in the registry's order."""
    import topofl as tf

    entries = []
    for name, factory in tf.algorithms.ALGORITHMS.items():
        module = sys.modules[factory.__module__]
        refs, source = _references(_section(factory.__doc__, "References")), "factory"
        if not refs:
            refs, source = _references(_section(module.__doc__, "References")), "module"
        entries.append(Entry(name, f"{factory.__module__}.{factory.__qualname__}",
                             _summary(factory.__doc__), tuple(refs), source if refs else ""))
    return entries


def _md_text(text: str) -> str:
    """A docstring's line as MyST Markdown: its ``$...$`` math as the math role, its
    reST ``literals`` as Markdown code, "|" escaped for a table cell."""
    text = re.sub(r"``(.+?)``", r"`\1`", text)
    text = _INLINE.sub(lambda m: "{math}`" + m.group(1) + "`", text)
    return text.replace("|", "\\|")


def catalogue_markdown(entries: list[Entry]) -> str:
    """The catalogue page: a table, then one section per algorithm with its papers."""
    lines = ["# Algorithm catalogue", "",
             f"The {len(entries)} algorithms of the registry `topofl.algorithms.ALGORITHMS`, "
             "as `topofl.run(name, ...)` and a config's `algorithm = \"name\"` know them. "
             "This page is generated from the registry and the docstrings at every build of "
             "the manual: the summary is the first line of the factory's docstring, the "
             "papers its *References* section (or, where the factory has none, its "
             "module's). `topofl list algorithms` prints the same names with their "
             "hyper-parameters.", "",
             "| name | what | papers |", "|---|---|---|"]
    for e in entries:
        lines.append(f"| [`{e.name}`](#algo-{e.name}) | {_md_text(e.summary)} | "
                     f"{len(e.references) or 'none'} |")
    lines.append("")
    for e in entries:
        lines += [f"({'algo-' + e.name})=", f"## `{e.name}`", "", _md_text(e.summary), "",
                  f"Factory: {{py:obj}}`{e.factory}`.", ""]
        if e.references:
            where = "its docstring" if e.source == "factory" else "its module's docstring"
            lines.append(f"Papers ({where}):")
            lines.append("")
            lines += [f"{k}. {_md_text(r)}" for k, r in enumerate(e.references, 1)]
        else:
            lines.append("Papers: none (a baseline of the library, no paper of its own).")
        lines.append("")
    return "\n".join(lines)


# ------------------------------------------------------------------ committed Markdown files
def _markdown_with_images(md: Path) -> Iterator[Path]:
    """The files a Markdown file shows as images, by their relative links."""
    for target in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", md.read_text(encoding="utf-8")):
        path = (md.parent / target).resolve()
        if path.is_file():
            yield path


def copy_committed(out: Path) -> dict[str, list[str]]:
    """Copy the paper results and the analysis reports (with the images they show) under
    ``out``, keeping their relative layout; return the documents by group."""
    groups: dict[str, list[str]] = {"paper": [], "analysis": []}
    sources = [("paper", ROOT / "paper_figures", [ROOT / "paper_figures" / "README.md",
                                                  *sorted((ROOT / "paper_figures" / "results")
                                                          .glob("*.md"))]),
               ("analysis", ROOT / "analysis",
                sorted(p for p in (ROOT / "analysis").rglob("*.md")
                       if p.relative_to(ROOT / "analysis").parts[0] not in ("manual", "out")))]
    for group, base, files in sources:
        wanted = set()
        for md in files:
            dst = out / group / md.relative_to(base)
            _copy(md, dst)
            wanted.add(dst)
            for image in _markdown_with_images(md):
                try:
                    rel = image.relative_to(base)
                except ValueError:
                    continue  # outside the group's folder: not shown
                _copy(image, out / group / rel)
                wanted.add(out / group / rel)
            groups[group].append(md.relative_to(base).with_suffix("").as_posix())
        for old in (out / group).rglob("*"):
            if old.is_file() and old not in wanted:
                old.unlink()
    return groups


def _paper_index() -> str:
    """The results section: the index the figures' harness writes, and every result."""
    return "\n".join([
        "```{include} README.md", "```", "",
        "```{toctree}", ":hidden:", ":glob:", "", "results/*", "```", ""])


def _reports_index(docs: list[str]) -> str:
    """The reports section: every ``analysis/`` report, the cheat sheet first."""
    first = [d for d in docs if d == "cheatsheet"]
    rest = [d for d in docs if d != "cheatsheet"]
    lines = ["# Reports and benchmarks", "",
             "The Markdown reports committed under `analysis/`, each written by the script of "
             "the same name beside it (`python analysis/<name>.py`), rendered as they are. "
             "The numbers in them were measured on the machine each report names.", "",
             "```{toctree}", ":maxdepth: 1", "", *first, *rest, "```", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------- architecture
def architecture_markdown() -> str:
    """The manual's architecture page: the layers of ``topofl`` from the top (the command
    line) down to the foundations, each with its members, what they own and what they may
    import (:data:`topofl._utils.layers.LAYERS`)."""
    from topofl._utils.layers import LAYERS

    public = set(public_modules())

    def member(name: str) -> str:
        full = "topofl" if name == "topofl" else f"topofl.{name}"
        return f"{{py:mod}}`{full}`" if full in public else f"`{full}`"

    lines = [
        "# Architecture", "",
        "Graphs are the core objects; everything else consumes them. The package is stated as "
        "layers, from the command line at the top to the foundations at the bottom: a module "
        "imports only from its own layer and the layers below it, and no import runs in a "
        "circle. The statement is `topofl._utils.layers.LAYERS`; `tests/test_import_rules.py` "
        "checks every import of the source against it, and this page is written from it at "
        "every build of the manual.", "",
        "```", "topologies ──► Topology / TimeVarying ──► spectral (gap, B, q, C, δ, skew …)",
        "                      │                            │",
        "data (datasets, partitions) ──► engine (batched clients, algorithms, gossip) "
        "──► records ──► analysis/, paper_figures/", "```", "",
        "| layer | members | what they own | may import |", "|---|---|---|---|",
    ]
    for i in range(len(LAYERS) - 1, -1, -1):
        layer = LAYERS[i]
        below = ("its own only" if i == 0 else "its own and layer 1" if i == 1 else
                 f"its own and layers 1-{i}")
        lines.append(f"| {i + 1}. {layer.name} | "
                     f"{', '.join(member(m) for m in layer.members)} | {layer.owns} | "
                     f"{below} |")
    lines += ["", "Names starting with `_` (the `topofl._utils` package, private modules and "
              "functions) are internals: the rule that a private name is not reached from "
              "another package is checked beside the layers.", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- entry
def generate(out: Path = OUT) -> None:
    """Write every generated source of the manual under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    modules = write_api(out)
    _write(out / "api_modules.txt", "\n".join(modules) + "\n")
    _write(out / "algorithms.md", catalogue_markdown(catalogue()))
    _write(out / "architecture.md", architecture_markdown())
    groups = copy_committed(out)
    _write(out / "paper" / "index.md", _paper_index())
    _write(out / "analysis" / "index.md", _reports_index(groups["analysis"]))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    generate()
    print(OUT)


# ------------------------------------------------------------------------ the gallery
def tight_figures(block: Any, block_vars: Any, gallery_conf: Any, **kwargs: Any) -> str:
    """sphinx-gallery's matplotlib scraper, saving each figure with ``bbox_inches="tight"``:
    a legend drawn below the axes (as :func:`topofl.plotting.metric_scatter` draws it) is
    kept in the picture. ``conf.py`` names it by its dotted path, which Sphinx can cache."""
    from sphinx_gallery.scrapers import matplotlib_scraper

    return str(matplotlib_scraper(block, block_vars, gallery_conf, bbox_inches="tight",
                                  **kwargs))


#: The gallery's reading order: from which graph to pick, through training and studies on it,
#: to scale and code of your own (an example not named here comes last, by file name).
GALLERY_ORDER = ("plot_which_graph", "plot_spectrum", "plot_time_varying", "plot_dcliques",
                 "plot_dsgd_two_graphs", "plot_topology_study", "plot_stacked_sweep",
                 "plot_bytes_clock", "plot_async_gossip", "plot_byzantine",
                 "plot_teleportation", "plot_million_plan", "plot_own_algorithm",
                 "plot_own_graph")


class GalleryOrder:
    """sphinx-gallery's ``within_subsection_order``: the examples in :data:`GALLERY_ORDER`.
    ``conf.py`` names it by its dotted path (sphinx-gallery builds it with the gallery's
    folder), which Sphinx can cache."""

    def __init__(self, src_dir: Any) -> None:
        self.src_dir = src_dir

    def __call__(self, filename: str) -> tuple[int, str]:
        stem = Path(filename).stem
        rank = GALLERY_ORDER.index(stem) if stem in GALLERY_ORDER else len(GALLERY_ORDER)
        return rank, stem

    def __repr__(self) -> str:
        return "GalleryOrder"
