"""Per-sample cross-entropy with the bits of torch's, through its faster kernel where it can.

``F.cross_entropy(logits, y, reduction="none")`` on logits ``[N, C]`` runs ATen's
``log_softmax`` over the last dimension. With the AVX-512 kernels and a few classes
(``C`` under a vector's lanes: 16 in float32, 8 in float64) that kernel is slow: each row is
a partial vector reduced lane by lane, about 150 ns a row for ten classes (0.77 ms of a
5,000-row forward pass on one core of the machine the committed results ran on, 1.21 ms with
the backward pass, a quarter of a local step of 100 MLP clients x 50 samples:
``analysis/bench_crossentropy.md``). Its kernel over a leading dimension, on the transposed
logits ``[C, N]``, runs the same steps on sixteen rows at once: the largest logit, the
exponentials of the differences summed class after class, their logarithm, ``x - max -
log(sum)``; its backward ``g - exp(out) * sum(g)`` likewise. Where a row fits a partial
vector the lane-by-lane reduction adds the classes in that same order, so both give the
same bits, forward and backward; the transposed logits are padded to a multiple of 64
samples, so that no sample falls in the scalar remainder of the leading-dimension kernel
(where the exponential is the C library's, not the vectorized one).

:func:`cross_entropy_rows` takes that path only there (the CPU, ``AVX512``, float32 with
``C < 16`` or float64 with ``C < 8``); elsewhere it is ``F.cross_entropy`` itself. With the
AVX2 and default kernels the last-dimension kernel is as fast as the other and reduces
differently (``tests/engine/test_crossentropy.py`` checks the bits on the machine it runs
on, gradients included).

Examples
--------
>>> import torch
>>> import torch.nn.functional as F
>>> from topofl.engine.crossentropy import cross_entropy_rows
>>> logits = torch.randn(300, 10, generator=torch.Generator().manual_seed(0))
>>> y = torch.arange(300) % 10
>>> torch.equal(cross_entropy_rows(logits, y), F.cross_entropy(logits, y, reduction="none"))
True
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["cross_entropy_rows", "takes_transposed"]

#: the transposed logits' samples are padded to a multiple of this (a multiple of any lane count)
PAD = 64


def takes_transposed(logits: Tensor) -> bool:
    """Whether :func:`cross_entropy_rows` computes ``logits`` ``[N, C]`` through the transposed
    kernel: on the CPU with the ``AVX512`` kernels, float32 with ``C < 16`` or float64 with
    ``C < 8`` classes (a row shorter than a vector)."""
    if logits.device.type != "cpu" or logits.dim() != 2 or \
            logits.dtype not in (torch.float32, torch.float64):
        return False
    lanes = 64 // logits.element_size()
    return 1 <= logits.shape[1] < lanes and torch.backends.cpu.get_cpu_capability() == "AVX512"


def cross_entropy_rows(logits: Tensor, y: Tensor) -> Tensor:
    """``[N]``: ``F.cross_entropy(logits, y, reduction="none")`` of logits ``[N, C]`` and
    labels ``[N]`` in ``[0, C)``, the same bits and gradient (module docstring).

    Parameters
    ----------
    logits : Tensor
        ``[N, C]`` float logits (autograd follows them).
    y : Tensor
        ``[N]`` integer labels.

    Returns
    -------
    Tensor
        ``[N]`` the samples' cross-entropies ``log(sum(exp(logits))) - logits[y]``.

    Raises
    ------
    ValueError
        A label outside ``[0, C)`` on the transposed path (``F.cross_entropy`` raises its own
        error elsewhere).

    Examples
    --------
    >>> import torch
    >>> from topofl.engine.crossentropy import cross_entropy_rows
    >>> cross_entropy_rows(torch.zeros(2, 4), torch.tensor([0, 3])).tolist()  # log(4)
    [1.3862943649291992, 1.3862943649291992]
    """
    if not takes_transposed(logits):
        return F.cross_entropy(logits, y, reduction="none")
    n, c = logits.shape
    if n and bool(((y < 0) | (y >= c)).any()):
        raise ValueError(f"labels must lie in [0, {c}), got {int(y.min())}..{int(y.max())}")
    if torch.is_grad_enabled() and logits.requires_grad:
        lp = F.log_softmax(_PaddedTranspose.apply(logits), dim=0)  # type: ignore[no-untyped-call]
        return lp[:, :n].gather(0, y.view(1, n)).view(n).neg()
    # without a gradient, in place in the padded copy: the evaluation's peak memory is then
    # F.cross_entropy's (its log_softmax's [N, C] beside the logits), which the planner counts
    # (each output of the kernel reads only its own input, after the column's max and sum)
    lp = _padded_t(logits.detach())
    torch.log_softmax(lp, 0, out=lp)
    return lp[:, :n].gather(0, y.view(1, n)).view(n).neg()


class _PaddedTranspose(torch.autograd.Function):
    """``[N, C]`` -> ``[C, N + pad]`` (contiguous, zeros after the samples), whose backward
    gives a contiguous ``[N, C]`` gradient: the layout ``F.cross_entropy``'s has, on which the
    products of the backward pass before it choose their kernels (a transposed gradient,
    though of the same values, moves their bits)."""

    @staticmethod
    def forward(ctx: Any, logits: Tensor) -> Tensor:
        ctx.n = logits.shape[0]
        return _padded_t(logits)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return g[:, :ctx.n].t().contiguous()


def _padded_t(logits: Tensor) -> Tensor:
    """``[C, N + pad]`` contiguous: ``logits.t()``, then zeros up to a multiple of PAD."""
    n, c = logits.shape
    out = logits.new_zeros(c, n + (-n % PAD))
    out[:, :n] = logits.t()
    return out
