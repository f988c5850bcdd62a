"""Stacked runs: several runs of one algorithm and model shape as one batched pass.

A sweep's runs (graphs x seeds x learning rates ...) that share the algorithm, the model's
parameter layout and the run settings that shape the arithmetic run side by side: their clients
are the rows of one ``[sum of clients, P]`` buffer, every local step draws every run's batches
(each from its own data and seed, at the run's own step) and takes one batched gradient and
update with per-client learning rates (each run's own; a phase lasts its longest run's, and a
run past its own steps rests at rate 0, its guard and step count untouched), and gossip applies
the block-diagonal matrix of the runs' graphs of the round block by block (each run's rows with
its own ``W_t``, the product the run alone computes, to rounding). The evaluation is batched
too: the runs' clients' test splits side by side in one pass, and a global test set once
through the rows of every run that shares it. What belongs to a run stays its own: its records
file, divergence guard, bytes ledger, spectral rows and checkpoint, each computed by the code a
run alone uses, on that run's rows. The runs' file writes of a round (records to the disk, then
checkpoints) go side by side in background threads while the next round computes, each as
durable as the run alone makes it before that run's next checkpoint. A run's records and
parameters are those of the same run alone (the same batches, the same per-client arithmetic),
except ``wall_time``, to rounding: the stack's batched steps, block products and evaluation
sums run other shapes than the run alone (and slices of a larger buffer), whose kernels MKL and
ATen pick by the shape and the CPU, so in float64 they agree to ~1e-10 relative and in float32
within its rounding (a few units in the last place, compounded over the rounds); counts and
discrete outcomes (the batches drawn, the bytes sent) are the same. Two code paths never
promise the same bits across CPUs: the same run twice does.

A stack is a placement of the one round loop (:func:`topofl.engine.loop.run_loop`), as
torch.distributed is: every run is a :class:`~topofl.engine.lane.Lane` whose rows sit side by
side in the loop's buffers, with its own seeds, learning-rate schedule, availability, network
clock, lost messages, records and checkpoints. An algorithm declares whether its runs stack
(``Algorithm.stacks``: ``True`` when its pieces change each client's row from that row alone or
through the mixer); :func:`stack_problem` says why a set of runs cannot.

Examples
--------
>>> import torch
>>> data = [tf.data.federate("digits", "iid", 4, seed=s) for s in (0, 1)]
>>> members = [tf.engine.stack.Member(
...     tf.engine.RunConfig(rounds=2, seed=s, dtype="float64", spectral=False),
...     tf.topologies.ring(4), tf.algorithms.dsgd(lr=lr), data[s],
...     tf.models.build_model("logistic", (1, 8, 8), 10, seed=s))
...     for s, lr in ((0, 0.1), (1, 0.05))]
>>> stacked = tf.engine.stack.run_stacked(members)
>>> alone = tf.engine.run(*members[1][:5])
>>> a, b = stacked[1].records.series("test_acc_mean")[1], alone.records.series("test_acc_mean")[1]
>>> bool((abs(a - b) <= 1e-10).all()), tf.engine.stack.stack_problem(members) is None
(True, True)
"""

from __future__ import annotations

import dataclasses
import itertools
import time
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from topofl.data.federated import FederatedData
from topofl.data.sampling import StackedSampler
from topofl.engine.clients import LocalClients
from topofl.engine.config import DTYPES, RunConfig, global_samples
from topofl.engine.evaluation import eval_chunk, global_scored, score_chunks, shared_sums
from topofl.engine.gossip import Mixer
from topofl.engine.lane import Lane, Member, Result
from topofl.engine.local import steps_per_client
from topofl.engine.loop import Loop, StackDiverged, run_loop
from topofl.engine.placement import OneProcess, Placement
from topofl.engine.protocol import Algorithm, Round, State, ToyServices
from topofl.graph import Topology
from topofl.topologies.derived import block_topology

__all__ = ["Member", "StackDiverged", "stack_problem", "stack_key", "alone_reason",
           "block_topology", "run_stacked"]

#: Run settings every run of a stack shares (they shape the arithmetic or the loop).
_SHARED_SETTINGS = ("rounds", "batch_size", "device", "dtype", "executor", "chunk_size",
                    "momentum_state", "fuse")

_RATES = ("lr", "lr_u", "lr_v")


def _without_lr(algorithm: Algorithm) -> tuple[Any, ...]:
    hp = {k: v for k, v in algorithm.hparams.items() if k not in _RATES}
    phases = tuple(dataclasses.replace(p, lr=0.0) for p in algorithm.phases)
    return (algorithm.name, repr(sorted(hp.items(), key=lambda kv: kv[0])), repr(phases),
            algorithm.decay, algorithm.requires, algorithm.shared, algorithm.uses_topology,
            algorithm.absent, algorithm.predict is None)


def stack_key(config: RunConfig, algorithm: Algorithm) -> tuple[Any, ...] | None:
    """What runs must share to stack (``None``: this run cannot stack); runs with equal keys
    and the same model layout stack (their local steps may differ: a phase of the stack lasts
    its longest run's, and a run past its own steps rests).

    Examples
    --------
    >>> cfg = tf.engine.RunConfig(rounds=3)
    >>> k1 = tf.engine.stack.stack_key(cfg, tf.algorithms.dsgd(lr=0.1))
    >>> k2 = tf.engine.stack.stack_key(cfg, tf.algorithms.dsgd(lr=0.5))
    >>> k1 == k2, tf.engine.stack.stack_key(cfg, tf.algorithms.fedavg()) is None
    (True, True)
    """
    if alone_reason(config, algorithm) is not None:
        return None
    return (_without_lr(algorithm), tuple(getattr(config, k) for k in _SHARED_SETTINGS))

def alone_reason(config: RunConfig, algorithm: Algorithm) -> str | None:
    """Why a run cannot stack with any other (``None``: it can): its algorithm declares that
    it does not (``Algorithm.stacks``), or it predicts with its own rule.

    Examples
    --------
    >>> cfg = tf.engine.RunConfig(rounds=3)
    >>> tf.engine.stack.alone_reason(cfg, tf.algorithms.dsgd()) is None
    True
    >>> print(tf.engine.stack.alone_reason(cfg, tf.algorithms.fedavg()))
    fedavg does not stack (Algorithm.stacks is False): it runs alone
    """
    if config.byzantine is not None:
        return "a run with [byzantine] runs alone"
    if config.membership_attack is not None:
        return "a run with [membership_attack] runs alone"
    if algorithm.stacks is not True:
        why = (algorithm.stacks if isinstance(algorithm.stacks, str)
               else f"{algorithm.name} does not stack (Algorithm.stacks is False)")
        return f"{why}: it runs alone"
    if algorithm.predict is not None:
        return f"{algorithm.name} predicts with its own rule: it runs alone"
    return None


def stack_problem(members: Sequence[Member]) -> str | None:
    """Why these runs cannot run as one stacked pass, or ``None`` when they can.

    Examples
    --------
    >>> data = tf.data.federate("digits", "iid", 4, seed=0)
    >>> m = tf.models.build_model("logistic", (1, 8, 8), 10, seed=0)
    >>> a = tf.engine.stack.Member(tf.engine.RunConfig(rounds=2), tf.topologies.ring(4),
    ...                            tf.algorithms.dsgd(), data, m)
    >>> print(tf.engine.stack.stack_problem([a, a._replace(config=tf.engine.RunConfig(
    ...     rounds=3))]))  # doctest: +ELLIPSIS
    run 1 differs from run 0 in its algorithm or in a shared setting (rounds, ...)
    """
    if not members:
        return "no runs"
    first = members[0]
    for i, m in enumerate(members):
        why = alone_reason(m.config, m.algorithm)
        if why is not None:
            return f"run {i}: {why}"
        if stack_key(m.config, m.algorithm) != stack_key(first.config, first.algorithm):
            return (f"run {i} differs from run 0 in its algorithm or in a shared setting "
                    f"({', '.join(_SHARED_SETTINGS)}; only the learning rate may differ)")
        if _layout_key(m.model) != _layout_key(first.model):
            return f"run {i} has another model shape than run 0"
        if tuple(m.data.input_shape) != tuple(first.data.input_shape):
            return f"run {i} has another input shape than run 0"
        if getattr(m.data, "objective", "cross_entropy") != "cross_entropy":
            return (f"run {i} trains on regression targets: it runs alone (a stack scores "
                    "class labels)")
    return None


def _layout_key(model: nn.Module) -> tuple[Any, ...]:
    return tuple((k, tuple(v.shape)) for k, v in model.named_parameters())


def _phase_steps(lanes: Sequence[Lane], batch_size: int) -> np.ndarray:
    """``[phases, lanes]``: the local steps each lane's run alone takes in each phase (its
    clients' most, :func:`~topofl.engine.local.steps_per_client`), as the loop counts them."""
    phases = range(len(lanes[0].algorithm.phases))
    return np.array([[int(steps_per_client(ln.algorithm.phases[p].steps,
                                           ln.algorithm.phases[p].epochs, ln.sizes,
                                           batch_size).max()) for ln in lanes]
                     for p in phases], dtype=np.int64)


class _BlockMixer(Mixer):
    """The stack's mixer: a round's block-diagonal graph (:meth:`blocks`) is applied block by
    block, each run's rows with its own graph's ``W`` (dense or sparse as the run alone
    picks it), so a run's gossip is the product the run alone computes (and a dense block
    stays a dense product): the same kernel on the same shape, but on a slice of the stack's
    buffer, so equal to rounding rather than promised bit for bit on every CPU.

    A graph an algorithm derives from the round's (EL's arrival average, say) is block
    diagonal over the same runs: it is cut into the runs' blocks (:meth:`_split`), each the
    matrix the run alone derives from its own graph (the derivation acts row by row).
    """

    def __init__(self, device: torch.device, dtype: torch.dtype) -> None:
        super().__init__(device, dtype)
        self._blocks: weakref.WeakKeyDictionary[Topology, list[tuple[slice, Topology]]] = (
            weakref.WeakKeyDictionary())
        self._rows: list[slice] | None = None  # the runs' rows, from the first blocks()

    def blocks(self, topology: Topology, parts: Sequence[tuple[slice, Topology]]) -> None:
        """Say that ``topology`` is the block-diagonal union of ``parts`` (rows, graph)."""
        self._blocks[topology] = list(parts)
        self._rows = [rows for rows, _ in parts]

    def _parts(self, topology: Topology, n: int) -> list[tuple[slice, Topology]] | None:
        parts = self._blocks.get(topology)
        if parts is None and self._rows is not None and topology.n == self._rows[-1].stop:
            parts = self._blocks[topology] = self._split(topology)
        if parts is not None and n != topology.n:
            raise ValueError(f"X has {n} rows but the topology has n={topology.n}")
        return parts

    def _split(self, topology: Topology) -> list[tuple[slice, Topology]]:
        """``topology``, a graph over every row of the stack that :meth:`blocks` was not told
        of, as the runs' diagonal blocks; a ``ValueError`` when it mixes rows of different
        runs (its algorithm cannot stack)."""
        assert self._rows is not None  # _parts checks it
        W = topology.W
        lane = np.repeat(np.arange(len(self._rows)), [r.stop - r.start for r in self._rows])
        starts = np.array([r.start for r in self._rows], dtype=np.int64)
        stops = np.array([r.stop for r in self._rows], dtype=np.int64)
        own = lane[np.repeat(np.arange(topology.n), np.diff(W.indptr))]
        cols = W.indices.astype(np.int64)
        across = (W.data != 0) & ((cols < starts[own]) | (cols >= stops[own]))
        if bool(across.any()):
            raise ValueError(f"the graph {topology.name!r} mixes rows of different runs of the "
                             "stack: its algorithm cannot stack")
        return [(rows, Topology.from_matrix(W[rows, rows], name=topology.name,
                                            params=topology.params)) for rows in self._rows]

    def mix_(self, topology: Topology, X: Tensor, cols: slice | None = None) -> None:
        parts = self._parts(topology, X.shape[0])
        if parts is None:
            super().mix_(topology, X, cols)
            return
        for rows, t in parts:
            super().mix_(t, X[rows], cols)

    def mix_vector_(self, topology: Topology, w: Tensor) -> None:
        parts = self._parts(topology, w.shape[0])
        if parts is None:
            super().mix_vector_(topology, w)
            return
        for rows, t in parts:
            super().mix_vector_(t, w[rows])

    def diagonal(self, topology: Topology) -> Tensor:
        parts = self._parts(topology, topology.n)
        if parts is None:
            return super().diagonal(topology)
        return torch.cat([Mixer.diagonal(self, t) for _, t in parts])


class _StackData:
    """The data of every run of a stack, as the local stepper reads it: run ``r``'s batches
    are its own data's (its seed, its samples), in its rows of the stack.

    The runs may take different numbers of local steps per phase (``steps``, ``[phases,
    runs]``): a phase of the stack lasts its longest run's, so the stack's step ``s`` is step
    ``k`` of phase ``p`` and run ``r``'s own step ``k`` of that phase, the one its run alone
    numbers ``steps[:p, r].sum() + k`` (a run past its steps rests: its draw is unused)."""

    def __init__(self, data: Sequence[Any], rows: Sequence[slice], steps: np.ndarray) -> None:
        self.parts = list(zip(data, rows))
        self._ends = np.cumsum(steps.max(axis=1))  # the stack's step at each phase's end
        self._own = np.cumsum(steps, axis=0) - steps  # each run's first step of each phase
        self._steps = steps
        self.num_clients = int(rows[-1].stop)
        self.device = data[0].device
        self.input_shape = tuple(data[0].input_shape)
        # FederatedData's batches: their rows hashed for every run at once
        self.sampler = (StackedSampler(data) if all(type(d) is FederatedData for d in data)
                        and len({str(d.device) for d in data}) == 1 else None)

    def own_steps(self, step: int) -> list[int]:
        """Each run's own step for the stack's step ``step`` (a resting run: the step of the
        first run still stepping, whose draw it shares)."""
        p = min(int(np.searchsorted(self._ends, step, side="right")), len(self._ends) - 1)
        k = step - (int(self._ends[p - 1]) if p else 0)
        own = [int(self._own[p, r]) + k if k < self._steps[p, r] else -1
               for r in range(len(self.parts))]
        stepping = next((s for s in own if s >= 0), step)
        return [stepping if s < 0 else s for s in own]

    def sample(self, round: int, step: int, batch_size: int, *,
               out: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
        """Every run's clients' batches (``FederatedData.sample`` of each at its own step),
        into ``out``."""
        xo, yo = out
        steps = self.own_steps(step)
        if self.sampler is None or len(set(steps)) > 1:
            for (d, rows), s in zip(self.parts, steps):
                d.sample(round, s, batch_size, out=(xo[rows], yo[rows]))
            return xo, yo
        idx = self.sampler.indices(round, steps[0], batch_size)
        for d, rows in self.parts:
            d.take(idx[rows], out=(xo[rows], yo[rows]))
        return xo, yo


@dataclass
class _StackServices(ToyServices):
    """The services of the stack's pieces: layout, the stack's mixer, every client, and
    ``run_ids`` (:func:`~topofl.engine.protocol.run_ids`): each row's client id in its run."""

    run_ids: np.ndarray | None = None

    def _no_data(self, what: str) -> ValueError:
        return ValueError(f"{what} is not available to a stacked run (an algorithm that draws "
                          "data outside its local phases does not stack)")


@dataclass
class _Combine:
    """The round over every row of a stack: the block-diagonal union of the lanes' round
    graphs (each as its run's hooks see it, with its offline clients), told to the mixer so
    that it mixes each lane's rows with its own graph; rebuilt only when a lane's graph
    changes."""

    def __init__(self, algorithm: Algorithm, mixer: _BlockMixer) -> None:
        self.algorithm, self.mixer = algorithm, mixer
        self.graph: Topology | None = None
        self.tops: list[Topology | None] = []

    def __call__(self, t: int, lanes: Sequence[Lane]) -> Round:
        online = (None if all(ln.rnd.online is None for ln in lanes) else np.concatenate(
            [np.ones(ln.n, dtype=bool) if ln.rnd.online is None else ln.rnd.online
             for ln in lanes]))
        if not self.algorithm.uses_topology:
            return Round(t, None, online)
        tops = [ln.rnd.topology for ln in lanes]
        if self.graph is None or any(a is not b for a, b in zip(tops, self.tops)):
            self.graph = block_topology([g for g in tops if g is not None])
            self.mixer.blocks(self.graph, [(ln.rows, g) for ln, g in zip(lanes, tops)
                                           if g is not None])
            self.tops = tops
        return Round(t, self.graph, online)


def run_stacked(members: Sequence[Member], *, placement: Placement | None = None
                ) -> list[Result]:
    """Run ``members`` as one stacked pass; each run's :class:`~topofl.engine.Result`.

    Parameters
    ----------
    members : sequence of Member
        The runs (:func:`stack_problem` must be ``None`` for them).
    placement : Placement, optional
        Gives each run its data on the device, its records' placement header and its
        checkpointer (default :class:`~topofl.engine.placement.OneProcess`); every client of
        the stack is in this process.

    Returns
    -------
    list of Result
        In the order of ``members``; each ``state`` holds that run's rows.

    Raises
    ------
    ValueError
        When the runs cannot stack (the message of :func:`stack_problem`).
    StackDiverged
        When a run diverges (its records up to the previous evaluation are saved; the other
        runs' records stop at the same round).
    OSError
        When a run's records or checkpoint cannot be written (raised at the next round's
        writes or at the end: the writes of a round end before the next round's begin).
    """
    why = stack_problem(members)
    if why is not None:
        raise ValueError(f"these runs cannot stack: {why}")
    t_start = time.perf_counter()
    first = members[0]
    config, algorithm = first.config, first.algorithm
    dtype, device = DTYPES[config.dtype], torch.device(config.device)
    place = placement or OneProcess()

    # ---------------------------------------------------------------- set-up, run by run
    lanes: list[Lane] = []
    start, executor = 0, None
    for i, m in enumerate(members):
        ln = Lane.build(i, m, place, start=start, executor=executor, init=False,
                        warn_level=5)
        executor = ln.env.executor
        lanes.append(ln)
        start = ln.rows.stop
    total = start
    _share_global_sets(lanes)
    mixer = _BlockMixer(device, dtype)
    layout = lanes[0].env.layout
    env_all = _StackServices(
        layout=layout, mixer=mixer, n=total,
        train_sizes=torch.cat([ln.sizes for ln in lanes]),
        label_counts=None if any(ln.env.label_counts is None for ln in lanes) else
        np.concatenate([np.asarray(ln.env.label_counts) for ln in lanes]),
        flipped=np.concatenate([np.asarray(ln.env.flipped) for ln in lanes]),
        run_ids=np.concatenate([np.asarray(ln.site.clients.ids, dtype=np.int64)
                                for ln in lanes]))
    algorithm = lanes[0].algorithm  # its pieces checked (Lane.build)
    state = algorithm.init(torch.cat([ln.state.x for ln in lanes]), env_all)
    for ln in lanes:
        ln.state = state.rows(ln.rows)
    data = _StackData([ln.site.data for ln in lanes], [ln.rows for ln in lanes],
                      _phase_steps(lanes, config.batch_size))
    # every lane's clients in this process: one batched evaluation of the lanes due
    batched = all(type(ln.site.clients) is LocalClients for ln in lanes)
    loop = Loop(lanes, config, algorithm, state, env_all, data, executor, background=True,
                combine=_Combine(algorithm, mixer), score=_score_lanes if batched else None,
                stream_rows=total)
    last = run_loop(loop, t_start)
    return [ln.result(state.rows(ln.rows), rnd) for ln, rnd in zip(lanes, last)]


def _share_global_sets(lanes: Sequence[Lane]) -> None:
    """Give each lane that records the global test set the first lane with an equal one
    (the same rows and labels): lanes that share it score it in one batched pass."""
    firsts: list[Lane] = []
    for ln in lanes:
        data, cfg = ln.env.data, ln.config
        xg, yg = data.global_test
        if not (cfg.eval_global and int(xg.shape[0]) > 0):
            continue
        for f in firsts:
            fx, fy = f.env.data.global_test
            if (fx.shape == xg.shape and fx.dtype == xg.dtype and fy.shape == yg.shape
                    and fy.dtype == yg.dtype and bool(torch.equal(fx, xg))
                    and bool(torch.equal(fy, yg))):
                ln.global_set = f.index
                break
        else:
            ln.global_set = ln.index
            firsts.append(ln)


def _stacked_test_batches(lanes: Sequence[Lane], batch_size: int
                          ) -> Iterator[tuple[Tensor, Tensor, Tensor]]:
    """The lanes' padded test batches (``FederatedData.eval_batches``) side by side: batch
    ``k`` holds every lane's batch ``k`` (a lane with fewer batches adds masked-out rows)."""
    its = [ln.env.data.eval_batches("test", batch_size=batch_size) for ln in lanes]
    for batch in itertools.zip_longest(*its):
        ref = next(b for b in batch if b is not None)
        xs, ys, ms = [], [], []
        for b, ln in zip(batch, lanes):
            if b is None:
                m = ln.rows.stop - ln.rows.start
                xs.append(ref.x.new_zeros((m, *ref.x.shape[1:])))
                ys.append(ref.y.new_zeros((m, *ref.y.shape[1:])))
                ms.append(ref.mask.new_zeros((m, *ref.mask.shape[1:])))
            else:
                xs.append(b.x)
                ys.append(b.y)
                ms.append(b.mask)
        yield torch.cat(xs), torch.cat(ys), torch.cat(ms)


def _global_size(ln: Lane) -> int:
    """How many samples of its global test set lane ``ln`` scores its clients on."""
    return global_samples(ln.config.eval_global_samples, ln.env.n,
                          int(ln.env.data.global_test[0].shape[0]))


#: the most parameter bytes (rows x P x element size) of one pass of a global test set shared
#: by several lanes; a lane over it scores it alone. The pass is memory-bound and its
#: per-element cost grows with its block: measured on digits (3 runs, thread CPU time of one
#: evaluation), an MLP of 64 hidden units (19 KB a row) scores 3 x 16 rows in 14.3 ms as one
#: pass and 12.0 ms lane by lane (3 x 64 rows: 47.8 and 36.0 ms); the logistic model (2.6 KB a
#: row, 6 x 16 rows) in 12.9 ms as one pass and 15.6 ms lane by lane
_GLOBAL_BYTES = 512 * 1024


def _blocks(group: list[int], due: Sequence[Lane], xs: Sequence[Tensor]) -> list[list[int]]:
    """``group`` (positions in ``due``) as consecutive blocks of at most ``_GLOBAL_BYTES``
    of parameters (a lane is never cut; one over the limit is a block of its own)."""
    blocks: list[list[int]] = []
    size = 0
    for i in group:
        k = xs[i].shape[0] * xs[i].shape[1] * xs[i].element_size()
        if blocks and size + k <= _GLOBAL_BYTES:
            blocks[-1].append(i)
            size += k
        else:
            blocks.append([i])
            size = k
    return blocks


def _score_global(group: list[int], due: Sequence[Lane], xs: list[Tensor],
                  out: dict[int, tuple[Tensor, Tensor]], executor: Any, classes: int,
                  sample_bytes: int) -> None:
    """The lanes ``group`` (positions in ``due``, sharing a global test set and its samples)
    scored on it in one pass through their rows, their sums appended to ``out``."""
    xg_all = torch.cat([xs[i] for i in group]) if len(group) > 1 else xs[group[0]]
    m = int(xg_all.shape[0])
    first = due[group[0]]
    sub = global_scored(first.config, first.env.n, first.env.data)
    if sub is not None:  # the same fixed subsample as each run alone scores
        sums = shared_sums(executor, xg_all, sub[0], sub[1])
    else:
        chunk = eval_chunk(m, classes, sample_bytes)
        xg, yg = first.env.data.global_test
        gb = ((xg[a:a + chunk], yg[a:a + chunk], None)
              for a in range(0, int(xg.shape[0]), chunk))
        sums = torch.stack(score_chunks(executor, xg_all, gb, m, shared=True), dim=1)
    at = 0
    for i in group:
        ln = due[i]
        k = ln.rows.stop - ln.rows.start
        x, mine = out[ln.index]
        out[ln.index] = (x, torch.cat([mine, sums[at:at + k]], dim=1))
        at += k


def _score_lanes(due: Sequence[Lane], state: State, executor: Any
                 ) -> dict[int, tuple[Tensor, Tensor]]:
    """Every due lane's evaluated parameters and per-client sums ``[m, 3 or 6]`` (correct,
    loss, count on its clients' test splits, then on its global test set), as
    :func:`~topofl.engine.evaluation.evaluate` computes them for the run alone, from one
    batched pass over the lanes' rows: the test splits side by side, each global test set
    once through the rows of the lanes that share it (in blocks of ``_GLOBAL_BYTES``). A
    client's sums are over the same samples with the same per-sample arithmetic (counts
    equal; float64 sums of the losses may group their terms otherwise, a few units in the
    last place)."""
    xs = [ln.algorithm.evaluate(state.rows(ln.rows), ln.rnd, ln.env) for ln in due]
    x_all = xs[0] if len(xs) == 1 else torch.cat(xs)
    n = int(x_all.shape[0])
    datas = [ln.env.data for ln in due]
    classes = max(int(d.num_classes) for d in datas)
    sample_bytes = 4 * int(np.prod(datas[0].input_shape))
    test_chunk = min(eval_chunk(n, classes, sample_bytes),
                     max(1, max(int(np.max(d.sizes("test"))) for d in datas)))
    test = torch.stack(score_chunks(executor, x_all, _stacked_test_batches(due, test_chunk),
                                    n, shared=False), dim=1)
    starts = np.cumsum([0] + [ln.rows.stop - ln.rows.start for ln in due])
    own = {ln.index: slice(int(a), int(b)) for ln, a, b in zip(due, starts, starts[1:])}
    out = {ln.index: (x, test[own[ln.index]]) for ln, x in zip(due, xs)}
    # lanes that share a global test set and the samples of it they score: one pass a block
    # of them (_GLOBAL_BYTES)
    keys = {i: (ln.global_set, _global_size(ln)) for i, ln in enumerate(due)
            if ln.global_set is not None}
    for key in sorted(set(keys.values())):
        for group in _blocks([i for i, k in keys.items() if k == key], due, xs):
            _score_global(group, due, xs, out, executor, classes, sample_bytes)
    return out
