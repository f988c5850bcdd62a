"""DPFL Appendix Fig. 6: accuracy against the variance between local models on CINIC-10.

One point per method of Table 1 (Local, FedAvg, FedAvg+FT, FedProx, FedProx+FT, APFL, PerFedAvg,
Ditto, FedRep, kNN-Per, pFedGraph; DPFL with B_c = inf, 0.2N, 0.1N, 0.05N): x the clients'
average test accuracy, y the variance of the clients' accuracies (%²), both averaged over the
seeds; 200 clients, (a) Dir(0.1) and (b) Patho(3). Better is the bottom right. The Markdown
also holds Table 1's CINIC-10 columns. CINIC-10's offline stand-in is a seeded Gaussian
mixture (see the configs).

    python paper_figures/fig_dpfl_fig6.py [--quick | --full]
"""

from __future__ import annotations

import sys

from topofl import figures

# config prefix (one config per method: <prefix>_<method>) -> panel title
PANELS = {"dpfl_fig6_dir": "(a) CINIC-10 Dir(0.1) (paper Fig. 6a)",
          "dpfl_fig6_patho": "(b) CINIC-10 Patho(3) (paper Fig. 6b)"}
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


def main(argv: list[str] | None = None) -> int:
    args = figures.parse_args(__doc__, "dpfl_fig6", argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    import topofl as tf

    fig, axs = plt.subplots(1, len(PANELS), figsize=(5.8 * len(PANELS), 4.4), squeeze=False)
    axes = axs[0]
    numbers, notes, verdicts, measured, settings = {}, [], [], [], {}
    for ax, (prefix, title) in zip(axes, PANELS.items()):
        stats: dict[str, list[tuple[float, float]]] = {}
        configs = {}
        for method in METHODS:
            cfg = figures.load_config(f"{prefix}_{method}", args.scale)
            notes += [n for n in cfg["_notes"] if n not in notes]
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
    notes += ["The paper draws only the methods above 78% (Dir(0.1)) and 77% (Patho(3)) "
              "accuracy; every method is drawn here. Variance: the population variance over "
              "clients of their test accuracy (in %), averaged over the seeds (one seed at the "
              "default scale).",
              "Baselines are scored at their last round, DPFL with each client's best-validation "
              "model (as in Table 1).",
              "CINIC-10 is not available offline and 200 clients leave the digits under 9 "
              "samples each: the stand-in is a seeded 10-class Gaussian mixture in 64 "
              "dimensions (6000 samples, 30 per client), an MLP, 20 rounds (DPFL 18) instead of "
              "50 (48); its Patho(3) drops the Dir(0.5) spread inside a class, which leaves "
              "clients without a validation or test sample at this size."]
    png = figures.write(
        args, fig, title="DPFL Fig. 6: accuracy vs variance between local models (CINIC-10)",
        setting=settings,
        numbers=numbers,
        claim=("on CINIC-10 (200 clients) DPFL (every budget) sits in the bottom-right corner: "
               "the highest average test accuracy (Table 1: Dir(0.1) 80.91-81.49% against at "
               "most 80.42% kNN-Per, 78.59% Local, 38.48% FedAvg; Patho(3) 80.11-80.51% against "
               "at most 79.54%) and a lower variance between the clients' accuracies than the "
               "methods shown"),
        measured="; ".join(measured), holds=holds, notes=notes, dataset=str(cfg["data"]),
    )
    print(png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
