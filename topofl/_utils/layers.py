"""The layers of topofl, stated once: which package may import which.

Each layer holds top-level modules and packages of ``topofl``; a module may import from its own
layer and the layers below it, never from one above, and no import runs in a circle. Graphs are
the core objects; everything else consumes them, and the command line sits on top.
``tests/test_import_rules.py`` checks the rule on the source, and the manual's architecture
page (``analysis/manual/generate.py``) is written from :data:`LAYERS`.

Examples
--------
>>> from topofl._utils.layers import LAYERS, layer_of
>>> LAYERS[0].name, layer_of("topofl.engine.loop") < layer_of("topofl.algorithms.dsgd")
('foundations', True)
>>> layer_of("topofl" + ".somewhere_new")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: ... is in no layer: add 'somewhere_new' to one in ...
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Layer", "LAYERS", "layer_of", "top_of"]


@dataclass(frozen=True)
class Layer:
    """One layer: its name, its members (top-level modules and packages of ``topofl``) and
    what they own."""

    name: str
    members: tuple[str, ...]
    owns: str


#: From the bottom: a module may import from its own layer and the layers below it.
LAYERS: tuple[Layer, ...] = (
    Layer("foundations", ("topofl", "_version", "exceptions", "_utils"),
          "the package's face (lazy names), its version, its exceptions and the internal "
          "utilities: files, processes, random numbers, validation, specs, registries, config "
          "files, Markdown, user imports, the CPU and numeric environment, the code "
          "fingerprint, the run hash"),
    Layer("graphs", ("graph", "mixing"),
          "Topology and TimeVarying (a graph and its mixing matrix W), the weight schemes"),
    Layer("what consumes graphs without training", ("topologies", "spectral", "privacy"),
          "the graph families and their registry; spectral properties, bounds and predictors; "
          "what each graph leaks: pairwise privacy accountants"),
    Layer("data, models and records", ("data", "models", "records"),
          "datasets, partitions and client data on a device; models with a body and a head; "
          "per-round records and their queries"),
    Layer("the engine", ("engine",),
          "the protocol algorithms implement, batched client state, local steps, gossip, "
          "event time, costs, the one round loop, checkpoints"),
    Layer("algorithms and placements", ("algorithms", "distributed"),
          "the algorithms as compositions of the engine's pieces; clients across "
          "torch.distributed ranks"),
    Layer("the front door: a run call, configs, sweeps and their checks",
          ("api", "_api_checks", "config", "sweep", "workflow"),
          "topofl.run and its one check, TOML configs, sweeps, and behind them a run's "
          "provenance, memory model and plan"),
    Layer("outputs: figures, studies, reports, tools",
          ("plotting", "study", "report", "figures", "tools"),
          "figures read from records, the topology-vs-convergence study, the spectral report, "
          "the paper-figure harness with its snapshot and certificates, the demo and the "
          "benchmarks"),
    Layer("the command line; the doctests' pytest configuration",
          ("cli", "__main__", "conftest"),
          "topofl run / sweep / study / spectral / report / figure / list / plan / bench / demo"),
)


def top_of(module: str) -> str:
    """The top-level member a module belongs to: ``topofl.engine.loop`` -> ``engine``;
    ``topofl`` -> ``topofl``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of the layer of ``module`` (a dotted name in ``topofl``).

    Raises
    ------
    ValueError
        When its top-level member is in no layer.
    """
    top = top_of(module)
    for i, layer in enumerate(LAYERS):
        if top in layer.members:
            return i
    raise ValueError(f"{module} is in no layer: add {top!r} to one in topofl/_utils/layers.py")
