"""D-Cliques Fig. 1: D-SGD with and without label skew on a ring, a grid and a complete graph.

Logistic regression, 100 nodes, D-SGD; left: IID data, right: label skew (2 shards per node,
most nodes see 2 classes). Bold lines: average test accuracy of the nodes on the global test
set (mean over the seeds, shaded: +- one std); thin lines: the minimum and maximum node.

    python paper_figures/fig_dcliques_01.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import _dcliques_gates  # beside this script
import _dcliques_versus

from topofl import figures

LABELS = {"ring": "ring", "torus:rows=10,cols=10": "grid", "complete": "fully connected"}
PANELS = {"IID": "dcliques_01_iid", "label skew (2 shards/node)": "dcliques_01_skew"}


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    found = figures.panels(args, PANELS, lambda c: LABELS[c["topology"]])
    fig, numbers = figures.curves(found, "global_acc", band="lines", sharey=True,
                                  suptitle="D-SGD, logistic regression, 100 nodes")
    iid, skew = (found[t].runs for t in PANELS)
    finals = {g: figures.final(skew[g], "global_acc") for g in LABELS.values()}
    iid_spread = figures.seedwise(lambda *v: max(v) - min(v),
                                  *(figures.final(r, "global_acc") for r in iid.values()))
    gaps = {g: finals["fully connected"] - finals[g] for g in ("ring", "grid")}
    acc = figures.margin(args.name, "accuracy")
    skew_at = _dcliques_versus.reading(found[list(PANELS)[1]], list(LABELS.values()), acc)
    checks = [figures.above(f"label skew: {g} below fully connected by more than 3x the IID "
                            "spread (at least 0.5 point)",
                            figures.seedwise(lambda a, b: a - 3 * max(b, 0.005), gaps[g],
                                             iid_spread), margin=acc, headline=True, **skew_at)
              for g in gaps]
    checks.append(figures.within("IID: the three graphs end within 1 point of each other "
                                 "(max - min of the final accuracies)", iid_spread, acc,
                                 **_dcliques_versus.reading(found[list(PANELS)[0]],
                                                            list(LABELS.values()), acc)))
    # the IID panel is the label-skew bar's control: the paper's IID curves match (Sec. I)
    gate = _dcliques_gates.gate(args.name, "IID", _dcliques_gates.values(iid))
    checks = _dcliques_gates.cover(checks, gate, _dcliques_gates.COVERED[args.name])
    measured = (f"IID: the three graphs end within {100 * iid_spread:.1f} points; label skew: "
                f"ring {finals['ring']:.3f}, grid {finals['grid']:.3f}, fully connected "
                f"{finals['fully connected']:.3f} (ring {100 * gaps['ring']:.1f} and grid "
                f"{100 * gaps['grid']:.1f} points below fully connected)")
    areas = {g: figures.mean_over_rounds(skew[g], "global_acc") for g in LABELS.values()}
    notes = [_dcliques_versus.convergence_note(found, acc)]
    for g in gaps:
        if checks[list(gaps).index(g)].outcome != "pass":
            lag = areas["fully connected"] - areas[g]
            notes.append(f"label skew: the {g} ends {100 * gaps[g]:.1f} points below fully "
                         f"connected; its mean accuracy over the run is {100 * lag:.1f} points "
                         "below" + (" (it lags during the run more than at the end)"
                                    if lag.mean > gaps[g].mean + 0.005 else ""))
    return figures.Result(fig, measured, checks, numbers, panels=found, notes=notes,
                          gates=[gate])


if __name__ == "__main__":
    raise SystemExit(main())
