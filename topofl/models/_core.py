"""The body/head convention, parameter bookkeeping and FLOP counting shared by every model."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from topofl._utils.validation import check_bool, check_memory
from topofl.models.inputs import check_model_input, check_shape

__all__ = [
    "SplitModel",
    "split_parameters",
    "count_parameters",
    "flops_per_sample",
]


class SplitModel(nn.Module):
    """A classifier made of a shared *body* followed by a personal *head*.

    ``forward(x) = head(body(x))``: ``body`` maps a batch ``[B, *input_shape]`` to features
    ``[B, d]`` and ``head`` is the last ``nn.Linear`` (``d -> num_classes``). Personalized
    algorithms share (gossip) the body's parameters and keep the head's on each client; see
    :func:`split_parameters`.

    Every topofl model is a ``SplitModel``; it is a plain ``nn.Module`` without buffers, so it can
    be evaluated on stacked per-client parameters with ``torch.func.functional_call`` under
    ``torch.func.vmap``.

    Parameters
    ----------
    body : nn.Module
        Feature extractor, ``[B, *input_shape] -> [B, d]``. May have no parameters (see
        :func:`~topofl.models.logistic`).
    head : nn.Linear
        The personal classifier, ``[B, d] -> [B, num_classes]``.
    arch : str
        Name of the architecture (a key of :data:`~topofl.models.MODELS`).
    input_shape : tuple of int
        Shape of one sample.
    num_classes : int
        Number of outputs.

    Examples
    --------
    >>> from torch import nn
    >>> m = tf.models.SplitModel(nn.Flatten(), nn.Linear(4, 3), arch="custom",
    ...                          input_shape=(2, 2), num_classes=3)
    >>> tf.models.split_parameters(m)
    ([], ['head.weight', 'head.bias'])
    """

    def __init__(
        self,
        body: nn.Module,
        head: nn.Linear,
        *,
        arch: str,
        input_shape: tuple[int, ...],
        num_classes: int,
    ) -> None:
        super().__init__()
        if not isinstance(body, nn.Module):
            raise TypeError(f"body must be an nn.Module, got {type(body).__name__}")
        if not isinstance(head, nn.Linear):
            raise TypeError(f"head must be an nn.Linear, got {type(head).__name__}")
        self.body = body
        self.head = head
        self.arch = arch
        self.input_shape = tuple(int(s) for s in input_shape)
        self.num_classes = int(num_classes)

    def forward(self, x: Tensor) -> Tensor:  # x: [B, *input_shape] -> [B, num_classes]
        return self.head(self.body(x))  # type: ignore[no-any-return]

    def extra_repr(self) -> str:
        return f"arch={self.arch!r}, input_shape={self.input_shape}, num_classes={self.num_classes}"


def with_linear_head(body: nn.Module, features: int, num_classes: int, *, arch: str,
                     input_shape: tuple[int, ...]) -> SplitModel:
    """``body``, then a linear head from its ``features`` outputs to ``num_classes`` logits
    (the head is built after the body, as the models' parameter draws expect)."""
    return SplitModel(body, nn.Linear(features, num_classes), arch=arch,
                      input_shape=input_shape, num_classes=num_classes)


def _last_linear_names(model: nn.Module) -> list[str]:
    """Parameter names of the last ``nn.Linear`` in module order (for error hints)."""
    last: list[str] = []
    for prefix, mod in model.named_modules():
        if isinstance(mod, nn.Linear):
            last = [f"{prefix}.{n}" if prefix else n for n, _ in mod.named_parameters()]
    return last


def split_parameters(
    model: nn.Module, head: Iterable[str] | None = None
) -> tuple[list[str], list[str]]:
    """Names of the shared *body* and of the personal *head* parameters of ``model``.

    Parameters
    ----------
    model : nn.Module
        A topofl model (submodules ``body`` and ``head``) or any module, in which case ``head``
        must name its personal parameters.
    head : iterable of str, optional
        Explicit names of the head parameters, e.g. ``["fc.weight", "fc.bias"]``; every other
        parameter belongs to the body. When omitted, the head is ``model.head`` and the body
        ``model.body``.

    Returns
    -------
    body, head : list of str
        Parameter names in ``model.named_parameters()`` order. ``body`` is empty for
        :func:`~topofl.models.logistic`: there is nothing to share, so a personalized algorithm
        would personalize everything (the engine refuses algorithms that need a shared body).

    Raises
    ------
    ValueError
        If ``model`` has no ``body``/``head`` split and ``head`` is not given ("model has no
        head/body split: ..."), if a given name is not a parameter of ``model`` or is repeated,
        if the head would be empty, or if some parameters belong to neither ``body`` nor
        ``head``.

    Examples
    --------
    >>> m = tf.models.build_model("mlp", (64,), 10, hidden=(32,), seed=0)
    >>> body, head = tf.models.split_parameters(m)
    >>> body, head
    (['body.fc1.weight', 'body.fc1.bias'], ['head.weight', 'head.bias'])
    >>> from torch import nn
    >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> tf.models.split_parameters(net, head=["2.weight", "2.bias"])
    (['0.weight', '0.bias'], ['2.weight', '2.bias'])
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    names = [n for n, _ in model.named_parameters()]
    if head is not None:
        if isinstance(head, str):
            raise TypeError(
                f"head must be a list of parameter names, got the str {head!r}; "
                f"write head=[{head!r}]"
            )
        if not isinstance(head, Iterable):
            raise TypeError(
                f"head must be a list of parameter names, got {type(head).__name__} {head!r}")
        wanted = list(head)
        for h in wanted:
            if not isinstance(h, str):
                raise TypeError(f"head must contain parameter names (str), got {h!r}")
        seen: set[str] = set()
        for h in wanted:
            if h in seen:
                raise ValueError(f"head names a parameter twice: {h!r}")
            seen.add(h)
        unknown = [h for h in wanted if h not in names]
        if unknown:
            raise ValueError(
                f"head names parameters that {type(model).__name__} does not have: {unknown}; "
                f"its parameters are {_short_list(names)}"
            )
        if not wanted:
            raise ValueError("head must name at least one parameter, got an empty list")
        head_set = set(wanted)
        return [n for n in names if n not in head_set], [n for n in names if n in head_set]

    body_mod = getattr(model, "body", None)
    head_mod = getattr(model, "head", None)
    if not isinstance(body_mod, nn.Module) or not isinstance(head_mod, nn.Module):
        hint = _last_linear_names(model)
        example = f"head={hint}" if hint else 'head=["fc.weight", "fc.bias"]'
        raise ValueError(
            f"model has no head/body split: {type(model).__name__} has no `body` and `head` "
            f"submodules; pass the names of its personal parameters, e.g. {example}"
        )
    head_names = [n for n in names if n.startswith("head.")]
    body_names = [n for n in names if n.startswith("body.")]
    if not head_names:
        raise ValueError(f"the head of {type(model).__name__} has no parameters")
    other = [n for n in names if not n.startswith(("head.", "body."))]
    if other:
        raise ValueError(
            f"{type(model).__name__} has parameters outside `body` and `head`: "
            f"{_short_list(other)}; pass head=[...] explicitly"
        )
    return body_names, head_names


def _short_list(names: Sequence[str], k: int = 8) -> str:
    if len(names) <= k:
        return str(list(names))
    return str(list(names[:k]))[:-1] + f", ... ({len(names)} in all)]"


def count_parameters(model: nn.Module, head: Iterable[str] | None = None) -> dict[str, int]:
    """Number of scalar parameters in the body, the head and in total.

    Parameters
    ----------
    model : nn.Module
    head : iterable of str, optional
        As in :func:`split_parameters`.

    Returns
    -------
    dict
        ``{"body": int, "head": int, "total": int}``.

    Examples
    --------
    >>> tf.models.count_parameters(tf.models.build_model("logistic", (784,), 10, seed=0))
    {'body': 0, 'head': 7850, 'total': 7850}
    """
    body_names, head_names = split_parameters(model, head)
    sizes = {n: p.numel() for n, p in model.named_parameters()}
    b = sum(sizes[n] for n in body_names)
    h = sum(sizes[n] for n in head_names)
    return {"body": int(b), "head": int(h), "total": int(b + h)}


def flops_per_sample(
    model: nn.Module,
    input_shape: int | Sequence[int] | None = None,
    *,
    backward: bool = False,
) -> int:
    """Floating-point operations of one sample's forward (and backward) pass.

    Counted by ``torch.utils.flop_counter.FlopCounterMode`` on a batch of one zero sample:
    matrix products and convolutions only (``2 * multiply-adds``); normalisation, activations,
    pooling and the loss are not counted. The model is not modified (the backward pass runs on
    detached copies of the parameters).

    Parameters
    ----------
    model : nn.Module
        Evaluated on the device and dtype of its parameters.
    input_shape : int or sequence of int, optional
        Shape of one sample; defaults to ``model.input_shape`` of a :class:`SplitModel`.
    backward : bool, default False
        Also count the backward pass (gradients with respect to every parameter, not the
        input), i.e. the cost of one local SGD step per sample, about 3x the forward.

    Returns
    -------
    int

    Examples
    --------
    >>> m = tf.models.build_model("logistic", (784,), 10, seed=0)
    >>> tf.models.flops_per_sample(m)  # 2 * 784 * 10
    15680
    >>> tf.models.flops_per_sample(m, backward=True)  # + the weight gradient
    31360
    """
    from torch.utils.flop_counter import FlopCounterMode

    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    backward = check_bool(backward, "backward")
    if input_shape is None:
        shape = getattr(model, "input_shape", None)
        if shape is None:
            raise ValueError(
                f"input_shape is required for a {type(model).__name__} (it has no input_shape)"
            )
        input_shape = shape
    shape_t = check_shape(input_shape, "input_shape")
    p0 = next(iter(model.parameters()), None)
    dtype = p0.dtype if p0 is not None else torch.get_default_dtype()
    check_memory(prod(shape_t) * torch.finfo(dtype).bits // 8,
                 f"a sample of input_shape={shape_t}")
    check_model_input(model, shape_t, dtype=dtype)  # the one rule for input shapes
    device = p0.device if p0 is not None else torch.device("cpu")
    x = torch.zeros((1, *shape_t), dtype=dtype, device=device)
    params = {n: p.detach().requires_grad_(backward) for n, p in model.named_parameters()}
    counter = FlopCounterMode(display=False)
    with counter, torch.set_grad_enabled(backward):
        out = torch.func.functional_call(model, params, (x,))
        if backward and params:
            torch.autograd.grad(out.sum(), list(params.values()), allow_unused=True)
    return int(counter.get_total_flops())


# ----------------------------------------------------------------------------------------------
# input checks and output-size arithmetic shared by the architectures


# A stage of a convolutional trunk, for output-size arithmetic: (kernel, stride, padding).
Stage = tuple[int, int, int]


def trace_size(size: int, stages: Sequence[Stage]) -> int | None:
    """Spatial size after ``stages`` (convolutions or poolings), or None if one cannot apply."""
    for k, s, p in stages:
        if size + 2 * p < k:
            return None
        size = (size + 2 * p - k) // s + 1
    return size


def min_size(stages: Sequence[Stage]) -> int:
    """Smallest input size for which every stage applies (sizes are monotone in the input)."""
    size = 1
    while trace_size(size, stages) is None:
        size += 1
    return size


def check_spatial(
    arch: str, input_shape: tuple[int, ...], stages: Sequence[Stage]
) -> tuple[int, int]:
    """Output ``(height, width)`` of the trunk, or a ValueError naming the minimum input size."""
    _, h, w = input_shape
    oh, ow = trace_size(h, stages), trace_size(w, stages)
    if oh is None or ow is None:
        m = min_size(stages)
        raise ValueError(
            f"{arch} needs inputs of at least {m}x{m} pixels, got {h}x{w} "
            f"(input_shape={input_shape}); use a flat model (logistic, mlp) for smaller inputs"
        )
    return oh, ow


def prod(shape: Iterable[int]) -> int:
    return int(math.prod(shape))


FactoryFn = Callable[..., SplitModel]


def build_within_memory(arch: str, make: Callable[[], SplitModel], **args: Any) -> SplitModel:
    """``make()`` once its parameters are known to fit in memory.

    Every constructor ends with it: ``make`` is first run on the ``meta`` device (shapes only,
    no memory), and a model whose float32 parameters would not fit is refused with a
    ``ValueError`` giving the estimate, before torch tries to allocate them. Under
    ``torch.device("meta")`` (as :func:`~topofl.models.build_model` probes) it just calls
    ``make``. ``args`` (the constructor's checked arguments) are named in the messages.

    Examples
    --------
    >>> tf.models.logistic(10**7, 10**6)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topofl.exceptions.InsufficientMemoryError: logistic(input_shape=(10000000,), ...) with ...
    """
    if torch.get_default_device().type != "meta":
        call = f"{arch}({', '.join(f'{k}={v!r}' for k, v in args.items())})"
        try:
            with torch.device("meta"):
                probe = make()
        except RuntimeError as exc:  # e.g. "Storage size calculation overflowed"
            raise ValueError(f"{call} cannot be built: {exc}") from None
        numel = sum(t.numel() for t in (*probe.parameters(), *probe.buffers()))
        check_memory(4 * numel, f"{call} with {numel} parameters")
    return make()
