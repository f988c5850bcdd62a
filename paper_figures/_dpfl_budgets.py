"""A DPFL table of one setting against the budgets (Tables 2 and 3: tau_init or the refresh
period P in the rows, B_c = inf, 0.2N, 0.1N, 0.05N in the columns): each cell's mean accuracy
over the seeds, each row's mean over the budgets, and the spread between the rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

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


def build(args: figures.FigureArgs, config: str, key: str, head: str,
          paper: Mapping[int, Sequence[float]], *, tolerance: float, best: str) -> figures.Result:
    """The table of ``config`` and the two checks of Tables 2 and 3: the rows' averages within
    ``tolerance`` points of each other, and the row ``best`` (``"first"`` or ``"last"`` value of
    ``key``) above every other row (Table 2) or above the last row (Table 3: ``"first"``)."""
    found, table, means = rows(args, config, key, head, paper)
    gap = spread(means)
    keys = sorted(means)
    top = keys[-1] if best == "last" else keys[0]
    rivals = [r for r in keys if r != top] if best == "last" else [keys[-1]]
    named = ", ".join(f"{head} = {r}" for r in rivals)
    checks = [figures.within(f"the {head} rows' averages within {tolerance:g} points", gap,
                             tolerance, fmt=".2f"),
              figures.above(f"{head} = {top} above {named} on average",
                            means[top] - figures.seedwise(max, *(means[r] for r in rivals)),
                            fmt=".2f")]
    measured = ("average over the budgets " + ", ".join(f"{means[r]:.1f}% ({head} = {r})"
                                                         for r in keys)
                + f": a spread of {gap:.1f} points; best {head} by mean = "
                f"{max(keys, key=lambda r: means[r].mean)}")
    return figures.Result(None, measured, checks, table, panels=found)
