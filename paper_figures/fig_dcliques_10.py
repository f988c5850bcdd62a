"""D-Cliques Fig. 10: CIFAR-10, effect of Clique Averaging without and with momentum.

100 nodes, 2 shards per node, GN-LeNet, D-SGD on D-Cliques (10 cliques of 10 built with Greedy
Swap, fully-connected inter-clique topology). Left (a): without Clique Averaging; right (b): with
Clique Averaging; each with momentum 0.9 and without momentum. Bold lines: average accuracy of
the nodes on the global test set (mean over the seeds, shaded: +- one std); thin lines: the
minimum and maximum node.

    python paper_figures/fig_dcliques_10.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import _dcliques_gates  # beside this script
import _dcliques_versus  # beside this script

from topofl import figures

PANELS = {"(a) without Clique Averaging": "dcliques_10_no_ca",
          "(b) with Clique Averaging": "dcliques_10_ca"}
MOM, NO_MOM = "with momentum", "without momentum"


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    found = figures.panels(args, PANELS,
                           lambda c: MOM if float(c["momentum"]) > 0 else NO_MOM)
    n = next(iter(found.values())).configs[MOM]["n_clients"]
    fig, numbers = figures.curves(
        found, "global_acc", band="lines", sharey=True,
        suptitle=f"CIFAR-10 (GN-LeNet), D-Cliques (fully-connected), {n} nodes")
    pa, pb = PANELS
    final = {(p, c): figures.final(found[p].runs[c], "global_acc") for p in PANELS
             for c in (MOM, NO_MOM)}
    spread = {(p, c): figures.final_spread(found[p].runs[c], "global_acc") for p in PANELS
              for c in (MOM, NO_MOM)}
    others = [k for k in final if k != (pb, MOM)]
    acc, spr = figures.margin(args.name, "accuracy"), figures.margin(args.name, "spread")
    at = {p: _dcliques_versus.reading(found[p], (MOM, NO_MOM), acc) for p in PANELS}
    four = {f"{p}: {c}": found[p].runs[c] for p in PANELS for c in (MOM, NO_MOM)}
    epochs = _dcliques_versus.epochs_of(found[pb])
    every = _dcliques_versus.reading_of(four, epochs, acc)  # all four curves
    # the spread check reads the four spread curves (the quantity it tests)
    every_spread = _dcliques_versus.reading_of(four, epochs, spr, spread=True)
    checks = [
        figures.below("momentum hurts without Clique Averaging",
                      final[pa, MOM] - final[pa, NO_MOM], margin=acc, **at[pa]),
        figures.above("momentum helps with Clique Averaging",
                      final[pb, MOM] - final[pb, NO_MOM], margin=acc, **at[pb]),
        figures.above("Clique Averaging + momentum ends above the best of the other three",
                      final[pb, MOM] - figures.seedwise(max, *(final[k] for k in others)),
                      margin=acc, headline=True, **every),
        figures.below("and has a lower final spread than the lowest of the other three",
                      spread[pb, MOM] - figures.seedwise(min, *(spread[k] for k in others)),
                      margin=spr, headline=True, **every_spread),
    ]
    # the stand-in's gate: the orders the paper states among the other three (Sec. IV-C)
    gate = _dcliques_gates.gate(args.name, "CIFAR-10", _dcliques_gates.of_panels(found))
    checks = _dcliques_gates.cover(checks, gate, _dcliques_gates.COVERED[args.name])
    measured = (
        f"final mean / spread (max - min node): w/o CA: momentum {final[pa, MOM]:.3f} / "
        f"{spread[pa, MOM]:.3f}, none {final[pa, NO_MOM]:.3f} / {spread[pa, NO_MOM]:.3f}; "
        f"with CA: momentum {final[pb, MOM]:.3f} / {spread[pb, MOM]:.3f}, none "
        f"{final[pb, NO_MOM]:.3f} / {spread[pb, NO_MOM]:.3f}")
    notes = [_dcliques_versus.convergence_note(found, acc)]
    if any(c.outcome != "pass" for c in checks):
        notes.append(_dcliques_versus.scale_note(found))
    return figures.Result(fig, measured, checks, numbers, panels=found, notes=notes,
                          gates=[gate])


if __name__ == "__main__":
    raise SystemExit(main())
