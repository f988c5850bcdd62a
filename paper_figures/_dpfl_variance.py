"""The accuracy-against-variance panels shared by DPFL Figs. 1 and 5-7 (one config per method,
``<prefix>_<method>``): one point per method (the mean over the seeds, bars: +- one std), and
for each DPFL budget the paper's two checks against the baselines (more accurate than the most
accurate one, a lower variance than the lowest one), both headline checks (the claim's "bottom-right
corner" is the conjunction), decided at convergence (``_dpfl_checks.reading``: the accuracy
check on the compared runs' accuracy curves, the variance check on their curves of the variance
between clients at each evaluation, each with its own margin) on a stand-in that passes its
fidelity gate (the baselines ordered as in the paper's Table 1, :func:`gate`)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import _dpfl_checks as dc  # beside this script

from topofl import figures
from topofl.algorithms.dpfl_analysis import client_accuracy_stats

METHODS = ("local", "fedavg", "fedavg_ft", "fedprox", "fedprox_ft", "apfl", "perfedavg",
           "ditto", "fedrep", "knn_per", "pfedgraph", "dpfl")
NAMES = {"local": "Local Only", "fedavg": "FedAvg", "fedavg_ft": "FedAvg+FT",
         "fedprox": "FedProx", "fedprox_ft": "FedProx+FT", "apfl": "APFL",
         "perfedavg": "PerFedAvg", "ditto": "Ditto", "fedrep": "FedRep", "knn_per": "kNN-Per",
         "pfedgraph": "pFedGraph"}
KEYS = ("data", "n_clients", "partition", "partition_params", "model", "model_params", "rounds",
        "lr", "momentum", "weight_decay", "batch_size", "local_epochs", "eval_every")
BUDGETS = {1.0: "inf", 0.2: "0.2N", 0.1: "0.1N", 0.05: "0.05N"}

# The paper's Table 1 (mean over three seeds, %), every column: the controls of every DPFL
# comparison's fidelity gate (the baselines' order, topofl.figures.gate)
TABLE1_COLUMNS = ("CIFAR-10 Dir(0.1)", "CIFAR-10 Patho(3)", "CINIC-10 Dir(0.1)",
                  "CINIC-10 Patho(3)", "FEMNIST")
PAPER_TABLE1 = {
    "Local Only": (80.38, 78.32, 78.59, 77.53, 87.27),
    "FedAvg": (47.22, 50.93, 38.48, 39.27, 87.41),
    "FedAvg+FT": (82.84, 81.89, 80.31, 79.18, 91.56),
    "FedProx": (48.83, 51.14, 38.16, 38.53, 88.14),
    "FedProx+FT": (78.86, 73.61, 76.59, 73.04, 93.58),
    "APFL": (82.56, 80.96, 80.02, 78.21, 90.80),
    "PerFedAvg": (82.38, 81.17, 78.88, 78.90, 91.69),
    "Ditto": (83.10, 81.19, 80.33, 79.52, 90.83),
    "FedRep": (80.81, 78.61, 79.56, 78.46, 90.04),
    "kNN-Per": (82.45, 81.04, 80.42, 79.54, 91.29),
    "pFedGraph": (80.48, 78.34, 78.73, 77.58, 87.70),
    "DPFL (inf)": (84.39, 83.04, 81.49, 80.32, 94.25),
    "DPFL (0.2N)": (84.01, 82.83, 81.24, 80.51, 94.31),
    "DPFL (0.1N)": (83.86, 82.52, 81.32, 80.24, 94.09),
    "DPFL (0.05N)": (82.91, 82.17, 80.91, 80.11, 93.82),
}


def column(name: str) -> int | None:
    """The index in :data:`TABLE1_COLUMNS` of the Table 1 column a panel title names (e.g.
    ``"(a) CINIC-10 Dir(0.1)"``), ``None`` when it names none.

    >>> column("(b) CINIC-10 Patho(3)"), column("FEMNIST, natural split"), column("digits")
    (3, 4, None)
    """
    col = next((c for c in TABLE1_COLUMNS if c.split(" ")[0] in name
                and (c == "FEMNIST" or c.split(" ")[1] in name)), None)
    return None if col is None else TABLE1_COLUMNS.index(col)


def accuracy_tie(name: str, dpfl: str, baselines: Iterable[str], margin: float) -> str:
    """The claim form of a DPFL budget's accuracy part in panel ``name`` (the ``tie`` of
    :func:`topofl.figures.above`), by the margin policy of ``claims.toml`` ``[margins]``:
    ``"pass"`` ("at least as good") where the paper's own lead of ``dpfl`` (e.g.
    ``"DPFL (0.2N)"``) over the most accurate of ``baselines`` in the panel's Table 1 column is
    under ``margin`` (points), ``"inconclusive"`` ("better by the margin") otherwise or where
    the panel names no column.

    >>> base = ["kNN-Per", "Ditto", "FedAvg"]
    >>> accuracy_tie("(a) CINIC-10 Dir(0.1)", "DPFL (inf)", base, 1.0)  # 81.49 - 80.42
    'inconclusive'
    >>> accuracy_tie("(a) CINIC-10 Dir(0.1)", "DPFL (0.05N)", base, 1.0)  # 80.91 - 80.42
    'pass'
    """
    i = column(name)
    known = [b for b in baselines if b in PAPER_TABLE1]
    if i is None or dpfl not in PAPER_TABLE1 or not known:
        return "inconclusive"
    lead = PAPER_TABLE1[dpfl][i] - max(PAPER_TABLE1[b][i] for b in known)
    return "pass" if lead < margin else "inconclusive"


def gate(name: str, result: str, accuracy: Mapping[str, Any]) -> figures.Gate | None:
    """The fidelity gate of a panel ``name`` (its title names a column of the paper's Table 1,
    e.g. ``"(a) CINIC-10 Dir(0.1)"``): the baselines' accuracies (every row but DPFL's) on the
    stand-in ordered as in the paper; ``None`` when the title names no column."""
    i = column(name)
    if i is None:
        return None
    bars = figures.gate_bars(result)
    base = [k for k in accuracy if not k.startswith("DPFL") and k in PAPER_TABLE1]
    return figures.fidelity_gate(name, {k: PAPER_TABLE1[k][i] for k in base},
                                 {k: accuracy[k] for k in base}, tau_min=bars["tau"],
                                 top_share=bars["top_share"])


def budget(config: Mapping[str, Any]) -> str:
    """The budget of a DPFL run (1.0 = N, every other client, is B_c = inf)."""
    b = config["budget"]
    return BUDGETS[1.0 if b is None or b == math.inf else float(b)]


def label(config: Mapping[str, Any]) -> str:
    """The point's label, from a run's resolved config."""
    if config["algorithm"] == "dpfl":
        return f"DPFL ({budget(config)})"
    return NAMES[config["algorithm"]]


def selection(rec: Any) -> str:
    """``"best_val"`` for runs that scored their validation splits (``eval_val = true``: each
    client's best-validation model, the paper's protocol for every method), else ``"last"``."""
    return "best_val" if "val_loss" in rec.metrics else "last"


def stats(rec: Any) -> tuple[figures.OverSeeds, figures.OverSeeds]:
    """The clients' mean test accuracy and its variance between clients (%, %²), per seed
    (:func:`topofl.algorithms.client_accuracy_stats`), of the models :func:`selection`
    picks."""
    def one_seed(one: Any) -> tuple[float, float]:
        return client_accuracy_stats(one, select=selection(one))

    return (figures.per_seed(rec, lambda one: one_seed(one)[0]),
            figures.per_seed(rec, lambda one: one_seed(one)[1]))


def selection_note(found: Mapping[str, Any], what: str) -> str:
    """The result's note on model selection, from what the runs of ``found`` recorded (one
    protocol for every method either way)."""
    kinds = {selection(r) for p in found.values() for r in p.runs.values()}
    if kinds == {"best_val"}:
        return ("Model selection: every method, DPFL included, is scored with each client's "
                "best-validation model, the paper's protocol (F.3.1): the test accuracy at the "
                "round of its lowest validation loss, validation scored every round "
                "(eval_val = true, eval_every = 1; Records.selected).")
    if kinds == {"last"}:
        return ("Model selection: every method, DPFL included, is scored at its last round, "
                f"so {what} uses one protocol for all rather than the paper's (each client's "
                "best-validation model; the configs' eval_val = true runs it).")
    raise ValueError(f"the runs of {what} mix model selections ({sorted(kinds)}): give every "
                     "method's config the same eval_val")


def panels(args: figures.FigureArgs, titles: dict[str, str], *, total: int,
           share: str | None = None) -> figures.Result:
    """Run (or reuse) every method of every panel (config prefix -> panel title), draw the
    points and check each DPFL budget against the baselines (``total``: the paper's rounds,
    DPFL's 2 of pre-processing included)."""
    import matplotlib.pyplot as plt
    import pandas as pd

    import topofl as tf

    found = figures.panels(args, {t: [f"{p}_{m}" for m in METHODS] for p, t in titles.items()},
                           label, share=share)
    fig, axs = plt.subplots(1, len(found), figsize=(5.8 * len(found), 4.4), squeeze=False)
    numbers, checks, measured, readings, gates = {}, [], [], {}, []
    acc_margin = 100 * figures.margin(args.name, "accuracy")  # points
    var_margin = figures.margin(args.name, "variance")  # %^2
    for ax, (title, panel) in zip(axs[0], found.items()):
        got = {k: stats(r) for k, r in panel.runs.items()}
        tf.plotting.accuracy_variance({k: (a.mean, v.mean) for k, (a, v) in got.items()},
                                      errors={k: (a.std, v.std) for k, (a, v) in got.items()},
                                      ax=ax, title=title)
        numbers[title] = pd.DataFrame({
            "method": list(got), "accuracy (%)": [f"{a:.2f}" for a, _ in got.values()],
            "variance (%²)": [f"{v:.1f}" for _, v in got.values()],
            "seeds": [a.n for a, _ in got.values()]})
        base = [k for k in got if not k.startswith("DPFL")]
        best = figures.seedwise(max, *(got[k][0] for k in base))
        low = figures.seedwise(min, *(got[k][1] for k in base))
        short = title.split(" (paper")[0]
        top = max(base, key=lambda k: got[k][0].mean)
        flat = min(base, key=lambda k: got[k][1].mean)
        configs = list(panel.configs.values())
        g = gate(short, args.name, {k: a for k, (a, _) in got.items()})
        gates += [g] if g is not None else []
        for k in (k for k in got if k.startswith("DPFL")):
            # the compared curves: this budget's and the baseline it is measured against (the
            # most accurate / the lowest-variance one by mean), each check reading the curve of
            # the quantity it tests: the accuracy, and the variance between clients at each
            # evaluation (from the per-client rows, record_clients = true), in %²
            acc = dc.reading(args.name, {k: panel.runs[k], top: panel.runs[top]}, configs,
                             total)
            var = dc.reading(args.name, {k: panel.runs[k], flat: panel.runs[flat]}, configs,
                             total, kind="variance")
            readings[f"{short}: {k} vs {top}"] = acc["converged"]
            readings[f"{short}: {k} vs {flat}, variance"] = var["converged"]
            pair = [figures.above(f"{short}: {k} more accurate than every baseline (points)",
                                  got[k][0] - best, margin=acc_margin, headline=True,
                                  tie=accuracy_tie(short, k, base, acc_margin),
                                  fmt=".2f", **acc),
                    figures.below(f"{short}: {k} lower variance than every baseline (%²)",
                                  got[k][1] - low, margin=var_margin, headline=True,
                                  fmt=".1f", **var)]
            checks += [figures.gated(c, g) for c in pair] if g is not None else pair
        dpfl = [got[k] for k in got if k.startswith("DPFL")]
        measured.append(
            f"{short}: DPFL {min(a.mean for a, _ in dpfl):.1f}-{max(a.mean for a, _ in dpfl):.1f}"
            f"%, variance {min(v.mean for _, v in dpfl):.0f}-{max(v.mean for _, v in dpfl):.0f}"
            f"; most accurate baseline {top} {got[top][0]:.1f}%, lowest variance {flat} "
            f"{got[flat][1]:.0f}")
    fig.tight_layout()
    notes = [dc.convergence_note(readings), selection_note(found, "the comparison")]
    return figures.Result(fig, "; ".join(measured), checks, numbers, panels=found, notes=notes,
                          setting={t: figures.merged_setting({t: p}, KEYS)
                                   for t, p in found.items()}, gates=gates)
