"""What a Fashion-MNIST stand-in for DFedPGP's CIFAR-10 columns would cost here, controls only.

DFedPGP's CIFAR-10 results (Tables 1-3, Fig. 2) are undecided because their MNIST-1D stand-in
fails its fidelity gate (the controls' order against the paper's table). The real images of
Debian's ``dataset-fashion-mnist`` are the candidate stand-in (issue 56, item 5): the small CNN
(``gn_lenet``), 100 clients, the paper's local work (5 epochs a round, Ditto 5 + 5, FedAvg's 10
% participation; ``paper_figures/configs/dfedpgp_table1.toml``), on the gate's controls only
(the rows of Table 1 but DFedPGP), 3 seeds. Decided before any such run: the attempt is made
only if it costs at most 10 hours here (``--jobs 2``).

The cost is *extrapolated* from measured numbers: the CPU seconds of a D-SGD training round at
100 clients on Fashion-MNIST (one local step of batch 32 a client: ``analysis/fmnist_cost.md``,
measured on this machine) give a cost per training sample, times the samples a round of each
control trains (60,000 training images over 100 clients: 600 a client on average). Evaluation
is left out (Table 1 evaluates every round: a lower bound), as are the methods' own overheads
beyond their local epochs (Ditto's second model is counted as its 5 more epochs).

    python analysis/fmnist_dfedpgp_standin.py   # writes analysis/fmnist_dfedpgp_standin.md
                                                 # and analysis/standin_costs.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from topofl._utils.configfiles import read_config

ROOT = Path(__file__).resolve().parents[1]
COST = ROOT / "analysis" / "fmnist_cost.md"
CONFIG = ROOT / "paper_figures" / "configs" / "dfedpgp_table1.toml"
RESULTS = ROOT / "paper_figures" / "results"
BUDGET_HOURS = 10.0  # declared before the estimate: the attempt runs only under it
TRAIN, CLIENTS, SEEDS, BATCH = 60_000, 100, 3, 32
RESULTS_COVERED = ("dfedpgp_table1", "dfedpgp_table2", "dfedpgp_table3", "dfedpgp_fig2")


def per_sample(model: str, n: int = CLIENTS) -> float:
    """CPU seconds a training sample of ``model`` at ``n`` clients (the measured round / the
    samples it trains: n clients x one step of batch 32)."""
    for line in COST.read_text(encoding="utf-8").splitlines():
        if line.startswith("{") and f'"model": "{model}"' in line and f'"n": {n},' in line:
            row = json.loads(line)
            return float(row["train"]) / (n * BATCH)
    raise SystemExit(f"{COST} has no measured row of {model} at {n} clients: run "
                     "analysis/fmnist_cost.py first")


def controls() -> list[str]:
    """The controls of DFedPGP Table 1's CIFAR-10 Dir-0.3 gate (as committed)."""
    v = json.loads((RESULTS / "dfedpgp_table1.json").read_text(encoding="utf-8"))
    (gate,) = [g for g in v["gates"] if "controls" in g]
    return list(gate["controls"])


def epochs_and_share(method: str, grid: dict[str, dict[str, object]]) -> tuple[float, float]:
    """Local epochs a round (both models' for a two-model method) and the share of clients
    that train, from the config's method table."""
    m = grid[method]
    ep = float(m.get("local_epochs", 0) or 0) + float(m.get("local_epochs_u", 0) or 0) \
        + float(m.get("local_epochs_v", 0) or 0)
    if m.get("algorithm") == "ditto":
        ep = 2 * float(m.get("local_epochs", 5))  # the global and the personal model
    return ep or 5.0, float(m.get("participation", 1.0) or 1.0)


def main() -> int:
    cfg = read_config(CONFIG)
    grid = cfg["grid"]["method"]
    rounds = {"default scale": int(cfg.get("scale", {}).get("default", {}).get("rounds", 300)),
              "the paper's": int(cfg["rounds"])}
    rows, total = [], {m: {k: 0.0 for k in rounds} for m in ("gn_lenet", "mlp")}
    for c in controls():
        ep, share = epochs_and_share(c, grid)
        samples = CLIENTS * share * (TRAIN / CLIENTS) * ep  # a round
        cells = [c, f"{ep:g}", f"{share:g}", f"{samples:,.0f}"]
        for model in ("gn_lenet", "mlp"):
            for k, r in rounds.items():
                h = samples * per_sample(model) * r * SEEDS / 3600
                total[model][k] += h
            cells.append(f"{samples * per_sample(model):.1f}")
        rows.append(cells)
    lines = [
        "# A Fashion-MNIST stand-in for DFedPGP's CIFAR-10 columns: its cost here",
        "",
        f"Written by `python analysis/fmnist_dfedpgp_standin.py` from the measured rows of "
        f"`analysis/fmnist_cost.md` (this machine: a 2-core AMD EPYC, one torch thread) and "
        f"`paper_figures/configs/dfedpgp_table1.toml`. An **extrapolation**, not a run: the CPU "
        f"seconds a training sample costs at 100 clients (gn_lenet "
        f"{1000 * per_sample('gn_lenet'):.3f} ms, mlp {1000 * per_sample('mlp'):.4f} ms: the "
        f"measured round / 100 clients x batch 32) times the samples each control trains a "
        f"round (600 images a client on average, its local epochs, its share of clients), x "
        f"{SEEDS} seeds. Evaluation left out (Table 1 evaluates every round): a lower bound. "
        f"Declared before the estimate: the attempt runs only if it costs at most "
        f"{BUDGET_HOURS:g} hours here at `--jobs 2`.",
        "",
        "| control | local epochs a round | share of clients | samples a round | "
        "gn_lenet CPU s a round | mlp CPU s a round |",
        "|---|---|---|---|---|---|",
        *("| " + " | ".join(r) + " |" for r in rows),
        "",
        "| model | rounds | CPU hours (the controls, 3 seeds) | hours at `--jobs 2` |",
        "|---|---|---|---|",
    ]
    for model, by in total.items():
        for k, r in rounds.items():
            lines.append(f"| {model} | {r} ({k}) | {by[k]:.1f} | {by[k] / 2:.1f} |")
    cnn = total["gn_lenet"]["default scale"] / 2
    verdict = ("over" if cnn > BUDGET_HOURS else "within")
    lines += ["", f"The small CNN's attempt costs about {cnn:.0f} hours here at `--jobs 2` "
              f"({verdict} the {BUDGET_HOURS:g} h budget), so it is "
              f"{'not run' if cnn > BUDGET_HOURS else 'affordable'}; the MLP on the same "
              f"images, about {total['mlp']['default scale'] / 2:.1f} h, is not the stand-in "
              "the issue names (the CNN is the paper's kind of model) and is not run either "
              "this session. On one GPU: not measured here.", ""]
    (ROOT / "analysis" / "fmnist_dfedpgp_standin.md").write_text("\n".join(lines),
                                                                 encoding="utf-8")
    text = (f"a Fashion-MNIST stand-in (Debian's real images) with the small CNN on the "
            f"controls only would cost about {cnn:.0f} h here at `--jobs 2` (an extrapolation "
            f"from measured rounds, evaluation left out), over the {BUDGET_HOURS:g} h budget "
            "declared for a stand-in attempt, so it is not run "
            "(`analysis/fmnist_dfedpgp_standin.md`)" if cnn > BUDGET_HOURS else
            f"a Fashion-MNIST stand-in with the small CNN costs about {cnn:.0f} h here "
            "(`analysis/fmnist_dfedpgp_standin.md`)")
    costs = {name: {"hours": round(cnn, 1), "text": text} for name in RESULTS_COVERED}
    (ROOT / "analysis" / "standin_costs.json").write_text(json.dumps(costs, indent=1) + "\n",
                                                          encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
