"""DPFL Fig. 3: DPFL against a random collaboration graph of the same budget.

DPFL (BGGC builds the candidates Omega_k, GGC picks the collaborators C_k every round) against
the same algorithm with both steps replaced by a randomly constructed collaboration graph
(``graph = "random"`` of topofl's ``dpfl``: at pre-processing and every round each client draws
min(B_c, N - 1) collaborators uniformly among the others), with the same pre-processing epochs,
local training, averaging (eq. 4) and best-validation scoring. Budgets c = 20, 10, 5 of N = 100
(config ``dpfl_fig3``). One panel per budget: the clients' average test accuracy against rounds,
the mean over the seeds (shaded: +- one std).

    python paper_figures/fig_dpfl_fig3.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import _dpfl_checks as dc  # beside this script

from topofl import figures

# Section 4.4: "DPFL outperforms the random graph by ~4 p.p., in three budget constraints"
GAP = 4.0
# a curve is flat from the first evaluation after which it stays within 1 point of its best
# (the table's descriptive column; the checks read convergence with _dpfl_checks.reading)
FLAT = 0.01
PAPER_ROUNDS = 100  # Fig. 3's x axis, 0-100: DPFL's 98 rounds after its 2 of pre-processing


def _fmt(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in params.items())


def budget(config: Mapping[str, Any]) -> int:
    """The resolved budget B_c of a run."""
    from topofl.algorithms.dpfl import resolve_budget

    n = int(config["n_clients"])
    b = resolve_budget(config["budget"], n)
    return n - 1 if b is None else min(b, n - 1)


def label(config: Mapping[str, Any]) -> str:
    name = "DPFL" if config["graph"] == "greedy" else "Random graph"
    return f"{name} (c = {budget(config)})"


def flat_from(rec: Any) -> int:
    """The first evaluated round after which the seed-mean curve stays within FLAT of its best."""
    x, y = figures.mean_curve(rec, "test_acc_mean")
    best = max(y)
    for i in range(len(y)):
        if all(v >= best - FLAT for v in y[i:]):
            return int(x[i])
    return int(x[-1])


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    import pandas as pd

    found = figures.panels(args, {"": "dpfl_fig3"}, label)
    whole = found[""]
    budgets = sorted({budget(c) for c in whole.configs.values()}, reverse=True)
    split = {}
    for c in budgets:
        keys = [k for k in (f"DPFL (c = {c})", f"Random graph (c = {c})") if k in whole.runs]
        split[f"c = {c}"] = figures.Panel(
            f"c = {c}", {k: whole.runs[k] for k in keys}, {k: whole.epochs[k] for k in keys},
            {k: whole.configs[k] for k in keys}, whole.setting, whole.notes, whole.seeds,
            whole.stand_in)
    fig, numbers = figures.curves(split, "test_acc", epochs=False, sharey=True,
                                  ylabel="average test accuracy (best-validation models)",
                                  figsize=(4.2 * len(split), 3.8))
    checks, parts, rows, readings = [], [], [], {}
    margin = 100 * figures.margin(args.name, "accuracy")  # points
    for c in budgets:
        dpfl, rand = whole.runs[f"DPFL (c = {c})"], whole.runs[f"Random graph (c = {c})"]
        a, r = figures.final(dpfl) * 100, figures.final(rand) * 100
        gap = a - r
        read = dc.reading(args.name, {f"DPFL (c = {c})": dpfl, f"Random graph (c = {c})": rand},
                          whole.configs.values(), PAPER_ROUNDS)
        readings[f"c = {c}"] = read["converged"]
        checks.append(figures.above(f"c = {c}: DPFL above the random graph (final accuracy, "
                                    "points)", gap, margin=margin, headline=True, fmt=".2f",
                                    **read))
        parts.append(f"c = {c}: DPFL {a:.1f}%, random graph {r:.1f}% ({gap.mean:+.1f} points)")
        rows.append({"c": c, "DPFL (%)": f"{a:.2f}", "random graph (%)": f"{r:.2f}",
                     "DPFL - random (points)": f"{gap:.2f}",
                     "paper DPFL - random (points)": f"~{GAP:g}",
                     "DPFL flat from round": flat_from(dpfl),
                     "random flat from round": flat_from(rand)})
    table = pd.DataFrame(rows)
    notes = [dc.convergence_note(readings)]
    cfg = next(iter(whole.configs.values()))
    if cfg["partition"] != "dirichlet":
        notes.append(f"The paper's Fig. 3 is on Dir(0.1); this ran on the {cfg['partition']} "
                     f"split ({_fmt(cfg['partition_params'])}) of the stand-in: the calibrated "
                     "Dir(0.1) stand-in (MNIST-1D with noisier signals + cnn1d) costs ~17 s a DPFL "
                     "round here (~30 times this one's), several hours for the 18 runs at the "
                     "paper's 98 rounds (see the config).")
    return figures.Result(fig, "; ".join(parts), checks,
                          {"final accuracy": table, **{t: numbers[t] for t in split}},
                          panels=found, notes=notes)


if __name__ == "__main__":
    raise SystemExit(main())
