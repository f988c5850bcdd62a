"""The local step of every client: draw the batches, take the gradients, apply the update."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import Tensor

from topofl.engine.protocol import Algorithm, Phase, Round, Services, State
from topofl.engine.residues import residue_slots

__all__ = ["LocalStepper", "row_runs", "stream_rows", "steps_per_client"]


def steps_per_client(phase_steps: int | None, epochs: Any, sizes: Tensor, batch: int) -> Tensor:
    """``[n]`` local steps of each client: ``phase_steps`` for all, or
    ``ceil(epochs_i * m_i / batch)`` (at least 1) from the training-set sizes ``m_i``.

    Examples
    --------
    >>> import torch
    >>> tf.engine.local.steps_per_client(None, 1.0, torch.tensor([10, 16, 17]), 8).tolist()
    [2, 2, 3]
    """
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
    >>> tf.engine.local.stream_rows(1000, 16, (1, 28, 28), torch.device("cpu"))
    167
    >>> tf.engine.local.stream_rows(100, 16, (1, 8, 8), torch.device("cpu"))
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
    ``algorithm.local.point`` with the executor and applies ``algorithm.local.update``. What it
    may do faster comes from the local-update piece itself:

    * when the piece is ``rowwise`` and ``rows < n``, the step is streamed over blocks of
      ``rows`` clients: each block's batches are drawn just before its gradient and its update
      follows at once, so the batches and gradients stay in cache and the buffers hold one
      block (:func:`stream_rows`);
    * when the piece offers a fused kernel for this executor (``local.fused(executor)``: plain
      :class:`~topofl.engine.pieces.SGD` on the batched executor, with softmax regression in
      closed form or any other model through autograd), that kernel,
      the piece's own code, applies each block's gradient as it is computed, without a
      gradient buffer;
    * when the piece takes its gradients its own way (the optional member
      ``take_gradient(executor, point, (x, y), phase, out, rnd, step, env, first)``, DP-SGD's
      :class:`~topofl.engine.pieces.dpsgd.DPSGD`: ``first`` is the block's first row, ``step``
      the round's step counter), that in place of ``executor.grad``, never fused nor on few
      rows; every other piece's step is as without it.

    The numbers are the same either way up to rounding (the same batches, the same per-client
    arithmetic; a block's matrix products run other shapes, whose kernels MKL and ATen pick by
    shape and CPU: float64 agrees to 1e-12, float32 within rounding).

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
        unless ``algorithm.local.rowwise``. Streaming also shrinks the gradient and batch
        buffers to one block (1000 GN-LeNet clients on the threaded loop: 1.3 instead of 1.8
        GiB at the peak of a round).
    check : callable, optional
        ``check(loss, first_client)`` is called on every block's losses before its update
        (the round loop raises ``ConvergenceError`` on a non-finite loss there; after it, when
        the update is fused).
    fuse : bool, default True
        Use the piece's fused kernel when it offers one (``False``: gradient, then update).

    Examples
    --------
    >>> import torch
    >>> data = tf.data.federate("digits", "iid", 8, seed=0)
    >>> model = tf.models.build_model("logistic", data.input_shape, 10, seed=0)
    >>> layout = tf.engine.ParamLayout.from_model(model)
    >>> algo = tf.algorithms.dsgd(lr=0.1)
    >>> ex = tf.engine.executors.make_executor("auto", model, layout, torch.device("cpu"))
    >>> env = tf.engine.toy_services(8, layout=layout, dtype=torch.float32)
    >>> x0 = torch.zeros(8, layout.num_params)
    >>> a, b = algo.init(x0.clone(), env), algo.init(x0.clone(), env)
    >>> lr = torch.full((8,), 0.1)
    >>> for rows, s in ((8, a), (3, b)):
    ...     step = tf.engine.local.LocalStepper(ex, algo, data, 16, layout.num_params,
    ...                                   torch.float32, rows=rows)
    ...     loss = step(s, tf.engine.Round(0), env, algo.phases[0], 0, lr)
    >>> bool(torch.allclose(a.x, b.x, rtol=1e-5, atol=1e-7)), round(float(loss.mean()), 4)
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
        local = algorithm.local
        # the optional members of a local update, with their defaults (LocalUpdate's) when a
        # class of one's own leaves them out; `fused` may also be the attribute None
        rowwise = bool(getattr(local, "rowwise", False))
        fused = getattr(local, "fused", None)
        # a piece that takes its gradients its own way, ``take_gradient(executor, point,
        # (x, y), phase, out, rnd, step, env, first) -> losses`` in place of ``executor.grad``
        # (DP-SGD's clipped and noised per-sample gradients, topofl.engine.pieces.dpsgd):
        # never fused, never on few rows; ``None`` for every other piece
        self.take_gradient = getattr(local, "take_gradient", None)
        self.at_step = 0
        own = self.take_gradient is not None
        self.rows = n if not rowwise else max(1, min(n, int(rows)))
        self.kernel = fused(executor) if fuse and fused is not None and not own else None
        # a piece that moves few rows a step (LocalUpdate.moving): their gradients only,
        # every row's loss from the executor's forward pass
        moving = getattr(local, "moving", None)
        self.moving = (moving if moving is not None and self.kernel is None and not own
                       and self.rows >= n and getattr(executor, "losses", None) is not None
                       else None)
        # a piece that needs no gradient of a row whose rate is 0 (LocalUpdate.skips_idle),
        # on an executor that can take the other rows' gradients on a copy with their numbers
        self.skips_idle = (self.kernel is None and self.moving is None and not own
                           and bool(getattr(local, "skips_idle", False))
                           and getattr(executor, "residue_period", None) is not None
                           and getattr(executor, "losses", None) is not None)
        # the rates the piece applies (LocalUpdate.rates: a participation mask), read by the
        # step that leaves out the rows at rate 0
        self.rates = getattr(local, "rates", None) if self.skips_idle else None
        self._scratch: dict[str, Tensor] = {}
        if self.moving is not None and getattr(local, "update_rows", None) is None:
            raise TypeError(f"{type(local).__name__} has moving but no update_rows: a local "
                            "update that moves few rows applies their step with update_rows "
                            "(LocalUpdate's docstring)")
        self.executor, self.local, self.data = executor, local, data
        self.batch_size, self.dtype, self.n = int(batch_size), dtype, n
        self.check = check
        m = self.rows
        # every step writes into the same buffers (fresh large allocations cost page faults)
        self.grads = None if self.fused else torch.zeros(m, num_params, dtype=dtype,
                                                         device=device)
        # the targets: class labels [m, b], or regression targets [m, b(, K)] (the data's y)
        y = getattr(data, "y", None)
        tail, kind = ((), torch.int64) if y is None else (tuple(y.shape[1:]), y.dtype)
        self.batch = (
            torch.empty((m, batch_size, *data.input_shape), dtype=torch.float32, device=device),
            torch.empty((m, batch_size, *tail), dtype=kind, device=device),
        )

    @property
    def fused(self) -> bool:
        """Whether the local step runs the piece's fused kernel."""
        return self.kernel is not None

    def __call__(self, state: State, rnd: Round, env: Services, phase: Phase, step: int,
                 lr: Tensor) -> Tensor:
        """Local step ``step`` of round ``rnd.t`` with per-client learning rates ``lr`` [n];
        returns every client's loss ``[n]`` (before the step)."""
        point = self.local.point(state, phase, env)
        self.at_step = step  # the step's counter, for a piece's take_gradient
        if self.rows >= self.n:
            x, y = self.data.sample(rnd.t, step, self.batch_size, out=self.batch)
            return self._step(state, point, x, y, phase, lr, rnd, env, 0)
        idx = self.data.sample_indices(rnd.t, step, self.batch_size)
        losses = torch.empty(self.n, dtype=self.dtype, device=point.device)
        for a in range(0, self.n, self.rows):
            c = slice(a, min(self.n, a + self.rows))
            m = c.stop - a
            x, y = self.data.take(idx[c], out=(self.batch[0][:m], self.batch[1][:m]))
            losses[c] = self._step(state.rows(c), point[c], x, y, phase, lr[c], rnd, env, a)
        return losses

    def _step(self, state: State, point: Tensor, x: Tensor, y: Tensor, phase: Phase,
              lr: Tensor, rnd: Round, env: Services, first: int) -> Tensor:
        x = x.to(self.dtype)
        if self.kernel is not None:  # the piece's own fused step: gradient and update at once
            loss: Tensor = self.kernel(self.executor, state, x, y, phase, lr)
            if self.check is not None:  # here after the step: a diverged client is not finite
                self.check(loss, first)
            return loss
        rows = None if self.moving is None else self.moving(rnd, env)
        if rows is not None and 2 * len(rows) <= point.shape[0]:  # else the full step is
            # cheaper (it takes one forward pass, the rows' step two): the same numbers
            return self._step_rows(state, point, x, y, phase, lr, rnd, env, rows)
        g = self.grads[: point.shape[0]]  # type: ignore[index]  # None only when fused
        if self.skips_idle:
            few = self._step_moving(state, point, x, y, phase, lr, rnd, env, first)
            if few is not None:
                return few
        if self.take_gradient is None:
            loss = self.executor.grad(point, x, y, phase.part, g)
        else:
            loss = self.take_gradient(self.executor, point, (x, y), phase, g, rnd,
                                      self.at_step, env, first)
        if self.check is not None:
            self.check(loss, first)
        self.local.update(state, g, phase, lr, rnd, env)
        return loss

    def _step_rows(self, state: State, point: Tensor, x: Tensor, y: Tensor, phase: Phase,
                   lr: Tensor, rnd: Round, env: Services, rows: Any) -> Tensor:
        """The step of a piece that moves only ``rows`` (``LocalUpdate.moving``): every
        row's loss from the forward pass :meth:`grad` takes (the same numbers), the gradients
        of ``rows`` alone, then ``update_rows``.

        The gradients are taken on views of runs of adjacent rows (:func:`row_runs`), not on
        a gathered copy: MKL's batched product gives a row other bits where its parameters
        start at another address modulo the vector width (a row of 650 floats of a copy
        does, measured on an AVX512 EPYC), so each row keeps the address it has in the
        full step, and a run of two rows at least keeps torch's batched kernel."""
        loss: Tensor = self.executor.losses(point, x, y)
        if self.check is not None:
            self.check(loss, 0)
        idx = np.asarray(rows, dtype=np.int64)
        g: Tensor = self.grads  # type: ignore[assignment]  # [n, P]: moving is not fused
        if idx.size:
            for a, b in row_runs(idx, self.n):
                self.executor.grad(point[a:b], x[a:b], y[a:b], phase.part, g[a:b])
            update_rows = self.local.update_rows  # type: ignore[attr-defined]  # with moving
            update_rows(state, g, torch.as_tensor(idx, device=point.device), phase, lr, rnd,
                        env)
        return loss


    def _step_moving(self, state: State, point: Tensor, x: Tensor, y: Tensor, phase: Phase,
                     lr: Tensor, rnd: Round, env: Services, first: int) -> Tensor | None:
        """The step of a piece that ``skips_idle`` when few rows have a rate (clients past
        their own number of steps take the rest of the round's at rate 0, and the clients a
        piece's ``rates`` leave out, as partial participation's): every row's loss
        from the executor's forward pass, the moving rows' gradients from a copy of them laid
        out by :func:`residue_slots` (each row at its own address modulo 64 bytes: the same
        numbers as the full call, ``BatchedExecutor.residue_period``), then the piece's
        ``update`` (the other rows' gradients hold anything). ``None`` (nothing done) when
        the copy would hold more than half the rows: the full step is then cheaper. The
        copies of the parameters and their gradients, kept between steps, hold at most half
        the rows each (with a quarter to grow), about one more ``[n, P]`` buffer at most.

        Measured (``analysis/bench_idle_rows.md``): about a tenth of the local step of
        DPFL's Ditto on the Patho(3) stand-in, nothing measurable on Dir(0.1), where more
        clients still move late in a round (a row-step in three against one in five, before
        the copy's padding): every row's forward pass, which the losses need, costs
        about half of a full step on this 3,274-parameter MLP (its ``log_softmax`` over 10
        classes took as long as the matrix products when this was measured, before
        :func:`~topofl.engine.crossentropy.cross_entropy_rows`). With partial participation
        (``Sampled.rates``), FedAvg's 10 clients of 100 take their gradients alone where
        every client's were taken and 90 masked (``analysis/bench_idle_rows.md``). A step
        where no row moves takes the forward pass only."""
        n = point.shape[0]
        q = self.executor.residue_period(x)
        rate = lr if self.rates is None else self.rates(state, lr, rnd, env)
        moving = torch.nonzero(rate).flatten()
        if q is None or moving.numel() == n:
            return None
        if not moving.numel():  # no row moves (every participant is past its steps)
            idle: Tensor = self.executor.losses(point, x, y)
            if self.check is not None:
                self.check(idle, first)
            self.local.update(state, self.grads[:n], phase, lr, rnd, env)  # type: ignore[index]
            return idle
        slots = residue_slots(moving.cpu().numpy(), q)
        m = len(slots)
        if 2 * m > n:
            return None
        loss: Tensor = self.executor.losses(point, x, y)
        if self.check is not None:
            self.check(loss, first)
        src = torch.as_tensor(np.where(slots < 0, int(moving[0]), slots), device=point.device)
        ps = self._aligned("point", point, (m, *point.shape[1:]))
        xs = self._aligned("x", x, (m, *x.shape[1:]))
        torch.index_select(point, 0, src, out=ps)
        torch.index_select(x, 0, src, out=xs)
        gs = self._aligned("grads", point, (m, *point.shape[1:]))
        self.executor.grad(ps, xs, y.index_select(0, src), phase.part, gs)
        real = torch.as_tensor(np.flatnonzero(slots >= 0), device=point.device)
        g = self.grads[:n]  # type: ignore[index]  # not fused here
        g.index_copy_(0, src.index_select(0, real), gs.index_select(0, real))
        self.local.update(state, g, phase, lr, rnd, env)
        return loss

    def _aligned(self, key: str, like: Tensor, shape: tuple[int, ...]) -> Tensor:
        """A kept buffer of ``shape`` whose first element sits at ``like``'s address modulo
        64 bytes (grown by a quarter when a step needs more: at most half the rows)."""
        el = like.element_size()
        numel = math.prod(shape)
        buf = self._scratch.get(key)
        if buf is None or buf.dtype != like.dtype or buf.device != like.device \
                or buf.numel() < numel + 64 // el:
            buf = torch.empty(numel + numel // 4 + 64 // el, dtype=like.dtype,
                              device=like.device)
            self._scratch[key] = buf
        off = ((like.data_ptr() - buf.data_ptr()) % 64) // el
        return buf[off: off + numel].view(shape)


def row_runs(rows: np.ndarray, n: int) -> list[tuple[int, int]]:
    """The runs ``(start, stop)`` of adjacent rows that cover the sorted ``rows`` of ``n``,
    each of two rows at least where ``n >= 2`` (a lone row takes a neighbour: a batched
    product of one matrix runs another kernel).

    Examples
    --------
    >>> import numpy as np
    >>> from topofl.engine.local import row_runs
    >>> row_runs(np.array([0, 1, 2, 7, 9]), 10)
    [(0, 3), (7, 9), (8, 10)]
    >>> row_runs(np.array([9]), 10), row_runs(np.array([0]), 1)
    ([(8, 10)], [(0, 1)])
    """
    runs: list[tuple[int, int]] = []
    for r in np.asarray(rows, dtype=np.int64).tolist():
        if runs and r < runs[-1][1]:
            continue  # taken with the run before
        if runs and r == runs[-1][1]:
            runs[-1] = (runs[-1][0], r + 1)
        else:
            runs.append((r, r + 1))
    out = []
    for a, b in runs:
        if b - a == 1 and n >= 2:
            a, b = (a, b + 1) if b < n else (a - 1, b)
        out.append((a, b))
    return out
