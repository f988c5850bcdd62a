"""The code fingerprint: which library code computed a run's numbers.

:func:`code_fingerprint` hashes the source of ``topofl/``'s result code (everything but
:data:`NOT_RESULT_CODE`) without docstrings, comments and blank lines. :mod:`topofl.figures`
stores it beside every cached run and in every committed result; :mod:`topofl.snapshot`
certifies two fingerprints equivalent.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import io
import tokenize
from pathlib import Path

from topofl._version import __version__

__all__ = ["NOT_RESULT_CODE", "code_fingerprint"]

#: Source files of ``topofl/`` left out of :func:`code_fingerprint`: they present, schedule or
#: place runs but compute no number of a run (a folder ends with ``/``). ``distributed/`` is a
#: placement whose records equal one process's; figure runs are one process.
NOT_RESULT_CODE = ("__main__.py", "cli.py", "demo.py", "figures/", "_fingerprint.py",
                   "plotting/", "report.py", "snapshot.py", "study/", "sweep.py",
                   "_markdown.py", "certificates.py", "plan.py", "_heartbeat.py",
                   "_processes.py", "distributed/", "bench.py")


def _result_code_files() -> list[Path]:
    """The source files :func:`code_fingerprint` hashes, sorted by their path in ``topofl/``."""
    root = Path(__file__).resolve().parent
    out = []
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        if any(rel == x or (x.endswith("/") and rel.startswith(x)) for x in NOT_RESULT_CODE):
            continue
        out.append(p)
    return out


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
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for p in _result_code_files():
        h.update(p.relative_to(root).as_posix().encode() + b"\0" + _code_text(p).encode()
                 + b"\0")
    return f"{__version__}+{h.hexdigest()[:12]}"


def _code_text(path: Path) -> str:
    """The source of ``path`` without what cannot change a number: docstrings, comments,
    blank lines and trailing spaces (a file that does not parse is taken whole)."""
    source = path.read_text(encoding="utf-8")
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
