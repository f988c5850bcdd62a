"""How the command line ends on an error: one line on stderr (``topofl COMMAND: error: ...``)
and its exit status (2 for bad input, 1 for a failure while running), the hint on a name of
the user's that no ``--import`` registered, and the variable that asks for the full traceback
instead (:data:`TRACEBACK_ENV`).
"""

from __future__ import annotations

import sys

from topofl.exceptions import OutputExistsError

__all__ = ["TRACEBACK_ENV"]


class _UsageError(Exception):
    """A command line argparse refuses: reported in one line by :func:`main` (status 2)."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog = prog


def _one_line(exc: BaseException) -> str:
    msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    return " ".join(str(msg).split()) or type(exc).__name__


#: Set (to anything but ``0``) to let errors end in a full Python traceback, as ``--traceback``.
TRACEBACK_ENV = "TOPOFL_TRACEBACK"


def _exit_code(exc: BaseException) -> int | None:
    """The exit status for an error reported in one line, or None for a bug (traceback).

    2 for bad input (``ValueError``, ``TypeError``, ``KeyError``, an output that exists), 1 for
    a failure while running: an ``OSError`` (a file that cannot be read or written), memory
    running out, or a ``RuntimeError`` raised by topofl itself (a diverged run, a client's
    error). Any other exception is a bug and keeps its traceback.
    """
    if isinstance(exc, (ValueError, TypeError, KeyError, OutputExistsError)):
        return 2
    if isinstance(exc, (OSError, MemoryError)):
        return 1
    if isinstance(exc, RuntimeError) and (
        type(exc).__module__.split(".")[0] == "topofl" or type(exc).__name__ == "OutOfMemoryError"
    ):
        return 1
    return None


#: What registers a name of each kind a user adds (the kinds of :func:`_import_hint`).
_REGISTERED_BY = {"graph family": "topofl.topologies.register",
                  "algorithm": "topofl.algorithms.register_algorithm",
                  "model": "topofl.models.register_model",
                  "dataset": "topofl.data.register_dataset"}

#: The commands that take ``--import``.
_IMPORTING = ("run", "sweep", "plan", "spectral", "list")


def _import_hint(prog: str, message: str) -> str:
    """``message`` of a failed lookup of a graph family, algorithm, model or dataset
    (:func:`topofl._utils.validation.unknown_name`'s ``unknown KIND 'NAME'...``) by a command that
    takes ``--import``, with how one of the user's becomes known from the command line;
    any other message as it is.

    Examples
    --------
    >>> from topofl.cli.errors import _import_hint
    >>> print(_import_hint("topofl spectral", "unknown graph family 'wheel'; known: ring"))
    ... # doctest: +NORMALIZE_WHITESPACE
    unknown graph family 'wheel'; known: ring; one of yours is known once the module that
    registers it (topofl.topologies.register) is imported: --import FILE.py (or imports =
    ['FILE.py'] in a config)
    >>> _import_hint("topofl report", "unknown graph family 'wheel'; known: ring")
    "unknown graph family 'wheel'; known: ring"
    """
    import re

    found = re.search(r"\bunknown (graph family|algorithm|model|dataset) '", message)
    if found is None or prog.removeprefix("topofl ") not in _IMPORTING:
        return message
    return (f"{message}; one of yours is known once the module that registers it "
            f"({_REGISTERED_BY[found.group(1)]}) is imported: --import FILE.py (or imports = "
            "['FILE.py'] in a config)")


def _report(prog: str, exc: BaseException, code: int) -> None:
    name = type(exc).__name__
    what = _one_line(exc) if code == 2 else f"{name}: {_one_line(exc)}"
    print(f"{prog}: error: {_import_hint(prog, what)}", file=sys.stderr)
