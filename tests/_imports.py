"""Read the import statements of the ``topofl`` package (its files, not its running modules):
which module imports which, where, and what names; the tests of the import rules use it
(``tests/test_import_rules.py``, ``tests/engine/test_imports.py``).

A *package* here is a top-level subpackage of ``topofl`` (``topofl.engine``, ``topofl.figures``
...); the modules directly in ``topofl/`` (``topofl.api``, ``topofl._utils.validation`` ...) form
the package ``topofl``.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "topofl"


def module_name(path: Path, root: Path = PACKAGE) -> str:
    """``topofl/engine/pieces/__init__.py`` -> ``topofl.engine.pieces``."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package under ``root``, by name."""
    return {module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def package_of(module: str, root: Path = PACKAGE) -> str:
    """``topofl.engine.pieces.local`` -> ``topofl.engine``; ``topofl.api`` -> ``topofl``."""
    parts = module.split(".")
    if len(parts) > 1 and (root / parts[1]).is_dir():
        return ".".join(parts[:2])
    return parts[0]


@dataclass(frozen=True)
class Import:
    """One ``import`` or ``from ... import`` statement.

    ``targets``: the modules it loads (``from m import x`` loads ``m.x`` when that is a module
    of the package, else ``m``); ``names``: ``(module, name)`` of each name a ``from`` import
    takes; ``in_function``: inside a function body; ``typing_only``: under
    ``if TYPE_CHECKING:`` (never executed).
    """

    module: str
    line: int
    text: str
    targets: tuple[str, ...]
    names: tuple[tuple[str, str], ...]
    in_function: bool
    typing_only: bool


@functools.lru_cache(maxsize=4096)
def _parsed(path: Path, mtime_ns: int) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def parse(path: Path) -> ast.Module:
    """The syntax tree of ``path`` (parsed once while the file is unchanged)."""
    return _parsed(path, path.stat().st_mtime_ns)


def _typing_only(tree: ast.AST) -> set[int]:
    return {id(n) for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for sub in node.body for n in ast.walk(sub)}


def _in_functions(tree: ast.AST) -> set[int]:
    return {id(n) for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            for n in ast.walk(node) if n is not node}


def imports(root: Path = PACKAGE) -> tuple[Import, ...]:
    """Every import statement of every module under ``root`` (read once while no file
    changes)."""
    stamp = tuple((str(p), p.stat().st_mtime_ns) for p in sorted(root.rglob("*.py")))
    return _imports(root, stamp)


@functools.lru_cache(maxsize=8)
def _imports(root: Path, stamp: tuple[tuple[str, int], ...]) -> tuple[Import, ...]:
    return tuple(_each_import(root))


def _each_import(root: Path) -> Iterator[Import]:
    files = modules(root)
    for mod, path in files.items():
        tree = parse(path)
        typing, inner = _typing_only(tree), _in_functions(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = tuple(a.name for a in node.names)
                names: tuple[tuple[str, str], ...] = ()
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = tuple(dict.fromkeys(
                    f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in files
                    else node.module for a in node.names))
                names = tuple((node.module, a.name) for a in node.names)
            else:
                continue
            yield Import(mod, node.lineno, ast.unparse(node), targets, names,
                         id(node) in inner, id(node) in typing)


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """``module -> the package's modules it imports``: every import statement, in functions
    too (a circle hidden in a function is still a circle), but not those under
    ``if TYPE_CHECKING:`` (annotations only)."""
    files = modules(root)

    def resolve(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in files}
    for imp in imports(root):
        if imp.typing_only:
            continue
        for name in imp.targets:
            target = resolve(name) if name.split(".")[0] == root.name else None
            if target is not None and target != imp.module:
                graph[imp.module].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


# ----------------------------------------------------------------------------- the rules


def repeated_imports(root: Path = PACKAGE) -> list[str]:
    """Rule (a): the imports inside a function that a module-level import of the same module
    already covers (every module it loads is loaded at import time already), as
    ``"module:line: statement"``."""
    found = imports(root)
    top: dict[str, set[str]] = {}
    for imp in found:
        if not imp.in_function and not imp.typing_only:
            top.setdefault(imp.module, set()).update(imp.targets)
    return [f"{imp.module}:{imp.line}: {imp.text}" for imp in found
            if imp.in_function and set(imp.targets) <= top.get(imp.module, set())]


#: Public despite the underscore: the NamedTuple API (``Algorithm._replace`` ...).
NAMEDTUPLE_API = frozenset({"_replace", "_asdict", "_fields", "_make", "_field_defaults"})


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in NAMEDTUPLE_API


def _private_module(module: str, root: Path) -> bool:
    """A module private to its package: a component below the package's own name starts with
    ``_`` (``topofl.spectral._common``); the private modules directly in ``topofl/``
    (``topofl._utils.validation``) are the whole library's internals."""
    below = module.split(".")[len(package_of(module, root).split(".")):]
    return package_of(module, root) != root.name and any(_private(p) for p in below)


def _defined(root: Path) -> dict[str, set[str]]:
    """``private name -> the packages that define it`` (a function, class, method, module or
    class attribute, or an attribute set on ``self``)."""
    out: dict[str, set[str]] = {}
    for mod, path in modules(root).items():
        pkg = package_of(mod, root)
        for node in ast.walk(parse(path)):
            names: list[str] = []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = [node.name]
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names = [node.id]
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names = [node.attr]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            for name in names:
                if _private(name):
                    out.setdefault(name, set()).add(pkg)
        if _private(mod.rpartition(".")[2]):
            out.setdefault(mod.rpartition(".")[2], set()).add(pkg)
    return out


def private_crossings(root: Path = PACKAGE) -> list[str]:
    """Rule (b): private names reached from another package, as ``"module:line: what"``:

    * ``from m import _x`` with ``m`` in another package;
    * an import of a module private to another package (``topofl.spectral._common``);
    * ``obj._x`` (not on ``self`` or ``cls``) where ``_x`` is defined in other packages only.
    """
    out: list[str] = []
    for imp in imports(root):
        pkg = package_of(imp.module, root)
        for source, name in imp.names:
            if (source.split(".")[0] == root.name and package_of(source, root) != pkg
                    and _private(name)):
                out.append(f"{imp.module}:{imp.line}: {source}.{name}")
        for target in imp.targets:
            if (target.split(".")[0] == root.name and package_of(target, root) != pkg
                    and _private_module(target, root)):
                out.append(f"{imp.module}:{imp.line}: module {target}")
    defined = _defined(root)
    for mod, path in modules(root).items():
        pkg = package_of(mod, root)
        for node in ast.walk(parse(path)):
            if (isinstance(node, ast.Attribute) and _private(node.attr)
                    and not (isinstance(node.value, ast.Name)
                             and node.value.id in ("self", "cls"))):
                where = defined.get(node.attr, set())
                if where and pkg not in where:
                    out.append(f"{mod}:{node.lineno}: {ast.unparse(node)}")
    return sorted(set(out))
