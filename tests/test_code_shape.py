"""The shape of ``topofl``'s source, read with :mod:`ast`:

(a) no function (or method) of ``topofl/`` is longer than :data:`MAX_LINES` lines, counted from
    its ``def`` line to its last line, its docstring included and its decorators not: a longer
    one is split into coherent helpers (or its long notes move to the module docstring);
(b) no two functions of ``topofl/algorithms/`` have the same body of :data:`MIN_BODY` lines or
    more (docstring left out, variable names made one, attributes, calls' keywords and
    constants kept: a copy with its variables renamed is still a copy): shared logic lives in
    one place (the engine's pieces, ``_common``, ``_server`` ...);
(c) every import of ``topofl`` inside a function of ``topofl/`` says on its line, in a comment,
    why it is not at the top of its module (an import cycle, a command line that imports what
    a command runs, a heavy module loaded for one case ...); an import nothing keeps in the
    function moves to the top (issue 82).
"""

from __future__ import annotations

import ast
import copy
import io
import tokenize
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


#: the most lines a module may have (issue 55; 720 since issue 82)
MAX_MODULE_LINES = 720
#: the most lines of code a function may span, its docstring left out (issue 55)
MAX_CODE_LINES = 100
#: the most parameters a function may take (issue 55; the front door takes its settings as
#: one :class:`~topofl.engine.config.RunConfig` and keywords, ``**settings``)
MAX_PARAMETERS = {
    "*": 10,
    # the front door's signature is written in source (issue 82): RunCall's ten fields, then
    # overwrite; the settings and hyper-parameters come as keywords
    "topofl/api.py::run": 11,
    # compress: the compressor and its two settings, QSGD's rescale, the draws' stream address
    # (t, ids, seed, stream) and what replays another code (draws, parts): issue 84
    "topofl/engine/pieces/compression.py::compress": 12,
    # transit: a window's clocks and counts, then the timing's four settings (issue 84 added
    # gossipy's node order beside delay, order and slots)
    "topofl/engine/transit.py::transit": 11,
}
#: the most modules at the top of ``topofl/`` besides its packages (issue 55)
MAX_TOP_MODULES = 12


def _code_lines(node: Function) -> int:
    """``node``'s lines from ``def`` to its end, its docstring left out."""
    doc = 0
    first = node.body[0]
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        assert first.end_lineno is not None
        doc = first.end_lineno - first.lineno + 1
    return _length(node) - doc


def test_no_module_is_longer_than_the_limit() -> None:
    long = sorted(f"{p.relative_to(ROOT.parent).as_posix()}: {n} lines"
                  for p in ROOT.rglob("*.py")
                  if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES)
    assert not long, f"modules longer than {MAX_MODULE_LINES} lines (split them): {long}"


def test_no_function_has_more_code_or_parameters_than_the_limits() -> None:
    code = sorted(f"{name}: {_code_lines(node)}" for name, node in _functions(ROOT)
                  if _code_lines(node) > MAX_CODE_LINES)
    assert not code, f"functions with over {MAX_CODE_LINES} lines of code: {code}"

    def count(node: Function) -> int:
        a = node.args
        return len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)

    many = sorted(f"{name}: {count(node)}" for name, node in _functions(ROOT)
                  if count(node) > MAX_PARAMETERS.get(name.split(":")[0] + "::" + node.name,
                                                      MAX_PARAMETERS["*"]))
    assert not many, f"functions with over {MAX_PARAMETERS['*']} parameters: {many}"


def test_the_top_of_the_package_holds_few_modules() -> None:
    top = sorted(p.name for p in ROOT.glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, f"{len(top)} modules at the top of topofl/: {top}"


def test_the_shape_limits_see_what_they_must() -> None:
    tree = ast.parse("def f(a, b, c, d, e, f, g, h, i, j, *, k):\n    '''doc\n    '''\n"
                     "    return 1\n")
    node = tree.body[0]
    assert isinstance(node, ast.FunctionDef)
    assert _code_lines(node) == 2 and _length(node) == 4
    assert len(node.args.args) + len(node.args.kwonlyargs) == 11


Import = ast.Import | ast.ImportFrom


def _topofl_imports_in_functions(text: str) -> list[tuple[Import, bool]]:
    """Every ``import topofl...`` and ``from topofl... import`` inside a function (or method)
    of the source ``text``, in line order, with whether a comment is on its first or its last
    line (``lineno`` or ``end_lineno``)."""
    tree = ast.parse(text)
    said = {tok.start[0] for tok in tokenize.generate_tokens(io.StringIO(text).readline)
            if tok.type == tokenize.COMMENT}
    inner: dict[int, Import] = {}
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                if any(n == "topofl" or n.startswith("topofl.") for n in names):
                    inner[id(node)] = node
    return [(node, node.lineno in said or node.end_lineno in said)
            for node in sorted(inner.values(), key=lambda n: n.lineno)]


def test_every_import_of_topofl_in_a_function_says_why() -> None:
    silent = [f"{p.relative_to(ROOT.parent).as_posix()}:{node.lineno}: {ast.unparse(node)}"
              for p in sorted(ROOT.rglob("*.py"))
              for node, said in _topofl_imports_in_functions(p.read_text(encoding="utf-8"))
              if not said]
    assert not silent, ("imports of topofl inside a function without a comment on their line "
                        "saying why they are not at the top (or move them there):\n"
                        + "\n".join(silent))


def test_the_import_rule_sees_an_import_inside_a_function() -> None:
    text = ("import topofl\n"
            "def f():\n"
            "    from topofl import api\n"
            "    import os\n"
            "    from topofl.engine import (  # a reason\n"
            "        loop,\n"
            "    )\n"
            "    class A:\n"
            "        def g(self):\n"
            "            import topofl.graph\n"
            "            from topofl.data import (\n"
            "                load,\n"
            "            )  # a reason on its last line\n"
            "    return api, loop, A, os\n")
    assert [(node.lineno, said) for node, said in _topofl_imports_in_functions(text)] == [
        (3, False), (5, True), (10, False), (11, True)]
