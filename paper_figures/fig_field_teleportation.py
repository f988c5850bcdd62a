"""Field claim: Teleportation keeps its accuracy as n grows (Takezawa and Stich, ICLR 2025).

Teleportation as the paper defines it (algorithm ``teleport``: only k = 4 models exist; each
round they are teleported to k random nodes, trained there one local step and gossiped on a ring
over the k slots) against D-SGD on a ring of n nodes, n = 20, 80 and 320, logistic regression on
the synthetic 10-class mixture of field_tracking: one data set of 256,000 samples split over the
n nodes, one label shard a node (one class a node, the classes placed at random on the ring).
Teleportation's accuracy is that of its k models (the mean of their accuracies on the global
test set), the ring's that of its n models. The headline (Teleportation does not lose accuracy
from the smallest n to the largest) is decided only where the ring does lose accuracy there;
otherwise it is untestable at this scale. Left: the accuracy against rounds at the largest n
(mean over the seeds, shaded: +- one std); right: each method's final accuracy against n.

    python paper_figures/fig_field_teleportation.py [--quick | --full] [--update-results]
"""

from __future__ import annotations

import dataclasses
from typing import Any

from topofl import figures

NAMES = {"teleport": "Teleportation (k = 4)", "dsgd": "D-SGD, ring"}


def label(cfg: Any) -> str:
    """A curve's label: ``"<method>, n = <n>"``."""
    return f"{NAMES[cfg['algorithm']]}, n = {cfg['n_clients']}"


def _points(x: figures.OverSeeds) -> str:
    """A difference in points, signed mean ± std over the seeds."""
    return f"{100 * x.mean:+.1f} ± {100 * x.std:.1f}"


def untestable(check: figures.Check, control: figures.Check) -> figures.Check:
    """The headline ``check`` as the control allows: unchanged where the ring's degradation
    (``control``) passes, else inconclusive (what it would have been kept in its reason).

    Examples
    --------
    >>> S = figures.OverSeeds
    >>> h = "a toy"
    >>> head = figures.above("T", S((0.0, 0.001, -0.001), (0, 1, 2)), margin=0.01,
    ...                      tie="pass", horizon=h, headline=True)
    >>> ring = figures.below("R", S((-0.002, 0.0, 0.001), (0, 1, 2)), margin=0.01, horizon=h)
    >>> c = untestable(head, ring)
    >>> c.outcome, c.reason.split(";")[0]
    ('inconclusive', 'untestable on this stand-in: the ring does not degrade (its check: inconclusive)')
    >>> untestable(head, figures.below("R", S((-0.03, -0.04, -0.035), (0, 1, 2)), margin=0.01,
    ...                                horizon=h)).outcome
    'pass'
    """  # noqa: E501
    if control.outcome == "pass":
        return check
    why = f"untestable on this stand-in: the ring does not degrade (its check: {control.outcome})"
    was = (f"; would be {check.outcome} ({check.reason})" if check.outcome in ("pass", "fail")
           else f"; {check.reason}")
    return dataclasses.replace(check, outcome="inconclusive", reason=why + was)


def build(args: figures.FigureArgs, configs: list[str], title: str, *,
          last: int = 1) -> figures.Result:
    """The result of Teleportation's claim on the runs of ``configs`` (Teleportation, the
    ring), the panel titled ``title``, a final accuracy read as the mean of the last ``last``
    evaluations (:func:`topofl.figures.final`). Shared with
    ``fig_field_teleportation_fmnist.py``."""
    import matplotlib.pyplot as plt
    import pandas as pd

    import topofl as tf

    found = figures.panels(args, {title: configs}, label)
    panel = next(iter(found.values()))
    runs = panel.runs
    ns = sorted({int(c["n_clients"]) for c in panel.configs.values()})
    small, large = ns[0], ns[-1]
    acc = figures.margin(args.name, "accuracy")
    fin = {(g, n): figures.final(runs[f"{g}, n = {n}"], "global_acc", last=last)
           for g in NAMES.values() for n in ns}
    tele, ring = NAMES["teleport"], NAMES["dsgd"]

    def reading(*cells: tuple[str, int]) -> dict[str, Any]:
        chosen = {f"{g}, n = {n}": runs[f"{g}, n = {n}"] for g, n in cells}
        return {"converged": figures.convergence(chosen, "global_acc", tolerance=acc)}

    ring_degrades = figures.below(
        f"ring: final accuracy at n = {large} below n = {small}",
        fin[(ring, large)] - fin[(ring, small)], margin=acc,
        **reading((ring, small), (ring, large)))
    headline = figures.above(
        f"Teleportation: final accuracy at n = {large} not below n = {small} "
        "(at least as good)", fin[(tele, large)] - fin[(tele, small)],
        margin=acc, tie="pass", headline=True, **reading((tele, small), (tele, large)))
    checks = [
        untestable(headline, ring_degrades),
        ring_degrades,
        figures.above(f"n = {large}: Teleportation's final accuracy not below the ring's "
                      "(at least as good)", fin[(tele, large)] - fin[(ring, large)],
                      margin=acc, tie="pass", **reading((tele, large), (ring, large))),
    ]

    fig, (left, right) = plt.subplots(1, 2, figsize=(11.0, 4.0))
    tf.plotting.convergence({k: v for k, v in runs.items() if k.endswith(f"n = {large}")},
                            "global_acc", ax=left, title=f"{panel.title}, n = {large}",
                            band=True, ylabel="test accuracy (global test set)",
                            legend="below")
    for g in NAMES.values():
        means = [100 * fin[(g, n)].mean for n in ns]
        stds = [100 * fin[(g, n)].std for n in ns]
        right.errorbar(ns, means, yerr=stds, marker="o", capsize=3, label=g)
    right.set_xscale("log", base=2)
    right.set_xticks(ns, [str(n) for n in ns])
    right.set_xlabel("nodes n (log)")
    right.set_ylabel("final test accuracy (%)")
    right.set_title("final accuracy against n (mean ± std over seeds)")
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False,
                 fontsize=8)
    fig.tight_layout()

    samples = {n: figures.samples_per_client(next(
        c for c in panel.configs.values() if int(c["n_clients"]) == n)) for n in ns}
    rows = [{"method": g, "n": n, "final accuracy": fin[(g, n)],
             "models": 4 if g == tele else n, "samples a node": round(samples[n]),
             "ring's spectral gap": (f"{tf.spectral.spectral_gap(tf.topologies.ring(n)):.3g}"
                                     if g == ring else "-")}
            for g in NAMES.values() for n in ns]
    numbers = {panel.title: panel.table("global_acc"), "against n": pd.DataFrame(rows)}
    growth = {g: _points(fin[(g, large)] - fin[(g, small)]) for g in (tele, ring)}
    measured = "final mean accuracy: " + "; ".join(
        f"{g} " + ", ".join(f"n = {n} {fin[(g, n)]:.3f}" for n in ns)
        for g in NAMES.values()) + (
        f" (n = {large} - n = {small}: Teleportation {growth[tele]} points, ring "
        f"{growth[ring]} points; n = {large}: Teleportation - ring "
        f"{_points(fin[(tele, large)] - fin[(ring, large)])} points)")
    return figures.Result(fig, measured, checks, numbers, panels=found)


@figures.script
def main(args: figures.FigureArgs) -> figures.Result:
    return build(args, ["field_teleportation", "field_teleportation_ring"],
                 "label skew (one label shard, one class, a node)")


if __name__ == "__main__":
    raise SystemExit(main())
