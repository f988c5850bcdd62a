"""``topofl figure``: list the scripts, rebuild or check the index, take or certify a
behaviour snapshot, or run one figure script."""

from __future__ import annotations

import json
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path

from topofl._utils.fingerprint import code_fingerprint
from topofl._utils.processes import sigterm_raises
from topofl.figures import facts
from topofl.figures.certificates import (
    EQUIVALENCE_FILE,
    Verdict,
    certify,
    check,
    rerecord,
    summary,
    variable_warnings,
)
from topofl.figures.commits import clean_commit
from topofl.figures.config import FigureError, _root
from topofl.figures.redecide import redecide
from topofl.figures.results import _results, _write_index, available, stale
from topofl.figures.snapshot import take as take_snapshot

__all__ = ["main"]


def main(argv: Sequence[str] | None = None, *, prog: str = "topofl figure") -> int:
    """``topofl figure list | index [--check [--jobs N] [--strict]] | snapshot ... | NAME
    [--quick|--full] [...]``.

    Examples
    --------
    >>> tf.figures.cli.main(["--help"])  # doctest: +ELLIPSIS
    usage: topofl figure list | index [--check [--jobs N] [--strict]] | snapshot ... | NAME ...
    0
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(f"usage: {prog} list | index [--check [--jobs N] [--strict]] | snapshot (--out "
              "FILE | --certify FILE | "
              "--rerecord) "
              "| redecide [--dry-run] [--drop-horizon TEXT] [NAME ...] | facts [NAME ...] "
              "| NAME [--quick | "
              "--full] [--out DIR | --update-results] [--rerun] [--jobs N]"
              "\n\nRegenerate a paper figure (from a clone of the repository) into "
              "paper_figures/out/<scale>/; --update-results rewrites the committed "
              "paper_figures/results/. `index` rebuilds the index of paper_figures/README.md; "
              "`index --check` lists the committed results computed by other code and "
              "verifies every certificate they rely on by re-running its commit (--jobs N at "
              "a time), one line each as it is decided: bitwise, within rounding (naming the "
              "environment fields that differ) or failed; exit status 1 if a result is stale "
              "or a certificate fails (--strict: or is not bitwise). `snapshot --out FILE` "
              "saves what the result code computes on fixed small inputs (before a refactor); "
              "`snapshot --certify FILE` takes it again and, when nothing moved, certifies "
              "the new code equivalent to the old "
              "(topofl.figures.snapshot). `redecide` decides committed results again under the "
              "current rule from their own per-seed values (every result without NAMEs; "
              "topofl.figures.redecide). `facts` recomputes each result's data, model size "
              "and per-client labels from its setting tables into its page "
              "(topofl.figures.facts).")
        return 0 if argv else 2
    try:
        if argv[0] == "list":
            for name, title in available().items():
                print(f"{name:<24} {title}")
            return 0
        if argv[0] == "index":
            if "--check" in argv[1:]:
                return _check(argv[1:], prog)
            if argv[1:]:
                raise FigureError(f"unknown argument(s) {argv[1:]}: `{prog} index [--check "
                                  "[--jobs N] [--strict]]`")
            readme = _root() / "README.md"
            _write_index(readme)
            print(readme)
            return 0
        if argv[0] == "snapshot":
            return _snapshot(argv[1:], prog)
        if argv[0] == "redecide":
            return _redecide(argv[1:], prog)
        if argv[0] == "facts":
            return _facts(argv[1:], prog)
        names = available()
        name = argv[0].removeprefix("fig_").removesuffix(".py")
        if name not in names:
            raise FigureError(f"no figure {argv[0]!r}; `{prog} list` shows "
                              f"{', '.join(names) or 'none'}")
    except BrokenPipeError:
        raise  # the reader went away (``| head``): the CLI ends quietly
    except (FigureError, OSError, ValueError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    script_path = _root() / f"fig_{name}.py"
    old_argv, old_path = sys.argv, list(sys.path)
    sys.argv = [str(script_path), *argv[1:]]
    sys.path.insert(0, str(script_path.parent))
    try:
        mod = runpy.run_path(str(script_path), run_name="topofl_figure")
        return int(mod["main"](argv[1:]) or 0)
    except FigureError as exc:
        print(f"{prog} {name}: error: {exc}", file=sys.stderr)
        return 1
    finally:
        sys.argv, sys.path[:] = old_argv, old_path


def _check(argv: list[str], prog: str) -> int:
    """``index --check [--jobs N] [--strict]``: the stale results, then every certificate
    they rely on verified, one line each as it is decided, then the summary (stderr)."""
    jobs, strict, rest = 1, False, [a for a in argv if a != "--check"]
    while rest:
        arg = rest.pop(0)
        if arg == "--strict":
            strict = True
        elif arg == "--jobs" or arg.startswith("--jobs="):
            text = arg.partition("=")[2] if "=" in arg else (rest.pop(0) if rest else "")
            if not text.isdigit() or int(text) < 1:
                raise FigureError(f"--jobs needs a whole number of at least 1, got {text!r}")
            jobs = int(text)
        else:
            raise FigureError(f"unknown argument {arg!r}: `{prog} index --check [--jobs N] "
                              "[--strict]`")
    for warning in variable_warnings():
        print(f"{prog} index --check: warning: {warning}", file=sys.stderr, flush=True)
    old = stale()
    for name, why in old.items():
        print(f"{name}: {why}", flush=True)
    done = 0

    def report(v: Verdict) -> None:
        nonlocal done
        done += 1
        line = v.line() + (" (not bitwise: fails under --strict)"
                           if strict and v.outcome == "rounding" else "")
        print(f"[{done}/{v.of}] {line}", flush=True)

    def progress(line: str) -> None:
        print(f"{prog} index --check: {line}", file=sys.stderr, flush=True)

    # a SIGTERM ends the check as Ctrl-C does: its re-runs stopped, what verified kept
    with sigterm_raises(lambda signum: SystemExit(128 + signum)):
        found = check(_root() / "results", jobs=jobs, report=report, progress=progress)
    failed = sum(v.outcome == "failed" or (strict and v.outcome == "rounding") for v in found)
    print(f"certificates: {summary(found, strict=strict)}; {len(old)} of "
          f"{len(_results(_root() / 'results'))} committed results are stale (code now "
          f"{code_fingerprint()})", file=sys.stderr, flush=True)
    return 1 if old or failed else 0


def _redecide(argv: list[str], prog: str) -> int:
    """``redecide [--dry-run] [--drop-horizon TEXT] [NAME ...]``: each result decided again,
    one line each."""
    dry = "--dry-run" in argv
    drop = None
    if "--drop-horizon" in argv:
        i = argv.index("--drop-horizon")
        if i + 1 >= len(argv):
            raise FigureError("--drop-horizon needs the start of a horizon's text")
        drop = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    names = [a for a in argv if a != "--dry-run"]
    bad = [a for a in names if a.startswith("-")]
    if bad:
        raise FigureError(f"unknown option(s) {bad}: `{prog} redecide [--dry-run] [NAME ...]`")
    folder = _root() / "results"
    for name in names or _pages(folder):
        r = redecide(name, folder, write=not dry, drop_horizon=drop)
        moved = "; ".join(f"{n}: {a} -> {b}" for n, a, b in r.moved)
        print(f"{name}: {r.before} -> {r.after}" + (f" ({moved})" if moved else ""))
    return 0


def _pages(folder: Path) -> list[str]:
    """The committed results of ``folder`` that have a page (a JSON and its Markdown)."""
    return sorted(p.stem for p in folder.glob("*.json") if p.with_suffix(".md").is_file())


def _facts(argv: list[str], prog: str) -> int:
    """``facts [NAME ...]``: each result's referee facts recomputed into its page, one line
    each."""
    bad = [a for a in argv if a.startswith("-")]
    if bad:
        raise FigureError(f"unknown option(s) {bad}: `{prog} facts [NAME ...]`")
    folder = _root() / "results"
    for name in argv or _pages(folder):
        js, md = folder / f"{name}.json", folder / f"{name}.md"
        if not js.is_file() or not md.is_file():
            raise FigureError(f"no committed result {name!r} in {folder} (its .json and .md)")
        rows = facts.apply(js, md)
        print(f"{name}: " + ("; ".join(f"{r['data']}" + (f", {r['parameters']:,} parameters"
                                                         if "parameters" in r else "")
                                       for r in rows) or "no training data"))
    return 0


def _snapshot(argv: list[str], prog: str) -> int:
    """``snapshot --out FILE``, ``snapshot --certify FILE`` or ``snapshot --rerecord``."""
    if argv == ["--rerecord"]:
        done = rerecord(_root() / "results")
        print(f"sealed {len(done)} certificate(s) written before environments were recorded "
              f"with this environment, in {_root() / 'results' / EQUIVALENCE_FILE}")
        return 0
    if len(argv) != 2 or argv[0] not in ("--out", "--certify"):
        raise FigureError(f"`{prog} snapshot --out FILE` (take), `{prog} snapshot --certify "
                          f"FILE` (compare and certify) or `{prog} snapshot --rerecord` (seal "
                          f"the certificates written before environments were recorded with "
                          f"this one), got {argv}")
    path = Path(argv[1])
    if argv[0] == "--out":
        snap = {**take_snapshot(), "commit": clean_commit()}
        path.write_text(json.dumps(snap) + "\n", encoding="utf-8")
        where = (f"commit {snap['commit'][:12]}" if snap["commit"] else
                 "uncommitted code: it cannot be the 'before' of a certificate")
        print(f"{path}: {len(snap['values'])} values of code {snap['code']} ({where})")
        return 0
    if not path.is_file():
        raise FigureError(f"no snapshot {path}: take one with `{prog} snapshot --out FILE`")
    cert = certify(path, _root() / "results")
    if cert["from"] == cert["to"]:
        print(f"the code is still {cert['to']}: nothing to certify ({cert['values']} values "
              "equal)")
    else:
        print(f"certified: {cert['from']} -> {cert['to']} ({cert['values']} values equal), "
              f"in {_root() / 'results' / EQUIVALENCE_FILE}")
    return 0
