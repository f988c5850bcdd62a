"""PFedDST's peer selection: does the score beat random peers on a harder split than digits?

On digits (2 classes per client of 10) PFedDST's score selection did not beat random selection
(final accuracy 0.931 vs 0.937, ``analysis/personalized_digits.md``). Here the same question on
the CIFAR-100 setting of Section III (100 clients, 5 classes per client of 100, fewer samples per
client): random selection, the header-distance score alone (alpha = 0, Fig. 2) and the full score
of eq. (9) (alpha = 0.1), 10 peers per round, everything else equal. Reported per run: final
and best personalized test accuracy, the selected peers' validation accuracy on the client's data
and the share of selected peers holding a class of the client. The runs are those of Fig. 2
(``fig_pfeddst_fig2.py``) plus the full-score run.

    python paper_figures/fig_pfeddst_selection.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

from typing import Any

from topofl import figures

CONFIGS = ("pfeddst_fig2", "pfeddst_fig2_full_score")
RANDOM, HEADER = "random selection", "score: header distance (alpha = 0)"


def label(config: dict[str, Any]) -> str:
    """The row of a run, from its resolved config."""
    if config["selection"] == "random":
        return RANDOM
    if float(config["alpha"]) == 0.0:
        return HEADER
    return f"score: full eq. (9) (alpha = {config['alpha']:g})"


def later(metric: str) -> Any:
    """The mean over rounds 2+ of a recorded metric of one run (round 1 compares the identical
    initial models)."""
    import numpy as np

    return lambda one: float(np.nanmean(one.series(metric)[1][1:]))


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    import pandas as pd

    # the runs are cached with Fig. 2's, so that both results share them
    found = figures.panels(args, {"selection": list(CONFIGS)}, label, share="pfeddst_fig2")
    runs = found["selection"].runs
    cols = {"final test acc": figures.final,
            "best test acc": lambda r: figures.per_seed(r, lambda one: one.best("test_acc_mean")),
            "selected peers' val acc (mean over rounds 2+)":
                lambda r: figures.per_seed(r, later("pfeddst_peer_acc_mean")),
            "own val acc (mean over rounds 2+)":
                lambda r: figures.per_seed(r, later("pfeddst_own_acc_mean")),
            "peers sharing a class (mean over rounds 2+)":
                lambda r: figures.per_seed(r, later("pfeddst_shared_class"))}
    t = {k: {c: fn(rec) for c, fn in cols.items()} for k, rec in runs.items()}
    full = next(k for k in t if k.startswith("score: full"))
    acc = {k: t[k]["final test acc"] for k in t}
    checks = [figures.above(f"{k} above random selection (final accuracy)", acc[k] - acc[RANDOM])
              for k in (HEADER, full)]
    peer = {k: t[k]["selected peers' val acc (mean over rounds 2+)"] for k in t}
    shared = {k: t[k]["peers sharing a class (mean over rounds 2+)"] for k in t}
    measured = (f"final personalized test accuracy: random {acc[RANDOM]:.3f}, header-distance "
                f"score {acc[HEADER]:.3f} ({100 * (acc[HEADER] - acc[RANDOM]):+.1f} points), "
                f"full score {acc[full]:.3f} ({100 * (acc[full] - acc[RANDOM]):+.1f}); selected "
                f"peers sharing a class {shared[RANDOM]:.2f} / {shared[HEADER]:.2f} / "
                f"{shared[full]:.2f}, their accuracy on the client's validation data "
                f"{peer[RANDOM]:.3f} / {peer[HEADER]:.3f} / {peer[full]:.3f}")
    table = pd.DataFrame([{"selection": k, **v} for k, v in t.items()])
    return figures.Result(None, measured, checks, table, panels=found)


if __name__ == "__main__":
    raise SystemExit(main())
