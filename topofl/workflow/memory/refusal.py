"""The refusal of a run that cannot fit: the static estimate of its peak
(:func:`estimate`), the largest number of clients that fits (:func:`max_clients`,
:func:`largest_n`), and the checks (:func:`check_run`, :func:`check_stack`,
:func:`check_before_load`, :func:`check_batch_memory`, :func:`check_fits`) that raise
:class:`~topofl.exceptions.InsufficientMemoryError` naming the estimate, the limit and where
it comes from, and the largest ``n`` that fits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from topofl._utils.spec import parse_spec
from topofl._utils.validation import (
    MEMORY_LIMIT_ENV,
    check_memory,
    fmt_bytes,
    memory_limit,
)
from topofl.data.datasets.bundled import synthetic_shape
from topofl.data.federated import FederatedData
from topofl.engine import ParamLayout
from topofl.engine.config import DTYPES
from topofl.exceptions import InsufficientMemoryError
from topofl.models import build_model
from topofl.records.writer import SPILL_BYTES
from topofl.workflow.memory.parts import (
    PARTS,
    RUNTIME_BYTES,
    _block_rows,
    _data_held,
    counted_parts,
)
from topofl.workflow.memory.shapes import Shapes, _span, run_shapes, state_bytes

__all__ = ["estimate", "max_clients", "largest_n", "ways_to_fit", "check_fits", "check_run",
           "check_stack",
           "check_before_load", "check_batch_memory", "DEVICE_PARTS"]


def _peak(s: Shapes, n: int, runtime: tuple[float, float] | None) -> float:
    """The predicted peak at ``n`` clients: the counted parts, and the runtime part (the
    static one of ``s`` when ``runtime`` is ``None``, else ``constant + slope * n``)."""
    if runtime is None:
        return float(sum(counted_parts(s, n).values()))
    return (sum(counted_parts(replace(s, runtime=False), n).values())
            + runtime[0] + runtime[1] * n)


def max_clients(s: Shapes, available: int | None,
                runtime: tuple[float, float] | None = None) -> int | None:
    """The largest ``n`` whose predicted peak (:func:`_peak`) fits in ``available`` bytes
    (bisection on the monotone prediction); ``None`` when ``available`` is unknown, ``0``
    when not even one client fits.

    Examples
    --------
    >>> s = Shapes(n=100, num_params=1000, dtype_bytes=4, sample_bytes=0, num_classes=10,
    ...            batch_size=1, input_shape=(1,), per_client_state={"parameters": 4000,
    ...            "optimizer": 0, "algorithm": 0}, dataset_bytes=0, data_bytes=0,
    ...            longest_test=0, w_row_nnz=0.0)
    >>> parts = counted_parts(s, 1)  # a client: x, its gradient row, its label counts and
    >>> parts["parameters"], parts["gradients"], parts["data"]  # offsets, and the check and
    (4000, 4016, 288)
    >>> parts["evaluation"]  # consensus distance of the evaluation: 2 x 4000 bytes
    8000
    >>> max_clients(s, 10**6)  # 16,304 bytes a client
    61
    """
    return largest_n(lambda n: _peak(s, n, runtime), available)


def largest_n(peak: Callable[[int], float], available: int | None) -> int | None:
    """The largest ``n`` with ``peak(n) <= available`` for a non-decreasing ``peak``
    (doubling, then bisection); ``None`` when ``available`` is unknown, ``0`` when
    ``peak(1)`` exceeds it."""
    if available is None:
        return None
    if peak(1) > available:
        return 0
    lo, hi = 1, 2
    while peak(hi) <= available and hi < 1 << 40:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if peak(mid) <= available else (lo, mid)
    return lo


def _refusal(n: int, need: float, have: int, what: str, fits: int | None = None,
             ways: str = "") -> str:
    tail = "" if fits is None else f"; the largest n that fits is {fits:,}"
    return (f"{n} clients do not fit: {what} needs {fmt_bytes(need)} ({int(need):,} bytes), "
            f"{fmt_bytes(have)} ({have:,} bytes) available{tail}{ways}")


def ways_to_fit(s: Shapes, parts: Mapping[str, int], need: float, limit: int) -> str:
    """The settings that would make a refused run fit at its own ``n``, as the end of its
    refusal (``""`` when none does): the per-client rows a run without a records file keeps
    grow with the evaluations up to :data:`~topofl.records.writer.SPILL_BYTES`, so a
    ``records_path`` (they go to its client file),
    ``record_clients=False`` (without them), a larger ``eval_every`` (the
    smallest that fits) or fewer ``rounds`` (the most that fit at this ``eval_every``), each
    named only where the estimate less what it saves fits in ``limit``.

    Examples
    --------
    100 evaluations of 10^5 clients' rows (24 MB) where 16 MB more fit:

    >>> s = Shapes(n=10**5, num_params=650, dtype_bytes=4, sample_bytes=256, num_classes=10,
    ...            batch_size=16, input_shape=(1, 8, 8), per_client_state={"parameters": 2600,
    ...            "optimizer": 0, "algorithm": 0}, dataset_bytes=0, data_bytes=0,
    ...            longest_test=4, w_row_nnz=3.0, evaluations=100, client_rows=3,
    ...            rounds=100)
    >>> parts = {"parameters": 4 * 10**8, "records": 24 * 10**6}
    >>> print(ways_to_fit(s, parts, 424 * 10**6, 416 * 10**6))
    ; it fits with a records_path (the per-client rows of the records, 22.9 MiB, are written to its client file, not kept), with record_clients=False (they are not recorded), with eval_every=2 (50 evaluations keep 11.4 MiB of per-client rows) or with rounds=66 at eval_every=1
    >>> ways_to_fit(s, parts, 424 * 10**6, 3 * 10**8)  # the rest alone does not fit
    ''
    """  # noqa: E501
    records = int(parts.get("records", 0))
    rest = need - records
    if records <= 0 or rest > limit or s.evaluations < 1:
        return ""
    ways = ["a records_path (the per-client rows of the records, "
            f"{fmt_bytes(records)}, are written to its client file, not kept)",
            "record_clients=False (they are not recorded)"]
    per_eval = records / s.evaluations
    keep = int((limit - rest) // per_eval) if per_eval > 0 else s.evaluations
    # held at SPILL_BYTES (the rest spilled to a temporary file): fewer evaluations hold the
    # same until they are under it
    if 1 <= keep < s.evaluations and s.rounds > 0 and records < SPILL_BYTES:
        every = -(-s.rounds // keep)
        evals = -(-s.rounds // every)
        ways.append(f"eval_every={every:,} ({evals:,} evaluations keep "
                    f"{fmt_bytes(evals * per_eval)} of per-client rows)")
        cur = -(-s.rounds // s.evaluations)  # the run's eval_every, as its evaluations say
        if cur * keep < s.rounds:
            ways.append(f"rounds={cur * keep:,} at eval_every={cur:,}")
    return "; it fits with " + (", with ".join(ways[:-1]) + " or with " + ways[-1]
                                if len(ways) > 1 else ways[0])


#: The parts that live on the run's device (the rest, on the host: the dataset's arrays, the
#: records, the spectral summary, the interpreter): on a GPU each side is held to its limit.
DEVICE_PARTS = ("parameters", "optimizer", "algorithm", "gossip", "gradients", "evaluation")


def estimate(prepared: Any, *, model: torch.nn.Module, dataset: Any = None,
             data: FederatedData | None = None, topology: Any = None) -> tuple[Shapes,
                                                                               dict[str, int]]:
    """The static estimate of a checked run's peak memory: its
    :func:`~topofl.workflow.memory.run_shapes` and their
    :func:`~topofl.workflow.memory.counted_parts` (with the runtime part), without running
    anything.

    Examples
    --------
    >>> p = tf.api.prepare("dsgd", "ring", n_clients=10, rounds=2, spectral=False)
    >>> ds = tf.data.load("digits")
    >>> model = tf.models.build_model("logistic", ds.input_shape, ds.num_classes, seed=0)
    >>> s, parts = estimate(p, model=model, dataset=ds)
    >>> parts["parameters"] == 10 * 650 * 4, list(parts) == list(PARTS)
    (True, True)
    """
    s = run_shapes(prepared, model=model, dataset=dataset, data=data, topology=topology)
    return s, counted_parts(s)


def _limits(device: str, parts: Mapping[str, int]) -> list[tuple[int, int, str, str]]:
    """``(need, limit, source, where)`` for each memory the run draws on (the CPU; and its
    GPU's, for the parts on it)."""
    cpu, cpu_from = memory_limit("cpu")
    if device.startswith("cpu"):
        return [] if cpu is None else [(sum(parts.values()), cpu, cpu_from, "")]
    out = []
    dev, dev_from = memory_limit(device)
    on_dev = sum(v for k, v in parts.items() if k in DEVICE_PARTS)
    if dev is not None:
        out.append((on_dev, dev, dev_from, f" on {device}"))
    if cpu is not None:
        out.append((sum(parts.values()) - on_dev, cpu, cpu_from, " on the host"))
    return out


def check_fits(what: str, s: Shapes, parts: Mapping[str, int], *, lower: bool = False,
               peak: Callable[[int], float] | None = None, resident: int = 0,
               before: str = "its data is split") -> None:
    """Raise :class:`~topofl.exceptions.InsufficientMemoryError` when ``parts`` (the estimate
    of ``what`` with ``s.n`` clients) exceed the memory the process may use
    (:func:`~topofl._utils.validation.memory_limit`); ``lower``: the estimate is a lower bound (made
    before the data is split). ``peak(n)``, the estimate at ``n`` clients, gives the largest
    ``n`` that fits (default :func:`~topofl.workflow.memory.counted_parts`'s sum).
    ``resident``: bytes of ``parts`` already allocated, left out when the limit is what the
    machine reports left (not when
    :data:`~topofl._utils.validation.MEMORY_LIMIT_ENV` sets it).

    Examples
    --------
    >>> import os
    >>> os.environ["TOPOFL_MEMORY_LIMIT"] = "1000000"
    >>> s = Shapes(n=100, num_params=650, dtype_bytes=4, sample_bytes=256, num_classes=10,
    ...            batch_size=16, input_shape=(1, 8, 8), per_client_state={"parameters": 2600,
    ...            "optimizer": 0, "algorithm": 0}, dataset_bytes=0, data_bytes=0,
    ...            longest_test=4, w_row_nnz=3.0)
    >>> check_fits("the run", s, counted_parts(s))  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    topofl.exceptions.InsufficientMemoryError: 100 clients do not fit: the run needs about 1.69
    MiB (1,772,812 bytes; gradients 695,200 (batch_size=16), evaluation 520,000, gossip 268,812,
    ...) by
    topofl's estimate (topofl.workflow.plan), but TOPOFL_MEMORY_LIMIT leaves 977 KiB (1,000,000
    bytes); the largest n that fits is 56 (TOPOFL_MEMORY_LIMIT=BYTES sets the limit)
    >>> del os.environ["TOPOFL_MEMORY_LIMIT"]
    """
    for need, limit, source, where in _limits(s.device, parts):
        if source != MEMORY_LIMIT_ENV and not where:
            need -= resident
        if need <= limit:
            continue
        top = sorted(((v, k) for k, v in parts.items() if v), reverse=True)[:3]
        # the local step's part grows with the batch: name the setting that sets it
        biggest = ", ".join(f"{k} {v:,}" + (f" (batch_size={s.batch_size:,})"
                                             if k == "gradients" and i == 0 else "")
                            for i, (v, k) in enumerate(top))
        if len(top) < sum(1 for v in parts.values() if v):
            biggest += ", ..."
        fits = None
        if not where:
            more = resident if source != MEMORY_LIMIT_ENV else 0
            fits = (max_clients(s, limit + more) if peak is None
                    else largest_n(peak, limit + more))
        tail = "" if fits is None else (
            "; not even one client fits" if fits == 0 else
            f"; the largest n that fits is {fits:,}")
        ways = "" if where else ways_to_fit(s, parts, need, limit)
        raise InsufficientMemoryError(
            f"{s.n:,} clients do not fit: {what} needs {'at least ' if lower else ''}about "
            f"{fmt_bytes(need)}{where} ({need:,} bytes; {biggest}) by topofl's estimate "
            f"(topofl.workflow.plan{', before ' + before if lower else ''}), but {source} "
            f"leaves {fmt_bytes(limit)} ({limit:,} bytes){tail}{ways} "
            f"({MEMORY_LIMIT_ENV}=BYTES sets the limit)",
            need=need, limit=limit, max_clients=fits)


def check_run(prepared: Any, *, model: torch.nn.Module, dataset: Any = None,
              data: FederatedData | None = None, topology: Any = None) -> Shapes | None:
    """Refuse a run (:func:`topofl.api.build` calls it twice: before it splits the data, from
    the ``dataset``, and once its ``data``, ``topology`` and ``model`` are built, before the
    engine allocates the clients) whose estimate exceeds the memory the process may use.

    Before the split, the dataset is loaded already: the estimate counts the data the split
    adds, not the loading. Once the data is built, the memory the machine reports left
    already holds it, and the estimate less the data is what must fit (a limit set by
    ``TOPOFL_MEMORY_LIMIT`` is the whole run's: the data stays in). Returns the run's
    :class:`~topofl.workflow.memory.Shapes` (``None`` before the split of a ``natural``
    partition, whose number of clients the split decides); raises
    :class:`~topofl.exceptions.InsufficientMemoryError`.
    """
    if data is None and prepared.call["n_clients"] is None:  # natural: n known once split
        return None
    s, parts = estimate(prepared, model=model, dataset=dataset, data=data, topology=topology)
    held = _data_held(s, s.n)
    if data is None:  # the dataset is loaded: what splitting it adds is to come
        parts = {**parts, "data": held}
    check_fits("the run", s, parts, lower=data is None,
               resident=held if data is not None else 0)
    return s


def check_stack(shapes_of: Sequence[Shapes]) -> None:
    """Refuse a stack of runs (:func:`topofl.api.launch_stacked`) whose runs together cannot
    fit: each run's estimate, its local step over all its clients at once (a stack does not
    stream), the initial parameters copied into the stack's buffer, and one interpreter.
    """
    if len(shapes_of) < 2:
        return
    total: dict[str, int] = {}
    for s in shapes_of:
        for k, v in counted_parts(replace(s, streams=False, stream_rows=None)).items():
            total[k] = total.get(k, 0) + v
        total["parameters"] += s.n * s.per_client_state["parameters"]  # the stack's copy
    total["runtime"] -= (len(shapes_of) - 1) * RUNTIME_BYTES
    held = sum(_data_held(s, s.n) for s in shapes_of)  # built: resident already
    n = sum(s.n for s in shapes_of)
    for need, limit, source, where in _limits(shapes_of[0].device, total):
        if source != MEMORY_LIMIT_ENV and not where:
            need -= held
        if need > limit:
            raise InsufficientMemoryError(
                f"a stack of {len(shapes_of)} runs ({n:,} clients) does not fit: it needs "
                f"about {fmt_bytes(need)}{where} ({need:,} bytes) by topofl's estimate "
                f"(topofl.workflow.plan), but {source} leaves {fmt_bytes(limit)} "
                f"({limit:,} bytes): run them one by one (a sweep's --stack off) or fewer at once "
                f"({MEMORY_LIMIT_ENV}=BYTES sets the limit)", need=need, limit=limit)


def _synthetic_shapes(name: str) -> tuple[tuple[int, ...], int] | None:
    """``(input_shape, num_classes)`` of a ``"synthetic:..."`` spec, read from its options
    without drawing it; ``None`` for any other dataset (or options it does not read)."""
    base, _, rest = name.partition(":")
    if base != "synthetic":
        return None
    try:
        _, opts = parse_spec(name, "dataset") if rest else (base, {})
        dims = synthetic_shape(opts.get("shape"))
        shape = dims if dims is not None else (int(opts.get("dim", 16)),)
        return shape, int(opts.get("num_classes", 10))
    except (TypeError, ValueError):  # the loader says what is wrong, when it runs
        return None


def check_before_load(prepared: Any) -> None:
    """Refuse, before its dataset is even loaded, a run whose state alone (the
    :func:`~topofl.workflow.memory.state_bytes` of its ``n`` clients, and the two temporaries
    of the consensus distance over one block of rows) cannot fit: for a dataset whose shapes
    its name gives
    (``"synthetic:dim=...,num_classes=..."``) and a model given by name.
    """
    call, run = prepared.call, prepared.run
    if not (isinstance(call["data"], str) and isinstance(call["model"], str)
            and call["n_clients"] is not None):
        return
    known = _synthetic_shapes(call["data"])
    if known is None:
        return
    shape, classes = known
    model = build_model(call["model"], shape, classes, seed=run.seed,
                        **dict(call["model_params"] or {}))
    layout = ParamLayout.from_model(model)
    n = int(call["n_clients"])
    dtype = DTYPES[run.dtype]
    state = state_bytes(prepared.algorithm, layout, dtype, n)
    s = Shapes(n=n, num_params=layout.num_params, dtype_bytes=dtype.itemsize,
               sample_bytes=4 * int(np.prod(shape)), num_classes=classes,
               batch_size=int(run.batch_size), input_shape=shape,
               per_client_state={k: -(-v // n) for k, v in state.items()}, dataset_bytes=0,
               data_bytes=0, longest_test=0, w_row_nnz=0.0, streams=True,
               device=str(torch.device(run.device)), runtime=True)
    shared = _span(layout.cols(prepared.algorithm.shared))

    def distance(k: int) -> int:  # the consensus distance's temporaries (one block of rows)
        return 2 * _block_rows(k, shared) * shared * dtype.itemsize

    parts = {**{k: 0 for k in PARTS}, **state, "evaluation": distance(n),
             "runtime": RUNTIME_BYTES}

    def peak(k: int) -> float:
        return float(sum(state_bytes(prepared.algorithm, layout, dtype, k).values())
                     + distance(k) + RUNTIME_BYTES)

    check_fits("the run", s, parts, lower=True, peak=peak, before="its dataset is loaded")


def check_batch_memory(batch_size: Any, data: Any) -> None:
    """Refuse a ``batch_size`` whose float32 inputs alone, for one client, cannot fit (a lower
    bound of what the run needs: the engine holds at least one client's batch)."""
    if isinstance(batch_size, int) and not isinstance(batch_size, bool) and batch_size > 0:
        per_sample = 4 * int(np.prod(data.input_shape))
        check_memory(float(batch_size) * per_sample,
                     f"batch_size={batch_size} (samples of shape {tuple(data.input_shape)})")
