"""The run: one set-up, then the round loop, reading top to bottom.

:func:`run` sets a run up as one :class:`~topofl.engine.lane.Lane`
(:meth:`~topofl.engine.lane.Lane.build`, :mod:`topofl.engine.lane`): the placement (where the
clients live: every client in this process by default, a rank's share in a distributed run;
:mod:`topofl.engine.placement`), the model layout, the executor, the services, the initial
state, a checkpoint to resume from, the records and the accounting (ledger, clock,
availability). :func:`run_loop` then runs the rounds of a :class:`Loop` of lanes, each round
in order: who is online and the round's graph, the algorithm's round start, its local phases
(every client's mini-batch drawn at once, or block of clients by block:
:class:`~topofl.engine.local.LocalStepper`), communication (with the round's lost messages), and
every ``eval_every`` rounds an evaluation whose rows go to the records file, flushed every
round, then the checkpoints (:mod:`topofl.engine.writes`). A run alone is one lane; a stack
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

import os
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from topofl._utils.validation import check_path
from topofl.engine.availability import Frozen, local_rates, round_view
from topofl.engine.config import DTYPES, RunConfig
from topofl.engine.evaluation import (
    EvalSums,
    check_finite,
    class_sums,
    evaluate,
    evaluation_row,
    global_row,
    record_realized,
    spectral_row,
    split_sums,
)
from topofl.engine.extend import stochasticity_problem
from topofl.engine.lane import Costs, Lane, Member, Result, split_sent, stack_drops
from topofl.engine.layout import init_parameters
from topofl.engine.ledger import at_steps
from topofl.engine.local import LocalStepper, steps_per_client, stream_rows
from topofl.engine.membership import membership_rows
from topofl.engine.placement import OneProcess, Placement
from topofl.engine.protocol import Algorithm, Round, Sent, Services, State
from topofl.engine.writes import Writes
from topofl.exceptions import ConvergenceError
from topofl.graph import GraphLike, TimeVarying, Topology
from topofl.records import Recorder

__all__ = ["RunConfig", "Result", "run", "run_loop", "Loop", "Lane", "StackDiverged",
           "init_parameters", "LocalStepper", "stream_rows"]


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
    lane = Lane.build(0, Member(config, topology, algorithm, data, model, header),
                      placement or OneProcess(), start=0, recorder=recorder, resume=resume)
    loop = Loop([lane], lane.config, lane.algorithm, lane.state, lane.env, lane.env.data,
                lane.env.executor, background=False)
    [rnd] = run_loop(loop, t_start, close=recorder is None)
    return lane.result(lane.state, rnd)


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
    #: the lanes (positions) past their own steps of the phase under way: their run alone
    #: takes no such step, so their guards neither watch nor settle it
    resting: frozenset[int] = frozenset()

    def watch(self, loss: Tensor, first_row: int) -> None:
        """The local stepper's check of a block of rows' losses, by the lanes' guards."""
        stop = first_row + loss.shape[0]
        for i, ln in enumerate(self.lanes):
            if i in self.resting:
                continue
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
    writes = Writes(lanes, loop.background)
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
            writes.round_end(state, t, t_start)
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
                  online_rows: Tensor | None, t: int) -> tuple[list[int], list[Tensor]]:
    """The algorithm's local phases of round ``t`` over every row, each lane at its own
    learning rate (``lr * decay**t``) and number of steps per client (offline clients take
    none); each lane's guard settles its rows' losses in the steps its run alone takes (a
    stack's phase lasts its longest lane's). Returns each lane's steps taken and samples per
    client (for the clock)."""
    config, lanes, dtype = loop.config, loop.lanes, DTYPES[loop.config.dtype]
    step, taken = 0, [0] * len(lanes)
    samples = [torch.zeros_like(ln.sizes) for ln in lanes]  # every client's, for the clock
    for p, phase in enumerate(loop.algorithm.phases):
        rates, todos, ends = [], [], []
        for ln, s in zip(lanes, samples):
            ph = ln.algorithm.phases[p]
            todo_all = steps_per_client(ph.steps, ph.epochs, ln.sizes, config.batch_size)
            s += todo_all * config.batch_size
            rates.append(ph.lr * ln.algorithm.decay**t)
            todos.append(ln.site.clients.own(todo_all))
            ends.append(int(todo_all.max()))
        for k in range(max(ends)):
            parts = [(todo > k).to(dtype) * lr_t for todo, lr_t in zip(todos, rates)]
            lr = parts[0] if len(parts) == 1 else torch.cat(parts)  # 0 once a client is done
            lr = local_rates(lr, online_rows)  # 0 for offline clients
            loop.resting = frozenset(i for i, e in enumerate(ends) if k >= e)
            loss = local_step(loop.state, rnd, loop.env, phase, step, lr)
            for i, ln in enumerate(lanes):
                if k >= ends[i]:
                    continue
                taken[i] += 1
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
    loop.resting = frozenset()
    return taken, samples


def _communicate(loop: Loop, rnd: Round, frozen: Frozen | None, t: int, steps: Sequence[int],
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
    for ln, s, k in zip(lanes, samples, steps):
        ln.sent = sent if len(lanes) == 1 else split_sent(sent, ln, algorithm.name)
        ln.messages = _account(ln.costs, ln.algorithm, ln.sent, ln.online, k, s, t,
                               ln.recorder, ln.messages, bytes_per_message)
        ln.idle_rounds += _idle(ln.sent, ln.online, k)
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
    return (t + 1) % cfg.interval == 0 or last


def _evaluate(loop: Loop, ln: Lane, t: int, bytes_per_message: int, t_start: float,
              scored: tuple[Tensor, Tensor] | None) -> dict[str, Any]:
    """Lane ``ln``'s evaluation of round ``t`` and its records, as the run alone makes them
    (``scored``: its evaluated parameters and per-client sums from a batched evaluation)."""
    cfg, costs, clients, recorder = ln.config, ln.costs, ln.site.clients, ln.recorder
    if scored is None:
        x_eval = ln.algorithm.evaluate(loop.lane_state(ln), ln.rnd, ln.env)
        row = evaluate(loop.executor, ln.algorithm, loop.lane_state(ln), ln.rnd, ln.env,
                       ln.env.data, cfg, recorder, x_eval=x_eval)
    else:
        x_eval, full = scored
        check_finite(clients, x_eval, t, recorder)
        val = None
        if cfg.eval_val:  # the lane's validation splits, as the run alone scores them
            val = clients.all_rows(split_sums(ln.env.executor, x_eval, ln.env.data, "val"),
                                   "evaluation")
        balanced = None
        if cfg.balanced_accuracy:  # the lane's test splits' classes, as the run alone
            balanced = clients.all_rows(class_sums(ln.env.executor, x_eval, ln.env.data,
                                                   "test"), "evaluation")
        row = evaluation_row(clients, ln.algorithm, ln.env, x_eval,
                             EvalSums(full, val, balanced), cfg, recorder, t)
        row.update(global_row(cfg, ln.n, ln.env.data))
    if ln.membership is not None:  # every node's attack on every victim (alone: no stack)
        row.update(membership_rows(ln.membership, ln.env.executor, x_eval, ln.env.data,
                                   ln.hops))
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
    first_eval = min(cfg.interval, cfg.rounds) - 1  # a static graph's rows go here
    if clients.writes and cfg.spectral and ln.base is not None and (
            not static or t == first_eval):
        recorder.log_many(spectral_row(ln.base, ln.tv, ln.spectral_cache,
                                       ln.env.label_counts), t)
    if clients.writes and cfg.spectral and ln.sent.realized is not None:
        real = spectral_row(ln.sent.realized, None, {}, measured=False)
        recorder.log_many({k.replace("graph.", "realized."): v for k, v in real.items()}, t)
    return row


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
