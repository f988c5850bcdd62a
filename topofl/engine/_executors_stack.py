"""The models :class:`~topofl.engine.executors.BatchedExecutor` runs without ``vmap``:
softmax regression in closed form (:func:`_softmax_regression`), a ``Linear`` in the weight's
own layout (:func:`_linear_weight_major`), and plain stacks of ``Flatten``, ``Linear``,
``ReLU`` and 1-d convolutions (:func:`_plain_stack`), run as batched products over the
clients (:func:`_stack_forward`, the windows of a convolution: :class:`_Windows`).
:mod:`topofl.engine.executors` imports them back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from topofl.models import SplitModel


def _linear_weight_major(self: nn.Linear, x: Tensor) -> Tensor:
    """``nn.Linear.forward`` computed as ``(W x^T)^T + b`` (same numbers to rounding, other
    layout).

    Under ``vmap`` the usual ``x W^T`` is a batched product whose weight gradient comes out as
    ``[n, in, out]`` and has to be transposed when it is copied into the flat buffer; ``W x^T``
    gives the gradient in the parameter's own ``[n, out, in]`` layout, and MKL's batched GEMM is
    faster in that shape (logistic regression, 1000 clients x 16 samples x 784 inputs, 2 threads:
    gradient 24 -> 17 ms).
    """
    if x.dim() < 2:
        return F.linear(x, self.weight, self.bias)
    y = torch.matmul(self.weight, x.transpose(-1, -2)).transpose(-1, -2)
    return y if self.bias is None else y + self.bias


def _softmax_regression(model: nn.Module, names: tuple[str, ...]) -> tuple[str, str | None] | None:
    """``(weight, bias)`` parameter names when ``model`` is exactly ``Linear(flatten(x))``.

    Recognised forms: topofl's ``logistic`` (a ``SplitModel`` whose body is ``nn.Flatten()``
    and head an ``nn.Linear``), ``nn.Sequential(nn.Flatten(), nn.Linear)`` and a bare
    ``nn.Linear`` (on inputs that are already flat). Subclasses are not recognised (they may
    override ``forward``); anything else returns ``None``.
    """
    def flat(m: nn.Module) -> bool:
        return type(m) is nn.Flatten and m.start_dim == 1 and m.end_dim == -1

    linear: nn.Module | None = None
    if type(model) is nn.Linear:
        linear = model
    elif type(model) is SplitModel and flat(model.body) and type(model.head) is nn.Linear:
        linear = model.head
    elif type(model) is nn.Sequential and len(model) == 2 and flat(model[0]):
        linear = model[1] if type(model[1]) is nn.Linear else None
    if linear is None:
        return None
    ids = {id(p): k for k, p in model.named_parameters()}
    weight = ids.get(id(linear.weight))
    bias = None if linear.bias is None else ids.get(id(linear.bias))
    if weight is None or (linear.bias is not None and bias is None) or set(ids.values()) != set(
        names
    ):
        return None
    return weight, bias


#: One layer of a plain stack (:func:`_plain_stack`): ``("flatten", None, None, None)``,
#: ``("linear", weight name, bias name or None, None)``, ``("relu", None, None, None)`` or
#: ``("conv1d", weight name, bias name or None, (kernel, stride, padding))``.
_Layer = tuple[str, str | None, str | None, tuple[int, int, int] | None]


def _plain_conv1d(m: nn.Module) -> tuple[int, int, int] | None:
    """``(kernel, stride, padding)`` of an exact ``nn.Conv1d`` with zero padding of a fixed
    size, no dilation and no groups; ``None`` otherwise."""
    if type(m) is not nn.Conv1d or m.padding_mode != "zeros" or isinstance(m.padding, str):
        return None
    if tuple(m.dilation) != (1,) or m.groups != 1:
        return None
    return int(m.kernel_size[0]), int(m.stride[0]), int(m.padding[0])


def _plain_stack(model: nn.Module, names: Sequence[str]) -> tuple[_Layer, ...] | None:
    """The layers of ``model`` when it is a plain stack of ``nn.Flatten()``, ``nn.Linear`` and
    ``nn.ReLU()`` (an MLP: topofl's ``mlp``, an ``nn.Sequential`` of them, a ``SplitModel``
    of two such stacks), a ``Flatten`` only before the first ``Linear``, optionally after
    plain ``nn.Conv1d`` layers (topofl's ``cnn1d``: zero padding, no dilation, no groups)
    that come before the ``Flatten``; ``None`` otherwise.

    Only the exact classes count (a subclass may override ``forward``), without hooks, and
    the layers must hold every parameter of ``names`` once.

    Examples
    --------
    >>> from torch import nn
    >>> from topofl.engine._executors_stack import _plain_stack
    >>> m = tf.models.build_model("mlp", (5,), 3, seed=0, hidden=(4,))
    >>> _plain_stack(m, [k for k, _ in m.named_parameters()])  # doctest: +NORMALIZE_WHITESPACE
    (('flatten', None, None, None), ('linear', 'body.fc1.weight', 'body.fc1.bias', None),
     ('relu', None, None, None), ('linear', 'head.weight', 'head.bias', None))
    >>> c = tf.models.build_model("cnn1d", (1, 40), 10, seed=0)
    >>> [(k, g) for k, _, _, g in _plain_stack(c, [k for k, _ in c.named_parameters()])]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('conv1d', (5, 2, 1)), ('relu', None), ('conv1d', (3, 2, 1)), ('relu', None),
     ('conv1d', (3, 2, 1)), ('relu', None), ('flatten', None), ('linear', None)]
    >>> _plain_stack(nn.Sequential(nn.Linear(3, 2), nn.Tanh()), ["0.weight", "0.bias"]) is None
    True
    """
    layers: list[_Layer] = []

    def visit(m: nn.Module, prefix: str) -> bool:
        if m._forward_hooks or m._forward_pre_hooks or m._backward_hooks:
            return False
        kind = type(m)
        if kind is SplitModel:
            return (visit(m.get_submodule("body"), prefix + "body.")
                    and visit(m.get_submodule("head"), prefix + "head."))
        if kind is nn.Sequential:
            return all(visit(c, f"{prefix}{k}.") for k, c in m.named_children())
        if kind is nn.Flatten and m.start_dim == 1 and m.end_dim == -1:
            layers.append(("flatten", None, None, None))
            return not any(k in ("linear", "flatten") for k, _, _, _ in layers[:-1])
        if kind is nn.Linear:
            layers.append(("linear", prefix + "weight",
                           None if m.bias is None else prefix + "bias", None))
            return True
        if kind is nn.ReLU and not m.inplace:
            layers.append(("relu", None, None, None))
            return True
        geometry = _plain_conv1d(m)
        if geometry is not None:
            layers.append(("conv1d", prefix + "weight",
                           None if m.bias is None else prefix + "bias", geometry))
            return not any(k in ("linear", "flatten") for k, _, _, _ in layers[:-1])
        return False

    if not visit(model, ""):
        return None
    held = [k for _, w, b, _ in layers for k in (w, b) if k is not None]
    kinds = [k for k, _, _, _ in layers]
    if sorted(held) != sorted(names) or "linear" not in kinds:
        return None
    if "conv1d" in kinds and "flatten" not in kinds:
        return None  # the convolutions' [b, C, L] outputs must be flattened before a Linear
    return tuple(layers)


class _Windows(torch.autograd.Function):
    """The convolution windows of channels-last activations: ``h`` ``[m, b, L, C]`` ->
    ``[m, b * L_out, kernel * C]``, row ``(i, l)`` holding ``h[:, i, l * stride + j, :]`` for
    ``j < kernel`` (what ``unfold`` cuts, with the channels innermost so that each tap is a
    contiguous run of ``C``). Its backward adds each tap's gradient into a strided view of one
    zero tensor (``kernel`` adds), where ``unfold``'s generic backward took about twice as long
    (cnn1d, 100 clients x 50 signals, one core)."""

    @staticmethod
    def forward(h: Tensor, kernel: int, stride: int) -> Tensor:
        m, b, L, C = h.shape
        lout = (L - kernel) // stride + 1
        return h.unfold(2, kernel, stride).transpose(3, 4).reshape(m, b * lout, kernel * C)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
        h, kernel, stride = inputs
        ctx.shape, ctx.kernel, ctx.stride = h.shape, kernel, stride

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor, None, None]:
        m, b, L, C = ctx.shape
        k, s = ctx.kernel, ctx.stride
        lout = (L - k) // s + 1
        taps = g.view(m, b, lout, k, C)
        dh = g.new_zeros(m, b, L, C)
        for j in range(k):
            dh[:, :, j: j + s * (lout - 1) + 1: s].add_(taps[:, :, :, j])
        return dh, None, None


def _stack_forward(layers: tuple[_Layer, ...], params: dict[str, Tensor], x: Tensor) -> Tensor:
    """``[m, b, C]`` logits of a plain stack (:func:`_plain_stack`) for every client's samples
    ``x`` ``[m, b, ...]``, without ``vmap``: the very operations the ``vmap``-ed forward of
    the stack runs (a ``Linear`` as :func:`_linear_weight_major`: ``bmm(W, x^T)``, transposed,
    plus the bias) on the same shapes and strides, so the same kernels and the same numbers,
    bit for bit on any one CPU, with the same backward, and without
    ``vmap``'s own work on every call (about 0.2 ms of a 5 ms local step of 100 MLP 40-64-10
    clients x 50 samples on one core, ``analysis/bench_floor.md``).

    On the CPU a ``Conv1d`` runs as batched products over the clients too (not as
    ``vmap``'s grouped convolution, so the same numbers to float32 rounding only): the
    activations are held channels-last, ``[m, b, L, C]``, each output position's window is
    cut out (:class:`_Windows`, ``[m, b * L_out, kernel * C]``) and multiplied by the clients'
    weights ``[m, kernel * C, C_out]`` with one ``baddbmm`` (the bias added in it); the
    ``Flatten`` after the convolutions puts the channels first again, as ``nn.Flatten``
    orders them.
    cnn1d, 100 clients x 50 signals on one core: 64.4 ms a local step against 106.4 ms with
    the grouped convolutions, whose backward pass dominated, and 135.8 ms with the per-client
    loop (``analysis/bench_floor.md``)."""
    m, b = x.shape[0], x.shape[1]
    h = x
    channels_last = False
    for kind, w, bias, geometry in layers:
        if kind == "conv1d":
            assert geometry is not None and w is not None  # set by _plain_stack
            k, stride, pad = geometry
            if not channels_last:
                h, channels_last = h.transpose(2, 3), True  # [m, b, L, C]
            if pad:
                h = F.pad(h, (0, 0, pad, pad))
            weight = params[w]  # [m, C_out, C, kernel]
            # the windows, [m, b * L_out, kernel * C]
            cols: Tensor = _Windows.apply(h, k, stride)  # type: ignore[no-untyped-call]
            lout = cols.shape[1] // b
            wt = weight.transpose(2, 3).reshape(m, weight.shape[1], -1).transpose(1, 2)
            h = (torch.bmm(cols, wt) if bias is None else  # [m, b L_out, C_out]
                 torch.baddbmm(params[bias].unsqueeze(1), cols, wt)).view(m, b, lout, -1)
        elif kind == "flatten":
            if channels_last:
                h, channels_last = h.transpose(2, 3), False
            h = h.reshape(m, b, -1)
        elif kind == "relu":
            h = torch.relu(h)
        else:
            h = torch.matmul(params[str(w)], h.transpose(-1, -2)).transpose(-1, -2)
            if bias is not None:
                h = h + params[bias].unsqueeze(1)
    return h
