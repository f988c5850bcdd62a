"""The committed results' recorded regeneration time: each result's ``seconds`` now against
a baseline commit, from the committed JSON alone (git history, nothing is run).

A result's ``seconds`` is what its figure script recorded when it ran: the sum of its runs'
training and evaluation walls (a stack of k runs counts its wall once) plus the plotting.
It depends on the code *and* on the machine and its load when the result ran, so each row
names the code and the CPU it was recorded with: a result re-run on another machine moves for
both reasons, and this page does not split them (the benchmarks that time two checkouts on
one machine do, e.g. ``bench_idle_rows.py``).

Usage: ``python analysis/regeneration_time.py [--base COMMIT] [--at COMMIT]`` writes
``analysis/regeneration_time.md``. ``--base`` defaults to :data:`BASE`, the last commit
before the first result was regenerated for issue 58's -30 % (its 50 results record
75,543 s); ``--at`` defaults to the working tree's ``paper_figures/results``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = "paper_figures/results"

#: the baseline: the parent of 1735097 (field_teleportation_fmnist regenerated), 50 results
BASE = "cba5974f533a113cc5e1d42f7cb90ad7deb118d8"
#: the commit issue 58 was measured on (its "13.1 h" for the 43 results then committed)
ISSUE = "5a6e58e50db89bbf37369d367e19bb36c68cde49"


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    return done.stdout


def _results_at(commit: str | None) -> dict[str, dict[str, Any]]:
    """``name -> result`` of every committed result (``equivalence.json`` is no result) at
    ``commit``, or in the working tree for ``None``."""
    out: dict[str, dict[str, Any]] = {}
    if commit is None:
        files = {p.name: p.read_text() for p in (ROOT / RESULTS).glob("*.json")}
    else:
        names = _git("ls-tree", "--name-only", commit, f"{RESULTS}/").split()
        files = {Path(f).name: _git("show", f"{commit}:{f}") for f in names
                 if f.endswith(".json")}
    for name, text in files.items():
        d = json.loads(text)
        if isinstance(d, dict) and "seconds" in d:
            out[name[: -len(".json")]] = d
    return out


def _cpu(d: dict[str, Any]) -> str:
    cpu = d.get("cpu")
    if isinstance(cpu, list) and cpu:
        return ", ".join(sorted({str(c).split()[1] if len(str(c).split()) > 1 else str(c)
                                 for c in cpu}))
    return "not recorded"


def _code(d: dict[str, Any]) -> str:
    return str(d.get("code", "")).split("+")[-1][:12]


def table(base: dict[str, dict[str, Any]], now: dict[str, dict[str, Any]]) -> list[str]:
    """Markdown rows, the largest baseline first; a result only one side has shows a blank."""
    lines = ["| result | base s | base code | base CPU | now s | now code | now CPU | now / base |",
             "|---|---|---|---|---|---|---|---|"]
    names = sorted(set(base) | set(now), key=lambda k: -float(base.get(k, now.get(k, {}))
                                                              .get("seconds") or 0.0))
    for k in names:
        b, a = base.get(k), now.get(k)
        bs = f"{b['seconds']:,.0f}" if b else ""
        as_ = f"{a['seconds']:,.0f}" if a else ""
        ratio = (f"{a['seconds'] / b['seconds']:.2f}" if a and b and b["seconds"] else "")
        same = a is not None and b is not None and _code(a) == _code(b)
        lines.append(f"| {k} | {bs} | {_code(b) if b else ''} | {_cpu(b) if b else ''} | "
                     f"{as_} | {'(same)' if same else _code(a) if a else ''} | "
                     f"{'(same)' if same else _cpu(a) if a else ''} | {ratio} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default=BASE, help="baseline commit (default: %(default)s)")
    ap.add_argument("--at", default=None, help="commit to compare (default: the working tree)")
    ap.add_argument("--out", default=str(ROOT / "analysis" / "regeneration_time.md"))
    args = ap.parse_args(argv)
    for c in (args.base, ISSUE, args.at):
        if c is not None and subprocess.run(["git", "cat-file", "-e", f"{c}^{{commit}}"],
                                            cwd=ROOT, capture_output=True).returncode:
            raise SystemExit(f"{c} is not a commit of this checkout (a shallow clone? "
                             "`git fetch --unshallow`)")
    base, now = _results_at(args.base), _results_at(args.at)
    tb = sum(float(d["seconds"] or 0.0) for d in base.values())
    common = set(base) & set(now)
    tn = sum(float(now[k]["seconds"] or 0.0) for k in common)
    rerun = sorted(k for k in common if _code(now[k]) != _code(base[k]))
    issue = _results_at(ISSUE)
    ti = sum(float(d["seconds"] or 0.0) for d in issue.values())
    tin = sum(float(now[k]["seconds"] or 0.0) for k in set(issue) & set(now))
    head = _git("rev-parse", "--short=12", "HEAD").strip()
    at = "the working tree" if args.at is None else f"`{args.at[:12]}`"
    md = [
        "# The committed results' recorded regeneration time",
        "",
        f"`python analysis/regeneration_time.py` (HEAD `{head}`): every result's recorded "
        f"`seconds` in {at} against the baseline commit `{args.base[:12]}` (the committed "
        "JSON, nothing re-run here). A result's `seconds` is the sum of its runs' walls "
        "(training and evaluation, a stack's wall once) and the plotting, as its figure "
        "script recorded it on the machine it ran on: the *code* and *CPU* columns say "
        "which, and a result recorded on another machine moved for both reasons.",
        "",
        f"- Results at the baseline: {len(base)}, recording {tb:,.0f} s "
        f"({tb / 3600:.1f} h). Now: {len(now)}; the {len(common)} of them at the baseline "
        f"record {tn:,.0f} s ({tn / 3600:.1f} h): **{100 * (tn - tb) / tb:+.1f} %**.",
        f"- The {len(issue)} results of the commit the issue was measured on (`{ISSUE[:12]}`) "
        f"recorded {ti:,.0f} s ({ti / 3600:.1f} h) there and {tin:,.0f} s now: "
        f"**{100 * (tin - ti) / ti:+.1f} %**.",
        f"- Recorded by other code than at the baseline: {len(rerun)} "
        f"({', '.join(rerun) if rerun else 'none'}).",
        "",
        *table(base, now),
        "",
    ]
    Path(args.out).write_text("\n".join(md))
    print("\n".join(md[:8]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
