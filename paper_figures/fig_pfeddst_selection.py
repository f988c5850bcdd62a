"""PFedDST's peer selection: does the score beat random peers on a harder split than digits?

On digits (2 classes per client of 10) PFedDST's score selection did not beat random selection
(final accuracy 0.931 vs 0.937, ``analysis/personalized_digits.md``). Here the same question on
the CIFAR-100 setting of Section III (100 clients, 5 classes per client of 100, fewer samples per
client): random selection, the header-distance score alone (alpha = 0, Fig. 2) and the full score
of eq. (9) (alpha = 0.1), 10 peers per round, everything else equal. Reported per run: final
and best personalized test accuracy, the selected peers' validation accuracy on the client's data
and the share of selected peers holding a class of the client. The runs are those of Fig. 2
(``fig_pfeddst_fig2.py``) plus the full-score run.

    python paper_figures/fig_pfeddst_selection.py [--quick | --full]
"""

from __future__ import annotations

import dataclasses
import sys

from topofl import figures

CONFIGS = ("pfeddst_fig2", "pfeddst_fig2_full_score")
RANDOM, HEADER = "random selection", "score: header distance (alpha = 0)"


def label(config: dict) -> str:  # type: ignore[type-arg]
    """The row of a run, from its resolved config."""
    if config["selection"] == "random":
        return RANDOM
    if float(config["alpha"]) == 0.0:
        return HEADER
    return f"score: full eq. (9) (alpha = {config['alpha']:g})"


def main(argv: list[str] | None = None) -> int:
    args = figures.parse_args(__doc__, "pfeddst_selection", argv)
    import numpy as np
    import pandas as pd

    # the runs are cached with Fig. 2's, so that both results share them
    src = dataclasses.replace(args, runs=args.runs.parent / "pfeddst_fig2")
    panel = figures.panels(src, {"selection": list(CONFIGS)}, label)["selection"]
    runs, notes = panel.runs, list(panel.notes)
    args.sweep_seconds += src.sweep_seconds
    args.run_seconds += src.run_seconds
    rows = []
    for key, rec in runs.items():
        later = slice(1, None)  # round 1 compares the identical initial models
        rows.append({
            "selection": key,
            "final test acc": rec.final("test_acc_mean"),
            "best test acc": rec.best("test_acc_mean"),
            "selected peers' val acc (mean over rounds 2+)":
                float(np.nanmean(rec.series("pfeddst_peer_acc_mean")[1][later])),
            "own val acc (mean over rounds 2+)":
                float(np.nanmean(rec.series("pfeddst_own_acc_mean")[1][later])),
            "peers sharing a class (mean over rounds 2+)":
                float(np.nanmean(rec.series("pfeddst_shared_class")[1][later])),
        })
    table = pd.DataFrame(rows)
    t = table.set_index("selection")
    acc = t["final test acc"]
    full = next(k for k in t.index if k.startswith("score: full"))
    gain_full, gain_header = acc[full] - acc[RANDOM], acc[HEADER] - acc[RANDOM]
    # a gain counts when it is above one point: the seed-to-seed spread measured on digits
    beyond = [g > 0.01 for g in (gain_full, gain_header)]
    holds = True if all(beyond) else None if any(beyond) else False
    peer = t["selected peers' val acc (mean over rounds 2+)"]
    shared = t["peers sharing a class (mean over rounds 2+)"]
    measured = (f"final personalized test accuracy: random {acc[RANDOM]:.3f}, header-distance "
                f"score {acc[HEADER]:.3f} ({100 * gain_header:+.1f} points), full score "
                f"{acc[full]:.3f} ({100 * gain_full:+.1f}); selected peers sharing a class "
                f"{shared[RANDOM]:.2f} / {shared[HEADER]:.2f} / {shared[full]:.2f}, their "
                f"accuracy on the client's validation data {peer[RANDOM]:.3f} / "
                f"{peer[HEADER]:.3f} / {peer[full]:.3f}")
    if shared[full] <= shared[RANDOM] + 0.02 < shared[HEADER]:
        notes.append(f"The full score picks peers sharing a class no more often than random "
                     f"choice ({shared[full]:.2f} vs {shared[RANDOM]:.2f}), while the header "
                     f"distance alone doubles it ({shared[HEADER]:.2f}): likely the loss term "
                     "alpha * s_l, large on a peer whose classes the client's head never "
                     "predicts, outweighs the header distance at alpha = 0.1 on 100 classes "
                     "(the default alpha was chosen on digits; see pfeddst's Notes).")
    notes.append("One seed per row (seed 0): a gain counts only above one point, the "
                 "spread between seeds that analysis/personalized_digits.md measured on digits "
                 "(std 0.008-0.011); 'holds' is yes when both scores gain more than a point "
                 "over random selection, partly when one does, no when neither does.")
    notes.append("On digits (analysis/personalized_digits.md: 100 clients, 2 classes per "
                 "client, MLP, 30 rounds, 3 seeds) score selection gave 0.931 +- 0.008 and "
                 "random selection 0.937 +- 0.011.")
    out = figures.write(
        args, None, title="PFedDST: score-based vs random peer selection on a harder split",
        setting=panel.setting, numbers=table,
        claim=("PFedDST's score selection (loss, header distance and recency, eq. 9) picks "
               "more beneficial peers than random choice and so improves accuracy and "
               "convergence (Sections II-B and IV); Fig. 2 shows it for the header distance "
               "alone"),
        measured=measured, holds=holds, notes=notes, dataset=str(panel.configs[RANDOM]["data"]),
    )
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
