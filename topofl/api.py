"""``topofl.run``: one call from names to a trained, recorded run.

The face of the package: :func:`run` is :func:`prepare` (the call checked and the algorithm
built, without touching any data) then :func:`launch` (the data, graph and model built, the
placement chosen, the engine run). A config (:mod:`topofl.config`) is checked into the same
:class:`Prepared` call, so a validated config runs with the algorithm it was checked with.

Examples
--------
>>> res = tf.run("dsgd", topology="ring", data="digits", model="logistic", rounds=3,
...              n_clients=10, partition="iid", lr=0.5, batch_size=8, seed=0)
>>> sorted(m for m in res.records.metrics if m.startswith("test_acc_"))
['test_acc_max', 'test_acc_mean', 'test_acc_min', 'test_acc_std']
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from torch import nn

from topofl import data as data_mod
from topofl import distributed, topologies
from topofl._validation import (
    check_bool,
    check_device,
    check_memory,
    check_path,
    did_you_mean_each,
    unknown_name,
)
from topofl.algorithms.base import ALGORITHMS, Algorithm, get_algorithm
from topofl.distributed.checkpoint import checkpoint_target_problem, load_any, save_any
from topofl.engine.config import config_header
from topofl.engine.loop import Result, RunConfig
from topofl.engine.loop import run as engine_run
from topofl.engine.placement import FileCheckpointer, OneProcess, Placement
from topofl.exceptions import OutputExistsError
from topofl.graph import GraphLike, TimeVarying, Topology
from topofl.models import build_model, check_model_input
from topofl.provenance import describe_run, provenance

__all__ = ["run", "prepare", "launch", "Prepared", "placement"]


@dataclass(frozen=True)
class Prepared:
    """A :func:`run` call, checked, with its algorithm built (nothing of the data yet).

    Attributes
    ----------
    call : dict
        ``algorithm, topology, data, model, n_clients, partition, partition_params,
        model_params`` as given (names, or objects).
    algorithm : Algorithm
        Built once, from the name and ``hparams`` (or the one given).
    hparams : dict
        The hyper-parameters the call named (``{}`` for a built algorithm).
    settings : dict
        The :class:`~topofl.engine.RunConfig` fields of the call besides ``rounds`` and
        ``seed`` (``run_id`` may be ``None``: ``"<algorithm>-<graph>"``).
    rounds, seed : int
    """

    call: Mapping[str, Any]
    algorithm: Algorithm
    hparams: Mapping[str, Any]
    settings: Mapping[str, Any]
    rounds: int
    seed: int


def run(
    algorithm: str | Algorithm = "dsgd",
    topology: GraphLike | str | None = None,
    data: Any = "digits",
    model: str | nn.Module = "logistic",
    rounds: int = 100,
    *,
    seed: int = 0,
    n_clients: int = 100,
    partition: str = "shards",
    partition_params: Mapping[str, Any] | None = None,
    model_params: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    **kwargs: Any,
) -> Result:
    """Train with a named algorithm, topology, dataset and model; return records and state.

    Parameters
    ----------
    algorithm : str or Algorithm, default "dsgd"
        A name of :data:`topofl.algorithms.ALGORITHMS` (its hyper-parameters come from
        ``kwargs``) or a built :class:`~topofl.algorithms.Algorithm`.
    topology : Topology, TimeVarying, str or None
        A graph, or a spec such as ``"ring"``, ``"random_regular:d=4"``,
        ``"dcliques:clique_size=10,inter=small_world"``, built by
        :func:`topofl.topologies.build` (``n`` is the number of clients; D-Cliques uses the
        data's label distributions). ``None`` for ``local``/``fedavg``.
    data : FederatedData, str, Dataset or torch.utils.data.Dataset, default "digits"
        Data already split over clients, or what :func:`topofl.data.federate` splits with
        ``partition`` over ``n_clients`` clients: a dataset name, a
        :class:`~topofl.data.Dataset`, or a torch dataset of ``(x, y)`` samples (or a
        ``(train, test)`` pair of them).
    model : str or torch.nn.Module, default "logistic"
        A name of :data:`topofl.models.MODELS` (built for the data's input shape with
        ``model_params``) or a module.
    rounds : int, default 100
    seed : int, default 0
        Seeds the partition, the random graph, the model and the batches.
    n_clients, partition, partition_params
        Used when ``data`` is a name.
    overwrite : bool, default False
        Replace an existing ``records_path`` file; without it an existing file is an error
        (unless ``resume`` continues it). The same for ``checkpoint_path`` when the run
        writes checkpoints: a file there that is not a checkpoint of this run (same run
        hash) is replaced only with ``overwrite`` (a folder that is not a topofl checkpoint
        never is).
    **kwargs
        Fields of :class:`~topofl.engine.RunConfig` (``batch_size``, ``eval_every``,
        ``device``, ``records_path``, ``checkpoint_every``, ``divergence`` ...) and the
        algorithm's hyper-parameters (``lr``, ``momentum``, ``local_steps`` ...), and
        ``resume``: a checkpoint of this run to continue from (see Notes). Anything else is
        an error.

    Returns
    -------
    Result
        ``records`` and ``state`` of the run. The header row of the records holds the
        resolved call (every default filled in: the schema of a ``topofl run`` config, see
        :mod:`topofl.config`) and its provenance, so :func:`topofl.config.replay` re-runs it;
        a run given objects instead of names (a Topology, a module, FederatedData) records a
        description of them and cannot be replayed.

    Raises
    ------
    TypeError
        For an unknown keyword (the message lists the accepted ones).
    topofl.exceptions.OutputExistsError
        A ``FileExistsError``: ``records_path`` exists and neither ``overwrite`` nor
        ``resume`` is given, or ``checkpoint_path`` holds something other than a checkpoint
        of this run and ``overwrite`` is not given.
    topofl.exceptions.ConvergenceError
        A loss or a parameter became NaN/inf, or a client's training loss passed
        ``divergence`` (default 1000) times the first round's loss (see
        :class:`~topofl.engine.RunConfig`; ``divergence=None`` turns that check off). The
        message names the round, the local step and the first bad client; the rows recorded
        before stay on disk.
    topofl.exceptions.CheckpointError
        A ``ValueError``: ``resume`` is missing, corrupted or another run's, or the records
        file at ``records_path`` does not belong with it. Nothing is written then.

    Notes
    -----
    With ``checkpoint_every=k`` and ``checkpoint_path``, a checkpoint (checksummed, written
    atomically) is saved every ``k`` rounds; ``resume=checkpoint_path`` with the same call
    continues the run and its records file, giving the rows of an uninterrupted run. What
    may change on resume: ``rounds`` (extend a run), ``records_path`` and
    ``checkpoint_path`` (a moved run folder), ``checkpoint_every``, ``stream_rows``,
    ``progress`` and ``divergence``; anything else is refused with the differing fields
    named (see :func:`topofl.engine.run`).
    """
    resume = kwargs.pop("resume", None)
    check_bool(overwrite, "overwrite")
    check_path(resume, "resume")
    prepared = prepare(algorithm, topology, data, model, rounds, seed=seed, n_clients=n_clients,
                       partition=partition, partition_params=partition_params,
                       model_params=model_params, **kwargs)
    return launch(prepared, resume=resume, overwrite=overwrite)


def prepare(
    algorithm: str | Algorithm = "dsgd",
    topology: GraphLike | str | None = None,
    data: Any = "digits",
    model: str | nn.Module = "logistic",
    rounds: int = 100,
    *,
    seed: int = 0,
    n_clients: int = 100,
    partition: str = "shards",
    partition_params: Mapping[str, Any] | None = None,
    model_params: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> Prepared:
    """Check a :func:`run` call (same arguments, without ``resume`` and ``overwrite``) and build
    its algorithm, without reading any data.

    Raises
    ------
    TypeError
        For an unknown keyword (the message lists the accepted ones), a topology or model of
        the wrong type.
    ValueError
        For an unknown algorithm, a bad hyper-parameter, run setting or graph spec.

    Examples
    --------
    >>> p = tf.api.prepare("dsgd", "ring", lr=0.5, batch_size=8)
    >>> p.algorithm.name, p.hparams, p.settings
    ('dsgd', {'lr': 0.5}, {'batch_size': 8})
    """
    if not isinstance(algorithm, (str, Algorithm)):
        raise TypeError(f"algorithm must be a name of topofl.algorithms.ALGORITHMS or an "
                        f"Algorithm, got {type(algorithm).__name__} {algorithm!r}"[:300])
    for key in ("records_path", "checkpoint_path"):
        check_path(kwargs.get(key), key)
    if kwargs.get("device") is not None:
        check_device(kwargs["device"])
    cfg_keys = RunConfig.field_names() - {"rounds", "seed"}
    settings = {k: kwargs.pop(k) for k in list(kwargs) if k in cfg_keys}
    if isinstance(algorithm, str):
        if algorithm not in ALGORITHMS:
            raise ValueError(unknown_name("algorithm", algorithm, ALGORITHMS))
        accepted = set(inspect.signature(ALGORITHMS[algorithm]).parameters)
        unknown = sorted(set(kwargs) - accepted)
        if unknown:
            raise TypeError(
                f"unknown keyword(s) {unknown} for run(algorithm={algorithm!r})"
                f"{did_you_mean_each(unknown, accepted | cfg_keys)}; accepted: "
                f"run settings {sorted(cfg_keys)} and {algorithm} hyper-parameters "
                f"{sorted(accepted)}"
            )
        algo, hparams = get_algorithm(algorithm, **kwargs), dict(kwargs)
    else:
        if kwargs:
            raise TypeError(
                f"unknown keyword(s) {sorted(kwargs)}: with a built Algorithm, only run "
                f"settings are accepted: {sorted(cfg_keys)}"
            )
        algo, hparams = algorithm, {}
    if isinstance(topology, str):
        topologies.check_spec(topology)
    elif topology is not None and not isinstance(topology, (Topology, TimeVarying)):
        raise TypeError(
            f"topology must be a Topology, a TimeVarying, a spec string or None, got "
            f"{type(topology).__name__}"
        )
    if model_params is not None and not isinstance(model_params, Mapping):
        raise TypeError(f"model_params must be a mapping, got {type(model_params).__name__}")
    if not isinstance(model, (str, nn.Module)):
        raise TypeError(f"model must be a name or a torch.nn.Module, got {type(model).__name__}")
    call = {"algorithm": algorithm, "topology": topology, "data": data, "model": model,
            "n_clients": n_clients, "partition": partition, "partition_params": partition_params,
            "model_params": model_params}
    return Prepared(call, algo, hparams, settings, rounds, seed)


def launch(prepared: Prepared, *, resume: Any = None, overwrite: bool = False) -> Result:
    """Run a :class:`Prepared` call: build its data, graph and model, pick the placement
    (:func:`placement`) and hand them to :func:`topofl.engine.run`, with the resolved call and
    its provenance for the records header."""
    p, call = prepared, dict(prepared.call)
    if p.settings.get("device") is not None:
        check_device(p.settings["device"])  # before any work, and before torch sees a bad string
    out_path = p.settings.get("records_path")
    if out_path is not None and resume is None and not overwrite and Path(out_path).exists():
        raise OutputExistsError(
            f"{out_path} exists; pass overwrite=True (topofl run --overwrite) to replace it, or "
            "resume=CHECKPOINT to continue it"
        )
    data = call["data"]
    if not isinstance(data, data_mod.FederatedData):  # a name, a Dataset or a torch dataset
        partition_params = call["partition_params"]
        if partition_params is not None and not isinstance(partition_params, Mapping):
            raise TypeError(f"partition_params must be a mapping, got "
                            f"{type(partition_params).__name__}")
        data = data_mod.federate(data, call["partition"], call["n_clients"], seed=p.seed,
                        **dict(partition_params or {}))
        if not isinstance(call["data"], str):  # the user's own dataset: described, not named
            call["data"] = data
    topology = call["topology"]
    if isinstance(topology, str):
        topology = topologies.build(topology, seed=p.seed, n=int(data.num_clients),
                                    label_distributions=data.label_distributions)
    model = call["model"]
    if isinstance(model, str):
        model = build_model(model, tuple(data.input_shape), int(data.num_classes), seed=p.seed,
                            **dict(call["model_params"] or {}))
    else:  # the user's module: it must take the data's samples as they are
        check_model_input(model, tuple(data.input_shape), int(data.num_classes))
    settings = dict(p.settings)
    _check_batch_memory(settings.get("batch_size"), data)
    graph = getattr(topology, "name", "none")
    run_id = settings.pop("run_id", None) or f"{p.algorithm.name}-{graph}"
    config = RunConfig(rounds=p.rounds, seed=p.seed, run_id=run_id, **settings)
    resolved, not_replayable = describe_run(
        **call, hparams=p.hparams, rounds=p.rounds, seed=p.seed,
        settings=dataclasses.asdict(config))
    prov = provenance()
    prov["replayable"] = not not_replayable
    if not_replayable:
        prov["not_replayable"] = not_replayable
    if config.checkpoint_every:  # guarded as records_path is: replaced only when asked
        why = checkpoint_target_problem(
            str(config.checkpoint_path),
            config_header(config, p.algorithm, topology, data, model)["run_hash"],
            overwrite=overwrite, resume=resume)
        if why is not None:
            raise OutputExistsError(why)
    return engine_run(config, topology, p.algorithm, data, model, resume=resume,
                      header={"config": resolved, "provenance": prov}, placement=placement())


def placement() -> Placement:
    """Where this process's run puts its clients: split over the ranks when it is one of
    several (``torchrun``, or a process group the caller initialised:
    :class:`topofl.distributed.Sharded`), else every client here, reading checkpoints of
    either kind (a file, or the folder a distributed run wrote) and writing a file over
    either.

    Examples
    --------
    >>> type(tf.api.placement()).__name__
    'OneProcess'
    """
    if distributed.is_distributed():
        return distributed.Sharded()
    return OneProcess(FileCheckpointer(read=load_any, write=save_any))


def _check_batch_memory(batch_size: Any, data: Any) -> None:
    """Refuse a ``batch_size`` whose float32 inputs alone, for one client, cannot fit (a lower
    bound of what the run needs: the engine holds at least one client's batch)."""
    if isinstance(batch_size, int) and not isinstance(batch_size, bool) and batch_size > 0:
        per_sample = 4 * int(np.prod(data.input_shape))
        check_memory(float(batch_size) * per_sample,
                     f"batch_size={batch_size} (samples of shape {tuple(data.input_shape)})")
