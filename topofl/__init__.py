"""topofl: communication topologies for decentralized (personalized) federated learning.

Graphs are the core objects (:class:`Topology`, :class:`TimeVarying`, built by
:mod:`topofl.topologies`), with their mixing weights (:mod:`topofl.mixing`) and spectral
properties (:mod:`topofl.spectral`).

The submodules are imported on first use (PEP 562), so ``import topofl`` is cheap and
``topofl --help`` does not load torch; ``tf.run``, ``tf.topologies.ring`` ... work as usual.

Examples
--------
>>> ring, comp = tf.topologies.ring(16), tf.topologies.complete(16)
>>> tf.spectral.spectral_gap(ring) < tf.spectral.spectral_gap(comp)
True
"""

# No ``from __future__ import annotations`` and only underscored helpers: ``dir(topofl)`` is
# ``__all__`` (tests/test_face.py).
import importlib as _importlib
import typing as _typing

from topofl._version import __version__

_SUBMODULES = frozenset({
    "algorithms", "api", "config", "data", "distributed", "engine", "exceptions", "figures",
    "graph", "mixing",
    "models",
    "plotting", "privacy", "records", "report", "spectral", "study", "sweep", "topologies",
})
_ATTRIBUTES = {  # name -> module that defines it
    "run": "topofl.api",
    "Topology": "topofl.graph",
    "TimeVarying": "topofl.graph",
    "as_time_varying": "topofl.graph",
    "ConvergenceError": "topofl.exceptions",
    "CheckpointError": "topofl.exceptions",
    "NotConnectedError": "topofl.exceptions",
    "ConfigError": "topofl.config",
}

if _typing.TYPE_CHECKING:  # what the lazy attributes are, for type checkers
    from topofl import (
        algorithms,
        api,
        config,
        data,
        distributed,
        engine,
        exceptions,
        figures,
        graph,
        mixing,
        models,
        plotting,
        privacy,
        records,
        report,
        spectral,
        study,
        sweep,
        topologies,
    )
    from topofl.api import run
    from topofl.config import ConfigError
    from topofl.exceptions import CheckpointError, ConvergenceError, NotConnectedError
    from topofl.graph import TimeVarying, Topology, as_time_varying

__all__ = [
    "run",
    "api",
    "config",
    "sweep",
    "study",
    "report",
    "figures",
    "plotting",
    "Topology",
    "TimeVarying",
    "as_time_varying",
    "mixing",
    "topologies",
    "spectral",
    "privacy",
    "data",
    "distributed",
    "engine",
    "algorithms",
    "models",
    "records",
    "exceptions",
    "graph",
    "NotConnectedError",
    "ConvergenceError",
    "CheckpointError",
    "ConfigError",
    "__version__",
]


def __getattr__(name: str) -> _typing.Any:
    if name in _SUBMODULES:
        return _importlib.import_module(f"topofl.{name}")
    if name in _ATTRIBUTES:
        value = getattr(_importlib.import_module(_ATTRIBUTES[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'topofl' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names: :data:`__all__` (the subpackages and what ``topofl`` itself offers),
    never the helpers of this module nor the private modules it has loaded."""
    return sorted(__all__)
