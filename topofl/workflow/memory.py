"""The memory model: what a run allocates, by part, and the refusal of a run that cannot fit.

``topofl.run`` (:func:`topofl.api.prepare`'s checks), sweeps, stacks, ``topofl bench`` and the
planner (:mod:`topofl.workflow.plan`) share it; it imports neither the front door nor the planner,
so that the front door can call it:

* **counted parts** (bytes, :func:`counted_parts` of the run's :func:`run_shapes`): the state
  ``algorithm.init`` builds for the run's ``n`` clients, counted on the ``meta`` device
  (``parameters``: the flat ``[n, P]`` buffer :attr:`State.x <topofl.engine.State.x>`;
  ``optimizer``: the momentum buffers; ``algorithm``: the algorithm's own record and push-sum
  weights), ``gossip`` (the topology's ``W``, the mixer's copy and scratch tile),
  ``gradients`` (the local step's buffers and temporaries: one streamed block of clients,
  :func:`topofl.engine.local.stream_rows`), ``data`` (every client's samples in one tensor,
  :class:`~topofl.data.FederatedData`, their indices; the dataset's loading and splitting
  when that is the larger peak), ``evaluation`` (its largest pass, or the consensus
  distance's two temporaries of a block of rows), ``spectral`` (the summary of a static graph) and
  ``records`` (the per-client rows kept in memory);
* **runtime**: :data:`RUNTIME_BYTES` and :data:`CLIENT_BYTES` a client (the planner measures
  it instead, :func:`topofl.workflow.plan.make_plan`).

The refusal (:func:`check_run`, :func:`check_stack`, :func:`check_before_load`,
:func:`check_fits`) raises :class:`~topofl.exceptions.InsufficientMemoryError`, a
``ValueError`` naming the estimate, the limit and where it comes from, and the largest ``n``
that fits; the environment variable ``TOPOFL_MEMORY_LIMIT`` (bytes) replaces the limit.
``analysis/memory_model.md`` compares the estimate with measured peaks.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import SimpleNamespace
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
from topofl.data.assembly import GATHER_BLOCK_VALUES
from topofl.data.datasets.bundled import synthetic_bytes, synthetic_shape
from topofl.data.federated import FederatedData
from topofl.engine import ParamLayout, toy_services
from topofl.engine.config import DTYPES, global_samples
from topofl.engine.evaluation import (
    EVAL_BLOCK_BYTES,
    EVAL_BLOCK_ENTRIES,
    eval_block_rows,
    eval_chunk,
    shared_block,
)
from topofl.engine.executors import has_conv
from topofl.engine.gossip import Mixer
from topofl.engine.local import stream_rows
from topofl.exceptions import InsufficientMemoryError
from topofl.graph import Topology
from topofl.models import build_model
from topofl.spectral import DENSE_FALLBACK_MAX
from topofl.spectral.summarize import SUMMARY_DENSE_MAX as _SUMMARY_DENSE_MAX

__all__ = ["Shapes", "counted_parts", "max_clients", "run_shapes", "activation_bytes", "PARTS",
           "RUNTIME_BYTES", "CLIENT_BYTES", "ROW_BYTES", "estimate", "largest_n", "check_fits",
           "check_run", "check_stack", "check_before_load", "check_batch_memory", "transients",
           "state_bytes", "state_parts",
           "InsufficientMemoryError"]

#: The parts of a plan's peak, in the order they are reported.
PARTS = ("parameters", "optimizer", "algorithm", "gossip", "gradients", "data", "evaluation",
         "spectral", "records", "runtime")

#: The block of source rows :class:`~topofl.data.FederatedData` gathers at once while it is
#: built (its values, at most 8 bytes each).
_GATHER_BLOCK_BYTES = 8 * GATHER_BLOCK_VALUES

#: The mixer's default scratch tile (its columns hold about this many bytes).
_TILE_BYTES: int = (Mixer.__init__.__kwdefaults__ or {}).get("tile_bytes", 1 << 20)


#: Bytes the process grows by whatever the config (code imported and initialised by a run:
#: torch's kernels, scipy, the records machinery; the allocator's arenas): the measured peak
#: growth above the resident size after ``import torch, topofl`` of runs of 100
#: logistic-regression clients less their counted parts was 96 to 99 MB
#: (``analysis/memory_model.md``); rounded up.
RUNTIME_BYTES = 100 * 2**20

#: Bytes per client the process holds besides the counted parts (Python objects and small
#: arrays per client: the ledger's counters, the batch sizes, the evaluation's per-client
#: lists ...): a round figure between what the runs of 10,000 clients left unexplained and
#: what those of 100,000 left over (``analysis/memory_model.md``).
CLIENT_BYTES = 512

#: Bytes of one records row held in memory (a ``dict`` of five entries and its value):
#: measured with ``tracemalloc`` over 100,000 rows of ``Recorder.log_clients``: 220, plus the
#: pointer :meth:`Recorder.records` copies.
ROW_BYTES = 232

#: The dense spectral summary's working set, in ``n x n`` float64 matrices (up to
#: :data:`topofl.spectral.summarize.SUMMARY_DENSE_MAX` nodes; one matrix up to 4096 nodes,
#: where ARPACK falls back to dense LAPACK when it does not converge), and above that the
#: sparse one's: a fixed part and bytes per nonzero of ``W``. The peak the summary adds to a
#: process that holds the graph (``VmHWM``, 2026-11-24, Intel Xeon): ring 3.9 MB at 5,000
#: nodes, 3.5 MB at 10^4, 18 MB at 10^5, 137 MB at 10^6 (3 nonzeros a row); exponential
#: graph 14 MB at 10^4 (15 a row), 145 MB at 10^5 (18 a row); random 10-regular 8.0 MB at
#: 10^4 (11 a row): at most 96 bytes a nonzero above 4 MB. (The count was 4096 bytes a node
#: before, 4.1 GB at 10^6 nodes where a ring's summary adds 0.14 GB.)
SPECTRAL_DENSE_COPIES = 2
SPECTRAL_FIXED_BYTES = 4 * 10**6
SPECTRAL_NNZ_BYTES = 96


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
    spectral: bool = False  # the spectral summary of a static graph of the n clients
    shared_params: int = -1  # the entries the consensus distance reads (-1: num_params)
    w_row_bytes: float = 0.0  # bytes a row of the topology's scipy W holds (0: estimated)
    load_bytes: int = 0  # the peak of loading the dataset by name (0: given, not loaded)
    device: str = "cpu"
    #: the algorithm's ``predict`` hook (its global subsample is scored as the whole set)
    predicts: bool = False
    runtime: bool = False  # count RUNTIME_BYTES and CLIENT_BYTES (the static estimate)


def state_bytes(algorithm: Any, layout: ParamLayout, dtype: torch.dtype, n: int
                 ) -> dict[str, int]:
    """Bytes of the state ``algorithm.init`` builds for ``n`` clients, by part.

    Built on the ``meta`` device (shapes without memory: exact at any ``n``); an algorithm
    whose ``init`` needs real tensors is built on the CPU for the fewest clients it accepts
    (2, 4, ... up to 64: Teleportation needs ``n >= k``) and its per-client tensors scaled to
    ``n``; one whose ``init`` needs the run's data even then is counted as the parameters and
    one momentum buffer.
    """
    def count(state: Any, m: int, scale: int) -> dict[str, int]:
        out = {"parameters": 0, "optimizer": 0, "algorithm": 0}
        for name, t in state.tensors().items():
            part = ("parameters" if name == "x" else "optimizer" if name == "momentum"
                    else "algorithm")
            b = t.numel() * t.element_size()
            per_client = t.dim() > 0 and t.shape[0] == m
            out[part] += (b // m) * scale if per_client and scale != m else b
        return out

    meta = torch.device("meta")
    try:
        ctx = toy_services(n, layout=layout, dtype=dtype,
                           train_sizes=torch.ones(n, dtype=torch.int64, device=meta))
        return count(algorithm.init(torch.zeros(n, layout.num_params, dtype=dtype,
                                                device=meta), ctx), n, n)
    except Exception:  # noqa: BLE001 - an init that needs real numbers: the CPU below
        pass
    m, last = min(n, 2), None
    while True:
        ctx = toy_services(m, layout=layout, dtype=dtype,
                           train_sizes=torch.ones(m, dtype=torch.int64))
        try:
            return count(algorithm.init(torch.zeros(m, layout.num_params, dtype=dtype), ctx),
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
    return "loop" if torch.device(run.device).type == "cpu" and has_conv(model) else "batched"


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
    nnz, w_row = 0.0, 0.0
    if algorithm.uses_topology and prepared.call["topology"] is not None:
        nnz = _row_nnz_of(topology) if topology is not None else 1.0
        if topology is not None:
            W = topology.W if hasattr(topology, "W") else topology.at(0).W
            if hasattr(W, "indptr"):
                w_row = (W.data.nbytes + W.indices.nbytes + W.indptr.nbytes) / W.shape[0]
    spectral = bool(run.spectral and nnz) and (
        topology is None or isinstance(topology, Topology)
        or getattr(topology, "period", None) == 1)
    rounds, every = int(run.rounds), int(run.eval_every)
    evaluations = rounds // every + (1 if rounds % every else 0)
    rows_per_eval = 0
    if run.record_clients:
        rows_per_eval = 1 + (2 if run.ledger else 0) + (2 if run.eval_val else 0)
    return Shapes(
        n=n, num_params=layout.num_params, dtype_bytes=dtype.itemsize,
        sample_bytes=sample_bytes, num_classes=classes, batch_size=int(run.batch_size),
        input_shape=input_shape,
        per_client_state={k: -(-v // n) for k, v in
                          state_bytes(algorithm, layout, dtype, n).items()},
        dataset_bytes=_dataset_bytes(dataset) if dataset is not None else 0,
        data_bytes=data_bytes, longest_test=longest_test, w_row_nnz=nnz,
        activation_bytes=activation_bytes(model, input_shape), fused=fused,
        streams=rowwise and kind == "batched", stream_rows=run.stream_rows,
        loop_threads=(torch.get_num_threads() if kind == "loop" else 0),
        global_test=n_global if run.eval_global else 0,
        eval_global_samples=run.eval_global_samples,
        longest_val=longest_val if run.eval_val else 0, samples=samples,
        evaluations=evaluations, client_rows=rows_per_eval, spectral=spectral,
        shared_params=_span(layout.cols(algorithm.shared)), w_row_bytes=w_row,
        load_bytes=_load_bytes(prepared.call["data"], dataset),
        device=str(torch.device(run.device)), predicts=algorithm.predict is not None,
        runtime=True)


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


def _rows(s: Shapes, n: int) -> int:
    """Clients of one block of the local step at ``n`` clients."""
    if s.stream_rows is not None:
        return max(1, min(n, int(s.stream_rows)))
    if not s.streams:
        return n
    return stream_rows(n, s.batch_size, s.input_shape, torch.device(s.device))


#: The largest block glibc's ``malloc`` keeps in its heap once freed, on 64-bit Linux (its
#: dynamic mmap threshold, ``DEFAULT_MMAP_THRESHOLD_MAX``; larger blocks are mapped and
#: unmapped on their own).
HEAP_BLOCK_MAX = 32 << 20


def _eval_bytes(s: Shapes, n: int) -> int:
    """The peak of an evaluation (:func:`topofl.engine.evaluate`) above what the run holds:
    its largest pass, the check of the parameters (``isfinite``: ``3 + dtype_bytes`` bytes an
    entry) or their consensus distance (two ``[rows, P_shared]`` temporaries), each over one
    block of rows (:func:`topofl.engine.evaluation.row_blocks`: every row up to 1 Mi
    entries), whichever is larger.

    The passes (:func:`_eval_passes`): the local test split, the global test set and the
    validation split, each over one chunk of samples for every client, or, on a subsample of
    the global test set (``eval_global_samples``), one block of clients and samples of
    :func:`~topofl.engine.evaluation.shared_sums` (:func:`_shared_pass`)."""
    shared = s.num_params if s.shared_params < 0 else s.shared_params
    # isfinite(x_eval) of a block of rows: x == x, |x|, |x| != inf and their product (3 bytes
    # and one value an entry), freed before the distance
    check = _block_rows(n, s.num_params) * s.num_params * (3 + s.dtype_bytes)
    consensus = 2 * _block_rows(n, shared) * shared * s.dtype_bytes  # its two temporaries
    return max(*_eval_passes(s, n), check, consensus)


def _block_rows(n: int, cols: int) -> int:
    """The rows of the largest block of :func:`~topofl.engine.evaluation.row_blocks` of an
    ``[n, cols]`` tensor, counted monotone in ``n``: ``n`` in one block, else a block's rows
    and one (a lone last row joins the block before it: one row more for some ``n``, not the
    next)."""
    k = eval_block_rows(n, cols)
    return k if k == n else max(2, EVAL_BLOCK_ENTRIES // max(1, int(cols))) + 1


def _eval_passes(s: Shapes, n: int) -> tuple[int, int, int]:
    """Bytes of the evaluation's passes at ``n`` clients: ``(test, global, val)``.

    A pass over ``k`` samples a client (the chunk,
    :func:`~topofl.engine.evaluation.eval_chunk`: ``max(1, 64 MiB // (n * q))`` with ``q =
    8 * num_classes + sample_bytes``, at most the split's largest) holds, per (client,
    sample), the logits and their log-softmax, the int64 label, the float64 correct / loss /
    mask (``8 * num_classes + 48`` bytes), the client's input (its own split: not the global
    set, shared), and the forward pass's activations (3/4 of every leaf's output, measured
    2,406 bytes for the 64-200-200-10 MLP whose leaves hold 3,240): of every client at once
    with the batched executor, of one client a thread with the per-client loop
    (``s.loop_threads``). Its ``n * k`` pairs are counted as ``min(n * largest, max(64 MiB //
    q, n))``, their most (``n * k`` itself is not monotone in ``n``: 3 samples for ``n``
    clients, 2 for ``n + 1``).

    On a subsample of the global test set without a ``predict`` hook, the global pass is
    :func:`~topofl.engine.evaluation.shared_sums`' (:func:`_shared_pass`).
    """
    C = s.num_classes
    q = 8 * C + s.sample_bytes
    chunk = eval_chunk(n, C, s.sample_bytes)
    act = 3 * s.activation_bytes // 4
    per = 8 * C + 48

    def chunked(largest: int, inputs: int) -> int:
        pairs = min(n * largest, max(EVAL_BLOCK_BYTES // max(1, q), n))
        if not s.loop_threads:
            return pairs * (per + inputs + act)
        # the per-client loop: the activations of one client a thread, on its chunk
        return pairs * (per + inputs) + min(n, s.loop_threads) * min(chunk, largest) * act

    scored = global_samples(s.eval_global_samples, n, s.global_test)  # a subsample at scale
    if 0 < scored < s.global_test and not s.predicts:
        glob = sum(_shared_pass(s, n, scored))
    else:
        glob = chunked(scored, 0)
    return chunked(s.longest_test, s.sample_bytes), glob, chunked(s.longest_val, s.sample_bytes)


def _shared_pass(s: Shapes, n: int, scored: int) -> tuple[int, int]:
    """``(live, heap)``: bytes :func:`~topofl.engine.evaluation.shared_sums` allocates at its
    peak, scoring ``n`` clients on the same ``scored`` samples, and those the allocator keeps
    besides.

    It scores one block of ``rows`` clients x ``cols`` samples at a time
    (:func:`~topofl.engine.evaluation.shared_block`), whatever ``n``. Per (client, sample),
    the batched executor holds the previous block's logits beside the forward pass (its
    activations and its output; or its output, the executor's copy and the previous block's
    logits: ``3 * num_classes`` values at least), and an int64 prediction; the per-client
    loop holds the previous block's logits and the clients' outputs beside one client's
    activations a thread, or beside the outputs' stacked copy, and an int64 prediction a
    pair.

    The blocks of logits come and go at every block: one of at most :data:`HEAP_BLOCK_MAX`
    is then reused from glibc's heap, which keeps up to twice that block free at its top
    (``M_TRIM_THRESHOLD`` follows twice the mmap threshold, which a freed block raises to its
    size): ``heap`` is two blocks of logits, else 0. Measured at 10,000 logistic-regression
    clients (40 inputs, 10 classes, 2,000 samples): 74.5 MB of torch allocations (``live``:
    76.7 MB), and a resident peak above the pass's start of 81 to 212 MB over six runs.
    """
    C, d = s.num_classes, s.dtype_bytes
    act = 3 * s.activation_bytes // 4
    rows, cols = shared_block(scored, C)
    r = min(n, rows)
    logits = r * cols * C * d  # one block of logits
    if s.loop_threads:
        live = max(2 * logits + min(r, s.loop_threads) * cols * act, 3 * logits) + r * cols * 8
    else:
        live = r * cols * (max(act + C * d, 3 * C * d) + 8)
    return live, 2 * logits if logits <= HEAP_BLOCK_MAX else 0


def counted_parts(s: Shapes, n: int | None = None) -> dict[str, int]:
    """The counted parts (bytes) for ``n`` clients (default ``s.n``); data as built for
    ``s.n`` (its size depends on the dataset and the partition, not on ``n``).

    * ``parameters``, ``optimizer``, ``algorithm``: the state, ``n`` times its bytes a client;
    * ``gossip``: the topology's ``W`` (scipy CSR: float64 values and int64 indices), the
      mixer's torch copy (dense for ``n <= 8``, else CSR with int32 indices) and its diagonal,
      and the mixer's scratch tile (on a GPU, the product ``W @ X``: one ``[n, P]`` buffer);
    * ``gradients``: the local step's buffers (the batch of one block of clients, and its
      gradient rows when the update is not fused) and its temporaries: the block's gradient
      rows from autograd (or the closed form), its activations (autograd keeps 7/5 of the
      forward's) and every client's int64 sample indices;
    * ``data``: the federated samples, every client's int64 sample indices, label counts and
      offsets; before the state exists, loading the dataset (``s.load_bytes``), then the
      dataset's arrays and one block of its rows gathered while it is split: when that is
      the larger peak, ``data`` holds the excess;
    * ``evaluation``: its largest pass, the check of the parameters or their consensus
      distance, whichever is larger (:func:`_eval_bytes`);
    * ``spectral``: the spectral summary of a static graph (dense up to 1024 nodes);
    * ``records``: the per-client rows the records keep in memory (at the end of the run);
    * ``runtime`` (static estimate only, ``s.runtime``): :data:`RUNTIME_BYTES` and
      :data:`CLIENT_BYTES` a client.

    The local step's temporaries, the evaluation's and the spectral summary's come one after
    the other, yet are added up: blocks freed by one stay resident in the allocator's heap
    (glibc keeps freed blocks below its mmap threshold, up to 32 MiB), so that the peak of a
    run is close to their sum (``analysis/memory_model.md``: a bound taken as their largest
    fell to 0.67 of the measured peak).

    Examples
    --------
    >>> s = Shapes(n=100, num_params=650, dtype_bytes=4, sample_bytes=256, num_classes=10,
    ...            batch_size=16, input_shape=(1, 8, 8), per_client_state={"parameters": 2600,
    ...            "optimizer": 0, "algorithm": 0}, dataset_bytes=0, data_bytes=0,
    ...            longest_test=4, w_row_nnz=3.0)
    >>> counted_parts(s)["parameters"] == 100 * 650 * 4
    True
    """
    n = s.n if n is None else n
    rows = _rows(s, n)
    st = s.per_client_state
    P, d = s.num_params, s.dtype_bytes
    gossip = 0
    if s.w_row_nnz:
        nnz = int(min(float(n), s.w_row_nnz) * n)
        # the Topology's scipy CSR: as held when known, else float64 values, int64 indices
        topo_w = (int(s.w_row_bytes * n) if s.w_row_bytes else nnz * 16 + (n + 1) * 8)
        torch_w = n * n * d if n <= 8 else nnz * (d + 4) + (n + 1) * 4
        if s.device.startswith("cpu"):
            tile = max(32, _TILE_BYTES // max(1, n * d))  # the mixer scratch's columns
            scratch = min(n * P, n * tile) * d
        else:
            scratch = n * P * d
        gossip = topo_w + torch_w + n * d + scratch
    buffers = rows * ((0 if s.fused else P * d) + s.batch_size * (s.sample_bytes + 8))
    data = _data_held(s, n)
    local, evaluation, spectral = transients(s, n)
    out = {"parameters": n * st["parameters"], "optimizer": n * st["optimizer"],
           "algorithm": n * st["algorithm"], "gossip": gossip, "gradients": buffers + local,
           "data": data, "evaluation": evaluation, "spectral": spectral,
           "records": n * s.client_rows * s.evaluations * ROW_BYTES}
    # before the state exists: loading the dataset, then splitting it (the dataset's arrays,
    # the samples of every client written into one array, and one block of rows gathered
    # from the source before its cast): the peak when larger
    built = max(s.load_bytes, data + s.dataset_bytes + min(s.data_bytes, _GATHER_BLOCK_BYTES))
    out["data"] += max(0, built - sum(out.values()))
    if s.runtime:
        out["runtime"] = RUNTIME_BYTES + CLIENT_BYTES * n
    return out


def _data_held(s: Shapes, n: int) -> int:
    """The data a run holds: the federated samples, every client's int64 sample indices,
    label counts (three splits) and offsets."""
    return s.data_bytes + 8 * s.samples + n * (24 * s.num_classes + 48)


def transients(s: Shapes, n: int | None = None) -> tuple[int, int, int]:
    """Bytes of the three peaks that follow each other in a round, above what the run holds:
    the local step's temporaries, the evaluation's (:func:`_eval_bytes`) and the spectral
    summary's (:func:`counted_parts` adds them up)."""
    n = s.n if n is None else n
    rows = _rows(s, n)
    act_rows = min(rows, s.loop_threads) if s.loop_threads else rows
    local = (rows * s.num_params * s.dtype_bytes
             + act_rows * s.batch_size * (7 * s.activation_bytes // 5)
             + n * s.batch_size * 8)
    spectral = 0
    if s.spectral:
        if n <= _SUMMARY_DENSE_MAX:
            spectral = SPECTRAL_DENSE_COPIES * n * n * 8
        elif n <= DENSE_FALLBACK_MAX:  # ARPACK, or dense LAPACK where it does not converge
            spectral = n * n * 8
        else:
            spectral = (SPECTRAL_FIXED_BYTES
                        + SPECTRAL_NNZ_BYTES * int(min(float(n), s.w_row_nnz or 3.0) * n))
    return local, _eval_bytes(s, n), spectral


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


def _refusal(n: int, need: float, have: int, what: str, fits: int | None = None) -> str:
    tail = "" if fits is None else f"; the largest n that fits is {fits:,}"
    return (f"{n} clients do not fit: {what} needs {fmt_bytes(need)} ({int(need):,} bytes), "
            f"{fmt_bytes(have)} ({have:,} bytes) available{tail}")


# ----------------------------------------------------------------------------- refusal
#: The parts that live on the run's device (the rest, on the host: the dataset's arrays, the
#: records, the spectral summary, the interpreter): on a GPU each side is held to its limit.
DEVICE_PARTS = ("parameters", "optimizer", "algorithm", "gossip", "gradients", "evaluation")


def estimate(prepared: Any, *, model: torch.nn.Module, dataset: Any = None,
             data: FederatedData | None = None, topology: Any = None) -> tuple[Shapes,
                                                                               dict[str, int]]:
    """The static estimate of a checked run's peak memory: its :func:`run_shapes` and their
    :func:`counted_parts` (with the runtime part), without running anything.

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
    ``n`` that fits (default :func:`counted_parts`'s sum). ``resident``: bytes of ``parts``
    already allocated, left out when the limit is what the machine reports left (not when
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
        raise InsufficientMemoryError(
            f"{s.n:,} clients do not fit: {what} needs {'at least ' if lower else ''}about "
            f"{fmt_bytes(need)}{where} ({need:,} bytes; {biggest}) by topofl's estimate "
            f"(topofl.workflow.plan{', before ' + before if lower else ''}), but {source} "
            f"leaves {fmt_bytes(limit)} ({limit:,} bytes){tail} "
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
    :class:`Shapes` (``None`` before the split of a ``natural`` partition, whose number of
    clients the split decides); raises :class:`~topofl.exceptions.InsufficientMemoryError`.
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
    :func:`state_bytes` of its ``n`` clients, and the two temporaries of the consensus
    distance over one block of rows) cannot fit: for a dataset whose shapes its name gives
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
