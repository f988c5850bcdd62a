"""The run: one set-up, then the round loop, reading top to bottom.

:func:`run` sets a run up as one :class:`Lane` (:meth:`Lane.build`): the placement (where the
clients live: every client in this process by default, a rank's share in a distributed run;
:mod:`topofl.engine.placement`), the model layout, the executor, the services, the initial
state, a checkpoint to resume from, the records and the accounting (ledger, clock,
availability). :func:`run_loop` then runs the rounds of a :class:`Loop` of lanes, each round
in order: who is online and the round's graph, the algorithm's round start, its local phases
(every client's mini-batch drawn at once, or block of clients by block:
:class:`~topofl.engine.local.LocalStepper`), communication (with the round's lost messages), and
every ``eval_every`` rounds an evaluation whose rows go to the records file, flushed every
round, then the checkpoints. A run alone is one lane; a stack
(:func:`topofl.engine.stack.run_stacked`) puts several runs' lanes side by side in the same
loop, each with its own seeds, learning-rate schedule, availability, clock, records and
checkpoints. Whatever differs between placements lives behind ``env.clients`` (the rows this
process owns and the sums over every client), ``env.mixer`` and the placement's
checkpointer; the loop itself never asks where the clients are. Checkpoints are written
atomically and a resumed run produces the same records as an uninterrupted one, because the
data batches and the time-varying graphs depend only on ``(seed, round, step)`` and
everything the algorithm carries is in its ``State``.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from scipy.sparse.csgraph import connected_components
from torch import Tensor, nn

from topofl._utils.files import remove_orphans
from topofl._utils.validation import check_path
from topofl.engine.availability import (
    Availability,
    Frozen,
    check_absent,
    local_rates,
    round_view,
)
from topofl.engine.byzantine import Attack, Byzantine, check_byzantine, no_attacker
from topofl.engine.clock import Clock, Network, check_clocked
from topofl.engine.config import DTYPES, RunConfig, config_header
from topofl.engine.drops import Drops, LaneDrops, check_drop
from topofl.engine.evaluation import (
    Divergence,
    check_eval_val,
    check_finite,
    evaluate,
    evaluation_row,
    global_row,
    record_realized,
    spectral_row,
    split_sums,
)
from topofl.engine.executors import make_executor
from topofl.engine.extend import check_idle, checked_pieces, stochasticity_problem
from topofl.engine.layout import ParamLayout, init_parameters
from topofl.engine.ledger import Arcs, Flow, Ledger, at_steps
from topofl.engine.local import LocalStepper, steps_per_client, stream_rows
from topofl.engine.placement import OneProcess, Placement, Site
from topofl.engine.protocol import (
    Algorithm,
    Round,
    Sent,
    Services,
    State,
    record_replace,
    record_tensors,
)
from topofl.engine.resume import Resumed, checkpoint_meta, resume_from
from topofl.engine.services import DataServices
from topofl.exceptions import ConvergenceError
from topofl.graph import GraphLike, TimeVarying, Topology, as_time_varying
from topofl.models import flops_per_sample
from topofl.records import Recorder, Records

__all__ = ["RunConfig", "Result", "run", "run_loop", "Loop", "Lane", "StackDiverged",
           "init_parameters", "LocalStepper", "stream_rows"]


@dataclass
class Result:
    """What :func:`run` returns: the records, the final state and what it was computed with.

    Attributes
    ----------
    records : Records
    state : State
        The rows of the clients this process holds (``services.clients.ids``; every client in
        one process).
    layout : ParamLayout
    config : RunConfig
    algorithm : Algorithm
    services : Services
        The services the hooks were given (``losses``, ``local_train`` ... on the run's data).
    last : Round
        The last round run (its index and graph).
    """

    records: Records
    state: State
    layout: ParamLayout
    config: RunConfig
    algorithm: Algorithm
    services: Services
    last: Round

    def evaluated(self) -> Tensor:
        """``[m, P]``: the parameters the algorithm scores after the last round."""
        return self.algorithm.evaluate(self.state, self.last, self.services)

    def client_parameters(self, client: int) -> dict[str, Tensor]:
        """The evaluated parameters of one client (a row this process holds), by name."""
        return {k: v[client].clone() for k, v in self.layout.views(self.evaluated()).items()}


def run(
    config: RunConfig,
    topology: GraphLike | None,
    algorithm: Algorithm,
    data: Any,
    model: nn.Module,
    *,
    recorder: Recorder | None = None,
    resume: str | os.PathLike[str] | None = None,
    header: Mapping[str, Any] | None = None,
    placement: Placement | None = None,
) -> Result:
    """Train ``model`` on every client of ``data`` with ``algorithm`` over ``topology``.

    Parameters
    ----------
    config : RunConfig
    topology : Topology or TimeVarying or None
        ``None`` only for algorithms that ignore the graph (``local``, ``fedavg``).
    algorithm : Algorithm
    data : FederatedData
        Must have as many clients as the topology has nodes.
    model : torch.nn.Module
        The architecture (its parameters are only used as the initialisation template).
    recorder : Recorder, optional
        Defaults to one writing ``config.records_path`` (in the process that writes: see
        :attr:`~topofl.engine.clients.Clients.writes`).
    resume : path, optional
        A checkpoint written by this run (``checkpoint_path``, every ``checkpoint_every``
        rounds): the run continues from its round and, with a ``records_path``, continues
        that records file.
    header : mapping, optional
        ``{"config": ..., "provenance": ...}`` for the records header (``topofl.run`` passes
        its resolved call); the engine's own description goes beside them under ``"engine"``
        (and is the header's ``config`` when no header is given).
    placement : Placement, optional
        Where the clients live (:mod:`topofl.engine.placement`); default
        :class:`~topofl.engine.placement.OneProcess`, every client here. ``topofl.run``
        passes ``topofl.distributed``'s sharded placement under ``torchrun``.

    Returns
    -------
    Result

    Raises
    ------
    ConvergenceError
        When a loss or a parameter becomes NaN/inf, or a loss passes ``config.divergence``
        times the first loss; the message names the round and the first bad client, and every
        row recorded before is already on disk.
    CheckpointError
        When ``resume`` is missing, damaged or another run's (the message names the differing
        fields), or the records file does not belong with it.

    Warns
    -----
    UserWarning
        When a static topology is not strongly connected (the message names the number of
        components): its clients cannot reach consensus.
    """
    _check_arguments(config, topology, algorithm, data, model, recorder, resume, header)
    t_start = time.perf_counter()
    lane = Lane.build(0, config, topology, algorithm, data, model, placement or OneProcess(),
                      start=0, header=header, recorder=recorder, resume=resume)
    loop = Loop([lane], config, lane.algorithm, lane.state, lane.env, lane.env.data,
                lane.env.executor, background=False)
    [rnd] = run_loop(loop, t_start, close=recorder is None)
    return lane.result(lane.state, rnd)


@dataclass
class Costs:
    """What a run accounts beside learning: the bytes ledger, the virtual clock and who is
    online (each ``None`` when off; see :mod:`topofl.engine.ledger`,
    :mod:`topofl.engine.clock`, :mod:`topofl.engine.availability`).

    Attributes
    ----------
    ledger : Ledger or None
    clock : Clock or None
    availability : Availability or None
        ``None`` also when every client is always online.
    flops_per_sample : float
        FLOPs of one local SGD step on one sample (forward and backward), for the clock.
    drop : float
        The probability that a message is lost (``[network] drop``; 0: none is).
    byzantine : Byzantine or None
        The ``[byzantine]`` setting (``None``: every node is honest).
    byzantine_nodes : ndarray or None
        ``(n,)`` bool: the Byzantine nodes.
    """

    ledger: Ledger | None = None
    clock: Clock | None = None
    availability: Availability | None = None
    flops_per_sample: float = 0.0
    drop: float = 0.0
    byzantine: Byzantine | None = None
    byzantine_nodes: np.ndarray | None = None

    def attack(self, t: int) -> Attack | None:
        """Round ``t``'s Byzantine attack (``None`` without ``[byzantine]`` or without a
        Byzantine node, or under ``label_flip``, whose messages are the models: then the
        gossip is the plain one, to the bit)."""
        if (self.byzantine is None or self.byzantine_nodes is None
                or not bool(self.byzantine_nodes.any())
                or self.byzantine.attack == "label_flip"):
            return None
        return Attack.of(self.byzantine, self.byzantine_nodes, t)

    def drops(self, t: int) -> Drops | None:
        """Round ``t``'s lost messages (``None`` without drops)."""
        if self.clock is None or not self.drop > 0:
            return None
        return Drops(self.drop, self.clock.network.seed, t)

    @classmethod
    def build(cls, config: RunConfig, n: int, model: nn.Module, input_shape: tuple[int, ...],
              start: Resumed | None = None) -> Costs:
        """The accounting of a run with ``config``, continued from ``start``'s state."""
        network = None if config.network is None else Network.from_config(config.network)
        drop = 0.0 if network is None else network.drop
        ledger = (None if not config.ledger else Ledger(n, lossy=True) if drop > 0
                  else Ledger(n))
        clock = None if network is None else Clock(network, n)
        avail = None
        if config.availability is not None:
            avail = Availability.from_config(config.availability)
            avail.check_run(n, config.rounds)
        fps = 0.0
        if clock is not None:
            fps = float(flops_per_sample(model, input_shape, backward=True))
        if start is not None and ledger is not None and start.ledger is not None:
            ledger.load(start.ledger)
        elif start is not None and ledger is not None and start.messages:
            ledger.add_totals(start.messages, 0)  # a checkpoint written without the ledger
        if start is not None and clock is not None and start.clock is not None:
            clock.load(start.clock)
        return cls(ledger, clock, avail, fps, drop)


@dataclass(eq=False)
class Lane:
    """One run in the round loop: its rows of the loop's buffers and everything it keeps of
    its own (its graphs, data, records, divergence guard, ledger, clock, availability and
    checkpoints). A run alone is one lane over every row; a stack
    (:mod:`topofl.engine.stack`) is several lanes side by side.

    Attributes
    ----------
    index : int
        The lane's place in the loop.
    config, algorithm
        The run's (a stack's lanes differ only in their learning rates and per-run settings).
    rows : slice
        The lane's rows of the loop's state.
    tv : TimeVarying or None
        The run's graphs.
    site : Site
        Where the run's clients live (its placement's clients, data, mixer, checkpointer).
    env : DataServices
        The run's own services (its data, evaluation, checkpoint rows).
    state : State
        The state ``algorithm.init`` built for the run's rows (a stack concatenates them).
    desc : mapping
        The engine's description of the run, written into its checkpoints.
    recorder : Recorder
    costs : Costs
    guard : Divergence
    sizes : Tensor
        ``[n]``: every client's number of training samples.
    start : Resumed
        Where the run starts (round 0, or a checkpoint's round and counters).
    """

    index: int
    config: RunConfig
    algorithm: Algorithm
    rows: slice
    tv: TimeVarying | None
    site: Site
    env: DataServices
    state: State
    desc: Mapping[str, Any]
    recorder: Recorder
    costs: Costs
    guard: Divergence
    sizes: Tensor
    start: Resumed = field(default_factory=Resumed)
    messages: int = 0
    train_loss: list[Any] = field(default_factory=lambda: [0.0, 0])
    spectral_cache: dict[int, dict[str, Any]] = field(default_factory=dict)
    stochastic_seen: set[int] = field(default_factory=set)
    #: the round as the run's hooks see it, its graph before availability, who is online
    rnd: Round = Round(0)
    base: Topology | None = None
    online: np.ndarray | None = None
    sent: Sent = Sent(0)
    #: the first lane whose global test set this lane's equals (``None``: none recorded)
    global_set: int | None = None
    #: the rounds run here in which no client trained and no message was sent
    idle_rounds: int = 0

    @classmethod
    def build(cls, index: int, config: RunConfig, topology: GraphLike | None,
              algorithm: Algorithm, data: Any, model: nn.Module, placement: Placement, *,
              start: int, executor: Any = None, header: Mapping[str, Any] | None = None,
              recorder: Recorder | None = None, resume: str | os.PathLike[str] | None = None,
              init: bool = True, warn_level: int = 4) -> Lane:
        """Set one run up on rows ``start ..`` of the loop: its placement, model layout,
        services (on ``executor``, default one made for the run), initial state (resumed
        from ``resume``), records (header written) and accounting.

        ``init=False`` leaves the state as the initial parameters (``State(x=x0)``: a stack
        initialises every lane's rows at once); ``warn_level`` is the disconnected-graph
        warning's ``stacklevel``."""
        algorithm = checked_pieces(algorithm)  # what a user's pieces return, checked
        n = int(data.num_clients)
        tv = graphs(topology, algorithm, n)
        check_drop(algorithm, config.network)
        check_clocked(algorithm, config.network)
        check_absent(algorithm, config.availability)
        check_byzantine(algorithm, config.byzantine, config.network)
        check_idle(algorithm, config.rounds)
        check_eval_val(config, data)
        site = placement(config, tv if algorithm.uses_topology else None, data)
        clients, device, dtype = site.clients, site.device, DTYPES[config.dtype]
        if clients.writes and tv is not None and tv.period == 1 and algorithm.uses_topology:
            _warn_if_disconnected(tv.at(0), stacklevel=warn_level)  # one for the run
        model = model.to(device=device, dtype=dtype)
        layout = model_layout(model, algorithm)
        if executor is None:
            executor = make_executor(config.executor, model, layout, device, config.chunk_size)
        env = DataServices(layout, site.mixer, executor, site.data, config.batch_size, clients)
        x0 = init_parameters(model, layout, n, rows=clients.ids, seed=config.seed,
                             same=config.init == "same", device=device, dtype=dtype)
        state = algorithm.init(x0, env) if init else State(x=x0)
        desc = config_header(config, algorithm, topology, data, model)
        begin = Resumed()  # a fresh run: round 0, nothing counted yet
        if resume is not None:  # read and checksummed, then checked on every process
            ck = site.checkpointer.load(resume, device)
            begin = clients.agree("checking the checkpoint",
                                  lambda: resume_from(ck, resume, desc, state, config))
        if config.checkpoint_path is not None and config.checkpoint_every and clients.writes:
            # the run owns the path: what saves to it killed midway left beside it is removed
            # now (the writer gone), not only at this run's first save, which may never come
            remove_orphans(config.checkpoint_path)
        if recorder is None:  # the writer checks a resumed records file; the others learn it
            recorder = clients.agree("opening the records file", lambda: Recorder(
                config.records_path if clients.writes else None, run=config.run_id,
                resume=resume is not None, resume_round=begin.round, run_hash=desc["run_hash"],
                expect_rounds=begin.evaluated))
        log_header(recorder, header, {**desc, **site.header})
        sizes = torch.as_tensor(np.array(data.sizes("train")), device=device)
        costs = Costs.build(config, n, model, tuple(data.input_shape), begin)
        if config.byzantine is not None:
            if len(clients.ids) != n:
                raise ValueError("[byzantine] needs every client in one process: a sharded "
                                 "(distributed) placement is not supported")
            costs.byzantine = Byzantine.from_config(config.byzantine)
            ids = costs.byzantine.nodes_of(None if tv is None else tv.at(0), n, env.flipped)
            costs.byzantine_nodes = np.zeros(n, dtype=bool)
            costs.byzantine_nodes[ids] = True
            env.byzantine = costs.byzantine_nodes
            if not ids.size and clients.writes and (costs.byzantine.share or 0.0) > 0.0:
                warnings.warn(no_attacker(costs.byzantine, n), UserWarning,
                              stacklevel=warn_level)
        m = len(clients.ids)
        lane = cls(index, config, algorithm, slice(start, start + m), tv, site, env, state,
                   desc, recorder, costs, Divergence(config.divergence_factor, begin.loss_ref),
                   sizes, begin, messages=begin.messages, train_loss=list(begin.train_loss))
        before = max(0, begin.round - 1)
        lane.rnd = Round(before, None if tv is None else tv.at(before))
        return lane

    @property
    def n(self) -> int:
        """Every client of the run (whichever process holds it)."""
        return int(self.env.n)

    def result(self, state: State, rnd: Round) -> Result:
        """The run's :class:`Result` with its rows ``state`` after the last round ``rnd``."""
        return Result(records=self.recorder.records(), state=state, layout=self.env.layout,
                      config=self.config, algorithm=self.algorithm, services=self.env, last=rnd)


class StackDiverged(ConvergenceError):
    """A run of a stack diverged: the stacked pass stops there (run its runs alone to get
    each run's own outcome). ``member`` is the index of the run that diverged."""

    def __init__(self, member: int, error: ConvergenceError) -> None:
        super().__init__(f"run {member} of the stack: {error}")
        self.member = member


@dataclass(eq=False)
class Loop:
    """What :func:`run_loop` runs: the lanes and the buffers their rows share.

    A run alone is one lane whose services, data and state are its own; a stack
    (:func:`topofl.engine.stack.run_stacked`) sets the hooks that put several lanes side by
    side (``combine``: the round graph of every lane's rows; ``score``: one batched
    evaluation of the lanes due). The loop reads the lanes' rows and nothing else of where
    they live.

    Attributes
    ----------
    lanes : list of Lane
    config : RunConfig
        The settings the lanes share (rounds, batch size, dtype, executor ...: lane 0's).
    algorithm : Algorithm
        The pieces run over every row (lane 0's; the lanes' own learning rates are applied).
    state : State
        Every lane's rows.
    env : Services
        The pieces' services over every row.
    data : Any
        Where the local stepper draws every row's batches.
    executor : Executor
    background : bool
        Whether a round's file writes (records to the disk, then checkpoints) run in
        background threads while the next round computes (a stack in one process), or in
        order before it (a run alone: its checkpoint may be a collective).
    combine : callable, optional
        ``(t, lanes) -> Round``: the round the pieces see over every row (default: the only
        lane's own round).
    score : callable, optional
        ``(due lanes, state, executor) -> {index: (x_eval, sums)}``: a batched evaluation.
    stream_rows : int or None
        The local stepper's block of rows (default ``config.stream_rows``).
    """

    lanes: list[Lane]
    config: RunConfig
    algorithm: Algorithm
    state: State
    env: Any
    data: Any
    executor: Any
    background: bool = False
    combine: Callable[[int, Sequence[Lane]], Round] | None = None
    score: Callable[[Sequence[Lane], State, Any], dict[int, tuple[Tensor, Tensor]]] | None = (
        None)
    stream_rows: int | None = None

    def watch(self, loss: Tensor, first_row: int) -> None:
        """The local stepper's check of a block of rows' losses, by the lanes' guards."""
        stop = first_row + loss.shape[0]
        for ln in self.lanes:
            a, b = max(first_row, ln.rows.start), min(stop, ln.rows.stop)
            if a < b:
                ln.guard.watch(loss[a - first_row:b - first_row], a - ln.rows.start)

    def lane_state(self, ln: Lane) -> State:
        """Lane ``ln``'s rows of the state (the state itself for a run alone)."""
        return self.state if len(self.lanes) == 1 else self.state.rows(ln.rows)


def run_loop(loop: Loop, t_start: float, *, close: bool = True) -> list[Round]:
    """The rounds ``start.round .. config.rounds - 1`` of every lane, in order; returns each
    lane's last round.

    Each round: who is online and the round's graph (:func:`_round`), the algorithm's round
    start, its local phases (offline clients take no step; :func:`_local_phases`),
    communication (what each lane sent goes to its ledger and clock; :func:`_communicate`),
    every ``eval_every`` rounds of a lane (and at the last) its evaluation and records
    (:func:`_evaluate`), then the round's file writes: records to the disk, and every
    ``checkpoint_every`` rounds a checkpoint (:class:`_Writes`). Records are closed at the end
    with ``close``.
    """
    config, algorithm, state, lanes = loop.config, loop.algorithm, loop.state, loop.lanes
    dtype, one = DTYPES[config.dtype], len(lanes) == 1
    first = lanes[0].start.round
    if any(ln.start.round != first for ln in lanes):
        raise ValueError("the lanes of a loop must start at the same round")
    local_step = LocalStepper(loop.executor, algorithm, loop.data, config.batch_size,
                              loop.env.layout.num_params, dtype,
                              rows=loop.stream_rows or config.stream_rows,
                              check=lanes[0].guard.watch if one else loop.watch,
                              fuse=config.fuse)
    cols = loop.env.layout.cols(algorithm.shared)
    bytes_per_message = (cols.stop - cols.start) * torch.finfo(dtype).bits // 8
    pbar = _progress(config, first) if one and lanes[0].site.clients.writes else None
    writes = _Writes(lanes, loop.background)
    failed = True
    try:
        for t in range(first, config.rounds):
            rnd, online_rows = _round(loop, t)
            frozen = (Frozen(state, ~online_rows) if online_rows is not None
                      and algorithm.absent == "stale" else None)
            _round_start(algorithm, state, rnd, loop.env, config.momentum_state)
            steps, samples = _local_phases(loop, local_step, rnd, online_rows, t)
            _communicate(loop, rnd, frozen, t, steps, samples, bytes_per_message)
            last = t == config.rounds - 1
            due = [ln for ln in lanes if _eval_due(ln.config, t, last)]
            scored = loop.score(due, state, loop.executor) if loop.score and due else {}
            for ln in due:
                row = _evaluate(loop, ln, t, bytes_per_message, t_start, scored.get(ln.index))
                if pbar is not None:
                    pbar.set_postfix(acc=f"{row['test_acc_mean']:.3f}")
            writes.round_end(loop, t, t_start)
            if pbar is not None:
                pbar.update(1)
        failed = False
        for ln in lanes:
            _warn_if_idle(ln, config.rounds - first)
    finally:
        if pbar is not None:
            pbar.close()
        writes.finish(quiet=failed, close=close)
    return [ln.rnd for ln in lanes]


def _round(loop: Loop, t: int) -> tuple[Round, Tensor | None]:
    """Round ``t`` of every lane (who is online, its graph as its hooks see it), then the
    round over every row and the rows online (``None``: every row is)."""
    for ln in loop.lanes:
        ln.site.clients.start_round(t)
        avail = ln.costs.availability
        online = None if avail is None else avail.online(t, ln.n)
        ln.online = None if online is None or bool(online.all()) else online
        ln.base = None if ln.tv is None else ln.tv.at(t)
        if ln.base is not None and ln.algorithm.uses_topology:
            _check_stochastic(ln.algorithm, ln.base, ln.stochastic_seen)
        ln.rnd = round_view(ln.algorithm, t, ln.base, ln.online)  # the present clients' graph
    if all(ln.online is None for ln in loop.lanes):
        online_rows = None
    else:
        device = loop.state.x.device
        online_rows = torch.cat([ln.site.clients.own(torch.as_tensor(
            np.ones(ln.n, dtype=bool) if ln.online is None else ln.online, device=device))
            for ln in loop.lanes])
    rnd = loop.lanes[0].rnd if loop.combine is None else loop.combine(t, loop.lanes)
    return rnd, online_rows


def _local_phases(loop: Loop, local_step: LocalStepper, rnd: Round,
                  online_rows: Tensor | None, t: int) -> tuple[int, list[Tensor]]:
    """The algorithm's local phases of round ``t`` over every row, each lane at its own
    learning rate (``lr * decay**t``) and number of steps per client (offline clients take
    none); each lane's guard settles its rows' losses. Returns the steps taken and every
    lane's samples per client (for the clock)."""
    config, lanes, dtype = loop.config, loop.lanes, DTYPES[loop.config.dtype]
    step = 0
    samples = [torch.zeros_like(ln.sizes) for ln in lanes]  # every client's, for the clock
    for p, phase in enumerate(loop.algorithm.phases):
        rates, todos, most = [], [], 0
        for ln, s in zip(lanes, samples):
            ph = ln.algorithm.phases[p]
            todo_all = steps_per_client(ph.steps, ph.epochs, ln.sizes, config.batch_size)
            s += todo_all * config.batch_size
            rates.append(ph.lr * ln.algorithm.decay**t)
            todos.append(ln.site.clients.own(todo_all))
            most = max(most, int(todo_all.max()))
        for k in range(most):
            parts = [(todo > k).to(dtype) * lr_t for todo, lr_t in zip(todos, rates)]
            lr = parts[0] if len(parts) == 1 else torch.cat(parts)  # 0 once a client is done
            lr = local_rates(lr, online_rows)  # 0 for offline clients
            loss = local_step(loop.state, rnd, loop.env, phase, step, lr)
            for ln in lanes:
                try:
                    mean = ln.guard.settle(ln.site.clients,
                                           loss if len(lanes) == 1 else loss[ln.rows], t,
                                           step, ln.recorder)
                except ConvergenceError as exc:
                    if len(lanes) == 1:
                        raise
                    raise StackDiverged(ln.index, exc) from exc
                ln.train_loss[0] += mean
                ln.train_loss[1] += 1
                ln.guard.first_loss(mean)  # the initial models' loss: set once per run
            step += 1
    return step, samples


def _communicate(loop: Loop, rnd: Round, frozen: Frozen | None, t: int, steps: int,
                 samples: Sequence[Tensor], bytes_per_message: int) -> None:
    """The algorithm's communication over every row (with each lane's lost messages), then
    each lane's part of what was sent to its ledger, clock and records."""
    lanes, algorithm = loop.lanes, loop.algorithm
    drops = lanes[0].costs.drops(t) if len(lanes) == 1 else stack_drops(lanes, t)
    if drops is not None and rnd.topology is not None:
        rnd = rnd._replace(drop=drops)
    attack = lanes[0].costs.attack(t) if len(lanes) == 1 else None  # [byzantine]: alone
    if attack is not None and rnd.topology is not None:
        rnd = rnd._replace(byzantine=attack)
    sent = algorithm.communicate(loop.state, rnd, loop.env)
    if frozen is not None:  # "stale": the absent clients' state stands still
        frozen.restore(loop.state)
    for ln, s in zip(lanes, samples):
        ln.sent = sent if len(lanes) == 1 else split_sent(sent, ln, algorithm.name)
        ln.messages = _account(ln.costs, ln.algorithm, ln.sent, ln.online, steps, s, t,
                               ln.recorder, ln.messages, bytes_per_message)
        ln.idle_rounds += _idle(ln.sent, ln.online, steps)
        if ln.sent.realized is not None and ln.site.clients.writes:
            record_realized(ln.recorder, ln.sent.realized, t)
        if ln.sent.records and ln.site.clients.writes:
            ln.recorder.log_many(ln.sent.records, t)


def _idle(sent: Sent, online: np.ndarray | None, steps: int) -> bool:
    """Whether a round did nothing: no message sent (lost ones count as sent) and no client
    trained (no local step, no client online, or none of ``sent.active``)."""
    if sent.messages or sent.dropped:
        return False
    if steps == 0:
        return True
    took = np.ones(1, dtype=bool) if online is None else np.asarray(online, dtype=bool)
    if sent.active is not None:
        active = sent.active
        if isinstance(active, Tensor):
            active = active.detach().cpu().numpy()
        active = np.asarray(active, dtype=bool).ravel()
        took = took & active if took.shape == active.shape else active
    return not bool(took.any())


def _warn_if_idle(ln: Lane, ran: int) -> None:
    """A ``UserWarning`` when the ``ran`` rounds a lane ran here (``> 0``) all did nothing."""
    if ran < 1 or ln.idle_rounds < ran or not ln.site.clients.writes:
        return
    first = ln.start.round
    span = f"round {first}" if ran == 1 else f"rounds {first}..{first + ran - 1}"
    warnings.warn(
        f"{ln.algorithm.name}: the run did nothing in {span} (run {ln.config.run_id!r}): no "
        "client trained and no message was sent (every round's Sent.messages was 0 and no "
        "client was active), so its models did not change in them; check the "
        "settings that decide who acts in a round (an event-time algorithm's durations and "
        "window, a participation rate, the availability)", UserWarning, stacklevel=3)


def _eval_due(cfg: RunConfig, t: int, last: bool) -> bool:
    return (t + 1) % cfg.eval_every == 0 or last


def _evaluate(loop: Loop, ln: Lane, t: int, bytes_per_message: int, t_start: float,
              scored: tuple[Tensor, Tensor] | None) -> dict[str, Any]:
    """Lane ``ln``'s evaluation of round ``t`` and its records, as the run alone makes them
    (``scored``: its evaluated parameters and per-client sums from a batched evaluation)."""
    cfg, costs, clients, recorder = ln.config, ln.costs, ln.site.clients, ln.recorder
    if scored is None:
        row = evaluate(loop.executor, ln.algorithm, loop.lane_state(ln), ln.rnd, ln.env,
                       ln.env.data, cfg, recorder)
    else:
        x_eval, full = scored
        check_finite(clients, x_eval, t, recorder)
        val = None
        if cfg.eval_val:  # the lane's validation splits, as the run alone scores them
            val = clients.all_rows(split_sums(ln.env.executor, x_eval, ln.env.data, "val"),
                                   "evaluation")
        row = evaluation_row(clients, ln.algorithm, ln.env, x_eval, full, cfg, recorder, t,
                             val=val)
        row.update(global_row(cfg, ln.n, ln.env.data))
    row["train_loss"] = ln.train_loss[0] / max(1, ln.train_loss[1])
    ln.train_loss = [0.0, 0]
    if costs.ledger is not None:
        row.update(costs.ledger.rows())
    else:
        row["messages"] = ln.messages
        row["bytes"] = ln.messages * bytes_per_message
    row["wall_time"] = ln.start.wall + time.perf_counter() - t_start
    recorder.log_many(row, t)
    if costs.ledger is not None and cfg.record_clients:
        for name, values in costs.ledger.client_rows().items():
            if name.startswith("bytes"):
                recorder.log_clients(name, values, t)
    static = ln.tv is not None and ln.tv.period == 1
    first_eval = min(cfg.eval_every, cfg.rounds) - 1  # a static graph's rows go here
    if clients.writes and cfg.spectral and ln.base is not None and (
            not static or t == first_eval):
        recorder.log_many(spectral_row(ln.base, ln.tv, ln.spectral_cache,
                                       ln.env.label_counts), t)
    if clients.writes and cfg.spectral and ln.sent.realized is not None:
        real = spectral_row(ln.sent.realized, None, {}, measured=False)
        recorder.log_many({k.replace("graph.", "realized."): v for k, v in real.items()}, t)
    return row


class _Writes:
    """A round's file writes of every lane: its records to the disk, then (every
    ``checkpoint_every`` rounds) its checkpoint.

    In order before the next round (``background=False``: a run alone, whose sharded
    checkpoint may be a collective), or side by side in background threads while the next
    round computes (a stack in one process): a lane's records reach the disk before its
    checkpoint of the round is written, and a round's writes end before the next round's
    begin (one round in flight; an error is raised there, or at the end)."""

    def __init__(self, lanes: Sequence[Lane], background: bool) -> None:
        self.lanes = list(lanes)
        self.io = (ThreadPoolExecutor(max_workers=min(len(lanes), 8),
                                      thread_name_prefix="topofl-writes")
                   if background else None)
        self.pending: list[Future[None]] = []

    def round_end(self, loop: Loop, t: int, t_start: float) -> None:
        """Round ``t``'s writes (started, or done without background threads)."""
        for ln in self.lanes:
            ln.recorder.flush(sync=self.io is None)
        if self.io is not None:
            _wait(self.pending)
            self.pending = []
        for ln in self.lanes:
            cfg = ln.config
            save = None
            if cfg.checkpoint_every and (t + 1) % cfg.checkpoint_every == 0:
                state = loop.state if self.io is None else _own_rows(loop.state, ln.rows)
                save = (str(cfg.checkpoint_path), state, checkpoint_meta(
                    t + 1, ln.messages, ln.start.wall + time.perf_counter() - t_start,
                    ln.train_loss, ln.guard.loss_ref, ln.desc,
                    ledger=None if ln.costs.ledger is None else ln.costs.ledger.state(),
                    clock=None if ln.costs.clock is None else ln.costs.clock.state()))
            if self.io is not None:
                self.pending.append(self.io.submit(_lane_writes, ln, save))
            elif save is not None:
                ln.site.checkpointer.save(*save)

    def finish(self, *, quiet: bool, close: bool) -> None:
        """Every lane's records to the disk (after the writes under way), then closed with
        ``close``; ``quiet``: an error of these writes is not raised (the loop stops on
        another)."""
        try:
            if self.io is None:
                for ln in self.lanes:
                    ln.recorder.flush()
            else:
                for ln in self.lanes:
                    ln.recorder.flush(sync=False)
                _wait(self.pending)
                _wait([self.io.submit(ln.recorder.sync) for ln in self.lanes])
        except Exception:
            if not quiet:
                raise
        finally:
            if self.io is not None:
                self.io.shutdown(wait=True)
            if close:
                for ln in self.lanes:
                    ln.recorder.close()


def _wait(jobs: Sequence[Future[None]]) -> None:
    """Wait for every one of ``jobs``; then raise the first one's error (in their order)."""
    errors = [f.exception() for f in jobs]
    for e in errors:
        if e is not None:
            raise e


def _lane_writes(ln: Lane, save: tuple[str, State, dict[str, Any]] | None) -> None:
    """A lane's file writes of a round: its records to the disk, then its checkpoint."""
    ln.recorder.sync()
    if save is not None:
        ln.site.checkpointer.save(*save)


def _own_rows(state: State, rows: slice) -> State:
    """A copy of the state of the clients ``rows`` (a lane's checkpoint holds those rows)."""
    part = state.rows(rows)
    own = part.own
    if own is not None:
        own = record_replace(own, {k: v.clone() for k, v in record_tensors(own).items()})
    return State(x=part.x.clone(),
                 momentum=None if part.momentum is None else part.momentum.clone(),
                 weight=None if part.weight is None else part.weight.clone(), own=own)


def split_sent(sent: Sent, lane: Lane, name: str) -> Sent:
    """The part of a round's ``sent`` (over every row of a stack) that is ``lane``'s."""
    if sent.realized is not None or sent.records:
        raise ValueError(f"{name} realized a graph or records of its own: it cannot stack")
    if sent.flows is None:
        if sent.messages:
            raise ValueError(f"{name} does not say what it sends: its messages cannot be "
                             "split over the runs of a stack")
        return Sent(0)
    a, b, n = lane.rows.start, lane.rows.stop, lane.rows.stop - lane.rows.start
    flows = [_lane_flow(f, a, b, n, name) for f in sent.flows]
    dropped = (None if sent.dropped is None  # a lane that loses nothing records no drops
               or not (lane.costs.drop > 0 and lane.costs.clock is not None)
               else tuple(_lane_flow(f, a, b, n, name) for f in sent.dropped))
    out = Sent.of(*flows, active=None if sent.active is None else sent.active[lane.rows])
    return out if dropped is None else out._replace(dropped=dropped)


def _lane_flow(f: Flow, a: int, b: int, n: int, name: str) -> Flow:
    """The messages of ``f`` sent by rows ``a .. b - 1`` (a lane), in the lane's ids."""
    s, r = f.arcs.senders, f.arcs.receivers
    mine = (s >= a) & (s < b)
    if bool(((r >= a) & (r < b) != mine).any()):
        raise ValueError(f"{name} sent across runs: it cannot stack")
    size = f.size[mine] if isinstance(f.size, np.ndarray) else f.size
    return dataclasses.replace(f, arcs=Arcs(n, s[mine] - a, r[mine] - a), size=size)


def stack_drops(lanes: Sequence[Lane], t: int) -> LaneDrops | None:
    """Round ``t``'s lost messages over the rows of several lanes, each lane's drawn as the
    run alone draws them (its network's seed, its clients' ids); ``None`` when no lane
    loses messages."""
    parts = [(ln.rows, ln.costs.drops(t)) for ln in lanes]
    if all(d is None for _, d in parts):
        return None
    return LaneDrops(tuple(parts), t)
def _account(costs: Costs, algorithm: Algorithm, sent: Sent, online: np.ndarray | None,
             steps: int, samples: Tensor, t: int, recorder: Recorder, messages: int,
             bytes_per_message: int) -> int:
    """Count a round's messages in the ledger, advance the clock, record the round's rows;
    returns the run's messages so far."""
    flows = None if sent.flows is None else at_steps(sent.flows, steps)
    if flows is not None and online is not None and algorithm.absent == "stale":
        present = np.append(online, True)  # nothing is sent to an absent client
        flows = tuple(f.into(present) for f in flows)
    row: dict[str, Any] = {}
    if costs.ledger is not None:
        if flows is None:
            m, b = sent.messages, sent.messages * bytes_per_message
            costs.ledger.add_totals(m, b)
        else:
            m, b = costs.ledger.add(flows)
        if sent.dropped is not None or costs.ledger.lossy:
            md, bd = costs.ledger.add_dropped(at_steps(sent.dropped or (), steps))
            row.update(round_messages=m + md, round_bytes=b + bd,
                       round_messages_dropped=md, round_bytes_dropped=bd)
        else:
            row.update(round_messages=m, round_bytes=b)
        messages = costs.ledger.messages
    else:
        messages += sent.messages
    if costs.availability is not None:
        row["online_clients"] = int(samples.numel() if online is None else online.sum())
    if costs.clock is not None:
        if flows is None:
            raise ValueError(
                f"{algorithm.name} does not say what it sends (its communicate returns no "
                "Sent.flows), so the clock cannot time its rounds: run it without network")
        n = costs.clock.n
        took = np.ones(n, dtype=bool) if online is None else online.copy()
        if sent.active is not None:
            took &= np.asarray(sent.active, dtype=bool)
        work = samples.detach().cpu().numpy().astype(np.float64) * costs.flops_per_sample
        if costs.availability is not None:
            work = work * costs.availability.slowdowns(t, n)
        row["sim_time"] = costs.clock.advance(t, np.where(took, work, 0.0), flows)
    if row:
        recorder.log_many(row, t)
    return messages


def graphs(topology: GraphLike | None, algorithm: Algorithm, n: int) -> TimeVarying | None:
    """The run's graphs, checked against its ``n`` clients and its algorithm."""
    if topology is None:
        if algorithm.uses_topology:
            raise ValueError(f"{algorithm.name} communicates over a graph: pass a topology")
        return None
    tv = as_time_varying(topology)
    if tv.n != n:
        raise ValueError(f"the topology has n={tv.n} nodes but the data has {n} clients")
    return tv


def model_layout(model: nn.Module, algorithm: Algorithm) -> ParamLayout:
    """The model's parameter layout, checked to split into a body and a head when the
    algorithm shares only the body."""
    layout = ParamLayout.from_model(model)
    if algorithm.shared == "body" and not layout.has_split:
        raise ValueError(
            f"{algorithm.name} personalizes a head and shares a body, but the model's "
            f"parameters do not split into a non-empty body and head ({layout.num_body} body "
            f"of {layout.num_params}); use a model with a body and a head"
        )
    return layout


def log_header(recorder: Recorder, header: Mapping[str, Any] | None,
               desc: Mapping[str, Any]) -> None:
    """Write the records header: ``header``'s config and provenance with the engine's
    description ``desc`` beside them, or ``desc`` alone."""
    if header is None:
        recorder.log_config(desc)
    else:
        recorder.log_config(header["config"], provenance=header.get("provenance"), engine=desc)


def _warn_if_disconnected(topo: Topology, stacklevel: int = 3) -> None:
    """Warn when a static graph splits the clients into groups that never exchange a model."""
    k, _ = connected_components(topo.W, directed=True, connection="strong")
    if k > 1:
        warnings.warn(
            f"the topology {topo.name!r} has {k} strongly connected components: clients in "
            "different components never exchange models and cannot reach consensus",
            UserWarning, stacklevel=stacklevel,
        )


def _round_start(algorithm: Algorithm, state: State, rnd: Round, env: Services,
                 momentum_state: str) -> None:
    """The algorithm's ``round_start``, then the run's momentum policy
    (:attr:`RunConfig.momentum_state`): ``"keep"`` puts back the momentum the hook found,
    ``"restart"`` zeroes it, ``"algorithm"`` leaves the hook's result."""
    kept = (state.momentum.clone() if momentum_state == "keep" and state.momentum is not None
            else None)
    algorithm.round_start(state, rnd, env)
    if state.momentum is None:
        return
    if momentum_state == "restart":
        state.momentum.zero_()
    elif kept is not None:
        state.momentum.copy_(kept)


def _check_stochastic(algo: Algorithm, topo: Topology, seen: set[int]) -> None:
    if algo.requires is None or id(topo) in seen:
        return
    why = stochasticity_problem(algo, topo)
    if why:
        raise ValueError(why)
    seen.add(id(topo))


def _progress(config: RunConfig, start: int) -> Any:
    show = config.progress if config.progress is not None else sys.stderr.isatty()
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=config.rounds, initial=start, desc=config.run_id, leave=False)


def _check_arguments(config: Any, topology: Any, algorithm: Any, data: Any, model: Any,
                     recorder: Any, resume: Any, header: Any) -> None:
    """The types :func:`run` needs, checked at its boundary (a TypeError naming the argument,
    not an AttributeError from inside)."""
    for name, value, kind, what in (
            ("config", config, RunConfig, "a topofl.engine.RunConfig"),
            ("algorithm", algorithm, Algorithm, "a topofl.engine.Algorithm"),
            ("model", model, nn.Module, "a torch.nn.Module"),
            ("recorder", recorder, (Recorder, type(None)), "a topofl.records.Recorder or None")):
        if not isinstance(value, kind):
            raise TypeError(f"{name} must be {what}, got {type(value).__name__} "
                            f"{value!r}"[:300])
    # data: a FederatedData, or an object that behaves as one (a wrapper that delegates)
    missing = [a for a in ("num_clients", "num_classes", "input_shape", "sizes", "to")
               if not hasattr(data, a)]
    if missing:
        raise TypeError(f"data must be a topofl.data.FederatedData, got {type(data).__name__} "
                        f"(it has no {', '.join(missing)})")
    if topology is not None and not isinstance(topology, (Topology, TimeVarying)):
        raise TypeError(f"topology must be a Topology, a TimeVarying or None, got "
                        f"{type(topology).__name__} {topology!r}"[:300])
    check_path(resume, "resume")
    if header is not None and not (isinstance(header, Mapping)
                                   and isinstance(header.get("config"), Mapping)
                                   and isinstance(header.get("provenance") or {}, Mapping)):
        raise TypeError("header must be None or a mapping with a 'config' mapping (and "
                        f"optionally 'provenance'), got {type(header).__name__} "
                        f"{header!r}"[:300])
