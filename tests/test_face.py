"""The package's face: ``dir(topofl)`` shows the public names only, every ``__all__`` names
what is there, and the README and the doctests reach the library by public names: a package's
``__all__`` or a module path (``topofl.engine.gossip.Mixer``), never a private name."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import topofl
from tests._imports import PACKAGE, modules, parse

ROOT = PACKAGE.parent


def _packages() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(topofl.__path__, "topofl.") if m.ispkg)


def test_dir_of_topofl_is_its_public_names() -> None:
    importlib.import_module("topofl._utils.validation")  # a private module loaded: still not shown
    importlib.import_module("topofl.engine")
    shown = dir(topofl)
    assert shown == sorted(topofl.__all__)
    assert not {"Any", "TYPE_CHECKING", "annotations", "importlib", "typing"} & set(shown)
    assert not [n for n in shown if n.startswith("_") and n != "__version__"]
    for name in shown:
        assert getattr(topofl, name) is not None, name


@pytest.mark.parametrize("name", ["topofl", *_packages()])
def test_every_name_of_all_is_there_and_public(name: str) -> None:
    module = importlib.import_module(name)
    names = list(module.__all__)
    assert len(names) == len(set(names)), f"{name}.__all__ repeats a name"
    for n in names:
        assert hasattr(module, n), f"{name}.__all__ names {n!r}, which {name} lacks"
        assert not n.startswith("_") or n == "__version__", f"{name}.__all__ has {n!r}"


def test_the_faces_are_small() -> None:
    """What a user calls (issue 47): ``topofl.api`` four names and the typed record of a run
    call they take (issue 55), the figure harness well below the 55 it had."""
    import topofl.api
    import topofl.figures

    assert topofl.api.__all__ == ["run", "prepare", "launch", "Prepared", "RunCall"]
    assert len(topofl.figures.__all__) <= 35


# ----------------------------------------------------------------------------- the docs

#: ``tf.a.b.c`` or ``topofl.a.b.c`` (``tf`` is ``topofl`` in the doctests and the README).
_PATH = re.compile(r"(?<![\w.])(?:tf|topofl)((?:\.[A-Za-z_]\w*)+)")
#: ``from topofl.a import b, c``.
_FROM = re.compile(r"from (topofl(?:\.\w+)*) import \(?([\w ,]+)\)?")


def _problem(dotted: str) -> str | None:
    """Why ``topofl.<dotted>`` is not a public name, else ``None``: through packages, a name
    of the package's ``__all__`` or a submodule; in a module, any name but a private one. The
    path is followed as Python follows it: ``tf.algorithms.ggc`` is the factory ``ggc``, which
    shadows its module (reach the module with ``from topofl.algorithms.ggc import ...``)."""
    obj: Any = topofl
    here = "topofl"
    for part in dotted.strip(".").split("."):
        if not isinstance(obj, ModuleType):  # an attribute of a class, function or object
            return None if hasattr(obj, part) else f"{here}.{part} does not exist"
        if part.startswith("_") and not part.startswith("__"):
            return f"{here}.{part} is private"
        sub = f"{here}.{part}"
        is_module = hasattr(obj, "__path__") and importlib.util.find_spec(sub) is not None
        if hasattr(obj, "__path__") and not is_module and part not in getattr(obj, "__all__", ()):
            return f"{sub} is not in {here}.__all__ (use its module path)"
        if hasattr(obj, part):
            obj = getattr(obj, part)
        elif is_module:
            obj = importlib.import_module(sub)
        else:
            return f"{sub} does not exist"
        here = sub
    return None


def _doc_lines() -> list[tuple[str, str]]:
    """``(where, text)``: the lines of the README and of the manual's own pages (not the
    copies it generates), and every doctest line of the package."""
    manual = ROOT / "analysis" / "manual"
    pages = [ROOT / "README.md", *sorted(
        p for p in manual.rglob("*.md")
        if not {"_generated", "gallery"} & set(p.relative_to(manual).parts))]
    out = [(f"{page.relative_to(ROOT).as_posix()}:{i}", line) for page in pages
           for i, line in enumerate(page.read_text().splitlines(), 1)]
    for mod, path in modules().items():
        for node in ast.walk(parse(path)):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                 ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node, clean=False)
                if doc and ">>>" in doc:
                    out += [(mod, line) for line in doc.splitlines()
                            if line.strip().startswith((">>>", "..."))]
    return out


def _doc_problems(lines: list[tuple[str, str]]) -> list[str]:
    """The references of ``lines`` that are not public; a module's doctests may reach into
    that module itself (its private names too: they document them)."""
    bad = []
    for where, line in lines:
        refs = [m.group(1) for m in _PATH.finditer(line)]
        refs += [f"{m.group(1)[len('topofl'):]}.{name.split(' as ')[0].strip()}"
                 for m in _FROM.finditer(line) for name in m.group(2).split(",") if name.strip()]
        for ref in refs:
            if f"topofl{ref}.".startswith(f"{where}."):
                continue  # the doctest's own module
            why = _problem(ref)
            if why:
                bad.append(f"{where}: {why}")
    return sorted(set(bad))


def test_readme_and_doctests_use_public_names() -> None:
    bad = _doc_problems(_doc_lines())
    assert not bad, "\n".join(bad)


def test_the_doc_check_sees_what_it_must() -> None:
    lines = [("x", ">>> tf.engine.Mixer(1)"), ("y", ">>> tf.engine.gossip.Mixer(1)"),
             ("z", "    >>> from topofl.figures import sweep, verdict"),
             ("w", "tf.mixing._parse and tf.topologies.ring(4).W.toarray()"),
             ("v", ">>> topofl.api.build(p)"),
             ("topofl.mixing", ">>> tf.mixing._parse(1)"),  # its own module: documented
             ("u", ">>> tf.algorithms.ggc.ggc_batched(x)")]  # ggc is the factory here
    assert _doc_problems(lines) == [
        "u: topofl.algorithms.ggc.ggc_batched does not exist",
        "w: topofl.mixing._parse is private",
        "x: topofl.engine.Mixer is not in topofl.engine.__all__ (use its module path)",
        "z: topofl.figures.sweep is not in topofl.figures.__all__ (use its module path)",
    ]
    assert len(_doc_lines()) > 500 and Path(ROOT / "README.md").exists()
