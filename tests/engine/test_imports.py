"""The engine owns its contract: no file under ``topofl/engine`` imports the algorithms or the
package's top level (which would load ``topofl.api`` and, through it, the registry), nor a
placement. The import rules of the whole package (layers, circles, private names) are in
``tests/test_import_rules.py``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests._imports import PACKAGE, import_graph

ENGINE = PACKAGE / "engine"


def _imports(path: Path) -> list[str]:
    """Every module an ``import`` or ``from ... import`` statement of ``path`` names (with the
    names it takes from a bare ``from topofl import ...``)."""
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "topofl":
                out += ["topofl"] + [f"topofl.{a.name}" for a in node.names]
            else:
                out.append(node.module)
    return out


def _forbidden(module: str) -> bool:
    return module == "topofl" or module.startswith("topofl.algorithms") or (
        module == "topofl.api")


@pytest.mark.parametrize("path", sorted(ENGINE.rglob("*.py")),
                         ids=lambda p: str(p.relative_to(ENGINE)))
def test_engine_never_imports_the_algorithms_nor_the_package(path: Path) -> None:
    bad = [m for m in _imports(path) if _forbidden(m)]
    assert not bad, f"{path.name} imports {bad}"


def test_the_check_sees_what_it_must(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("import topofl\nimport topofl.spectral\nfrom topofl import spectral\n"
                     "from topofl.algorithms.base import X\nfrom topofl.graph import Y\n")
    assert [m for m in _imports(probe) if _forbidden(m)] == [
        "topofl", "topofl", "topofl.algorithms.base"]
    files = sorted(ENGINE.rglob("*.py"))
    assert len(files) >= 10 and ENGINE / "pieces" / "local.py" in files  # subpackages too


def test_the_engine_never_imports_a_placement() -> None:
    """The engine owns the Clients contract; topofl.distributed implements it, and topofl.run
    (not the engine) chooses it."""
    graph = import_graph()
    bad = {m: sorted(t for t in ts if t.startswith("topofl.distributed"))
           for m, ts in graph.items() if m.startswith("topofl.engine")}
    assert not {m: ts for m, ts in bad.items() if ts}
    assert "topofl.distributed" in graph["topofl.api"]
