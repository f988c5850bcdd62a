"""Two curves of D-Cliques compared per panel (D-Cliques Figs. 9, 11 and 12): is the first
faster (a higher mean accuracy over the run) and tighter (a smaller final gap between the
best and the worst node) than the second? The scripts give the panels, the two labels and any
further check."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from topofl import figures

DCL = "D-Cliques (fully-connected) w/o clique avg."


def flatness(found: Mapping[str, figures.Panel], metric: str = "global_acc_mean") -> str:
    """Whether each curve flattened, from the seed-mean curve of ``metric``: the points it
    gained over the last quarter of its rounds (flat: under 1 point) and the first evaluated
    round after which it stays within 1 point of its best (analysis/standins.md's rule)."""
    flat, rising = [], []
    for title, panel in found.items():
        short = title.split(" (")[0] if len(found) > 1 else ""
        for label, rec in panel.runs.items():
            x, y = figures.mean_curve(rec, metric)
            gain = figures.late_gain(rec, metric)[0]  # over the last quarter of the rounds
            near = y >= y.max() - 0.01
            since = int(next(t for i, t in enumerate(x) if near[i:].all()))
            (flat if round(gain, 1) < 1 else rising).append(
                f"{f'{short}: ' if short else ''}{label} ({gain:+.1f} points over the last "
                f"quarter, within 1 point of its best from round {since} of {int(x[-1])})")
    parts = []
    if rising:
        parts.append("Not flat at the end (seed-mean curve still rising by 1 point or more over "
                     "the last quarter of the rounds): " + "; ".join(rising) + ".")
    if flat:
        parts.append("Flat: " + "; ".join(flat) + ".")
    return " ".join(parts)


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
          **curves: Any) -> figures.Result:
    """Run the panels, draw them, and check ``first`` against ``second`` in each panel
    (``names``: how the checks call them); ``extra(found)`` adds checks and a sentence to the
    measured line."""
    one, two = names or (first, second)
    found = figures.panels(args, panels, label)
    fig, numbers = figures.curves(found, "global_acc", band="lines", suptitle=suptitle,
                                  **curves)
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
        checks += [figures.above(f"{short}: {one} faster than {two} (mean accuracy over the "
                                 "run)", area[0] - area[1]),
                   figures.below(f"{short}: {one} lower final spread between nodes than {two}",
                                 spread[0] - spread[1])]
        parts.append(f"{short}: final mean {one} {fin[0]:.3f} vs {two} {fin[1]:.3f}, mean over "
                     f"the run {area[0]:.3f} vs {area[1]:.3f}, final spread {spread[0]:.3f} vs "
                     f"{spread[1]:.3f}")
    if extra is not None:
        more, text = extra(found)
        checks += more
        parts.append(text)
    notes = [flatness(found)]
    if tiny:
        notes.append(f"{one} against {two}, differences under 0.1 point (mean over the seeds), "
                     "too small to matter whatever their check says: " + "; ".join(tiny))
    if any(c.outcome != "pass" for c in checks):
        notes.append(scale_note(found))
    return figures.Result(fig, "; ".join(parts), checks, numbers, panels=found, notes=notes)
