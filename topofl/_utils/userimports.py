"""The user's own modules a run imports first: a config's ``imports`` key and ``topofl run /
sweep / plan --import MODULE``.

A module that registers a graph family, an algorithm, a model or a dataset
(``tf.topologies.register_family``, ``tf.algorithms.register_algorithm``,
``tf.models.register_model``, ``tf.data.register_dataset``) makes its names known only once it
is imported; a config run from the command line names them before anything imports the module.
``imports = ["my_graphs", "extra/algos.py"]`` (or ``--import``) lists them: each entry is a
module name, imported from the current directory or ``sys.path``, or the path of a ``.py``
file (imported as the module named by its stem). :func:`topofl.api.prepare` imports them
before it looks up any name, so a run, a sweep's worker processes (each checks its run's
config, ``imports`` included) and a replay resolve the same names.

What is recorded: the list as given under the header's ``config.imports`` (absent when empty,
so a config without imports resolves, hashes and records exactly as before the key existed)
and, under ``provenance.imports``, each module's name, file and the SHA-256 of its source file.
The run hash does not cover them (it covers what the run computes: the graph family's name
and parameters, the algorithm's hyper-parameters ...). A replay imports the header's modules
again, a path (and a module name of one ``.py`` file) from the absolute file recorded, once
its SHA-256 is checked (:func:`replay_imports`): the replay runs from any folder, and a file
that changed or is missing is refused before it runs. A resumed run compares its imports with
those its records header lists: a module that cannot be imported, a module missing or added,
or a source whose SHA-256 differs from the recorded one is refused in one line
(:func:`imports_problem`), since the same names would then run other code.

Importing is idempotent: a module already imported (by name, or a ``.py`` file already
imported from the same path) is not executed again, so a registration runs once per process.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from topofl.exceptions import ConfigError, ConfigTypeError

__all__ = ["check_imports", "load_imports", "imports_problem", "with_imports",
           "replay_imports"]


def check_imports(value: Any) -> list[str]:
    """The ``imports`` of a config as a list of non-empty strings, or a one-line error.

    Examples
    --------
    >>> from topofl._utils.userimports import check_imports
    >>> check_imports(["my_graphs", "extra/algos.py"]), check_imports(None)
    (['my_graphs', 'extra/algos.py'], [])
    >>> check_imports("my_graphs")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topofl.exceptions.ConfigTypeError: imports must be a list of module names or .py paths, ...
    """
    if value is None:
        return []
    if not isinstance(value, (list, tuple)) or not all(
            isinstance(v, str) and v.strip() for v in value):
        raise ConfigTypeError(f"imports must be a list of module names or .py paths, got "
                              f"{type(value).__name__} {value!r}"[:300])
    out: list[str] = []
    for v in value:  # the same module named twice is imported (and recorded) once
        if v.strip() not in out:
            out.append(v.strip())
    return out


def _is_path(spec: str) -> bool:
    return (spec.endswith(".py") or "/" in spec or os.sep in spec or spec.startswith(".")
            or Path(spec).is_file())  # notes.txt: a file, not the module txt of notes


@contextlib.contextmanager
def _cwd_on_path() -> Iterator[None]:
    """The current directory first on ``sys.path`` within the block (``topofl``, the console
    script, does not put it there as ``python -m topofl`` does)."""
    cwd = os.getcwd()
    added = cwd not in sys.path and "" not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        yield
    finally:
        if added:
            with contextlib.suppress(ValueError):
                sys.path.remove(cwd)


def _raised(spec: str, exc: BaseException) -> ConfigError:
    what = " ".join(str(exc).split())
    return ConfigError(f"imports: importing {spec!r} raised {type(exc).__name__}"
                       + (f": {what}" if what else "")[:300])


def _load_file(spec: str) -> Any:
    path = Path(spec)
    if path.suffix != ".py":
        raise ConfigError(f"imports: {spec!r} is a path but not a .py file (a module name has "
                          "no '/' and no '.py'; a file must end in .py)")
    if not path.is_file():
        raise ConfigError(f"imports: no such file {spec!r} (from {os.getcwd()})")
    name = path.stem
    if not name.isidentifier():
        raise ConfigError(f"imports: {spec!r} cannot be imported: {name!r} is not a module name")
    resolved = path.resolve()
    module = sys.modules.get(name)
    if module is not None:
        there = getattr(module, "__file__", None)
        if there is not None and Path(there).resolve() == resolved:
            return module
        raise ConfigError(f"imports: {spec!r} would be imported as module {name!r}, which is "
                          f"already imported from {there or 'a built-in'}; rename the file")
    found = importlib.util.spec_from_file_location(name, resolved)
    if found is None or found.loader is None:  # pragma: no cover - a .py file always has one
        raise ConfigError(f"imports: {spec!r} cannot be imported as a Python file")
    module = importlib.util.module_from_spec(found)
    sys.modules[name] = module
    try:
        with _cwd_on_path():  # its own `import sibling` finds the files beside the config's
            found.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        sys.modules.pop(name, None)
        raise _raised(spec, exc) from exc
    return module


def _load_name(spec: str) -> Any:
    if not all(part.isidentifier() for part in spec.split(".")):
        raise ConfigError(f"imports: {spec!r} is neither a module name (such as my_graphs or "
                          "pkg.graphs) nor the path of a .py file")
    if spec in sys.modules:
        return sys.modules[spec]
    with _cwd_on_path():
        try:
            return importlib.import_module(spec)
        except ModuleNotFoundError as exc:
            parts = spec.split(".")
            if exc.name in {".".join(parts[:k]) for k in range(1, len(parts) + 1)}:
                raise ConfigError(f"imports: no module named {spec!r} (looked in the current "
                                  f"directory {os.getcwd()} and sys.path; a file is named by "
                                  "its path, e.g. ./my_graphs.py)") from None
            raise _raised(spec, exc) from exc
        except (Exception, SystemExit) as exc:
            raise _raised(spec, exc) from exc


def _sha256(file: str | None) -> str | None:
    if file is None:
        return None
    try:
        return hashlib.sha256(Path(file).read_bytes()).hexdigest()
    except OSError:
        return None


def load_imports(specs: Any) -> tuple[dict[str, Any], ...]:
    """Import each module of ``specs`` (a config's ``imports``) once, in order; return what the
    records header keeps of each: ``{"import": spec, "module": name, "file": path,
    "sha256": digest}`` (``file`` and ``sha256`` are ``None`` for a module without a source
    file).

    Raises
    ------
    topofl.exceptions.ConfigTypeError
        ``specs`` is not a list of non-empty strings.
    topofl.exceptions.ConfigError
        A module that does not exist, a path that is not a ``.py`` file, or an import that
        raised: one line naming the module (and the exception).

    Examples
    --------
    >>> from topofl._utils.userimports import load_imports
    >>> [r["module"] for r in load_imports(["json"])]
    ['json']
    >>> load_imports(["no_such_module_xyz"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topofl.exceptions.ConfigError: imports: no module named 'no_such_module_xyz' (looked in ...
    >>> load_imports(["notes/graphs.txt"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topofl.exceptions.ConfigError: imports: 'notes/graphs.txt' is a path but not a .py file ...
    """
    out = []
    for spec in check_imports(specs):
        module = _load_file(spec) if _is_path(spec) else _load_name(spec)
        file = getattr(module, "__file__", None)
        out.append({"import": spec, "module": module.__name__,
                    "file": None if file is None else str(Path(file).resolve()),
                    "sha256": _sha256(file)})
    return tuple(out)


def _looks_like_path(spec: str) -> bool:
    """Whether ``spec`` names a file by its form alone (whatever the current directory)."""
    return spec.endswith(".py") or "/" in spec or os.sep in spec or spec.startswith(".")


def replay_imports(specs: Any, recorded: Any) -> list[str]:
    """What a replay imports for a header's ``config.imports`` (``specs``), given its
    ``provenance.imports`` (``recorded``): each path, and each module name that was one
    ``.py`` file (``my_graphs`` from ``my_graphs.py``), as the absolute file its run imported,
    once that file is checked to be the one recorded (same SHA-256); any other entry (a
    package's module, one recorded without a file) as it is, checked after it is imported
    (:func:`imports_problem`).

    A relative path (``--import lib/graphs.py``) then replays from any folder. A name whose
    recorded file is gone is imported by its name (it may be installed elsewhere).

    Raises
    ------
    topofl.exceptions.ConfigError
        A path whose recorded file is missing, or a recorded file whose source is not the one
        the run imported (its SHA-256 differs): nothing of it is imported.

    Examples
    --------
    >>> import hashlib, tempfile
    >>> from pathlib import Path
    >>> from topofl._utils.userimports import replay_imports
    >>> f = Path(tempfile.mkdtemp()) / "my_mod.py"
    >>> _ = f.write_text("x = 1\\n")
    >>> rec = [{"import": "lib/my_mod.py", "module": "my_mod", "file": str(f),
    ...         "sha256": hashlib.sha256(b"x = 1\\n").hexdigest()}]
    >>> replay_imports(["lib/my_mod.py"], rec) == [str(f)]
    True
    >>> _ = f.write_text("x = 2\\n")
    >>> replay_imports(["lib/my_mod.py"], rec)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topofl.exceptions.ConfigError: the source of module 'my_mod' (.../my_mod.py) is not the one ...
    """
    by_spec = {str(r.get("import")): r for r in recorded or [] if isinstance(r, Mapping)}
    out = []
    for spec in check_imports(specs):
        r = by_spec.get(spec, {})
        file, path = r.get("file"), _looks_like_path(spec)
        if not (isinstance(file, str) and Path(file).is_absolute()
                and (path or Path(file).name == f"{spec}.py")):
            out.append(spec)
            continue
        if not Path(file).is_file():
            if path:
                raise ConfigError(f"the file of module {r.get('module')!r} ({spec!r} when it "
                                  f"ran, {file}) is missing")
            out.append(spec)
            continue
        now = _sha256(file)
        if now != r.get("sha256"):
            raise ConfigError(f"the source of module {r.get('module')!r} ({file}) is not the "
                              f"one its records were made with (sha256 "
                              f"{str(r.get('sha256'))[:12]}... recorded, {str(now)[:12]}... "
                              "now)")
        out.append(file)
    return out


def with_imports(resolved: dict[str, Any], imports: Sequence[Mapping[str, Any]]
                 ) -> dict[str, Any]:
    """``resolved`` (a resolved config) with its ``imports`` entry when there are any (none:
    unchanged, as configs were before the key)."""
    if imports:
        resolved["imports"] = [str(i["import"]) for i in imports]
    return resolved


def imports_problem(recorded: Any, current: Sequence[Mapping[str, Any]]) -> str | None:
    """Why a run's imports now are not those a records header lists (its
    ``provenance.imports``), or ``None``: a module missing or added, or one whose source's
    SHA-256 differs.

    Examples
    --------
    >>> from topofl._utils.userimports import imports_problem
    >>> rec = [{"import": "g", "module": "g", "file": "/x/g.py", "sha256": "ab"}]
    >>> imports_problem(rec, rec) is None, imports_problem(None, []) is None
    (True, True)
    >>> imports_problem(rec, [])
    "its records imported ['g'] (--import or the config's imports), this run imports none"
    >>> print(imports_problem(rec, [{**rec[0], "sha256": "cd"}]))  # doctest: +NORMALIZE_WHITESPACE
    the source of module 'g' (/x/g.py) is not the one its records were made with
    (sha256 ab... recorded, cd... now)
    """
    before = {str(r.get("module")): r for r in recorded or [] if isinstance(r, Mapping)}
    now = {str(r["module"]): r for r in current}
    if set(before) != set(now):
        def names(d: Mapping[str, Any]) -> str:
            return str(sorted(d)) if d else "none"
        return (f"its records imported {names(before)} (--import or the config's imports), "
                f"this run imports {names(now)}")
    for name, r in before.items():
        old, new = r.get("sha256"), now[name].get("sha256")
        if old != new:
            return (f"the source of module {name!r} ({now[name].get('file')}) is not the one "
                    f"its records were made with (sha256 {str(old)[:12]}... recorded, "
                    f"{str(new)[:12]}... now)")
    return None


def recorded_imports(records_path: Any) -> list[Any] | None:
    """The ``provenance.imports`` of the records header at ``records_path`` (``[]`` when it
    has none), or ``None`` when there is no readable header."""
    import json

    try:
        with open(records_path, encoding="utf-8") as fh:
            header = json.loads(fh.readline())
    except (OSError, ValueError, TypeError):
        return None
    if not isinstance(header, dict) or not header.get("header"):
        return None
    prov = header.get("provenance")
    imports = prov.get("imports", []) if isinstance(prov, dict) else []
    return imports if isinstance(imports, list) else []
