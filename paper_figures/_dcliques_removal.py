"""D-Cliques with 0, 1 or 5 of the 45 edges of every clique removed, without and with Clique
Averaging (D-Cliques Figs. 15 and 16: one figure, an MNIST and a CIFAR-10-with-momentum
setting): the curves, the edges per node, and the numbers the two figures' claims read."""

from __future__ import annotations

from typing import Any

import _dcliques_versus as vs  # beside this script

from topofl import figures

PANELS = {"without Clique Averaging": "", "with Clique Averaging": ""}
MODELS = {"logistic": "logistic regression", "gn_lenet": "GN-LeNet", "cnn1d": "1-D CNN",
          "mlp": "MLP"}
FULL, ONE, FIVE = "full cliques", "1 edge removed per clique", "5 edges removed per clique"


def label(config: dict[str, Any]) -> str:
    """The legend of a run: how many edges of each clique it removes."""
    removed = str(config["topology"]).partition("remove_intra_edges=")[2].split(",")[0] or "0"
    return {"0": FULL, "1": ONE}.get(removed, f"{removed} edges removed per clique")


def build(args: figures.FigureArgs, prefix: str, suptitle: str, *, ymin: float | None = None
          ) -> tuple[figures.Result, dict[str, Any]]:
    """Run and draw ``<prefix>_no_ca`` and ``<prefix>_ca``; the result (checks to add) and,
    per panel, each curve's final accuracy, final spread and mean accuracy over the run, the
    panel's epochs, and the ``converged=`` / ``horizon=`` of its final values (``"final at"``),
    of its final spreads (``"spread at"``: the spread curves') and of its speeds (``"speed
    at"``).
    ``suptitle`` may name ``{n}`` (the nodes) and ``{model}`` (the model that ran: the
    stand-in's when the paper's dataset was swapped)."""
    configs = dict(zip(PANELS, (f"{prefix}_no_ca", f"{prefix}_ca")))
    found = figures.panels(args, configs, label)
    first = next(iter(found.values())).configs[FULL]
    n = first["n_clients"]
    model = MODELS.get(str(first["model"]), str(first["model"]))
    fig, numbers = figures.curves(found, "global_acc", band="lines", sharey=True,
                                  suptitle=suptitle.format(n=n, model=model))
    fig.axes[1].set_ylabel("")
    if ymin is not None:
        fig.axes[0].set_ylim(bottom=ymin)
    stats: dict[str, Any] = {}
    for title, panel in found.items():
        table = numbers[title]
        edges = {k: figures.per_seed(r, lambda one: one.final("graph.edges_per_node"))
                 for k, r in panel.runs.items()}
        table["edges per node"] = [edges[k] for k in table["curve"]]
        stats[title] = {k: {"final": figures.final(r, "global_acc"),
                            "spread": figures.final_spread(r, "global_acc"),
                            "area": figures.mean_over_rounds(r, "global_acc")}
                        for k, r in panel.runs.items()}
        stats[title]["epochs"] = max(float(e) for e in table["epochs"])
        # converged= / horizon= of a final value, and horizon= of a speed, for this panel's
        # three curves (the accuracy margin as the convergence tolerance)
        acc = figures.margin(args.name, "accuracy")
        stats[title]["final at"] = vs.reading(panel, list(panel.runs), acc)
        stats[title]["speed at"] = vs.reading(panel, list(panel.runs), acc, speed=True)
        # a final spread reads the spread curves' convergence (the spread margin)
        stats[title]["spread at"] = vs.reading(panel, list(panel.runs),
                                               figures.margin(args.name, "spread"), spread=True)
    notes = [vs.convergence_note(found, figures.margin(args.name, "accuracy"))]
    return figures.Result(fig, "", [], numbers, panels=found, notes=notes), stats
