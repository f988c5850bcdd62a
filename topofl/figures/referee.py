"""What a referee of a reproduction asks of each result beyond its data and model: a short
reproduction summary, where each hyperparameter came from, and the paper's number beside the
reproduced one.

They are written as data, one table a result, in ``paper_figures/referee/*.toml``::

    [field_tracking]
    scope = "..."      # what of the paper, on which data, model, clients, rounds, seeds
    easy = "..."       # what reproduced as the paper says
    hard = "..."       # what was hard or uncertain
    differs = "..."    # what differs from the paper

    [[field_tracking.hyperparameters]]
    setting = "lr"     # a row of the page's ``## Setting`` tables: its value is read there
    source = "tuned"   # paper | paper's code | tuned | inherited | chosen
    detail = "grid 0.05 .. 1 on seed 100, the best final accuracy of D-SGD"

    [[field_tracking.paper_numbers]]
    check = "..."      # a part of the name of exactly one of the result's checks ("*":
                       # any text; "a|b": a or b)
    paper = "..."      # the paper's number for the same quantity, in the check's unit
    where = "Fig. 2"

:func:`section` checks an entry against the result's page and checks (every setting it names
is on the page, every one of :data:`KEY_SETTINGS` the page sets has a source, every paper
number names one check, the headline's parts each have one) and renders it; the reproduced
number beside the paper's is the check's own measured value, so it cannot drift from the page.
:func:`topofl.figures.facts.apply` writes it into the page's ``## For a referee`` section and
the JSON's ``"referee"``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import tomllib

from topofl._utils.markdown import table
from topofl.figures.config import FigureError, _root

__all__ = ["entries", "check_entry", "section", "SOURCES", "KEY_SETTINGS", "SUMMARY"]

#: Where a hyperparameter can come from.
SOURCES = ("paper", "paper's code", "tuned", "inherited", "chosen")

#: The settings whose source every page that sets them must give.
KEY_SETTINGS = ("lr", "batch_size", "rounds", "local_steps", "local_epochs", "momentum",
                "weight_decay")

#: The reproduction summary's fields and their headings on the page.
SUMMARY = {"scope": "Scope", "easy": "What reproduced as the paper says",
           "hard": "What was hard", "differs": "What differs from the paper"}


def _error(name: str, what: str) -> ValueError:
    return ValueError(f"paper_figures/referee: [{name}]: {what}")


@functools.cache
def _read(folder: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(Path(folder).glob("*.toml")):
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"{path}: not valid TOML ({e})") from None
        for name, entry in data.items():
            if name in out:
                raise _error(name, f"given twice (again in {path.name})")
            if not isinstance(entry, dict):
                raise _error(name, f"expected a table, found {type(entry).__name__}")
            out[name] = entry
    return out


def entries(folder: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """Every result's entry of ``paper_figures/referee/*.toml`` (``{}`` outside a clone); a
    result given in two files is a ``ValueError``."""
    if folder is None:
        try:
            folder = _root() / "referee"
        except FigureError:
            return {}
    return dict(_read(str(folder)))


def _settings(md: str) -> dict[str, str]:
    """``{setting: value}`` of the page's ``## Setting`` tables (the distinct values of a
    setting across its panels joined by ``" / "``)."""
    if "## Setting\n" not in md:
        return {}
    body = md.split("## Setting\n", 1)[1].split("\n## ", 1)[0]
    seen: dict[str, list[str]] = {}
    for m in re.finditer(r"^\| ([^|]*?\S) \| (.*?) \|$", body, re.M):
        if m.group(1) in ("setting",):
            continue
        values = seen.setdefault(m.group(1), [])
        if m.group(2).strip() not in values:
            values.append(m.group(2).strip())
    return {k: " / ".join(v) for k, v in seen.items()}


def _text(name: str, entry: Mapping[str, Any], key: str, where: str = "") -> str:
    v = entry.get(key)
    if not isinstance(v, str) or not v.strip():
        raise _error(name, f"{where}{key!r} must be a non-empty string, found {v!r}")
    return " ".join(v.split())


def _named(part: str, checks: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The checks whose name contains ``part`` (``*`` in it: any text; ``a|b``: ``a`` or
    ``b``): an entry names a column's check whatever method the run found best in it, and
    whether the column ran (``"CIFAR-10 Pat-2: DFedPGP converges fastest|CIFAR-10 Pat-2:
    DFedPGP above the best other*mean accuracy"``).

    Examples
    --------
    >>> cs = [{"name": "A: X above the best other (Y), mean accuracy", "headline": True},
    ...       {"name": "A: X above the best other (Y), final accuracy"}]
    >>> [c["name"][-14:] for c in _named("A: X above the best other*final", cs)]
    ['final accuracy']
    >>> len(_named("A: X above", cs))
    2
    >>> [c["name"][-14:] for c in _named("A: X converges|A: X above*final", cs)]
    ['final accuracy']
    """
    pattern = re.compile("|".join(".*".join(re.escape(p) for p in alt.split("*"))
                                  for alt in part.split("|")))
    return [c for c in checks if pattern.search(" ".join(str(c["name"]).split()))]


def check_entry(name: str, entry: Mapping[str, Any], md: str,
                checks: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``entry`` checked against the result's page ``md`` and ``checks`` (the JSON's), with
    each setting's value and each paper number's measured value filled in; a ``ValueError``
    naming the result and the field where it does not hold.

    Examples
    --------
    >>> md = "## Setting\\n\\n| setting | value |\\n|---|---|\\n| lr | 0.1 |\\n\\n## Numbers\\n"
    >>> checks = [{"name": "A above B", "measured": "0.02 ± 0.01", "outcome": "pass",
    ...            "headline": True}]
    >>> e = {"scope": "s", "easy": "e", "hard": "h", "differs": "d",
    ...      "hyperparameters": [{"setting": "lr", "source": "paper", "detail": "Sec. 4"}],
    ...      "paper_numbers": [{"check": "A above", "paper": "+0.03", "where": "Table 1"}]}
    >>> r = check_entry("toy", e, md, checks)
    >>> r["hyperparameters"][0]["value"], r["paper_numbers"][0]["measured"]
    ('0.1', '0.02 ± 0.01')
    >>> check_entry("toy", {**e, "hyperparameters": []}, md, checks)
    Traceback (most recent call last):
    ...
    ValueError: paper_figures/referee: [toy]: no source for the page's setting(s) ['lr'] \
(one of ('lr', 'batch_size', 'rounds', 'local_steps', 'local_epochs', 'momentum', \
'weight_decay') the page sets)
    """
    known = set(SUMMARY) | {"hyperparameters", "paper_numbers"}
    if set(entry) - known:
        raise _error(name, f"unknown field(s) {sorted(set(entry) - known)}; expected "
                     f"{sorted(known)}")
    out: dict[str, Any] = {k: _text(name, entry, k) for k in SUMMARY}
    rows = _settings(md)
    hps = []
    for i, h in enumerate(entry.get("hyperparameters", [])):
        at = f"hyperparameters[{i}]: "
        setting = _text(name, h, "setting", at)
        if setting not in rows:
            raise _error(name, f"{at}setting {setting!r} is not a row of the page's ## Setting "
                         f"(rows: {sorted(rows)})")
        source = _text(name, h, "source", at)
        if source not in SOURCES:
            raise _error(name, f"{at}source must be one of {SOURCES}, found {source!r}")
        hps.append({"setting": setting, "value": rows[setting], "source": source,
                    "detail": _text(name, h, "detail", at)})
    named = {h["setting"] for h in hps}
    missing = [k for k in KEY_SETTINGS if rows.get(k, "-") not in ("-", "") and k not in named]
    if missing:
        raise _error(name, f"no source for the page's setting(s) {missing} (one of "
                     f"{KEY_SETTINGS} the page sets)")
    numbers, covered = [], set()
    for i, p in enumerate(entry.get("paper_numbers", [])):
        at = f"paper_numbers[{i}]: "
        part = _text(name, p, "check", at)
        hits = _named(part, checks)
        if len(hits) != 1:
            raise _error(name, f"{at}check {part!r} must name exactly one check, found "
                         f"{len(hits)} ({[c['name'] for c in hits]})")
        (c,) = hits
        covered.add(c["name"])
        numbers.append({"check": c["name"], "paper": _text(name, p, "paper", at),
                        "where": _text(name, p, "where", at), "measured": c["measured"],
                        "outcome": c["outcome"]})
    heads = [c["name"] for c in checks if c.get("headline") and c["name"] not in covered]
    if heads:
        raise _error(name, f"no paper number for the headline check(s) {heads}")
    out["hyperparameters"], out["paper_numbers"] = hps, numbers
    return out


def section(checked: Mapping[str, Any] | None, unmatched: str = "") -> str:
    """The page's Markdown of a checked entry (:func:`check_entry`); for ``None``, the line
    saying that the result has no entry, or (``unmatched``: why) that its entry, written for
    the committed default-scale result, does not match this page (a ``--quick`` or ``--full``
    run, whose checks differ)."""
    if checked is None and unmatched:
        return ("### Reproduction\n\nThe entry in `paper_figures/referee/` describes the "
                "committed result (the default scale); it does not match this page's checks "
                f"({unmatched}), so it is not shown here.\n\n")
    if checked is None:
        return ("### Reproduction\n\nNo entry in `paper_figures/referee/` for this result: its "
                "summary, the sources of its settings and the paper's numbers are not "
                "written.\n\n")
    out = ["### Reproduction summary\n\n" + "\n".join(
        f"- **{head}:** {checked[k]}" for k, head in SUMMARY.items()) + "\n"]
    if checked["hyperparameters"]:
        out.append("### Where the settings came from\n\n" + table(
            ["setting", "value", "from", "where, or how it was chosen"],
            [[h["setting"], h["value"], h["source"], h["detail"]]
             for h in checked["hyperparameters"]]) + "\n")
    if checked["paper_numbers"]:
        out.append("### The paper's number beside the reproduced one\n\n" + table(
            ["check", "paper", "where in the paper", "reproduced here (mean ± std over seeds)",
             "outcome"],
            [[p["check"], p["paper"], p["where"], p["measured"], p["outcome"]]
             for p in checked["paper_numbers"]]) + "\n")
    return "\n".join(out) + "\n"
