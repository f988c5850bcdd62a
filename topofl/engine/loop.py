"""The run: one set-up, then the round loop, reading top to bottom.

:func:`run` sets a run up: the placement (where the clients live: every client in this
process by default, a rank's share in a distributed run; :mod:`topofl.engine.placement`), the
model layout, the executor, the services, the initial state, a checkpoint to resume from and
the records. :func:`run_loop` then runs the rounds, each in order: the round's topology, the
algorithm's round start, its local phases (every client's mini-batch drawn at once, or block
of clients by block: :class:`~topofl.engine.LocalStepper`), communication, and every
``eval_every`` rounds an evaluation whose rows go to the records file, flushed every round.
Whatever differs between placements lives behind ``env.clients`` (the rows this process
owns and the sums over every client), ``env.mixer`` and the placement's checkpointer; the
loop itself never asks where the clients are. Checkpoints are written atomically and a
resumed run produces the same records as an uninterrupted one, because the data batches and
the time-varying graphs depend only on ``(seed, round, step)`` and everything the algorithm
carries is in its ``State``.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from scipy.sparse.csgraph import connected_components
from torch import Tensor, nn

from topofl._validation import check_path
from topofl.engine.availability import (
    Availability,
    Frozen,
    check_absent,
    local_rates,
    round_view,
)
from topofl.engine.clock import Clock, Network
from topofl.engine.config import DTYPES, RunConfig, config_header
from topofl.engine.drops import Drops, check_drop
from topofl.engine.evaluation import (
    Divergence,
    check_eval_val,
    evaluate,
    record_realized,
    spectral_row,
)
from topofl.engine.executors import make_executor
from topofl.engine.extend import stochasticity_problem
from topofl.engine.layout import ParamLayout, init_parameters
from topofl.engine.ledger import Ledger, at_steps
from topofl.engine.local import LocalStepper, steps_per_client, stream_rows
from topofl.engine.placement import Checkpointer, OneProcess, Placement
from topofl.engine.protocol import Algorithm, Round, Sent, Services, State
from topofl.engine.resume import Resumed, checkpoint_meta, resume_from
from topofl.engine.services import DataServices
from topofl.graph import GraphLike, TimeVarying, Topology, as_time_varying
from topofl.models import flops_per_sample
from topofl.records import Recorder, Records

__all__ = ["RunConfig", "Result", "run", "init_parameters", "LocalStepper", "stream_rows"]


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
    n = int(data.num_clients)
    tv = graphs(topology, algorithm, n)
    check_drop(algorithm, config.network)
    check_absent(algorithm, config.availability)
    check_eval_val(config, data)

    # ---------------------------------------------------------------- where the clients live
    site = (placement or OneProcess())(config, tv if algorithm.uses_topology else None, data)
    clients, device, dtype = site.clients, site.device, DTYPES[config.dtype]
    if clients.writes and tv is not None and tv.period == 1 and algorithm.uses_topology:
        _warn_if_disconnected(tv.at(0))  # one warning for the run

    # ---------------------------------------------------------------- set-up
    model = model.to(device=device, dtype=dtype)
    layout = model_layout(model, algorithm)
    executor = make_executor(config.executor, model, layout, device, config.chunk_size)
    env = DataServices(layout, site.mixer, executor, site.data, config.batch_size, clients)
    x0 = init_parameters(model, layout, n, rows=clients.ids, seed=config.seed,
                         same=config.init == "same", device=device, dtype=dtype)
    state = algorithm.init(x0, env)
    desc = config_header(config, algorithm, topology, data, model)

    start = Resumed()  # a fresh run: round 0, nothing counted yet
    if resume is not None:  # read and checksummed, then checked on every process
        ck = site.checkpointer.load(resume, device)
        start = clients.agree("checking the checkpoint",
                              lambda: resume_from(ck, resume, desc, state, config))
    own = recorder is None
    if recorder is None:  # the writer checks a resumed records file; the others learn it
        recorder = clients.agree("opening the records file", lambda: Recorder(
            config.records_path if clients.writes else None, run=config.run_id,
            resume=resume is not None, resume_round=start.round, run_hash=desc["run_hash"],
            expect_rounds=start.evaluated))
    log_header(recorder, header, {**desc, **site.header})

    sizes = torch.as_tensor(np.array(data.sizes("train")), device=device)  # every client's
    costs = Costs.build(config, n, model, tuple(data.input_shape), start)
    rnd = run_loop(Setup(config, algorithm, state, env, tv, executor, sizes, recorder,
                         site.checkpointer, desc, costs), start, t_start, close=own)
    return Result(records=recorder.records(), state=state, layout=layout, config=config,
                  algorithm=algorithm, services=env, last=rnd)


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
    """

    ledger: Ledger | None = None
    clock: Clock | None = None
    availability: Availability | None = None
    flops_per_sample: float = 0.0
    drop: float = 0.0

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


@dataclass(frozen=True)
class Setup:
    """What :func:`run`'s set-up built, for the round loop.

    Attributes
    ----------
    config, algorithm, state
    env : DataServices
        The hooks' services: the placed clients (``env.clients``), their data and the mixer.
    tv : TimeVarying or None
        The run's graphs.
    executor : Executor
    sizes : Tensor
        ``[n]``: every client's number of training samples.
    recorder : Recorder
    checkpointer : Checkpointer
        The placement's.
    desc : mapping
        The engine's description (:func:`~topofl.engine.config.config_header`), written into
        checkpoints.
    costs : Costs
        The ledger, the clock and the availability of the run.
    """

    config: RunConfig
    algorithm: Algorithm
    state: State
    env: DataServices
    tv: TimeVarying | None
    executor: Any
    sizes: Tensor
    recorder: Recorder
    checkpointer: Checkpointer
    desc: Mapping[str, Any]
    costs: Costs = field(default_factory=Costs)


def run_loop(run: Setup, start: Resumed, t_start: float, *, close: bool = True) -> Round:
    """The rounds ``start.round .. config.rounds - 1`` of a run, in order; returns the last.

    Each round: who is online and the round's graph, the algorithm's round start, its local
    phases (offline clients take no step), communication (what was sent goes to the ledger
    and the clock), every ``eval_every`` rounds (and at the last) an evaluation and its
    records, and every ``checkpoint_every`` rounds a checkpoint. The records are flushed
    every round, and closed at the end with ``close``.
    """
    config, algorithm, state, env, tv = run.config, run.algorithm, run.state, run.env, run.tv
    clients, recorder, dtype = env.clients, run.recorder, DTYPES[config.dtype]
    costs, n = run.costs, env.n
    avail = costs.availability
    guard = Divergence(config.divergence_factor, start.loss_ref)
    local_step = LocalStepper(run.executor, algorithm, env.data, config.batch_size,
                              env.layout.num_params, dtype, rows=config.stream_rows,
                              check=guard.watch, fuse=config.fuse)
    messages, wall_offset, train_loss_acc = start.messages, start.wall, start.train_loss
    static_graph = tv is not None and tv.period == 1
    first_eval = min(config.eval_every, config.rounds) - 1  # a static graph's rows go here
    spectral_cache: dict[int, dict[str, Any]] = {}
    stochastic_seen: set[int] = set()
    pbar = _progress(config, start.round) if clients.writes else None
    cols = env.layout.cols(algorithm.shared)
    bytes_per_message = (cols.stop - cols.start) * torch.finfo(dtype).bits // 8
    before = max(0, start.round - 1)
    rnd = Round(before, None if tv is None else tv.at(before))
    try:
        for t in range(start.round, config.rounds):
            # ---------------------------------------------------- who is online, the graph
            clients.start_round(t)
            online = None if avail is None else avail.online(t, n)
            if online is not None and bool(online.all()):
                online = None
            base = None if tv is None else tv.at(t)
            if base is not None and algorithm.uses_topology:
                _check_stochastic(algorithm, base, stochastic_seen)
            rnd = round_view(algorithm, t, base, online)  # the graph of the present clients
            online_rows = None if online is None else clients.own(
                torch.as_tensor(online, device=state.x.device))
            frozen = (Frozen(state, ~online_rows) if online_rows is not None
                      and algorithm.absent == "stale" else None)
            _round_start(algorithm, state, rnd, env, config.momentum_state)

            # ---------------------------------------------------- local phases
            step = 0
            samples = torch.zeros_like(run.sizes)  # every client's, for the clock
            for phase in algorithm.phases:
                lr_t = phase.lr * algorithm.decay**t
                todo_all = steps_per_client(phase.steps, phase.epochs, run.sizes,
                                            config.batch_size)
                samples += todo_all * config.batch_size
                todo = clients.own(todo_all)
                for k in range(int(todo_all.max())):
                    lr = (todo > k).to(dtype) * lr_t  # 0 once a client did its own steps
                    lr = local_rates(lr, online_rows)  # 0 for offline clients
                    loss = local_step(state, rnd, env, phase, step, lr)
                    mean_loss = guard.settle(clients, loss, t, step, recorder)
                    train_loss_acc[0] += mean_loss
                    train_loss_acc[1] += 1
                    guard.first_loss(mean_loss)  # the initial models' loss: set once per run
                    step += 1

            # ---------------------------------------------------- communication
            drops = costs.drops(t)
            sent = algorithm.communicate(state, rnd if drops is None or rnd.topology is None
                                         else rnd._replace(drop=drops), env)
            if frozen is not None:  # "stale": the absent clients' state stands still
                frozen.restore(state)
            messages = _account(costs, algorithm, sent, online, step, samples, t, recorder,
                                messages, bytes_per_message)
            if sent.realized is not None and clients.writes:
                record_realized(recorder, sent.realized, t)
            if sent.records and clients.writes:
                recorder.log_many(sent.records, t)

            # ---------------------------------------------------- evaluation + records
            last = t == config.rounds - 1
            if (t + 1) % config.eval_every == 0 or last:
                row = evaluate(run.executor, algorithm, state, rnd, env, env.data, config,
                               recorder)
                row["train_loss"] = train_loss_acc[0] / max(1, train_loss_acc[1])
                train_loss_acc = [0.0, 0]
                if costs.ledger is not None:
                    row.update(costs.ledger.rows())
                else:
                    row["messages"] = messages
                    row["bytes"] = messages * bytes_per_message
                row["wall_time"] = wall_offset + time.perf_counter() - t_start
                recorder.log_many(row, t)
                if costs.ledger is not None and config.record_clients:
                    for name, values in costs.ledger.client_rows().items():
                        if name.startswith("bytes"):
                            recorder.log_clients(name, values, t)
                if clients.writes and config.spectral and base is not None and (
                        not static_graph or t == first_eval):
                    recorder.log_many(spectral_row(base, tv, spectral_cache,
                                                   env.label_counts), t)
                if clients.writes and config.spectral and sent.realized is not None:
                    real = spectral_row(sent.realized, None, {}, measured=False)
                    recorder.log_many(
                        {k.replace("graph.", "realized."): v for k, v in real.items()}, t)
                if pbar is not None:
                    pbar.set_postfix(acc=f"{row['test_acc_mean']:.3f}")
            recorder.flush()
            if pbar is not None:
                pbar.update(1)

            # ---------------------------------------------------- checkpoint
            if config.checkpoint_every and (t + 1) % config.checkpoint_every == 0:
                run.checkpointer.save(str(config.checkpoint_path), state, checkpoint_meta(
                    t + 1, messages, wall_offset + time.perf_counter() - t_start,
                    train_loss_acc, guard.loss_ref, run.desc,
                    ledger=None if costs.ledger is None else costs.ledger.state(),
                    clock=None if costs.clock is None else costs.clock.state()))
    finally:
        if pbar is not None:
            pbar.close()
        recorder.flush()
        if close:
            recorder.close()
    return rnd


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
