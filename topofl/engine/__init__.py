"""The batched training engine: flat client state, executors, gossip and the round loop."""

from topofl.engine.executors import BatchedExecutor, LoopExecutor, make_executor
from topofl.engine.gossip import Mixer
from topofl.engine.layout import ParamLayout
from topofl.engine.loop import (
    LocalStepper,
    Result,
    RunConfig,
    init_parameters,
    run,
    stream_rows,
)

__all__ = [
    "ParamLayout",
    "Mixer",
    "BatchedExecutor",
    "LoopExecutor",
    "make_executor",
    "RunConfig",
    "Result",
    "run",
    "init_parameters",
    "LocalStepper",
    "stream_rows",
]
