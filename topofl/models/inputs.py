"""The rule for a model's inputs: the data's samples as they are, mapped to logits."""

from __future__ import annotations

import contextlib
import math
import numbers
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn
from torch.func import functional_call

from topofl._utils.validation import check_int

__all__ = ["check_model_input", "check_shape"]


def check_shape(
    value: Any, name: str, *, ndim: int | None = None, arch: str = ""
) -> tuple[int, ...]:
    """Return ``value`` (an int or a sequence of positive ints) as a tuple, or raise."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = (int(value),)
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, torch.Size)):
        raise TypeError(f"{name} must be a tuple of ints, got {type(value).__name__} {value!r}")
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{name} must contain ints, got {type(v).__name__} {v!r} in {value!r}")
        if int(v) < 1:
            raise ValueError(f"{name} must contain positive sizes, got {tuple(value)}")
        out.append(int(v))
    if not out:
        raise ValueError(f"{name} must have at least one dimension, got ()")
    if ndim is not None and len(out) != ndim:
        what = "(channels, height, width)" if ndim == 3 else f"{ndim} sizes"
        for_arch = f" for {arch}" if arch else ""
        raise ValueError(f"{name} must be {what}{for_arch}, got {tuple(out)}")
    return tuple(out)


def check_model_input(model: nn.Module, input_shape: Sequence[int], num_classes: int | None = None,
                      *, dtype: torch.dtype | None = None) -> None:
    """Refuse a model that does not map the data's samples, as they are, to logits.

    The one rule for input shapes, applied by :func:`topofl.run` before a run starts, by
    :func:`flops_per_sample` and by the engine's executors before their first forward pass
    (training and evaluation alike): the model
    gets a batch ``[B, *input_shape]`` of the data's samples unchanged (topofl never flattens
    or reshapes them for it) and must return logits ``[B, C]`` with ``C >= num_classes``. So
    a bare ``nn.Linear(64, 10)`` takes samples of shape ``(64,)``; for the ``(1, 8, 8)``
    images of ``digits`` write ``nn.Sequential(nn.Flatten(), nn.Linear(64, 10))`` (the
    message says so).

    The check runs the model, with its own parameters (not a copy), on a batch of two zero
    samples on the parameters' device, under :func:`torch.no_grad`. Nothing of ``model``
    changes (its buffers, e.g. BatchNorm's running statistics, are cloned for the pass; the
    parameters, their gradients and the training flag are left as they are) and nor does any
    global random state (the pass runs inside :func:`torch.random.fork_rng`, so ``Dropout``
    draws nothing from the run's stream). A model whose parameters or buffers are on the
    ``meta`` device is checked there (shapes only). The pass costs what a forward pass of two
    samples costs: the ``meta`` device's pass, which the check ran before, first imports
    sympy, ``torch._dynamo`` and ``torch._inductor`` through torch's Python meta kernels
    (about 800 modules, 1.3-2.2 CPU s and some 75 MB once per process on two cores,
    ``analysis/bench_startup.md``).

    Parameters
    ----------
    model : torch.nn.Module
    input_shape : sequence of int
        Shape of one sample.
    num_classes : int, optional
        The number of classes of the data.
    dtype : torch.dtype, optional
        Floating dtype of the parameters and inputs (default: the model's own).

    Raises
    ------
    TypeError
        If ``model`` is not a module, ``input_shape`` not a tuple of ints, ``num_classes`` not
        an int or ``dtype`` not a ``torch.dtype``.
    ValueError
        If the forward pass fails on such a batch or does not return ``[B, C >= num_classes]``
        (or a size is not positive).

    Examples
    --------
    >>> from torch import nn
    >>> from topofl.models import check_model_input
    >>> check_model_input(nn.Sequential(nn.Flatten(), nn.Linear(64, 10)), (1, 8, 8), 10)
    >>> check_model_input(nn.Linear(64, 10), (1, 8, 8), 10)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the model does not take samples of input_shape=(1, 8, 8) ... wrap it as ...
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    shape = check_shape(input_shape, "input_shape")
    if num_classes is not None:
        num_classes = check_int(num_classes, "num_classes", low=1)
    if dtype is not None and not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype or None, got {type(dtype).__name__}")
    if dtype is None:
        dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()),
                     torch.float32)

    first = next((m for m in model.modules() if any(True for _ in m.parameters(recurse=False))),
                 None)
    hint = ""
    if isinstance(first, nn.Linear) and first.in_features != math.prod(shape):
        hint = (f"; its first layer is an nn.Linear that takes {first.in_features} input "
                f"features, and a sample has {math.prod(shape)} values")
    elif isinstance(first, nn.Linear) and len(shape) > 1:
        hint = ("; its first layer is an nn.Linear, which takes flat samples: wrap it as "
                "nn.Sequential(nn.Flatten(), model)")
    try:
        out = _forward(model, shape, dtype)
    except Exception as exc:  # noqa: BLE001 - whatever the model raises, in one message
        msg = " ".join(str(exc).split()).rstrip(".")
        raise ValueError(
            f"the model does not take samples of input_shape={shape} (batches "
            f"[B, {', '.join(map(str, shape))}]): {type(exc).__name__}: {msg}{hint}"
        ) from None
    if not isinstance(out, Tensor) or out.dim() != 2 or out.shape[0] != 2:
        found = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
        raise ValueError(
            f"the model must map a batch [B, *input_shape] to logits [B, num_classes]; for "
            f"input_shape={shape} and B=2 it returns {found}{hint}"
        )
    if num_classes is not None and out.shape[1] < num_classes:
        raise ValueError(
            f"the model returns {out.shape[1]} logits per sample, but the data has "
            f"{num_classes} classes (num_classes={num_classes})"
        )


def _forward(model: nn.Module, shape: tuple[int, ...], dtype: torch.dtype) -> Any:
    """``model``'s output on a batch ``[2, *shape]`` of zeros in ``dtype``, changing nothing.

    Its own parameters (cast to ``dtype`` where they are floating and of another dtype) and
    clones of its buffers, through :func:`~torch.func.functional_call`, without a gradient,
    the random states of the CPU and of the model's devices restored afterwards. On the
    ``meta`` device (shapes only) when a parameter or buffer of the model is there.
    """
    named = [*model.named_parameters(), *model.named_buffers()]
    if any(t.device.type == "meta" for _, t in named):
        def meta(t: Tensor) -> Tensor:
            return torch.empty(t.shape, dtype=dtype if t.is_floating_point() else t.dtype,
                               device="meta")

        return functional_call(model, {k: meta(t) for k, t in named},
                               (torch.empty((2, *shape), dtype=dtype, device="meta"),))

    def cast(t: Tensor, copy: bool) -> Tensor:
        if t.is_floating_point() and t.dtype != dtype:
            return t.to(dtype)  # a new tensor
        return t.clone() if copy else t

    tensors = {k: cast(p, False) for k, p in model.named_parameters()}
    tensors.update((k, cast(b, True)) for k, b in model.named_buffers())  # may move: copies
    device = named[0][1].device if named else torch.device("cpu")
    devices: dict[str, set[int]] = {}  # the accelerators whose random states to restore
    for _, t in named:
        if t.device.type != "cpu":
            devices.setdefault(t.device.type, set()).add(
                t.device.index if t.device.index is not None else 0)
    with contextlib.ExitStack() as stack:
        stack.enter_context(torch.no_grad())
        stack.enter_context(torch.random.fork_rng(devices=[]))  # the CPU's
        for kind, index in sorted(devices.items()):
            stack.enter_context(torch.random.fork_rng(devices=sorted(index), device_type=kind))
        return functional_call(model, tensors, (torch.zeros((2, *shape), dtype=dtype,
                                                             device=device),))
