"""Fidelity gates of the committed results that compare a tested method with the paper's rows.

Every such result's script computes its gate when it runs and records it in the result's JSON
(``gates``). This script reads those recorded gates, recomputes each one it can from the
result's committed tables (the stand-in's seed means of the paper's *controls*, every row but
the method tested, at the tables' digits) and the script's transcription of the paper's table
(``topofl.figures.fidelity_gate``, bars declared in ``paper_figures/claims.toml`` ``[gates]``),
stops naming the result where the two disagree (pass against fail, or Kendall's tau apart by
more than the tables' rounding can move it), and writes ``analysis/standins_gates.md``. It
never rewrites a result: a gate is what its script recorded with its per-seed values.

    python analysis/standins_gates.py            # check, then write analysis/standins_gates.md
    python analysis/standins_gates.py --dry-run  # check and print the gates only

Results gated: DFedPGP Tables 1-3 and Fig. 2, DPFL Table 1 and Figs. 5-7, PFedDST Table I
and Fig. 3 (Kendall gates; DFedPGP Table 2 and PFedDST Fig. 3 as recorded: their tables do not
hold every value their gates read), and D-Cliques Figs. 1, 8, 10, 11 and 13-16 (ordinal gates:
the orders the paper's text states among each figure's controls,
``paper_figures/_dcliques_gates.py``, recorded with their per-seed values by the scripts, each
recomputed from the tables too, and the two must agree). Not gated: the other results; see the
Markdown.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from topofl import figures

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "paper_figures" / "results"
sys.path.insert(0, str(ROOT / "paper_figures"))

import _dcliques_gates  # noqa: E402  (beside the scripts)
import _dfedpgp  # noqa: E402
import _dpfl_variance  # noqa: E402
import fig_dfedpgp_table3  # noqa: E402
import fig_dpfl_table1  # noqa: E402


def tables(name: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every Markdown table of a committed result's ``## Numbers`` section: (header, rows)."""
    text = (RESULTS / f"{name}.md").read_text(encoding="utf-8")
    numbers = text.split("## Numbers", 1)[1].split("\n## ", 1)[0]
    out = []
    for block in re.findall(r"((?:^\|.*\|\n)+)", numbers, flags=re.M):
        lines = [ln.strip().strip("|").split(" | ") for ln in block.strip().splitlines()]
        out.append(([c.strip() for c in lines[0]], [[c.strip() for c in r] for r in lines[2:]]))
    return out


def mean(cell: str) -> float:
    """The mean of a ``"65.74 ± 1.17"`` cell."""
    return float(cell.split("±")[0])


def dfedpgp_table1() -> list[figures.Gate]:
    head, rows = tables("dfedpgp_table1")[0]  # measured (%, mean ± std over seeds)
    gates = []
    for j, split in enumerate(head[1:], start=1):
        acc = {(r[0], split): mean(r[j]) / 100 for r in rows}  # fractions, as the script's
        gates.append(_dfedpgp.gate(acc, split))
    return gates


def dfedpgp_fig2() -> list[figures.Gate]:
    text = (RESULTS / "dfedpgp_fig2.md").read_text(encoding="utf-8")
    splits = re.findall(r"^### (.+)$", text.split("## Numbers", 1)[1], flags=re.M)
    gates = []
    for split, (head, rows) in zip(splits, tables("dfedpgp_fig2")):
        j = head.index("final test_acc")
        acc = {(r[0], split): mean(r[j]) / 100 for r in rows}  # fractions, as the script's
        methods = [r[0] for r in rows]
        gates.append(_dfedpgp.gate(acc, split, among=methods,
                                   result="dfedpgp_fig2"))
    return gates


def dfedpgp_table3() -> list[figures.Gate]:
    head, rows = tables("dfedpgp_table3")[0]
    gates = []
    for r in rows:
        acc = {(m, r[0]): mean(v) / 100 for m, v in zip(head[1:], r[1:])}
        gates.append(_dfedpgp.gate(acc, r[0],
                                   paper=fig_dfedpgp_table3.PAPER[r[0]],
                                   result="dfedpgp_table3"))
    return gates


def dpfl_table1() -> list[figures.Gate]:
    head, rows = tables("dpfl_table1")[0]
    bars = figures.gate_bars("dpfl_table1")
    gates = []
    for k, t in fig_dpfl_table1.SPLITS.items():
        col = f"CIFAR-10 {t} acc (%)"
        if col not in head:
            continue
        j = head.index(col)
        base = {r[0]: mean(r[j]) for r in rows if not r[0].startswith("DPFL")}
        i = list(fig_dpfl_table1.SPLITS).index(k)
        gates.append(figures.fidelity_gate(
            f"CIFAR-10 {t}", {m: fig_dpfl_table1.PAPER[m][i] for m in base}, base,
            tau_min=bars["tau"], top_share=bars["top_share"]))
    return gates


def dpfl_panels(name: str) -> list[figures.Gate]:
    """DPFL Figs. 5-7: each panel's baselines against the paper's Table 1 column it names."""
    text = (RESULTS / f"{name}.md").read_text(encoding="utf-8")
    titles = re.findall(r"^### (.+)$", text.split("## Numbers", 1)[1], flags=re.M)
    gates = []
    for title, (head, rows) in zip(titles, tables(name)):
        j = head.index("accuracy (%)")
        g = _dpfl_variance.gate(title.split(" (paper")[0], name,
                                {r[0]: mean(r[j]) for r in rows})
        gates += [g] if g is not None else []
    return gates


def pfeddst_table1() -> list[figures.Gate]:
    """PFedDST Table I: the rounds to the target of the controls (every method but PFedDST;
    "-", never, counts as infinitely many), fewer is better; CIFAR-10 only (CIFAR-100's
    stand-in fails its calibration and is untestable already)."""
    head, rows = tables("pfeddst_table1")[0]
    col = next(h for h in head if re.fullmatch(r"CIFAR-10 \(target [0-9.]+%\): measured", h))
    here, paper = head.index(col), head.index(col.replace(": measured", ": paper"))

    def rounds(cell: str) -> float:  # "-" never; "100 (1/5 seeds)": not every seed: never
        return float(cell) if cell.strip().isdigit() else float("inf")

    bars = figures.gate_bars("pfeddst_table1")
    controls = [r for r in rows if r[0] != "PFedDST"]
    return [figures.fidelity_gate("CIFAR-10", {r[0]: rounds(r[paper]) for r in controls},
                                  {r[0]: rounds(r[here]) for r in controls},
                                  tau_min=bars["tau"], top_share=bars["top_share"],
                                  higher_is_better=False)]


GATED: dict[str, Callable[[], list[figures.Gate]] | None] = {
         "dfedpgp_table1": dfedpgp_table1, "dfedpgp_fig2": dfedpgp_fig2,
         "dfedpgp_table3": dfedpgp_table3, "dfedpgp_table2": None,
         "dpfl_table1": dpfl_table1, "dpfl_fig5": lambda: dpfl_panels("dpfl_fig5"),
         "dpfl_fig6": lambda: dpfl_panels("dpfl_fig6"),
         "dpfl_fig7": lambda: dpfl_panels("dpfl_fig7"), "pfeddst_table1": pfeddst_table1,
         "pfeddst_fig3": None}
"""Result -> how its gates are recomputed from its committed tables (``None``: not from them:
DFedPGP Table 2 reads its controls' rounds to a target, which its table shows only where a
seed reached it; PFedDST Fig. 3 runs Table I's controls, its gate recorded as Table I's)."""


def recorded(name: str) -> list[figures.Gate]:
    """The Kendall gates ``name``'s script recorded in its committed JSON."""
    v = json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))
    return [g for g in (figures.gate.gate_from_dict(d) for d in v.get("gates", [])
                        if d.get("kind") != "ordinal") if isinstance(g, figures.Gate)]


def checked(name: str) -> list[figures.Gate]:
    """``name``'s recorded gates, each compared with the one its tables give: the same
    verdict, and Kendall's tau within what rounding the tables' means can move (one pair's
    order of the k controls: 2 / (k (k - 1)) for tau-b without ties, taken twice)."""
    got = recorded(name)
    if not got:
        raise SystemExit(f"{name}: its JSON records no gate (run its script)")
    build = GATED[name]
    if build is None:
        return got
    calc = {g.name: g for g in build()}
    for g in got:
        c = calc.get(g.name)
        if c is None:
            raise SystemExit(f"{name}: its recorded gate {g.name!r} has no column in its tables "
                             f"(there: {sorted(calc)})")
        k = len(g.controls)
        slack = 4.0 / (k * (k - 1))
        if c.passed != g.passed or abs(c.tau - g.tau) > slack + 1e-9:
            raise SystemExit(f"{name}: the gate its script recorded ({g.describe()}) differs "
                             f"from the one of its tables ({c.describe()})")
    return got


# ---------------------------------------------------------------------------- D-Cliques

#: The commit whose results the D-Cliques gates were first applied to (the verdicts before).
BEFORE = "36b260b"

#: D-Cliques result -> (the committed result whose tables hold its controls, the section of
#: those tables (its title's start; None: every section), whether the curves are named
#: "<section>: <curve>" as the script names them).
DCL_TABLES: dict[str, tuple[str, str | None, bool]] = {
    "dcliques_01": ("dcliques_01", "IID", False),  # its own IID panel (issue 56)
    "dcliques_08": ("dcliques_01", "label skew", False),  # Fig. 1's runs (Fig. 8's text)
    "dcliques_10": ("dcliques_10", None, True),
    "dcliques_11": ("dcliques_11", "CIFAR-10", False),
    "dcliques_13": ("dcliques_13", None, False),
    "dcliques_14": ("dcliques_14", None, False),
    "dcliques_15": ("dcliques_15", None, True),
    "dcliques_16": ("dcliques_16", None, True),
}


def table_values(name: str) -> dict[tuple[str, str], float]:
    """The seed means of the curves that the ordinal gates of ``name`` read, from the
    committed tables (:data:`DCL_TABLES`)."""
    source, section, prefixed = DCL_TABLES[name]
    text = (RESULTS / f"{source}.md").read_text(encoding="utf-8")
    titles = re.findall(r"^### (.+)$", text.split("## Numbers", 1)[1], flags=re.M)
    out: dict[tuple[str, str], float] = {}
    for title, (head, rows) in zip(titles, tables(source)):
        if section is not None and not title.startswith(section):
            continue
        out.update(_dcliques_gates.from_table([dict(zip(head, r)) for r in rows],
                                              f"{title}: " if prefixed else ""))
    return out


def dcliques(name: str) -> list[figures.gate.AnyGate]:
    """The ordinal gates of a D-Cliques result: those its script recorded (decided again from
    their per-seed values), else built from the seed means of its committed tables; either
    way each order's outcome must equal the tables' (seed means at 4 decimals)."""
    v = json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))
    recorded = [figures.gate.gate_from_dict(g) for g in v.get("gates", [])
                if g.get("kind") == "ordinal"]
    from_tables = [_dcliques_gates.gate(name, g, table_values(name))
                   for g in _dcliques_gates.ORDERS[name]]
    for a, b in zip(recorded, from_tables):
        if not isinstance(a, figures.gate.OrdinalGate) or a.orders != b.orders or \
                [a.holds(i) for i in range(len(a.orders))] != \
                [b.holds(i) for i in range(len(b.orders))]:
            raise SystemExit(f"{name}: the gate its script recorded ({a.describe()}) differs "
                             f"from the one of its tables ({b.describe()})")
    return list(recorded or from_tables)


def verdict_at(name: str, commit: str) -> str:
    """The verdict of the committed result ``name`` at ``commit`` ("-" when git cannot say)."""
    try:
        got = subprocess.run(["git", "-C", str(ROOT), "show",
                              f"{commit}:paper_figures/results/{name}.json"],
                             capture_output=True, text=True, check=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return "-"
    return str(json.loads(got.stdout).get("verdict", "-"))


def dcliques_section(moved: dict[str, str]) -> list[str]:
    """The Markdown of the D-Cliques gates: a summary row per gate, each gate's orders with
    their sentences, and why the other D-Cliques results are not gated."""
    bars = figures.gate.ordinal_bars()
    lines = ["", "## D-Cliques: ordinal gates", "",
             "The D-Cliques paper gives curves, not numbers: a figure's gate is the orders its "
             "text states among the figure's controls (the graphs and variants it compares the "
             "tested one against), each with the sentence it comes from "
             "(`paper_figures/_dcliques_gates.py`), checked on the stand-in's seed means (3 "
             "seeds; the per-seed values its script recorded, or the committed table's seed "
             "means for a result committed before its script computed its gate: "
             "dcliques_13, dcliques_14). Bars (`claims.toml` `[gates.ordinal]`, declared "
             "before any D-Cliques gate was computed): an order holds when the seed means are "
             f"in that order; 'far' when by more than {100 * bars['far']:g} point; 'close' "
             f"when within {100 * bars['close']:g} points; 'at least' when not below by more "
             f"than {100 * bars['far']:g} point; the gate passes when every order holds. A "
             "check comparing the tested one with a control, on a stand-in whose gate fails, "
             "reads inconclusive at this scale. Verdicts before: the results of "
             f"`{BEFORE}`, before these gates (and the spread checks' reading of the spread "
             "curves).",
             "",
             "| result | gate | orders that hold | gate | verdict before -> now |",
             "|---|---|---|---|---|"]
    detail = []
    for name in _dcliques_gates.ORDERS:
        for g in dcliques(name):
            assert isinstance(g, figures.gate.OrdinalGate)  # built as one
            k = len(g.orders)
            lines.append(f"| {name} | {g.name} | {k - len(g.failed)} of {k} | "
                         f"{'passes' if g.passed else 'fails'} | {moved.get(name, '-')} |")
            detail += ["", f"### {name}: {g.name}", "",
                       "| order the paper states (metric) | the paper's sentence | stand-in "
                       "(seed means) | holds |", "|---|---|---|---|"]
            for i, o in enumerate(g.orders):
                a, b = (x.mean if isinstance(x, figures.OverSeeds) else float(x)
                        for x in g.values[i])
                detail.append(f"| {o.text()} | \"{o.source}\" | {a:.4f} vs {b:.4f} "
                              f"({100 * g.difference(i):+.2f} points) | "
                              f"{'yes' if g.holds(i) else '**no**'} |")
    lines += detail + ["", "### D-Cliques results not gated", ""]
    lines += [f"- {k}: {v}" for k, v in _dcliques_gates.NOT_GATED.items()]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="print the gates only")
    args = parser.parse_args(argv)
    bars = figures.gate_bars()
    lines = ["# Fidelity gates of the committed results",
             "",
             "Generated by `python analysis/standins_gates.py` (`topofl.figures.gate`). The "
             "controls of a result are the paper's rows other than the method it tests; their "
             "stand-in values are the seed means of the result's committed table (3 seeds, "
             "rounded to its table's digits), the paper's values its script's transcription. "
             f"Bars (`paper_figures/claims.toml` `[gates]`, declared before any gate was "
             f"computed): Kendall's tau-b >= {bars['tau']:g}, its exact one-sided "
             f"permutation p <= {bars['p_max']:g} (declared with the gates' own test, issue "
             "56) and the paper's best control among the stand-in's top third of the "
             "controls (ceil(k / 3)). "
             "A headline check on a stand-in whose gate fails reads inconclusive at this "
             "scale.",
             "",
             "| result | stand-in of | controls | tau | exact permutation p | paper's best "
             "control: rank here | gate | verdict now |",
             "|---|---|---|---|---|---|---|---|"]
    detail = []
    for name in GATED:
        gates = checked(name)
        for g in gates:
            print(f"{name}: {g.describe()}")
        now = json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))["verdict"]
        for g in gates:
            lines.append(f"| {name} | {g.name} | {len(g.controls)} | {g.tau:+.2f} | "
                         f"{g.p_exact:.3f} "
                         f"| {g.controls[0]}: {g.best_rank} of {len(g.controls)} (top "
                         f"{g.top}) | {'passes' if g.passed else 'fails'} | {now} |")
            detail += ["", f"## {name}: {g.name}", "",
                       "| control (the paper's order) | paper | stand-in (seed mean) |",
                       "|---|---|---|"]
            detail += [f"| {c} | {p:g} | {s:.4g} |"
                       for c, p, s in zip(g.controls, g.paper, g.standin)]
    lines += ["", "Not gated (no paper values of their controls are transcribed in their "
              "scripts, or no comparison with controls in the headline): the other results "
              "of DFedPGP, DPFL, PFedDST and the field results. D-Cliques: the ordinal gates "
              "below."]
    moved: dict[str, str] = {}
    for name in _dcliques_gates.ORDERS:
        for og in dcliques(name):
            print(og.describe())
        now = json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))["verdict"]
        moved[name] = f"{verdict_at(name, BEFORE)} -> {now}"
        print(f"{name}: {moved[name]}")
    detail += dcliques_section(moved)
    if not args.dry_run:
        (ROOT / "analysis" / "standins_gates.md").write_text("\n".join(lines + detail) + "\n",
                                                              encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
