"""A figure's result: ``<name>.png``, ``<name>.md`` and the verdict ``<name>.json``.

A script returns a :class:`Result` (what it measured, its checks and numbers); :func:`script`
(the preamble every script shares) parses its command line, calls it and writes the result
with the paper's claim of ``paper_figures/claims.toml`` (:func:`write`). Every result records
its code fingerprint, seeds and data (the stand-in, when one ran) in its JSON and Markdown.
"""

from __future__ import annotations

import functools
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

from topofl._utils.environment import summary
from topofl._utils.fingerprint import code_fingerprint
from topofl._utils.markdown import Document
from topofl.figures import facts, price
from topofl.figures.checks import RULE, Check, at_horizon, headline_of, secondary, verdict
from topofl.figures.config import (
    MARGINS_USED,
    SCRIPT_ROOT,
    FigureError,
    claim_of,
    mark_document,
)
from topofl.figures.gate import AnyGate, Gate, OrdinalGate
from topofl.figures.measures import OverSeeds
from topofl.figures.panel import Panel
from topofl.figures.replication import (
    DID_NOT_REPLICATE,
    NOT_REPLICATED,
    Replication,
    pooled_look,
    replicate_all,
)
from topofl.figures.runs import FigureArgs, parse_args

__all__ = ["Claim", "Ran", "Result", "write", "script"]


# ------------------------------------------------------------------------------ results


def rule_paragraph() -> str:
    """The paragraph under a result's table of checks that states the rule it was decided by
    (:data:`~topofl.figures.checks.RULE`)."""
    return (f"The rule ({RULE}; `paper_figures/README.md`): each check compares the "
            "seed-paired one-sided 95 % bounds of its mean (Student t, n - 1 degrees of "
            "freedom, the seeds' spread taken as at least the metric's resolution) with the "
            "claim's edge: beyond the threshold by the practical margin for a claim of "
            "\"better\", not below it by more than the margin for one of \"at least as "
            "good\"; it passes when the bound on the claimed side clears the edge, fails when "
            "the bound on the other side falls short of the threshold (of the edge, for \"at "
            "least as good\"); a claim of \"better\" whose bounds both lie within ± the "
            "margin is no effect (a measured tie: more seeds narrow it, they do not make it a "
            "pass); it is inconclusive otherwise (too little evidence), "
            "with one seed, when the curves it compares had not flattened (unless the claim "
            "is read at this horizon, as its row says), or when the run stopped before the "
            "paper's rounds (before the paper's horizon). A headline pass or fail whose "
            "decisive bound lies within one standard error of its edge (a close call) stands "
            "only if 3 fresh seeds, declared before they run, agree (same side, and the "
            "pooled seeds decide it alike). The verdict is the headline's (a headline of "
            "several parts with a failed part does not hold; one whose parts are all ties is "
            "no practical effect at this scale, a tie beside an undecided part is "
            "inconclusive); the per-seed values are in the JSON.")


def gate_paragraph(gates: Sequence[AnyGate]) -> str:
    """The paragraph of a result's fidelity gates (:mod:`topofl.figures.gate`): each gate's
    line, and what a failed gate does to the checks it covers."""
    lines = "; ".join(g.describe() for g in gates)
    if gates and all(isinstance(g, OrdinalGate) for g in gates):
        return (f"The orders that the paper's text states among its controls (the graphs and "
                f"variants the figure compares the tested one against), checked on the "
                f"stand-in's seed means before the tested one (bars declared in "
                f"`claims.toml`, `[gates.ordinal]`; the sentence of each order in the table): "
                f"{lines}. A check comparing the tested one with the controls on a stand-in "
                "whose gate fails is inconclusive at this scale, whatever its numbers.")
    return (f"The stand-in's order of the paper's controls (every row but the tested method) "
            f"against the paper's table, decided before the tested method (bars declared in "
            f"`claims.toml`, `[gates]`): {lines}. A headline check on a stand-in whose gate "
            "fails is inconclusive at this scale, whatever its numbers.")


def gate_table(gates: Sequence[AnyGate]) -> tuple[list[str], list[list[str]]]:
    """The header and rows of the values behind each gate: the controls' values (paper,
    stand-in) of a :class:`~topofl.figures.Gate`, or each order of an
    :class:`~topofl.figures.gate.OrdinalGate` (its sentence, the stand-in's seed means, whether it
    holds). The gates of one result are of one kind."""
    kinds = {isinstance(g, OrdinalGate) for g in gates}
    if len(kinds) > 1:
        raise ValueError("a result's gates must be of one kind (Kendall or ordinal), got both")
    if kinds == {True}:
        rows = []
        for g in (g for g in gates if isinstance(g, OrdinalGate)):
            for i, o in enumerate(g.orders):
                a, b = (_mean_of(v) for v in g.values[i])
                rows.append([g.name, o.text(), f"\"{o.source}\"",
                             f"{a:.4f} vs {b:.4f} ({100 * g.difference(i):+.2f} points)",
                             "yes" if g.holds(i) else "**no**"])
        return (["gate", "order the paper states (metric)", "the paper's sentence",
                 "stand-in (seed means)", "holds"], rows)
    rows = [[g.name, c, f"{p:g}", f"{s:.4g}"] for g in gates if isinstance(g, Gate)
            for c, p, s in zip(g.controls, g.paper, g.standin)]
    return ["gate", "control (the paper's order)", "paper", "stand-in (seed mean)"], rows


def _mean_of(v: float | OverSeeds) -> float:
    return v.mean if isinstance(v, OverSeeds) else float(v)


def verdict_line(checks: Sequence[Check], second_look: Sequence[str] = ()) -> str:
    """The ``**Verdict:**`` paragraph of a result's Markdown: the verdict, how many parts of
    the headline pass, how many secondary checks do, the close calls and their replication
    (:mod:`topofl.figures.replication`), and any second look (seeds or rounds added after the
    results were seen).

    Examples
    --------
    >>> c = tf.figures.fact("a", True)
    >>> line = tf.figures.writing.verdict_line([c], ["rounds doubled after a first reading"])
    >>> line.split("; ")[-1]
    'second look: rounds doubled after a first reading)'
    """
    checks = list(checks)
    head = headline_of(checks)
    passed, total = secondary(checks)
    head_text = (f"the headline check ({head[0].name}) is {head[0].outcome}" if len(head) == 1
                 else f"{sum(c.outcome == 'pass' for c in head)} of the {len(head)} parts of "
                 "the headline pass (the paper's statement is their conjunction)")
    side_text = (f"; {passed} of {total} secondary checks pass" if total else
                 "; no secondary checks")
    close = [c for c in head if "close_call" in (c.detail or {})]
    for kind, start in (("replicated on fresh seeds", "replicated"),
                        (DID_NOT_REPLICATE, DID_NOT_REPLICATE),
                        ("not yet replicated", NOT_REPLICATED)):
        k = sum(c.reason.startswith(start) for c in close)
        if k:
            side_text += f"; {k} close call{'s' if k > 1 else ''} {kind}"
    if second_look:
        side_text += "; second look: " + "; ".join(second_look)
    return f"**Verdict:** {verdict(checks)} ({head_text}{side_text})"


def _cell(v: Any) -> str:
    """A cell of a result's numbers: 4 decimals for a number, the text otherwise."""
    return format(v, ".4f") if isinstance(v, (float, OverSeeds)) else str(v)


def _regenerate_paragraph(args: FigureArgs, seconds: float, devices: int = 1) -> str:
    """The last paragraph of a result's Markdown: the command that regenerates it and about
    how long it took (``seconds``; ``devices``: how many kinds of device its runs used)."""
    flag = "" if args.scale == "default" else f" --{args.scale}"
    where = ("on the machine that made it" if devices <= 1 else
             f"on the {devices} devices that made it (the device row above), added together")
    return (f"Regenerate: `python paper_figures/fig_{args.name}.py{flag}` (writes "
            f"`paper_figures/out/{args.scale}/`; `--update-results` rewrites the committed "
            f"copy). About {seconds:.0f} s of training and plotting {where}, shared with "
            "other jobs: the runs' recorded wall time plus the rest.")


def _checks_and_gates(
    doc: Document,
    checks: Sequence[Check],
    margins: Mapping[str, Mapping[str, Any]] | None,
    gates: Sequence[AnyGate],
) -> None:
    """Append a result's ``Checks`` section (the checks, the rule, the margins) and, with
    ``gates``, its ``Fidelity gate`` section to ``doc``."""
    doc.heading("Checks", 2).table(["check", "measured (mean ± std over seeds)", "claim",
                                    "outcome", "why"], [c.row() for c in checks])
    doc.paragraph(rule_paragraph())
    if margins:
        doc.table(["margin", "value", "reason"],
                  [[k, f"{m['value']:g}", m["reason"]] for k, m in margins.items()])
    if gates:
        doc.heading("Fidelity gate", 2).paragraph(gate_paragraph(gates))
        doc.table(*gate_table(gates))


def _verdict_fields(checks: Sequence[Check]) -> dict[str, Any]:
    """The verdict's fields of a result's JSON: the verdict, the rule, the headline's checks,
    the count of secondary checks that pass, every check."""
    passed, total = secondary(checks)
    return {"verdict": verdict(checks), "rule": RULE,
            "headline": [c.name for c in headline_of(checks)],
            "secondary": {"passed": passed, "total": total},
            "checks": [c.as_dict() for c in checks]}


def _save_figure(args: FigureArgs, fig: Any) -> tuple[Path, Path, Path]:
    """Create ``args.out``, save ``fig`` as ``<name>.png`` there (or, for a table result,
    remove a stale one); the paths of the PNG, the Markdown and the JSON."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    png, md, js = (out / f"{args.name}{ext}" for ext in (".png", ".md", ".json"))
    if fig is not None:
        fig.savefig(png, dpi=100, bbox_inches="tight")
    elif png.exists():  # a stale picture from an older version of the script
        png.unlink()
    return png, md, js


def _setting_and_numbers(
    doc: Document,
    setting: Sequence[tuple[str, str]] | Mapping[str, Sequence[tuple[str, str]]],
    numbers: Any,
) -> None:
    """Append a result's ``Setting`` and ``Numbers`` sections (one sub-heading a panel when
    ``setting`` or ``numbers`` is a mapping) to ``doc``."""
    doc.heading("Setting", 2)
    panels_ = setting if isinstance(setting, Mapping) else {"": setting}
    for panel, pairs in panels_.items():
        if panel:
            doc.heading(panel, 3)
        doc.table(["setting", "value"], [[k, v] for k, v in pairs])
    doc.heading("Numbers", 2)
    tables = numbers if isinstance(numbers, Mapping) else {"": numbers}
    for t, df in tables.items():
        if t:
            doc.heading(t, 3)
        doc.table(df, cell=_cell)


@dataclass(frozen=True)
class Claim:
    """The paper's claim a result tests, as ``paper_figures/claims.toml`` states it
    (:func:`~topofl.figures.claim_of`): the result's ``title``, the claim's ``text`` with its
    numbers, the practical ``margins`` that apply (kind -> ``{"value", "reason"}``), what a
    ``second_look`` added after the results were seen, and the ``replication`` of its close
    calls (:mod:`topofl.figures.replication`).

    Examples
    --------
    >>> c = tf.figures.writing.Claim("Toy", "A beats B")
    >>> c.title, c.text, dict(c.margins)
    ('Toy', 'A beats B', {})
    """

    title: str
    text: str
    margins: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    second_look: tuple[str, ...] = ()
    replication: Replication | None = None


@dataclass(frozen=True)
class Ran:
    """What a result's runs were and recorded: its ``Provenance`` table and the matching
    fields of its JSON (see :func:`write`).

    ``dataset`` is the data actually used; ``seeds`` every curve's seeds (empty: no training);
    ``stand_in`` maps a paper dataset to the offline stand-in that ran in its place;
    ``optimizer_state`` the runs' ``momentum_state`` values; ``threads``, ``cpus`` and
    ``environments`` the torch thread counts, CPU kinds and numeric environments their
    provenance recorded (``torch_threads``, ``cpu``, ``environment``; empty: no training, or
    runs from before they were recorded); ``rounds`` ``{"run": [...], "paper": [...]}``;
    ``devices`` the number of runs that computed on each device (their configs' ``device``):
    the table and the JSON name them where a run computed on another device than the CPU,
    with ``accelerators``, the GPUs those runs' provenance names (``accelerator``).
    """

    dataset: str | None = None
    seeds: Sequence[int] = ()
    stand_in: Mapping[str, str] = field(default_factory=dict)
    optimizer_state: Sequence[str] = ()
    threads: Sequence[int] = ()
    cpus: Sequence[str] = ()
    environments: Sequence[Mapping[str, Any]] = ()
    rounds: Mapping[str, Any] = field(default_factory=dict)
    devices: Mapping[str, int] = field(default_factory=dict)
    accelerators: Sequence[str] = ()

    def seed_text(self) -> str:
        """``"3 seeds (0, 1, 2)"``, or ``"no training"``."""
        n = len(self.seeds)
        return (f"{n} seed{'s' if n > 1 else ''} ({', '.join(map(str, self.seeds))})"
                if n else "no training")

    def fields(self) -> dict[str, Any]:
        """The result JSON's fields of these runs."""
        out = {"seeds": list(self.seeds), "dataset": self.dataset,
               "stand_in": dict(self.stand_in), "optimizer_state": list(self.optimizer_state),
               "threads": sorted(set(int(t) for t in self.threads)),
               "cpu": sorted(set(self.cpus)), "environment": _distinct(self.environments),
               "rounds": dict(self.rounds)}
        if set(self.devices) - {"cpu"}:
            out["devices"] = dict(sorted(self.devices.items()))
            out["accelerators"] = sorted(set(self.accelerators))
        return out


def _provenance_rows(args: FigureArgs, code: str, ran: Ran) -> list[list[str]]:
    """The rows of a result's ``Provenance`` table (``code``: this code's fingerprint)."""
    by = sorted(args.run_codes - {code})  # runs of certified-equivalent code, reused
    code_text = f"`{code}` (`topofl.figures.code_fingerprint`)" + (
        "; runs reused from " + ", ".join(f"`{c}`" for c in by)
        + ", certified equivalent (paper_figures/results/equivalence.json)" if by else "")
    data_text = ran.dataset or "-"
    if ran.stand_in:
        data_text += " (offline stand-in for " + ", ".join(ran.stand_in) + ")"
    threads, cpus, environments = ran.threads, ran.cpus, ran.environments
    thread_text = (" / ".join(map(str, sorted(set(threads)))) + " torch thread(s) per run "
                   "(float32 numbers are reproducible to the bit at this count in the same "
                   "numeric environment)" if threads else "-")
    cpu_text = (" / ".join(sorted(set(cpus))) + " (on another CPU kind: the same counts and "
                "verdicts, float32 values that differ in the last bits)" if cpus else
                "-" if not threads else "not recorded (runs from before CPU kinds were)")
    env_text = ("; ".join(dict.fromkeys(summary(e) for e in environments))
                + " (numbers are bitwise where every field of "
                "`topofl.workflow.provenance.BIT_FIELDS` and the thread count match; elsewhere "
                "within rounding)" if environments else
                "-" if not threads else "not recorded (runs from before environments were)")
    rounds = ran.rounds
    rounds_text = ("-" if not rounds.get("run") else
                   " / ".join(map(str, rounds["run"])) + " (the paper: "
                   + (" / ".join(map(str, rounds.get("paper") or [])) or "-") + ")")
    rows = [["data", data_text], ["seeds", ran.seed_text()], ["rounds", rounds_text],
            ["optimizer state (momentum_state)", " / ".join(ran.optimizer_state) or "-"],
            ["threads", thread_text], ["CPU kind", cpu_text],
            ["numeric environment", env_text],
            ["scale", args.scale], ["code", code_text]]
    if set(ran.devices) - {"cpu"}:  # where a run computed on a GPU (a sweep reuses it on the
        rows.insert(5, ["device", " / ".join(  # CPU): which device, how many runs
            f"{d} ({n} run{'s' if n > 1 else ''})" for d, n in sorted(ran.devices.items()))
            + "; GPU: " + ("; ".join(sorted(set(ran.accelerators))) if ran.accelerators else
                           "not recorded (runs from before their provenance named it)")
            + " (each run's device is its config's `device`; a run's numbers are bitwise "
            "only on its own device and numeric environment)"])
    return rows


def write(
    args: FigureArgs,
    fig: Any,
    *,
    claim: Claim,
    setting: Sequence[tuple[str, str]] | Mapping[str, Sequence[tuple[str, str]]],
    numbers: Any,
    measured: str,
    checks: Sequence[Check],
    notes: Sequence[str] = (),
    ran: Ran = Ran(),
    gates: Sequence[AnyGate] = (),
) -> Path:
    """Write ``<name>.png``, ``<name>.md`` and the verdict ``<name>.json`` into ``args.out``.

    Parameters
    ----------
    fig : matplotlib Figure or None
        The figure; ``None`` for a table result (a paper's table): then only the Markdown and
        the verdict are written.
    claim : Claim
        The paper's claim (the result's title, the claim with its numbers, the practical
        margins that apply, from ``claims.toml``).
    setting : list of (key, value), or mapping of panel to such a list
        What ran (see :func:`~topofl.figures.panel.setting`).
    numbers : DataFrame or mapping of title to DataFrame
        The numbers behind each curve (see :func:`~topofl.figures.panel.curve_table`).
    measured : str
        One line: what this run measured.
    checks : sequence of Check
        The parts of the claim and their outcomes; the verdict is :func:`verdict` of them.
    notes : sequence of str
        The likely reasons where it does not hold, and anything else a reader must know.
    ran : Ran
        What the runs were and recorded (data, seeds, stand-ins, optimizer state, threads,
        CPU kinds, numeric environments, rounds).
    gates : sequence of gates
        The stand-in's gates (their outcome and values go into the verdict).

    Returns
    -------
    Path
        The PNG, or the Markdown for a table result (a script prints it as its last line of
        output).

    Examples
    --------
    >>> import tempfile, pathlib, json
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> args = tf.figures.FigureArgs("toy", "quick", d, d / "runs")
    >>> gain = tf.figures.OverSeeds((0.02, 0.03, 0.04), (0, 1, 2))
    >>> check = tf.figures.above("A - B above 0", gain, horizon="a toy", headline=True)
    >>> w = tf.figures.writing
    >>> md = w.write(args, None, claim=w.Claim("Toy", "A beats B"), setting=[("lr", "0.1")],
    ...              numbers={}, measured=f"gain {gain:.3f}", checks=[check],
    ...              ran=w.Ran(seeds=[0, 1, 2]))
    >>> v = json.loads((d / "toy.json").read_text())
    >>> md.name, v["verdict"], v["checks"][0]["values"], v["headline"]
    ('toy.md', 'holds', [0.02, 0.03, 0.04], ['A - B above 0'])
    >>> "| **headline:** A - B above 0 | 0.030 ± 0.010 | > 0.000 | pass |" in md.read_text()
    True
    """
    checks = [at_horizon(c, ran.rounds) for c in checks]  # read at the paper's horizon
    checks = replicate_all(checks, claim.replication)  # a close call stands if fresh seeds agree
    looks = [*claim.second_look, *pooled_look(claim.replication, ran.seeds)]
    png, md, js = _save_figure(args, fig)
    code = code_fingerprint()
    # time to regenerate from scratch: the runs' own training time (also when they were
    # reused from the cache) plus everything outside the sweeps (setup, plotting)
    seconds = time.perf_counter() - args.started - args.sweep_seconds + args.run_seconds
    doc = (Document().heading(claim.title).paragraph(f"**Paper:** {claim.text}")
           .paragraph(f"**Measured** ({args.scale} scale, {ran.seed_text()}): {measured}")
           .paragraph(verdict_line(checks, looks)))
    if fig is not None:
        doc.image(f"{args.name}.png", args.name)
    _checks_and_gates(doc, checks, claim.margins, gates)
    _setting_and_numbers(doc, setting, numbers)
    if notes:
        doc.heading("Notes", 2).bullets(notes)
    doc.heading("Provenance", 2).table(["", ""], _provenance_rows(args, code, ran))
    doc.paragraph(_regenerate_paragraph(args, seconds, len(ran.devices)))
    md.write_text(mark_document(doc.text(), dict(ran.stand_in)), encoding="utf-8")
    record = {"name": args.name, "title": claim.title, "claim": claim.text,
              "measured": measured, **_verdict_fields(checks),
              **({"second_look": looks} if looks else {}),
              **({"replication": {"fresh": list(claim.replication.fresh),
                                  "declared": claim.replication.declared}}
                 if claim.replication else {}),
              "margins": {k: dict(m) for k, m in claim.margins.items()},
              **ran.fields(), "code": code,
              **({"gates": [g.as_dict() for g in gates]} if gates else {}),
              "run_codes": sorted(args.run_codes),
              "seconds": round(seconds, 1), "scale": args.scale}
    js.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    price.apply(js, md)  # what would decide an undecided headline, and its cost
    facts.apply(js, md)  # the data that ran, the model's size, the labels on the clients
    return png if fig is not None else md


def _distinct(environments: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each environment once (in their order)."""
    seen: dict[str, dict[str, Any]] = {}
    for e in environments:
        seen.setdefault(json.dumps(e, sort_keys=True, default=str), dict(e))
    return list(seen.values())


# ------------------------------------------------------------------------------ scripts


@dataclass
class Result:
    """What a figure script measured, for :func:`script` to write (see :func:`write`).

    ``panels`` (the script's :func:`~topofl.figures.panels`) supply the setting, the notes, the
    seeds, the dataset, the stand-ins, the rounds and the thread counts unless given (the
    paper's rounds from their configs' base ``rounds``; ``paper_rounds`` overrides);
    ``notes`` are added after the panels' notes and the claim's own
    (``paper_figures/claims.toml``). ``records`` are the records of runs a script made
    itself, without panels (each run's records file): their configs and provenance give the
    result's rounds, optimizer-state policy, thread counts, CPU kinds and numeric
    environments as the panels' runs do. A script that trains by its own recursions, with
    neither, states its ``rounds`` run, its ``optimizer_state`` policy and the
    ``provenance`` (:func:`topofl.workflow.provenance.provenance`, taken while they ran: the
    thread count, CPU kind and numeric environment) itself.
    """

    fig: Any
    measured: str
    checks: Sequence[Check]
    numbers: Any
    panels: Mapping[str, Panel] | None = None
    setting: Any = None
    notes: Sequence[str] = ()
    dataset: str | None = None
    seeds: Sequence[int] | None = None
    paper_rounds: Sequence[int] | None = None
    gates: Sequence[AnyGate] = ()
    records: Sequence[Any] = ()
    rounds: Sequence[int] = ()
    optimizer_state: Sequence[str] = ()
    provenance: Sequence[Mapping[str, Any]] = ()


def _finish(args: FigureArgs, result: Result) -> Path:
    meta = claim_of(args.name)
    found = dict(result.panels or {})
    notes = list(dict.fromkeys([n for p in found.values() for n in p.notes]
                               + meta["notes"] + list(result.notes)))
    setting_ = result.setting
    if setting_ is None:
        setting_ = ({t: p.setting for t, p in found.items()} if len(found) > 1
                    else next(iter(found.values())).setting if found else [])
    seeds = (list(result.seeds) if result.seeds is not None
             else list(dict.fromkeys(s for p in found.values() for s in p.seeds)))
    dataset = result.dataset or " / ".join(dict.fromkeys(p.data for p in found.values())) or None
    stand = {k: v for p in found.values() for k, v in p.stand_in.items()}
    ran_records = [r for p in found.values() for r in p.runs.values()] + list(result.records)
    configs = [c for rec in ran_records for c in rec.configs.values()]
    policy = list(dict.fromkeys([str(c.get("momentum_state", "algorithm")) for c in configs]
                                + list(result.optimizer_state)))
    notes += _policy_notes(configs, policy)
    provs = ([prov for rec in ran_records for prov in rec.provenances.values()]
             + list(result.provenance))
    threads = sorted({int(t) for prov in provs if isinstance(t := prov.get("torch_threads"), int)})
    cpus = sorted({c for prov in provs if isinstance(c := prov.get("cpu"), str)})
    envs = [e for prov in provs if isinstance(e := prov.get("environment"), dict)]
    ran = sorted({int(c["rounds"]) for c in configs if isinstance(c.get("rounds"), int)}
                 | {int(r) for r in result.rounds})
    paper = sorted({int(r) for r in (result.paper_rounds if result.paper_rounds is not None
                                     else [r for p in found.values() for r in p.paper_rounds])})
    gpus = sorted({f"{a.get('name')} (compute capability {a.get('capability')}, CUDA "
                   f"{a.get('cuda')}, cuDNN {a.get('cudnn')}, TF32 "
                   f"{'on' if a.get('tf32_matmul') or a.get('tf32_cudnn') else 'off'})"
                   for prov in provs if isinstance(a := prov.get("accelerator"), dict)})
    devices = Counter(str(c.get("device") or "cpu") for c in configs)
    runs = Ran(dataset=dataset, seeds=seeds, stand_in=stand, optimizer_state=policy,
               threads=threads, cpus=cpus, environments=_distinct(envs),
               rounds={"run": ran, "paper": paper}, devices=dict(devices),
               accelerators=gpus)
    claim = Claim(meta["title"], meta["claim"],
                  {k: m for k, m in meta["margins"].items()
                   if k in MARGINS_USED.get(args.name, set())},
                  tuple(meta.get("second_look", ())), meta.get("replication"))
    return write(args, result.fig, claim=claim, setting=setting_, numbers=result.numbers,
                 measured=result.measured, checks=result.checks, notes=notes, ran=runs,
                 gates=result.gates)


def _policy_notes(configs: Sequence[Mapping[str, Any]], policy: Sequence[str]) -> list[str]:
    """What a reader must know about the optimizer-state policy of a comparison."""
    if len(policy) > 1:
        return [f"The curves ran under different optimizer-state policies (momentum_state "
                f"{' / '.join(policy)}): a method may win or lose by its policy; set one "
                "momentum_state in every config of the comparison."]
    algos = {str(c.get("algorithm")) for c in configs}
    moving = any(float(c.get("momentum", 0) or 0) > 0 for c in configs)
    if policy == ["algorithm"] and len(algos) > 1 and moving:
        return ["momentum_state = \"algorithm\": each method keeps or restarts its momentum "
                "between rounds as its implementation does (topofl.engine.RunConfig), so the "
                "methods compared here may run under different optimizer-state policies; "
                "\"keep\" or \"restart\" in every config puts them under one."]
    return []


def script(build: Callable[[FigureArgs], Result]) -> Callable[[Sequence[str] | None], int]:
    """The entry point of a figure script: ``main = figures.script(build)``.

    ``main(argv)`` parses the command line (:func:`parse_args`; the name is the script's file
    name without ``fig_``, the description its docstring), selects matplotlib's Agg backend,
    calls ``build(args)`` and writes its :class:`Result` with the claim of
    ``paper_figures/claims.toml`` (:func:`write`); it prints the path written and returns 0,
    or prints the error of a :class:`FigureError` and returns 1; interrupted (Ctrl-C, or a
    sweep's SIGINT or SIGTERM, after the sweep printed how to resume) it returns 128 + the
    signal's number, without a traceback.

    Examples
    --------
    >>> def build(args):
    ...     return tf.figures.Result(None, "m", [tf.figures.fact("c", True)], numbers={})
    >>> main = tf.figures.script(build)
    >>> callable(main)
    True
    """
    module = getattr(build, "__globals__", {})
    file = Path(str(module.get("__file__", "fig_figure.py")))
    name = file.stem.removeprefix("fig_")
    doc = module.get("__doc__")
    # a script beside its configs reads them (a copy of the repository reads its own)
    beside = file.resolve().parent if (file.parent / "configs").is_dir() else None

    @functools.wraps(build)
    def main(argv: Sequence[str] | None = None) -> int:
        token = SCRIPT_ROOT.set(beside) if beside is not None else None
        try:
            args = parse_args(doc, name, argv)
            matplotlib.use("Agg")
            try:
                path = _finish(args, build(args))
            except FigureError as exc:
                print(f"fig_{name}.py: error: {exc}", file=sys.stderr)
                return 1
            except KeyboardInterrupt as exc:  # Ctrl-C, or a sweep's SIGINT / SIGTERM: the
                # sweep has said what finished and how to resume; no traceback, and the
                # status a shell gives a process stopped by that signal (130, 143)
                return 128 + int(getattr(exc, "signum", 2))
            print(path)
            return 0
        finally:
            if token is not None:
                SCRIPT_ROOT.reset(token)

    return main
