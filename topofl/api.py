"""``topofl.run``: one call from names to a trained, recorded run.

The face of the package: :func:`run` is :func:`prepare` (the call checked and the algorithm
built, without touching any data) then :func:`launch` (the data, graph and model built, the
placement chosen, the engine run). A config (:mod:`topofl.config`) is checked into the same
:class:`Prepared` call, so a validated config runs with the algorithm it was checked with.
The checks of a call's graph, data and model (before anything is built) are written in
``topofl/_api_checks.py``.

Examples
--------
>>> res = tf.run("dsgd", topology="ring", data="digits", model="logistic", rounds=3,
...              n_clients=10, partition="iid", lr=0.5, batch_size=8, seed=0)
>>> sorted(m for m in res.records.metrics if m.startswith("test_acc_"))
['test_acc_max', 'test_acc_mean', 'test_acc_min', 'test_acc_std']
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch import nn

from topofl import data as data_mod
from topofl import distributed, topologies
from topofl._api_checks import FEDERATE_OPTIONS as FEDERATE_OPTIONS
from topofl._api_checks import (
    _as_topology,
    _check_data,
    _check_graph_size,
    _check_options,
    _check_topology,
    _graph_name,
)
from topofl._utils.environment import accelerator
from topofl._utils.files import real_path
from topofl._utils.userimports import imports_problem, load_imports, recorded_imports, with_imports
from topofl._utils.validation import (
    check_bool,
    check_device,
    check_path,
    did_you_mean_each,
    unknown_name,
)
from topofl.algorithms.base import (
    ALGORITHMS,
    DP_KEYS,
    DPSGD_KEYS,
    Algorithm,
    get_algorithm,
    takers,
)
from topofl.algorithms.hparams import flat_parameters, flatten_groups
from topofl.data.federated import as_dataset
from topofl.distributed.checkpoint import checkpoint_target_problem, load_any, save_any
from topofl.distributed.sharded import Sharded
from topofl.engine.availability import check_absent
from topofl.engine.byzantine import check_byzantine
from topofl.engine.config import config_header, resolve_eval_every
from topofl.engine.drops import check_drop
from topofl.engine.extend import (
    check_algorithm,
    check_idle,
    checked_pieces,
    stochasticity_problem,
)
from topofl.engine.loop import Result, RunConfig
from topofl.engine.loop import run as engine_run
from topofl.engine.placement import FileCheckpointer, OneProcess, Placement
from topofl.engine.stack import Member, run_stacked
from topofl.exceptions import ConfigError, ConfigTypeError, OutputExistsError
from topofl.graph import GraphLike
from topofl.models import MODELS, build_model, check_model_input
from topofl.records.columns import claim_client_file
from topofl.topologies import GraphFamily, build_checked
from topofl.topologies.schedules import late_switch
from topofl.workflow.outputs import old_checkpoint_problem, records_target_problem
from topofl.workflow.provenance import provenance
from topofl.workflow.schema import describe_run, model_signature, replaced_entries

#: What a user calls; the steps under them (``build``, ``launch_stacked``, ``placement``,
#: ``run_defaults``, ``RUN_KEYS``) are importable from this module by name.
__all__ = ["run", "prepare", "launch", "Prepared", "RunCall"]


@dataclass(frozen=True)
class RunCall:
    """The named parameters of a run call: :func:`run` and :func:`prepare` take them (their
    signatures, written in their source, are held to this class by a test), a config's keys
    are them, the run
    settings (:class:`~topofl.engine.RunConfig`) and the algorithm's hyper-parameters, and
    ``topofl list`` shows their defaults (:func:`run_defaults`). The first five may be given
    by position (:data:`POSITIONAL`), the others by name.

    Attributes
    ----------
    algorithm : str or Algorithm, default "dsgd"
        A name of :data:`topofl.algorithms.ALGORITHMS` or a built Algorithm.
    topology : Topology, TimeVarying, networkx graph, PyG Data, str or None
        A graph or a spec (``"ring"``, ``"dcliques:clique_size=10"``); ``None`` for the
        algorithms that use none.
    data : FederatedData, str, Dataset or torch.utils.data.Dataset, default "digits"
        Data already split over clients, or what :func:`topofl.data.federate` splits.
    model : str or torch.nn.Module, default "logistic"
        A name of :data:`topofl.models.MODELS` or a module.
    rounds : int, default 100
        Rounds to train.
    seed : int, default 0
        Seeds the partition, the random graph, the model and the batches.
    n_clients : int, default 100
        Clients to split ``data`` over (when it is not split already).
    partition : str, default "shards"
        A name of :data:`topofl.data.PARTITIONS`.
    partition_params : mapping, optional
        The partition scheme's options (and :func:`topofl.data.federate`'s ``val``,
        ``test``, ``flip_labels``).
    model_params : mapping, optional
        The model's options.

    Examples
    --------
    >>> import inspect
    >>> [p.name for p in inspect.signature(tf.run).parameters.values()][:6]
    ['algorithm', 'topology', 'data', 'model', 'rounds', 'seed']
    >>> tf.api.RunCall().n_clients, tf.api.RUN_KEYS == tuple(
    ...     f.name for f in dataclasses.fields(tf.api.RunCall))
    (100, True)
    """

    algorithm: str | Algorithm = "dsgd"
    topology: GraphLike | str | None = None
    data: Any = "digits"
    model: str | nn.Module = "logistic"
    rounds: int = 100
    seed: int = 0
    n_clients: int = 100
    partition: str = "shards"
    partition_params: Mapping[str, Any] | None = None
    model_params: Mapping[str, Any] | None = None


#: The parameters of a run call that may be given by position, in order.
POSITIONAL = ("algorithm", "topology", "data", "model", "rounds")
#: The keys of a run call besides the run settings (:class:`~topofl.engine.RunConfig`) and
#: the algorithm's hyper-parameters: :class:`RunCall`'s fields.
RUN_KEYS = tuple(f.name for f in dataclasses.fields(RunCall))


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
        The hyper-parameters the call named (``{}`` for a built Algorithm).
    settings : dict
        The :class:`~topofl.engine.RunConfig` fields the call named besides ``rounds`` and
        ``seed``.
    run : RunConfig
        The run settings, checked (its ``run_id`` is ``"run"`` when the call names none:
        :func:`launch` names the run ``"<algorithm>-<graph>"``).
    graph : (GraphFamily, dict) or None
        A ``topology`` spec string as :func:`topofl.topologies.check_spec` read it (the one
        parse of the spec in a run), else ``None``.
    imports : tuple of dict
        The user's modules the call's ``imports`` named, imported before any name was looked
        up (:func:`topofl._utils.userimports.load_imports`: module, file, SHA-256 of the source),
        recorded in the records header; ``()`` for none.
    outputs : dict
        ``records_path`` and ``checkpoint_path`` (those the call gives) as the files they
        name, resolved when the call was checked (:func:`topofl._utils.files.real_path`:
        links and ``..`` applied, as the system would once the missing folders exist): what
        :func:`build` looks at before it replaces anything, and what the run writes. The
        header keeps the paths as given.
    """

    call: Mapping[str, Any]
    algorithm: Algorithm
    hparams: Mapping[str, Any]
    settings: Mapping[str, Any]
    run: RunConfig
    graph: tuple[GraphFamily, Mapping[str, Any]] | None = None
    imports: tuple[Mapping[str, Any], ...] = ()
    outputs: Mapping[str, Path] = dataclasses.field(default_factory=dict)

    @property
    def rounds(self) -> int:
        """The number of rounds."""
        return self.run.rounds

    @property
    def seed(self) -> int:
        """The seed of the run."""
        return self.run.seed


def run(algorithm: str | Algorithm = "dsgd", topology: GraphLike | str | None = None,
        data: Any = "digits", model: str | nn.Module = "logistic", rounds: int = 100, *,
        seed: int = 0, n_clients: int = 100, partition: str = "shards",
        partition_params: Mapping[str, Any] | None = None,
        model_params: Mapping[str, Any] | None = None, overwrite: bool = False,
        **kwargs: Any) -> Result:
    """Train with a named algorithm, topology, dataset and model; return records and state.

    Parameters
    ----------
    algorithm : str or Algorithm, default "dsgd"
        A name of :data:`topofl.algorithms.ALGORITHMS` (its hyper-parameters come from
        ``kwargs``) or a built :class:`~topofl.engine.Algorithm`.
    topology : Topology, TimeVarying, networkx graph, PyG Data, str or None
        A graph, or a spec such as ``"ring"``, ``"random_regular:d=4"``,
        ``"dcliques:clique_size=10,inter=small_world"``, built by
        :func:`topofl.topologies.build` (``n`` is the number of clients; D-Cliques uses the
        data's label distributions). A ``networkx`` graph on the nodes ``0..n-1`` becomes
        :meth:`Topology.from_networkx(G) <topofl.Topology.from_networkx>`: Metropolis weights
        ``W[i, j] = 1 / (1 + max(d_i, d_j))`` (doubly stochastic), which need an undirected
        graph (a ``DiGraph`` with every arc both ways); a directed graph is refused, naming
        ``Topology.from_networkx(G, weights="push_sum")`` (column-stochastic, for push-sum
        algorithms) or ``"uniform"`` (row-stochastic) to build and pass instead. A
        ``torch_geometric.data.Data`` becomes :meth:`Topology.from_pyg(data)
        <topofl.Topology.from_pyg>`: its ``edge_weight`` as ``W`` when it has one (the inverse
        of :meth:`Topology.to_pyg`), else Metropolis weights on its edges (which must then be
        symmetric). ``None`` for the algorithms that use no graph (``local``, ``fedavg`` ...:
        given one, they ignore it with a ``UserWarning``).
    data : FederatedData, str, Dataset or torch.utils.data.Dataset, default "digits"
        Data already split over clients, or what :func:`topofl.data.federate` splits with
        ``partition`` over ``n_clients`` clients: a dataset name, a
        :class:`~topofl.data.Dataset`, or a torch dataset of ``(x, y)`` samples (or a
        ``(train, test)`` pair of them).
    model : str or torch.nn.Module, default "logistic"
        A name of :data:`topofl.models.MODELS` (built for the data's input shape with
        ``model_params``) or a module.
    rounds : int, default 100
        The same default for a config without ``rounds`` (``topofl list`` shows it).
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
        ``resume``: a checkpoint of this run to continue from (see Notes), and ``imports``: a
        list of the user's modules (names, or paths of ``.py`` files) imported before any
        name is looked up, recorded in the records header (:mod:`topofl._utils.userimports`; a
        config's ``imports`` key, ``topofl run --import``). Anything else is an error.

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
    topofl.exceptions.InsufficientMemoryError
        A ``ValueError``: the run's estimated peak memory (:mod:`topofl.workflow.plan`'s model of
        what it allocates: the ``[n, P]`` state and its copies, the local step's and the
        evaluation's buffers, gossip, data, records) exceeds what this process may use
        (:func:`topofl._utils.validation.memory_limit`: the cgroup limit, ``RLIMIT_AS`` /
        ``RLIMIT_DATA``, ``MemAvailable``; on a GPU its free memory). Refused within seconds,
        before the data is split over the clients when the state alone cannot fit, else
        before the clients' buffers are allocated; the message names the estimate, the limit
        and the largest number of clients that fits. The environment variable
        ``TOPOFL_MEMORY_LIMIT`` (bytes) replaces the limit.

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
    call = prepare(algorithm, topology, data, model, rounds, seed=seed, n_clients=n_clients,
                   partition=partition, partition_params=partition_params,
                   model_params=model_params, **kwargs)
    return launch(call, resume=resume, overwrite=overwrite)


def run_defaults() -> dict[str, Any]:
    """The defaults of :func:`run`'s (and :func:`prepare`'s) named parameters: what a call or a
    config that leaves them out gets (``topofl list`` shows ``rounds`` and ``seed`` with them).

    Examples
    --------
    >>> d = tf.api.run_defaults()
    >>> d["rounds"], d["seed"], d["n_clients"]
    (100, 0, 100)
    """
    return {f.name: f.default for f in dataclasses.fields(RunCall)}


def prepare(algorithm: str | Algorithm = "dsgd", topology: GraphLike | str | None = None,
            data: Any = "digits", model: str | nn.Module = "logistic", rounds: int = 100, *,
            seed: int = 0, n_clients: int = 100, partition: str = "shards",
            partition_params: Mapping[str, Any] | None = None,
            model_params: Mapping[str, Any] | None = None, **kwargs: Any) -> Prepared:
    """Check a :func:`run` call (same arguments, without ``resume`` and ``overwrite``) and build
    its algorithm, without reading any data.

    The one check of a run, whether it comes from Python, a config or the command line
    (:func:`topofl.config.resolve` calls it): the keys; the run settings, by building the
    :class:`~topofl.engine.RunConfig`; the hyper-parameters, by building the algorithm (its
    factory checks them); the graph spec (parsed once: :attr:`Prepared.graph`) and that an
    algorithm that communicates over a graph has one; the dataset name, ``n_clients``, the
    partition and ``partition_params``, the model and ``model_params`` (checked against the
    signatures of the partition scheme, :func:`topofl.data.federate` and the model's
    constructor: names, required keys, types).
    Only whether the ``device`` exists is left to :func:`launch` (before it reads any data):
    it depends on the machine the run starts on, not on the call (a sweep planned on one
    machine runs on another).

    Raises
    ------
    topofl.exceptions.ConfigTypeError
        A ``TypeError`` (and a :class:`~topofl.exceptions.ConfigError`): an unknown keyword
        (the message lists the accepted ones), a value of the wrong type.
    topofl.exceptions.ConfigError
        A ``ValueError``: an unknown algorithm, dataset, partition, model or graph family, a
        value out of range, an algorithm that needs a graph without one.

    Examples
    --------
    >>> p = tf.api.prepare("dsgd", "ring", lr=0.5, batch_size=8)
    >>> p.algorithm.name, p.hparams, p.settings, p.run.batch_size
    ('dsgd', {'lr': 0.5}, {'batch_size': 8}, 8)
    >>> tf.api.prepare("dsgd", "ring", batch_size="32")
    Traceback (most recent call last):
    ...
    topofl.exceptions.ConfigTypeError: batch_size must be an int, got str '32'
    """
    try:
        given = RunCall(algorithm, topology, data, model, rounds, seed, n_clients, partition,
                        partition_params, model_params)
        return _prepare(given, dict(kwargs))
    except ConfigError:
        raise
    except TypeError as exc:  # one exception type per kind of mistake, whichever door
        raise ConfigTypeError(str(exc)) from None
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _prepare(given: RunCall, kwargs: dict[str, Any]) -> Prepared:
    algorithm, topology, data, model = given.algorithm, given.topology, given.data, given.model
    n_clients, partition = given.n_clients, given.partition
    partition_params, model_params = given.partition_params, given.model_params
    # the user's modules first: they may register the names the call gives
    imports = load_imports(kwargs.pop("imports", None))
    if isinstance(algorithm, str):
        if algorithm not in ALGORITHMS:
            raise ValueError(unknown_name("algorithm", algorithm, ALGORITHMS))
    elif not isinstance(algorithm, Algorithm):
        raise TypeError(f"algorithm must be a name of topofl.algorithms.ALGORITHMS or an "
                        f"Algorithm, got {type(algorithm).__name__} {algorithm!r}"[:300])
    fields = RunConfig.field_names() - {"rounds", "seed"}
    settings = {k: kwargs.pop(k) for k in list(kwargs) if k in fields}
    if isinstance(algorithm, str):  # [sgd], sgd=LocalSGD(...): recorded as their flat keys
        kwargs = flatten_groups(ALGORITHMS[algorithm], kwargs)
    _check_keys(algorithm, kwargs, fields)
    run_id = settings.get("run_id")
    run = RunConfig(rounds=given.rounds, seed=given.seed,
                    **{**settings, "run_id": "run" if run_id is None else run_id})
    if isinstance(algorithm, str):
        try:  # the factory checks its hyper-parameters (types, ranges)
            algo = get_algorithm(algorithm, **kwargs)
        except (TypeError, ValueError) as exc:
            raise (ConfigTypeError if isinstance(exc, TypeError) else ConfigError)(
                f"{algorithm}: {exc}") from None
    else:
        algo = algorithm
    # a piece of one's own missing a member: named now, not rounds later; what its init and
    # communicate return: checked where they return (None, another dtype, a NaN size)
    algo = checked_pieces(check_algorithm(algo))
    check_drop(algo, run.network)  # [network] drop > 0 needs a rule for a lost message
    check_absent(algo, run.availability)  # offline clients need a rule for an absent one
    check_byzantine(algo, run.byzantine, run.network)  # attacks need gossip's messages
    check_idle(algo, run.rounds)  # settings under which the run would do nothing
    topology = _as_topology(topology)
    graph = _check_topology(topology)
    late = late_switch(topology, run.rounds) if run.rounds >= 1 else None
    if late is not None:  # the run would be first's alone, silently
        raise ValueError(f"topology {_graph_name(topology)!r}: {late}"[:600])
    if not isinstance(data, data_mod.FederatedData):
        _check_data(data, n_clients, partition, partition_params)
    _check_graph_size(topology, graph, data, n_clients, partition)
    if isinstance(model, str):
        _check_options(model_params, "model_params", model_signature(model), MODELS[model])
    elif not isinstance(model, nn.Module):
        raise TypeError(f"model must be a name of topofl.models.MODELS or a torch.nn.Module, "
                        f"got {type(model).__name__} {model!r}"[:300])
    if topology is None and algo.uses_topology:
        raise ValueError(f"{algo.name} communicates over a graph: set topology in the config "
                         "(a spec such as \"ring\"; `topofl list graphs`) or pass a topology "
                         "to topofl.run")
    if topology is not None and not algo.uses_topology:
        warnings.warn(f"{algo.name} uses no graph: the topology {_graph_name(topology)!r} is "
                      "ignored (run it with topology=None)", UserWarning, stacklevel=4)
    call = {"algorithm": algorithm, "topology": topology, "data": data, "model": model,
            "n_clients": n_clients, "partition": partition, "partition_params": partition_params,
            "model_params": model_params}
    # the files the run may write, as the system will open them: looked at, then written
    outputs = {k: real_path(v) for k in ("records_path", "checkpoint_path")
               if (v := getattr(run, k)) is not None}
    return Prepared(call, algo, dict(kwargs), settings, run, graph, imports, outputs)


def _check_keys(algorithm: str | Algorithm, hparams: Mapping[str, Any],
                fields: set[str]) -> None:
    """Refuse keywords that are neither run settings nor the algorithm's hyper-parameters."""
    if isinstance(algorithm, str):
        accepted = set(flat_parameters(ALGORITHMS[algorithm]))
        known = (f"the {algorithm} hyper-parameters {', '.join(sorted(accepted))} and the "
                 f"noisy-update keys {', '.join(DP_KEYS)} and the DP-SGD keys "
                 f"{', '.join(DPSGD_KEYS)}")
        accepted |= set(DP_KEYS) | set(DPSGD_KEYS)
    else:
        accepted, known = set(), "no hyper-parameters (the Algorithm is built)"
    unknown = sorted(set(hparams) - accepted)
    if unknown:
        name = algorithm if isinstance(algorithm, str) else str(algorithm.name)
        elsewhere = {k: takers(k, but=name) for k in unknown}  # the wrong algorithm, not a typo
        near = [k for k in unknown if not elsewhere[k]]
        hint = "".join(f" ({k} is a hyper-parameter of {', '.join(names)}, not of {name})"
                       for k, names in elsewhere.items() if names)
        raise ConfigTypeError(
            f"unknown key(s) {unknown}{hint}"
            f"{did_you_mean_each(near, accepted | fields | {'imports'})}; "
            f"accepted: {', '.join(sorted(RUN_KEYS))}, the run settings "
            f"{', '.join(sorted(fields))} and {known}"
        )


def launch(prepared: Prepared, *, resume: Any = None, overwrite: bool = False) -> Result:
    """Run a :class:`Prepared` call: check that its ``device`` exists here, build its data,
    graph (from the spec :func:`prepare` read) and model, pick the placement
    (:func:`placement`) and hand them to :func:`topofl.engine.run`, with the resolved call and
    its provenance for the records header."""
    config, topology, algorithm, data, model, header = build(prepared, resume=resume,
                                                             overwrite=overwrite)
    return engine_run(config, topology, algorithm, data, model, resume=resume,
                      header=header, placement=placement())


def launch_stacked(prepared: Sequence[Prepared], *, overwrite: bool = False) -> list[Result]:
    """Run several :class:`Prepared` calls as one stacked pass
    (:func:`topofl.engine.stack.run_stacked`): each built as :func:`launch` builds it, each
    with its own records file, checkpoints and header; their records are those of each call
    run alone (:mod:`topofl.engine.stack`).

    Raises
    ------
    ValueError
        When the calls cannot stack (:func:`topofl.engine.stack.stack_problem` says why), or
        when one runs distributed (a stack runs in one process).
    topofl.exceptions.InsufficientMemoryError
        A ``ValueError``: a call, or the stack of them, cannot fit in the memory this
        process may use (:func:`topofl.workflow.memory.check_stack`), refused before the stack's
        buffers are allocated.

    Examples
    --------
    >>> calls = [tf.api.prepare("dsgd", "ring", rounds=2, n_clients=4, seed=s, lr=lr,
    ...                         spectral=False) for s, lr in ((0, 0.1), (1, 0.2))]
    >>> [r.records.final("test_acc_mean") > 0 for r in tf.api.launch_stacked(calls)]
    [True, True]
    """
    if distributed.is_distributed():
        raise ValueError("stacked runs run in one process, not under torchrun")
    from topofl.workflow import memory as plan  # the memory model

    members = [Member(*build(p, resume=None, overwrite=overwrite)) for p in prepared]
    plan.check_stack([plan.run_shapes(p, model=m.model, data=m.data,
                                      topology=m.topology if p.algorithm.uses_topology
                                      else None)
                      for p, m in zip(prepared, members)])  # before the stack's buffers
    return run_stacked(members, placement=placement())


def build(prepared: Prepared, *, resume: Any = None, overwrite: bool = False
          ) -> tuple[RunConfig, Any, Algorithm, Any, nn.Module, dict[str, Any]]:
    """What :func:`launch` hands to :func:`topofl.engine.run` for ``prepared``: ``(config,
    topology, algorithm, data, model, header)``, with the checks of the run's outputs (an
    existing records file or checkpoint is replaced only with ``overwrite`` or ``resume``)."""
    p, call = prepared, dict(prepared.call)
    if "device" in p.settings:  # the machine's, not the call's: checked where the run starts
        check_device(p.settings["device"])
    out_path = p.outputs.get("records_path")
    if out_path is not None and resume is None and not overwrite:
        why = records_target_problem(p.run.records_path, out_path)
        if why is not None:
            raise OutputExistsError(f"{why}; pass overwrite=True (topofl run --overwrite) to "
                                    "replace it, or resume=CHECKPOINT to continue it")
    if out_path is not None and resume is not None:  # the same names must run the same code
        recorded = recorded_imports(out_path)
        why = None if recorded is None else imports_problem(recorded, p.imports)
        if why is not None:
            raise ConfigError(f"cannot resume {p.run.records_path}: {why}; resume with the "
                              "imports its header lists, unchanged, or start a new run")
    from topofl.workflow import memory as plan  # the memory model

    check = not distributed.is_distributed()  # a rank holds a share: its placement decides
    data, model = call["data"], call["model"]
    if check:  # a synthetic dataset's state that cannot fit: refused before it is drawn
        plan.check_before_load(p)
    if not isinstance(data, data_mod.FederatedData):  # a name, a Dataset or a torch dataset
        pp = dict(call["partition_params"] or {})
        dataset = as_dataset(data, pp.get("test", "distribute"))
        if isinstance(model, str):  # built from the dataset's shapes: those of its split
            model = build_model(model, tuple(dataset.input_shape), int(dataset.num_classes),
                                seed=p.seed, **dict(call["model_params"] or {}))
        if check:  # what the run needs at least, before the data is split over the clients
            plan.check_run(p, model=model, dataset=dataset)
        data = data_mod.federate(dataset, call["partition"], call["n_clients"], seed=p.seed,
                                 **pp)
        if not isinstance(call["data"], str):  # the user's own dataset: described, not named
            call["data"] = data
    topology = call["topology"]
    if isinstance(topology, str):
        family, kwargs = p.graph or topologies.check_spec(topology)
        topology = build_checked(topology, family, kwargs, seed=p.seed, n=int(data.num_clients),
                                 label_distributions=None if data.objective != "cross_entropy"
                                 else data.label_distributions)
    why = stochasticity_problem(p.algorithm, topology)
    if why is not None:
        raise ConfigError(why)
    if isinstance(model, str):
        model = build_model(model, tuple(data.input_shape), int(data.num_classes), seed=p.seed,
                            **dict(call["model_params"] or {}))
    elif not isinstance(call["model"], str):  # the user's module: it must take the samples
        check_model_input(model, tuple(data.input_shape), int(data.num_classes))
    plan.check_batch_memory(p.run.batch_size, data)
    if check:  # the run's estimate, before the engine allocates its clients
        plan.check_run(p, model=model, data=data,
                       topology=topology if p.algorithm.uses_topology else None)
    config = resolve_eval_every(p.run, data, p.algorithm)  # "auto": the number
    if not p.settings.get("run_id"):
        config = dataclasses.replace(config, run_id=f"{p.algorithm.name}-"
                                                    f"{getattr(topology, 'name', 'none')}")
    resolved, not_replayable = describe_run({**call, "rounds": p.rounds, "seed": p.seed},
                                            p.hparams, dataclasses.asdict(config))
    with_imports(resolved, p.imports)
    prov = provenance()
    if (gpu := accelerator(config.device)) is not None:  # what decides the bits there
        prov["accelerator"] = gpu
    if p.imports:  # what the names ran: each module's file and the SHA-256 of its source
        prov["imports"] = [dict(i) for i in p.imports]
    swapped = replaced_entries(prepared.call["algorithm"], prepared.call["model"],
                               prepared.call["data"])
    if swapped:  # a name whose registration was replaced: the header says which
        prov["replaced"] = swapped
        not_replayable = [*not_replayable, *(f"{kind} {name!r} (its registration was replaced)"
                                             for kind, name in swapped.items())]
    prov["replayable"] = not not_replayable
    if not_replayable:
        prov["not_replayable"] = not_replayable
    # written where the checks looked (the header above keeps the paths as given)
    if p.outputs:
        where: dict[str, Any] = {k: str(v) for k, v in p.outputs.items()}
        config = dataclasses.replace(config, **where)
    if config.checkpoint_every:  # guarded as records_path is: replaced only when asked
        run_hash = config_header(config, p.algorithm, topology, data, model)["run_hash"]
        why = checkpoint_target_problem(str(config.checkpoint_path), run_hash,
                                        overwrite=overwrite, resume=resume)
        if why is None and not overwrite:  # the copy a save removes beside it: not another's
            why = old_checkpoint_problem(p.run.checkpoint_path,
                                         p.outputs["checkpoint_path"], run_hash)
        if why is not None:
            raise OutputExistsError(why)
    if out_path is not None and resume is None and overwrite:  # replaced, as asked
        claim_client_file(out_path, overwrite=True)  # (the Recorder refuses it otherwise)
    return (config, topology, p.algorithm, data, model,
            {"config": resolved, "provenance": prov})


def placement() -> Placement:
    """Where this process's run puts its clients: split over the ranks when it is one of
    several (``torchrun``, or a process group the caller initialised:
    :class:`topofl.distributed.sharded.Sharded`), else every client here, reading checkpoints of
    either kind (a file, or the folder a distributed run wrote) and writing a file over
    either.

    Examples
    --------
    >>> type(tf.api.placement()).__name__
    'OneProcess'
    """
    if distributed.is_distributed():
        return Sharded()
    return OneProcess(FileCheckpointer(read=load_any, write=save_any))

