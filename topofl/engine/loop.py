"""The round loop: sampling, local steps, communication, evaluation and recording, in order.

:func:`run` reads top to bottom: set-up (model layout, state, executor, mixer), then for each
round: the round's topology, the local phases of the algorithm (every client's mini-batch drawn
at once, or block of clients by block for ``rowwise`` algorithms on CPU: :class:`LocalStepper`),
communication, and every ``eval_every`` rounds an evaluation whose rows go to the
records file, flushed every round. Checkpoints are written atomically (write, then rename) and a
resumed run produces the same records as an uninterrupted one, because the data batches and the
time-varying graphs depend only on ``(seed, round, step)``.
"""

from __future__ import annotations

import copy
import math
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from topofl._rng import generator_at
from topofl._validation import check_choice, check_int
from topofl.algorithms.base import Algorithm, Context, State
from topofl.engine.executors import make_executor
from topofl.engine.gossip import Mixer
from topofl.engine.layout import ParamLayout
from topofl.exceptions import ConvergenceError
from topofl.graph import GraphLike, Topology, as_time_varying
from topofl.records import Recorder, Records

__all__ = ["RunConfig", "Result", "run", "init_parameters", "LocalStepper", "stream_rows"]

_DTYPES = {"float32": torch.float32, "float64": torch.float64}


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
        check_int(self.rounds, "rounds", low=0)
        check_int(self.batch_size, "batch_size", low=1)
        check_int(self.eval_every, "eval_every", low=1)
        check_int(self.seed, "seed", low=0)
        check_choice(self.dtype, "dtype", _DTYPES)
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


@dataclass
class Result:
    """What :func:`run` returns: the records and the final state."""

    records: Records
    state: State
    layout: ParamLayout
    config: RunConfig
    algorithm: Algorithm
    extra: dict[str, Any] = field(default_factory=dict)

    def client_parameters(self, client: int) -> dict[str, Tensor]:
        """The evaluated parameters of one client, by name."""
        x = self.algorithm.evaluate(self.state, self.extra["ctx"])
        return {k: v[client].clone() for k, v in self.layout.views(x).items()}


def init_parameters(
    model: nn.Module, layout: ParamLayout, n: int, *, seed: int, same: bool,
    device: torch.device, dtype: torch.dtype,
) -> Tensor:
    """Initial ``[n, P]`` parameters.

    ``same=True``: every client starts from the model's current parameters (build the model
    with :func:`topofl.models.build_model` and a seed to make them reproducible, or load
    pretrained weights into it). ``same=False``: client ``i`` re-initialises the model with its
    modules' ``reset_parameters`` under torch's RNG seeded from ``(seed, i)`` inside
    ``torch.random.fork_rng``, so the caller's global RNG state is restored afterwards.
    """
    flat = torch.empty(n, layout.num_params, dtype=dtype, device=device)
    views = layout.views(flat)
    if same:
        params = dict(model.named_parameters())
        for k in layout.names:
            views[k].copy_(params[k].detach().to(device=device, dtype=dtype).expand_as(views[k]))
        return flat
    template = copy.deepcopy(model).to("cpu")
    for i in range(n):
        s = int(generator_at(seed, 0xC11E, i).integers(0, 2**63 - 1))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(s)
            for m in template.modules():
                reset = getattr(m, "reset_parameters", None)
                if callable(reset):
                    reset()
        params = dict(template.named_parameters())
        for k in layout.names:
            views[k][i].copy_(params[k].detach())
    return flat


def _stats(prefix: str, v: np.ndarray) -> dict[str, float]:
    return {
        f"{prefix}_mean": float(v.mean()),
        f"{prefix}_min": float(v.min()),
        f"{prefix}_max": float(v.max()),
        f"{prefix}_std": float(v.std()),
    }


def _steps_per_client(phase_steps: int | None, epochs: Any, sizes: Tensor,
                      batch: int) -> Tensor:
    if epochs is None:
        return torch.full_like(sizes, int(phase_steps or 1))
    if isinstance(epochs, (tuple, list)):
        if len(epochs) != sizes.numel():
            raise ValueError(
                f"local_epochs has {len(epochs)} values but there are {sizes.numel()} clients"
            )
        e = torch.as_tensor(epochs, dtype=torch.float64, device=sizes.device)
    else:
        e = torch.full(sizes.shape, float(epochs), dtype=torch.float64, device=sizes.device)
    return torch.ceil(e * sizes.to(torch.float64) / batch).to(sizes.dtype).clamp_min(1)


_STREAM_BYTES = 8 << 20  # batch bytes per block of clients when a local step is streamed


def stream_rows(n: int, batch_size: int, input_shape: tuple[int, ...],
                device: torch.device) -> int:
    """Clients per block of a streamed local step (``n``: no streaming).

    On CPU, blocks of clients whose float32 batches take about 8 MiB (equal blocks); on other
    devices all clients at once (one large launch is what a GPU wants). Measured inside D-SGD
    rounds on 2 cores, logistic regression, 1000 clients x 16 samples x 784 inputs, local step
    = draw + closed-form gradient + separate SGD update (medians of 25 rounds): blocks of 64
    clients 17.6 ms, 125: 16.3, 167 (the default): 16.6, 250: 17.2, 500: 19.3, all at once:
    20.2.
    Smaller blocks pay more per-operation overhead than they save in memory traffic.

    Examples
    --------
    >>> import torch
    >>> tf.engine.stream_rows(1000, 16, (1, 28, 28), torch.device("cpu"))
    167
    >>> tf.engine.stream_rows(100, 16, (1, 8, 8), torch.device("cpu"))
    100
    """
    per = max(1, batch_size * 4 * int(np.prod(input_shape)))
    if torch.device(device).type != "cpu":
        return n
    blocks = max(1, math.ceil(n * per / _STREAM_BYTES))
    return math.ceil(n / blocks)


class LocalStepper:
    """One local step of every client, as the round loop takes it.

    Draws every client's mini-batch (``FederatedData.sample``), computes the gradients at
    ``algorithm.point`` with the executor and applies ``algorithm.update``. When the algorithm is
    ``rowwise`` and ``rows < n``, the step is streamed over blocks of ``rows`` clients: each
    block's batches are drawn just before its gradient and its update follows at once, so the
    batches and gradients stay in cache and the buffers hold one block
    (:func:`stream_rows`). The numbers are the same either way (the same batches, the same
    per-client arithmetic).

    Parameters
    ----------
    executor : Executor
    algorithm : Algorithm
    data : FederatedData
    batch_size : int
    num_params : int
    dtype : torch.dtype
    rows : int or None
        Clients per block. ``None``: :func:`stream_rows` for executors whose ``streams``
        attribute is true (the batched one), all clients at once otherwise (the per-client
        loop, whose threads would meet at every block). Ignored, i.e. all clients at once,
        unless ``algorithm.rowwise``. Streaming also shrinks the gradient and batch buffers to
        one block (1000 GN-LeNet clients on the threaded loop: 1.3 instead of 1.8 GiB at the
        peak of a round).
    check : callable, optional
        ``check(loss, first_client)`` is called on every block's losses before its update
        (the round loop raises ``ConvergenceError`` on a non-finite loss there; after it, when
        the update is fused).
    fuse : bool, default True
        For ``plain_sgd`` algorithms and an executor that ``fuses_sgd`` (softmax regression in
        closed form), apply each block's gradient as it is computed
        (``executor.sgd_``), without a gradient buffer. Same numbers to rounding.

    Examples
    --------
    >>> import torch
    >>> data = tf.data.federate("digits", "iid", 8, seed=0)
    >>> model = tf.models.build_model("logistic", data.input_shape, 10, seed=0)
    >>> layout = tf.engine.ParamLayout.from_model(model)
    >>> algo = tf.algorithms.dsgd(lr=0.1)
    >>> ex = tf.engine.make_executor("auto", model, layout, torch.device("cpu"))
    >>> ctx = tf.algorithms.Context(layout=layout, mixer=None, n=8)
    >>> x0 = torch.zeros(8, layout.num_params)
    >>> a = algo.init(x0.clone(), ctx)
    >>> b = algo.init(x0.clone(), ctx)
    >>> lr = torch.full((8,), 0.1)
    >>> for rows, s in ((8, a), (3, b)):
    ...     step = tf.engine.LocalStepper(ex, algo, data, 16, layout.num_params,
    ...                                   torch.float32, rows=rows)
    ...     loss = step(s, ctx, algo.phases[0], 0, 0, lr)
    >>> bool(torch.equal(a.x, b.x)), round(float(loss.mean()), 4)
    (True, 2.3026)
    """

    def __init__(self, executor: Any, algorithm: Algorithm, data: Any, batch_size: int,
                 num_params: int, dtype: torch.dtype, *, rows: int | None = None,
                 check: Any = None, fuse: bool = True) -> None:
        n = int(data.num_clients)
        device = data.device
        if rows is None:
            rows = (stream_rows(n, batch_size, tuple(data.input_shape), device)
                    if getattr(executor, "streams", False) else n)
        self.rows = n if not algorithm.rowwise else max(1, min(n, int(rows)))
        self.fused = bool(fuse and algorithm.plain_sgd and getattr(executor, "fuses_sgd", False))
        self.executor, self.algorithm, self.data = executor, algorithm, data
        self.batch_size, self.dtype, self.n = int(batch_size), dtype, n
        self.check = check
        m = self.rows
        # every step writes into the same buffers (fresh large allocations cost page faults)
        self.grads = None if self.fused else torch.zeros(m, num_params, dtype=dtype,
                                                         device=device)
        self.batch = (
            torch.empty((m, batch_size, *data.input_shape), dtype=torch.float32, device=device),
            torch.empty((m, batch_size), dtype=torch.int64, device=device),
        )

    def __call__(self, state: State, ctx: Context, phase: Any, t: int, step: int,
                 lr: Tensor) -> Tensor:
        """Local step ``step`` of round ``t`` with per-client learning rates ``lr`` [n];
        returns every client's loss ``[n]`` (before the step)."""
        point = self.algorithm.point(state, ctx, phase)
        if self.rows >= self.n:
            x, y = self.data.sample(t, step, self.batch_size, out=self.batch)
            return self._step(state, point, x, y, phase, lr, ctx, 0)
        idx = self.data.sample_indices(t, step, self.batch_size)
        losses = torch.empty(self.n, dtype=self.dtype, device=point.device)
        for a in range(0, self.n, self.rows):
            c = slice(a, min(self.n, a + self.rows))
            m = c.stop - a
            x, y = self.data.take(idx[c], out=(self.batch[0][:m], self.batch[1][:m]))
            losses[c] = self._step(state.rows(c), point[c], x, y, phase, lr[c], ctx, a)
        return losses

    def _step(self, state: State, point: Tensor, x: Tensor, y: Tensor, phase: Any, lr: Tensor,
              ctx: Context, first: int) -> Tensor:
        x = x.to(self.dtype)
        if self.fused:  # point is state.x (plain_sgd): gradient and update in one pass
            loss: Tensor = self.executor.sgd_(point, x, y, phase.part, lr)
            if self.check is not None:  # here after the step: a diverged client is not finite
                self.check(loss, first)
            return loss
        g = self.grads[: point.shape[0]]  # type: ignore[index]
        loss = self.executor.grad(point, x, y, phase.part, g)
        if self.check is not None:
            self.check(loss, first)
        self.algorithm.update(state, g, phase, lr, ctx)
        return loss


def _check_stochastic(algo: Algorithm, topo: Topology, seen: set[int]) -> None:
    if algo.requires is None or id(topo) in seen:
        return
    ok = {
        "doubly": topo.is_doubly_stochastic,
        "column": topo.is_column_stochastic,
        "row": topo.is_row_stochastic,
    }[algo.requires]
    if not ok:
        raise ValueError(
            f"{algo.name} needs a {algo.requires}-stochastic W, but the topology "
            f"{topo.name!r} is {topo.stochasticity}; build it with weights="
            + ("'push_sum'" if algo.requires == "column" else "'metropolis'")
        )
    seen.add(id(topo))


def _save_checkpoint(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)


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
        Defaults to one writing ``config.records_path``.
    resume : path, optional
        A checkpoint written by a previous run with the same config.
    header : mapping, optional
        ``{"config": ..., "provenance": ...}`` for the records header (``topofl.run`` passes
        its resolved call); the engine's own description goes beside them under ``"engine"``
        (and is the header's ``config`` when no header is given).

    Returns
    -------
    Result

    Raises
    ------
    ConvergenceError
        When a loss or a parameter becomes NaN/inf; the message names the round and the first
        bad client, and every row recorded before is already on disk.
    """
    t_start = time.perf_counter()
    device = torch.device(config.device)
    dtype = _DTYPES[config.dtype]
    n = int(data.num_clients)
    tv = None
    if topology is not None:
        tv = as_time_varying(topology)
        if tv.n != n:
            raise ValueError(f"the topology has n={tv.n} nodes but the data has {n} clients")
    elif algorithm.uses_topology:
        raise ValueError(f"{algorithm.name} communicates over a graph: pass a topology")
    data = data.to(device)

    # ---------------------------------------------------------------- set-up
    model = model.to(device=device, dtype=dtype)
    layout = ParamLayout.from_model(model)
    if algorithm.shared == "body" and not layout.has_split:
        raise ValueError(
            f"{algorithm.name} personalizes a head and shares a body, but the model's "
            f"parameters do not split into a non-empty body and head ({layout.num_body} body "
            f"of {layout.num_params}); use a model with a body and a head"
        )
    executor = make_executor(config.executor, model, layout, device, config.chunk_size)
    mixer = Mixer(device, dtype)
    ctx = Context(layout=layout, mixer=mixer, n=n)
    _attach_services(ctx, executor, data, config, dtype, grads_shape=(n, layout.num_params))
    x0 = init_parameters(model, layout, n, seed=config.seed, same=config.init == "same",
                         device=device, dtype=dtype)
    state = algorithm.init(x0, ctx)
    sizes = torch.as_tensor(np.array(data.sizes("train")), device=device)
    shared_cols = layout.cols(algorithm.shared)
    bytes_per_message = (shared_cols.stop - shared_cols.start) * torch.finfo(dtype).bits // 8

    start_round, messages, wall_offset, train_loss_acc = 0, 0, 0.0, [0.0, 0]
    if resume is not None:
        ck = torch.load(resume, map_location=device, weights_only=True)
        if ck["config"] != _config_dict(config, algorithm, topology, data, model):
            raise ValueError(f"checkpoint {resume} was written by a run with another config")
        state.load_tensors(ck["state"])
        start_round, messages = int(ck["round"]), int(ck["messages"])
        wall_offset = float(ck["wall"])
        train_loss_acc = [float(ck["train_loss_sum"]), int(ck["train_loss_count"])]
    own = recorder is None
    if recorder is None:
        recorder = Recorder(config.records_path, run=config.run_id, resume=resume is not None,
                            resume_round=start_round)
    cfg_row = _config_dict(config, algorithm, topology, data, model)
    if header is None:
        recorder.log_config(cfg_row)
    else:
        recorder.log_config(header["config"], provenance=header.get("provenance"),
                            engine=cfg_row)

    spectral_cache: dict[int, dict[str, Any]] = {}
    stochastic_seen: set[int] = set()
    pbar = _progress(config, start_round)
    t_step = [0, 0]  # round and step, for the divergence message

    def check(loss: Tensor, first: int) -> None:
        _check_finite(loss, t_step[0], t_step[1], recorder, first)

    local_step = LocalStepper(executor, algorithm, data, config.batch_size, layout.num_params,
                              dtype, rows=config.stream_rows, check=check)
    try:
        for t in range(start_round, config.rounds):
            # ---------------------------------------------------- the round's graph
            topo = None if tv is None else tv.at(t)
            if topo is not None and algorithm.uses_topology:
                _check_stochastic(algorithm, topo, stochastic_seen)
            ctx.topology, ctx.round = topo, t
            algorithm.round_start(state, t, ctx)

            # ---------------------------------------------------- local phases
            step = 0
            for phase in algorithm.phases:
                lr_t = phase.lr * algorithm.decay**t
                todo = _steps_per_client(phase.steps, phase.epochs, sizes, config.batch_size)
                for k in range(int(todo.max())):
                    t_step[:] = [t, step]
                    lr = (todo > k).to(dtype) * lr_t  # 0 once a client did its own steps
                    loss = local_step(state, ctx, phase, t, step, lr)
                    train_loss_acc[0] += float(loss.mean())
                    train_loss_acc[1] += 1
                    step += 1

            # ---------------------------------------------------- communication
            if topo is not None or not algorithm.uses_topology:
                messages += algorithm.communicate(state, topo, t, ctx)  # type: ignore[arg-type]
            if ctx.realized is not None:
                _record_realized(recorder, ctx.realized, t)

            # ---------------------------------------------------- evaluation + records
            last = t == config.rounds - 1
            if (t + 1) % config.eval_every == 0 or last:
                row = _evaluate(executor, algorithm, state, ctx, data, config, recorder, t)
                row["train_loss"] = train_loss_acc[0] / max(1, train_loss_acc[1])
                train_loss_acc = [0.0, 0]
                row["messages"] = messages
                row["bytes"] = messages * bytes_per_message
                row["wall_time"] = wall_offset + time.perf_counter() - t_start
                recorder.log_many(row, t)
                if config.spectral and topo is not None:
                    recorder.log_many(_spectral_row(topo, tv, spectral_cache,
                                                    data.label_distributions), t)
                if config.spectral and ctx.realized is not None:
                    real = _spectral_row(ctx.realized, None, {}, measured=False)
                    recorder.log_many(
                        {k.replace("graph.", "realized."): v for k, v in real.items()}, t)
                if pbar is not None:
                    pbar.set_postfix(acc=f"{row['test_acc_mean']:.3f}")
            ctx.realized = None
            recorder.flush()
            if pbar is not None:
                pbar.update(1)

            # ---------------------------------------------------- checkpoint
            if config.checkpoint_every and (t + 1) % config.checkpoint_every == 0:
                _save_checkpoint(Path(str(config.checkpoint_path)), {
                    "round": t + 1,
                    "state": {k: v.detach().cpu() for k, v in state.tensors().items()},
                    "messages": messages,
                    "wall": wall_offset + time.perf_counter() - t_start,
                    "train_loss_sum": train_loss_acc[0],
                    "train_loss_count": train_loss_acc[1],
                    "config": cfg_row,
                })
    finally:
        if pbar is not None:
            pbar.close()
        recorder.flush()
        if own:
            recorder.close()
    return Result(records=recorder.records(), state=state, layout=layout, config=config,
                  algorithm=algorithm, extra={"ctx": ctx})


def _record_realized(recorder: Recorder, realized: Topology, t: int) -> None:
    """Edges (sender, receiver), sparsity and symmetry of a round's realized graph."""
    g = realized.graph
    edges = sorted([int(j), int(i)] for j, i in g.edges())
    n = realized.n
    recorder.log("realized_edges", edges, t)
    recorder.log("realized_density", len(edges) / max(1, n * (n - 1)), t)
    recip = sum(1 for j, i in g.edges() if g.has_edge(i, j))
    recorder.log("realized_reciprocity", recip / max(1, len(edges)), t)


_AUX_STEP = 1 << 20  # auxiliary draws use steps >= 2**20 of a round: disjoint from the phases'


def _attach_services(ctx: Context, executor: Any, data: Any, config: RunConfig,
                     dtype: torch.dtype, grads_shape: tuple[int, int]) -> None:
    """Give data-driven algorithms local training and loss evaluation (see ``Context``)."""
    scratch: dict[str, Tensor] = {}

    def local_train(x: Tensor, part: str, lr: float, *, steps: int | None = None,
                    epochs: float | None = None, stream: int = 0) -> Tensor:
        if (steps is None) == (epochs is None):
            raise ValueError("local_train needs exactly one of steps or epochs")
        g = scratch.get("g")
        if g is None or g.shape != x.shape or g.dtype != x.dtype:
            g = scratch["g"] = torch.zeros_like(x)
        sizes = torch.as_tensor(np.array(data.sizes("train")), device=x.device)
        todo = _steps_per_client(steps, epochs, sizes, config.batch_size)
        cols = ctx.layout.cols(part)  # type: ignore[arg-type]
        total = torch.zeros(x.shape[0], dtype=x.dtype, device=x.device)
        count = torch.zeros_like(total)
        for k in range(int(todo.max())):
            xb, yb = data.sample(ctx.round, _AUX_STEP * (1 + stream) + k, config.batch_size)
            loss = executor.grad(x, xb.to(x.dtype), yb, part, g)
            active = (todo > k).to(x.dtype)
            x[:, cols].addcmul_(g[:, cols], (active * lr).unsqueeze(1), value=-1.0)
            total += loss.detach() * active
            count += active
        return total / count.clamp_min(1)

    def losses(x: Tensor, split: str = "val") -> Tensor:
        n = x.shape[0]
        sample_bytes = 4 * int(np.prod(data.input_shape))
        chunk = _eval_chunk(n, int(data.num_classes), sample_bytes)
        # never pad beyond the largest client: padding costs forward passes
        chunk = min(chunk, max(1, int(np.max(data.sizes(split)))))
        batches = ((b.x, b.y, b.mask) for b in data.eval_batches(split, batch_size=chunk))
        _, loss, count = _score_chunks(executor, x, batches, n, shared=False)
        if bool((count == 0).any()):
            i = int(torch.nonzero(count == 0)[0, 0])
            raise ValueError(
                f"client {i} has no {split!r} samples; build the data with a {split} split "
                f"(e.g. federate(..., {split}=0.1))"
            )
        return (loss / count).to(x.dtype)

    def cross_losses(x: Tensor, peers: Tensor, *, stream: int = 0) -> Tensor:
        n, k = peers.shape
        xb, yb = data.sample(ctx.round, _AUX_STEP * (100 + stream), config.batch_size)
        xb = xb.to(x.dtype)
        out = torch.empty(n, k, dtype=x.dtype, device=x.device)
        for j in range(k):
            idx = peers[:, j]
            logits = executor.logits(x, xb.index_select(0, idx))
            yy = yb.index_select(0, idx)
            ls = torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), yy.reshape(-1), reduction="none"
            ).reshape(yy.shape)
            out[:, j] = ls.mean(dim=1)
        return out

    ctx.local_train = local_train
    ctx.losses = losses
    ctx.cross_losses = cross_losses
    ctx.train_sizes = torch.as_tensor(np.array(data.sizes("train")), device=data.device)


def _check_finite(loss: Tensor, t: int, step: int, recorder: Recorder, first: int = 0) -> None:
    ok = torch.isfinite(loss)
    if not bool(ok.all()):
        i = first + int(torch.nonzero(~ok)[0, 0])
        recorder.flush()
        raise ConvergenceError(
            f"training diverged at round {t}, local step {step}: the loss of client {i} is "
            f"{float(loss[i - first])} (lower the learning rate?); records up to the previous "
            "evaluation are saved"
        )


def _score_chunks(executor: Any, x_eval: Tensor, batches: Any, n: int,
                  shared: bool) -> tuple[Tensor, Tensor, Tensor]:
    """Sum correct predictions, losses and counts per client over padded batches."""
    correct = torch.zeros(n, dtype=torch.float64, device=x_eval.device)
    loss = torch.zeros_like(correct)
    count = torch.zeros_like(correct)
    for x, y, mask in batches:
        logits = executor.logits(x_eval, x.to(x_eval.dtype), shared_input=shared)
        yy = y.unsqueeze(0).expand(logits.shape[:2]) if shared else y
        ok = (logits.argmax(dim=-1) == yy).double()
        ls = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), yy.reshape(-1), reduction="none"
        ).reshape(yy.shape).double()
        m = torch.ones_like(ok) if mask is None else mask.double()
        correct += (ok * m).sum(dim=1)
        loss += (ls * m).sum(dim=1)
        count += m.sum(dim=1)
    return correct, loss, count


def _eval_chunk(n_clients: int, num_classes: int, sample_bytes: int) -> int:
    # samples per forward pass so that logits and inputs of all clients stay around 64 MB
    per = n_clients * (num_classes * 8 + sample_bytes)
    return max(1, (64 << 20) // max(1, per))


def _evaluate(executor: Any, algorithm: Algorithm, state: State, ctx: Context, data: Any,
              config: RunConfig, recorder: Recorder, t: int) -> dict[str, Any]:
    x_eval = algorithm.evaluate(state, ctx)
    finite = torch.isfinite(x_eval).all(dim=1)
    if not bool(finite.all()):
        i = int(torch.nonzero(~finite)[0, 0])
        recorder.flush()
        raise ConvergenceError(
            f"training diverged at round {t}: the parameters of client {i} are not finite"
        )
    n = ctx.n
    sample_bytes = 4 * int(np.prod(data.input_shape))
    chunk = _eval_chunk(n, int(data.num_classes), sample_bytes)
    row: dict[str, Any] = {}
    test_chunk = min(chunk, max(1, int(np.max(data.sizes("test")))))
    batches = ((b.x, b.y, b.mask) for b in data.eval_batches("test", batch_size=test_chunk))
    correct, loss, count = _score_chunks(executor, x_eval, batches, n, shared=False)
    has = count > 0
    acc = (correct[has] / count[has]).cpu().numpy()
    if acc.size:
        row.update(_stats("test_acc", acc))
        row["test_loss"] = float((loss[has] / count[has]).mean())
    if config.record_clients:
        per_client = torch.where(has, correct / count.clamp_min(1), torch.nan).cpu().numpy()
        recorder.log_clients("test_acc", per_client.tolist(), t)
    if config.eval_global:
        xg, yg = data.global_test
        m = int(xg.shape[0])
        gb = ((xg[a:a + chunk], yg[a:a + chunk], None) for a in range(0, m, chunk))
        gc, gl, gn = _score_chunks(executor, x_eval, gb, n, shared=True)
        row.update(_stats("global_acc", (gc / gn).cpu().numpy()))
        row["global_loss"] = float((gl / gn).mean())
    shared = x_eval[:, ctx.layout.cols(algorithm.shared)]
    row["consensus_distance"] = float(
        ((shared - shared.mean(dim=0, keepdim=True)) ** 2).sum(dim=1).mean()
    )
    return row


def _spectral_row(topo: Topology, tv: Any, cache: dict[int, dict[str, Any]],
                  labels: Any = None, *, measured: bool | None = None) -> dict[str, Any]:
    """``topofl.spectral.summary`` of the round's graph, prefixed ``graph.``.

    Computed once for a static graph (with the measured consensus quantities); for the rounds of
    a time-varying graph without measured quantities, which would cost a product of matrices
    every evaluation. ``labels`` (the clients' label counts) adds the neighbourhood skew.
    """
    key = id(topo)
    if key not in cache:
        from topofl import spectral

        static = tv is None or tv.period == 1
        props = None
        if labels is not None:
            counts = np.asarray(labels, dtype=np.float64)
            tot = counts.sum(axis=1, keepdims=True)
            props = counts / np.where(tot > 0, tot, 1.0) if np.all(tot > 0) else None
        s = spectral.summary(topo, label_distributions=props,
                             measured=static if measured is None else measured)
        s = {f"graph.{k}": v for k, v in s.items()
             if isinstance(v, (int, float, bool)) or v is None}
        s["graph.edges_per_node"] = topo.edges_per_node
        if not static and (tv.period is None or len(cache) > 64):
            cache.clear()
        cache[key] = s
    return cache[key]


def _progress(config: RunConfig, start: int) -> Any:
    show = config.progress if config.progress is not None else sys.stderr.isatty()
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=config.rounds, initial=start, desc=config.run_id, leave=False)


def _config_dict(config: RunConfig, algorithm: Algorithm, topology: GraphLike | None,
                 data: Any, model: nn.Module) -> dict[str, Any]:
    import topofl

    cfg = asdict(config)
    cfg.pop("progress", None)
    out: dict[str, Any] = _plain({
        "run": cfg,
        "algorithm": {"name": algorithm.name, **dict(algorithm.hparams)},
        "topology": None if topology is None else {
            "name": topology.name, "n": topology.n, "params": _plain(topology.params)},
        "data": _plain(getattr(data, "params", {"num_clients": data.num_clients})),
        "model": type(model).__name__ + f"[{sum(p.numel() for p in model.parameters())}]",
        "versions": {"topofl": str(topofl.__version__), "torch": str(torch.__version__)},
    })
    return out


def _plain(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return repr(obj)
