"""PFedDST Fig. 2: accuracy of each selected peer on a client's validation data, random vs score.

PFedDST with the header-distance score alone (alpha = 0) against random selection of the same
10 peers per round, 100 clients, 5 classes per client of 100 (the CIFAR-100 setting of Section
III). Every round, before aggregating, each selected peer's model (body and head) and the client's
own model are scored on the client's validation split (``pfeddst(peer_accuracy="val")``): red
dots are the 10 selected peers of client 0 (first seed), the green square its own model, the
dashed line the mean selected-peer accuracy over all clients (mean over the seeds).

The headline check: over all clients, the score-selected peers' mean validation accuracy over
rounds 2+ above the random ones', by the accuracy margin, seed by seed (a reading over the rounds
the figure shows, not of a final accuracy; the convergence of the two curves is reported beside
it). Secondary: the same for client 0, and the clients' own models above their selected peers.

    python paper_figures/fig_pfeddst_fig2.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import math
from typing import Any

import _pfeddst  # beside this script
from _pfeddst import by_round, mean

from topofl import figures

PANELS = {"random": "(a) Random selection", "score": "(b) Score-based selection (header distance)"}
CLIENT = 0  # the paper plots "a specific local client"


def summary(rec: Any) -> dict[str, Any]:
    """One run's per-round values: client 0's selected peers and own model, the mean over all
    clients, the share of selected peers holding a class of the client; and their means over
    rounds 2+ (round 1 compares the identical initial models)."""
    run = rec.runs[0]
    peer = by_round(rec, run, "pfeddst_peer_acc")
    own = by_round(rec, run, "pfeddst_own_acc")
    shared = by_round(rec, run, "pfeddst_shared_class")
    rounds = sorted(peer)
    every = [mean([a for row in peer[t] for a in row]) for t in rounds]
    later = rounds[1:] or rounds
    return {"peer": peer, "own_by_round": own, "rounds": rounds, "every": every,
            "table": {"round": [t + 1 for t in rounds],
                      "client 0: mean of its selected peers": [mean(peer[t][CLIENT])
                                                               for t in rounds],
                      "client 0: own model": [float(own[t][CLIENT]) for t in rounds],
                      "all clients: mean of selected peers": every,
                      "all clients: own model": [mean(own[t]) for t in rounds],
                      "selected peers sharing a class": [float(shared[t]) for t in rounds]},
            "client0": mean([mean(peer[t][CLIENT]) for t in later]),
            "all": mean([every[rounds.index(t)] for t in later]),
            "own": mean([mean(own[t]) for t in later]),
            "shared": mean([float(shared[t]) for t in later])}


def draw(ax: Any, title: str, first: dict[str, Any], every: list[float]) -> None:
    """Client 0's peers and own model (the first seed) and the mean over all clients."""
    for i, t in enumerate(first["rounds"]):
        accs = [a for a in first["peer"][t][CLIENT] if a is not None and not math.isnan(a)]
        ax.scatter([t + 1] * len(accs), accs, s=10, color="tab:red", alpha=0.55,
                   label="selected peers of client 0" if i == 0 else None)
        ax.scatter([t + 1], [first["own_by_round"][t][CLIENT]], s=22, marker="s", color="tab:green",
                   label="client 0's own model" if i == 0 else None)
    ax.plot([t + 1 for t in first["rounds"]], every, "k--", lw=1.2,
            label="selected peers, mean over all clients")
    ax.set_title(title)
    ax.set_xlabel("round")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.grid(alpha=0.3)


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    import matplotlib.pyplot as plt
    import pandas as pd

    found = figures.panels(args, {"selection": "pfeddst_fig2"}, lambda c: str(c["selection"]))
    runs = found["selection"].runs
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    numbers, stat, rounds = {}, {}, 0
    for ax, (sel, title) in zip(axes, PANELS.items()):
        got = [summary(runs[sel].for_run(r)) for r in runs[sel].runs]
        rounds = max([rounds] + [g["rounds"][-1] + 1 for g in got])
        seeds = tuple(int(runs[sel].configs[r]["seed"]) for r in runs[sel].runs)
        stat[sel] = {k: figures.OverSeeds(tuple(g[k] for g in got), seeds)
                     for k in ("client0", "all", "own", "shared")}
        every = [sum(v) / len(v) for v in zip(*(g["every"] for g in got))]
        draw(ax, title, got[0], every)
        table = pd.DataFrame(got[0]["table"])
        step = max(1, len(table) // 20)
        numbers[f"{title} (first seed)"] = table.iloc[::step].reset_index(drop=True)
    axes[0].set_ylabel("accuracy on the client's validation split")
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=9, frameon=False)
    fig.suptitle("Validation accuracy of each selected peer on the local data")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    r, s = stat["random"], stat["score"]
    margin = figures.margin(args.name, "accuracy")
    horizon = (f"the paper's Fig. 2 reads the selected peers round by round during training "
               f"(its rounds not given): here their mean over rounds 2-{rounds}")
    conv = figures.convergence({k: runs[k] for k in PANELS}, "pfeddst_peer_acc",
                               tolerance=margin)
    at: dict[str, Any] = {"horizon": horizon, "converged": conv, "margin": margin}
    checks = [figures.above("score-selected peers more accurate on the clients' validation "
                            "data than random ones (all clients, mean over rounds 2+)",
                            s["all"] - r["all"], headline=True, **at),
              figures.above("... for client 0", s["client0"] - r["client0"], **at),
              figures.above("the clients' own models more accurate on their validation data "
                            "than their score-selected peers (all clients, rounds 2+)",
                            s["own"] - s["all"], **at)]
    measured = (f"mean over rounds 2+ of the selected peers' validation accuracy: score "
                f"{s['all']:.3f} vs random {r['all']:.3f} over all clients, {s['client0']:.3f} "
                f"vs {r['client0']:.3f} for client 0; selected peers sharing a class with the "
                f"client {s['shared']:.2f} vs {r['shared']:.2f}; the clients' own models "
                f"{s['own']:.3f} (score) and {r['own']:.3f} (random)")
    notes = ["Selected peers' accuracy, all clients: " + _pfeddst.late_gains(conv)]
    return figures.Result(fig, measured, checks, numbers, panels=found, notes=notes,
                          paper_rounds=[_pfeddst.PAPER_ROUNDS])


if __name__ == "__main__":
    raise SystemExit(main())
