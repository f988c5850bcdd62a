"""The registry of model constructors and the seeded builder."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from topofl._utils.registries import Extensible
from topofl._utils.rng import Seed, generator_at
from topofl._utils.validation import check_choice, check_device, check_memory
from topofl.models._core import FactoryFn, SplitModel
from topofl.models.conv1d import cnn1d
from topofl.models.lenet import cnn, gn_lenet
from topofl.models.linear import logistic, mlp
from topofl.models.resnet import resnet18_gn

__all__ = ["MODELS", "build_model", "register_model", "unregister_model", "INIT_STREAM"]

_REGISTRY: Extensible[FactoryFn] = Extensible("model", {
    "logistic": logistic,
    "mlp": mlp,
    "gn_lenet": gn_lenet,
    "cnn": cnn,
    "cnn1d": cnn1d,
    "resnet18_gn": resnet18_gn,
})

#: Name -> constructor ``(input_shape, num_classes, **kwargs) -> SplitModel``. Read-only: add
#: one with :func:`register_model`.
MODELS: Mapping[str, FactoryFn] = _REGISTRY.view


def register_model(name: str, *, replace: bool = False) -> Callable[[FactoryFn], FactoryFn]:
    """Decorator adding a model constructor to :data:`MODELS`, so ``topofl.run(model=name)``
    and a config's ``model = "name"`` build it (with ``model_params`` as its keywords).

    The constructor takes ``(input_shape, num_classes, **kwargs)`` and returns a
    :class:`~topofl.models.SplitModel` (a body, then a linear head) whose parameters depend
    only on torch's global RNG (:func:`build_model` seeds it). It must create no tensor of
    its own from data: :func:`build_model` first runs it on the meta device to size it.

    With ``replace=True`` the constructor registered under ``name`` (a built-in one too) is
    replaced, with a ``UserWarning``; a run that names it records ``replaced`` in its header
    (its provenance), and :func:`unregister_model` restores the previous one.

    Raises
    ------
    TypeError
        ``name`` is not a non-empty identifier-like str (letters, digits, ``_`` and ``-``),
        or the constructor is not callable.
    ValueError
        Another constructor is registered under ``name`` and ``replace`` is false (the same
        one again is a no-op).

    Examples
    --------
    >>> import math
    >>> from torch import nn
    >>> @tf.models.register_model("tiny_mlp")
    ... def tiny_mlp(input_shape, num_classes, hidden: int = 8):
    ...     d = math.prod(input_shape)
    ...     body = nn.Sequential(nn.Flatten(), nn.Linear(d, hidden), nn.ReLU())
    ...     return tf.models.SplitModel(body, nn.Linear(hidden, num_classes), arch="tiny_mlp",
    ...                                 input_shape=input_shape, num_classes=num_classes)
    >>> m = tf.models.build_model("tiny_mlp", (1, 8, 8), 10, seed=0, hidden=4)
    >>> sum(p.numel() for p in m.parameters())  # 64*4 + 4 + 4*10 + 10
    310
    >>> unregister_model("tiny_mlp")
    """
    return _REGISTRY.register(name, "constructor", replace=replace)


def unregister_model(name: str) -> None:
    """Remove a model :func:`register_model` added (the built-in ones stay); for a replaced
    name, put back the constructor it replaced.

    Raises
    ------
    ValueError
        ``name`` is a built-in model that was not replaced, or not registered.
    """
    _REGISTRY.unregister(name)

#: Stream index of model initialisation: ``generator_at(seed, INIT_STREAM)`` seeds torch, so
#: that the initial parameters do not share a stream with the other uses of the same seed.
INIT_STREAM = 0x6D6F64  # "mod"


def build_model(
    name: str,
    input_shape: int | Sequence[int],
    num_classes: int,
    *,
    seed: Seed,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
    **kwargs: Any,
) -> SplitModel:
    """Build the model ``name`` with parameters that depend only on ``seed``.

    The module is constructed (with PyTorch's default initialisation, on the CPU in float32)
    inside ``torch.random.fork_rng(devices=[])`` after ``torch.manual_seed(s)``, where ``s`` is
    drawn from ``topofl._utils.rng.generator_at(seed, INIT_STREAM)``; ``fork_rng`` restores the
    global torch RNG state afterwards, so building a model neither depends on nor changes it.
    The parameters are then moved to ``device`` and cast to ``dtype``, so the same seed gives
    the same initial values (up to rounding) on every device and in every dtype.

    Parameters
    ----------
    name : str
        A key of :data:`MODELS`: ``"logistic"``, ``"mlp"``, ``"gn_lenet"``, ``"cnn"``,
        ``"cnn1d"``, ``"resnet18_gn"``.
    input_shape : int or sequence of int
        Shape of one sample, e.g. ``(3, 32, 32)`` or ``784``.
    num_classes : int
        Number of classes.
    seed : int, numpy.random.Generator or numpy.random.SeedSequence
        Keyword-only and required.
    dtype : torch.dtype, optional
        Floating dtype of the parameters; default float32.
    device : torch.device or str, optional
        Default CPU.
    **kwargs
        Passed to the constructor (``hidden=`` for ``mlp``, ``variant=`` for ``cnn``,
        ``num_groups=`` / ``width=`` for ``resnet18_gn`` ...).

    Returns
    -------
    SplitModel

    Raises
    ------
    ValueError
        If ``name`` is unknown (the message lists the known names) or the constructor refuses
        its arguments.
    TypeError
        If ``seed`` or ``dtype`` has the wrong type, or a keyword is not accepted by the
        constructor.

    Examples
    --------
    >>> import torch
    >>> a = tf.models.build_model("mlp", 64, 10, seed=3)
    >>> b = tf.models.build_model("mlp", 64, 10, seed=3, dtype=torch.float64)
    >>> torch.equal(a.head.weight.double(), b.head.weight)
    True
    >>> tf.models.build_model("lenet", (3, 32, 32), 10, seed=0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: model must be one of ['cnn', 'cnn1d', 'gn_lenet', ...], got 'lenet' (did you
    mean 'gn_lenet'?)
    """
    check_choice(name, "model", MODELS)
    if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    if device is not None:
        device = check_device(device)
    # Build once on the meta device (no memory) to refuse a model that cannot fit.
    try:
        with torch.device("meta"):
            probe = MODELS[name](input_shape, num_classes, **kwargs)
    except RuntimeError as exc:  # e.g. "Storage size calculation overflowed"
        raise ValueError(
            f"model {name!r} for input_shape={input_shape!r}, num_classes={num_classes!r} "
            f"cannot be built: {exc}"
        ) from None
    numel = sum(t.numel() for t in (*probe.parameters(), *probe.buffers()))
    itemsize = torch.finfo(dtype).bits // 8 if dtype is not None else 4
    # float32 on the CPU first, then a copy in ``dtype`` on ``device``.
    check_memory(numel * (4 + itemsize), f"model {name!r} (input_shape={input_shape!r}, "
                 f"num_classes={num_classes!r}) with {numel} parameters")
    torch_seed = int(generator_at(seed, INIT_STREAM).integers(0, 2**63 - 1))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(torch_seed)
        model = MODELS[name](input_shape, num_classes, **kwargs)
    return model.to(device=device, dtype=dtype)
