"""D-Cliques at 1000 nodes with ring, fractal, small-world or fully-connected inter-clique
links against a fully-connected network (D-Cliques Figs. 13 and 14: one figure, an MNIST and
a CIFAR-10 setting): the curves, each topology's edges and messages per node and round, and
the paper's ordering of the four inter-clique topologies."""

from __future__ import annotations

from typing import Any

import _dcliques_gates as gates  # beside this script
import _dcliques_versus as vs  # beside this script

from topofl import figures

INTER = {"ring": "ring", "fractal": "fractal", "small_world": "small-world",
         "fully_connected": "fully connected"}
FULL = "fully-connected network"
ORDER = [f"D-Cliques, {v} inter-clique" for v in INTER.values()]


def label(config: dict[str, Any]) -> str:
    """The legend of a run: its inter-clique topology (or the fully-connected network)."""
    spec = str(config["topology"])
    if spec == "complete":
        return FULL
    return f"D-Cliques, {INTER[spec.split('inter=')[1].split(',')[0]]} inter-clique"


MODELS = {"logistic": "logistic regression", "gn_lenet": "GN-LeNet", "cnn1d": "1-D CNN",
          "mlp": "MLP"}


def build(args: figures.FigureArgs, configs: list[str], *,
          early: float | None = None) -> figures.Result:
    """Run and draw the configs (a D-Cliques sweep and the fully-connected network), with the
    costs of each topology and the paper's checks; runs shorter than ``early`` epochs are
    said to show the start of training only. The title names the model that ran (the
    stand-in's when the paper's dataset was swapped) and its momentum."""
    found = figures.panels(args, {"curves and costs": configs}, label)
    panel = found["curves and costs"]
    first = next(iter(panel.configs.values()))
    n = first["n_clients"]
    model = MODELS.get(str(first["model"]), str(first["model"]))
    if first.get("momentum"):
        model += f", momentum {first['momentum']}"
    fig, numbers = figures.curves(found, "global_acc", band="lines", legend="outside",
                                  figsize=(8.6, 4.2), titles=False)
    fig.axes[0].set_title(f"D-SGD, {model}, {n} nodes", fontsize=9)
    table = numbers["curves and costs"]
    edges = {k: figures.per_seed(r, lambda one: one.final("graph.edges_per_node"))
             for k, r in panel.runs.items()}
    table["edges per node"] = [edges[k] for k in table["curve"]]
    # the paper's count (Sec. III-D, tf.topologies.messages_per_node): a model per edge, and
    # with Clique Averaging a gradient per edge too
    table["messages per node and round"] = [
        edges[k] * (2 if panel.configs[k]["clique_averaging"] else 1) for k in table["curve"]]
    final = {k: figures.final(r, "global_acc") for k, r in panel.runs.items()}
    area = {k: figures.mean_over_rounds(r, "global_acc") for k, r in panel.runs.items()}
    acc, close = figures.margin(args.name, "accuracy"), figures.margin(args.name, "close")
    ring, fractal, small, inter = ORDER
    short = {k: k.removeprefix("D-Cliques, ") for k in ORDER}
    speed = vs.reading(panel, ORDER, acc, speed=True)
    checks = [
        # the paper's Sec. IV-E: "the ring topology converges but is much slower than our
        # fractal scheme ... the small-world topology has a convergence speed that is almost
        # the same as with a fully-connected inter-clique topology"
        figures.above(f"{short[ring]} much slower than {short[fractal]} (mean accuracy over "
                      "the run)", area[fractal] - area[ring], margin=acc, headline=True,
                      **speed),
        figures.within(f"{short[small]} almost as fast as {short[inter]} (mean accuracy over "
                       f"the run within {100 * close:g} points)", area[inter] - area[small],
                       close, headline=True, **speed),
        figures.above(f"{short[small]} not slower than {short[fractal]} (mean accuracy over "
                      "the run)", area[small] - area[fractal], margin=acc, tie="pass",
                      **speed),
        figures.within(f"{short[inter]} within {100 * close:g} points of the {FULL} (final "
                       "accuracy; the abstract's 1000-node claim)", final[FULL] - final[inter],
                       close, **vs.reading(panel, (inter, FULL), acc)),
        figures.within(f"{short[small]} within {100 * close:g} points of the {FULL} (final "
                       "accuracy)", final[FULL] - final[small], close,
                       **vs.reading(panel, (small, FULL), acc)),
    ]
    # the stand-in's gate: the fully-connected network is the fastest (Sec. IV-A, IV-E)
    gate = gates.gate(args.name, "1000 nodes", gates.values(panel.runs))
    checks = gates.cover(checks, gate, gates.COVERED[args.name])
    measured = ("mean accuracy over the run: " + ", ".join(f"{short[k]} {area[k]:.3f}"
                                                           for k in ORDER)
                + f", {FULL} {area[FULL]:.3f}; final accuracy: "
                + ", ".join(f"{short[k]} {final[k]:.3f}" for k in ORDER)
                + f", {FULL} {final[FULL]:.3f}")
    epochs = max(float(e) for e in table["epochs"])
    notes = [vs.convergence_note(found, acc)]
    if early is not None and epochs < early:
        measured = f"after only {epochs:.2f} epochs (the paper: 100): {measured}"
        notes.append(f"only {epochs:.2f} epochs ran (the paper: 100): the speeds are those of "
                     "the first part of training; `--full` (a GPU) runs the paper's 100 epochs")
    return figures.Result(fig, measured, checks, numbers, panels=found, notes=notes,
                          gates=[gate])
