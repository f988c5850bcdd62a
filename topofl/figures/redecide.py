"""A committed result decided again, under the current rule, from its own per-seed values.

Every result's JSON holds what decides each check (the per-seed values and seeds, threshold,
margin, claim form, convergence reading or horizon: :meth:`~topofl.figures.Check.as_dict`), so
a change of the rule (:data:`~topofl.figures.checks.RULE`) does not need the runs again: ``topofl
figure redecide [NAME ...]`` rebuilds each check with :func:`~topofl.figures.above`,
:func:`~topofl.figures.below` or :func:`~topofl.figures.within` from those values, takes the
verdict of the rebuilt checks, and rewrites the result's JSON and the parts of its Markdown
that the rule decides (the verdict line, the table of checks, the rule's paragraph). Nothing a
run measured changes; exact checks (facts), checks not run and checks without per-seed values
are kept as they are. A check that a script marked untestable (its stand-in fails its
calibration) stays inconclusive, its "would be" read again.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from topofl._utils.markdown import table
from topofl.figures import facts, price
from topofl.figures.checks import (
    RULE,
    Check,
    at_horizon,
    secondary,
    verdict,
)
from topofl.figures.config import FigureError, _root, claim_of, mark_document
from topofl.figures.gate import AnyGate, gate_bars, gate_from_dict, gated, rebar
from topofl.figures.replication import pooled_look, rebuild, replicate_all
from topofl.figures.writing import gate_paragraph, gate_table, rule_paragraph, verdict_line

__all__ = ["Redecision", "redecide", "apply_gates"]

#: How a check reads once a failed gate made it inconclusive (:func:`~topofl.figures.gated`).
_GATED = "inconclusive at this scale (the stand-in does not reproduce"

@dataclass(frozen=True)
class Redecision:
    """What :func:`redecide` did to one result: its verdict before and after, and each check
    whose outcome moved (``(name, before, after)``)."""

    name: str
    before: str
    after: str
    moved: tuple[tuple[str, str, str], ...]


def _setting_step(md: str) -> float:
    """The largest ``eval_every`` in a result's setting tables (the evaluation grid of its
    rounds-to-target checks); 1 when none is listed."""
    steps = [float(x) for row in re.findall(r"^\| eval_every \| ([^|]+) \|$", md, re.M)
             for x in row.split(" / ") if x.strip().replace(".", "", 1).isdigit()]
    return max(steps, default=1.0)


def _ungated(c: Check) -> Check:
    """A check that a failed gate made inconclusive (:func:`~topofl.figures.gated`), as it
    would be without the gate: the outcome and reason its reason kept ("would be pass (...)"),
    inconclusive with the kept reason otherwise."""
    rest = c.reason.split("; ", 1)[1] if "; " in c.reason else ""
    m = re.fullmatch(r"would be (pass|fail|no effect) [(](.*)[)]", rest, re.S)
    outcome, reason = (m.group(1), m.group(2)) if m else ("inconclusive", rest)
    return Check(c.name, outcome, c.measured, c.rule, reason, c.headline, c.detail)


def _as_check(c: dict[str, Any]) -> Check:
    keys = {"name", "headline", "measured", "rule", "outcome", "reason"}
    return Check(str(c["name"]), str(c["outcome"]), str(c.get("measured", "")),
                 str(c.get("rule", "")), str(c.get("reason", "")), bool(c.get("headline")),
                 {k: v for k, v in c.items() if k not in keys} or None)


def _clean(d: dict[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in d.items()}


def redecide(name: str, results: str | os.PathLike[str] | None = None, *,
             write: bool = True, drop_horizon: str | None = None) -> Redecision:
    """Decide the committed result ``name`` again under the current rule (see the module).

    Parameters
    ----------
    name : str
        The result (``dcliques_09`` ...): ``<results>/<name>.json`` and ``.md``.
    results : path, optional
        The folder of results; default ``paper_figures/results`` of this clone.
    write : bool, default True
        Rewrite the JSON and Markdown (``False``: only say what would move).
    drop_horizon : str, optional
        A horizon (the start of its text) that no longer exempts a check from its convergence
        reading, e.g. a script that stopped reading its claim at the paper's rounds because
        its stand-in does less local work than the paper in those rounds; checks without a
        recorded convergence reading keep theirs.

    Returns
    -------
    Redecision

    Raises
    ------
    FigureError
        When the result is missing, or a check over seeds has nothing to decide it by.
    """
    folder = Path(results) if results is not None else _root() / "results"
    js, md_path = folder / f"{name}.json", folder / f"{name}.md"
    if not js.is_file() or not md_path.is_file():
        raise FigureError(f"no committed result {name!r} in {folder} (its .json and .md)")
    v = json.loads(js.read_text(encoding="utf-8"))
    md = md_path.read_text(encoding="utf-8")
    step = _setting_step(md)
    old = [_as_check(c) for c in v.get("checks", [])]
    new = [(rebuild(c, step, drop_horizon) or o) for c, o in zip(v.get("checks", []), old)]
    bars = gate_bars(name)  # the bars as declared now (a recorded gate keeps its values)
    gates = [rebar(gate_from_dict(g), bars) for g in v.get("gates", [])]
    by_name = {g.name: g for g in gates}
    for i, (c, n) in enumerate(zip(v.get("checks", []), new)):
        g = by_name.get(str(c.get("gate")))
        if g is None:
            continue
        if n.reason.startswith(_GATED):  # kept as it was: read under the gate as it is now
            n = _ungated(n)
        n = gated(n, g)
        new[i] = Check(n.name, n.outcome, n.measured, n.rule, n.reason, n.headline,
                       {**(n.detail or {}), "gate": g.name})
    new = [at_horizon(n, v.get("rounds")) for n in new]
    meta = _claim(name)
    new = replicate_all(new, meta.get("replication"))
    before, after = str(v.get("verdict")), verdict(new) if new else str(v.get("verdict"))
    moved = tuple((o.name, o.outcome, n.outcome) for o, n in zip(old, new)
                  if o.outcome != n.outcome)
    if write and new:
        v["verdict"], v["rule"] = after, RULE
        passed, total = secondary(new)
        v["secondary"] = {"passed": passed, "total": total}
        v["checks"] = [_clean(c.as_dict()) for c in new]
        if gates:  # as the declared bars read them now (their measured values unchanged)
            v["gates"] = [g.as_dict() for g in gates]
        margins = _margins(name, v.get("margins") or {})
        if margins:
            v["margins"] = margins
        js.write_text(json.dumps(v, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        second = [*meta.get("second_look", ()),
                  *pooled_look(meta.get("replication"), v.get("seeds") or [])]
        v.pop("second_look", None)
        v.pop("replication", None)
        if second:
            v["second_look"] = second
        if meta.get("replication"):
            rep = meta["replication"]
            v["replication"] = {"fresh": list(rep.fresh), "declared": rep.declared}
        js.write_text(json.dumps(v, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        md = mark_document(_markdown(md, new, margins, gates, second), v.get("stand_in") or {})
        md_path.write_text(md, encoding="utf-8")
        price.apply(js, md_path)
        facts.apply(js, md_path)  # its referee part quotes the checks' outcomes
    return Redecision(name, before, after, moved)


def _margins(name: str, used: dict[str, Any]) -> dict[str, Any]:
    """The margins the result used, their values kept and their reasons as ``claims.toml``
    states them now (``{}`` when the figure has no claim there)."""
    try:
        now = claim_of(name)["margins"]
    except FigureError:
        return {}
    return {k: {"value": m["value"], "reason": now.get(k, m)["reason"]}
            for k, m in used.items()}


def _claim(name: str) -> dict[str, Any]:
    """The claim's table of ``name`` as ``claims.toml`` states it now (``{}`` when none)."""
    try:
        return claim_of(name)
    except FigureError:
        return {}


def _markdown(md: str, checks: list[Check], margins: dict[str, Any] | None = None,
              gates: list[AnyGate] | None = None, second_look: list[str] | None = None) -> str:
    """``md`` with its verdict line, its table of checks, the rule's paragraph, the margins'
    reasons and the fidelity gates rewritten."""
    md = re.sub(r"^\*\*Verdict:\*\* .*$", lambda _: verdict_line(checks, second_look or ()), md,
                count=1,
                flags=re.M)
    start = md.index("## Checks\n")
    rule_at = md.index("The rule (", start)
    end = md.index("\n\n", rule_at)
    body = table(["check", "measured (mean ± std over seeds)", "claim", "outcome", "why"],
                 [c.row() for c in checks])
    md = md[:start] + "## Checks\n\n" + body + "\n\n" + rule_paragraph() + md[end:]
    head = "| margin | value | reason |\n"
    if margins and head in md:
        a = md.index(head)
        b = md.find("\n\n", a)
        b = len(md) if b < 0 else b
        rows = table(["margin", "value", "reason"],
                     [[k, f"{m['value']:g}", m["reason"]] for k, m in margins.items()])
        md = md[:a] + rows + md[b:]
    if gates:
        section = ("## Fidelity gate\n\n" + gate_paragraph(gates) + "\n\n"
                   + table(*gate_table(gates)) + "\n\n")
        if "## Fidelity gate\n" in md:
            a = md.index("## Fidelity gate\n")
            md = md[:a] + section + md[md.index("\n## ", a + 1) + 1:]
        else:
            a = md.index("## Setting\n")
            md = md[:a] + section + md[a:]
    return md


def apply_gates(name: str, gates: list[AnyGate],
                results: str | os.PathLike[str] | None = None, *,
                match: Callable[[dict[str, Any], AnyGate], bool] | None = None) -> Redecision:
    """Record ``gates`` in the committed result ``name`` and decide it again: every check
    whose name starts with a gate's name and a colon or a space (``"CIFAR-10 Dir-0.3: ..."``,
    the checks of that column), or that ``match(check, gate)`` accepts, is covered by that
    gate (:func:`~topofl.figures.gated`).

    What a script computes when it runs (its checks gated by the gates of its columns), for a
    result committed before gates were: its controls' seed means are read from the result's
    own tables by the caller (``analysis/standins_gates.py``).
    """
    folder = Path(results) if results is not None else _root() / "results"
    js = folder / f"{name}.json"
    if not js.is_file():
        raise FigureError(f"no committed result {name!r} in {folder}")
    v = json.loads(js.read_text(encoding="utf-8"))
    v["gates"] = [g.as_dict() for g in gates]
    def by_name(c: dict[str, Any], g: AnyGate) -> bool:
        return str(c.get("name", "")).startswith((f"{g.name}: ", f"{g.name} "))

    for c in v.get("checks", []):
        for g in gates:
            if (match or by_name)(c, g):
                c["gate"] = g.name
    js.write_text(json.dumps(v, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return redecide(name, folder)
