"""The shape of ``topofl``'s source, read with :mod:`ast`:

(a) no function (or method) of ``topofl/`` is longer than :data:`MAX_LINES` lines, counted from
    its ``def`` line to its last line, its docstring included and its decorators not: a longer
    one is split into coherent helpers (or its long notes move to the module docstring);
(b) no two functions of ``topofl/algorithms/`` have the same body of :data:`MIN_BODY` lines or
    more (docstring left out, variable names made one, attributes, calls' keywords and
    constants kept: a copy with its variables renamed is still a copy): shared logic lives in
    one place (the engine's pieces, ``_common``, ``_server`` ...).
"""

from __future__ import annotations

import ast
import copy
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "topofl"
#: the most lines a function may span, docstring included
MAX_LINES = 120
#: the fewest lines of a body that counts as a copy
MIN_BODY = 6

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _functions(folder: Path) -> Iterator[tuple[str, Function]]:
    """``("path:line name", node)`` for every function and method below ``folder``."""
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                where = path.relative_to(ROOT.parent).as_posix()
                yield f"{where}:{node.lineno} {node.name}", node


def _length(node: Function) -> int:
    assert node.end_lineno is not None
    return node.end_lineno - node.lineno + 1


def _body(node: Function) -> list[ast.stmt]:
    """The statements of ``node`` without its docstring."""
    body = node.body
    if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        body = body[1:]
    return body


class _OneName(ast.NodeTransformer):
    """Every variable named ``_``."""

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.copy_location(ast.Name(id="_", ctx=node.ctx), node)


def _normalized(body: list[ast.stmt]) -> str:
    module = _OneName().visit(ast.Module(body=copy.deepcopy(body), type_ignores=[]))
    return ast.dump(module, include_attributes=False)


def test_no_function_is_longer_than_the_limit() -> None:
    long = sorted((f"{name}: {_length(node)} lines" for name, node in _functions(ROOT)
                   if _length(node) > MAX_LINES))
    assert not long, f"functions longer than {MAX_LINES} lines (split them): {long}"


def test_the_length_rule_sees_functions_and_methods() -> None:
    names = {name.split()[-1] for name, _ in _functions(ROOT / "records")}
    assert {"load", "__init__"} <= names


def test_no_two_algorithm_functions_share_a_body() -> None:
    by_body: defaultdict[str, list[str]] = defaultdict(list)
    for name, node in _functions(ROOT / "algorithms"):
        body = _body(node)
        if not body:
            continue
        last = body[-1].end_lineno
        assert last is not None
        if last - body[0].lineno + 1 < MIN_BODY:
            continue
        by_body[_normalized(body)].append(name)
    copies = sorted(names for names in by_body.values() if len(names) > 1)
    assert not copies, f"functions with the same body (move it to one place): {copies}"
