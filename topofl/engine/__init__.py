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
from topofl.engine.clients import Clients, LocalClients
from topofl.engine.config import RunConfig
from topofl.engine.executors import BatchedExecutor, LoopExecutor, make_executor
from topofl.engine.extend import check_algorithm, check_local_update, stochasticity_problem
from topofl.engine.gossip import BandPlan, Mixer, band_plan
from topofl.engine.layout import ParamLayout, Part, init_parameters
from topofl.engine.local import LocalStepper, steps_per_client, stream_rows
from topofl.engine.loop import Result, run
from topofl.engine.placement import FileCheckpointer, OneProcess, Placement, Site
from topofl.engine.protocol import (
    Algorithm,
    Communicate,
    LocalUpdate,
    Phase,
    Round,
    Sent,
    Services,
    State,
    ToyServices,
    toy_services,
)
from topofl.engine.reference import Trace, run_rounds
from topofl.engine.services import DataServices

__all__ = [
    "Algorithm",
    "LocalUpdate",
    "Communicate",
    "check_algorithm",
    "check_local_update",
    "Part",
    "Phase",
    "Round",
    "Sent",
    "Services",
    "State",
    "ToyServices",
    "toy_services",
    "pieces",
    "stack",
    "ParamLayout",
    "Mixer",
    "BandPlan",
    "band_plan",
    "BatchedExecutor",
    "LoopExecutor",
    "make_executor",
    "DataServices",
    "Clients",
    "LocalClients",
    "Placement",
    "Site",
    "OneProcess",
    "FileCheckpointer",
    "RunConfig",
    "Result",
    "run",
    "stochasticity_problem",
    "init_parameters",
    "LocalStepper",
    "steps_per_client",
    "stream_rows",
    "Trace",
    "run_rounds",
]
