"""The import rules of ``topofl``, read from its source (``tests/_imports.py``):

(a) no import inside a function that a module-level import of the same module already covers
    (the module is loaded at import time anyway: the import belongs at the top);
(b) no private name (a leading underscore) reached from another package: a package is a
    top-level subpackage (``topofl.engine``, ``topofl.figures`` ...), the modules directly in
    ``topofl/`` being the package ``topofl`` (whose private modules, ``topofl._utils.validation``
    ..., are the whole library's internals);
(c) the layering stated in ``topofl/_utils/layers.py`` (as DESIGN.md draws it): a module
    imports only from its own layer and those below it, and no import circle.

Each rule has its allow-list (empty where the count is at its floor), each entry with its
reason; an entry that no longer matches fails, so the list cannot go stale.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._imports import (
    PACKAGE,
    circles,
    import_graph,
    imports,
    package_of,
    private_crossings,
    repeated_imports,
)
from topofl._utils import layers as _layers

#: Rule (a): ``"module:line: statement"`` -> why it stays.
REPEATED_ALLOWED: dict[str, str] = {}

#: Rule (b): ``"module: what"`` (without the line) -> why it stays.
PRIVATE_ALLOWED: dict[str, str] = {
    "topofl.topologies.classic: Topology._from_edges":
        "a trusted fast path (inputs unchecked) between Topology and the constructors of "
        "topofl.topologies: public, it would be a constructor that validates nothing",
    "topofl.topologies.exponential.undirected: Topology._from_edges": "as for classic",
    "topofl.topologies.random: Topology._from_edges": "as for classic",
}

#: Rule (c): the layers, stated once in the package (topofl/_utils/layers.py; the manual's
#: architecture page is written from the same statement).
LAYERS = [(layer.name, frozenset(layer.members)) for layer in _layers.LAYERS]


def _layer(module: str) -> int:
    return _layers.layer_of(module)


def _unlined(entry: str) -> str:
    """``"m:12: what"`` -> ``"m: what"``."""
    module, _, rest = entry.partition(":")
    return f"{module}:{rest.partition(':')[2]}"


# ----------------------------------------------------------------------------- (a)


def test_no_in_function_import_repeats_a_module_level_one() -> None:
    found = repeated_imports()
    bad = [f for f in found if f not in REPEATED_ALLOWED]
    assert not bad, "move these imports to the top of their module (or drop them):\n" + \
        "\n".join(bad)
    stale = set(REPEATED_ALLOWED) - set(found)
    assert not stale, f"allowed but no longer found: {sorted(stale)}"


# ----------------------------------------------------------------------------- (b)


def test_no_private_name_crosses_a_package() -> None:
    found = {_unlined(f) for f in private_crossings()}
    bad = sorted(found - set(PRIVATE_ALLOWED))
    assert not bad, ("a private name used from another package: give it a public name (or a "
                     "public accessor) where it is defined:\n" + "\n".join(bad))
    stale = set(PRIVATE_ALLOWED) - found
    assert not stale, f"allowed but no longer found: {sorted(stale)}"


# ----------------------------------------------------------------------------- (c)


def test_every_module_is_in_a_layer_once() -> None:
    names = [n for _, layer in LAYERS for n in layer]
    assert len(names) == len(set(names))
    for module in import_graph():
        _layer(module)  # raises for a module of no layer


def test_no_import_runs_up_the_layers() -> None:
    up = sorted(f"{m} -> {t} ({LAYERS[_layer(m)][0]} imports {LAYERS[_layer(t)][0]})"
                for m, targets in import_graph().items() for t in targets
                if _layer(t) > _layer(m))
    assert not up, "imports running up the layers of DESIGN.md:\n" + "\n".join(up)


def test_no_import_circle_among_topofl_modules() -> None:
    graph = import_graph()
    assert len(graph) > 100 and "topofl.engine.loop" in graph["topofl.api"]
    assert circles(graph) == []


# ----------------------------------------------------------------------------- the checks see


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "topofl"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_rules_see_what_they_must(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "__init__.py": "",
        "_util.py": "_shared = 1\n",
        "a/__init__.py": "",
        "a/_inner.py": "X = 1\n",
        "a/mod.py": ("import os\nfrom topofl.b.mod import Thing\n_mine = 1\n"
                     "def f():\n    import os\n    from topofl.b.mod import other\n"
                     "    import json\n    from topofl.a._inner import X\n    return os, json\n"),
        "b/__init__.py": "",
        "b/mod.py": ("from topofl.a.mod import _mine\nfrom topofl.a._inner import X\n"
                     "from topofl._util import _shared\nfrom topofl.a import mod\n"
                     "class Thing:\n    def _hidden(self):\n        return self._own\n"
                     "def g(t):\n    return mod._mine, t._hidden(), t._replace(a=1)\n"
                     "def other():\n    return Thing()._hidden()\n"),
    })
    assert [e.partition(": ")[2] for e in repeated_imports(root)] == [
        "import os", "from topofl.b.mod import other"]
    # b reaches a's private name twice and a's private module; the private name of the
    # package topofl's module too; its own _hidden, and _replace, are fine (as is a's use of
    # its own private module)
    assert sorted(_unlined(e) for e in private_crossings(root)) == [
        "topofl.b.mod: mod._mine",
        "topofl.b.mod: module topofl.a._inner",
        "topofl.b.mod: topofl._util._shared",
        "topofl.b.mod: topofl.a.mod._mine",
    ]
    assert package_of("topofl.a.mod", root) == "topofl.a"
    assert package_of("topofl._util", root) == "topofl"
    graph = import_graph(root)
    assert graph["topofl.b.mod"] >= {"topofl.a.mod", "topofl.a._inner"}
    assert circles(graph) == [["topofl.a.mod", "topofl.b.mod"]]
    assert sum(1 for i in imports(root) if i.in_function) == 4


def test_the_layer_check_sees_an_upward_import() -> None:
    assert _layer("topofl.engine.loop") < _layer("topofl.algorithms.dsgd")
    assert _layer("topofl._utils.validation") == 0 and _layer("topofl.cli") == len(LAYERS) - 1
    with pytest.raises(ValueError, match="in no layer"):
        _layer("topofl.somewhere_new")
    assert PACKAGE.name == "topofl"
