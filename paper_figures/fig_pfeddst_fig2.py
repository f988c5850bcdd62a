"""PFedDST Fig. 2: accuracy of each selected peer on a client's validation data, random vs score.

PFedDST with the header-distance score alone (alpha = 0) against random selection of the same
10 peers per round, 100 clients, 5 classes per client of 100 (the CIFAR-100 setting of Section
III). Every round, before aggregating, each selected peer's model (body and head) and the client's
own model are scored on the client's validation split (``pfeddst(peer_accuracy="val")``): red
dots are the 10 selected peers of client 0, the green square its own model, the dashed line the
mean selected-peer accuracy over all clients.

    python paper_figures/fig_pfeddst_fig2.py [--quick | --full]
"""

from __future__ import annotations

import math
import sys
from typing import Any

from topofl import figures

PANELS = {"random": "(a) Random selection", "score": "(b) Score-based selection (header distance)"}
CLIENT = 0  # the paper plots "a specific local client"


def by_round(rec: Any, run: str, metric: str) -> dict[int, Any]:
    """``{round: value}`` of a list-valued metric of one run (as recorded, one row a round)."""
    return {int(r["round"]): r["value"] for r in rec.rows
            if r["run"] == run and r["metric"] == metric and r["client"] is None}


def mean(values: list[float]) -> float:
    finite = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    return sum(finite) / len(finite) if finite else math.nan


def main(argv: list[str] | None = None) -> int:
    args = figures.parse_args(__doc__, "pfeddst_fig2", argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    cfg = figures.load_config("pfeddst_fig2", args.scale)
    rec = figures.sweep(cfg, args)
    run_of = {str(rec.configs[r]["selection"]): r for r in rec.runs}
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    numbers, summary = {}, {}
    for ax, (sel, title) in zip(axes, PANELS.items()):
        run = run_of[sel]
        peer = by_round(rec, run, "pfeddst_peer_acc")
        own = by_round(rec, run, "pfeddst_own_acc")
        shared = by_round(rec, run, "pfeddst_shared_class")
        rounds = sorted(peer)
        for i, t in enumerate(rounds):
            accs = [a for a in peer[t][CLIENT] if a is not None and not math.isnan(a)]
            ax.scatter([t + 1] * len(accs), accs, s=10, color="tab:red", alpha=0.55,
                       label="selected peers of client 0" if i == 0 else None)
            ax.scatter([t + 1], [own[t][CLIENT]], s=22, marker="s", color="tab:green",
                       label="client 0's own model" if i == 0 else None)
        every = [mean([a for row in peer[t] for a in row]) for t in rounds]
        ax.plot([t + 1 for t in rounds], every, "k--", lw=1.2,
                label="selected peers, mean over all clients")
        ax.set_title(title)
        ax.set_xlabel("round")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3)
        step = max(1, len(rounds) // 20)
        numbers[title] = pd.DataFrame({
            "round": [t + 1 for t in rounds[::step]],
            "client 0: mean of its selected peers": [mean(peer[t][CLIENT]) for t in rounds[::step]],
            "client 0: own model": [float(own[t][CLIENT]) for t in rounds[::step]],
            "all clients: mean of selected peers": every[::step],
            "all clients: own model": [mean(own[t]) for t in rounds[::step]],
            "selected peers sharing a class": [float(shared[t]) for t in rounds[::step]],
        })
        later = rounds[1:] or rounds  # round 1 compares the identical initial models
        summary[sel] = {
            "client0": mean([mean(peer[t][CLIENT]) for t in later]),
            "all": mean([every[rounds.index(t)] for t in later]),
            "own": mean([mean(own[t]) for t in later]),
            "shared": mean([float(shared[t]) for t in later]),
            "shared_range": (min(float(shared[t]) for t in later),
                             max(float(shared[t]) for t in later)),
        }
    axes[0].set_ylabel("accuracy on the client's validation split")
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=9, frameon=False)
    fig.suptitle("Validation accuracy of each selected peer on the local data")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    r, s = summary["random"], summary["score"]
    better_all, better_one = s["all"] > r["all"], s["client0"] > r["client0"]
    holds = True if better_all and better_one else None if better_all or better_one else False
    measured = (f"mean over rounds 2-{len(rounds)} of the selected peers' validation accuracy: "
                f"score {s['all']:.3f} vs random {r['all']:.3f} over all clients, "
                f"{s['client0']:.3f} vs {r['client0']:.3f} for client 0; selected peers "
                f"sharing a class with the client {s['shared']:.2f} vs {r['shared']:.2f}; the "
                f"clients' own models {s['own']:.3f} (score) and {r['own']:.3f} (random)")
    notes = list(cfg["_notes"])
    notes.append("Score-based here is eq. (9) with alpha = 0: the header distance times the "
                 "recency score (lam = 1, c = 2), so a peer chosen in the last round is less "
                 "likely to be chosen again; the paper's Fig. 2 names the header distance only.")
    lo, hi = s["shared_range"]
    notes.append(f"With the score, the share of selected peers holding a class of the client "
                 f"swings between {lo:.2f} and {hi:.2f} from round to round (random: "
                 f"{r['shared_range'][0]:.2f} to {r['shared_range'][1]:.2f}), likely the recency "
                 "factor of eq. (9): with lam = 1 a peer chosen in the last round keeps "
                 "1 - e^-1 = 63% of its score, so the peers chosen in one round tend to be "
                 "passed over in the next.")
    notes.append("A peer's model predicts only its own classes with its personal head, so "
                 "on a client holding 5 of 100 classes even a peer sharing one class scores "
                 "at most about a fifth of the client's validation data: every peer accuracy "
                 "here is far below the client's own model, whichever the selection.")
    notes.append("Round 1 compares the identical initial models; the means start at round 2.")
    png = figures.write(
        args, fig, title="PFedDST Fig. 2: validation accuracy of the selected peers",
        setting=figures.setting(rec), numbers=numbers,
        claim=("for a client selecting 10 peers per round, the models of peers chosen by the "
               "header distance score generally reach a higher accuracy on its validation data "
               "than randomly chosen peers (Fig. 2 b vs a), while its own model is best on it"),
        measured=measured, holds=holds, notes=notes, dataset=str(cfg["data"]),
    )
    print(png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
