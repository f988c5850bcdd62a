"""A DPFL table of one setting against the budgets (Tables 2 and 3: tau_init or the refresh
period P in the rows, B_c = inf, 0.2N, 0.1N, 0.05N in the columns): each cell's mean accuracy
over the seeds, each row's mean over the budgets, and the spread between the rows. The headline
is the rows' "comparable" (within a tolerance); the row said to be best is a secondary check.
Every cell is DPFL with its best-validation models (the paper's protocol, the same for all)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import _dpfl_checks as dc  # beside this script
import _dpfl_variance as dv  # beside this script

from topofl import figures


def rows(args: figures.FigureArgs, config: str, key: str, head: str,
         paper: Mapping[int, Sequence[float]]) -> tuple[dict[str, figures.Panel], Any,
                                                        dict[int, figures.OverSeeds]]:
    """Run ``config`` (a sweep of ``key`` x budget); its panels, the table (rows: the values of
    ``key``, headed ``head``) and each row's mean accuracy over the budgets, per seed."""
    import pandas as pd

    found = figures.panels(args, {"": config}, lambda c: f"{head} = {c[key]}, {dv.label(c)}")
    panel = found[""]
    cell = {(int(panel.configs[k][key]), dv.budget(panel.configs[k])): dv.stats(r)[0]
            for k, r in panel.runs.items()}
    keys = sorted({r for r, _ in cell})
    cols = [b for b in dv.BUDGETS.values() if any((r, b) in cell for r in keys)]
    means = {r: figures.seedwise(lambda *v: sum(v) / len(v), *(cell[r, b] for b in cols))
             for r in keys}
    table = pd.DataFrame({
        head: keys,
        **{f"B_c = {b}": [f"{cell[r, b]:.2f}" for r in keys] for b in cols},
        "row mean": [f"{means[r]:.2f}" for r in keys],
        **{f"paper B_c = {b}": [f"{paper[r][i]:.2f}" if r in paper else "-" for r in keys]
           for i, b in enumerate(dv.BUDGETS.values()) if b in cols},
    })
    return found, table, means


def spread(means: Mapping[int, figures.OverSeeds]) -> figures.OverSeeds:
    """The largest minus the smallest row mean, per seed."""
    return figures.seedwise(lambda *v: max(v) - min(v), *means.values())


PAPER_ROUNDS = 100  # Appendix F.3.3: T = 100, DPFL's 98 after its 2 of pre-processing


def build(args: figures.FigureArgs, config: str, key: str, head: str,
          paper: Mapping[int, Sequence[float]], *, best: str, gap_kind: str = "accuracy"
          ) -> figures.Result:
    """The table of ``config`` and the two checks of Tables 2 and 3: the rows' averages within
    the result's ``comparable`` margin of each other (the headline), and the row ``best``
    (``"first"`` or ``"last"`` value of ``key``) above every other row (Table 2) or above the
    last row (Table 3: ``"first"``), by the result's margin ``gap_kind`` (its convergence reading
    at the same tolerance)."""
    found, table, means = rows(args, config, key, head, paper)
    panel = found[""]
    gap = spread(means)
    keys = sorted(means)
    top = keys[-1] if best == "last" else keys[0]
    rivals = [r for r in keys if r != top] if best == "last" else [keys[-1]]
    named = ", ".join(f"{head} = {r}" for r in rivals)
    tolerance = 100 * figures.margin(args.name, "comparable")  # points
    margin = 100 * figures.margin(args.name, gap_kind)  # points
    # every cell's curve is compared (a row's average is the mean of its budgets' cells)
    read = dc.reading(args.name, panel.runs, panel.configs.values(), PAPER_ROUNDS)
    fine = dc.reading(args.name, panel.runs, panel.configs.values(), PAPER_ROUNDS, kind=gap_kind)
    checks = [figures.within(f"the {head} rows' averages within {tolerance:g} points (largest "
                             "minus smallest row average)", gap, tolerance, headline=True,
                             fmt=".2f", **read),
              figures.above(f"{head} = {top} above {named} on average (points)",
                            means[top] - figures.seedwise(max, *(means[r] for r in rivals)),
                            margin=margin, fmt=".2f", **fine)]
    measured = ("average over the budgets " + ", ".join(f"{means[r]:.1f}% ({head} = {r})"
                                                         for r in keys)
                + f": a spread of {gap:.1f} points; best {head} by mean = "
                f"{max(keys, key=lambda r: means[r].mean)}")
    cols = sorted({dv.budget(c) for c in panel.configs.values()},
                  key=list(dv.BUDGETS.values()).index)
    notes = [dc.convergence_note({"every cell": read["converged"]})]
    if gap_kind != "accuracy":
        notes.append(f"The {head} = {top} check's convergence reading uses its own margin "
                     f"({margin:g} point): {fine['converged'].describe()}.")
    if len(cols) < len(dv.BUDGETS):
        notes.append(f"Only the budget(s) B_c = {', '.join(cols)} ran at this scale (the CPU "
                     "goes to the rounds first): the rows' averages are over "
                     f"{'that column' if len(cols) == 1 else 'those columns'}, not the "
                     "paper's four; the other columns are not run (--full runs them).")
    return figures.Result(None, measured, checks, table, panels=found, notes=notes)
