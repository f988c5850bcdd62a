"""The code fingerprint: which library code computed a run's numbers.

:func:`code_fingerprint` hashes the source of ``topofl/``'s result code (everything but
:data:`NOT_RESULT_CODE`) without docstrings, comments and blank lines. :mod:`topofl.figures`
stores it beside every cached run and in every committed result; :mod:`topofl.figures.snapshot`
certifies two fingerprints equivalent.

:func:`tree_fingerprint` computes the same fingerprint, with this module's code, from the files
of another ``topofl/`` tree (a certified commit's, read from git): what that tree's code would
report about itself is never asked, so an edited ``_fingerprint.py`` in it cannot name a
fingerprint of its choice. Only its exclusion list (the literal :data:`NOT_RESULT_CODE`) and its
version (the literal ``__version__`` of ``_version.py``) are read from it, without running them.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import io
import tokenize
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

from topofl._version import __version__

__all__ = ["NOT_RESULT_CODE", "code_fingerprint", "tree_fingerprint"]

#: Source files of ``topofl/`` left out of :func:`code_fingerprint`: they present, schedule or
#: place runs but compute no number of a run (a folder ends with ``/``). ``distributed/`` is a
#: placement whose records equal one process's; figure runs are one process (the snapshot and
#: the certificates live with them); ``tools/`` holds the demo and the benchmarks;
#: ``conftest.py`` configures the doctests; ``_utils/environment.py`` names the numeric
#: environment a run had.
NOT_RESULT_CODE = ("__main__.py", "cli/", "tools/", "figures/", "_utils/fingerprint.py",
                   "plotting/", "report.py", "study/", "sweep/", "_utils/markdown.py",
                   "workflow/plan.py", "workflow/_plan_fits.py",
                   "_utils/heartbeat.py", "_utils/processes.py",
                   "distributed/", "conftest.py", "_utils/environment.py")


#: Where a tree keeps this module: today's place, then where it was before the package's
#: internal utilities moved into ``_utils/`` (a certified commit may be older).
_FINGERPRINT_MODULES = ("_utils/fingerprint.py", "_fingerprint.py")


def _result_code_files() -> list[Path]:
    """The source files :func:`code_fingerprint` hashes, sorted by their path in ``topofl/``."""
    root = Path(__file__).resolve().parents[1]
    out = []
    for p in sorted(root.rglob("*.py")):
        if not _excluded(p.relative_to(root).as_posix(), NOT_RESULT_CODE):
            out.append(p)
    return out


def _excluded(rel: str, rule: Iterable[str]) -> bool:
    """Whether the file ``rel`` (its path in ``topofl/``) is left out by the exclusion ``rule``."""
    return any(rel == x or (x.endswith("/") and rel.startswith(x)) for x in rule)


def _hash(version: str, sources: Iterable[tuple[str, str]]) -> str:
    """``"<version>+<hash>"`` of ``(path in topofl/, code text)`` pairs, in their order."""
    h = hashlib.sha256()
    for rel, text in sources:
        h.update(rel.encode() + b"\0" + text.encode() + b"\0")
    return f"{version}+{h.hexdigest()[:12]}"


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """``"<version>+<hash>"``: the library code that computes a run's numbers.

    The hash (12 hex digits of SHA-256) covers the path and code of every ``*.py`` file of
    ``topofl/`` except :data:`NOT_RESULT_CODE` (the CLI, plotting, reports, the figure and
    sweep machinery, the distributed placement). The code is the source without docstrings,
    comments and blank lines: editing documentation does not make results stale. A cached run
    or a committed result whose fingerprint differs was computed by other code (cached in a process:
    ``code_fingerprint.cache_clear()`` after editing the sources).

    Examples
    --------
    >>> import topofl as tf
    >>> fp = tf.figures.code_fingerprint()
    >>> fp.startswith(tf.__version__ + "+"), len(fp.split("+")[1])
    (True, 12)
    """
    root = Path(__file__).resolve().parents[1]
    return _hash(__version__, ((p.relative_to(root).as_posix(), _code_text(p))
                               for p in _result_code_files()))


def tree_fingerprint(files: Mapping[str, bytes]) -> str:
    """The :func:`code_fingerprint` of another ``topofl/`` tree, computed by this code.

    ``files`` maps each file's path inside ``topofl/`` (``"algorithms/dsgd.py"``) to its
    bytes. Every ``*.py`` file the tree's own exclusion list does not leave out is hashed as
    :func:`code_fingerprint` hashes the installed package's. The list and the version are
    read as literals from the tree's ``_utils/fingerprint.py`` (``_fingerprint.py`` in trees
    from before it moved; ``NOT_RESULT_CODE = (...)``) and
    ``_version.py`` (``__version__ = "..."``); nothing of the tree runs. The list can only
    leave files out of the hash, and the hash covers each hashed file's path: a tree that leaves
    out other files than the one it claims to be does not hash to its fingerprint.

    Raises
    ------
    ValueError
        When the tree has no fingerprint module or ``_version.py`` with those literals (one
        assignment each), or a hashed file is not UTF-8.

    Examples
    --------
    >>> rule = b'NOT_RESULT_CODE = ("_fingerprint.py", "cli.py")\\n'
    >>> tree = {"_version.py": b'__version__ = "1.0"\\n', "_fingerprint.py": rule,
    ...         "core.py": b"'''Doc.'''\\nx = 1  # a comment\\n", "cli.py": b"print(1)\\n"}
    >>> fp = tree_fingerprint(tree)
    >>> fp.startswith("1.0+"), len(fp)
    (True, 16)
    >>> tree_fingerprint({**tree, "cli.py": b"print(2)\\n"}) == fp  # left out
    True
    >>> tree_fingerprint({**tree, "core.py": b"x = 1\\n\\n"}) == fp  # only docs and blanks
    True
    >>> tree_fingerprint({**tree, "core.py": b"x = 2\\n"}) == fp
    False
    >>> lying = rule + b"def code_fingerprint():\\n    return 'what it wants'\\n"
    >>> tree_fingerprint({**tree, "_fingerprint.py": lying}) == fp  # its code is not run
    True
    """
    here = next((rel for rel in _FINGERPRINT_MODULES if rel in files), _FINGERPRINT_MODULES[0])
    rule = _literal(files, here, "NOT_RESULT_CODE")
    version = _literal(files, "_version.py", "__version__")
    if not (isinstance(rule, (tuple, list)) and all(isinstance(x, str) for x in rule)):
        raise ValueError(f"the tree's {here}: NOT_RESULT_CODE must be a tuple of "
                         f"strings, got {rule!r:.80}")
    if not isinstance(version, str):
        raise ValueError(f"the tree's _version.py: __version__ must be a string, got "
                         f"{version!r:.80}")
    # sorted as code_fingerprint sorts its paths (PurePosixPath order, not str order)
    hashed = sorted((rel for rel in files if rel.endswith(".py") and not _excluded(rel, rule)),
                    key=PurePosixPath)
    return _hash(version, ((rel, _strip(_source(files, rel))) for rel in hashed))


def _source(files: Mapping[str, bytes], rel: str) -> str:
    """The text of ``files[rel]`` as ``Path.read_text`` reads it (UTF-8, universal newlines)."""
    try:
        text = files[rel].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"the tree's {rel} is not UTF-8 ({exc})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _literal(files: Mapping[str, bytes], rel: str, name: str) -> object:
    """The literal value of the one module-level assignment ``name = ...`` in ``files[rel]``."""
    if rel not in files:
        raise ValueError(f"the tree has no {rel}: its fingerprint cannot be computed")
    try:
        tree = ast.parse(_source(files, rel))
    except SyntaxError as exc:
        raise ValueError(f"the tree's {rel} does not parse ({exc})") from None
    values = []
    for node in tree.body:
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign))
                   else [])
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            values.append(getattr(node, "value", None))
    if len(values) != 1 or not isinstance(values[0], ast.expr):
        raise ValueError(f"the tree's {rel} assigns {name} {len(values)} times: one literal "
                         "assignment expected")
    try:
        return ast.literal_eval(values[0])
    except ValueError:
        raise ValueError(f"the tree's {rel}: {name} is not a literal") from None


def _code_text(path: Path) -> str:
    """The source of ``path`` without what cannot change a number (see :func:`_strip`)."""
    return _strip(path.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=4096)
def _strip(source: str) -> str:
    """``source`` without what cannot change a number: docstrings, comments, blank lines and
    trailing spaces (a source that does not parse is taken whole)."""
    lines = source.splitlines()
    try:
        tree = ast.parse(source)
        comments = [tok.start for tok in tokenize.generate_tokens(io.StringIO(source).readline)
                    if tok.type == tokenize.COMMENT]
    except (SyntaxError, tokenize.TokenError):
        return source
    drop: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            doc = body[0]
            if not isinstance(node, ast.Module) and doc.lineno <= node.lineno:
                continue  # a docstring on its def's line: keep the line
            drop.update(range(doc.lineno - 1, (doc.end_lineno or doc.lineno)))
    for row, col in comments:  # tokenize rows are 1-based
        lines[row - 1] = lines[row - 1][:col]
    kept = (line.rstrip() for i, line in enumerate(lines) if i not in drop)
    return "\n".join(line for line in kept if line)
