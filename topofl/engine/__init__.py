"""The batched training engine: the algorithm protocol and its pieces, flat client state,
executors, gossip, where the clients live (``Clients``, placements), the run's set-up and
round loop, and the reference round driver.

An algorithm of one's own is an :class:`Algorithm` of pieces: a :class:`LocalUpdate` and a
:class:`Communicate` subclass (or any callable) and hooks; :func:`check_algorithm` names what is
missing. The engine never imports the algorithms (nor the package's top level): they are built from
the protocol (:mod:`topofl.engine.protocol`) and the pieces (:mod:`topofl.engine.pieces`)
defined here.
"""

from topofl.engine import pieces, stack
from topofl.engine.clients import Clients
from topofl.engine.config import RunConfig
from topofl.engine.extend import check_algorithm
from topofl.engine.lane import Result
from topofl.engine.layout import ParamLayout, Part
from topofl.engine.least_squares import LeastSquares
from topofl.engine.loop import run
from topofl.engine.protocol import (
    Algorithm,
    Communicate,
    LocalUpdate,
    Phase,
    Round,
    Sent,
    Services,
    State,
    toy_services,
)
from topofl.engine.reference import Trace, run_rounds

__all__ = [
    "Algorithm",
    "LocalUpdate",
    "Communicate",
    "check_algorithm",
    "Part",
    "Phase",
    "Round",
    "Sent",
    "Services",
    "State",
    "toy_services",
    "pieces",
    "stack",
    "ParamLayout",
    "Clients",
    "RunConfig",
    "Result",
    "run",
    "Trace",
    "run_rounds",
    "LeastSquares",
]
