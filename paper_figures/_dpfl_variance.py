"""The accuracy-against-variance panels shared by DPFL Figs. 1 and 5-7 (one config per method,
``<prefix>_<method>``); the scripts add the paper's claim and their notes."""

from __future__ import annotations

from typing import Any

from topofl import figures

METHODS = ("local", "fedavg", "fedavg_ft", "fedprox", "fedprox_ft", "apfl", "perfedavg",
           "ditto", "fedrep", "knn_per", "pfedgraph", "dpfl")
NAMES = {"local": "Local Only", "fedavg": "FedAvg", "fedavg_ft": "FedAvg+FT",
         "fedprox": "FedProx", "fedprox_ft": "FedProx+FT", "apfl": "APFL",
         "perfedavg": "PerFedAvg", "ditto": "Ditto", "fedrep": "FedRep", "knn_per": "kNN-Per",
         "pfedgraph": "pFedGraph"}
KEYS = ("data", "n_clients", "partition", "partition_params", "model", "model_params", "rounds",
        "lr", "momentum", "weight_decay", "batch_size", "local_epochs", "seed")
BUDGETS = {1.0: "inf", 0.2: "0.2N", 0.1: "0.1N", 0.05: "0.05N"}


def label(config: dict) -> str:
    """The point's label, from a run's resolved config (budget 1.0 = N is B_c = inf)."""
    if config["algorithm"] == "dpfl":
        b = config["budget"]
        return f"DPFL ({BUDGETS[1.0 if b is None else float(b)]})"
    return NAMES[config["algorithm"]]


def panels(args: figures.FigureArgs, titles: dict[str, str]) -> dict[str, Any]:
    """Run (or reuse) every method of every panel (config prefix -> panel title) and draw the
    points; returns ``fig``, ``numbers``, ``settings``, ``measured`` (one line), ``holds``
    (every DPFL point in the bottom-right corner of every panel: True; of none: False),
    ``notes`` (the configs' stand-in notes) and ``data`` (the dataset that ran)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    import topofl as tf

    fig, axs = plt.subplots(1, len(titles), figsize=(5.8 * len(titles), 4.4), squeeze=False)
    numbers, notes, verdicts, measured, settings = {}, [], [], [], {}
    data = ""
    for ax, (prefix, title) in zip(axs[0], titles.items()):
        stats: dict[str, list[tuple[float, float]]] = {}
        configs = {}
        for method in METHODS:
            cfg = figures.load_config(f"{prefix}_{method}", args.scale)
            notes += [n for n in cfg["_notes"] if n not in notes]
            data = str(cfg["data"])
            rec = figures.sweep(cfg, args)
            for r in rec.runs:
                configs[f"{method}/{r}"] = rec.configs[r]
                stats.setdefault(label(rec.configs[r]), []).append(
                    tf.plotting.client_accuracy_stats(rec, run=r))
        settings[title] = figures.setting(tf.records.Records(rows=[], configs=configs), KEYS)
        summary = {k: tf.plotting.seed_summary(v) for k, v in stats.items()}
        points = {k: (s["acc"], s["variance"]) for k, s in summary.items()}
        tf.plotting.accuracy_variance(points, ax=ax, title=title)
        numbers[title] = pd.DataFrame({
            "method": list(points), "accuracy (%)": [f"{p[0]:.2f}" for p in points.values()],
            "accuracy std over seeds": [f"{summary[k]['acc_std']:.2f}" for k in points],
            "variance (%²)": [f"{p[1]:.1f}" for p in points.values()],
            "seeds": [summary[k]["runs"] for k in points]})
        dpfl = {k: p for k, p in points.items() if k.startswith("DPFL")}
        base = {k: p for k, p in points.items() if not k.startswith("DPFL")}
        corner = [k for k, (a, v) in dpfl.items()
                  if all(a > ba and v < bv for ba, bv in base.values())]
        verdicts.append(len(corner) / len(dpfl))
        best_acc = max(base, key=lambda k: base[k][0])
        low_var = min(base, key=lambda k: base[k][1])
        accs, variances = [a for a, _ in dpfl.values()], [v for _, v in dpfl.values()]
        measured.append(
            f"{title.split(' (paper')[0]}: {len(corner)} of {len(dpfl)} DPFL points more "
            f"accurate and with a lower variance than every baseline (DPFL "
            f"{min(accs):.1f}-{max(accs):.1f}%, variance "
            f"{min(variances):.0f}-{max(variances):.0f}; "
            f"most accurate baseline {best_acc} {base[best_acc][0]:.1f}%, lowest variance "
            f"{low_var} {base[low_var][1]:.0f})")
    fig.tight_layout()
    holds = True if min(verdicts) == 1.0 else (None if max(verdicts) > 0 else False)
    return {"fig": fig, "numbers": numbers, "settings": settings, "notes": notes,
            "measured": "; ".join(measured), "holds": holds, "data": data}
