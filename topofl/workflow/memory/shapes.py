"""What a run's memory depends on, read without training: its :class:`Shapes` (from the
checked call, the model, and the data and graph once built), and the bytes a client's state and
a sample's forward pass hold.

The state ``algorithm.init`` builds is counted on the ``meta`` device (:func:`state_bytes`);
the forward pass's activations with hooks on one zero sample (:func:`activation_bytes`).
:mod:`topofl.workflow.memory.parts` turns the shapes into bytes by part.
"""

from __future__ import annotations

import itertools
import math
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

from topofl.data.datasets.bundled import synthetic_bytes
from topofl.data.federated import FederatedData
from topofl.engine import ParamLayout, toy_services
from topofl.engine.config import DTYPES, resolve_eval_every
from topofl.engine.executors import loop_on_cpu
from topofl.engine.gossip import band_plan
from topofl.graph import Topology

__all__ = ["Shapes", "run_shapes", "state_bytes", "state_parts", "activation_bytes"]


@dataclass(frozen=True)
class Shapes:
    """What the counted parts depend on, read from the resolved config without training.

    The fields after ``w_row_nnz`` have defaults that count nothing, so that a hand-built
    ``Shapes`` (a doctest, :func:`topofl.tools.bench.bytes_per_client`) names only what it needs.
    """

    n: int
    num_params: int
    dtype_bytes: int
    sample_bytes: int
    num_classes: int
    batch_size: int
    input_shape: tuple[int, ...]  # of one sample (the local step's blocks depend on it)
    per_client_state: Mapping[str, int]  # bytes per client of State.tensors() by part
    dataset_bytes: int  # the source arrays of the dataset (numpy), held while data is built
    data_bytes: int  # FederatedData's x and y (every split, every client)
    longest_test: int  # the largest local test set (evaluation's padded batch)
    w_row_nnz: float  # non-zeros per row of the mixing matrix (0: no graph)
    #: forward activations of one sample through the model (bytes: every leaf module's output)
    activation_bytes: int = 0
    #: the local step's update is fused into the gradient pass (no ``[rows, P]`` gradient buffer)
    fused: bool = True
    #: the local update moves few rows a step (``LocalUpdate.moving``): its step is every
    #: row's forward pass (no autograd graph) and the gradients of those rows
    moving: bool = False
    #: the local step streams blocks of clients (:func:`~topofl.engine.local.stream_rows`); else all
    #: clients at once; ``stream_rows`` overrides the block
    streams: bool = True
    stream_rows: int | None = None
    #: the per-client loop executor: one client's activations at a time per thread
    loop_threads: int = 0
    global_test: int = 0  # samples of the global test set every client is scored on
    #: the run's ``eval_global_samples``: how many of them at ``n`` clients
    #: (:func:`topofl.engine.config.global_samples`)
    eval_global_samples: int | str = "auto"
    longest_val: int = 0  # the largest validation split (0: not scored)
    samples: int = 0  # samples of every split of every client (their int64 indices)
    evaluations: int = 0  # evaluations of the run (each keeps per-client rows in the records)
    client_rows: int = 0  # per-client records rows per evaluation
    rounds: int = 0  # the run's rounds (0: not known; what a refusal may suggest cutting)
    spectral: bool = False  # the spectral summary of a static graph of the n clients
    shared_params: int = -1  # the entries the consensus distance reads (-1: num_params)
    w_row_bytes: float = 0.0  # bytes a row of the topology's scipy W holds (0: estimated)
    load_bytes: int = 0  # the peak of loading the dataset by name (0: given, not loaded)
    device: str = "cpu"
    #: the algorithm's ``predict`` hook (its global subsample is scored as the whole set)
    predicts: bool = False
    runtime: bool = False  # count RUNTIME_BYTES and CLIENT_BYTES (the static estimate)
    #: the graph has a band plan (:func:`topofl.engine.gossip.band_plan`): on the CPU, from
    #: ``band_min_n`` clients and a 1 GiB buffer, the compiled band kernel loads Numba and LLVM
    band: bool = False


#: Equally spaced sizes; the first three give the polynomial, the fourth checks it.
FIT_SIZES = (256, 512, 768, 1024)
#: Above this many clients :func:`state_bytes` builds the state at the few sizes of
#: :data:`FIT_SIZES` and extends the polynomial through them to ``n`` (exact for a state whose
#: size is linear or quadratic in the clients, checked on a fourth size), so that its time and
#: memory do not grow with ``n`` (the ``meta`` state of 10^9 clients is free, but the services
#: built for it hold every client's id), nor with the sizes a search for the largest ``n``
#: that fits tries.
FIT_ABOVE = FIT_SIZES[-1]
#: The polynomials of the last few algorithms (a search for the largest ``n`` asks dozens of
#: times), each kept with its algorithm (so that its ``id`` stays its own).
_FITS: dict[tuple[int, ParamLayout, torch.dtype], tuple[Any, Any]] = {}

_PARTS = ("parameters", "optimizer", "algorithm")


def _count(state: Any, m: int, scale: int) -> dict[str, int]:
    """Bytes of ``state`` (built for ``m`` clients) by part, its per-client tensors scaled to
    ``scale`` clients."""
    out = dict.fromkeys(_PARTS, 0)
    for name, t in state.tensors().items():
        part = ("parameters" if name == "x" else "optimizer" if name == "momentum"
                else "algorithm")
        b = t.numel() * t.element_size()
        per_client = t.dim() > 0 and t.shape[0] == m
        out[part] += (b // m) * scale if per_client and scale != m else b
    return out


def _on_meta(algorithm: Any, layout: ParamLayout, dtype: torch.dtype, n: int
             ) -> dict[str, int] | None:
    """:func:`state_bytes` of ``n`` clients built on the ``meta`` device (under
    :class:`_ShapesOnly`), ``None`` when the algorithm's ``init`` needs real numbers."""
    meta = torch.device("meta")
    try:
        with _ShapesOnly():
            ctx = toy_services(n, layout=layout, dtype=dtype,
                               train_sizes=torch.ones(n, dtype=torch.int64, device=meta))
            return _count(algorithm.init(torch.zeros(n, layout.num_params, dtype=dtype,
                                                     device=meta), ctx), n, n)
    except Exception:  # noqa: BLE001 - an init that needs real numbers: the CPU below
        return None


def _broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The broadcast of ``shapes`` (torch's rule), a ``RuntimeError`` when they do not
    broadcast; in plain Python (:func:`torch.broadcast_shapes` imports sympy)."""
    out: list[int] = []
    for dims in itertools.zip_longest(*(s[::-1] for s in shapes), fillvalue=1):
        sizes = {int(d) for d in dims if d != 1}
        if len(sizes) > 1:
            raise RuntimeError(f"shapes {list(shapes)} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out[::-1])


#: ``torch.*_like`` factories: on a contiguous ``meta`` tensor, ``preserve_format`` asks for
#: the strides ``contiguous_format`` gives, without the elementwise stride rule of torch's
#: Python meta kernel
_LIKE = frozenset({torch.empty_like, torch.zeros_like, torch.ones_like, torch.full_like,
                   torch.rand_like, torch.randn_like})
#: In-place elementwise methods (``self`` keeps its shape, dtype and strides) and
#: out-of-place binary ones (a new tensor of the broadcast shape and the promoted dtype, bool
#: for the comparisons)
_INPLACE = frozenset(getattr(torch.Tensor, f"{op}_") for op in (
    "add", "sub", "mul", "div", "clamp", "clamp_min", "clamp_max", "lerp", "pow"))
_BINARY = {getattr(torch.Tensor, op): op in ("gt", "ge", "lt", "le", "eq", "ne")
           for op in ("add", "sub", "mul", "div", "gt", "ge", "lt", "le", "eq", "ne")}
_TRUE_DIV = frozenset({torch.Tensor.div, torch.Tensor.div_})
_SUB = frozenset({torch.Tensor.sub, torch.Tensor.sub_})
#: ``all()`` and ``any()`` of a whole tensor: a ``bool`` scalar
_ALL = frozenset({torch.Tensor.all, torch.Tensor.any, torch.all, torch.any})


class _ShapesOnly(TorchFunctionMode):
    """The state count's shapes on the ``meta`` device without torch's Python meta kernels
    for the few operations an ``init`` uses: those kernels first import
    ``torch.fx.experimental.symbolic_shapes`` (and sympy: 36 MB resident, 0.5 CPU s) and
    their type-promotion wrapper ``torch._dynamo`` (38 MB more, 1.3 CPU s), into the run's
    process, where nothing else needs them (measured on two cores, torch 2.13, 2026-11-28).

    On ``meta`` tensors only (a ``meta`` tensor has a shape, a dtype and strides, no values):
    a ``*_like`` factory of a contiguous tensor asks for ``contiguous_format``; an in-place
    elementwise method checks that its tensor operands broadcast to ``self`` and that their
    promoted dtype casts to ``self``'s (as on the CPU, where the meta kernel lets any cast
    pass), and returns ``self``; an out-of-place binary one returns an empty tensor of the
    broadcast shape and the promoted dtype (``bool`` for a comparison, the default float
    dtype for a true division of integers); ``all()`` or ``any()`` of the whole
    tensor an empty ``bool`` scalar. Every other call, and any call with ``out=``, goes to
    torch as it is.

    Examples
    --------
    >>> x = torch.zeros(3, 4, device="meta")
    >>> with _ShapesOnly():
    ...     z = torch.empty_like(x)
    ...     same = z.div_(torch.ones(3, 1, device="meta")) is z
    ...     c = x > 0
    >>> tuple(z.shape), z.stride(), same, c.dtype, tuple(c.shape)
    ((3, 4), (4, 1), True, torch.bool, (3, 4))
    """

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        a = args[0] if args else None
        if isinstance(a, torch.Tensor) and a.is_meta and "out" not in kwargs:
            if func in _LIKE:
                if (kwargs.get("memory_format", torch.preserve_format) == torch.preserve_format
                        and a.is_contiguous()):
                    kwargs = {**kwargs, "memory_format": torch.contiguous_format}
            elif func in _ALL:
                if len(args) == 1 and not kwargs:
                    return torch.empty((), dtype=torch.bool, device=a.device)
            elif func in _INPLACE or func in _BINARY:
                other = args[1] if len(args) > 1 else kwargs.get("other")
                others = [t for t in (*args[1:], *kwargs.values()) if isinstance(t, torch.Tensor)]
                if other is not None and all(t.is_meta for t in others):
                    shape = _broadcast(tuple(a.shape), *(tuple(t.shape) for t in others))
                    dt = torch.result_type(a, other)
                    if (func in _TRUE_DIV and kwargs.get("rounding_mode") is None
                            and not (dt.is_floating_point or dt.is_complex)):
                        dt = torch.get_default_dtype()  # true division of integers
                    if dt == torch.bool and func in _SUB:
                        return func(*args, **kwargs)  # torch's error: no bool subtraction
                    if func in _INPLACE:
                        if shape != tuple(a.shape) or not torch.can_cast(dt, a.dtype):
                            raise RuntimeError(
                                f"{func.__name__}: operands of shapes "
                                f"{[tuple(t.shape) for t in others]} and dtype {dt} do not "
                                f"fit self's {tuple(a.shape)}, {a.dtype}")
                        return a
                    dt = torch.bool if _BINARY[func] else dt
                    return torch.empty(shape, dtype=dt, device=a.device)
        return func(*args, **kwargs)


def _polynomial(algorithm: Any, layout: ParamLayout, dtype: torch.dtype
                ) -> dict[str, tuple[int, int, int]] | None:
    """Each part's state at :data:`FIT_SIZES`'s first size and its first two forward
    differences, ``None`` when the state cannot be built there on the ``meta`` device or the
    fourth size is off the polynomial of the first three."""
    key = (id(algorithm), layout, dtype)
    if key in _FITS and _FITS[key][0] is algorithm:
        return _FITS[key][1]  # type: ignore[no-any-return]
    built = [_on_meta(algorithm, layout, dtype, m) for m in FIT_SIZES]
    out: dict[str, tuple[int, int, int]] | None = {}
    for part in _PARTS:
        if out is None or any(x is None for x in built):
            out = None
            break
        b = [int(x[part]) for x in built if x is not None]
        d1, d2 = b[1] - b[0], b[2] - 2 * b[1] + b[0]
        if b[0] + 3 * d1 + 3 * d2 != b[3]:  # neither linear nor quadratic in the clients
            out = None
            break
        out[part] = (b[0], d1, d2)
    if len(_FITS) >= 8:
        _FITS.pop(next(iter(_FITS)))
    _FITS[key] = (algorithm, out)
    return out


def _fitted(algorithm: Any, layout: ParamLayout, dtype: torch.dtype, n: int
            ) -> dict[str, int] | None:
    """:func:`state_bytes` of ``n`` clients from :func:`_polynomial` (Newton's forward
    differences), ``None`` when there is none."""
    poly = _polynomial(algorithm, layout, dtype)
    if poly is None:
        return None
    k = Fraction(n - FIT_SIZES[0], FIT_SIZES[1] - FIT_SIZES[0])
    return {part: max(0, math.ceil(b0 + k * d1 + k * (k - 1) / 2 * d2))
            for part, (b0, d1, d2) in poly.items()}


def state_bytes(algorithm: Any, layout: ParamLayout, dtype: torch.dtype, n: int
                 ) -> dict[str, int]:
    """Bytes of the state ``algorithm.init`` builds for ``n`` clients, by part.

    Built on the ``meta`` device (shapes without memory: exact at any ``n``; above
    :data:`FIT_ABOVE` clients from its sizes at :data:`FIT_SIZES`, in time and memory that
    do not grow with ``n``); an algorithm whose ``init`` needs real tensors is built on the
    CPU for the fewest clients it accepts (2, 4, ... up to 64: Teleportation needs
    ``n >= k``) and its per-client tensors scaled to ``n``; one whose ``init`` needs the
    run's data even then is counted as the parameters and one momentum buffer.

    Examples
    --------
    >>> from topofl.engine import ParamLayout
    >>> from topofl.models import build_model
    >>> layout = ParamLayout.from_model(build_model("logistic", (1, 8, 8), 10, seed=0))
    >>> state_bytes(tf.algorithms.dsgd(), layout, torch.float32, 10**9)  # 650 x 4 bytes each
    {'parameters': 2600000000000, 'optimizer': 0, 'algorithm': 0}
    """
    if n > FIT_ABOVE:
        fitted = _fitted(algorithm, layout, dtype, n)
        if fitted is not None:
            return fitted
    exact = _on_meta(algorithm, layout, dtype, n)
    if exact is not None:
        return exact
    m, last = min(n, 2), None
    while True:
        ctx = toy_services(m, layout=layout, dtype=dtype,
                           train_sizes=torch.ones(m, dtype=torch.int64))
        try:
            return _count(algorithm.init(torch.zeros(m, layout.num_params, dtype=dtype), ctx),
                          m, n)
        except ValueError as exc:  # too few clients for it (teleport: k > n)
            last = exc
        if m >= min(n, 64):
            break
        m = min(n, 64, 2 * m)
    # an init that needs the run's own data or graph (DPFL's label-flipping clients ...):
    # count the state every algorithm holds, the parameters and one momentum buffer, an
    # estimate on the low side, so that the check never refuses such a run that fits
    del last
    row = layout.num_params * torch.empty((), dtype=dtype).element_size()
    return {"parameters": n * row, "optimizer": n * row, "algorithm": 0}


def state_parts(algorithm: Any, layout: ParamLayout, dtype: torch.dtype) -> dict[str, int]:
    """Bytes per client of the state ``algorithm.init`` builds, by part (for 64 clients)."""
    return {k: v // 64 for k, v in state_bytes(algorithm, layout, dtype, 64).items()}


def activation_bytes(model: torch.nn.Module, input_shape: tuple[int, ...]) -> int:
    """Bytes of the outputs of every leaf module of ``model`` for one sample (a forward pass
    on one zero sample in eval mode, without gradients; views such as ``Flatten`` left out):
    what a forward pass holds per sample, at most. ``0`` when the forward pass fails.

    Examples
    --------
    >>> from topofl.models import build_model
    >>> activation_bytes(build_model("mlp", (64,), 10, seed=0), (64,))  # 4 x (200+200+200+200+10)
    3240
    """
    seen = _ACTIVATIONS.setdefault(model, {})  # a run's two checks: one forward pass
    if tuple(input_shape) not in seen:
        seen[tuple(input_shape)] = _activation_bytes(model, tuple(input_shape))
    return seen[tuple(input_shape)]


_ACTIVATIONS: weakref.WeakKeyDictionary[torch.nn.Module, dict[tuple[int, ...], int]] = (
    weakref.WeakKeyDictionary())


def _activation_bytes(model: torch.nn.Module, input_shape: tuple[int, ...]) -> int:
    total = 0

    def hook(module: torch.nn.Module, args: Any, out: Any) -> None:
        nonlocal total
        if isinstance(out, torch.Tensor) and not isinstance(
                module, (torch.nn.Flatten, torch.nn.Identity, torch.nn.Unflatten)):
            total += out.numel() * out.element_size()

    leaves = [m for m in model.modules() if not list(m.children())]
    handles = [m.register_forward_hook(hook) for m in leaves]
    first = next(iter(model.parameters()), None)
    was = model.training
    try:
        model.eval()
        x = torch.zeros((1, *input_shape),
                        dtype=first.dtype if first is not None else torch.float32,
                        device=first.device if first is not None else "cpu")
        with torch.no_grad():
            model(x)
    except Exception:  # noqa: BLE001 - a model we cannot run on a zero sample: not counted
        total = 0
    finally:
        model.train(was)
        for h in handles:
            h.remove()
    return total


def _dataset_bytes(ds: Any) -> int:
    return sum(int(a.nbytes) for a in (ds.x_train, ds.y_train, ds.x_test, ds.y_test)
               if a is not None)


def _executor_kind(run: Any, model: torch.nn.Module) -> str:
    """``"batched"`` or ``"loop"``: what :func:`topofl.engine.executors.make_executor` builds."""
    if run.executor != "auto":
        return str(run.executor)
    return "loop" if torch.device(run.device).type == "cpu" and loop_on_cpu(model) else "batched"


def run_shapes(prepared: Any, *, model: torch.nn.Module, dataset: Any = None,
               data: FederatedData | None = None, topology: Any = None) -> Shapes:
    """The :class:`Shapes` of a checked run (:class:`topofl.api.Prepared`) with its model built.

    With ``data`` (the :class:`~topofl.data.FederatedData` built) and ``topology`` (the graph
    built, for an algorithm that uses one) the shapes are the run's. Before them, from the
    ``dataset`` (a :class:`~topofl.data.Dataset`, not yet split), the parts that depend on the
    split are at their least: every training sample and the global test set held once, no
    local test or validation split, a mixing matrix with one non-zero a row. A run whose
    estimate from these exceeds the memory cannot fit whatever the split.
    """
    run, algorithm = prepared.run, prepared.algorithm
    n = int(data.num_clients) if data is not None else int(prepared.call["n_clients"])
    dtype = DTYPES[run.dtype]
    layout = ParamLayout.from_model(model)
    src = data if data is not None else dataset
    input_shape = tuple(int(v) for v in src.input_shape)
    sample_bytes = 4 * int(np.prod(input_shape))
    classes = int(src.num_classes)
    kind = _executor_kind(run, model)
    stand_in = SimpleNamespace(fuses_sgd=kind == "batched", streams=kind == "batched")
    local = algorithm.local
    fused_of = getattr(local, "fused", None)
    fused = bool(run.fuse and fused_of is not None and fused_of(stand_in) is not None)
    rowwise = bool(getattr(local, "rowwise", False))
    # a local update that moves few rows (LocalUpdate.moving: Teleportation): every row's
    # forward pass without a graph, the gradients of a few rows
    moving = bool(not fused and not rowwise and getattr(local, "moving", None) is not None)
    if data is not None:
        n_global = int(data.global_test[0].shape[0])
        sizes = {k: data.sizes(k) for k in ("train", "val", "test")}
        samples = int(sum(int(v.sum()) for v in sizes.values())) + n_global
        longest_test = int(sizes["test"].max(initial=0))
        longest_val = int(sizes["val"].max(initial=0))
        data_bytes = _data_bytes(data)
    else:
        n_global = 0 if dataset.y_test is None else int(dataset.y_test.size)
        samples = int(dataset.y_train.size) + n_global
        longest_test = longest_val = 0
        data_bytes = samples * (sample_bytes + 8)
    nnz, w_row, band = 0.0, 0.0, False
    if algorithm.uses_topology and prepared.call["topology"] is not None:
        nnz = _row_nnz_of(topology) if topology is not None else 1.0
        if topology is not None:
            W = topology.W if hasattr(topology, "W") else topology.at(0).W
            if hasattr(W, "indptr"):
                w_row = (W.data.nbytes + W.indices.nbytes + W.indptr.nbytes) / W.shape[0]
                band = band_plan(W) is not None
    spectral = bool(run.spectral and nnz) and (
        topology is None or isinstance(topology, Topology)
        or getattr(topology, "period", None) == 1)
    every = 1  # "auto" before the data (at most as many evaluations as the run's)
    if data is not None:
        every = int(resolve_eval_every(run, data, algorithm, n=n).eval_every)
    elif run.eval_every != "auto":
        every = int(run.eval_every)
    rounds = int(run.rounds)
    evaluations = rounds // every + (1 if rounds % every else 0)
    rows_per_eval = 0
    if run.record_clients and run.records_path is None:  # a file: written, not held
        rows_per_eval = 1 + (2 if run.ledger else 0) + (2 if run.eval_val else 0)
    return Shapes(
        n=n, num_params=layout.num_params, dtype_bytes=dtype.itemsize,
        sample_bytes=sample_bytes, num_classes=classes, batch_size=int(run.batch_size),
        input_shape=input_shape,
        per_client_state={k: -(-v // n) for k, v in
                          state_bytes(algorithm, layout, dtype, n).items()},
        dataset_bytes=_dataset_bytes(dataset) if dataset is not None else 0,
        data_bytes=data_bytes, longest_test=longest_test, w_row_nnz=nnz,
        activation_bytes=activation_bytes(model, input_shape), fused=fused, moving=moving,
        streams=rowwise and kind == "batched", stream_rows=run.stream_rows,
        loop_threads=(torch.get_num_threads() if kind == "loop" else 0),
        global_test=n_global if run.eval_global else 0,
        eval_global_samples=run.eval_global_samples,
        longest_val=longest_val if run.eval_val else 0, samples=samples,
        evaluations=evaluations, client_rows=rows_per_eval, rounds=rounds, spectral=spectral,
        shared_params=_span(layout.cols(algorithm.shared)), w_row_bytes=w_row,
        load_bytes=_load_bytes(prepared.call["data"], dataset),
        device=str(torch.device(run.device)), predicts=algorithm.predict is not None,
        runtime=True, band=band)


def _load_bytes(name: Any, dataset: Any) -> int:
    """The peak of loading ``dataset`` from the name ``name``: ``synthetic`` keeps float32
    features and draws a block of samples at a time in float64
    (:func:`~topofl.data.datasets.bundled.synthetic_bytes`, what its loader checks for), the
    other loaders hold their arrays and one temporary copy; 0 for a dataset given as an
    object."""
    if dataset is None or not isinstance(name, str):
        return 0
    if name.partition(":")[0] == "synthetic":
        samples = int(dataset.y_train.size) + int(dataset.y_test.size)
        return synthetic_bytes(samples, int(np.prod(dataset.input_shape)))
    return 2 * _dataset_bytes(dataset)


def _span(cols: slice) -> int:
    return int(cols.stop) - int(cols.start)


def _row_nnz_of(topology: Any) -> float:
    """Non-zeros per row of a topology's mixing matrix (a time-varying one: its first
    round's)."""
    W = topology.W if hasattr(topology, "W") else topology.at(0).W
    nnz = W.nnz if hasattr(W, "nnz") else int(np.count_nonzero(np.asarray(W)))
    return float(nnz) / max(1, int(W.shape[0]))


def _data_bytes(data: FederatedData) -> int:
    return int(data.x.numel() * data.x.element_size() + data.y.numel() * data.y.element_size())
