"""The settings of one training run: a flat, frozen dataclass saved with every result."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from topofl._utils.registries import replaced
from topofl._utils.runhash import RESUME_FREE, header_hash_problem, identity, run_hash
from topofl._utils.validation import (
    check_bool,
    check_choice,
    check_int,
    check_path,
    check_real,
    check_rounds,
    check_type,
)
from topofl._version import __version__
from topofl.engine.availability import Availability
from topofl.engine.byzantine import Byzantine
from topofl.engine.checkpoint import check_output_paths
from topofl.engine.clock import Network
from topofl.engine.membership import Membership
from topofl.engine.protocol import Algorithm
from topofl.graph import GraphLike
from topofl.records.writer import jsonable

__all__ = ["RunConfig", "DTYPES", "config_header", "RESUME_FREE", "run_hash", "config_diff",
           "header_hash_problem", "ADDED_SETTINGS", "EVAL_GLOBAL_BUDGET",
           "EVAL_GLOBAL_MIN_SAMPLES", "global_samples", "auto_eval_every",
           "resolve_eval_every", "EVAL_SAMPLE_COST"]

DTYPES = {"float32": torch.float32, "float64": torch.float64}
MOMENTUM_STATES = ("algorithm", "keep", "restart")
#: ``eval_global_samples="auto"`` scores every client on the whole global test set while
#: clients x test samples is at most this many (client, sample) pairs: every config of
#: ``paper_figures`` (at most 1,000 clients x 10,000 test samples = 10^7 pairs) and every test.
EVAL_GLOBAL_BUDGET = 20_000_000
#: The fewest global test samples ``"auto"`` scores a client on above the budget.
EVAL_GLOBAL_MIN_SAMPLES = 1_000


@dataclass(frozen=True)
class RunConfig:
    """Flat, frozen settings of one training run (saved in the records header).

    Attributes
    ----------
    rounds : int
        Number of communication rounds.
    batch_size : int, default 32
        Mini-batch size of every local step.
    eval_every : int or "auto", default "auto"
        Evaluate (and record) every ``eval_every`` rounds, and after the last round.
        ``"auto"`` is, at any number of clients, the rounds whose training costs about two
        evaluations (:func:`auto_eval_every`: scoring a client's test split and its global
        test samples against its batch size times its local steps; 76 at 1,000 global
        samples and a batch of 8, 19 at a batch of 32, 1 where a round trains on more than
        a client scores), so that evaluating takes about a third of a run. The run resolves
        it before anything is recorded: its records header, run hash and checkpoints hold
        the number. An int is used as given (every committed config sets one).
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
    momentum_state : {"algorithm", "keep", "restart"}, default "algorithm"
        What happens to every client's momentum buffer (``state.momentum``) between rounds:
        ``"algorithm"`` leaves it to the algorithm (DFedAvgM, DFedPGP, Dis-PFL, DPFL ... zero
        it at every round start, as a client that builds a fresh local optimizer every round;
        D-SGD, SGP, Local ... keep it); ``"keep"`` keeps it across rounds whatever the
        algorithm's ``round_start`` does; ``"restart"`` zeroes it at every round start. One
        policy for every method of a comparison, so that no method wins or loses by a state
        policy its paper does not prescribe (``paper_figures``' presets state theirs). At the
        default the records header and the run hash are those of a run without this setting.
    fuse : bool, default True
        Run the local-update piece's fused kernel when it offers one for the executor (plain
        SGD on softmax regression in closed form: gradient and step in one pass). It changes
        the speed, not the numbers (to rounding).
    init : {"same", "independent"}, default "same"
        Every client starts from the same model, or from its own random draw.
    eval_global : bool, default True
        Also score every client on the global test set (``global_*`` rows; not recorded
        when the data has no global test set, e.g. a torch dataset split with ``test=0.2``).
    eval_global_samples : "auto", "all" or int, default "auto"
        How many samples of the global test set the ``global_*`` rows score every client on:
        ``"all"`` the whole set; an int ``k`` a fixed, seeded subsample of ``k`` samples (the
        whole set when it holds at most ``k``): the same samples for every client, every
        evaluation and every run on that test set (:func:`global_samples`,
        :func:`topofl.engine.evaluation.global_subsample`); ``"auto"`` the whole set while
        clients x test samples is at most :data:`EVAL_GLOBAL_BUDGET` (2 x 10^7 pairs),
        above it ``max(EVAL_GLOBAL_MIN_SAMPLES, EVAL_GLOBAL_BUDGET // clients)`` samples
        (1,000 from 20,000 clients on), so that the evaluation costs O(clients), not
        O(clients x test set). A subsample's size is recorded: the ``global_samples`` row of
        every evaluation and ``eval_global_samples`` in the records header. Each client's
        ``global_acc`` is then an estimate of its accuracy on the whole set with standard
        error ``sqrt(p (1 - p) / k * (g - k) / (g - 1))`` (``p`` the accuracy, ``g`` the test
        set's size), at most ``0.5 / sqrt(k)``: 0.016 at ``k = 1000``; the mean over
        clients has at most that error too (every client is scored on the same samples, so
        their errors do not average out). At the default the records header and the run
        hash are those of a run without this setting whenever the whole set is scored.
    record_clients : bool, default True
        Record per-client accuracies (one row per client and evaluation).
    eval_val : bool, default False
        Also score every client's evaluated model on its own validation split at every
        evaluation: the rows ``val_acc_*`` and ``val_loss``, and per client ``val_loss`` and
        ``val_acc``. With them :meth:`topofl.records.Records.selected` reads each client's
        test accuracy at the evaluation where its validation loss was lowest: the
        best-validation model selection of the personalized-FL papers, for every algorithm
        alike (``eval_every=1`` selects among all rounds). Needs ``record_clients`` and data
        with a validation split (a partition with ``val > 0``). At the default the records
        header and the run hash are those of a run without this setting.
    balanced_accuracy : bool, default False
        Also record every client's balanced accuracy on its test split (the mean over the
        classes it holds of the share of that class predicted right; sklearn's
        ``balanced_accuracy_score``): the rows ``test_bacc_*`` and, with ``record_clients``,
        per client ``test_bacc``. At the default the records header and the run hash are
        those of a run without this setting.
    spectral : bool, default True
        Record the round's ``topofl.spectral.summary`` (once for a static graph).
    checkpoint_every : int, default 0
        Write a checkpoint every that many rounds (0: never).
    checkpoint_path : str or None
        Where checkpoints go (a file, or a folder when the run is distributed). With
        ``checkpoint_every``, it must not collide with ``records_path`` (the same file after
        resolving links and relative paths, or one in the other's way): a ``ValueError``.
    records_path : str or None
        JSONL file for the records (``None``: in memory only).
    run_id : str, default "run"
    progress : bool or None
        tqdm progress bar; ``None`` shows it only on a terminal.
    network : table or None
        How fast clients compute and messages travel (:class:`~topofl.engine.clock.Network`:
        ``latency``, ``bandwidth``, ``uplink``, ``downlink``, ``speed``, ``server_uplink``,
        ``server_downlink``, ``seed``, ``drop``): with it the run keeps a virtual clock and
        records ``sim_time`` (:mod:`topofl.engine.clock`); ``drop`` > 0 loses each message
        with that probability (:mod:`topofl.engine.drops`: each algorithm's ``lost`` rule,
        counted by the ledger). ``None``: no clock.
    availability : table or None
        Clients offline per round and stragglers
        (:class:`~topofl.engine.availability.Availability`: ``model`` = ``"bernoulli"``
        (``offline``), ``"markov"`` (``p_off``, ``p_on``) or ``"trace"`` (``path``), and
        ``straggle``, ``slowdown``, ``seed``). ``None``: every client online in every round.
    byzantine : table or None
        Byzantine nodes and their attack (:class:`~topofl.engine.byzantine.Byzantine`:
        ``attack`` = ``"sign_flip"``, ``"gaussian"`` (``scale``), ``"alie"`` (``z``),
        ``"ipm"`` (``eps``), ``"dissensus"`` (``eps``) or ``"label_flip"``; the nodes as a
        ``share`` in ``[0, 0.5)`` chosen by ``choose`` = ``"random"`` (``seed``),
        ``"degree"`` or ``"betweenness"``, or by id in ``nodes``; fewer than half of the
        nodes, and a ``UserWarning`` when none is): on every message of the
        gossip a Byzantine sender sends the attack's vector; the records add the honest
        nodes' statistics (``honest_*`` rows). Needs an algorithm that declares
        ``Algorithm.byzantine`` (``dsgd``, with any ``aggregator``), every client in one
        process, no lost messages; such a run does not stack. ``None`` (the default: the
        header and run hash of a run without it): every node is honest.
    membership_attack : table or None
        Run a loss-threshold membership-inference attack by every node against every victim
        at every evaluation (:mod:`topofl.engine.membership`: ``samples``, ``seed``,
        ``victims``) and record its ``mia_*`` rows: the advantage and AUC of the victim's own
        model, of the others, and by hop distance on a static graph. Needs every client in
        one process; such a run does not stack. ``None`` (the default: the header and run
        hash of a run without it): no attack.
    ledger : bool, default True
        Count every message and byte per node and kind (:mod:`topofl.engine.ledger`) and
        record them; ``False`` keeps only the total of messages (a run's speed without the
        accounting).
    divergence : float or None, default 1000.0
        Stop with :class:`~topofl.exceptions.ConvergenceError` when a client's training loss
        explodes: at any local step, client ``i``'s mini-batch loss (before its update)
        exceeds ``divergence * max(L0, 1)``, where ``L0`` is the mean over clients of the
        loss at the first local step of round 0 (the initial models' loss; ``ln C`` nats for
        ``C`` classes and a model that starts uniform). The message names the round, the
        local step and the first such client; the rows already recorded stay on disk and no
        checkpoint is written for the round. The floor of 1 nat keeps a model that starts
        almost perfect (``L0`` near 0) from being stopped by the noise of a mini-batch.
        ``None`` or ``0`` turns the check off (a NaN or infinite loss always stops the run);
        any other value must be ``> 1``. It decides when to stop, never the numbers, so a run
        may be resumed with another value. The largest client loss of softmax regression on
        ``digits`` (20 ``shards`` clients, ``dsgd`` on a ring, batch 16, 30 rounds, seed 0)
        is 1.7x ``L0`` with ``lr=1``, 21x with ``lr=10``, 247x with ``lr=100``, 2.2e3x with
        ``lr=1e3`` and 2.2e6x with ``lr=1e6``: the default stops the last two.

    Notes
    -----
    A run resumed from a checkpoint must have the same settings, algorithm, topology, data,
    model and versions as the run that wrote it, except for the fields of
    :data:`RESUME_FREE`, which do not change the numbers: ``rounds`` (a run can be extended,
    or shortened down to the checkpoint's round), where the records and checkpoints go
    (``records_path``, ``checkpoint_path``: the run folder can move), ``checkpoint_every``,
    ``stream_rows``, ``progress`` and ``divergence``. :func:`run_hash` identifies the run by
    the rest; it is stored in the records header (``engine.run_hash``) and in every
    checkpoint.
    """

    rounds: int
    batch_size: int = 32
    eval_every: int | str = "auto"
    seed: int = 0
    device: str = "cpu"
    dtype: str = "float32"
    executor: str = "auto"
    chunk_size: int | None = None
    stream_rows: int | None = None
    momentum_state: str = "algorithm"
    fuse: bool = True
    init: str = "same"
    eval_global: bool = True
    eval_global_samples: int | str = "auto"
    record_clients: bool = True
    eval_val: bool = False
    balanced_accuracy: bool = False
    spectral: bool = True
    checkpoint_every: int = 0
    checkpoint_path: str | None = None
    records_path: str | None = None
    run_id: str = "run"
    progress: bool | None = None
    divergence: float | None = 1e3
    network: Mapping[str, Any] | None = None
    availability: Mapping[str, Any] | None = None
    ledger: bool = True
    byzantine: Mapping[str, Any] | None = None
    membership_attack: Mapping[str, Any] | None = None

    @property
    def interval(self) -> int:
        """``eval_every`` as a number of rounds, once resolved (:func:`resolve_eval_every`:
        the run resolves ``"auto"`` from its number of clients)."""
        if isinstance(self.eval_every, str):
            raise ValueError("eval_every='auto' needs the run's number of clients: resolve it "
                             "with topofl.engine.config.resolve_eval_every(config, n)")
        return int(self.eval_every)

    def __post_init__(self) -> None:
        check_bool(self.ledger, "ledger")
        for name, cls in (("network", Network), ("availability", Availability),
                          ("byzantine", Byzantine), ("membership_attack", Membership)):
            table = getattr(self, name)
            if table is None:
                continue
            if not isinstance(table, Mapping):
                raise TypeError(f"{name} must be a table (a mapping) or None, got "
                                f"{type(table).__name__}")
            # canonical: every key of the table filled in (what the header records)
            object.__setattr__(self, name, cls.from_config(table).to_config())
        if self.network is not None and not self.ledger:
            raise ValueError("network (the clock) times the messages the ledger counts: "
                             "it needs ledger=True")
        if self.divergence is not None:
            d = check_real(self.divergence, "divergence", low=0)
            if d != 0 and not d > 1:
                raise ValueError(
                    f"divergence must be > 1 (a factor of the first round's loss), or 0 or None "
                    f"to turn the check off, got {self.divergence!r}")
        for name in ("fuse", "eval_global", "record_clients", "eval_val", "spectral",
                     "balanced_accuracy"):
            check_bool(getattr(self, name), name)
        _check_global_samples(self.eval_global_samples)
        if self.eval_val and not self.record_clients:
            raise ValueError("eval_val=True records each client's validation loss for the "
                             "best-validation selection: it needs record_clients=True")
        if self.progress is not None:
            check_bool(self.progress, "progress")
        check_int(self.batch_size, "batch_size", low=1)
        if isinstance(self.eval_every, str):
            if self.eval_every != "auto":
                raise ValueError(f"eval_every must be an int >= 1 or 'auto', got "
                                 f"{self.eval_every!r}"[:300])
        else:
            check_int(self.eval_every, "eval_every", low=1)
        check_rounds(self.rounds, self.eval_every)  # int64, records in memory, a year
        check_int(self.seed, "seed", low=0)
        check_choice(self.dtype, "dtype", DTYPES)
        check_choice(self.executor, "executor", ("auto", "batched", "loop"))
        check_choice(self.init, "init", ("same", "independent"))
        check_choice(self.momentum_state, "momentum_state", MOMENTUM_STATES)
        check_int(self.checkpoint_every, "checkpoint_every", low=0)
        if self.checkpoint_every and not self.checkpoint_path:
            raise ValueError("checkpoint_every > 0 needs checkpoint_path")
        if self.checkpoint_every and self.records_path is not None:
            check_output_paths(self.records_path, self.checkpoint_path)
        if self.chunk_size is not None:
            check_int(self.chunk_size, "chunk_size", low=1)
        if self.stream_rows is not None:
            check_int(self.stream_rows, "stream_rows", low=1)
        check_path(self.records_path, "records_path")
        if self.records_path is not None and Path(self.records_path).name in ("", ".", ".."):
            raise ValueError(f"records_path must name a file (such as 'runs/run.jsonl'), got "
                             f"{str(self.records_path)!r}")
        check_path(self.checkpoint_path, "checkpoint_path")
        check_type(self.run_id, str, "run_id")

    @classmethod
    def field_names(cls) -> set[str]:
        """Names of all settings."""
        return {f.name for f in fields(cls)}

    @property
    def divergence_factor(self) -> float | None:
        """``divergence`` as a factor, ``None`` when the check is off."""
        return None if not self.divergence else float(self.divergence)


#: RunConfig fields added after runs were recorded, with their defaults: a run at the default
#: describes itself (header, run hash) as runs recorded before them did.
ADDED_SETTINGS: dict[str, Any] = {"network": None, "availability": None, "ledger": True,
                                  "momentum_state": "algorithm", "eval_val": False,
                                  "eval_global_samples": "auto", "byzantine": None,
                                  "balanced_accuracy": False, "membership_attack": None}


#: What scoring one sample costs against training on one (a forward pass against a forward,
#: a backward and an update), as measured on this project's CPU: 0.22-0.29 for logistic
#: regression at 10^4-10^6 clients (``analysis/eval_defaults.md``).
EVAL_SAMPLE_COST = 0.3


def auto_eval_every(scored: float, trained: float) -> int:
    """``eval_every="auto"``'s interval, ``ceil(2 * EVAL_SAMPLE_COST * scored / trained)``:
    the rounds whose training costs about twice what one evaluation does, so that evaluating
    takes about a third of a run (at most half, the evaluation after the last round
    included), at any number of clients.

    ``scored`` is the samples a client scores at an evaluation (its test split, the global
    test samples, its validation split), ``trained`` those it trains on in a round (batch
    size times local steps; at least 1 is counted). The number of clients enters only through
    ``scored``: the global test samples a client scores (:func:`global_samples`).

    Examples
    --------
    >>> from topofl.engine.config import auto_eval_every
    >>> auto_eval_every(1002, 8), auto_eval_every(1002, 32), auto_eval_every(2, 32)
    (76, 19, 1)
    >>> auto_eval_every(-1, 8)
    Traceback (most recent call last):
    ...
    ValueError: auto_eval_every expects scored >= 0 samples, found -1
    """
    for name, value in (("scored", scored), ("trained", trained)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value < 0:
            raise ValueError(f"auto_eval_every expects {name} >= 0 samples, found {value!r}")
    return max(1, math.ceil(2 * EVAL_SAMPLE_COST * float(scored) / max(float(trained), 1.0)))


def resolve_eval_every(config: RunConfig, data: Any, algorithm: Any = None, *,
                       n: int | None = None) -> RunConfig:
    """``config`` with ``eval_every="auto"`` replaced by :func:`auto_eval_every`'s number for
    ``data`` (its clients, their test splits, the global test samples scored) and
    ``algorithm`` (its local steps a round; 1 when not given): what a run records and hashes.
    An int is kept. ``n`` (default ``data``'s) is the run's clients when ``data`` is a
    planner's probe of a few of them.

    Examples
    --------
    >>> from topofl.engine.config import RunConfig, resolve_eval_every
    >>> data = tf.data.federate("digits", "iid", 10, seed=0)  # 35.5 + 355 scored, 32 trained
    >>> resolve_eval_every(RunConfig(rounds=5), data).eval_every
    8
    >>> resolve_eval_every(RunConfig(rounds=5, eval_every=3), data).eval_every
    3
    """
    if config.eval_every != "auto":
        return config
    n = int(data.num_clients) if n is None else int(n)
    scored = float(np.mean(data.sizes("test")))
    test = getattr(data, "global_test", None)
    if config.eval_global and test is not None:
        scored += global_samples(config.eval_global_samples, n, int(test[0].shape[0]))
    if config.eval_val:
        scored += float(np.mean(data.sizes("val")))
    phases = getattr(algorithm, "phases", ()) or ()
    steps = sum(_phase_steps(ph, data, config.batch_size) for ph in phases) or 1
    return replace(config, eval_every=auto_eval_every(scored, config.batch_size * steps))


def _phase_steps(phase: Any, data: Any, batch_size: int) -> int:
    """The local steps a round of ``phase`` takes: its ``steps``, or for local epochs those
    of the largest client (the engine steps every client that many times:
    :class:`~topofl.engine.protocol.Phase`)."""
    if phase.epochs is None:
        return int(phase.steps or 1)
    epochs = np.atleast_1d(np.asarray(phase.epochs, dtype=float))
    largest = float(np.max(data.sizes("train"))) if data.num_clients else 0.0
    return max(1, math.ceil(float(epochs.max()) * largest / batch_size))


def _check_global_samples(value: Any) -> None:
    """``eval_global_samples``: ``"auto"``, ``"all"`` or an int ``>= 1``."""
    if isinstance(value, str):
        if value not in ("auto", "all"):
            raise ValueError(f"eval_global_samples must be 'auto', 'all' or an int >= 1, got "
                             f"{value!r}")
    elif isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"eval_global_samples must be 'auto', 'all' or an int >= 1, got "
                        f"{type(value).__name__} {value!r}")
    else:
        check_int(value, "eval_global_samples", low=1)


def global_samples(setting: int | str, n_clients: int, n_test: int, *,
                   budget: int = EVAL_GLOBAL_BUDGET,
                   minimum: int = EVAL_GLOBAL_MIN_SAMPLES) -> int:
    """How many samples of a global test set of ``n_test`` samples every one of
    ``n_clients`` clients is scored on under ``eval_global_samples=setting``
    (:class:`RunConfig`); ``n_test`` is the whole set, fewer a subsample. ``"auto"`` scores
    the whole set while ``n_clients * n_test <= budget``, else ``max(minimum, budget //
    n_clients)`` samples (at most ``n_test``).

    Examples
    --------
    >>> from topofl.engine.config import global_samples
    >>> global_samples("auto", 1000, 10_000)  # 10^7 pairs: within the budget
    10000
    >>> global_samples("auto", 10_000, 20_000), global_samples("auto", 10**6, 2 * 10**6)
    (2000, 1000)
    >>> global_samples("all", 10**6, 2 * 10**6), global_samples(500, 4, 300)
    (2000000, 300)
    """
    n_test = max(0, int(n_test))
    if setting == "all":
        return n_test
    if setting == "auto":
        if int(n_clients) * n_test <= budget:
            return n_test
        k = max(minimum, budget // max(1, int(n_clients)))
    else:
        k = int(setting)
    return min(k, n_test)


def _flat(value: Any, prefix: str, out: dict[str, Any]) -> dict[str, Any]:
    if isinstance(value, Mapping) and value:
        for k, v in value.items():
            _flat(v, f"{prefix}.{k}" if prefix else str(k), out)
    else:
        out[prefix] = value
    return out


def config_diff(expected: Mapping[str, Any], found: Mapping[str, Any]) -> list[str]:
    """The result-affecting fields on which two :func:`config_header` descriptions differ.

    One ``"name: expected E, found F"`` per field (dotted names, sorted); empty when they agree
    on everything :func:`run_hash` covers.

    Examples
    --------
    >>> from topofl.engine.config import config_diff
    >>> config_diff({"run": {"seed": 0, "rounds": 5}, "algorithm": {"lr": 0.1}},
    ...             {"run": {"seed": 0, "rounds": 9}, "algorithm": {"lr": 0.2}})
    ['algorithm.lr: expected 0.1, found 0.2']
    """
    a, b = _flat(identity(expected), "", {}), _flat(identity(found), "", {})
    missing = object()
    out = []
    for k in sorted(set(a) | set(b)):
        x, y = a.get(k, missing), b.get(k, missing)
        if x != y or type(x) is not type(y):
            show = ["(absent)" if v is missing else repr(v) for v in (x, y)]
            base = k.rsplit(".", 1)[0]
            file = b.get(f"{base}.trace", b.get(f"{base}.path")) if k.endswith(".sha256") \
                else None
            out.append(f"{k}: expected {show[0]}, found {show[1]}"
                       + (f" (the content of the trace file {file!r} changed)" if file else ""))
    return out


def _global_subsample_size(config: RunConfig, data: Any) -> int | None:
    """The size of the global test subsample a run with ``config`` scores on ``data``, or
    ``None`` when it scores the whole set (or none)."""
    test = getattr(data, "global_test", None)
    if not config.eval_global or test is None:
        return None
    g = int(test[0].shape[0])
    k = global_samples(config.eval_global_samples, int(data.num_clients), g)
    return k if 0 < k < g else None


def config_header(config: RunConfig, algorithm: Algorithm, topology: GraphLike | None,
                  data: Any, model: nn.Module) -> dict[str, Any]:
    """The records header of a run: its settings, the algorithm with every hyper-parameter, the
    topology, the data, the model and the versions, as plain JSON values, and its
    :func:`run_hash` under ``"run_hash"``.

    An algorithm whose name a ``register_algorithm(name, replace=True)`` took over is
    described with ``"replaced": true`` (and so gets a run hash of its own: a run of the
    replacement is never taken for one of the algorithm it replaced).
    """
    config = resolve_eval_every(config, data, algorithm)  # "auto": the number
    cfg = asdict(config)
    cfg.pop("progress", None)
    for key, default in ADDED_SETTINGS.items():  # at their defaults: the hash of older runs
        if cfg.get(key, default) == default:
            cfg.pop(key, None)
    sampled = _global_subsample_size(config, data)
    if sampled is not None:  # the size scored, whichever setting chose it
        cfg["eval_global_samples"] = sampled
    elif config.eval_global_samples != "auto":  # the whole set: as every setting scores it
        cfg.pop("eval_global_samples", None)
    algo: dict[str, Any] = {"name": algorithm.name, **dict(algorithm.hparams)}
    if algorithm.name in replaced("algorithm"):  # a registration replaced it: not the same
        algo["replaced"] = True
    out: dict[str, Any] = jsonable({
        "run": cfg,
        "algorithm": algo,
        "topology": None if topology is None else {
            "name": topology.name, "n": topology.n, "params": topology.params},
        "data": getattr(data, "params", {"num_clients": data.num_clients}),
        "model": type(model).__name__ + f"[{sum(p.numel() for p in model.parameters())}]",
        "versions": {"topofl": __version__, "torch": str(torch.__version__)},
    })
    out["run_hash"] = run_hash(out)
    return out
