"""topofl: communication topologies for decentralized (personalized) federated learning.

Graphs are the core objects (:class:`Topology`, :class:`TimeVarying`, built by
:mod:`topofl.topologies`), with their mixing weights (:mod:`topofl.mixing`) and spectral
properties (:mod:`topofl.spectral`).

Examples
--------
>>> ring, comp = tf.topologies.ring(16), tf.topologies.complete(16)
>>> tf.spectral.spectral_gap(ring) < tf.spectral.spectral_gap(comp)
True
"""

from topofl import (
    algorithms,
    api,
    data,
    engine,
    exceptions,
    mixing,
    models,
    plotting,
    records,
    spectral,
    topologies,
)
from topofl._version import __version__
from topofl.api import run
from topofl.exceptions import ConvergenceError, NotConnectedError
from topofl.graph import TimeVarying, Topology, as_time_varying

__all__ = [
    "run",
    "api",
    "plotting",
    "Topology",
    "TimeVarying",
    "as_time_varying",
    "mixing",
    "topologies",
    "spectral",
    "data",
    "engine",
    "algorithms",
    "models",
    "records",
    "exceptions",
    "NotConnectedError",
    "ConvergenceError",
    "__version__",
]
