"""Two curves of D-Cliques compared per panel (D-Cliques Figs. 9, 11 and 12): is the first
faster (a higher mean accuracy over the run) and tighter (a smaller final gap between the
best and the worst node) than the second? The scripts give the panels, the two labels and any
further check."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from topofl import figures

DCL = "D-Cliques (fully-connected) w/o clique avg."
#: Every D-Cliques experiment runs 100 epochs (Section IV-A).
PAPER_EPOCHS = 100


def epochs_of(panel: figures.Panel) -> float:
    """The epochs the panel's runs completed (the longest curve's)."""
    return max(e * int(panel.configs[k]["rounds"]) for k, e in panel.epochs.items())


def reading(panel: figures.Panel, labels: Sequence[str], tolerance: float, *,
            speed: bool = False, spread: bool = False, metric: str = "global_acc"
            ) -> dict[str, Any]:
    """``converged=`` or ``horizon=`` for a check comparing the curves ``labels`` of ``panel``.

    A speed (``speed``: the mean accuracy over the run; with ``spread``, the mean spread
    between nodes over the run) is read at the run's horizon, which the text names (the
    paper's 100 epochs, or the first part of them). A final value gets the convergence
    reading of the curve of the quantity it tests (:func:`topofl.figures.convergence`,
    ``tolerance`` = the check's margin; ``spread``: the spread between the best and the worst
    node at each evaluation, for a check of the final spread); where the run reached the
    paper's 100 epochs and the curves had not flattened, the claim is the paper's at its own
    horizon, said so."""
    epochs = epochs_of(panel)
    full = epochs >= 0.95 * PAPER_EPOCHS
    if speed:
        what = ("the mean spread between nodes over" if spread
                else "speed, the mean accuracy over")
        return {"horizon": f"{what} the paper's {PAPER_EPOCHS} epochs"
                if full else f"{what} the first {epochs:.3g} of the paper's {PAPER_EPOCHS} "
                             "epochs"}
    return reading_of({k: panel.runs[k] for k in labels}, epochs, tolerance, metric,
                      spread=spread)


def reading_of(cells: Mapping[str, Any], epochs: float, tolerance: float,
               metric: str = "global_acc", *, spread: bool = False) -> dict[str, Any]:
    """:func:`reading` of a final value of the curves ``cells`` (label: Records) that ran
    ``epochs`` epochs (curves of several panels); ``spread``: of their spread curves."""
    conv = figures.convergence(cells, metric, tolerance=tolerance, spread=spread)
    if conv.flat or epochs < 0.95 * PAPER_EPOCHS:
        return {"converged": conv}
    what = "spread curves" if spread else "curves"
    return {"horizon": f"the paper's {PAPER_EPOCHS} epochs ({what} still moving there: "
                       f"{conv.describe()})"}


def convergence_note(found: Mapping[str, figures.Panel], tolerance: float,
                     metric: str = "global_acc") -> str:
    """Each panel's convergence reading of all its curves (tolerance: the accuracy margin)."""
    parts = []
    for title, panel in found.items():
        conv = figures.convergence(panel.runs, metric, tolerance=tolerance)
        head = f"{title.split(' (')[0]}: " if len(found) > 1 else ""
        parts.append(f"{head}{conv.describe()} after {epochs_of(panel):.1f} epochs")
    return "Convergence of the curves (seed-mean gain over the last quarter of the rounds): " \
        + "; ".join(parts) + "."


def scale_note(found: Mapping[str, figures.Panel]) -> str:
    """What this scale gives each node and curve, from the runs' own configs."""
    parts = []
    for title, panel in found.items():
        cfg = next(iter(panel.configs.values()))
        epochs = max(panel.epochs.values()) * int(cfg["rounds"])
        parts.append(f"{title.split(' ')[0]}: {figures.samples_per_client(cfg):.0f} training "
                     f"samples per node ({cfg['data']}), {epochs:.1f} epochs")
    return ("At this scale " + "; ".join(parts) + " (the paper: 500 samples per node, 100 "
            "epochs).")


def build(args: figures.FigureArgs, panels: Mapping[str, Any],
          label: Callable[[Mapping[str, Any]], str], first: str, second: str, *,
          suptitle: str, names: tuple[str, str] | None = None,
          extra: Callable[[dict[str, figures.Panel]], tuple[list[Any], str]] | None = None,
          slight: bool = False, **curves: Any) -> figures.Result:
    """Run the panels, draw them, and check ``first`` against ``second`` in each panel
    (``names``: how the checks call them); ``extra(found)`` adds checks and a sentence to the
    measured line. The speed and spread
    checks of every panel are the headline (the paper's "faster and with lower variance", on
    each dataset); ``extra``'s are secondary unless marked. ``slight``: the paper calls the
    speed-up slight, so the speed is read as "at least as fast" (the margin policy of
    ``claims.toml``: a lead the paper calls slight is not one of a practical margin)."""
    one, two = names or (first, second)
    found = figures.panels(args, panels, label)
    fig, numbers = figures.curves(found, "global_acc", band="lines", suptitle=suptitle,
                                  **curves)
    acc, spr = figures.margin(args.name, "accuracy"), figures.margin(args.name, "spread")
    checks, parts, tiny = [], [], []
    for title, panel in found.items():
        short = title.split(" ")[0]
        a, b = (panel.runs[c] for c in (first, second))
        area = [figures.mean_over_rounds(r, "global_acc") for r in (a, b)]
        spread = [figures.final_spread(r, "global_acc") for r in (a, b)]
        fin = [figures.final(r, "global_acc") for r in (a, b)]
        tiny += [f"{short}: {what} {100 * d:.2f} points" for what, d in
                 (("mean accuracy over the run", area[0] - area[1]),
                  ("final spread", spread[0] - spread[1])) if abs(d.mean) < 0.001]
        speed = (f"{short}: {one} at least as fast as {two} (mean accuracy over the run; the "
                 "paper: 'slightly accelerates')" if slight else
                 f"{short}: {one} faster than {two} (mean accuracy over the run)")
        checks += [figures.above(speed, area[0] - area[1], margin=acc, headline=True,
                                 tie="pass" if slight else "inconclusive",
                                 **reading(panel, (first, second), acc, speed=True)),
                   figures.below(f"{short}: {one} lower final spread between nodes than {two}",
                                 spread[0] - spread[1], margin=spr, headline=True,
                                 **reading(panel, (first, second), spr, spread=True))]
        parts.append(f"{short}: final mean {one} {fin[0]:.3f} vs {two} {fin[1]:.3f}, mean over "
                     f"the run {area[0]:.3f} vs {area[1]:.3f}, final spread {spread[0]:.3f} vs "
                     f"{spread[1]:.3f}")
    if extra is not None:
        more, text = extra(found)
        checks += more
        parts.append(text)
    notes = [convergence_note(found, acc)]
    if tiny:
        notes.append(f"{one} against {two}, differences under 0.1 point (mean over the seeds), "
                     "too small to matter whatever their check says: " + "; ".join(tiny))
    if any(c.outcome != "pass" for c in checks):
        notes.append(scale_note(found))
    return figures.Result(fig, "; ".join(parts), checks, numbers, panels=found, notes=notes)
