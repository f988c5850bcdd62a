"""The figure scripts and their committed results: which there are, which are stale, the index.

``topofl figure list`` lists the scripts (:func:`available`); ``topofl figure index [--check]``
rebuilds the index of ``paper_figures/README.md`` from the verdicts (:func:`index`), or lists
the committed results computed by other code than the current (:func:`stale`).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from topofl._utils.fingerprint import code_fingerprint
from topofl._utils.markdown import table
from topofl.figures.certificates import EQUIVALENCE_FILE, equivalent_codes
from topofl.figures.checks import VERDICTS, _legacy_verdict
from topofl.figures.config import FigureError, _root

__all__ = ["OLD_RULE_COMMIT", "PREVIOUS_RULE_COMMIT", "available", "stale", "index",
           "verdict_changes"]

#: The last commit whose committed results were all decided by the older rule (a check passed
#: when mean ± one std over the seeds cleared its threshold; every check counted): the
#: "before" of :func:`verdict_changes`.
OLD_RULE_COMMIT = "98a230c"

#: The last commit whose results were decided before measured ties had an outcome of their own
#: and before a fidelity gate needed its own significance (the rule of ``903c880``'s successor:
#: superiority beyond the margin, non-inferiority within it, a failed part of a headline
#: refuting it): the middle column of :func:`verdict_changes`.
PREVIOUS_RULE_COMMIT = "14864fc"

#: What the middle column's rule lacked, in the column's header.
PREVIOUS_RULE_NAME = "before measured ties and the gates' own test"


def available() -> dict[str, str]:
    """``{name: title}`` of the figure scripts ``paper_figures/fig_<name>.py``.

    Examples
    --------
    >>> tf.figures.results.available()["dcliques_01"].startswith("D-Cliques Fig. 1")
    True
    """
    out: dict[str, str] = {}
    for p in sorted(_root().glob("fig_*.py")):
        try:
            doc = ast.get_docstring(ast.parse(p.read_text(encoding="utf-8"))) or ""
        except (SyntaxError, UnicodeDecodeError, ValueError) as exc:
            raise FigureError(f"{p}: not a readable figure script ({type(exc).__name__}: "
                              f"{' '.join(str(exc).split())})") from None
        out[p.stem[4:]] = doc.strip().splitlines()[0] if doc.strip() else ""
    return out


def _read_result(p: Path) -> dict[str, Any]:
    """The result JSON ``p``, checked where :func:`stale` and :func:`index` read it: an
    object with a str ``name``, and ``code`` (a str) and ``seconds`` (a number) when given.

    Raises
    ------
    FigureError
        A ``ValueError`` naming the file and what is wrong in it.
    """
    try:
        v = json.loads(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise FigureError(f"result {p} is not UTF-8 text ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise FigureError(f"result {p} is not valid JSON ({exc})") from None
    except RecursionError:
        raise FigureError(f"result {p} is not a result JSON (nested too deeply)") from None
    if not isinstance(v, dict):
        raise FigureError(f"result {p} must hold a JSON object, found {type(v).__name__}")
    if not isinstance(v.get("name"), str) or not v["name"]:
        raise FigureError(f"result {p} must have a 'name' (the figure's, a str), found "
                          f"{v.get('name')!r}")
    if "code" in v and not isinstance(v["code"], str):
        raise FigureError(f"result {p}: 'code' must be a code fingerprint (a str), found "
                          f"{type(v['code']).__name__} {v['code']!r}")
    seconds = v.get("seconds", 0)
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise FigureError(f"result {p}: 'seconds' must be a number, found "
                          f"{type(seconds).__name__} {seconds!r}")
    return v


def _results(folder: Path) -> list[dict[str, Any]]:
    """Every result JSON of ``folder`` (the certificates' file aside), each checked
    (:func:`_read_result`: a malformed one is an error naming it).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from topofl.figures.results import _results
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "a.json").write_text('{"name": }')
    >>> _results(d)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topofl.figures.config.FigureError: result .../a.json is not valid JSON (Expecting value: ...)
    """
    return [_read_result(p) for p in sorted(folder.glob("*.json"))
            if p.name != EQUIVALENCE_FILE]


def stale(results: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """The results of a folder (default: the committed ``paper_figures/results/``) computed by
    other code than :func:`code_fingerprint`: ``{name: why}``.

    Examples
    --------
    >>> import tempfile, json, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "old.json").write_text(json.dumps({"name": "old", "holds": True}))
    >>> tf.figures.results.stale(d)
    {'old': 'no code fingerprint (computed before results recorded one)'}
    """
    folder = Path(results) if results is not None else _root() / "results"
    code = code_fingerprint()
    same = equivalent_codes(code, folder)
    out = {}
    for v in _results(folder):
        if "code" not in v:
            out[v["name"]] = "no code fingerprint (computed before results recorded one)"
        elif v["code"] not in same:
            out[v["name"]] = f"computed by {v['code']}, the code is now {code}"
    return out


def index(results: str | os.PathLike[str] | None = None) -> str:
    """The Markdown index of the figures: the verdict counts, then one row per result.

    ``results`` defaults to the committed ``paper_figures/results/``; then the scripts
    without a committed result are listed too.

    Examples
    --------
    >>> import tempfile, json, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "x.json").write_text(json.dumps({"name": "x", "verdict": "partly",
    ...                                           "seeds": [0, 1, 2], "rule": "..."}))
    >>> print(tf.figures.results.index(d).split(";")[0])
    1 result: 0 holds, 1 partly, 0 does not hold, 0 no practical effect at this scale, 0
    inconclusive at this scale
    """
    folder = Path(results) if results is not None else _root() / "results"
    found = _results(folder)
    old = stale(folder)
    code = code_fingerprint()
    counts = {k: 0 for k in VERDICTS}
    rows = []
    older = 0
    for v in found:
        decided = _legacy_verdict(v)
        counts[decided] += 1
        older += "rule" not in v
        seeds = v.get("seeds")
        rows.append([f"[{v['name']}](results/{v['name']}.md)", v.get("title", ""),
                     v.get("claim", ""), v.get("measured", ""),
                     decided if "rule" in v else f"{decided} (older rule: not rerun yet)",
                     str(len(seeds)) if isinstance(seeds, list) else "-",
                     str(v.get("dataset") or "-"),
                     f"{v.get('seconds', 0):.0f} s",
                     "stale" if v["name"] in old else
                     "current" if v.get("code") == code else "current (certified)"])
    if results is None:  # scripts without committed results are listed too, as such
        done = {v["name"] for v in found}
        for name, title in available().items():
            if name not in done:
                rows.append([f"fig_{name}.py", title, "", "no default-scale result committed "
                             "yet (see the script's docstring)", "-", "-", "-", "-", "-"])
    head = ["figure", "title", "paper claim", "measured (default scale)", "verdict", "seeds",
            "data", "time to regenerate", "code"]
    summary = (f"{len(found)} result{'' if len(found) == 1 else 's'}: "
               + ", ".join(f"{counts[k]} {k}" for k in VERDICTS)
               + (f" ({older} of them still decided by the older rule, not rerun yet)"
                  if older else "")
               + f"; {len(old)} computed by other code than the current "
               "(`topofl figure index --check`).")
    return summary + "\n\n" + table(head, rows)


def _old_result(name: str, since: str) -> dict[str, Any] | None:
    """The committed result ``name`` at commit ``since`` (``None`` when absent there)."""
    try:
        text = subprocess.run(
            ["git", "show", f"{since}:paper_figures/results/{name}.json"], cwd=_root(),
            capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    try:
        out = json.loads(text)
    except json.JSONDecodeError:
        return None
    return out if isinstance(out, dict) else None


def _convergence_text(v: dict[str, Any]) -> str:
    """Whether the checks' compared curves flattened: from the checks of a result JSON."""
    checks = [c for c in v.get("checks", []) if isinstance(c, dict)]
    read = [c["convergence"]["flat"] for c in checks
            if isinstance(c.get("convergence"), dict) and "flat" in c["convergence"]]
    horizon = sum("horizon" in c for c in checks)
    parts = []
    if read:
        parts.append("yes" if all(read) else f"no ({read.count(False)} of {len(read)} "
                     "checks on curves still moving)")
    if horizon:
        parts.append(f"{horizon} check{'s' if horizon > 1 else ''} read at a horizon")
    return "; ".join(parts) or "- (no training)"


def verdict_changes(since: str = OLD_RULE_COMMIT, results: str | os.PathLike[str] | None = None
                    ) -> str:
    """The Markdown table of every result's verdict at commit ``since`` (the older rule) and
    now: the rounds run against the paper's, whether the compared curves flattened, and the
    headline's reason (why the verdict is what it is now).

    Examples
    --------
    >>> print(tf.figures.results.verdict_changes().splitlines()[0])  # doctest: +ELLIPSIS
    | figure | verdict at 98a230c (older rule) | at 14864fc (before measured ties and ...
    """
    folder = Path(results) if results is not None else _root() / "results"
    rows = []
    for v in _results(folder):
        old = _old_result(v["name"], since)
        before = _legacy_verdict(old) if old else "-"
        prev_v = _old_result(v["name"], PREVIOUS_RULE_COMMIT)
        prev = _legacy_verdict(prev_v) if prev_v else "-"
        if "rule" not in v:
            rows.append([v["name"], before, prev, "not rerun yet (older rule)", "-", "-",
                         "-"])
            continue
        rounds = v.get("rounds") or {}
        ran = " / ".join(map(str, rounds.get("run") or [])) or "-"
        paper = " / ".join(map(str, rounds.get("paper") or [])) or "-"
        heads = [c for c in v.get("checks", []) if isinstance(c, dict) and c.get("headline")]
        why = "; ".join(f"{c.get('name')}: {c.get('outcome')} "
                        f"({str(c.get('reason', '')).split('; ')[0]})" for c in heads) or "-"
        now = _legacy_verdict(v)
        rows.append([v["name"], before, prev, now if now != prev else f"{now} (unchanged)",
                     f"{ran} of {paper}" if rounds.get("run") else "-", _convergence_text(v),
                     why])
    return table(["figure", f"verdict at {since} (older rule)",
                  f"at {PREVIOUS_RULE_COMMIT} ({PREVIOUS_RULE_NAME})", "verdict now",
                  "rounds run (of the paper's)", "curves flattened", "headline: why"], rows)


_INDEX_START = "<!-- index: generated by `topofl figure index`; edit above or below -->"
_INDEX_END = "<!-- end of index -->"


_CHANGES_START = ("<!-- verdicts before and after: generated by `topofl figure index`; edit "
                  "above or below -->")
_CHANGES_END = "<!-- end of verdicts before and after -->"


def _replace_block(text: str, start: str, end: str, body: str) -> str:
    block = f"{start}\n\n{body}\n\n{end}"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        return head + block + rest.split(end, 1)[1]
    return text.rstrip("\n") + "\n\n" + block + "\n"


def _write_index(readme: Path) -> None:
    """Replace the index (and the table of verdicts before and after the rule's change,
    :func:`verdict_changes`) between their markers of ``readme`` (appended when absent)."""
    text = readme.read_text(encoding="utf-8") if readme.exists() else "# Paper figures\n"
    text = _replace_block(text, _INDEX_START, _INDEX_END, index())
    text = _replace_block(text, _CHANGES_START, _CHANGES_END, verdict_changes())
    readme.write_text(text, encoding="utf-8")
