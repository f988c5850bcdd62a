"""The settings of one training run: a flat, frozen dataclass saved with every result."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import torch
from torch import nn

from topofl._validation import check_bool, check_choice, check_int
from topofl._version import __version__
from topofl.engine.protocol import Algorithm
from topofl.graph import GraphLike
from topofl.records import _jsonable as jsonable

__all__ = ["RunConfig", "DTYPES", "config_header"]

DTYPES = {"float32": torch.float32, "float64": torch.float64}


@dataclass(frozen=True)
class RunConfig:
    """Flat, frozen settings of one training run (saved in the records header).

    Attributes
    ----------
    rounds : int
        Number of communication rounds.
    batch_size : int, default 32
        Mini-batch size of every local step.
    eval_every : int, default 1
        Evaluate (and record) every ``eval_every`` rounds, and after the last round.
    seed : int, default 0
        Seeds the initial model, the data batches ``(seed, round, step)`` and nothing else.
    device : str, default "cpu"
    dtype : {"float32", "float64"}, default "float32"
    executor : {"auto", "batched", "loop"}, default "auto"
    chunk_size : int or None
        Clients per vmap call of the batched executor.
    stream_rows : int or None
        Clients per block when a local step is streamed (``rowwise`` algorithms; see
        :class:`LocalStepper`); ``None`` chooses by executor and size (:func:`stream_rows`),
        ``num_clients`` turns streaming off. It changes the speed and the memory, not the
        numbers.
    fuse : bool, default True
        Run the local-update piece's fused kernel when it offers one for the executor (plain
        SGD on softmax regression in closed form: gradient and step in one pass). It changes
        the speed, not the numbers (to rounding).
    init : {"same", "independent"}, default "same"
        Every client starts from the same model, or from its own random draw.
    eval_global : bool, default True
        Also score every client on the global test set.
    record_clients : bool, default True
        Record per-client accuracies (one row per client and evaluation).
    spectral : bool, default True
        Record the round's ``topofl.spectral.summary`` (once for a static graph).
    checkpoint_every : int, default 0
        Write a checkpoint every that many rounds (0: never).
    checkpoint_path : str or None
    records_path : str or None
        JSONL file for the records (``None``: in memory only).
    run_id : str, default "run"
    progress : bool or None
        tqdm progress bar; ``None`` shows it only on a terminal.
    """

    rounds: int
    batch_size: int = 32
    eval_every: int = 1
    seed: int = 0
    device: str = "cpu"
    dtype: str = "float32"
    executor: str = "auto"
    chunk_size: int | None = None
    stream_rows: int | None = None
    fuse: bool = True
    init: str = "same"
    eval_global: bool = True
    record_clients: bool = True
    spectral: bool = True
    checkpoint_every: int = 0
    checkpoint_path: str | None = None
    records_path: str | None = None
    run_id: str = "run"
    progress: bool | None = None

    def __post_init__(self) -> None:
        for name in ("fuse", "eval_global", "record_clients", "spectral"):
            check_bool(getattr(self, name), name)
        if self.progress is not None:
            check_bool(self.progress, "progress")
        check_int(self.rounds, "rounds", low=0)
        check_int(self.batch_size, "batch_size", low=1)
        check_int(self.eval_every, "eval_every", low=1)
        check_int(self.seed, "seed", low=0)
        check_choice(self.dtype, "dtype", DTYPES)
        check_choice(self.executor, "executor", ("auto", "batched", "loop"))
        check_choice(self.init, "init", ("same", "independent"))
        check_int(self.checkpoint_every, "checkpoint_every", low=0)
        if self.checkpoint_every and not self.checkpoint_path:
            raise ValueError("checkpoint_every > 0 needs checkpoint_path")
        if self.chunk_size is not None:
            check_int(self.chunk_size, "chunk_size", low=1)
        if self.stream_rows is not None:
            check_int(self.stream_rows, "stream_rows", low=1)

    @classmethod
    def field_names(cls) -> set[str]:
        """Names of all settings."""
        return {f.name for f in fields(cls)}


def config_header(config: RunConfig, algorithm: Algorithm, topology: GraphLike | None,
                  data: Any, model: nn.Module) -> dict[str, Any]:
    """The records header of a run: its settings, the algorithm with every hyper-parameter, the
    topology, the data, the model and the versions, as plain JSON values."""
    cfg = asdict(config)
    cfg.pop("progress", None)
    out: dict[str, Any] = jsonable({
        "run": cfg,
        "algorithm": {"name": algorithm.name, **dict(algorithm.hparams)},
        "topology": None if topology is None else {
            "name": topology.name, "n": topology.n, "params": topology.params},
        "data": getattr(data, "params", {"num_clients": data.num_clients}),
        "model": type(model).__name__ + f"[{sum(p.numel() for p in model.parameters())}]",
        "versions": {"topofl": __version__, "torch": str(torch.__version__)},
    })
    return out
