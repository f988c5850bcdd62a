"""Local computation for all clients at once: gradients and forward passes.

Two executors compute the same numbers, to rounding (they run other kernels on other shapes:
batched products over the clients against one product per client, which MKL and ATen block by shape
and CPU, so float64 agrees to ~1e-10 or better and float32 within its rounding, not bit for bit):

* :class:`BatchedExecutor` vectorises over clients with ``torch.func`` (``vmap`` of the forward
  over the stacked parameter views, then one ordinary backward pass), optionally in chunks of
  clients (to bound memory for convolutional models). A plain MLP (``Flatten``, ``Linear``,
  ``ReLU``) runs the same batched operations without ``vmap`` (:func:`_stack_forward`), and softmax
  regression has a closed form; plain SGD can be applied as each gradient comes
  (:meth:`BatchedExecutor.sgd_`).
* :class:`LoopExecutor` is the obvious reference: one forward + autograd pass per client over views
  into the same buffer. It is the debugger's path: its errors name the client. On CPU it can spread
  the clients over a few Python threads that each run their clients' operations on one core
  (``threads``), which is how :func:`make_executor` runs 2-d convolutional models there.

Both write the gradients into a preallocated ``[n_clients, P]`` buffer (only the columns of the
part being trained), so the optimizer update is one fused operation on the flat buffer.

Both evaluate the model through a private copy of it whose parameter slots are pointed at the
client's tensors (what ``torch.func.functional_call`` does, without its per-call set-up); a model
that cannot be copied falls back to ``functional_call``.

The models the batched executor runs without ``vmap`` (softmax regression, plain stacks) are
recognised and run by ``topofl/engine/_executors_stack.py``.
"""

from __future__ import annotations

import copy
import threading
import types
from collections.abc import Callable, Sequence
from typing import Protocol

import torch
from torch import Tensor, nn
from torch.func import functional_call, vmap

from topofl.engine._executors_stack import (
    _linear_weight_major,
    _plain_stack,
    _softmax_regression,
    _stack_forward,
)
from topofl.engine._executors_stack import _Windows as _Windows
from topofl.engine._threads import cpu_workers, run_on_cores
from topofl.engine.layout import ParamLayout
from topofl.engine.objectives import CROSS_ENTROPY, Objective, check_objective
from topofl.engine.protocol import Part
from topofl.engine.residues import plain_mlp_period
from topofl.models import check_model_input

__all__ = ["Executor", "BatchedExecutor", "LoopExecutor", "make_executor", "ClientError",
           "loop_on_cpu"]


class ClientError(RuntimeError):
    """An error raised while computing for one client (the loop executor's context)."""


class Executor(Protocol):
    """What the engine needs from an executor.

    Optional, looked up with ``getattr`` by :class:`~topofl.engine.local.LocalStepper`: ``streams``
    (bool: stream the local step over blocks of clients by default), ``fuses_sgd`` (bool)
    with ``sgd_(flat, x, y, part, lr) -> losses`` (a plain SGD step in place, without a
    gradient buffer), both provided by :class:`BatchedExecutor`, and ``losses(flat, x, y)
    -> [n]`` (the losses ``grad`` returns, from the same forward pass, without a gradient:
    a local step that moves a few rows takes the gradients of those rows only),
    provided by both executors.
    """

    def grad(self, flat: Tensor, x: Tensor, y: Tensor, part: Part, out: Tensor) -> Tensor:
        """Write the gradients of the mean loss into ``out[:, cols(part)]``.

        ``flat`` is ``[n, P]``, ``x`` is ``[n, b, *input_shape]``, ``y`` is ``[n, b]`` (or
        ``[n, b, K]`` regression targets). Returns the loss of each client, ``[n]``: of the
        executor's ``objective`` (:func:`~topofl.engine.objectives.objective_of`; the
        cross-entropy for an executor without one).
        """
        ...

    def logits(self, flat: Tensor, x: Tensor, shared_input: bool = False) -> Tensor:
        """Forward pass: ``[n, m, C]`` from ``x`` ``[n, m, ...]`` (or ``[m, ...]`` if shared)."""
        ...


class _InputCheck:
    """Runs :func:`check_model_input` once per sample shape, before the first forward pass."""

    model: nn.Module
    layout: ParamLayout
    objective: Objective

    def _grad_start(self, flat: Tensor, x: Tensor, y: Tensor, part: Part, out: Tensor
                    ) -> tuple[dict[str, Tensor], dict[str, Tensor], tuple[str, ...], Tensor]:
        """What a ``grad`` starts from, the input and targets checked: the views of ``flat``
        and ``out``, the names of ``part``'s parameters and an empty ``[n]`` vector for the
        losses."""
        self._check_input(x.shape[2:], flat.dtype, y)
        views = self.layout.views(flat)
        out_views = self.layout.views(out)
        train_names = self.layout.names_of(part)
        losses = torch.empty(flat.shape[0], dtype=flat.dtype, device=flat.device)
        return views, out_views, train_names, losses

    def _check_input(self, sample_shape: Sequence[int], dtype: torch.dtype,
                     y: Tensor | None = None) -> None:
        if y is not None:  # the objective's kind of targets, once a dtype
            seen: set[torch.dtype] = self.__dict__.setdefault("_checked_targets", set())
            if y.dtype not in seen:
                self.objective.check_targets(y)
                seen.add(y.dtype)
        key = (tuple(sample_shape), dtype)
        checked: set[tuple[tuple[int, ...], torch.dtype]] = self.__dict__.setdefault(
            "_checked_inputs", set())
        if key not in checked:
            check_model_input(self.model, key[0], dtype=dtype)
            checked.add(key)


def loop_on_cpu(model: nn.Module) -> bool:
    """Whether ``executor="auto"`` runs ``model`` with the per-client loop on the CPU: when it
    holds a convolution over two or more dimensions (``Conv2d``, ``Conv3d``, their transposes).

    Batched, such a convolution becomes a grouped one, which oneDNN runs slower than the
    per-client ones in channels-last format (GN-LeNet, 20 clients x 16 CIFAR-sized images, one
    thread: the loop 0.62x the shared-weight floor, batched 1.36x, ``analysis/bench_floor.md``).
    A model whose convolutions are all 1-d (``cnn1d``) runs batched, each convolution one
    batched product (:func:`_stack_forward`): 100 clients x 50 signals, one thread, 1.25x the
    floor against 2.08x with the loop, and the two executors' parameters agree within float32
    rounding (``tests/engine/test_conv_executors.py``).

    Examples
    --------
    >>> loop_on_cpu(tf.models.build_model("cnn1d", (1, 40), 10, seed=0))
    False
    >>> loop_on_cpu(tf.models.build_model("gn_lenet", (3, 32, 32), 10, seed=0))
    True
    """
    return any(isinstance(m, nn.modules.conv._ConvNd) and len(m.kernel_size) >= 2
               for m in model.modules())


def _has_conv2d(model: nn.Module) -> bool:
    return any(isinstance(m, nn.Conv2d) for m in model.modules())


class _Stateless:
    """Calls ``model`` with given parameters by pointing a private copy's slots at them.

    ``functional_call`` re-parametrises the module on every call; for small models and one call
    per client that set-up is a sizeable part of the time. Here the copy is made once, every
    parameter's slots (tied parameters have several) are found once, and a call assigns the
    tensors to the slots, runs the copy, and puts the copy's own parameters back. A model that
    cannot be deep-copied is called through ``functional_call`` instead.
    """

    def __init__(self, model: nn.Module, names: tuple[str, ...]) -> None:
        self.model = model
        self.names = names
        try:
            module = copy.deepcopy(model)
        except Exception:  # pragma: no cover - exotic modules
            self.module: nn.Module | None = None
            return
        canonical = {id(p): k for k, p in module.named_parameters()}
        slots: dict[str, list[tuple[nn.Module, str]]] = {k: [] for k in names}
        for full, p in module.named_parameters(remove_duplicate=False):
            owner, _, attr = full.rpartition(".")
            key = canonical.get(id(p))
            if key in slots:
                slots[key].append((module.get_submodule(owner), attr))
        if set(canonical.values()) != set(names) or any(not s for s in slots.values()):
            self.module = None  # the layout does not describe this module's parameters
            return
        self.module = module
        self.slots = [(k, slots[k]) for k in names]
        self.own = {k: dict(module.named_parameters())[k] for k in names}

    def __call__(self, params: dict[str, Tensor], x: Tensor) -> Tensor:
        if self.module is None:
            return functional_call(self.model, params, (x,))  # type: ignore[no-any-return]  # torch stubs: Any
        try:
            for k, where in self.slots:
                t = params[k]
                for mod, attr in where:
                    mod._parameters[attr] = t  # type: ignore[assignment]  # a tensor, not a Parameter
            return self.module(x)  # type: ignore[no-any-return]  # Module.__call__ is Any
        finally:
            for k, where in self.slots:
                for mod, attr in where:
                    mod._parameters[attr] = self.own[k]


class BatchedExecutor(_InputCheck):
    """Vectorised over clients with ``torch.func.vmap``.

    The forward pass is ``vmap``-ed over the stacked parameter views (so linear layers become
    batched matrix products and convolutions grouped ones) and the gradient of the sum of the
    clients' mean losses is taken with one ordinary backward pass: clients do not interact, so
    that is every client's own gradient. A plain MLP (:func:`_plain_stack`: ``Flatten``,
    ``Linear`` and ``ReLU`` layers only) runs the very operations of that ``vmap``-ed forward
    directly on the batched views (:func:`_stack_forward`; the same kernels on the same
    shapes, so the same numbers bit for bit on any one CPU).

    Parameters
    ----------
    model : torch.nn.Module
        A stateless-friendly module (no BatchNorm running statistics).
    layout : ParamLayout
    chunk_size : int, optional
        Clients per ``vmap`` call (all at once by default).
    closed_form : bool, default True
        For a linear model (``Linear(flatten(x))``, e.g. topofl's ``logistic``), compute the
        gradient in closed form, ``(softmax(W x + b) - onehot(y)) x^T / B`` per client with
        the cross-entropy (multinomial logistic regression), ``(W x + b - y) x^T / B`` with the
        squared error (least squares), with two batched matrix products and no autograd (same
        numbers to rounding; softmax regression of 1000 clients x 16 samples x 784 inputs on 2
        cores: 10 ms instead of 14). The autograd path stays the reference
        (``closed_form=False``).
    objective : Objective or str, default ``"cross_entropy"``
        The loss (:mod:`topofl.engine.objectives`): ``"cross_entropy"`` of integer labels or
        ``"squared_error"`` of floating targets.
    """

    #: the local step gains from being streamed over blocks of clients (see ``LocalStepper``)
    streams = True

    def __init__(self, model: nn.Module, layout: ParamLayout, chunk_size: int | None = None,
                 closed_form: bool = True, *, objective: Objective | str = CROSS_ENTROPY):
        self.model = model
        self.layout = layout
        self.chunk_size = chunk_size
        self.objective = check_objective(objective)
        self.linear = _softmax_regression(model, layout.names) if closed_form else None
        #: the layers of a plain MLP, run without ``vmap`` in the gradient (:func:`_plain_stack`)
        self.stack = _plain_stack(model, layout.names)
        kinds = () if self.stack is None else tuple(k for k, _, _, _ in self.stack)
        self._flattens = "flatten" in kinds
        #: the input rank the stack takes without vmap: [m, b, C, L] for 1-d convolutions
        #: (on the CPU, where it was measured; elsewhere they stay vmap's grouped ones)
        self._stack_rank = 4 if "conv1d" in kinds else None
        self._scratch: dict[tuple[int, torch.dtype, torch.device], Tensor] = {}
        self._call = _Stateless(model, layout.names)
        if self._call.module is not None:
            for m in self._call.module.modules():
                if type(m) is nn.Linear:  # not subclasses: they may override forward
                    m.forward = types.MethodType(  # type: ignore[method-assign]  # by design
                        _linear_weight_major, m)
        self._fwd: dict[bool, Callable[..., Tensor]] = {}

    def _forward(self, shared_input: bool) -> Callable[..., Tensor]:
        if shared_input not in self._fwd:
            self._fwd[shared_input] = vmap(self._call, in_dims=(0, None if shared_input else 0))
        return self._fwd[shared_input]

    def _chunks(self, n: int) -> list[slice]:
        c = n if not self.chunk_size else max(1, int(self.chunk_size))
        return [slice(a, min(n, a + c)) for a in range(0, n, c)]

    def grad(self, flat: Tensor, x: Tensor, y: Tensor, part: Part, out: Tensor) -> Tensor:
        views, out_views, train_names, losses = self._grad_start(flat, x, y, part, out)
        train = set(train_names)
        n = flat.shape[0]
        for c in self._chunks(n):
            if self.linear is not None:
                losses[c] = self._linear_grad(views, out_views, x[c], y[c], train, c)
                continue
            losses[c], grads = self._autograd(views, x[c], y[c], train_names, c)
            for k, g in zip(train_names, grads):
                out_views[k][c].copy_(g)
        return losses

    def losses(self, flat: Tensor, x: Tensor, y: Tensor) -> Tensor:
        """``[n]``: the losses :meth:`grad` returns (its forward pass, chunk by chunk, the
        same numbers), without a gradient."""
        self._check_input(x.shape[2:], flat.dtype, y)
        views = self.layout.views(flat)
        losses = torch.empty(flat.shape[0], dtype=flat.dtype, device=flat.device)
        for c in self._chunks(flat.shape[0]):
            if self.linear is not None:
                losses[c] = self._linear_backward(views, x[c], y[c], c, None)[0]
            else:
                losses[c] = self._autograd(views, x[c], y[c], (), c)[0]
        return losses

    def _autograd(self, views: dict[str, Tensor], x: Tensor, y: Tensor,
                  train_names: tuple[str, ...], c: slice) -> tuple[Tensor, tuple[Tensor, ...]]:
        """The clients ``c``'s mean losses ``[m]`` and their gradients with respect
        to ``train_names`` (``[m, *shape]`` each): the ``vmap``-ed forward (a plain MLP's
        without ``vmap``, :func:`_stack_forward`: the same operations), one backward."""
        train = set(train_names)
        with torch.enable_grad():
            params = {k: v[c].detach().requires_grad_(k in train) for k, v in views.items()}
            if self.stack is not None and (
                    x.dim() == self._stack_rank and x.device.type == "cpu"
                    if self._stack_rank is not None else x.dim() == 3 or self._flattens):
                logits = _stack_forward(self.stack, params, x)  # [m, b, C]
            else:
                logits = self._forward(False)(params, x)
            loss = self.objective.per_sample(logits, y).mean(1)
            wrt = [params[k] for k in train_names]
            grads = torch.autograd.grad(loss.sum(), wrt) if wrt else ()
        return loss.detach(), grads

    def _linear_backward(self, views: dict[str, Tensor], x: Tensor, y: Tensor, c: slice,
                         scale: Tensor | float | None) -> tuple[Tensor, Tensor | None, Tensor]:
        """A linear model on the clients ``c`` (softmax regression with the cross-entropy,
        least squares with the squared error): the losses and, unless ``scale`` is None,
        ``scale * d loss / d logits`` as ``[m, C, b]`` (and the flattened inputs)."""
        wname, bname = self.linear  # type: ignore[misc]  # not None on this path
        W = views[wname][c]  # [m, C, d], rows of the flat buffer
        m, b = y.shape[0], y.shape[1]
        xf = x.reshape(m, b, -1)
        if xf.shape[2] != W.shape[2]:
            raise ValueError(
                f"the model takes {W.shape[2]} input features, got samples of shape "
                f"{tuple(x.shape[2:])}"
            )
        logits = torch.bmm(W, xf.transpose(1, 2))  # [m, C, b]: classes along dim 1
        if bname is not None:
            logits.add_(views[bname][c].unsqueeze(2))
        loss, p = self.objective.linear(logits, y, scale)
        return loss, p, xf

    def _weight_product(self, p: Tensor, xf: Tensor) -> Tensor:
        """``p @ xf`` as ``[m, C, d]``: MKL's batched product is fast only into a contiguous
        output (4x here), so it goes into a kept buffer, from where it is copied or applied to
        the strided rows of the flat buffer."""
        shape = (p.shape[0], p.shape[1], xf.shape[2])
        key = (shape[0], p.dtype, p.device)
        buf = self._scratch.get(key)
        if buf is None or tuple(buf.shape) != shape:
            buf = torch.empty(shape, dtype=p.dtype, device=p.device)
            self._scratch = {key: buf}
        return torch.bmm(p, xf, out=buf)

    def _linear_grad(self, views: dict[str, Tensor], out_views: dict[str, Tensor], x: Tensor,
                     y: Tensor, train: set[str], c: slice) -> Tensor:
        """Closed-form gradient of a linear model's mean loss (a chunk)."""
        wname, bname = self.linear  # type: ignore[misc]  # not None on this path
        loss, p, xf = self._linear_backward(views, x, y, c, 1.0 if train else None)
        if p is None:
            return loss
        if wname in train:
            out_views[wname][c].copy_(self._weight_product(p, xf))
        if bname is not None and bname in train:
            out_views[bname][c].copy_(p.sum(2))
        return loss

    def residue_period(self, x: Tensor) -> int | None:
        """:func:`~topofl.engine.residues.plain_mlp_period` of a plain MLP, else ``None``."""
        if self.stack is None or self.linear is not None or self._stack_rank is not None:
            return None
        shapes = dict(zip(self.layout.names, self.layout.shapes))
        return plain_mlp_period(self.stack, shapes, self.layout.num_params, x)

    @property
    def fuses_sgd(self) -> bool:
        """Whether :meth:`sgd_` is available: always (closed form or autograd)."""
        return True

    def sgd_(self, flat: Tensor, x: Tensor, y: Tensor, part: Part, lr: Tensor) -> Tensor:
        """``flat[i, cols] -= lr[i] * grad_i`` in place, no gradient buffer; returns the losses
        before the step ``[n]``. Softmax regression in closed form
        applies each chunk's gradient while it is in cache (1000 clients x 16 samples x 784
        inputs, 2 cores: 23.5 ms a round instead of 25.4, ``analysis/bench_engine.md``), the
        rate scaling ``softmax - onehot``: :meth:`grad` then the update to rounding. Other
        models apply each parameter's autograd gradient to its view of ``flat`` with the
        update's own ``addcmul_``: bit for bit on any one CPU :meth:`grad` then
        :func:`~topofl.engine.pieces.sgd_step`, without the ``[n, P]`` buffer (0.2 ms of a
        5 ms step, ``analysis/bench_floor.md``). A non-finite loss leaves non-finite
        parameters (the caller raises on the returned losses)."""
        self._check_input(x.shape[2:], flat.dtype, y)
        views = self.layout.views(flat)
        losses = torch.empty(flat.shape[0], dtype=flat.dtype, device=flat.device)
        if self.linear is None:
            train_names = self.layout.names_of(part)
            for c in self._chunks(flat.shape[0]):
                losses[c], grads = self._autograd(views, x[c], y[c], train_names, c)
                rate = lr[c]
                for k, g in zip(train_names, grads):
                    # sgd_step's x.addcmul_(g, lr.unsqueeze(1), value=-1.0), per parameter
                    views[k][c].addcmul_(g, rate.view(-1, *(1,) * (g.dim() - 1)), value=-1.0)
            return losses
        wname, bname = self.linear
        train = set(self.layout.names_of(part))
        for c in self._chunks(flat.shape[0]):
            loss, p, xf = self._linear_backward(views, x[c], y[c], c,
                                                lr[c].to(flat.dtype) if train else None)
            losses[c] = loss
            if p is None:
                continue
            if wname in train:
                views[wname][c].sub_(self._weight_product(p, xf))
            if bname is not None and bname in train:
                views[bname][c].sub_(p.sum(2))
        return losses

    def logits(self, flat: Tensor, x: Tensor, shared_input: bool = False) -> Tensor:
        self._check_input(x.shape[1:] if shared_input else x.shape[2:], flat.dtype)
        views = self.layout.views(flat)
        f = self._forward(shared_input)
        outs = []
        with torch.no_grad():
            for c in self._chunks(flat.shape[0]):
                outs.append(f({k: v[c] for k, v in views.items()}, x if shared_input else x[c]))
        return torch.cat(outs, dim=0)


class LoopExecutor(_InputCheck):
    """The per-client reference: one autograd pass per client, same buffers, the same
    numbers as :class:`BatchedExecutor` to rounding (per-client products, not batched ones).

    Parameters
    ----------
    model : torch.nn.Module
    layout : ParamLayout
    threads : int or None, default 1
        On CPU, spread the clients over this many Python threads, each running its clients'
        operations on one core (``torch.set_num_threads(1)`` for the duration of the call, then
        restored); ``None`` uses ``torch.get_num_threads()`` threads. Small per-client operations
        hardly speed up with intra-op threads, so this is how the loop uses several cores. ``1``
        runs the clients in order in the calling thread (the debugger's path). Errors name the
        client either way (the lowest failing one).
    channels_last : bool or None, default None
        Feed 4-d inputs in channels-last memory format (faster convolutions and pooling on
        CPU). ``None``: when the model has a ``Conv2d`` and the input is on the CPU.
    objective : Objective or str, default ``"cross_entropy"``
        The loss, as :class:`BatchedExecutor`'s.
    """

    #: not streamed by default: its threads would meet at every block of clients (measured:
    #: 1000 DPFL-CNN clients, 2 threads, 1.72 s a round in blocks of 42 vs 1.55 s at once)
    streams = False

    def __init__(self, model: nn.Module, layout: ParamLayout, threads: int | None = 1,
                 channels_last: bool | None = None, *,
                 objective: Objective | str = CROSS_ENTROPY):
        if threads is not None and int(threads) < 1:
            raise ValueError(f"threads must be >= 1 or None, got {threads}")
        self.model = model
        self.layout = layout
        self.objective = check_objective(objective)
        self.threads = threads
        self.channels_last = channels_last
        self._conv2d = _has_conv2d(model)
        self._calls = [_Stateless(model, layout.names)]
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ helpers
    def _workers(self, n: int, device: torch.device) -> int:
        if device.type != "cpu":
            return 1
        return cpu_workers(self.threads, n)

    def _input(self, xi: Tensor) -> Tensor:
        cl = self.channels_last
        if cl is None:
            cl = self._conv2d and xi.device.type == "cpu"
        if cl and xi.dim() == 4:
            return xi.contiguous(memory_format=torch.channels_last)
        return xi

    def _for_each_client(self, n: int, device: torch.device,
                         fn: Callable[[_Stateless, int], None]) -> None:
        workers = self._workers(n, device)
        if workers == 1:
            for i in range(n):
                fn(self._calls[0], i)
            return
        with self._lock:
            while len(self._calls) < workers:
                self._calls.append(_Stateless(self.model, self.layout.names))
        failed: list[tuple[int, BaseException]] = []

        def work(w: int) -> None:
            call = self._calls[w]
            for i in range(w, n, workers):
                # stop after a failure, but still run every client below the lowest failed
                # one: the error raised is then always the lowest failing client's
                if failed and i > min(f[0] for f in failed):
                    return
                try:
                    fn(call, i)
                except BaseException as exc:  # re-raised below, in the calling thread
                    failed.append((i, exc))
                    return

        run_on_cores(workers, work)
        if failed:
            raise min(failed, key=lambda e: e[0])[1]

    # ------------------------------------------------------------------ executor API
    def grad(self, flat: Tensor, x: Tensor, y: Tensor, part: Part, out: Tensor) -> Tensor:
        views, out_views, train_names, losses = self._grad_start(flat, x, y, part, out)
        return self._grad(flat, x, y, part, views, out_views, train_names, losses)

    def losses(self, flat: Tensor, x: Tensor, y: Tensor) -> Tensor:
        """``[n]``: the losses :meth:`grad` returns (the same forward pass), no gradient."""
        self._check_input(x.shape[2:], flat.dtype, y)
        losses = torch.empty(flat.shape[0], dtype=flat.dtype, device=flat.device)
        return self._grad(flat, x, y, "all", self.layout.views(flat), {}, (), losses)

    def _grad(self, flat: Tensor, x: Tensor, y: Tensor, part: Part, views: dict[str, Tensor],
              out_views: dict[str, Tensor], train_names: tuple[str, ...],
              losses: Tensor) -> Tensor:
        train_set = set(train_names)
        n = flat.shape[0]

        def one(call: _Stateless, i: int) -> None:
            try:
                with torch.enable_grad():
                    params = {
                        k: v[i].detach().requires_grad_(k in train_set) for k, v in views.items()
                    }
                    loss = self.objective.mean(call(params, self._input(x[i])), y[i])
                    wrt = [params[k] for k in train_names]
                    grads = torch.autograd.grad(loss, wrt) if wrt else ()
            except Exception as exc:  # wrap with the client's context
                raise ClientError(f"stage=grad client={i} part={part}: {exc}") from exc
            for k, g in zip(train_names, grads):
                out_views[k][i].copy_(g)
            losses[i] = loss.detach()

        self._for_each_client(n, flat.device, one)
        return losses

    def logits(self, flat: Tensor, x: Tensor, shared_input: bool = False) -> Tensor:
        self._check_input(x.shape[1:] if shared_input else x.shape[2:], flat.dtype)
        views = self.layout.views(flat)
        n = flat.shape[0]
        outs: list[Tensor | None] = [None] * n
        shared = self._input(x) if shared_input else None

        def one(call: _Stateless, i: int) -> None:
            try:
                with torch.no_grad():
                    p = {k: v[i] for k, v in views.items()}
                    outs[i] = call(p, shared if shared is not None else self._input(x[i]))
            except Exception as exc:
                raise ClientError(f"stage=forward client={i}: {exc}") from exc

        self._for_each_client(n, flat.device, one)
        return torch.stack(outs)  # type: ignore[arg-type]  # every slot was filled


def make_executor(
    kind: str, model: nn.Module, layout: ParamLayout, device: torch.device,
    chunk_size: int | None = None, objective: Objective | str = CROSS_ENTROPY,
) -> BatchedExecutor | LoopExecutor:
    """Choose an executor (training with ``objective``, :mod:`topofl.engine.objectives`).

    ``"batched"`` is :class:`BatchedExecutor` (``chunk_size`` clients per ``vmap`` call) and
    ``"loop"`` the sequential per-client reference :class:`LoopExecutor`. ``"auto"`` picks

    * for models with a 2-d (or 3-d) convolution on CPU (:func:`loop_on_cpu`: GN-LeNet, the
      DPFL CNN, ResNet-18): the per-client loop spread over ``torch.get_num_threads()``
      threads, one core per client at a time (``LoopExecutor(threads=None)``, channels-last
      inputs);
    * otherwise (other models, 1-d convolutional ones such as ``cnn1d`` included, other
      devices): the batched executor. Until issue 58 a 1-d CNN took the loop on CPU too; its
      numbers now differ from that in float32 rounding (parameters within 1e-6 of the largest
      after 10 steps, ``tests/engine/test_conv_executors.py``).

    Notes
    -----
    Measured by ``analysis/bench_engine.py`` (2 threads on a 2-core AVX-512 VM, float32, 16
    samples per client; see ``analysis/bench_engine.md``), local step = gradient + update:

    ==================  ============  ==========  ============  ============  ==========
    model, clients      loop,         loop        vmap, all     vmap, chunks  peer-style
                        2 threads                 clients       of 8          simulator
    ==================  ============  ==========  ============  ============  ==========
    DPFL CNN, 100       146 ms        198 ms      265 ms        246 ms        231 ms
    DPFL CNN, 1000      1.45 s        2.17 s      6.21 s        2.62 s        2.46 s
    logistic, 1000      205 ms        119 ms      16 ms                       166 ms
    ==================  ============  ==========  ============  ============  ==========

    (the logistic ``vmap`` figure is through autograd; in closed form, the default, 14 ms), and a
    whole round of 1000 GN-LeNet clients: 4.9 s with the threaded loop, 14.1 s with ``vmap`` in
    chunks of 64. Under ``vmap`` a convolution with per-client weights becomes a
    grouped convolution, which oneDNN runs no faster than the per-client ones, and chunking the
    clients to fit the cache did not change that; a convolution on one client's 16 images is
    too small to use two cores, so one core per client thread wins. For linear models the
    per-client overhead dominates and ``vmap`` wins by an order of magnitude. On CUDA
    (``analysis/bench_engine_cuda.md``, one H100, float32, same workloads) the batched executor is
    the fastest for both models: a whole D-SGD round of 1000 DPFL CNNs takes 121 ms batched,
    618 ms in ``vmap`` chunks of 8 clients and 2.35 s with the per-client loop, and of 1000
    logistic regressions 3.8 ms batched against 594 ms with the loop.
    """
    if kind == "batched":
        return BatchedExecutor(model, layout, chunk_size, objective=objective)
    if kind == "loop":
        return LoopExecutor(model, layout, objective=objective)
    if kind == "auto":
        if device.type == "cpu" and loop_on_cpu(model):
            return LoopExecutor(model, layout, threads=None, objective=objective)
        return BatchedExecutor(model, layout, chunk_size, objective=objective)
    raise ValueError(f"executor must be one of ['auto', 'batched', 'loop'], got {kind!r}")
