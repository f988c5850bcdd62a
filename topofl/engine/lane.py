"""One run in the round loop: what it is (:class:`Member`), how it is set up
(:meth:`Lane.build`), what it keeps and accounts (:class:`Lane`, :class:`Costs`) and what it
returns (:class:`Result`).

:meth:`Lane.build` sets a run up on its rows of the loop's buffers: the placement (where its
clients live: every client in this process by default, a rank's share in a distributed run;
:mod:`topofl.engine.placement`), the checks of its settings against its algorithm, the model
layout, the executor, the services, the initial state, a checkpoint to resume from, the records
(header written) and the accounting (ledger, clock, availability, Byzantine nodes). The round
loop (:mod:`topofl.engine.loop`) then runs the lanes side by side: a run alone is one lane, a
stack (:mod:`topofl.engine.stack`) several, and :func:`split_sent` and :func:`stack_drops` give
each lane its share of a round over every row.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import torch
from scipy.sparse.csgraph import connected_components
from torch import Tensor, nn

from topofl._utils.files import remove_orphans
from topofl.engine.availability import Availability, check_absent
from topofl.engine.byzantine import Attack, Byzantine, check_byzantine, no_attacker
from topofl.engine.clock import Clock, Network, check_clocked
from topofl.engine.config import DTYPES, RunConfig, config_header, resolve_eval_every
from topofl.engine.drops import Drops, LaneDrops, check_drop
from topofl.engine.evaluation import Divergence, check_eval_val
from topofl.engine.executors import make_executor
from topofl.engine.extend import check_idle, checked_pieces
from topofl.engine.layout import ParamLayout, init_parameters
from topofl.engine.ledger import Arcs, Flow, Ledger
from topofl.engine.membership import Membership, check_membership
from topofl.engine.placement import Placement, Site
from topofl.engine.protocol import Algorithm, Round, Sent, Services
from topofl.engine.resume import Resumed, resume_from
from topofl.engine.services import DataServices
from topofl.engine.state import State
from topofl.graph import GraphLike, TimeVarying, Topology, as_time_varying
from topofl.models import flops_per_sample
from topofl.privacy.pairwise import adjacency_of, hop_distances
from topofl.records import Recorder, Records

__all__ = ["Member", "Result", "Costs", "Lane", "split_sent", "stack_drops", "graphs",
           "model_layout", "log_header"]


class Member(NamedTuple):
    """One run: what :func:`topofl.engine.run` takes for it (what :meth:`Lane.build` sets up;
    a member of a stack, :func:`topofl.engine.stack.run_stacked`).

    Attributes
    ----------
    config : RunConfig
    topology : Topology or TimeVarying or None
    algorithm : Algorithm
    data : FederatedData
    model : torch.nn.Module
    header : mapping, optional
        The records header's ``config`` and ``provenance`` (as :func:`topofl.engine.run`).
    """

    config: RunConfig
    topology: GraphLike | None
    algorithm: Algorithm
    data: Any
    model: nn.Module
    header: Mapping[str, Any] | None = None


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
    #: the ``membership_attack`` setting and the static graph's hop distances (or ``None``)
    membership: Membership | None = None
    hops: np.ndarray | None = None

    @classmethod
    def build(cls, index: int, run: Member, placement: Placement, *, start: int,
              executor: Any = None, recorder: Recorder | None = None,
              resume: str | os.PathLike[str] | None = None, init: bool = True,
              warn_level: int = 4) -> Lane:
        """Set the run ``run`` up on rows ``start ..`` of the loop: its placement, model
        layout, services (on ``executor``, default one made for the run), initial state
        (resumed from ``resume``), records (header written, ``run.header``'s) and accounting.

        ``init=False`` leaves the state as the initial parameters (``State(x=x0)``: a stack
        initialises every lane's rows at once); ``warn_level`` is the disconnected-graph
        warning's ``stacklevel``."""
        topology, data, model = run.topology, run.data, run.model
        algorithm = checked_pieces(run.algorithm)  # what a user's pieces return, checked
        n = int(data.num_clients)
        config = resolve_eval_every(run.config, data, algorithm)  # "auto": the number
        tv = graphs(topology, algorithm, n)
        check_drop(algorithm, config.network)
        check_clocked(algorithm, config.network)
        check_absent(algorithm, config.availability)
        check_byzantine(algorithm, config.byzantine, config.network)
        check_idle(algorithm, config.rounds)
        check_eval_val(config, data)
        site = placement(config, tv if algorithm.uses_topology else None, data)
        clients, device, dtype = site.clients, site.device, DTYPES[config.dtype]
        membership = check_membership(config.membership_attack, data, algorithm,
                                      len(clients.ids))
        if clients.writes and tv is not None and tv.period == 1 and algorithm.uses_topology:
            _warn_if_disconnected(tv.at(0), stacklevel=warn_level)  # one for the run
        model = model.to(device=device, dtype=dtype)
        layout = model_layout(model, algorithm)
        if executor is None:
            executor = make_executor(config.executor, model, layout, device, config.chunk_size,
                                     getattr(data, "objective", "cross_entropy"))
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
                expect_rounds=begin.evaluated, expect_blocks=begin.client_blocks))
        log_header(recorder, run.header, {**desc, **site.header})
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
        lane.membership = membership
        if lane.membership is not None and tv is not None and tv.period == 1:
            lane.hops = hop_distances(adjacency_of([np.asarray(tv.at(0).to_dense())]))
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
